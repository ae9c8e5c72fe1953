//! `workload`: a workload cluster reached through a kubeconfig Secret in the management cluster. The
//! kubeconfig never reaches the plugin; clients are kept per Secret version ([`WorkloadClients`]). Secret data
//! copied into the cluster goes host to host.
//!
//! [`WorkloadClients`]: crate::secrets::WorkloadClients

use std::time::Duration;

use wasmtime::component::Resource;

use super::call::Management;
use super::call::budget::within;
use super::call::reach::{Reach, SecretScope};
use super::call::secret_types::{removal, string_map};
use super::{CallContext, Capability, HostError, HostFailure};
use crate::contract::bindings::omni::operator::types::{OwnerLabel, Removal, SecretKeyRef};
use crate::contract::bindings::omni::operator::workload as wit;
use crate::secrets::{self as store, CopyOutcome, CopyRequest, quoted};

/// The Go operator's timeout for probing a workload cluster (`GET /version`).
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// What `workload` serves with: the management cluster, where the kubeconfig Secrets are, and the workload
/// clients built from them.
#[derive(Clone, Default)]
pub struct Services {
    pub(crate) cluster: Management,
}

/// `workload` keeps nothing per call.
pub(crate) type State = ();

super::capability_view!(
    /// The `workload` capability's view of a call.
    WorkloadCap,
    wit,
    workload
);

impl WorkloadCap<'_> {
    /// The scope of a workload call and the client for its kubeconfig: named by the spec for a probe or a copy,
    /// by the spec or the plugin's status for the owner-checked removal of a Secret the object wrote.
    async fn workload_client(
        &mut self,
        ctx: &Resource<CallContext>,
        kubeconfig: SecretKeyRef,
        reach: Reach,
        what: &str,
    ) -> Result<(SecretScope, kube::Client), HostFailure> {
        let needed = [Capability::Workload];
        let namespace = kubeconfig.namespace.clone();
        let scope = self.core.secret_scope(
            ctx,
            &needed,
            reach,
            (namespace, &kubeconfig.name),
            what,
            &self.services.cluster,
        )?;
        let clients = self.services.cluster.workloads().clone();
        let building = clients.client(
            &scope.management,
            &scope.namespace,
            &kubeconfig.name,
            &kubeconfig.key,
        );
        let reading = format!("{what}: reading the kubeconfig Secret");
        let client = within(&reading, scope.budget, building).await?;
        Ok((scope, client))
    }
}

