//! Request bodies in Kubernetes' protobuf encoding, for the kinds that clients send that way.
//!
//! client-go's typed clients (kubectl `auth can-i`, `create configmap/secret/namespace/serviceaccount`, Helm's
//! Secret storage driver, leader election, event recorders) post `application/vnd.kubernetes.protobuf`: the
//! 4-byte magic `k8s\0` and a `runtime.Unknown` envelope whose `raw` holds the object. Supported kinds are
//! decoded into the same JSON a JSON client would have sent (Go's `omitempty` rules: unset and zero-valued
//! optional fields are left out); replies go back as JSON, which those clients also accept.
//!
//! Tag numbers follow the upstream `generated.proto` files.

use std::collections::BTreeMap;

use base64::Engine as _;
use prost::Message;
use serde_json::{Map, Value, json};

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

#[derive(Clone, PartialEq, Message)]
struct RulesReviewSpec {
    #[prost(string, optional, tag = "1")]
    namespace: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct RulesReview {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<RulesReviewSpec>,
}

#[derive(Clone, PartialEq, Message)]
struct TokenReviewSpec {
    #[prost(string, optional, tag = "1")]
    token: Option<String>,
    #[prost(string, repeated, tag = "2")]
    audiences: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct TokenReview {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<TokenReviewSpec>,
}

/// authentication/v1 `TokenRequest` (what `kubectl create token` sends to `serviceaccounts/{name}/token`).
#[derive(Clone, PartialEq, Message)]
struct TokenRequest {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<TokenRequestSpec>,
}

#[derive(Clone, PartialEq, Message)]
struct TokenRequestSpec {
    #[prost(string, repeated, tag = "1")]
    audiences: Vec<String>,
    #[prost(message, optional, tag = "3")]
    bound_object_ref: Option<BoundObjectReference>,
    #[prost(int64, optional, tag = "4")]
    expiration_seconds: Option<i64>,
}

#[derive(Clone, PartialEq, Message)]
struct BoundObjectReference {
    #[prost(string, optional, tag = "1")]
    kind: Option<String>,
    #[prost(string, optional, tag = "2")]
    api_version: Option<String>,
    #[prost(string, optional, tag = "3")]
    name: Option<String>,
    #[prost(string, optional, tag = "4")]
    uid: Option<String>,
}

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

#[derive(Clone, PartialEq, Message)]
struct AggregationRule {
    #[prost(message, repeated, tag = "1")]
    cluster_role_selectors: Vec<LabelSelector>,
}

/// Role and ClusterRole (a Role never carries field 3).
#[derive(Clone, PartialEq, Message)]
struct RbacRole {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "2")]
    rules: Vec<PolicyRule>,
    #[prost(message, optional, tag = "3")]
    aggregation_rule: Option<AggregationRule>,
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

/// networking/v1 Ingress (status likewise not decoded).
#[derive(Clone, PartialEq, Message)]
struct Ingress {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<IngressSpec>,
}

#[derive(Clone, PartialEq, Message)]
struct IngressSpec {
    #[prost(message, optional, tag = "1")]
    default_backend: Option<IngressBackend>,
    #[prost(message, repeated, tag = "2")]
    tls: Vec<IngressTls>,
    #[prost(message, repeated, tag = "3")]
    rules: Vec<IngressRule>,
    #[prost(string, optional, tag = "4")]
    ingress_class_name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct IngressBackend {
    #[prost(message, optional, tag = "3")]
    resource: Option<TypedLocalObjectReference>,
    #[prost(message, optional, tag = "4")]
    service: Option<IngressServiceBackend>,
}

#[derive(Clone, PartialEq, Message)]
struct TypedLocalObjectReference {
    #[prost(string, optional, tag = "1")]
    api_group: Option<String>,
    #[prost(string, optional, tag = "2")]
    kind: Option<String>,
    #[prost(string, optional, tag = "3")]
    name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct IngressServiceBackend {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(message, optional, tag = "2")]
    port: Option<ServiceBackendPort>,
}

#[derive(Clone, PartialEq, Message)]
struct ServiceBackendPort {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(int32, optional, tag = "2")]
    number: Option<i32>,
}

#[derive(Clone, PartialEq, Message)]
struct IngressTls {
    #[prost(string, repeated, tag = "1")]
    hosts: Vec<String>,
    #[prost(string, optional, tag = "2")]
    secret_name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct IngressRule {
    #[prost(string, optional, tag = "1")]
    host: Option<String>,
    #[prost(message, optional, tag = "2")]
    ingress_rule_value: Option<IngressRuleValue>,
}

#[derive(Clone, PartialEq, Message)]
struct IngressRuleValue {
    #[prost(message, optional, tag = "1")]
    http: Option<HttpIngressRuleValue>,
}

#[derive(Clone, PartialEq, Message)]
struct HttpIngressRuleValue {
    #[prost(message, repeated, tag = "1")]
    paths: Vec<HttpIngressPath>,
}

#[derive(Clone, PartialEq, Message)]
struct HttpIngressPath {
    #[prost(string, optional, tag = "1")]
    path: Option<String>,
    #[prost(message, optional, tag = "2")]
    backend: Option<IngressBackend>,
    #[prost(string, optional, tag = "3")]
    path_type: Option<String>,
}

/// core/v1 Service. Its status (field 3) is not decoded: the server resets a Service's status on create and
/// keeps the stored one on update, so what a client sends there never counts.
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

// ---- JSON building, with Go's `encoding/json` rules ---------------------------------------------------------

type Obj = Map<String, Value>;

/// An `omitempty` string: left out when unset or empty.
fn put_str(o: &mut Obj, key: &str, v: Option<String>) {
    if let Some(v) = v.filter(|s| !s.is_empty()) {
        o.insert(key.into(), Value::String(v));
    }
}

/// A string without `omitempty`: always written, `""` when unset.
fn put_str_always(o: &mut Obj, key: &str, v: Option<String>) {
    o.insert(key.into(), Value::String(v.unwrap_or_default()));
}

/// A pointer field (`*string`, `*int32`, `*bool`): written whenever it was sent, zero values included.
fn put_ptr<T: Into<Value>>(o: &mut Obj, key: &str, v: Option<T>) {
    if let Some(v) = v {
        o.insert(key.into(), v.into());
    }
}

/// An `omitempty` integer: left out when unset or zero.
fn put_num(o: &mut Obj, key: &str, v: Option<i64>) {
    if let Some(v) = v.filter(|n| *n != 0) {
        o.insert(key.into(), json!(v));
    }
}

fn put_strings(o: &mut Obj, key: &str, v: Vec<String>) {
    if !v.is_empty() {
        o.insert(key.into(), json!(v));
    }
}

fn put_map(o: &mut Obj, key: &str, v: BTreeMap<String, String>) {
    if !v.is_empty() {
        o.insert(
            key.into(),
            Value::Object(v.into_iter().map(|(k, v)| (k, Value::String(v))).collect()),
        );
    }
}

/// `map[string][]byte`: the values as standard base64, as Go marshals `[]byte`.
fn put_bytes_map(o: &mut Obj, key: &str, v: BTreeMap<String, Vec<u8>>) {
    if !v.is_empty() {
        let b64 = base64::engine::general_purpose::STANDARD;
        o.insert(
            key.into(),
            Value::Object(
                v.into_iter()
                    .map(|(k, v)| (k, Value::String(b64.encode(v))))
                    .collect(),
            ),
        );
    }
}

/// A present but empty Timestamp is Go's zero time, which marshals as `null`: both are left out.
fn time_parts(t: Option<Time>) -> Option<(i64, i32)> {
    t.filter(|t| t.seconds.is_some() || t.nanos.is_some())
        .map(|t| (t.seconds.unwrap_or(0), t.nanos.unwrap_or(0)))
}

/// Formats a UTC instant as RFC 3339, with `micros` digits of fraction when given.
fn rfc3339(seconds: i64, micros: Option<i64>, path: &str) -> Result<String, String> {
    let ts = jiff::Timestamp::from_second(seconds)
        .map_err(|e| format!("{path}: the time {seconds}s is out of range: {e}"))?;
    let base = ts.strftime("%Y-%m-%dT%H:%M:%S").to_string();
    Ok(match micros {
        Some(us) => format!("{base}.{us:06}Z"),
        None => format!("{base}Z"),
    })
}

/// metav1.Time: seconds precision (the real decoder drops the nanos too).
fn put_time(o: &mut Obj, key: &str, t: Option<Time>, path: &str) -> Result<(), String> {
    if let Some((s, _)) = time_parts(t) {
        o.insert(key.into(), Value::String(rfc3339(s, None, path)?));
    }
    Ok(())
}

/// metav1.MicroTime: six fractional digits, nanos normalised and truncated as Go's `time.Unix` + RFC3339Micro do.
fn put_micro_time(o: &mut Obj, key: &str, t: Option<Time>, path: &str) -> Result<(), String> {
    if let Some((s, n)) = time_parts(t) {
        let total = i128::from(s) * 1_000_000_000 + i128::from(n);
        let secs = i64::try_from(total.div_euclid(1_000_000_000))
            .map_err(|_| format!("{path}: the time is out of range"))?;
        let micros = i64::try_from(total.rem_euclid(1_000_000_000) / 1000)
            .map_err(|_| format!("{path}: the time is out of range"))?;
        o.insert(
            key.into(),
            Value::String(rfc3339(secs, Some(micros), path)?),
        );
    }
    Ok(())
}

fn meta_json(m: Option<ObjectMeta>) -> Result<Value, String> {
    let m = m.unwrap_or_default();
    let mut o = Obj::new();
    put_str(&mut o, "name", m.name);
    put_str(&mut o, "generateName", m.generate_name);
    put_str(&mut o, "namespace", m.namespace);
    put_str(&mut o, "selfLink", m.self_link);
    put_str(&mut o, "uid", m.uid);
    put_str(&mut o, "resourceVersion", m.resource_version);
    put_num(&mut o, "generation", m.generation);
    put_time(
        &mut o,
        "creationTimestamp",
        m.creation_timestamp,
        "metadata.creationTimestamp",
    )?;
    put_time(
        &mut o,
        "deletionTimestamp",
        m.deletion_timestamp,
        "metadata.deletionTimestamp",
    )?;
    put_ptr(
        &mut o,
        "deletionGracePeriodSeconds",
        m.deletion_grace_period_seconds,
    );
    put_map(&mut o, "labels", m.labels);
    put_map(&mut o, "annotations", m.annotations);
    if !m.owner_references.is_empty() {
        let refs = m.owner_references.into_iter().map(|r| {
            let mut e = Obj::new();
            put_str_always(&mut e, "apiVersion", r.api_version);
            put_str_always(&mut e, "kind", r.kind);
            put_str_always(&mut e, "name", r.name);
            put_str_always(&mut e, "uid", r.uid);
            put_ptr(&mut e, "controller", r.controller);
            put_ptr(&mut e, "blockOwnerDeletion", r.block_owner_deletion);
            Value::Object(e)
        });
        o.insert("ownerReferences".into(), Value::Array(refs.collect()));
    }
    put_strings(&mut o, "finalizers", m.finalizers);
    if !m.managed_fields.is_empty() {
        let mut entries = Vec::with_capacity(m.managed_fields.len());
        for (i, f) in m.managed_fields.into_iter().enumerate() {
            let path = format!("metadata.managedFields[{i}]");
            let mut e = Obj::new();
            put_str(&mut e, "manager", f.manager);
            put_str(&mut e, "operation", f.operation);
            put_str(&mut e, "apiVersion", f.api_version);
            put_time(&mut e, "time", f.time, &format!("{path}.time"))?;
            put_str(&mut e, "fieldsType", f.fields_type);
            if let Some(raw) = f.fields_v1.and_then(|f| f.raw).filter(|r| !r.is_empty()) {
                let v: Value = serde_json::from_slice(&raw)
                    .map_err(|e| format!("{path}.fieldsV1 is not JSON: {e}"))?;
                e.insert("fieldsV1".into(), v);
            }
            put_str(&mut e, "subresource", f.subresource);
            entries.push(Value::Object(e));
        }
        o.insert("managedFields".into(), Value::Array(entries));
    }
    Ok(Value::Object(o))
}

/// corev1.ObjectReference: every field is `omitempty`.
fn object_ref(r: ObjectReference) -> Value {
    let mut o = Obj::new();
    put_str(&mut o, "kind", r.kind);
    put_str(&mut o, "namespace", r.namespace);
    put_str(&mut o, "name", r.name);
    put_str(&mut o, "uid", r.uid);
    put_str(&mut o, "apiVersion", r.api_version);
    put_str(&mut o, "resourceVersion", r.resource_version);
    put_str(&mut o, "fieldPath", r.field_path);
    Value::Object(o)
}

fn event_source(s: EventSource) -> Value {
    let mut o = Obj::new();
    put_str(&mut o, "component", s.component);
    put_str(&mut o, "host", s.host);
    Value::Object(o)
}

fn core_event(e: CoreEvent, out: &mut Obj) -> Result<(), String> {
    out.insert(
        "involvedObject".into(),
        object_ref(e.involved_object.unwrap_or_default()),
    );
    put_str(out, "reason", e.reason);
    put_str(out, "message", e.message);
    if let Some(s) = e.source {
        out.insert("source".into(), event_source(s));
    }
    put_time(out, "firstTimestamp", e.first_timestamp, "firstTimestamp")?;
    put_time(out, "lastTimestamp", e.last_timestamp, "lastTimestamp")?;
    put_num(out, "count", e.count.map(i64::from));
    put_str(out, "type", e.r#type);
    put_micro_time(out, "eventTime", e.event_time, "eventTime")?;
    if let Some(s) = e.series {
        let mut so = Obj::new();
        put_num(&mut so, "count", s.count.map(i64::from));
        put_micro_time(
            &mut so,
            "lastObservedTime",
            s.last_observed_time,
            "series.lastObservedTime",
        )?;
        out.insert("series".into(), Value::Object(so));
    }
    put_str(out, "action", e.action);
    if let Some(r) = e.related {
        out.insert("related".into(), object_ref(r));
    }
    // These two have no `omitempty` in core/v1.
    put_str_always(out, "reportingComponent", e.reporting_component);
    put_str_always(out, "reportingInstance", e.reporting_instance);
    Ok(())
}

fn events_event(e: EventsEvent, out: &mut Obj) -> Result<(), String> {
    put_micro_time(out, "eventTime", e.event_time, "eventTime")?;
    if let Some(s) = e.series {
        let mut so = Obj::new();
        so.insert("count".into(), json!(s.count.unwrap_or(0)));
        put_micro_time(
            &mut so,
            "lastObservedTime",
            s.last_observed_time,
            "series.lastObservedTime",
        )?;
        out.insert("series".into(), Value::Object(so));
    }
    put_str(out, "reportingController", e.reporting_controller);
    put_str(out, "reportingInstance", e.reporting_instance);
    put_str(out, "action", e.action);
    put_str(out, "reason", e.reason);
    if let Some(r) = e.regarding {
        out.insert("regarding".into(), object_ref(r));
    }
    if let Some(r) = e.related {
        out.insert("related".into(), object_ref(r));
    }
    put_str(out, "note", e.note);
    put_str(out, "type", e.r#type);
    if let Some(s) = e.deprecated_source {
        out.insert("deprecatedSource".into(), event_source(s));
    }
    put_time(
        out,
        "deprecatedFirstTimestamp",
        e.deprecated_first_timestamp,
        "deprecatedFirstTimestamp",
    )?;
    put_time(
        out,
        "deprecatedLastTimestamp",
        e.deprecated_last_timestamp,
        "deprecatedLastTimestamp",
    )?;
    put_num(out, "deprecatedCount", e.deprecated_count.map(i64::from));
    Ok(())
}

fn lease_spec(s: LeaseSpec) -> Result<Value, String> {
    // Every LeaseSpec field is a pointer: sent means present, zero values included.
    let mut o = Obj::new();
    put_ptr(&mut o, "holderIdentity", s.holder_identity);
    put_ptr(&mut o, "leaseDurationSeconds", s.lease_duration_seconds);
    put_micro_time(&mut o, "acquireTime", s.acquire_time, "spec.acquireTime")?;
    put_micro_time(&mut o, "renewTime", s.renew_time, "spec.renewTime")?;
    put_ptr(&mut o, "leaseTransitions", s.lease_transitions);
    put_ptr(&mut o, "strategy", s.strategy);
    put_ptr(&mut o, "preferredHolder", s.preferred_holder);
    Ok(Value::Object(o))
}

fn namespace_json(n: Namespace, out: &mut Obj) -> Result<(), String> {
    if let Some(spec) = n.spec {
        let mut o = Obj::new();
        put_strings(&mut o, "finalizers", spec.finalizers);
        out.insert("spec".into(), Value::Object(o));
    }
    if let Some(status) = n.status {
        let mut o = Obj::new();
        put_str(&mut o, "phase", status.phase);
        if !status.conditions.is_empty() {
            let mut conds = Vec::with_capacity(status.conditions.len());
            for (i, c) in status.conditions.into_iter().enumerate() {
                let mut co = Obj::new();
                put_str_always(&mut co, "type", c.r#type);
                put_str_always(&mut co, "status", c.status);
                put_time(
                    &mut co,
                    "lastTransitionTime",
                    c.last_transition_time,
                    &format!("status.conditions[{i}].lastTransitionTime"),
                )?;
                put_str(&mut co, "reason", c.reason);
                put_str(&mut co, "message", c.message);
                conds.push(Value::Object(co));
            }
            o.insert("conditions".into(), Value::Array(conds));
        }
        out.insert("status".into(), Value::Object(o));
    }
    Ok(())
}

/// networking/v1 IngressSpec with Go's tags (a rule's value is inlined; `pathType` and `paths` have no omitempty;
/// a service backend's `port` struct is always written).
fn ingress_spec(s: IngressSpec) -> Value {
    fn backend(b: IngressBackend) -> Value {
        let mut o = Obj::new();
        if let Some(svc) = b.service {
            let mut e = Obj::new();
            put_str_always(&mut e, "name", svc.name);
            let p = svc.port.unwrap_or_default();
            let mut port = Obj::new();
            put_str(&mut port, "name", p.name);
            put_num(&mut port, "number", p.number.map(i64::from));
            e.insert("port".into(), Value::Object(port));
            o.insert("service".into(), Value::Object(e));
        }
        if let Some(r) = b.resource {
            let mut e = Obj::new();
            e.insert(
                "apiGroup".into(),
                r.api_group.map_or(Value::Null, Value::String),
            );
            put_str_always(&mut e, "kind", r.kind);
            put_str_always(&mut e, "name", r.name);
            o.insert("resource".into(), Value::Object(e));
        }
        Value::Object(o)
    }
    let mut o = Obj::new();
    put_ptr(&mut o, "ingressClassName", s.ingress_class_name);
    if let Some(b) = s.default_backend {
        o.insert("defaultBackend".into(), backend(b));
    }
    if !s.tls.is_empty() {
        let tls = s.tls.into_iter().map(|t| {
            let mut e = Obj::new();
            put_strings(&mut e, "hosts", t.hosts);
            put_str(&mut e, "secretName", t.secret_name);
            Value::Object(e)
        });
        o.insert("tls".into(), Value::Array(tls.collect()));
    }
    if !s.rules.is_empty() {
        let rules = s.rules.into_iter().map(|r| {
            let mut e = Obj::new();
            put_str(&mut e, "host", r.host);
            if let Some(http) = r.ingress_rule_value.and_then(|v| v.http) {
                let paths: Vec<Value> = http
                    .paths
                    .into_iter()
                    .map(|p| {
                        let mut q = Obj::new();
                        put_str(&mut q, "path", p.path);
                        q.insert("pathType".into(), p.path_type.map_or(Value::Null, Value::String));
                        q.insert("backend".into(), backend(p.backend.unwrap_or_default()));
                        Value::Object(q)
                    })
                    .collect();
                e.insert(
                    "http".into(),
                    json!({"paths": if paths.is_empty() { Value::Null } else { Value::Array(paths) }}),
                );
            }
            Value::Object(e)
        });
        o.insert("rules".into(), Value::Array(rules.collect()));
    }
    Value::Object(o)
}

/// IntOrString as JSON: the integer or the string its `type` says.
fn int_or_string(v: Option<IntOrString>) -> Value {
    let v = v.unwrap_or_default();
    match v.r#type.unwrap_or(0) {
        1 => json!(v.str_val.unwrap_or_default()),
        _ => json!(v.int_val.unwrap_or(0)),
    }
}

/// core/v1 ServiceSpec with Go's tags: `port` and `targetPort` always written (an IntOrString is a struct, which
/// omitempty never omits), the rest omitempty, pointers whenever sent.
fn service_spec(s: ServiceSpec) -> Value {
    let mut o = Obj::new();
    if !s.ports.is_empty() {
        let ports = s.ports.into_iter().map(|p| {
            let mut e = Obj::new();
            put_str(&mut e, "name", p.name);
            put_str(&mut e, "protocol", p.protocol);
            put_ptr(&mut e, "appProtocol", p.app_protocol);
            e.insert("port".into(), json!(p.port.unwrap_or(0)));
            e.insert("targetPort".into(), int_or_string(p.target_port));
            put_num(&mut e, "nodePort", p.node_port.map(i64::from));
            Value::Object(e)
        });
        o.insert("ports".into(), Value::Array(ports.collect()));
    }
    put_map(&mut o, "selector", s.selector);
    put_str(&mut o, "clusterIP", s.cluster_ip);
    put_strings(&mut o, "clusterIPs", s.cluster_ips);
    put_str(&mut o, "type", s.r#type);
    put_strings(&mut o, "externalIPs", s.external_ips);
    put_str(&mut o, "sessionAffinity", s.session_affinity);
    put_str(&mut o, "loadBalancerIP", s.load_balancer_ip);
    put_strings(
        &mut o,
        "loadBalancerSourceRanges",
        s.load_balancer_source_ranges,
    );
    put_str(&mut o, "externalName", s.external_name);
    put_str(&mut o, "externalTrafficPolicy", s.external_traffic_policy);
    put_num(
        &mut o,
        "healthCheckNodePort",
        s.health_check_node_port.map(i64::from),
    );
    if s.publish_not_ready_addresses == Some(true) {
        o.insert("publishNotReadyAddresses".into(), json!(true));
    }
    if let Some(c) = s.session_affinity_config {
        let mut config = Obj::new();
        if let Some(ip) = c.client_ip {
            let mut client = Obj::new();
            put_ptr(&mut client, "timeoutSeconds", ip.timeout_seconds);
            config.insert("clientIP".into(), Value::Object(client));
        }
        o.insert("sessionAffinityConfig".into(), Value::Object(config));
    }
    put_strings(&mut o, "ipFamilies", s.ip_families);
    put_ptr(&mut o, "ipFamilyPolicy", s.ip_family_policy);
    put_ptr(
        &mut o,
        "allocateLoadBalancerNodePorts",
        s.allocate_load_balancer_node_ports,
    );
    put_ptr(&mut o, "loadBalancerClass", s.load_balancer_class);
    put_ptr(&mut o, "internalTrafficPolicy", s.internal_traffic_policy);
    put_ptr(&mut o, "trafficDistribution", s.traffic_distribution);
    Value::Object(o)
}

/// rbac/v1 PolicyRule: `verbs` has no omitempty (null when none), the lists after it do.
fn policy_rule(r: PolicyRule) -> Value {
    let mut e = Obj::new();
    e.insert(
        "verbs".into(),
        if r.verbs.is_empty() {
            Value::Null
        } else {
            json!(r.verbs)
        },
    );
    put_strings(&mut e, "apiGroups", r.api_groups);
    put_strings(&mut e, "resources", r.resources);
    put_strings(&mut e, "resourceNames", r.resource_names);
    put_strings(&mut e, "nonResourceURLs", r.non_resource_urls);
    Value::Object(e)
}

/// meta/v1 LabelSelector.
fn label_selector(s: LabelSelector) -> Value {
    let mut e = Obj::new();
    put_map(&mut e, "matchLabels", s.match_labels);
    if !s.match_expressions.is_empty() {
        let reqs = s.match_expressions.into_iter().map(|r| {
            let mut q = Obj::new();
            put_str_always(&mut q, "key", r.key);
            put_str_always(&mut q, "operator", r.operator);
            put_strings(&mut q, "values", r.values);
            Value::Object(q)
        });
        e.insert("matchExpressions".into(), Value::Array(reqs.collect()));
    }
    Value::Object(e)
}

fn opt(v: &mut Value, key: &str, s: Option<String>) {
    if let Some(s) = s {
        v[key] = json!(s);
    }
}

/// Decodes a protobuf body of one of the supported kinds into the JSON a JSON client would have sent.
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
    let mut o = Obj::new();
    o.insert("apiVersion".into(), Value::String(api_version.clone()));
    o.insert("kind".into(), Value::String(tm.kind.unwrap_or_default()));
    let obj_err = |e: prost::DecodeError| bad(format!("the {kind} object: {e}"));
    let field_err = |e: String| bad(e);
    match kind {
        "SelfSubjectAccessReview" | "SubjectAccessReview" => {
            let r = AccessReview::decode(raw.as_slice()).map_err(obj_err)?;
            o.insert("metadata".into(), meta_json(r.metadata).map_err(field_err)?);
            let s = r.spec.unwrap_or_default();
            let mut spec = json!({});
            if let Some(a) = s.resource_attributes {
                let mut ra = json!({});
                opt(&mut ra, "namespace", a.namespace);
                opt(&mut ra, "verb", a.verb);
                opt(&mut ra, "group", a.group);
                opt(&mut ra, "version", a.version);
                opt(&mut ra, "resource", a.resource);
                opt(&mut ra, "subresource", a.subresource);
                opt(&mut ra, "name", a.name);
                spec["resourceAttributes"] = ra;
            }
            if let Some(n) = s.non_resource_attributes {
                let mut na = json!({});
                opt(&mut na, "path", n.path);
                opt(&mut na, "verb", n.verb);
                spec["nonResourceAttributes"] = na;
            }
            opt(&mut spec, "user", s.user);
            opt(&mut spec, "uid", s.uid);
            if !s.groups.is_empty() {
                spec["groups"] = json!(s.groups);
            }
            o.insert("spec".into(), spec);
        }
        "SelfSubjectRulesReview" => {
            let r = RulesReview::decode(raw.as_slice()).map_err(obj_err)?;
            o.insert("metadata".into(), meta_json(r.metadata).map_err(field_err)?);
            o.insert(
                "spec".into(),
                json!({"namespace": r.spec.unwrap_or_default().namespace.unwrap_or_default()}),
            );
        }
        "SelfSubjectReview" => {
            o.insert("metadata".into(), json!({}));
        }
        "TokenReview" => {
            let r = TokenReview::decode(raw.as_slice()).map_err(obj_err)?;
            o.insert("metadata".into(), meta_json(r.metadata).map_err(field_err)?);
            let s = r.spec.unwrap_or_default();
            o.insert(
                "spec".into(),
                json!({"token": s.token.unwrap_or_default(), "audiences": s.audiences}),
            );
        }
        "TokenRequest" => {
            let r = TokenRequest::decode(raw.as_slice()).map_err(obj_err)?;
            o.insert("metadata".into(), meta_json(r.metadata).map_err(field_err)?);
            let s = r.spec.unwrap_or_default();
            let mut spec = json!({"audiences": s.audiences});
            if let Some(seconds) = s.expiration_seconds {
                spec["expirationSeconds"] = json!(seconds);
            }
            if let Some(b) = s.bound_object_ref {
                let mut bound = json!({});
                opt(&mut bound, "kind", b.kind);
                opt(&mut bound, "apiVersion", b.api_version);
                opt(&mut bound, "name", b.name);
                opt(&mut bound, "uid", b.uid);
                spec["boundObjectRef"] = bound;
            }
            o.insert("spec".into(), spec);
        }
        "Role" | "ClusterRole" => {
            let r = RbacRole::decode(raw.as_slice()).map_err(obj_err)?;
            o.insert("metadata".into(), meta_json(r.metadata).map_err(field_err)?);
            // `rules` has no omitempty: Go writes null for none.
            let rules: Vec<Value> = r.rules.into_iter().map(policy_rule).collect();
            o.insert(
                "rules".into(),
                if rules.is_empty() {
                    Value::Null
                } else {
                    Value::Array(rules)
                },
            );
            if let Some(a) = r.aggregation_rule {
                let mut agg = Obj::new();
                if !a.cluster_role_selectors.is_empty() {
                    agg.insert(
                        "clusterRoleSelectors".into(),
                        Value::Array(
                            a.cluster_role_selectors
                                .into_iter()
                                .map(label_selector)
                                .collect(),
                        ),
                    );
                }
                o.insert("aggregationRule".into(), Value::Object(agg));
            }
        }
        "RoleBinding" | "ClusterRoleBinding" => {
            let b = RbacBinding::decode(raw.as_slice()).map_err(obj_err)?;
            o.insert("metadata".into(), meta_json(b.metadata).map_err(field_err)?);
            if !b.subjects.is_empty() {
                let subjects = b.subjects.into_iter().map(|s| {
                    let mut e = Obj::new();
                    put_str_always(&mut e, "kind", s.kind);
                    put_str(&mut e, "apiGroup", s.api_group);
                    put_str_always(&mut e, "name", s.name);
                    put_str(&mut e, "namespace", s.namespace);
                    Value::Object(e)
                });
                o.insert("subjects".into(), Value::Array(subjects.collect()));
            }
            let r = b.role_ref.unwrap_or_default();
            let mut role_ref = Obj::new();
            put_str_always(&mut role_ref, "apiGroup", r.api_group);
            put_str_always(&mut role_ref, "kind", r.kind);
            put_str_always(&mut role_ref, "name", r.name);
            o.insert("roleRef".into(), Value::Object(role_ref));
        }
        "PodDisruptionBudget" => {
            let pdb = PodDisruptionBudget::decode(raw.as_slice()).map_err(obj_err)?;
            o.insert(
                "metadata".into(),
                meta_json(pdb.metadata).map_err(field_err)?,
            );
            let s = pdb.spec.unwrap_or_default();
            let mut spec = Obj::new();
            if s.min_available.is_some() {
                spec.insert("minAvailable".into(), int_or_string(s.min_available));
            }
            if let Some(sel) = s.selector {
                spec.insert("selector".into(), label_selector(sel));
            }
            if s.max_unavailable.is_some() {
                spec.insert("maxUnavailable".into(), int_or_string(s.max_unavailable));
            }
            put_ptr(
                &mut spec,
                "unhealthyPodEvictionPolicy",
                s.unhealthy_pod_eviction_policy,
            );
            o.insert("spec".into(), Value::Object(spec));
        }
        "Ingress" => {
            let ing = Ingress::decode(raw.as_slice()).map_err(obj_err)?;
            o.insert(
                "metadata".into(),
                meta_json(ing.metadata).map_err(field_err)?,
            );
            o.insert("spec".into(), ingress_spec(ing.spec.unwrap_or_default()));
        }
        "Service" => {
            let svc = Service::decode(raw.as_slice()).map_err(obj_err)?;
            o.insert(
                "metadata".into(),
                meta_json(svc.metadata).map_err(field_err)?,
            );
            o.insert("spec".into(), service_spec(svc.spec.unwrap_or_default()));
            o.insert("status".into(), json!({"loadBalancer": {}}));
        }
        "Secret" => {
            let s = Secret::decode(raw.as_slice()).map_err(obj_err)?;
            o.insert("metadata".into(), meta_json(s.metadata).map_err(field_err)?);
            put_ptr(&mut o, "immutable", s.immutable);
            put_bytes_map(&mut o, "data", s.data);
            put_map(&mut o, "stringData", s.string_data);
            put_str(&mut o, "type", s.r#type);
        }
        "ConfigMap" => {
            let c = ConfigMap::decode(raw.as_slice()).map_err(obj_err)?;
            o.insert("metadata".into(), meta_json(c.metadata).map_err(field_err)?);
            put_ptr(&mut o, "immutable", c.immutable);
            put_map(&mut o, "data", c.data);
            put_bytes_map(&mut o, "binaryData", c.binary_data);
        }
        "Namespace" => {
            let mut n = Namespace::decode(raw.as_slice()).map_err(obj_err)?;
            o.insert(
                "metadata".into(),
                meta_json(n.metadata.take()).map_err(field_err)?,
            );
            namespace_json(n, &mut o).map_err(field_err)?;
        }
        "ServiceAccount" => {
            let s = ServiceAccount::decode(raw.as_slice()).map_err(obj_err)?;
            o.insert("metadata".into(), meta_json(s.metadata).map_err(field_err)?);
            if !s.secrets.is_empty() {
                o.insert(
                    "secrets".into(),
                    Value::Array(s.secrets.into_iter().map(object_ref).collect()),
                );
            }
            if !s.image_pull_secrets.is_empty() {
                let refs = s.image_pull_secrets.into_iter().map(|r| {
                    let mut e = Obj::new();
                    put_str(&mut e, "name", r.name);
                    Value::Object(e)
                });
                o.insert("imagePullSecrets".into(), Value::Array(refs.collect()));
            }
            put_ptr(
                &mut o,
                "automountServiceAccountToken",
                s.automount_service_account_token,
            );
        }
        "Lease" => {
            let l = Lease::decode(raw.as_slice()).map_err(obj_err)?;
            o.insert("metadata".into(), meta_json(l.metadata).map_err(field_err)?);
            if let Some(spec) = l.spec {
                o.insert("spec".into(), lease_spec(spec).map_err(field_err)?);
            }
        }
        // core/v1 and events.k8s.io share the kind name; the envelope's apiVersion tells them apart.
        "Event" if api_version.starts_with("events.k8s.io/") => {
            let mut e = EventsEvent::decode(raw.as_slice()).map_err(obj_err)?;
            o.insert(
                "metadata".into(),
                meta_json(e.metadata.take()).map_err(field_err)?,
            );
            events_event(e, &mut o).map_err(field_err)?;
        }
        "Event" => {
            let mut e = CoreEvent::decode(raw.as_slice()).map_err(obj_err)?;
            o.insert(
                "metadata".into(),
                meta_json(e.metadata.take()).map_err(field_err)?,
            );
            core_event(e, &mut o).map_err(field_err)?;
        }
        // Every other built-in kind: the schema-driven decoder.
        other => match super::builtin_types::root(&api_version, other) {
            Some(message) => {
                let decoded = super::protobuf_generic::decode(message, &raw)
                    .map_err(|e| bad(format!("the {kind} object: {e}")))?;
                if let Value::Object(fields) = decoded {
                    o.extend(fields);
                }
            }
            None => {
                return Err(ApiError::unsupported_media_type(format!(
                    "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (protobuf is not served for {other})"
                )));
            }
        },
    }
    Ok(Value::Object(o))
}

#[cfg(test)]
mod tests {
    use super::*;

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
                "metadata": {"name": "s", "namespace": "default"},
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
                "metadata": {"name": "made"},
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
                "metadata": {"name": "n1"},
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
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n2"}, "spec": {}, "status": {}})
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
                "metadata": {"name": "sa1", "namespace": "default"},
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
                "metadata": {"name": "controller-leader", "namespace": "kube-system"},
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
                "metadata": {"name": "web.17f", "namespace": "default"},
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
                "reportingInstance": ""
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
                "metadata": {"name": "web.18a", "namespace": "default"},
                "eventTime": "2026-01-01T00:00:00.000007Z",
                "series": {"count": 3, "lastObservedTime": "2026-01-01T00:00:02.500000Z"},
                "reportingController": "example.com/ctl",
                "reportingInstance": "ctl-0",
                "action": "Scale",
                "reason": "Scaled",
                "regarding": {"kind": "Deployment", "name": "web"},
                "note": "scaled to 3",
                "type": "Normal",
                "deprecatedSource": {}
            })
        );
        // The same bytes under a core/v1 envelope are read with the core layout, where they do not fit.
        let core =
            decode(&wrap("v1", "Event", e.encode_to_vec()), "Event").expect_err("core layout");
        assert_eq!(core.code, 400);
        assert!(core.message.contains("involved_object"), "{}", core.message);
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
