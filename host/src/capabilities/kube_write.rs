//! `kube-write`: applies and deletes in the management cluster. Its implementation lands in a later version of
//! the host; it is linked so that a plugin granted it loads and runs today, and every call answers
//! `host-error::unavailable` (which the SDK maps to a transient error) rather than trapping.

use wasmtime::component::Resource;

use super::{CallContext, HostError, HostFailure};
use crate::contract::bindings::omni::operator::kube_write as wit;

super::capability_view!(
    /// The `kube-write` capability's view of a call.
    KubeWriteCap,
    wit
);

impl wit::Host for KubeWriteCap<'_> {
    async fn apply(
        &mut self,
        _ctx: Resource<CallContext>,
        _object: String,
        _owned: bool,
    ) -> Result<String, HostFailure> {
        Err(HostError::later("kube-write.apply").into())
    }

    async fn delete(
        &mut self,
        _ctx: Resource<CallContext>,
        _obj: wit::ObjectRef,
    ) -> Result<(), HostFailure> {
        Err(HostError::later("kube-write.delete").into())
    }
}
