//! One background action for one release: the request turned into the Helm worker's operation, run on the
//! engine, and its outcome recorded where the next `observe` reads it, after which the object that asked is woken.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::{
    Action, ApplyMethod, ChartLocation, Cluster, DEADLINE_MARGIN, Entry, Key, Outcome, Owner,
    Propagation, RESOLVE_DEADLINE, RollbackSettings, Running, Settings, StepRequest,
    UninstallSettings, Wake, Wanted,
};
use crate::helm::crds;
use crate::helm::drift::{self, Ignore};
use crate::helm::health::{self, HealthError};
use crate::helm::protocol::{ChartRef, Op, Target};
use crate::helm::storage::{self, CHART_DIGEST_LABEL, DIGEST_LABEL};
use crate::helm::{EngineError, HelmEngine};

/// One background action for one release.
pub(super) struct Job {
    pub(super) engine: Arc<dyn HelmEngine>,
    pub(super) entries: Arc<Mutex<HashMap<Key, Entry>>>,
    pub(super) key: Key,
    pub(super) cluster: Cluster,
    /// Whom the revisions this job makes are stamped for.
    pub(super) owner: Owner,
    pub(super) running: Running,
    pub(super) wake: Wake,
    /// Set when the action is cancelled ([`super::Releases::cancel`]): no further step starts.
    pub(super) cancelled: Arc<AtomicBool>,
}

impl Job {
    fn target(&self) -> Target {
        Target {
            kubeconfig: self.cluster.kubeconfig.to_string(),
            namespace: self.key.1.clone(),
            as_user: self.cluster.as_user.clone(),
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
        engine_release(&self.key)
    }

    /// An error when the action was cancelled: checked before each engine step, since a cancel reaches only the
    /// step the engine has (a cancel between two steps is seen here).
    fn go_on(&self) -> Result<(), String> {
        if self.cancelled.load(Ordering::SeqCst) {
            Err(EngineError::Cancelled.to_string())
        } else {
            Ok(())
        }
    }

    /// Installs or upgrades the release to `wanted`.
    async fn converge(self, action: Action, wanted: Wanted) {
        let result = async {
            let replace_crds = match action {
                Action::Install => wanted.install.replace_crds,
                _ => wanted.upgrade.replace_crds,
            };
            self.go_on()?;
            let local = self.git_checkout(&wanted).await?;
            if replace_crds {
                self.go_on()?;
                self.replace_crds(&wanted, local.as_deref()).await?;
            }
            self.go_on()?;
            let mut labels = self.release_labels();
            if let Some(content) = &wanted.content {
                labels.insert(CHART_DIGEST_LABEL.into(), content.clone().into());
            }
            let op = action_op(
                (action, &self.target(), &self.key.2),
                &wanted,
                labels,
                local.as_deref(),
            )?;
            let started = Instant::now();
            let deadline = wanted.settings.timeout() + DEADLINE_MARGIN;
            let done = self
                .engine
                .run(op, Some(self.release()), deadline)
                .await
                .map_err(|e| engine_message(&e))?;
            if wanted.settings.wait_ready && !wanted.health.is_empty() {
                self.health_check(action, &wanted, started + wanted.settings.timeout())
                    .await?;
            }
            Ok(done)
        }
        .await;
        self.finish(action, result);
    }

    /// Flux's `healthCheckExprs`, after Helm's wait succeeded: the new revision's objects of the checked kinds
    /// must be current by `deadline` (the action's timeout, counted from its start). A failed check marks the
    /// revision failed, as Helm marks one whose wait failed, so the next look sees a failed action and
    /// remediation follows; with `--atomic` the release is then rolled back (an upgrade) or uninstalled (an
    /// install), as Helm's atomic does after a failed wait.
    async fn health_check(
        &self,
        action: Action,
        w: &Wanted,
        deadline: Instant,
    ) -> Result<(), String> {
        let (client, namespace, name) = (&self.cluster.client, &self.key.1, &self.key.2);
        let (latest, manifest) = storage::latest_with_manifest(client, namespace, name)
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "the release is gone".to_string())?;
        let cancelled = self.cancelled.clone();
        let stop = move || cancelled.load(Ordering::SeqCst);
        let why = match health::wait(client, namespace, &manifest, &w.health, deadline, stop).await
        {
            Ok(()) => return Ok(()),
            // A newer spec made the action obsolete: the revision stays as Helm left it, the upgrade follows.
            Err(HealthError::Cancelled) => return Err(EngineError::Cancelled.to_string()),
            Err(e) => e.to_string(),
        };
        storage::mark_failed(client, namespace, &latest.secret, &why)
            .await
            .map_err(|e| format!("{why}; marking revision {} failed: {e}", latest.revision))?;
        tracing::warn!(release = %self.release(), revision = latest.revision, error = %why,
            "a health check failed; the revision is marked failed");
        let atomic = match action {
            Action::Install => w.install.rollback_on_failure,
            _ => w.upgrade.rollback_on_failure,
        };
        if !atomic {
            return Err(why);
        }
        // What Helm's atomic does after a failed wait: the previous revision back, or no release at all.
        let (op, done) = if action == Action::Install {
            let u = UninstallSettings {
                settings: w.settings,
                keep_history: false,
                propagation: Propagation::Background,
            };
            (self.uninstall_op(&u), "uninstalled")
        } else {
            let r = RollbackSettings {
                revision: 0,
                settings: w.settings,
                force: w.upgrade.force,
                cleanup_on_fail: w.upgrade.cleanup_on_fail,
                max_history: w.upgrade.max_history,
                method: w.apply.method,
            };
            (self.rollback_op(&r), "rolled back")
        };
        let timeout = w.settings.timeout() + DEADLINE_MARGIN;
        self.engine
            .run(op, Some(self.release()), timeout)
            .await
            .map_err(|e| format!("{why}; then, as atomic is set: {}", engine_message(&e)))?;
        // Helm's own wording for an atomic action that failed.
        Err(format!(
            "release {name} failed, and has been {done} due to atomic being set: {why}"
        ))
    }

