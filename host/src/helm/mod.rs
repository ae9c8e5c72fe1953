//! Helm, out of the host process: a worker (`omni-operator helm-worker`) loads libhelm_c and runs Helm's actions;
//! the host talks to it over stdin/stdout (`protocol`), restarts it when it dies, runs at most a few actions at
//! once and never two on the same release. A Go fatal error, a deadlock or Helm's memory stay in the worker, and
//! every other kind keeps reconciling.
//!
//! Helm's server-side-apply field manager is the worker's program name: `omni-operator`.

pub mod chart_digest;
pub mod crds;
pub mod drift;
pub mod git;
pub mod health;
pub mod inventory;
pub mod manifest;
pub mod post_render;
pub mod protocol;
pub mod releases;
pub mod repository;
mod scratch;
pub mod selector;
pub mod storage;
pub mod values_files;
pub mod verify;
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

/// The name of the Helm post-renderer plugin the worker's Helm runs (`omni-operator helm-post-render SPEC`),
/// installed in a plugins directory the worker is started with (`HELM_PLUGINS`).
pub const POST_RENDER_PLUGIN: &str = "omni-post-render";
/// The install or upgrade option carrying the post-render spec from the host to the worker (not Helm's).
pub const POST_RENDER_OPTION: &str = "omni_post_render";

/// Merges `over` into `base` as Helm merges values files: objects key by key, recursively; anything else in
/// `over` replaces what `base` had.
pub fn merge_values(
    base: &mut serde_json::Map<String, Value>,
    over: serde_json::Map<String, Value>,
) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(Value::Object(b)), Value::Object(o)) => merge_values(b, o),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
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
    /// The worker grew past its memory limit and was stopped during the action (it is restarted for the next).
    #[error(
        "the Helm worker was stopped during the action: it used {} MiB, above its limit of {} MiB",
        .used >> 20,
        .limit >> 20
    )]
    OverMemory { used: u64, limit: u64 },
    /// The action outlived its deadline and was cancelled.
    #[error("the Helm action did not finish within {0:?}")]
    Timeout(Duration),
    /// [`HelmEngine::cancel`] stopped the action before the worker ran it.
    #[error("the Helm action was cancelled before it ran")]
    Cancelled,
    #[error("starting the Helm worker: {0}")]
    Spawn(String),
}

type Answer<'a> = Pin<Box<dyn Future<Output = Result<Value, EngineError>> + Send + 'a>>;

/// Runs Helm actions; [`WorkerEngine`] is the real one, tests may bring a fake.
pub trait HelmEngine: Send + Sync + std::fmt::Debug {
    /// Runs `op`; `release` (`<namespace>/<name>` in the workload cluster) serialises actions on one release.
    fn run(&self, op: Op, release: Option<String>, deadline: Duration) -> Answer<'_>;

    /// Cancels the action running or waiting its turn for `release` (as [`HelmEngine::run`] named it): a running
    /// install or upgrade stops through its Helm context (Helm records the revision failed), one still waiting
    /// ends without running ([`EngineError::Cancelled`]). True when there was one.
    fn cancel<'a>(&'a self, release: &'a str) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>> {
        let _ = release;
        Box::pin(async { false })
    }

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
    /// The worker's resident memory limit in bytes: a worker past it is stopped, the actions it ran fail with
    /// [`EngineError::OverMemory`], and the next action starts a new worker. None: no limit.
    pub memory_limit: Option<u64>,
    /// Where each worker gets its private scratch directory, its `TMPDIR`: the host's temporary directory.
    pub scratch_base: PathBuf,
}

/// The default worker memory limit: ten times its idle size, far above any chart's action.
pub const DEFAULT_WORKER_MEMORY: u64 = 1 << 30;
/// How often the worker's resident memory is read.
const MEMORY_CHECK: Duration = Duration::from_millis(100);
/// How long a cancelled action has to end (Helm marks the release failed, or rolls it back) before its worker is
/// stopped.
const CANCEL_GRACE: Duration = Duration::from_secs(30);

