//! The host-side form of the contract's `host-error`, so capability implementations (and the `KubeReader`s that
//! controllers supply) never touch generated binding types.

use super::bindings::omni::operator::types as wit;

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

impl HostError {
    /// The contract's name of the case (`not-found`, …), as transcripts store it.
    pub fn case(&self) -> &'static str {
        match self {
            HostError::Denied(_) => "denied",
            HostError::NotFound(_) => "not-found",
            HostError::Conflict(_) => "conflict",
            HostError::Invalid(_) => "invalid",
            HostError::Unavailable(_) => "unavailable",
            HostError::Timeout(_) => "timeout",
            HostError::Unauthenticated(_) => "unauthenticated",
            HostError::Forbidden(_) => "forbidden",
            HostError::Other(_) => "other",
        }
    }

    /// The case's text.
    pub fn message(&self) -> &str {
        match self {
            HostError::Denied(m)
            | HostError::NotFound(m)
            | HostError::Conflict(m)
            | HostError::Invalid(m)
            | HostError::Unavailable(m)
            | HostError::Timeout(m)
            | HostError::Unauthenticated(m)
            | HostError::Forbidden(m)
            | HostError::Other(m) => m,
        }
    }

    /// The error of case `case` (as [`HostError::case`] names it); an unknown case is `other`.
    pub fn from_case(case: &str, message: String) -> HostError {
        match case {
            "denied" => HostError::Denied(message),
            "not-found" => HostError::NotFound(message),
            "conflict" => HostError::Conflict(message),
            "invalid" => HostError::Invalid(message),
            "unavailable" => HostError::Unavailable(message),
            "timeout" => HostError::Timeout(message),
            "unauthenticated" => HostError::Unauthenticated(message),
            "forbidden" => HostError::Forbidden(message),
            _ => HostError::Other(message),
        }
    }

    /// The one mapping of a Kubernetes API failure to the contract's answer, for every capability that talks to
    /// an API server (management or workload cluster): 401 unauthenticated, 403 forbidden (the operator's own
    /// credentials lack the permission: not the plugin's grants), 404 not-found, 409 conflict, 400/422 invalid,
    /// 429 and 5xx unavailable; a server that does not answer is unavailable. `what` names the operation.
    pub fn from_kube(what: &str, e: kube::Error) -> HostError {
        match e {
            kube::Error::Api(s) => {
                // The API server's validation names each field it refuses (`details.causes`); those, one per
                // `; `, say more to a plugin than the summary, which quotes them less regularly.
                let causes: Vec<String> = s
                    .details
                    .iter()
                    .flat_map(|d| &d.causes)
                    .filter(|c| !c.field.is_empty())
                    .map(|c| format!("{}: {}", c.field, c.message))
                    .collect();
                let text = if s.code == 422 && !causes.is_empty() {
                    format!("{what}: {}", causes.join("; "))
                } else {
                    format!("{what}: {}", s.message)
                };
                match s.code {
                    401 => HostError::Unauthenticated(text),
                    403 => HostError::Forbidden(text),
                    404 => HostError::NotFound(text),
                    409 => HostError::Conflict(text),
                    400 | 422 => HostError::Invalid(text),
                    429 | 500.. => HostError::Unavailable(text),
                    _ => HostError::Other(text),
                }
            }
            // Connection refused, DNS, TLS, a closed connection: the cluster did not answer.
            other => HostError::Unavailable(format!("{what}: {other}")),
        }
    }
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

/// What a capability function fails with: an answer for the plugin (`host-error`), or a trap that ends the call
/// (a host fault, an output violation). Capability code returns `Result<T, HostFailure>` and uses `?` on both.
#[derive(Debug)]
pub enum HostFailure {
    Host(HostError),
    Trap(wasmtime::Error),
}

impl From<HostError> for HostFailure {
    fn from(e: HostError) -> Self {
        HostFailure::Host(e)
    }
}

impl From<wasmtime::Error> for HostFailure {
    fn from(e: wasmtime::Error) -> Self {
        HostFailure::Trap(e)
    }
}

impl From<wasmtime::component::ResourceTableError> for HostFailure {
    fn from(e: wasmtime::component::ResourceTableError) -> Self {
        HostFailure::Trap(wasmtime::Error::new(e))
    }
}

impl HostFailure {
    /// The contract's answer, or the trap.
    pub fn into_answer(self) -> wasmtime::Result<wit::HostError> {
        match self {
            HostFailure::Host(e) => Ok(e.into()),
            HostFailure::Trap(e) => Err(e),
        }
    }
}
