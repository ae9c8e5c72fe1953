//! `secrets`: management-cluster Secrets named by the reconciled object, in its namespace or one its grants
//! name. Reads are uncached GETs (a plugin deciding whether to overwrite or rotate must not act on a stale copy);
//! values leave the host only under `secrets-read-values`; deletion is owner-checked and needs `secrets-write`.

use std::collections::BTreeMap;
use std::time::Duration;

use wasmtime::component::Resource;

use super::{CallContext, Capability, HostError};
use crate::runtime::HostState;
use crate::runtime::bindings::omni::operator::secrets as wit;
use crate::runtime::bindings::omni::operator::types::{
    HostError as WitHostError, OwnerLabel, Removal, SecretKeyRef,
};
use crate::secrets::{self as store, quoted};

type Answer<T> = wasmtime::Result<Result<T, WitHostError>>;

/// The longest one Secret operation may take (a copy is a few requests), even when the call has more time.
const SECRET_TIMEOUT: Duration = Duration::from_secs(20);

/// Where a Secret access goes: the namespace, the management-cluster client and the time it may take.
pub(super) struct SecretScope {
    pub namespace: String,
    pub management: kube::Client,
    pub budget: Duration,
}

impl HostState {
    /// Checks `needed` and the namespace (`None`: the object's own; another needs a grant naming it, as reads
    /// do) and resolves where the access goes.
    pub(super) fn secret_scope(
        &self,
        ctx: &Resource<CallContext>,
        needed: &[Capability],
        namespace: Option<String>,
        what: &str,
    ) -> wasmtime::Result<Result<SecretScope, HostError>> {
        let call = self.table.get(ctx)?;
        if let Some(missing) = needed.iter().find(|c| !self.grants.allows(**c)) {
            return Ok(Err(HostError::Denied(format!(
                "{what}: plugin {:?} is not granted {:?}",
                self.plugin,
                missing.name()
            ))));
        }
        let own = call.namespace();
        let Some(target) = namespace.or_else(|| own.map(str::to_owned)) else {
            return Ok(Err(HostError::Invalid(format!(
                "{what}: Secrets are namespaced; this object is cluster-scoped"
            ))));
        };
        if !self.grants.may_read(own, Some(&target)) {
            return Ok(Err(HostError::Denied(format!(
                "{what}: plugin {:?} reconciling an object in namespace {:?} may reach Secrets only there unless its grants name namespace {target:?}",
                self.plugin,
                own.unwrap_or_default()
            ))));
        }
        let Some(management) = self.services.management.clone() else {
            return Ok(Err(HostError::Unavailable(format!(
                "{what}: this host has no Kubernetes client for Secrets"
            ))));
        };
        let budget = call.remaining().mul_f64(0.9).min(SECRET_TIMEOUT);
        Ok(Ok(SecretScope {
            namespace: target,
            management,
            budget,
        }))
    }
}

/// Runs `op` within `budget`; running out is a `timeout` naming `what`.
pub(super) async fn bounded<T>(
    what: &str,
    budget: Duration,
    op: impl Future<Output = Result<T, HostError>>,
) -> Result<T, WitHostError> {
    match tokio::time::timeout(budget, op).await {
        Ok(result) => result.map_err(Into::into),
        Err(_) => Err(HostError::Timeout(format!(
            "{what} did not finish within {} ms",
            budget.as_millis()
        ))
        .into()),
    }
}

/// A JSON object of strings (labels, annotations) from the plugin.
pub(super) fn string_map(json: &str, field: &str) -> Result<BTreeMap<String, String>, HostError> {
    if json.trim().is_empty() {
        return Ok(BTreeMap::new());
    }
    serde_json::from_str(json)
        .map_err(|e| HostError::Invalid(format!("{field} must be a JSON object of strings: {e}")))
}

pub(super) fn owner(o: OwnerLabel) -> store::OwnerLabel {
    store::OwnerLabel {
        key: o.key,
        value: o.value,
    }
}

