//! Workload realism, with KWOK as the model: an opt-in set of controllers that do what kube-controller-manager,
//! kube-scheduler and a kubelet would, without running anything. Deployments get ReplicaSets, ReplicaSets,
//! StatefulSets, DaemonSets and Jobs get Pods, Pods are scheduled onto simulated Nodes and turn Running and
//! Ready, Jobs complete, PersistentVolumeClaims bind and Services get Endpoints, all with the status fields and
//! conditions the real controllers write, so readiness waits (Helm's `--wait`, `kubectl wait`, `kubectl rollout
//! status`) behave as on a real cluster.
//!
//! A Pod that carries the annotation [`BEHAVIOR_ANNOTATION`] (or one of whose containers uses a
//! [`NEVER_READY_IMAGE`]/[`FAIL_IMAGE`] image) runs but never becomes Ready (`never-ready`), or fails (`fail`: a
//! Job's Pod exits 1, an always-restarting Pod crash-loops), so timeouts and failure paths can be tested. The
//! annotation's `ready` overrides such an image: a test turns a stuck workload healthy by annotating its Pod
//! template (as a real image that finally pulls would), without touching what a Helm chart applied.
//!
//! The controllers are level-triggered: each pass compares every object with what it should be and writes only
//! the difference, through the same storage path as API requests (defaults, validation, managed fields, watches).

mod daemonsets;
mod deployments;
mod endpoints;
mod jobs;
mod kubelet;
mod nodes;
mod objects;
mod replicasets;
mod scheduler;
mod statefulsets;
mod templates;
mod volumes;
mod writes;

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;

use crate::cluster::Cluster;

/// Pod annotation choosing a simulated behaviour: `never-ready`, `fail`, or `ready` (whatever the images say).
pub const BEHAVIOR_ANNOTATION: &str = "kube-sim.omni.texashpc.com/behavior";
/// A container image (any tag) that makes its Pod run without ever becoming Ready.
pub const NEVER_READY_IMAGE: &str = "kube-sim.invalid/never-ready";
/// A container image (any tag) that makes its Pod fail.
pub const FAIL_IMAGE: &str = "kube-sim.invalid/fail";

/// The most simulated Nodes (each gets a /24 of 10.244.0.0/16 for its Pods).
pub const MAX_NODES: usize = 250;

/// What the controllers simulate.
#[derive(Debug, Clone)]
pub struct WorkloadOptions {
    /// Simulated Nodes (`kube-sim-node-0`, …), from 1 to [`MAX_NODES`].
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
        let node_count = options.nodes.clamp(1, MAX_NODES);
        loop {
            // Passes repeat while they write: one step (a ReplicaSet) enables the next (its Pods). A pass awaits
            // nothing that is ever pending, so it yields after each one: the tasks its writes woke (the watches
            // that deliver them) run on this worker too, and would otherwise wait for this loop to rest.
            for _ in 0..32 {
                let wrote = pass(&cluster, node_count).await;
                tokio::task::yield_now().await;
                if !wrote {
                    break;
                }
            }
            // The changes announced meanwhile (mostly these passes' own writes) are all seen by the next pass:
            // waking once for each of them would run a whole pass per change, thousands in a row at scale.
            while let Ok(_) | Err(tokio::sync::broadcast::error::TryRecvError::Lagged(_)) =
                changes.try_recv()
            {}
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
async fn pass(cluster: &Cluster, node_count: usize) -> bool {
    let mut wrote = false;
    wrote |= supervised("nodes", nodes::ensure(cluster, node_count)).await;
    wrote |= supervised("deployment", deployments::reconcile(cluster)).await;
    wrote |= supervised("replicaset", replicasets::reconcile(cluster)).await;
    wrote |= supervised("statefulset", statefulsets::reconcile(cluster)).await;
    wrote |= supervised("daemonset", daemonsets::reconcile(cluster)).await;
    wrote |= supervised("job", jobs::reconcile(cluster)).await;
    wrote |= supervised("volume", volumes::reconcile(cluster)).await;
    wrote |= supervised("scheduler", scheduler::reconcile(cluster)).await;
    wrote |= supervised("kubelet", kubelet::reconcile(cluster)).await;
    wrote |= supervised("endpoints", endpoints::reconcile(cluster)).await;
    wrote
}

/// Runs one controller's pass so that a bug tripped by an odd object costs that pass, not every controller for
/// the rest of the server's life: a panic is logged and the others go on.
async fn supervised(controller: &str, pass: impl std::future::Future<Output = bool>) -> bool {
    match std::panic::AssertUnwindSafe(pass).catch_unwind().await {
        Ok(wrote) => wrote,
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("a panic");
            tracing::error!(%controller, panic = %what, "a workload controller's pass failed");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::objects::set_condition;
    use super::templates::{Behavior, behavior, template_hash};
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
            behavior(&pod(
                json!({BEHAVIOR_ANNOTATION: "ready"}),
                "kube-sim.invalid/never-ready:1"
            )),
            Behavior::Normal,
            "`ready` overrides a never-ready image"
        );
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
