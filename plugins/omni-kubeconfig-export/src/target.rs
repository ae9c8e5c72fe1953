//! Which Secret holds the export's kubeconfig: the spec's target, the one the status records, how the two
//! relate (previous-target cleanup, key rename) and what marks a Secret as this export's.

use omni_api::OmniKubeconfigExportStatus;
use omni_api::labels::kubeconfig_export::OWNER_LABEL;
use omni_plugin_sdk::secrets::{OwnerLabel, SecretKeyRef};
use omni_plugin_sdk::{ReconcileError, Value};

use crate::spec::{ExportSpec, Identity};

/// A key of a management-cluster Secret, namespace resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub namespace: String,
    pub name: String,
    pub key: String,
}

impl Target {
    /// Where the spec says the kubeconfig goes (key and namespace defaulted).
    pub fn of_spec(spec: &ExportSpec, me: &Identity) -> Self {
        Target {
            namespace: spec.target_namespace(&me.namespace).to_string(),
            name: spec.target_name.clone(),
            key: spec.target_key().to_string(),
        }
    }

    /// `ns/name`, as messages quote it.
    pub fn display(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The same Secret, whatever the key.
    pub fn same_secret(&self, other: &Target) -> bool {
        self.namespace == other.namespace && self.name == other.name
    }

    pub fn key_ref(&self) -> SecretKeyRef {
        SecretKeyRef {
            namespace: Some(self.namespace.clone()),
            name: self.name.clone(),
            key: self.key.clone(),
        }
    }
}

/// The Secret the status records as holding the kubeconfig, if any. It is set only when a kubeconfig was written
/// or reused there, so after a rename it still names the old Secret until the new one holds a kubeconfig.
/// An empty recorded namespace is the export's own (status written before the field existed).
pub fn recorded(object: &Value, me: &Identity) -> Option<Target> {
    // Every status field is optional; a status this plugin cannot read records nothing it could clean up.
    let status: OmniKubeconfigExportStatus =
        omni_plugin_sdk::serde_json::from_value(object["status"].clone()).unwrap_or_default();
    let name = status.target_secret_ref.filter(|n| !n.is_empty())?;
    let namespace = status
        .target_secret_namespace
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| me.namespace.clone());
    Some(Target {
        namespace,
        name,
        key: status.target_secret_key.unwrap_or_default(),
    })
}

/// The recorded Secret when it is not the spec's: a candidate for cleanup.
pub fn previous(recorded: Option<&Target>, target: &Target) -> Option<Target> {
    recorded.filter(|r| !r.same_secret(target)).cloned()
}

/// The key an earlier export wrote into this same Secret and that must go now the spec names another key.
pub fn renamed_key(recorded: Option<&Target>, target: &Target) -> Option<String> {
    recorded
        .filter(|r| r.same_secret(target) && !r.key.is_empty() && r.key != target.key)
        .map(|r| r.key.clone())
}

/// The label that marks the export's Secrets. An export always has a UID on a real API server; without one a
/// label with an empty value would claim any Secret carrying that, so nothing is written or deleted.
pub fn owner(me: &Identity) -> Result<OwnerLabel, ReconcileError> {
    if me.uid.is_empty() {
        return Err(ReconcileError::Permanent(
            "the object has no metadata.uid, which marks the Secrets it owns; nothing is written"
                .into(),
        ));
    }
    Ok(OwnerLabel::new(OWNER_LABEL, &me.uid))
}

/// An existing Secret without this export's label is never written, adopted or deleted.
pub fn not_managed_message(target: &Target, owner: &OwnerLabel) -> String {
    format!(
        "target Secret {:?} exists and is not managed by this OmniKubeconfigExport (label {} is not {:?}); it is left \
         alone: delete it or choose another targetSecretRef",
        target.display(),
        owner.key,
        owner.value
    )
}
