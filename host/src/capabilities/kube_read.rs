//! `kube-read`: gets and lists through a [`KubeReader`] the caller supplies (the controllers' watch caches),
//! scoped to the reconciled object's namespace unless the plugin's grants name more.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::Value;
use wasmtime::component::Resource;

use super::grants::is_secret;
use super::{CallContext, Capability, FieldSelector, HostError};
use crate::runtime::HostState;
use crate::runtime::bindings::omni::operator::kube_read as wit;
use crate::runtime::bindings::omni::operator::types::HostError as WitHostError;

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

/// The longest one read may take, even when the call has more time left.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

impl HostState {
    /// Checks a read against the grants: the kind (as discovery resolved it; never a Secret, cluster-scoped
    /// kinds only by their own grant) and the namespace. Returns the namespace to read in (`None`: a
    /// cluster-scoped object, or every namespace) and the time the read may take.
    async fn read_scope(
        &mut self,
        ctx: &Resource<CallContext>,
        api_version: &str,
        kind: &str,
        requested: Option<String>,
        what: &str,
    ) -> wasmtime::Result<Result<(Option<String>, Duration), HostError>> {
        let call = self.table.get(ctx)?;
        if !self.grants.allows(Capability::KubeRead) {
            return Ok(Err(self.denied(
                Capability::KubeRead,
                what,
                "the plugin is not granted \"kube-read\"",
            )));
        }
        let own = call.namespace().map(str::to_owned);
        let budget = io_budget(call);
        let reader = self.services.kube.clone();
        let scope = match tokio::time::timeout(budget, reader.kind_scope(api_version, kind)).await {
            Err(_) => {
                return Ok(Err(HostError::Timeout(format!(
                    "{what}: resolving the kind did not answer within {} ms",
                    budget.as_millis()
                ))));
            }
            Ok(Err(e)) => return Ok(Err(e)),
            Ok(Ok(scope)) => scope,
        };
        if is_secret(&scope.group, &scope.kind) {
            return Ok(Err(self.denied(
                Capability::KubeRead,
                what,
                "Secrets are never readable through kube-read; the `secrets` capability reaches the Secrets the object names",
            )));
        }
        if !self
            .grants
            .may_read_kind(&scope.group, &scope.kind, scope.namespaced)
        {
            let grant = if scope.namespaced {
                "kube-read"
            } else {
                "kube-read-cluster"
            };
            let group = if scope.group.is_empty() {
                "core"
            } else {
                &scope.group
            };
            return Ok(Err(self.denied(
                Capability::KubeRead,
                what,
                &format!("the plugin is not granted `{grant}:{group}/{}`", scope.kind),
            )));
        }
        if !scope.namespaced {
            if requested.as_deref().is_some_and(|ns| !ns.is_empty()) {
                return Ok(Err(HostError::Invalid(format!(
                    "{what}: {} is cluster-scoped; ask without a namespace",
                    scope.kind
                ))));
            }
            return Ok(Ok((None, budget)));
        }
        let target = requested.or_else(|| own.clone());
        if !self.grants.may_read(own.as_deref(), target.as_deref()) {
            let target = target.map_or_else(
                || "all namespaces".to_owned(),
                |ns| format!("namespace {ns:?}"),
            );
            let own = own.map_or_else(
                || "a cluster-scoped object".to_owned(),
                |ns| format!("namespace {ns:?}"),
            );
            return Ok(Err(self.denied(
                Capability::KubeRead,
                what,
                &format!("reads in {target} are not granted to a plugin reconciling an object in {own} (grant `namespace:NS`)"),
            )));
        }
        Ok(Ok((target, budget)))
    }
}

/// How long one host read on behalf of `call` may take: at most nine tenths of what the call has left, so the
/// plugin still has time to handle a `timeout` answer before the call's own deadline, and never more than
/// [`READ_TIMEOUT`]. Shared by every capability that reads (`kube-read`, `files`).
pub(super) fn io_budget(call: &CallContext) -> Duration {
    call.remaining().mul_f64(0.9).min(READ_TIMEOUT)
}

fn timeout_error(what: &str, budget: Duration) -> WitHostError {
    HostError::Timeout(format!(
        "{what} did not answer within {} ms",
        budget.as_millis()
    ))
    .into()
}

impl wit::Host for HostState {
    async fn get(
        &mut self,
        ctx: Resource<CallContext>,
        obj: wit::ObjectRef,
    ) -> wasmtime::Result<Result<Option<String>, WitHostError>> {
        let what = format!("kube-read get {} {:?}", obj.kind, obj.name);
        let (namespace, budget) = match self
            .read_scope(&ctx, &obj.api_version, &obj.kind, obj.namespace, &what)
            .await?
        {
            Ok(scope) => scope,
            Err(denied) => return Ok(Err(denied.into())),
        };
        let request = GetRequest {
            api_version: obj.api_version,
            kind: obj.kind,
            namespace,
            name: obj.name,
        };
        let reader = self.services.kube.clone();
        Ok(
            match tokio::time::timeout(budget, reader.get(request)).await {
                Err(_) => Err(timeout_error(&what, budget)),
                Ok(Ok(found)) => Ok(found.map(|object| object.to_string())),
                Ok(Err(e)) => Err(e.into()),
            },
        )
    }

    async fn list(
        &mut self,
        ctx: Resource<CallContext>,
        query: wit::ListQuery,
    ) -> wasmtime::Result<Result<Vec<String>, WitHostError>> {
        let what = format!("kube-read list {}", query.kind);
        let (namespace, budget) = match self
            .read_scope(
                &ctx,
                &query.api_version,
                &query.kind,
                query.namespace.clone(),
                &what,
            )
            .await?
        {
            Ok(scope) => scope,
            Err(denied) => return Ok(Err(denied.into())),
        };
        // Parsed here, once, so every reader (watch cache or API server) gets the same verdict on a bad selector.
        let field_selector = match query.field_selector.as_deref().map(FieldSelector::parse) {
            None => None,
            Some(Ok(selector)) if selector.is_empty() => None,
            Some(Ok(selector)) => Some(selector),
            Some(Err(e)) => {
                return Ok(Err(HostError::Invalid(format!("{what}: {e}")).into()));
            }
        };
        let request = ListRequest {
            api_version: query.api_version,
            kind: query.kind,
            namespace,
            label_selector: query.label_selector,
            field_selector,
        };
        let reader = self.services.kube.clone();
        Ok(
            match tokio::time::timeout(budget, reader.list(request)).await {
                Err(_) => Err(timeout_error(&what, budget)),
                Ok(Ok(items)) => Ok(items.iter().map(Value::to_string).collect()),
                Ok(Err(e)) => Err(e.into()),
            },
        )
    }
}
