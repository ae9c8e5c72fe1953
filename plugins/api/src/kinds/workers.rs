use serde::{Deserialize, Serialize};

use crate::common::{CommonStatusFields, MachineSetSpecFields, OmniClusterRef, UpdateStrategy};
#[cfg(feature = "schema")]
use crate::patterns;

/// A worker machine set of one OmniCluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(
    feature = "schema",
    schemars(extend("x-kubernetes-validations" = [{
        "rule": "has(self.machines) != has(self.machineClass)",
        "message": "exactly one of machines or machineClass is required"
    }]))
)]
#[serde(rename_all = "camelCase")]
pub struct OmniWorkersSpec {
    #[serde(flatten)]
    pub machine_set: MachineSetSpecFields,
    /// clusterRef attaches this worker set to an OmniCluster in the same namespace.
    pub cluster_ref: OmniClusterRef,
    /// workerSetName is the Omni machine-set name; metadata.name when omitted. control-planes is reserved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(pattern(patterns::OMNI_NAME)))]
    pub worker_set_name: Option<String>,
    /// updateStrategy controls how configuration changes roll out to the set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<UpdateStrategy>,
    /// upgradeStrategy controls how Kubernetes and Talos upgrades roll out to the set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_strategy: Option<UpdateStrategy>,
    /// deleteStrategy controls how machines leave the set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_strategy: Option<UpdateStrategy>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OmniWorkersStatus {
    #[serde(flatten)]
    pub common: CommonStatusFields,
    /// clusterRef is the OmniCluster name the controller last saw in spec.clusterRef.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_ref: Option<String>,
    /// workerSetName is the effective Omni machine-set name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_set_name: Option<String>,
}

super::omni_kind!(
    OmniWorkers,
    OmniWorkersSpec,
    OmniWorkersStatus,
    kind = "OmniWorkers",
    plural = "omniworkers",
    singular = "omniworkers"
);
