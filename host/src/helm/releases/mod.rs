//! Releases converged in the background. A plugin reads a release and what this host runs or ran for it
//! (`helm.observe`), and starts one action at a time (`helm.start`); the action runs on the [`HelmEngine`]
//! without the call waiting for it ([`job`]), and when it ends the object that asked is woken so its plugin sees
//! the outcome at once.
//!
//! Rules:
//! * one action at a time per release: a start while another runs is refused as busy;
//! * a step that cannot apply to the release as it stands (a rollback to a revision Helm does not keep, an
//!   unlock of a release that is not pending) is refused before anything runs;
//! * a release belongs to the object that made it ([`ownership`]): every call reads the release's owner stamp
//!   first and acts only for that object.

mod job;
mod ownership;
mod planned;
mod request;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::HelmEngine;
use super::drift::{self, DriftError, Drifted, Ignore};
use super::inventory::{self, Owned};
use super::protocol::{ChartAuth, Op};
use super::storage::{self, OWNER_LABEL, StorageError, StoredRevision};
use job::{Job, chart_reference, engine_message, now_rfc3339};
pub use ownership::{ADOPT_ANNOTATION, Owner};
use ownership::{Ownership, ownership};
pub use planned::{HelmPlan, PlannedManifests, PlannedStep};
pub use request::{
    Action, ApplyMethod, ApplySettings, ChartLocation, InstallSettings, Propagation,
    RollbackSettings, Settings, StepRequest, TestSettings, UninstallSettings, UpgradeSettings,
    Wanted, is_exact_version, source_digest, wanted_digest,
};

/// Added to an action's Helm timeout for the engine's deadline: Helm stops first and reports why.
const DEADLINE_MARGIN: Duration = Duration::from_secs(60);
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

/// A workload cluster: who it is (the kubeconfig Secret it is reached through), a client for reading Helm's
/// storage, and the kubeconfig for the Helm worker.
#[derive(Clone)]
pub struct Cluster {
    /// `namespace/name/key` of the management-cluster kubeconfig Secret, and `#as=USER` when impersonating.
    pub id: String,
    /// Impersonating [`Cluster::as_user`] when set.
    pub client: kube::Client,
    pub kubeconfig: Arc<str>,
    /// The user every request impersonates (`system:serviceaccount:NS:NAME`); None: the kubeconfig's identity.
    pub as_user: Option<String>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The kubeconfig is a credential: never in a debug print.
        f.debug_struct("Cluster")
            .field("id", &self.id)
            .field("as_user", &self.as_user)
            .finish_non_exhaustive()
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
    /// It ended because [`Releases::cancel`] stopped it.
    pub cancelled: bool,
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
    /// What the latest revision owns ([`inventory`]) when it is deployed and its objects resolved; None otherwise.
    pub inventory: Option<Arc<Vec<Owned>>>,
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

/// What this host remembers of one release.
#[derive(Default)]
struct Entry {
    running: Option<Running>,
    last: Option<Outcome>,
    /// Set when the running action is to stop ([`Releases::cancel`]); shared with its job.
    cancelled: Arc<AtomicBool>,
}

type Key = (String, String, String);

/// What chart sources answered lately, each answer kept for [`RESOLVED_FOR`] (then asked again), at most
/// [`MAX_ENTRIES`] before the stale ones are dropped.
struct Recent<V> {
    answers: Mutex<HashMap<String, (Instant, V)>>,
}

impl<V> Default for Recent<V> {
    fn default() -> Self {
        Recent {
            answers: Mutex::default(),
        }
    }
}

impl<V: Clone> Recent<V> {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Instant, V)>> {
        self.answers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The answer to `key`, while it is recent.
    fn get(&self, key: &str) -> Option<V> {
        self.lock()
            .get(key)
            .filter(|(at, _)| at.elapsed() < RESOLVED_FOR)
            .map(|(_, v)| v.clone())
    }

    fn put(&self, key: String, value: V) {
        let mut answers = self.lock();
        if answers.len() > MAX_ENTRIES {
            answers.retain(|_, (at, _)| at.elapsed() < RESOLVED_FOR);
        }
        answers.insert(key, (Instant::now(), value));
    }
}

/// An inventory and the fingerprint of the revision it was computed from.
type Fingerprinted = (String, Arc<Vec<Owned>>);

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
    /// A plan's: the actions are recorded there instead of run.
    plan: Option<Arc<HelmPlan>>,
    /// Each release's inventory with the [`inventory::fingerprint`] of the revision it was computed from.
    inventories: Mutex<HashMap<Key, Fingerprinted>>,
    /// Chart content digests read lately: (chart location, version, credentials) → (when, digest).
    contents: Recent<Option<String>>,
    /// Chart verifications made lately: (reference and version, trusted keys) → (when, the signing key's name).
    verified: Recent<String>,
    /// Values files read lately from chart archives: (chart, version, files, credentials) → (when, merged values).
    values_files: Recent<Value>,
}

