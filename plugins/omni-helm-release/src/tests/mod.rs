//! The OmniHelmRelease plugin natively against the SDK's mock host, whose `helm_observe` answers a scripted
//! [`Observation`] and whose `helm_start` records the step asked for, after checking the `helm` grant and the
//! kubeconfig Secret: every path of the Go controller with its exact texts and status fields, the observations
//! and steps sent to the host, the steady-state and Event rules, deletion (never blocked silently), Flux
//! helm-controller's release state machine (`machine`) and the admission rules with Helm's release-name rule.

mod admission;
mod deletion;
mod drift;
mod identity;
mod machine;
mod reconcile;

use omni_plugin_sdk::helm::{
    Action, Observation, ReleaseState, Revision, Step, StepRecord, TestHook,
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
/// When the host's actions started, and when they finished, in order.
const T0: &str = "2026-01-01T00:00:00Z";
const T1: &str = "2026-01-01T00:01:00Z";
const T2: &str = "2026-01-01T00:02:00Z";
/// The mock host's clock: 5 s after the last action finished.
const NOW: &str = "2026-01-01T00:02:05Z";

const T: ConditionStatus = ConditionStatus::True;
const F: ConditionStatus = ConditionStatus::False;
const U: ConditionStatus = ConditionStatus::Unknown;

/// 2026-01-01 at `seconds` after midnight, as the host writes times.
fn time(seconds: u64) -> String {
    format!(
        "2026-01-01T{:02}:{:02}:{:02}Z",
        seconds / 3600,
        seconds % 3600 / 60,
        seconds % 60
    )
}

/// A valid OmniHelmRelease from an HTTP chart repository, every option of the Go operator set.
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

/// A mock host reconciling `object` at [`NOW`], with nothing in place.
fn mock(object: Value) -> MockHost {
    MockHost::new(object).at(NOW)
}

/// A host with the cluster and the kubeconfig Secret in place, observing `observed`; `helm_start` answers a
/// record of the step.
fn host(object: Value, observed: Observation) -> MockHost {
    mock(object)
        .with_object(cluster())
        .with_secret(None, KUBECONFIG, kubeconfig())
        .with_observation(Ok(observed))
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

/// An action of ours that ended.
fn record(
    id: &str,
    action: Action,
    n: u64,
    error: Option<&str>,
    finished: &str,
    digest: &str,
) -> StepRecord {
    StepRecord {
        id: id.into(),
        action,
        digest: digest.into(),
        started: T0.into(),
        finished: finished.into(),
        revision: n,
        error: error.map(String::from),
        cancelled: false,
    }
}

/// An action of ours still running.
fn running(id: &str, action: Action) -> StepRecord {
    StepRecord {
        id: id.into(),
        action,
        digest: WANTED.into(),
        started: T0.into(),
        finished: String::new(),
        revision: 0,
        error: None,
        cancelled: false,
    }
}

/// The release as `current` (no earlier revisions), nothing running, `last` the last action of ours, [`WANTED`]
/// wanted.
fn observation(current: Option<Revision>, last: Option<StepRecord>) -> Observation {
    Observation {
        release: current.map(|current| ReleaseState {
            current,
            history: Vec::new(),
            inventory: None,
        }),
        tests: Vec::new(),
        running: None,
        last,
        wanted: WANTED.into(),
        chart_version: "6.7.1".into(),
    }
}

/// What is wanted is deployed at revision `n`, made by `last`.
fn deployed(n: u64, last: Option<StepRecord>) -> Observation {
    observation(Some(revision(n, "deployed", Some(WANTED))), last)
}

/// `observed` with `history` as the earlier revisions, newest first.
fn with_history(mut observed: Observation, history: Vec<Revision>) -> Observation {
    if let Some(release) = &mut observed.release {
        release.history = history;
    }
    observed
}

/// `observed` with the current revision's test hooks, `(name, phase)`.
fn with_tests(mut observed: Observation, hooks: &[(&str, &str)]) -> Observation {
    observed.tests = hooks
        .iter()
        .map(|(name, phase)| TestHook {
            name: name.to_string(),
            phase: phase.to_string(),
            started: if *phase == "Unknown" { "" } else { T1 }.into(),
            completed: if matches!(*phase, "Succeeded" | "Failed") {
                T2
            } else {
                ""
            }
            .into(),
        })
        .collect();
    observed
}

/// The entry of `status.history` for a current revision made by [`revision`].
fn snapshot(n: u64, status: &str, digest: Option<&str>) -> Value {
    let mut s = json!({"version": n, "status": status, "chartName": "podinfo", "chartVersion": "6.7.1",
        "appVersion": "6.7.1", "lastDeployed": T1});
    if let Some(d) = digest {
        s["configDigest"] = json!(d);
    }
    s
}

/// The steps the plugin asked the host to start, in order.
fn starts(host: &MockHost) -> Vec<Step> {
    host.requests()
        .helm_starts
        .into_iter()
        .map(|(_, step)| step)
        .collect()
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
            (
                "".into(),
                "v1".into(),
                "Secret".into(),
                NameField("spec.valuesFrom[kind=Secret].name".into())
            ),
            (
                "".into(),
                "v1".into(),
                "ConfigMap".into(),
                NameField("spec.valuesFrom[kind=ConfigMap].name".into())
            ),
        ]
    );
    assert_eq!(
        info.capabilities,
        [
            "kube-read",
            "secrets",
            "helm",
            "helm-take-ownership",
            "helm-impersonate",
            "clock"
        ]
    );
    assert_eq!(
        info.secret_fields,
        [
            omni_plugin_sdk::SecretField::local("spec.kubeconfigSecretRef.name"),
            omni_plugin_sdk::SecretField::local("spec.valuesFrom[kind=Secret].name"),
            omni_plugin_sdk::SecretField::local("spec.valuesFrom[kind=ConfigMap].name"),
            omni_plugin_sdk::SecretField::local("spec.chart.secretRef.name"),
            omni_plugin_sdk::SecretField::local("spec.chart.certSecretRef.name"),
            omni_plugin_sdk::SecretField::local("spec.chart.verify.secretRef.name"),
        ]
    );
}

#[test]
fn the_public_intervals_are_the_documented_ones() {
    assert_eq!(RESYNC_MS, 5 * 60 * 1000);
    assert_eq!(RETRY_MS, 60 * 1000);
    assert_eq!(PROGRESS_CHECK_MS, 30 * 1000);
    assert_eq!(PROGRESSING, "Progressing");
}
