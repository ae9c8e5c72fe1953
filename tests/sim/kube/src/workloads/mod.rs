//! Workload realism, with KWOK as the model: an opt-in set of controllers that do what kube-controller-manager,
//! kube-scheduler and a kubelet would, without running anything. Deployments get ReplicaSets, ReplicaSets,
//! StatefulSets, DaemonSets and Jobs get Pods, Pods are scheduled onto simulated Nodes and turn Running and
//! Ready, Jobs complete, PersistentVolumeClaims bind and Services get Endpoints, all with the status fields and
//! conditions the real controllers write, so readiness waits (Helm's `--wait`, `kubectl wait`, `kubectl rollout
//! status`) behave as on a real cluster.
//!
//! A Pod that carries the annotation [`BEHAVIOR_ANNOTATION`] (or one of whose containers uses a
//! [`NEVER_READY_IMAGE`]/[`FAIL_IMAGE`] image) runs but never becomes Ready (`never-ready`), or fails (`fail`: a
//! Job's Pod exits 1, an always-restarting Pod crash-loops), so timeouts and failure paths can be tested.
//!
//! The controllers are level-triggered: each pass compares every object with what it should be and writes only
//! the difference, through the same storage path as API requests (defaults, validation, managed fields, watches).

mod daemonsets;
mod deployments;
mod endpoints;
mod jobs;
mod kubelet;
mod nodes;
mod replicasets;
mod scheduler;
mod statefulsets;
mod volumes;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::cluster::{Cluster, DeleteOptions, WriteCtx};
use crate::resources::ResourceType;
use crate::selectors::LabelSelector;

/// Pod annotation choosing a simulated behaviour: `never-ready` or `fail`.
pub const BEHAVIOR_ANNOTATION: &str = "kube-sim.omni.texashpc.com/behavior";
/// A container image (any tag) that makes its Pod run without ever becoming Ready.
pub const NEVER_READY_IMAGE: &str = "kube-sim.invalid/never-ready";
/// A container image (any tag) that makes its Pod fail.
pub const FAIL_IMAGE: &str = "kube-sim.invalid/fail";

/// What the controllers simulate.
#[derive(Debug, Clone)]
pub struct WorkloadOptions {
    /// Simulated Nodes (`kube-sim-node-0`, …), at least one.
    pub nodes: usize,
}

impl Default for WorkloadOptions {
    fn default() -> Self {
        WorkloadOptions { nodes: 1 }
    }
}

/// Runs the controllers until the server stops (the owner aborts the task).
pub fn spawn(cluster: &Arc<Cluster>, options: WorkloadOptions) -> tokio::task::JoinHandle<()> {
    let cluster = cluster.clone();
    tokio::spawn(async move {
        let mut changes = cluster.store().subscribe();
        nodes::ensure(&cluster, options.nodes.max(1)).await;
        loop {
            // Passes repeat while they write: one step (a ReplicaSet) enables the next (its Pods).
            for _ in 0..32 {
                if !pass(&cluster).await {
                    break;
                }
            }
            // Wait for a write by someone else, or a second: deadlines (progress, activeDeadlineSeconds,
            // minReadySeconds) move with time alone.
            let wait = async {
                loop {
                    match changes.recv().await {
                        Ok(c) if relevant(&c.key.group, &c.key.resource) => return,
                        Ok(_) => {}
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => return,
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                            std::future::pending::<()>().await
                        }
                    }
                }
            };
            let _ = tokio::time::timeout(Duration::from_secs(1), wait).await;
        }
    })
}

fn relevant(group: &str, resource: &str) -> bool {
    matches!(
        (group, resource),
        ("", "pods" | "services" | "nodes" | "persistentvolumeclaims")
            | (
                "apps",
                "deployments" | "replicasets" | "statefulsets" | "daemonsets"
            )
            | ("batch", "jobs")
    )
}

