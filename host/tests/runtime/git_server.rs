//! A Git server on loopback for the tests: Git's own `git http-backend` (smart HTTP) behind a small HTTPS front
//! that asks for basic auth, so the operator's Git client meets a real Git server over TLS with credentials.
//! Repositories are made with the `git` command (test set-up only; the product uses libgit2).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use base64::Engine as _;

pub use super::git_cli::git;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

pub struct GitServer {
    /// `https://127.0.0.1:<port>/`; a repository `NAME` is `<url>NAME.git`.
    pub url: String,
    pub root: PathBuf,
    task: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Drop for GitServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl GitServer {
    /// Serves the bare repositories under a fresh root, over TLS with `tls`, to `user`:`password` only.
    pub async fn start(tls: Arc<rustls::ServerConfig>, user: &str, password: &str) -> GitServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_path_buf();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("https://{}/", listener.local_addr().expect("address"));
        let acceptor = tokio_rustls::TlsAcceptor::from(tls);
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        let served = root.clone();
        let task = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let (acceptor, token, root) = (acceptor.clone(), token.clone(), served.clone());
                tokio::spawn(async move {
                    if let Ok(tls) = acceptor.accept(conn).await {
                        let _ = serve(tls, &root, &token).await;
                    }
                });
            }
        });
        GitServer {
            url,
            root,
            task,
            _dir: dir,
        }
    }

    /// A bare repository `name` holding the files of `work` (a work tree this commits first), on branch main.
    pub fn publish(&self, name: &str, work: &Path, message: &str) -> String {
        if !work.join(".git").exists() {
            git(work, &["init"]);
        }
        git(work, &["add", "-A"]);
        git(work, &["commit", "-q", "-m", message]);
        let bare = self.root.join(format!("{name}.git"));
        if !bare.exists() {
            git(
                &self.root,
                &["init", "-q", "--bare", &format!("{name}.git")],
            );
        }
        git(
            work,
            &[
                "push",
                "-q",
                "-f",
                &bare.to_string_lossy(),
                "HEAD:refs/heads/main",
            ],
        );
        git(work, &["rev-parse", "HEAD"])
    }
}

/// One request: basic auth, then `git http-backend` as a CGI program; the connection closes after it.
async fn serve<C>(conn: C, root: &Path, token: &str) -> std::io::Result<()>
where
    C: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut reader = BufReader::new(conn);
    let mut line = String::new();
    reader.read_line(&mut line).await?;
    let mut words = line.split_whitespace();
    let (method, target) = (
        words.next().unwrap_or("").to_string(),
        words.next().unwrap_or("/").to_string(),
    );
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).await? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.trim_end().split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let authorised = header("authorization")
        .and_then(|v| {
            v.split_once(' ')
                .map(|(s, t)| (s.to_string(), t.to_string()))
        })
        .is_some_and(|(scheme, t)| scheme.eq_ignore_ascii_case("basic") && t == token);
    if !authorised {
        let mut conn = reader.into_inner();
        conn.write_all(
            b"HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Basic realm=\"git\"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        )
        .await?;
        return conn.shutdown().await;
    }
    let body = read_body(
        &mut reader,
        header("content-length"),
        header("transfer-encoding"),
    )
    .await?;
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let mut cgi = tokio::process::Command::new("git")
        .arg("http-backend")
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", &method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("CONTENT_TYPE", header("content-type").unwrap_or_default())
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("GIT_PROTOCOL", header("git-protocol").unwrap_or_default())
        .env("REMOTE_USER", "test")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    if let Some(mut stdin) = cgi.stdin.take() {
        stdin.write_all(&body).await?;
    }
    let out = cgi.wait_with_output().await?;
    let split = out
        .stdout
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4))
        .or_else(|| {
            out.stdout
                .windows(2)
                .position(|w| w == b"\n\n")
                .map(|i| (i, 2))
        });
    let (head, content) = match split {
        Some((i, n)) => (&out.stdout[..i], &out.stdout[i + n..]),
        None => (&out.stdout[..], &[][..]),
    };
    let head = String::from_utf8_lossy(head);
    let mut status = "200 OK".to_string();
    let mut response = String::new();
    for h in head.lines() {
        match h.split_once(':') {
            Some((k, v)) if k.eq_ignore_ascii_case("status") => status = v.trim().to_string(),
            Some(_) => {
                response.push_str(h);
                response.push_str("\r\n");
            }
            None => {}
        }
    }
    let mut conn = reader.into_inner();
    conn.write_all(
        format!(
            "HTTP/1.1 {status}\r\n{response}content-length: {}\r\nconnection: close\r\n\r\n",
            content.len()
        )
        .as_bytes(),
    )
    .await?;
    conn.write_all(content).await?;
    conn.shutdown().await
}

/// The request body, by `Content-Length` or chunked.
async fn read_body<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
    length: Option<String>,
    encoding: Option<String>,
) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    if encoding.is_some_and(|e| e.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).await?;
            let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                .unwrap_or(0);
            if n == 0 {
                let mut end = String::new();
                reader.read_line(&mut end).await?;
                break;
            }
            let mut chunk = vec![0u8; n];
            reader.read_exact(&mut chunk).await?;
            body.extend_from_slice(&chunk);
            let mut crlf = [0u8; 2];
            reader.read_exact(&mut crlf).await?;
        }
    } else if let Some(n) = length.and_then(|l| l.parse::<usize>().ok()) {
        body.resize(n, 0);
        reader.read_exact(&mut body).await?;
    }
    Ok(body)
}
