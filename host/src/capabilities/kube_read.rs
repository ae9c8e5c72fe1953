//! `kube-read`: gets and lists through a [`KubeReader`] the caller supplies (the controllers' watch caches),
//! scoped to the reconciled object's namespace unless the plugin's grants name more.

use std::time::Duration;

use serde_json::Value;
use wasmtime::component::Resource;

use super::budget::{self, within};
use super::{
    CallContext, CallScope, Capability, FieldSelector, GetRequest, HostError, HostFailure,
    ListRequest, is_secret,
};
use crate::contract::bindings::omni::operator::kube_read as wit;

impl CallScope {
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
    ) -> Result<(Option<String>, Duration), HostFailure> {
        if !self.grants.allows(Capability::KubeRead) {
            let reason = "the plugin is not granted \"kube-read\"";
            return Err(self.denied(Capability::KubeRead, what, reason).into());
        }
        let own = self.table.get(ctx)?.namespace().map(str::to_owned);
        let budget = self.budget(ctx, budget::READ)?;
        let reader = self.services.kube.clone();
        let resolving = format!("{what}: resolving the kind");
        let scope = within(&resolving, budget, reader.kind_scope(api_version, kind)).await?;
        if is_secret(&scope.group, &scope.kind) {
            let reason = "Secrets are never readable through kube-read; the `secrets` capability reaches the \
                          Secrets the object names";
            return Err(self.denied(Capability::KubeRead, what, reason).into());
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
            let reason = format!("the plugin is not granted `{grant}:{group}/{}`", scope.kind);
            return Err(self.denied(Capability::KubeRead, what, &reason).into());
        }
        if !scope.namespaced {
            if requested.as_deref().is_some_and(|ns| !ns.is_empty()) {
                return Err(HostError::Invalid(format!(
                    "{what}: {} is cluster-scoped; ask without a namespace",
                    scope.kind
                ))
                .into());
            }
            return Ok((None, budget));
        }
        // An empty namespace is the object's own, as for Secrets (never "every namespace").
        let target = requested
            .filter(|ns| !ns.is_empty())
            .or_else(|| own.clone());
        if !self.grants.may_read(own.as_deref(), target.as_deref()) {
            let target = target.map_or_else(
                || "all namespaces".to_owned(),
                |ns| format!("namespace {ns:?}"),
            );
            let own = own.map_or_else(
                || "a cluster-scoped object".to_owned(),
                |ns| format!("namespace {ns:?}"),
            );
            let reason = format!(
                "reads in {target} are not granted to a plugin reconciling an object in {own} (grant \
                 `namespace:NS`)"
            );
            return Err(self.denied(Capability::KubeRead, what, &reason).into());
        }
        Ok((target, budget))
    }
}

super::capability_view!(
    /// The `kube-read` capability's view of a call.
    KubeReadCap,
    wit
);

impl wit::Host for KubeReadCap<'_> {
    async fn get(
        &mut self,
        ctx: Resource<CallContext>,
        obj: wit::ObjectRef,
    ) -> Result<Option<String>, HostFailure> {
        let what = format!("kube-read get {} {:?}", obj.kind, obj.name);
        let (namespace, budget) = self
            .read_scope(&ctx, &obj.api_version, &obj.kind, obj.namespace, &what)
            .await?;
        let request = GetRequest {
            api_version: obj.api_version,
            kind: obj.kind,
            namespace,
            name: obj.name,
        };
        let reader = self.services.kube.clone();
        let found = within(&what, budget, reader.get(request)).await?;
        Ok(found.map(|object| object.to_string()))
    }

    async fn list(
        &mut self,
        ctx: Resource<CallContext>,
        query: wit::ListQuery,
    ) -> Result<Vec<String>, HostFailure> {
        let what = format!("kube-read list {}", query.kind);
        let (namespace, budget) = self
            .read_scope(
                &ctx,
                &query.api_version,
                &query.kind,
                query.namespace.clone(),
                &what,
            )
            .await?;
        // Parsed here, once, so every reader (watch cache or API server) gets the same verdict on a bad selector.
        let field_selector = match query.field_selector.as_deref().map(FieldSelector::parse) {
            None => None,
            Some(Ok(selector)) if selector.is_empty() => None,
            Some(Ok(selector)) => Some(selector),
            Some(Err(e)) => return Err(HostError::Invalid(format!("{what}: {e}")).into()),
        };
        let request = ListRequest {
            api_version: query.api_version,
            kind: query.kind,
            namespace,
            label_selector: query.label_selector,
            field_selector,
        };
        let reader = self.services.kube.clone();
        let items = within(&what, budget, reader.list(request)).await?;
        Ok(items.iter().map(Value::to_string).collect())
    }
}
