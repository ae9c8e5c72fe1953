//! A chart repository on loopback: `index.yaml` and the chart archives of one directory, served over HTTP or
//! HTTPS (GET only, one request per connection), optionally behind basic auth, for `dev` and the tests. Helm made
//! the directory (`Op::Publish`). It can be told to misbehave while it serves ([`Faults`]): answer every request
//! with an error status, or stall chart downloads halfway.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};

use base64::Engine as _;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Requests larger than this are not a chart download; the connection is dropped.
const MAX_REQUEST: usize = 16 << 10;

/// Who may download: anyone, or only with these basic-auth credentials; over TLS with this configuration.
#[derive(Clone, Default)]
pub struct Access {
    pub basic_auth: Option<(String, String)>,
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The password is a credential: never in a debug print.
        f.debug_struct("Access")
            .field("basic_auth", &self.basic_auth.is_some())
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

/// Faults a served repository injects, switched while it serves.
pub struct Faults {
    /// Every request is answered with this HTTP status instead (0: none).
    status: AtomicU16,
    /// Chart archives are sent halfway, then held until this turns false.
    stall: tokio::sync::watch::Sender<bool>,
    /// Downloads that stalled so far.
    stalled: AtomicU64,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            status: AtomicU16::new(0),
            stall: tokio::sync::watch::Sender::new(false),
            stalled: AtomicU64::new(0),
        }
    }
}

impl Faults {
    /// Answers every request (index and archives) with `status` (a 500 or 503, say) until called with `None`.
    pub fn fail_with(&self, status: Option<u16>) {
        self.status.store(status.unwrap_or(0), Ordering::SeqCst);
    }

    /// While on, a chart archive's download sends the headers and the first half of the archive, then nothing
    /// more until stalling is switched off (a client without a deadline waits for ever; one with a deadline gives
    /// up). Switching it off lets held downloads finish.
    pub fn stall_downloads(&self, on: bool) {
        self.stall.send_replace(on);
    }

    /// How many downloads stalled so far.
    pub fn stalled(&self) -> u64 {
        self.stalled.load(Ordering::SeqCst)
    }
}

/// A served directory; serving stops when this is dropped.
pub struct ChartRepository {
    /// The repository URL, `http://127.0.0.1:<port>/charts` (`https://…` with TLS).
    pub url: String,
    /// Switches for misbehaving on purpose.
    pub faults: Arc<Faults>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ChartRepository {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ChartRepository {
    /// Binds a free loopback port; files are served to anyone, over plain HTTP, once they exist in `dir`.
    pub async fn bind(dir: &Path) -> std::io::Result<ChartRepository> {
        ChartRepository::serve(dir, Access::default()).await
    }

    /// As [`ChartRepository::bind`], with `access`'s rules.
    pub async fn serve(dir: &Path, access: Access) -> std::io::Result<ChartRepository> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let scheme = if access.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let url = format!("{scheme}://{}/charts", listener.local_addr()?);
        let root = dir.to_path_buf();
        let expected = access.basic_auth.as_ref().map(|(user, password)| {
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
        });
        let acceptor = access.tls.map(tokio_rustls::TlsAcceptor::from);
        let faults = Arc::new(Faults::default());
        let served = faults.clone();
        let task = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let (root, expected, acceptor) = (root.clone(), expected.clone(), acceptor.clone());
                let faults = served.clone();
                tokio::spawn(async move {
                    match acceptor {
                        Some(acceptor) => {
                            if let Ok(tls) = acceptor.accept(conn).await {
                                answer(tls, root, expected, &faults).await;
                            }
                        }
                        None => answer(conn, root, expected, &faults).await,
                    }
                });
            }
        });
        Ok(ChartRepository { url, faults, task })
    }
}

async fn answer<C: AsyncRead + AsyncWrite + Unpin>(
    mut conn: C,
    root: PathBuf,
    expected: Option<String>,
    faults: &Faults,
) {
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
        if request.len() > MAX_REQUEST {
            return;
        }
    }
    let text = String::from_utf8_lossy(&request);
    let mut words = text.split_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or("/"));
    // `Authorization: Basic <base64(user:password)>`, the scheme in any case.
    let authorised = expected.as_deref().is_none_or(|want| {
        text.lines().any(|line| {
            line.split_once(':').is_some_and(|(name, value)| {
                name.trim().eq_ignore_ascii_case("authorization")
                    && value.trim().split_once(' ').is_some_and(|(scheme, token)| {
                        scheme.eq_ignore_ascii_case("basic") && token.trim() == want
                    })
            })
        })
    });
    if !authorised {
        let head = "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Basic realm=\"charts\"\r\n\
                    content-length: 0\r\nconnection: close\r\n\r\n";
        let _ = conn.write_all(head.as_bytes()).await;
        let _ = conn.shutdown().await;
        return;
    }
    let status = faults.status.load(Ordering::SeqCst);
    if status != 0 {
        let head = format!(
            "HTTP/1.1 {status} {}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            reason_phrase(status)
        );
        let _ = conn.write_all(head.as_bytes()).await;
        let _ = conn.shutdown().await;
        return;
    }
    let body = match (method, path.strip_prefix("/charts/")) {
        // One file name, no directories: nothing outside the served directory is reachable.
        ("GET", Some(file))
            if !file.is_empty() && !file.contains(['/', '\\']) && !file.starts_with('.') =>
        {
            tokio::fs::read(root.join(file)).await.ok()
        }
        _ => None,
    };
    let head = match &body {
        Some(b) => format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            b.len()
        ),
        None => "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".into(),
    };
    let _ = conn.write_all(head.as_bytes()).await;
    if let Some(b) = body {
        let mut stall = faults.stall.subscribe();
        let (first, rest) = b.split_at(b.len() / 2);
        if *stall.borrow_and_update() && path.ends_with(".tgz") {
            faults.stalled.fetch_add(1, Ordering::SeqCst);
            let _ = conn.write_all(first).await;
            let _ = conn.flush().await;
            // Held until stalling is switched off (or the repository stops).
            let _ = stall.wait_for(|on| !*on).await;
            let _ = conn.write_all(rest).await;
        } else {
            let _ = conn.write_all(&b).await;
        }
    }
    let _ = conn.shutdown().await;
}

/// The reason phrase of the statuses a fault would use; any other status gets a generic one.
fn reason_phrase(status: u16) -> &'static str {
    match status {
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        429 => "Too Many Requests",
        404 => "Not Found",
        403 => "Forbidden",
        _ => "Error",
    }
}
