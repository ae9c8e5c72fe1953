//! Deleting an OmniHelmRelease (spec/original-operator.md §6.7), with §10.13 made visible.
//!
//! `deletionPolicy: Orphan` releases the object at once: the release stays in the workload cluster and the
//! kubeconfig is not needed. `Uninstall` asks the host to uninstall the release (history not kept) and keeps the
//! finalizer until the host reports it gone. The OmniCluster is not looked at (§6.7).
//!
//! §10.13: the Go controller kept the finalizer for ever when the kubeconfig Secret was gone (typically pruned in
//! the same GitOps change as this object) or the workload cluster could not be reached, and said only
//! `MissingSecret`. The wait here is not bounded either — giving up would leave a release nobody manages without
//! the user choosing that — but it is never silent: `Released`/`Ready` are False with reason `DeleteFailed` and a
//! message naming the cause and the escape, setting `spec.deletionPolicy` to `Orphan` (spec edits are allowed
//! while an object terminates).

use omni_api::conditions::reasons;
use omni_plugin_sdk::helm::Progress;
use omni_plugin_sdk::{Host, LogLevel, ReconcileError};

use crate::kubeconfig;
use crate::messages;
use crate::object::ReleaseObject;
use crate::reconcile::{PROGRESS_CHECK_MS, RETRY_MS, retry_ms};
use crate::report::Report;
use crate::request;
use crate::rules;

pub fn finalize<H: Host>(host: &H) -> Result<bool, ReconcileError> {
    let release = ReleaseObject::read(host)?;
    if release.orphans() {
        return Ok(true);
    }
    let name = release.release_name();
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

    let answer = match host.helm_uninstall(&request::uninstall_spec(&release)) {
        Ok(answer) => answer,
        Err(e) => {
            let message = messages::uninstall_failed(name, &e.text());
            report.failed(reasons::DELETE_FAILED, &message);
            host.requeue_after(RETRY_MS);
            return Ok(false);
        }
    };
    match (answer.progress, &answer.release) {
        (Progress::Running(_), _) => {
            report.deleting(&answer, &messages::uninstalling(name));
            host.requeue_after(PROGRESS_CHECK_MS);
            Ok(false)
        }
        (Progress::RetryAfter(_), _) => {
            let error = answer
                .last
                .as_ref()
                .and_then(|l| l.error.as_deref())
                .unwrap_or("the operator gave no reason");
            let message = messages::uninstall_failed(name, error);
            report.failed_with(&answer, reasons::DELETE_FAILED, error, &message);
            host.requeue_after(retry_ms(answer.progress));
            Ok(false)
        }
        (Progress::Idle, None) => {
            report.uninstalled(&answer, &messages::uninstalled(name));
            Ok(true)
        }
        (Progress::Idle, Some(left)) => {
            let message = messages::uninstall_stuck(name, &left.current.status);
            report.failed_with(&answer, reasons::DELETE_FAILED, &message, &message);
            host.requeue_after(RETRY_MS);
            Ok(false)
        }
    }
}
