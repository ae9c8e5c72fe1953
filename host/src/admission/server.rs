//! The admission webhook server: HTTPS over HTTP/1.1 (the Go operator turns HTTP/2 off), one path per kind
//! (controller-runtime's `/validate-<group, dots as dashes>-<version>-<kind, lower case>`), each answered by
//! the `validate` export of the plugin serving the object, under a deadline. Every replica serves it: admission
//! needs no leader.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;

use super::MAX_QUOTED;
use super::certs::ServingCert;
use super::review;
use crate::runtime::{KindKey, PluginRegistry, truncated};

/// The largest AdmissionReview read: the API server's own request limit is 3 MiB, and a review carries the
/// object twice on updates.
const MAX_BODY: usize = 8 << 20;
/// Connections served at once; more wait to be accepted. With [`MAX_BODY`], the memory reviews can hold.
const MAX_CONNECTIONS: usize = 64;
/// How long a client may take to send a request's headers, and then its body: the API server sends at once, a
/// slow sender is holding a connection.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Reviews of one kind decided at once: each kind has a pool of its own, so one kind's slow or flooded plugin
/// holds at most this many calls (and connections) and never fails another kind's admission.
pub const REVIEWS_PER_KIND: usize = 16;
/// How long a dry run's preview may take: well inside the webhook's `timeoutSeconds` (10 s) with the plugin's
/// validation before it.
const PREVIEW_BUDGET: Duration = Duration::from_secs(4);
/// Previews made at once (see [`Webhooks`]).
const PREVIEWS_AT_ONCE: usize = 4;
/// The longest warning the API server passes on whole (longer ones are truncated by it).
const MAX_WARNING: usize = 256;
/// How long a review waits for its kind's pool before it is answered as undecided: short, so a flood is turned
/// away instead of holding connections.
const POOL_WAIT: Duration = Duration::from_secs(1);

/// What the webhook answers when the plugin cannot decide (it trapped, failed or missed the deadline).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailurePolicy {
    /// Refuse the object (the Go operator's `failurePolicy: Fail`).
    #[default]
    Fail,
    /// Admit it, with a warning saying validation was skipped.
    Ignore,
}

impl FailurePolicy {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "Fail" => Some(FailurePolicy::Fail),
            "Ignore" => Some(FailurePolicy::Ignore),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FailurePolicy::Fail => "Fail",
            FailurePolicy::Ignore => "Ignore",
        }
    }
}

/// controller-runtime's webhook path for a kind.
pub fn validate_path(group: &str, version: &str, kind: &str) -> String {
    format!(
        "/validate-{}-{version}-{}",
        group.replace('.', "-"),
        kind.to_lowercase()
    )
}

/// The Go operator's webhook name for a kind (`vomnicluster-v1alpha1.kb.io`).
pub fn webhook_name(version: &str, kind: &str) -> String {
    format!("v{}-{version}.kb.io", kind.to_lowercase())
}

/// Counts of what the webhooks answered.
#[derive(Debug, Default)]
pub struct AdmissionStats {
    pub allowed: AtomicU64,
    pub denied: AtomicU64,
    /// Reviews the plugin could not decide (trap, failure, deadline).
    pub undecided: AtomicU64,
    /// Requests that were not reviews this server answers.
    pub malformed: AtomicU64,
}

/// Answers reviews with the plugins the registry serves.
pub struct Webhooks {
    registry: Arc<PluginRegistry>,
    deadline: Duration,
    failure: FailurePolicy,
    /// One pool of [`REVIEWS_PER_KIND`] per kind.
    pools: std::sync::Mutex<std::collections::HashMap<KindKey, Arc<tokio::sync::Semaphore>>>,
    preview: Option<Arc<dyn super::Preview>>,
    /// Previews made at once: each runs a plugin's reconcile against Omni and the clusters, so a flood of dry runs
    /// is answered without one beyond these.
    previews: tokio::sync::Semaphore,
    pub stats: AdmissionStats,
}

impl std::fmt::Debug for Webhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhooks")
            .field("deadline", &self.deadline)
            .field("failure", &self.failure)
            .finish_non_exhaustive()
    }
}

impl Webhooks {
    pub fn new(registry: Arc<PluginRegistry>, deadline: Duration, failure: FailurePolicy) -> Self {
        Webhooks {
            registry,
            deadline,
            failure,
            pools: std::sync::Mutex::default(),
            preview: None,
            previews: tokio::sync::Semaphore::new(PREVIEWS_AT_ONCE),
            stats: AdmissionStats::default(),
        }
    }

