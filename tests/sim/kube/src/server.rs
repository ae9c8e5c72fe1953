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
                    serve_connection(tls, api, identity, peer).await;
                }
                None => serve_connection(stream, api, None, peer).await,
            }
        });
    }
    conns.abort_all();
}

/// Serves one connection until it ends, or until a request the fault rules drop closes it without an answer
/// (each request carries the connection's kill switch to `api::handle`).
async fn serve_connection<IO>(
    io: IO,
    api: Arc<Api>,
    identity: Option<(String, Vec<String>)>,
    peer: std::net::SocketAddr,
) where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let kill = api::ConnectionKill::default();
    let switch = kill.clone();
    let svc = service_fn(move |mut req| {
        let api = api.clone();
        let identity = identity.clone();
        req.extensions_mut().insert(switch.clone());
        async move { Ok::<_, std::convert::Infallible>(api::handle(api, req, identity).await) }
    });
    let builder = auto::Builder::new(TokioExecutor::new());
    tokio::select! {
        served = builder.serve_connection(TokioIo::new(io), svc) => if let Err(e) = served {
            tracing::debug!(%peer, error = %e, "connection ended with an error");
        },
        _ = kill.pulled() => tracing::debug!(%peer, "connection dropped (fault injected)"),
    }
}
