//! Deleting an OmniCluster (spec/original-operator.md §2.2 "Deletion"): orphan leaves Omni alone; otherwise the
//! cluster is deleted from Omni (with its disconnected machines when `destroyMachines`), and the host removes the
//! finalizers once Omni has let go of everything.
//!
//! Unlike the Go controller, a deletion never blocks inside a call: Omni tearing the cluster down is reported as
//! `Ready=False`/`Deleting` with what is still held, and looked at again shortly. Deletion still runs when
//! `spec.suspend` is set (§10.15): suspend stops syncing, not cleanup.

use omni_api::OmniCluster;
use omni_plugin_sdk::{Condition, Host, ReconcileError, json};
use omni_template::render;
use omni_template::sync::{self, Progress};

use crate::inputs;
use crate::reconcile::remote_name;
use crate::timing::{TEARDOWN_RECHECK_MS, failure_backoff_ms, trim_status};

pub fn finalize<H: Host>(host: &H) -> Result<bool, ReconcileError> {
    let object = host.object();
    let cluster: OmniCluster = host.object_as()?;
    let policy = cluster.spec.delete_policy.clone().unwrap_or_default();
    if policy.orphan == Some(true) {
        return Ok(true);
    }
    let now = host.now();
    let connection_name = cluster.spec.connection_ref.name.as_str();
    if let Err(why) = inputs::connection(host, connection_name) {
        // Blocks until the connection is back, or `deletePolicy.orphan` is set (spec edits are allowed while
        // terminating): the message says both.
        let message = format!(
            "cannot delete remote Omni cluster without OmniConnection {connection_name:?}: {why}; restore the connection, \
             or set spec.deletePolicy.orphan: true to leave the Omni cluster in place"
        );
        host.set_condition(Condition::new("Ready", false, "DeleteFailed", message));
        host.requeue_after(failure_backoff_ms(&object, "Ready", &now));
        return Ok(false);
    }
    // The name Omni has the cluster under: the recorded one, which differs from the spec only if a rename was
    // refused (§10.16 — the Go controller deleted the spec's name and left the synced cluster behind).
    let name = remote_name(&object).unwrap_or_else(|| render::cluster_name(&cluster));
    let report = sync::delete(
        host,
        connection_name,
        &name,
        policy.destroy_machines == Some(true),
    );
    let output = trim_status(&report.lines.join("\n"));
    if !output.is_empty() {
        host.set_status(json!({"lastSyncOutput": output}));
    }
    match report.result {
        Ok(Progress::Done) => Ok(true),
        Ok(Progress::Waiting(why)) => {
            host.set_condition(Condition::new("Ready", false, "Deleting", why));
            host.requeue_after(TEARDOWN_RECHECK_MS);
            Ok(false)
        }
        Err(e) => {
            host.set_condition(Condition::new("Ready", false, "DeleteFailed", e));
            host.requeue_after(failure_backoff_ms(&object, "Ready", &now));
            Ok(false)
        }
    }
}
