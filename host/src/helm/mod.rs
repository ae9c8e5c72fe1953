//! Helm, out of the host process: a worker (`omni-operator helm-worker`) loads libhelm_c and runs Helm's actions;
//! the host talks to it over stdin/stdout (`protocol`), restarts it when it dies, runs at most a few actions at
//! once and never two on the same release. A Go fatal error, a deadlock or Helm's memory stay in the worker, and
//! every other kind keeps reconciling.
//!
//! Helm's server-side-apply field manager is the worker's program name: `omni-operator`.

pub mod crds;
pub mod drift;
pub mod git;
pub mod protocol;
pub mod releases;
pub mod repository;
pub mod storage;
pub mod worker;

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{Semaphore, oneshot};

use protocol::{Op, Outcome, Reply, Request};

/// The first `chars` hex digits of the SHA-256 of `bytes`: the digests this module keys and labels things with
/// (release digests, cache directories, credential fingerprints).
pub(crate) fn sha256_prefix(bytes: &[u8], chars: usize) -> String {
    use sha2::Digest as _;
    let hex: String = sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    hex[..chars.min(hex.len())].to_string()
}

/// Why a Helm action did not answer.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The library could not be loaded (missing, or another version): nothing Helm can run.
    #[error("Helm is unavailable: {0}")]
    Unavailable(String),
    /// Helm ran and failed, with its error class (`Cancelled`, `NotFound`, `Kube`, …) and message.
    #[error("{message}")]
    Helm { code: String, message: String },
    /// The worker died during the action (it is restarted for the next one).
    #[error("the Helm worker exited during the action")]
    WorkerLost,
    /// The action outlived its deadline and was cancelled.
    #[error("the Helm action did not finish within {0:?}")]
    Timeout(Duration),
    #[error("starting the Helm worker: {0}")]
    Spawn(String),
}

type Answer<'a> = Pin<Box<dyn Future<Output = Result<Value, EngineError>> + Send + 'a>>;

/// Runs Helm actions; [`WorkerEngine`] is the real one, tests may bring a fake.
pub trait HelmEngine: Send + Sync + std::fmt::Debug {
    /// Runs `op`; `release` (`<namespace>/<name>` in the workload cluster) serialises actions on one release.
    fn run(&self, op: Op, release: Option<String>, deadline: Duration) -> Answer<'_>;

    /// Stops taking actions and cancels the running ones through their Helm contexts, waiting up to `grace` for
    /// them to end, so Helm records them as failed instead of leaving releases `pending-*` for the next start.
    fn shutdown(&self, grace: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        let _ = grace;
        Box::pin(async {})
    }
}

/// How the worker is started and how much it may do at once.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// The program to run as `<program> helm-worker --lib <lib>`: this binary.
    pub program: PathBuf,
    /// libhelm_c (`HELM_C_LIB`).
    pub lib: PathBuf,
    /// Actions running at once.
    pub concurrency: usize,
}

struct Worker {
    stdin: tokio::process::ChildStdin,
    pending: Arc<Mutex<HashMap<u64, oneshot::Sender<Outcome>>>>,
    child: tokio::process::Child,
}

/// The Helm engine backed by a supervised worker process.
pub struct WorkerEngine {
    options: WorkerOptions,
    worker: tokio::sync::Mutex<Option<Worker>>,
    next_id: AtomicU64,
    releases: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    slots: Semaphore,
    starts: AtomicU64,
    /// Set by [`HelmEngine::shutdown`]: no new actions.
    closing: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for WorkerEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerEngine")
            .field("options", &self.options)
            .field("starts", &self.starts())
            .finish_non_exhaustive()
    }
}

