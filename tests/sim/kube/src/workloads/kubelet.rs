//! The kubelet's part, without running anything: a bound Pod gets an IP from its Node's pod CIDR and turns
//! Running with every container started and Ready (or, as its behaviour asks, never Ready, crash-looping or
//! failed); a Pod that does not restart always (a Job's) then completes.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::objects::{deleting, existing_conditions, name, phase, set_condition};
use super::templates::{Behavior, behavior};
use super::writes::{KUBELET, list, resource, write_status};
use crate::cluster::Cluster;

pub async fn reconcile(cluster: &Cluster) -> bool {
    let (Some(pods_rt), Some(nodes_rt)) = (
        resource(cluster, "", "v1", "pods"),
        resource(cluster, "", "v1", "nodes"),
    ) else {
        return false;
    };
    let nodes = list(cluster, &nodes_rt, None);
    let pods = list(cluster, &pods_rt, None);
    // A finished Pod's sandbox is gone and its address free again, as the kubelet releases it.
    let mut used: HashSet<String> = pods
        .iter()
        .filter(|p| !matches!(phase(p), "Succeeded" | "Failed"))
        .filter_map(|p| p["status"]["podIP"].as_str().map(String::from))
        .collect();
    let mut wrote = false;
    for pod in pods {
        let Some(node_name) = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) else {
            continue;
        };
        let Some(node) = nodes.iter().find(|n| name(n) == node_name) else {
            continue;
        };
        if deleting(&pod) {
            continue;
        }
        let Some(status) = next_status(&pod, node, &mut used) else {
            continue;
        };
        wrote |= write_status(cluster, &pods_rt, &pod, status, KUBELET).await;
    }
    wrote
}

/// The Pod's next status, or None when it has reached its final one.
fn next_status(pod: &Value, node: &Value, used: &mut HashSet<String>) -> Option<Value> {
    let now = Cluster::now();
    let restart_always = pod["spec"]["restartPolicy"]
        .as_str()
        .is_none_or(|p| p == "Always");
    let behavior = behavior(pod);
    match phase(pod) {
        "Pending" | "" => {
            let mut status = pod["status"].clone();
            let host_ip = node["status"]["addresses"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|a| a["type"] == "InternalIP")
                .and_then(|a| a["address"].as_str())
                .unwrap_or("10.0.0.10")
                .to_string();
            let pod_ip = if pod["spec"]["hostNetwork"] == json!(true) {
                host_ip.clone()
            } else {
                allocate_ip(node, used)
            };
            status["hostIP"] = json!(host_ip);
            status["hostIPs"] = json!([{"ip": host_ip}]);
            status["podIP"] = json!(pod_ip);
            status["podIPs"] = json!([{"ip": pod_ip}]);
            status["startTime"] = json!(now);
            let (phase, ready, state) = match (behavior, restart_always) {
                (Behavior::Fail, false) => ("Failed", false, ContainerState::Failed),
                (Behavior::Fail, true) => ("Running", false, ContainerState::CrashLooping),
                (Behavior::NeverReady, _) => ("Running", false, ContainerState::Running),
                (Behavior::Normal, _) => ("Running", true, ContainerState::Running),
            };
            status["phase"] = json!(phase);
            status["initContainerStatuses"] = init_statuses(pod, &now);
            if status["initContainerStatuses"]
                .as_array()
                .is_some_and(Vec::is_empty)
                && let Some(o) = status.as_object_mut()
            {
                o.remove("initContainerStatuses");
            }
            status["containerStatuses"] = container_statuses(pod, state, ready, &now);
            status["conditions"] = json!(conditions(pod, phase, ready, &now));
            Some(status)
        }
        "Running" if !restart_always && behavior == Behavior::Normal => {
            let mut status = pod["status"].clone();
            status["phase"] = json!("Succeeded");
            status["containerStatuses"] =
                container_statuses(pod, ContainerState::Completed, false, &now);
            status["conditions"] = json!(conditions(pod, "Succeeded", false, &now));
            Some(status)
        }
        _ => None,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ContainerState {
    Running,
    CrashLooping,
    Completed,
    Failed,
}

fn container_statuses(pod: &Value, state: ContainerState, ready: bool, now: &str) -> Value {
    let started_at = pod["status"]["startTime"]
        .as_str()
        .unwrap_or(now)
        .to_string();
    let statuses: Vec<Value> = pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let cname = c["name"].as_str().unwrap_or_default();
            let image = c["image"].as_str().unwrap_or_default();
            let (state_json, started, restarts, last) = match state {
                ContainerState::Running => (
                    json!({"running": {"startedAt": now}}),
                    true,
                    0,
                    json!({}),
                ),
                ContainerState::CrashLooping => (
                    json!({"waiting": {"reason": "CrashLoopBackOff",
                        "message": format!("back-off 10s restarting failed container={cname} pod={}", name(pod))}}),
                    false,
                    1,
                    json!({"terminated": {"exitCode": 1, "reason": "Error", "startedAt": now, "finishedAt": now,
                        "containerID": container_id(pod, cname, 0)}}),
                ),
                ContainerState::Completed => (
                    json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started_at,
                        "finishedAt": now, "containerID": container_id(pod, cname, 1)}}),
                    false,
                    0,
                    json!({}),
                ),
                ContainerState::Failed => (
                    json!({"terminated": {"exitCode": 1, "reason": "Error", "startedAt": now,
                        "finishedAt": now, "containerID": container_id(pod, cname, 1)}}),
                    false,
                    0,
                    json!({}),
                ),
            };
            json!({
                "containerID": container_id(pod, cname, 1),
                "image": image,
                "imageID": image_id(image),
                "lastState": last,
                "name": cname,
                "ready": ready,
                "restartCount": restarts,
                "started": started,
                "state": state_json,
            })
        })
        .collect();
    json!(statuses)
}

