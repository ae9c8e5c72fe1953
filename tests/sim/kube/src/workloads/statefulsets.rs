//! The StatefulSet controller: Pods `<name>-<ordinal>` with stable identities (hostname, subdomain, the
//! `statefulset.kubernetes.io/pod-name` and `apps.kubernetes.io/pod-index` labels) and a claim per volume claim
//! template; created in order, each after the one before is Running and Ready (`OrderedReady`) or all at once
//! (`Parallel`); scaled down from the highest ordinal; rolled to a new template from the highest ordinal down to
//! the partition, one Pod at a time; and the status with current and update revisions. No ControllerRevisions are
//! kept, so a Pod below the partition that has to be re-created comes back at the update revision.

use serde_json::{Map, Value, json};

use super::objects::{active, available, deleting, generation, name, namespace, ready};
use super::templates::{pod_from_template, template_hash, template_selected};
use super::writes::{
    BURST, CONTROLLER_MANAGER, create, delete, list, owned_pods, resource, write_status,
};
use crate::cluster::Cluster;

const REVISION_LABEL: &str = "controller-revision-hash";

pub async fn reconcile(cluster: &Cluster) -> bool {
    let (Some(sts_rt), Some(pods_rt), Some(pvc_rt)) = (
        resource(cluster, "apps", "v1", "statefulsets"),
        resource(cluster, "", "v1", "pods"),
        resource(cluster, "", "v1", "persistentvolumeclaims"),
    ) else {
        return false;
    };
    let now = jiff::Timestamp::now();
    let mut wrote = false;
    for sts in list(cluster, &sts_rt, None) {
        if deleting(&sts) {
            continue;
        }
        let ns = namespace(&sts).to_string();
        let replicas = sts["spec"]["replicas"]
            .as_i64()
            .unwrap_or(1)
            .clamp(0, i64::from(i32::MAX));
        let update_revision = format!(
            "{}-{}",
            name(&sts),
            template_hash(&sts["spec"]["template"], 0)
        );
        let parallel = sts["spec"]["podManagementPolicy"] == "Parallel";
        let partition = sts["spec"]["updateStrategy"]["rollingUpdate"]["partition"]
            .as_i64()
            .unwrap_or(0);
        let on_delete = sts["spec"]["updateStrategy"]["type"] == "OnDelete";
        let pods: Vec<Value> = owned_pods(cluster, &sts)
            .into_iter()
            .filter(|p| !deleting(p))
            .map(|p| (*p).clone())
            .collect();
        let ordinals: std::collections::HashMap<i64, &Value> = pods
            .iter()
            .filter_map(|p| ordinal(&sts, p).map(|i| (i, p)))
            .collect();
        let by_ordinal = |i: i64| ordinals.get(&i).copied();
        // Finished Pods are replaced, as the real controller deletes and re-creates them.
        for p in pods.iter().filter(|p| !active(p)) {
            wrote |= delete(cluster, &pods_rt, p, CONTROLLER_MANAGER).await;
        }
        // Create the missing ordinals (Parallel: at most a burst per pass).
        let mut created = 0;
        for i in 0..replicas {
            if created >= BURST || !template_selected(&sts) {
                break;
            }
            match by_ordinal(i) {
                Some(p) if active(p) => {
                    if !(parallel || ready(p) && p["status"]["phase"] == "Running") {
                        break;
                    }
                }
                Some(_) => break,
                None => {
                    wrote |= ensure_claims(cluster, &pvc_rt, &sts, i).await;
                    let pod = identity_pod(&sts, i, &update_revision);
                    wrote |= create(cluster, &pods_rt, &ns, pod, CONTROLLER_MANAGER).await;
                    created += 1;
                    if !parallel {
                        break;
                    }
                }
            }
        }
        // Scale down from the highest ordinal (one at a time unless Parallel).
        let mut extra: Vec<&Value> = pods
            .iter()
            .filter(|p| ordinal(&sts, p).is_none_or(|i| i >= replicas))
            .collect();
        extra.sort_by_key(|p| std::cmp::Reverse(ordinal(&sts, p)));
        let batch = if parallel { BURST as usize } else { 1 };
        for p in extra.iter().take(batch) {
            wrote |= delete(cluster, &pods_rt, p, CONTROLLER_MANAGER).await;
        }
        // Rolling update: with every Pod Ready, the highest outdated ordinal at or above the partition goes (and
        // comes back at the update revision).
        let all_ready = pods.len() as i64 >= replicas
            && (0..replicas).all(|i| by_ordinal(i).is_some_and(ready));
        if !on_delete && all_ready && extra.is_empty() {
            let outdated = (partition..replicas)
                .rev()
                .find_map(|i| by_ordinal(i).filter(|p| revision_of(p) != update_revision));
            if let Some(p) = outdated {
                wrote |= delete(cluster, &pods_rt, p, CONTROLLER_MANAGER).await;
            }
        }
        let pods: Vec<_> = owned_pods(cluster, &sts)
            .into_iter()
            .filter(|p| active(p))
            .collect();
        let min_ready = sts["spec"]["minReadySeconds"].as_i64().unwrap_or(0);
        let updated = pods
            .iter()
            .filter(|p| revision_of(p) == update_revision)
            .count();
        let previous_current = sts["status"]["currentRevision"]
            .as_str()
            .unwrap_or(&update_revision)
            .to_string();
        // The current revision moves to the update revision once every Pod runs it.
        let current_revision = if updated as i64 == replicas && pods.len() as i64 == replicas {
            update_revision.clone()
        } else {
            previous_current
        };
        let current = pods
            .iter()
            .filter(|p| revision_of(p) == current_revision)
            .count();
        let mut status = Map::new();
        status.insert("observedGeneration".into(), json!(generation(&sts)));
        status.insert("replicas".into(), json!(pods.len()));
        let ready_n = pods.iter().filter(|p| ready(p)).count();
        if ready_n > 0 {
            status.insert("readyReplicas".into(), json!(ready_n));
        }
        if current > 0 {
            status.insert("currentReplicas".into(), json!(current));
        }
        if updated > 0 {
            status.insert("updatedReplicas".into(), json!(updated));
        }
        status.insert("currentRevision".into(), json!(current_revision));
        status.insert("updateRevision".into(), json!(update_revision));
        status.insert("collisionCount".into(), json!(0));
        status.insert(
            "availableReplicas".into(),
            json!(pods.iter().filter(|p| available(p, min_ready, now)).count()),
        );
        wrote |= write_status(
            cluster,
            &sts_rt,
            &sts,
            Value::Object(status),
            CONTROLLER_MANAGER,
        )
        .await;
    }
    wrote
}

