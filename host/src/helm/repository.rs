//! A chart repository on loopback: `index.yaml` and the chart archives of one directory, served over HTTP or
//! HTTPS (GET only, one request per connection), optionally behind basic auth, for `dev` and the tests. Helm made
//! the directory (`Op::Publish`). It can be told to misbehave while it serves ([`Faults`]): answer every request
//! with an error status, or stall chart downloads halfway. Besides the methods, the switches answer over HTTP on
//! the repository's own address (behind its basic auth when it has one), for `dev`:
//! `POST /__faults/fail?status=500` (`status=0` ends it), `POST /__faults/stall?on=true` (`on=false` lets held
//! downloads finish), `GET /__faults` (the switches as JSON).

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

    /// The switches as JSON.
    fn describe(&self) -> String {
        serde_json::json!({
            "status": self.status.load(Ordering::SeqCst),
            "stallDownloads": *self.stall.borrow(),
            "stalled": self.stalled(),
        })
        .to_string()
    }

    /// An admin request (`path` after `/__faults`): the switches afterwards, or what is wrong with the request.
    fn admin(&self, method: &str, path: &str) -> Result<String, String> {
        let (switch, query) = path.split_once('?').unwrap_or((path, ""));
        let param = |name: &str| {
            query
                .split('&')
                .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
                .ok_or_else(|| format!("{switch} needs the query parameter {name}"))
        };
        match (method, switch) {
            ("GET", "" | "/") => {}
            ("POST", "/fail") => {
                let status: u16 = param("status")?.parse().map_err(|_| {
                    "status must be an HTTP status code, or 0 to end it".to_string()
                })?;
                if status != 0 && !(400..600).contains(&status) {
                    return Err(format!("status {status} is not an error status (400-599)"));
                }
                self.fail_with((status != 0).then_some(status));
            }
            ("POST", "/stall") => match param("on")? {
                "true" => self.stall_downloads(true),
                "false" => self.stall_downloads(false),
                other => return Err(format!("on must be true or false, not {other:?}")),
            },
            _ => return Err(format!("no such fault switch: {method} /__faults{switch}")),
        }
        Ok(self.describe())
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
    if let Some(admin) = path.strip_prefix("/__faults") {
        let (status, body) = match faults.admin(method, admin) {
            Ok(json) => ("200 OK", json),
            Err(why) => ("400 Bad Request", why),
        };
        let head = format!(
            "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        let _ = conn.write_all(head.as_bytes()).await;
        let _ = conn.write_all(body.as_bytes()).await;
        let _ = conn.shutdown().await;
        return;
    }
    let status = faults.status.load(Ordering::SeqCst);
    if status != 0 {
        let head = format!(
            "HTTP/1.1 {status} {}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            http::StatusCode::from_u16(status)
                .ok()
                .and_then(|s| s.canonical_reason())
                .unwrap_or("Error")
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// One request on a new connection; the answer's status line and body, or what was read when `within` ran out.
    async fn request(url: &str, method: &str, path: &str, within: Duration) -> (String, Vec<u8>) {
        let address = url
            .trim_start_matches("http://")
            .trim_end_matches("/charts");
        let mut conn = tokio::net::TcpStream::connect(address)
            .await
            .expect("connects");
        conn.write_all(format!("{method} {path} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
            .await
            .expect("writes");
        let mut read = Vec::new();
        let _ = tokio::time::timeout(within, conn.read_to_end(&mut read)).await;
        let text = String::from_utf8_lossy(&read).to_string();
        let (head, _) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let body_at = head.len() + 4;
        (
            head.lines().next().unwrap_or_default().to_string(),
            read.get(body_at..).unwrap_or_default().to_vec(),
        )
    }

    #[tokio::test]
    async fn faults_switched_over_http_fail_requests_and_hold_downloads_halfway() {
        let dir = tempfile::tempdir().expect("tempdir");
        let archive: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
        std::fs::write(dir.path().join("demo-0.1.0.tgz"), &archive).expect("write");
        let repo = ChartRepository::bind(dir.path()).await.expect("binds");
        let long = Duration::from_secs(30);
        let (status, body) = request(&repo.url, "GET", "/charts/demo-0.1.0.tgz", long).await;
        assert_eq!((status.as_str(), body.len()), ("HTTP/1.1 200 OK", 4096));

        let (status, body) = request(&repo.url, "POST", "/__faults/fail?status=503", long).await;
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert!(String::from_utf8_lossy(&body).contains("\"status\":503"));
        let (status, _) = request(&repo.url, "GET", "/charts/index.yaml", long).await;
        assert_eq!(status, "HTTP/1.1 503 Service Unavailable");
        let (status, body) = request(&repo.url, "POST", "/__faults/fail?status=200", long).await;
        assert_eq!(status, "HTTP/1.1 400 Bad Request");
        assert_eq!(body, b"status 200 is not an error status (400-599)");
        request(&repo.url, "POST", "/__faults/fail?status=0", long).await;
        let (status, _) = request(&repo.url, "GET", "/charts/demo-0.1.0.tgz", long).await;
        assert_eq!(status, "HTTP/1.1 200 OK");

        // A stalled download sends half the archive, then holds the rest until the stall ends.
        request(&repo.url, "POST", "/__faults/stall?on=true", long).await;
        let address = repo
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/charts");
        let mut conn = tokio::net::TcpStream::connect(address)
            .await
            .expect("connects");
        conn.write_all(b"GET /charts/demo-0.1.0.tgz HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .expect("writes");
        let mut read = Vec::new();
        let mut buf = [0u8; 8192];
        let deadline = tokio::time::Instant::now() + long;
        let body = loop {
            let text = String::from_utf8_lossy(&read).to_string();
            if let Some((head, _)) = text.split_once("\r\n\r\n")
                && read.len() >= head.len() + 4 + 2048
            {
                break read[head.len() + 4..].to_vec();
            }
            let n = tokio::time::timeout_at(deadline, conn.read(&mut buf))
                .await
                .expect("half the archive arrives")
                .expect("reads");
            assert!(n > 0, "the connection closed early");
            read.extend_from_slice(&buf[..n]);
        };
        assert_eq!(body, &archive[..2048]);
        assert_eq!(repo.faults.stalled(), 1);
        // Nothing more comes while the stall lasts (a slow machine can only make this pass, never fail).
        assert!(
            tokio::time::timeout(Duration::from_millis(200), conn.read(&mut buf))
                .await
                .is_err(),
            "the rest of the archive was sent during the stall"
        );
        let url = repo.url.clone();
        let held = tokio::spawn(async move {
            request(
                &url,
                "GET",
                "/charts/demo-0.1.0.tgz",
                Duration::from_secs(30),
            )
            .await
        });
        let deadline = tokio::time::Instant::now() + long;
        while repo.faults.stalled() < 2 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the second download never stalled"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let (status, _) = request(&repo.url, "POST", "/__faults/stall?on=false", long).await;
        assert_eq!(status, "HTTP/1.1 200 OK");
        let (_, body) = held.await.expect("the held download");
        assert_eq!(body, archive, "the held download finished once let go");
        let (status, body) = request(&repo.url, "POST", "/__faults/shake", long).await;
        assert_eq!(status, "HTTP/1.1 400 Bad Request");
        assert_eq!(body, b"no such fault switch: POST /__faults/shake");
    }
}