struct Worker {
    stdin: tokio::process::ChildStdin,
    pending: Pending,
    pid: Option<u32>,
    /// Set by the supervisor once the process has exited.
    exited: Arc<std::sync::atomic::AtomicBool>,
    /// The resident size at which the supervisor stopped the worker for its memory (0: it did not).
    stopped_at: Arc<AtomicU64>,
    /// Dropped with the worker: the supervisor then kills the process if it still runs.
    _kill: oneshot::Sender<()>,
}

/// Waiters for the worker's replies, by request id.
type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Outcome>>>>;

/// Owns the worker process: waits for it, stops it when it grows past `limit`, and kills it when its [`Worker`]
/// is dropped. Once it has exited, every action still waiting learns it at once (without waiting for its pipe to
/// close).
async fn supervise(
    mut child: tokio::process::Child,
    limit: Option<u64>,
    (exited, stopped_at, pending): (Arc<std::sync::atomic::AtomicBool>, Arc<AtomicU64>, Pending),
    mut kill: oneshot::Receiver<()>,
    scratch: scratch::Scratch,
) {
    let pid = child.id();
    let mut tick = tokio::time::interval(MEMORY_CHECK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // Decided while the wait is borrowed, acted on after.
        let stop = tokio::select! {
            _ = child.wait() => break,
            _ = &mut kill => true,
            _ = tick.tick() => match limit.and_then(|l| Some((l, pid.and_then(resident_bytes)?))) {
                Some((limit, used)) if used > limit => {
                    stopped_at.store(used, Ordering::SeqCst);
                    tracing::warn!(used_mib = used >> 20, limit_mib = limit >> 20,
                        "the Helm worker grew past its memory limit; stopped (its actions fail, the next starts a new one)");
                    true
                }
                _ => false,
            },
        };
        if stop {
            let _ = child.start_kill();
            let _ = child.wait().await;
            break;
        }
    }
    // Whatever the worker left (an action it died in) goes with its directory, before anyone learns it exited.
    drop(scratch);
    exited.store(true, Ordering::SeqCst);
    if let Ok(mut waiting) = pending.lock() {
        waiting.clear();
    }
}

/// A process's resident set size (`VmRSS` in `/proc/<pid>/status`).
fn resident_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
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
    /// Each release's action, from its turn on the release to its answer, for [`HelmEngine::cancel`].
    flights: Arc<Mutex<HashMap<String, Flight>>>,
}

/// Where a release's action stands, for a cancel to reach it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flight {
    /// Waiting for a slot; `cancelled` when a cancel came first.
    Waiting { cancelled: bool },
    /// Sent to the worker as request `id`.
    Sent(u64),
}

/// Removes a release's [`Flight`] when its action ends, however it ends.
struct Landing {
    flights: Arc<Mutex<HashMap<String, Flight>>>,
    release: String,
}

