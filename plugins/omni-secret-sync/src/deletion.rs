//! Deleting an OmniSecretSync, with the deletion bounded in time.
//!
//! `deletionPolicy: Orphan` releases the object at once: nothing in the workload cluster is touched and the
//! kubeconfig is not needed. `Delete` removes the Secret this sync last wrote (the recorded target, else the
//! spec's), only if it carries this sync's owner label; absent or someone else's counts as done.
//!
//! The bound: the Go controller retried for ever when the workload cluster could not be reached — typically
//! because the kubeconfig Secret went first (an OmniKubeconfigExport with `Delete` policy pruned in the same
//! GitOps change), or the cluster is gone or no longer accepts the credentials — so the object never went away.
//! Here any failure to delete is retried every [`DELETE_RETRY_MS`] with `Ready=False`/`DeleteFailed` naming the
//! deadline and the escape (`spec.deletionPolicy: Orphan`, allowed while terminating), until
//! [`GIVE_UP_AFTER_S`] have passed since `metadata.deletionTimestamp`. Then the finalizer is released, the
//! Secret is left in place, and a Warning Event `DeletionAbandoned` says so. Counting from the deletion
//! timestamp needs no bookkeeping of its own and survives operator restarts.

use omni_api::conditions::reasons;
use omni_plugin_sdk::secrets::Removal;
use omni_plugin_sdk::time::{format_rfc3339, parse_rfc3339};
use omni_plugin_sdk::{EventType, Host, LogLevel, ReconcileError};

use crate::messages;
use crate::object::SyncObject;
use crate::report::Report;
use crate::target;

/// How long a deletion keeps trying to delete the workload Secret, from `metadata.deletionTimestamp`.
pub const GIVE_UP_AFTER_S: u64 = 10 * 60;
/// How soon a failed delete is tried again while the bound has not passed.
pub const DELETE_RETRY_MS: u64 = 30_000;

pub fn finalize<H: Host>(host: &H) -> Result<bool, ReconcileError> {
    let sync = SyncObject::read(host)?;
    if sync.orphans() {
        return Ok(true);
    }
    // The Secret last written, which differs from the spec's after a rename whose cleanup has not happened yet.
    let target = sync.written_target().unwrap_or_else(|| sync.target());
    if target.namespace.trim().is_empty() || target.name.trim().is_empty() {
        // Nothing recorded and no usable spec target: nothing can have been written.
        return Ok(true);
    }
    let path = format!("{}/{}", target.namespace, target.name);
    let error = match host.workload_delete_secret(
        &sync.written_kubeconfig(),
        &target.namespace,
        &target.name,
        &target::owner(&sync),
    ) {
        Ok(Removal::NotOwned) => {
            host.log(
                LogLevel::Info,
                "workload Secret is not owned by this OmniSecretSync; left in place",
                &[("secret", &path)],
            );
            return Ok(true);
        }
        Ok(Removal::Deleted | Removal::Absent) => return Ok(true),
        Err(e) => e.text(),
    };

    let now = host.now();
    let now_s = parse_rfc3339(&now);
    // The API server sets deletionTimestamp before any finalizer runs; were it unreadable, the wait would count
    // from now, which keeps the message truthful instead of giving up on a guess.
    let started = sync
        .deletion_timestamp()
        .and_then(parse_rfc3339)
        .or(now_s)
        .unwrap_or_default();
    let waited = now_s.map_or(0, |n| n - started).max(0) as u64;
    if waited >= GIVE_UP_AFTER_S {
        let message =
            messages::deletion_abandoned(&target.namespace, &target.name, GIVE_UP_AFTER_S, &error);
        host.log(LogLevel::Warn, &message, &[("secret", &path)]);
        host.event(EventType::Warning, "DeletionAbandoned", &message);
        return Ok(true);
    }
    let deadline = format_rfc3339(started + GIVE_UP_AFTER_S as i64);
    let report = Report::new(host, &host.object(), &now);
    report.failed(
        reasons::DELETE_FAILED,
        &messages::delete_retrying(&target.namespace, &target.name, &error, &deadline),
    );
    host.requeue_after(DELETE_RETRY_MS);
    Ok(false)
}
