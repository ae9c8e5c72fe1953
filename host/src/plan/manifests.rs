//! The manifests a plan is given: files, or directories of them (searched recursively, in path order), each
//! holding YAML documents or JSON objects. A `kustomization.yaml` is kustomize's build file, not an object.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde::Deserialize as _;
use serde_json::Value;

/// One object, and where it came from (`path`, or `path#N` for the N-th document of a file, from 1).
#[derive(Debug, Clone)]
pub struct Manifest {
    pub source: String,
    pub object: Value,
}

/// Whether a file found in a directory holds manifests: YAML or JSON, and not kustomize's build file. (Dot
/// files and directories are skipped before this is asked.)
pub(super) fn is_manifest_file(name: &str) -> bool {
    matches!(
        Path::new(name).extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml" | "json")
    ) && !matches!(name, "kustomization.yaml" | "kustomization.yml")
}

fn files(path: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    if !path.is_dir() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .with_context(|| format!("reading {}", path.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .with_context(|| format!("reading {}", path.display()))?;
    entries.sort();
    for p in entries {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name.starts_with('.') {
            continue;
        }
        if p.is_dir() {
            files(&p, out)?;
        } else if is_manifest_file(name) {
            out.push(p);
        }
    }
    Ok(())
}

/// The objects in `text`, a file's content.
pub fn parse(text: &str, source: &str) -> anyhow::Result<Vec<Manifest>> {
    let mut out = Vec::new();
    for (i, document) in yaml_serde::Deserializer::from_str(text).enumerate() {
        let at = format!("{source}#{}", i + 1);
        let value = Value::deserialize(document).with_context(|| format!("parsing {at}"))?;
        let items = match value {
            Value::Null => continue,
            // A List (what `kubectl get -o yaml` writes) stands for its items.
            v if v["kind"].as_str() == Some("List") && v["items"].is_array() => {
                v["items"].as_array().cloned().unwrap_or_default()
            }
            v => vec![v],
        };
        for object in items {
            if !object.is_object() {
                bail!("{at}: a manifest must be an object, not {object}");
            }
            for field in ["apiVersion", "kind"] {
                if object[field].as_str().is_none_or(str::is_empty) {
                    bail!("{at}: {field} is required");
                }
            }
            if object["metadata"]["name"]
                .as_str()
                .is_none_or(str::is_empty)
            {
                bail!("{at}: metadata.name is required");
            }
            if object["apiVersion"]
                .as_str()
                .is_some_and(|v| v.starts_with("kustomize.config.k8s.io/"))
            {
                continue;
            }
            out.push(Manifest {
                source: at.clone(),
                object,
            });
        }
    }
    Ok(out)
}

/// Every object in `paths` (files or directories), in the order given.
pub fn load(paths: &[PathBuf]) -> anyhow::Result<Vec<Manifest>> {
    let mut all = Vec::new();
    for path in paths {
        if !path.exists() {
            bail!("{}: no such file or directory", path.display());
        }
        let mut found = Vec::new();
        files(path, &mut found)?;
        for file in found {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            all.extend(parse(&text, &file.display().to_string())?);
        }
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_lists_and_bad_objects() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: a}}\n---\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n";
        let got = parse(text, "f.yaml").expect("parses");
        let names: Vec<&str> = got
            .iter()
            .map(|m| m.object["metadata"]["name"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(got[1].source, "f.yaml#3");
        let err = parse("apiVersion: v1\nkind: Namespace\n", "g.yaml").expect_err("no name");
        assert_eq!(err.to_string(), "g.yaml#1: metadata.name is required");
        let err = parse("kind: [", "h.yaml").expect_err("bad yaml");
        assert!(err.to_string().starts_with("parsing h.yaml#1"), "{err}");
    }
}
