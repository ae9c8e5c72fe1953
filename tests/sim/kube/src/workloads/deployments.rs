//! The Deployment controller: one ReplicaSet per pod template (named `<deployment>-<template hash>`, labelled
//! `pod-template-hash`, carrying the revision annotations), the new one scaled to `spec.replicas` and the old
//! ones to zero once the new one is fully available (`RollingUpdate`) or before it starts (`Recreate`), old
//! ReplicaSets beyond `revisionHistoryLimit` deleted, and the status with the `Available` and `Progressing`
//! conditions, including `ProgressDeadlineExceeded`.

use serde_json::{Map, Value, json};

use super::{
    controller_ref, controller_uid, create, delete, deleting, existing_conditions, generation,
    list, name, namespace, resource, seconds_since, set_condition, template_hash, uid,
    write_object, write_status,
};
use crate::cluster::Cluster;

const REVISION: &str = "deployment.kubernetes.io/revision";
const MANAGER: &str = "kube-controller-manager";

pub async fn reconcile(cluster: &Cluster) -> bool {
    let (Some(d_rt), Some(rs_rt)) = (
        resource(cluster, "apps", "v1", "deployments"),
        resource(cluster, "apps", "v1", "replicasets"),
    ) else {
        return false;
    };
    let mut wrote = false;
    for d in list(cluster, &d_rt, None) {
        if deleting(&d) {
            continue;
        }
        let replicas = d["spec"]["replicas"].as_i64().unwrap_or(1).max(0);
        let collisions = d["status"]["collisionCount"].as_i64().unwrap_or(0);
        let hash = template_hash(&d["spec"]["template"], collisions);
        let owned = |cluster: &Cluster| -> Vec<Value> {
            list(cluster, &rs_rt, Some(namespace(&d)))
                .into_iter()
                .filter(|rs| controller_uid(rs) == Some(uid(&d)))
                .map(|rs| (*rs).clone())
                .collect()
        };
        let rss = owned(cluster);
        let max_revision = rss.iter().map(revision).max().unwrap_or(0);
        let paused = d["spec"]["paused"] == json!(true);
        let new_rs = rss
            .iter()
            .find(|rs| rs["metadata"]["labels"]["pod-template-hash"] == json!(hash))
            .cloned();
        let recreate = d["spec"]["strategy"]["type"] == "Recreate";
        let old_alive = rss
            .iter()
            .filter(|rs| rs["metadata"]["labels"]["pod-template-hash"] != json!(hash))
            .any(|rs| rs["status"]["replicas"].as_i64().unwrap_or(0) > 0);
        match &new_rs {
            None if !(paused || recreate && old_alive) => {
                wrote |= create(
                    cluster,
                    &rs_rt,
                    namespace(&d),
                    new_replica_set(&d, &hash, replicas, max_revision + 1),
                    MANAGER,
                )
                .await;
            }
            Some(rs) if !paused => {
                // A rollback to an older template makes its ReplicaSet the newest revision again.
                let mut next = rs.clone();
                if revision(rs) < max_revision {
                    next["metadata"]["annotations"][REVISION] =
                        json!((max_revision + 1).to_string());
                }
                let scaled = if recreate && old_alive { 0 } else { replicas };
                next["spec"]["replicas"] = json!(scaled);
                next["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] =
                    json!(replicas.to_string());
                next["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] =
                    json!((replicas + max_surge(&d, replicas)).to_string());
                if next != *rs {
                    wrote |= write_object(cluster, &rs_rt, next, MANAGER).await;
                }
            }
            _ => {}
        }
        let rss = owned(cluster);
        let new_rs = rss
            .iter()
            .find(|rs| rs["metadata"]["labels"]["pod-template-hash"] == json!(hash));
        let new_complete = new_rs.is_some_and(|rs| {
            rs["status"]["availableReplicas"].as_i64().unwrap_or(0) >= replicas
                && rs["spec"]["replicas"].as_i64() == Some(replicas)
        });
        // Old ReplicaSets go to zero once the new one carries the load (or at once for Recreate).
        if !paused && (new_complete || recreate) {
            for rs in rss
                .iter()
                .filter(|rs| rs["metadata"]["labels"]["pod-template-hash"] != json!(hash))
                .filter(|rs| rs["spec"]["replicas"].as_i64().unwrap_or(0) > 0)
            {
                let mut next = rs.clone();
                next["spec"]["replicas"] = json!(0);
                wrote |= write_object(cluster, &rs_rt, next, MANAGER).await;
            }
        }
        // revisionHistoryLimit: the oldest empty old ReplicaSets go.
        let limit = d["spec"]["revisionHistoryLimit"]
            .as_i64()
            .unwrap_or(10)
            .max(0) as usize;
        let mut old_empty: Vec<&Value> = rss
            .iter()
            .filter(|rs| rs["metadata"]["labels"]["pod-template-hash"] != json!(hash))
            .filter(|rs| {
                rs["spec"]["replicas"].as_i64().unwrap_or(0) == 0
                    && rs["status"]["replicas"].as_i64().unwrap_or(0) == 0
            })
            .collect();
        if old_empty.len() > limit {
            old_empty.sort_by_key(|rs| revision(rs));
            for rs in old_empty.iter().take(old_empty.len() - limit) {
                wrote |= delete(cluster, &rs_rt, rs, MANAGER).await;
            }
        }
        // The Deployment's own revision annotation follows its newest ReplicaSet.
        if let Some(rs) = new_rs {
            let rev = rs["metadata"]["annotations"][REVISION].clone();
            if d["metadata"]["annotations"][REVISION] != rev && rev.is_string() {
                let mut next = (*d).clone();
                next["metadata"]["annotations"][REVISION] = rev;
                if write_object(cluster, &d_rt, next, MANAGER).await {
                    // The status is computed from the stored object on the next pass.
                    wrote = true;
                    continue;
                }
            }
        }
        let status = status(&d, &rss, new_rs, replicas, paused);
        wrote |= write_status(cluster, &d_rt, &d, status, MANAGER).await;
    }
    wrote
}

fn revision(rs: &Value) -> i64 {
    rs["metadata"]["annotations"][REVISION]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn new_replica_set(d: &Value, hash: &str, replicas: i64, revision: i64) -> Value {
    let mut template = d["spec"]["template"].clone();
    template["metadata"]["labels"]["pod-template-hash"] = json!(hash);
    let mut selector = d["spec"]["selector"].clone();
    selector["matchLabels"]["pod-template-hash"] = json!(hash);
    let mut labels = template["metadata"]["labels"].clone();
    labels["pod-template-hash"] = json!(hash);
    json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": format!("{}-{hash}", name(d)),
            "namespace": namespace(d),
            "labels": labels,
            "annotations": {
                "deployment.kubernetes.io/desired-replicas": replicas.to_string(),
                "deployment.kubernetes.io/max-replicas": (replicas + max_surge(d, replicas)).to_string(),
                REVISION: revision.to_string(),
            },
            "ownerReferences": [controller_ref(d)],
        },
        "spec": {
            "replicas": replicas,
            "minReadySeconds": d["spec"]["minReadySeconds"].as_i64().unwrap_or(0),
            "selector": selector,
            "template": template,
        },
    })
}

