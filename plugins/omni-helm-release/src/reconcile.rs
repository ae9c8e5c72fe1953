//! One reconcile of an OmniHelmRelease that is not being deleted (spec/original-operator.md §6.5 steps 2–5).
//!
//! Asking the host for the release on every reconcile is correct and cheap: the host runs an install or upgrade
//! only when the release is missing, failed, pending or made from another chart, version or values (§10.12), so
//! the call mostly reads the release and reports it. Where Go returned an error for controller-runtime's backoff
//! (§10.14), this reports the condition, asks for a fixed requeue and returns `Ok`, so the status is committed.
//! Errors of the host's own management-cluster reads (not "missing", but the API server failing) are returned,
//! as Go returned them: nothing new is known to report, and the host retries with backoff.

use omni_api::conditions::reasons;
use omni_api::{API_VERSION, OmniClusterSpec, OmniKind};
use omni_plugin_sdk::helm::{Action, Progress, ReleaseReport};
use omni_plugin_sdk::{Host, HostError, ObjectRef, ReconcileError};

use crate::kubeconfig;
use crate::messages;
use crate::object::ReleaseObject;
use crate::report::Report;
use crate::request;
use crate::validation;

/// How soon a missing dependency or a failure without a host-given retry time is tried again (Go: 1m).
pub const RETRY_MS: u64 = 60_000;
/// How often a released object is looked at again (5 minutes). The workload cluster is not watched; each look
/// re-reads the release there, and the host repairs one deleted, failed or changed behind the operator's back.
/// Go had no periodic check (§6.8).
pub const RESYNC_MS: u64 = 5 * 60_000;
/// A safety net while an action runs: the host calls reconcile again by itself when the action ends.
pub const PROGRESS_CHECK_MS: u64 = 30_000;
/// The shortest retry of a failed action, whatever the host says.
pub const MIN_RETRY_MS: u64 = 1_000;

/// Helm's status of a release that is up.
const DEPLOYED: &str = "deployed";

pub fn reconcile<H: Host>(host: &H) -> Result<(), ReconcileError> {
    let object = host.object();
    let report = Report::new(host, &object);

    // Step 2: a spec that cannot work is reported without touching anything; only a spec change helps, and that
    // triggers a reconcile by itself, so no requeue.
    if let Some(why) = validation::first_failure(&object) {
        report.failed(reasons::VALIDATION_FAILED, &why);
        return Ok(());
    }
    let release = ReleaseObject::read(host)?;

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
    let answer = match host.helm_ensure(&request::release_spec(&release)) {
        Ok(answer) => answer,
        Err(e) => {
            let (reason, message) = call_failure(&e);
            report.failed(reason, &message);
            host.requeue_after(RETRY_MS);
            return Ok(());
        }
    };
    report.announce(&answer, release.release_name());
    host.requeue_after(report_answer(&report, &release, &answer));
    Ok(())
}

/// The reason and message of a failed `helm_ensure` call (not a failed action: those come back in the report).
/// `not-found` is the kubeconfig Secret or key gone since it was looked at, or an empty key; `invalid` a
/// kubeconfig that does not parse (§6.5 step 4) or a chart source the host cannot use; the rest (no Helm on this host, a workload cluster that does not
/// answer, a denied chart source, a timeout) the host's own words.
fn call_failure(e: &HostError) -> (&'static str, String) {
    let text = e.text();
    match e {
        HostError::NotFound(_) => (reasons::MISSING_SECRET, text),
        // The host's words name what is invalid: for a kubeconfig that does not parse they are §6.5 step 4's
        // `kubeconfig Secret "ns/name" key "k" is invalid: …`; otherwise the chart source or a name Helm refuses.
        HostError::Invalid(_) => (reasons::VALIDATION_FAILED, text),
        _ => (reasons::RECONCILE_FAILED, text),
    }
}

/// Reports where the host says the release stands (§6.6); returns when to look again.
fn report_answer<H: Host>(
    report: &Report<'_, H>,
    release: &ReleaseObject,
    answer: &ReleaseReport,
) -> u64 {
    let name = release.release_name();
    if let Progress::Running(action) = answer.progress {
        report.progressing(answer, &messages::running(action, name));
        return PROGRESS_CHECK_MS;
    }
    let last = answer.last_for_wanted();
    if let Some(outcome) = last
        && let Some(error) = &outcome.error
    {
        let message = messages::action_failed(outcome.action, name, error);
        report.failed_with(answer, reasons::RECONCILE_FAILED, error, &message);
        return retry_ms(answer.progress);
    }
    let current = answer.release.as_ref().map(|r| &r.current);
    match current {
        Some(current)
            if answer.progress == Progress::Idle
                && current.status == DEPLOYED
                && current.digest.as_deref() == Some(answer.wanted.as_str()) =>
        {
            // The action that made this revision when the host remembers it (it ran for this digest and
            // succeeded); after an operator restart it does not, and the revision number tells.
            let made_by = last.and_then(|l| match l.action {
                Action::Install | Action::Upgrade => Some(l),
                _ => None,
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
            report.released(
                answer,
                reason,
                &message,
                made_by.map(|l| l.finished.as_str()),
            );
            RESYNC_MS
        }
        _ => {
            let status = current.map_or(messages::NOT_INSTALLED, |c| c.status.as_str());
            let message = messages::not_converged(name, status);
            report.failed_with(answer, reasons::RECONCILE_FAILED, &message, &message);
            retry_ms(answer.progress)
        }
    }
}

/// The host's retry time of a failed action (at least [`MIN_RETRY_MS`]), else [`RETRY_MS`].
pub fn retry_ms(progress: Progress) -> u64 {
    match progress {
        Progress::RetryAfter(ms) => ms.max(MIN_RETRY_MS),
        _ => RETRY_MS,
    }
}
