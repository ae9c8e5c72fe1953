//! Service-account kubeconfigs as ManagementService.Kubeconfig answers them: an RS256 JWT signed with a key
//! generated on first use, inside the YAML client-go's `clientcmd.Write` produces.

use std::sync::Arc;

use anyhow::{Context, Result};
use base64::Engine as _;
use omni_wire::specs;
use prost::Message as _;
use rsa::pkcs1v15::{Signature, SigningKey, VerifyingKey};
use rsa::signature::{SignatureEncoding as _, Signer as _, Verifier as _};
use rsa::{RsaPrivateKey, RsaPublicKey};
use serde_json::Value;
use sha2::Sha256;

use crate::service::Shared;
use crate::types::{CLUSTER_UUIDS, NS};

/// Omni's OIDC signing key stand-in.
pub struct JwtKey {
    signing: SigningKey<Sha256>,
    verifying: VerifyingKey<Sha256>,
    pub public: RsaPublicKey,
    pub kid: String,
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

impl JwtKey {
    /// RSA-2048, as Omni's; generated lazily because it takes a moment in debug builds.
    pub fn generate() -> Result<Self> {
        let private =
            RsaPrivateKey::new(&mut rand::thread_rng(), 2048).context("generating the RSA key")?;
        let public = RsaPublicKey::from(&private);
        let kid = uuid::Uuid::new_v4().simple().to_string();
        Ok(JwtKey {
            signing: SigningKey::<Sha256>::new(private),
            verifying: VerifyingKey::<Sha256>::new(public.clone()),
            public,
            kid,
        })
    }

    pub fn sign(&self, claims: &serde_json::Value) -> Result<String> {
        let header = serde_json::json!({"alg": "RS256", "kid": self.kid, "typ": "JWT"});
        let input = format!(
            "{}.{}",
            b64url(header.to_string().as_bytes()),
            b64url(claims.to_string().as_bytes())
        );
        let sig = self
            .signing
            .try_sign(input.as_bytes())
            .context("RS256 signing")?;
        Ok(format!("{input}.{}", b64url(&sig.to_bytes())))
    }

    /// Checks what golang-jwt's parser checks before Omni's proxy looks at the claims (RS256, a `kid` naming
    /// this key, the signature) and returns the claims object. Errors never quote the token: it is a credential.
    pub fn verify(&self, token: &str) -> Result<serde_json::Map<String, Value>, String> {
        let mut segments = token.split('.');
        let (Some(header), Some(claims), Some(signature), None) = (
            segments.next(),
            segments.next(),
            segments.next(),
            segments.next(),
        ) else {
            return Err("token is malformed: not three dot-separated segments".into());
        };
        // The signature covers the two encoded segments exactly as they appear in the token.
        let signed_input = &token[..header.len() + 1 + claims.len()];
        let header = decode_json(header).map_err(|e| format!("token header: {e}"))?;
        if header.get("alg").and_then(Value::as_str) != Some("RS256") {
            return Err("unexpected signing method: only RS256 is accepted".into());
        }
        match header.get("kid").and_then(Value::as_str) {
            None => return Err("invalid token header: no kid".into()),
            Some(kid) if kid != self.kid => {
                return Err("token is signed by an unknown key (kid does not match)".into());
            }
            Some(_) => {}
        }
        let signature = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|e| format!("token signature is not base64url: {e}"))?;
        let signature = Signature::try_from(signature.as_slice())
            .map_err(|e| format!("token signature is malformed: {e}"))?;
        self.verifying
            .verify(signed_input.as_bytes(), &signature)
            .map_err(|_| "token signature is invalid".to_string())?;
        decode_json(claims).map_err(|e| format!("token claims: {e}"))
    }
}

fn decode_json(segment: &str) -> Result<serde_json::Map<String, Value>, String> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(segment)
        .map_err(|e| format!("not base64url: {e}"))?;
    match serde_json::from_slice(&bytes).map_err(|e| format!("not JSON: {e}"))? {
        Value::Object(m) => Ok(m),
        _ => Err("not a JSON object".into()),
    }
}

/// What a kubeconfig token that passed [`JwtVerifier::verify`] grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedToken {
    /// `sub`: the user Omni's proxy impersonates.
    pub user: String,
    /// `groups` (`null` gives none): the groups Omni's proxy impersonates.
    pub groups: Vec<String>,
    /// `cluster`: the Omni cluster the token is for.
    pub cluster: String,
    /// `cluster_uuid`: the cluster's ClusterUUID when the token was issued (still current, or it would fail).
    pub cluster_uuid: String,
    /// `exp`, Unix seconds.
    pub expires_at: i64,
}

/// Verifies the service-account tokens omni-sim's `Kubeconfig` mints, the way Omni's Kubernetes proxy does
/// (`internal/backend/k8sproxy/middleware.go`), so a Kubernetes server standing in for a workload cluster can
/// accept exactly the tokens the real proxy would forward. Cheap to clone; it reads the simulator's live key,
/// clock and store, so it keeps working (and stays current) for as long as any clone exists.
#[derive(Clone)]
pub struct JwtVerifier {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("endpoint", &self.shared.config.endpoint)
            .finish_non_exhaustive()
    }
}

