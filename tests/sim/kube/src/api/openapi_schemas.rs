//! OpenAPI schemas of the built-in kinds, built from the built-in type table: one definition per message, named
//! as the real server names them (`io.k8s.api.apps.v1.Deployment`, `io.k8s.apimachinery.pkg.apis.meta.v1.
//! ObjectMeta`), with the field types, required fields, and the merge metadata kubectl's client-side apply reads
//! (`x-kubernetes-patch-strategy`, `x-kubernetes-patch-merge-key`, `x-kubernetes-list-type`, …). Field
//! descriptions are not carried.
//!
//! The same definitions feed `/openapi/v3` (references under `#/components/schemas/`) and `/openapi/v2`
//! (`#/definitions/`).

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::builtin_types::{Field, Presence, Ty, root, schema};
use crate::resources::ResourceType;

const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1";

/// The definition name of a built-in message.
pub fn definition_name(message: &str) -> String {
    match message.split_once('.') {
        Some(("meta", name)) => format!("{META}.{name}"),
        Some((package, name)) => format!("io.k8s.api.{}.{name}", package.replace('/', ".")),
        None => message.to_string(),
    }
}

/// The root message of a built-in resource type, when the table has it.
pub fn root_message(rt: &ResourceType) -> Option<&'static str> {
    if rt.is_crd() {
        return None;
    }
    root(&rt.api_version(), &rt.kind)
}

/// Definitions for the given kinds and every definition they reference, keyed by definition name.
pub fn definitions(kinds: &[&ResourceType], ref_prefix: &str) -> Map<String, Value> {
    let mut out = Map::new();
    let mut seen = BTreeSet::new();
    let mut todo: Vec<&'static str> = Vec::new();
    for rt in kinds {
        let Some(message) = root_message(rt) else {
            continue;
        };
        let name = definition_name(message);
        let mut def = message_schema(message, ref_prefix, &mut todo);
        add_type_meta(&mut def);
        let gvk = json!({"group": rt.group, "version": rt.version, "kind": rt.kind});
        match out
            .get_mut(&name)
            .and_then(|d| d["x-kubernetes-group-version-kind"].as_array_mut())
        {
            Some(list) => list.push(gvk),
            None => {
                def["x-kubernetes-group-version-kind"] = json!([gvk]);
                out.insert(name, def);
            }
        }
        seen.insert(message);
    }
    while let Some(message) = todo.pop() {
        if !seen.insert(message) {
            continue;
        }
        let def = message_schema(message, ref_prefix, &mut todo);
        out.insert(definition_name(message), def);
    }
    for (name, def) in special_definitions() {
        if out.values().any(|d| references(d, &name, ref_prefix)) {
            out.insert(name, def);
        }
    }
    out
}

/// Whether a schema refers to `name` anywhere.
fn references(schema: &Value, name: &str, ref_prefix: &str) -> bool {
    match schema {
        Value::Object(m) => m.iter().any(|(k, v)| {
            (k == "$ref" && v.as_str() == Some(&format!("{ref_prefix}{name}")))
                || references(v, name, ref_prefix)
        }),
        Value::Array(a) => a.iter().any(|v| references(v, name, ref_prefix)),
        _ => false,
    }
}

/// Kinds carry `apiVersion` and `kind` (inline TypeMeta, which has no protobuf tag of its own).
fn add_type_meta(def: &mut Value) {
    if let Some(props) = def["properties"].as_object_mut() {
        props.insert("apiVersion".into(), json!({"type": "string"}));
        props.insert("kind".into(), json!({"type": "string"}));
    }
}

fn message_schema(message: &'static str, ref_prefix: &str, todo: &mut Vec<&'static str>) -> Value {
    let fields = schema(message).unwrap_or_default();
    let mut properties = Map::new();
    let mut required = Vec::new();
    for field in fields {
        // An embedded struct's fields are the parent's.
        if let (true, Ty::Msg(inner)) = (field.json.is_empty(), field.ty) {
            let inlined = message_schema(inner, ref_prefix, todo);
            if let Some(p) = inlined["properties"].as_object() {
                properties.extend(p.clone());
            }
            if let Some(r) = inlined["required"].as_array() {
                required.extend(r.iter().cloned());
            }
            continue;
        }
        properties.insert(field.json.to_string(), property(field, ref_prefix, todo));
        // A field Go always prints (no `omitempty`, not a pointer) is required, as the real documents say.
        if field.presence == Presence::Always {
            required.push(json!(field.json));
        }
    }
    let mut def = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        def["required"] = json!(required);
    }
    def
}

