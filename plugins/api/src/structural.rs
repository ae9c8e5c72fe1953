//! Turns a schemars JSON Schema into a Kubernetes *structural* schema.
//!
//! schemars describes Rust types for JSON Schema validators: `Option<T>` becomes `type: [T, "null"]`
//! or `anyOf: [T, {type: null}]`, shared types become `$ref`s into `definitions`, a doc comment's first
//! paragraph becomes a `title`. The API server refuses all of that in a CRD (every node needs one
//! `type`, no references, `nullable` only where null is really meant). Optional fields here are
//! "omitted when empty", never null, so null is dropped rather than turned into `nullable: true`.

use serde_json::{Map, Value};

/// Deep enough for any real API; a cycle of `$ref`s (a recursive type) stops here instead of looping.
const MAX_DEPTH: usize = 64;

/// The structural form of `root`, with every `$ref` into the root's `definitions`/`$defs` inlined.
pub(crate) fn structural(mut root: Value) -> Value {
    let mut definitions = Map::new();
    if let Some(obj) = root.as_object_mut() {
        for key in ["definitions", "$defs"] {
            if let Some(Value::Object(defs)) = obj.remove(key) {
                definitions.extend(defs);
            }
        }
    }
    node(root, &definitions, 0)
}

fn node(schema: Value, definitions: &Map<String, Value>, depth: usize) -> Value {
    let mut obj = match schema {
        // `true` accepts anything: Kubernetes spells that as preserve-unknown-fields.
        Value::Bool(true) => {
            return serde_json::json!({ "x-kubernetes-preserve-unknown-fields": true });
        }
        Value::Object(obj) => obj,
        other => return other,
    };
    if depth > MAX_DEPTH {
        return Value::Object(obj);
    }

    if let Some(Value::String(reference)) = obj.remove("$ref") {
        let name = reference.rsplit('/').next().unwrap_or_default();
        if let Some(Value::Object(target)) = definitions.get(name) {
            // Siblings of `$ref` (a field's description, a default) override the referenced schema.
            let mut merged = target.clone();
            if obj.contains_key("description") {
                merged.remove("title");
            }
            merged.extend(obj);
            obj = merged;
        }
    }

    for key in [
        "$schema",
        "$id",
        "examples",
        "readOnly",
        "writeOnly",
        "deprecated",
        "nullable",
    ] {
        obj.remove(key);
    }
    merge_title_into_description(&mut obj);
    drop_null_type(&mut obj);
    collapse_alternatives(&mut obj, definitions, depth);

    for (key, value) in obj.iter_mut() {
        match key.as_str() {
            "properties" | "patternProperties" => {
                if let Value::Object(props) = value {
                    for prop in props.values_mut() {
                        *prop = node(prop.take(), definitions, depth + 1);
                    }
                }
            }
            "items" | "not" => *value = node(value.take(), definitions, depth + 1),
            "additionalProperties" if value.is_object() => {
                *value = node(value.take(), definitions, depth + 1)
            }
            "anyOf" | "oneOf" | "allOf" => {
                if let Value::Array(branches) = value {
                    for branch in branches.iter_mut() {
                        *branch = node(branch.take(), definitions, depth + 1);
                    }
                }
            }
            _ => {}
        }
    }

    // controller-gen sorts `required`; doing the same keeps diffs against Go-generated CRDs small.
    if let Some(Value::Array(required)) = obj.get_mut("required") {
        required.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
        required.dedup();
    }
    Value::Object(obj)
}

/// schemars puts a doc comment's first paragraph in `title`; `kubectl explain` shows only `description`.
fn merge_title_into_description(obj: &mut Map<String, Value>) {
    let Some(Value::String(title)) = obj.remove("title") else {
        return;
    };
    let merged = match obj.get("description").and_then(Value::as_str) {
        Some(description) if !description.is_empty() => format!("{title}\n\n{description}"),
        _ => title,
    };
    obj.insert("description".into(), Value::String(merged));
}

