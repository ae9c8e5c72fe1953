//! Request bodies in Kubernetes' protobuf encoding, for the kinds that clients send that way.
//!
//! client-go's typed clients (kubectl `auth can-i`, `create configmap/secret/namespace/serviceaccount`, Helm's
//! Secret storage driver, leader election, event recorders) post `application/vnd.kubernetes.protobuf`: the
//! 4-byte magic `k8s\0` and a `runtime.Unknown` envelope whose `raw` holds the object. Every built-in kind in
//! the built-in type table is decoded (by `protobuf_generic`) into the same JSON a JSON client would have sent;
//! replies go back as JSON, which those clients also accept.

use prost::Message;
use serde_json::{Map, Value};

use crate::error::ApiError;

pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";
const MAGIC: &[u8] = b"k8s\x00";

#[derive(Clone, PartialEq, Message)]
struct Unknown {
    #[prost(message, optional, tag = "1")]
    type_meta: Option<TypeMeta>,
    #[prost(bytes = "vec", optional, tag = "2")]
    raw: Option<Vec<u8>>,
    #[prost(string, optional, tag = "3")]
    content_encoding: Option<String>,
    #[prost(string, optional, tag = "4")]
    content_type: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct TypeMeta {
    #[prost(string, optional, tag = "1")]
    api_version: Option<String>,
    #[prost(string, optional, tag = "2")]
    kind: Option<String>,
}

/// Decodes a protobuf request body of `kind` into the JSON a JSON client sends for the same object.
pub fn decode(body: &[u8], kind: &str) -> Result<Value, ApiError> {
    let bad = |why: String| {
        ApiError::bad_request(format!(
            "the body of the request could not be decoded as {kind} protobuf: {why}"
        ))
    };
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| bad("missing the k8s protobuf magic prefix".into()))?;
    let env =
        Unknown::decode(rest).map_err(|e| bad(format!("the runtime.Unknown envelope: {e}")))?;
    let tm = env.type_meta.unwrap_or_default();
    let raw = env.raw.unwrap_or_default();
    let api_version = tm.api_version.unwrap_or_default();
    if let Some(k) = &tm.kind
        && k != kind
    {
        return Err(bad(format!("the envelope holds a {k}")));
    }
    if let Some(enc) = env.content_encoding.filter(|e| !e.is_empty()) {
        return Err(bad(format!(
            "the content encoding {enc:?} is not supported"
        )));
    }
    // The envelope's apiVersion picks the layout: core/v1 and events.k8s.io/v1 Events share a kind name.
    let Some(message) = super::builtin_types::root(&api_version, kind) else {
        return Err(ApiError::unsupported_media_type(format!(
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (protobuf is not served for {kind})"
        )));
    };
    let decoded = super::protobuf_generic::decode(message, &raw)
        .map_err(|e| bad(format!("the {kind} object: {e}")))?;
    let mut o = Map::new();
    o.insert("apiVersion".into(), Value::String(api_version));
    o.insert("kind".into(), Value::String(tm.kind.unwrap_or_default()));
    if let Value::Object(fields) = decoded {
        o.extend(fields);
    }
    Ok(Value::Object(o))
}

/// Whether the client takes only protobuf: its Accept lists `application/vnd.kubernetes.protobuf` (without
/// parameters such as `as=Table`) and nothing JSON, YAML or wildcard.
pub fn wants_only_protobuf(accept: &str) -> bool {
    let types: Vec<(&str, bool)> = accept
        .split(',')
        .map(|t| {
            let mut parts = t.split(';');
            let base = parts.next().unwrap_or("").trim();
            let params = parts.any(|p| !p.trim().starts_with("q="));
            (base, params)
        })
        .collect();
    let protobuf = types
        .iter()
        .any(|(t, params)| *t == CONTENT_TYPE && !params);
    let other = types.iter().any(|(t, _)| {
        matches!(
            *t,
            "application/json" | "application/yaml" | "*/*" | "application/*"
        )
    });
    protobuf && !other
}

