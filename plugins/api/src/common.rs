//! Types shared by several kinds (the Go `api/v1alpha1/common_types.go`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::conditions::Condition;
#[cfg(feature = "schema")]
use crate::patterns;

/// A reference to another object in the same namespace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LocalObjectReference {
    /// name is the referenced object name.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub name: String,
}

/// A reference to an OmniConnection in the same namespace.
pub type OmniConnectionRef = LocalObjectReference;
/// A reference to an OmniCluster in the same namespace.
pub type OmniClusterRef = LocalObjectReference;

/// One key of a Secret in the same namespace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SecretKeySelector {
    /// name is the Secret name.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub name: String,
    /// key is the Secret data key.
    #[serde(default = "default_service_account_key")]
    pub key: String,
}

fn default_service_account_key() -> String {
    "serviceAccountKey".to_string()
}

impl Default for SecretKeySelector {
    fn default() -> Self {
        SecretKeySelector {
            name: String::new(),
            key: default_service_account_key(),
        }
    }
}

/// Non-interactive Omni authentication.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OmniAuthSpec {
    /// serviceAccountSecretRef points at a Secret key holding the base64-encoded Omni service-account key
    /// (created in the Omni UI or with `omnictl serviceaccount create`).
    pub service_account_secret_ref: SecretKeySelector,
}

/// What happens in Omni when an OmniCluster is deleted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClusterDeletePolicy {
    /// orphan leaves the Omni cluster and its template-managed resources in place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orphan: Option<bool>,
    /// destroyMachines forcefully removes disconnected nodes while the template resources are deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destroy_machines: Option<bool>,
}

/// Labels and annotations copied onto the Omni resource generated from a template document.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Descriptors {
    /// labels are applied to the generated Omni resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// annotations are applied to the generated Omni resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// A Talos machine-configuration patch in an Omni cluster template: either a file below the cluster's
/// templateRoot or an inline patch (exactly one; the admission webhook enforces it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Patch {
    /// file is a patch file path relative to the OmniCluster spec.templateRoot mounted in the operator.
    /// Prefer inline for GitOps unless the operator deployment mounts this file tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// name is the human-readable patch name (Omni requires name or idOverride for inline patches).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// idOverride replaces the config patch ID Omni would generate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_override: Option<String>,
    /// labels are applied to the generated config patch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// annotations are applied to the generated config patch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// inline is a Talos strategic-merge machine configuration patch, any JSON/YAML value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(schema_with = "crate::field_schemas::preserve_unknown_fields")
    )]
    pub inline: Option<Value>,
}

/// A Kubernetes manifest that Omni syncs to the workload cluster: either a file below the cluster's
/// templateRoot or inline objects (exactly one; the admission webhook enforces it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct KubernetesManifest {
    /// name is unique within the cluster template.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub name: String,
    /// mode controls how Omni applies the manifest: `full` keeps it in sync, `one-time` applies it once.
    #[serde(default)]
    pub mode: ManifestMode,
    /// inline lists the Kubernetes objects to sync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(schema_with = "crate::field_schemas::preserve_unknown_list")
    )]
    pub inline: Option<Vec<Value>>,
    /// file is a manifest file path relative to the OmniCluster spec.templateRoot mounted in the operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum ManifestMode {
    #[serde(rename = "one-time")]
    OneTime,
    #[default]
    #[serde(rename = "full")]
    Full,
}

/// The Kubernetes version and optional Omni-managed manifests.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct KubernetesSpec {
    /// version is the Kubernetes version, for example v1.35.0.
    #[cfg_attr(feature = "schema", schemars(pattern(patterns::SEMVER_VERSION)))]
    pub version: String,
    /// manifests are synced to the workload cluster by Omni.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifests: Option<Vec<KubernetesManifest>>,
}

/// The Talos version.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TalosSpec {
    /// version is the Talos version, for example v1.13.2.
    #[cfg_attr(feature = "schema", schemars(pattern(patterns::SEMVER_VERSION)))]
    pub version: String,
}

/// Omni-managed etcd backups.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct BackupConfiguration {
    /// interval is a Go duration such as 1h; "0" disables automatic backups.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub interval: String,
}

