//! OpenAPI v3: the index and one document per group-version, generated from the registry. Each object path
//! carries `x-kubernetes-group-version-kind` and the `fieldValidation` parameter, which is what makes kubectl
//! validate server-side; CRD schemas are included so `kubectl explain` works for custom resources.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::{Api, Call, Resp, error, json_ok};
use crate::error::ApiError;
use crate::resources::{Registry, ResourceType, Source};

pub fn handle(api: &Arc<Api>, _call: &Call, path: &str) -> Resp {
    let reg = api.cluster.registry();
    if path == "/openapi/v3" {
        return json_ok(&index(&reg));
    }
    let gv = path.trim_start_matches("/openapi/v3/");
    let (group, version) = match gv.split('/').collect::<Vec<_>>().as_slice() {
        ["api", "v1"] => (String::new(), "v1".to_string()),
        ["apis", g, v] => (g.to_string(), v.to_string()),
        _ => {
            return error(&ApiError::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            ));
        }
    };
    let types = reg.types_in(&group, &version);
    if types.is_empty() {
        return error(&ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ));
    }
    json_ok(&document(&types))
}

fn index(reg: &Registry) -> Value {
    let mut paths = Map::new();
    for g in reg.groups() {
        for v in reg.versions_of(&g) {
            let key = if g.is_empty() {
                format!("api/{v}")
            } else {
                format!("apis/{g}/{v}")
            };
            let doc = document(&reg.types_in(&g, &v));
            let mut h = DefaultHasher::new();
            doc.to_string().hash(&mut h);
            paths.insert(
                key.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={:016X}", h.finish())}),
            );
        }
    }
    json!({"paths": paths})
}

/// The schema component name the real server uses: reversed group, version, kind.
fn schema_name(t: &ResourceType) -> String {
    if t.source == Source::Builtin {
        let pkg = match t.group.as_str() {
            "" => "core".to_string(),
            g => g.split('.').next().unwrap_or(g).to_string(),
        };
        let root = if t.group == "apiextensions.k8s.io" {
            "io.k8s.apiextensions-apiserver.pkg.apis"
        } else {
            "io.k8s.api"
        };
        return format!("{root}.{pkg}.{}.{}", t.version, t.kind);
    }
    let reversed: Vec<&str> = t.group.split('.').rev().collect();
    format!("{}.{}.{}", reversed.join("."), t.version, t.kind)
}

