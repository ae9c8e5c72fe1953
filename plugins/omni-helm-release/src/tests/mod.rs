//! The OmniHelmRelease plugin natively against the SDK's mock host, whose Helm calls answer scripted reports
//! after checking the `helm` grant and the kubeconfig Secret: every path of spec/original-operator.md §6 with its
//! exact texts and status fields, the requests sent to the host, the steady-state and Event rules, deletion
//! (§6.7 with §10.13) and the §7.3 admission rules with the §10.17 release-name rule.

mod admission;
mod deletion;
mod reconcile;

use omni_plugin_sdk::helm::{
    Action, ActionOutcome, Progress, ReleaseReport, ReleaseState, Revision,
};
use omni_plugin_sdk::mock::{FakeSecret, MockHost};
use omni_plugin_sdk::serde_json::Map;
use omni_plugin_sdk::{ConditionStatus, EventType, Value, json};

use super::*;

const NS: &str = "team";
const NAME: &str = "web";
const RELEASE: &str = "podinfo";
const KUBECONFIG: &str = "edge-kubeconfig";
/// The digest the host says is wanted now, and one of an older spec.
const WANTED: &str = "d-wanted";
const OLDER: &str = "d-older";
/// The mock host's clock.
const NOW: &str = "2026-01-01T00:00:00Z";
/// When the host's actions finished, in order.
const T1: &str = "2026-01-01T00:01:00Z";
const T2: &str = "2026-01-01T00:02:00Z";

const T: ConditionStatus = ConditionStatus::True;
const F: ConditionStatus = ConditionStatus::False;
const U: ConditionStatus = ConditionStatus::Unknown;

/// A valid OmniHelmRelease from an HTTP chart repository, every option set.
fn release() -> Value {
    json!({
        "apiVersion": API_VERSION, "kind": KIND,
        "metadata": {"name": NAME, "namespace": NS, "uid": "0b5c", "generation": 3},
        "spec": {
            "clusterRef": {"name": "edge"},
            "kubeconfigSecretRef": {"name": KUBECONFIG, "key": "config"},
            "releaseName": RELEASE,
            "namespace": "apps",
            "chart": {
                "repository": "https://stefanprodan.github.io/podinfo",
                "chart": "podinfo",
                "version": "6.7.1",
                "values": {"replicaCount": 2, "ui": {"color": "#34577c"}}
            },
            "createNamespace": true,
            "wait": true,
            "waitForJobs": true,
            "timeout": "90s",
            "atomic": true,
            "disableHooks": true,
            "skipCRDs": true,
            "maxHistory": 5,
            "deletionPolicy": "Uninstall"
        }
    })
}

