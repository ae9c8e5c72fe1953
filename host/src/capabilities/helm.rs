//! `helm`: Helm releases in workload clusters. Its implementation lands in a later version of the host; it is
//! linked so that a plugin granted it loads and runs today, and every call answers `host-error::unavailable`
//! (which the SDK maps to a transient error) rather than trapping.

use wasmtime::component::Resource;

use super::{CallContext, HostError, HostFailure};
use crate::contract::bindings::omni::operator::helm as wit;
use crate::contract::bindings::omni::operator::types::SecretKeyRef;

super::capability_view!(
    /// The `helm` capability's view of a call.
    HelmCap,
    wit
);

impl wit::Host for HelmCap<'_> {
    async fn ensure(
        &mut self,
        _ctx: Resource<CallContext>,
        _request: wit::ReleaseRequest,
    ) -> Result<wit::ReleaseState, HostFailure> {
        Err(HostError::later("helm.ensure").into())
    }

    async fn uninstall(
        &mut self,
        _ctx: Resource<CallContext>,
        _kubeconfig: SecretKeyRef,
        _name: String,
        _namespace: String,
    ) -> Result<wit::ReleaseState, HostFailure> {
        Err(HostError::later("helm.uninstall").into())
    }
}
