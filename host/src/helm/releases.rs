//! Releases converged in the background. A plugin states the release it wants (`helm.ensure`); this decides,
//! from the release as Helm stores it in the workload cluster ([`storage`]) and from what this host last ran,
//! whether an action is needed, starts it on the [`HelmEngine`] without waiting for it, and reports where the
//! release stands. When the action ends, the object that asked is woken so its plugin sees the outcome at once.
//!
//! Rules (each fixes a Go-operator bug, original-operator.md §10.12, §10.13):
//! * an action runs only when the release is missing, its latest revision is not `deployed`, or it was made from
//!   another chart, version or values (the digest stamped as a release label differs): nothing changed, no
//!   revision;
//! * a failed action is retried with a growing delay, at once when what is wanted changes;
//! * a revision left `pending-*` by an action that died with its process (no action of this host runs for it,
//!   and this host's own last action on it has ended, or it is older than its timeout allows) is marked `failed`,
//!   so the next action can proceed;
//! * a release belongs to the object that made it ([`Owner`]): every call reads the release's owner stamp first
//!   and acts only for that object, so one object's plugin can neither read, upgrade nor uninstall another's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::crds;
use super::drift::{self, DriftError, Drifted, Ignore};
use super::protocol::{ChartAuth, ChartRef, GitRef, Op, Target};
use super::storage::{
    self, DIGEST_LABEL, OWNER_LABEL, OWNER_UID_LABEL, StorageError, StoredRevision,
};
use super::{EngineError, HelmEngine};

/// Beyond its own timeout, how long a pending revision may stand before it is taken for abandoned.
const PENDING_GRACE: Duration = Duration::from_secs(120);
/// Added to an action's Helm timeout for the engine's deadline: Helm stops first and reports why.
const DEADLINE_MARGIN: Duration = Duration::from_secs(60);
/// The first retry delay after a failure; it doubles per failure up to [`MAX_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(15);
const MAX_RETRY: Duration = Duration::from_secs(600);
/// How long a version constraint's resolution is trusted before the chart source is asked again: short enough
/// that a release checked every interval sees a new chart version at its next check.
const RESOLVED_FOR: Duration = Duration::from_secs(20);
/// A resolution's deadline (it downloads a repository index or lists registry tags).
const RESOLVE_DEADLINE: Duration = Duration::from_secs(60);
/// Forgotten entries beyond this many are dropped (only idle ones), so releases that come and go cannot grow
/// the table forever.
const MAX_ENTRIES: usize = 10_000;

/// Called when an action started for an object ends.
pub type Wake = Arc<dyn Fn() + Send + Sync>;

/// The object a call acts for. A release belongs to the object that made it: the host stamps every revision it
/// makes with the object's identity ([`OWNER_LABEL`]) and UID, and acts on (or reads) a release only for the
/// object its newest stamp names. The identity is a digest of the object's API group, kind, namespace and name,
/// so an object deleted and created again under its name (a GitOps re-sync) keeps its release, as Flux keys
/// releases by name; no other object can ever carry that identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub identity: String,
    pub uid: String,
    /// The object's user asked to adopt this release if nobody owns it (`omni.texashpc.com/adopt-release`).
    pub adopt: bool,
}

impl Owner {
    pub fn new(
        group: &str,
        kind: &str,
        namespace: &str,
        name: &str,
        uid: &str,
        adopt: bool,
    ) -> Self {
        let identity = format!("{group}/{kind}/{namespace}/{name}");
        Owner {
            identity: super::sha256_prefix(identity.as_bytes(), 40),
            uid: uid.to_string(),
            adopt,
        }
    }

    /// The release labels that stamp a revision as this object's.
    fn labels(&self) -> std::collections::BTreeMap<String, String> {
        [
            (OWNER_LABEL.to_string(), self.identity.clone()),
            (OWNER_UID_LABEL.to_string(), self.uid.clone()),
        ]
        .into_iter()
        .collect()
    }
}

/// Whom a release's revisions say it belongs to: the newest stamp (a rollback Helm made from an older revision
/// may carry none of its own).
fn stamped_owner(revisions: &[StoredRevision]) -> Option<&str> {
    revisions.iter().find_map(|r| r.owner.as_deref())
}

/// What a release's stamps allow `owner` to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ownership {
    /// No release, or one stamped with this object's identity.
    Owned,
    /// Nobody's release the object's user asked to adopt: stamped now, then owned.
    Adopt,
}

