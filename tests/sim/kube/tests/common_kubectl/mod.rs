//! Running the real kubectl binary against a `KubeSim`.
//!
//! Every invocation gets `--kubeconfig <file>` and a `--cache-dir` private to one test (kubectl caches
//! discovery and OpenAPI documents by server address, and ports are reused between tests). kubectl runs as a
//! child process through `tokio::process`, so the server keeps serving on the test's runtime meanwhile.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use kube_sim::{KubeSim, User};
use tokio::io::AsyncWriteExt;

/// How long one kubectl invocation may take before the test fails (its own `--timeout`s are shorter).
const INVOCATION_LIMIT: Duration = Duration::from_secs(30);

/// The kubectl binary: `$KUBECTL` when set, else `kubectl` on `PATH`. Panics (never skips) when missing.
pub fn kubectl_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("KUBECTL").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "KUBECTL={} does not name a file: these tests need the real kubectl binary",
            p.display()
        );
        return p;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join("kubectl");
        if candidate.is_file() {
            return candidate;
        }
    }
    panic!(
        "kubectl was not found on PATH (nor set with KUBECTL=/path/to/kubectl): the kubectl integration tests \
         need the real kubectl binary (v1.32 or close); install it, e.g. `apt-get install kubectl`"
    );
}

/// Where the machine image keeps the versioned kubectl binaries besides `PATH`.
const KUBECTL_VERSIONS_DIR: &str = "/usr/lib/google-cloud-sdk/bin";

/// `kubectl.1.<minor>` from `PATH` or beside the dispatcher. Panics (never skips) when the image lacks it.
pub fn kubectl_version(minor: u32) -> PathBuf {
    let name = format!("kubectl.1.{minor}");
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from(KUBECTL_VERSIONS_DIR)])
        .map(|dir| dir.join(&name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("{name} is missing (not on PATH, not in {KUBECTL_VERSIONS_DIR}): the image is expected to carry kubectl 1.27 to 1.33")
        })
}

/// What one kubectl run printed and how it exited.
#[derive(Debug, Clone)]
pub struct Out {
    pub args: Vec<String>,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    pub fn success(&self) -> bool {
        self.code == 0
    }

    /// Everything kubectl printed, for assertion messages.
    pub fn describe(&self) -> String {
        format!(
            "kubectl {}\n  exit code: {}\n  --- stdout ---\n{}\n  --- stderr ---\n{}",
            self.args.join(" "),
            self.code,
            self.stdout.trim_end(),
            self.stderr.trim_end()
        )
    }

    /// Asserts exit code 0 and returns self.
    #[track_caller]
    pub fn ok(&self) -> &Self {
        assert_eq!(
            self.code,
            0,
            "kubectl was expected to succeed:\n{}",
            self.describe()
        );
        self
    }

    /// Asserts a non-zero exit code and returns self.
    #[track_caller]
    pub fn failed(&self) -> &Self {
        assert_ne!(
            self.code,
            0,
            "kubectl was expected to fail:\n{}",
            self.describe()
        );
        self
    }

    #[track_caller]
    pub fn code_is(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            code,
            "unexpected kubectl exit code:\n{}",
            self.describe()
        );
        self
    }

    #[track_caller]
    pub fn stdout_has(&self, needle: &str) -> &Self {
        assert!(
            self.stdout.contains(needle),
            "kubectl stdout lacks {needle:?}:\n{}",
            self.describe()
        );
        self
    }

    #[track_caller]
    pub fn stderr_has(&self, needle: &str) -> &Self {
        assert!(
            self.stderr.contains(needle),
            "kubectl stderr lacks {needle:?}:\n{}",
            self.describe()
        );
        self
    }

    #[track_caller]
    pub fn stdout_lacks(&self, needle: &str) -> &Self {
        assert!(
            !self.stdout.contains(needle),
            "kubectl stdout unexpectedly has {needle:?}:\n{}",
            self.describe()
        );
        self
    }

    #[track_caller]
    pub fn stderr_lacks(&self, needle: &str) -> &Self {
        assert!(
            !self.stderr.contains(needle),
            "kubectl stderr unexpectedly has {needle:?}:\n{}",
            self.describe()
        );
        self
    }

    /// The non-empty stdout lines, trimmed at the end.
    pub fn lines(&self) -> Vec<String> {
        self.stdout
            .lines()
            .map(|l| l.trim_end().to_string())
            .filter(|l| !l.is_empty())
            .collect()
    }

    /// Sorted stdout lines (for `-o name` lists whose order is not the point).
    pub fn sorted_lines(&self) -> Vec<String> {
        let mut l = self.lines();
        l.sort();
        l
    }

    /// stdout parsed as JSON (`-o json`, `get --raw`).
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("kubectl stdout is not JSON ({e}):\n{}", self.describe()))
    }

    /// The table columns of the first stdout line (the header of `kubectl get`).
    pub fn header(&self) -> Vec<String> {
        self.stdout
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .map(String::from)
            .collect()
    }
}

