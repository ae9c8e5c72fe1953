use serde::{Deserialize, Serialize};

use crate::common::{
    CommonStatusFields, ConnectionStatusFields, OmniClusterRef, SecretDeletionPolicy,
};
#[cfg(feature = "schema")]
use crate::patterns;

/// A service-account kubeconfig for an Omni workload cluster, requested from Omni, written to a Secret
/// and rotated before it expires.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OmniKubeconfigExportSpec {
    /// clusterRef selects the OmniCluster whose workload-cluster kubeconfig is exported.
    pub cluster_ref: OmniClusterRef,
    /// targetSecretRef selects the Secret key that receives the kubeconfig.
    pub target_secret_ref: ExportTargetSecretRef,
    /// serviceAccount describes the identity embedded in the kubeconfig.
    pub service_account: ExportServiceAccount,
    /// contextNamespace sets the namespace of the kubeconfig's current context; Omni's choice is kept when
    /// omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(length(min = 1, max = 63), pattern(patterns::DNS_LABEL))
    )]
    pub context_namespace: Option<String>,
    /// ttl is the requested kubeconfig lifetime (a Go duration, greater than zero).
    pub ttl: String,
    /// renewBefore rotates the kubeconfig this long before it expires (a Go duration, less than ttl);
    /// rotation happens at expiry when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_before: Option<String>,
    /// deletionPolicy says whether the target Secret is deleted or left in place when this object is
    /// deleted.
    pub deletion_policy: SecretDeletionPolicy,
}

/// Where the exported kubeconfig is written.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ExportTargetSecretRef {
    /// name is the target Secret name.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub name: String,
    /// namespace is the target Secret namespace; the export's own namespace when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(length(min = 1), pattern(patterns::DNS_LABEL))
    )]
    pub namespace: Option<String>,
    /// key is the Secret data key that receives the kubeconfig.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1), extend("default" = "kubeconfig")))]
    pub key: Option<String>,
}

/// The Kubernetes identity of an exported kubeconfig.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ExportServiceAccount {
    /// user is the Kubernetes user name embedded in the kubeconfig.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub user: String,
    /// groups are the Kubernetes groups embedded in the kubeconfig; system:masters requires
    /// allowClusterAdmin.
    #[cfg_attr(
        feature = "schema",
        schemars(length(min = 1), extend("x-kubernetes-list-type" = "set"))
    )]
    pub groups: Vec<String>,
    /// allowClusterAdmin permits system:masters in groups. Leave it false for scoped automation
    /// credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_cluster_admin: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OmniKubeconfigExportStatus {
    #[serde(flatten)]
    pub common: CommonStatusFields,
    #[serde(flatten)]
    pub connection: ConnectionStatusFields,
    /// clusterRef is the OmniCluster name the controller last used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_ref: Option<String>,
    /// clusterName is the Omni cluster name the kubeconfig is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_name: Option<String>,
    /// targetSecretRef is the target Secret name the controller last wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_secret_ref: Option<String>,
    /// targetSecretNamespace is the target Secret namespace the controller last wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_secret_namespace: Option<String>,
    /// targetSecretKey is the target Secret key the controller last wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_secret_key: Option<String>,
    /// serviceAccountUser is the user name last requested from Omni.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_user: Option<String>,
    /// serviceAccountGroups are the groups last requested from Omni.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_groups: Option<Vec<String>>,
    /// kubeconfigHash is the SHA-256 hash of the kubeconfig in the target Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig_hash: Option<String>,
    /// expirationTime is when the exported kubeconfig expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub expiration_time: Option<String>,
    /// nextRotationTime is when the next rotation is due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub next_rotation_time: Option<String>,
    /// lastRotationTime is when a kubeconfig was last generated and written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub last_rotation_time: Option<String>,
}

super::omni_kind!(
    OmniKubeconfigExport,
    OmniKubeconfigExportSpec,
    OmniKubeconfigExportStatus,
    kind = "OmniKubeconfigExport",
    plural = "omnikubeconfigexports",
    singular = "omnikubeconfigexport"
);