fn ownership(
    revisions: &[StoredRevision],
    owner: &Owner,
    release: &str,
) -> Result<Ownership, ReleaseError> {
    match stamped_owner(revisions) {
        _ if revisions.is_empty() => Ok(Ownership::Owned),
        Some(stamp) if stamp == owner.identity => Ok(Ownership::Owned),
        Some(_) => Err(ReleaseError::NotOwned {
            release: release.to_string(),
            unowned: false,
        }),
        None if owner.adopt => Ok(Ownership::Adopt),
        None => Err(ReleaseError::NotOwned {
            release: release.to_string(),
            unowned: true,
        }),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChartLocation {
    Repository {
        url: String,
        name: String,
    },
    Oci(String),
    /// A chart directory in a Git repository; its "version" is the commit the reference resolves to.
    Git {
        url: String,
        reference: GitRef,
        path: String,
    },
}

/// What every action shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub timeout_seconds: u32,
    /// Wait for every resource to be ready (kstatus), not only hooks.
    pub wait_ready: bool,
    pub wait_for_jobs: bool,
    pub disable_hooks: bool,
}

impl Settings {
    fn timeout(&self) -> Duration {
        Duration::from_secs(u64::from(self.timeout_seconds.max(1)))
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InstallSettings {
    pub create_namespace: bool,
    pub skip_crds: bool,
    pub rollback_on_failure: bool,
    /// Reuse the name of a release kept in history (`--replace`).
    pub replace: bool,
    /// Apply the chart's CRDs before installing, replacing those present ([`crds`]).
    pub replace_crds: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UpgradeSettings {
    pub skip_crds: bool,
    pub rollback_on_failure: bool,
    pub cleanup_on_fail: bool,
    pub max_history: u32,
    /// Replace resources that cannot be patched (`--force`).
    pub force: bool,
    /// Apply the chart's CRDs before upgrading, replacing those present ([`crds`]).
    pub replace_crds: bool,
}

/// A rollback step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RollbackSettings {
    /// 0: the previous revision.
    pub revision: u64,
    pub settings: Settings,
    pub force: bool,
    pub cleanup_on_fail: bool,
    pub max_history: u32,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Propagation {
    #[default]
    Background,
    Foreground,
    Orphan,
}

impl Propagation {
    fn name(self) -> &'static str {
        match self {
            Propagation::Background => "background",
            Propagation::Foreground => "foreground",
            Propagation::Orphan => "orphan",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UninstallSettings {
    pub settings: Settings,
    pub keep_history: bool,
    pub propagation: Propagation,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestSettings {
    pub timeout_seconds: u32,
    /// Only these test hooks (all when empty) …
    pub include: Vec<String>,
    /// … but never these.
    pub exclude: Vec<String>,
}

/// An action a plugin asks for by name (`helm.start`), where `ensure` decides by itself.
#[derive(Debug, Clone, PartialEq)]
pub enum StepRequest {
    Install(Box<Wanted>),
    Upgrade(Box<Wanted>),
    Rollback(RollbackSettings),
    Uninstall(UninstallSettings),
    Test(TestSettings),
    /// Mark a pending latest revision failed.
    Unlock,
    /// Apply again the objects of the deployed revision that drifted.
    CorrectDrift(Vec<Ignore>),
}

impl StepRequest {
    fn action(&self) -> Action {
        match self {
            StepRequest::Install(_) => Action::Install,
            StepRequest::Upgrade(_) => Action::Upgrade,
            StepRequest::Rollback(_) => Action::Rollback,
            StepRequest::Uninstall(_) => Action::Uninstall,
            StepRequest::Test(_) => Action::Test,
            StepRequest::Unlock => Action::Recover,
            StepRequest::CorrectDrift(_) => Action::Correct,
        }
    }
}

/// The release wanted.
#[derive(Debug, Clone, PartialEq)]
pub struct Wanted {
    pub chart: ChartLocation,
    pub version: String,
    pub values: Value,
    pub settings: Settings,
    pub install: InstallSettings,
    pub upgrade: UpgradeSettings,
    /// Reach the OCI registry over plain HTTP (an operator setting for registries it names, never the plugin's).
    pub plain_http: bool,
    /// Credentials and TLS material for the chart source; not part of the digest (a rotation is no new revision).
    pub auth: Option<ChartAuth>,
}

impl Wanted {
    /// What a revision is made from, hashed ([`source_digest`]).
    pub fn digest(&self) -> String {
        source_digest(&self.chart, &self.version, &self.values)
    }
}

/// What a revision is made from, hashed: the chart's location and version and the values, in a canonical JSON
/// form (keys sorted). Options such as waits and timeouts are left out: changing them does not call for a new
/// revision. 40 hex digits (160 bits), to fit a label value.
pub fn source_digest(chart: &ChartLocation, version: &str, values: &Value) -> String {
    let chart = match chart {
        ChartLocation::Repository { url, name } => json!({"repository": url, "chart": name}),
        ChartLocation::Oci(reference) => json!({"oci": reference}),
        ChartLocation::Git { url, path, .. } => json!({"git": url, "path": path}),
    };
    let made_from = json!({"chart": chart, "version": version, "values": canonical(values)});
    super::sha256_prefix(made_from.to_string().as_bytes(), 40)
}

/// `v` with every object's keys in sorted order, whatever the map type serde_json was built with.
fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), canonical(&m[k])))
                    .collect::<Map<_, _>>(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// A workload cluster: who it is (the kubeconfig Secret it is reached through), a client for reading Helm's
/// storage, and the kubeconfig for the Helm worker.
#[derive(Clone)]
pub struct Cluster {
    /// `namespace/name/key` of the management-cluster kubeconfig Secret.
    pub id: String,
    pub client: kube::Client,
    pub kubeconfig: Arc<str>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The kubeconfig is a credential: never in a debug print.
        f.debug_struct("Cluster")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Install,
    Upgrade,
    Uninstall,
    Rollback,
    Test,
    /// A pending revision marked failed, before the action that follows it.
    Recover,
    /// Drifted objects applied again.
    Correct,
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::Install => "install",
            Action::Upgrade => "upgrade",
            Action::Uninstall => "uninstall",
            Action::Rollback => "rollback",
            Action::Test => "test",
            Action::Recover => "recover",
            Action::Correct => "drift correction",
        }
    }
}

/// How an action ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Unique across this host's restarts ([`Releases`]' epoch and a counter).
    pub id: String,
    pub action: Action,
    pub revision: u64,
    pub error: Option<String>,
    /// RFC 3339, seconds.
    pub started: String,
    pub finished: String,
    pub digest: String,
}

/// An action running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Running {
    pub id: String,
    pub action: Action,
    /// RFC 3339, seconds.
    pub started: String,
    pub digest: String,
}

/// A release as `helm.observe` sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// Newest first; empty when Helm stores none.
    pub revisions: Vec<StoredRevision>,
    pub running: Option<Running>,
    pub last: Option<Outcome>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    Idle,
    Running(Action),
    RetryAfter(Duration),
}

/// Where a release stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Newest first; empty when Helm stores none.
    pub revisions: Vec<StoredRevision>,
    pub progress: Progress,
    pub last: Option<Outcome>,
    pub wanted: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// No Helm on this host; the message says why.
    #[error("{0}")]
    Unavailable(String),
    /// Another action runs for the release.
    #[error("a Helm {} runs for this release (started {})", .0.action.name(), .0.started)]
    Busy(Running),
    /// The step cannot apply to the release as it stands.
    #[error("{0}")]
    Inapplicable(String),
    /// A version constraint did not resolve (no matching version, the source did not answer).
    #[error("resolving chart version {constraint:?}: {reason}")]
    Resolve { constraint: String, reason: String },
    #[error(transparent)]
    Drift(#[from] DriftError),
    /// The release belongs to another object, or to nobody and the object did not ask to adopt it.
    #[error("{}", not_owned_message(.release, *.unowned))]
    NotOwned { release: String, unowned: bool },
}

fn not_owned_message(release: &str, unowned: bool) -> String {
    if unowned {
        format!(
            "Helm release {release} exists and no object owns it (made by hand, by another tool, or before the host \
             stamped owners); to take it over, annotate this object with {ADOPT_ANNOTATION}={release}"
        )
    } else {
        format!(
            "Helm release {release} belongs to another object (its {OWNER_LABEL} label names that object); the \
             host acts on a release only for the object that made it"
        )
    }
}

/// The annotation a user sets on an object (value `namespace/name`) to adopt a release nobody owns.
pub const ADOPT_ANNOTATION: &str = "omni.texashpc.com/adopt-release";

/// What this host remembers of one release.
#[derive(Default)]
struct Entry {
    running: Option<Running>,
    last: Option<Outcome>,
    /// Consecutive failures of `last.digest`.
    failures: u32,
    retry_at: Option<Instant>,
}

type Key = (String, String, String);

