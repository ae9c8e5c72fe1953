//! Secrets and workload clusters: the SDK's names for the `secrets`, `omni.export-kubeconfig` and `workload`
//! parts of the contract. Secret values never appear here: the operator copies them host to host.

use serde_json::Value;

/// A key of a Secret in the management cluster. `namespace: None` is the reconciled object's namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretKeyRef {
    pub namespace: Option<String>,
    pub name: String,
    pub key: String,
}

impl SecretKeyRef {
    /// A key of a Secret in the reconciled object's namespace.
    pub fn local(name: &str, key: &str) -> Self {
        SecretKeyRef {
            namespace: None,
            name: name.into(),
            key: key.into(),
        }
    }
}

/// The label that marks an object as the reconciled object's (`key=value`). The operator writes and deletes only
/// objects that carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerLabel {
    pub key: String,
    pub value: String,
}

impl OwnerLabel {
    pub fn new(key: &str, value: &str) -> Self {
        OwnerLabel {
            key: key.into(),
            value: value.into(),
        }
    }

    /// Whether `labels` (a JSON object, as in `metadata.labels`) carry this label.
    pub fn marks(&self, labels: &Value) -> bool {
        labels.get(&self.key).and_then(Value::as_str) == Some(self.value.as_str())
    }
}

/// What an owner-checked deletion did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    Deleted,
    /// Nothing to delete.
    Absent,
    /// The object exists without the owner label and was left alone.
    NotOwned,
}

/// A Secret's metadata, without its values.
#[derive(Debug, Clone, PartialEq)]
pub struct SecretInfo {
    pub secret_type: String,
    pub keys: Vec<String>,
    pub resource_version: String,
    /// `metadata.labels` and `metadata.annotations` as JSON objects (`{}` when absent).
    pub labels: Value,
    pub annotations: Value,
}

impl SecretInfo {
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.get(key).and_then(Value::as_str)
    }
}

/// A service-account kubeconfig to request from Omni and where the operator writes it.
#[derive(Debug, Clone, PartialEq)]
pub struct KubeconfigExport {
    pub cluster: String,
    pub user: String,
    pub groups: Vec<String>,
    /// Nanoseconds, as Go's `time.Duration`.
    pub ttl_ns: u64,
    pub target: SecretKeyRef,
    /// A key an earlier export wrote into the target, removed now (the target key was renamed).
    pub remove_key: Option<String>,
    pub context_namespace: Option<String>,
    /// Merged over the target's labels and annotations (these win).
    pub labels: Value,
    pub annotations: Value,
    pub owner: OwnerLabel,
    /// The annotation that receives the SHA-256 of the written kubeconfig.
    pub digest_annotation: Option<String>,
}

/// A management-cluster Secret to mirror into a workload cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct SecretCopy {
    /// In the reconciled object's namespace; only its `data` is copied.
    pub source_name: String,
    pub target_namespace: String,
    pub target_name: String,
    /// None: the source's type.
    pub secret_type: Option<String>,
    /// Replace the target's labels and annotations.
    pub labels: Value,
    pub annotations: Value,
    pub create_namespace: bool,
    pub owner: OwnerLabel,
    pub digest_annotation: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyOutcome {
    Created,
    Updated,
    /// Already as wanted: nothing written.
    Unchanged,
    /// The type (immutable) or `immutable: true` stood in the way: deleted and created again.
    Recreated,
    /// The target exists without the owner label: left alone.
    NotOwned,
}

/// What a copy did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copied {
    /// The Go operator's content hash (SHA-256 over type and data).
    pub digest: String,
    pub secret_type: String,
    pub outcome: CopyOutcome,
}