impl std::fmt::Debug for Releases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Releases")
            .field("available", &self.engine.is_ok())
            .finish_non_exhaustive()
    }
}

/// What [`Releases::start`] took the release for: a job to run, or a plan's record.
enum Claimed {
    Job(Box<Job>),
    Planned(Arc<HelmPlan>, Running),
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
            plan: None,
            inventories: Mutex::default(),
            contents: Recent::default(),
            verified: Recent::default(),
            values_files: Recent::default(),
        }
    }

    /// Releases for a plan: observed as they stand, versions resolved through `engine`, and every action
    /// recorded in `plan` instead of run.
    pub fn planning(engine: Option<Arc<dyn HelmEngine>>, why: &str, plan: Arc<HelmPlan>) -> Self {
        Releases {
            plan: Some(plan),
            ..Self::new(engine, why)
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
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
        entry.cancelled = Arc::default();
        Ok(Job {
            engine,
            entries: self.entries.clone(),
            key: key.clone(),
            cluster: cluster.clone(),
            owner: owner.clone(),
            running,
            wake,
            cancelled: entry.cancelled.clone(),
        })
    }

    /// Cancels install or upgrade `id` while it runs for the release: the job takes no further step, and the
    /// Helm action it runs stops through its context (Helm records the revision failed). It ends with
    /// [`Outcome::cancelled`] set. False when `id` is not the install or upgrade running (it ended already, or is
    /// another action): rollbacks, uninstalls and tests are never cut short.
    pub async fn cancel(
        &self,
        cluster: &Cluster,
        namespace: &str,
        name: &str,
        owner: &Owner,
        id: &str,
    ) -> Result<bool, ReleaseError> {
        let revisions = storage::read(&cluster.client, namespace, name).await?;
        self.check_owner(cluster, namespace, name, &revisions, owner)
            .await?;
        let key = (cluster.id.clone(), namespace.to_string(), name.to_string());
        {
            let entries = self.lock();
            let Some(entry) = entries.get(&key) else {
                return Ok(false);
            };
            let runs = entry.running.as_ref().is_some_and(|r| {
                r.id == id && matches!(r.action, Action::Install | Action::Upgrade)
            });
            if !runs {
                return Ok(false);
            }
            entry.cancelled.store(true, Ordering::SeqCst);
        }
        if let Ok(engine) = &self.engine {
            engine.cancel(&job::engine_release(&key)).await;
        }
        Ok(true)
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
        let inventory = self.inventory(cluster, &key, revisions.first()).await;
        let entries = self.lock();
        let entry = entries.get(&key);
        Ok(Observation {
            revisions,
            running: entry.and_then(|e| e.running.clone()),
            last: entry.and_then(|e| e.last.clone()),
            inventory,
        })
    }

    /// What the latest revision owns, when it is deployed: computed once per revision (discovery resolves its
    /// kinds), then answered from memory. None when it is not deployed or the cluster did not resolve its kinds
    /// (the object keeps the inventory it reported; the next observation tries again).
    async fn inventory(
        &self,
        cluster: &Cluster,
        key: &Key,
        latest: Option<&StoredRevision>,
    ) -> Option<Arc<Vec<Owned>>> {
        let latest = latest.filter(|r| r.status == "deployed")?;
        let release = latest.decoded.0.as_ref()?;
        let fingerprint = inventory::fingerprint(release);
        let lock = || self.inventories.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((seen, owned)) = lock().get(key)
            && *seen == fingerprint
        {
            return Some(owned.clone());
        }
        match inventory::of_release(&cluster.client, &key.1, release).await {
            Ok(owned) => {
                let owned = Arc::new(owned);
                let mut cache = lock();
                if cache.len() >= MAX_ENTRIES {
                    cache.clear();
                }
                cache.insert(key.clone(), (fingerprint, owned.clone()));
                Some(owned)
            }
            Err(e) => {
                tracing::debug!(release = %key.2, namespace = %key.1, "the release's inventory: {e}");
                None
            }
        }
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
        let mut request = request.resolving_auto(latest.and_then(|r| r.server_side_apply));
        let digest = match &mut request {
            StepRequest::Install(w) | StepRequest::Upgrade(w) => {
                let digest = w.digest(latest);
                // The content the revision is labelled with is the one the digest took (an unknown one is the
                // latest's); none when the digest left it out (a revision made before content was recorded).
                let alone = source_digest(
                    &w.chart,
                    &w.version,
                    &w.values,
                    w.post_render.as_ref(),
                    None,
                );
                w.content = w
                    .content
                    .take()
                    .or_else(|| latest.and_then(|r| r.chart_digest.clone()))
                    .filter(|_| digest != alone);
                digest
            }
            _ => String::new(),
        };
        let key = (cluster.id.clone(), namespace.to_string(), name.to_string());
        // The table is locked only in this block: a plan's rendering below awaits.
        let claimed = {
            let mut entries = self.lock();
            if entries.len() >= MAX_ENTRIES {
                // Releases that come and go must not grow the table forever: the idle ones are forgotten.
                entries.retain(|_, e| e.running.is_some());
            }
            let entry = entries.entry(key.clone()).or_default();
            if let Some(r) = &entry.running {
                return Err(ReleaseError::Busy(r.clone()));
            }
            match &self.plan {
                Some(plan) => {
                    // Shown as running to the plan's later passes, so a plugin waits on it as it would on a
                    // real one.
                    let running = Running {
                        id: format!("plan-{}", plan.len() + 1),
                        action: request.action(),
                        started: now_rfc3339(),
                        digest: digest.clone(),
                    };
                    entry.running = Some(running.clone());
                    Claimed::Planned(plan.clone(), running)
                }
                None => Claimed::Job(Box::new(self.claim(
                    entry,
                    request.action(),
                    &key,
                    (cluster, owner),
                    &digest,
                    wake,
                )?)),
            }
        };
        let job = match claimed {
            Claimed::Job(job) => job,
            Claimed::Planned(plan, running) => {
                let mut step = PlannedStep::new(&cluster.id, namespace, name, &request, latest);
                if let (true, StepRequest::Install(w) | StepRequest::Upgrade(w)) =
                    (plan.renders(), &request)
                {
                    step.manifests = Some(match &self.engine {
                        Ok(engine) => {
                            let action = request.action();
                            planned::manifests(&**engine, cluster, (namespace, name), action, w)
                                .await
                        }
                        Err(why) => PlannedManifests {
                            stored: None,
                            rendered: Err(why.clone()),
                        },
                    });
                }
                plan.record(step);
                return Ok(running);
            }
        };
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

    /// The content digest `chart`'s source publishes for `version` ([`super::chart_digest`]), read again after
    /// [`RESOLVED_FOR`] as version constraints are; None when it publishes none or did not answer (then the
    /// digest takes the one the latest revision recorded, so a source that fails to answer is no new chart).
    pub async fn content_digest(
        &self,
        chart: &ChartLocation,
        version: &str,
        plain_http: bool,
        auth: Option<&ChartAuth>,
    ) -> Option<String> {
        if matches!(chart, ChartLocation::Git { .. }) {
            return None;
        }
        let key = format!("{chart:?}\0{version}\0{}", ChartAuth::fingerprint(auth));
        if let Some(digest) = self.contents.get(&key) {
            return digest;
        }
        let read = match chart {
            ChartLocation::Repository { url, name } => {
                super::chart_digest::of_repository(url, name, version, auth).await
            }
            ChartLocation::Oci(reference) => {
                super::chart_digest::of_oci(reference, version, plain_http, auth)
                    .await
                    .map(Some)
            }
            ChartLocation::Git { .. } => Ok(None),
        };
        match read {
            Ok(digest) => {
                self.contents.put(key, digest.clone());
                digest
            }
            Err(e) => {
                tracing::debug!(version, "the chart's content digest: {e}");
                None
            }
        }
    }

    /// The values of `names` in the archive of `chart` at `version` ([`super::values_files`]), merged in order;
    /// read again after [`RESOLVED_FOR`] (a chart pushed again under its version has new files).
    pub async fn values_files(
        &self,
        (chart, version): (&ChartLocation, &str),
        (names, ignore_missing): (&[String], bool),
        plain_http: bool,
        auth: Option<&ChartAuth>,
    ) -> Result<Value, String> {
        let key = format!(
            "{chart:?}\0{version}\0{names:?}\0{ignore_missing}\0{}",
            ChartAuth::fingerprint(auth)
        );
        if let Some(values) = self.values_files.get(&key) {
            return Ok(values);
        }
        let archive = match chart {
            ChartLocation::Repository { url, name } => {
                super::values_files::repository_archive(url, name, version, auth).await?
            }
            ChartLocation::Oci(reference) => {
                super::values_files::oci_archive(reference, version, plain_http, auth).await?
            }
            ChartLocation::Git { .. } => {
                return Err("valuesFiles are read from repository and OCI charts only".into());
            }
        };
        let values = super::values_files::merged(&archive, names, ignore_missing)?;
        self.values_files.put(key, values.clone());
        Ok(values)
    }

    /// The key among `keys` that signed OCI chart `reference` at `version` ([`super::verify::cosign`]): a
    /// verification holds for [`RESOLVED_FOR`] (the tag is read again after it), a refusal is never kept.
    pub async fn verify_chart(
        &self,
        reference: &str,
        version: &str,
        plain_http: bool,
        auth: Option<&ChartAuth>,
        (fingerprint, keys): (&str, &crate::registry::TrustedKeys),
    ) -> Result<String, String> {
        let key = format!(
            "{reference}:{version}\0{}\0{fingerprint}",
            ChartAuth::fingerprint(auth)
        );
        if let Some(signer) = self.verified.get(&key) {
            return Ok(signer);
        }
        let signer = super::verify::cosign(reference, version, plain_http, auth, keys).await?;
        self.verified.put(key, signer.clone());
        Ok(signer)
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
