//! One reconcile of an OmniHelmRelease that is not being deleted: the Go controller's validation, cluster and
//! kubeconfig checks, then Flux helm-controller's release state machine ([`machine`]) for the Helm step.
//!
//! Each reconcile observes the release (the host reads it from the workload cluster and says what it runs or ran
//! for it), counts an action outcome it has not counted yet, and starts at most one action; the host runs it in
//! the background and reconciles the object again when it ends. Nothing changed means nothing started.
//! Where Go returned an error for controller-runtime's backoff, this reports the condition, asks for a
//! requeue and returns `Ok`, so the status is committed. Errors of the host's own management-cluster reads (not
//! "missing", but the API server failing) are returned, as Go returned them: nothing new is known to report, and
//! the host retries with backoff.

use omni_api::conditions::reasons;
use omni_api::{API_VERSION, OmniClusterSpec, OmniKind};
use omni_plugin_sdk::helm::{Action, Observation, Step};
use omni_plugin_sdk::time::parse_rfc3339;
use omni_plugin_sdk::{EventType, Host, HostError, LogLevel, ObjectRef, ReconcileError, Value};

use crate::dependencies::{self, Blocked};
use crate::drift;
use crate::identity;
use crate::kubeconfig;
use crate::ledger::Ledger;
use crate::machine::{Move, Next, Situation, Stall};
use crate::messages;
use crate::object::ReleaseObject;
use crate::policy::{DEFAULT_INTERVAL_MS, Policy, ReleaseAction};
use crate::report::{Report, Seen};
use crate::request;
use crate::validation;

/// How soon a missing dependency or a failure without a host-given retry time is tried again (Go: 1m).
pub const RETRY_MS: u64 = 60_000;
/// How often a released object is looked at again when `spec.interval` is unset (5 minutes). The workload
/// cluster is not watched; each look re-reads the release there, and a release deleted, failed or changed behind
/// the operator's back is repaired. Go had no periodic check.
pub const RESYNC_MS: u64 = DEFAULT_INTERVAL_MS;
/// A safety net while an action runs: the host calls reconcile again by itself when the action ends.
pub const PROGRESS_CHECK_MS: u64 = 30_000;
/// The shortest retry of a failed action.
pub const MIN_RETRY_MS: u64 = 1_000;
/// How soon a release waiting for its dependencies looks again (a dependency's status change does not trigger
/// its dependents; Flux's `--requeue-dependency` is 30 s).
pub const DEPENDENCY_CHECK_MS: u64 = 15_000;
/// Flux's reason for a release waiting on `dependsOn`.
pub const DEPENDENCY_NOT_READY: &str = "DependencyNotReady";
/// A `dependsOn` cycle: nothing in it can ever become ready.
pub const DEPENDENCY_CYCLE: &str = "DependencyCycle";
/// The Event of an upgrade a version range asked for.
pub const NEW_CHART_VERSION: &str = "NewChartVersion";

/// Helm's status of a release that is up.
const DEPLOYED: &str = "deployed";

