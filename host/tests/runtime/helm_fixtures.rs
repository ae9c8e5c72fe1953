//! What the Helm tests share: libhelm_c, a chart Helm itself created and packaged, a chart repository served on
//! loopback, a real OCI registry (Debian's `docker-registry`) on loopback, and a proxy that makes the registry
//! answer 500.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::json;

const MINUTE: Duration = Duration::from_secs(60);

pub fn lib() -> PathBuf {
    super::helm_lib::helm_c_lib()
}

/// A chart archive built by Helm itself (`helm create` + package), as base64 for the protocol.
pub fn demo_chart() -> String {
    static CHART: OnceLock<String> = OnceLock::new();
    CHART
        .get_or_init(|| {
            let helm = helm_c::Helm::load(&lib()).expect("libhelm_c");
            let dir = tempfile::tempdir().expect("tempdir");
            let path = helm.create_chart("demo", dir.path()).expect("helm create");
            let chart = helm.load_chart(std::path::Path::new(&path)).expect("load");
            drop(chart);
            let archive = package(&helm, &path, dir.path());
            base64::engine::general_purpose::STANDARD.encode(archive)
        })
        .clone()
}

/// `helm package` through the library's save call.
pub fn package(helm: &helm_c::Helm, chart_dir: &str, out: &std::path::Path) -> Vec<u8> {
    let chart = helm
        .load_chart(std::path::Path::new(chart_dir))
        .expect("load");
    let saved = chart.save(out).expect("helm package");
    std::fs::read(saved).expect("the archive")
}

/// A chart repository as Helm reads one: `index.yaml` and the demo chart's archive, served on loopback by the
/// host's own repository server (as `dev` serves one).
pub struct ChartRepo {
    pub url: String,
    _server: omni_operator::helm::repository::ChartRepository,
    dir: tempfile::TempDir,
}

impl ChartRepo {
    /// The repository's fault switches (error statuses, stalled downloads).
    pub fn faults(&self) -> &omni_operator::helm::repository::Faults {
        &self._server.faults
    }

    /// Publishes `helm create NAME` at `version` too, and indexes the repository again (a chart release).
    pub fn add(&self, name: &str, version: &str) {
        self.add_with(name, version, &[]);
    }

    /// As [`ChartRepo::add`], with more files in the chart (`crds/…`, `templates/…`).
    pub fn add_with(&self, name: &str, version: &str, files: &[(&str, &str)]) {
        let helm = helm_c::Helm::load(&lib()).expect("libhelm_c");
        created_chart(&helm, name, version, files, self.dir.path());
        index(&helm, self.dir.path(), &self.url);
    }
}

pub async fn chart_repo() -> ChartRepo {
    chart_repo_with(&[]).await
}

/// The repository with the demo chart and, besides, `helm create NAME` charts at the given versions (the seed's
/// example names a real chart, `cilium` 1.18.2; this stands in for it).
pub async fn chart_repo_with(extra: &[(&str, &str)]) -> ChartRepo {
    chart_repo_serving(extra, omni_operator::helm::repository::Access::default()).await
}

/// As [`chart_repo_with`], served under `access` (basic auth, TLS).
pub async fn chart_repo_serving(
    extra: &[(&str, &str)],
    access: omni_operator::helm::repository::Access,
) -> ChartRepo {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = omni_operator::helm::repository::ChartRepository::serve(dir.path(), access)
        .await
        .expect("bind");
    let archive = base64::engine::general_purpose::STANDARD
        .decode(demo_chart())
        .expect("archive");
    std::fs::write(dir.path().join("demo-0.1.0.tgz"), archive).expect("write");
    let helm = helm_c::Helm::load(&lib()).expect("libhelm_c");
    for (name, version) in extra {
        created_chart(&helm, name, version, &[], dir.path());
    }
    index(&helm, dir.path(), &server.url);
    ChartRepo {
        url: server.url.clone(),
        _server: server,
        dir,
    }
}