fn init_statuses(pod: &Value, now: &str) -> Value {
    let statuses: Vec<Value> = pod["spec"]["initContainers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let cname = c["name"].as_str().unwrap_or_default();
            let image = c["image"].as_str().unwrap_or_default();
            json!({
                "containerID": container_id(pod, cname, 1),
                "image": image,
                "imageID": image_id(image),
                "lastState": {},
                "name": cname,
                "ready": true,
                "restartCount": 0,
                "started": false,
                "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now,
                    "finishedAt": now, "containerID": container_id(pod, cname, 1)}},
            })
        })
        .collect();
    json!(statuses)
}

/// The five conditions a kubelet reports, in its order.
fn conditions(pod: &Value, phase: &str, ready: bool, now: &str) -> Vec<Value> {
    let mut conditions = existing_conditions(pod);
    let not_ready_reason = match phase {
        "Succeeded" => Some("PodCompleted"),
        "Failed" => Some("PodFailed"),
        _ if !ready => Some("ContainersNotReady"),
        _ => None,
    };
    let unready: Vec<&str> = pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect();
    let readiness = |ty: &str| match not_ready_reason {
        None => json!({"type": ty, "status": "True", "lastProbeTime": null}),
        Some("ContainersNotReady") => json!({"type": ty, "status": "False", "lastProbeTime": null,
            "reason": "ContainersNotReady",
            "message": format!("containers with unready status: [{}]", unready.join(" "))}),
        Some(r) => json!({"type": ty, "status": "False", "lastProbeTime": null, "reason": r}),
    };
    let sandbox = if phase == "Running" || phase == "Pending" {
        "True"
    } else {
        "False"
    };
    let wanted = [
        json!({"type": "PodReadyToStartContainers", "status": sandbox, "lastProbeTime": null}),
        json!({"type": "Initialized", "status": "True", "lastProbeTime": null}),
        readiness("Ready"),
        readiness("ContainersReady"),
        json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null}),
    ];
    for c in wanted {
        set_condition(&mut conditions, c, now, false);
    }
    let order = |c: &Value| {
        [
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled",
        ]
        .iter()
        .position(|t| c["type"] == *t)
        .unwrap_or(usize::MAX)
    };
    conditions.sort_by_key(order);
    conditions
}

/// The first free address of the Node's pod CIDR (`10.244.<i>.0/24`), from .2 on.
fn allocate_ip(node: &Value, used: &mut HashSet<String>) -> String {
    let cidr = node["spec"]["podCIDR"].as_str().unwrap_or("10.244.0.0/24");
    let prefix = cidr
        .split('/')
        .next()
        .and_then(|base| base.rsplit_once('.'))
        .map(|(p, _)| p.to_string())
        .unwrap_or_else(|| "10.244.0".into());
    for host in 2..255 {
        let ip = format!("{prefix}.{host}");
        if used.insert(ip.clone()) {
            return ip;
        }
    }
    // The /24 is full (over 250 Pods on one Node, above its `pods` capacity of 110): reuse the last address.
    format!("{prefix}.254")
}

/// A containerd-style ID, stable for the Pod, container and attempt.
fn container_id(pod: &Value, container: &str, attempt: u32) -> String {
    let seed = format!("{}/{container}/{attempt}", super::objects::uid(pod));
    let a = super::templates::fnv32a(seed.as_bytes());
    let b = super::templates::fnv32a(format!("{seed}#").as_bytes());
    format!("containerd://{a:08x}{b:08x}{a:08x}{b:08x}{a:08x}{b:08x}{a:08x}{b:08x}")
}

/// A digest-pinned image ID, as the runtime reports the image it pulled.
fn image_id(image: &str) -> String {
    let repo = crate::defaults::image_repository(image);
    let h = super::templates::fnv32a(image.as_bytes());
    format!("{repo}@sha256:{}", format!("{h:08x}").repeat(8))
}
