//! A release's values from ConfigMaps and Secrets (`valuesFrom`, Flux's field), read by the host and merged in
//! order, so Secret data reaches Helm without passing through the plugin. Errors name the object and the key,
//! never a value: a Secret's text could otherwise end up in a condition.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use serde_json::{Map, Value};

use super::wit;
use crate::capabilities::HostError;
use crate::secrets::quoted;

/// A referenced key larger than this is refused (a ConfigMap or Secret holds at most 1 MiB anyway).
const MAX_VALUES_BYTES: usize = 1 << 20;

pub(super) fn kind_name(kind: wit::ValuesKind) -> &'static str {
    match kind {
        wit::ValuesKind::ConfigMap => "ConfigMap",
        wit::ValuesKind::Secret => "Secret",
    }
}

/// The text of the referenced key; `None` when the object or key is missing and the reference is optional.
pub(super) async fn read(
    client: &kube::Client,
    namespace: &str,
    r: &wit::ValuesRef,
) -> Result<Option<String>, HostError> {
    let what = format!(
        "valuesFrom {} {} key {:?}",
        kind_name(r.kind),
        quoted(namespace, &r.name),
        r.key
    );
    let bytes: Option<Vec<u8>> = match r.kind {
        wit::ValuesKind::ConfigMap => {
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
            let found = api
                .get_opt(&r.name)
                .await
                .map_err(|e| HostError::from_kube(&what, e))?;
            found.and_then(|c| {
                c.data
                    .as_ref()
                    .and_then(|d| d.get(&r.key))
                    .map(|s| s.clone().into_bytes())
                    .or_else(|| {
                        c.binary_data
                            .as_ref()
                            .and_then(|d| d.get(&r.key))
                            .map(|b| b.0.clone())
                    })
            })
        }
        wit::ValuesKind::Secret => {
            let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
            let found = api
                .get_opt(&r.name)
                .await
                .map_err(|e| HostError::from_kube(&what, e))?;
            found.and_then(|s| s.data.and_then(|mut d| d.remove(&r.key)).map(|b| b.0))
        }
    };
    let Some(bytes) = bytes else {
        return if r.optional {
            Ok(None)
        } else {
            Err(HostError::NotFound(format!(
                "{what}: not found (mark the reference optional to go on without it)"
            )))
        };
    };
    if bytes.len() > MAX_VALUES_BYTES {
        return Err(HostError::Invalid(format!(
            "{what}: {} bytes is more than the {MAX_VALUES_BYTES} allowed",
            bytes.len()
        )));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| HostError::Invalid(format!("{what}: the value is not UTF-8 text")))
}

/// Merges one referenced key into `values`: without a target path the text is a YAML mapping merged at the top;
/// with one it is a single value set there, its type inferred as Helm's `--set` infers it.
pub(super) fn merge_referenced(
    values: &mut Map<String, Value>,
    text: &str,
    r: &wit::ValuesRef,
    namespace: &str,
) -> Result<(), HostError> {
    let what = format!(
        "valuesFrom {} {} key {:?}",
        kind_name(r.kind),
        quoted(namespace, &r.name),
        r.key
    );
    match &r.target_path {
        None => {
            // The parser's own message may quote the text; only its kind of failure is passed on.
            let parsed: Value = yaml_serde::from_str(text).map_err(|_| {
                HostError::Invalid(format!("{what}: the value is not a YAML document"))
            })?;
            match parsed {
                Value::Object(map) => {
                    merge_values(values, map);
                    Ok(())
                }
                Value::Null => Ok(()),
                _ => Err(HostError::Invalid(format!(
                    "{what}: the value must be a YAML mapping (or set targetPath to place it)"
                ))),
            }
        }
        Some(path) => set_path(values, path, infer(text.trim_end_matches('\n')))
            .map_err(|why| HostError::Invalid(format!("{what}: targetPath {path:?}: {why}"))),
    }
}

pub(super) use crate::helm::merge_values;

/// Helm's `--set` typing of a value: `true`/`false`, `null`, whole numbers that fit in 64 bits; anything else is a
/// string.
fn infer(text: &str) -> Value {
    match text {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        "null" => Value::Null,
        _ => match text.parse::<i64>() {
            // Helm keeps numbers with a leading zero as strings.
            Ok(n) if !(text.len() > 1 && text.starts_with('0')) => Value::from(n),
            _ => Value::String(text.to_string()),
        },
    }
}

