use serde::{Deserialize, Serialize};

use crate::common::{CommonStatusFields, Descriptors, MachineInstallSpec, OmniClusterRef, Patch};

/// Per-machine settings for one machine of an OmniCluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OmniMachineSpec {
    #[serde(flatten)]
    pub descriptors: Descriptors,
    /// clusterRef attaches this machine to an OmniCluster in the same namespace.
    pub cluster_ref: OmniClusterRef,
    /// machineID is the Omni machine ID (a UUID); metadata.name when omitted.
    #[serde(rename = "machineID", default, skip_serializing_if = "Option::is_none")]
    pub machine_id: Option<String>,
    /// locked prevents Omni from applying configuration changes and upgrades to this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locked: Option<bool>,
    /// install configures how Talos is installed on this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install: Option<MachineInstallSpec>,
    /// patches are applied to this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patches: Option<Vec<Patch>>,
    /// systemExtensions are installed on this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_extensions: Option<Vec<String>>,
    /// kernelArgs are managed for this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_args: Option<Vec<String>>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OmniMachineStatus {
    #[serde(flatten)]
    pub common: CommonStatusFields,
    /// clusterRef is the OmniCluster name the controller last saw in spec.clusterRef.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_ref: Option<String>,
    /// machineID is the effective Omni machine ID.
    #[serde(rename = "machineID", default, skip_serializing_if = "Option::is_none")]
    pub machine_id: Option<String>,
}

super::omni_kind!(
    OmniMachine,
    OmniMachineSpec,
    OmniMachineStatus,
    kind = "OmniMachine",
    plural = "omnimachines",
    singular = "omnimachine"
);