/// Only the required fields: every default applies.
fn minimal() -> Value {
    json!({
        "apiVersion": API_VERSION, "kind": KIND,
        "metadata": {"name": NAME, "namespace": NS, "generation": 1},
        "spec": {
            "clusterRef": {"name": "edge"},
            "kubeconfigSecretRef": {"name": KUBECONFIG},
            "chart": {"repository": "https://charts.example.com", "chart": "web", "version": "1.0.0"}
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

fn cluster() -> Value {
    json!({"apiVersion": API_VERSION, "kind": "OmniCluster", "metadata": {"name": "edge", "namespace": NS},
        "spec": {"clusterName": "edge-prod", "connectionRef": {"name": "omni"}}})
}

/// The kubeconfig Secret of [`release`] (key `config`) and of [`minimal`] (key `kubeconfig`).
fn kubeconfig() -> FakeSecret {
    FakeSecret::opaque(&[
        ("config", "apiVersion: v1\nkind: Config\n"),
        ("kubeconfig", "apiVersion: v1\nkind: Config\n"),
    ])
}

/// A host with the cluster and the kubeconfig Secret in place, answering `answer` to every Helm call.
fn host(object: Value, answer: ReleaseReport) -> MockHost {
    MockHost::new(object)
        .with_object(cluster())
        .with_secret(None, KUBECONFIG, kubeconfig())
        .with_helm(Ok(answer))
}

fn revision(n: u64, status: &str, digest: Option<&str>) -> Revision {
    Revision {
        revision: n,
        status: status.into(),
        chart: "podinfo".into(),
        chart_version: "6.7.1".into(),
        app_version: "6.7.1".into(),
        updated: T1.into(),
        description: "Install complete".into(),
        digest: digest.map(String::from),
    }
}

fn outcome(
    action: Action,
    n: u64,
    error: Option<&str>,
    finished: &str,
    digest: &str,
) -> ActionOutcome {
    ActionOutcome {
        action,
        revision: n,
        error: error.map(String::from),
        finished: finished.into(),
        digest: digest.into(),
    }
}

fn answer(
    current: Option<Revision>,
    progress: Progress,
    last: Option<ActionOutcome>,
) -> ReleaseReport {
    ReleaseReport {
        release: current.map(|current| ReleaseState {
            current,
            history: Vec::new(),
        }),
        progress,
        last,
        wanted: WANTED.into(),
    }
}

/// What is wanted is deployed at revision `n`, made by `last`.
fn deployed(n: u64, last: Option<ActionOutcome>) -> ReleaseReport {
    answer(
        Some(revision(n, "deployed", Some(WANTED))),
        Progress::Idle,
        last,
    )
}

fn status(host: &MockHost) -> Map<String, Value> {
    host.outputs().status
}

fn cond(host: &MockHost, type_: &str) -> (ConditionStatus, String, String) {
    let c = host
        .condition(type_)
        .unwrap_or_else(|| panic!("{type_} was not set"));
    (c.status, c.reason, c.message)
}

fn expect(
    status: ConditionStatus,
    reason: &str,
    message: &str,
) -> (ConditionStatus, String, String) {
    (status, reason.into(), message.into())
}

fn requeue(host: &MockHost) -> Option<u64> {
    host.outputs().requeue_after
}

fn events(host: &MockHost) -> Vec<(EventType, String, String)> {
    host.outputs().events
}

fn reconciled(host: MockHost) -> MockHost {
    OmniHelmReleasePlugin::reconcile(&host).expect("reconcile returns Ok");
    host
}

/// `object` as the host leaves it after `host`'s call: status fields merged one level deep, conditions upserted
/// by type, a transition time stamped only when a condition is new or changes status, as the host does.
fn committed(mut object: Value, host: &MockHost) -> Value {
    let outputs = host.outputs();
    let mut status = object["status"].as_object().cloned().unwrap_or_default();
    status.extend(outputs.status);
    let mut conditions = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for c in outputs.conditions {
        let status = format!("{:?}", c.status);
        let entry = json!({"type": c.type_, "status": status, "lastTransitionTime": NOW, "reason": c.reason,
            "message": c.message});
        match conditions
            .iter_mut()
            .find(|e| e["type"] == c.type_.as_str())
        {
            Some(existing) if existing["status"] == status.as_str() => {
                existing["reason"] = json!(c.reason);
                existing["message"] = json!(c.message);
            }
            Some(existing) => *existing = entry,
            None => conditions.push(entry),
        }
    }
    status.insert("conditions".into(), Value::Array(conditions));
    object["status"] = Value::Object(status);
    object
}

#[test]
fn describe_names_the_kind_its_triggers_finalizer_capabilities_and_secret() {
    use omni_plugin_sdk::RelatedMapping::NameField;
    let info = OmniHelmReleasePlugin::describe();
    assert_eq!(info.name, "omni-helm-release");
    assert_eq!(info.version, "0.1.0");
    assert_eq!(
        info.kinds,
        [omni_plugin_sdk::Gvk::new(
            "omni.texashpc.com",
            "v1alpha1",
            "OmniHelmRelease"
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
                NameField("spec.kubeconfigSecretRef.name".into())
            ),
        ]
    );
    assert_eq!(info.capabilities, ["kube-read", "secrets", "helm", "clock"]);
    assert_eq!(
        info.secret_fields,
        [omni_plugin_sdk::SecretField::local(
            "spec.kubeconfigSecretRef.name"
        )]
    );
}

#[test]
fn the_public_intervals_are_the_documented_ones() {
    assert_eq!(RESYNC_MS, 5 * 60 * 1000);
    assert_eq!(RETRY_MS, 60 * 1000);
    assert_eq!(PROGRESS_CHECK_MS, 30 * 1000);
    assert_eq!(PROGRESSING, "Progressing");
}
