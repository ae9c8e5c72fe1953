//! `secrets`: management-cluster Secrets named by the reconciled object, in its namespace or one its grants
//! name. Reads are uncached GETs (a plugin deciding whether to overwrite or rotate must not act on a stale copy);
//! values leave the host only under `secrets-read-values`; deletion is owner-checked and needs `secrets-write`.

use std::collections::BTreeMap;

use wasmtime::component::Resource;

use super::call::Management;
use super::call::budget::within;
use super::call::reach::Reach;
use super::call::secret_types::removal;
use super::{CallContext, Capability, HostFailure};
use crate::contract::bindings::omni::operator::secrets as wit;
use crate::contract::bindings::omni::operator::types::{OwnerLabel, Removal, SecretKeyRef};
use crate::secrets::{self as store, quoted};

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

/// What `secrets` serves with: the management cluster.
#[derive(Clone, Default)]
pub struct Services {
    pub(crate) cluster: Management,
}

/// `secrets` keeps nothing per call.
pub(crate) type State = ();

super::capability_view!(
    /// The `secrets` capability's view of a call.
    SecretsCap,
    wit,
    secrets
);

impl SecretsCap<'_> {
    /// One key's value of a Secret the object names, after the checks for `needed`; stays in the host unless the
    /// caller hands it over.
    async fn key_value(
        &mut self,
        ctx: &Resource<CallContext>,
        needed: &[Capability],
        key: SecretKeyRef,
        what: &str,
    ) -> Result<Option<Vec<u8>>, HostFailure> {
        let scope = self.core.secret_scope(
            ctx,
            needed,
            Reach::Spec,
            (key.namespace, &key.name),
            what,
            &self.services.cluster,
        )?;
        let read = store::get(&scope.management, "", &scope.namespace, &key.name);
        let found = within(what, scope.budget, read).await?;
        Ok(found
            .and_then(|s| s.data)
            .and_then(|mut d| d.remove(&key.key))
            .map(|v| v.0))
    }
}

impl wit::Host for SecretsCap<'_> {
    async fn info(
        &mut self,
        ctx: Resource<CallContext>,
        namespace: Option<String>,
        name: String,
    ) -> Result<Option<wit::SecretInfo>, HostFailure> {
        let what = format!("secrets.info {name:?}");
        let needed = [Capability::Secrets];
        let scope = self.core.secret_scope(
            &ctx,
            &needed,
            Reach::Spec,
            (namespace, &name),
            &what,
            &self.services.cluster,
        )?;
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
        let scope = self.core.secret_scope(
            &ctx,
            &needed,
            Reach::Cleanup,
            (namespace, &name),
            &what,
            &self.services.cluster,
        )?;
        let owner = self
            .core
            .own_label(&ctx, Capability::SecretsWrite, owner_label, &what)?;
        let target = quoted(&scope.namespace, &name);
        let op = store::delete_owned(&scope.management, "", &scope.namespace, &name, &owner);
        let result = removal(within(&what, scope.budget, op).await?);
        if result == Removal::NotOwned {
            tracing::info!(plugin = %self.core.plugin, secret = %target, "left a Secret alone: it lacks the owner label");
        }
        Ok(result)
    }
}

#[cfg(test)]
mod grant_checks {
    use serde_json::{Value, json};
    use wit::Host as _;

    use super::*;
    use crate::capabilities::HostError;
    use crate::capabilities::call::testing::{NS, TestCall, UID, management};

    /// The object names `app` (and, in `vault`, `remote`) in its spec; its status names `claimed`, as a plugin
    /// would write a name into it.
    fn object() -> Value {
        json!({"spec": {"secretRef": {"name": "app"}, "remoteRef": {"name": "remote", "namespace": "vault"}},
            "status": {"claimed": "claimed"}})
    }

    fn call(grants: &[&str]) -> TestCall {
        let fields = [
            ("spec.secretRef.name", None),
            ("spec.remoteRef.name", Some("spec.remoteRef.namespace")),
            ("status.claimed", None),
        ];
        TestCall::new(grants, object(), &fields)
    }

    fn services() -> Services {
        Services {
            cluster: management(&[
                (NS, "app", "password", "app-value"),
                (NS, "claimed", "password", "claimed-value"),
                ("vault", "remote", "password", "remote-value"),
            ]),
        }
    }

    fn key(namespace: Option<&str>, name: &str) -> SecretKeyRef {
        SecretKeyRef {
            namespace: namespace.map(str::to_string),
            name: name.into(),
            key: "password".into(),
        }
    }