impl wit::Host for WorkloadCap<'_> {
    async fn probe(
        &mut self,
        ctx: Resource<CallContext>,
        kubeconfig: SecretKeyRef,
    ) -> Result<String, HostFailure> {
        let what = format!(
            "probe the workload cluster of kubeconfig Secret {:?}",
            kubeconfig.name
        );
        let (scope, client) = self
            .workload_client(&ctx, kubeconfig, Reach::Spec, &what)
            .await?;
        let op = async move {
            client
                .apiserver_version()
                .await
                .map(|v| v.git_version)
                .map_err(|e| HostError::from_kube("GET /version", e))
        };
        Ok(within(&what, scope.budget.min(PROBE_TIMEOUT), op).await?)
    }

    async fn copy_secret(
        &mut self,
        ctx: Resource<CallContext>,
        kubeconfig: SecretKeyRef,
        request: wit::SecretCopy,
    ) -> Result<wit::Copied, HostFailure> {
        let what = format!(
            "copy Secret {:?} to workload Secret {}",
            request.source_name,
            quoted(&request.target_namespace, &request.target_name)
        );
        let labels = string_map(&request.labels, "labels")?;
        let annotations = string_map(&request.annotations, "annotations")?;
        let (scope, client) = self
            .workload_client(&ctx, kubeconfig, Reach::Spec, &what)
            .await?;
        let source_ns = self.core.named_local_secret(
            &ctx,
            Capability::Workload,
            &request.source_name,
            &what,
        )?;
        let owner =
            self.core
                .own_label(&ctx, Capability::Workload, request.owner.clone(), &what)?;
        let (plugin, budget) = (self.core.plugin.clone(), scope.budget);
        let op = async move {
            let source = store::get(&scope.management, "", &source_ns, &request.source_name)
                .await?
                .ok_or_else(|| {
                    HostError::NotFound(format!(
                        "source Secret {} does not exist",
                        quoted(&source_ns, &request.source_name)
                    ))
                })?;
            let target = quoted(&request.target_namespace, &request.target_name);
            let copy = CopyRequest {
                source,
                namespace: request.target_namespace,
                name: request.target_name,
                secret_type: request.secret_type,
                labels,
                annotations,
                create_namespace: request.create_namespace,
                owner,
                digest_annotation: request.digest_annotation,
            };
            let (digest, secret_type, outcome) = store::copy(&client, copy).await?;
            if outcome == CopyOutcome::NotOwned {
                tracing::info!(plugin = %plugin, secret = %target, "left a workload Secret alone: it lacks the owner label");
            }
            Ok(wit::Copied {
                digest,
                secret_type,
                outcome: match outcome {
                    CopyOutcome::Created => wit::CopyOutcome::Created,
                    CopyOutcome::Updated => wit::CopyOutcome::Updated,
                    CopyOutcome::Unchanged => wit::CopyOutcome::Unchanged,
                    CopyOutcome::Recreated => wit::CopyOutcome::Recreated,
                    CopyOutcome::NotOwned => wit::CopyOutcome::NotOwned,
                },
            })
        };
        Ok(within(&what, budget, op).await?)
    }

    async fn delete_secret(
        &mut self,
        ctx: Resource<CallContext>,
        kubeconfig: SecretKeyRef,
        namespace: String,
        name: String,
        owner_label: OwnerLabel,
    ) -> Result<Removal, HostFailure> {
        let what = format!("delete workload Secret {}", quoted(&namespace, &name));
        let (scope, client) = self
            .workload_client(&ctx, kubeconfig, Reach::Cleanup, &what)
            .await?;
        let owner = self
            .core
            .own_label(&ctx, Capability::Workload, owner_label, &what)?;
        let op = async move {
            store::delete_owned(&client, "workload ", &namespace, &name, &owner).await
        };
        Ok(removal(within(&what, scope.budget, op).await?))
    }
}

#[cfg(test)]
mod grant_checks {
    use serde_json::json;
    use wit::Host as _;

    use super::*;
    use crate::capabilities::call::testing::{KUBECONFIG, NS, TestCall, UID, management};

    /// The spec names the kubeconfig `edge` and the source Secret `app`; the status names `admin`, another
    /// kubeconfig the plugin wrote there.
    fn call(grants: &[&str]) -> TestCall {
        let object = json!({"spec": {"kubeconfig": "edge", "source": "app"}, "status": {"kubeconfig": "admin"}});
        let fields = [
            ("spec.kubeconfig", None),
            ("spec.source", None),
            ("status.kubeconfig", None),
        ];
        TestCall::new(grants, object, &fields)
    }

    fn services() -> Services {
        Services {
            cluster: management(&[
                (NS, "edge", "kubeconfig", KUBECONFIG),
                (NS, "admin", "kubeconfig", KUBECONFIG),
                (NS, "loot", "kubeconfig", KUBECONFIG),
                (NS, "app", "password", "v"),
                (NS, "unnamed", "password", "v"),
            ]),
        }
    }

    fn kubeconfig(name: &str) -> SecretKeyRef {
        SecretKeyRef {
            namespace: None,
            name: name.into(),
            key: "kubeconfig".into(),
        }
    }

    fn label(value: &str) -> OwnerLabel {
        OwnerLabel {
            key: "omni.texashpc.com/owner".into(),
            value: value.into(),
        }
    }

    fn copy(source: &str, owner: &str) -> wit::SecretCopy {
        wit::SecretCopy {
            source_name: source.into(),
            target_namespace: "apps".into(),
            target_name: "copied".into(),
            secret_type: None,
            labels: "{}".into(),
            annotations: "{}".into(),
            create_namespace: false,
            owner: label(owner),
            digest_annotation: None,
        }
    }