impl Drop for Landing {
    fn drop(&mut self) {
        if let Ok(mut f) = self.flights.lock() {
            f.remove(&self.release);
        }
    }
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
            flights: Arc::default(),
        }
    }

    fn flights(&self) -> std::sync::MutexGuard<'_, HashMap<String, Flight>> {
        self.flights.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn cancel_release(&self, release: &str) -> bool {
        let flight = {
            let mut flights = self.flights();
            match flights.get_mut(release) {
                Some(Flight::Waiting { cancelled }) => {
                    *cancelled = true;
                    return true;
                }
                Some(Flight::Sent(id)) => *id,
                None => return false,
            }
        };
        let _ = self
            .send(
                self.next_id.fetch_add(1, Ordering::Relaxed),
                Op::Cancel { id: flight },
            )
            .await;
        true
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
        // Closing stdin ends the worker's request loop; dropping the worker kills whatever is left.
        if let Some(worker) = guard.take() {
            let Worker {
                stdin,
                exited,
                _kill: kill,
                ..
            } = worker;
            drop(stdin);
            let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
            while !exited.load(Ordering::SeqCst) && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            drop(kill);
        }
    }

    /// How many times a worker was started (1 after the first action; more after restarts).
    pub fn starts(&self) -> u64 {
        self.starts.load(Ordering::Relaxed)
    }

    /// The running worker's process id, if one runs (tests kill it to check recovery).
    pub async fn worker_pid(&self) -> Option<u32> {
        self.worker.lock().await.as_ref().and_then(|w| w.pid)
    }

    fn spawn(&self) -> Result<Worker, EngineError> {
        let scratch = scratch::Scratch::create(&self.options.scratch_base).map_err(|e| {
            EngineError::Spawn(format!(
                "making the worker's scratch directory under {}: {e}",
                self.options.scratch_base.display()
            ))
        })?;
        let mut command = tokio::process::Command::new(&self.options.program);
        command
            .arg("helm-worker")
            .arg("--lib")
            .arg(&self.options.lib)
            // Everything Helm and the worker write for an action (kubeconfigs, charts, TLS keys) goes there.
            .env("TMPDIR", scratch.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        match post_render_plugins(&self.options.program, scratch.path()) {
            Ok(dir) => {
                command.env("HELM_PLUGINS", dir);
            }
            // Releases without post-renderers do not need it; those with one fail with Helm's "plugin not found".
            Err(e) => {
                tracing::warn!("installing the post-renderer plugin for the Helm worker: {e}")
            }
        }
        if let Some(limit) = self.options.memory_limit {
            // Go's soft limit: its collector works harder as the heap nears it, well before the hard stop.
            command.env(
                "GOMEMLIMIT",
                format!("{}MiB", (limit >> 20).saturating_mul(3) / 4),
            );
        }
        let mut child = command
            .spawn()
            .map_err(|e| EngineError::Spawn(format!("{}: {e}", self.options.program.display())))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(EngineError::Spawn("the worker's pipes are missing".into()));
        };
        self.starts.fetch_add(1, Ordering::Relaxed);
        let pending: Pending = Arc::default();
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
        let exited = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped_at = Arc::new(AtomicU64::new(0));
        let (kill, killed) = oneshot::channel();
        let pid = child.id();
        tokio::spawn(supervise(
            child,
            self.options.memory_limit,
            (exited.clone(), stopped_at.clone(), pending.clone()),
            killed,
            scratch,
        ));
        Ok(Worker {
            stdin,
            pending,
            pid,
            exited,
            stopped_at,
            _kill: kill,
        })
    }

    /// Sends `op` to a live worker (starting one when none runs or the last one died); returns the reply's
    /// receiver and where that worker's supervisor records a stop for memory.
    async fn send(
        &self,
        id: u64,
        op: Op,
    ) -> Result<(oneshot::Receiver<Outcome>, Arc<AtomicU64>), EngineError> {
        let mut guard = self.worker.lock().await;
        // A worker stopped for its memory is dead from the moment the supervisor decides it, before it has exited.
        let dead = match guard.as_ref() {
            None => true,
            Some(w) => w.exited.load(Ordering::SeqCst) || w.stopped_at.load(Ordering::SeqCst) > 0,
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
        let written =
            worker.stdin.write_all(&line).await.is_ok() && worker.stdin.flush().await.is_ok();
        // The supervisor marks the worker exited before it fails the waiting actions: a worker that exited before
        // this request was registered is seen here, one that exits later fails it there.
        if !written || worker.exited.load(Ordering::SeqCst) {
            if let Ok(mut p) = worker.pending.lock() {
                p.remove(&id);
            }
            let lost = self.lost(&worker.stopped_at);
            *guard = None;
            return Err(lost);
        }
        Ok((rx, worker.stopped_at.clone()))
    }

    /// Why a worker went away during an action: stopped for its memory, or exited.
    fn lost(&self, stopped_at: &AtomicU64) -> EngineError {
        let used = stopped_at.load(Ordering::SeqCst);
        match self.options.memory_limit {
            Some(limit) if used > 0 => EngineError::OverMemory { used, limit },
            _ => EngineError::WorkerLost,
        }
    }

    /// Stops the worker still running action `id` after its cancel. Helm does not watch its context everywhere (a
    /// chart download has no deadline of its own), and an action the host gave up on must never write once it
    /// unblocks: its release would change after its failure was reported, behind the retry's back. The other
    /// actions the worker ran fail as a lost worker does, and are retried; the next action starts a new worker.
    async fn abandon(&self, id: u64) {
        let mut guard = self.worker.lock().await;
        let running = guard.as_ref().is_some_and(|w| {
            w.pending
                .lock()
                .map(|p| p.contains_key(&id))
                .unwrap_or(false)
        });
        if running {
            tracing::warn!(
                grace_secs = CANCEL_GRACE.as_secs(),
                "a cancelled Helm action did not stop; the Helm worker is stopped so it cannot act after its deadline"
            );
            // Dropping the worker makes its supervisor kill the process.
            *guard = None;
        }
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
        // The release's turn: from here a cancel reaches this action, waiting or running.
        let _landing = release.as_ref().map(|r| {
            self.flights()
                .insert(r.clone(), Flight::Waiting { cancelled: false });
            Landing {
                flights: self.flights.clone(),
                release: r.clone(),
            }
        });
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
        if let Some(r) = &release {
            let mut flights = self.flights();
            if flights.get(r) == Some(&Flight::Waiting { cancelled: true }) {
                return Err(EngineError::Cancelled);
            }
            flights.insert(r.clone(), Flight::Sent(id));
        }
        let (mut rx, stopped_at) = self.send(id, op).await?;
        let outcome = match tokio::time::timeout(deadline, &mut rx).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => return Err(self.lost(&stopped_at)),
            Err(_) => {
                // Cancel through Helm's context, then give it a moment to leave the release consistent.
                let _ = self
                    .send(
                        self.next_id.fetch_add(1, Ordering::Relaxed),
                        Op::Cancel { id },
                    )
                    .await;
                if tokio::time::timeout(CANCEL_GRACE, &mut rx).await.is_err() {
                    self.abandon(id).await;
                }
                return Err(EngineError::Timeout(deadline));
            }
        };
        match outcome {
            Outcome::Ok(v) => Ok(v),
            Outcome::Err { code, message, .. } if code == "Unavailable" => {
                Err(EngineError::Unavailable(message))
            }
            Outcome::Err {
                code,
                call,
                message,
            } => {
                // Which library call failed, and its class, are for the logs; users get Helm's message.
                tracing::debug!(release = ?release, call = %call, code = %code, error = %message, "Helm answered an error");
                Err(EngineError::Helm { code, message })
            }
        }
    }
}

