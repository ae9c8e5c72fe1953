//! The CustomResourceDefinitions of the eight kinds, generated from the Rust types.
//!
//! The schemas match the Go operator's field for field, so every manifest written for it
//! is accepted, defaulted and rejected the same way. What is added on top changes no stored object:
//! printer columns, the `omni` category and field descriptions for `kubectl explain`. There are no short
//! names: the obvious ones (`oc`, `om`, `ohr`, …) are too easy to collide with other CRDs in a cluster.

use std::fmt;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::kinds::{
    OmniClusterSpec, OmniConnectionSpec, OmniControlPlaneSpec, OmniHelmReleaseSpec,
    OmniKubeconfigExportSpec, OmniMachineSpec, OmniSecretSyncSpec, OmniWorkersSpec,
};
use crate::meta::{OmniKind, VERSION};
use crate::platform::{ClusterBinding, PluginBindingSpec, PluginSpec};
use crate::structural::structural;

/// `kubectl get omni` lists every object of the API.
pub const CATEGORY: &str = "omni";
/// `kubectl get omni-plugins` lists the plugin platform's objects.
pub const PLATFORM_CATEGORY: &str = "omni-plugins";

/// All eight CRDs and the three of the plugin platform, in a fixed order, with object keys sorted so that rendering is deterministic.
///
/// Each gets the columns of its key spec fields, then its readiness condition. The child kinds
/// (control plane, workers, machine) only ever get `Accepted`, so that is theirs.
pub fn all() -> Vec<Value> {
    vec![
        crd::<OmniConnectionSpec>(&[column("Endpoint", "string", ".spec.endpoint")], "Ready"),
        crd::<OmniClusterSpec>(
            &[
                column("Omni Cluster", "string", ".status.clusterName"),
                column("Kubernetes", "string", ".spec.kubernetes.version"),
                column("Talos", "string", ".spec.talos.version"),
                column(
                    "Synced",
                    "string",
                    ".status.conditions[?(@.type==\"Synced\")].status",
                ),
            ],
            "Ready",
        ),
        crd::<OmniControlPlaneSpec>(
            &[column("Cluster", "string", ".spec.clusterRef.name")],
            "Accepted",
        ),
        crd::<OmniWorkersSpec>(
            &[column("Cluster", "string", ".spec.clusterRef.name")],
            "Accepted",
        ),
        crd::<OmniMachineSpec>(
            &[column("Cluster", "string", ".spec.clusterRef.name")],
            "Accepted",
        ),
        crd::<OmniHelmReleaseSpec>(
            &[
                column("Chart", "string", ".spec.chart.chart"),
                column("Version", "string", ".spec.chart.version"),
            ],
            "Ready",
        ),
        crd::<OmniKubeconfigExportSpec>(
            &[
                column("Cluster", "string", ".spec.clusterRef.name"),
                column("Secret", "string", ".spec.targetSecretRef.name"),
            ],
            "Ready",
        ),
        crd::<OmniSecretSyncSpec>(
            &[
                column("Cluster", "string", ".spec.clusterRef.name"),
                column("Source", "string", ".spec.sourceSecretRef.name"),
            ],
            "Ready",
        ),
        crd::<PluginSpec>(
            &[
                column("Artifact", "string", ".spec.artifact"),
                column("Digest", "string", ".status.digest"),
            ],
            "Ready",
        ),
        crd::<PluginBindingSpec>(
            &[
                column("Plugin", "string", ".spec.plugin"),
                column("Digest", "string", ".status.digest"),
            ],
            "Ready",
        ),
        crd::<ClusterBinding>(
            &[
                column("Plugin", "string", ".spec.plugin"),
                column("Digest", "string", ".status.digest"),
            ],
            "Ready",
        ),
    ]
}

/// One CRD rendered for `crds/`: its file name (as controller-gen names them) and YAML text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrdFile {
    pub file_name: String,
    pub yaml: String,
}

/// A CRD that could not be rendered as YAML.
#[derive(Debug)]
pub struct RenderError {
    pub crd: String,
    pub source: yaml_serde::Error,
}

impl fmt::Display for RenderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rendering CRD {} as YAML: {}", self.crd, self.source)
    }
}

impl std::error::Error for RenderError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Written at the top of every file so nobody edits the YAML instead of the Rust types.
pub const FILE_HEADER: &str = "# Generated from the Rust types in plugins/api by omni_api::crds; do not edit.\n\
# Regenerate with: UPDATE_CRDS=1 cargo test -p omni-api --features schema --test crds_committed\n";

