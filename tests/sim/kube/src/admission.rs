//! Dynamic admission: Mutating and Validating webhook configurations called with AdmissionReview v1 over
//! HTTPS, the way kube-apiserver's webhook admission plugins call them.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};

use crate::cluster::{Cluster, WriteCtx};
use crate::error::{ApiError, ApiResult};
use crate::resources::{ResourceType, StorageKey};
use crate::selectors::LabelSelector;

/// What mutating admission produced.
#[derive(Debug, Default)]
pub struct Admitted {
    pub patched: Option<Value>,
    pub warnings: Vec<String>,
}

#[derive(Default)]
pub struct Admission {
    /// In-cluster Services have no network here; tests route `clientConfig.service` to a local address.
    service_routes: RwLock<HashMap<(String, String), SocketAddr>>,
}

const MUTATING: &str = "mutatingwebhookconfigurations";
const VALIDATING: &str = "validatingwebhookconfigurations";

impl Admission {
    pub fn route_service(&self, namespace: &str, name: &str, addr: SocketAddr) {
        self.service_routes
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert((namespace.into(), name.into()), addr);
    }

    #[allow(clippy::too_many_arguments)]
    pub async fn admit(
        &self,
        cluster: &Cluster,
        rt: &ResourceType,
        op: &str,
        sub: &str,
        new: &Value,
        old: Option<&Value>,
        ctx: &WriteCtx,
    ) -> ApiResult<Admitted> {
        let hooks = matching_hooks(cluster, MUTATING, rt, op, sub, new, old);
        let mut out = Admitted::default();
        if hooks.is_empty() {
            return Ok(out);
        }
        let mut current = new.clone();
        for hook in hooks {
            let Some(resp) = self.call(&hook, rt, op, sub, &current, old, ctx).await? else {
                continue;
            };
            out.warnings.extend(warnings_of(&resp));
            if resp["allowed"] != json!(true) {
                return Err(denied(&hook.name, &resp).with_warnings(out.warnings));
            }
            if let Some(p) = resp["patch"].as_str() {
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(p)
                    .map_err(|e| {
                        ApiError::internal(format!(
                            "admission webhook {:?} returned an undecodable patch: {e}",
                            hook.name
                        ))
                    })?;
                let ops: Value = serde_json::from_slice(&raw).map_err(|e| {
                    ApiError::internal(format!(
                        "admission webhook {:?} returned an invalid JSON patch: {e}",
                        hook.name
                    ))
                })?;
                current = crate::patch::json_patch(&current, &ops).map_err(|e| {
                    ApiError::internal(format!(
                        "admission webhook {:?} returned a patch that does not apply: {}",
                        hook.name, e.message
                    ))
                })?;
                out.patched = Some(current.clone());
            }
        }
        Ok(out)
    }

    #[allow(clippy::too_many_arguments)]
    pub async fn validate(
        &self,
        cluster: &Cluster,
        rt: &ResourceType,
        op: &str,
        sub: &str,
        new: &Value,
        old: Option<&Value>,
        ctx: &WriteCtx,
    ) -> ApiResult<Vec<String>> {
        let hooks = matching_hooks(cluster, VALIDATING, rt, op, sub, new, old);
        let mut warnings = Vec::new();
        for hook in hooks {
            let Some(resp) = self.call(&hook, rt, op, sub, new, old, ctx).await? else {
                continue;
            };
            warnings.extend(warnings_of(&resp));
            if resp["allowed"] != json!(true) {
                return Err(denied(&hook.name, &resp).with_warnings(warnings));
            }
        }
        Ok(warnings)
    }

