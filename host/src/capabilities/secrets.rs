//! `secrets`: management-cluster Secrets named by the reconciled object, in its namespace or one its grants
//! name. Reads are uncached GETs (a plugin deciding whether to overwrite or rotate must not act on a stale copy);
//! values leave the host only under `secrets-read-values`; deletion is owner-checked and needs `secrets-write`.

use std::collections::BTreeMap;

use wasmtime::component::Resource;

use super::budget::within;
use super::reach::Reach;
use super::{CallContext, CallScope, Capability, HostError, HostFailure};
use crate::contract::bindings::omni::operator::secrets as wit;
use crate::contract::bindings::omni::operator::types::{OwnerLabel, Removal, SecretKeyRef};
use crate::secrets::{self as store, quoted};

impl CallScope {
    /// Checks the owner label a write or delete is conditioned on: it must mark the reconciled object itself
    /// (its value is the object's UID), so a plugin can never claim, overwrite or delete Secrets that belong to
    /// another object by naming that object's label.
    pub(super) fn own_label(
        &mut self,
        ctx: &Resource<CallContext>,
        capability: Capability,
        label: OwnerLabel,
        what: &str,
    ) -> Result<store::OwnerLabel, HostFailure> {
        let call = self.table.get(ctx)?;
        let uid = call.object_value()["metadata"]["uid"]
            .as_str()
            .unwrap_or_default();
        if uid.is_empty() || label.value != uid || label.key.is_empty() {
            let reason = format!(
                "the owner label {:?} does not carry the reconciled object's UID; the host writes and deletes only \
                 what marks the object it reconciles",
                label.key
            );
            return Err(self.denied(capability, what, &reason).into());
        }
        Ok(owner(label))
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

/// Annotations that hold a copy of the Secret's content: `kubectl apply` keeps the whole applied object,
/// values included, in `last-applied-configuration`. They never leave the host.
const VALUE_ANNOTATIONS: [&str; 1] = ["kubectl.kubernetes.io/last-applied-configuration"];

/// A Secret's annotations without those that carry values.
fn safe_annotations(annotations: Option<BTreeMap<String, String>>) -> String {
    let mut annotations = annotations.unwrap_or_default();
    annotations.retain(|k, _| !VALUE_ANNOTATIONS.contains(&k.as_str()));
    labels_json(Some(annotations))
}

impl CallScope {
    /// One key's value of a Secret the object names, after the checks for `needed`; stays in the host unless the
    /// caller hands it over.
    async fn key_value(
        &mut self,
        ctx: &Resource<CallContext>,
        needed: &[Capability],
        key: SecretKeyRef,
        what: &str,
    ) -> Result<Option<Vec<u8>>, HostFailure> {
        let scope = self.secret_scope(ctx, needed, Reach::Spec, key.namespace, &key.name, what)?;
        let read = store::get(&scope.management, "", &scope.namespace, &key.name);
        let found = within(what, scope.budget, read).await?;
        Ok(found
            .and_then(|s| s.data)
            .and_then(|mut d| d.remove(&key.key))
            .map(|v| v.0))
    }
}

super::capability_view!(
    /// The `secrets` capability's view of a call.
    SecretsCap,
    wit
);

impl wit::Host for SecretsCap<'_> {
    async fn info(
        &mut self,
        ctx: Resource<CallContext>,
        namespace: Option<String>,
        name: String,
    ) -> Result<Option<wit::SecretInfo>, HostFailure> {
        let what = format!("secrets.info {name:?}");
        let needed = [Capability::Secrets];
        let scope = self.secret_scope(&ctx, &needed, Reach::Spec, namespace, &name, &what)?;
        let read = store::get(&scope.management, "", &scope.namespace, &name);
        let found = within(&what, scope.budget, read).await?;
        Ok(found.map(|s| wit::SecretInfo {
            secret_type: s.type_.unwrap_or_else(|| "Opaque".into()),
            keys: s.data.map(|d| d.into_keys().collect()).unwrap_or_default(),
            resource_version: s.metadata.resource_version.unwrap_or_default(),
            labels: labels_json(s.metadata.labels),
            annotations: safe_annotations(s.metadata.annotations),
        }))
    }

    async fn digest(
        &mut self,
        ctx: Resource<CallContext>,
        key: SecretKeyRef,
    ) -> Result<Option<String>, HostFailure> {
        let what = format!("secrets.digest {:?} key {:?}", key.name, key.key);
        let value = self
            .key_value(&ctx, &[Capability::Secrets], key, &what)
            .await?;
        Ok(value.map(|v| store::sha256_hex(&v)))
    }

    async fn read(
        &mut self,
        ctx: Resource<CallContext>,
        key: SecretKeyRef,
    ) -> Result<Option<Vec<u8>>, HostFailure> {
        let what = format!("secrets.read {:?} key {:?}", key.name, key.key);
        let needed = [Capability::Secrets, Capability::SecretsReadValues];
        self.key_value(&ctx, &needed, key, &what).await
    }

    async fn delete_owned(
        &mut self,
        ctx: Resource<CallContext>,
        namespace: Option<String>,
        name: String,
        owner_label: OwnerLabel,
    ) -> Result<Removal, HostFailure> {
        let what = format!("secrets.delete-owned {name:?}");
        let needed = [Capability::Secrets, Capability::SecretsWrite];
        let scope = self.secret_scope(&ctx, &needed, Reach::Cleanup, namespace, &name, &what)?;
        let owner = self.own_label(&ctx, Capability::SecretsWrite, owner_label, &what)?;
        let target = quoted(&scope.namespace, &name);
        let op = store::delete_owned(&scope.management, "", &scope.namespace, &name, &owner);
        let result = removal(within(&what, scope.budget, op).await?);
        if result == Removal::NotOwned {
            tracing::info!(plugin = %self.plugin, secret = %target, "left a Secret alone: it lacks the owner label");
        }
        Ok(result)
    }
}