    async fn probe(call: &mut TestCall, name: &str) -> Result<String, HostFailure> {
        let services = services();
        let ctx = call.ctx();
        WorkloadCap::over(&mut call.core, &mut (), &services)
            .probe(ctx, kubeconfig(name))
            .await
    }

    #[tokio::test]
    async fn a_workload_cluster_needs_the_grant_and_a_kubeconfig_the_spec_names() {
        let mut ungranted = call(&[]);
        let answer = probe(&mut ungranted, "edge").await;
        ungranted.assert_denied(
            answer,
            "workload",
            "probe the workload cluster",
            "not granted \"workload\"",
        );
        let mut unnamed = call(&["workload"]);
        let answer = probe(&mut unnamed, "loot").await;
        unnamed.assert_denied(
            answer,
            "workload",
            "loot",
            "is not named by the reconciled object's spec",
        );
        let mut named = call(&["workload"]);
        let answer = probe(&mut named, "edge").await;
        // Through every check to the cluster, which nobody serves.
        named.assert_allowed(&answer);
        assert!(answer.is_err());
    }

    #[tokio::test]
    async fn a_kubeconfig_the_status_names_reaches_only_the_removal_of_what_the_object_wrote() {
        let mut probing = call(&["workload"]);
        let answer = probe(&mut probing, "admin").await;
        probing.assert_denied(
            answer,
            "workload",
            "admin",
            "a name in the status reaches only the removal",
        );
        let services = services();
        let mut copying = call(&["workload"]);
        let ctx = copying.ctx();
        let answer = WorkloadCap::over(&mut copying.core, &mut (), &services)
            .copy_secret(ctx, kubeconfig("admin"), copy("app", UID))
            .await;
        copying.assert_denied(
            answer,
            "workload",
            "admin",
            "a name in the status reaches only the removal",
        );
        let mut deleting = call(&["workload"]);
        let ctx = deleting.ctx();
        let answer = WorkloadCap::over(&mut deleting.core, &mut (), &services)
            .delete_secret(
                ctx,
                kubeconfig("admin"),
                "apps".into(),
                "copied".into(),
                label(UID),
            )
            .await;
        deleting.assert_allowed(&answer);
    }

    #[tokio::test]
    async fn a_copy_takes_only_a_source_the_spec_names_and_writes_only_under_the_objects_own_label()
    {
        let services = services();
        let mut unnamed = call(&["workload"]);
        let ctx = unnamed.ctx();
        let answer = WorkloadCap::over(&mut unnamed.core, &mut (), &services)
            .copy_secret(ctx, kubeconfig("edge"), copy("unnamed", UID))
            .await;
        unnamed.assert_denied(
            answer,
            "workload",
            "copy Secret \"unnamed\"",
            "Secret \"team/unnamed\" is not named",
        );
        let mut forged = call(&["workload"]);
        let ctx = forged.ctx();
        let answer = WorkloadCap::over(&mut forged.core, &mut (), &services)
            .copy_secret(
                ctx,
                kubeconfig("edge"),
                copy("app", "uid-of-another-object"),
            )
            .await;
        forged.assert_denied(
            answer,
            "workload",
            "copy Secret \"app\"",
            "does not carry the reconciled object's UID",
        );
        let mut allowed = call(&["workload"]);
        let ctx = allowed.ctx();
        let answer = WorkloadCap::over(&mut allowed.core, &mut (), &services)
            .copy_secret(ctx, kubeconfig("edge"), copy("app", UID))
            .await;
        allowed.assert_allowed(&answer);
    }

    #[tokio::test]
    async fn a_workload_delete_needs_the_objects_own_label() {
        let services = services();
        let mut forged = call(&["workload"]);
        let ctx = forged.ctx();
        let answer = WorkloadCap::over(&mut forged.core, &mut (), &services)
            .delete_secret(
                ctx,
                kubeconfig("edge"),
                "apps".into(),
                "copied".into(),
                label("uid-2"),
            )
            .await;
        forged.assert_denied(
            answer,
            "workload",
            "delete workload Secret",
            "does not carry the reconciled object's UID",
        );
    }
}