/// An int-or-percent of `replicas`, rounded up (surge) or down (unavailable), as `intstr.GetScaledValueFromIntOrPercent`.
fn scaled(value: &Value, replicas: i64, round_up: bool) -> i64 {
    match value {
        Value::Number(n) => n.as_i64().unwrap_or(0),
        Value::String(s) => match s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) {
            Some(p) if round_up => (p * replicas + 99) / 100,
            Some(p) => p * replicas / 100,
            None => s.parse().unwrap_or(0),
        },
        _ => 0,
    }
}

fn max_surge(d: &Value, replicas: i64) -> i64 {
    if d["spec"]["strategy"]["type"] != "RollingUpdate" {
        return 0;
    }
    scaled(
        &d["spec"]["strategy"]["rollingUpdate"]["maxSurge"],
        replicas,
        true,
    )
}

/// `deploymentutil.MaxUnavailable`: 0 for Recreate or no replicas, at most `replicas`.
fn max_unavailable(d: &Value, replicas: i64) -> i64 {
    if d["spec"]["strategy"]["type"] != "RollingUpdate" || replicas == 0 {
        return 0;
    }
    let ru = &d["spec"]["strategy"]["rollingUpdate"];
    let surge = scaled(&ru["maxSurge"], replicas, true);
    let mut unavailable = scaled(&ru["maxUnavailable"], replicas, false);
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    unavailable.min(replicas)
}

