//! The Deployment controller: one ReplicaSet per pod template (named `<deployment>-<template hash>`, labelled
//! `pod-template-hash`, carrying the revision annotations), the new one scaled to `spec.replicas` and the old
//! ones to zero once the new one is fully available (`RollingUpdate`) or before it starts (`Recreate`), old
//! ReplicaSets beyond `revisionHistoryLimit` deleted, and the status with the `Available` and `Progressing`
//! conditions as `syncRolloutStatus` keeps them, including `ProgressDeadlineExceeded`.

use serde_json::{Map, Value, json};

use super::objects::{
    controller_ref, controller_uid, deleting, generation, name, namespace, put_count,
    seconds_since, set_in, uid,
};
use super::templates::template_hash;
use super::writes::{
    CONTROLLER_MANAGER, delete, list, resource, try_create, write_object, write_status,
};
use crate::cluster::Cluster;

const REVISION: &str = "deployment.kubernetes.io/revision";
const HASH_LABEL: &str = "pod-template-hash";

/// The most replicas honoured (Deployment replicas are int32 on the real server).
const MAX_REPLICAS: i64 = i32::MAX as i64;

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
        let replicas = d["spec"]["replicas"]
            .as_i64()
            .unwrap_or(1)
            .clamp(0, MAX_REPLICAS);
        let collisions = d["status"]["collisionCount"].as_i64().unwrap_or(0);
        let hash = template_hash(&d["spec"]["template"], collisions);
        let is_new = |rs: &Value| rs["metadata"]["labels"][HASH_LABEL] == json!(hash);
        let owned = |cluster: &Cluster| -> Vec<Value> {
            list(cluster, &rs_rt, Some(namespace(&d)))
                .into_iter()
                .filter(|rs| controller_uid(rs) == Some(uid(&d)))
                .map(|rs| (*rs).clone())
                .collect()
        };
        let rss = owned(cluster);
        let next_revision = rss
            .iter()
            .map(revision)
            .max()
            .unwrap_or(0)
            .saturating_add(1);
        let paused = d["spec"]["paused"] == json!(true);
        let recreate = d["spec"]["strategy"]["type"] == "Recreate";
        let old_alive = rss
            .iter()
            .filter(|rs| !is_new(rs))
            .any(|rs| rs["status"]["replicas"].as_i64().unwrap_or(0) > 0);
        let mut created = None;
        match rss.iter().find(|rs| is_new(rs)) {
            None if !(paused || recreate && old_alive) => {
                let rs = new_replica_set(&d, &hash, replicas, next_revision);
                let rs_name = name(&rs).to_string();
                match try_create(cluster, &rs_rt, namespace(&d), rs, CONTROLLER_MANAGER).await {
                    Ok(()) => {
                        wrote = true;
                        created = Some(rs_name);
                    }
                    // A ReplicaSet of that name that is not ours (left by an orphaning delete, or made by
                    // hand): the collision count changes the hash, as the real controller resolves it.
                    Err(e) if e.code == 409 => {
                        let mut status = d["status"].as_object().cloned().unwrap_or_default();
                        status.insert("collisionCount".into(), json!(collisions.saturating_add(1)));
                        wrote |= write_status(
                            cluster,
                            &d_rt,
                            &d,
                            Value::Object(status),
                            CONTROLLER_MANAGER,
                        )
                        .await;
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!(deployment = %name(&d), error = %e, "its new ReplicaSet was refused");
                    }
                }
            }
            Some(rs) if !paused => {
                // A rollback to an older template makes its ReplicaSet the newest revision again.
                let mut next = rs.clone();
                if revision(rs) < next_revision.saturating_sub(1) {
                    set_in(
                        &mut next,
                        &["metadata", "annotations", REVISION],
                        json!(next_revision.to_string()),
                    );
                }
                let scaled = if recreate && old_alive { 0 } else { replicas };
                set_in(&mut next, &["spec", "replicas"], json!(scaled));
                set_in(
                    &mut next,
                    &[
                        "metadata",
                        "annotations",
                        "deployment.kubernetes.io/desired-replicas",
                    ],
                    json!(replicas.to_string()),
                );
                set_in(
                    &mut next,
                    &[
                        "metadata",
                        "annotations",
                        "deployment.kubernetes.io/max-replicas",
                    ],
                    json!(replicas.saturating_add(max_surge(&d, replicas)).to_string()),
                );
                if next != *rs {
                    wrote |= write_object(cluster, &rs_rt, next, CONTROLLER_MANAGER).await;
                }
            }
            _ => {}
        }
        let rss = owned(cluster);
        let new_rs = rss.iter().find(|rs| is_new(rs));
        let new_complete = new_rs.is_some_and(|rs| {
            rs["status"]["availableReplicas"].as_i64().unwrap_or(0) >= replicas
                && rs["spec"]["replicas"].as_i64() == Some(replicas)
        });
        // Old ReplicaSets go to zero once the new one carries the load (or at once for Recreate).
        if !paused && (new_complete || recreate) {
            for rs in rss
                .iter()
                .filter(|rs| !is_new(rs))
                .filter(|rs| rs["spec"]["replicas"].as_i64().unwrap_or(0) > 0)
            {
                let mut next = rs.clone();
                set_in(&mut next, &["spec", "replicas"], json!(0));
                wrote |= write_object(cluster, &rs_rt, next, CONTROLLER_MANAGER).await;
            }
        }
        // revisionHistoryLimit: the oldest empty old ReplicaSets go.
        let limit =
            usize::try_from(d["spec"]["revisionHistoryLimit"].as_i64().unwrap_or(10)).unwrap_or(0);
        let mut old_empty: Vec<&Value> = rss
            .iter()
            .filter(|rs| !is_new(rs))
            .filter(|rs| {
                rs["spec"]["replicas"].as_i64().unwrap_or(0) == 0
                    && rs["status"]["replicas"].as_i64().unwrap_or(0) == 0
            })
            .collect();
        if old_empty.len() > limit {
            old_empty.sort_by_key(|rs| revision(rs));
            for rs in old_empty.iter().take(old_empty.len() - limit) {
                wrote |= delete(cluster, &rs_rt, rs, CONTROLLER_MANAGER).await;
            }
        }
        // The Deployment's own revision annotation follows its newest ReplicaSet.
        if let Some(rs) = new_rs {
            let rev = rs["metadata"]["annotations"][REVISION].clone();
            if d["metadata"]["annotations"][REVISION] != rev && rev.is_string() {
                let mut next = (*d).clone();
                if set_in(&mut next, &["metadata", "annotations", REVISION], rev)
                    && write_object(cluster, &d_rt, next, CONTROLLER_MANAGER).await
                {
                    // The status is computed from the stored object on the next pass.
                    wrote = true;
                    continue;
                }
            }
        }
        let status = status(&d, &rss, new_rs, replicas, paused, created.as_deref());
        wrote |= write_status(cluster, &d_rt, &d, status, CONTROLLER_MANAGER).await;
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
    let mut template = match &d["spec"]["template"] {
        Value::Object(t) => Value::Object(t.clone()),
        _ => json!({}),
    };
    set_in(
        &mut template,
        &["metadata", "labels", HASH_LABEL],
        json!(hash),
    );
    let mut selector = match &d["spec"]["selector"] {
        Value::Object(s) => Value::Object(s.clone()),
        _ => json!({}),
    };
    set_in(&mut selector, &["matchLabels", HASH_LABEL], json!(hash));
    let labels = template["metadata"]["labels"].clone();
    json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": format!("{}-{hash}", name(d)),
            "namespace": namespace(d),
            "labels": labels,
            "annotations": {
                "deployment.kubernetes.io/desired-replicas": replicas.to_string(),
                "deployment.kubernetes.io/max-replicas": replicas.saturating_add(max_surge(d, replicas)).to_string(),
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

/// An int-or-percent of `replicas`, rounded up (surge) or down (unavailable), as
/// `intstr.GetScaledValueFromIntOrPercent`; a value out of range counts as none.
fn scaled(value: &Value, replicas: i64, round_up: bool) -> i64 {
    let n = match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => match s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) {
            Some(p) => p.checked_mul(replicas).map(|x| {
                if round_up {
                    x.div_euclid(100) + i64::from(x.rem_euclid(100) != 0)
                } else {
                    x.div_euclid(100)
                }
            }),
            None => s.parse().ok(),
        },
        _ => None,
    };
    n.unwrap_or(0).clamp(0, MAX_REPLICAS)
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