fn property(field: &Field, ref_prefix: &str, todo: &mut Vec<&'static str>) -> Value {
    let mut item = match field.ty {
        Ty::Str => json!({"type": "string"}),
        Ty::I32 => json!({"type": "integer", "format": "int32"}),
        Ty::I64 => json!({"type": "integer", "format": "int64"}),
        Ty::Bool => json!({"type": "boolean"}),
        Ty::Bytes => json!({"type": "string", "format": "byte"}),
        Ty::Msg(m) => {
            todo.push(m);
            json!({"$ref": format!("{ref_prefix}{}", definition_name(m))})
        }
        Ty::Time => json!({"$ref": format!("{ref_prefix}{META}.Time")}),
        Ty::MicroTime => json!({"$ref": format!("{ref_prefix}{META}.MicroTime")}),
        Ty::Quantity => {
            json!({"$ref": format!("{ref_prefix}io.k8s.apimachinery.pkg.api.resource.Quantity")})
        }
        Ty::IntOrString => {
            json!({"$ref": format!("{ref_prefix}io.k8s.apimachinery.pkg.util.intstr.IntOrString")})
        }
        Ty::Raw => {
            json!({"$ref": format!("{ref_prefix}io.k8s.apimachinery.pkg.runtime.RawExtension")})
        }
    };
    if field.repeated {
        item = json!({"type": "array", "items": item});
    } else if field.map {
        item = json!({"type": "object", "additionalProperties": item});
    }
    let patch = field.patch;
    for (key, value) in [
        ("x-kubernetes-patch-strategy", patch.strategy),
        ("x-kubernetes-patch-merge-key", patch.merge_key),
    ] {
        if !value.is_empty() {
            item[key] = json!(value);
        }
    }
    if !patch.list_type.is_empty() {
        let key = if field.map {
            "x-kubernetes-map-type"
        } else {
            "x-kubernetes-list-type"
        };
        item[key] = json!(patch.list_type);
    }
    if !patch.list_keys.is_empty() {
        item["x-kubernetes-list-map-keys"] = json!(patch.list_keys);
    }
    item
}

/// The apimachinery types with their own JSON forms.
fn special_definitions() -> Vec<(String, Value)> {
    vec![
        (
            format!("{META}.Time"),
            json!({"type": "string", "format": "date-time"}),
        ),
        (
            format!("{META}.MicroTime"),
            json!({"type": "string", "format": "date-time"}),
        ),
        (
            "io.k8s.apimachinery.pkg.api.resource.Quantity".into(),
            json!({"type": "string"}),
        ),
        (
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString".into(),
            json!({"type": "string", "format": "int-or-string"}),
        ),
        (
            "io.k8s.apimachinery.pkg.runtime.RawExtension".into(),
            json!({"type": "object"}),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;

    #[test]
    fn a_deployment_definition_carries_types_refs_and_merge_keys() {
        let reg = Registry::new();
        let rt = reg.get("apps", "v1", "deployments").unwrap();
        let defs = definitions(&[&rt], "#/definitions/");
        let d = &defs["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            d["x-kubernetes-group-version-kind"],
            json!([{"group": "apps", "version": "v1", "kind": "Deployment"}])
        );
        assert_eq!(
            d["properties"]["spec"]["$ref"],
            "#/definitions/io.k8s.api.apps.v1.DeploymentSpec"
        );
        let spec = &defs["io.k8s.api.apps.v1.DeploymentSpec"];
        assert_eq!(
            spec["properties"]["replicas"],
            json!({"type": "integer", "format": "int32"})
        );
        let pod = &defs["io.k8s.api.core.v1.PodSpec"];
        let containers = &pod["properties"]["containers"];
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
        assert_eq!(
            containers["items"]["$ref"],
            "#/definitions/io.k8s.api.core.v1.Container"
        );
        let container = &defs["io.k8s.api.core.v1.Container"];
        assert!(
            container["required"]
                .as_array()
                .unwrap()
                .contains(&json!("name"))
        );
        assert!(defs.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
        assert!(defs.contains_key("io.k8s.apimachinery.pkg.api.resource.Quantity"));
        // Every reference resolves.
        for def in defs.values() {
            check_refs(def, &defs);
        }
    }

    fn check_refs(v: &Value, defs: &Map<String, Value>) {
        match v {
            Value::Object(m) => {
                if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                    let name = r.trim_start_matches("#/definitions/");
                    assert!(defs.contains_key(name), "dangling {r}");
                }
                m.values().for_each(|v| check_refs(v, defs));
            }
            Value::Array(a) => a.iter().for_each(|v| check_refs(v, defs)),
            _ => {}
        }
    }
}
