//! The interfaces whose real implementations land in later versions of the host. They are linked so that a
//! plugin granted them loads and runs today, and every call answers `host-error::unavailable` (which the SDK
//! maps to a transient error) rather than trapping.

use wasmtime::component::Resource;

use super::{CallContext, CallScope, HostError, HostFailure};
use crate::contract::bindings::omni::operator::types::SecretKeyRef;
use crate::contract::bindings::omni::operator::{helm, kube_write};

type Answer<T> = Result<T, HostFailure>;

fn unavailable<T>(function: &str) -> Answer<T> {
    Err(HostError::Unavailable(format!("{function} lands in a later version of the host")).into())
}

impl kube_write::Host for CallScope {
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

impl helm::Host for CallScope {
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
