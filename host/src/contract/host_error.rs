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
    /// The API server refused a written object as invalid, naming the fields.
    #[error("invalid: {}", .0.message)]
    Rejected(Rejection),
    #[error("{0}")]
    Other(String),
}

/// An object the API server refused (HTTP 422), with the fields its answer's `details.causes` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub message: String,
    pub causes: Vec<FieldCause>,
}

/// One field the API server refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldCause {
    pub field: String,
    pub reason: String,
    pub message: String,
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
            HostError::Rejected(_) => "rejected",
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
            HostError::Rejected(r) => &r.message,
        }
    }

    /// The error of case `case` (as [`HostError::case`] names it); an unknown case is `other`, and `rejected`,
    /// whose causes a message does not carry, is `invalid`.
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
            "rejected" => HostError::Invalid(message),
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
                let text = format!("{what}: {}", s.message);
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

    /// [`HostError::from_kube`] for a write a plugin made: an object the API server refuses as invalid (422) is
    /// `rejected`, with the fields its answer names, so the plugin can tell which of its fields to fix.
    pub fn from_kube_write(what: &str, e: kube::Error) -> HostError {
        match e {
            kube::Error::Api(s) if s.code == 422 => {
                let causes = s
                    .details
                    .iter()
                    .flat_map(|d| &d.causes)
                    .map(|c| FieldCause {
                        field: c.field.clone(),
                        reason: c.reason.clone(),
                        message: c.message.clone(),
                    })
                    .collect();
                HostError::Rejected(Rejection {
                    message: format!("{what}: {}", s.message),
                    causes,
                })
            }
            other => HostError::from_kube(what, other),
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
            HostError::Rejected(r) => wit::HostError::Rejected(wit::Rejection {
                message: r.message,
                causes: r
                    .causes
                    .into_iter()
                    .map(|c| wit::FieldCause {
                        field: c.field,
                        reason: c.reason,
                        message: c.message,
                    })
                    .collect(),
            }),
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

#[cfg(test)]
mod tests {
    use kube::core::response::{Status, StatusCause, StatusDetails};

    use super::*;

    fn api_error(code: u16, causes: Vec<StatusCause>) -> kube::Error {
        let mut status = Status::failure("ConfigMap \"Bad\" is invalid", "Invalid").with_code(code);
        status.details = Some(StatusDetails {
            name: "Bad".into(),
            group: String::new(),
            kind: "configmaps".into(),
            uid: String::new(),
            causes,
            retry_after_seconds: 0,
        });
        kube::Error::Api(Box::new(status))
    }

    #[test]
    fn an_object_the_api_server_refuses_is_rejected_with_its_fields_only_for_writes() {
        let cause = StatusCause {
            reason: "FieldValueInvalid".into(),
            message: "Invalid value: \"Bad\"".into(),
            field: "metadata.name".into(),
        };
        let written = HostError::from_kube_write("apply ConfigMap", api_error(422, vec![cause]));
        let HostError::Rejected(rejection) = &written else {
            panic!("{written:?}")
        };
        assert_eq!(rejection.causes.len(), 1);
        assert_eq!(rejection.causes[0].field, "metadata.name");
        assert_eq!(rejection.causes[0].reason, "FieldValueInvalid");
        assert!(
            rejection.message.starts_with("apply ConfigMap: "),
            "{written}"
        );
        assert_eq!(written.case(), "rejected");
        // Other capabilities answer what they always did; a conflict stays a conflict for writes too.
        assert!(matches!(
            HostError::from_kube("copy", api_error(422, Vec::new())),
            HostError::Invalid(_)
        ));
        assert!(matches!(
            HostError::from_kube_write("apply", api_error(409, Vec::new())),
            HostError::Conflict(_)
        ));
    }
}
