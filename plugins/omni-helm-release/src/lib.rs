//! The OmniHelmRelease plugin: a Helm release in an Omni workload cluster, reached
//! through a kubeconfig Secret, installed and upgraded while the object exists and uninstalled (or orphaned) when
//! it goes; with Flux helm-controller's remediation, tests, value sources, dependencies and suspend on top.
//!
//! Helm itself runs in the host. Each reconcile observes the release
//! ([`omni_plugin_sdk::Helm::helm_observe`]: Helm's storage in the workload cluster, what the host runs or ran
//! for it, and the digest of the chart and merged values wanted) and starts at most one action
//! ([`omni_plugin_sdk::Helm::helm_start`]), chosen by Flux's release state machine (`machine`) from the policy in
//! the spec (`policy`) and the counters in the status (`ledger`). The host runs it in the background and calls
//! reconcile again when it ends. No kubeconfig, chart credential or `valuesFrom` value ever reaches the plugin.
//! The host also does the bookkeeping: the finalizer (added before the first reconcile, removed once
//! [`Plugin::finalize`] says done), `observedGeneration`, condition transition times, and committing status only
//! when it changed.
//!
//! Where this plugin deliberately differs from the Go controller, each fix named where it is made:
//! * A reconcile with nothing changed makes no Helm revision (Go upgraded on every reconcile,
//!   including every kubeconfig rotation and Secret resync): the host stamps each revision with a digest of what
//!   it was made from, and the machine acts only when the deployed digest is not the wanted one.
//! * Drift repair (Go had none): a released object is looked at again every `spec.interval` (5 minutes by
//!   default). Each look re-reads the release from the workload cluster, so a release deleted, rolled back or
//!   failed behind the operator's back is noticed and repaired.
//! * Steady state writes nothing: `lastAttemptTime` is the time the host's last action *finished*, not the time
//!   of the reconcile (Go stamped `now` on every update). A reconcile that changes nothing leaves the status byte
//!   for byte as it was, so the host writes nothing.
//! * Events: one per action outcome, with Flux's reasons (`InstallSucceeded`, `UpgradeFailed`, `TestFailed`,
//!   `RollbackSucceeded`, …; Go emitted none), never one per reconcile.
//! * Progress is visible: while an action runs, `Released` and `Ready` are `Unknown` with reason [`PROGRESSING`].
//! * An `Uninstall` deletion that cannot proceed never blocks silently: the reason names the cause and the
//!   escape (`spec.deletionPolicy: Orphan`, allowed while terminating).
//! * Failures are reported states with a chosen requeue, not errors, so the status is committed (Go returned an
//!   error with its requeue, and controller-runtime's backoff ignored the requeue).
//! * Release names Helm refuses (longer than 53 characters, not a DNS-1123 subdomain) are refused at
//!   admission and reported by the controller, instead of failing inside Helm.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod admission;
mod deletion;
mod dependencies;
mod drift;
mod identity;
mod kubeconfig;
mod ledger;
mod machine;
mod messages;
mod object;
mod policy;
mod ready_expr;
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
/// Where the object names the Secrets and ConfigMaps its values come from.
const VALUES_FROM_SECRETS: &str = "spec.valuesFrom[kind=Secret].name";
const VALUES_FROM_CONFIG_MAPS: &str = "spec.valuesFrom[kind=ConfigMap].name";
/// Where the object names the Secrets its chart source is reached with.
const CHART_CREDENTIALS: &str = "spec.chart.secretRef.name";
const CHART_TLS: &str = "spec.chart.certSecretRef.name";
const CHART_VERIFY_KEYS: &str = "spec.chart.verify.secretRef.name";

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
                // The Go operator's triggers: the cluster appearing, changing or going, and every change of the
                // kubeconfig Secret. Neither makes a revision by itself any more: the host only acts on a changed
                // digest.
                Related {
                    kind: Gvk::new(GROUP, VERSION, OmniClusterSpec::KIND),
                    mapping: RelatedMapping::NameField("spec.clusterRef.name".into()),
                },
                Related {
                    kind: Gvk::new("", "v1", "Secret"),
                    mapping: RelatedMapping::NameField("spec.kubeconfigSecretRef.name".into()),
                },
                // A change to a ConfigMap or Secret the values come from; an upgrade follows only when the
                // merged values changed (the host compares digests).
                Related {
                    kind: Gvk::new("", "v1", "Secret"),
                    mapping: RelatedMapping::NameField(VALUES_FROM_SECRETS.into()),
                },
                Related {
                    kind: Gvk::new("", "v1", "ConfigMap"),
                    mapping: RelatedMapping::NameField(VALUES_FROM_CONFIG_MAPS.into()),
                },
            ],
            finalizer: Some(FINALIZER.into()),
            // This kind never had the legacy finalizer, so there is none to honour.
            legacy_finalizers: Vec::new(),
            // kube-read: the OmniCluster, the releases in dependsOn and the export writing the kubeconfig; secrets:
            // whether the kubeconfig Secret and key exist (never their values), and the host may read the values
            // and chart-credential Secrets the object names for Helm; helm: the releases; clock: retry delays, the
            // age of a pending revision, lastAttemptTime of failures that have no action outcome.
            capabilities: vec![
                "kube-read".into(),
                "secrets".into(),
                "helm".into(),
                // Asked for only when an object says so (disableTakeOwnership: false, serviceAccountName); a
                // binding that grants neither still runs every other release.
                "helm-take-ownership".into(),
                "helm-impersonate".into(),
                "clock".into(),
            ],
            // The kubeconfig; and the ConfigMaps and Secrets whose values the host reads for Helm (never for
            // the plugin).
            secret_fields: vec![
                SecretField::local("spec.kubeconfigSecretRef.name"),
                SecretField::local(VALUES_FROM_SECRETS),
                SecretField::local(VALUES_FROM_CONFIG_MAPS),
                SecretField::local(CHART_CREDENTIALS),
                SecretField::local(CHART_TLS),
                SecretField::local(CHART_VERIFY_KEYS),
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

omni_plugin_sdk::export_plugin!(OmniHelmReleasePlugin);

#[cfg(test)]
mod tests;