pub(super) fn removal(r: store::Removal) -> Removal {
    match r {
        store::Removal::Deleted => Removal::Deleted,
        store::Removal::Absent => Removal::Absent,
        store::Removal::NotOwned => Removal::NotOwned,
    }
}

fn labels_json(m: Option<BTreeMap<String, String>>) -> String {
    serde_json::to_string(&m.unwrap_or_default()).unwrap_or_else(|_| "{}".into())
}

impl wit::Host for HostState {
    async fn info(
        &mut self,
        ctx: Resource<CallContext>,
        namespace: Option<String>,
        name: String,
    ) -> Answer<Option<wit::SecretInfo>> {
        let what = format!("secrets.info {name:?}");
        let scope = match self.secret_scope(&ctx, &[Capability::Secrets], namespace, &what)? {
            Ok(s) => s,
            Err(e) => return Ok(Err(e.into())),
        };
        let read = store::get(&scope.management, "", &scope.namespace, &name);
        Ok(bounded(&what, scope.budget, read).await.map(|found| {
            found.map(|s| wit::SecretInfo {
                secret_type: s.type_.unwrap_or_else(|| "Opaque".into()),
                keys: s.data.map(|d| d.into_keys().collect()).unwrap_or_default(),
                resource_version: s.metadata.resource_version.unwrap_or_default(),
                labels: labels_json(s.metadata.labels),
                annotations: labels_json(s.metadata.annotations),
            })
        }))
    }

    async fn digest(
        &mut self,
        ctx: Resource<CallContext>,
        key: SecretKeyRef,
    ) -> Answer<Option<String>> {
        let what = format!("secrets.digest {:?} key {:?}", key.name, key.key);
        let scope = match self.secret_scope(&ctx, &[Capability::Secrets], key.namespace, &what)? {
            Ok(s) => s,
            Err(e) => return Ok(Err(e.into())),
        };
        let read = store::get(&scope.management, "", &scope.namespace, &key.name);
        Ok(bounded(&what, scope.budget, read).await.map(|found| {
            let value = found
                .and_then(|s| s.data)
                .and_then(|mut d| d.remove(&key.key))?;
            Some(store::sha256_hex(&value.0))
        }))
    }

    async fn read(
        &mut self,
        ctx: Resource<CallContext>,
        key: SecretKeyRef,
    ) -> Answer<Option<Vec<u8>>> {
        let what = format!("secrets.read {:?} key {:?}", key.name, key.key);
        let scope = match self.secret_scope(
            &ctx,
            &[Capability::Secrets, Capability::SecretsReadValues],
            key.namespace,
            &what,
        )? {
            Ok(s) => s,
            Err(e) => return Ok(Err(e.into())),
        };
        let read = store::get(&scope.management, "", &scope.namespace, &key.name);
        Ok(bounded(&what, scope.budget, read).await.map(|found| {
            found
                .and_then(|s| s.data)
                .and_then(|mut d| d.remove(&key.key))
                .map(|v| v.0)
        }))
    }

    async fn delete_owned(
        &mut self,
        ctx: Resource<CallContext>,
        namespace: Option<String>,
        name: String,
        owner_label: OwnerLabel,
    ) -> Answer<Removal> {
        let what = format!("secrets.delete-owned {name:?}");
        let scope = match self.secret_scope(
            &ctx,
            &[Capability::Secrets, Capability::SecretsWrite],
            namespace,
            &what,
        )? {
            Ok(s) => s,
            Err(e) => return Ok(Err(e.into())),
        };
        let owner = owner(owner_label);
        let target = quoted(&scope.namespace, &name);
        let op = store::delete_owned(&scope.management, "", &scope.namespace, &name, &owner);
        let result = bounded(&what, scope.budget, op).await.map(removal);
        if let Ok(Removal::NotOwned) = &result {
            tracing::info!(plugin = %self.plugin, secret = %target, "left a Secret alone: it lacks the owner label");
        }
        Ok(result)
    }
}
