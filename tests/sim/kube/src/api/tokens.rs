//! `serviceaccounts/{name}/token`: TokenRequests, as `kubectl create token` and kubelet-style clients send them.
//! The token is JWT-shaped like the real server's (header, claims, signature), is accepted by this server for
//! the service account's identity until it expires, and answers TokenReviews; its signature is random, so no
//! other party can verify it (kube-sim publishes no signing keys).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde_json::{Value, json};

use super::{Api, Call, Resp};
use crate::error::{ApiError, ApiResult, FieldCause};
use crate::rbac::UserInfo;

/// The audience tokens are issued for when the request names none: the API server's own (`--api-audiences`
/// defaults to the issuer).
const DEFAULT_AUDIENCE: &str = "https://kubernetes.default.svc.cluster.local";
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
const MIN_EXPIRATION_SECONDS: i64 = 600;
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn invalid(name: &str, seconds: i64, why: &str) -> ApiError {
    ApiError::invalid(
        "TokenRequest",
        "authentication.k8s.io",
        name,
        &[FieldCause::invalid(
            "spec.expirationSeconds",
            &json!(seconds),
            why,
        )],
    )
}

/// POST of a TokenRequest for service account `name` in `ns`.
pub fn create(api: &Api, call: &Call, ns: &str, name: &str) -> ApiResult<Resp> {
    let ct = call.header("content-type");
    let body: Value = if ct.split(';').next().unwrap_or("").trim() == super::protobuf::CONTENT_TYPE
    {
        super::protobuf::decode(&call.body, "TokenRequest")?
    } else {
        serde_json::from_slice(&call.body).map_err(|e| {
            ApiError::bad_request(format!(
                "TokenRequest in version \"v1\" cannot be handled as a TokenRequest: {e}"
            ))
        })?
    };
    let reg = api.cluster.registry();
    let rt = reg
        .get("", "v1", "serviceaccounts")
        .ok_or_else(|| ApiError::internal("serviceaccounts are not served"))?;
    let account = api.cluster.get(&rt, ns, name)?;
    let spec = &body["spec"];
    let seconds = spec["expirationSeconds"]
        .as_i64()
        .unwrap_or(DEFAULT_EXPIRATION_SECONDS);
    if seconds < MIN_EXPIRATION_SECONDS {
        return Err(invalid(
            name,
            seconds,
            "may not specify a duration less than 10 minutes",
        ));
    }
    if seconds > MAX_EXPIRATION_SECONDS {
        return Err(invalid(
            name,
            seconds,
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    let audiences: Vec<String> = match spec["audiences"].as_array() {
        Some(a) if !a.is_empty() => a
            .iter()
            .filter_map(|v| v.as_str().map(String::from))
            .collect(),
        _ => vec![DEFAULT_AUDIENCE.to_string()],
    };
    let uid = account["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let now = SystemTime::now();
    let issued = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    let expires = now + Duration::from_secs(seconds.unsigned_abs());
    let subject = format!("system:serviceaccount:{ns}:{name}");
    let claims = json!({"aud": audiences, "exp": issued + seconds.unsigned_abs(), "iat": issued,
        "iss": DEFAULT_AUDIENCE, "jti": uuid::Uuid::new_v4().to_string(), "nbf": issued, "sub": subject,
        "kubernetes.io": {"namespace": ns, "serviceaccount": {"name": name, "uid": uid}}});
    let signature = [
        uuid::Uuid::new_v4().into_bytes(),
        uuid::Uuid::new_v4().into_bytes(),
    ]
    .concat();
    let token = format!(
        "{}.{}.{}",
        b64(json!({"alg": "RS256", "kid": "kube-sim"})
            .to_string()
            .as_bytes()),
        b64(claims.to_string().as_bytes()),
        b64(&signature)
    );
    api.auth.add_expiring_token(
        &token,
        UserInfo {
            name: subject,
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{ns}"),
            ],
            uid,
            ..Default::default()
        },
        expires,
    );
    let expiration = jiff::Timestamp::try_from(expires)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    let mut out_spec =
        json!({"audiences": audiences, "expirationSeconds": seconds, "boundObjectRef": null});
    if !spec["boundObjectRef"].is_null() {
        out_spec["boundObjectRef"] = spec["boundObjectRef"].clone();
    }
    let answer = json!({"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": null},
        "spec": out_spec, "status": {"token": token, "expirationTimestamp": expiration}});
    Ok(super::json_response(201, &answer, &[]))
}