impl JwtVerifier {
    /// Ok when the RS256 signature verifies with the simulator's key (and `kid` names it), `exp` is after the
    /// simulator clock's now, `sub` and `cluster` are set, and `cluster_uuid` is the current ClusterUUID of
    /// `cluster` (a cluster deleted, or deleted and recreated under the same name, invalidates its tokens).
    /// Err is a reason for logs and test failures; it never contains the token.
    pub fn verify(&self, token: &str) -> Result<VerifiedToken, String> {
        let key = match self.shared.jwt.get() {
            Some(Ok(key)) => key,
            Some(Err(e)) => return Err(format!("omni-sim has no token signing key: {e}")),
            // The key is made by the first Kubeconfig call, so no token can be genuine before it.
            None => {
                return Err(
                    "omni-sim has not issued any kubeconfig yet, so it has no signing key".into(),
                );
            }
        };
        let claims = key.verify(token)?;
        let string = |name: &str| {
            claims
                .get(name)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        // golang-jwt's exp check: valid while now < exp, with no leeway. For whole-second exp, comparing with
        // the clock's whole seconds gives the same answer.
        let expires_at = claims
            .get("exp")
            .and_then(Value::as_i64)
            .ok_or("expiration is empty or not whole seconds")?;
        let now = self.shared.clock.unix();
        if expires_at <= now {
            return Err(format!(
                "token is expired: exp {expires_at} is not after the simulator's now {now}"
            ));
        }
        let user = string("sub");
        if user.is_empty() {
            return Err("subject is empty".into());
        }
        let groups = match claims.get("groups") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|g| {
                    g.as_str()
                        .map(String::from)
                        .ok_or("groups claim holds a non-string")
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("groups claim is not an array".into()),
        };
        let cluster = string("cluster");
        if cluster.is_empty() {
            return Err("cluster name is empty".into());
        }
        let cluster_uuid = string("cluster_uuid");
        if cluster_uuid.is_empty() {
            // Omni still takes legacy tokens without this claim; omni-sim never issued any, so none is genuine.
            return Err("cluster_uuid is empty".into());
        }
        let current = self
            .shared
            .store
            .get(NS, CLUSTER_UUIDS, &cluster)
            .ok_or_else(|| format!("failed to resolve cluster UUID: cluster {cluster:?} has no ClusterUUID (it does not exist)"))?;
        let current = specs::ClusterUuid::decode(
            current
                .spec
                .as_ref()
                .map(|s| s.proto_spec.as_slice())
                .unwrap_or_default(),
        )
        .map_err(|e| format!("decoding the ClusterUUID of {cluster:?}: {e}"))?
        .uuid;
        if current != cluster_uuid {
            return Err(format!(
                "cluster UUID does not match cluster name {cluster:?}: the cluster was recreated after the token was issued"
            ));
        }
        Ok(VerifiedToken {
            user,
            groups,
            cluster,
            cluster_uuid,
            expires_at,
        })
    }
}

/// The kubeconfig Omni returns (`N = <account>-<cluster>-<user>`), with `certificate-authority-data` when the
/// proxy's CA is given, written as client-go's `clientcmd.Write` writes it: the config as JSON, turned into YAML by
/// `sigs.k8s.io/yaml` (go-yaml v2), so keys sorted and plain scalars unquoted.
pub fn render(name: &str, server: &str, ca_pem: Option<&str>, token: &str) -> String {
    use base64::Engine as _;
    use omni_go::yaml::{Node, to_string_v2};
    let s = |v: &str| Node::Str(v.to_string());
    let entries = |pairs: Vec<(&str, Node)>| {
        Node::Map(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    };
    let mut cluster = Vec::new();
    if let Some(pem) = ca_pem {
        cluster.push((
            "certificate-authority-data",
            s(&base64::engine::general_purpose::STANDARD.encode(pem)),
        ));
    }
    cluster.push(("server", s(server)));
    let config = entries(vec![
        ("apiVersion", s("v1")),
        (
            "clusters",
            Node::Seq(vec![entries(vec![
                ("cluster", entries(cluster)),
                ("name", s(name)),
            ])]),
        ),
        (
            "contexts",
            Node::Seq(vec![entries(vec![
                (
                    "context",
                    entries(vec![
                        ("cluster", s(name)),
                        ("namespace", s("default")),
                        ("user", s(name)),
                    ]),
                ),
                ("name", s(name)),
            ])]),
        ),
        ("current-context", s(name)),
        ("kind", s("Config")),
        ("preferences", entries(Vec::new())),
        (
            "users",
            Node::Seq(vec![entries(vec![
                ("name", s(name)),
                ("user", entries(vec![("token", s(token))])),
            ])]),
        ),
    ]);
    to_string_v2(&[config])
}
