//! `/openapi/v2`, as kubectl 1.27 and 1.28 (and client-go's `OpenAPISchema`) fetch it: the gnostic OpenAPI v2
//! `Document` in protobuf (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`), or as JSON.
//!
//! The document carries the server's title and version and no definitions yet: kubectl then takes the patch
//! metadata of built-in kinds from its compiled-in types, as newer kubectl versions do with `/openapi/v3`.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use prost::Message;
use serde_json::json;

use super::{Call, Resp, full, json_ok};

/// The media type kubectl asks for.
const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
/// The type kube-openapi's handler answers it with: the same, with `.` for `@` (Go's mime parser refuses `@`).
const PROTOBUF_ANSWER: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

#[derive(Clone, PartialEq, Message)]
struct Document {
    #[prost(string, tag = "1")]
    swagger: String,
    #[prost(message, optional, tag = "2")]
    info: Option<Info>,
    #[prost(message, optional, tag = "8")]
    paths: Option<Paths>,
    #[prost(message, optional, tag = "9")]
    definitions: Option<Definitions>,
}

#[derive(Clone, PartialEq, Message)]
struct Info {
    #[prost(string, tag = "1")]
    title: String,
    #[prost(string, tag = "2")]
    version: String,
}

#[derive(Clone, PartialEq, Message)]
struct Paths {}

#[derive(Clone, PartialEq, Message)]
struct Definitions {}

pub fn handle(call: &Call, version: &str) -> Resp {
    let accept = call.header("accept");
    if accept.contains(PROTOBUF) || accept.contains(PROTOBUF_ANSWER) {
        let doc = Document {
            swagger: "2.0".into(),
            info: Some(Info {
                title: "Kubernetes".into(),
                version: version.into(),
            }),
            paths: Some(Paths {}),
            definitions: Some(Definitions {}),
        };
        let mut r = Response::new(full(Bytes::from(doc.encode_to_vec())));
        *r.status_mut() = StatusCode::OK;
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(PROTOBUF_ANSWER),
        );
        return r;
    }
    json_ok(
        &json!({"swagger": "2.0", "info": {"title": "Kubernetes", "version": version}, "paths": {}, "definitions": {}}),
    )
}
