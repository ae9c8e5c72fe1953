//! Deleting an export: with `deletionPolicy: Delete` the Secrets it owns go, both the one the status records and
//! the spec's (after a rename the recorded one may still hold a kubeconfig); a Secret without its label is left
//! alone. `Orphan` touches nothing. Neither Omni nor the workload cluster is needed: the token Omni issued is not
//! revoked and expires with its ttl.

use omni_plugin_sdk::{Host, ReconcileError};

use crate::spec::{ExportSpec, Identity};
use crate::target::{self, Target};

pub fn finalize<H: Host>(host: &H) -> Result<bool, ReconcileError> {
    let object = host.object();
    let spec = ExportSpec::from_object(&object);
    let me = Identity::of(&object);
    // Without a UID nothing was ever written (reconcile refuses to), so there is nothing to delete.
    if !spec.deletes_target() || me.uid.is_empty() {
        return Ok(true);
    }
    let owner = target::owner(&me)?;

    let mut targets: Vec<Target> = target::recorded(&object, &me).into_iter().collect();
    if !spec.target_name.trim().is_empty() {
        let current = Target::of_spec(&spec, &me);
        if !targets.iter().any(|t| t.same_secret(&current)) {
            targets.push(current);
        }
    }
    for t in &targets {
        // Absent and not-owned are both done: there is nothing of this export's left there.
        host.secret_delete_owned(Some(&t.namespace), &t.name, &owner)
            .map_err(|e| {
                ReconcileError::Transient(format!(
                    "delete target Secret {:?}: {}",
                    t.display(),
                    e.message()
                ))
            })?;
    }
    Ok(true)
}
