//! A chart repository on loopback: `index.yaml` and the chart archives of one directory, served over plain HTTP
//! (GET only, one request per connection), for `dev` and the tests. Helm made the directory (`Op::Publish`).

use std::path::{Path, PathBuf};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Requests larger than this are not a chart download; the connection is dropped.
const MAX_REQUEST: usize = 16 << 10;

/// A served directory; serving stops when this is dropped.
pub struct ChartRepository {
    /// The repository URL, `http://127.0.0.1:<port>/charts`.
    pub url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ChartRepository {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ChartRepository {
    /// Binds a free loopback port; files are served once they exist in `dir`.
    pub async fn bind(dir: &Path) -> std::io::Result<ChartRepository> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/charts", listener.local_addr()?);
        let root = dir.to_path_buf();
        let task = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                tokio::spawn(answer(conn, root.clone()));
            }
        });
        Ok(ChartRepository { url, task })
    }
}

async fn answer(mut conn: tokio::net::TcpStream, root: PathBuf) {
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
        let _ = conn.write_all(&b).await;
    }
}
