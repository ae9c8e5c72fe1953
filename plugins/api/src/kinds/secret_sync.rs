use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::common::{
    CommonStatusFields, KubeconfigSecretRef, LocalObjectReference, OmniClusterRef,
    SecretDeletionPolicy,
};

/// A copy of a management-cluster Secret kept in sync in an Omni workload cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OmniSecretSyncSpec {
    /// clusterRef attaches this sync to an OmniCluster in the same namespace.
    pub cluster_ref: OmniClusterRef,
    /// kubeconfigSecretRef selects the Secret key holding the workload-cluster kubeconfig, for example one
    /// written by an OmniKubeconfigExport. It cannot be changed after creation.
    pub kubeconfig_secret_ref: KubeconfigSecretRef,
    /// sourceSecretRef selects the Secret to copy, in the same namespace as this object.
    pub source_secret_ref: LocalObjectReference,
    /// targetSecretRef selects the workload-cluster Secret to create or update.
    pub target_secret_ref: SecretSyncTargetRef,
    /// type overrides the target Secret type; the source Secret's type when omitted.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// labels are merged into the target Secret's labels, next to the operator's ownership labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// annotations are merged into the target Secret's annotations, next to the operator's ownership
    /// annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// createNamespace creates the target namespace in the workload cluster when it is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_namespace: Option<bool>,
    /// deletionPolicy says whether the workload-cluster Secret is deleted or left in place when this object
    /// is deleted.
    pub deletion_policy: SecretDeletionPolicy,
}

/// The workload-cluster Secret a sync writes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SecretSyncTargetRef {
    /// name is the Secret name in the workload cluster.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub name: String,
    /// namespace is the Secret namespace in the workload cluster.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub namespace: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OmniSecretSyncStatus {
    #[serde(flatten)]
    pub common: CommonStatusFields,
    /// clusterRef is the OmniCluster name the controller last used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_ref: Option<String>,
    /// kubeconfigSecretRef is the kubeconfig Secret name the controller last used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig_secret_ref: Option<String>,
    /// kubeconfigSecretKey is the kubeconfig Secret key the controller last used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig_secret_key: Option<String>,
    /// sourceSecretRef is the source Secret name the controller last copied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_secret_ref: Option<String>,
    /// targetSecretRef is the workload-cluster Secret name the controller last wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_secret_ref: Option<String>,
    /// targetNamespace is the workload-cluster namespace the controller last wrote to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_namespace: Option<String>,
    /// secretType is the target Secret type the controller last wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_type: Option<String>,
    /// secretHash is the SHA-256 hash of the synced Secret data and type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_hash: Option<String>,
    /// lastAttemptTime is when the controller last attempted a sync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub last_attempt_time: Option<String>,
    /// lastSyncTime is when a sync last succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub last_sync_time: Option<String>,
    /// lastError is the last sync, cleanup, credential or dependency error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

super::omni_kind!(
    OmniSecretSync,
    OmniSecretSyncSpec,
    OmniSecretSyncStatus,
    kind = "OmniSecretSync",
    plural = "omnisecretsyncs",
    singular = "omnisecretsync"
);
