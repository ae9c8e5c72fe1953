//! `workload`: a workload cluster reached through a kubeconfig Secret in the management cluster. The
//! kubeconfig never reaches the plugin; clients are kept per Secret version ([`WorkloadClients`]). Secret data
//! copied into the cluster goes host to host.
//!
//! [`WorkloadClients`]: crate::secrets::WorkloadClients

use std::time::Duration;

use wasmtime::component::Resource;

use super::budget::within;
use super::reach::{Reach, SecretScope};
use super::secrets::{removal, string_map};
use super::{CallContext, CallScope, Capability, HostError, HostFailure};
use crate::contract::bindings::omni::operator::types::{OwnerLabel, Removal, SecretKeyRef};
use crate::contract::bindings::omni::operator::workload as wit;
use crate::secrets::{self as store, CopyOutcome, CopyRequest, quoted};

/// The Go operator's probe timeout (original-operator.md §4.5 step 10).
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

impl CallScope {
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
        let scope = self.secret_scope(ctx, &needed, reach, namespace, &kubeconfig.name, what)?;
        let clients = self.services.workloads.clone();
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

super::capability_view!(
    /// The `workload` capability's view of a call.
    WorkloadCap,
    wit
);

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
        let source_ns =
            self.named_local_secret(&ctx, Capability::Workload, &request.source_name, &what)?;
        let owner = self.own_label(&ctx, Capability::Workload, request.owner.clone(), &what)?;
        let (plugin, budget) = (self.plugin.clone(), scope.budget);
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
        let owner = self.own_label(&ctx, Capability::Workload, owner_label, &what)?;
        let op = async move {
            store::delete_owned(&client, "workload ", &namespace, &name, &owner).await
        };
        Ok(removal(within(&what, scope.budget, op).await?))
    }
}
