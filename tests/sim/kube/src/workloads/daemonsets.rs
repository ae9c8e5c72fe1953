//! The DaemonSet controller: one Pod on every Ready Node its template's `nodeSelector` fits, pinned there by a
//! required node affinity on `metadata.name` (the scheduler binds it), Pods of an older template replaced
//! `maxUnavailable` at a time (never with `OnDelete`), and the status counts.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::objects::{
    active, available, condition, deleting, generation, has_labels, labels, name, namespace,
    put_count, ready,
};
use super::templates::{pod_from_template, template_hash, template_selected};
use super::writes::{CONTROLLER_MANAGER, create, delete, list, owned_pods, resource, write_status};
use crate::cluster::Cluster;

pub async fn reconcile(cluster: &Cluster) -> bool {
    let (Some(ds_rt), Some(pods_rt), Some(nodes_rt)) = (
        resource(cluster, "apps", "v1", "daemonsets"),
        resource(cluster, "", "v1", "pods"),
        resource(cluster, "", "v1", "nodes"),
    ) else {
        return false;
    };
    let nodes = list(cluster, &nodes_rt, None);
    let now = jiff::Timestamp::now();
    let mut wrote = false;
    for ds in list(cluster, &ds_rt, None) {
        if deleting(&ds) {
            continue;
        }
        let hash = template_hash(&ds["spec"]["template"], 0);
        let selector = ds["spec"]["template"]["spec"]["nodeSelector"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let eligible: Vec<String> = nodes
            .iter()
            .filter(|n| condition(n, "Ready").is_some_and(|c| c["status"] == "True"))
            .filter(|n| has_labels(&labels(n), &selector))
            .map(|n| name(n).to_string())
            .collect();
        let pods: Vec<Value> = owned_pods(cluster, &ds)
            .into_iter()
            .filter(|p| active(p))
            .map(|p| (*p).clone())
            .collect();
        // Pods on Nodes no longer eligible and duplicates go at once. Outdated Pods are replaced as the update
        // strategy allows: never for OnDelete, otherwise `maxUnavailable` at a time (default 1), and only while
        // nothing else is unavailable.
        let on_delete = ds["spec"]["updateStrategy"]["type"] == "OnDelete";
        let budget = match &ds["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] {
            Value::Number(n) => usize::try_from(n.as_i64().unwrap_or(1)).unwrap_or(1),
            Value::String(s) => s
                .strip_suffix('%')
                .and_then(|p| p.parse::<usize>().ok())
                .map_or(1, |p| (p.saturating_mul(eligible.len()) / 100).max(1)),
            _ => 1,
        };
        let unavailable = pods.iter().filter(|p| !ready(p)).count();
        let mut replace = budget.saturating_sub(unavailable);
        let mut covered = HashSet::new();
        for p in &pods {
            let target = pinned_node(p);
            let outdated = p["metadata"]["labels"]["controller-revision-hash"] != json!(hash);
            let misplaced = !eligible.contains(&target) || !covered.insert(target);
            if misplaced {
                wrote |= delete(cluster, &pods_rt, p, CONTROLLER_MANAGER).await;
            } else if outdated && !on_delete && replace > 0 {
                replace -= 1;
                covered.remove(&pinned_node(p));
                wrote |= delete(cluster, &pods_rt, p, CONTROLLER_MANAGER).await;
            }
        }
        let creatable = template_selected(&ds);
        for node in eligible
            .iter()
            .filter(|n| creatable && !covered.contains(*n))
        {
            let mut pod = pod_from_template(
                &ds,
                &ds["spec"]["template"],
                &[
                    ("controller-revision-hash", hash.clone()),
                    ("pod-template-generation", generation(&ds).to_string()),
                ],
            );
            pod["metadata"]["generateName"] = json!(format!("{}-", name(&ds)));
            pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = json!(
                {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}
            );
            wrote |= create(cluster, &pods_rt, namespace(&ds), pod, CONTROLLER_MANAGER).await;
        }
        let pods: Vec<_> = owned_pods(cluster, &ds)
            .into_iter()
            .filter(|p| active(p) && eligible.contains(&pinned_node(p)))
            .collect();
        let min_ready = ds["spec"]["minReadySeconds"].as_i64().unwrap_or(0);
        let desired = eligible.len();
        let scheduled = pods
            .iter()
            .filter(|p| {
                !p["spec"]["nodeName"]
                    .as_str()
                    .unwrap_or_default()
                    .is_empty()
            })
            .count();
        let ready_n = pods.iter().filter(|p| ready(p)).count();
        let available_n = pods.iter().filter(|p| available(p, min_ready, now)).count();
        let updated = pods
            .iter()
            .filter(|p| p["metadata"]["labels"]["controller-revision-hash"] == json!(hash))
            .count();
        // DaemonSetStatus: the first four counts are always written, the rest omitted when zero.
        let mut status = Map::new();
        status.insert("currentNumberScheduled".into(), json!(scheduled));
        status.insert("numberMisscheduled".into(), json!(0));
        status.insert("desiredNumberScheduled".into(), json!(desired));
        status.insert("numberReady".into(), json!(ready_n));
        status.insert("observedGeneration".into(), json!(generation(&ds)));
        put_count(&mut status, "updatedNumberScheduled", updated as i64);
        put_count(&mut status, "numberAvailable", available_n as i64);
        put_count(
            &mut status,
            "numberUnavailable",
            desired.saturating_sub(available_n) as i64,
        );
        wrote |= write_status(
            cluster,
            &ds_rt,
            &ds,
            Value::Object(status),
            CONTROLLER_MANAGER,
        )
        .await;
    }
    wrote
}

/// The Node a DaemonSet Pod is pinned to (its affinity's `metadata.name`), or where it was bound.
fn pinned_node(pod: &Value) -> String {
    let terms = &pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"];
    terms
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["matchFields"].as_array().into_iter().flatten())
        .find(|r| r["key"] == "metadata.name")
        .and_then(|r| r["values"][0].as_str())
        .or_else(|| pod["spec"]["nodeName"].as_str())
        .unwrap_or_default()
        .to_string()
}