/// kubectl configured for one user of one server, with its own kubeconfig and cache directory.
pub struct Kubectl {
    bin: PathBuf,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    cache: PathBuf,
}

impl Kubectl {
    /// kubectl acting as `user` (its kubeconfig is written by `KubeSim::write_kubeconfig`).
    pub fn new(sim: &KubeSim, user: &User) -> Kubectl {
        Self::with_binary(sim, user, kubectl_binary())
    }

    /// A given kubectl binary (one version of several) acting as `user`.
    pub fn with_binary(sim: &KubeSim, user: &User, bin: PathBuf) -> Kubectl {
        let dir = tempfile::tempdir().expect("creating a temporary directory for kubectl");
        let kubeconfig = dir.path().join("kubeconfig");
        sim.write_kubeconfig(&kubeconfig, user)
            .expect("writing the kubeconfig");
        let cache = dir.path().join("cache");
        std::fs::create_dir_all(&cache).expect("creating the kubectl cache directory");
        Kubectl {
            bin,
            dir,
            kubeconfig,
            cache,
        }
    }

    /// kubectl acting as the cluster administrator.
    pub fn admin(sim: &KubeSim) -> Kubectl {
        Self::new(sim, &sim.admin())
    }

    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// A file in this kubectl's private directory (for `-f`), so that kubectl reports it as the source.
    pub fn file(&self, name: &str, content: &str) -> String {
        let p = self.dir.path().join(name);
        std::fs::write(&p, content).expect("writing a manifest");
        p.to_string_lossy().into_owned()
    }

    pub async fn run(&self, args: &[&str]) -> Out {
        self.run_with(args, None, &[]).await
    }

    /// `kubectl <args> -f -` with `yaml` on standard input.
    pub async fn stdin(&self, args: &[&str], yaml: &str) -> Out {
        self.run_with(args, Some(yaml), &[]).await
    }

    /// `kubectl <args>` with extra environment variables (`KUBE_EDITOR` for a non-interactive `edit`).
    pub async fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Out {
        self.run_with(args, None, env).await
    }

    async fn run_with(&self, args: &[&str], input: Option<&str>, env: &[(&str, &str)]) -> Out {
        let mut full: Vec<String> = vec![
            "--kubeconfig".into(),
            self.kubeconfig.to_string_lossy().into_owned(),
            "--cache-dir".into(),
            self.cache.to_string_lossy().into_owned(),
        ];
        full.extend(args.iter().map(|a| a.to_string()));
        let mut cmd = tokio::process::Command::new(&self.bin);
        cmd.args(&full)
            // Nothing from the machine's own kubectl setup may leak in.
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", self.dir.path())
            .env_remove("KUBECTL_EXTERNAL_DIFF")
            .env("KUBECTL_INTERACTIVE_DELETE", "false")
            .envs(env.iter().copied())
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().unwrap_or_else(|e| {
            panic!(
                "could not run kubectl at {}: {e} (the real kubectl binary is required)",
                self.bin.display()
            )
        });
        if let Some(text) = input {
            let mut stdin = child.stdin.take().expect("kubectl stdin");
            stdin
                .write_all(text.as_bytes())
                .await
                .expect("writing kubectl stdin");
            drop(stdin);
        }
        let output = match tokio::time::timeout(INVOCATION_LIMIT, child.wait_with_output()).await {
            Ok(r) => r.expect("waiting for kubectl"),
            Err(_) => panic!(
                "kubectl {} did not finish within {INVOCATION_LIMIT:?}",
                full[4..].join(" ")
            ),
        };
        Out {
            args: full[4..].to_vec(),
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}
