//! How the controllers read and write: through the same storage path as API requests (defaults, validation,
//! managed fields, watches), as the system user with the real components' field managers. A conflict is left to
//! the next pass; anything else is logged as a warning, since it repeats every pass until someone fixes the object.

use std::sync::Arc;

use serde_json::Value;

use super::objects::{controller_uid, labels, name, namespace, selector_matches, uid};
use crate::cluster::{Cluster, DeleteOptions, WriteCtx};
use crate::error::ApiError;
use crate::resources::ResourceType;

/// kube-controller-manager's field manager.
pub(super) const CONTROLLER_MANAGER: &str = "kube-controller-manager";
/// The kubelet's field manager.
pub(super) const KUBELET: &str = "kubelet";
/// kube-scheduler's field manager.
pub(super) const SCHEDULER: &str = "kube-scheduler";
/// At most this many Pods a controller creates for one object in one pass (the real controllers' burst is 500).
pub(super) const BURST: i64 = 500;

/// The served type for a built-in resource.
pub(super) fn resource(
    cluster: &Cluster,
    group: &str,
    version: &str,
    plural: &str,
) -> Option<Arc<ResourceType>> {
    cluster.registry().get(group, version, plural)
}

pub(super) fn list(cluster: &Cluster, rt: &ResourceType, ns: Option<&str>) -> Vec<Arc<Value>> {
    cluster.store().list(&rt.storage_key(), ns)
}

fn ctx(manager: &str) -> WriteCtx {
    WriteCtx::system(manager)
}

/// Logs a refused write: conflicts (someone wrote first) quietly, anything else loudly.
fn refused(action: &str, kind: &str, name: &str, e: &ApiError) {
    if e.code == 409 {
        tracing::debug!(%kind, %name, error = %e, "{action} deferred to the next pass");
    } else {
        tracing::warn!(%kind, %name, error = %e, "the workload controllers' {action} was refused");
    }
}

/// The Pods `owner` controls and selects, oldest first.
pub(super) fn owned_pods(cluster: &Cluster, owner: &Value) -> Vec<Arc<Value>> {
    let Some(rt) = resource(cluster, "", "v1", "pods") else {
        return Vec::new();
    };
    let owner_uid = uid(owner);
    // A Pod relabelled out of its owner's selector is no longer counted (the real controllers release it).
    let selector = &owner["spec"]["selector"];
    let mut pods: Vec<Arc<Value>> = list(cluster, &rt, Some(namespace(owner)))
        .into_iter()
        .filter(|p| controller_uid(p) == Some(owner_uid))
        .filter(|p| selector.is_null() || selector_matches(selector, &labels(p)))
        .collect();
    pods.sort_by(|a, b| {
        let t = |p: &Value| {
            p["metadata"]["creationTimestamp"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        t(a).cmp(&t(b)).then_with(|| name(a).cmp(name(b)))
    });
    pods
}

/// Writes `status` through the status subresource when it differs from the stored one. A conflict (someone
/// wrote meanwhile) is left to the next pass.
pub(super) async fn write_status(
    cluster: &Cluster,
    rt: &ResourceType,
    obj: &Value,
    status: Value,
    manager: &str,
) -> bool {
    if obj["status"] == status {
        return false;
    }
    let mut next = obj.clone();
    next["status"] = status;
    let sub = if rt.status_subresource { "status" } else { "" };
    match cluster
        .update(rt, namespace(obj), name(obj), sub, next, &ctx(manager))
        .await
    {
        Ok(_) => true,
        Err(e) => {
            refused("status write", &rt.kind, name(obj), &e);
            false
        }
    }
}

/// Replaces the object (spec or metadata changes), conditioned on its resourceVersion.
pub(super) async fn write_object(
    cluster: &Cluster,
    rt: &ResourceType,
    next: Value,
    manager: &str,
) -> bool {
    let (ns, n) = (namespace(&next).to_string(), name(&next).to_string());
    match cluster.update(rt, &ns, &n, "", next, &ctx(manager)).await {
        Ok(_) => true,
        Err(e) => {
            refused("write", &rt.kind, &n, &e);
            false
        }
    }
}

/// Creates an object, returning the refusal to callers that act on it (an AlreadyExists name collision).
pub(super) async fn try_create(
    cluster: &Cluster,
    rt: &ResourceType,
    ns: &str,
    obj: Value,
    manager: &str,
) -> Result<(), ApiError> {
    cluster.create(rt, ns, obj, &ctx(manager)).await.map(|_| ())
}

pub(super) async fn create(
    cluster: &Cluster,
    rt: &ResourceType,
    ns: &str,
    obj: Value,
    manager: &str,
) -> bool {
    let wanted = name(&obj).to_string();
    match try_create(cluster, rt, ns, obj, manager).await {
        Ok(()) => true,
        Err(e) => {
            refused("create", &rt.kind, &wanted, &e);
            false
        }
    }
}

/// Deletes the object it was given (a uid precondition: never a namesake created since).
pub(super) async fn delete(
    cluster: &Cluster,
    rt: &ResourceType,
    obj: &Value,
    manager: &str,
) -> bool {
    let opts = DeleteOptions {
        propagation: Some("Background".into()),
        precondition_uid: Some(uid(obj).to_string()),
        ..Default::default()
    };
    match cluster
        .delete(rt, namespace(obj), name(obj), &opts, &ctx(manager))
        .await
    {
        Ok(_) => true,
        Err(e) if e.code == 404 => false,
        Err(e) => {
            refused("delete", &rt.kind, name(obj), &e);
            false
        }
    }
}
