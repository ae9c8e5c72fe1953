//! One reconcile of an OmniCluster that is not being deleted.
//!
//! Every path ends in one [`Outcome`], which carries all three conditions (`Validated`, `Synced`, `Ready`), so no
//! path can leave one from an older generation (see `outcome`). `Ready` keeps the Go controller's reason
//! for the first failing step.

use omni_api::conditions::{self, reasons};
use omni_api::{OmniCluster, OmniClusterStatus, SyncStatusFields};
use omni_plugin_sdk::{EventType, Host, ReconcileError, Value};
use omni_template::model::FileSource;
use omni_template::render::{self, Rendered};
use omni_template::sync::{self, Progress};
use omni_template::translate::{self, types};
use omni_template::{encode, validate};

use crate::inputs;
use crate::outcome::{Outcome, State};
use crate::timing::{
    NOT_READY_RECHECK_MS, TEARDOWN_RECHECK_MS, failure_backoff_ms, sync_interval_ms, trim_status,
};

const VALIDATED_MESSAGE: &str = "rendered Omni cluster template is valid";
/// `Synced`/`Ready` while Omni is still tearing down what the template no longer names. Not one of Go's reasons:
/// the Go controller waited inside the call instead of reporting it.
const SYNCING: &str = "Syncing";

pub fn reconcile<H: Host>(host: &H) -> Result<(), ReconcileError> {
    outcome(host)?.write(host)
}

/// What this reconcile reports. Nothing is written here: every path returns its [`Outcome`], written once.
fn outcome<H: Host>(host: &H) -> Result<Outcome, ReconcileError> {
    let object = host.object();
    let cluster: OmniCluster = host.object_as()?;
    let interval = sync_interval_ms(&object);
    let now = host.now();

    // The Go controller orders the reasons `Ready` and `Synced` give: suspended, then the connection, then the
    // template. The template is still rendered and validated on every path first — it reads only Kubernetes and
    // the template root, never Omni — so that `Validated` always says whether the current spec's template is
    // valid: all three conditions are written on every path, and a `Validated` left from an older generation
    // would be stamped with the new one.
    let template = template(host, &cluster);
    // Until the rename check below has passed, `status.clusterName` keeps the name Omni has the cluster under, if
    // it has one: a suspended or disconnected cluster whose `spec.clusterName` changed must not lose it, or the
    // check (and deletion, which uses it) would no longer know the old cluster.
    let recorded = remote_name(&object);
    let (mut status, validated) = match &template {
        Ok((rendered, _)) => (
            rendered_status(rendered, &encode::to_yaml(&rendered.template), recorded),
            State::ok(reasons::VALIDATED, VALIDATED_MESSAGE),
        ),
        // Go's "mark failed" (missing connection or template, render failure) writes only the name.
        Err(e) => (
            name_only_status(recorded.unwrap_or_else(|| render::cluster_name(&cluster))),
            State::failed(e.reason, e.message.as_str()),
        ),
    };

    if cluster.spec.suspend == Some(true) {
        // Suspended, before anything else is checked: no connection lookup and no Omni call while suspended, and
        // `Ready` says `Suspended` whatever the template's state. The Go operator wrote only `Ready` here and left
        // `Validated`, `Synced`, `templateHash` and the child refs as they were; we also write `Synced` with the
        // same reason, and `Validated`, `templateHash` and the refs for the current spec. That extra does not
        // change `Ready` or `Synced`.
        let suspended = State::failed(reasons::SUSPENDED, "remote Omni sync is suspended");
        return Ok(Outcome::stopped(validated, suspended, status, interval));
    }

    // The connection, before the template: a missing connection is what `Ready` and `Synced` report even
    // when the template is broken too (`Validated` says that).
    let connection_name = cluster.spec.connection_ref.name.as_str();
    let connection = match inputs::connection(host, connection_name) {
        Ok(c) => c,
        Err(missing) => {
            // Beyond the Go controller, which waited the whole interval either way: a failed read is retried with
            // the failure backoff (an API server that failed once must not hold the cluster for five minutes).
            let requeue = if missing.read_failed {
                failure_backoff_ms(&object, conditions::types::SYNCED, &now)
            } else {
                interval
            };
            let missing = State::failed(reasons::MISSING_CONNECTION, missing.message);
            return Ok(Outcome::stopped(validated, missing, status, requeue));
        }
    };

    let (rendered, files) = match template {
        Ok(r) => r,
        Err(e) => {
            let requeue = if e.read_failed {
                failure_backoff_ms(&object, conditions::types::VALIDATED, &now)
            } else {
                interval
            };
            return Ok(Outcome::invalid(e.reason, &e.message, status, requeue));
        }
    };
    status.connection.connection_ref = Some(connection.name().to_string());
    status.connection.endpoint = Some(connection.spec.endpoint.clone());

    // Omni already has the cluster under its old name; syncing the new one would orphan it.
    if let Some(old) = remote_name(&object).filter(|old| *old != rendered.cluster_name)
        && let Err(message) = rename_allowed(host, connection_name, &old, &rendered.cluster_name)
    {
        // `status.clusterName` still names `old`.
        return Ok(Outcome::invalid(
            reasons::VALIDATION_FAILED,
            &message,
            status,
            interval,
        ));
    }

    status.sync.cluster_name = Some(rendered.cluster_name.clone());

    // A recheck of readiness reads Omni's status and nothing else: Omni has this very template from a sync
    // within the interval, so syncing it again (20 or more RPCs per cluster, every NOT_READY_RECHECK_MS while it
    // is not ready) would change nothing. The interval's re-sync, a spec change and a changed input still sync.
    // The status fields of the last sync are left as they are (an unset field is not written).
    if readiness_recheck(
        &object,
        status.sync.template_hash.as_deref(),
        &now,
        interval,
    ) {
        return Ok(health(
            host,
            connection_name,
            &rendered,
            validated,
            status,
            interval,
        ));
    }

    // Sync the template to Omni.
    let sync_result = translate::translate(&rendered.template, files.as_ref())
        .map_err(|e| format!("error syncing template: {e}"))
        .map(|desired| sync::sync(host, connection_name, &rendered.cluster_name, &desired));
    let (lines, result) = match sync_result {
        Ok(report) => (
            report.lines,
            report
                .result
                .map_err(|e| format!("error syncing template: {e}")),
        ),
        Err(e) => (Vec::new(), Err(e)),
    };
    let output = trim_status(&lines.join("\n"));
    status.sync.last_attempt_time = Some(now.clone());
    status.sync.last_sync_output = Some(output.clone());
    // From here on the template is valid, and `validated` says so.

    // Beyond the Go operator (which records no Events): a sync that changed Omni, or failed, is an Event on the
    // object, so `kubectl describe` shows the history. Unchanged re-syncs say nothing.
    match &result {
        Err(e) => host.event(
            EventType::Warning,
            reasons::SYNC_FAILED,
            &format!("sync failed: {e}"),
        ),
        Ok(_) if !lines.is_empty() => host.event(
            EventType::Normal,
            reasons::SYNCED,
            &format!("synced the cluster template to Omni: {}", summary(&lines)),
        ),
        Ok(_) => {}
    }
    match result {
        Err(e) => {
            let mut message = format!("sync failed: {e}");
            if !output.is_empty() {
                message = format!("{message}\n{output}");
            }
            let failed = State::failed(reasons::SYNC_FAILED, message);
            let backoff = failure_backoff_ms(&object, conditions::types::SYNCED, &now);
            Ok(Outcome::stopped(validated, failed, status, backoff))
        }
        Ok(Progress::Waiting(why)) => Ok(Outcome::stopped(
            validated,
            State::failed(SYNCING, why),
            status,
            TEARDOWN_RECHECK_MS.min(interval),
        )),
        Ok(Progress::Done) => {
            status.sync.last_sync_time = Some(now);
            Ok(health(
                host,
                connection_name,
                &rendered,
                validated,
                status,
                interval,
            ))
        }
    }
}

