//! `/openapi/v2`, as kubectl 1.27 and 1.28 (and client-go's `OpenAPISchema`) fetch it: the gnostic OpenAPI v2
//! `Document` in protobuf (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`), or as JSON.
//!
//! The document is the `/openapi/v3` documents of every group-version merged and written in v2's terms: the
//! same paths (parameters and responses in v2's layout), and the same schemas as `definitions` (built-in kinds
//! from the built-in type table, custom resources from their CRDs), with references under `#/definitions/`.

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use prost::Message;
use serde_json::{Map, Value, json};

use super::{Api, Call, Resp, full, json_ok};

/// The media type kubectl asks for.
const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
/// The type kube-openapi's handler answers it with: the same, with `.` for `@` (Go's mime parser refuses `@`).
const PROTOBUF_ANSWER: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

pub fn handle(api: &Arc<Api>, call: &Call, version: &str) -> Resp {
    let doc = document(api, version);
    let accept = call.header("accept");
    if accept.contains(PROTOBUF) || accept.contains(PROTOBUF_ANSWER) {
        let mut r = Response::new(full(Bytes::from(gnostic::document(&doc).encode_to_vec())));
        *r.status_mut() = StatusCode::OK;
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(PROTOBUF_ANSWER),
        );
        return r;
    }
    json_ok(&doc)
}

/// The v2 document as JSON.
fn document(api: &Arc<Api>, version: &str) -> Value {
    let reg = api.cluster.registry();
    let mut paths = Map::new();
    let mut definitions = Map::new();
    for group in reg.groups() {
        for v in reg.versions_of(&group) {
            let v3 = super::openapi::document(&reg.types_in(&group, &v));
            for (path, item) in v3["paths"].as_object().into_iter().flatten() {
                paths.insert(path.clone(), path_item(item));
            }
            for (name, schema) in v3["components"]["schemas"]
                .as_object()
                .into_iter()
                .flatten()
            {
                definitions.insert(name.clone(), to_v2_schema(schema));
            }
        }
    }
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": version},
        "paths": paths,
        "definitions": definitions,
    })
}

/// A v3 path item in v2's layout: parameters carry their type inline, responses their schema directly.
fn path_item(item: &Value) -> Value {
    let mut out = Map::new();
    for (method, op) in item.as_object().into_iter().flatten() {
        let mut v2 = Map::new();
        let parameters: Vec<Value> = op["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                let mut q = json!({"name": p["name"], "in": p["in"], "type": p["schema"]["type"]});
                if p["required"] == json!(true) {
                    q["required"] = json!(true);
                }
                if p["schema"]["uniqueItems"] == json!(true) {
                    q["uniqueItems"] = json!(true);
                }
                q
            })
            .collect();
        v2.insert("parameters".into(), json!(parameters));
        let mut responses = Map::new();
        for (code, r) in op["responses"].as_object().into_iter().flatten() {
            let schema = &r["content"]["application/json"]["schema"];
            responses.insert(
                code.clone(),
                json!({"description": r["description"], "schema": to_v2_schema(schema)}),
            );
        }
        v2.insert("responses".into(), Value::Object(responses));
        for (k, v) in op.as_object().into_iter().flatten() {
            if k.starts_with("x-") {
                v2.insert(k.clone(), v.clone());
            }
        }
        out.insert(method.clone(), Value::Object(v2));
    }
    Value::Object(out)
}

/// A v3 schema in v2's terms: references under `#/definitions/`, and without what v2 cannot say (`nullable`,
/// `anyOf`, `oneOf`, `not`), as the real server drops them from CRD schemas it publishes in v2.
fn to_v2_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                match k.as_str() {
                    "nullable" | "anyOf" | "oneOf" | "not" => {}
                    "$ref" => {
                        let r = v.as_str().unwrap_or_default();
                        out.insert(
                            k.clone(),
                            json!(r.replace("#/components/schemas/", "#/definitions/")),
                        );
                    }
                    // Vendor extensions and defaults are values, not schemas.
                    _ if k.starts_with("x-") || k == "default" || k == "enum" || k == "example" => {
                        out.insert(k.clone(), v.clone());
                    }
                    "properties" | "patternProperties" | "definitions" => {
                        let inner: Map<String, Value> = v
                            .as_object()
                            .into_iter()
                            .flatten()
                            .map(|(n, s)| (n.clone(), to_v2_schema(s)))
                            .collect();
                        out.insert(k.clone(), Value::Object(inner));
                    }
                    _ => {
                        out.insert(k.clone(), to_v2_schema(v));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(to_v2_schema).collect()),
        other => other.clone(),
    }
}