/// One step of a `--set` path.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// Splits `a.b\.c[2].d` into keys and list indexes (`\.` is a dot inside a key).
fn parse_path(path: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    let mut key = String::new();
    let mut chars = path.chars().peekable();
    let mut after_index = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(escaped) => key.push(escaped),
                None => return Err("ends with a lone backslash".into()),
            },
            '.' => {
                if key.is_empty() && !after_index {
                    return Err("has an empty key".into());
                }
                if !key.is_empty() {
                    steps.push(Step::Key(std::mem::take(&mut key)));
                }
                after_index = false;
            }
            '[' => {
                if !key.is_empty() {
                    steps.push(Step::Key(std::mem::take(&mut key)));
                }
                let mut digits = String::new();
                loop {
                    match chars.next() {
                        Some(']') => break,
                        Some(d) if d.is_ascii_digit() => digits.push(d),
                        _ => return Err("has a list index that is not a number in brackets".into()),
                    }
                }
                let index: usize = digits
                    .parse()
                    .map_err(|_| "has an empty list index".to_string())?;
                // Helm refuses huge indexes too: they would allocate the list.
                if index > 10_000 {
                    return Err(format!("list index {index} is too large"));
                }
                steps.push(Step::Index(index));
                after_index = true;
            }
            c => key.push(c),
        }
    }
    if !key.is_empty() {
        steps.push(Step::Key(key));
    }
    if steps.is_empty() {
        return Err("is empty".into());
    }
    if !matches!(steps.first(), Some(Step::Key(_))) {
        return Err("must start with a key".into());
    }
    Ok(steps)
}

fn set_path(values: &mut Map<String, Value>, path: &str, value: Value) -> Result<(), String> {
    let steps = parse_path(path)?;
    let mut slot = values
        .entry(match &steps[0] {
            Step::Key(k) => k.clone(),
            Step::Index(_) => return Err("must start with a key".into()),
        })
        .or_insert(Value::Null);
    for step in &steps[1..] {
        slot = match step {
            Step::Key(k) => {
                if !slot.is_object() {
                    *slot = Value::Object(Map::new());
                }
                match slot {
                    Value::Object(m) => m.entry(k.clone()).or_insert(Value::Null),
                    _ => return Err("internal: not an object".into()),
                }
            }
            Step::Index(i) => {
                if !slot.is_array() {
                    *slot = Value::Array(Vec::new());
                }
                match slot {
                    Value::Array(a) => {
                        if a.len() <= *i {
                            a.resize(*i + 1, Value::Null);
                        }
                        &mut a[*i]
                    }
                    _ => return Err("internal: not a list".into()),
                }
            }
        };
    }
    *slot = value;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reference(target_path: Option<&str>) -> wit::ValuesRef {
        wit::ValuesRef {
            kind: wit::ValuesKind::Secret,
            name: "db".into(),
            key: "values.yaml".into(),
            target_path: target_path.map(str::to_string),
            optional: false,
        }
    }

    #[test]
    fn a_yaml_mapping_merges_key_by_key_and_later_parts_win() {
        let mut values = json!({"a": {"x": 1, "y": 2}, "b": [1, 2]})
            .as_object()
            .cloned()
            .unwrap();
        merge_referenced(
            &mut values,
            "a:\n  y: 3\n  z: 4\nb: [9]\n",
            &reference(None),
            "team",
        )
        .unwrap();
        assert_eq!(
            Value::Object(values),
            json!({"a": {"x": 1, "y": 3, "z": 4}, "b": [9]})
        );
    }

    #[test]
    fn a_target_path_places_one_value_typed_as_helms_set_types_it() {
        let mut values = Map::new();
        for (path, text) in [
            ("db.password", "s3cret"),
            ("db.port", "5432"),
            ("db.tls", "true"),
            ("db.zip", "01234"),
            ("hosts[1].name", "b"),
            (r"annotations.example\.com/x", "y"),
        ] {
            merge_referenced(&mut values, text, &reference(Some(path)), "team").unwrap();
        }
        assert_eq!(
            Value::Object(values),
            json!({"db": {"password": "s3cret", "port": 5432, "tls": true, "zip": "01234"},
                "hosts": [null, {"name": "b"}], "annotations": {"example.com/x": "y"}})
        );
    }

    #[test]
    fn errors_name_the_source_and_never_quote_its_value() {
        let mut values = Map::new();
        let secret_text = "- hunter2-is-the-password";
        let err = merge_referenced(&mut values, secret_text, &reference(None), "team").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("Secret \"team/db\""), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
        let err = merge_referenced(&mut values, "{unclosed: [hunter2", &reference(None), "team")
            .unwrap_err();
        assert!(!format!("{err:?}").contains("hunter2"));
        for bad in ["", "a..b", "[0]", "a[x]", "a[]", "a\\", "a[99999999]"] {
            assert!(
                merge_referenced(&mut values, "v", &reference(Some(bad)), "team").is_err(),
                "{bad:?}"
            );
        }
    }
}
