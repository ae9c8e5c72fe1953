//! The HTTP API: routing, authentication and authorization, then the discovery, OpenAPI, object and watch
//! handlers.

mod builtin_types;
mod discovery;
mod objects;
mod openapi;
mod openapi_schemas;
mod openapi_v2;
mod partial;
mod printers;
mod protobuf;
mod protobuf_generic;
pub mod request;
mod reviews;
mod scale;
mod sim_admin;
pub mod table;
mod tokens;
mod watch;

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited};
use serde_json::{Value, json};

use crate::auth::{self, Authenticator};
use crate::cluster::Cluster;
use crate::error::ApiError;
use crate::faults::{Faults, RequestFacts};
use crate::rbac::UserInfo;
use request::{Query, RequestInfo};

pub type Body = UnsyncBoxBody<Bytes, Infallible>;
pub type Resp = Response<Body>;

/// The real server refuses request bodies over 3 MiB.
pub const MAX_REQUEST_BYTES: usize = 3 * 1024 * 1024;

/// Shared by every connection of one server.
pub struct Api {
    pub cluster: Arc<Cluster>,
    pub auth: Authenticator,
    pub faults: Faults,
    /// `host:port` clients reach this server at (for discovery's serverAddressByClientCIDRs).
    pub address: String,
    /// Every resource request answered, with its user and status.
    pub log: crate::request_log::RequestLog,
}

/// One request with everything the handlers need.
pub struct Call {
    pub method: String,
    pub info: RequestInfo,
    pub query: Query,
    pub headers: http::HeaderMap,
    pub user: UserInfo,
    pub body: Bytes,
}

impl Call {
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

/// A connection's kill switch, carried by each of its requests: pulled by a request the fault rules drop, it
/// closes the connection without an answer.
#[derive(Clone, Default)]
pub struct ConnectionKill(Arc<tokio::sync::Notify>);

impl ConnectionKill {
    fn pull(&self) {
        self.0.notify_one();
    }

    /// Resolves once a request has pulled the switch.
    pub async fn pulled(&self) {
        self.0.notified().await;
    }
}

pub async fn handle<B>(api: Arc<Api>, req: Request<B>, cert: Option<(String, Vec<String>)>) -> Resp
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (parts, body) = req.into_parts();
    let kill = parts.extensions.get::<ConnectionKill>().cloned();
    let path = parts.uri.path().to_string();
    let query = Query::parse(parts.uri.query());
    let method = parts.method.as_str().to_string();

    let authz = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let user = match api.auth.authenticate(authz, cert.as_ref()) {
        Ok(u) => u,
        Err(e) => return error(&e),
    };
    let user = match impersonate(&api, user, &parts.headers) {
        Ok(u) => u,
        Err(e) => return error(&e),
    };
    if path.starts_with("/__sim/") {
        // Fault injection can stall or break the whole server, so only administrators may use it.
        if !auth::is_superuser(&user) {
            return error(&ApiError::forbidden(format!(
                "forbidden: User {:?} cannot use the simulator endpoint {path:?}",
                user.name
            )));
        }
        let body = match read_body(body).await {
            Ok(b) => b,
            Err(e) => return error(&e),
        };
        return sim_admin::handle(&api, &method, &path, &body).await;
    }

    let info = RequestInfo::parse(&method, &path, &query);
    let facts = RequestFacts {
        verb: &info.verb,
        resource: &info.resource,
        subresource: &info.subresource,
        namespace: &info.namespace,
        name: &info.name,
    };
    let logged = |status: u16, user: &UserInfo, info: &RequestInfo| {
        if info.is_resource {
            api.log.record(crate::request_log::RequestRecord {
                seq: 0,
                user: user.name.clone(),
                verb: info.verb.clone(),
                group: info.group.clone(),
                resource: info.resource.clone(),
                subresource: info.subresource.clone(),
                namespace: info.namespace.clone(),
                name: info.name.clone(),
                status,
            });
        }
    };
    // The simulator's own endpoints (answered above) always answer; a request dropped gets nothing, not even a
    // line in the request log, as a crashed server would leave it.
    if info.is_resource
        && let Some(kill) = &kill
        && api.faults.drop_connection(&facts)
    {
        kill.pull();
        return std::future::pending().await;
    }
    if let Some(e) = api.faults.before(&facts).await {
        logged(e.code, &user, &info);
        return error(&e);
    }

    if let Err(e) = auth::authorize(&api.cluster, &user, &info.attributes()) {
        logged(e.code, &user, &info);
        return error(&e);
    }
    let body = match read_body(body).await {
        Ok(b) => b,
        Err(e) => return error(&e),
    };
    let call = Call {
        method,
        info,
        query,
        headers: parts.headers,
        user,
        body,
    };
    let resp = protobuf::answer(&call, route(&api, &call).await).await;
    logged(resp.status().as_u16(), &call.user, &call.info);
    tracing::debug!(verb = %call.info.verb, path = %call.info.path, status = resp.status().as_u16(), "request");
    resp
}

