//! `workload`: a workload cluster reached through a kubeconfig Secret in the management cluster. The
//! kubeconfig never reaches the plugin; clients are kept per Secret version ([`WorkloadClients`]). Secret data
//! copied into the cluster goes host to host.
//!
//! [`WorkloadClients`]: crate::secrets::WorkloadClients

use std::time::Duration;

use wasmtime::component::Resource;

use super::secrets::{Reach, SecretScope, bounded, removal, string_map};
use super::{CallContext, Capability, HostError};
use crate::runtime::HostState;
use crate::runtime::bindings::omni::operator::types::{
    HostError as WitHostError, OwnerLabel, Removal, SecretKeyRef,
};
use crate::runtime::bindings::omni::operator::workload as wit;
use crate::secrets::{self as store, CopyOutcome, CopyRequest, quoted};

type Answer<T> = wasmtime::Result<Result<T, WitHostError>>;

/// The Go operator's probe timeout (original-operator.md §4.5 step 10).
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

impl HostState {
    /// The scope of a workload call and the client for its kubeconfig.
    async fn workload_client(
        &mut self,
        ctx: &Resource<CallContext>,
        kubeconfig: SecretKeyRef,
        what: &str,
    ) -> wasmtime::Result<Result<(SecretScope, kube::Client), HostError>> {
        let scope = match self.secret_scope(
            ctx,
            &[Capability::Workload],
            Reach::Owned,
            kubeconfig.namespace.clone(),
            &kubeconfig.name,
            what,
        )? {
            Ok(s) => s,
            Err(e) => return Ok(Err(e)),
        };
        let clients = self.services.workloads.clone();
        let building = clients.client(
            &scope.management,
            &scope.namespace,
            &kubeconfig.name,
            &kubeconfig.key,
        );
        Ok(match tokio::time::timeout(scope.budget, building).await {
            Ok(Ok(client)) => Ok((scope, client)),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(HostError::Timeout(format!(
                "{what}: reading the kubeconfig Secret took longer than {} ms",
                scope.budget.as_millis()
            ))),
        })
    }
}

impl wit::Host for HostState {
    async fn probe(
        &mut self,
        ctx: Resource<CallContext>,
        kubeconfig: SecretKeyRef,
    ) -> Answer<String> {
        let what = format!(
            "probe the workload cluster of kubeconfig Secret {:?}",
            kubeconfig.name
        );
        let (scope, client) = match self.workload_client(&ctx, kubeconfig, &what).await? {
            Ok(c) => c,
            Err(e) => return Ok(Err(e.into())),
        };
        let op = async move {
            client
                .apiserver_version()
                .await
                .map(|v| v.git_version)
                .map_err(|e| store::kube_error("GET /version", e))
        };
        Ok(bounded(&what, scope.budget.min(PROBE_TIMEOUT), op).await)
    }

    async fn copy_secret(
        &mut self,
        ctx: Resource<CallContext>,
        kubeconfig: SecretKeyRef,
        request: wit::SecretCopy,
    ) -> Answer<wit::Copied> {
        let what = format!(
            "copy Secret {:?} to workload Secret {}",
            request.source_name,
            quoted(&request.target_namespace, &request.target_name)
        );
        let (labels, annotations) = match (
            string_map(&request.labels, "labels"),
            string_map(&request.annotations, "annotations"),
        ) {
            (Ok(l), Ok(a)) => (l, a),
            (Err(e), _) | (_, Err(e)) => return Ok(Err(e.into())),
        };
        let (scope, client) = match self.workload_client(&ctx, kubeconfig, &what).await? {
            Ok(c) => c,
            Err(e) => return Ok(Err(e.into())),
        };
        let source_ns = match self.named_local_secret(
            &ctx,
            Capability::Workload,
            &request.source_name,
            &what,
        )? {
            Ok(ns) => ns,
            Err(e) => return Ok(Err(e.into())),
        };
        let owner_label =
            match self.own_label(&ctx, Capability::Workload, request.owner.clone(), &what)? {
                Ok(o) => o,
                Err(e) => return Ok(Err(e.into())),
            };
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
                owner: owner_label,
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
        Ok(bounded(&what, budget, op).await)
    }

    async fn delete_secret(
        &mut self,
        ctx: Resource<CallContext>,
        kubeconfig: SecretKeyRef,
        namespace: String,
        name: String,
        owner_label: OwnerLabel,
    ) -> Answer<Removal> {
        let what = format!("delete workload Secret {}", quoted(&namespace, &name));
        let (scope, client) = match self.workload_client(&ctx, kubeconfig, &what).await? {
            Ok(c) => c,
            Err(e) => return Ok(Err(e.into())),
        };
        let owner = match self.own_label(&ctx, Capability::Workload, owner_label, &what)? {
            Ok(o) => o,
            Err(e) => return Ok(Err(e.into())),
        };
        let op = async move {
            store::delete_owned(&client, "workload ", &namespace, &name, &owner).await
        };
        Ok(bounded(&what, scope.budget, op).await.map(removal))
    }
}
