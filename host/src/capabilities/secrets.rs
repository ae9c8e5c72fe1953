//! `secrets`: management-cluster Secrets named by the reconciled object, in its namespace or one its grants
//! name. Reads are uncached GETs (a plugin deciding whether to overwrite or rotate must not act on a stale copy);
//! values leave the host only under `secrets-read-values`; deletion is owner-checked and needs `secrets-write`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;
use wasmtime::component::Resource;

use super::budget::{self, within};
use super::{CallContext, CallScope, Capability, HostError, HostFailure, SecretField};
use crate::contract::bindings::omni::operator::secrets as wit;
use crate::contract::bindings::omni::operator::types::{OwnerLabel, Removal, SecretKeyRef};
use crate::contract::field_path;
use crate::secrets::{self as store, quoted};

/// What an access reveals of a Secret, which decides the fields of the object that may name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reach {
    /// Metadata, digests or values: only a Secret the object's spec names.
    Contents,
    /// An owner-checked write or delete, or a kubeconfig the host uses without handing anything over: a
    /// Secret the spec or the plugin's own status names.
    Owned,
}

/// Where a Secret access goes: the namespace, the management-cluster client and the time it may take.
pub(super) struct SecretScope {
    pub namespace: String,
    pub management: kube::Client,
    pub budget: Duration,
}

/// The text at a dotted path of `object` (`spec.targetSecretRef.name`), if it is a string.
fn text_at<'a>(object: &'a Value, path: &str) -> Option<&'a str> {
    path.split('.')
        .try_fold(object, |v, part| v.get(part))
        .and_then(Value::as_str)
}

/// Whether the object names Secret `namespace/name` at one of the plugin's declared fields. An empty or absent
/// namespace field means the object's own namespace. With `spec_only`, only fields under `spec` count: the
/// status is the plugin's own output, so a name it wrote there reaches only owner-checked writes and deletes
/// and a workload kubeconfig the host uses itself; never a Secret's metadata, digest or values.
fn names_secret(
    object: &Value,
    fields: &[SecretField],
    spec_only: bool,
    own: &str,
    namespace: &str,
    name: &str,
) -> bool {
    fields
        .iter()
        .filter(|f| !spec_only || f.name.starts_with("spec."))
        .any(|f| {
            // A field through a list names Secrets in the object's own namespace: a namespace path could not
            // say which element it belongs to.
            let named_ns = f
                .namespace
                .as_deref()
                .filter(|_| !field_path::through_list(&f.name))
                .and_then(|p| text_at(object, p))
                .filter(|ns| !ns.is_empty())
                .unwrap_or(own);
            field_path::texts_at(object, &f.name).contains(&name)
                && !name.is_empty()
                && named_ns == namespace
        })
}