async fn route(api: &Arc<Api>, call: &Call) -> Resp {
    let path = call.info.path.trim_end_matches('/');
    match path {
        "/version" => {
            // kube-apiserver writes /version indented (json.MarshalIndent).
            let mut r = json_ok(&json!({}));
            *r.body_mut() = full(serde_json::to_vec_pretty(&version()).unwrap_or_default());
            return r;
        }
        "/healthz" | "/livez" | "/readyz" => return text(200, "ok"),
        p if p.starts_with("/healthz/")
            || p.starts_with("/livez/")
            || p.starts_with("/readyz/") =>
        {
            return text(200, "ok");
        }
        "/openapi/v2" => return openapi_v2::handle(api, call, "v1.32.0"),
        p if p == "/openapi/v3" || p.starts_with("/openapi/v3/") => {
            return openapi::handle(api, call, p);
        }
        _ => {}
    }
    if call.info.is_resource {
        return objects::handle(api, call).await;
    }
    if let Some(r) = discovery::handle(api, call, path) {
        return r;
    }
    error(
        &ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(json!({})),
    )
}

/// `Impersonate-User` / `Impersonate-Group` / `Impersonate-Uid` (kubectl `--as`, `--as-group`): the caller
/// must be allowed the `impersonate` verb on users, groups and uids, as the real impersonation filter checks.
fn impersonate(api: &Api, user: UserInfo, headers: &http::HeaderMap) -> Result<UserInfo, ApiError> {
    let Some(name) = headers
        .get("impersonate-user")
        .and_then(|v| v.to_str().ok())
    else {
        if headers.contains_key("impersonate-group") {
            return Err(ApiError::bad_request(
                "impersonating a group (Impersonate-Group) requires impersonating a user (Impersonate-User)",
            ));
        }
        return Ok(user);
    };
    let groups: Vec<String> = headers
        .get_all("impersonate-group")
        .iter()
        .filter_map(|v| v.to_str().ok().map(String::from))
        .collect();
    let uid = headers
        .get("impersonate-uid")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    // Users, groups and service accounts are in the core group; only uids (and extras) are in
    // authentication.k8s.io, as the real impersonation filter asks.
    let check = |resource: &str, target: &str| -> Result<(), ApiError> {
        let (group, resource, ns, target) = match name
            .strip_prefix("system:serviceaccount:")
            .and_then(|r| r.split_once(':'))
        {
            Some((ns, sa)) if resource == "users" => ("", "serviceaccounts", ns, sa),
            _ if resource == "uids" => ("authentication.k8s.io", resource, "", target),
            _ => ("", resource, "", target),
        };
        let attrs = crate::rbac::Attributes {
            verb: "impersonate".into(),
            namespace: ns.into(),
            api_group: group.into(),
            resource: resource.into(),
            name: target.into(),
            resource_request: true,
            ..Default::default()
        };
        auth::authorize(&api.cluster, &user, &attrs)
    };
    check("users", name)?;
    for g in &groups {
        check("groups", g)?;
    }
    if !uid.is_empty() {
        check("uids", &uid)?;
    }
    let mut groups = groups;
    // A service account's own groups are implied only when no groups were asked for.
    if groups.is_empty()
        && let Some(ns) = name
            .strip_prefix("system:serviceaccount:")
            .and_then(|r| r.split(':').next())
    {
        groups.push("system:serviceaccounts".into());
        groups.push(format!("system:serviceaccounts:{ns}"));
    }
    if name != "system:anonymous" && !groups.iter().any(|g| g == "system:authenticated") {
        groups.push("system:authenticated".into());
    }
    Ok(UserInfo {
        name: name.to_string(),
        groups,
        uid,
        ..Default::default()
    })
}

async fn read_body<B>(body: B) -> Result<Bytes, ApiError>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    match Limited::new(body, MAX_REQUEST_BYTES).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(ApiError::new(
                413,
                "RequestEntityTooLarge",
                format!("Request entity too large: limit is {MAX_REQUEST_BYTES}"),
            ))
        }
        Err(e) => Err(ApiError::bad_request(format!(
            "error reading the request body: {e}"
        ))),
    }
}

pub fn version() -> Value {
    json!({
        "major": "1", "minor": "32", "emulationMajor": "1", "emulationMinor": "32",
        "gitVersion": "v1.32.0-kube-sim", "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23.0",
        "compiler": "gc", "platform": "linux/amd64"
    })
}

pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

pub fn json_ok(v: &Value) -> Resp {
    json_response(200, v, &[])
}

pub fn json_response(status: u16, v: &Value, warnings: &[String]) -> Resp {
    let body = serde_json::to_vec(v).unwrap_or_else(|_| b"{}".to_vec());
    let mut r = Response::new(full(body));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    for w in warnings {
        // The real server's warning header format: 299 - "<text>".
        let escaped = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            r.headers_mut().append(header::WARNING, v);
        }
    }
    r
}

pub fn text(status: u16, s: &'static str) -> Resp {
    let mut r = Response::new(full(s));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

pub fn error(e: &ApiError) -> Resp {
    let mut r = json_response(e.code, &e.to_status(), &e.warnings);
    if let Some(secs) = e.retry_after
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}