/// `helm create NAME` at `version`, packaged into `out`. Its Helm test Pod behaves as the value `testBehavior`
/// says (kube-sim's behaviour annotation: `ready`, the default, succeeds; `fail` fails).
fn created_chart(
    helm: &helm_c::Helm,
    name: &str,
    version: &str,
    files: &[(&str, &str)],
    out: &std::path::Path,
) {
    let work = tempfile::tempdir().expect("tempdir");
    let path = helm.create_chart(name, work.path()).expect("helm create");
    for (file, text) in files {
        let at = std::path::Path::new(&path).join(file);
        std::fs::create_dir_all(at.parent().expect("a directory")).expect("mkdir");
        std::fs::write(at, text).expect("a chart file");
    }
    let chart_yaml = std::path::Path::new(&path).join("Chart.yaml");
    let text = std::fs::read_to_string(&chart_yaml).expect("Chart.yaml");
    let text: String = text
        .lines()
        .map(|l| {
            if l.starts_with("version:") {
                format!("version: {version}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&chart_yaml, text).expect("Chart.yaml");
    let test_pod = std::path::Path::new(&path).join("templates/tests/test-connection.yaml");
    let hook = std::fs::read_to_string(&test_pod).expect("helm create's test hook");
    let behaviour = format!(
        "    \"helm.sh/hook\": test\n    {}: {{{{ .Values.testBehavior | default \"ready\" | quote }}}}",
        kube_sim::workloads::BEHAVIOR_ANNOTATION
    );
    let hook = hook.replace("    \"helm.sh/hook\": test", &behaviour);
    assert!(
        hook.contains(kube_sim::workloads::BEHAVIOR_ANNOTATION),
        "{hook}"
    );
    std::fs::write(&test_pod, hook).expect("the test hook");
    let archive = package(helm, &path, work.path());
    std::fs::write(out.join(format!("{name}-{version}.tgz")), archive).expect("write");
}

/// `helm repo index`: `index.yaml` for the archives in `dir`, served under `base_url`.
fn index(helm: &helm_c::Helm, dir: &std::path::Path, base_url: &str) {
    let index = helm
        .repo_index(dir, &json!({"base_url": base_url}))
        .expect("helm repo index");
    std::fs::write(dir.join("index.yaml"), index).expect("write");
}

/// A real OCI registry on loopback (Debian's `docker-registry`, the CNCF distribution registry), stopped on drop.
pub struct Registry {
    pub host: String,
    child: std::process::Child,
    _dir: tempfile::TempDir,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the registry on a free port and waits until it answers `/v2/`.
pub async fn registry() -> Registry {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let host = format!("127.0.0.1:{port}");
    let child = spawn_registry(dir.path(), &host, None);
    let registry = Registry {
        host,
        child,
        _dir: dir,
    };
    registry.listening().await;
    registry
}

impl Registry {
    /// Restarts the registry (same port, same storage) requiring basic auth (an htpasswd file, bcrypt, the only
    /// format the registry takes) from now on.
    pub async fn require_auth(&mut self, user: &str, password: &str) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let hash = bcrypt::hash(password, 4).expect("bcrypt");
        let htpasswd = self._dir.path().join("htpasswd");
        std::fs::write(&htpasswd, format!("{user}:{hash}\n")).expect("htpasswd");
        self.child = spawn_registry(self._dir.path(), &self.host, Some(&htpasswd));
        self.listening().await;
    }

    async fn listening(&self) {
        let deadline = Instant::now() + MINUTE;
        while tokio::net::TcpStream::connect(&self.host).await.is_err() {
            assert!(
                Instant::now() < deadline,
                "the registry never listened on {}",
                self.host
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn spawn_registry(
    dir: &std::path::Path,
    host: &str,
    htpasswd: Option<&std::path::Path>,
) -> std::process::Child {
    let binary = "docker-registry";
    let auth = htpasswd.map_or(String::new(), |path| {
        format!(
            "auth:\n  htpasswd:\n    realm: charts\n    path: {}\n",
            path.display()
        )
    });
    let config = dir.join("config.yml");
    std::fs::write(
        &config,
        format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {host}\n{auth}",
            dir.join("data").display()
        ),
    )
    .expect("config");
    std::process::Command::new(binary)
        .arg("serve")
        .arg(&config)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("{binary} could not start ({e}): the OCI tests need Debian's docker-registry package, which .ci/run installs")
        })
}

/// Pushes the demo chart with Helm to `registry` (plain HTTP) and returns the `oci://…/charts` remote it lies
/// under (the chart is `<remote>/demo`, version 0.1.0).
pub fn push_demo_chart(registry: &Registry) -> String {
    let remote = format!("oci://{}/charts", registry.host);
    let dir = tempfile::tempdir().expect("tempdir");
    let archive = dir.path().join("demo-0.1.0.tgz");
    std::fs::write(
        &archive,
        base64::engine::general_purpose::STANDARD
            .decode(demo_chart())
            .expect("archive"),
    )
    .expect("write");
    helm_c::Helm::load(&lib())
        .expect("libhelm_c")
        .push(&archive, &remote, &json!({"plain_http": true}))
        .expect("helm push");
    remote
}

/// A TCP proxy in front of an HTTP server (the OCI registry) that can make it answer `500 Internal Server Error`:
/// while failing, each new connection's first request gets the 500 and the connection closes; otherwise the bytes
/// pass through both ways. Connections passed through before the switch keep going, so tests switch before the
/// client connects.
pub struct FaultyProxy {
    /// `127.0.0.1:<port>`, to use in place of the upstream's host.
    pub host: String,
    failing: Arc<AtomicBool>,
    failed: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FaultyProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FaultyProxy {
    pub async fn start(upstream: &str) -> FaultyProxy {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let host = listener.local_addr().expect("address").to_string();
        let (failing, failed) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicU64::new(0)),
        );
        let (on, count, upstream) = (failing.clone(), failed.clone(), upstream.to_string());
        let task = tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let (on, count, upstream) = (on.clone(), count.clone(), upstream.clone());
                tokio::spawn(async move {
                    if on.load(Ordering::SeqCst) {
                        // Read the request head, then refuse it.
                        let mut head = Vec::new();
                        let mut buf = [0u8; 4096];
                        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                            match conn.read(&mut buf).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => head.extend_from_slice(&buf[..n]),
                            }
                        }
                        count.fetch_add(1, Ordering::SeqCst);
                        let _ = conn
                            .write_all(b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\ncontent-length: 21\r\nconnection: close\r\n\r\nregistry fault (test)")
                            .await;
                        let _ = conn.shutdown().await;
                    } else if let Ok(mut up) = tokio::net::TcpStream::connect(&upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut conn, &mut up).await;
                    }
                });
            }
        });
        FaultyProxy {
            host,
            failing,
            failed,
            task,
        }
    }

    pub fn fail(&self, on: bool) {
        self.failing.store(on, Ordering::SeqCst);
    }

    /// Requests answered with the 500 so far.
    pub fn failed(&self) -> u64 {
        self.failed.load(Ordering::SeqCst)
    }
}