/// A JSON answer re-encoded for a client that takes only protobuf: the object (or list, or Status) in a
/// `runtime.Unknown` envelope. What has no protobuf form here (custom resources, Tables) is 406, as the real
/// server answers a media type it cannot produce; watches keep their JSON stream.
pub async fn answer(call: &super::Call, resp: super::Resp) -> super::Resp {
    use http_body_util::BodyExt as _;
    if !wants_only_protobuf(call.header("accept")) || call.info.verb == "watch" {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let Ok(collected) = body.collect().await;
    let bytes = collected.to_bytes();
    let Ok(json) = serde_json::from_slice::<Value>(&bytes) else {
        return http::Response::from_parts(parts, super::full(bytes));
    };
    let api_version = json["apiVersion"].as_str().unwrap_or_default();
    let kind = json["kind"].as_str().unwrap_or_default();
    let message = super::builtin_types::root(api_version, kind);
    let encoded = message.map(|m| super::protobuf_generic::encode(m, &json));
    let raw = match encoded {
        Some(Ok(raw)) => raw,
        Some(Err(e)) => {
            tracing::warn!(%kind, error = %e, "an answer could not be encoded as protobuf");
            return super::error(&ApiError::new(
                500,
                "InternalError",
                format!("encoding the {kind} answer as protobuf: {e}"),
            ));
        }
        None => {
            return super::error(&ApiError::new(
                406,
                "NotAcceptable",
                "only the following media types are accepted: application/json, application/yaml",
            ));
        }
    };
    let envelope = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.to_string()),
            kind: Some(kind.to_string()),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = MAGIC.to_vec();
    out.extend(envelope.encode_to_vec());
    parts.headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(CONTENT_TYPE),
    );
    parts.headers.remove(http::header::CONTENT_LENGTH);
    http::Response::from_parts(parts, super::full(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use serde_json::json;

    // The messages as prost encodes them: an encoder independent of the decoder under test.
    // ---- meta/v1 ----------------------------------------------------------------------------------------------

    /// metav1.Time and metav1.MicroTime share this layout (both are a `Timestamp`).
    #[derive(Clone, PartialEq, Message)]
    struct Time {
        #[prost(int64, optional, tag = "1")]
        seconds: Option<i64>,
        #[prost(int32, optional, tag = "2")]
        nanos: Option<i32>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct ObjectMeta {
        #[prost(string, optional, tag = "1")]
        name: Option<String>,
        #[prost(string, optional, tag = "2")]
        generate_name: Option<String>,
        #[prost(string, optional, tag = "3")]
        namespace: Option<String>,
        #[prost(string, optional, tag = "4")]
        self_link: Option<String>,
        #[prost(string, optional, tag = "5")]
        uid: Option<String>,
        #[prost(string, optional, tag = "6")]
        resource_version: Option<String>,
        #[prost(int64, optional, tag = "7")]
        generation: Option<i64>,
        #[prost(message, optional, tag = "8")]
        creation_timestamp: Option<Time>,
        #[prost(message, optional, tag = "9")]
        deletion_timestamp: Option<Time>,
        #[prost(int64, optional, tag = "10")]
        deletion_grace_period_seconds: Option<i64>,
        #[prost(btree_map = "string, string", tag = "11")]
        labels: BTreeMap<String, String>,
        #[prost(btree_map = "string, string", tag = "12")]
        annotations: BTreeMap<String, String>,
        #[prost(message, repeated, tag = "13")]
        owner_references: Vec<OwnerReference>,
        #[prost(string, repeated, tag = "14")]
        finalizers: Vec<String>,
        #[prost(message, repeated, tag = "17")]
        managed_fields: Vec<ManagedFieldsEntry>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct OwnerReference {
        #[prost(string, optional, tag = "1")]
        kind: Option<String>,
        #[prost(string, optional, tag = "3")]
        name: Option<String>,
        #[prost(string, optional, tag = "4")]
        uid: Option<String>,
        #[prost(string, optional, tag = "5")]
        api_version: Option<String>,
        #[prost(bool, optional, tag = "6")]
        controller: Option<bool>,
        #[prost(bool, optional, tag = "7")]
        block_owner_deletion: Option<bool>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct ManagedFieldsEntry {
        #[prost(string, optional, tag = "1")]
        manager: Option<String>,
        #[prost(string, optional, tag = "2")]
        operation: Option<String>,
        #[prost(string, optional, tag = "3")]
        api_version: Option<String>,
        #[prost(message, optional, tag = "4")]
        time: Option<Time>,
        #[prost(string, optional, tag = "6")]
        fields_type: Option<String>,
        #[prost(message, optional, tag = "7")]
        fields_v1: Option<FieldsV1>,
        #[prost(string, optional, tag = "8")]
        subresource: Option<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct FieldsV1 {
        #[prost(bytes = "vec", optional, tag = "1")]
        raw: Option<Vec<u8>>,
    }

    // ---- authorization / authentication reviews --------------------------------------------------------------

    #[derive(Clone, PartialEq, Message)]
    struct ResourceAttributes {
        #[prost(string, optional, tag = "1")]
        namespace: Option<String>,
        #[prost(string, optional, tag = "2")]
        verb: Option<String>,
        #[prost(string, optional, tag = "3")]
        group: Option<String>,
        #[prost(string, optional, tag = "4")]
        version: Option<String>,
        #[prost(string, optional, tag = "5")]
        resource: Option<String>,
        #[prost(string, optional, tag = "6")]
        subresource: Option<String>,
        #[prost(string, optional, tag = "7")]
        name: Option<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct NonResourceAttributes {
        #[prost(string, optional, tag = "1")]
        path: Option<String>,
        #[prost(string, optional, tag = "2")]
        verb: Option<String>,
    }

    /// SelfSubjectAccessReviewSpec (tags 1-2) and SubjectAccessReviewSpec (adds user 3, groups 4, uid 6).
    #[derive(Clone, PartialEq, Message)]
    struct AccessReviewSpec {
        #[prost(message, optional, tag = "1")]
        resource_attributes: Option<ResourceAttributes>,
        #[prost(message, optional, tag = "2")]
        non_resource_attributes: Option<NonResourceAttributes>,
        #[prost(string, optional, tag = "3")]
        user: Option<String>,
        #[prost(string, repeated, tag = "4")]
        groups: Vec<String>,
        #[prost(string, optional, tag = "6")]
        uid: Option<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct AccessReview {
        #[prost(message, optional, tag = "1")]
        metadata: Option<ObjectMeta>,
        #[prost(message, optional, tag = "2")]
        spec: Option<AccessReviewSpec>,
    }

    /// authentication/v1 `TokenRequest` (what `kubectl create token` sends to `serviceaccounts/{name}/token`).

    // ---- rbac.authorization.k8s.io/v1 --------------------------------------------------------------------------

    #[derive(Clone, PartialEq, Message)]
    struct PolicyRule {
        #[prost(string, repeated, tag = "1")]
        verbs: Vec<String>,
        #[prost(string, repeated, tag = "2")]
        api_groups: Vec<String>,
        #[prost(string, repeated, tag = "3")]
        resources: Vec<String>,
        #[prost(string, repeated, tag = "4")]
        resource_names: Vec<String>,
        #[prost(string, repeated, tag = "5")]
        non_resource_urls: Vec<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct LabelSelectorRequirement {
        #[prost(string, optional, tag = "1")]
        key: Option<String>,
        #[prost(string, optional, tag = "2")]
        operator: Option<String>,
        #[prost(string, repeated, tag = "3")]
        values: Vec<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct LabelSelector {
        #[prost(btree_map = "string, string", tag = "1")]
        match_labels: BTreeMap<String, String>,
        #[prost(message, repeated, tag = "2")]
        match_expressions: Vec<LabelSelectorRequirement>,
    }

    /// Role and ClusterRole (a Role never carries field 3).
    #[derive(Clone, PartialEq, Message)]
    struct RbacRole {
        #[prost(message, optional, tag = "1")]
        metadata: Option<ObjectMeta>,
        #[prost(message, repeated, tag = "2")]
        rules: Vec<PolicyRule>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct Subject {
        #[prost(string, optional, tag = "1")]
        kind: Option<String>,
        #[prost(string, optional, tag = "2")]
        api_group: Option<String>,
        #[prost(string, optional, tag = "3")]
        name: Option<String>,
        #[prost(string, optional, tag = "4")]
        namespace: Option<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct RoleRef {
        #[prost(string, optional, tag = "1")]
        api_group: Option<String>,
        #[prost(string, optional, tag = "2")]
        kind: Option<String>,
        #[prost(string, optional, tag = "3")]
        name: Option<String>,
    }

    /// RoleBinding and ClusterRoleBinding.
    #[derive(Clone, PartialEq, Message)]
    struct RbacBinding {
        #[prost(message, optional, tag = "1")]
        metadata: Option<ObjectMeta>,
        #[prost(message, repeated, tag = "2")]
        subjects: Vec<Subject>,
        #[prost(message, optional, tag = "3")]
        role_ref: Option<RoleRef>,
    }

    // ---- core/v1 ----------------------------------------------------------------------------------------------

    /// util/intstr IntOrString: `type` 0 is the integer, 1 the string.
    #[derive(Clone, PartialEq, Message)]
    struct IntOrString {
        #[prost(int64, optional, tag = "1")]
        r#type: Option<i64>,
        #[prost(int32, optional, tag = "2")]
        int_val: Option<i32>,
        #[prost(string, optional, tag = "3")]
        str_val: Option<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct ServicePort {
        #[prost(string, optional, tag = "1")]
        name: Option<String>,
        #[prost(string, optional, tag = "2")]
        protocol: Option<String>,
        #[prost(int32, optional, tag = "3")]
        port: Option<i32>,
        #[prost(message, optional, tag = "4")]
        target_port: Option<IntOrString>,
        #[prost(int32, optional, tag = "5")]
        node_port: Option<i32>,
        #[prost(string, optional, tag = "6")]
        app_protocol: Option<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct ClientIpConfig {
        #[prost(int32, optional, tag = "1")]
        timeout_seconds: Option<i32>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct SessionAffinityConfig {
        #[prost(message, optional, tag = "1")]
        client_ip: Option<ClientIpConfig>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct ServiceSpec {
        #[prost(message, repeated, tag = "1")]
        ports: Vec<ServicePort>,
        #[prost(btree_map = "string, string", tag = "2")]
        selector: BTreeMap<String, String>,
        #[prost(string, optional, tag = "3")]
        cluster_ip: Option<String>,
        #[prost(string, optional, tag = "4")]
        r#type: Option<String>,
        #[prost(string, repeated, tag = "5")]
        external_ips: Vec<String>,
        #[prost(string, optional, tag = "7")]
        session_affinity: Option<String>,
        #[prost(string, optional, tag = "8")]
        load_balancer_ip: Option<String>,
        #[prost(string, repeated, tag = "9")]
        load_balancer_source_ranges: Vec<String>,
        #[prost(string, optional, tag = "10")]
        external_name: Option<String>,
        #[prost(string, optional, tag = "11")]
        external_traffic_policy: Option<String>,
        #[prost(int32, optional, tag = "12")]
        health_check_node_port: Option<i32>,
        #[prost(bool, optional, tag = "13")]
        publish_not_ready_addresses: Option<bool>,
        #[prost(message, optional, tag = "14")]
        session_affinity_config: Option<SessionAffinityConfig>,
        #[prost(string, optional, tag = "17")]
        ip_family_policy: Option<String>,
        #[prost(string, repeated, tag = "18")]
        cluster_ips: Vec<String>,
        #[prost(string, repeated, tag = "19")]
        ip_families: Vec<String>,
        #[prost(bool, optional, tag = "20")]
        allocate_load_balancer_node_ports: Option<bool>,
        #[prost(string, optional, tag = "21")]
        load_balancer_class: Option<String>,
        #[prost(string, optional, tag = "22")]
        internal_traffic_policy: Option<String>,
        #[prost(string, optional, tag = "23")]
        traffic_distribution: Option<String>,
    }

    /// policy/v1 PodDisruptionBudget (its status, field 3, is reset by the server on create and kept on update).
    #[derive(Clone, PartialEq, Message)]
    struct PodDisruptionBudget {
        #[prost(message, optional, tag = "1")]
        metadata: Option<ObjectMeta>,
        #[prost(message, optional, tag = "2")]
        spec: Option<PodDisruptionBudgetSpec>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct PodDisruptionBudgetSpec {
        #[prost(message, optional, tag = "1")]
        min_available: Option<IntOrString>,
        #[prost(message, optional, tag = "2")]
        selector: Option<LabelSelector>,
        #[prost(message, optional, tag = "3")]
        max_unavailable: Option<IntOrString>,
        #[prost(string, optional, tag = "4")]
        unhealthy_pod_eviction_policy: Option<String>,
    }

    /// core/v1 Service (without its status, which the fixtures never send).
    #[derive(Clone, PartialEq, Message)]
    struct Service {
        #[prost(message, optional, tag = "1")]
        metadata: Option<ObjectMeta>,
        #[prost(message, optional, tag = "2")]
        spec: Option<ServiceSpec>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct Secret {
        #[prost(message, optional, tag = "1")]
        metadata: Option<ObjectMeta>,
        #[prost(btree_map = "string, bytes", tag = "2")]
        data: BTreeMap<String, Vec<u8>>,
        #[prost(string, optional, tag = "3")]
        r#type: Option<String>,
        #[prost(btree_map = "string, string", tag = "4")]
        string_data: BTreeMap<String, String>,
        #[prost(bool, optional, tag = "5")]
        immutable: Option<bool>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct ConfigMap {
        #[prost(message, optional, tag = "1")]
        metadata: Option<ObjectMeta>,
        #[prost(btree_map = "string, string", tag = "2")]
        data: BTreeMap<String, String>,
        #[prost(btree_map = "string, bytes", tag = "3")]
        binary_data: BTreeMap<String, Vec<u8>>,
        #[prost(bool, optional, tag = "4")]
        immutable: Option<bool>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct Namespace {
        #[prost(message, optional, tag = "1")]
        metadata: Option<ObjectMeta>,
        #[prost(message, optional, tag = "2")]
        spec: Option<NamespaceSpec>,
        #[prost(message, optional, tag = "3")]
        status: Option<NamespaceStatus>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct NamespaceSpec {
        #[prost(string, repeated, tag = "1")]
        finalizers: Vec<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct NamespaceStatus {
        #[prost(string, optional, tag = "1")]
        phase: Option<String>,
        #[prost(message, repeated, tag = "2")]
        conditions: Vec<NamespaceCondition>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct NamespaceCondition {
        #[prost(string, optional, tag = "1")]
        r#type: Option<String>,
        #[prost(string, optional, tag = "2")]
        status: Option<String>,
        #[prost(message, optional, tag = "4")]
        last_transition_time: Option<Time>,
        #[prost(string, optional, tag = "5")]
        reason: Option<String>,
        #[prost(string, optional, tag = "6")]
        message: Option<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct ServiceAccount {
        #[prost(message, optional, tag = "1")]
        metadata: Option<ObjectMeta>,
        #[prost(message, repeated, tag = "2")]
        secrets: Vec<ObjectReference>,
        #[prost(message, repeated, tag = "3")]
        image_pull_secrets: Vec<LocalObjectReference>,
        #[prost(bool, optional, tag = "4")]
        automount_service_account_token: Option<bool>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct ObjectReference {
        #[prost(string, optional, tag = "1")]
        kind: Option<String>,
        #[prost(string, optional, tag = "2")]
        namespace: Option<String>,
        #[prost(string, optional, tag = "3")]
        name: Option<String>,
        #[prost(string, optional, tag = "4")]
        uid: Option<String>,
        #[prost(string, optional, tag = "5")]
        api_version: Option<String>,
        #[prost(string, optional, tag = "6")]
        resource_version: Option<String>,
        #[prost(string, optional, tag = "7")]
        field_path: Option<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct LocalObjectReference {
        #[prost(string, optional, tag = "1")]
        name: Option<String>,
    }

    /// core/v1 Event.
    #[derive(Clone, PartialEq, Message)]
    struct CoreEvent {
        #[prost(message, optional, tag = "1")]
        metadata: Option<ObjectMeta>,
        #[prost(message, optional, tag = "2")]
        involved_object: Option<ObjectReference>,
        #[prost(string, optional, tag = "3")]
        reason: Option<String>,
        #[prost(string, optional, tag = "4")]
        message: Option<String>,
        #[prost(message, optional, tag = "5")]
        source: Option<EventSource>,
        #[prost(message, optional, tag = "6")]
        first_timestamp: Option<Time>,
        #[prost(message, optional, tag = "7")]
        last_timestamp: Option<Time>,
        #[prost(int32, optional, tag = "8")]
        count: Option<i32>,
        #[prost(string, optional, tag = "9")]
        r#type: Option<String>,
        #[prost(message, optional, tag = "10")]
        event_time: Option<Time>,
        #[prost(message, optional, tag = "11")]
        series: Option<EventSeries>,
        #[prost(string, optional, tag = "12")]
        action: Option<String>,
        #[prost(message, optional, tag = "13")]
        related: Option<ObjectReference>,
        #[prost(string, optional, tag = "14")]
        reporting_component: Option<String>,
        #[prost(string, optional, tag = "15")]
        reporting_instance: Option<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct EventSource {
        #[prost(string, optional, tag = "1")]
        component: Option<String>,
        #[prost(string, optional, tag = "2")]
        host: Option<String>,
    }

    /// EventSeries has the same layout in core/v1 and events.k8s.io/v1 (lastObservedTime is a MicroTime).
    #[derive(Clone, PartialEq, Message)]
    struct EventSeries {
        #[prost(int32, optional, tag = "1")]
        count: Option<i32>,
        #[prost(message, optional, tag = "2")]
        last_observed_time: Option<Time>,
    }

    // ---- events.k8s.io/v1 -------------------------------------------------------------------------------------

    #[derive(Clone, PartialEq, Message)]
    struct EventsEvent {
        #[prost(message, optional, tag = "1")]
        metadata: Option<ObjectMeta>,
        #[prost(message, optional, tag = "2")]
        event_time: Option<Time>,
        #[prost(message, optional, tag = "3")]
        series: Option<EventSeries>,
        #[prost(string, optional, tag = "4")]
        reporting_controller: Option<String>,
        #[prost(string, optional, tag = "5")]
        reporting_instance: Option<String>,
        #[prost(string, optional, tag = "6")]
        action: Option<String>,
        #[prost(string, optional, tag = "7")]
        reason: Option<String>,
        #[prost(message, optional, tag = "8")]
        regarding: Option<ObjectReference>,
        #[prost(message, optional, tag = "9")]
        related: Option<ObjectReference>,
        #[prost(string, optional, tag = "10")]
        note: Option<String>,
        #[prost(string, optional, tag = "11")]
        r#type: Option<String>,
        #[prost(message, optional, tag = "12")]
        deprecated_source: Option<EventSource>,
        #[prost(message, optional, tag = "13")]
        deprecated_first_timestamp: Option<Time>,
        #[prost(message, optional, tag = "14")]
        deprecated_last_timestamp: Option<Time>,
        #[prost(int32, optional, tag = "15")]
        deprecated_count: Option<i32>,
    }

    // ---- coordination.k8s.io/v1 -------------------------------------------------------------------------------

    #[derive(Clone, PartialEq, Message)]
    struct Lease {
        #[prost(message, optional, tag = "1")]
        metadata: Option<ObjectMeta>,
        #[prost(message, optional, tag = "2")]
        spec: Option<LeaseSpec>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct LeaseSpec {
        #[prost(string, optional, tag = "1")]
        holder_identity: Option<String>,
        #[prost(int32, optional, tag = "2")]
        lease_duration_seconds: Option<i32>,
        #[prost(message, optional, tag = "3")]
        acquire_time: Option<Time>,
        #[prost(message, optional, tag = "4")]
        renew_time: Option<Time>,
        #[prost(int32, optional, tag = "5")]
        lease_transitions: Option<i32>,
        #[prost(string, optional, tag = "6")]
        strategy: Option<String>,
        #[prost(string, optional, tag = "7")]
        preferred_holder: Option<String>,
    }

    /// 2026-01-01T00:00:00Z.
    const NEW_YEAR: i64 = 1_767_225_600;

    fn wrap(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
        let u = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some(api_version.into()),
                kind: Some(kind.into()),
            }),
            raw: Some(raw),
            content_encoding: Some(String::new()),
            content_type: Some(String::new()),
        };
        let mut out = MAGIC.to_vec();
        out.extend(u.encode_to_vec());
        out
    }

    fn envelope(kind: &str, raw: Vec<u8>) -> Vec<u8> {
        wrap("authorization.k8s.io/v1", kind, raw)
    }

    fn time(seconds: i64, nanos: i32) -> Option<Time> {
        Some(Time {
            seconds: Some(seconds),
            nanos: Some(nanos),
        })
    }

    fn strings(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Only the name set, the rest as gogo-protobuf writes non-pointer fields: empty strings and an empty Time.
    fn plain_meta(name: &str, namespace: &str) -> Option<ObjectMeta> {
        Some(ObjectMeta {
            name: Some(name.into()),
            generate_name: Some(String::new()),
            namespace: Some(namespace.into()),
            self_link: Some(String::new()),
            uid: Some(String::new()),
            resource_version: Some(String::new()),
            generation: Some(0),
            creation_timestamp: Some(Time::default()),
            ..Default::default()
        })
    }

    #[test]
    fn a_self_subject_access_review_decodes_like_kubectl_sends_it() {
        let review = AccessReview {
            metadata: Some(ObjectMeta::default()),
            spec: Some(AccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    namespace: Some("default".into()),
                    verb: Some("create".into()),
                    resource: Some("pods".into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
        };
        let v = decode(
            &envelope("SelfSubjectAccessReview", review.encode_to_vec()),
            "SelfSubjectAccessReview",
        )
        .expect("decodes");
        assert_eq!(
            v["spec"]["resourceAttributes"],
            json!({"namespace": "default", "verb": "create", "resource": "pods"})
        );
        assert_eq!(v["kind"], "SelfSubjectAccessReview");
    }

    #[test]
    fn full_object_meta_decodes_with_owner_references_and_managed_fields() {
        let meta = ObjectMeta {
            name: Some("release.v1".into()),
            generate_name: Some("release-".into()),
            namespace: Some("apps".into()),
            self_link: Some(String::new()),
            uid: Some("0b1c".into()),
            resource_version: Some("42".into()),
            generation: Some(3),
            creation_timestamp: time(NEW_YEAR, 999),
            deletion_timestamp: time(NEW_YEAR + 61, 0),
            deletion_grace_period_seconds: Some(0),
            labels: strings(&[("owner", "helm"), ("app", "web")]),
            annotations: strings(&[("note", "hi")]),
            owner_references: vec![OwnerReference {
                api_version: Some("apps/v1".into()),
                kind: Some("Deployment".into()),
                name: Some("web".into()),
                uid: Some("d-1".into()),
                controller: Some(true),
                block_owner_deletion: Some(false),
            }],
            finalizers: vec!["example.com/hold".into()],
            managed_fields: vec![ManagedFieldsEntry {
                manager: Some("helm".into()),
                operation: Some("Update".into()),
                api_version: Some("v1".into()),
                time: time(NEW_YEAR, 0),
                fields_type: Some("FieldsV1".into()),
                fields_v1: Some(FieldsV1 {
                    raw: Some(br#"{"f:data":{".":{},"f:release":{}}}"#.to_vec()),
                }),
                subresource: Some(String::new()),
            }],
        };
        let cm = ConfigMap {
            metadata: Some(meta),
            ..Default::default()
        };
        let v = decode(&wrap("v1", "ConfigMap", cm.encode_to_vec()), "ConfigMap").expect("decodes");
        assert_eq!(
            v,
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": "release.v1",
                    "generateName": "release-",
                    "namespace": "apps",
                    "uid": "0b1c",
                    "resourceVersion": "42",
                    "generation": 3,
                    "creationTimestamp": "2026-01-01T00:00:00Z",
                    "deletionTimestamp": "2026-01-01T00:01:01Z",
                    "deletionGracePeriodSeconds": 0,
                    "labels": {"app": "web", "owner": "helm"},
                    "annotations": {"note": "hi"},
                    "ownerReferences": [{
                        "apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d-1",
                        "controller": true, "blockOwnerDeletion": false
                    }],
                    "finalizers": ["example.com/hold"],
                    "managedFields": [{
                        "manager": "helm", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:00Z",
                        "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}, "f:release": {}}}
                    }]
                }
            })
        );
    }

    #[test]
    fn a_secret_decodes_with_base64_data() {
        let s = Secret {
            metadata: plain_meta("s", "default"),
            data: [
                ("a".to_string(), b"b".to_vec()),
                ("bin".to_string(), vec![0, 255, 1]),
            ]
            .into_iter()
            .collect(),
            r#type: Some("Opaque".into()),
            string_data: strings(&[("plain", "text")]),
            immutable: Some(false),
        };
        let v = decode(&wrap("v1", "Secret", s.encode_to_vec()), "Secret").expect("decodes");
        assert_eq!(
            v,
            json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "s", "namespace": "default", "creationTimestamp": null},
                "immutable": false,
                "data": {"a": "Yg==", "bin": "AP8B"},
                "stringData": {"plain": "text"},
                "type": "Opaque"
            })
        );
    }

    #[test]
    fn a_configmap_decodes_like_kubectl_create_configmap_sends_it() {
        let c = ConfigMap {
            metadata: plain_meta("made", ""),
            data: strings(&[("k", "v")]),
            binary_data: [("blob".to_string(), b"\x89PNG".to_vec())]
                .into_iter()
                .collect(),
            immutable: None,
        };
        let v = decode(&wrap("v1", "ConfigMap", c.encode_to_vec()), "ConfigMap").expect("decodes");
        assert_eq!(
            v,
            json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "made", "creationTimestamp": null},
                "data": {"k": "v"},
                "binaryData": {"blob": "iVBORw=="}
            })
        );
    }

    #[test]
    fn a_namespace_decodes_with_its_spec_and_status() {
        let n = Namespace {
            metadata: plain_meta("n1", ""),
            spec: Some(NamespaceSpec {
                finalizers: vec!["kubernetes".into()],
            }),
            status: Some(NamespaceStatus {
                phase: Some("Active".into()),
                conditions: vec![NamespaceCondition {
                    r#type: Some("NamespaceDeletionContentFailure".into()),
                    status: Some("False".into()),
                    last_transition_time: time(NEW_YEAR, 0),
                    reason: Some(String::new()),
                    message: Some("ok".into()),
                }],
            }),
        };
        let v = decode(&wrap("v1", "Namespace", n.encode_to_vec()), "Namespace").expect("decodes");
        assert_eq!(
            v,
            json!({
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "n1", "creationTimestamp": null},
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active", "conditions": [{
                    "type": "NamespaceDeletionContentFailure", "status": "False",
                    "lastTransitionTime": "2026-01-01T00:00:00Z", "message": "ok"
                }]}
            })
        );
        // kubectl create namespace sends empty spec and status messages, as Go's JSON would send `{}`.
        let bare = Namespace {
            metadata: plain_meta("n2", ""),
            spec: Some(NamespaceSpec::default()),
            status: Some(NamespaceStatus::default()),
        };
        let v =
            decode(&wrap("v1", "Namespace", bare.encode_to_vec()), "Namespace").expect("decodes");
        assert_eq!(
            v,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n2", "creationTimestamp": null}, "spec": {}, "status": {}})
        );
    }

    #[test]
    fn a_service_account_decodes_with_its_secret_references() {
        let sa = ServiceAccount {
            metadata: plain_meta("sa1", "default"),
            secrets: vec![ObjectReference {
                name: Some("sa1-token".into()),
                namespace: Some(String::new()),
                ..Default::default()
            }],
            image_pull_secrets: vec![LocalObjectReference {
                name: Some("registry".into()),
            }],
            automount_service_account_token: Some(false),
        };
        let v = decode(
            &wrap("v1", "ServiceAccount", sa.encode_to_vec()),
            "ServiceAccount",
        )
        .expect("decodes");
        assert_eq!(
            v,
            json!({
                "apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": "sa1", "namespace": "default", "creationTimestamp": null},
                "secrets": [{"name": "sa1-token"}],
                "imagePullSecrets": [{"name": "registry"}],
                "automountServiceAccountToken": false
            })
        );
    }

    #[test]
    fn a_lease_decodes_with_micro_times_and_zero_pointers() {
        let l = Lease {
            metadata: plain_meta("controller-leader", "kube-system"),
            spec: Some(LeaseSpec {
                holder_identity: Some("pod-a_1234".into()),
                lease_duration_seconds: Some(15),
                acquire_time: time(NEW_YEAR, 0),
                renew_time: time(NEW_YEAR + 10, 123_456_789),
                lease_transitions: Some(0),
                strategy: None,
                preferred_holder: None,
            }),
        };
        let v = decode(
            &wrap("coordination.k8s.io/v1", "Lease", l.encode_to_vec()),
            "Lease",
        )
        .expect("decodes");
        assert_eq!(
            v,
            json!({
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": "controller-leader", "namespace": "kube-system", "creationTimestamp": null},
                "spec": {
                    "holderIdentity": "pod-a_1234",
                    "leaseDurationSeconds": 15,
                    "acquireTime": "2026-01-01T00:00:00.000000Z",
                    "renewTime": "2026-01-01T00:00:10.123456Z",
                    "leaseTransitions": 0
                }
            })
        );
    }

    #[test]
    fn a_core_event_decodes_like_an_event_recorder_sends_it() {
        let e = CoreEvent {
            metadata: plain_meta("web.17f", "default"),
            involved_object: Some(ObjectReference {
                kind: Some("Pod".into()),
                namespace: Some("default".into()),
                name: Some("web".into()),
                uid: Some("p-1".into()),
                api_version: Some("v1".into()),
                resource_version: Some("7".into()),
                field_path: Some(String::new()),
            }),
            reason: Some("Pulled".into()),
            message: Some("pulled the image".into()),
            source: Some(EventSource {
                component: Some("kubelet".into()),
                host: Some("node-1".into()),
            }),
            first_timestamp: time(NEW_YEAR, 0),
            last_timestamp: time(NEW_YEAR + 5, 500),
            count: Some(2),
            r#type: Some("Normal".into()),
            event_time: Some(Time::default()),
            series: None,
            action: Some(String::new()),
            related: None,
            reporting_component: Some(String::new()),
            reporting_instance: Some(String::new()),
        };
        let v = decode(&wrap("v1", "Event", e.encode_to_vec()), "Event").expect("decodes");
        assert_eq!(
            v,
            json!({
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": "web.17f", "namespace": "default", "creationTimestamp": null},
                "involvedObject": {
                    "kind": "Pod", "namespace": "default", "name": "web", "uid": "p-1", "apiVersion": "v1", "resourceVersion": "7"
                },
                "reason": "Pulled",
                "message": "pulled the image",
                "source": {"component": "kubelet", "host": "node-1"},
                "firstTimestamp": "2026-01-01T00:00:00Z",
                "lastTimestamp": "2026-01-01T00:00:05Z",
                "count": 2,
                "type": "Normal",
                "reportingComponent": "",
                "reportingInstance": "",
                "eventTime": null
            })
        );
    }

    #[test]
    fn an_events_k8s_io_event_is_told_apart_by_the_envelope_api_version() {
        let e = EventsEvent {
            metadata: plain_meta("web.18a", "default"),
            event_time: time(NEW_YEAR, 7_000),
            series: Some(EventSeries {
                count: Some(3),
                last_observed_time: time(NEW_YEAR + 1, 1_500_000_000),
            }),
            reporting_controller: Some("example.com/ctl".into()),
            reporting_instance: Some("ctl-0".into()),
            action: Some("Scale".into()),
            reason: Some("Scaled".into()),
            regarding: Some(ObjectReference {
                kind: Some("Deployment".into()),
                name: Some("web".into()),
                ..Default::default()
            }),
            related: None,
            note: Some("scaled to 3".into()),
            r#type: Some("Normal".into()),
            deprecated_source: Some(EventSource::default()),
            deprecated_first_timestamp: Some(Time::default()),
            deprecated_last_timestamp: Some(Time::default()),
            deprecated_count: Some(0),
        };
        let v = decode(
            &wrap("events.k8s.io/v1", "Event", e.encode_to_vec()),
            "Event",
        )
        .expect("decodes");
        assert_eq!(
            v,
            json!({
                "apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": "web.18a", "namespace": "default", "creationTimestamp": null},
                "eventTime": "2026-01-01T00:00:00.000007Z",
                "series": {"count": 3, "lastObservedTime": "2026-01-01T00:00:02.500000Z"},
                "reportingController": "example.com/ctl",
                "reportingInstance": "ctl-0",
                "action": "Scale",
                "reason": "Scaled",
                "regarding": {"kind": "Deployment", "name": "web"},
                "note": "scaled to 3",
                "type": "Normal",
                "deprecatedSource": {},
                "deprecatedFirstTimestamp": null,
                "deprecatedLastTimestamp": null
            })
        );
        // The same bytes under a core/v1 envelope are read with the core layout, where they do not fit.
        let core =
            decode(&wrap("v1", "Event", e.encode_to_vec()), "Event").expect_err("core layout");
        assert_eq!(core.code, 400);
        assert!(core.message.contains("involvedObject"), "{}", core.message);
    }

    /// Services, RBAC objects and PodDisruptionBudgets as client-go encodes them, through the generic decoder.
    #[test]
    fn services_rbac_and_budgets_decode_with_their_nested_types() {
        let svc = Service {
            metadata: plain_meta("web", "default"),
            spec: Some(ServiceSpec {
                ports: vec![ServicePort {
                    name: Some("http".into()),
                    protocol: Some("TCP".into()),
                    port: Some(80),
                    target_port: Some(IntOrString {
                        r#type: Some(1),
                        int_val: Some(0),
                        str_val: Some("http".into()),
                    }),
                    node_port: Some(0),
                    ..Default::default()
                }],
                selector: BTreeMap::from([("app".to_string(), "web".to_string())]),
                r#type: Some("ClusterIP".into()),
                ..Default::default()
            }),
        };
        let v = decode(&wrap("v1", "Service", svc.encode_to_vec()), "Service").expect("service");
        assert_eq!(
            v["spec"]["ports"],
            json!([{"name": "http", "protocol": "TCP", "port": 80, "targetPort": "http"}])
        );
        assert_eq!(v["spec"]["selector"], json!({"app": "web"}));
        assert_eq!(
            v["status"],
            json!({"loadBalancer": {}}),
            "a struct prints even when absent"
        );

        let role = RbacRole {
            metadata: plain_meta("reader", "default"),
            rules: vec![PolicyRule {
                verbs: vec!["get".into(), "list".into()],
                api_groups: vec![String::new()],
                resources: vec!["pods".into()],
                ..Default::default()
            }],
        };
        let v = decode(
            &wrap("rbac.authorization.k8s.io/v1", "Role", role.encode_to_vec()),
            "Role",
        )
        .expect("role");
        assert_eq!(
            v["rules"],
            json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}])
        );
        let binding = RbacBinding {
            metadata: plain_meta("read", "default"),
            subjects: vec![Subject {
                kind: Some("User".into()),
                api_group: Some("rbac.authorization.k8s.io".into()),
                name: Some("alice".into()),
                namespace: Some(String::new()),
            }],
            role_ref: Some(RoleRef {
                api_group: Some("rbac.authorization.k8s.io".into()),
                kind: Some("Role".into()),
                name: Some("reader".into()),
            }),
        };
        let v = decode(
            &wrap(
                "rbac.authorization.k8s.io/v1",
                "RoleBinding",
                binding.encode_to_vec(),
            ),
            "RoleBinding",
        )
        .expect("binding");
        assert_eq!(
            v["subjects"],
            json!([{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}])
        );
        assert_eq!(v["roleRef"]["name"], "reader");

        let pdb = PodDisruptionBudget {
            metadata: plain_meta("budget", "default"),
            spec: Some(PodDisruptionBudgetSpec {
                min_available: Some(IntOrString {
                    r#type: Some(0),
                    int_val: Some(2),
                    str_val: Some(String::new()),
                }),
                selector: Some(LabelSelector {
                    match_labels: BTreeMap::from([("app".to_string(), "web".to_string())]),
                    match_expressions: vec![LabelSelectorRequirement {
                        key: Some("tier".into()),
                        operator: Some("Exists".into()),
                        values: Vec::new(),
                    }],
                }),
                ..Default::default()
            }),
        };
        let v = decode(
            &wrap("policy/v1", "PodDisruptionBudget", pdb.encode_to_vec()),
            "PodDisruptionBudget",
        )
        .expect("pdb");
        assert_eq!(v["spec"]["minAvailable"], 2);
        assert!(
            v["spec"].get("maxUnavailable").is_none(),
            "an unset pointer is left out"
        );
        assert_eq!(
            v["spec"]["selector"],
            json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]})
        );
    }

    #[test]
    fn garbage_is_a_bad_request_not_a_panic() {
        assert_eq!(
            decode(b"nope", "SelfSubjectAccessReview")
                .expect_err("no magic")
                .code,
            400
        );
        assert_eq!(
            decode(b"k8s\x00\xff\xff\xff", "SelfSubjectAccessReview")
                .expect_err("bad proto")
                .code,
            400
        );
        assert_eq!(
            decode(&envelope("Pod", vec![]), "Secret")
                .expect_err("kind mismatch")
                .code,
            400
        );
        assert_eq!(
            decode(&wrap("v1", "Secret", vec![0x12, 0x05, 0x0a]), "Secret")
                .expect_err("truncated map entry")
                .code,
            400
        );
    }

    #[test]
    fn bad_field_values_are_named_in_a_bad_request() {
        let meta = ObjectMeta {
            managed_fields: vec![ManagedFieldsEntry {
                fields_v1: Some(FieldsV1 {
                    raw: Some(b"{not json".to_vec()),
                }),
                ..Default::default()
            }],
            ..Default::default()
        };
        let s = Secret {
            metadata: Some(meta),
            ..Default::default()
        };
        let e =
            decode(&wrap("v1", "Secret", s.encode_to_vec()), "Secret").expect_err("bad fieldsV1");
        assert_eq!(e.code, 400);
        assert!(
            e.message.contains("metadata.managedFields[0].fieldsV1"),
            "{}",
            e.message
        );

        let l = Lease {
            metadata: None,
            spec: Some(LeaseSpec {
                renew_time: time(i64::MAX, 0),
                ..Default::default()
            }),
        };
        let e = decode(
            &wrap("coordination.k8s.io/v1", "Lease", l.encode_to_vec()),
            "Lease",
        )
        .expect_err("time out of range");
        assert_eq!(e.code, 400);
        assert!(e.message.contains("spec.renewTime"), "{}", e.message);
    }

    #[test]
    fn unsupported_kinds_stay_unsupported_media_type() {
        assert_eq!(
            decode(
                &wrap(
                    "apiextensions.k8s.io/v1",
                    "CustomResourceDefinition",
                    vec![]
                ),
                "CustomResourceDefinition"
            )
            .expect_err("no CustomResourceDefinition decoder")
            .code,
            415
        );
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        const KINDS: [&str; 19] = [
            "Service",
            "PodDisruptionBudget",
            "Ingress",
            "SelfSubjectAccessReview",
            "SelfSubjectRulesReview",
            "TokenReview",
            "TokenRequest",
            "Role",
            "ClusterRole",
            "RoleBinding",
            "ClusterRoleBinding",
            "Secret",
            "ConfigMap",
            "Namespace",
            "ServiceAccount",
            "Lease",
            "Event",
            "Pod",
            "SubjectAccessReview",
        ];

        proptest! {
            #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

            #[test]
            fn arbitrary_bodies_decode_or_fail_cleanly(body in proptest::collection::vec(any::<u8>(), 0..256), raw in proptest::collection::vec(any::<u8>(), 0..128)) {
                for kind in KINDS {
                    if let Err(e) = decode(&body, kind) {
                        prop_assert!(e.code == 400 || e.code == 415);
                    }
                    let mut enveloped = MAGIC.to_vec();
                    enveloped.extend(Unknown { type_meta: None, raw: Some(raw.clone()), ..Default::default() }.encode_to_vec());
                    if let Err(e) = decode(&enveloped, kind) {
                        prop_assert!(e.code == 400 || e.code == 415);
                    }
                    for api_version in ["v1", "events.k8s.io/v1", "coordination.k8s.io/v1"] {
                        if let Err(e) = decode(&wrap(api_version, kind, raw.clone()), kind) {
                            prop_assert!(e.code == 400 || e.code == 415);
                        }
                    }
                }
            }

            #[test]
            fn arbitrary_times_and_bytes_decode_or_fail_cleanly(seconds in any::<i64>(), nanos in any::<i32>(), blob in proptest::collection::vec(any::<u8>(), 0..64)) {
                let meta = ObjectMeta {
                    creation_timestamp: time(seconds, nanos),
                    managed_fields: vec![ManagedFieldsEntry { fields_v1: Some(FieldsV1 { raw: Some(blob.clone()) }), ..Default::default() }],
                    ..Default::default()
                };
                let lease = Lease { metadata: Some(meta.clone()), spec: Some(LeaseSpec { renew_time: time(seconds, nanos), ..Default::default() }) };
                if let Err(e) = decode(&wrap("coordination.k8s.io/v1", "Lease", lease.encode_to_vec()), "Lease") {
                    prop_assert_eq!(e.code, 400);
                }
                let secret = Secret { metadata: Some(meta), data: [("k".to_string(), blob)].into_iter().collect(), ..Default::default() };
                if let Err(e) = decode(&wrap("v1", "Secret", secret.encode_to_vec()), "Secret") {
                    prop_assert_eq!(e.code, 400);
                }
            }
        }
    }
}
