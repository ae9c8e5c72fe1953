//! What `helm diff` shows, for a plan: the objects of a release's stored manifest against the manifest the planned
//! action renders, object by object, with a line diff of each changed one. Secret data never appears: each value
//! of a Secret's `data` and `stringData` is replaced by its size, and by whether it changes.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::line_diff::diff;

/// At most this many lines for one release: a chart with hundreds of objects is summarised, not printed.
const MAX_LINES: usize = 400;

/// The diff of `stored` (None: nothing installed) against `rendered`, both Helm manifests of a release in
/// `namespace`. Each object is headed by `<kind> <namespace>/<name>: added|removed|changed` and followed by its
/// lines, `+ ` and `- ` as [`diff`] prints them; unchanged objects are left out.
pub fn manifest_diff(stored: Option<&str>, rendered: &str, namespace: &str) -> Vec<String> {
    let (old, new) = match (
        objects(stored.unwrap_or_default(), namespace),
        objects(rendered, namespace),
    ) {
        (Ok(old), Ok(new)) => (old, new),
        (Err(e), _) => return vec![format!("(the stored manifest does not parse: {e})")],
        (_, Err(e)) => return vec![format!("(the rendered manifest does not parse: {e})")],
    };
    let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    let mut out = Vec::new();
    for key in keys {
        let (mut before, mut after) = (old.get(key).cloned(), new.get(key).cloned());
        redact_secret(before.as_mut(), after.as_mut());
        let (before, after) = (before.map(|v| lines(&v)), after.map(|v| lines(&v)));
        let (word, body) = match (&before, &after) {
            (Some(b), Some(a)) if b == a => continue,
            (Some(b), Some(a)) => ("changed", diff(b, a)),
            (None, Some(a)) => ("added", diff(&[], a)),
            (Some(b), None) => ("removed", diff(b, &[])),
            (None, None) => continue,
        };
        out.push(format!("{key}: {word}"));
        out.extend(body.into_iter().map(|l| format!("  {l}")));
    }
    if out.len() > MAX_LINES {
        let left = out.len() - MAX_LINES;
        out.truncate(MAX_LINES);
        out.push(format!("… {left} more lines"));
    }
    out
}

/// A manifest's objects by `<kind> <namespace>/<name>` (objects without a namespace are the release's namespace,
/// as Helm applies them; cluster-scoped kinds are not told apart here, and need not be: both sides agree).
fn objects(manifest: &str, namespace: &str) -> Result<BTreeMap<String, Value>, String> {
    let mut out = BTreeMap::new();
    for (i, document) in yaml_serde::Deserializer::from_str(manifest).enumerate() {
        let value: Value = serde::Deserialize::deserialize(document)
            .map_err(|e| format!("document {}: {e}", i + 1))?;
        if value.is_null() {
            continue;
        }
        let kind = value["kind"].as_str().unwrap_or("(no kind)");
        let name = value["metadata"]["name"].as_str().unwrap_or("(no name)");
        let ns = value["metadata"]["namespace"].as_str().unwrap_or(namespace);
        out.insert(format!("{kind} {ns}/{name}"), value);
    }
    Ok(out)
}

/// Each value of a Secret's `data` and `stringData` replaced by its size, and on the newer side by whether it
/// differs from the older one, so the diff says which keys change and nothing of what they hold.
fn redact_secret(before: Option<&mut Value>, after: Option<&mut Value>) {
    let is_secret = |v: &Option<&mut Value>| {
        v.as_ref()
            .is_some_and(|v| v["kind"] == "Secret" && v["apiVersion"] == "v1")
    };
    if !is_secret(&before) && !is_secret(&after) {
        return;
    }
    let old: BTreeMap<(String, String), Value> = before
        .as_ref()
        .map(|v| secret_values(v))
        .unwrap_or_default();
    if let Some(after) = after {
        for field in ["data", "stringData"] {
            if let Some(map) = after[field].as_object_mut() {
                for (key, value) in map.iter_mut() {
                    let changed = old.get(&(field.to_string(), key.clone())) != Some(value);
                    *value = Value::String(placeholder(value, changed));
                }
            }
        }
    }
    if let Some(before) = before {
        for field in ["data", "stringData"] {
            if let Some(map) = before[field].as_object_mut() {
                for value in map.values_mut() {
                    *value = Value::String(placeholder(value, false));
                }
            }
        }
    }
}

fn secret_values(secret: &Value) -> BTreeMap<(String, String), Value> {
    let mut out = BTreeMap::new();
    for field in ["data", "stringData"] {
        if let Some(map) = secret[field].as_object() {
            for (key, value) in map {
                out.insert((field.to_string(), key.clone()), value.clone());
            }
        }
    }
    out
}

fn placeholder(value: &Value, changed: bool) -> String {
    let size = value.as_str().map_or(0, str::len);
    if changed {
        format!("(redacted, {size} bytes, changed)")
    } else {
        format!("(redacted, {size} bytes)")
    }
}

/// An object as YAML lines (keys sorted, so two renderings of one object compare equal).
fn lines(object: &Value) -> Vec<String> {
    yaml_serde::to_string(object)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "---\n# Source: hello/templates/deploy.yaml\napiVersion: apps/v1\nkind: Deployment\n\
        metadata:\n  name: hello\nspec:\n  replicas: 1\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n\
        data:\n  password: c2VjcmV0MQ==\n  user: YWRtaW4=\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  \
        name: gone\n";
    const NEW: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: hello\nspec:\n  replicas: 3\n---\n\
        apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\ndata:\n  password: c2VjcmV0Mg==\n  user: YWRtaW4=\n\
        ---\napiVersion: v1\nkind: Service\nmetadata:\n  name: hello\n  namespace: other\n";

    #[test]
    fn objects_are_compared_one_by_one() {
        let d = manifest_diff(Some(OLD), NEW, "apps");
        assert_eq!(
            d,
            [
                "ConfigMap apps/gone: removed",
                "  - apiVersion: v1",
                "  - kind: ConfigMap",
                "  - metadata:",
                "  -   name: gone",
                "Deployment apps/hello: changed",
                "  -   replicas: 1",
                "  +   replicas: 3",
                "Secret apps/creds: changed",
                "  -   password: (redacted, 12 bytes)",
                "  +   password: (redacted, 12 bytes, changed)",
                "Service other/hello: added",
                "  + apiVersion: v1",
                "  + kind: Service",
                "  + metadata:",
                "  +   name: hello",
                "  +   namespace: other",
            ]
        );
    }

    #[test]
    fn secret_data_never_shows() {
        for d in [
            manifest_diff(Some(OLD), NEW, "apps"),
            manifest_diff(None, NEW, "apps"),
            manifest_diff(Some(NEW), OLD, "apps"),
        ] {
            let text = d.join("\n");
            for secret in ["c2VjcmV0MQ", "c2VjcmV0Mg", "YWRtaW4"] {
                assert!(!text.contains(secret), "{text}");
            }
        }
        let installed = manifest_diff(None, NEW, "apps").join("\n");
        assert!(
            installed.contains("+   user: (redacted, 8 bytes, changed)"),
            "{installed}"
        );
    }

    #[test]
    fn the_same_manifest_is_no_diff_and_a_bad_one_says_so() {
        assert!(manifest_diff(Some(OLD), OLD, "apps").is_empty());
        let bad = manifest_diff(Some(OLD), "a: [", "apps");
        assert_eq!(bad.len(), 1);
        assert!(
            bad[0].starts_with("(the rendered manifest does not parse:"),
            "{bad:?}"
        );
    }
}
