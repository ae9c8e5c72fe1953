//! The contract's Secret types as the host's Secret store takes them, and the owner-label rule, shared by the
//! capabilities that write or delete Secrets (`secrets`, `workload`, `omni.export-kubeconfig`).

use std::collections::BTreeMap;

use wasmtime::component::Resource;

use super::CallCore;
use crate::capabilities::{CallContext, Capability, HostError, HostFailure};
use crate::contract::bindings::omni::operator::types::{OwnerLabel, Removal};
use crate::secrets as store;

impl CallCore {
    /// Checks the owner label a write or delete is conditioned on: it must mark the reconciled object itself
    /// (its value is the object's UID), so a plugin can never claim, overwrite or delete Secrets that belong to
    /// another object by naming that object's label.
    pub(in crate::capabilities) fn own_label(
        &mut self,
        ctx: &Resource<CallContext>,
        capability: Capability,
        label: OwnerLabel,
        what: &str,
    ) -> Result<store::OwnerLabel, HostFailure> {
        let call = self.table.get(ctx)?;
        let uid = call.object_value()["metadata"]["uid"]
            .as_str()
            .unwrap_or_default();
        if uid.is_empty() || label.value != uid || label.key.is_empty() {
            let reason = format!(
                "the owner label {:?} does not carry the reconciled object's UID; the host writes and deletes only \
                 what marks the object it reconciles",
                label.key
            );
            return Err(self.denied(capability, what, &reason).into());
        }
        Ok(owner(label))
    }
}

/// A JSON object of strings (labels, annotations) from the plugin.
pub(in crate::capabilities) fn string_map(
    json: &str,
    field: &str,
) -> Result<BTreeMap<String, String>, HostError> {
    if json.trim().is_empty() {
        return Ok(BTreeMap::new());
    }
    serde_json::from_str(json)
        .map_err(|e| HostError::Invalid(format!("{field} must be a JSON object of strings: {e}")))
}

pub(in crate::capabilities) fn owner(o: OwnerLabel) -> store::OwnerLabel {
    store::OwnerLabel {
        key: o.key,
        value: o.value,
    }
}

pub(in crate::capabilities) fn removal(r: store::Removal) -> Removal {
    match r {
        store::Removal::Deleted => Removal::Deleted,
        store::Removal::Absent => Removal::Absent,
        store::Removal::NotOwned => Removal::NotOwned,
    }
}
