//! Where a name a plugin passes may lead: the one rule every capability that takes the name of a Secret, a
//! kubeconfig, a values source or chart credentials applies before it touches anything.
//!
//! **Only the spec names reach.** A plugin may reach a Secret only when the reconciled object names it at a field
//! the plugin declared in `describe` (its secret fields), and only fields under `spec` count for anything that
//! reads, installs or writes: the spec is what the user wrote, the status is the plugin's own output. A name the
//! plugin wrote into the status serves one purpose: cleaning up what this object itself made (an owner-checked
//! delete of a Secret, the uninstall of a release the host stamped as this object's), so an object whose spec has
//! moved on can still remove what it left behind, and nothing else. A plugin that writes `status.x: admin-kubeconfig`
//! gains no cluster, no Secret metadata, digest or value, and no install.
//!
//! Namespaces follow the same rule: a declared namespace field is read from the object too, and anything outside
//! the object's own namespace needs the operator's `secrets-namespace:NS` grant on top.

use serde_json::Value;
use wasmtime::component::Resource;

use super::{CallCore, Management, budget};
use crate::capabilities::{CallContext, Capability, HostError, HostFailure, SecretField};
use crate::contract::field_path;
use crate::secrets::quoted;

/// What an access does, which decides the fields of the object that may name its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::capabilities) enum Reach {
    /// Reads, installs or writes (metadata, digests, values, a workload cluster's probe or copy, every Helm call
    /// but an uninstall, a kubeconfig export): only a target the object's spec names.
    Spec,
    /// Removes what this object made, owner-checked by the host (a Secret carrying the object's owner label, a
    /// release stamped with its UID): a target the spec or the plugin's own status names.
    Cleanup,
}

/// Where a Secret access goes: the namespace, the management-cluster client and the time it may take.
pub(in crate::capabilities) struct SecretScope {
    pub namespace: String,
    pub management: kube::Client,
    pub budget: std::time::Duration,
}

/// The text at a dotted path of `object` (`spec.targetSecretRef.name`), if it is a string.
fn text_at<'a>(object: &'a Value, path: &str) -> Option<&'a str> {
    path.split('.')
        .try_fold(object, |v, part| v.get(part))
        .and_then(Value::as_str)
}

/// Whether a declared field may name a target for `reach`: under `spec` always, elsewhere only for cleanup.
fn counts_for(field: &SecretField, reach: Reach) -> bool {
    reach == Reach::Cleanup || field.name.starts_with("spec.")
}

/// Whether the object names Secret `namespace/name` at one of the plugin's declared fields that count for
/// `reach`. An empty or absent namespace field means the object's own namespace (`own`).
pub(in crate::capabilities) fn names_secret(
    object: &Value,
    fields: &[SecretField],
    reach: Reach,
    own: &str,
    namespace: &str,
    name: &str,
) -> bool {
    !name.is_empty()
        && fields.iter().filter(|f| counts_for(f, reach)).any(|f| {
            // A field through a list names Secrets in the object's own namespace: a namespace path could not
            // say which element it belongs to. A namespace field outside `spec` counts only where the name
            // field does, so a spec-named Secret cannot be moved to another namespace by the status.
            let named_ns = f
                .namespace
                .as_deref()
                .filter(|_| !field_path::through_list(&f.name))
                .filter(|p| reach == Reach::Cleanup || p.starts_with("spec."))
                .and_then(|p| text_at(object, p))
                .filter(|ns| !ns.is_empty())
                .unwrap_or(own);
            field_path::texts_at(object, &f.name).contains(&name) && named_ns == namespace
        })
}

impl CallCore {
    /// Checks a Secret access: `needed` granted, the Secret `name` named by the reconciled object at a declared
    /// field that counts for `reach`, and its namespace (`None`: the object's own) the object's own or granted by
    /// `secrets-namespace:NS`. Resolves where the access goes, through `cluster`.
    pub(in crate::capabilities) fn secret_scope(
        &mut self,
        ctx: &Resource<CallContext>,
        needed: &[Capability],
        reach: Reach,
        (namespace, name): (Option<String>, &str),
        what: &str,
        cluster: &Management,
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
            reach,
            &own,
            &target,
            name,
        ) {
            let reason = match reach {
                Reach::Spec => format!(
                    "Secret {} is not named by the reconciled object's spec at a field the plugin declares \
                     (describe's secret-fields); a name in the status reaches only the removal of what the object \
                     made",
                    quoted(&target, name)
                ),
                Reach::Cleanup => format!(
                    "Secret {} is not named by the reconciled object at a field the plugin declares (describe's \
                     secret-fields)",
                    quoted(&target, name)
                ),
            };
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
        let management = cluster.client(what)?;
        Ok(SecretScope {
            namespace: target,
            management,
            budget,
        })
    }