pub(super) fn document(types: &[Arc<ResourceType>]) -> Value {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    let params = |names: &[&str]| -> Vec<Value> {
        names.iter().map(|n| json!({"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": true}})).collect()
    };
    for t in types {
        let prefix = if t.group.is_empty() {
            format!("/api/{}", t.version)
        } else {
            format!("/apis/{}/{}", t.group, t.version)
        };
        let collection = if t.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}", t.plural)
        } else {
            format!("{prefix}/{}", t.plural)
        };
        let gvk = json!({"group": t.group, "version": t.version, "kind": t.kind});
        let name = match super::openapi_schemas::root_message(t) {
            Some(message) => super::openapi_schemas::definition_name(message),
            None => schema_name(t),
        };
        let reference = json!({"$ref": format!("#/components/schemas/{name}")});
        let ok = |r: &Value| json!({"200": {"description": "OK", "content": {"application/json": {"schema": r}}}});
        let write_params = params(&["dryRun", "fieldManager", "fieldValidation", "pretty"]);
        let op = |action: &str, p: Vec<Value>, r: &Value| json!({"parameters": p, "responses": ok(r), "x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk});
        if t.verbs.contains(&"create") && t.source == Source::Virtual {
            paths.insert(
                format!("{prefix}/{}", t.plural),
                json!({"post": op("post", write_params.clone(), &reference)}),
            );
        } else {
            paths.insert(collection.clone(), json!({
                "get": op("list", params(&["labelSelector", "fieldSelector", "limit", "continue", "resourceVersion", "resourceVersionMatch", "watch", "timeoutSeconds", "allowWatchBookmarks", "sendInitialEvents"]), &json!({"type": "object"})),
                "post": op("post", write_params.clone(), &reference),
                "delete": op("deletecollection", params(&["dryRun", "propagationPolicy", "labelSelector", "fieldSelector"]), &json!({"type": "object"})),
            }));
            let mut patch_params = params(&[
                "dryRun",
                "fieldManager",
                "fieldValidation",
                "force",
                "pretty",
            ]);
            patch_params.push(json!({"name": "name", "in": "path", "required": true, "schema": {"type": "string"}}));
            paths.insert(format!("{collection}/{{name}}"), json!({
                "get": op("get", params(&["pretty"]), &reference),
                "put": op("put", write_params.clone(), &reference),
                "patch": op("patch", patch_params.clone(), &reference),
                "delete": op("delete", params(&["dryRun", "gracePeriodSeconds", "propagationPolicy"]), &reference),
            }));
            if t.status_subresource {
                paths.insert(
                    format!("{collection}/{{name}}/status"),
                    json!({
                        "get": op("get", params(&["pretty"]), &reference),
                        "put": op("put", write_params.clone(), &reference),
                        "patch": op("patch", patch_params, &reference),
                    }),
                );
            }
        }
        if super::openapi_schemas::root_message(t).is_none() {
            schemas.insert(name, component_schema(t));
        }
    }
    let builtins: Vec<&ResourceType> = types.iter().map(|t| &**t).collect();
    schemas.extend(super::openapi_schemas::definitions(
        &builtins,
        "#/components/schemas/",
    ));
    schemas
        .entry("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
        .or_insert_with(object_meta_schema);
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

fn component_schema(t: &ResourceType) -> Value {
    let gvk = json!([{"group": t.group, "version": t.version, "kind": t.kind}]);
    let mut s = match &t.schema {
        Some(schema) => (**schema).clone(),
        // Built-in kinds have no stored schema here; an open object keeps kubectl's client-side logic working.
        None => json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
    };
    if let Some(o) = s.as_object_mut() {
        o.insert("x-kubernetes-group-version-kind".into(), gvk);
        let props = o.entry("properties").or_insert_with(|| json!({}));
        if let Some(p) = props.as_object_mut() {
            p.insert("apiVersion".into(), json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."}));
            p.insert("kind".into(), json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents."}));
            p.insert("metadata".into(), json!({"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}], "description": "Standard object's metadata."}));
        }
    }
    s
}

fn object_meta_schema() -> Value {
    let s = |d: &str| json!({"type": "string", "description": d});
    json!({
        "type": "object",
        "description": "ObjectMeta is metadata that all persisted resources must have.",
        "properties": {
            "name": s("Name must be unique within a namespace."),
            "generateName": s("An optional prefix used by the server to generate a unique name."),
            "namespace": s("The namespace the object lives in."),
            "uid": s("UID is the unique in time and space value for this object."),
            "resourceVersion": s("An opaque value that represents the internal version of this object."),
            "generation": {"type": "integer", "format": "int64", "description": "A sequence number representing a specific generation of the desired state."},
            "creationTimestamp": {"type": "string", "format": "date-time", "description": "When this object was created."},
            "deletionTimestamp": {"type": "string", "format": "date-time", "description": "When this object will be deleted."},
            "labels": {"type": "object", "additionalProperties": {"type": "string", "default": ""}, "description": "Map of string keys and values for organizing and selecting objects."},
            "annotations": {"type": "object", "additionalProperties": {"type": "string", "default": ""}, "description": "Unstructured key value map stored with a resource."},
            "finalizers": {"type": "array", "items": {"type": "string", "default": ""}, "x-kubernetes-list-type": "set", "description": "Must be empty before the object is deleted from the registry."},
            "ownerReferences": {"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"], "description": "Objects depended on by this object."},
            "managedFields": {"type": "array", "items": {"type": "object"}, "description": "Field ownership by workflow."},
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_operations_advertise_gvk_and_field_validation_as_kubectl_requires() {
        let reg = Registry::new();
        let doc = document(&reg.types_in("", "v1"));
        let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"]["kind"],
            "ConfigMap"
        );
        assert!(
            patch["parameters"]
                .as_array()
                .expect("params")
                .iter()
                .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
        );
        assert!(
            doc["paths"]["/api/v1/namespaces/{name}"].is_object(),
            "namespaces are cluster-scoped"
        );
        let idx = index(&reg);
        assert!(
            idx["paths"]["api/v1"]["serverRelativeURL"]
                .as_str()
                .expect("url")
                .starts_with("/openapi/v3/api/v1?hash=")
        );
    }
}