    /// Adds the plan's summary to the answer of every allowed dry-run create or update.
    pub fn with_preview(mut self, preview: Arc<dyn super::Preview>) -> Self {
        self.preview = Some(preview);
        self
    }

    async fn previewed(&self, request: &review::Request, object: &Value) -> Option<String> {
        let preview = self.preview.as_deref()?;
        preview_warning(preview, &self.previews, request, object, PREVIEW_BUDGET).await
    }

    /// The pool reviews of `kind` are decided in.
    fn pool(&self, kind: &KindKey) -> Arc<tokio::sync::Semaphore> {
        let mut pools = self
            .pools
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        pools
            .entry(kind.clone())
            .or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(REVIEWS_PER_KIND)))
            .clone()
    }

    /// The HTTP status and AdmissionReview answering a POST of `body` to `path`.
    pub async fn answer(&self, path: &str, body: &[u8]) -> (StatusCode, Value) {
        let request = match review::parse(body) {
            Ok(r) => r,
            Err(e) => {
                self.stats.malformed.fetch_add(1, Ordering::Relaxed);
                return (
                    StatusCode::BAD_REQUEST,
                    review::errored("", 400, &e.to_string()),
                );
            }
        };
        let expected = validate_path(&request.group, &request.version, &request.kind);
        if path != expected {
            self.stats.malformed.fetch_add(1, Ordering::Relaxed);
            // The request's kind is whatever the body says: quoted only as far as a real one can be long.
            let message = format!(
                "{} does not validate {}/{} {} (its path is {})",
                truncated(path, MAX_QUOTED),
                truncated(&request.group, MAX_QUOTED),
                truncated(&request.version, MAX_QUOTED),
                truncated(&request.kind, MAX_QUOTED),
                truncated(&expected, MAX_QUOTED),
            );
            return (
                StatusCode::BAD_REQUEST,
                review::errored(&request.uid, 400, &message),
            );
        }
        // The deletion guard, for the kinds whose deletion can destroy something remote (their webhooks alone
        // receive DELETE); the stored object says whether it is protected and confirmed.
        if request.operation == "DELETE"
            && let Some(why) = request
                .old_object
                .as_ref()
                .and_then(|old| super::guard::refusal(&request.kind, old))
        {
            self.stats.denied.fetch_add(1, Ordering::Relaxed);
            return (StatusCode::OK, review::forbidden(&request.uid, &why));
        }
        // The Go operator validates creates and updates only; deletes and connects pass.
        if !matches!(request.operation.as_str(), "CREATE" | "UPDATE") {
            self.stats.allowed.fetch_add(1, Ordering::Relaxed);
            return (StatusCode::OK, review::allowed(&request.uid, &[]));
        }
        let Some(object) = &request.object else {
            self.stats.malformed.fetch_add(1, Ordering::Relaxed);
            return (
                StatusCode::BAD_REQUEST,
                review::errored(
                    &request.uid,
                    400,
                    "the AdmissionReview has no request.object",
                ),
            );
        };
        let uid = object["metadata"]["uid"].as_str().unwrap_or_default();
        let kind = KindKey::new(&request.group, &request.kind);
        let Some(plugin) = self
            .registry
            .serving(&kind, request.namespace.as_deref(), uid)
        else {
            // No plugin serves the kind here: there is nothing to validate with.
            self.stats.allowed.fetch_add(1, Ordering::Relaxed);
            return (StatusCode::OK, review::allowed(&request.uid, &[]));
        };
        let who = format!(
            "{} {}",
            request.kind,
            review_name(&request.namespace, &request.name)
        );
        // The kind's own pool, then the tenant's quota (a binding's call rate and concurrency cover admission as
        // they cover reconciles): a review over either is undecided at once, never queued behind the flood.
        let pool = self.pool(&kind);
        let slot = tokio::time::timeout(POOL_WAIT, pool.acquire_owned()).await;
        let refused = match &slot {
            Ok(Ok(_)) => plugin.admit(std::time::Instant::now()).err().map(|wait| {
                format!(
                    "plugin {:?} is over its tenant's quota; {who} was not validated (retry in {} ms)",
                    plugin.name(),
                    wait.as_millis().max(1)
                )
            }),
            _ => Some(format!(
                "{REVIEWS_PER_KIND} reviews of {} are being decided already; {who} was not validated",
                request.kind
            )),
        };
        let decided = match refused {
            Some(why) => Err(why),
            None => {
                let old = request.old_object.as_ref().map(Value::to_string);
                let object = object.to_string();
                let validating = plugin.validate(&object, old.as_deref());
                match tokio::time::timeout(self.deadline, validating).await {
                    Ok(decided) => Ok(decided),
                    Err(_) => Err(format!(
                        "plugin {:?} did not validate {who} within {} ms",
                        plugin.name(),
                        self.deadline.as_millis()
                    )),
                }
            }
        };
        drop(slot);
        let why = match decided {
            Ok(Ok(verdict)) if verdict.allowed() => {
                self.stats.allowed.fetch_add(1, Ordering::Relaxed);
                let mut warnings = verdict.warnings;
                warnings.extend(self.previewed(&request, object).await);
                return (StatusCode::OK, review::allowed(&request.uid, &warnings));
            }
            Ok(Ok(verdict)) => {
                self.stats.denied.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(object = %who, errors = verdict.errors.len(), "admission denied");
                return (StatusCode::OK, review::denied(&request, &verdict));
            }
            Ok(Err(e)) => format!("plugin {:?} failed to validate {who}: {e}", plugin.name()),
            Err(why) => why,
        };
        self.stats.undecided.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(object = %who, policy = self.failure.name(), "{why}");
        match self.failure {
            FailurePolicy::Fail => (StatusCode::OK, review::errored(&request.uid, 500, &why)),
            FailurePolicy::Ignore => (
                StatusCode::OK,
                review::allowed(
                    &request.uid,
                    &[format!("validation skipped (failurePolicy Ignore): {why}")],
                ),
            ),
        }
    }
}

