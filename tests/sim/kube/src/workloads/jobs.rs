//! The Job controller: up to `parallelism` Pods at a time until `completions` succeeded, then
//! `SuccessCriteriaMet` and `Complete`; more failed Pods than `backoffLimit`, or running past
//! `activeDeadlineSeconds`, gives `FailureTarget` and `Failed` and removes the active Pods. Failed Pods are
//! replaced at once (the real controller backs off 10 s, 20 s, …). `suspend` removes the active Pods with
//! `Suspended=True/JobSuspended` (and `JobResumed` when lifted).

use serde_json::{Value, json};

use super::objects::{
    active, condition, deleting, existing_conditions, name, namespace, phase, put_count, ready,
    seconds_since, set_condition,
};
use super::templates::{pod_from_template, template_selected};
use super::writes::{
    BURST, CONTROLLER_MANAGER, create, delete, list, owned_pods, resource, write_status,
};
use crate::cluster::Cluster;

pub async fn reconcile(cluster: &Cluster) -> bool {
    let (Some(job_rt), Some(pods_rt)) = (
        resource(cluster, "batch", "v1", "jobs"),
        resource(cluster, "", "v1", "pods"),
    ) else {
        return false;
    };
    let mut wrote = false;
    for job in list(cluster, &job_rt, None) {
        if deleting(&job) || finished(&job) {
            continue;
        }
        let now = Cluster::now();
        let pods = owned_pods(cluster, &job);
        let running: Vec<_> = pods.iter().filter(|p| active(p)).collect();
        let succeeded = pods.iter().filter(|p| phase(p) == "Succeeded").count() as i64;
        let failed = pods.iter().filter(|p| phase(p) == "Failed").count() as i64;
        let completions = job["spec"]["completions"].as_i64();
        let parallelism = job["spec"]["parallelism"]
            .as_i64()
            .unwrap_or(1)
            .clamp(0, i64::from(i32::MAX));
        let backoff_limit = job["spec"]["backoffLimit"].as_i64().unwrap_or(6);
        let suspended = job["spec"]["suspend"] == json!(true);
        let mut status = job["status"].as_object().cloned().unwrap_or_default();
        let mut conditions = existing_conditions(&job);
        if !suspended && !status.contains_key("startTime") {
            status.insert("startTime".into(), json!(now));
        }
        let deadline_passed = job["spec"]["activeDeadlineSeconds"]
            .as_i64()
            .zip(seconds_since(
                &status.get("startTime").cloned().unwrap_or_default(),
                jiff::Timestamp::now(),
            ))
            .is_some_and(|(limit, elapsed)| elapsed >= limit);
        let failure = if failed > backoff_limit {
            Some((
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            ))
        } else if deadline_passed {
            Some((
                "DeadlineExceeded",
                "Job was active longer than specified deadline",
            ))
        } else {
            None
        };
        let done = match completions {
            Some(c) => succeeded >= c,
            // Without completions, the Job is done when any Pod succeeded and none is still running.
            None => succeeded > 0 && running.is_empty(),
        };
        let mut active_n = running.len() as i64;
        if let Some((reason, message)) = failure {
            for p in &running {
                wrote |= delete(cluster, &pods_rt, p, CONTROLLER_MANAGER).await;
            }
            active_n = 0;
            for ty in ["FailureTarget", "Failed"] {
                set_condition(
                    &mut conditions,
                    json!({"type": ty, "status": "True", "reason": reason, "message": message,
                        "lastProbeTime": now}),
                    &now,
                    false,
                );
            }
        } else if done {
            for ty in ["SuccessCriteriaMet", "Complete"] {
                set_condition(
                    &mut conditions,
                    json!({"type": ty, "status": "True", "reason": "CompletionsReached",
                        "message": "Reached expected number of succeeded pods", "lastProbeTime": now}),
                    &now,
                    false,
                );
            }
            status.insert("completionTime".into(), json!(now));
        } else if suspended {
            for p in &running {
                wrote |= delete(cluster, &pods_rt, p, CONTROLLER_MANAGER).await;
            }
            active_n = 0;
            set_condition(
                &mut conditions,
                json!({"type": "Suspended", "status": "True", "reason": "JobSuspended",
                    "message": "Job suspended", "lastProbeTime": now}),
                &now,
                false,
            );
        } else {
            if conditions
                .iter()
                .any(|c| c["type"] == "Suspended" && c["status"] == "True")
            {
                set_condition(
                    &mut conditions,
                    json!({"type": "Suspended", "status": "False", "reason": "JobResumed",
                        "message": "Job resumed", "lastProbeTime": now}),
                    &now,
                    false,
                );
            }
            let remaining = completions.map_or(parallelism, |c| c.saturating_sub(succeeded).max(0));
            let want = parallelism.min(remaining);
            // At most a burst of new Pods per pass.
            let missing = if template_selected(&job) {
                want.saturating_sub(active_n).clamp(0, BURST)
            } else {
                0
            };
            for _ in 0..missing {
                let mut pod = pod_from_template(&job, &job["spec"]["template"], &[]);
                pod["metadata"]["generateName"] = json!(format!("{}-", name(&job)));
                if create(cluster, &pods_rt, namespace(&job), pod, CONTROLLER_MANAGER).await {
                    wrote = true;
                    active_n += 1;
                }
            }
        }
        let ready_n = owned_pods(cluster, &job)
            .iter()
            .filter(|p| active(p) && ready(p))
            .count();
        put_count(&mut status, "active", active_n);
        put_count(&mut status, "succeeded", succeeded);
        put_count(&mut status, "failed", failed);
        status.insert(
            "ready".into(),
            json!(if active_n == 0 { 0 } else { ready_n }),
        );
        status.insert("terminating".into(), json!(0));
        status.insert("uncountedTerminatedPods".into(), json!({}));
        if !conditions.is_empty() {
            status.insert("conditions".into(), json!(conditions));
        }
        wrote |= write_status(
            cluster,
            &job_rt,
            &job,
            Value::Object(status),
            CONTROLLER_MANAGER,
        )
        .await;
    }
    wrote
}

/// A Job with `Complete` or `Failed` true is finished for good.
fn finished(job: &Value) -> bool {
    ["Complete", "Failed"]
        .iter()
        .any(|t| condition(job, t).is_some_and(|c| c["status"] == "True"))
}