    /// Sends the review; Ok(None) when the call failed and the failure policy is Ignore.
    #[allow(clippy::too_many_arguments)]
    async fn call(
        &self,
        hook: &Hook,
        rt: &ResourceType,
        op: &str,
        sub: &str,
        new: &Value,
        old: Option<&Value>,
        ctx: &WriteCtx,
    ) -> ApiResult<Option<Value>> {
        let uid = uuid::Uuid::new_v4().to_string();
        let obj_meta = if new.is_object() {
            &new["metadata"]
        } else {
            &old.unwrap_or(&Value::Null)["metadata"]
        };
        let gvk = json!({"group": rt.group, "version": rt.version, "kind": rt.kind});
        let gvr = json!({"group": rt.group, "version": rt.version, "resource": rt.plural});
        let mut request = json!({
            "uid": uid,
            "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
            "name": obj_meta["name"], "namespace": obj_meta["namespace"],
            "operation": op,
            "userInfo": {"username": ctx.user.name, "uid": ctx.user.uid, "groups": ctx.user.groups},
            "object": if op == "DELETE" { Value::Null } else { new.clone() },
            "oldObject": old.cloned().unwrap_or(Value::Null),
            "dryRun": ctx.dry_run,
            "options": options(op, ctx),
        });
        if !sub.is_empty() {
            request["subResource"] = json!(sub);
        }
        let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request});
        let result = tokio::time::timeout(hook.timeout, self.post(hook, &review)).await;
        let failure = match result {
            Ok(Ok(body)) => match serde_json::from_slice::<Value>(&body) {
                Ok(v) if v["response"]["uid"] == json!(uid) => {
                    return Ok(Some(v["response"].clone()));
                }
                Ok(v) if v["response"].is_object() => format!(
                    "expected response.uid={uid:?}, got {:?}",
                    v["response"]["uid"]
                ),
                Ok(_) => "webhook response was absent".to_string(),
                Err(e) => format!("failed to decode the response: {e}"),
            },
            Ok(Err(e)) => e,
            Err(_) => "context deadline exceeded".to_string(),
        };
        if hook.fail_closed {
            Err(ApiError::internal(format!(
                "failed calling webhook {:?}: {failure}",
                hook.name
            )))
        } else {
            tracing::warn!(webhook = %hook.name, error = %failure, "webhook call failed; ignored by failurePolicy");
            Ok(None)
        }
    }

    async fn post(&self, hook: &Hook, review: &Value) -> Result<Bytes, String> {
        let target = self.target(hook)?;
        let url_shown = format!("https://{}{}", target.authority, target.path);
        let fail = |what: &str, e: &dyn std::fmt::Display| {
            format!("failed to call webhook: Post \"{url_shown}\": {what}{e}")
        };
        let mut roots = rustls::RootCertStore::empty();
        if let Some(pem) = &hook.ca_bundle {
            let mut reader = std::io::BufReader::new(pem.as_slice());
            for cert in rustls_pemfile::certs(&mut reader) {
                let cert = cert.map_err(|e| fail("bad caBundle: ", &e))?;
                roots.add(cert).map_err(|e| fail("bad caBundle: ", &e))?;
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| fail("", &e))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let server_name = rustls::pki_types::ServerName::try_from(target.host.clone())
            .map_err(|e| fail("", &e))?;
        // Resolution is asynchronous so a slow resolver neither blocks a worker thread nor escapes the timeout.
        let addr = match target.addr {
            Some(a) => a,
            None => tokio::net::lookup_host((target.host.as_str(), target.port))
                .await
                .map_err(|e| fail("dial tcp: lookup: ", &e))?
                .next()
                .ok_or_else(|| fail("dial tcp: lookup: ", &"no address"))?,
        };
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| fail("dial tcp: ", &e))?;
        let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(server_name, tcp)
            .await
            .map_err(|e| fail("tls: ", &e))?;
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
                .await
                .map_err(|e| fail("", &e))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let body = serde_json::to_vec(review).map_err(|e| fail("", &e))?;
        let req = http::Request::post(target.path.as_str())
            .header("host", target.authority.as_str())
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| fail("", &e))?;
        let resp = sender.send_request(req).await.map_err(|e| fail("", &e))?;
        let status = resp.status();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| fail("", &e))?
            .to_bytes();
        if !status.is_success() {
            return Err(format!("received invalid webhook response: HTTP {status}"));
        }
        Ok(bytes)
    }

    /// Where a hook's requests go.
    fn target(&self, hook: &Hook) -> Result<Target, String> {
        if let Some(url) = &hook.url {
            let rest = url
                .strip_prefix("https://")
                .ok_or_else(|| format!("webhook URL {url:?} must use https"))?;
            let (authority, path) = match rest.find('/') {
                Some(i) => (&rest[..i], rest[i..].to_string()),
                None => (rest, "/".to_string()),
            };
            // `[::1]:8443`, `[::1]`, `host:8443`, `host`.
            let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
                let (h, after) = v6
                    .split_once(']')
                    .ok_or_else(|| format!("webhook URL {url:?} has an unclosed IPv6 bracket"))?;
                (h.to_string(), after.strip_prefix(':').unwrap_or("443"))
            } else {
                match authority.rsplit_once(':') {
                    Some((h, p)) => (h.to_string(), p),
                    None => (authority.to_string(), "443"),
                }
            };
            let port: u16 = port
                .parse()
                .map_err(|_| format!("webhook URL {url:?} has an invalid port"))?;
            let addr = host
                .parse::<std::net::IpAddr>()
                .ok()
                .map(|ip| SocketAddr::new(ip, port));
            return Ok(Target {
                host,
                port,
                addr,
                authority: authority.to_string(),
                path,
            });
        }
        if let Some((ns, name, path)) = &hook.service {
            let routes = self
                .service_routes
                .read()
                .unwrap_or_else(|p| p.into_inner());
            let addr = routes
                .get(&(ns.clone(), name.clone()))
                .copied()
                .ok_or_else(|| format!("failed to call webhook: service \"{ns}/{name}\" has no route in this simulated cluster"))?;
            let host = format!("{name}.{ns}.svc");
            return Ok(Target {
                host: host.clone(),
                port: addr.port(),
                addr: Some(addr),
                authority: host,
                path: path.clone(),
            });
        }
        Err("webhook has neither url nor service".into())
    }
}

