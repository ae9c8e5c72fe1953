//! The OmniSecretSync as reconcile and deletion read it: the typed object (crate `omni-api`) and the values
//! derived from it — the normalised kubeconfig key, the spec's target, the target last written and the kubeconfig
//! the first success pinned.

use omni_api::{OmniSecretSync, OmniSecretSyncStatus, SecretDeletionPolicy};
use omni_plugin_sdk::secrets::SecretKeyRef;
use omni_plugin_sdk::{Host, ReconcileError};

/// The kubeconfig key when `spec.kubeconfigSecretRef.key` is unset (the CRD's default, and Go's).
pub const DEFAULT_KUBECONFIG_KEY: &str = "kubeconfig";

/// A Secret in the workload cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub namespace: String,
    pub name: String,
}

pub struct SyncObject {
    pub typed: OmniSecretSync,
}

impl SyncObject {
    /// The object as the API server stored it. It fits the type whenever it passed the CRD schema; reconcile
    /// validates the raw object first, so even an object missing required fields is reported as `ValidationFailed`
    /// rather than failing here.
    pub fn read<H: Host>(host: &H) -> Result<Self, ReconcileError> {
        Ok(SyncObject {
            typed: host.object_as()?,
        })
    }

    pub fn name(&self) -> &str {
        self.typed.name()
    }

    pub fn namespace(&self) -> &str {
        self.typed.namespace()
    }

    pub fn uid(&self) -> &str {
        self.typed.metadata.uid.as_deref().unwrap_or_default()
    }

    pub fn deletion_timestamp(&self) -> Option<&str> {
        self.typed.metadata.deletion_timestamp.as_deref()
    }

    pub fn orphans(&self) -> bool {
        self.typed.spec.deletion_policy == SecretDeletionPolicy::Orphan
    }

    pub fn cluster_ref(&self) -> &str {
        &self.typed.spec.cluster_ref.name
    }

    pub fn source_name(&self) -> &str {
        &self.typed.spec.source_secret_ref.name
    }

    pub fn kubeconfig_name(&self) -> &str {
        &self.typed.spec.kubeconfig_secret_ref.name
    }

    /// `spec.kubeconfigSecretRef.key`, or `kubeconfig` when unset or empty.
    pub fn kubeconfig_key(&self) -> &str {
        self.typed
            .spec
            .kubeconfig_secret_ref
            .key
            .as_deref()
            .filter(|k| !k.is_empty())
            .unwrap_or(DEFAULT_KUBECONFIG_KEY)
    }

    /// The kubeconfig as the host's workload calls take it. Always the spec's: it is the Secret the object
    /// references, which is what the host's `workload` grant is limited to.
    pub fn kubeconfig(&self) -> SecretKeyRef {
        SecretKeyRef::local(self.kubeconfig_name(), self.kubeconfig_key())
    }

    /// The kubeconfig the first success pinned, else the spec's: the cluster the written Secret is in,
    /// even when the spec has since been pointed elsewhere.
    pub fn written_kubeconfig(&self) -> SecretKeyRef {
        let status = self.status();
        let name = status
            .and_then(|s| s.kubeconfig_secret_ref.as_deref())
            .filter(|s| !s.is_empty())
            .unwrap_or(self.kubeconfig_name());
        let key = status
            .and_then(|s| s.kubeconfig_secret_key.as_deref())
            .filter(|s| !s.is_empty())
            .unwrap_or(self.kubeconfig_key());
        SecretKeyRef::local(name, key)
    }

    /// `spec.type` when set (blank is refused by validation).
    pub fn spec_type(&self) -> Option<&str> {
        self.typed.spec.type_.as_deref().filter(|t| !t.is_empty())
    }

    pub fn target(&self) -> Target {
        let t = &self.typed.spec.target_secret_ref;
        Target {
            namespace: t.namespace.clone(),
            name: t.name.clone(),
        }
    }

    fn status(&self) -> Option<&OmniSecretSyncStatus> {
        self.typed.status.as_ref()
    }

    /// The workload Secret this sync last wrote, when status records both parts (written only on success).
    pub fn written_target(&self) -> Option<Target> {
        let status = self.status()?;
        let namespace = status
            .target_namespace
            .as_deref()
            .filter(|s| !s.is_empty())?;
        let name = status
            .target_secret_ref
            .as_deref()
            .filter(|s| !s.is_empty())?;
        Some(Target {
            namespace: namespace.into(),
            name: name.into(),
        })
    }

    /// `Some((old name, old key))` when the spec names another kubeconfig Secret or key than the one the
    /// first success pinned in status. A part that was never pinned counts as unchanged.
    pub fn retargeted_kubeconfig(&self) -> Option<(String, String)> {
        let status = self.status()?;
        let pinned_name = status
            .kubeconfig_secret_ref
            .as_deref()
            .filter(|s| !s.is_empty());
        let pinned_key = status
            .kubeconfig_secret_key
            .as_deref()
            .filter(|s| !s.is_empty());
        let name_changed = pinned_name.is_some_and(|n| n != self.kubeconfig_name());
        let key_changed = pinned_key.is_some_and(|k| k != self.kubeconfig_key());
        (name_changed || key_changed).then(|| {
            (
                pinned_name.unwrap_or(self.kubeconfig_name()).to_string(),
                pinned_key.unwrap_or(self.kubeconfig_key()).to_string(),
            )
        })
    }
}