    /// Checks that the object's spec names the `kind` (Secret or ConfigMap) `name` in its own namespace, at a
    /// field the plugin declares in its secret fields, for data the host reads itself and hands to another system
    /// (a Secret copied to a workload cluster, values given to Helm), never to the plugin.
    pub(in crate::capabilities) fn named_local_source(
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
        if names_secret(
            call.object_value(),
            &self.secret_fields,
            Reach::Spec,
            &own,
            &own,
            name,
        ) {
            return Ok(own);
        }
        let reason = format!(
            "{kind} {} is not named by the reconciled object's spec at a field the plugin declares",
            quoted(&own, name)
        );
        Err(self.denied(capability, what, &reason).into())
    }

    /// [`CallCore::named_local_source`] for a Secret.
    pub(in crate::capabilities) fn named_local_secret(
        &mut self,
        ctx: &Resource<CallContext>,
        capability: Capability,
        name: &str,
        what: &str,
    ) -> Result<String, HostFailure> {
        self.named_local_source(ctx, capability, "Secret", name, what)
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
    fn a_name_the_plugin_wrote_into_the_status_reaches_only_cleanup() {
        let object = json!({"spec": {"kubeconfigSecretRef": {"name": "edge"}},
            "status": {"claimed": "admin-kubeconfig", "ns": "kube-system"}});
        let fields = [
            field("spec.kubeconfigSecretRef.name"),
            SecretField {
                name: "status.claimed".into(),
                namespace: Some("status.ns".into()),
            },
        ];
        assert!(names_secret(
            &object,
            &fields,
            Reach::Spec,
            "team",
            "team",
            "edge"
        ));
        assert!(names_secret(
            &object,
            &fields,
            Reach::Cleanup,
            "team",
            "team",
            "edge"
        ));
        for ns in ["team", "kube-system"] {
            assert!(
                !names_secret(
                    &object,
                    &fields,
                    Reach::Spec,
                    "team",
                    ns,
                    "admin-kubeconfig"
                ),
                "a status-written name reached a read, install or write in {ns}"
            );
        }
        assert!(names_secret(
            &object,
            &fields,
            Reach::Cleanup,
            "team",
            "kube-system",
            "admin-kubeconfig"
        ));
        // A spec field whose namespace path points into the status cannot be moved by the plugin for reads.
        let moved = [SecretField {
            name: "spec.kubeconfigSecretRef.name".into(),
            namespace: Some("status.ns".into()),
        }];
        assert!(!names_secret(
            &object,
            &moved,
            Reach::Spec,
            "team",
            "kube-system",
            "edge"
        ));
        assert!(names_secret(
            &object,
            &moved,
            Reach::Spec,
            "team",
            "team",
            "edge"
        ));
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
        let spec = Reach::Spec;
        assert!(names_secret(&object, &secrets, spec, "team", "team", "db"));
        // A ConfigMap's name does not name a Secret of that name, and nothing reaches another namespace.
        assert!(!names_secret(
            &object, &secrets, spec, "team", "team", "settings"
        ));
        assert!(!names_secret(
            &object, &secrets, spec, "team", "other", "db"
        ));
        assert!(!names_secret(&object, &secrets, spec, "team", "team", ""));
        let with_namespace = [SecretField {
            name: "spec.valuesFrom[kind=Secret].name".into(),
            namespace: Some("spec.namespace".into()),
        }];
        let elsewhere = json!({"spec": {"namespace": "other", "valuesFrom": [{"kind": "Secret", "name": "db"}]}});
        assert!(!names_secret(
            &elsewhere,
            &with_namespace,
            spec,
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
        assert!(names_secret(
            &object,
            &fields,
            Reach::Spec,
            "team",
            "ops",
            "k"
        ));
        assert!(!names_secret(
            &object,
            &fields,
            Reach::Spec,
            "team",
            "team",
            "k"
        ));
    }
}