    /// A Git chart's directory at the wanted commit, written out by the worker; None for other charts.
    async fn git_checkout(&self, w: &Wanted) -> Result<Option<String>, String> {
        git_checkout(&*self.engine, w, Some(self.release())).await
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

    /// Helm's uninstall of the release, as `u` says.
    fn uninstall_op(&self, u: &UninstallSettings) -> Op {
        let mut options = action_options(&u.settings);
        options.insert("ignore_not_found".into(), true.into());
        options.insert("keep_history".into(), u.keep_history.into());
        options.insert("deletion_propagation".into(), u.propagation.name().into());
        Op::Uninstall {
            target: self.target(),
            release: self.key.2.clone(),
            options: Value::Object(options),
        }
    }

    /// Helm's rollback of the release, as `r` says.
    fn rollback_op(&self, r: &RollbackSettings) -> Op {
        let mut o = action_options(&r.settings);
        o.insert("version".into(), r.revision.into());
        o.insert("wait_for_jobs".into(), r.settings.wait_for_jobs.into());
        apply_mode(&mut o, Action::Rollback, r.method, r.force);
        o.insert("cleanup_on_fail".into(), r.cleanup_on_fail.into());
        if r.max_history > 0 {
            o.insert("max_history".into(), r.max_history.into());
        }
        Op::Rollback {
            target: self.target(),
            release: self.key.2.clone(),
            options: Value::Object(o),
        }
    }

    async fn uninstall(self, u: UninstallSettings) {
        let op = self.uninstall_op(&u);
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
    pub(super) async fn step(self, request: StepRequest) {
        match request {
            StepRequest::Install(wanted) => self.converge(Action::Install, *wanted).await,
            StepRequest::Upgrade(wanted) => self.converge(Action::Upgrade, *wanted).await,
            StepRequest::Uninstall(u) => self.uninstall(u).await,
            StepRequest::Rollback(r) => {
                let op = self.rollback_op(&r);
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
            entry.running = None;
            // A cancelled action that failed failed because it was cancelled (one that finished first did not).
            let cancelled = error.is_some() && self.cancelled.load(Ordering::SeqCst);
            entry.last = Some(Outcome {
                id: self.running.id.clone(),
                action,
                revision,
                error,
                started: self.running.started.clone(),
                finished: now_rfc3339(),
                digest: self.running.digest.clone(),
                cancelled,
            });
        }
        (self.wake)();
    }
}

/// How a release is named to the engine (its per-release serialisation and cancels): the cluster and the release.
pub(super) fn engine_release((cluster, namespace, name): &Key) -> String {
    format!("{cluster}:{namespace}/{name}")
}

/// Now, RFC 3339 to the second.
pub(super) fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The engine's failure as the release's error: Helm's own message, or what happened to the worker.
pub(super) fn engine_message(e: &EngineError) -> String {
    e.to_string()
}

/// The options every action takes, in libhelm_c's names.
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

/// How Helm writes the release's objects: server-side apply taking the fields others changed behind Helm's back
/// (conflicts forced, as Flux does), client-side merge patches, or whatever the current revision used (`auto`,
/// Helm's default for upgrades and rollbacks; installs default to server-side). `force` (`upgrade.force`,
/// `rollback.force`) replaces each object whole, which Helm 4 does only client-side ("cannot use server-side apply
/// and force replace together"): the capability has made a forced step client-side. An install takes
/// `server_side_apply` as a boolean, upgrades and rollbacks as a string.
fn apply_mode(o: &mut Map<String, Value>, action: Action, method: ApplyMethod, force: bool) {
    let flag = |on: bool| -> Value {
        match action {
            Action::Install => on.into(),
            _ => if on { "true" } else { "false" }.into(),
        }
    };
    match method {
        ApplyMethod::ClientSide => {
            o.insert("server_side_apply".into(), flag(false));
        }
        ApplyMethod::ServerSide => {
            o.insert("server_side_apply".into(), flag(true));
            o.insert("force_conflicts".into(), true.into());
        }
        ApplyMethod::Auto => {
            o.insert("force_conflicts".into(), true.into());
        }
    }
    if force {
        o.insert("force_replace".into(), true.into());
        o.insert("server_side_apply".into(), flag(false));
        o.remove("force_conflicts");
    }
}

/// A Git chart's directory at the wanted commit, written out by the worker; None for other charts.
pub(super) async fn git_checkout(
    engine: &dyn HelmEngine,
    w: &Wanted,
    release: Option<String>,
) -> Result<Option<String>, String> {
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
    let answer = engine
        .run(op, release, RESOLVE_DEADLINE)
        .await
        .map_err(|e| engine_message(&e))?;
    answer["chart"]
        .as_str()
        .map(|dir| Some(dir.to_string()))
        .ok_or_else(|| "the worker named no chart directory".to_string())
}

/// Where the worker's Git checkouts live (a commit's chart directory is kept: it never changes).
fn git_cache() -> std::path::PathBuf {
    std::env::temp_dir().join("omni-operator-git")
}

/// The reference Helm loads the chart by, with the options that complete it: a repository chart's name with
/// `chart_repo_url` and `chart_version`, an OCI reference with `chart_version`, or a Git chart's directory
/// (`local`, written out before).
pub(super) fn chart_reference(
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

pub(super) fn action_op(
    (action, target, release): (Action, &Target, &str),
    w: &Wanted,
    labels: Map<String, Value>,
    local: Option<&str>,
) -> Result<Op, String> {
    let mut o = action_options(&w.settings);
    o.insert("namespace".into(), target.namespace.clone().into());
    o.insert("wait_for_jobs".into(), w.settings.wait_for_jobs.into());
    let force = action == Action::Upgrade && w.upgrade.force;
    apply_mode(&mut o, action, w.apply.method, force);
    o.insert("take_ownership".into(), w.apply.take_ownership.into());
    o.insert(
        "skip_schema_validation".into(),
        w.apply.skip_schema_validation.into(),
    );
    o.insert(
        "disable_openapi_validation".into(),
        w.apply.skip_openapi_validation.into(),
    );
    o.insert("labels".into(), Value::Object(labels));
    if let Some(spec) = &w.post_render {
        o.insert(crate::helm::POST_RENDER_OPTION.into(), spec.clone());
    }
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
        if w.upgrade.reuse_values {
            o.insert("reuse_values".into(), true.into());
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
    use crate::helm::releases::ApplySettings;
    use crate::helm::releases::request::tests::wanted;

    /// The options of an install or upgrade of `w` into namespace `apps`.
    fn apply_options(w: &Wanted, action: Action) -> Value {
        let target = Target {
            kubeconfig: String::new(),
            namespace: "apps".into(),
            as_user: None,
        };
        match action_op((action, &target, "r"), w, labels(), None).unwrap() {
            Op::Install { options, .. } | Op::Upgrade { options, .. } => options,
            _ => panic!("an install or upgrade"),
        }
    }

    fn labels() -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(DIGEST_LABEL.into(), "d".into());
        m
    }

    #[test]
    fn atomic_without_wait_waits_for_readiness_as_helms_cli_does() {
        let mut w = wanted(json!({"x": 1}));
        w.install.rollback_on_failure = true;
        let target = Target {
            kubeconfig: String::new(),
            namespace: "apps".into(),
            as_user: None,
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

    #[test]
    fn a_forced_upgrade_replaces_without_server_side_apply_and_others_apply_forcing_conflicts() {
        let mut w = wanted(json!({}));
        let options = apply_options;
        let plain = options(&w, Action::Upgrade);
        assert_eq!(plain["force_conflicts"], true);
        assert!(plain.get("force_replace").is_none() && plain.get("server_side_apply").is_none());
        w.upgrade.force = true;
        let forced = options(&w, Action::Upgrade);
        assert_eq!(forced["force_replace"], true);
        assert_eq!(forced["server_side_apply"], "false");
        assert!(forced.get("force_conflicts").is_none(), "{forced}");
        // Force is an upgrade's setting: an install applies as always.
        assert_eq!(options(&w, Action::Install)["force_conflicts"], true);
    }

    /// The apply method in libhelm_c's types (a boolean for installs, a string for upgrades), the checks Helm skips
    /// and take-ownership under their names, and reused values for upgrades only.
    #[test]
    fn the_apply_method_checks_and_reused_values_reach_helm_by_their_names() {
        let mut w = wanted(json!({}));
        let options = apply_options;
        let plain = options(&w, Action::Install);
        for off in [
            "take_ownership",
            "skip_schema_validation",
            "disable_openapi_validation",
        ] {
            assert_eq!(plain[off], false, "{off}");
        }
        assert!(options(&w, Action::Upgrade).get("reuse_values").is_none());

        w.apply = ApplySettings {
            method: ApplyMethod::ClientSide,
            take_ownership: true,
            skip_schema_validation: true,
            skip_openapi_validation: true,
        };
        w.upgrade.reuse_values = true;
        let install = options(&w, Action::Install);
        assert_eq!(install["server_side_apply"], false);
        assert!(install.get("force_conflicts").is_none(), "{install}");
        for on in [
            "take_ownership",
            "skip_schema_validation",
            "disable_openapi_validation",
        ] {
            assert_eq!(install[on], true, "{on}");
        }
        assert!(install.get("reuse_values").is_none());
        let upgrade = options(&w, Action::Upgrade);
        assert_eq!(upgrade["server_side_apply"], "false");
        assert_eq!(upgrade["reuse_values"], true);

        w.apply.method = ApplyMethod::ServerSide;
        assert_eq!(options(&w, Action::Install)["server_side_apply"], true);
        let upgrade = options(&w, Action::Upgrade);
        assert_eq!(upgrade["server_side_apply"], "true");
        assert_eq!(upgrade["force_conflicts"], true);
    }
}