struct Target {
    /// For SNI and certificate verification (an IP literal without brackets, or a DNS name).
    host: String,
    port: u16,
    /// Known without a lookup (IP literals and routed services).
    addr: Option<SocketAddr>,
    /// `host[:port]` as written, for the Host header.
    authority: String,
    path: String,
}

struct Hook {
    name: String,
    url: Option<String>,
    service: Option<(String, String, String)>,
    ca_bundle: Option<Vec<u8>>,
    timeout: Duration,
    fail_closed: bool,
}

fn matching_hooks(
    cluster: &Cluster,
    resource: &str,
    rt: &ResourceType,
    op: &str,
    sub: &str,
    new: &Value,
    old: Option<&Value>,
) -> Vec<Hook> {
    let configs = {
        let store = cluster.store();
        let key = StorageKey {
            group: "admissionregistration.k8s.io".into(),
            resource: resource.into(),
        };
        if store.count(&key) == 0 {
            return Vec::new();
        }
        store.list(&key, None)
    };
    // Never send the webhook configurations themselves through webhooks, as the real server exempts them.
    if rt.group == "admissionregistration.k8s.io" {
        return Vec::new();
    }
    let obj = if new.is_object() {
        new
    } else {
        old.unwrap_or(&Value::Null)
    };
    let ns_name = obj["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let ns_labels = namespace_labels(cluster, rt, obj, &ns_name);
    let mut out = Vec::new();
    for cfg in configs {
        for wh in cfg["webhooks"].as_array().into_iter().flatten() {
            if !rules_match(&wh["rules"], rt, op, sub) {
                continue;
            }
            if let Some(labels) = &ns_labels
                && !selector_matches(&wh["namespaceSelector"], labels)
            {
                continue;
            }
            let obj_labels = obj["metadata"]["labels"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            let old_labels = old
                .and_then(|o| o["metadata"]["labels"].as_object().cloned())
                .unwrap_or_default();
            if !selector_matches(&wh["objectSelector"], &obj_labels)
                && !selector_matches(&wh["objectSelector"], &old_labels)
            {
                continue;
            }
            let cc = &wh["clientConfig"];
            out.push(Hook {
                name: wh["name"].as_str().unwrap_or_default().to_string(),
                url: cc["url"].as_str().map(String::from),
                service: cc["service"].as_object().map(|s| {
                    (
                        s.get("namespace")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        s.get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        s.get("path")
                            .and_then(Value::as_str)
                            .unwrap_or("/")
                            .to_string(),
                    )
                }),
                ca_bundle: cc["caBundle"]
                    .as_str()
                    .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok()),
                timeout: Duration::from_secs(
                    wh["timeoutSeconds"].as_u64().unwrap_or(10).clamp(1, 30),
                ),
                fail_closed: wh["failurePolicy"].as_str() != Some("Ignore"),
            });
        }
    }
    out
}

/// The labels a namespaceSelector is matched against; None for cluster-scoped objects (selector not applied).
fn namespace_labels(
    cluster: &Cluster,
    rt: &ResourceType,
    obj: &Value,
    ns: &str,
) -> Option<serde_json::Map<String, Value>> {
    if rt.group.is_empty() && rt.plural == "namespaces" {
        return Some(
            obj["metadata"]["labels"]
                .as_object()
                .cloned()
                .unwrap_or_default(),
        );
    }
    if !rt.namespaced {
        return None;
    }
    let key = StorageKey {
        group: String::new(),
        resource: "namespaces".into(),
    };
    let nso = cluster.store().get(&key, "", ns);
    Some(
        nso.and_then(|n| n["metadata"]["labels"].as_object().cloned())
            .unwrap_or_default(),
    )
}

fn selector_matches(sel: &Value, labels: &serde_json::Map<String, Value>) -> bool {
    if sel.is_null() {
        return true;
    }
    match LabelSelector::from_json(sel) {
        Ok(s) => s.matches(labels),
        Err(_) => false,
    }
}

fn rules_match(rules: &Value, rt: &ResourceType, op: &str, sub: &str) -> bool {
    let want_res = if sub.is_empty() {
        rt.plural.clone()
    } else {
        format!("{}/{sub}", rt.plural)
    };
    let has = |list: &Value, v: &str| {
        list.as_array()
            .is_some_and(|a| a.iter().any(|x| x == "*" || x == v))
    };
    rules.as_array().into_iter().flatten().any(|r| {
        let scope_ok = match r["scope"].as_str().unwrap_or("*") {
            "Cluster" => !rt.namespaced,
            "Namespaced" => rt.namespaced,
            _ => true,
        };
        let res_ok = r["resources"].as_array().is_some_and(|a| {
            a.iter().filter_map(Value::as_str).any(|x| {
                x == "*/*"
                    || x == want_res
                    || (sub.is_empty() && x == "*")
                    || (x.strip_prefix("*/").is_some_and(|s| s == sub))
                    || (x
                        .strip_suffix("/*")
                        .is_some_and(|p| p == rt.plural && !sub.is_empty()))
            })
        });
        scope_ok
            && has(&r["operations"], op)
            && has(&r["apiGroups"], &rt.group)
            && has(&r["apiVersions"], &rt.version)
            && res_ok
    })
}

fn warnings_of(resp: &Value) -> Vec<String> {
    resp["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|w| w.as_str().map(String::from))
        .collect()
}

/// The real server's rejection (apiserver `webhook/errors.ToStatusErr`): the webhook's own Status, its message
/// prefixed `admission webhook "x" denied the request: `, its code raised to at least 400, its reason and
/// details kept (kubectl prints an `Invalid` denial's causes one per line from those details).
fn denied(name: &str, resp: &Value) -> ApiError {
    let status = &resp["status"];
    let code = status["code"]
        .as_u64()
        .filter(|c| *c >= 400 && *c < 600)
        .unwrap_or(400) as u16;
    let prefix = format!("admission webhook {name:?} denied the request");
    let message = match (status["message"].as_str(), status["reason"].as_str()) {
        (Some(m), _) if !m.is_empty() => format!("{prefix}: {m}"),
        (_, Some(r)) if !r.is_empty() => format!("{prefix}: {r}"),
        _ => format!("{prefix} without explanation"),
    };
    // The webhook's reason when it is one of metav1's; the reason a code implies otherwise.
    const REASONS: &[&str] = &[
        "BadRequest",
        "Unauthorized",
        "Forbidden",
        "NotFound",
        "AlreadyExists",
        "Conflict",
        "Gone",
        "Invalid",
        "ServerTimeout",
        "Timeout",
        "TooManyRequests",
        "MethodNotAllowed",
        "NotAcceptable",
        "RequestEntityTooLarge",
        "UnsupportedMediaType",
        "InternalError",
        "Expired",
        "ServiceUnavailable",
    ];
    let reason: &'static str = match REASONS
        .iter()
        .find(|r| status["reason"].as_str() == Some(**r))
    {
        Some(r) => r,
        None => match status["reason"].as_str() {
            Some(r) if !r.is_empty() => "",
            _ => match code {
                400 => "BadRequest",
                403 => "Forbidden",
                404 => "NotFound",
                409 => "Conflict",
                422 => "Invalid",
                _ => "",
            },
        },
    };
    let error = ApiError::new(code, reason, message);
    match status.get("details").filter(|d| d.is_object()) {
        Some(details) => error.with_details(details.clone()),
        None => error,
    }
}

/// `request.options` as the API server fills it: the options the write was sent with (a patch's as the update or
/// create it became), so a webhook can tell who writes (`fieldManager`) and whether it is a dry run.
fn options(op: &str, ctx: &WriteCtx) -> Value {
    let kind = match op {
        "CREATE" => "CreateOptions",
        "UPDATE" => "UpdateOptions",
        _ => "DeleteOptions",
    };
    let mut options = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
    if ctx.dry_run {
        options["dryRun"] = json!(["All"]);
    }
    if let Some(manager) = ctx.field_manager.as_deref().filter(|_| op != "DELETE") {
        options["fieldManager"] = json!(manager);
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;

    #[test]
    fn rules_match_operations_groups_resources_and_subresources() {
        let reg = Registry::new();
        let cm = reg.get("", "v1", "configmaps").expect("cm");
        let rules = json!([{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]);
        assert!(rules_match(&rules, &cm, "CREATE", ""));
        assert!(!rules_match(&rules, &cm, "UPDATE", ""));
        assert!(!rules_match(&rules, &cm, "CREATE", "status"));
        let star = json!([{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"], "scope": "Cluster"}]);
        assert!(
            !rules_match(&star, &cm, "DELETE", ""),
            "scope Cluster excludes namespaced kinds"
        );
    }

    #[test]
    fn a_denial_without_code_is_400_with_the_real_wording() {
        let e = denied(
            "check.example.com",
            &json!({"allowed": false, "status": {"message": "no"}}),
        );
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "admission webhook \"check.example.com\" denied the request: no"
        );
        // An Invalid status keeps its reason and details, as kube-apiserver passes them on.
        let details = json!({"name": "bad", "group": "g", "kind": "K",
            "causes": [{"reason": "FieldValueInvalid", "message": "Invalid value: 1", "field": "spec.x"}]});
        let e = denied(
            "v.kb.io",
            &json!({"allowed": false, "status": {"code": 422, "reason": "Invalid",
                "message": "K.g \"bad\" is invalid: spec.x: Invalid value: 1", "details": details}}),
        );
        assert_eq!((e.code, e.reason), (422, "Invalid"));
        assert_eq!(e.details.as_deref(), Some(&details));
        let e = denied("x", &json!({"allowed": false}));
        assert_eq!(
            e.message,
            "admission webhook \"x\" denied the request without explanation"
        );
    }
}
