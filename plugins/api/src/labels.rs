//! Label and annotation keys (and their fixed values) on the Secrets the operator writes. They are part of the
//! API, not an implementation detail: ownership is decided by them (the owner-UID labels), a Secret's annotations
//! name the object that wrote it (the export's Secret watch maps a Secret back to its export by them), and users
//! select by them. Defined once here so the plugins that write the Secrets, and anything that reads them, agree.

/// The standard "managed by" label, on every Secret the operator writes.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// The value of [`MANAGED_BY_LABEL`].
pub const MANAGED_BY: &str = "omni-cluster-operator";
/// The Omni cluster name (`spec.clusterName`, else `metadata.name` of the OmniCluster) a written Secret
/// belongs to.
pub const CLUSTER_LABEL: &str = "omni.texashpc.com/cluster";

/// On the kubeconfig Secrets an OmniKubeconfigExport writes (the Go
/// `internal/kubeconfigexport/kubeconfigexport.go`).
pub mod kubeconfig_export {
    /// The owner: the export's `metadata.uid` (the Go `IsOwnedSecret`).
    pub const OWNER_LABEL: &str = "omni.texashpc.com/kubeconfig-export-uid";
    /// The export's `metadata.name`; the owner when the export has no UID.
    pub const NAME_ANNOTATION: &str = "omni.texashpc.com/kubeconfig-export-name";
    /// The export's `metadata.namespace` (the target may live in another namespace).
    pub const NAMESPACE_ANNOTATION: &str = "omni.texashpc.com/kubeconfig-export-namespace";
    /// The export's spec hash: SHA-256 of the Go operator's JSON of the spec fields that shape the kubeconfig.
    pub const SPEC_HASH_ANNOTATION: &str = "omni.texashpc.com/kubeconfig-export-spec-hash";
    /// Lowercase hex SHA-256 of the kubeconfig bytes stored under the target key.
    pub const HASH_ANNOTATION: &str = "omni.texashpc.com/kubeconfig-hash";
    /// When the kubeconfig expires: UTC, RFC 3339 with seconds.
    pub const EXPIRATION_ANNOTATION: &str = "omni.texashpc.com/kubeconfig-expiration-time";
    /// When the kubeconfig was last rotated: UTC, RFC 3339 with seconds.
    pub const LAST_ROTATION_ANNOTATION: &str = "omni.texashpc.com/kubeconfig-last-rotation-time";
}

/// On the workload-cluster Secrets an OmniSecretSync writes (the Go
/// `internal/secretsync/secretsync.go`).
pub mod secret_sync {
    /// The owner: the sync's `metadata.uid`.
    pub const OWNER_LABEL: &str = "omni.texashpc.com/secret-sync-uid";
    /// The sync's `metadata.name`; the owner when the sync has no UID.
    pub const NAME_ANNOTATION: &str = "omni.texashpc.com/secret-sync-name";
    /// `<source namespace>/<source name>`.
    pub const SOURCE_ANNOTATION: &str = "omni.texashpc.com/secret-sync-source";
    /// The content hash: SHA-256 of the Go operator's JSON of the Secret's type and data.
    pub const HASH_ANNOTATION: &str = "omni.texashpc.com/secret-sync-hash";
    /// The version of the target layout and hash format, [`CONTENT_VERSION`].
    pub const CONTENT_ANNOTATION: &str = "omni.texashpc.com/secret-sync-content";
    /// The value of [`CONTENT_ANNOTATION`], as the Go operator wrote it.
    pub const CONTENT_VERSION: &str = "v1";
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GROUP;

    /// The operator's own keys live under the API group; only the standard managed-by label does not.
    #[test]
    fn operator_keys_are_under_the_api_group() {
        let prefix = format!("{GROUP}/");
        let keys = [
            CLUSTER_LABEL,
            kubeconfig_export::OWNER_LABEL,
            kubeconfig_export::NAME_ANNOTATION,
            kubeconfig_export::NAMESPACE_ANNOTATION,
            kubeconfig_export::SPEC_HASH_ANNOTATION,
            kubeconfig_export::HASH_ANNOTATION,
            kubeconfig_export::EXPIRATION_ANNOTATION,
            kubeconfig_export::LAST_ROTATION_ANNOTATION,
            secret_sync::OWNER_LABEL,
            secret_sync::NAME_ANNOTATION,
            secret_sync::SOURCE_ANNOTATION,
            secret_sync::HASH_ANNOTATION,
            secret_sync::CONTENT_ANNOTATION,
        ];
        for key in keys {
            assert!(key.starts_with(&prefix), "{key}");
        }
    }
}