/// The releases this host converges, and the engine that runs their actions.
pub struct Releases {
    engine: Result<Arc<dyn HelmEngine>, String>,
    entries: Arc<Mutex<HashMap<Key, Entry>>>,
    /// Actions started since the host started (benchmarks and tests read it: a steady state starts none).
    started: std::sync::atomic::AtomicU64,
    /// When this host started, in milliseconds since the Unix epoch: with `started`, action ids unique across
    /// restarts.
    epoch: i64,
    /// Version constraints resolved lately: (chart location, constraint) → (when, version).
    resolved: Mutex<HashMap<(String, String), (Instant, String)>>,
}

impl std::fmt::Debug for Releases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Releases")
            .field("available", &self.engine.is_ok())
            .finish_non_exhaustive()
    }
}

/// What ensure decided.
enum Step {
    Report(Progress),
    Start {
        action: Action,
        recover: Option<String>,
    },
}

impl Releases {
    /// `engine` None: Helm is unavailable for `why`; every call that would need an action says so.
    pub fn new(engine: Option<Arc<dyn HelmEngine>>, why: &str) -> Self {
        Releases {
            engine: engine.ok_or_else(|| why.to_string()),
            entries: Arc::default(),
            started: std::sync::atomic::AtomicU64::new(0),
            epoch: jiff::Timestamp::now().as_millisecond(),
            resolved: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Converges `namespace/name` in `cluster` to `wanted`: starts an action if one is needed and none runs.
    pub async fn ensure(
        &self,
        cluster: &Cluster,
        namespace: &str,
        name: &str,
        wanted: &Wanted,
        owner: &Owner,
        wake: Wake,
    ) -> Result<Report, ReleaseError> {
        let digest = wanted.digest();
        let revisions = storage::read(&cluster.client, namespace, name).await?;
        self.check_owner(cluster, namespace, name, &revisions, owner)
            .await?;
        let key = (cluster.id.clone(), namespace.to_string(), name.to_string());
        // Decided and claimed under one lock, so two calls at once never start two actions.
        let progress = {
            let mut entries = self.lock();
            let entry = entries.entry(key.clone()).or_default();
            match decide_ensure(entry, revisions.first(), &digest, &wanted.settings) {
                Step::Report(p) => p,
                Step::Start { action, recover } => {
                    let job = self.claim(entry, action, &key, (cluster, owner), &digest, wake)?;
                    tokio::spawn(job.converge(action, recover, wanted.clone()));
                    Progress::Running(action)
                }
            }
        };
        Ok(self.report(&key, revisions, progress, digest))
    }

    /// Uninstalls `namespace/name` in the background; `Idle` with no revisions once it is gone.
    pub async fn uninstall(
        &self,
        (cluster, owner): (&Cluster, &Owner),
        namespace: &str,
        name: &str,
        (settings, keep_history): (Settings, bool),
        wake: Wake,
    ) -> Result<Report, ReleaseError> {
        let revisions = storage::read(&cluster.client, namespace, name).await?;
        self.check_owner(cluster, namespace, name, &revisions, owner)
            .await?;
        let key = (cluster.id.clone(), namespace.to_string(), name.to_string());
        let gone = revisions.first().is_none_or(|r| r.status == "uninstalled");
        let progress = {
            let mut entries = self.lock();
            let entry = entries.entry(key.clone()).or_default();
            match (&entry.running, gone) {
                (Some(r), _) => Progress::Running(r.action),
                (None, true) => Progress::Idle,
                (None, false) => match retry_wait(entry, "") {
                    Some(wait) => Progress::RetryAfter(wait),
                    None => {
                        let action = Action::Uninstall;
                        let job = self.claim(entry, action, &key, (cluster, owner), "", wake)?;
                        tokio::spawn(job.uninstall(UninstallSettings {
                            settings,
                            keep_history,
                            propagation: Propagation::Background,
                        }));
                        Progress::Running(action)
                    }
                },
            }
        };
        let revisions = if gone { Vec::new() } else { revisions };
        Ok(self.report(&key, revisions, progress, String::new()))
    }

    /// Marks `entry` running `action` and makes the job that runs it; Helm unavailable claims nothing.
    fn claim(
        &self,
        entry: &mut Entry,
        action: Action,
        key: &Key,
        (cluster, owner): (&Cluster, &Owner),
        digest: &str,
        wake: Wake,
    ) -> Result<Job, ReleaseError> {
        let engine = self.engine.clone().map_err(ReleaseError::Unavailable)?;
        let count = self
            .started
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let running = Running {
            id: format!("{}-{}", self.epoch, count + 1),
            action,
            started: now_rfc3339(),
            digest: digest.to_string(),
        };
        entry.running = Some(running.clone());
        Ok(Job {
            engine,
            entries: self.entries.clone(),
            key: key.clone(),
            cluster: cluster.clone(),
            owner: owner.clone(),
            running,
            wake,
        })
    }

    /// Checks that `owner` may act on the release whose revisions are `revisions` ([`ownership`]), and stamps a
    /// release nobody owned that the object's user asked to adopt.
    async fn check_owner(
        &self,
        cluster: &Cluster,
        namespace: &str,
        name: &str,
        revisions: &[StoredRevision],
        owner: &Owner,
    ) -> Result<(), ReleaseError> {
        let release = format!("{namespace}/{name}");
        if ownership(revisions, owner, &release)? == Ownership::Adopt {
            let secrets: Vec<String> = revisions.iter().map(|r| r.secret.clone()).collect();
            storage::add_labels(&cluster.client, namespace, &secrets, &owner.labels()).await?;
            tracing::info!(release = %release, owner = %owner.uid,
                "adopted a Helm release nobody owned, as the object's annotation asks");
        }
        Ok(())
    }

    /// The release as Helm stores it, and what this host runs or ran for it; starts nothing.
    pub async fn observe(
        &self,
        cluster: &Cluster,
        namespace: &str,
        name: &str,
        owner: &Owner,
    ) -> Result<Observation, ReleaseError> {
        let revisions = storage::read(&cluster.client, namespace, name).await?;
        self.check_owner(cluster, namespace, name, &revisions, owner)
            .await?;
        let key = (cluster.id.clone(), namespace.to_string(), name.to_string());
        let entries = self.lock();
        let entry = entries.get(&key);
        Ok(Observation {
            revisions,
            running: entry.and_then(|e| e.running.clone()),
            last: entry.and_then(|e| e.last.clone()),
        })
    }

    /// Starts `request` in the background: `Busy` while another action runs for the release. A step that
    /// cannot apply (a rollback or test of a release Helm does not store, an unlock of one not pending) is
    /// `Inapplicable`, decided on the release as it stands now.
    pub async fn start(
        &self,
        cluster: &Cluster,
        namespace: &str,
        name: &str,
        request: StepRequest,
        owner: &Owner,
        wake: Wake,
    ) -> Result<Running, ReleaseError> {
        let revisions = storage::read(&cluster.client, namespace, name).await?;
        self.check_owner(cluster, namespace, name, &revisions, owner)
            .await?;
        let latest = revisions.first();
        let stored = latest.is_some_and(|r| r.status != "uninstalled");
        let why = match &request {
            StepRequest::Rollback(_) | StepRequest::Test(_) | StepRequest::CorrectDrift(_)
                if !stored =>
            {
                Some(format!("release {namespace}/{name} is not installed"))
            }
            StepRequest::Rollback(r)
                if r.revision > 0 && !revisions.iter().any(|x| x.revision == r.revision) =>
            {
                Some(format!(
                    "release {namespace}/{name} has no revision {} among its latest {}",
                    r.revision,
                    revisions.len()
                ))
            }
            StepRequest::Unlock if !latest.is_some_and(StoredRevision::is_pending) => {
                Some(format!(
                    "release {namespace}/{name} is not pending (latest: {})",
                    latest.map_or("none", |r| r.status.as_str())
                ))
            }
            _ => None,
        };
        if let Some(why) = why {
            return Err(ReleaseError::Inapplicable(why));
        }
        let digest = match &request {
            StepRequest::Install(w) | StepRequest::Upgrade(w) => w.digest(),
            _ => String::new(),
        };
        let key = (cluster.id.clone(), namespace.to_string(), name.to_string());
        let mut entries = self.lock();
        let entry = entries.entry(key.clone()).or_default();
        if let Some(r) = &entry.running {
            return Err(ReleaseError::Busy(r.clone()));
        }
        let job = self.claim(
            entry,
            request.action(),
            &key,
            (cluster, owner),
            &digest,
            wake,
        )?;
        let running = job.running.clone();
        tokio::spawn(job.step(request));
        Ok(running)
    }

    /// The version a chart version constraint (`>=1.2 <2`, `~1.4`, `1.x`) stands for now: the newest matching one,
    /// as Helm resolves it for an install (its `helm show chart` against the repository index or the registry's
    /// tags). An exact version is its own answer, without asking anyone.
    pub async fn resolve_version(
        &self,
        chart: &ChartLocation,
        version: &str,
        plain_http: bool,
        auth: Option<&ChartAuth>,
    ) -> Result<String, ReleaseError> {
        let git = matches!(chart, ChartLocation::Git { .. });
        if is_exact_version(version) && !git {
            return Ok(version.to_string());
        }
        // Resolutions are kept apart per credentials, as the sources may answer them differently.
        let key = (
            format!("{chart:?}"),
            format!("{version}\0{}", ChartAuth::fingerprint(auth)),
        );
        {
            let resolved = self.resolved.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((at, v)) = resolved.get(&key)
                && at.elapsed() < RESOLVED_FOR
            {
                return Ok(v.clone());
            }
        }
        let failed = |reason: String| ReleaseError::Resolve {
            constraint: version.to_string(),
            reason,
        };
        let engine = self.engine.clone().map_err(ReleaseError::Unavailable)?;
        let resolved = if let ChartLocation::Git { url, reference, .. } = chart {
            // A Git chart's version is the commit its reference names now.
            let op = Op::GitResolve {
                url: url.clone(),
                reference: reference.clone(),
                auth: auth.cloned(),
            };
            let answer = engine
                .run(op, None, RESOLVE_DEADLINE)
                .await
                .map_err(|e| failed(engine_message(&e)))?;
            answer["commit"]
                .as_str()
                .filter(|c| !c.is_empty())
                .ok_or_else(|| failed("the repository named no commit".into()))?
                .to_string()
        } else {
            let mut options = Map::new();
            options.insert("format".into(), "chart".into());
            let reference =
                chart_reference(chart, version, plain_http, None, &mut options).map_err(failed)?;
            let op = Op::Show {
                chart: reference,
                options: Value::Object(options),
                auth: auth.cloned(),
            };
            let answer = engine
                .run(op, None, RESOLVE_DEADLINE)
                .await
                .map_err(|e| failed(engine_message(&e)))?;
            let chart_yaml: Value = yaml_serde::from_str(answer.as_str().unwrap_or_default())
                .map_err(|e| failed(format!("the chart's Chart.yaml: {e}")))?;
            chart_yaml["version"]
                .as_str()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| failed("the chart's Chart.yaml has no version".into()))?
                .to_string()
        };
        let mut cache = self.resolved.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() > MAX_ENTRIES {
            cache.retain(|_, (at, _)| at.elapsed() < RESOLVED_FOR);
        }
        cache.insert(key, (Instant::now(), resolved.clone()));
        Ok(resolved)
    }

    /// The objects of the deployed revision that drifted from its manifest; none when the latest revision is not
    /// deployed (an action's outcome, not drift, explains it) or an action runs.
    pub async fn drift(
        &self,
        cluster: &Cluster,
        namespace: &str,
        name: &str,
        ignore: &[Ignore],
        owner: &Owner,
    ) -> Result<Vec<Drifted>, ReleaseError> {
        let latest = storage::latest_with_manifest(&cluster.client, namespace, name).await?;
        if let Some((r, _)) = &latest
            && r.owner.as_deref() != Some(owner.identity.as_str())
        {
            // Not stamped as this object's on its latest revision: judged on the history, as every call is.
            let revisions = storage::read(&cluster.client, namespace, name).await?;
            self.check_owner(cluster, namespace, name, &revisions, owner)
                .await?;
        }
        let key = (cluster.id.clone(), namespace.to_string(), name.to_string());
        if self.lock().get(&key).is_some_and(|e| e.running.is_some()) {
            return Ok(Vec::new());
        }
        let Some((_, manifest)) = latest.filter(|(r, _)| r.status == "deployed") else {
            return Ok(Vec::new());
        };
        Ok(drift::detect(&cluster.client, name, namespace, &manifest, ignore).await?)
    }

    /// Reads the release; starts nothing.
    pub async fn status(
        &self,
        cluster: &Cluster,
        namespace: &str,
        name: &str,
        owner: &Owner,
    ) -> Result<Report, ReleaseError> {
        let revisions = storage::read(&cluster.client, namespace, name).await?;
        self.check_owner(cluster, namespace, name, &revisions, owner)
            .await?;
        let key = (cluster.id.clone(), namespace.to_string(), name.to_string());
        let progress = match self.lock().get(&key) {
            Some(Entry {
                running: Some(r), ..
            }) => Progress::Running(r.action),
            Some(e) => e
                .retry_at
                .and_then(|t| t.checked_duration_since(Instant::now()))
                .map_or(Progress::Idle, Progress::RetryAfter),
            None => Progress::Idle,
        };
        Ok(self.report(&key, revisions, progress, String::new()))
    }

    fn report(
        &self,
        key: &Key,
        revisions: Vec<StoredRevision>,
        progress: Progress,
        wanted: String,
    ) -> Report {
        let mut entries = self.lock();
        let last = entries.get(key).and_then(|e| e.last.clone());
        if entries.len() > MAX_ENTRIES {
            entries.retain(|_, e| e.running.is_some());
        }
        Report {
            revisions,
            progress,
            last,
            wanted,
        }
    }

    /// Cancels the running actions through Helm's contexts (Helm records them as failed, so the next start
    /// upgrades at once instead of waiting out a `pending-*` revision) and takes no more.
    pub async fn shutdown(&self, grace: Duration) {
        if let Ok(engine) = &self.engine {
            engine.shutdown(grace).await;
        }
    }

    /// Helm actions (install, upgrade, uninstall) started so far.
    pub fn actions_started(&self) -> u64 {
        self.started.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// A version Helm would take as itself, not as a constraint: `1.2.3`, `v1.2.3`, `1.2.3-rc.1+build`.
pub fn is_exact_version(version: &str) -> bool {
    let v = version.trim();
    semver::Version::parse(v.strip_prefix('v').unwrap_or(v)).is_ok()
}

/// What `ensure` does, given the latest revision and what this host remembers.
fn decide_ensure(
    entry: &Entry,
    latest: Option<&StoredRevision>,
    digest: &str,
    settings: &Settings,
) -> Step {
    if let Some(r) = &entry.running {
        return Step::Report(Progress::Running(r.action));
    }
    let start = |action, recover| match retry_wait(entry, digest) {
        Some(wait) => Step::Report(Progress::RetryAfter(wait)),
        None => Step::Start { action, recover },
    };
    match latest {
        None => start(Action::Install, None),
        Some(r) if r.status == "uninstalled" => start(Action::Install, None),
        Some(r) if r.is_pending() => {
            // With no action of this host running, a pending revision this host's own last action left (its
            // worker died, or it ran out of time) is abandoned; one from before this host started is judged by
            // its age. One operator instance writes at a time (leader election), so nobody else is running it.
            if entry.last.is_some() || pending_abandoned(r, settings) {
                let why = format!(
                    "{} interrupted: the action's process ended before it did; marked failed by omni-operator",
                    r.status
                );
                start(Action::Upgrade, Some(why))
            } else {
                // Someone's action is still within its time: wait for it.
                let action = if r.status == "pending-install" {
                    Action::Install
                } else {
                    Action::Upgrade
                };
                Step::Report(Progress::Running(action))
            }
        }
        Some(r) if r.status == "deployed" && r.digest.as_deref() == Some(digest) => {
            Step::Report(Progress::Idle)
        }
        Some(_) => start(Action::Upgrade, None),
    }
}

/// How long to wait before trying `digest` again after its last failure; None when an action may start now.
fn retry_wait(entry: &Entry, digest: &str) -> Option<Duration> {
    let last = entry.last.as_ref()?;
    if last.error.is_none() || last.digest != digest {
        return None;
    }
    entry
        .retry_at?
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
}

fn pending_abandoned(r: &StoredRevision, settings: &Settings) -> bool {
    let Ok(since) = r.updated.parse::<jiff::Timestamp>() else {
        // No time to judge by: a pending revision with no action of ours running is taken as abandoned.
        return true;
    };
    let age = jiff::Timestamp::now().duration_since(since);
    let allowed = settings.timeout() + PENDING_GRACE;
    age.as_secs() >= 0 && age.unsigned_abs() > allowed
}

/// One background action for one release.
struct Job {
    engine: Arc<dyn HelmEngine>,
    entries: Arc<Mutex<HashMap<Key, Entry>>>,
    key: Key,
    cluster: Cluster,
    /// Whom the revisions this job makes are stamped for.
    owner: Owner,
    running: Running,
    wake: Wake,
}

impl Job {
    fn target(&self) -> Target {
        Target {
            kubeconfig: self.cluster.kubeconfig.to_string(),
            namespace: self.key.1.clone(),
        }
    }

    /// The release labels a revision this job makes carries: the digest of what it is made from, and its owner.
    fn release_labels(&self) -> Map<String, Value> {
        let mut labels: Map<String, Value> = self
            .owner
            .labels()
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        labels.insert(DIGEST_LABEL.into(), self.running.digest.clone().into());
        labels
    }

    /// `release` for the engine's per-release serialisation: the cluster and the release.
    fn release(&self) -> String {
        format!("{}:{}/{}", self.key.0, self.key.1, self.key.2)
    }

    async fn converge(self, action: Action, recover: Option<String>, wanted: Wanted) {
        let mut action = action;
        let result = async {
            let pending = match &recover {
                Some(_) => storage::read(&self.cluster.client, &self.key.1, &self.key.2)
                    .await
                    .map_err(|e| e.to_string())?
                    .into_iter()
                    .next()
                    .filter(StoredRevision::is_pending),
                None => None,
            };
            if let (Some(why), Some(latest)) = (&recover, pending) {
                storage::mark_failed(&self.cluster.client, &self.key.1, &latest.secret, why)
                    .await
                    .map_err(|e| e.to_string())?;
                tracing::warn!(release = %self.release(), revision = latest.revision,
                    "a Helm release was left {} by an action that died; marked failed", latest.status);
                // A pending install with nothing deployed before it is installed again over the failure.
                action = Action::Upgrade;
            }
            let replace_crds = match action {
                Action::Install => wanted.install.replace_crds,
                _ => wanted.upgrade.replace_crds,
            };
            let local = self.git_checkout(&wanted).await?;
            if replace_crds {
                self.replace_crds(&wanted, local.as_deref()).await?;
            }
            let op = action_op(
                (action, &self.target(), &self.key.2),
                &wanted,
                self.release_labels(),
                local.as_deref(),
            )?;
            let deadline = wanted.settings.timeout() + DEADLINE_MARGIN;
            self.engine
                .run(op, Some(self.release()), deadline)
                .await
                .map_err(|e| engine_message(&e))
        }
        .await;
        self.finish(action, result);
    }

    /// A Git chart's directory at the wanted commit, written out by the worker; None for other charts.
    async fn git_checkout(&self, w: &Wanted) -> Result<Option<String>, String> {
        let ChartLocation::Git { url, path, .. } = &w.chart else {
            return Ok(None);
        };
        let op = Op::GitCheckout {
            url: url.clone(),
            commit: w.version.clone(),
            path: path.clone(),
            cache: git_cache().to_string_lossy().into_owned(),
            auth: w.auth.clone(),
        };
        let answer = self
            .engine
            .run(op, Some(self.release()), RESOLVE_DEADLINE)
            .await
            .map_err(|e| engine_message(&e))?;
        answer["chart"]
            .as_str()
            .map(|dir| Some(dir.to_string()))
            .ok_or_else(|| "the worker named no chart directory".to_string())
    }

    /// Applies the chart's CRDs (as `helm show crds` prints them) to the workload cluster.
    async fn replace_crds(&self, w: &Wanted, local: Option<&str>) -> Result<(), String> {
        let mut options = Map::new();
        options.insert("format".into(), "crds".into());
        let reference = chart_reference(&w.chart, &w.version, w.plain_http, local, &mut options)?;
        let op = Op::Show {
            chart: reference,
            options: Value::Object(options),
            auth: w.auth.clone(),
        };
        let text = self
            .engine
            .run(op, Some(self.release()), RESOLVE_DEADLINE)
            .await
            .map_err(|e| engine_message(&e))?;
        let applied = crds::apply(&self.cluster.client, text.as_str().unwrap_or_default())
            .await
            .map_err(|e| e.to_string())?;
        tracing::info!(release = %self.release(), crds = ?applied, "the chart's CRDs applied");
        Ok(())
    }

    async fn uninstall(self, u: UninstallSettings) {
        let mut options = action_options(&u.settings);
        options.insert("ignore_not_found".into(), true.into());
        options.insert("keep_history".into(), u.keep_history.into());
        options.insert("deletion_propagation".into(), u.propagation.name().into());
        let op = Op::Uninstall {
            target: self.target(),
            release: self.key.2.clone(),
            options: Value::Object(options),
        };
        let result = self
            .engine
            .run(
                op,
                Some(self.release()),
                u.settings.timeout() + DEADLINE_MARGIN,
            )
            .await
            .map_err(|e| engine_message(&e));
        self.finish(Action::Uninstall, result);
    }

    /// Runs a step a plugin asked for.
    async fn step(self, request: StepRequest) {
        match request {
            StepRequest::Install(wanted) => self.converge(Action::Install, None, *wanted).await,
            StepRequest::Upgrade(wanted) => self.converge(Action::Upgrade, None, *wanted).await,
            StepRequest::Uninstall(u) => self.uninstall(u).await,
            StepRequest::Rollback(r) => {
                let mut o = action_options(&r.settings);
                o.insert("version".into(), r.revision.into());
                o.insert("wait_for_jobs".into(), r.settings.wait_for_jobs.into());
                o.insert("force_replace".into(), r.force.into());
                o.insert("force_conflicts".into(), true.into());
                o.insert("cleanup_on_fail".into(), r.cleanup_on_fail.into());
                if r.max_history > 0 {
                    o.insert("max_history".into(), r.max_history.into());
                }
                let op = Op::Rollback {
                    target: self.target(),
                    release: self.key.2.clone(),
                    options: Value::Object(o),
                };
                let deadline = r.settings.timeout() + DEADLINE_MARGIN;
                let result = self.engine.run(op, Some(self.release()), deadline).await;
                self.finish(Action::Rollback, result.map_err(|e| engine_message(&e)));
            }
            StepRequest::Test(t) => {
                let timeout = Duration::from_secs(u64::from(t.timeout_seconds.max(1)));
                let mut o = Map::new();
                o.insert("timeout_seconds".into(), t.timeout_seconds.max(1).into());
                if !t.include.is_empty() {
                    o.insert("include_names".into(), t.include.clone().into());
                }
                if !t.exclude.is_empty() {
                    o.insert("exclude_names".into(), t.exclude.clone().into());
                }
                let op = Op::Test {
                    target: self.target(),
                    release: self.key.2.clone(),
                    options: Value::Object(o),
                };
                let result = self
                    .engine
                    .run(op, Some(self.release()), timeout + DEADLINE_MARGIN)
                    .await;
                self.finish(Action::Test, result.map_err(|e| engine_message(&e)));
            }
            StepRequest::Unlock => {
                let result = self.unlock().await;
                self.finish(Action::Recover, result);
            }
            StepRequest::CorrectDrift(ignore) => {
                let result = self.correct(&ignore).await;
                self.finish(Action::Correct, result);
            }
        }
    }

    /// Applies the drifted objects of the latest revision again.
    async fn correct(&self, ignore: &[Ignore]) -> Result<Value, String> {
        let (client, namespace) = (&self.cluster.client, &self.key.1);
        let (latest, manifest) = storage::latest_with_manifest(client, namespace, &self.key.2)
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "the release is gone".to_string())?;
        let corrected = drift::correct(client, &self.key.2, namespace, &manifest, ignore)
            .await
            .map_err(|e| e.to_string())?;
        let names: Vec<String> = corrected
            .iter()
            .map(|d| format!("{} {}", d.kind, d.name))
            .collect();
        tracing::info!(release = %self.release(), corrected = ?names, "drifted objects applied again");
        Ok(json!({"revision": latest.revision, "corrected": names}))
    }

    /// Marks the latest revision failed if it is still pending (someone may have finished it since).
    async fn unlock(&self) -> Result<Value, String> {
        let latest = storage::read(&self.cluster.client, &self.key.1, &self.key.2)
            .await
            .map_err(|e| e.to_string())?
            .into_iter()
            .next();
        match latest {
            Some(r) if r.is_pending() => {
                let why = format!(
                    "{} interrupted: no action runs for it; marked failed by omni-operator",
                    r.status
                );
                storage::mark_failed(&self.cluster.client, &self.key.1, &r.secret, &why)
                    .await
                    .map_err(|e| e.to_string())?;
                tracing::warn!(release = %self.release(), revision = r.revision,
                    "a Helm release was left {}; marked failed", r.status);
                Ok(json!({"revision": r.revision}))
            }
            Some(r) => Ok(json!({"revision": r.revision})),
            None => Ok(json!({})),
        }
    }

    fn finish(self, action: Action, result: Result<Value, String>) {
        let revision = result
            .as_ref()
            .ok()
            .and_then(|v| {
                v.get("revision")
                    .or_else(|| v.pointer("/release/revision"))
                    .and_then(Value::as_u64)
            })
            .unwrap_or(0);
        let error = result.err();
        match &error {
            None => {
                tracing::info!(release = %self.release(), action = action.name(), revision, "Helm action done")
            }
            Some(e) => {
                tracing::warn!(release = %self.release(), action = action.name(), error = %e, "Helm action failed")
            }
        }
        {
            let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            let entry = entries.entry(self.key.clone()).or_default();
            let same = entry
                .last
                .as_ref()
                .is_some_and(|l| l.digest == self.running.digest);
            entry.failures = match (&error, same) {
                (None, _) => 0,
                (Some(_), true) => entry.failures.saturating_add(1),
                (Some(_), false) => 1,
            };
            entry.retry_at = error.as_ref().map(|_| {
                let shift = entry.failures.saturating_sub(1).min(10);
                Instant::now() + (FIRST_RETRY * 2u32.pow(shift)).min(MAX_RETRY)
            });
            entry.running = None;
            entry.last = Some(Outcome {
                id: self.running.id.clone(),
                action,
                revision,
                error,
                started: self.running.started.clone(),
                finished: now_rfc3339(),
                digest: self.running.digest.clone(),
            });
        }
        (self.wake)();
    }
}

/// Now, RFC 3339 to the second.
fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The engine's failure as the release's error: Helm's own message, or what happened to the worker.
fn engine_message(e: &EngineError) -> String {
    e.to_string()
}

/// The options every action takes, in libhelm_c's names (spec/helm.md §C.4).
fn action_options(s: &Settings) -> Map<String, Value> {
    let mut o = Map::new();
    o.insert("timeout_seconds".into(), s.timeout_seconds.max(1).into());
    // `--wait` is kstatus's watcher; without it Helm waits for hooks only.
    o.insert(
        "wait".into(),
        if s.wait_ready { "watcher" } else { "hookOnly" }.into(),
    );
    o.insert("disable_hooks".into(), s.disable_hooks.into());
    o
}

/// Where the worker's Git checkouts live (a commit's chart directory is kept: it never changes).
fn git_cache() -> std::path::PathBuf {
    std::env::temp_dir().join("omni-operator-git")
}

/// The reference Helm loads the chart by, with the options that complete it: a repository chart's name with
/// `chart_repo_url` and `chart_version`, an OCI reference with `chart_version`, or a Git chart's directory
/// (`local`, written out before).
fn chart_reference(
    chart: &ChartLocation,
    version: &str,
    plain_http: bool,
    local: Option<&str>,
    o: &mut Map<String, Value>,
) -> Result<String, String> {
    if plain_http {
        o.insert("plain_http".into(), true.into());
    }
    match chart {
        ChartLocation::Repository { url, name } => {
            o.insert("chart_repo_url".into(), url.clone().into());
            o.insert("chart_version".into(), version.into());
            Ok(name.clone())
        }
        ChartLocation::Oci(reference) => {
            o.insert("chart_version".into(), version.into());
            Ok(reference.clone())
        }
        ChartLocation::Git { url, .. } => local
            .map(str::to_string)
            .ok_or_else(|| format!("the chart from {url} was not checked out")),
    }
}

fn action_op(
    (action, target, release): (Action, &Target, &str),
    w: &Wanted,
    labels: Map<String, Value>,
    local: Option<&str>,
) -> Result<Op, String> {
    let mut o = action_options(&w.settings);
    o.insert("namespace".into(), target.namespace.clone().into());
    o.insert("wait_for_jobs".into(), w.settings.wait_for_jobs.into());
    // Server-side apply takes fields others changed behind Helm's back, as Flux does.
    o.insert("force_conflicts".into(), true.into());
    o.insert("labels".into(), Value::Object(labels));
    let chart = ChartRef::Reference(chart_reference(
        &w.chart,
        &w.version,
        w.plain_http,
        local,
        &mut o,
    )?);
    let rollback_on_failure = if action == Action::Install {
        o.insert("create_namespace".into(), w.install.create_namespace.into());
        o.insert("skip_crds".into(), w.install.skip_crds.into());
        if w.install.replace {
            o.insert("replace".into(), true.into());
        }
        w.install.rollback_on_failure
    } else {
        o.insert("skip_crds".into(), w.upgrade.skip_crds.into());
        o.insert("cleanup_on_fail".into(), w.upgrade.cleanup_on_fail.into());
        if w.upgrade.force {
            o.insert("force_replace".into(), true.into());
        }
        if w.upgrade.max_history > 0 {
            o.insert("max_history".into(), w.upgrade.max_history.into());
        }
        w.upgrade.rollback_on_failure
    };
    o.insert("rollback_on_failure".into(), rollback_on_failure.into());
    if rollback_on_failure && !w.settings.wait_ready {
        // Rolling back a failure needs a wait to see one; Helm's CLI turns `--atomic` into `--wait` too.
        o.insert("wait".into(), "watcher".into());
    }
    let (target, release, values, options) = (
        target.clone(),
        release.to_string(),
        w.values.clone(),
        Value::Object(o),
    );
    let auth = w.auth.clone();
    Ok(if action == Action::Install {
        Op::Install {
            target,
            chart,
            release,
            values,
            options,
            auth,
        }
    } else {
        Op::Upgrade {
            target,
            chart,
            release,
            values,
            options,
            auth,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wanted(values: Value) -> Wanted {
        Wanted {
            chart: ChartLocation::Repository {
                url: "http://127.0.0.1:1/charts".into(),
                name: "demo".into(),
            },
            version: "0.1.0".into(),
            values,
            settings: Settings {
                timeout_seconds: 300,
                wait_ready: false,
                wait_for_jobs: false,
                disable_hooks: false,
            },
            install: InstallSettings::default(),
            upgrade: UpgradeSettings::default(),
            plain_http: false,
            auth: None,
        }
    }

    fn revision(status: &str, digest: Option<&str>, updated: &str) -> StoredRevision {
        StoredRevision {
            revision: 3,
            status: status.into(),
            digest: digest.map(str::to_string),
            updated: updated.into(),
            ..Default::default()
        }
    }

    fn labels() -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(DIGEST_LABEL.into(), "d".into());
        m
    }

    fn stamped(owner: Option<&str>) -> StoredRevision {
        StoredRevision {
            owner: owner.map(str::to_string),
            ..revision("deployed", Some("d"), "")
        }
    }

    #[test]
    fn a_release_is_acted_on_only_for_the_object_its_newest_stamp_names() {
        let me = Owner::new(
            "omni.texashpc.com",
            "OmniHelmRelease",
            "team",
            "web",
            "uid-1",
            false,
        );
        let other = Owner::new(
            "omni.texashpc.com",
            "OmniHelmRelease",
            "team",
            "api",
            "uid-2",
            false,
        );
        let mine = Some(me.identity.as_str());
        assert_eq!(ownership(&[], &me, "apps/web").unwrap(), Ownership::Owned);
        assert_eq!(
            ownership(&[stamped(mine)], &me, "apps/web").unwrap(),
            Ownership::Owned
        );
        // A rollback revision without a stamp of its own: the older stamp decides.
        assert_eq!(
            ownership(&[stamped(None), stamped(mine)], &me, "apps/web").unwrap(),
            Ownership::Owned
        );
        let refused = ownership(&[stamped(mine)], &other, "apps/web").unwrap_err();
        assert!(
            matches!(refused, ReleaseError::NotOwned { unowned: false, .. }),
            "{refused}"
        );
        // Re-created under its name (a new UID), the object is still the owner; the same name in another
        // namespace or of another kind is not.
        let again = Owner::new(
            "omni.texashpc.com",
            "OmniHelmRelease",
            "team",
            "web",
            "uid-9",
            false,
        );
        assert_eq!(
            ownership(&[stamped(mine)], &again, "apps/web").unwrap(),
            Ownership::Owned
        );
        for stranger in [
            Owner::new(
                "omni.texashpc.com",
                "OmniHelmRelease",
                "team-b",
                "web",
                "uid-1",
                false,
            ),
            Owner::new(
                "example.com",
                "OmniHelmRelease",
                "team",
                "web",
                "uid-1",
                false,
            ),
        ] {
            assert!(ownership(&[stamped(mine)], &stranger, "apps/web").is_err());
        }
        // Nobody's release: refused with the adoption step named, adopted only when asked, never someone else's.
        let unowned = ownership(&[stamped(None)], &me, "apps/web").unwrap_err();
        assert!(
            unowned
                .to_string()
                .contains("omni.texashpc.com/adopt-release=apps/web"),
            "{unowned}"
        );
        let adopting = Owner {
            adopt: true,
            ..me.clone()
        };
        assert_eq!(
            ownership(&[stamped(None)], &adopting, "apps/web").unwrap(),
            Ownership::Adopt
        );
        let adopting_other = Owner {
            adopt: true,
            ..other
        };
        assert!(ownership(&[stamped(mine)], &adopting_other, "apps/web").is_err());
    }

    fn started(step: Step) -> Option<Action> {
        match step {
            Step::Start { action, .. } => Some(action),
            Step::Report(_) => None,
        }
    }

    #[test]
    fn exact_versions_are_told_from_constraints() {
        for exact in ["1.2.3", "v1.2.3", "0.1.0-rc.1+build.5"] {
            assert!(is_exact_version(exact), "{exact}");
        }
        for constraint in [
            ">=1.2 <2",
            "~1.4",
            "^1",
            "1.x",
            "*",
            "1.2",
            ">= 1.0.0, < 2.0.0",
            "1.0.0 || 2.0.0",
        ] {
            assert!(!is_exact_version(constraint), "{constraint}");
        }
    }

    #[test]
    fn the_digest_ignores_key_order_and_options_but_not_values_or_version() {
        let a = wanted(json!({"a": 1, "b": {"c": 2, "d": 3}}));
        let mut b = wanted(json!({"b": {"d": 3, "c": 2}, "a": 1}));
        b.settings.timeout_seconds = 10;
        b.settings.wait_ready = true;
        assert_eq!(a.digest(), b.digest());
        assert_eq!(a.digest().len(), 40);
        let c = wanted(json!({"a": 2, "b": {"c": 2, "d": 3}}));
        assert_ne!(a.digest(), c.digest());
        let mut d = a.clone();
        d.version = "0.2.0".into();
        assert_ne!(a.digest(), d.digest());
        let mut e = a.clone();
        e.chart = ChartLocation::Oci("oci://127.0.0.1:1/charts/demo".into());
        assert_ne!(a.digest(), e.digest());
    }

    #[test]
    fn an_action_runs_only_when_the_release_is_missing_failed_or_made_from_something_else() {
        let s = wanted(json!({})).settings;
        let entry = Entry::default();
        assert_eq!(
            started(decide_ensure(&entry, None, "d1", &s)),
            Some(Action::Install)
        );
        let deployed = revision("deployed", Some("d1"), "");
        assert_eq!(
            started(decide_ensure(&entry, Some(&deployed), "d1", &s)),
            None
        );
        assert_eq!(
            started(decide_ensure(&entry, Some(&deployed), "d2", &s)),
            Some(Action::Upgrade)
        );
        let foreign = revision("deployed", None, "");
        assert_eq!(
            started(decide_ensure(&entry, Some(&foreign), "d1", &s)),
            Some(Action::Upgrade)
        );
        let failed = revision("failed", Some("d1"), "");
        assert_eq!(
            started(decide_ensure(&entry, Some(&failed), "d1", &s)),
            Some(Action::Upgrade)
        );
        let gone = revision("uninstalled", Some("d1"), "");
        assert_eq!(
            started(decide_ensure(&entry, Some(&gone), "d1", &s)),
            Some(Action::Install)
        );
    }

    #[test]
    fn a_failure_waits_its_turn_unless_what_is_wanted_changed() {
        let s = wanted(json!({})).settings;
        let entry = Entry {
            running: None,
            last: Some(Outcome {
                id: "1-1".into(),
                action: Action::Upgrade,
                revision: 3,
                error: Some("boom".into()),
                started: String::new(),
                finished: String::new(),
                digest: "d1".into(),
            }),
            failures: 1,
            retry_at: Some(Instant::now() + Duration::from_secs(60)),
        };
        let failed = revision("failed", Some("d1"), "");
        assert!(matches!(
            decide_ensure(&entry, Some(&failed), "d1", &s),
            Step::Report(Progress::RetryAfter(_))
        ));
        assert_eq!(
            started(decide_ensure(&entry, Some(&failed), "d2", &s)),
            Some(Action::Upgrade)
        );
    }

    #[test]
    fn a_pending_revision_is_recovered_only_when_older_than_its_timeout_allows() {
        let s = wanted(json!({})).settings;
        let entry = Entry::default();
        let fresh = revision(
            "pending-upgrade",
            Some("d1"),
            &jiff::Timestamp::now().to_string(),
        );
        assert!(matches!(
            decide_ensure(&entry, Some(&fresh), "d1", &s),
            Step::Report(Progress::Running(Action::Upgrade))
        ));
        let old = revision("pending-install", Some("d1"), "2020-01-01T00:00:00Z");
        match decide_ensure(&entry, Some(&old), "d1", &s) {
            Step::Start {
                action: Action::Upgrade,
                recover: Some(why),
            } => assert!(why.contains("pending-install interrupted"), "{why}"),
            _ => panic!("an abandoned pending revision must be recovered"),
        }
    }

    #[test]
    fn atomic_without_wait_waits_for_readiness_as_helms_cli_does() {
        let mut w = wanted(json!({"x": 1}));
        w.install.rollback_on_failure = true;
        let target = Target {
            kubeconfig: String::new(),
            namespace: "apps".into(),
        };
        let Op::Install { options, .. } =
            action_op((Action::Install, &target, "r"), &w, labels(), None).unwrap()
        else {
            panic!("an install")
        };
        assert_eq!(options["wait"], "watcher");
        assert_eq!(options["rollback_on_failure"], true);
        assert_eq!(options["chart_repo_url"], "http://127.0.0.1:1/charts");
        assert_eq!(options["labels"][DIGEST_LABEL], "d");
        w.upgrade.max_history = 5;
        let Op::Upgrade { options, .. } =
            action_op((Action::Upgrade, &target, "r"), &w, labels(), None).unwrap()
        else {
            panic!("an upgrade")
        };
        assert_eq!(options["max_history"], 5);
        assert_eq!(options["wait"], "hookOnly");
        assert!(options.get("create_namespace").is_none());
    }
}