fn status(d: &Value, rss: &[Value], new_rs: Option<&Value>, replicas: i64, paused: bool) -> Value {
    let sum = |f: &str| -> i64 {
        rss.iter()
            .map(|rs| rs["status"][f].as_i64().unwrap_or(0))
            .sum()
    };
    let total = sum("replicas");
    let ready = sum("readyReplicas");
    let available = sum("availableReplicas");
    let updated = new_rs
        .map(|rs| rs["status"]["replicas"].as_i64().unwrap_or(0))
        .unwrap_or(0);
    let desired_total: i64 = rss
        .iter()
        .map(|rs| rs["spec"]["replicas"].as_i64().unwrap_or(0))
        .sum();
    let unavailable = (desired_total.max(replicas) - available).max(0);
    let now = Cluster::now();
    let mut conditions = existing_conditions(d);
    let min_available = replicas - max_unavailable(d, replicas);
    let available_condition = if available >= min_available {
        json!({"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
            "message": "Deployment has minimum availability."})
    } else {
        json!({"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable",
            "message": "Deployment does not have minimum availability."})
    };
    set_condition(&mut conditions, available_condition, &now, true);
    let rs_name = new_rs.map(name).unwrap_or_default();
    let complete =
        new_rs.is_some() && updated == replicas && available >= replicas && total == replicas;
    let previous = conditions
        .iter()
        .find(|c| c["type"] == "Progressing")
        .cloned();
    let deadline = d["spec"]["progressDeadlineSeconds"].as_i64();
    let progressing = if paused {
        json!({"type": "Progressing", "status": "Unknown", "reason": "DeploymentPaused",
            "message": "Deployment is paused"})
    } else if complete {
        json!({"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
            "message": format!("ReplicaSet \"{rs_name}\" has successfully progressed.")})
    } else if previous
        .as_ref()
        .is_some_and(|p| p["reason"] == "ProgressDeadlineExceeded")
        || deadline.is_some_and(|limit| {
            previous
                .as_ref()
                .filter(|p| p["status"] == "True")
                .and_then(|p| seconds_since(&p["lastUpdateTime"], jiff::Timestamp::now()))
                .is_some_and(|s| s > limit)
        })
    {
        json!({"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
            "message": format!("ReplicaSet \"{rs_name}\" has timed out progressing.")})
    } else if new_rs.is_some() {
        let reason = if previous.is_none() {
            "NewReplicaSetCreated"
        } else {
            "ReplicaSetUpdated"
        };
        let message = if previous.is_none() {
            format!("Created new replica set \"{rs_name}\"")
        } else {
            format!("ReplicaSet \"{rs_name}\" is progressing.")
        };
        // While progress continues the condition keeps its update time, so the deadline counts from when
        // progress last happened.
        json!({"type": "Progressing", "status": "True", "reason": reason, "message": message})
    } else {
        json!({"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated",
            "message": "Deployment is progressing."})
    };
    set_condition(&mut conditions, progressing, &now, true);
    // DeploymentStatus omits zero counts.
    let mut status = Map::new();
    status.insert("observedGeneration".into(), json!(generation(d)));
    for (k, v) in [
        ("replicas", total),
        ("updatedReplicas", updated),
        ("readyReplicas", ready),
        ("availableReplicas", available),
        ("unavailableReplicas", unavailable),
    ] {
        if v > 0 {
            status.insert(k.into(), json!(v));
        }
    }
    status.insert("conditions".into(), json!(conditions));
    if let Some(c) = d["status"]["collisionCount"].as_i64() {
        status.insert("collisionCount".into(), json!(c));
    }
    Value::Object(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rolling_update_budgets_follow_the_real_rounding() {
        let d = |surge: Value, unavailable: Value| {
            json!({"spec": {"strategy": {"type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}}})
        };
        assert_eq!(max_unavailable(&d(json!("25%"), json!("25%")), 3), 0);
        assert_eq!(max_surge(&d(json!("25%"), json!("25%")), 3), 1);
        assert_eq!(max_unavailable(&d(json!(0), json!(0)), 3), 1);
        assert_eq!(max_unavailable(&d(json!("25%"), json!(5)), 3), 3);
        assert_eq!(
            max_unavailable(&json!({"spec": {"strategy": {"type": "Recreate"}}}), 3),
            0
        );
    }
}