/// The gnostic OpenAPI v2 messages (github.com/google/gnostic-models `openapiv2/OpenAPIv2.proto`) the document
/// needs, and the JSON → protobuf conversion.
mod gnostic {
    use prost::{Message, Oneof};
    use serde_json::Value;

    #[derive(Clone, PartialEq, Message)]
    pub struct Document {
        #[prost(string, tag = "1")]
        pub swagger: String,
        #[prost(message, optional, tag = "2")]
        pub info: Option<Info>,
        #[prost(message, optional, tag = "8")]
        pub paths: Option<Paths>,
        #[prost(message, optional, tag = "9")]
        pub definitions: Option<Definitions>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct Info {
        #[prost(string, tag = "1")]
        pub title: String,
        #[prost(string, tag = "2")]
        pub version: String,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct Paths {
        #[prost(message, repeated, tag = "2")]
        pub path: Vec<NamedPathItem>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct NamedPathItem {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<PathItem>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct PathItem {
        #[prost(message, optional, tag = "2")]
        pub get: Option<Operation>,
        #[prost(message, optional, tag = "3")]
        pub put: Option<Operation>,
        #[prost(message, optional, tag = "4")]
        pub post: Option<Operation>,
        #[prost(message, optional, tag = "5")]
        pub delete: Option<Operation>,
        #[prost(message, optional, tag = "8")]
        pub patch: Option<Operation>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct Operation {
        #[prost(message, repeated, tag = "8")]
        pub parameters: Vec<ParametersItem>,
        #[prost(message, optional, tag = "9")]
        pub responses: Option<Responses>,
        #[prost(message, repeated, tag = "13")]
        pub vendor_extension: Vec<NamedAny>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct ParametersItem {
        #[prost(message, optional, tag = "1")]
        pub parameter: Option<Parameter>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct Parameter {
        #[prost(message, optional, tag = "2")]
        pub non_body_parameter: Option<NonBodyParameter>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct NonBodyParameter {
        #[prost(oneof = "NonBody", tags = "3, 4")]
        pub oneof: Option<NonBody>,
    }

    #[derive(Clone, PartialEq, Oneof)]
    pub enum NonBody {
        #[prost(message, tag = "3")]
        Query(QueryParameter),
        #[prost(message, tag = "4")]
        Path(PathParameter),
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct QueryParameter {
        #[prost(bool, tag = "1")]
        pub required: bool,
        #[prost(string, tag = "2")]
        pub r#in: String,
        #[prost(string, tag = "4")]
        pub name: String,
        #[prost(string, tag = "6")]
        pub r#type: String,
        #[prost(bool, tag = "20")]
        pub unique_items: bool,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct PathParameter {
        #[prost(bool, tag = "1")]
        pub required: bool,
        #[prost(string, tag = "2")]
        pub r#in: String,
        #[prost(string, tag = "4")]
        pub name: String,
        #[prost(string, tag = "5")]
        pub r#type: String,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct Responses {
        #[prost(message, repeated, tag = "1")]
        pub response_code: Vec<NamedResponseValue>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct NamedResponseValue {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<ResponseValue>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct ResponseValue {
        #[prost(message, optional, tag = "1")]
        pub response: Option<ResponseMessage>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct ResponseMessage {
        #[prost(string, tag = "1")]
        pub description: String,
        #[prost(message, optional, tag = "2")]
        pub schema: Option<SchemaItem>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct SchemaItem {
        #[prost(message, optional, tag = "1")]
        pub schema: Option<Schema>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct Definitions {
        #[prost(message, repeated, tag = "1")]
        pub additional_properties: Vec<NamedSchema>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct NamedSchema {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<Schema>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct Schema {
        #[prost(string, tag = "1")]
        pub r#ref: String,
        #[prost(string, tag = "2")]
        pub format: String,
        #[prost(string, tag = "3")]
        pub title: String,
        #[prost(string, tag = "4")]
        pub description: String,
        #[prost(message, optional, tag = "5")]
        pub default: Option<Any>,
        #[prost(double, tag = "7")]
        pub maximum: f64,
        #[prost(bool, tag = "8")]
        pub exclusive_maximum: bool,
        #[prost(double, tag = "9")]
        pub minimum: f64,
        #[prost(bool, tag = "10")]
        pub exclusive_minimum: bool,
        #[prost(int64, tag = "11")]
        pub max_length: i64,
        #[prost(int64, tag = "12")]
        pub min_length: i64,
        #[prost(string, tag = "13")]
        pub pattern: String,
        #[prost(int64, tag = "14")]
        pub max_items: i64,
        #[prost(int64, tag = "15")]
        pub min_items: i64,
        #[prost(bool, tag = "16")]
        pub unique_items: bool,
        #[prost(int64, tag = "17")]
        pub max_properties: i64,
        #[prost(int64, tag = "18")]
        pub min_properties: i64,
        #[prost(string, repeated, tag = "19")]
        pub required: Vec<String>,
        #[prost(message, repeated, tag = "20")]
        pub r#enum: Vec<Any>,
        #[prost(message, optional, tag = "21")]
        pub additional_properties: Option<AdditionalPropertiesItem>,
        #[prost(message, optional, tag = "22")]
        pub r#type: Option<TypeItem>,
        #[prost(message, optional, tag = "23")]
        pub items: Option<ItemsItem>,
        #[prost(message, repeated, tag = "24")]
        pub all_of: Vec<Schema>,
        #[prost(message, optional, tag = "25")]
        pub properties: Option<Properties>,
        #[prost(message, repeated, tag = "31")]
        pub vendor_extension: Vec<NamedAny>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct AdditionalPropertiesItem {
        #[prost(oneof = "AdditionalProperties", tags = "1, 2")]
        pub oneof: Option<AdditionalProperties>,
    }

    #[derive(Clone, PartialEq, Oneof)]
    pub enum AdditionalProperties {
        #[prost(message, tag = "1")]
        Schema(Box<Schema>),
        #[prost(bool, tag = "2")]
        Boolean(bool),
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct TypeItem {
        #[prost(string, repeated, tag = "1")]
        pub value: Vec<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct ItemsItem {
        #[prost(message, repeated, tag = "1")]
        pub schema: Vec<Schema>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct Properties {
        #[prost(message, repeated, tag = "1")]
        pub additional_properties: Vec<NamedSchema>,
    }

    #[derive(Clone, PartialEq, Message)]
    pub struct NamedAny {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<Any>,
    }

    /// A value as YAML text (gnostic keeps vendor extensions, defaults and enums so); JSON is valid YAML.
    #[derive(Clone, PartialEq, Message)]
    pub struct Any {
        #[prost(string, tag = "2")]
        pub yaml: String,
    }

    fn any(v: &Value) -> Any {
        Any {
            yaml: v.to_string(),
        }
    }

    fn text(v: &Value) -> String {
        v.as_str().unwrap_or_default().to_string()
    }

    pub fn document(doc: &Value) -> Document {
        let paths = doc["paths"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(name, item)| NamedPathItem {
                name: name.clone(),
                value: Some(PathItem {
                    get: operation(&item["get"]),
                    put: operation(&item["put"]),
                    post: operation(&item["post"]),
                    delete: operation(&item["delete"]),
                    patch: operation(&item["patch"]),
                }),
            })
            .collect();
        Document {
            swagger: text(&doc["swagger"]),
            info: Some(Info {
                title: text(&doc["info"]["title"]),
                version: text(&doc["info"]["version"]),
            }),
            paths: Some(Paths { path: paths }),
            definitions: Some(Definitions {
                additional_properties: named_schemas(&doc["definitions"]),
            }),
        }
    }

    fn operation(op: &Value) -> Option<Operation> {
        let op = op.as_object()?;
        let parameters = op
            .get("parameters")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|p| {
                let required = p["required"] == Value::Bool(true);
                let param = if p["in"] == "path" {
                    NonBody::Path(PathParameter {
                        required,
                        r#in: text(&p["in"]),
                        name: text(&p["name"]),
                        r#type: text(&p["type"]),
                    })
                } else {
                    NonBody::Query(QueryParameter {
                        required,
                        r#in: text(&p["in"]),
                        name: text(&p["name"]),
                        r#type: text(&p["type"]),
                        unique_items: p["uniqueItems"] == Value::Bool(true),
                    })
                };
                ParametersItem {
                    parameter: Some(Parameter {
                        non_body_parameter: Some(NonBodyParameter { oneof: Some(param) }),
                    }),
                }
            })
            .collect();
        let response_code = op
            .get("responses")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(code, r)| NamedResponseValue {
                name: code.clone(),
                value: Some(ResponseValue {
                    response: Some(ResponseMessage {
                        description: text(&r["description"]),
                        schema: Some(SchemaItem {
                            schema: Some(schema(&r["schema"])),
                        }),
                    }),
                }),
            })
            .collect();
        Some(Operation {
            parameters,
            responses: Some(Responses { response_code }),
            vendor_extension: extensions(op),
        })
    }

    fn extensions(m: &serde_json::Map<String, Value>) -> Vec<NamedAny> {
        m.iter()
            .filter(|(k, _)| k.starts_with("x-"))
            .map(|(k, v)| NamedAny {
                name: k.clone(),
                value: Some(any(v)),
            })
            .collect()
    }

    fn named_schemas(v: &Value) -> Vec<NamedSchema> {
        v.as_object()
            .into_iter()
            .flatten()
            .map(|(name, s)| NamedSchema {
                name: name.clone(),
                value: Some(schema(s)),
            })
            .collect()
    }

    /// A JSON schema as gnostic's `Schema` (what it has no field for is left out, as gnostic's parser does).
    pub fn schema(v: &Value) -> Schema {
        let empty = serde_json::Map::new();
        let m = v.as_object().unwrap_or(&empty);
        let num = |k: &str| m.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        let int = |k: &str| m.get(k).and_then(Value::as_i64).unwrap_or(0);
        let flag = |k: &str| m.get(k) == Some(&Value::Bool(true));
        let items = match m.get("items") {
            Some(Value::Array(list)) => Some(ItemsItem {
                schema: list.iter().map(schema).collect(),
            }),
            Some(one @ Value::Object(_)) => Some(ItemsItem {
                schema: vec![schema(one)],
            }),
            _ => None,
        };
        let additional_properties = match m.get("additionalProperties") {
            Some(Value::Bool(b)) => Some(AdditionalPropertiesItem {
                oneof: Some(AdditionalProperties::Boolean(*b)),
            }),
            Some(s @ Value::Object(_)) => Some(AdditionalPropertiesItem {
                oneof: Some(AdditionalProperties::Schema(Box::new(schema(s)))),
            }),
            _ => None,
        };
        Schema {
            r#ref: m.get("$ref").map(text).unwrap_or_default(),
            format: m.get("format").map(text).unwrap_or_default(),
            title: m.get("title").map(text).unwrap_or_default(),
            description: m.get("description").map(text).unwrap_or_default(),
            default: m.get("default").map(any),
            maximum: num("maximum"),
            exclusive_maximum: flag("exclusiveMaximum"),
            minimum: num("minimum"),
            exclusive_minimum: flag("exclusiveMinimum"),
            max_length: int("maxLength"),
            min_length: int("minLength"),
            pattern: m.get("pattern").map(text).unwrap_or_default(),
            max_items: int("maxItems"),
            min_items: int("minItems"),
            unique_items: flag("uniqueItems"),
            max_properties: int("maxProperties"),
            min_properties: int("minProperties"),
            required: m
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(text)
                .collect(),
            r#enum: m
                .get("enum")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(any)
                .collect(),
            additional_properties,
            r#type: m.get("type").and_then(Value::as_str).map(|t| TypeItem {
                value: vec![t.to_string()],
            }),
            items,
            all_of: m
                .get("allOf")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(schema)
                .collect(),
            properties: m.get("properties").map(|p| Properties {
                additional_properties: named_schemas(p),
            }),
            vendor_extension: extensions(m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v3_schemas_become_v2_definitions() {
        let v3 = json!({"type": "object", "nullable": true, "anyOf": [{"required": ["a"]}],
            "properties": {"spec": {"$ref": "#/components/schemas/x.Spec"},
                "default": {"type": "string", "default": "d"}},
            "x-kubernetes-group-version-kind": [{"group": "g", "version": "v1", "kind": "K"}]});
        let v2 = to_v2_schema(&v3);
        assert_eq!(v2["properties"]["spec"]["$ref"], "#/definitions/x.Spec");
        assert!(v2.get("nullable").is_none() && v2.get("anyOf").is_none());
        assert_eq!(
            v2["properties"]["default"]["default"], "d",
            "a property named `default` is a schema"
        );
        let proto = gnostic::schema(&v2);
        assert_eq!(proto.r#type.as_ref().unwrap().value, ["object"]);
        assert_eq!(
            proto.vendor_extension[0].name,
            "x-kubernetes-group-version-kind"
        );
        assert_eq!(
            proto.vendor_extension[0].value.as_ref().unwrap().yaml,
            r#"[{"group":"g","version":"v1","kind":"K"}]"#
        );
        let decoded = gnostic::Schema::decode(proto.encode_to_vec().as_slice()).unwrap();
        assert_eq!(decoded.properties.unwrap().additional_properties.len(), 2);
    }
}
