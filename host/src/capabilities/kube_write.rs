//! `kube-write`: applies and deletes in the management cluster. Its implementation lands in a later version of
//! the host; it is linked so that a plugin granted it loads and runs today, and every call answers
//! `host-error::unavailable` (which the SDK maps to a transient error) rather than trapping.

use wasmtime::component::Resource;

use super::{CallContext, HostError, HostFailure};
use crate::contract::bindings::omni::operator::kube_write as wit;

/// `kube-write` serves with nothing yet.
#[derive(Debug, Clone, Default)]
pub struct Services;

/// `kube-write` keeps nothing per call.
pub(crate) type State = ();

super::capability_view!(
    /// The `kube-write` capability's view of a call.
    KubeWriteCap,
    wit,
    kube_write
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

#[cfg(test)]
mod grant_checks {
    use serde_json::json;
    use wit::Host as _;

    use super::*;
    use crate::capabilities::call::testing::TestCall;

    /// Granted or not, `kube-write` writes nothing yet: every call answers `unavailable`, never a trap.
    #[tokio::test]
    async fn every_call_answers_unavailable() {
        let mut call = TestCall::new(&["kube-write"], json!({}), &[]);
        let ctx = call.ctx();
        let answer = KubeWriteCap::over(&mut call.core, &mut (), &Services)
            .apply(ctx, "{}".into(), true)
            .await;
        assert!(
            matches!(answer, Err(HostFailure::Host(HostError::Unavailable(_)))),
            "{answer:?}"
        );
    }
}