/// The warning a dry run of `request` is answered with: the plan's summary, made within `budget` while one of
/// `slots` is free. None for a request that is not a dry run, and for the dry runs `omni-operator plan` sends while
/// it plans (the plan is being made already).
async fn preview_warning(
    preview: &dyn super::Preview,
    slots: &tokio::sync::Semaphore,
    request: &review::Request,
    object: &Value,
    budget: Duration,
) -> Option<String> {
    if !request.dry_run || request.field_manager.as_deref() == Some(super::PREVIEW_FIELD_MANAGER) {
        return None;
    }
    let Ok(_slot) = slots.try_acquire() else {
        return Some(format!(
            "omni-operator plan: not made: {PREVIEWS_AT_ONCE} previews are being made already; run omni-operator plan for it"
        ));
    };
    let line = match tokio::time::timeout(budget, preview.summary(object)).await {
        Ok(Ok(summary)) => summary,
        Ok(Err(why)) => format!("omni-operator plan: not made: {why}"),
        Err(_) => format!(
            "omni-operator plan: not made within {} ms; run omni-operator plan for it",
            budget.as_millis()
        ),
    };
    // The API server truncates a warning past this many characters; cut it where a reader can tell.
    Some(truncated(&line, MAX_WARNING))
}

fn review_name(namespace: &Option<String>, name: &str) -> String {
    let name = truncated(name, MAX_QUOTED);
    match namespace {
        Some(ns) => format!("{}/{name}", truncated(ns, MAX_QUOTED)),
        None => name,
    }
}

/// Serves `webhooks` over TLS with the certificate `serving` holds, until `shutdown`.
pub async fn serve(
    listener: TcpListener,
    serving: Arc<ServingCert>,
    webhooks: Arc<Webhooks>,
    shutdown: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(serving);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => return Ok(()),
            },
            _ = &mut shutdown => return Ok(()),
        };
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "webhook server: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut shutdown => return Ok(()),
        };
        let (acceptor, webhooks) = (acceptor.clone(), webhooks.clone());
        tokio::spawn(async move {
            let _slot = slot;
            let tls = match tokio::time::timeout(READ_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "webhook server: TLS handshake failed");
                    return;
                }
                Err(_) => return,
            };
            let service = service_fn(move |req| handle(req, webhooks.clone()));
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(READ_TIMEOUT)
                .serve_connection(TokioIo::new(tls), service)
                .await
            {
                tracing::debug!(%peer, error = %e, "webhook server: connection ended");
            }
        });
    }
}

async fn handle(
    req: Request<Incoming>,
    webhooks: Arc<Webhooks>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if req.method() != Method::POST {
        return Ok(reply(
            StatusCode::METHOD_NOT_ALLOWED,
            Bytes::from_static(b"POST an AdmissionReview\n"),
        ));
    }
    let path = req.uri().path().to_string();
    let read = tokio::time::timeout(
        READ_TIMEOUT,
        Limited::new(req.into_body(), MAX_BODY).collect(),
    )
    .await;
    let body = match read {
        Ok(Ok(b)) => b.to_bytes(),
        Ok(Err(e)) => {
            let status = if e.is::<http_body_util::LengthLimitError>() {
                StatusCode::PAYLOAD_TOO_LARGE
            } else {
                StatusCode::BAD_REQUEST
            };
            return Ok(reply(
                status,
                Bytes::from(format!("reading the request body: {e}\n")),
            ));
        }
        Err(_) => {
            return Ok(reply(
                StatusCode::REQUEST_TIMEOUT,
                Bytes::from_static(b"the request body did not arrive in time\n"),
            ));
        }
    };
    let (status, answer) = webhooks.answer(&path, &body).await;
    Ok(reply(status, Bytes::from(answer.to_string())))
}

