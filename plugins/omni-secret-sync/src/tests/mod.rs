//! The OmniSecretSync plugin natively against the SDK's mock host (its in-memory management Secrets and fake
//! workload cluster enforce the host's ownership rules): every path of spec/original-operator.md §5 with its
//! exact texts, the fixes (§10.1, §10.8, §10.9, §10.13) and the §7.3 admission rules.

mod admission;
mod deletion;
mod reconcile;

use std::cell::RefCell;
use std::ops::Deref;

use omni_plugin_sdk::mock::{FakeSecret, MockHost};
use omni_plugin_sdk::omni::{ClusterHealth, LabelTerm, OmniResource, ResourceKey};
use omni_plugin_sdk::secrets::{Copied, OwnerLabel, Removal, SecretCopy, SecretInfo, SecretKeyRef};
use omni_plugin_sdk::serde_json::Map;
use omni_plugin_sdk::{Condition, ConditionStatus, EventType, Host, HostError, ListQuery, LogLevel, ObjectRef, Value, json};

use super::*;

const NS: &str = "team";
const UID: &str = "5f0c6b1e-8d2a-4c3b-9e7f-1a2b3c4d5e6f";
const NAME: &str = "registry";
const SOURCE: &str = "registry-creds";
const KUBECONFIG: &str = "edge-kubeconfig";
/// The target of [`sync`]: namespace `apps` does not exist in the fake workload cluster until created.
const TARGET_NS: &str = "apps";
const TARGET: &str = "regcred";
const DOCKER: &str = "kubernetes.io/dockerconfigjson";

/// A valid OmniSecretSync with `createNamespace: true` and `deletionPolicy: Delete`.
fn sync() -> Value {
    json!({
        "apiVersion": API_VERSION, "kind": KIND,
        "metadata": {"name": NAME, "namespace": NS, "uid": UID, "generation": 2},
        "spec": {
            "clusterRef": {"name": "edge"},
            "kubeconfigSecretRef": {"name": KUBECONFIG, "key": "kubeconfig"},
            "sourceSecretRef": {"name": SOURCE},
            "targetSecretRef": {"name": TARGET, "namespace": TARGET_NS},
            "createNamespace": true,
            "deletionPolicy": "Delete"
        }
    })
}

/// `object` with the field at the dotted `path` set (`Value::Null` removes it).
fn set(mut object: Value, path: &str, value: Value) -> Value {
    let mut parts: Vec<&str> = path.split('.').collect();
    let last = parts.pop().unwrap();
    let mut cur = &mut object;
    for p in parts {
        cur = &mut cur[p];
    }
    match value {
        Value::Null => {
            cur.as_object_mut().unwrap().remove(last);
        }
        v => cur[last] = v,
    }
    object
}

/// The OmniCluster the sync refers to; its Omni name differs from its object name.
fn cluster() -> Value {
    json!({"apiVersion": API_VERSION, "kind": "OmniCluster", "metadata": {"name": "edge", "namespace": NS},
        "spec": {"clusterName": "edge-prod", "connectionRef": {"name": "omni"}}})
}

