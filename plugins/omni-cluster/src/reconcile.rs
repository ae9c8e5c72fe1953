//! One reconcile of an OmniCluster that is not being deleted (spec/original-operator.md §2.2 steps 4–10).
//!
//! Every path writes all three conditions (`Validated`, `Synced`, `Ready`), because the host stamps each written
//! condition with the current generation: a `Synced=True` left over from an older spec would claim the new one is
//! in Omni (§10.18). `Ready` keeps the Go controller's reason for the first failing step.

use omni_api::OmniCluster;
use omni_plugin_sdk::{Condition, Host, ReconcileError, Value, json};
use omni_template::model::FileSource;
use omni_template::render::{self, Rendered};
use omni_template::sync::{self, Progress};
use omni_template::translate::{self, types};
use omni_template::{encode, validate};

use crate::inputs;
use crate::timing::{
    NOT_READY_RECHECK_MS, TEARDOWN_RECHECK_MS, failure_backoff_ms, sync_interval_ms, trim_status,
};

const VALIDATED_MESSAGE: &str = "rendered Omni cluster template is valid";

pub fn reconcile<H: Host>(host: &H) -> Result<(), ReconcileError> {
    let object = host.object();
    let cluster: OmniCluster = host.object_as()?;
    let interval = sync_interval_ms(&object);
    let now = host.now();

    // §2.2 orders the reasons `Ready` and `Synced` give: suspended (step 4), then the connection (step 5), then the
    // template (steps 6–8). The template is still rendered and validated on every path first — it reads only
    // Kubernetes and the template root, never Omni — so that `Validated` always says whether the current spec's
    // template is valid: all three conditions are written on every path (§10.18), and a `Validated` left from an
    // older generation would be stamped with the new one.
    let template = template(host, &cluster);
    // Until the rename check below has passed, `status.clusterName` keeps the name Omni has the cluster under, if
    // it has one: a suspended or disconnected cluster whose `spec.clusterName` changed must not lose it, or the
    // check (and deletion, which uses it) would no longer know the old cluster (§10.16).
    let recorded = remote_name(&object);
    let (mut status, validated) = match &template {
        Ok((rendered, _)) => {
            let mut status = rendered_status(rendered, &encode::to_yaml(&rendered.template));
            if let Some(old) = &recorded {
                status["clusterName"] = json!(old);
            }
            (status, Validated::Valid)
        }
        // Go's "mark failed" writes only the name (steps 5–7).
        Err((reason, message)) => (
            json!({"clusterName": recorded.unwrap_or_else(|| render::cluster_name(&cluster))}),
            Validated::Invalid(reason, message),
        ),
    };

    if cluster.spec.suspend == Some(true) {
        // §2.2 step 4, before anything else is checked: no connection lookup and no Omni call while suspended, and
        // `Ready` says `Suspended` whatever the template's state. The Go operator wrote only `Ready` here and left
        // `Validated`, `Synced`, `templateHash` and the child refs as they were (§10.18); we also write `Synced` with
        // the same reason, and `Validated`, `templateHash` and the refs for the current spec. That extra does not
        // change `Ready` or `Synced`.
        let message = "remote Omni sync is suspended";
        host.set_status(status);
        validated.report(host);
        condition(host, "Synced", false, "Suspended", message);
        condition(host, "Ready", false, "Suspended", message);
        host.requeue_after(interval);
        return Ok(());
    }

    // §2.2 step 5, before the template's steps 6–8: a missing connection is what `Ready` and `Synced` report even
    // when the template is broken too (`Validated` says that).
    let connection_name = cluster.spec.connection_ref.name.as_str();
    let connection = match inputs::connection(host, connection_name) {
        Ok(c) => c,
        Err(message) => {
            host.set_status(status);
            validated.report(host);
            condition(host, "Synced", false, "MissingConnection", &message);
            condition(host, "Ready", false, "MissingConnection", &message);
            host.requeue_after(interval);
            return Ok(());
        }
    };

    let (rendered, files) = match template {
        Ok(r) => r,
        Err((reason, message)) => {
            host.set_status(status);
            condition(host, "Validated", false, reason, &message);
            condition(
                host,
                "Synced",
                false,
                reason,
                &format!("not synced: {message}"),
            );
            condition(host, "Ready", false, reason, &message);
            host.requeue_after(interval);
            return Ok(());
        }
    };
    status["connectionRef"] = json!(connection.name());
    status["endpoint"] = json!(connection.spec.endpoint);

    // §10.16: Omni already has the cluster under its old name; syncing the new one would orphan it.
    if let Some(old) = remote_name(&object).filter(|old| *old != rendered.cluster_name)
        && let Err(message) = rename_allowed(host, connection_name, &old, &rendered.cluster_name)
    {
        // `status.clusterName` still names `old`.
        host.set_status(status);
        condition(host, "Validated", false, "ValidationFailed", &message);
        condition(
            host,
            "Synced",
            false,
            "ValidationFailed",
            &format!("not synced: {message}"),
        );
        condition(host, "Ready", false, "ValidationFailed", &message);
        host.requeue_after(interval);
        return Ok(());
    }

    status["clusterName"] = json!(rendered.cluster_name);

    // §2.2 step 9.
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
    status["lastAttemptTime"] = json!(now);
    status["lastSyncOutput"] = json!(output);
    condition(host, "Validated", true, "Validated", VALIDATED_MESSAGE);

    match result {
        Err(e) => {
            let mut message = format!("sync failed: {e}");
            if !output.is_empty() {
                message = format!("{message}\n{output}");
            }
            host.set_status(status);
            condition(host, "Synced", false, "SyncFailed", &message);
            condition(host, "Ready", false, "SyncFailed", &message);
            host.requeue_after(failure_backoff_ms(&object, "Synced", &now));
        }
        Ok(Progress::Waiting(why)) => {
            host.set_status(status);
            condition(host, "Synced", false, "Syncing", &why);
            condition(host, "Ready", false, "Syncing", &why);
            host.requeue_after(TEARDOWN_RECHECK_MS.min(interval));
        }
        Ok(Progress::Done) => {
            status["lastSyncTime"] = json!(now);
            condition(host, "Synced", true, "Synced", "template synced to Omni");
            // §2.2 step 10, with a deadline (the host's) instead of waiting for a ClusterStatus forever (§10.6).
            let ready = match host.omni_cluster_status(connection_name, &rendered.cluster_name) {
                Ok(Some(health)) if health.healthy => {
                    status["lastStatusOutput"] = json!("");
                    condition(
                        host,
                        "Ready",
                        true,
                        "Synced",
                        "cluster template is synced and status was read from Omni",
                    );
                    true
                }
                Ok(Some(health)) => {
                    // §10.5: the Go operator's status output was always empty; the findings say why.
                    status["lastStatusOutput"] = json!(trim_status(&health.findings.join("\n")));
                    condition(
                        host,
                        "Ready",
                        false,
                        "StatusFailed",
                        "cluster is not healthy",
                    );
                    false
                }
                Ok(None) => {
                    let message = format!(
                        "Omni has no status for cluster {:?} yet",
                        rendered.cluster_name
                    );
                    status["lastStatusOutput"] = json!("");
                    condition(host, "Ready", false, "StatusFailed", &message);
                    false
                }
                Err(e) => {
                    status["lastStatusOutput"] = json!("");
                    condition(host, "Ready", false, "StatusFailed", e.message());
                    false
                }
            };
            host.set_status(status);
            host.requeue_after(if ready {
                interval
            } else {
                NOT_READY_RECHECK_MS.min(interval)
            });
        }
    }
    Ok(())
}