pub fn reconcile<H: Host>(host: &H) -> Result<(), ReconcileError> {
    let object = host.object();
    let mut report = Report::new(host, &object);

    // Step 2: a spec that cannot work is reported without touching anything; only a spec change helps, and that
    // triggers a reconcile by itself, so no requeue.
    if let Some(why) = validation::first_failure(&object) {
        report.failed(reasons::VALIDATION_FAILED, &why);
        return Ok(());
    }
    let release = ReleaseObject::read(host)?;
    // Flux's rule: a suspended release gets no Helm action and its status is left as it is.
    if release.suspended() {
        host.log(
            LogLevel::Info,
            "reconciliation is suspended; no Helm action",
            &[("releaseName", release.release_name())],
        );
        return Ok(());
    }

    // A release made under another name, namespace or workload cluster goes first (Flux's rule; Go orphaned it).
    if let Some(previous) = identity::previous(&object, &release)
        && identity::retire(host, &mut report, &release, &previous)? == identity::Retired::Waiting
    {
        return Ok(());
    }
    let report = report;

    // Step 3: only whether the cluster exists; nothing is read from it.
    let cluster = release.cluster_ref();
    if host
        .kube_get(&ObjectRef::local(
            API_VERSION,
            OmniClusterSpec::KIND,
            cluster,
        ))?
        .is_none()
    {
        report.cluster_missing(cluster);
        host.requeue_after(RETRY_MS);
        return Ok(());
    }
    report.accepted(cluster);

    // Step 4: whether the kubeconfig Secret and key exist; the bytes never reach the plugin.
    if let Some(message) = kubeconfig::missing(host, &release)? {
        report.failed(reasons::MISSING_SECRET, &message);
        host.requeue_after(RETRY_MS);
        return Ok(());
    }

    // Step 5.
    let release_ref = request::release_ref(&release);
    let observed = match host.helm_observe(&release_ref, Some(&request::source(&release))) {
        Ok(observed) => observed,
        Err(e) => {
            let (reason, message) = call_failure(&e);
            report.failed(reason, &message);
            host.requeue_after(RETRY_MS);
            return Ok(());
        }
    };
    let policy = Policy::of(&release.typed.spec, release.timeout_seconds());
    let mut ledger = Ledger::read(&object);
    for record in [&observed.last, &observed.running].into_iter().flatten() {
        ledger.recall(record);
    }
    if let Some(last) = &observed.last
        && ledger.account(last, &policy)
    {
        report.announce(last, release.release_name());
        report.remediation(last, release.release_name());
    }
    let annotations = &object["metadata"]["annotations"];
    let requests = ledger.requests(annotations);
    let generation = object["metadata"]["generation"].as_i64();
    ledger.reset_if_changed(&observed.wanted, generation);
    let next = Situation {
        observed: &observed,
        ledger: &ledger,
        policy: &policy,
        timeout_seconds: request::longest_timeout(&release),
        now: parse_rfc3339(&host.now()),
        force: requests.force,
    }
    .next();
    let step = Stepper {
        host,
        report: &report,
        release: &release,
        policy: &policy,
        observed: &observed,
        annotations,
        generation,
    };
    host.requeue_after(step.take(next, ledger));
    Ok(())
}

/// Carries out what the machine decided and reports it; answers when to look again.
struct Stepper<'a, H: Host> {
    host: &'a H,
    report: &'a Report<'a, H>,
    release: &'a ReleaseObject,
    policy: &'a Policy,
    observed: &'a Observation,
    annotations: &'a Value,
    generation: Option<i64>,
}

