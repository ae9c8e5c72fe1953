//! Field schemas `#[derive(JsonSchema)]` cannot express: Kubernetes' vendor extensions for free-form
//! JSON and int-or-string, and Go's plain `int` (an integer without a format).

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

use crate::common::IntOrString;

/// Any JSON value, kept as written (`x-kubernetes-preserve-unknown-fields`, no type).
pub(crate) fn preserve_unknown_fields(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "x-kubernetes-preserve-unknown-fields": true })
}

/// A list of arbitrary JSON values. The Go CRD marks both the list and its items, so this does too.
pub(crate) fn preserve_unknown_list(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": { "x-kubernetes-preserve-unknown-fields": true },
        "x-kubernetes-preserve-unknown-fields": true
    })
}

/// Go's `int`: controller-gen emits no `format`, and neither do we.
pub(crate) fn integer(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "integer" })
}

impl JsonSchema for IntOrString {
    fn schema_name() -> Cow<'static, str> {
        "IntOrString".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "x-kubernetes-int-or-string": true,
            "anyOf": [{ "type": "integer" }, { "type": "string" }]
        })
    }
}
