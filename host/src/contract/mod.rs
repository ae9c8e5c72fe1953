//! The plugin contract as the host sees it, and the types every layer of the host shares: the WIT bindings,
//! the call context and its outputs, grants, `HostError`, and the Kubernetes-read service plugins are served
//! from. A leaf: it uses nothing else in this crate, so the capabilities, the Omni and Secret clients and the
//! runtime can all depend on it without depending on each other.

pub(crate) mod bindings;
mod call;
pub mod field_path;
mod field_selector;
mod grants;
mod host_error;
mod kube;
mod outputs;
pub mod throttle;
mod wake;
mod write_kinds;

pub use call::{CallContext, CallObject, SecretField};
pub use field_selector::{FieldSelector, FieldSelectorError};
pub use grants::{Capability, GrantError, Grants, is_dns_label, is_secret};
pub use host_error::{FieldCause, HostError, HostFailure, Rejection};
pub use kube::{
    BoxFuture, DeleteRequest, GetRequest, KindScope, KubeReader, KubeWriter, ListRequest,
    NoKubeReader, NoKubeWriter, Propagation, WriteOp, WriteRequest, merge_patch,
};
pub use outputs::{
    Condition, ConditionStatus, Denial, Event, EventType, LogLevel, LogLine, LogSource,
    MAX_DENIALS, OutputBounds, Outputs, PLUGIN_LOG_TARGET, truncate, truncated,
};
pub(crate) use outputs::{
    MAX_CONDITION_MESSAGE, MAX_CONDITION_TYPE, MAX_EVENT_MESSAGE, MAX_EVENT_REASON,
    MAX_LOG_FIELD_KEY, MAX_LOG_FIELD_VALUE, MAX_LOG_FIELDS, MAX_LOG_MESSAGE, MAX_REASON,
    OutputViolation, too_large_status,
};
pub use wake::{WakeTarget, Wakeups};
#[cfg(test)]
pub(crate) use write_kinds::never_writable_kinds;
pub use write_kinds::{
    OPERATOR_LEASE, WriteKind, WriteKindError, WritePermit, never_writable, never_writable_object,
    shard_lease,
};