impl WorkerEngine {
    pub fn new(options: WorkerOptions) -> WorkerEngine {
        let slots = Semaphore::new(options.concurrency.max(1));
        WorkerEngine {
            options,
            worker: tokio::sync::Mutex::new(None),
            next_id: AtomicU64::new(1),
            releases: Mutex::default(),
            slots,
            starts: AtomicU64::new(0),
            closing: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Cancels every action the worker is running and waits (up to `grace`) until each has answered, then closes
    /// the worker's stdin so it exits.
    async fn stop(&self, grace: Duration) {
        self.closing.store(true, Ordering::SeqCst);
        let mut guard = self.worker.lock().await;
        let Some(worker) = guard.as_mut() else {
            return;
        };
        let running: Vec<u64> = worker
            .pending
            .lock()
            .map(|p| p.keys().copied().collect())
            .unwrap_or_default();
        for id in &running {
            let cancel = Request {
                id: self.next_id.fetch_add(1, Ordering::Relaxed),
                op: Op::Cancel { id: *id },
            };
            let Ok(mut line) = serde_json::to_vec(&cancel) else {
                continue;
            };
            line.push(b'\n');
            if worker.stdin.write_all(&line).await.is_err() {
                break;
            }
        }
        let _ = worker.stdin.flush().await;
        let pending = worker.pending.clone();
        let deadline = tokio::time::Instant::now() + grace;
        while pending.lock().map(|p| !p.is_empty()).unwrap_or(false)
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if !running.is_empty() {
            tracing::info!(
                cancelled = running.len(),
                "Helm actions cancelled for shutdown"
            );
        }
        // Closing stdin ends the worker's request loop; dropping the child kills whatever is left.
        if let Some(mut worker) = guard.take() {
            drop(worker.stdin);
            let _ = tokio::time::timeout(Duration::from_secs(2), worker.child.wait()).await;
        }
    }

    /// How many times a worker was started (1 after the first action; more after restarts).
    pub fn starts(&self) -> u64 {
        self.starts.load(Ordering::Relaxed)
    }

    /// The running worker's process id, if one runs (tests kill it to check recovery).
    pub async fn worker_pid(&self) -> Option<u32> {
        self.worker.lock().await.as_ref().and_then(|w| w.child.id())
    }

    fn spawn(&self) -> Result<Worker, EngineError> {
        let mut child = tokio::process::Command::new(&self.options.program)
            .arg("helm-worker")
            .arg("--lib")
            .arg(&self.options.lib)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| EngineError::Spawn(format!("{}: {e}", self.options.program.display())))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(EngineError::Spawn("the worker's pipes are missing".into()));
        };
        self.starts.fetch_add(1, Ordering::Relaxed);
        let pending: Arc<Mutex<HashMap<u64, oneshot::Sender<Outcome>>>> = Arc::default();
        let replies = pending.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(reply) = serde_json::from_str::<Reply>(&line) else {
                    tracing::warn!("the Helm worker wrote a line that is not a reply");
                    continue;
                };
                let waiter = replies.lock().ok().and_then(|mut p| p.remove(&reply.id));
                if let Some(w) = waiter {
                    let _ = w.send(reply.outcome);
                }
            }
            // The worker is gone: every action still waiting learns it (their senders drop here).
            if let Ok(mut p) = replies.lock() {
                p.clear();
            }
        });
        tokio::spawn(async move {
            // Helm's own log lines (and the Go runtime's) become the host's events, at debug level: Helm's
            // value-coalescing warnings can quote values, and values may carry data from Secrets.
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(target: "helm", "{line}");
            }
        });
        Ok(Worker {
            stdin,
            pending,
            child,
        })
    }

    /// Sends `op` to a live worker (starting one when none runs or the last one died); returns the reply's
    /// receiver.
    async fn send(&self, id: u64, op: Op) -> Result<oneshot::Receiver<Outcome>, EngineError> {
        let mut guard = self.worker.lock().await;
        let dead = match guard.as_mut() {
            None => true,
            Some(w) => !matches!(w.child.try_wait(), Ok(None)),
        };
        if dead {
            *guard = Some(self.spawn()?);
        }
        let Some(worker) = guard.as_mut() else {
            return Err(EngineError::WorkerLost);
        };
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = worker.pending.lock() {
            p.insert(id, tx);
        }
        let mut line = serde_json::to_vec(&Request { id, op })
            .map_err(|e| EngineError::Spawn(format!("encoding a request: {e}")))?;
        line.push(b'\n');
        if worker.stdin.write_all(&line).await.is_err() || worker.stdin.flush().await.is_err() {
            *guard = None;
            return Err(EngineError::WorkerLost);
        }
        Ok(rx)
    }

    fn release_lock(&self, release: &str) -> Arc<tokio::sync::Mutex<()>> {
        match self.releases.lock() {
            Ok(mut m) => m.entry(release.to_string()).or_default().clone(),
            Err(_) => Arc::default(),
        }
    }

    async fn call(
        &self,
        op: Op,
        release: Option<String>,
        deadline: Duration,
    ) -> Result<Value, EngineError> {
        // The release's turn first, then a slot: actions queued behind one release must not hold slots that
        // actions on other releases could use.
        let lock = release.as_deref().map(|r| self.release_lock(r));
        let _serialised = match &lock {
            Some(l) => Some(l.lock().await),
            None => None,
        };
        let _slot = self
            .slots
            .acquire()
            .await
            .map_err(|_| EngineError::WorkerLost)?;
        if self.closing.load(Ordering::SeqCst) {
            return Err(EngineError::Unavailable(
                "the operator is shutting down".into(),
            ));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut rx = self.send(id, op).await?;
        let outcome = match tokio::time::timeout(deadline, &mut rx).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => return Err(EngineError::WorkerLost),
            Err(_) => {
                // Cancel through Helm's context, then give it a moment to leave the release consistent.
                let _ = self
                    .send(
                        self.next_id.fetch_add(1, Ordering::Relaxed),
                        Op::Cancel { id },
                    )
                    .await;
                let _ = tokio::time::timeout(Duration::from_secs(10), rx).await;
                return Err(EngineError::Timeout(deadline));
            }
        };
        match outcome {
            Outcome::Ok(v) => Ok(v),
            Outcome::Err { code, message } if code == "Unavailable" => {
                Err(EngineError::Unavailable(message))
            }
            Outcome::Err { code, message } => Err(EngineError::Helm { code, message }),
        }
    }
}

