//! The object envelope every kind shares: API group and version, the typed [`Object`] wrapper and a small
//! [`ObjectMeta`], so guests can read and build objects without depending on k8s-openapi.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

// The API's names, defined once here (the Go operator's `api/v1alpha1` package); plugins take
// them from this crate rather than spelling them. Kind names are each kind's `OmniKind::KIND`.

/// The API group of all eight kinds.
pub const GROUP: &str = "omni.texashpc.com";
/// The only version of the API, served and stored.
pub const VERSION: &str = "v1alpha1";
/// `apiVersion` of every object of the API: [`GROUP`]`/`[`VERSION`].
pub const API_VERSION: &str = "omni.texashpc.com/v1alpha1";

/// The finalizer the operator adds to objects that own remote state (Go `Finalizer` in
/// `api/v1alpha1/common_types.go`).
pub const FINALIZER: &str = "omni.texashpc.com/finalizer";
/// The finalizer from before the API group rename; still honoured and removed on deletion (Go
/// `LegacyFinalizer` in `api/v1alpha1/common_types.go`). Only OmniCluster and OmniConnection know it.
pub const LEGACY_FINALIZER: &str = "omni.texas-hpc.org/finalizer";

/// Implemented by each kind's spec type: it names the kind and its status type, which is all
/// [`Object`] needs to be the typed object of that kind.
pub trait OmniKind: Serialize + DeserializeOwned {
    const KIND: &'static str;
    const PLURAL: &'static str;
    const SINGULAR: &'static str;
    const LIST_KIND: &'static str;
    /// The kind's API group: [`GROUP`] for the eight Omni kinds.
    const GROUP: &'static str = GROUP;
    /// Cluster-scoped rather than namespaced (the plugin platform's Plugin and ClusterPluginBinding).
    const CLUSTER_SCOPED: bool = false;
    type Status: Serialize + DeserializeOwned;
}

/// A typed object of one kind, e.g. `Object<OmniClusterSpec>` (alias [`crate::OmniCluster`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", bound = "S: OmniKind")]
pub struct Object<S: OmniKind> {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    pub spec: S,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<S::Status>,
}

impl<S: OmniKind> Object<S> {
    /// A new object with `apiVersion` and `kind` filled in, ready to be created or applied.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>, spec: S) -> Self {
        Object {
            api_version: format!("{}/{VERSION}", S::GROUP),
            kind: S::KIND.to_string(),
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(namespace.into()),
                ..ObjectMeta::default()
            },
            spec,
            status: None,
        }
    }

    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    pub fn namespace(&self) -> &str {
        self.metadata.namespace.as_deref().unwrap_or_default()
    }

    /// `metadata.generation`, 0 when the server has not assigned one (as Go's zero value).
    pub fn generation(&self) -> i64 {
        self.metadata.generation.unwrap_or_default()
    }

    pub fn is_deleting(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }
}

/// The metadata fields reconcile logic uses, typed. Every other metadata field (managedFields,
/// generateName, …) is kept verbatim in `rest`, so writing an object back never drops what the
/// server stored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finalizers: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_references: Option<Vec<OwnerReference>>,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl ObjectMeta {
    pub fn has_finalizer(&self, finalizer: &str) -> bool {
        self.finalizers
            .as_ref()
            .is_some_and(|f| f.iter().any(|x| x == finalizer))
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `API_VERSION` is a literal so it can be used in `const` contexts; it must still be the two parts joined.
    #[test]
    fn api_version_is_group_slash_version() {
        assert_eq!(API_VERSION, format!("{GROUP}/{VERSION}"));
    }
}
