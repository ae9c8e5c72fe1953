//! One reconcile of an export that is not being deleted, in Go's order: validate, find the
//! cluster and its connection, clean up a renamed-away target, keep a current kubeconfig or export a new one.

use omni_api::conditions::{reasons, types};
use omni_api::{API_VERSION, GROUP, OmniClusterSpec, OmniConnectionSpec, OmniKind};
use omni_plugin_sdk::time::{failure_retry_ms, parse_rfc3339};
use omni_plugin_sdk::{EventType, Host, HostError, ObjectRef, ReconcileError, Value};

use crate::export::{self, Inputs};
use crate::report::{Exported, Report};
use crate::reuse::{self, Existing, Expected};
use crate::rotation::{self, Schedule};
use crate::spec::{ExportSpec, Identity};
use crate::target::{self, Target};
use crate::{RETRY_MS, spec_hash, validation};

const CLUSTER_ADMIN_EVENT: &str =
    "system:masters exports a cluster-admin kubeconfig into the management cluster";

pub fn reconcile<H: Host>(host: &H) -> Result<(), ReconcileError> {
    let object = host.object();
    let me = Identity::of(&object);
    let spec = ExportSpec::from_object(&object);
    let mut report = Report::new(host, &spec);

    let lifetimes = match validation::check(&spec) {
        Ok(l) => l,
        Err(message) => {
            report.invalid(&message);
            return Ok(());
        }
    };

    // A read error other than absence is the host's trouble, retried with backoff (Go returned it).
    let Some(cluster) = host.kube_get(&ObjectRef::local(
        API_VERSION,
        OmniClusterSpec::KIND,
        &spec.cluster_ref,
    ))?
    else {
        report.missing_cluster(RETRY_MS);
        return Ok(());
    };
    let cluster_name = omni_cluster_name(&cluster);
    report.cluster(&cluster_name);

    let connection_name = cluster["spec"]["connectionRef"]["name"]
        .as_str()
        .unwrap_or_default();
    let endpoint = match connection_endpoint(host, connection_name) {
        Ok(e) => e,
        Err(message) => {
            report.failed(reasons::MISSING_CONNECTION, &message, RETRY_MS);
            return Ok(());
        }
    };
    report.connection(connection_name, &endpoint);

    let owner = target::owner(&me)?;
    let now = now(host)?;
    let target = Target::of_spec(&spec, &me);
    let hash = spec_hash(
        &cluster_name,
        &target.key,
        spec.context_namespace(),
        &spec.user,
        &spec.groups,
        lifetimes.ttl_ns,
    );
    let recorded = target::recorded(&object, &me);

    // The Secret the status still records is deleted (when owned) before the new target is written; with
    // Orphan it is simply forgotten once the new target is recorded.
    if spec.deletes_target()
        && let Some(previous) = target::previous(recorded.as_ref(), &target)
        && let Err(e) = host.secret_delete_owned(Some(&previous.namespace), &previous.name, &owner)
    {
        let message = format!(
            "delete previous target Secret {:?}: {}",
            previous.display(),
            e.message()
        );
        report.failed(reasons::EXPORT_FAILED, &message, RETRY_MS);
        return Ok(());
    }

    // The spec's target, never the recorded one, is checked and written. A Secret that cannot be read is
    // the host's trouble, retried with backoff (Go returned the error too).
    let expected = Expected {
        spec_hash: &hash,
        now,
        renew_before_ns: lifetimes.renew_before_ns,
    };
    match reuse::inspect(host, &target, &owner, &expected)? {
        Existing::NotOwned => {
            report.failed(
                reasons::EXPORT_FAILED,
                &target::not_managed_message(&target, &owner),
                RETRY_MS,
            );
            return Ok(());
        }
        Existing::Current(current) => {
            report.exported(&Exported::kept(&target, &current), now);
            return Ok(());
        }
        Existing::Absent | Existing::Stale(_) => {}
    }

    let schedule = Schedule::starting(now, lifetimes.ttl_ns, lifetimes.renew_before_ns);
    let request = export::request(&Inputs {
        me: &me,
        spec: &spec,
        cluster_name: &cluster_name,
        target: &target,
        remove_key: target::renamed_key(recorded.as_ref(), &target),
        owner: &owner,
        spec_hash: &hash,
        ttl_ns: lifetimes.ttl_ns,
        schedule: &schedule,
    });
    match host.omni_export_kubeconfig(connection_name, &request) {
        Ok(digest) => {
            if spec.grants_cluster_admin() {
                host.event(
                    EventType::Warning,
                    "ClusterAdminExported",
                    CLUSTER_ADMIN_EVENT,
                );
            }
            report.exported(&Exported::written(&target, &digest, &schedule), now);
        }
        // The target appeared without our label between the look and the write: the host left it alone.
        Err(HostError::Conflict(_)) => report.failed(
            reasons::EXPORT_FAILED,
            &target::not_managed_message(&target, &owner),
            RETRY_MS,
        ),
        // Omni's failures are often passing (a cluster not created there yet has no UUID): retried within seconds
        // at first, then once a minute, each retry committing the condition.
        Err(e) => report.failed(
            reasons::EXPORT_FAILED,
            &export::failure_message(&e),
            failure_retry_ms(&object, types::READY, &host.now()),
        ),
    }
    Ok(())
}

/// `clusterName`: the OmniCluster's `spec.clusterName`, else its `metadata.name`.
fn omni_cluster_name(cluster: &Value) -> String {
    match cluster["spec"]["clusterName"].as_str() {
        Some(name) if !name.is_empty() => name.to_string(),
        _ => cluster["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    }
}

/// The connection's `spec.endpoint`, or the `MissingConnection` message. Only the two fields are
/// read, so a connection the plugin's schema version would not fully decode still serves.
fn connection_endpoint<H: Host>(host: &H, name: &str) -> Result<String, String> {
    match host.kube_get(&ObjectRef::local(
        API_VERSION,
        OmniConnectionSpec::KIND,
        name,
    )) {
        Ok(Some(connection)) => Ok(connection["spec"]["endpoint"]
            .as_str()
            .unwrap_or_default()
            .to_string()),
        // The Go client's NotFound text (`<plural>.<group> "<name>" not found`), as the OmniCluster plugin reports
        // it too.
        Ok(None) => Err(format!(
            "failed to get OmniConnection {name:?}: {}.{GROUP} {name:?} not found",
            OmniConnectionSpec::PLURAL
        )),
        Err(e) => Err(format!(
            "failed to get OmniConnection {name:?}: {}",
            e.message()
        )),
    }
}

fn now<H: Host>(host: &H) -> Result<rotation::Instant, ReconcileError> {
    let text = host.now();
    parse_rfc3339(&text)
        .map(rotation::from_seconds)
        .ok_or_else(|| {
            ReconcileError::Transient(format!(
                "the host clock answered {text:?}, which is not an RFC 3339 time"
            ))
        })
}
