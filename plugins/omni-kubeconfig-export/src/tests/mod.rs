//! The OmniKubeconfigExport plugin against the SDK's mock host (an in-memory management cluster with the host's
//! ownership rules, a fake Omni export and a fake workload cluster): every path of the Go controller with its
//! exact conditions, the fixes of its defects (unowned Secrets, renamed targets, kept rotation data), and the
//! admission rules.

mod admission;
mod deletion;
mod export;
mod reuse;
mod spec_hash;
mod targets;
mod validation;

use omni_plugin_sdk::mock::{FakeSecret, MockHost};
use omni_plugin_sdk::prelude::*;
use omni_plugin_sdk::secrets::{KubeconfigExport, OwnerLabel, SecretKeyRef};
use omni_plugin_sdk::serde_json::Map;
use omni_plugin_sdk::{ConditionStatus, EventType, HostError, LogLevel, Value, json};

use super::*;

pub const NS: &str = "omni-system";
pub const UID: &str = "6f1c2a4e-8b1d-4c55-9a51-3f1c0e2d7b10";
pub const SECRET: &str = "edge-kubeconfig";
/// The first export happens at the mock's default time.
pub const T0: &str = "2026-01-01T00:00:00Z";
pub const ENDPOINT: &str = "https://omni.example.com";

pub fn spec() -> Value {
    json!({
        "clusterRef": {"name": "edge"},
        "targetSecretRef": {"name": SECRET},
        "serviceAccount": {"user": "automation", "groups": ["ops"]},
        "ttl": "24h",
        "renewBefore": "4h",
        "deletionPolicy": "Delete"
    })
}

pub fn export_with(spec: Value, status: Value) -> Value {
    json!({
        "apiVersion": API_VERSION, "kind": KIND,
        "metadata": {"name": "edge-admin", "namespace": NS, "uid": UID, "generation": 1},
        "spec": spec,
        "status": status
    })
}

pub fn export(spec: Value) -> Value {
    export_with(spec, json!({}))
}

/// The status a successful export into `namespace/name` key `key` left.
pub fn recorded(name: &str, namespace: &str, key: &str) -> Value {
    json!({"targetSecretRef": name, "targetSecretNamespace": namespace, "targetSecretKey": key})
}

pub fn cluster(spec: Value) -> Value {
    json!({"apiVersion": API_VERSION, "kind": "OmniCluster", "metadata": {"name": "edge", "namespace": NS}, "spec": spec})
}

pub fn edge() -> Value {
    cluster(
        json!({"connectionRef": {"name": "omni"}, "kubernetes": {"version": "v1.35.0"}, "talos": {"version": "v1.13.2"}}),
    )
}

pub fn connection() -> Value {
    json!({"apiVersion": API_VERSION, "kind": "OmniConnection", "metadata": {"name": "omni", "namespace": NS},
        "spec": {"endpoint": ENDPOINT, "auth": {"serviceAccountSecretRef": {"name": "omni-sa"}}}})
}

/// A host reconciling `object` with the cluster and connection in place, at [`T0`].
pub fn host(object: Value) -> MockHost {
    MockHost::new(object)
        .with_object(edge())
        .with_object(connection())
        .at(T0)
}

pub fn reconcile<H: Host>(host: &H) {
    OmniKubeconfigExportPlugin::reconcile(host).expect("reconcile returns Ok");
}

pub fn cond(host: &MockHost, type_: &str) -> (ConditionStatus, String, String) {
    let c = host
        .condition(type_)
        .unwrap_or_else(|| panic!("no {type_} condition"));
    (c.status, c.reason, c.message)
}

pub fn status(host: &MockHost) -> Map<String, Value> {
    host.outputs().status
}

pub fn ready_false(reason: &str, message: &str) -> (ConditionStatus, String, String) {
    (ConditionStatus::False, reason.into(), message.into())
}

pub fn exported_message(namespace: &str, name: &str, key: &str) -> String {
    format!("exported kubeconfig to Secret \"{namespace}/{name}\" key \"{key}\"")
}

/// Asserts `Exported` and `Ready` both say this.
pub fn assert_exported(host: &MockHost, want: &(ConditionStatus, String, String)) {
    assert_eq!(&cond(host, "Exported"), want, "Exported");
    assert_eq!(&cond(host, "Ready"), want, "Ready");
}

pub fn assert_accepted(host: &MockHost) {
    assert_eq!(
        cond(host, "Accepted"),
        (
            ConditionStatus::True,
            "Accepted".into(),
            "attached to OmniCluster \"edge\"".into()
        )
    );
}

/// The status fields only a written or kept kubeconfig sets.
pub const SUCCESS_ONLY: [&str; 7] = [
    "targetSecretRef",
    "targetSecretNamespace",
    "targetSecretKey",
    "kubeconfigHash",
    "expirationTime",
    "lastRotationTime",
    "nextRotationTime",
];

pub fn assert_no_success_fields(host: &MockHost) {
    let status = status(host);
    for key in SUCCESS_ONLY {
        assert!(
            !status.contains_key(key),
            "a failure must not send {key}: {status:?}"
        );
    }
}

/// The Secret a first export of `spec` writes into the export's namespace at [`T0`], to seed later hosts with.
pub fn written_secret(spec: Value) -> FakeSecret {
    let h = host(export(spec));
    reconcile(&h);
    h.secret(None, SECRET)
        .expect("the first export writes the target")
}

pub fn owned(secret: FakeSecret) -> FakeSecret {
    secret.with_label(OWNER_LABEL, UID)
}

pub fn logged(host: &MockHost, level: LogLevel, message: &str) -> bool {
    host.outputs()
        .logs
        .iter()
        .any(|(l, m)| *l == level && m == message)
}

/// The first export the plugin asked the host for.
pub fn request(host: &MockHost) -> KubeconfigExport {
    host.requests()
        .exports
        .first()
        .cloned()
        .expect("an export was requested")
}

#[test]
fn describe_names_the_kind_its_triggers_and_capabilities() {
    let info = OmniKubeconfigExportPlugin::describe();
    assert_eq!(info.name, "omni-kubeconfig-export");
    assert_eq!(
        info.kinds,
        vec![omni_plugin_sdk::Gvk::new(
            "omni.texashpc.com",
            "v1alpha1",
            "OmniKubeconfigExport"
        )]
    );
    assert_eq!(
        info.finalizer.as_deref(),
        Some("omni.texashpc.com/finalizer")
    );
    assert!(
        info.legacy_finalizers.is_empty(),
        "this kind never had the legacy finalizer"
    );
    assert_eq!(
        info.related,
        vec![
            omni_plugin_sdk::Related {
                kind: omni_plugin_sdk::Gvk::new("omni.texashpc.com", "v1alpha1", "OmniCluster"),
                mapping: omni_plugin_sdk::RelatedMapping::NameField("spec.clusterRef.name".into()),
            },
            omni_plugin_sdk::Related {
                kind: omni_plugin_sdk::Gvk::new("", "v1", "Secret"),
                mapping: omni_plugin_sdk::RelatedMapping::Annotated {
                    namespace_annotation: "omni.texashpc.com/kubeconfig-export-namespace".into(),
                    name_annotation: "omni.texashpc.com/kubeconfig-export-name".into(),
                },
            },
        ]
    );
    assert_eq!(
        info.capabilities,
        [
            "kube-read",
            "omni",
            "secrets",
            "secrets-write",
            "workload",
            "clock"
        ]
    );
}
