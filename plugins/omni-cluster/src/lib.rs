//! The OmniCluster plugin: renders the Omni cluster template from an
//! OmniCluster and the OmniControlPlane, OmniWorkers and OmniMachines that reference it, validates it as Omni's
//! client does, keeps Omni in step with it, reports the cluster's health, and deletes or orphans the Omni cluster
//! when the object goes. The template model, translation and the sync algorithm live in `omni-template`.
//!
//! The host does the bookkeeping: finalizer (honouring the legacy one), `observedGeneration`, transition times,
//! committing status only when it changed.
//!
//! Fixes of the Go controller's defects, each named where it is made: failures are reported states with a backoff
//! requeue, not errors; every condition is written on every path, so none is left from an older generation; a
//! `spec.clusterName` changed after Omni has the cluster is refused instead of orphaning it; `lastStatusOutput`
//! carries why the cluster is not healthy (Go's was always empty); status text is cut at a character boundary;
//! `file:` content is read through the host's `files` capability, never via a process working directory.

mod admission;
mod deletion;
mod inputs;
mod outcome;
mod reconcile;
mod timing;

use omni_api::{
    OmniClusterSpec, OmniConnectionSpec, OmniControlPlaneSpec, OmniKind, OmniMachineSpec,
    OmniWorkersSpec,
};
use omni_plugin_sdk::{
    Gvk, Host, Info, Plugin, ReconcileError, Related, RelatedMapping, Value, Verdict,
};

/// The API's names, defined once in omni-api.
pub use omni_api::{API_VERSION, FINALIZER, GROUP, LEGACY_FINALIZER, VERSION};

pub use timing::{DEFAULT_SYNC_INTERVAL_MS, sync_interval_ms};

pub struct OmniClusterPlugin;

impl Plugin for OmniClusterPlugin {
    fn describe() -> Info {
        let related = |kind: &str, mapping: RelatedMapping| Related {
            kind: Gvk::new(GROUP, VERSION, kind),
            mapping,
        };
        Info {
            name: "omni-cluster".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            kinds: vec![Gvk::new(GROUP, VERSION, OmniClusterSpec::KIND)],
            related: vec![
                // A connection's spec changing re-syncs every cluster that names it, as in the Go controller.
                related(
                    OmniConnectionSpec::KIND,
                    RelatedMapping::NameField("spec.connectionRef.name".into()),
                ),
                // A child appearing, changing or going re-renders the cluster it names.
                related(
                    OmniControlPlaneSpec::KIND,
                    RelatedMapping::NamedBy("spec.clusterRef.name".into()),
                ),
                related(
                    OmniWorkersSpec::KIND,
                    RelatedMapping::NamedBy("spec.clusterRef.name".into()),
                ),
                related(
                    OmniMachineSpec::KIND,
                    RelatedMapping::NamedBy("spec.clusterRef.name".into()),
                ),
            ],
            finalizer: Some(FINALIZER.into()),
            legacy_finalizers: vec![LEGACY_FINALIZER.into()],
            // kube-read: the connection and the children; omni: sync, status, delete; files: `file:` patches and
            // manifests under spec.templateRoot; clock: lastAttemptTime/lastSyncTime and backoff.
            capabilities: vec![
                "kube-read".into(),
                "omni".into(),
                "files".into(),
                "clock".into(),
            ],
            secret_fields: Vec::new(),
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

omni_plugin_sdk::export_plugin!(OmniClusterPlugin);

#[cfg(test)]
mod tests;