/// One pass over every controller; true when any of them wrote.
async fn pass(cluster: &Cluster) -> bool {
    let mut wrote = false;
    wrote |= deployments::reconcile(cluster).await;
    wrote |= replicasets::reconcile(cluster).await;
    wrote |= statefulsets::reconcile(cluster).await;
    wrote |= daemonsets::reconcile(cluster).await;
    wrote |= jobs::reconcile(cluster).await;
    wrote |= volumes::reconcile(cluster).await;
    wrote |= scheduler::reconcile(cluster).await;
    wrote |= kubelet::reconcile(cluster).await;
    wrote |= endpoints::reconcile(cluster).await;
    wrote
}

/// The served type for a built-in resource.
fn resource(
    cluster: &Cluster,
    group: &str,
    version: &str,
    plural: &str,
) -> Option<Arc<ResourceType>> {
    cluster.registry().get(group, version, plural)
}

fn list(cluster: &Cluster, rt: &ResourceType, ns: Option<&str>) -> Vec<Arc<Value>> {
    cluster.store().list(&rt.storage_key(), ns)
}

fn ctx(manager: &str) -> WriteCtx {
    WriteCtx::system(manager)
}

fn name(obj: &Value) -> &str {
    obj["metadata"]["name"].as_str().unwrap_or_default()
}

fn namespace(obj: &Value) -> &str {
    obj["metadata"]["namespace"].as_str().unwrap_or_default()
}

fn uid(obj: &Value) -> &str {
    obj["metadata"]["uid"].as_str().unwrap_or_default()
}

fn deleting(obj: &Value) -> bool {
    obj["metadata"]["deletionTimestamp"].is_string()
}

fn generation(obj: &Value) -> i64 {
    obj["metadata"]["generation"].as_i64().unwrap_or(0)
}

/// The uid of the object's controller (its ownerReference with `controller: true`).
fn controller_uid(obj: &Value) -> Option<&str> {
    obj["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"] == json!(true))
        .and_then(|r| r["uid"].as_str())
}

