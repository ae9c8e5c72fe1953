//! The OmniKubeconfigExport plugin against the SDK's mock host (an in-memory management cluster with the host's
//! ownership rules, a fake Omni export and a fake workload cluster): every path of spec/original-operator.md §4
//! with its exact conditions, the fixes of §10.7/10.9/10.10/10.11, and the §7.3 admission rules.

mod admission;
mod deletion;
mod export;
mod reuse;
mod spec_hash;
mod targets;
mod validation;

use std::cell::RefCell;

use omni_plugin_sdk::mock::{FakeSecret, MockHost};
use omni_plugin_sdk::omni::{ClusterHealth, LabelTerm, OmniResource, ResourceKey};
use omni_plugin_sdk::secrets::{KubeconfigExport, OwnerLabel, Removal, SecretInfo, SecretKeyRef};
use omni_plugin_sdk::serde_json::Map;
use omni_plugin_sdk::{Condition, ConditionStatus, EventType, Host, HostError, ListQuery, LogLevel, ObjectRef, Plugin, Value, json};

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
    cluster(json!({"connectionRef": {"name": "omni"}, "kubernetes": {"version": "v1.35.0"}, "talos": {"version": "v1.13.2"}}))
}

pub fn connection() -> Value {
    json!({"apiVersion": API_VERSION, "kind": "OmniConnection", "metadata": {"name": "omni", "namespace": NS},
        "spec": {"endpoint": ENDPOINT, "auth": {"serviceAccountSecretRef": {"name": "omni-sa"}}}})
}

/// A host reconciling `object` with the cluster and connection in place, at [`T0`].
pub fn host(object: Value) -> MockHost {
    MockHost::new(object).with_object(edge()).with_object(connection()).at(T0)
}

pub fn reconcile<H: Host>(host: &H) {
    OmniKubeconfigExportPlugin::reconcile(host).expect("reconcile returns Ok");
}

pub fn cond(host: &MockHost, type_: &str) -> (ConditionStatus, String, String) {
    let c = host.condition(type_).unwrap_or_else(|| panic!("no {type_} condition"));
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
    assert_eq!(cond(host, "Accepted"), (ConditionStatus::True, "Accepted".into(), "attached to OmniCluster \"edge\"".into()));
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
        assert!(!status.contains_key(key), "a failure must not send {key}: {status:?}");
    }
}

/// The Secret a first export of `spec` writes into the export's namespace at [`T0`], to seed later hosts with.
pub fn written_secret(spec: Value) -> FakeSecret {
    let h = host(export(spec));
    reconcile(&h);
    h.secret(None, SECRET).expect("the first export writes the target")
}

pub fn owned(secret: FakeSecret) -> FakeSecret {
    secret.with_label(OWNER_LABEL, UID)
}

pub fn logged(host: &MockHost, level: LogLevel, message: &str) -> bool {
    host.outputs().logs.iter().any(|(l, m)| *l == level && m == message)
}

/// A host around [`MockHost`] that records the export requests and owner-checked deletions, and can make the
/// target look absent (the race of §10.7: the Secret appears between the look and the write) or the probe answer
/// regardless of what the Secret holds.
pub struct Spy {
    pub inner: MockHost,
    pub requests: RefCell<Vec<KubeconfigExport>>,
    pub deletions: RefCell<Vec<(Option<String>, String)>>,
    pub probes: RefCell<u32>,
    pub hide_secrets: bool,
    pub probe: Option<Result<String, HostError>>,
}

impl Spy {
    pub fn new(inner: MockHost) -> Self {
        Spy { inner, requests: RefCell::default(), deletions: RefCell::default(), probes: RefCell::default(), hide_secrets: false, probe: None }
    }

    pub fn request(&self) -> KubeconfigExport {
        self.requests.borrow().first().cloned().expect("an export was requested")
    }
}