/// What `Validated` says on the paths that stop before the template's own (suspended, no connection).
enum Validated<'a> {
    Valid,
    Invalid(&'static str, &'a str),
}

impl Validated<'_> {
    fn report<H: Host>(&self, host: &H) {
        match self {
            Validated::Valid => condition(host, "Validated", true, "Validated", VALIDATED_MESSAGE),
            Validated::Invalid(reason, message) => {
                condition(host, "Validated", false, reason, message)
            }
        }
    }
}

/// Why there is no valid template: the `(reason, message)` of §2.2 steps 6–8.
type TemplateError = (&'static str, String);

/// Renders and validates; the error is `(reason, message)` as §2.2 steps 6–8 report it.
fn template<H: Host>(
    host: &H,
    cluster: &OmniCluster,
) -> Result<(Rendered, Box<dyn FileSource>), TemplateError> {
    let children = inputs::children(host, cluster).map_err(|m| ("MissingTemplate", m))?;
    let rendered = render::render(
        cluster,
        &children.control_plane,
        &children.workers,
        &children.machines,
    )
    .map_err(|m| ("ValidationFailed", m))?;
    let files = inputs::files(host, cluster, &rendered.template);
    validate::validate(&rendered.template, files.as_ref())
        .map_err(|e| ("ValidationFailed", e.to_string()))?;
    Ok((rendered, files))
}

/// The §2.2 "rendered status".
fn rendered_status(r: &Rendered, yaml: &str) -> Value {
    json!({
        "clusterName": r.cluster_name,
        "templateHash": encode::template_hash(yaml),
        "controlPlaneRef": r.control_plane_ref,
        "workersRefs": r.workers_refs,
        "machineRefs": r.machine_refs,
    })
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

fn condition<H: Host>(host: &H, type_: &str, ok: bool, reason: &str, message: &str) {
    host.set_condition(Condition::new(type_, ok, reason, message));
}
