//! The operator's HTTP endpoints for Kubernetes and Prometheus: `/healthz` and `/readyz` on the health-probe
//! address (controller-runtime's `--health-probe-bind-address`, `:8081`), `/metrics` on the metrics address
//! (`--metrics-bind-address`) — the controllers' metrics under controller-runtime's names, each loaded plugin
//! version's figures, and the admission webhooks' answers.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use tokio::net::TcpListener;

use crate::admission::Webhooks;
use crate::controllers::metrics::Metrics;
use crate::runtime::PluginRegistry;

/// A readiness check: None when ready, else why not.
pub type Check = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// Which paths one listener answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Paths {
    /// `/healthz`, `/readyz` and `/metrics` (`dev`, the benchmarks).
    All,
    /// The health-probe address: `/healthz` and `/readyz` only, so turning metrics off turns them off.
    Probes,
    /// The metrics address: `/metrics` only.
    Metrics,
}

/// What the endpoints report on.
#[derive(Clone)]
pub struct Endpoints {
    pub metrics: Arc<Metrics>,
    /// Named checks `/readyz` runs; `/healthz` answers while the process serves requests.
    pub ready: Vec<(String, Check)>,
    pub paths: Paths,
}

impl Endpoints {
    /// Adds the per-plugin figures of every loaded version in `registry`, and the webhooks' answers when they
    /// are served, to the metrics.
    pub fn new(
        metrics: Arc<Metrics>,
        registry: Arc<PluginRegistry>,
        webhooks: Option<Arc<Webhooks>>,
    ) -> Self {
        metrics.with_registry(|r| {
            r.register_collector(Box::new(PluginFigures { registry }));
            if let Some(webhooks) = webhooks {
                r.register_collector(Box::new(AdmissionFigures { webhooks }));
            }
        });
        Endpoints {
            metrics,
            ready: Vec::new(),
            paths: Paths::All,
        }
    }

    /// The same endpoints, answering only `paths`.
    pub fn answering(mut self, paths: Paths) -> Self {
        self.paths = paths;
        self
    }

    pub fn ready_when(mut self, name: &str, check: Check) -> Self {
        self.ready.push((name.to_string(), check));
        self
    }

    fn answer(&self, path: &str) -> (StatusCode, &'static str, String) {
        const TEXT: &str = "text/plain; charset=utf-8";
        let probes = self.paths != Paths::Metrics;
        let metrics = self.paths != Paths::Probes;
        match path {
            "/healthz" | "/livez" if probes => (StatusCode::OK, TEXT, "ok".into()),
            "/readyz" if probes => {
                let failing: Vec<String> = self
                    .ready
                    .iter()
                    .filter_map(|(name, check)| {
                        check().map(|why| format!("[-]{name} failed: {why}"))
                    })
                    .collect();
                if failing.is_empty() {
                    (StatusCode::OK, TEXT, "ok".into())
                } else {
                    (
                        StatusCode::INTERNAL_SERVER_ERROR,
                        TEXT,
                        format!("{}\nreadyz check failed", failing.join("\n")),
                    )
                }
            }
            "/metrics" if metrics => match self.metrics.encode() {
                Ok(text) => (
                    StatusCode::OK,
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    text,
                ),
                Err(e) => (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    TEXT,
                    format!("encoding the metrics: {e}"),
                ),
            },
            _ => (StatusCode::NOT_FOUND, TEXT, "404 page not found".into()),
        }
    }
}

/// Parses a Go-style listen address: `:8081` (every interface), `127.0.0.1:8080`, or `0` (off).
pub fn bind_address(flag: &str, value: &str) -> Result<Option<SocketAddr>> {
    if value == "0" || value.is_empty() {
        return Ok(None);
    }
    let full = match value.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => value.to_string(),
    };
    full.parse()
        .map(Some)
        .with_context(|| format!("{flag} {value:?}: expected HOST:PORT, :PORT or 0"))
}

/// Serves `endpoints` on `listener` over plain HTTP until `shutdown`.
pub async fn serve(
    listener: TcpListener,
    endpoints: Endpoints,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let endpoints = Arc::new(endpoints);
    tokio::pin!(shutdown);
    loop {
        let (tcp, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "metrics/health server: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut shutdown => return,
        };
        let endpoints = endpoints.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: Request<Incoming>| {
                let endpoints = endpoints.clone();
                async move {
                    let (status, content_type, body) = if req.method() == Method::GET {
                        endpoints.answer(req.uri().path())
                    } else {
                        (
                            StatusCode::METHOD_NOT_ALLOWED,
                            "text/plain; charset=utf-8",
                            "GET only".into(),
                        )
                    };
                    let mut response = Response::new(Full::new(Bytes::from(body)));
                    *response.status_mut() = status;
                    response.headers_mut().insert(
                        hyper::header::CONTENT_TYPE,
                        hyper::header::HeaderValue::from_static(content_type),
                    );
                    Ok::<_, Infallible>(response)
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(Duration::from_secs(10))
                .serve_connection(TokioIo::new(tcp), service)
                .await;
        });
    }
}

