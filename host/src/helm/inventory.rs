//! What a release owns, as Flux's `status.inventory` lists it: the objects of the deployed revision's manifest
//! (namespaces complemented as Helm applies them) and the CustomResourceDefinitions of its chart's `crds/`
//! directory, which Helm installs but keeps out of the manifest. Hooks are neither: Helm deletes or leaves them
//! by their own policies, and no uninstall removes a hook's object.

use base64::Engine as _;
use serde_json::Value;

use super::manifest::{self, ManifestError};

/// One object a release owns.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Owned {
    /// Empty for a cluster-scoped object. First, so the list sorts as Flux's identifiers do.
    pub namespace: String,
    pub name: String,
    /// `apps/v1`, `v1`.
    pub api_version: String,
    pub kind: String,
}

/// The objects `release` (a decoded revision: its `manifest` and `chart.files`) owns, sorted and without
/// duplicates.
pub async fn of_release(
    client: &kube::Client,
    release_namespace: &str,
    release: &Value,
) -> Result<Vec<Owned>, ManifestError> {
    let manifest = release["manifest"].as_str().unwrap_or_default();
    let mut owned: Vec<Owned> = manifest::resolve(client, release_namespace, manifest)
        .await?
        .into_iter()
        .map(|o| Owned {
            namespace: o.namespace.unwrap_or_default(),
            name: o.name,
            api_version: o.resource.api_version,
            kind: o.resource.kind,
        })
        .collect();
    owned.extend(chart_crds(release)?);
    owned.sort();
    owned.dedup();
    Ok(owned)
}

/// What [`of_release`] is computed from, hashed: the manifest and the chart's `crds/` files. The same text
/// resolves to the same objects, so an inventory is computed once per deployed revision.
pub fn fingerprint(release: &Value) -> String {
    let mut text = release["manifest"].as_str().unwrap_or_default().to_string();
    for file in release["chart"]["files"].as_array().into_iter().flatten() {
        let name = file["name"].as_str().unwrap_or_default();
        if name.starts_with("crds/") {
            text.push('\0');
            text.push_str(name);
            text.push('\0');
            text.push_str(file["data"].as_str().unwrap_or_default());
        }
    }
    super::sha256_prefix(text.as_bytes(), 64)
}

/// The CRDs in the chart's `crds/` files (Helm's `CRDObjects`: files under `crds/` with a manifest extension), as
/// the release stores them (base64 data).
fn chart_crds(release: &Value) -> Result<Vec<Owned>, ManifestError> {
    let mut out = Vec::new();
    for file in release["chart"]["files"].as_array().into_iter().flatten() {
        let name = file["name"].as_str().unwrap_or_default();
        let manifest_file = [".yaml", ".yml", ".json"]
            .iter()
            .any(|ext| name.ends_with(ext));
        if !name.starts_with("crds/") || !manifest_file {
            continue;
        }
        let data = base64::engine::general_purpose::STANDARD
            .decode(file["data"].as_str().unwrap_or_default())
            .map_err(|e| ManifestError::Parse(format!("chart file {name}: {e}")))?;
        let text = String::from_utf8_lossy(&data);
        for doc in manifest::documents(&text)? {
            let field = |p: &str| doc.pointer(p).and_then(Value::as_str).unwrap_or_default();
            if field("/kind") == "CustomResourceDefinition" && !field("/metadata/name").is_empty() {
                out.push(Owned {
                    namespace: String::new(),
                    name: field("/metadata/name").to_string(),
                    api_version: field("/apiVersion").to_string(),
                    kind: "CustomResourceDefinition".to_string(),
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_charts_crds_are_read_from_its_crds_files_only() {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: \
                   widgets.example.com\n---\n# empty\n";
        let release = json!({"chart": {"files": [
            {"name": "crds/widgets.yaml", "data": b64(crd)},
            {"name": "crds/README.md", "data": b64("kind: CustomResourceDefinition\nmetadata:\n  name: no\n")},
            {"name": "files/crd.yaml", "data": b64(crd.replace("widgets", "gadgets").as_str())},
        ]}});
        assert_eq!(
            chart_crds(&release).unwrap(),
            [Owned {
                namespace: String::new(),
                name: "widgets.example.com".into(),
                api_version: "apiextensions.k8s.io/v1".into(),
                kind: "CustomResourceDefinition".into(),
            }]
        );
        let broken = json!({"chart": {"files": [{"name": "crds/x.yaml", "data": "%%%"}]}});
        assert!(chart_crds(&broken).is_err());
    }
}
