//! Transport: our own accept loop (plaintext h2c or TLS with ALPN h2) in front of tonic's router, so that
//! every request carries the id of the connection it arrived on and faults can drop a connection.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;
use tonic::codegen::Service as _;
use tonic::service::Routes;

/// Request extension: the id of the connection (counting from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnId(pub u64);

/// Open connections, so a fault can close the one a call arrived on.
#[derive(Debug, Default)]
pub struct Connections {
    next: AtomicU64,
    open: Mutex<HashMap<u64, Arc<Notify>>>,
}

impl Connections {
    fn register(&self) -> (u64, Arc<Notify>) {
        let id = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        let n = Arc::new(Notify::new());
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, n.clone());
        (id, n)
    }

    fn forget(&self, id: u64) {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
    }

    /// Drops the connection (its task ends, the socket closes).
    pub fn close(&self, id: u64) {
        if let Some(n) = self.open.lock().unwrap_or_else(|p| p.into_inner()).get(&id) {
            n.notify_one();
        }
    }

    /// How many connections have been accepted so far.
    pub fn accepted(&self) -> u64 {
        self.next.load(Ordering::SeqCst)
    }
}

#[derive(Clone)]
struct ConnService {
    routes: Routes,
    id: u64,
}

impl hyper::service::Service<http::Request<Incoming>> for ConnService {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, mut req: http::Request<Incoming>) -> Self::Future {
        req.extensions_mut().insert(ConnId(self.id));
        // grpc-go (Omni) answers with the compressor the request used and ignores what the client would accept;
        // tonic would gzip every answer to a client that accepts gzip. Hiding the accept header from tonic
        // unless the request itself was gzipped gives grpc-go's behaviour.
        if req
            .headers()
            .get("grpc-encoding")
            .is_none_or(|e| e.as_bytes() != b"gzip")
        {
            req.headers_mut().remove("grpc-accept-encoding");
        }
        let mut routes = self.routes.clone();
        Box::pin(async move {
            let mut resp = routes.call(req).await?;
            go_size_limit_status(&mut resp);
            Ok(resp)
        })
    }
}

/// tonic refuses an oversized request with `OutOfRange`; grpc-go (Omni) says `ResourceExhausted`, with its
/// own text. The status of such a refusal travels in the response headers (trailers-only response).
fn go_size_limit_status(resp: &mut http::Response<tonic::body::Body>) {
    let h = resp.headers_mut();
    let out_of_range = h.get("grpc-status").is_some_and(|v| v.as_bytes() == b"11");
    let message = h
        .get("grpc-message")
        .and_then(|v| v.to_str().ok())
        .map(percent_decode)
        .unwrap_or_default();
    if !out_of_range || !message.contains("message length too large") {
        return;
    }
    let found = message
        .split("found ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap_or("?")
        .to_string();
    let text = format!(
        "grpc: received message larger than max ({found} vs. {})",
        crate::MAX_MESSAGE_BYTES
    );
    h.insert("grpc-status", http::HeaderValue::from_static("8"));
    if let Ok(v) = http::HeaderValue::from_str(&text.replace(' ', "%20")) {
        h.insert("grpc-message", v);
    }
}

/// grpc-message is percent-encoded; only what tonic's texts contain needs decoding here.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Serves until `shutdown` turns true; then every connection is dropped.
pub async fn serve(
    listener: TcpListener,
    routes: Routes,
    tls: Option<Arc<rustls::ServerConfig>>,
    conns: Arc<Connections>,
    mut shutdown: watch::Receiver<bool>,
) {
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let mut tasks = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.changed() => break,
        };
        while tasks.try_join_next().is_some() {}
        let (stream, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (id, kill) = conns.register();
        let svc = ConnService {
            routes: routes.clone(),
            id,
        };
        let acceptor = acceptor.clone();
        let conns = conns.clone();
        tasks.spawn(async move {
            tracing::debug!(%peer, connection = id, "accepted");
            let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
            builder.max_frame_size(Some(1 << 20)).max_send_buf_size(4 << 20);
            let served = async {
                match acceptor {
                    Some(acceptor) => match acceptor.accept(stream).await {
                        Ok(tls) => builder.serve_connection(TokioIo::new(tls), svc).await.map_err(|e| e.to_string()),
                        Err(e) => Err(format!("TLS handshake failed: {e}")),
                    },
                    None => builder.serve_connection(TokioIo::new(stream), svc).await.map_err(|e| e.to_string()),
                }
            };
            tokio::select! {
                r = served => if let Err(e) = r { tracing::debug!(%peer, connection = id, error = %e, "connection ended with an error") },
                _ = kill.notified() => tracing::debug!(%peer, connection = id, "connection closed (fault injected)"),
            }
            conns.forget(id);
        });
    }
    tasks.abort_all();
}

/// A CA and a serving certificate for localhost / 127.0.0.1 / ::1.
pub struct Pki {
    pub ca_pem: String,
    pub config: Arc<rustls::ServerConfig>,
}

impl Pki {
    pub fn generate() -> Result<Self> {
        let ca_key = KeyPair::generate().context("generating the CA key")?;
        let mut params = CertificateParams::new(Vec::<String>::new()).context("CA parameters")?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "omni-sim-ca");
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = params.self_signed(&ca_key).context("self-signing the CA")?;
        let ca_pem = ca_cert.pem();
        let issuer = Issuer::new(params, ca_key);

        let key = KeyPair::generate().context("generating the serving key")?;
        let mut params = CertificateParams::new(Vec::<String>::new())
            .context("serving certificate parameters")?;
        params.subject_alt_names = vec![
            SanType::DnsName("localhost".try_into().context("DNS name")?),
            SanType::IpAddress([127, 0, 0, 1].into()),
            SanType::IpAddress(std::net::Ipv6Addr::LOCALHOST.into()),
        ];
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "omni-sim");
        params.distinguished_name = dn;
        let cert = params
            .signed_by(&key, &issuer)
            .context("signing the serving certificate")?;

        let certs = vec![cert.der().clone()];
        let key_der = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .context("TLS protocol versions")?
            .with_no_client_auth()
            .with_single_cert(certs, key_der)
            .context("TLS server configuration")?;
        // grpc-go refuses TLS servers that do not negotiate h2.
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(Pki {
            ca_pem,
            config: Arc::new(config),
        })
    }
}