fn reply(status: StatusCode, body: Bytes) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A preview answering with what it was given, or never.
    #[derive(Debug)]
    struct Echo {
        hang: bool,
        calls: AtomicU64,
    }

    impl super::super::Preview for Echo {
        fn summary<'a>(
            &'a self,
            object: &'a Value,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, String>> + Send + 'a>>
        {
            self.calls.fetch_add(1, Ordering::Relaxed);
            Box::pin(async move {
                if self.hang {
                    std::future::pending::<()>().await;
                }
                Ok(format!(
                    "plan of {}",
                    object["metadata"]["name"].as_str().unwrap_or("?")
                ))
            })
        }
    }

    fn request(dry_run: bool, manager: Option<&str>) -> review::Request {
        review::Request {
            uid: "u".into(),
            group: "omni.texashpc.com".into(),
            version: "v1alpha1".into(),
            kind: "OmniCluster".into(),
            name: "edge".into(),
            namespace: Some("ns".into()),
            operation: "UPDATE".into(),
            object: None,
            old_object: None,
            dry_run,
            field_manager: manager.map(str::to_string),
        }
    }

    #[tokio::test]
    async fn only_a_clients_dry_run_is_previewed_and_within_its_budget() {
        let echo = Echo {
            hang: false,
            calls: AtomicU64::new(0),
        };
        let object = serde_json::json!({"metadata": {"name": "edge"}});
        let budget = Duration::from_secs(5);
        let slots = tokio::sync::Semaphore::new(1);
        let warned =
            async |r: review::Request| preview_warning(&echo, &slots, &r, &object, budget).await;
        assert_eq!(
            warned(request(true, Some("kubectl-client-side-apply")))
                .await
                .as_deref(),
            Some("plan of edge")
        );
        assert_eq!(
            warned(request(true, None)).await.as_deref(),
            Some("plan of edge")
        );
        assert_eq!(warned(request(false, Some("kubectl"))).await, None);
        // The preview's own dry run: planning it would plan again.
        assert_eq!(
            warned(request(true, Some(super::super::PREVIEW_FIELD_MANAGER))).await,
            None
        );
        assert_eq!(echo.calls.load(Ordering::Relaxed), 2);

        let long = serde_json::json!({"metadata": {"name": "x".repeat(1000)}});
        let warning = preview_warning(&echo, &slots, &request(true, None), &long, budget)
            .await
            .expect("a warning");
        assert!(
            warning.len() <= MAX_WARNING && warning.ends_with('…'),
            "{warning}"
        );

        let hanging = Echo {
            hang: true,
            calls: AtomicU64::new(0),
        };
        let warning = preview_warning(
            &hanging,
            &slots,
            &request(true, None),
            &object,
            Duration::from_millis(50),
        )
        .await;
        assert_eq!(
            warning.as_deref(),
            Some("omni-operator plan: not made within 50 ms; run omni-operator plan for it")
        );

        // Every slot taken: answered at once, without a preview.
        let _taken = slots.try_acquire().expect("the one slot");
        let calls = echo.calls.load(Ordering::Relaxed);
        let warning = preview_warning(&echo, &slots, &request(true, None), &object, budget).await;
        assert_eq!(
            warning.as_deref(),
            Some(
                "omni-operator plan: not made: 4 previews are being made already; run omni-operator plan for it"
            )
        );
        assert_eq!(echo.calls.load(Ordering::Relaxed), calls);
    }

    #[test]
    fn paths_and_names_are_the_go_operators() {
        assert_eq!(
            validate_path("omni.texashpc.com", "v1alpha1", "OmniKubeconfigExport"),
            "/validate-omni-texashpc-com-v1alpha1-omnikubeconfigexport"
        );
        assert_eq!(
            webhook_name("v1alpha1", "OmniCluster"),
            "vomnicluster-v1alpha1.kb.io"
        );
        assert_eq!(FailurePolicy::parse("Ignore"), Some(FailurePolicy::Ignore));
        assert_eq!(FailurePolicy::parse("ignore"), None);
    }
}