impl CallScope {
    /// Checks a Secret access: `needed` granted, the Secret named by the reconciled object at a field the
    /// plugin declared, and its namespace (`None`: the object's own) the object's own or granted by
    /// `secrets-namespace:NS`. Resolves where the access goes.
    pub(super) fn secret_scope(
        &mut self,
        ctx: &Resource<CallContext>,
        needed: &[Capability],
        reach: Reach,
        namespace: Option<String>,
        name: &str,
        what: &str,
    ) -> Result<SecretScope, HostFailure> {
        if let Some(missing) = needed.iter().find(|c| !self.grants.allows(**c)) {
            let reason = format!("the plugin is not granted {:?}", missing.name());
            return Err(self.denied(*missing, what, &reason).into());
        }
        let capability = needed.first().copied().unwrap_or(Capability::Secrets);
        let call = self.table.get(ctx)?;
        let Some(own) = call.namespace().map(str::to_owned) else {
            return Err(HostError::Invalid(format!(
                "{what}: Secrets are namespaced; this object is cluster-scoped"
            ))
            .into());
        };
        let target = namespace
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| own.clone());
        if !names_secret(
            call.object_value(),
            &self.secret_fields,
            reach == Reach::Contents,
            &own,
            &target,
            name,
        ) {
            let reason = format!(
                "Secret {} is not named by the reconciled object at a field the plugin declares (describe's \
                 secret-fields)",
                quoted(&target, name)
            );
            return Err(self.denied(capability, what, &reason).into());
        }
        if !self.grants.may_reach_secrets_in(Some(&own), &target) {
            let reason = format!(
                "Secrets in namespace {target:?} are not granted to a plugin reconciling an object in namespace \
                 {own:?} (grant `secrets-namespace:{target}`)"
            );
            return Err(self.denied(capability, what, &reason).into());
        }
        let budget = self.budget(ctx, budget::SECRET)?;
        let Some(management) = self.services.management.clone() else {
            return Err(HostError::Unavailable(format!(
                "{what}: this host has no Kubernetes client for Secrets"
            ))
            .into());
        };
        Ok(SecretScope {
            namespace: target,
            management,
            budget,
        })
    }

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

    /// Checks that the object names Secret `name` in its own namespace (for a source the host reads itself).
    pub(super) fn named_local_secret(
        &mut self,
        ctx: &Resource<CallContext>,
        capability: Capability,
        name: &str,
        what: &str,
    ) -> Result<String, HostFailure> {
        self.named_local_source(ctx, capability, "Secret", name, what)
    }

    /// Checks that the object names the `kind` (Secret or ConfigMap) `name` in its own namespace, at a field the
    /// plugin declares in its secret fields, for data the host reads itself and hands to another system (a
    /// Secret copied to a workload cluster, values given to Helm), never to the plugin.
    pub(super) fn named_local_source(
        &mut self,
        ctx: &Resource<CallContext>,
        capability: Capability,
        kind: &str,
        name: &str,
        what: &str,
    ) -> Result<String, HostFailure> {
        let call = self.table.get(ctx)?;
        let Some(own) = call.namespace().map(str::to_owned) else {
            return Err(
                HostError::Invalid(format!("{what}: this object is cluster-scoped")).into(),
            );
        };
        // The source's values go host to host, never to the plugin, but into a cluster the plugin chooses: the
        // object's spec must name it, as for a read of its values.
        if names_secret(
            call.object_value(),
            &self.secret_fields,
            true,
            &own,
            &own,
            name,
        ) {
            return Ok(own);
        }
        let reason = format!(
            "{kind} {} is not named by the reconciled object at a field the plugin declares",
            quoted(&own, name)
        );
        Err(self.denied(capability, what, &reason).into())
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
        let scope =
            self.secret_scope(ctx, needed, Reach::Contents, key.namespace, &key.name, what)?;
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
        let scope = self.secret_scope(&ctx, &needed, Reach::Contents, namespace, &name, &what)?;
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
        let scope = self.secret_scope(&ctx, &needed, Reach::Owned, namespace, &name, &what)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field(name: &str) -> SecretField {
        SecretField {
            name: name.into(),
            namespace: None,
        }
    }

    #[test]
    fn a_field_through_a_list_names_only_the_secrets_its_filter_selects_in_the_objects_namespace() {
        let object = json!({"spec": {"valuesFrom": [
            {"kind": "Secret", "name": "db"},
            {"kind": "ConfigMap", "name": "settings"},
            {"kind": "Secret"},
            "not an object"
        ]}});
        let secrets = [field("spec.valuesFrom[kind=Secret].name")];
        assert!(names_secret(&object, &secrets, true, "team", "team", "db"));
        // A ConfigMap's name does not name a Secret of that name, and nothing reaches another namespace.
        assert!(!names_secret(
            &object, &secrets, true, "team", "team", "settings"
        ));
        assert!(!names_secret(
            &object, &secrets, true, "team", "other", "db"
        ));
        assert!(!names_secret(&object, &secrets, true, "team", "team", ""));
        let with_namespace = [SecretField {
            name: "spec.valuesFrom[kind=Secret].name".into(),
            namespace: Some("spec.namespace".into()),
        }];
        let elsewhere = json!({"spec": {"namespace": "other", "valuesFrom": [{"kind": "Secret", "name": "db"}]}});
        assert!(!names_secret(
            &elsewhere,
            &with_namespace,
            true,
            "team",
            "other",
            "db"
        ));
    }

    #[test]
    fn plain_paths_still_name_one_secret_with_an_optional_namespace() {
        let object = json!({"spec": {"ref": {"name": "k", "namespace": "ops"}}});
        let fields = [SecretField {
            name: "spec.ref.name".into(),
            namespace: Some("spec.ref.namespace".into()),
        }];
        assert!(names_secret(&object, &fields, true, "team", "ops", "k"));
        assert!(!names_secret(&object, &fields, true, "team", "team", "k"));
    }
}
