//! The OmniKubeconfigExport plugin: asks Omni for a service-account kubeconfig of
//! the workload cluster an OmniCluster names, has the operator write it into a management-cluster Secret host to
//! host (the kubeconfig never enters the plugin), reuses it while it is current and usable, and rotates it before
//! it expires.
//!
//! The host does the Go controller's bookkeeping: it adds the finalizer before the first
//! reconcile, writes `observedGeneration` and transition times, calls [`Plugin::finalize`] while the object is
//! being deleted and removes the finalizer once that returns `Ok(true)`.
//!
//! Fixes of the Go controller's defects, each made where the module doc names it: a Secret this export does not
//! own is never written, adopted or deleted; the status keeps recording the Secret that holds the kubeconfig
//! until a new one is written, so a renamed target is still cleaned up after a failure; the reuse check and the
//! write always use the spec's target; failures leave the rotation data in the status. Go's "error +
//! RequeueAfter 1m" paths, where controller-runtime dropped the minute for its own backoff, are reported states
//! retried after a minute.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod admission;
mod deletion;
mod export;
mod reconcile;
mod report;
mod reuse;
mod rotation;
mod spec;
mod spec_hash;
mod target;
mod validation;

use omni_api::{OmniClusterSpec, OmniKind, OmniKubeconfigExportSpec};
use omni_plugin_sdk::{
    Gvk, Host, Info, Plugin, ReconcileError, Related, RelatedMapping, SecretField, Value, Verdict,
};

pub use spec_hash::{spec_hash, spec_json};

/// The API's names, defined once in omni-api.
pub use omni_api::{API_VERSION, FINALIZER, GROUP, VERSION};
/// The kind this plugin reconciles.
pub const KIND: &str = OmniKubeconfigExportSpec::KIND;

/// The labels and annotations of the Secrets this plugin has written, defined once in omni-api.
pub use omni_api::labels::kubeconfig_export::{
    EXPIRATION_ANNOTATION, HASH_ANNOTATION, LAST_ROTATION_ANNOTATION, NAME_ANNOTATION,
    NAMESPACE_ANNOTATION, OWNER_LABEL, SPEC_HASH_ANNOTATION,
};
pub use omni_api::labels::{CLUSTER_LABEL, MANAGED_BY, MANAGED_BY_LABEL};

/// The key a kubeconfig goes under when `spec.targetSecretRef.key` is not set (the CRD default too).
pub const DEFAULT_TARGET_KEY: &str = "kubeconfig";

/// How soon a missing dependency or a failed export is looked at again (Go: `RequeueAfter: 1m`).
pub const RETRY_MS: u64 = 60_000;

pub struct OmniKubeconfigExportPlugin;

impl Plugin for OmniKubeconfigExportPlugin {
    fn describe() -> Info {
        Info {
            name: "omni-kubeconfig-export".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            kinds: vec![Gvk::new(GROUP, VERSION, KIND)],
            related: vec![
                // The cluster appearing or changing (its Omni name, its connection) re-exports, as in the Go
                // controller.
                Related {
                    kind: Gvk::new(GROUP, VERSION, OmniClusterSpec::KIND),
                    mapping: RelatedMapping::NameField("spec.clusterRef.name".into()),
                },
                // A written Secret names its export: an edited or deleted kubeconfig is repaired at once, not at
                // the next rotation.
                Related {
                    kind: Gvk::new("", "v1", "Secret"),
                    mapping: RelatedMapping::Annotated {
                        namespace_annotation: NAMESPACE_ANNOTATION.into(),
                        name_annotation: NAME_ANNOTATION.into(),
                    },
                },
            ],
            finalizer: Some(FINALIZER.into()),
            // This kind never had the pre-rename finalizer.
            legacy_finalizers: Vec::new(),
            // kube-read: the cluster and its connection; omni: the export itself; secrets: the target's metadata
            // and digest for the reuse check; secrets-write: the host writes and deletes the target; workload: the
            // usability probe; clock: expiration and rotation times.
            capabilities: [
                "kube-read",
                "omni",
                "secrets",
                "secrets-write",
                "workload",
                "clock",
            ]
            .map(String::from)
            .to_vec(),
            // The target the spec names, and the one the status records (cleaned up after a rename).
            secret_fields: vec![
                SecretField::with_namespace(
                    "spec.targetSecretRef.name",
                    "spec.targetSecretRef.namespace",
                ),
                SecretField::with_namespace(
                    "status.targetSecretRef",
                    "status.targetSecretNamespace",
                ),
            ],
        }
    }

    fn reconcile<H: Host>(host: &H) -> Result<(), ReconcileError> {
        reconcile::reconcile(host)
    }

    fn finalize<H: Host>(host: &H) -> Result<bool, ReconcileError> {
        deletion::finalize(host)
    }

    fn validate(object: &Value, old: Option<&Value>) -> Verdict {
        admission::validate(object, old)
    }
}

omni_plugin_sdk::export_plugin!(OmniKubeconfigExportPlugin);

#[cfg(test)]
mod tests;
