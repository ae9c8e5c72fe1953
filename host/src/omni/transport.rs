//! gRPC channels to Omni. Omni serves native gRPC over HTTP/2 only: TLS with
//! ALPN `h2` for `https` endpoints, HTTP/2 with prior knowledge otherwise. The connector is ours rather than
//! tonic's TLS so that `insecureSkipTLSVerify` can be honoured, which tonic's TLS settings cannot express.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tonic::transport::{Channel, Endpoint as TonicEndpoint};

use super::endpoint::Endpoint;

/// The Go client's keepalive ping interval (`keepalive.ClientParameters{Time: time.Minute}`).
const KEEPALIVE: Duration = Duration::from_secs(60);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Omni's message size cap (`GRPCMaxMessageSize`).
pub const MAX_MESSAGE_BYTES: usize = 32 * 1024 * 1024;

trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

type Connecting = Pin<Box<dyn Future<Output = std::io::Result<TokioIo<Box<dyn Io>>>> + Send>>;

/// A lazily connecting channel: nothing is dialled until the first call, and the channel reconnects by itself
/// after the connection drops.
pub fn channel(endpoint: &Endpoint, insecure_skip_verify: bool) -> Result<Channel, String> {
    // The URI only names the authority; the connector below decides about TLS. (`http` keeps tonic from
    // insisting on its own TLS when some dependency enables tonic's TLS features.)
    let uri = format!("http://{}", endpoint.authority());
    let tonic_endpoint = TonicEndpoint::from_shared(uri)
        .map_err(|e| format!("invalid endpoint {}: {e}", endpoint.normalized))?
        .connect_timeout(CONNECT_TIMEOUT)
        .http2_keep_alive_interval(KEEPALIVE)
        .keep_alive_while_idle(false)
        .tcp_nodelay(true);
    let tls = if endpoint.tls {
        Some(Arc::new(tls_config(insecure_skip_verify)?))
    } else {
        None
    };
    let host = endpoint.host.clone();
    let authority = endpoint.authority();
    let connector = tower::service_fn(move |_uri: http::Uri| -> Connecting {
        let tls = tls.clone();
        let host = host.clone();
        let authority = authority.clone();
        Box::pin(async move {
            let tcp = TcpStream::connect(&authority).await?;
            tcp.set_nodelay(true)?;
            let io: Box<dyn Io> = match tls {
                None => Box::new(tcp),
                Some(config) => {
                    let name = ServerName::try_from(host.clone()).map_err(|e| {
                        std::io::Error::new(
                            std::io::ErrorKind::InvalidInput,
                            format!("TLS server name {host:?}: {e}"),
                        )
                    })?;
                    let stream = tokio_rustls::TlsConnector::from(config)
                        .connect(name, tcp)
                        .await?;
                    Box::new(stream)
                }
            };
            Ok(TokioIo::new(io))
        })
    });
    Ok(tonic_endpoint.connect_with_connector_lazy(connector))
}

fn tls_config(insecure_skip_verify: bool) -> Result<ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up: {e}"))?;
    let mut config = if insecure_skip_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
            .with_no_client_auth()
    } else {
        // The system's roots, as Go's `tls.Config{}` uses.
        let mut roots = RootCertStore::empty();
        let found = rustls_native_certs::load_native_certs();
        for cert in found.certs {
            // A root the platform lists but rustls cannot parse is skipped, as Go skips it.
            let _ = roots.add(cert);
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(config)
}

/// `insecureSkipTLSVerify`: any certificate is accepted (the handshake's signatures are still checked, so the
/// session is encrypted with the key the server presented).
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
