//! The interfaces whose real implementations land in later versions of the host. They are linked so that a
//! plugin granted them loads and runs today, and every call answers `host-error::unavailable` (which the SDK
//! maps to a transient error) rather than trapping.

use wasmtime::component::Resource;

use super::{CallContext, HostError};
use crate::runtime::HostState;
use crate::runtime::bindings::omni::operator::types::{HostError as WitHostError, SecretKeyRef};
use crate::runtime::bindings::omni::operator::{files, helm, kube_write, omni, secrets, workload};

type Answer<T> = wasmtime::Result<Result<T, WitHostError>>;

fn unavailable<T>(function: &str) -> Answer<T> {
    Ok(Err(HostError::Unavailable(format!(
        "{function} lands in a later version of the host"
    ))
    .into()))
}

impl kube_write::Host for HostState {
    async fn apply(
        &mut self,
        _ctx: Resource<CallContext>,
        _object: String,
        _owned: bool,
    ) -> Answer<String> {
        unavailable("kube-write.apply")
    }

    async fn delete(
        &mut self,
        _ctx: Resource<CallContext>,
        _obj: kube_write::ObjectRef,
    ) -> Answer<()> {
        unavailable("kube-write.delete")
    }
}

impl secrets::Host for HostState {
    async fn info(
        &mut self,
        _ctx: Resource<CallContext>,
        _name: String,
    ) -> Answer<Option<secrets::SecretInfo>> {
        unavailable("secrets.info")
    }

    async fn digest(
        &mut self,
        _ctx: Resource<CallContext>,
        _key: SecretKeyRef,
    ) -> Answer<Option<String>> {
        unavailable("secrets.digest")
    }

    async fn read(
        &mut self,
        _ctx: Resource<CallContext>,
        _key: SecretKeyRef,
    ) -> Answer<Option<Vec<u8>>> {
        unavailable("secrets.read")
    }
}

impl omni::Host for HostState {
    async fn ping(
        &mut self,
        _ctx: Resource<CallContext>,
        _connection: String,
    ) -> Answer<omni::EndpointInfo> {
        unavailable("omni.ping")
    }

    async fn sync_template(
        &mut self,
        _ctx: Resource<CallContext>,
        _connection: String,
        _template: String,
    ) -> Answer<omni::SyncReport> {
        unavailable("omni.sync-template")
    }

    async fn cluster_status(
        &mut self,
        _ctx: Resource<CallContext>,
        _connection: String,
        _cluster: String,
    ) -> Answer<Option<String>> {
        unavailable("omni.cluster-status")
    }

    async fn delete_cluster(
        &mut self,
        _ctx: Resource<CallContext>,
        _connection: String,
        _cluster: String,
        _destroy_machines: bool,
    ) -> Answer<()> {
        unavailable("omni.delete-cluster")
    }

    async fn export_kubeconfig(
        &mut self,
        _ctx: Resource<CallContext>,
        _connection: String,
        _request: omni::KubeconfigExport,
    ) -> Answer<omni::Exported> {
        unavailable("omni.export-kubeconfig")
    }
}

impl workload::Host for HostState {
    async fn probe(
        &mut self,
        _ctx: Resource<CallContext>,
        _kubeconfig: SecretKeyRef,
    ) -> Answer<String> {
        unavailable("workload.probe")
    }

    async fn copy_secret(
        &mut self,
        _ctx: Resource<CallContext>,
        _kubeconfig: SecretKeyRef,
        _request: workload::SecretCopy,
    ) -> Answer<workload::Copied> {
        unavailable("workload.copy-secret")
    }

    async fn delete_secret(
        &mut self,
        _ctx: Resource<CallContext>,
        _kubeconfig: SecretKeyRef,
        _namespace: String,
        _name: String,
    ) -> Answer<bool> {
        unavailable("workload.delete-secret")
    }
}

impl helm::Host for HostState {
    async fn ensure(
        &mut self,
        _ctx: Resource<CallContext>,
        _request: helm::ReleaseRequest,
    ) -> Answer<helm::ReleaseState> {
        unavailable("helm.ensure")
    }

    async fn uninstall(
        &mut self,
        _ctx: Resource<CallContext>,
        _kubeconfig: SecretKeyRef,
        _name: String,
        _namespace: String,
    ) -> Answer<helm::ReleaseState> {
        unavailable("helm.uninstall")
    }
}

impl files::Host for HostState {
    async fn read(
        &mut self,
        _ctx: Resource<CallContext>,
        _root: String,
        _path: String,
    ) -> Answer<Vec<u8>> {
        unavailable("files.read")
    }
}
