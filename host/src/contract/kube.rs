//! The Kubernetes reads the host serves plugins from, as a trait the caller supplies (the controllers' watch
//! caches; fakes in tests). The `kube-read` capability checks grants and then asks a [`KubeReader`].

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
