//! A release manifest's objects resolved against the workload cluster's API: every YAML document with a kind and
//! a name, its API resource found by discovery, and a namespaced object placed in the release's namespace unless
//! it names another (where Helm applies it). Drift detection compares these objects with the cluster; the
//! inventory lists them.

use std::collections::HashMap;

use kube::api::{Api, DynamicObject};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::Scope;
use serde::Deserialize as _;
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("the release manifest: {0}")]
    Parse(String),
    /// The cluster did not say what the kind is (an unknown kind, or no answer).
    #[error("{object} (discovering {api_version}): {source}")]
    Discovery {
        object: String,
        api_version: String,
        #[source]
        source: kube::Error,
    },
}

/// One object of the manifest, resolved against the cluster's API.
pub struct ManifestObject {
    pub resource: ApiResource,
    /// None for a cluster-scoped object.
    pub namespace: Option<String>,
    pub name: String,
    /// As the manifest writes it.
    pub object: Value,
}

impl ManifestObject {
    pub fn api(&self, client: &kube::Client) -> Api<DynamicObject> {
        match &self.namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &self.resource),
            None => Api::all_with(client.clone(), &self.resource),
        }
    }

    /// `Kind namespace/name`, or `Kind name` when cluster-scoped.
    pub fn describe(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} {ns}/{}", self.resource.kind, self.name),
            None => format!("{} {}", self.resource.kind, self.name),
        }
    }
}

/// The YAML documents of `text` (`---`-separated) as JSON values; empty documents are left out.
pub fn documents(text: &str) -> Result<Vec<Value>, ManifestError> {
    let mut out = Vec::new();
    for doc in yaml_serde::Deserializer::from_str(text) {
        let value = Value::deserialize(doc).map_err(|e| ManifestError::Parse(e.to_string()))?;
        if !value.is_null() {
            out.push(value);
        }
    }
    Ok(out)
}

/// The manifest's objects, each kind discovered once.
pub async fn resolve(
    client: &kube::Client,
    release_namespace: &str,
    manifest: &str,
) -> Result<Vec<ManifestObject>, ManifestError> {
    // Parsed whole first: the parser is not `Send`, so it must not live across the discovery awaits.
    resolve_documents(client, release_namespace, documents(manifest)?).await
}

/// `documents` (a manifest's, as [`documents`] reads them) resolved as [`resolve`] does: a caller that wants
/// some kinds alone filters first, and discovers nothing else.
pub async fn resolve_documents(
    client: &kube::Client,
    release_namespace: &str,
    documents: Vec<Value>,
) -> Result<Vec<ManifestObject>, ManifestError> {
    let mut kinds: HashMap<(String, String), (ApiResource, bool)> = HashMap::new();
    let mut out = Vec::new();
    for object in documents {
        let text = |p: &str| {
            object
                .pointer(p)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let (api_version, kind, name) =
            (text("/apiVersion"), text("/kind"), text("/metadata/name"));
        if api_version.is_empty() || kind.is_empty() || name.is_empty() {
            continue;
        }
        let key = (api_version.clone(), kind.clone());
        let (resource, namespaced) = match kinds.get(&key) {
            Some(found) => found.clone(),
            None => {
                let (group, version) = match api_version.rsplit_once('/') {
                    Some((g, v)) => (g.to_string(), v.to_string()),
                    None => (String::new(), api_version.clone()),
                };
                let gvk = GroupVersionKind::gvk(&group, &version, &kind);
                let (resource, caps) =
                    kube::discovery::pinned_kind(client, &gvk)
                        .await
                        .map_err(|source| ManifestError::Discovery {
                            object: format!("{kind} {name}"),
                            api_version: api_version.clone(),
                            source,
                        })?;
                let found = (resource, caps.scope == Scope::Namespaced);
                kinds.insert(key, found.clone());
                found
            }
        };
        let namespace = namespaced.then(|| {
            let own = text("/metadata/namespace");
            if own.is_empty() {
                release_namespace.to_string()
            } else {
                own
            }
        });
        out.push(ManifestObject {
            resource,
            namespace,
            name,
            object,
        });
    }
    Ok(out)
}