fn source() -> FakeSecret {
    FakeSecret { secret_type: DOCKER.into(), ..FakeSecret::opaque(&[(".dockerconfigjson", r#"{"auths":{"ghcr.io":{}}}"#)]) }
}

fn kubeconfig() -> FakeSecret {
    FakeSecret::opaque(&[("kubeconfig", "apiVersion: v1\nkind: Config\n")])
}

/// A workload Secret as this sync would own it.
fn owned(data: &[(&str, &str)]) -> FakeSecret {
    FakeSecret::opaque(data).with_label(target::OWNER_LABEL, UID)
}

/// A host with the cluster, the source and the kubeconfig Secret in place.
fn host(object: Value) -> MockHost {
    MockHost::new(object)
        .with_object(cluster())
        .with_secret(None, SOURCE, source())
        .with_secret(None, KUBECONFIG, kubeconfig())
}

/// MockHost recording what the plugin asks of the workload cluster, so the requests themselves (metadata, the
/// kubeconfig reference) can be asserted, not only their effect.
struct Recording {
    inner: MockHost,
    copies: RefCell<Vec<(SecretKeyRef, SecretCopy)>>,
    deletes: RefCell<Vec<(SecretKeyRef, String, String, OwnerLabel)>>,
}

fn recording(inner: MockHost) -> Recording {
    Recording { inner, copies: RefCell::default(), deletes: RefCell::default() }
}

impl Deref for Recording {
    type Target = MockHost;
    fn deref(&self) -> &MockHost {
        &self.inner
    }
}

impl Recording {
    fn copies(&self) -> Vec<(SecretKeyRef, SecretCopy)> {
        self.copies.borrow().clone()
    }

    /// `(namespace, name)` of every delete asked for.
    fn deleted(&self) -> Vec<(String, String)> {
        self.deletes.borrow().iter().map(|(_, ns, n, _)| (ns.clone(), n.clone())).collect()
    }

    fn status(&self) -> Map<String, Value> {
        self.inner.outputs().status
    }

    fn cond(&self, type_: &str) -> (ConditionStatus, String, String) {
        let c = self.inner.condition(type_).unwrap_or_else(|| panic!("{type_} was not set"));
        (c.status, c.reason, c.message)
    }

    fn requeue(&self) -> Option<u64> {
        self.inner.outputs().requeue_after
    }

    fn events(&self) -> Vec<(EventType, String, String)> {
        self.inner.outputs().events
    }
}

impl Host for Recording {
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
        self.inner.secret_info(namespace, name)
    }
    fn secret_digest(&self, key: &SecretKeyRef) -> Result<Option<String>, HostError> {
        self.inner.secret_digest(key)
    }
    fn workload_copy_secret(&self, kubeconfig: &SecretKeyRef, request: &SecretCopy) -> Result<Copied, HostError> {
        self.copies.borrow_mut().push((kubeconfig.clone(), request.clone()));
        self.inner.workload_copy_secret(kubeconfig, request)
    }
    fn workload_delete_secret(&self, kubeconfig: &SecretKeyRef, namespace: &str, name: &str, owner: &OwnerLabel) -> Result<Removal, HostError> {
        self.deletes.borrow_mut().push((kubeconfig.clone(), namespace.into(), name.into(), owner.clone()));
        self.inner.workload_delete_secret(kubeconfig, namespace, name, owner)
    }
}

fn reconciled(host: MockHost) -> Recording {
    let rec = recording(host);
    OmniSecretSyncPlugin::reconcile(&rec).expect("reconcile returns Ok");
    rec
}

#[test]
fn describe_names_the_kind_its_triggers_finalizer_and_capabilities() {
    let info = OmniSecretSyncPlugin::describe();
    assert_eq!(info.name, "omni-secret-sync");
    assert_eq!(info.kinds, [omni_plugin_sdk::Gvk::new("omni.texashpc.com", "v1alpha1", "OmniSecretSync")]);
    assert_eq!(info.finalizer.as_deref(), Some("omni.texashpc.com/finalizer"));
    assert!(info.legacy_finalizers.is_empty(), "this kind never had the legacy finalizer");
    let related: Vec<(String, String, String, omni_plugin_sdk::RelatedMapping)> =
        info.related.iter().map(|r| (r.kind.group.clone(), r.kind.version.clone(), r.kind.kind.clone(), r.mapping.clone())).collect();
    use omni_plugin_sdk::RelatedMapping::NameField;
    assert_eq!(
        related,
        [
            ("omni.texashpc.com".into(), "v1alpha1".into(), "OmniCluster".into(), NameField("spec.clusterRef.name".into())),
            ("".into(), "v1".into(), "Secret".into(), NameField("spec.sourceSecretRef.name".into())),
            ("".into(), "v1".into(), "Secret".into(), NameField("spec.kubeconfigSecretRef.name".into())),
        ]
    );
    assert_eq!(info.capabilities, ["kube-read", "secrets", "workload", "clock"]);
}
