//! `kube-read`: gets and lists through a [`KubeReader`] the caller supplies (the controllers' watch caches),
//! scoped to the reconciled object's namespace unless the plugin's grants name more.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use wasmtime::component::Resource;

use super::call::budget::{self, within};
use super::{
    CallContext, Capability, FieldSelector, GetRequest, HostError, HostFailure, KubeReader,
    ListRequest, NoKubeReader, is_secret,
};
use crate::contract::bindings::omni::operator::kube_read as wit;

/// What `kube-read` serves with: the reader behind every get and list (the controllers' watch caches).
#[derive(Clone)]
pub struct Services {
    pub(crate) reader: Arc<dyn KubeReader>,
}

impl Default for Services {
    /// No Kubernetes behind `kube-read`: every read answers `unavailable`.
    fn default() -> Self {
        Services {
            reader: Arc::new(NoKubeReader),
        }
    }
}

/// `kube-read` keeps nothing per call.
pub(crate) type State = ();

super::capability_view!(
    /// The `kube-read` capability's view of a call.
    KubeReadCap,
    wit,
    kube_read
);

impl KubeReadCap<'_> {
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
        if !self.core.grants.allows(Capability::KubeRead) {
            let reason = "the plugin is not granted \"kube-read\"";
            return Err(self.core.denied(Capability::KubeRead, what, reason).into());
        }
        let own = self.core.table.get(ctx)?.namespace().map(str::to_owned);
        let budget = self.core.budget(ctx, budget::READ)?;
        let reader = self.services.reader.clone();
        let resolving = format!("{what}: resolving the kind");
        let scope = within(&resolving, budget, reader.kind_scope(api_version, kind)).await?;
        if is_secret(&scope.group, &scope.kind) {
            let reason = "Secrets are never readable through kube-read; the `secrets` capability reaches the \
                          Secrets the object names";
            return Err(self.core.denied(Capability::KubeRead, what, reason).into());
        }
        if !self
            .core
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
            return Err(self.core.denied(Capability::KubeRead, what, &reason).into());
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
        if !self.core.grants.may_read(own.as_deref(), target.as_deref()) {
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
            return Err(self.core.denied(Capability::KubeRead, what, &reason).into());
        }
        Ok((target, budget))
    }
}

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
        let reader = self.services.reader.clone();
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
        let reader = self.services.reader.clone();
        let items = within(&what, budget, reader.list(request)).await?;
        Ok(items.iter().map(Value::to_string).collect())
    }
}

#[cfg(test)]
mod grant_checks {
    use serde_json::json;
    use wit::Host as _;

    use super::*;
    use crate::capabilities::call::testing::{FakeKinds, NS, TestCall};

    fn object(api_version: &str, kind: &str, namespace: Option<&str>) -> wit::ObjectRef {
        wit::ObjectRef {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: namespace.map(str::to_string),
            name: "x".into(),
        }
    }

    /// A `get` by a plugin holding `grants`.
    async fn get(
        grants: &[&str],
        obj: wit::ObjectRef,
    ) -> (TestCall, Result<Option<String>, HostFailure>) {
        let mut call = TestCall::new(grants, json!({}), &[]);
        let services = Services {
            reader: Arc::new(FakeKinds),
        };
        let ctx = call.ctx();
        let answer = KubeReadCap::over(&mut call.core, &mut (), &services)
            .get(ctx, obj)
            .await;
        (call, answer)
    }

    #[tokio::test]
    async fn a_read_needs_the_kube_read_grant() {
        let deployment = || object("apps/v1", "Deployment", None);
        let (call, answer) = get(&[], deployment()).await;
        call.assert_denied(
            answer,
            "kube-read",
            "kube-read get Deployment",
            "not granted \"kube-read\"",
        );
        let (call, answer) = get(&["kube-read", "kube-read:apps/Deployment"], deployment()).await;
        call.assert_allowed(&answer);
        assert_eq!(
            answer.ok(),
            Some(None),
            "the reader was asked and found nothing"
        );
    }

    #[tokio::test]
    async fn a_secret_is_never_read_through_kube_read_whatever_the_grant() {
        let (call, answer) = get(&["kube-read", "kube-read:*"], object("v1", "Secret", None)).await;
        call.assert_denied(
            answer,
            "kube-read",
            "Secret",
            "Secrets are never readable through kube-read",
        );
    }

    #[tokio::test]
    async fn each_kind_needs_a_grant_naming_it_and_cluster_scoped_kinds_their_own() {
        let (call, answer) = get(&["kube-read"], object("apps/v1", "Deployment", None)).await;
        call.assert_denied(
            answer,
            "kube-read",
            "Deployment",
            "`kube-read:apps/Deployment`",
        );
        let (call, answer) = get(
            &["kube-read", "kube-read:core/ConfigMap"],
            object("v1", "ConfigMap", None),
        )
        .await;
        call.assert_allowed(&answer);
        // A namespaced pattern never reaches a cluster-scoped kind.
        let (call, answer) = get(
            &["kube-read", "kube-read:*"],
            object("v1", "Namespace", None),
        )
        .await;
        call.assert_denied(
            answer,
            "kube-read",
            "Namespace",
            "`kube-read-cluster:core/Namespace`",
        );
        let grants = ["kube-read", "kube-read-cluster:core/Namespace"];
        let (call, answer) = get(&grants, object("v1", "Namespace", None)).await;
        call.assert_allowed(&answer);
        let (_, answer) = get(&grants, object("v1", "Namespace", Some(NS))).await;
        assert!(
            matches!(answer, Err(HostFailure::Host(HostError::Invalid(ref m))) if m.contains("cluster-scoped")),
            "{answer:?}"
        );
    }

    #[tokio::test]
    async fn another_namespace_needs_its_namespace_grant() {
        let grants = ["kube-read", "kube-read:apps/Deployment"];
        let (call, answer) = get(&grants, object("apps/v1", "Deployment", Some("other"))).await;
        call.assert_denied(
            answer,
            "kube-read",
            "Deployment",
            "reads in namespace \"other\" are not granted",
        );
        // The object's own namespace, asked by name or left empty, needs nothing more.
        for own in [Some(NS), Some(""), None] {
            let (call, answer) = get(&grants, object("apps/v1", "Deployment", own)).await;
            call.assert_allowed(&answer);
        }
        let wider = ["kube-read", "kube-read:apps/Deployment", "namespace:other"];
        let (call, answer) = get(&wider, object("apps/v1", "Deployment", Some("other"))).await;
        call.assert_allowed(&answer);
    }

    #[tokio::test]
    async fn a_list_is_checked_as_a_get_is() {
        let mut call = TestCall::new(&["kube-read", "kube-read:apps/Deployment"], json!({}), &[]);
        let services = Services {
            reader: Arc::new(FakeKinds),
        };
        let query = wit::ListQuery {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("other".into()),
            label_selector: None,
            field_selector: None,
        };
        let ctx = call.ctx();
        let answer = KubeReadCap::over(&mut call.core, &mut (), &services)
            .list(ctx, query)
            .await;
        call.assert_denied(
            answer,
            "kube-read",
            "kube-read list Deployment",
            "namespace \"other\"",
        );
    }
}