/// `type: [X, "null"]` → `type: X`; null leaves `enum`; `const` becomes a one-value `enum`; a null
/// `default` (an `Option` defaulting to `None`) means "no default".
fn drop_null_type(obj: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = obj.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            obj.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(values)) = obj.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if let Some(value) = obj.remove("const")
        && !value.is_null()
    {
        obj.insert("enum".into(), Value::Array(vec![value]));
    }
    if obj.get("default").is_some_and(Value::is_null) {
        obj.remove("default");
    }
}

/// Removes null branches from `anyOf`/`oneOf`, inlines a branch that is left alone, and turns a `oneOf`
/// of constants (an enum whose variants have doc comments) into `enum`.
fn collapse_alternatives(
    obj: &mut Map<String, Value>,
    definitions: &Map<String, Value>,
    depth: usize,
) {
    for key in ["anyOf", "oneOf", "allOf"] {
        let Some(Value::Array(branches)) = obj.remove(key) else {
            continue;
        };
        let mut branches: Vec<Value> = branches
            .into_iter()
            .map(|b| node(b, definitions, depth + 1))
            .filter(|b| !is_null_schema(b))
            .collect();

        if branches.len() == 1 {
            if let Value::Object(only) = branches.remove(0) {
                for (k, v) in only {
                    // The outer node's own keys (a field's description, default) win.
                    obj.entry(k).or_insert(v);
                }
            }
            continue;
        }

        if key != "allOf"
            && !branches.is_empty()
            && let Some(values) = constant_values(&branches)
        {
            obj.entry("type")
                .or_insert_with(|| Value::String("string".into()));
            obj.insert("enum".into(), Value::Array(values));
            continue;
        }

        if !branches.is_empty() {
            obj.insert(key.into(), Value::Array(branches));
        }
    }
}

fn is_null_schema(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "null",
        _ => schema
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| e.is_empty()),
    }
}

/// The values of branches that each allow exactly a fixed set of values, or None.
fn constant_values(branches: &[Value]) -> Option<Vec<Value>> {
    let mut values = Vec::new();
    for branch in branches {
        let allowed = branch.get("enum")?.as_array()?;
        values.extend(allowed.iter().cloned());
    }
    Some(values)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::structural;

    #[test]
    fn option_of_a_scalar_loses_null() {
        let got =
            structural(json!({"type": ["string", "null"], "enum": ["a", null], "default": null}));
        assert_eq!(got, json!({"type": "string", "enum": ["a"]}));
    }

    #[test]
    fn option_of_an_object_is_inlined_and_keeps_the_field_description() {
        let got = structural(json!({
            "description": "field doc",
            "anyOf": [{"type": "object", "description": "type doc", "properties": {}}, {"type": "null"}]
        }));
        assert_eq!(
            got,
            json!({"type": "object", "description": "field doc", "properties": {}})
        );
    }

    #[test]
    fn references_are_inlined_and_definitions_dropped() {
        let got = structural(json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"a": {"$ref": "#/definitions/A", "description": "an A"}},
            "definitions": {"A": {"type": "object", "title": "A thing", "required": ["y", "x"]}}
        }));
        assert_eq!(
            got,
            json!({
                "type": "object",
                "properties": {"a": {"type": "object", "description": "an A", "required": ["x", "y"]}}
            })
        );
    }

    #[test]
    fn one_of_constants_becomes_an_enum() {
        let got = structural(
            json!({"oneOf": [{"const": "Delete", "description": "d"}, {"const": "Orphan"}]}),
        );
        assert_eq!(got, json!({"type": "string", "enum": ["Delete", "Orphan"]}));
    }

    #[test]
    fn int_or_string_alternatives_are_kept() {
        let schema = json!({"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]});
        assert_eq!(structural(schema.clone()), schema);
    }
}