    async fn info(
        call: &mut TestCall,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<wit::SecretInfo>, HostFailure> {
        let services = services();
        let ctx = call.ctx();
        SecretsCap::over(&mut call.core, &mut (), &services)
            .info(ctx, namespace.map(str::to_string), name.into())
            .await
    }

    #[tokio::test]
    async fn metadata_needs_the_secrets_grant_and_a_secret_the_spec_names() {
        let mut denied = call(&[]);
        let answer = info(&mut denied, None, "app").await;
        denied.assert_denied(
            answer,
            "secrets",
            "secrets.info \"app\"",
            "not granted \"secrets\"",
        );
        let mut other = call(&["secrets"]);
        let answer = info(&mut other, None, "kube-root").await;
        other.assert_denied(
            answer,
            "secrets",
            "kube-root",
            "is not named by the reconciled object's spec",
        );
        let mut allowed = call(&["secrets"]);
        let answer = info(&mut allowed, None, "app").await;
        allowed.assert_allowed(&answer);
        let found = answer.ok().flatten().expect("the named Secret's metadata");
        assert_eq!(found.keys, vec!["password".to_string()]);
    }

    #[tokio::test]
    async fn a_name_in_the_status_reaches_no_read_only_an_owner_checked_delete() {
        let mut reading = call(&["secrets", "secrets-read-values"]);
        let answer = info(&mut reading, None, "claimed").await;
        reading.assert_denied(
            answer,
            "secrets",
            "claimed",
            "a name in the status reaches only the removal",
        );
        let services = services();
        let ctx = reading.ctx();
        let value = SecretsCap::over(&mut reading.core, &mut (), &services)
            .read(ctx, key(None, "claimed"))
            .await;
        reading.assert_denied(
            value,
            "secrets",
            "claimed",
            "a name in the status reaches only the removal",
        );

        let mut deleting = call(&["secrets", "secrets-write"]);
        let label = OwnerLabel {
            key: "omni.texashpc.com/owner".into(),
            value: UID.into(),
        };
        let ctx = deleting.ctx();
        let answer = SecretsCap::over(&mut deleting.core, &mut (), &services)
            .delete_owned(ctx, None, "claimed".into(), label)
            .await;
        deleting.assert_allowed(&answer);
        // Through to the Secret: it carries no owner label, so nothing is deleted.
        assert_eq!(answer.ok(), Some(Removal::NotOwned));
    }

    #[tokio::test]
    async fn another_namespace_needs_its_secrets_namespace_grant() {
        let mut narrow = call(&["secrets"]);
        let answer = info(&mut narrow, Some("vault"), "remote").await;
        narrow.assert_denied(
            answer,
            "secrets",
            "remote",
            "grant `secrets-namespace:vault`",
        );
        let mut wide = call(&["secrets", "secrets-namespace:vault"]);
        let answer = info(&mut wide, Some("vault"), "remote").await;
        wide.assert_allowed(&answer);
        assert!(answer.ok().flatten().is_some());
        // The grant does not move a Secret the spec names in the object's namespace into another one.
        let mut moved = call(&["secrets", "secrets-namespace:vault"]);
        let answer = info(&mut moved, Some("vault"), "app").await;
        moved.assert_denied(
            answer,
            "secrets",
            "app",
            "is not named by the reconciled object's spec",
        );
    }

    #[tokio::test]
    async fn values_need_secrets_read_values_and_a_digest_does_not() {
        let services = services();
        let mut plain = call(&["secrets"]);
        let ctx = plain.ctx();
        let value = SecretsCap::over(&mut plain.core, &mut (), &services)
            .read(ctx, key(None, "app"))
            .await;
        plain.assert_denied(
            value,
            "secrets-read-values",
            "secrets.read \"app\"",
            "not granted \"secrets-read-values\"",
        );
        let ctx = plain.ctx();
        let digest = SecretsCap::over(&mut plain.core, &mut (), &services)
            .digest(ctx, key(None, "app"))
            .await;
        plain.assert_allowed(&digest);
        assert_eq!(digest.ok().flatten().map(|d| d.len()), Some(64));

        let mut granted = call(&["secrets", "secrets-read-values"]);
        let ctx = granted.ctx();
        let value = SecretsCap::over(&mut granted.core, &mut (), &services)
            .read(ctx, key(None, "app"))
            .await;
        granted.assert_allowed(&value);
        assert_eq!(value.ok().flatten(), Some(b"app-value".to_vec()));
    }

    #[tokio::test]
    async fn a_delete_needs_secrets_write_and_the_objects_own_owner_label() {
        let services = services();
        let label = |value: &str| OwnerLabel {
            key: "omni.texashpc.com/owner".into(),
            value: value.into(),
        };
        let mut unwritable = call(&["secrets"]);
        let ctx = unwritable.ctx();
        let answer = SecretsCap::over(&mut unwritable.core, &mut (), &services)
            .delete_owned(ctx, None, "app".into(), label(UID))
            .await;
        unwritable.assert_denied(
            answer,
            "secrets-write",
            "secrets.delete-owned \"app\"",
            "not granted \"secrets-write\"",
        );
        let mut forged = call(&["secrets", "secrets-write"]);
        let ctx = forged.ctx();
        let answer = SecretsCap::over(&mut forged.core, &mut (), &services)
            .delete_owned(ctx, None, "app".into(), label("uid-of-another-object"))
            .await;
        forged.assert_denied(
            answer,
            "secrets-write",
            "app",
            "does not carry the reconciled object's UID",
        );
    }

    #[tokio::test]
    async fn a_host_without_a_management_cluster_answers_unavailable_after_the_checks() {
        let mut call = call(&["secrets"]);
        let services = Services::default();
        let ctx = call.ctx();
        let answer = SecretsCap::over(&mut call.core, &mut (), &services)
            .info(ctx, None, "app".into())
            .await;
        assert!(
            matches!(answer, Err(HostFailure::Host(HostError::Unavailable(_)))),
            "{answer:?}"
        );
    }
}