/// A Deployment condition as `SetDeploymentCondition` writes it: unchanged (times and all) when its status and
/// reason are, otherwise moved to the end with fresh times (the transition time kept while the status holds).
fn set_deployment_condition(
    conditions: &mut Vec<Value>,
    ty: &str,
    status: &str,
    reason: &str,
    message: String,
    now: &str,
) {
    let old = conditions.iter().position(|c| c["type"] == ty);
    if let Some(i) = old
        && conditions[i]["status"] == status
        && conditions[i]["reason"] == reason
    {
        return;
    }
    let transition = match old {
        Some(i) if conditions[i]["status"] == status => conditions[i]["lastTransitionTime"].clone(),
        _ => json!(now),
    };
    if let Some(i) = old {
        conditions.remove(i);
    }
    conditions.push(json!({"type": ty, "status": status, "lastUpdateTime": now,
        "lastTransitionTime": transition, "reason": reason, "message": message}));
}

fn status(
    d: &Value,
    rss: &[Value],
    new_rs: Option<&Value>,
    replicas: i64,
    paused: bool,
    created: Option<&str>,
) -> Value {
    let sum = |f: &str| -> i64 {
        rss.iter()
            .map(|rs| rs["status"][f].as_i64().unwrap_or(0))
            .fold(0i64, i64::saturating_add)
    };
    let total = sum("replicas");
    let ready = sum("readyReplicas");
    let available = sum("availableReplicas");
    let updated = new_rs
        .map(|rs| rs["status"]["replicas"].as_i64().unwrap_or(0))
        .unwrap_or(0);
    let desired_total = rss
        .iter()
        .map(|rs| rs["spec"]["replicas"].as_i64().unwrap_or(0))
        .fold(0i64, i64::saturating_add);
    let unavailable = desired_total.max(replicas).saturating_sub(available).max(0);
    let now = Cluster::now();
    let old = &d["status"];
    let count = |v: &Value| v.as_i64().unwrap_or(0);
    let mut conditions: Vec<Value> = old["conditions"].as_array().cloned().unwrap_or_default();

    let min_available = replicas - max_unavailable(d, replicas);
    if available >= min_available {
        set_deployment_condition(
            &mut conditions,
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.".into(),
            &now,
        );
    } else {
        set_deployment_condition(
            &mut conditions,
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.".into(),
            &now,
        );
    }

    // syncRolloutStatus: complete, else progressing (something moved since the last status), else timed out.
    let rs_name = new_rs.map(name).unwrap_or_default();
    let complete =
        new_rs.is_some() && updated == replicas && total == replicas && available == replicas;
    let progressed = updated > count(&old["updatedReplicas"])
        || total - updated < count(&old["replicas"]) - count(&old["updatedReplicas"])
        || ready > count(&old["readyReplicas"])
        || available > count(&old["availableReplicas"]);
    let progressing = conditions
        .iter()
        .find(|c| c["type"] == "Progressing")
        .cloned();
    let timed_out = match (&progressing, d["spec"]["progressDeadlineSeconds"].as_i64()) {
        (Some(p), Some(limit)) if p["reason"] != "NewReplicaSetAvailable" => {
            p["reason"] == "ProgressDeadlineExceeded"
                || seconds_since(&p["lastUpdateTime"], jiff::Timestamp::now())
                    .is_some_and(|s| s > limit)
        }
        _ => false,
    };
    if paused {
        set_deployment_condition(
            &mut conditions,
            "Progressing",
            "Unknown",
            "DeploymentPaused",
            "Deployment is paused".into(),
            &now,
        );
    } else if let Some(created) = created {
        set_deployment_condition(
            &mut conditions,
            "Progressing",
            "True",
            "NewReplicaSetCreated",
            format!("Created new replica set \"{created}\""),
            &now,
        );
    } else if complete {
        set_deployment_condition(
            &mut conditions,
            "Progressing",
            "True",
            "NewReplicaSetAvailable",
            format!("ReplicaSet \"{rs_name}\" has successfully progressed."),
            &now,
        );
    } else if progressing
        .as_ref()
        .is_some_and(|p| p["reason"] == "DeploymentPaused")
    {
        set_deployment_condition(
            &mut conditions,
            "Progressing",
            "Unknown",
            "DeploymentResumed",
            "Deployment is resumed".into(),
            &now,
        );
    } else if progressed {
        // Progress renews the condition's update time, which is where the deadline counts from.
        if let Some(i) = conditions.iter().position(|c| c["type"] == "Progressing") {
            let transition = match conditions[i]["status"].as_str() {
                Some("True") => conditions[i]["lastTransitionTime"].clone(),
                _ => json!(now),
            };
            conditions.remove(i);
            conditions.push(
                json!({"type": "Progressing", "status": "True", "lastUpdateTime": now,
                "lastTransitionTime": transition, "reason": "ReplicaSetUpdated",
                "message": format!("ReplicaSet \"{rs_name}\" is progressing.")}),
            );
        } else {
            set_deployment_condition(
                &mut conditions,
                "Progressing",
                "True",
                "ReplicaSetUpdated",
                format!("ReplicaSet \"{rs_name}\" is progressing."),
                &now,
            );
        }
    } else if timed_out {
        set_deployment_condition(
            &mut conditions,
            "Progressing",
            "False",
            "ProgressDeadlineExceeded",
            format!("ReplicaSet \"{rs_name}\" has timed out progressing."),
            &now,
        );
    }

    // DeploymentStatus omits zero counts.
    let mut status = Map::new();
    status.insert("observedGeneration".into(), json!(generation(d)));
    put_count(&mut status, "replicas", total);
    put_count(&mut status, "updatedReplicas", updated);
    put_count(&mut status, "readyReplicas", ready);
    put_count(&mut status, "availableReplicas", available);
    put_count(&mut status, "unavailableReplicas", unavailable);
    status.insert("conditions".into(), json!(conditions));
    if let Some(c) = old["collisionCount"].as_i64() {
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
        // Hostile percentages neither overflow nor panic.
        assert_eq!(max_surge(&d(json!("9223372036854775807%"), json!(0)), 3), 0);
    }

    #[test]
    fn a_completed_rollout_does_not_time_out_when_it_moves_again() {
        let long_ago = "2020-01-01T00:00:00Z";
        let rs = json!({"metadata": {"name": "web-abc", "labels": {HASH_LABEL: "abc"}},
            "spec": {"replicas": 3}, "status": {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2}});
        let d = json!({"metadata": {"generation": 2}, "spec": {"replicas": 3, "progressDeadlineSeconds": 600,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}},
            "status": {"replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2,
                "conditions": [{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                    "lastUpdateTime": long_ago, "lastTransitionTime": long_ago}]}});
        let s = status(&d, std::slice::from_ref(&rs), Some(&rs), 3, false, None);
        let p = s["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Progressing")
            .unwrap()
            .clone();
        assert_ne!(p["reason"], "ProgressDeadlineExceeded", "{p}");
        // With no progress at all for longer than the deadline, it times out.
        let mut stalled = d.clone();
        stalled["status"]["conditions"][0]["reason"] = json!("ReplicaSetUpdated");
        let s = status(
            &stalled,
            std::slice::from_ref(&rs),
            Some(&rs),
            3,
            false,
            None,
        );
        let p = s["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Progressing")
            .unwrap()
            .clone();
        assert_eq!(p["reason"], "ProgressDeadlineExceeded");
        assert_eq!(p["status"], "False");
    }
}