/// The Helm engine as the operator starts it, and the line that says what it found.
pub struct HelmSetup {
    pub engine: Option<Arc<dyn HelmEngine>>,
    /// Whether Helm answered (versions checked); false when unconfigured or unavailable.
    pub ready: bool,
    pub summary: String,
}

impl HelmSetup {
    /// The releases this engine converges: none can proceed when Helm did not answer, and they say why.
    pub fn releases(&self) -> releases::Releases {
        let engine = self.engine.clone().filter(|_| self.ready);
        releases::Releases::new(engine, &self.summary)
    }
}

/// Starts the engine when a library is configured and checks its versions by asking the worker. Without a
/// library, or with one that does not load, the operator still serves every other kind; OmniHelmReleases report
/// why they cannot proceed.
pub async fn start(options: Option<WorkerOptions>) -> HelmSetup {
    let Some(options) = options else {
        return HelmSetup {
            engine: None,
            ready: false,
            summary: "Helm: no libhelm_c configured (HELM_C_LIB or --helm-c-lib; tools/fetch-helm-c fetches it), \
                      so OmniHelmReleases cannot proceed"
                .into(),
        };
    };
    let engine = Arc::new(WorkerEngine::new(options));
    let (ready, summary) = match engine
        .run(Op::Versions, None, Duration::from_secs(60))
        .await
    {
        Ok(v) => (
            true,
            format!(
                "Helm: libhelm_c {} (Helm {}), run in a worker process",
                v["helm_c"].as_str().unwrap_or("?"),
                v["helm"].as_str().unwrap_or("?")
            ),
        ),
        Err(e) => (
            false,
            format!("{e}; OmniHelmReleases cannot proceed, every other kind is served"),
        ),
    };
    HelmSetup {
        engine: Some(engine),
        ready,
        summary,
    }
}

impl HelmEngine for WorkerEngine {
    fn run(&self, op: Op, release: Option<String>, deadline: Duration) -> Answer<'_> {
        Box::pin(self.call(op, release, deadline))
    }

    fn shutdown(&self, grace: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(self.stop(grace))
    }
}
