use serde::{Deserialize, Serialize};

use crate::common::{
    ClusterDeletePolicy, ClusterFeatures, CommonStatusFields, ConnectionStatusFields, Descriptors,
    KubernetesSpec, OmniConnectionRef, Patch, SyncStatusFields, TalosSpec,
};
#[cfg(feature = "schema")]
use crate::patterns;

/// An Omni cluster, synced to Omni as a cluster template together with the OmniControlPlane,
/// OmniWorkers and OmniMachine objects that reference it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OmniClusterSpec {
    #[serde(flatten)]
    pub descriptors: Descriptors,
    /// connectionRef selects the OmniConnection used for this cluster and all its template documents.
    pub connection_ref: OmniConnectionRef,
    /// clusterName is the Omni cluster name; metadata.name when omitted. Changing it creates a different
    /// cluster in Omni.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(pattern(patterns::OMNI_NAME)))]
    pub cluster_name: Option<String>,
    /// kubernetes selects the Kubernetes version and optional Omni-managed manifests.
    pub kubernetes: KubernetesSpec,
    /// talos selects the Talos version.
    pub talos: TalosSpec,
    /// features configures optional Omni cluster features.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub features: Option<ClusterFeatures>,
    /// patches are applied at cluster scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patches: Option<Vec<Patch>>,
    /// systemExtensions are installed on every machine of the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_extensions: Option<Vec<String>>,
    /// kernelArgs are managed for the cluster's static machines; valid only when no machine set uses a
    /// machineClass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_args: Option<Vec<String>>,
    /// templateRoot is a directory in the operator container against which file-based patches and
    /// manifests are resolved. Inline patches and manifests are recommended for GitOps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_root: Option<String>,
    /// deletePolicy controls what is removed from Omni when this object is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_policy: Option<ClusterDeletePolicy>,
    /// syncInterval is how often the template is re-synced to Omni even when nothing changed
    /// (a Go duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = "5m")))]
    pub sync_interval: Option<String>,
    /// suspend stops syncing to Omni; status and finalizers are kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OmniClusterStatus {
    #[serde(flatten)]
    pub common: CommonStatusFields,
    #[serde(flatten)]
    pub connection: ConnectionStatusFields,
    #[serde(flatten)]
    pub sync: SyncStatusFields,
    /// controlPlaneRef names the OmniControlPlane in the last rendered template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_ref: Option<String>,
    /// workersRefs name the OmniWorkers in the last rendered template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers_refs: Option<Vec<String>>,
    /// machineRefs name the OmniMachines in the last rendered template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_refs: Option<Vec<String>>,
}

super::omni_kind!(
    OmniCluster,
    OmniClusterSpec,
    OmniClusterStatus,
    kind = "OmniCluster",
    plural = "omniclusters",
    singular = "omnicluster"
);