/// Binds `addr` and serves there in the background; answers the bound address.
pub async fn start(
    addr: SocketAddr,
    endpoints: Endpoints,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<SocketAddr> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    let bound = listener.local_addr()?;
    tokio::spawn(serve(listener, endpoints, shutdown));
    Ok(bound)
}

/// Each loaded plugin version's call figures, labelled by plugin, digest and binding.
#[derive(Debug)]
struct PluginFigures {
    registry: Arc<PluginRegistry>,
}

impl Collector for PluginFigures {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let versions: Vec<_> = self
            .registry
            .versions()
            .into_iter()
            .map(|(binding, plugin)| {
                (
                    [
                        ("plugin", plugin.name().to_string()),
                        ("digest", plugin.digest().to_string()),
                        ("binding", binding),
                    ],
                    plugin.usage().figures(),
                )
            })
            .collect();
        type Count = fn(&crate::runtime::UsageFigures) -> u64;
        let counters: [(&str, &str, Count); 5] = [
            ("omni_operator_plugin_calls", "Plugin calls started", |f| {
                f.calls
            }),
            (
                "omni_operator_plugin_failures",
                "Plugin calls that failed (an error, a trap or the deadline)",
                |f| f.failures,
            ),
            (
                "omni_operator_plugin_traps",
                "Plugin calls that trapped",
                |f| f.traps,
            ),
            (
                "omni_operator_plugin_denials",
                "Capability calls refused for lack of a grant",
                |f| f.denials,
            ),
            (
                "omni_operator_plugin_quota_hits",
                "Calls turned away by the binding's quota",
                |f| f.quota_hits,
            ),
        ];
        for (name, help, value) in counters {
            let metric = ConstCounter::new(0u64);
            let mut family = encoder.encode_descriptor(name, help, None, metric.metric_type())?;
            for (labels, figures) in &versions {
                ConstCounter::new(value(figures)).encode(family.encode_family(labels)?)?;
            }
        }
        let metric = ConstCounter::new(0.0);
        let mut family = encoder.encode_descriptor(
            "omni_operator_plugin_busy_seconds",
            "Time spent in plugin calls",
            None,
            metric.metric_type(),
        )?;
        for (labels, figures) in &versions {
            ConstCounter::new(figures.busy.as_secs_f64()).encode(family.encode_family(labels)?)?;
        }
        let metric = ConstCounter::new(0u64);
        let mut family = encoder.encode_descriptor(
            "omni_operator_plugin_traps_by_class",
            "Plugin traps by class (out of fuel, out of memory, deadline, panic, …)",
            None,
            metric.metric_type(),
        )?;
        for (labels, figures) in &versions {
            for (class, n) in &figures.traps_by_class {
                let [plugin, digest, binding] = labels.clone();
                let labels = [plugin, digest, binding, ("class", class.to_string())];
                ConstCounter::new(*n).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

/// The admission webhooks' answers by result.
#[derive(Debug)]
struct AdmissionFigures {
    webhooks: Arc<Webhooks>,
}

impl Collector for AdmissionFigures {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = &self.webhooks.stats;
        let metric = ConstCounter::new(0u64);
        let mut family = encoder.encode_descriptor(
            "omni_operator_admission_reviews",
            "Admission reviews answered, by result",
            None,
            metric.metric_type(),
        )?;
        for (result, n) in [
            ("allowed", &s.allowed),
            ("denied", &s.denied),
            ("undecided", &s.undecided),
            ("malformed", &s.malformed),
        ] {
            ConstCounter::new(n.load(Ordering::Relaxed))
                .encode(family.encode_family(&[("result", result)])?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_style_addresses_parse() {
        assert_eq!(
            bind_address("--x", ":8081").expect("parses"),
            Some("0.0.0.0:8081".parse().expect("addr"))
        );
        assert_eq!(bind_address("--x", "0").expect("parses"), None);
        assert!(
            bind_address("--metrics-bind-address", "eight")
                .expect_err("refused")
                .to_string()
                .contains("--metrics-bind-address \"eight\"")
        );
    }

    #[test]
    fn readiness_names_every_failing_check() {
        let endpoints = Endpoints {
            metrics: Arc::default(),
            ready: Vec::new(),
            paths: Paths::All,
        }
        .ready_when("controllers", Arc::new(|| None))
        .ready_when(
            "webhook-certificates",
            Arc::new(|| Some("no serving certificate yet".into())),
        );
        let (status, _, body) = endpoints.answer("/readyz");
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            body,
            "[-]webhook-certificates failed: no serving certificate yet\nreadyz check failed"
        );
        assert_eq!(endpoints.answer("/healthz").0, StatusCode::OK);
        assert_eq!(endpoints.answer("/nope").0, StatusCode::NOT_FOUND);
        // Each address answers only its own paths.
        let probes = endpoints.clone().answering(Paths::Probes);
        assert_eq!(probes.answer("/metrics").0, StatusCode::NOT_FOUND);
        assert_eq!(probes.answer("/healthz").0, StatusCode::OK);
        let metrics = endpoints.answering(Paths::Metrics);
        assert_eq!(metrics.answer("/healthz").0, StatusCode::NOT_FOUND);
        assert_eq!(metrics.answer("/metrics").0, StatusCode::OK);
    }
}