/// [`all`] rendered as the files under `crds/` (`<group>_<plural>.yaml`).
pub fn files() -> Result<Vec<CrdFile>, RenderError> {
    all()
        .into_iter()
        .map(|crd| {
            let name = crd["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let (plural, group) = name.split_once('.').unwrap_or_default();
            let body = yaml_serde::to_string(&crd).map_err(|source| RenderError {
                crd: name.clone(),
                source,
            })?;
            Ok(CrdFile {
                file_name: format!("{group}_{plural}.yaml"),
                yaml: format!("{FILE_HEADER}---\n{body}"),
            })
        })
        .collect()
}

fn crd<S>(spec_columns: &[Value], readiness: &str) -> Value
where
    S: OmniKind + JsonSchema,
    S::Status: JsonSchema,
{
    let mut spec = schema_of::<S>();
    let mut status = schema_of::<S::Status>();
    // The spec type's doc comment describes the kind; the kind's node is where `kubectl explain` shows it.
    let kind_description = spec
        .as_object_mut()
        .and_then(|s| s.remove("description"))
        .unwrap_or(Value::Null);
    set(
        &mut spec,
        "description",
        json!(format!("spec is the desired state of the {}.", S::KIND)),
    );
    set(
        &mut status,
        "description",
        json!(format!(
            "status is the state of the {} last observed by the operator.",
            S::KIND
        )),
    );

    let mut root = json!({
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": {
                "type": "string",
                "description": format!("APIVersion is the versioned schema of this object: {}/{VERSION}.", S::GROUP)
            },
            "kind": {
                "type": "string",
                "description": format!("Kind is the REST resource this object represents: {}.", S::KIND)
            },
            "metadata": { "type": "object" },
            "spec": spec,
            "status": status
        }
    });
    if !kind_description.is_null() {
        set(&mut root, "description", kind_description);
    }

    let mut columns = spec_columns.to_vec();
    let condition = format!(".status.conditions[?(@.type==\"{readiness}\")]");
    columns.push(column(readiness, "string", &format!("{condition}.status")));
    columns.push(column("Reason", "string", &format!("{condition}.reason")));
    columns.push(column("Age", "date", ".metadata.creationTimestamp"));
    let mut message = column("Message", "string", &format!("{condition}.message"));
    set(&mut message, "priority", json!(1));
    columns.push(message);

    sorted(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": format!("{}.{}", S::PLURAL, S::GROUP) },
        "spec": {
            "group": S::GROUP,
            "names": {
                "kind": S::KIND,
                "listKind": S::LIST_KIND,
                "plural": S::PLURAL,
                "singular": S::SINGULAR,
                "categories": [if S::GROUP == crate::platform::PLATFORM_GROUP { PLATFORM_CATEGORY } else { CATEGORY }]
            },
            "scope": if S::CLUSTER_SCOPED { "Cluster" } else { "Namespaced" },
            "versions": [{
                "name": VERSION,
                "served": true,
                "storage": true,
                "schema": { "openAPIV3Schema": root },
                "subresources": { "status": {} },
                "additionalPrinterColumns": columns
            }]
        }
    }))
}

/// The structural schema of one type. The serialize contract is what makes `required` right: a field is
/// required exactly when it is always serialized, which is how the types mark optional fields
/// (`skip_serializing_if`), while fields the server defaults may still decode leniently.
fn schema_of<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft07()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .for_serialize()
        .into_generator();
    let mut root = generator.into_root_schema_for::<T>().to_value();
    // A root schema's title is the Rust type name, which means nothing to `kubectl explain` users.
    if let Some(obj) = root.as_object_mut() {
        obj.remove("title");
    }
    let mut schema = structural(root);
    unwrap_doc_lines(&mut schema);
    schema
}

/// Doc comments are wrapped at the source's line width; `kubectl explain` wraps again at the terminal's,
/// so keep only paragraph breaks.
fn unwrap_doc_lines(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                match v {
                    Value::String(text) if key == "description" => {
                        *text = text
                            .split("\n\n")
                            .map(|p| p.split('\n').collect::<Vec<_>>().join(" "))
                            .collect::<Vec<_>>()
                            .join("\n\n");
                    }
                    _ => unwrap_doc_lines(v),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(unwrap_doc_lines),
        _ => {}
    }
}

fn column(name: &str, type_: &str, json_path: &str) -> Value {
    json!({ "name": name, "type": type_, "jsonPath": json_path })
}

fn set(object: &mut Value, key: &str, value: Value) {
    if let Some(map) = object.as_object_mut() {
        map.insert(key.to_string(), value);
    }
}

/// A copy with every object's keys in lexical order, whether or not serde_json keeps insertion order
/// (its `preserve_order` feature is on whenever a crate in the build enables it).
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sorted(v)))
                    .collect::<Map<_, _>>(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}
