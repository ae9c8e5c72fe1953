//! A changed release identity: `spec.releaseName`, `spec.namespace` or the kubeconfig Secret (the workload
//! cluster) of an object whose release exists. Helm cannot rename or move a release, so the new identity is a new
//! release, and the old one would be left behind in the workload cluster with nobody managing it (the Go operator
//! did that, silently). As Flux does, the old release is uninstalled first, under the object's deletion policy:
//! `Orphan` leaves it, and says so in an Event. A release the object does not own (the host answers `conflict`) is
//! never touched. A release the plugin cannot reach any more (the kubeconfig Secret changed: the sandbox lets a
//! plugin reach a cluster only through a Secret its spec names) is left, with a Warning Event saying so.
//!
//! The identity the release was made under is the one the status reports (`releaseName`, `namespace`,
//! `kubeconfigSecretRef`, `kubeconfigSecretKey`, written by every status update). While the old release is being
//! uninstalled the status keeps reporting it, so the next reconcile still knows what to finish; once it is gone
//! the status moves to the new identity and the new release is installed.

use omni_plugin_sdk::helm::{Action, ReleaseRef, Step};
use omni_plugin_sdk::secrets::SecretKeyRef;
use omni_plugin_sdk::{EventType, Host, HostError, LogLevel, ReconcileError, Value};

use crate::messages;
use crate::object::{DEFAULT_KUBECONFIG_KEY, ReleaseObject};
use crate::reconcile::{PROGRESS_CHECK_MS, RETRY_MS};
use crate::report::Report;
use crate::request;
use crate::rules::text;

/// The release an object had before its identity changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Previous {
    pub name: String,
    pub namespace: String,
    pub kubeconfig: SecretKeyRef,
    /// The service account the spec names now (the status does not record the one used before).
    pub service_account: Option<String>,
}

impl Previous {
    fn release_ref(&self) -> ReleaseRef {
        ReleaseRef {
            kubeconfig: self.kubeconfig.clone(),
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            service_account: self.service_account.clone(),
        }
    }

    /// `"name" in namespace "ns" (kubeconfig Secret "s")`, for messages.
    fn describe(&self) -> String {
        format!(
            "{} in namespace {} (kubeconfig Secret {})",
            messages::q(&self.name),
            messages::q(&self.namespace),
            messages::q(&self.kubeconfig.name)
        )
    }
}

/// The identity the status reports a release under, when a release was made (the status lists revisions) and
/// the spec now names another.
pub fn previous(object: &Value, release: &ReleaseObject) -> Option<Previous> {
    let status = &object["status"];
    if status["history"].as_array().is_none_or(Vec::is_empty) {
        return None;
    }
    let (name, namespace, secret) = (
        text(&status["releaseName"]),
        text(&status["namespace"]),
        text(&status["kubeconfigSecretRef"]),
    );
    if name.is_empty() || namespace.is_empty() || secret.is_empty() {
        return None;
    }
    let key = Some(text(&status["kubeconfigSecretKey"]))
        .filter(|k| !k.is_empty())
        .unwrap_or(DEFAULT_KUBECONFIG_KEY);
    let unchanged = name == release.release_name()
        && namespace == release.release_namespace()
        && secret == release.kubeconfig_name()
        && key == release.kubeconfig_key();
    (!unchanged).then(|| Previous {
        name: name.into(),
        namespace: namespace.into(),
        kubeconfig: SecretKeyRef::local(secret, key),
        service_account: request::service_account(release),
    })
}

/// Whether the new release may proceed.
#[derive(Debug, PartialEq, Eq)]
pub enum Retired {
    /// The old release is gone, left by `Orphan`, or not this object's.
    Done,
    /// Its uninstall runs or must be retried; the status still reports the old identity.
    Waiting,
}

