//! The OmniSecretSync plugin: keeps a copy of a management-cluster Secret in an
//! Omni workload cluster, reached through a kubeconfig Secret, and deletes or orphans that copy when the object
//! goes.
//!
//! The Secret's values never pass through the plugin: the host copies `data` host to host
//! ([`Host::workload_copy_secret`]), computes the Go operator's content hash and stamps it in the
//! `omni.texashpc.com/secret-sync-hash` annotation, replaces the target's labels and annotations, writes nothing
//! when the target already matches, and recreates an owned target whose type changed. The host also does the
//! bookkeeping: the finalizer (added before the first reconcile, removed once [`Plugin::finalize`] says done),
//! `observedGeneration`, condition transition times, committing status only when it changed.
//!
//! Where this plugin deliberately differs from the Go controller, each fix named where it is made:
//! * A workload Secret without this sync's owner label is never changed or deleted; the host answers
//!   "not owned" and the plugin reports it (`messages::not_owned`).
//! * `status.targetSecretRef`/`targetNamespace` record the Secret last *written*, so a renamed target's
//!   predecessor stays known (and is cleaned up with `deletionPolicy: Delete`) even when failures come between.
//! * `kubeconfigSecretRef` is immutable even without the admission webhook: the first success pins it in
//!   status, and a sync whose spec names another kubeconfig does nothing in any workload cluster.
//! * Deletion that cannot reach the workload cluster gives up after [`GIVE_UP_AFTER_S`] and
//!   leaves the Secret in place, with a Warning Event, instead of blocking forever.
//! * Failures are reported states with a fixed requeue, not errors, so the status is committed and the
//!   interval is the one chosen (Go returned both, and controller-runtime replaced the minute with its backoff).
//! * Drift repair: a synced object is looked at again every [`RESYNC_MS`], because the workload
//!   cluster is not watched (Go never re-synced on its own).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod admission;
mod deletion;
mod messages;
mod object;
mod reconcile;
mod report;
mod target;
mod validation;

use omni_api::{OmniClusterSpec, OmniKind, OmniSecretSyncSpec};
use omni_plugin_sdk::{
    Gvk, Host, Info, Plugin, ReconcileError, Related, RelatedMapping, SecretField, Value, Verdict,
};

pub use deletion::{DELETE_RETRY_MS, GIVE_UP_AFTER_S};
pub use reconcile::{RESYNC_MS, RETRY_MS};

/// The API's names, defined once in omni-api.
pub use omni_api::{API_VERSION, FINALIZER, GROUP, VERSION};
/// The kind this plugin reconciles.
pub const KIND: &str = OmniSecretSyncSpec::KIND;

pub struct OmniSecretSyncPlugin;

impl Plugin for OmniSecretSyncPlugin {
    fn describe() -> Info {
        let secret = |path: &str| Related {
            kind: Gvk::new("", "v1", "Secret"),
            mapping: RelatedMapping::NameField(path.into()),
        };
        Info {
            name: "omni-secret-sync".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            kinds: vec![Gvk::new(GROUP, VERSION, KIND)],
            related: vec![
                // The Go controller's triggers: the cluster appearing or changing (its name is a target label), and
                // every change of the source or kubeconfig Secret (Go watched Secrets without a predicate).
                Related {
                    kind: Gvk::new(GROUP, VERSION, OmniClusterSpec::KIND),
                    mapping: RelatedMapping::NameField("spec.clusterRef.name".into()),
                },
                secret("spec.sourceSecretRef.name"),
                secret("spec.kubeconfigSecretRef.name"),
            ],
            finalizer: Some(FINALIZER.into()),
            // This kind never had the legacy finalizer, so there is none to honour.
            legacy_finalizers: Vec::new(),
            // kube-read: the OmniCluster; secrets: whether the source and kubeconfig Secrets and key exist, never
            // their values; workload: the copy and the owner-checked deletes; clock: lastAttemptTime/lastSyncTime
            // and the deletion bound.
            capabilities: vec![
                "kube-read".into(),
                "secrets".into(),
                "workload".into(),
                "clock".into(),
            ],
            // The source and the kubeconfig the spec names, and the kubeconfig the first success pinned.
            secret_fields: vec![
                SecretField::local("spec.sourceSecretRef.name"),
                SecretField::local("spec.kubeconfigSecretRef.name"),
                SecretField::local("status.kubeconfigSecretRef"),
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

omni_plugin_sdk::export_plugin!(OmniSecretSyncPlugin);

#[cfg(test)]
mod tests;