/// Why there is no valid template: the Go controller's reason and message, and whether a read failed (retried
/// with the failure backoff rather than at the interval).
struct TemplateError {
    reason: &'static str,
    message: String,
    read_failed: bool,
}

impl TemplateError {
    fn invalid(message: String) -> Self {
        TemplateError {
            reason: reasons::VALIDATION_FAILED,
            message,
            read_failed: false,
        }
    }
}

/// Renders and validates.
fn template<H: Host>(
    host: &H,
    cluster: &OmniCluster,
) -> Result<(Rendered, Box<dyn FileSource>), TemplateError> {
    let children = inputs::children(host, cluster).map_err(|m| TemplateError {
        reason: reasons::MISSING_TEMPLATE,
        message: m.message,
        read_failed: m.read_failed,
    })?;
    let rendered = render::render(
        cluster,
        &children.control_plane,
        &children.workers,
        &children.machines,
    )
    .map_err(TemplateError::invalid)?;
    let files = inputs::files(host, cluster, &rendered.template);
    validate::validate(&rendered.template, files.as_ref())
        .map_err(|e| TemplateError::invalid(e.to_string()))?;
    Ok((rendered, files))
}

/// The status a rendered template sets, with `clusterName` the name Omni has the cluster under when one is
/// `recorded`.
/// What a sync did, counted by action (`2 created, 1 updated`), from its report lines.
fn summary(lines: &[String]) -> String {
    let count = |prefix: &str| lines.iter().filter(|l| l.starts_with(prefix)).count();
    [
        ("* creating ", "created"),
        ("* updating ", "updated"),
        ("* tearing down ", "torn down"),
        ("* destroyed ", "destroyed"),
    ]
    .iter()
    .filter_map(|(prefix, word)| match count(prefix) {
        0 => None,
        n => Some(format!("{n} {word}")),
    })
    .collect::<Vec<_>>()
    .join(", ")
}