/// An ownerReference naming `owner` as the controller.
fn controller_ref(owner: &Value) -> Value {
    json!({
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// The Pods `owner` controls and selects, oldest first.
fn owned_pods(cluster: &Cluster, owner: &Value) -> Vec<Arc<Value>> {
    let Some(rt) = resource(cluster, "", "v1", "pods") else {
        return Vec::new();
    };
    let owner_uid = uid(owner);
    // A Pod relabelled out of its owner's selector is no longer counted (the real controllers release it).
    let selector = &owner["spec"]["selector"];
    let mut pods: Vec<Arc<Value>> = list(cluster, &rt, Some(namespace(owner)))
        .into_iter()
        .filter(|p| controller_uid(p) == Some(owner_uid))
        .filter(|p| selector.is_null() || selector_matches(selector, &labels(p)))
        .collect();
    pods.sort_by(|a, b| {
        let t = |p: &Value| {
            p["metadata"]["creationTimestamp"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        t(a).cmp(&t(b)).then_with(|| name(a).cmp(name(b)))
    });
    pods
}

fn labels(obj: &Value) -> Map<String, Value> {
    obj["metadata"]["labels"]
        .as_object()
        .cloned()
        .unwrap_or_default()
}

/// Whether the object's `spec.selector` (a LabelSelector) matches `labels`; a bad selector matches nothing.
fn selector_matches(selector: &Value, labels: &Map<String, Value>) -> bool {
    LabelSelector::from_json(selector).is_ok_and(|s| s.matches(labels))
}

fn phase(pod: &Value) -> &str {
    pod["status"]["phase"].as_str().unwrap_or_default()
}

/// A Pod that has not finished (Succeeded or Failed) and is not being deleted.
fn active(pod: &Value) -> bool {
    !deleting(pod) && !matches!(phase(pod), "Succeeded" | "Failed")
}

fn condition<'a>(obj: &'a Value, ty: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == ty)
}

fn ready(pod: &Value) -> bool {
    condition(pod, "Ready").is_some_and(|c| c["status"] == "True")
}

/// Ready for at least `min_ready_seconds` (the controllers' "available").
fn available(pod: &Value, min_ready_seconds: i64, now: jiff::Timestamp) -> bool {
    if !ready(pod) {
        return false;
    }
    if min_ready_seconds <= 0 {
        return true;
    }
    condition(pod, "Ready")
        .and_then(|c| c["lastTransitionTime"].as_str())
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .is_some_and(|t| t + jiff::SignedDuration::from_secs(min_ready_seconds) <= now)
}

/// Seconds since an RFC 3339 time, or None when absent or unparsable.
fn seconds_since(time: &Value, now: jiff::Timestamp) -> Option<i64> {
    let t = time.as_str()?.parse::<jiff::Timestamp>().ok()?;
    Some((now - t).get_seconds())
}

/// A condition list with `ty` set. An unchanged status keeps its `lastTransitionTime` (and, where the kind has
/// one, `lastUpdateTime` when reason and message are unchanged too), so a pass that changes nothing writes nothing.
fn set_condition(conditions: &mut Vec<Value>, mut new: Value, now: &str, has_update_time: bool) {
    let ty = new["type"].clone();
    let old = conditions.iter().position(|c| c["type"] == ty);
    let same_status = old.is_some_and(|i| conditions[i]["status"] == new["status"]);
    let same_all = old.is_some_and(|i| {
        same_status
            && conditions[i]["reason"] == new["reason"]
            && conditions[i]["message"] == new["message"]
    });
    new["lastTransitionTime"] = match old {
        Some(i) if same_status => conditions[i]["lastTransitionTime"].clone(),
        _ => json!(now),
    };
    if has_update_time {
        new["lastUpdateTime"] = match old {
            Some(i) if same_all => conditions[i]["lastUpdateTime"].clone(),
            _ => json!(now),
        };
    }
    match old {
        Some(i) => conditions[i] = new,
        None => conditions.push(new),
    }
}

fn existing_conditions(obj: &Value) -> Vec<Value> {
    obj["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Writes `status` through the status subresource when it differs from the stored one. A conflict (someone
/// wrote meanwhile) is left to the next pass.
async fn write_status(
    cluster: &Cluster,
    rt: &ResourceType,
    obj: &Value,
    status: Value,
    manager: &str,
) -> bool {
    if obj["status"] == status {
        return false;
    }
    let mut next = obj.clone();
    next["status"] = status;
    let sub = if rt.status_subresource { "status" } else { "" };
    match cluster
        .update(rt, namespace(obj), name(obj), sub, next, &ctx(manager))
        .await
    {
        Ok(_) => true,
        Err(e) => {
            tracing::debug!(kind = %rt.kind, name = %name(obj), error = %e, "status write deferred");
            false
        }
    }
}

/// Replaces the object (spec or metadata changes), conditioned on its resourceVersion.
async fn write_object(cluster: &Cluster, rt: &ResourceType, next: Value, manager: &str) -> bool {
    let (ns, n) = (namespace(&next).to_string(), name(&next).to_string());
    match cluster.update(rt, &ns, &n, "", next, &ctx(manager)).await {
        Ok(_) => true,
        Err(e) => {
            tracing::debug!(kind = %rt.kind, name = %n, error = %e, "write deferred");
            false
        }
    }
}

async fn create(cluster: &Cluster, rt: &ResourceType, ns: &str, obj: Value, manager: &str) -> bool {
    match cluster.create(rt, ns, obj, &ctx(manager)).await {
        Ok(_) => true,
        Err(e) => {
            tracing::debug!(kind = %rt.kind, %ns, error = %e, "create refused");
            false
        }
    }
}

async fn delete(cluster: &Cluster, rt: &ResourceType, obj: &Value, manager: &str) -> bool {
    let opts = DeleteOptions {
        propagation: Some("Background".into()),
        precondition_uid: Some(uid(obj).to_string()),
        ..Default::default()
    };
    cluster
        .delete(rt, namespace(obj), name(obj), &opts, &ctx(manager))
        .await
        .is_ok()
}

/// A Pod built from a workload's template, controlled by `owner`.
fn pod_from_template(owner: &Value, template: &Value, extra_labels: &[(&str, String)]) -> Value {
    let mut labels = template["metadata"]["labels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for (k, v) in extra_labels {
        labels.insert((*k).into(), Value::String(v.clone()));
    }
    let mut meta = json!({
        "namespace": namespace(owner),
        "labels": labels,
        "ownerReferences": [controller_ref(owner)],
    });
    if let Some(a) = template["metadata"]["annotations"].as_object() {
        meta["annotations"] = Value::Object(a.clone());
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template["spec"].clone()})
}

/// FNV-1a (32 bit), the hash the controllers name revisions with.
fn fnv32a(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in bytes {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// A template's hash as the controllers print it: FNV-1a of the template (and the collision count), its decimal
/// digits mapped onto the alphabet without vowels (`rand.SafeEncodeString`), e.g. `5d9f8c7b6d`.
fn template_hash(template: &Value, collision_count: i64) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut bytes = serde_json::to_vec(template).unwrap_or_default();
    if collision_count > 0 {
        bytes.extend_from_slice(&collision_count.to_le_bytes());
    }
    fnv32a(&bytes)
        .to_string()
        .bytes()
        .map(|d| ALPHABET[usize::from(d) % ALPHABET.len()] as char)
        .collect()
}

/// The simulated behaviour a Pod asked for (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Behavior {
    Normal,
    NeverReady,
    Fail,
}

fn behavior(pod: &Value) -> Behavior {
    match pod["metadata"]["annotations"][BEHAVIOR_ANNOTATION].as_str() {
        Some("never-ready") => return Behavior::NeverReady,
        Some("fail") => return Behavior::Fail,
        _ => {}
    }
    let images = pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(
            pod["spec"]["initContainers"]
                .as_array()
                .into_iter()
                .flatten(),
        )
        .filter_map(|c| c["image"].as_str());
    let mut out = Behavior::Normal;
    for image in images {
        let repo = image.split(['@', ':']).next().unwrap_or(image);
        if repo == FAIL_IMAGE {
            return Behavior::Fail;
        }
        if repo == NEVER_READY_IMAGE {
            out = Behavior::NeverReady;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_hashes_are_stable_and_use_the_safe_alphabet() {
        let t = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}});
        let h = template_hash(&t, 0);
        assert_eq!(h, template_hash(&t, 0));
        assert_ne!(h, template_hash(&t, 1));
        assert!(
            h.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)),
            "{h}"
        );
        assert!((1..=10).contains(&h.len()));
    }

    #[test]
    fn behaviours_come_from_the_annotation_or_a_marker_image() {
        let pod = |ann: Value, image: &str| json!({"metadata": {"annotations": ann}, "spec": {"containers": [{"name": "c", "image": image}]}});
        assert_eq!(behavior(&pod(json!({}), "nginx:1")), Behavior::Normal);
        assert_eq!(
            behavior(&pod(json!({BEHAVIOR_ANNOTATION: "never-ready"}), "nginx")),
            Behavior::NeverReady
        );
        assert_eq!(
            behavior(&pod(json!({}), "kube-sim.invalid/fail:v2")),
            Behavior::Fail
        );
        assert_eq!(
            behavior(&pod(json!({}), "kube-sim.invalid/never-ready")),
            Behavior::NeverReady
        );
    }

    #[test]
    fn conditions_keep_their_times_while_unchanged() {
        let mut c = Vec::new();
        set_condition(
            &mut c,
            json!({"type": "Available", "status": "True", "reason": "A", "message": "m"}),
            "t1",
            true,
        );
        set_condition(
            &mut c,
            json!({"type": "Available", "status": "True", "reason": "A", "message": "m"}),
            "t2",
            true,
        );
        assert_eq!(c[0]["lastTransitionTime"], "t1");
        assert_eq!(c[0]["lastUpdateTime"], "t1");
        set_condition(
            &mut c,
            json!({"type": "Available", "status": "True", "reason": "B", "message": "m"}),
            "t3",
            true,
        );
        assert_eq!(c[0]["lastTransitionTime"], "t1");
        assert_eq!(c[0]["lastUpdateTime"], "t3");
        set_condition(
            &mut c,
            json!({"type": "Available", "status": "False", "reason": "B", "message": "m"}),
            "t4",
            false,
        );
        assert_eq!(c[0]["lastTransitionTime"], "t4");
        assert_eq!(c.len(), 1);
    }
}
