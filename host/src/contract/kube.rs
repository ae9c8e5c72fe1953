//! The Kubernetes reads and writes the host serves plugins from, as traits the caller supplies (the controllers'
//! watch caches and API client; fakes in tests). The `kube-read` capability checks grants and then asks a
//! [`KubeReader`]; `kube-write` checks grants, budgets and the written object and then asks a [`KubeWriter`].

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use super::{FieldSelector, HostError};

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A read of one object. `namespace` is already resolved and allowed; `None` means a cluster-scoped object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetRequest {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

/// A list. `namespace` is already resolved and allowed; `None` means every namespace (or a cluster-scoped kind).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListRequest {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub label_selector: Option<String>,
    /// Already parsed (a malformed one never reaches a reader) and never empty. Readers return only the objects
    /// it selects, so a plugin listing one cluster's children does not pull every object of the kind.
    pub field_selector: Option<FieldSelector>,
}

/// A kind as the API server serves it: the canonical group and kind discovery resolved (never the plugin's
/// spelling, so a grant check cannot be dodged by writing a kind differently) and its scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindScope {
    pub group: String,
    pub kind: String,
    pub namespaced: bool,
}

/// The Kubernetes reads behind `kube-read`. Implementations answer from caches where they can; the host
/// bounds each call by the plugin's remaining time.
pub trait KubeReader: Send + Sync {
    /// The served kind for an `apiVersion` and kind; `not-found` when no such kind is served.
    fn kind_scope<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
    ) -> BoxFuture<'a, Result<KindScope, HostError>>;
    /// `Ok(None)` when the object does not exist.
    fn get(&self, request: GetRequest) -> BoxFuture<'_, Result<Option<Value>, HostError>>;
    fn list(&self, request: ListRequest) -> BoxFuture<'_, Result<Vec<Value>, HostError>>;
}

/// No Kubernetes at all: every read is `unavailable`.
pub struct NoKubeReader;

impl KubeReader for NoKubeReader {
    fn kind_scope<'a>(
        &'a self,
        _api_version: &'a str,
        _kind: &'a str,
    ) -> BoxFuture<'a, Result<KindScope, HostError>> {
        Box::pin(async {
            Err(HostError::Unavailable(
                "this host has no Kubernetes reader configured".into(),
            ))
        })
    }

    fn get(&self, _request: GetRequest) -> BoxFuture<'_, Result<Option<Value>, HostError>> {
        Box::pin(async {
            Err(HostError::Unavailable(
                "this host has no Kubernetes reader configured".into(),
            ))
        })
    }

    fn list(&self, _request: ListRequest) -> BoxFuture<'_, Result<Vec<Value>, HostError>> {
        Box::pin(async {
            Err(HostError::Unavailable(
                "this host has no Kubernetes reader configured".into(),
            ))
        })
    }
}

/// How a write changes an object.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteOp {
    /// Server-side apply of the whole object; `force` takes fields from other managers.
    Apply { object: Value, force: bool },
    /// Creates the object; `conflict` when it exists.
    Create { object: Value },
    /// An RFC 7386 merge patch.
    MergePatch(Value),
    /// An RFC 6902 JSON patch.
    JsonPatch(Value),
}

/// One write, already checked against the plugin's grants: the kind is served and granted, the namespace
/// resolved and allowed (`None`: a cluster-scoped kind), owner references settled.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteRequest {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub op: WriteOp,
    /// The field manager the write is made under (names the plugin).
    pub field_manager: String,
    pub dry_run: bool,
}

/// What deleting does to the deleted object's dependents (Kubernetes' `propagationPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    Background,
    Foreground,
    Orphan,
}

/// One deletion, already checked against the plugin's grants.
#[derive(Debug, Clone, PartialEq)]
pub struct DeleteRequest {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub propagation: Propagation,
    pub dry_run: bool,
}

/// The Kubernetes writes behind `kube-write`, uncached and straight to the API server. An object the API server
/// refuses as invalid is [`HostError::Rejected`](super::HostError::Rejected), with the fields it names.
pub trait KubeWriter: Send + Sync {
    /// The object as stored (or, on a dry run, as it would be).
    fn write(&self, request: WriteRequest) -> BoxFuture<'_, Result<Value, HostError>>;
    /// `true` when a deletion was made or started, `false` when there was nothing to delete.
    fn delete(&self, request: DeleteRequest) -> BoxFuture<'_, Result<bool, HostError>>;
    /// The object as the API server holds it now (uncached), `None` when absent: what the host checks before a
    /// write whose allowance depends on the stored object (a Secret's type).
    fn get(&self, request: GetRequest) -> BoxFuture<'_, Result<Option<Value>, HostError>>;
}

/// No Kubernetes to write to: every write is `unavailable`.
pub struct NoKubeWriter;

const NO_WRITER: &str = "this host has no Kubernetes writer configured";

impl KubeWriter for NoKubeWriter {
    fn write(&self, _request: WriteRequest) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async { Err(HostError::Unavailable(NO_WRITER.into())) })
    }

    fn delete(&self, _request: DeleteRequest) -> BoxFuture<'_, Result<bool, HostError>> {
        Box::pin(async { Err(HostError::Unavailable(NO_WRITER.into())) })
    }

    fn get(&self, _request: GetRequest) -> BoxFuture<'_, Result<Option<Value>, HostError>> {
        Box::pin(async { Err(HostError::Unavailable(NO_WRITER.into())) })
    }
}

/// RFC 7386: `patch` merged into `target` (`null` removes a field; anything but an object replaces). What a
/// merge patch does server-side, for the places that answer one without a server (`plugin test`, test fakes).
pub fn merge_patch(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}