impl Host for Spy {
    fn object(&self) -> Value {
        self.inner.object()
    }
    fn remaining_ms(&self) -> u64 {
        self.inner.remaining_ms()
    }
    fn set_status(&self, fields: Value) {
        self.inner.set_status(fields)
    }
    fn set_condition(&self, condition: Condition) {
        self.inner.set_condition(condition)
    }
    fn requeue_after(&self, ms: u64) {
        self.inner.requeue_after(ms)
    }
    fn event(&self, kind: EventType, reason: &str, message: &str) {
        self.inner.event(kind, reason, message)
    }
    fn log(&self, level: LogLevel, message: &str, fields: &[(&str, &str)]) {
        self.inner.log(level, message, fields)
    }
    fn now(&self) -> String {
        self.inner.now()
    }
    fn kube_get(&self, target: &ObjectRef) -> Result<Option<Value>, HostError> {
        self.inner.kube_get(target)
    }
    fn kube_list(&self, query: &ListQuery) -> Result<Vec<Value>, HostError> {
        self.inner.kube_list(query)
    }
    fn omni_ping(&self, connection: &str) -> Result<String, HostError> {
        self.inner.omni_ping(connection)
    }
    fn omni_get(&self, connection: &str, key: &ResourceKey) -> Result<Option<OmniResource>, HostError> {
        self.inner.omni_get(connection, key)
    }
    fn omni_list(&self, connection: &str, namespace: &str, type_: &str, labels: &[LabelTerm]) -> Result<Vec<OmniResource>, HostError> {
        self.inner.omni_list(connection, namespace, type_, labels)
    }
    fn omni_create(&self, connection: &str, resource: &OmniResource) -> Result<OmniResource, HostError> {
        self.inner.omni_create(connection, resource)
    }
    fn omni_update(&self, connection: &str, resource: &OmniResource) -> Result<OmniResource, HostError> {
        self.inner.omni_update(connection, resource)
    }
    fn omni_teardown(&self, connection: &str, key: &ResourceKey) -> Result<bool, HostError> {
        self.inner.omni_teardown(connection, key)
    }
    fn omni_destroy(&self, connection: &str, key: &ResourceKey) -> Result<(), HostError> {
        self.inner.omni_destroy(connection, key)
    }
    fn omni_cluster_status(&self, connection: &str, cluster: &str) -> Result<Option<ClusterHealth>, HostError> {
        self.inner.omni_cluster_status(connection, cluster)
    }
    fn secret_info(&self, namespace: Option<&str>, name: &str) -> Result<Option<SecretInfo>, HostError> {
        if self.hide_secrets {
            return Ok(None);
        }
        self.inner.secret_info(namespace, name)
    }
    fn secret_digest(&self, key: &SecretKeyRef) -> Result<Option<String>, HostError> {
        self.inner.secret_digest(key)
    }
    fn secret_delete_owned(&self, namespace: Option<&str>, name: &str, owner: &OwnerLabel) -> Result<Removal, HostError> {
        self.deletions.borrow_mut().push((namespace.map(String::from), name.to_string()));
        self.inner.secret_delete_owned(namespace, name, owner)
    }
    fn omni_export_kubeconfig(&self, connection: &str, request: &KubeconfigExport) -> Result<String, HostError> {
        self.requests.borrow_mut().push(request.clone());
        self.inner.omni_export_kubeconfig(connection, request)
    }
    fn workload_probe(&self, kubeconfig: &SecretKeyRef) -> Result<String, HostError> {
        *self.probes.borrow_mut() += 1;
        match &self.probe {
            Some(answer) => answer.clone(),
            None => self.inner.workload_probe(kubeconfig),
        }
    }
}

#[test]
fn describe_names_the_kind_its_triggers_and_capabilities() {
    let info = OmniKubeconfigExportPlugin::describe();
    assert_eq!(info.name, "omni-kubeconfig-export");
    assert_eq!(info.kinds, vec![omni_plugin_sdk::Gvk::new("omni.texashpc.com", "v1alpha1", "OmniKubeconfigExport")]);
    assert_eq!(info.finalizer.as_deref(), Some("omni.texashpc.com/finalizer"));
    assert!(info.legacy_finalizers.is_empty(), "this kind never had the legacy finalizer");
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
    assert_eq!(info.capabilities, ["kube-read", "omni", "secrets", "secrets-write", "workload", "clock"]);
}
