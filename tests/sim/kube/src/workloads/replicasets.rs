//! The ReplicaSet controller: as many active Pods as `spec.replicas` (creating from the template, deleting the
//! least ready and newest first), and the counts in its status.

use serde_json::{Map, Value, json};

use super::objects::{
    active, available, deleting, generation, has_labels, labels, name, namespace, phase, put_count,
    ready,
};
use super::templates::{pod_from_template, template_selected};
use super::writes::{
    BURST, CONTROLLER_MANAGER, create, delete, list, owned_pods, resource, write_status,
};
use crate::cluster::Cluster;

pub async fn reconcile(cluster: &Cluster) -> bool {
    let (Some(rs_rt), Some(pods_rt)) = (
        resource(cluster, "apps", "v1", "replicasets"),
        resource(cluster, "", "v1", "pods"),
    ) else {
        return false;
    };
    let now = jiff::Timestamp::now();
    let mut wrote = false;
    for rs in list(cluster, &rs_rt, None) {
        if deleting(&rs) {
            continue;
        }
        let want = rs["spec"]["replicas"]
            .as_i64()
            .unwrap_or(1)
            .clamp(0, i64::from(i32::MAX));
        let mut pods: Vec<_> = owned_pods(cluster, &rs)
            .into_iter()
            .filter(|p| active(p))
            .collect();
        let have = pods.len() as i64;
        if have < want && template_selected(&rs) {
            for _ in 0..(want - have).min(BURST) {
                let mut pod = pod_from_template(&rs, &rs["spec"]["template"], &[]);
                pod["metadata"]["generateName"] = json!(format!("{}-", name(&rs)));
                wrote |= create(cluster, &pods_rt, namespace(&rs), pod, CONTROLLER_MANAGER).await;
            }
        } else if have > want {
            // getPodsToDelete: unscheduled before scheduled, Pending before Running, not Ready before Ready,
            // newer before older.
            pods.sort_by_key(|p| {
                (
                    !p["spec"]["nodeName"]
                        .as_str()
                        .unwrap_or_default()
                        .is_empty(),
                    phase(p) != "Pending",
                    ready(p),
                    std::cmp::Reverse(
                        p["metadata"]["creationTimestamp"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                    ),
                )
            });
            for pod in pods.iter().take((have - want) as usize) {
                wrote |= delete(cluster, &pods_rt, pod, CONTROLLER_MANAGER).await;
            }
        }
        let pods: Vec<_> = owned_pods(cluster, &rs)
            .into_iter()
            .filter(|p| active(p))
            .collect();
        let min_ready = rs["spec"]["minReadySeconds"].as_i64().unwrap_or(0);
        let template_labels = rs["spec"]["template"]["metadata"]["labels"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let fully_labeled = pods
            .iter()
            .filter(|p| has_labels(&labels(p), &template_labels))
            .count();
        let ready_n = pods.iter().filter(|p| ready(p)).count();
        let available_n = pods.iter().filter(|p| available(p, min_ready, now)).count();
        // ReplicaSetStatus: `replicas` is always written, the other counts are omitted when zero.
        let mut status = Map::new();
        status.insert("replicas".into(), json!(pods.len()));
        put_count(&mut status, "fullyLabeledReplicas", fully_labeled as i64);
        put_count(&mut status, "readyReplicas", ready_n as i64);
        put_count(&mut status, "availableReplicas", available_n as i64);
        status.insert("observedGeneration".into(), json!(generation(&rs)));
        wrote |= write_status(
            cluster,
            &rs_rt,
            &rs,
            Value::Object(status),
            CONTROLLER_MANAGER,
        )
        .await;
    }
    wrote
}