/// Optional Omni cluster features.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClusterFeatures {
    /// enableWorkloadProxy enables the Omni workload proxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_workload_proxy: Option<bool>,
    /// useEmbeddedDiscoveryService uses Omni's embedded discovery service instead of discovery.talos.dev.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_embedded_discovery_service: Option<bool>,
    /// diskEncryption makes Omni the key management server for the cluster's disks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_encryption: Option<bool>,
    /// backupConfiguration configures automatic etcd backups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_configuration: Option<BackupConfiguration>,
}

/// Machines allocated from an Omni MachineClass.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MachineClass {
    /// name is the Omni MachineClass name.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub name: String,
    /// size is a number of machines greater than zero, or one of unlimited, infinity, ∞.
    pub size: IntOrString,
}

/// A value that is an integer or a string on the wire (Kubernetes' intstr.IntOrString).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum IntOrString {
    Int(i32),
    String(String),
}

impl Default for IntOrString {
    fn default() -> Self {
        IntOrString::Int(0)
    }
}

/// Restore of a cluster from an etcd backup when it is bootstrapped.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct BootstrapSpec {
    /// clusterUUID is the UUID of the cluster to restore from.
    #[serde(rename = "clusterUUID")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub cluster_uuid: String,
    /// snapshot is the name of the snapshot to restore.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub snapshot: String,
}

/// How many machines a rolling operation touches at once.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RollingStrategy {
    /// maxParallelism is the maximum number of machines operated on in parallel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1)))]
    pub max_parallelism: Option<i32>,
}

/// How a machine set is updated, upgraded or torn down.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct UpdateStrategy {
    /// type is Rolling or Unset; with Unset Omni applies the operation to all machines at once.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<UpdateStrategyType>,
    /// rolling configures the Rolling strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling: Option<RollingStrategy>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum UpdateStrategyType {
    Rolling,
    Unset,
}

/// The fields OmniControlPlane and OmniWorkers share: which machines form the set and how they are
/// configured. Exactly one of machines and machineClass is set (a CEL rule on both kinds).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct MachineSetSpecFields {
    #[serde(flatten)]
    pub descriptors: Descriptors,
    /// machines lists the Omni machine IDs (UUIDs) of a static set. Mutually exclusive with machineClass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub machines: Option<Vec<String>>,
    /// machineClass allocates the set's machines from an Omni MachineClass. Mutually exclusive with machines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_class: Option<MachineClass>,
    /// patches are applied to the machines of this set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patches: Option<Vec<Patch>>,
    /// systemExtensions are installed on every machine of this set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_extensions: Option<Vec<String>>,
    /// kernelArgs are managed for the machines of a static set (not allowed with machineClass).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_args: Option<Vec<String>>,
}

/// How Talos is installed on one static machine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MachineInstallSpec {
    /// disk is the install disk path, for example /dev/sda.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub disk: String,
}

/// Status fields every kind has.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CommonStatusFields {
    /// observedGeneration is the metadata.generation the controller last handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// conditions describe the current state of the resource, at most one per type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))
    )]
    pub conditions: Option<Vec<Condition>>,
}

/// Status fields of kinds that talk to Omni through an OmniConnection.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ConnectionStatusFields {
    /// connectionRef is the OmniConnection name the controller last used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_ref: Option<String>,
    /// endpoint is the Omni endpoint the controller last used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
}

/// Status fields describing the last cluster template sync.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SyncStatusFields {
    /// clusterName is the Omni cluster name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_name: Option<String>,
    /// templateHash is the SHA-256 hash of the last rendered Omni cluster template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_hash: Option<String>,
    /// lastAttemptTime is when the controller last attempted a remote Omni operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub last_attempt_time: Option<String>,
    /// lastSyncTime is when the controller last synced the template to Omni successfully.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub last_sync_time: Option<String>,
    /// lastSyncOutput is a short summary of the last Omni template operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sync_output: Option<String>,
    /// lastStatusOutput is the latest cluster status output read from Omni.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_status_output: Option<String>,
}

/// A kubeconfig stored in a Secret in the same namespace, giving access to a workload cluster
/// (typically written by an OmniKubeconfigExport).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct KubeconfigSecretRef {
    /// name is the kubeconfig Secret name in the same namespace.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub name: String,
    /// key is the Secret data key holding the kubeconfig.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1), extend("default" = "kubeconfig")))]
    pub key: Option<String>,
}

/// Whether a Secret the operator wrote is deleted with the object that wrote it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum SecretDeletionPolicy {
    #[default]
    Delete,
    Orphan,
}
