//! The host-side form of the contract's `host-error`, so capability implementations (and the `KubeReader`s that
//! controllers supply) never touch generated binding types.

use crate::runtime::HostState;
use crate::runtime::bindings::omni::operator::types as wit;

/// `types` has no functions; the binding still asks for its (empty) host trait.
impl wit::Host for HostState {}

/// Why a capability call failed; reaches the plugin as `host-error`. An open set, as in the contract.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The plugin's grants or scope do not allow this call.
    #[error("denied: {0}")]
    Denied(String),
    #[error("not found: {0}")]
    NotFound(String),
    #[error("conflict: {0}")]
    Conflict(String),
    #[error("invalid: {0}")]
    Invalid(String),
    /// The dependency is down or throttled, or the host does not implement the call yet.
    #[error("unavailable: {0}")]
    Unavailable(String),
    #[error("timeout: {0}")]
    Timeout(String),
    /// A remote service refused the credentials presented for the plugin.
    #[error("unauthenticated: {0}")]
    Unauthenticated(String),
    /// A remote service refused the operation for the credentials' role.
    #[error("forbidden: {0}")]
    Forbidden(String),
    #[error("{0}")]
    Other(String),
}

impl From<HostError> for wit::HostError {
    fn from(e: HostError) -> Self {
        match e {
            HostError::Denied(m) => wit::HostError::Denied(m),
            HostError::NotFound(m) => wit::HostError::NotFound(m),
            HostError::Conflict(m) => wit::HostError::Conflict(m),
            HostError::Invalid(m) => wit::HostError::Invalid(m),
            HostError::Unavailable(m) => wit::HostError::Unavailable(m),
            HostError::Timeout(m) => wit::HostError::Timeout(m),
            HostError::Unauthenticated(m) => wit::HostError::Unauthenticated(m),
            HostError::Forbidden(m) => wit::HostError::Forbidden(m),
            HostError::Other(m) => wit::HostError::Other(m),
        }
    }
}
