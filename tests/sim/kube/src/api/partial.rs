//! `PartialObjectMetadata` responses: a client that asks for
//! `Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1` (kube-rs's metadata API and metadata
//! watchers, client-go's metadata informers) gets only each object's metadata, as kube-apiserver's
//! `transformObject` returns it: `PartialObjectMetadata` for an object or a watch event, `PartialObjectMetadataList`
//! for a list, and 406 NotAcceptable when the shape asked for is not the shape of the answer.

use serde_json::{Value, json};

use crate::error::ApiError;

/// What the first media type of an Accept header asks the object to be turned into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// The object itself.
    Object,
    Metadata,
    MetadataList,
}

/// The shape the first media type of `accept` asks for (meta.k8s.io v1 or v1beta1, as the real server accepts).
pub fn requested(accept: &str) -> Shape {
    let Some(first) = accept.split(',').next() else {
        return Shape::Object;
    };
    let mut as_ = "";
    let mut group = "";
    for param in first.split(';').skip(1) {
        match param.trim().split_once('=') {
            Some(("as", v)) => as_ = v.trim(),
            Some(("g", v)) => group = v.trim(),
            _ => {}
        }
    }
    match (as_, group) {
        ("PartialObjectMetadata", "meta.k8s.io") => Shape::Metadata,
        ("PartialObjectMetadataList", "meta.k8s.io") => Shape::MetadataList,
        _ => Shape::Object,
    }
}

fn metadata_of(obj: &Value) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]})
}

fn not_acceptable(message: String) -> ApiError {
    ApiError::new(406, "NotAcceptable", message)
}

/// One object (a get, create, update or patch answer) in the requested shape.
pub fn object(shape: Shape, kind: &str, obj: Value) -> Result<Value, ApiError> {
    match shape {
        Shape::Object => Ok(obj),
        Shape::Metadata => Ok(metadata_of(&obj)),
        Shape::MetadataList => Err(not_acceptable(format!(
            "you requested PartialObjectMetadataList, but the requested object is not a list ({kind})"
        ))),
    }
}

/// A watch event's object in the requested shape (`Metadata` for a watch: events carry single objects).
pub fn event_object(shape: Shape, obj: Value) -> Value {
    match shape {
        Shape::Metadata | Shape::MetadataList => metadata_of(&obj),
        Shape::Object => obj,
    }
}

/// A list in the requested shape.
pub fn list(shape: Shape, list_kind: &str, list: Value) -> Result<Value, ApiError> {
    match shape {
        Shape::Object => Ok(list),
        Shape::MetadataList => {
            let items: Vec<Value> = list["items"]
                .as_array()
                .map(|items| items.iter().map(metadata_of).collect())
                .unwrap_or_default();
            Ok(
                json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                "metadata": list["metadata"], "items": items}),
            )
        }
        Shape::Metadata => Err(not_acceptable(format!(
            "you requested PartialObjectMetadata, but the requested object is a list ({list_kind})"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_media_type_decides() {
        assert_eq!(
            requested("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"),
            Shape::Metadata
        );
        assert_eq!(
            requested(
                "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
            ),
            Shape::MetadataList
        );
        assert_eq!(requested("application/json"), Shape::Object);
        assert_eq!(
            requested(
                "application/json,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
            ),
            Shape::Object
        );
    }
}
