//! The OmniSecretSync plugin natively against the SDK's mock host (its in-memory management Secrets and fake
//! workload cluster enforce the host's ownership rules): every path of the Go controller with its exact texts,
//! the fixes (kubeconfig pin, unowned targets, previous targets, bounded deletion) and the admission rules.

mod admission;
mod deletion;
mod reconcile;

use std::ops::Deref;

use omni_plugin_sdk::mock::{FakeSecret, MockHost};
use omni_plugin_sdk::secrets::{OwnerLabel, SecretCopy, SecretKeyRef};
use omni_plugin_sdk::serde_json::Map;
use omni_plugin_sdk::{ConditionStatus, EventType, HostError, Value, json};

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
    FakeSecret {
        secret_type: DOCKER.into(),
        ..FakeSecret::opaque(&[(".dockerconfigjson", r#"{"auths":{"ghcr.io":{}}}"#)])
    }
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

/// MockHost with the assertions these tests share; the mock itself records what the plugin asks of the workload
/// cluster (`MockHost::requests`), so the requests themselves can be asserted, not only their effect.
struct Recording {
    inner: MockHost,
}

fn recording(inner: MockHost) -> Recording {
    Recording { inner }
}

impl Deref for Recording {
    type Target = MockHost;
    fn deref(&self) -> &MockHost {
        &self.inner
    }
}

impl Recording {
    fn copies(&self) -> Vec<(SecretKeyRef, SecretCopy)> {
        self.inner.requests().copies
    }

    /// `(namespace, name)` of every delete asked for.
    fn deleted(&self) -> Vec<(String, String)> {
        self.inner
            .requests()
            .workload_deletions
            .into_iter()
            .map(|(_, ns, n, _)| (ns, n))
            .collect()
    }

    fn status(&self) -> Map<String, Value> {
        self.inner.outputs().status
    }

    fn cond(&self, type_: &str) -> (ConditionStatus, String, String) {
        let c = self
            .inner
            .condition(type_)
            .unwrap_or_else(|| panic!("{type_} was not set"));
        (c.status, c.reason, c.message)
    }

    fn requeue(&self) -> Option<u64> {
        self.inner.outputs().requeue_after
    }

    fn events(&self) -> Vec<(EventType, String, String)> {
        self.inner.outputs().events
    }
}

fn reconciled(host: MockHost) -> Recording {
    let rec = recording(host);
    OmniSecretSyncPlugin::reconcile(&rec.inner).expect("reconcile returns Ok");
    rec
}

#[test]
fn describe_names_the_kind_its_triggers_finalizer_and_capabilities() {
    let info = OmniSecretSyncPlugin::describe();
    assert_eq!(info.name, "omni-secret-sync");
    assert_eq!(
        info.kinds,
        [omni_plugin_sdk::Gvk::new(
            "omni.texashpc.com",
            "v1alpha1",
            "OmniSecretSync"
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
    let related: Vec<(String, String, String, omni_plugin_sdk::RelatedMapping)> = info
        .related
        .iter()
        .map(|r| {
            (
                r.kind.group.clone(),
                r.kind.version.clone(),
                r.kind.kind.clone(),
                r.mapping.clone(),
            )
        })
        .collect();
    use omni_plugin_sdk::RelatedMapping::NameField;
    assert_eq!(
        related,
        [
            (
                "omni.texashpc.com".into(),
                "v1alpha1".into(),
                "OmniCluster".into(),
                NameField("spec.clusterRef.name".into())
            ),
            (
                "".into(),
                "v1".into(),
                "Secret".into(),
                NameField("spec.sourceSecretRef.name".into())
            ),
            (
                "".into(),
                "v1".into(),
                "Secret".into(),
                NameField("spec.kubeconfigSecretRef.name".into())
            ),
        ]
    );
    assert_eq!(
        info.capabilities,
        ["kube-read", "secrets", "workload", "clock"]
    );
}
