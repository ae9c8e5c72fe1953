use serde::{Deserialize, Serialize};

use crate::common::{BootstrapSpec, CommonStatusFields, MachineSetSpecFields, OmniClusterRef};

/// The control-plane machine set of one OmniCluster.
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
pub struct OmniControlPlaneSpec {
    #[serde(flatten)]
    pub machine_set: MachineSetSpecFields,
    /// clusterRef attaches this control plane to an OmniCluster in the same namespace.
    pub cluster_ref: OmniClusterRef,
    /// bootstrapSpec restores the cluster from an etcd backup when it is created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootstrap_spec: Option<BootstrapSpec>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OmniControlPlaneStatus {
    #[serde(flatten)]
    pub common: CommonStatusFields,
    /// clusterRef is the OmniCluster name the controller last saw in spec.clusterRef.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_ref: Option<String>,
}

super::omni_kind!(
    OmniControlPlane,
    OmniControlPlaneSpec,
    OmniControlPlaneStatus,
    kind = "OmniControlPlane",
    plural = "omnicontrolplanes",
    singular = "omnicontrolplane"
);