fn ordinal(sts: &Value, pod: &Value) -> Option<i64> {
    name(pod)
        .strip_prefix(name(sts))?
        .strip_prefix('-')?
        .parse()
        .ok()
}

fn revision_of(pod: &Value) -> String {
    pod["metadata"]["labels"][REVISION_LABEL]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn claim_name(template: &Value, sts: &Value, i: i64) -> String {
    format!(
        "{}-{}-{i}",
        template["metadata"]["name"].as_str().unwrap_or_default(),
        name(sts)
    )
}

fn identity_pod(sts: &Value, i: i64, revision: &str) -> Value {
    let pod_name = format!("{}-{i}", name(sts));
    let mut pod = pod_from_template(
        sts,
        &sts["spec"]["template"],
        &[
            (REVISION_LABEL, revision.to_string()),
            ("statefulset.kubernetes.io/pod-name", pod_name.clone()),
            ("apps.kubernetes.io/pod-index", i.to_string()),
        ],
    );
    pod["metadata"]["name"] = json!(pod_name);
    pod["spec"]["hostname"] = json!(pod_name);
    if let Some(service) = sts["spec"]["serviceName"]
        .as_str()
        .filter(|s| !s.is_empty())
    {
        pod["spec"]["subdomain"] = json!(service);
    }
    let claims = sts["spec"]["volumeClaimTemplates"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !claims.is_empty() {
        let mut volumes: Vec<Value> = pod["spec"]["volumes"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for t in &claims {
            let vname = t["metadata"]["name"].as_str().unwrap_or_default();
            volumes.retain(|v| v["name"] != json!(vname));
            volumes.push(json!({"name": vname,
                "persistentVolumeClaim": {"claimName": claim_name(t, sts, i)}}));
        }
        pod["spec"]["volumes"] = json!(volumes);
    }
    pod
}

/// The claims of ordinal `i` from the volume claim templates, created when missing.
async fn ensure_claims(
    cluster: &Cluster,
    pvc_rt: &crate::resources::ResourceType,
    sts: &Value,
    i: i64,
) -> bool {
    let mut wrote = false;
    for t in sts["spec"]["volumeClaimTemplates"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let claim = claim_name(t, sts, i);
        if cluster
            .store()
            .get(&pvc_rt.storage_key(), namespace(sts), &claim)
            .is_some()
        {
            continue;
        }
        let mut labels = t["metadata"]["labels"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        for (k, v) in sts["spec"]["selector"]["matchLabels"]
            .as_object()
            .into_iter()
            .flatten()
        {
            labels.insert(k.clone(), v.clone());
        }
        let pvc = json!({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim, "namespace": namespace(sts), "labels": labels},
            "spec": t["spec"].clone(),
        });
        wrote |= create(cluster, pvc_rt, namespace(sts), pvc, CONTROLLER_MANAGER).await;
    }
    wrote
}