/// Uninstalls `previous` (unless the deletion policy orphans it), reporting through `report`, which is made to
/// keep reporting the old identity until it is gone.
pub fn retire<H: Host>(
    host: &H,
    report: &mut Report<'_, H>,
    release: &ReleaseObject,
    previous: &Previous,
) -> Result<Retired, ReconcileError> {
    let new = release.release_name();
    if release.orphans() {
        host.event(
            EventType::Normal,
            RELEASE_ORPHANED,
            &format!(
                "the release identity changed; Helm release {} is left in the workload cluster \
                 (spec.deletionPolicy: Orphan) and release {} is installed",
                previous.describe(),
                messages::q(new)
            ),
        );
        return Ok(Retired::Done);
    }
    report.keep_identity(previous);
    let old_ref = previous.release_ref();
    let observed = match host.helm_observe(&old_ref, None) {
        Ok(observed) => observed,
        Err(HostError::Conflict(why)) => {
            host.log(
                LogLevel::Info,
                "the previous release is not this object's; it is left alone",
                &[("releaseName", &previous.name), ("why", &why)],
            );
            report.forget_identity(release);
            return Ok(Retired::Done);
        }
        // The old kubeconfig Secret gone with the change, or no longer named by the spec: the sandbox lets a plugin
        // reach a cluster only through a Secret its spec names, so a release in the old cluster cannot be looked
        // at. Blocking the new release on it would block for ever; it is said instead.
        Err(HostError::NotFound(why) | HostError::Denied(why)) => {
            host.event(
                EventType::Warning,
                RELEASE_ORPHANED,
                &format!(
                    "the release identity changed, and Helm release {} cannot be reached to uninstall it ({why}); \
                     if it still exists, it is left in the workload cluster",
                    previous.describe()
                ),
            );
            report.forget_identity(release);
            return Ok(Retired::Done);
        }
        Err(e) => {
            report.failed(UNINSTALL_FAILED, &retire_failed(previous, new, &e.text()));
            host.requeue_after(RETRY_MS);
            return Ok(Retired::Waiting);
        }
    };
    if let Some(running) = &observed.running {
        report.failed(
            PROGRESSING_RETIRE,
            &format!(
                "the release identity changed; waiting for the {} of Helm release {} to end before uninstalling it",
                running.action.name(),
                previous.describe()
            ),
        );
        host.requeue_after(PROGRESS_CHECK_MS);
        return Ok(Retired::Waiting);
    }
    let last_uninstall = observed
        .last
        .as_ref()
        .filter(|l| l.action == Action::Uninstall);
    let left = observed
        .release
        .as_ref()
        .map(|r| &r.current)
        .filter(|r| r.status != "uninstalled");
    let Some(_left) = left else {
        if last_uninstall.is_some_and(|l| l.error.is_none()) {
            host.event(
                EventType::Normal,
                "UninstallSucceeded",
                &format!(
                    "the release identity changed: uninstalled Helm release {} before installing release {}",
                    previous.describe(),
                    messages::q(new)
                ),
            );
        }
        report.forget_identity(release);
        return Ok(Retired::Done);
    };
    if let Some(error) = last_uninstall.and_then(|l| l.error.as_ref()) {
        host.event(
            EventType::Warning,
            UNINSTALL_FAILED,
            &retire_failed(previous, new, error),
        );
    }
    match host.helm_start(&old_ref, &Step::Uninstall(request::uninstall(release))) {
        Ok(_) => {
            report.failed(
                PROGRESSING_RETIRE,
                &format!(
                    "the release identity changed; uninstalling Helm release {} before installing release {}",
                    previous.describe(),
                    messages::q(new)
                ),
            );
            host.requeue_after(PROGRESS_CHECK_MS);
        }
        Err(e) => {
            report.failed(UNINSTALL_FAILED, &retire_failed(previous, new, &e.text()));
            host.requeue_after(RETRY_MS);
        }
    }
    Ok(Retired::Waiting)
}

/// Flux's reason for a failed uninstall (`Released`/`Ready` and the Event).
const UNINSTALL_FAILED: &str = "UninstallFailed";
/// The Event reason of a previous release left in the workload cluster.
pub const RELEASE_ORPHANED: &str = "ReleaseOrphaned";
/// `Released`/`Ready` while the previous release is uninstalled.
const PROGRESSING_RETIRE: &str = "UninstallingPreviousRelease";

fn retire_failed(previous: &Previous, new: &str, why: &str) -> String {
    format!(
        "the release identity changed, and uninstalling Helm release {} failed: {why}; release {} waits for it \
         (set spec.deletionPolicy to Orphan to leave the old release instead)",
        previous.describe(),
        messages::q(new)
    )
}
