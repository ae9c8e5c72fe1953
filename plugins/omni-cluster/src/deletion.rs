//! Deleting an OmniCluster: orphan leaves Omni alone; otherwise the
//! cluster is deleted from Omni (with its disconnected machines when `destroyMachines`), and the host removes the
//! finalizers once Omni has let go of everything.
//!
//! Unlike the Go controller, a deletion never blocks inside a call: Omni tearing the cluster down is reported as
//! `Ready=False`/`Deleting` with what is still held, and looked at again shortly. Deletion still runs when
//! `spec.suspend` is set: suspend stops syncing, not cleanup.

use omni_api::OmniCluster;
use omni_api::conditions::reasons;
use omni_plugin_sdk::{Host, ReconcileError};
use omni_template::render;
use omni_template::sync::{self, Progress};

use crate::inputs;
use crate::outcome::{State, Teardown};
use crate::reconcile::remote_name;
use crate::timing::{TEARDOWN_RECHECK_MS, deletion_backoff_ms, trim_status};

pub fn finalize<H: Host>(host: &H) -> Result<bool, ReconcileError> {
    teardown(host)?.write(host)
}

/// What this finalize call reports. Nothing is written here: every path returns its [`Teardown`], written once.
fn teardown<H: Host>(host: &H) -> Result<Teardown, ReconcileError> {
    let object = host.object();
    let cluster: OmniCluster = host.object_as()?;
    let policy = cluster.spec.delete_policy.clone().unwrap_or_default();
    if policy.orphan == Some(true) {
        return Ok(Teardown::Done {
            output: String::new(),
        });
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
        return Ok(Teardown::Blocked {
            ready: State::failed(reasons::DELETE_FAILED, message),
            output: String::new(),
            requeue_ms: deletion_backoff_ms(&object, &now),
        });
    }
    // The name Omni has the cluster under: the recorded one, which differs from the spec only if a rename was
    // refused (the Go controller deleted the spec's name and left the synced cluster behind).
    let name = remote_name(&object).unwrap_or_else(|| render::cluster_name(&cluster));
    let report = sync::delete(
        host,
        connection_name,
        &name,
        policy.destroy_machines == Some(true),
    );
    let output = trim_status(&report.lines.join("\n"));
    Ok(match report.result {
        Ok(Progress::Done) => Teardown::Done { output },
        Ok(Progress::Waiting(why)) => Teardown::Blocked {
            ready: State::failed(reasons::DELETING, why),
            output,
            requeue_ms: TEARDOWN_RECHECK_MS,
        },
        Err(e) => Teardown::Blocked {
            ready: State::failed(reasons::DELETE_FAILED, e),
            output,
            requeue_ms: deletion_backoff_ms(&object, &now),
        },
    })
}