impl<H: Host> Stepper<'_, H> {
    /// Cancels the install or upgrade running when what it makes is no longer wanted (the chart, the version or
    /// the values changed since it started), so the new spec does not wait out its timeout; true when the host
    /// took the cancel. A failing host call leaves the action to run to its end.
    fn cancel_obsolete(&self) -> bool {
        let o = self.observed;
        let Some(running) = &o.running else {
            return false;
        };
        let obsolete = matches!(running.action, Action::Install | Action::Upgrade)
            && !o.wanted.is_empty()
            && running.digest != o.wanted;
        obsolete
            && self
                .host
                .helm_cancel(&request::release_ref(self.release), &running.id)
                .unwrap_or(false)
    }

    fn take(&self, next: Next, mut ledger: Ledger) -> u64 {
        let name = self.release.release_name();
        let o = self.observed;
        self.report_tests();
        match next {
            Next::Running(action) => {
                let seen = self.seen(&ledger);
                let message = if self.cancel_obsolete() {
                    messages::cancelling(action, name)
                } else {
                    messages::running(action, name)
                };
                self.report.progressing(&seen, &message);
                PROGRESS_CHECK_MS
            }
            Next::Pending(_) => {
                let status = o.release.as_ref().map_or("", |r| r.current.status.as_str());
                let seen = self.seen(&ledger);
                self.report
                    .progressing(&seen, &messages::pending_elsewhere(name, status));
                PROGRESS_CHECK_MS
            }
            Next::Start(m @ (Move::Install | Move::Upgrade)) => {
                match dependencies::blocked(self.host, self.release) {
                    Ok(None) => self.start(m, ledger),
                    Ok(Some(blocked)) => {
                        let (reason, message, requeue) = match blocked {
                            Blocked::NotReady(what) => (
                                DEPENDENCY_NOT_READY,
                                messages::dependencies_not_ready(name, &what),
                                DEPENDENCY_CHECK_MS,
                            ),
                            Blocked::Cycle(cycle) => (
                                DEPENDENCY_CYCLE,
                                messages::dependency_cycle(&cycle),
                                RETRY_MS,
                            ),
                        };
                        let seen = self.seen(&ledger);
                        self.report.failed_with(&seen, reason, &message, &message);
                        requeue
                    }
                    Err(e) => {
                        let (reason, message) = call_failure(&e);
                        let seen = self.seen(&ledger);
                        self.report.call_failed(&seen, reason, &message);
                        RETRY_MS
                    }
                }
            }
            Next::Start(m) => self.start(m, ledger),
            Next::RetryIn(ms) => {
                let (action, error) = self.last_failure(&ledger);
                let message = messages::action_failed(action, name, &error);
                let seen = self.seen(&ledger);
                self.report
                    .failed_with(&seen, reasons::RECONCILE_FAILED, &error, &message);
                ms.max(MIN_RETRY_MS)
            }
            Next::Stalled(stall) => {
                let (_, error) = self.last_failure(&ledger);
                let message = match stall {
                    Stall::RetriesExhausted(a) => {
                        messages::retries_exhausted(name, a.name(), ledger.failures_of(a), &error)
                    }
                    Stall::RemediationFailed(a) => messages::remediation_failed(name, a, &error),
                };
                let seen = self.seen(&ledger);
                self.report.stalled(&seen, &error, &message);
                self.policy.interval_ms
            }
            Next::InSync(_) => {
                self.in_sync(&mut ledger);
                if drift::check(self.host, self.release) {
                    PROGRESS_CHECK_MS
                } else {
                    self.policy.interval_ms
                }
            }
        }
    }

    fn seen<'b>(&'b self, ledger: &'b Ledger) -> Seen<'b> {
        Seen {
            observed: self.observed,
            ledger,
        }
    }

    /// Starts `m` on the host; the ledger records an install or upgrade (and a force acted on) only once the host
    /// took it.
    fn start(&self, m: Move, mut ledger: Ledger) -> u64 {
        let name = self.release.release_name();
        let step = request::step(self.release, self.policy.tests.as_ref(), m);
        let started = self
            .host
            .helm_start(&request::release_ref(self.release), &step);
        match started {
            Ok(record) => {
                let attempted = match step {
                    Step::Install(_) => Some(ReleaseAction::Install),
                    Step::Upgrade(_) => Some(ReleaseAction::Upgrade),
                    _ => None,
                };
                if let Some(action) = attempted {
                    ledger.attempt(
                        action,
                        (&self.observed.wanted, &self.observed.chart_version),
                        self.generation,
                    );
                    ledger.forced(self.annotations);
                }
                if attempted == Some(ReleaseAction::Upgrade) {
                    self.announce_new_chart_version();
                }
                let seen = self.seen(&ledger);
                self.report
                    .progressing(&seen, &messages::running(record.action, name));
                PROGRESS_CHECK_MS
            }
            // Another action for the release started since the observation: look again when it ends.
            Err(HostError::Conflict(_)) => {
                let seen = self.seen(&ledger);
                self.report
                    .progressing(&seen, &messages::running(step.action(), name));
                PROGRESS_CHECK_MS
            }
            Err(e) => {
                let (reason, message) = call_failure(&e);
                let seen = self.seen(&ledger);
                self.report.call_failed(&seen, reason, &message);
                RETRY_MS
            }
        }
    }

    /// An upgrade because the spec's version range now resolves to another chart version: a Normal
    /// `NewChartVersion` Event naming the range, the old version and the new.
    fn announce_new_chart_version(&self) {
        let o = self.observed;
        let range = self
            .release
            .typed
            .spec
            .chart
            .version
            .as_deref()
            .unwrap_or_default();
        let Some(deployed) = o.release.as_ref().map(|r| &r.current) else {
            return;
        };
        let (old, new) = (&deployed.chart_version, &o.chart_version);
        if new.is_empty() || old.is_empty() || old == new || range == new {
            return;
        }
        self.host.event(
            EventType::Normal,
            NEW_CHART_VERSION,
            &messages::new_chart_version(
                &deployed.chart,
                range,
                old,
                new,
                self.release.release_name(),
            ),
        );
    }

    /// What is wanted is deployed: `HelmInstalled` or `HelmUpgraded`, by the action that made the revision
    /// when the host remembers it, else by its number.
    fn in_sync(&self, ledger: &mut Ledger) {
        let name = self.release.release_name();
        let o = self.observed;
        let Some(current) = o.release.as_ref().map(|r| &r.current) else {
            return;
        };
        let made_by = o.last.as_ref().filter(|l| {
            matches!(l.action, Action::Install | Action::Upgrade)
                && l.error.is_none()
                && l.digest == o.wanted
                && current.status == DEPLOYED
        });
        let installed = made_by.map_or(current.revision <= 1, |l| l.action == Action::Install);
        let (reason, message) = if installed {
            (
                reasons::HELM_INSTALLED,
                messages::installed(name, current.revision),
            )
        } else {
            (
                reasons::HELM_UPGRADED,
                messages::upgraded(name, current.revision),
            )
        };
        let seen = self.seen(ledger);
        self.report.released(
            &seen,
            reason,
            &message,
            made_by.map(|l| l.finished.as_str()),
        );
    }

    /// Flux's `TestSuccess` while tests are on and the current revision's tests ran (or a test step failed).
    fn report_tests(&self) {
        let Some(tests) = &self.policy.tests else {
            return;
        };
        let o = self.observed;
        let name = self.release.release_name();
        let selected = || o.tests.iter().filter(|t| tests.selects(&t.name));
        let failed: Vec<String> = selected()
            .filter(|t| t.phase == "Failed")
            .map(|t| t.name.clone())
            .collect();
        let step_failed = o
            .last
            .as_ref()
            .is_some_and(|l| l.action == Action::Test && l.error.is_some());
        if !failed.is_empty() || step_failed {
            self.report
                .tests(false, &messages::tests_failed(name, &failed));
        } else if selected().all(|t| t.phase == "Succeeded")
            && let Some(release) = &o.release
            && release.current.status == DEPLOYED
        {
            self.report.tests(
                true,
                &messages::tests_passed(name, release.current.revision),
            );
        }
    }

    /// The last failed action and its error: the host's outcome when it remembers one, else the failed revision's
    /// description, else what the status recorded.
    fn last_failure(&self, ledger: &Ledger) -> (Action, String) {
        let o = self.observed;
        let action = match ledger.last_release_action {
            Some(ReleaseAction::Install) => Action::Install,
            _ => Action::Upgrade,
        };
        if let Some(last) = &o.last
            && let Some(error) = &last.error
        {
            return (last.action, error.clone());
        }
        let description = o
            .release
            .as_ref()
            .filter(|r| r.current.status == "failed")
            .map(|r| r.current.description.clone())
            .filter(|d| !d.is_empty());
        let status = o
            .release
            .as_ref()
            .map_or(messages::NOT_INSTALLED, |r| r.current.status.as_str());
        let error = ledger
            .last_error
            .clone()
            .or(description)
            .unwrap_or_else(|| messages::not_converged(self.release.release_name(), status));
        (action, error)
    }
}

/// The reason and message of a failed Helm call (not a failed action: those come back as outcomes).
/// `not-found` is the kubeconfig Secret or key gone since it was looked at, or an empty key; `invalid` a
/// kubeconfig that does not parse or a chart source the host cannot use; the rest (no Helm on this
/// host, a workload cluster that does not answer, a denied chart source, a timeout) the host's own words.
pub fn call_failure(e: &HostError) -> (&'static str, String) {
    let text = e.text();
    match e {
        HostError::NotFound(_) => (reasons::MISSING_SECRET, text),
        // The host's words name what is invalid: for a kubeconfig that does not parse they are the Go operator's
        // `kubeconfig Secret "ns/name" key "k" is invalid: …`; otherwise the chart source or a name Helm refuses.
        HostError::Invalid(_) => (reasons::VALIDATION_FAILED, text),
        _ => (reasons::RECONCILE_FAILED, text),
    }
}
