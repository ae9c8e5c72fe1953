//! A chart's CRDs applied by the host (CRD policy `CreateReplace`, as Flux offers): Helm installs the `crds/`
//! directory only when a CRD is missing and never updates one, so a chart's new CRD version would never reach the
//! cluster. Applied with server-side apply under Helm's field manager, conflicts forced, before the install or
//! upgrade that needs them.

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde::Deserialize as _;
use serde_json::Value;

use super::drift::FIELD_MANAGER;

#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    #[error("the chart's CRDs: {0}")]
    Parse(String),
    #[error("applying CRD {name}: {source}")]
    Apply {
        name: String,
        #[source]
        source: kube::Error,
    },
}

/// Applies every CustomResourceDefinition in `yaml` (the chart's `crds/` files, as `helm show crds` prints them);
/// answers their names.
pub async fn apply(client: &kube::Client, yaml: &str) -> Result<Vec<String>, CrdError> {
    let documents = yaml_serde::Deserializer::from_str(yaml)
        .map(|doc| Value::deserialize(doc).map_err(|e| CrdError::Parse(e.to_string())))
        .collect::<Result<Vec<Value>, CrdError>>()?;
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
    );
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mut applied = Vec::new();
    for crd in documents
        .iter()
        .filter(|d| d["kind"] == "CustomResourceDefinition")
    {
        let Some(name) = crd["metadata"]["name"].as_str().filter(|n| !n.is_empty()) else {
            return Err(CrdError::Parse(
                "a CustomResourceDefinition has no name".into(),
            ));
        };
        api.patch(name, &params, &Patch::Apply(crd))
            .await
            .map_err(|source| CrdError::Apply {
                name: name.to_string(),
                source,
            })?;
        applied.push(name.to_string());
    }
    Ok(applied)
}