/// A Helm plugins directory holding the post-renderer plugin, whose command is `program helm-post-render`
/// (Helm 4 runs post-renderers only as plugins); one per worker, in its scratch directory.
fn post_render_plugins(
    program: &std::path::Path,
    scratch: &std::path::Path,
) -> std::io::Result<PathBuf> {
    let program = std::path::absolute(program)?;
    // In the worker's private directory: a plugin directory another user could plant or swap would run their
    // command as the operator.
    let dir = scratch.join("helm-plugins");
    let plugin = dir.join(POST_RENDER_PLUGIN);
    std::fs::create_dir_all(&plugin)?;
    // JSON strings are YAML double-quoted scalars: the path is quoted whatever it holds.
    let manifest = format!(
        "apiVersion: v1\nname: {POST_RENDER_PLUGIN}\ntype: postrenderer/v1\nruntime: subprocess\nversion: 0.1.0\n\
         runtimeConfig:\n  platformCommand:\n    - command: {}\n      args: [\"helm-post-render\"]\n",
        serde_json::Value::String(program.to_string_lossy().into_owned())
    );
    // Written before the worker starts: nothing reads it half written.
    std::fs::write(plugin.join("plugin.yaml"), manifest)?;
    Ok(dir)
}

/// The Helm engine as the operator starts it, and the line that says what it found.
pub struct HelmSetup {
    pub engine: Option<Arc<dyn HelmEngine>>,
    /// Whether Helm answered (versions checked); false when unconfigured or unavailable.
    pub ready: bool,
    pub summary: String,
}

impl HelmSetup {
    /// The engine, when Helm answered; None otherwise ([`HelmSetup::summary`] says why).
    pub fn ready_engine(&self) -> Option<Arc<dyn HelmEngine>> {
        self.engine.clone().filter(|_| self.ready)
    }

    /// The releases this engine converges: none can proceed when Helm did not answer, and they say why.
    pub fn releases(&self) -> releases::Releases {
        releases::Releases::new(self.ready_engine(), &self.summary)
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

    fn cancel<'a>(&'a self, release: &'a str) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>> {
        Box::pin(self.cancel_release(release))
    }

    fn shutdown(&self, grace: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(self.stop(grace))
    }
}
