//! The interfaces whose real implementations land in later versions of the host. They are linked so that a
//! plugin granted them loads and runs today, and every call answers `host-error::unavailable` (which the SDK
//! maps to a transient error) rather than trapping.

use wasmtime::component::Resource;

use super::{CallContext, HostError};
use crate::runtime::HostState;
use crate::runtime::bindings::omni::operator::types::{HostError as WitHostError, SecretKeyRef};
use crate::runtime::bindings::omni::operator::{helm, kube_write, secrets, workload};

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