/// The outcome of a synced template: `Synced`, and `Ready` from the cluster's health in Omni, read with a
/// deadline (the host's) instead of waiting for a ClusterStatus forever.
fn health<H: Host>(
    host: &H,
    connection_name: &str,
    rendered: &Rendered,
    validated: State,
    mut status: OmniClusterStatus,
    interval: u64,
) -> Outcome {
    let not_ready = NOT_READY_RECHECK_MS.min(interval);
    let (ready, status_output, requeue_ms) =
        match host.omni_cluster_status(connection_name, &rendered.cluster_name) {
            Ok(Some(health)) if health.healthy => (
                State::ok(
                    reasons::SYNCED,
                    "cluster template is synced and status was read from Omni",
                ),
                String::new(),
                interval,
            ),
            // The Go operator's status output was always empty; the findings say why.
            Ok(Some(health)) => (
                State::failed(reasons::STATUS_FAILED, "cluster is not healthy"),
                trim_status(&health.findings.join("\n")),
                not_ready,
            ),
            Ok(None) => (
                State::failed(
                    reasons::STATUS_FAILED,
                    format!(
                        "Omni has no status for cluster {:?} yet",
                        rendered.cluster_name
                    ),
                ),
                String::new(),
                not_ready,
            ),
            Err(e) => (
                State::failed(reasons::STATUS_FAILED, e.message()),
                String::new(),
                not_ready,
            ),
        };
    status.sync.last_status_output = Some(status_output);
    Outcome {
        validated,
        synced: State::ok(reasons::SYNCED, "template synced to Omni"),
        ready,
        status,
        requeue_ms,
    }
}

/// Whether this call only rechecks readiness: the status says the last call synced this very template (the same
/// hash, for the current generation) less than a sync interval ago, `Synced` is `True`, and `Ready` was `False`
/// because Omni's status was not yet healthy.
fn readiness_recheck(object: &Value, hash: Option<&str>, now: &str, interval_ms: u64) -> bool {
    let status = &object["status"];
    let condition = |type_: &str| {
        status["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
    };
    let same_generation = object["metadata"]["generation"].as_i64().is_some()
        && status["observedGeneration"].as_i64() == object["metadata"]["generation"].as_i64();
    let same_template = hash.is_some() && status["templateHash"].as_str() == hash;
    let synced = condition(conditions::types::SYNCED).is_some_and(|c| c["status"] == "True");
    let waiting_for_health = condition(conditions::types::READY)
        .is_some_and(|c| c["status"] == "False" && c["reason"] == reasons::STATUS_FAILED);
    let recent = status["lastSyncTime"]
        .as_str()
        .and_then(|at| omni_plugin_sdk::time::seconds_between(at, now))
        .is_some_and(|age| age >= 0 && (age as u64).saturating_mul(1000) < interval_ms);
    same_generation && same_template && synced && waiting_for_health && recent
}

fn rendered_status(r: &Rendered, yaml: &str, recorded: Option<String>) -> OmniClusterStatus {
    OmniClusterStatus {
        sync: SyncStatusFields {
            cluster_name: Some(recorded.unwrap_or_else(|| r.cluster_name.clone())),
            template_hash: Some(encode::template_hash(yaml)),
            ..SyncStatusFields::default()
        },
        control_plane_ref: Some(r.control_plane_ref.clone()),
        workers_refs: Some(r.workers_refs.clone()),
        machine_refs: Some(r.machine_refs.clone()),
        ..OmniClusterStatus::default()
    }
}

/// The status of Go's "mark failed": only `clusterName`.
fn name_only_status(cluster_name: String) -> OmniClusterStatus {
    OmniClusterStatus {
        sync: SyncStatusFields {
            cluster_name: Some(cluster_name),
            ..SyncStatusFields::default()
        },
        ..OmniClusterStatus::default()
    }
}

/// The cluster name Omni may already have: the recorded `status.clusterName` once a sync was attempted.
pub fn remote_name(object: &Value) -> Option<String> {
    let status = &object["status"];
    let attempted = status["lastAttemptTime"].is_string() || status["lastSyncTime"].is_string();
    status["clusterName"]
        .as_str()
        .filter(|n| attempted && !n.is_empty())
        .map(String::from)
}

/// A changed `spec.clusterName` is accepted only while Omni has no cluster under the old name.
fn rename_allowed<H: Host>(host: &H, connection: &str, old: &str, new: &str) -> Result<(), String> {
    let key = omni_plugin_sdk::omni::ResourceKey::new(types::CLUSTERS, old);
    match host.omni_get(connection, &key) {
        Ok(None) => Ok(()),
        Ok(Some(_)) => Err(format!(
            "spec.clusterName changed from {old:?} to {new:?} after Omni created cluster {old:?}; syncing would create a \
             second cluster and leave {old:?} behind. Set spec.clusterName back to {old:?}, or delete this OmniCluster \
             (which deletes or orphans {old:?} as its deletePolicy says) and create a new one"
        )),
        Err(e) => Err(format!(
            "cannot tell whether Omni still has cluster {old:?} before renaming it to {new:?}: {}",
            e.message()
        )),
    }
}
