//! The OmniHelmRelease as reconcile and deletion read it, and the values the Go operator normalised from it:
//! the release name and namespace, the kubeconfig key, the timeout and the deletion policy.
//!
//! The normalisations are functions of the raw object, so that the status of an object that failed validation
//! (and may not even decode) reports them too; [`ReleaseObject`] answers with the same functions.

use omni_api::{HelmDeletionPolicy, OmniHelmRelease};
use omni_plugin_sdk::secrets::SecretKeyRef;
use omni_plugin_sdk::{Host, ReconcileError, Value};

use crate::rules::text;

/// The kubeconfig key when `spec.kubeconfigSecretRef.key` is unset (the CRD's default, and Go's).
pub const DEFAULT_KUBECONFIG_KEY: &str = "kubeconfig";
/// The release namespace when `spec.namespace` is unset (the CRD's default, and Go's).
pub const DEFAULT_NAMESPACE: &str = "default";
/// Helm's timeout when `spec.timeout` is unset or not positive (Go's `DefaultTimeout`).
pub const DEFAULT_TIMEOUT_S: u32 = 5 * 60;

/// A string field when set and non-empty, as Go's `if x != ""`.
fn non_empty(v: &Value) -> Option<&str> {
    v.as_str().filter(|s| !s.is_empty())
}

/// `spec.releaseName`, else `metadata.name`.
pub fn release_name(object: &Value) -> &str {
    non_empty(&object["spec"]["releaseName"]).unwrap_or_else(|| text(&object["metadata"]["name"]))
}

/// `spec.namespace`, else `default`.
pub fn release_namespace(object: &Value) -> &str {
    non_empty(&object["spec"]["namespace"]).unwrap_or(DEFAULT_NAMESPACE)
}

/// `spec.kubeconfigSecretRef.key`, else `kubeconfig`.
pub fn kubeconfig_key(object: &Value) -> &str {
    non_empty(&object["spec"]["kubeconfigSecretRef"]["key"]).unwrap_or(DEFAULT_KUBECONFIG_KEY)
}

/// The typed object. It fits the type whenever it passed the CRD schema; reconcile validates the raw object
/// first, so even an object missing required fields is reported as `ValidationFailed` rather than failing here.
pub struct ReleaseObject {
    pub raw: Value,
    pub typed: OmniHelmRelease,
}

impl ReleaseObject {
    pub fn read<H: Host>(host: &H) -> Result<Self, ReconcileError> {
        Ok(ReleaseObject {
            raw: host.object(),
            typed: host.object_as()?,
        })
    }

    pub fn namespace(&self) -> &str {
        self.typed.namespace()
    }

    pub fn cluster_ref(&self) -> &str {
        &self.typed.spec.cluster_ref.name
    }

    pub fn release_name(&self) -> &str {
        release_name(&self.raw)
    }

    pub fn release_namespace(&self) -> &str {
        release_namespace(&self.raw)
    }

    pub fn kubeconfig_name(&self) -> &str {
        &self.typed.spec.kubeconfig_secret_ref.name
    }

    pub fn kubeconfig_key(&self) -> &str {
        kubeconfig_key(&self.raw)
    }

    /// The kubeconfig as the host's helm calls take it: the Secret the object names, the only one the `helm`
    /// grant lets the plugin use.
    pub fn kubeconfig(&self) -> SecretKeyRef {
        SecretKeyRef::local(self.kubeconfig_name(), self.kubeconfig_key())
    }

    /// `spec.suspend`: no Helm action, and deletion leaves the release.
    pub fn suspended(&self) -> bool {
        self.typed.spec.suspend == Some(true)
    }

    pub fn orphans(&self) -> bool {
        self.typed.spec.deletion_policy == Some(HelmDeletionPolicy::Orphan)
    }

    /// Helm's timeout in whole seconds, rounded up and at least 1: `spec.timeout` when it parses and is positive,
    /// else 5 minutes (the Go operator's default). Reconcile refuses an unparsable or non-positive timeout before
    /// it gets here; deletion does not, so that a bad timeout cannot keep a release from being uninstalled.
    pub fn timeout_seconds(&self) -> u32 {
        let ns = self
            .typed
            .spec
            .timeout
            .as_deref()
            .and_then(|t| omni_plugin_sdk::go::parse_duration(t).ok())
            .filter(|ns| *ns > 0);
        match ns {
            Some(ns) => {
                let seconds = (ns as u64).div_ceil(1_000_000_000).max(1);
                u32::try_from(seconds).unwrap_or(u32::MAX)
            }
            None => DEFAULT_TIMEOUT_S,
        }
    }
}
