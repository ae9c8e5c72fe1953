//! kube-scheduler's part: each unscheduled Pod is bound to the Ready Node that fits it (its `nodeSelector`, and
//! the `metadata.name` node affinity DaemonSet Pods carry) with the fewest Pods, or marked
//! `PodScheduled=False/Unschedulable` when none fits.

use serde_json::{Map, Value, json};

use super::objects::{
    condition, deleting, existing_conditions, has_labels, labels, name, set_condition,
};
use super::writes::{SCHEDULER, list, resource, write_object, write_status};
use crate::cluster::Cluster;

pub async fn reconcile(cluster: &Cluster) -> bool {
    let (Some(pods_rt), Some(nodes_rt)) = (
        resource(cluster, "", "v1", "pods"),
        resource(cluster, "", "v1", "nodes"),
    ) else {
        return false;
    };
    let nodes: Vec<_> = list(cluster, &nodes_rt, None)
        .into_iter()
        .filter(|n| node_ready(n) && n["spec"]["unschedulable"] != json!(true))
        .collect();
    let pods = list(cluster, &pods_rt, None);
    let mut load: Map<String, Value> = Map::new();
    for p in &pods {
        if let Some(n) = p["spec"]["nodeName"].as_str() {
            let c = load.get(n).and_then(Value::as_u64).unwrap_or(0);
            load.insert(n.into(), json!(c + 1));
        }
    }
    let mut wrote = false;
    for pod in pods {
        let unscheduled = pod["spec"]["nodeName"]
            .as_str()
            .unwrap_or_default()
            .is_empty();
        let gated = pod["spec"]["schedulingGates"]
            .as_array()
            .is_some_and(|g| !g.is_empty());
        let ours = pod["spec"]["schedulerName"]
            .as_str()
            .is_none_or(|s| s == "default-scheduler");
        if !unscheduled || gated || !ours || deleting(&pod) {
            continue;
        }
        let fits: Vec<&Value> = nodes
            .iter()
            .map(|n| &**n)
            .filter(|n| fits(&pod, n))
            .collect();
        let best = fits
            .iter()
            .min_by_key(|n| load.get(name(n)).and_then(Value::as_u64).unwrap_or(0));
        let now = Cluster::now();
        match best {
            Some(node) => {
                let node_name = name(node).to_string();
                let mut bound = (*pod).clone();
                bound["spec"]["nodeName"] = json!(node_name);
                if write_object(cluster, &pods_rt, bound, SCHEDULER).await {
                    wrote = true;
                    let c = load.get(&node_name).and_then(Value::as_u64).unwrap_or(0);
                    load.insert(node_name, json!(c + 1));
                    let stored = cluster.store().get(
                        &pods_rt.storage_key(),
                        super::objects::namespace(&pod),
                        name(&pod),
                    );
                    if let Some(stored) = stored {
                        let mut status = stored["status"].clone();
                        let mut conditions = existing_conditions(&stored);
                        set_condition(
                            &mut conditions,
                            json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null}),
                            &now,
                            false,
                        );
                        status["conditions"] = json!(conditions);
                        write_status(cluster, &pods_rt, &stored, status, SCHEDULER).await;
                    }
                }
            }
            None => {
                let total = nodes.len();
                let message = format!(
                    "0/{total} nodes are available: {total} node(s) didn't match Pod's node affinity/selector. preemption: 0/{total} nodes are available: {total} Preemption is not helpful for scheduling."
                );
                let already = condition(&pod, "PodScheduled").is_some_and(|c| {
                    c["reason"] == "Unschedulable" && c["message"] == json!(message)
                });
                if !already {
                    let mut status = pod["status"].clone();
                    let mut conditions = existing_conditions(&pod);
                    set_condition(
                        &mut conditions,
                        json!({"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                            "message": message, "lastProbeTime": null}),
                        &now,
                        false,
                    );
                    status["conditions"] = json!(conditions);
                    wrote |= write_status(cluster, &pods_rt, &pod, status, SCHEDULER).await;
                }
            }
        }
    }
    wrote
}

fn node_ready(node: &Value) -> bool {
    condition(node, "Ready").is_some_and(|c| c["status"] == "True")
}

/// The Pod's `nodeSelector` matches the Node's labels, and its required node affinity, when it has one, has a
/// term the Node satisfies (`matchFields` on `metadata.name` and `matchExpressions` on labels).
fn fits(pod: &Value, node: &Value) -> bool {
    let node_labels = labels(node);
    let selector_ok = pod["spec"]["nodeSelector"]
        .as_object()
        .is_none_or(|wanted| has_labels(&node_labels, wanted));
    let terms = &pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"];
    let affinity_ok = match terms.as_array() {
        None => true,
        Some(terms) => terms.iter().any(|t| term_matches(t, node, &node_labels)),
    };
    selector_ok && affinity_ok
}

fn term_matches(term: &Value, node: &Value, node_labels: &Map<String, Value>) -> bool {
    let fields = term["matchFields"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|r| {
            let value = match r["key"].as_str() {
                Some("metadata.name") => Some(name(node).to_string()),
                _ => None,
            };
            requirement(r, value.as_deref())
        });
    let exprs = term["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|r| {
            let key = r["key"].as_str().unwrap_or_default();
            requirement(r, node_labels.get(key).and_then(Value::as_str))
        });
    fields && exprs
}

/// A NodeSelectorRequirement against one value (None: the key is absent).
fn requirement(r: &Value, value: Option<&str>) -> bool {
    let values: Vec<&str> = r["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let number = |s: &str| s.parse::<i64>().ok();
    match r["operator"].as_str().unwrap_or_default() {
        "In" => value.is_some_and(|v| values.contains(&v)),
        "NotIn" => value.is_none_or(|v| !values.contains(&v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => {
            matches!((value.and_then(number), values.first().and_then(|s| number(s))), (Some(a), Some(b)) if a > b)
        }
        "Lt" => {
            matches!((value.and_then(number), values.first().and_then(|s| number(s))), (Some(a), Some(b)) if a < b)
        }
        _ => false,
    }
}
