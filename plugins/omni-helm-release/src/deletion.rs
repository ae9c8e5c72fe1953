//! Deleting an OmniHelmRelease, with a deletion that cannot proceed made visible.
//!
//! `deletionPolicy: Orphan` releases the object at once: the release stays in the workload cluster and the
//! kubeconfig is not needed. So does `spec.suspend` (Flux's rule: deleting a suspended release never uninstalls
//! it). `Uninstall` asks the host to uninstall the release (with `spec.uninstall`'s settings; history not kept
//! unless it says so) and keeps the finalizer until the release is gone. An action of ours still running is
//! waited for first. The OmniCluster is not looked at.
//!
//! The Go controller kept the finalizer for ever when the kubeconfig Secret was gone (typically pruned in
//! the same GitOps change as this object) or the workload cluster could not be reached, and said only
//! `MissingSecret`. The wait here is not bounded either — giving up would leave a release nobody manages without
//! the user choosing that — but it is never silent: `Released`/`Ready` are False with reason `DeleteFailed` and a
//! message naming the cause and the escape, setting `spec.deletionPolicy` to `Orphan` (spec edits are allowed
//! while an object terminates).

use omni_api::conditions::reasons;
use omni_plugin_sdk::helm::{Action, Step};
use omni_plugin_sdk::time::parse_rfc3339;
use omni_plugin_sdk::{Host, HostError, LogLevel, ReconcileError};

use crate::kubeconfig;
use crate::ledger::Ledger;
use crate::messages;
use crate::object::ReleaseObject;
use crate::policy::{Policy, backoff_ms};
use crate::reconcile::{PROGRESS_CHECK_MS, RETRY_MS};
use crate::report::{Report, Seen};
use crate::request;
use crate::rules;

pub fn finalize<H: Host>(host: &H) -> Result<bool, ReconcileError> {
    let release = ReleaseObject::read(host)?;
    if release.orphans() {
        return Ok(true);
    }
    let name = release.release_name();
    if release.suspended() {
        host.log(
            LogLevel::Info,
            "the release is suspended, so deleting the object leaves it in the workload cluster",
            &[("releaseName", name)],
        );
        return Ok(true);
    }
    // Helm never stores a release under a name it refuses, so there is nothing to uninstall (Helm's uninstall
    // would refuse the name too, and Go's deletion blocked on that for ever).
    if let Some(why) = rules::release_name_problem(name) {
        host.log(
            LogLevel::Info,
            "the release name is not one Helm accepts, so no release can exist under it; nothing to uninstall",
            &[("releaseName", name), ("why", &why)],
        );
        return Ok(true);
    }
    let report = Report::new(host, &release.raw);

    if let Some(why) = kubeconfig::missing(host, &release)? {
        report.failed(
            reasons::DELETE_FAILED,
            &messages::cannot_uninstall(name, &why),
        );
        host.requeue_after(RETRY_MS);
        return Ok(false);
    }

    let release_ref = request::release_ref(&release);
    let observed = match host.helm_observe(&release_ref, None) {
        Ok(observed) => observed,
        // The host answers `conflict` for a release that is not this object's (another object made it, or nobody
        // owns it): there is nothing of this object's to uninstall, and the release is left alone.
        Err(HostError::Conflict(why)) => {
            host.log(
                LogLevel::Info,
                "the release is not this object's; deleting the object leaves it in the workload cluster",
                &[("releaseName", name), ("why", &why)],
            );
            return Ok(true);
        }
        Err(e) => {
            report.failed(
                reasons::DELETE_FAILED,
                &messages::uninstall_failed(name, &e.text()),
            );
            host.requeue_after(RETRY_MS);
            return Ok(false);
        }
    };
    let mut ledger = Ledger::read(&release.raw);
    let policy = Policy::of(&release.typed.spec, release.timeout_seconds());
    if let Some(last) = &observed.last
        && ledger.account(last, &policy)
    {
        report.announce(last, name);
    }
    let seen = Seen {
        observed: &observed,
        ledger: &ledger,
    };
    if let Some(running) = &observed.running {
        report.deleting(&seen, &messages::running(running.action, name));
        host.requeue_after(PROGRESS_CHECK_MS);
        return Ok(false);
    }
    let left = observed
        .release
        .as_ref()
        .map(|r| &r.current)
        .filter(|r| r.status != "uninstalled");
    let Some(left) = left else {
        report.uninstalled(&seen, &messages::uninstalled(name));
        return Ok(true);
    };
    // A failed uninstall is tried again with a growing delay.
    if let Some(last) = observed
        .last
        .as_ref()
        .filter(|l| l.action == Action::Uninstall)
    {
        let (error, message) = match &last.error {
            Some(error) => (error.clone(), messages::uninstall_failed(name, error)),
            None => {
                let m = messages::uninstall_stuck(name, &left.status);
                (m.clone(), m)
            }
        };
        let due = parse_rfc3339(&last.finished).map(|f| {
            f.saturating_mul(1000)
                .saturating_add(backoff_ms(ledger.failures.max(1)) as i64)
        });
        let now = parse_rfc3339(&host.now()).map(|n| n.saturating_mul(1000));
        if let (Some(due), Some(now)) = (due, now)
            && due > now
        {
            report.failed_with(&seen, reasons::DELETE_FAILED, &error, &message);
            host.requeue_after((due - now) as u64);
            return Ok(false);
        }
    }
    let step = Step::Uninstall(request::uninstall(&release));
    match host.helm_start(&release_ref, &step) {
        Ok(_) | Err(HostError::Conflict(_)) => {
            report.deleting(&seen, &messages::uninstalling(name));
            host.requeue_after(PROGRESS_CHECK_MS);
        }
        Err(e) => {
            report.call_failed(
                &seen,
                reasons::DELETE_FAILED,
                &messages::uninstall_failed(name, &e.text()),
            );
            host.requeue_after(RETRY_MS);
        }
    }
    Ok(false)
}
