//! Time for host I/O inside a call: every capability bounds its I/O by the same rule, so a plugin always gets a
//! `timeout` answer (and time to handle it) before its call's own deadline.

use std::future::Future;
use std::time::Duration;

use wasmtime::component::Resource;

use super::CallCore;
use crate::capabilities::{CallContext, HostError, HostFailure};

/// The longest a Kubernetes read or a file read may take, even when the call has more time left.
pub(in crate::capabilities) const READ: Duration = Duration::from_secs(10);
/// The longest one Kubernetes write may take (a checked write can be a read, a dry run and the write).
pub(in crate::capabilities) const WRITE: Duration = Duration::from_secs(15);
/// The longest one Secret operation may take (a copy is a few requests).
pub(in crate::capabilities) const SECRET: Duration = Duration::from_secs(20);
/// The longest resolving a chart version constraint may take (a repository index or registry tags).
pub(in crate::capabilities) const CHART: Duration = Duration::from_secs(20);
/// The longest one Omni operation may take.
pub(in crate::capabilities) const OMNI: Duration = Duration::from_secs(30);

impl CallCore {
    /// Nine tenths of what the call has left, and at most `most`.
    pub(in crate::capabilities) fn budget(
        &self,
        ctx: &Resource<CallContext>,
        most: Duration,
    ) -> Result<Duration, HostFailure> {
        Ok(self.table.get(ctx)?.remaining().mul_f64(0.9).min(most))
    }
}

/// Runs `op` within `budget`; running out is a `timeout` naming `what`.
pub(in crate::capabilities) async fn within<T>(
    what: &str,
    budget: Duration,
    op: impl Future<Output = Result<T, HostError>>,
) -> Result<T, HostError> {
    match tokio::time::timeout(budget, op).await {
        Ok(result) => result,
        Err(_) => Err(HostError::Timeout(format!(
            "{what} did not answer within {} ms",
            budget.as_millis()
        ))),
    }
}
