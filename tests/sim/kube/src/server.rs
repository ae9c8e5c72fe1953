//! The listener: TLS (with optional client certificates) or plain HTTP, HTTP/1.1 and HTTP/2 on every
//! connection.

use std::sync::Arc;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::api::{self, Api};
use crate::tls::identity_from_cert;

/// Accepts connections until `shutdown` turns true, then closes every open connection.
pub async fn serve(
    listener: TcpListener,
    api: Arc<Api>,
    tls: Option<Arc<rustls::ServerConfig>>,
    mut shutdown: watch::Receiver<bool>,
) {
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let mut conns = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.changed() => break,
        };
        // Reap finished connection tasks so the set does not grow without bound.
        while conns.try_join_next().is_some() {}
        let (stream, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let api = api.clone();
        let acceptor = acceptor.clone();
        conns.spawn(async move {
            let builder = auto::Builder::new(TokioExecutor::new());
            // Set by a request the fault rules drop: the connection closes under every request on it.
            let kill = Arc::new(tokio::sync::Notify::new());
            match acceptor {
                Some(acceptor) => {
                    let tls = match acceptor.accept(stream).await {
                        Ok(t) => t,
                        Err(e) => {
                            tracing::debug!(%peer, error = %e, "TLS handshake failed");
                            return;
                        }
                    };
                    let identity = tls
                        .get_ref()
                        .1
                        .peer_certificates()
                        .and_then(|c| c.first())
                        .and_then(|c| identity_from_cert(c));
                    let dropper = kill.clone();
                    let svc = service_fn(move |req| {
                        let api = api.clone();
                        let identity = identity.clone();
                        let dropper = dropper.clone();
                        async move {
                            if api::drops_connection(&api, &req) {
                                dropper.notify_one();
                                std::future::pending::<()>().await;
                            }
                            Ok::<_, std::convert::Infallible>(api::handle(api, req, identity).await)
                        }
                    });
                    tokio::select! {
                        served = builder.serve_connection(TokioIo::new(tls), svc) => if let Err(e) = served {
                            tracing::debug!(%peer, error = %e, "connection ended with an error");
                        },
                        _ = kill.notified() => tracing::debug!(%peer, "connection dropped (fault injected)"),
                    }
                }
                None => {
                    let dropper = kill.clone();
                    let svc = service_fn(move |req| {
                        let api = api.clone();
                        let dropper = dropper.clone();
                        async move {
                            if api::drops_connection(&api, &req) {
                                dropper.notify_one();
                                std::future::pending::<()>().await;
                            }
                            Ok::<_, std::convert::Infallible>(api::handle(api, req, None).await)
                        }
                    });
                    tokio::select! {
                        served = builder.serve_connection(TokioIo::new(stream), svc) => if let Err(e) = served {
                            tracing::debug!(%peer, error = %e, "connection ended with an error");
                        },
                        _ = kill.notified() => tracing::debug!(%peer, "connection dropped (fault injected)"),
                    }
                }
            }
        });
    }
    conns.abort_all();
}
