//! The OmniHelmRelease plugin (spec/original-operator.md §6): a Helm release in an Omni workload cluster, reached
//! through a kubeconfig Secret, installed and upgraded while the object exists and uninstalled (or orphaned) when
//! it goes.
//!
//! Helm itself runs in the host: the plugin states the release it wants
//! ([`omni_plugin_sdk::Helm::helm_ensure`]) and reports where the host says it stands. The host runs an install
//! or upgrade only when the release is missing, failed, pending, or made from another chart, version or values
//! (it stamps a digest of those on every revision it makes), runs it in the background, and calls reconcile
//! again when the action ends. No kubeconfig or chart credential ever
//! reaches the plugin. The host also does the bookkeeping: the finalizer (added before the first reconcile,
//! removed once [`Plugin::finalize`] says done), `observedGeneration`, condition transition times, and committing
//! status only when it changed.
//!
//! Where this plugin deliberately differs from the Go controller, each fix named where it is made:
//! * §10.12 and §10.30: a reconcile with nothing changed makes no Helm revision (Go upgraded on every reconcile,
//!   including every kubeconfig rotation and Secret resync); the host compares digests.
//! * Drift repair (§6.8: Go had none): a released object is looked at again every [`RESYNC_MS`] (5 minutes).
//!   Each ensure re-reads the release from the workload cluster, so a release deleted, rolled back or failed
//!   behind the operator's back is noticed and repaired.
//! * Steady state writes nothing: `lastAttemptTime` is the time the host's last action *finished*, not the time
//!   of the reconcile (Go stamped `now` on every update). A reconcile that changes nothing leaves the status byte
//!   for byte as it was, so the host writes nothing. The clock is read only for failures that come without any
//!   action outcome (validation, missing cluster or kubeconfig, the host failing the call), as Go's "reason
//!   without error" did; and `lastAttemptTime` never moves backwards to an older outcome (`report`).
//! * Events: a Normal `HelmInstalled`/`HelmUpgraded` or a Warning `ReconcileFailed` once per action outcome (Go
//!   emitted none), never on every reconcile.
//! * Progress is visible: while an action runs, `Released` and `Ready` are `Unknown` with reason [`PROGRESSING`].
//! * §10.13: an `Uninstall` deletion that cannot proceed never blocks silently: the reason names the cause and the
//!   escape (`spec.deletionPolicy: Orphan`, allowed while terminating).
//! * §10.14: failures are reported states with a fixed requeue, not errors, so the status is committed and the
//!   interval is the one chosen.
//! * §10.17: release names Helm refuses (longer than 53 characters, not a DNS-1123 subdomain) are refused at
//!   admission and reported by the controller, instead of failing inside Helm.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod admission;
mod deletion;
mod kubeconfig;
mod messages;
mod object;
mod reconcile;
mod report;
mod request;
mod rules;
mod url;
mod validation;

use omni_api::{OmniClusterSpec, OmniHelmReleaseSpec, OmniKind};
use omni_plugin_sdk::{
    Gvk, Host, Info, Plugin, ReconcileError, Related, RelatedMapping, SecretField, Value, Verdict,
};

pub use reconcile::{PROGRESS_CHECK_MS, RESYNC_MS, RETRY_MS};
pub use report::PROGRESSING;

/// The API's names, defined once in omni-api.
pub use omni_api::{API_VERSION, FINALIZER, GROUP, VERSION};
/// The kind this plugin reconciles.
pub const KIND: &str = OmniHelmReleaseSpec::KIND;

pub struct OmniHelmReleasePlugin;

impl Plugin for OmniHelmReleasePlugin {
    fn describe() -> Info {
        Info {
            name: "omni-helm-release".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            kinds: vec![Gvk::new(GROUP, VERSION, KIND)],
            related: vec![
                // §6.8 triggers: the cluster appearing, changing or going, and every change of the kubeconfig
                // Secret. Neither makes a revision by itself any more: the host only acts on a changed digest.
                Related {
                    kind: Gvk::new(GROUP, VERSION, OmniClusterSpec::KIND),
                    mapping: RelatedMapping::NameField("spec.clusterRef.name".into()),
                },
                Related {
                    kind: Gvk::new("", "v1", "Secret"),
                    mapping: RelatedMapping::NameField("spec.kubeconfigSecretRef.name".into()),
                },
            ],
            finalizer: Some(FINALIZER.into()),
            // This kind never had the legacy finalizer (spec §0.2), so there is none to honour.
            legacy_finalizers: Vec::new(),
            // kube-read: the OmniCluster; secrets: whether the kubeconfig Secret and key exist, never their
            // values; helm: the releases; clock: lastAttemptTime of failures that have no action outcome.
            capabilities: vec![
                "kube-read".into(),
                "secrets".into(),
                "helm".into(),
                "clock".into(),
            ],
            secret_fields: vec![SecretField::local("spec.kubeconfigSecretRef.name")],
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

omni_plugin_sdk::export_plugin!(OmniHelmReleasePlugin);

#[cfg(test)]
mod tests;
