//! The SDK's own types: stable Rust names for what crosses the WIT boundary. Enums that may grow are
//! `#[non_exhaustive]`, so new cases in later contract versions do not break plugins.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gvk {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl Gvk {
    pub fn new(group: &str, version: &str, kind: &str) -> Self {
        Gvk {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// An object by kind and name; `namespace: None` means the reconciled object's namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectRef {
    /// A namespaced object in the reconciled object's namespace.
    pub fn local(api_version: &str, kind: &str, name: &str) -> Self {
        ObjectRef {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: None,
            name: name.into(),
        }
    }
}

/// A list of one kind. `Default` leaves every field empty, so a query names only what it filters on:
/// `ListQuery { api_version: .., kind: .., field_selector: Some(..), ..ListQuery::default() }`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListQuery {
    pub api_version: String,
    pub kind: String,
    /// `None`: the reconciled object's namespace.
    pub namespace: Option<String>,
    pub label_selector: Option<String>,
    /// Kubernetes field-selector syntax, e.g. `spec.clusterRef.name=edge` (terms `path=value`, `path==value`,
    /// `path!=value`, comma-separated, all must hold). The operator filters before objects reach the plugin, so
    /// selecting the few children of one cluster stays cheap however many objects the namespace holds.
    pub field_selector: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub type_: String,
    pub status: ConditionStatus,
    pub reason: String,
    pub message: String,
}

impl Condition {
    pub fn new(type_: &str, status: bool, reason: &str, message: impl Into<String>) -> Self {
        Condition {
            type_: type_.into(),
            status: if status {
                ConditionStatus::True
            } else {
                ConditionStatus::False
            },
            reason: reason.into(),
            message: message.into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// A host capability failed. New kinds arrive as `Other` until a contract major version.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostError {
    /// Not granted to this plugin; the operator also reports the violation.
    Denied(String),
    NotFound(String),
    Conflict(String),
    Invalid(String),
    /// Down, throttled, or not implemented by this operator version; retry later.
    Unavailable(String),
    Timeout(String),
    /// A remote service (Omni, a workload cluster) refused the credentials the operator presented.
    Unauthenticated(String),
    /// A remote service refused the operation for the credentials' role or permissions.
    Forbidden(String),
    /// The API server refused a written object as invalid, naming the fields (`kube-write`).
    Rejected(Rejection),
    Other(String),
}

/// An object the API server refused, with the fields it named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub message: String,
    pub causes: Vec<FieldCause>,
}

/// One field the API server refused: its path (`spec.replicas`), Kubernetes' reason (`FieldValueInvalid`) and
/// the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldCause {
    pub field: String,
    pub reason: String,
    pub message: String,
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostError::Denied(m) => write!(f, "denied: {m}"),
            HostError::NotFound(m) => write!(f, "not found: {m}"),
            HostError::Conflict(m) => write!(f, "conflict: {m}"),
            HostError::Invalid(m) => write!(f, "invalid: {m}"),
            HostError::Unavailable(m) => write!(f, "unavailable: {m}"),
            HostError::Timeout(m) => write!(f, "timeout: {m}"),
            HostError::Unauthenticated(m) => write!(f, "unauthenticated: {m}"),
            HostError::Forbidden(m) => write!(f, "forbidden: {m}"),
            HostError::Rejected(r) => {
                write!(f, "invalid: {}", r.message)?;
                for c in &r.causes {
                    write!(f, "; {}: {}", c.field, c.message)?;
                }
                Ok(())
            }
            HostError::Other(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for HostError {}

impl HostError {
    /// The message without the kind prefix that `Display` adds: for texts a plugin passes on, such as the
    /// operator's `MissingSecret "x": …` or `list Omni clusters: rpc error: …`.
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

    /// The message for a condition or status: [`HostError::message`], or, when the host gave none, the error's
    /// kind (`timeout`, `forbidden`, …), so a reported failure never reads empty.
    pub fn text(&self) -> String {
        let inner = self.message();
        if !inner.trim().is_empty() {
            return inner.to_string();
        }
        let kind = self.to_string();
        let kind = kind.trim().trim_end_matches(':');
        if kind.is_empty() {
            "the operator gave no reason".into()
        } else {
            kind.into()
        }
    }
}

/// Why a reconcile did not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReconcileError {
    /// Retried with backoff.
    Transient(String),
    /// Needs a change to the object or its inputs; not retried until one happens.
    Permanent(String),
}

impl From<HostError> for ReconcileError {
    /// A failed host call is worth retrying unless the plugin was denied the capability.
    fn from(e: HostError) -> Self {
        match e {
            HostError::Denied(_) | HostError::Invalid(_) | HostError::Rejected(_) => {
                ReconcileError::Permanent(e.to_string())
            }
            other => ReconcileError::Transient(other.to_string()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RelatedMapping {
    /// Reconciled objects whose field at this dotted path equals the related object's name.
    NameField(String),
    /// Reconciled objects named as the related object's controller owner: the plugin's owned children
    /// ([`KubeWrite::apply_owned`](crate::KubeWrite::apply_owned)). Every change of a child calls the owner's
    /// plugin again, its status included, so it can report readiness from its children.
    Owner,
    /// The reconciled object named by the related object's field at this dotted path, e.g. the OmniConnection
    /// an OmniCluster's `spec.connectionRef.name` names.
    NamedBy(String),
    /// The reconciled object two annotations of the related object name, in any namespace (e.g. a Secret an
    /// export wrote names its export); an empty namespace annotation means the related object's namespace.
    Annotated {
        namespace_annotation: String,
        name_annotation: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Related {
    pub kind: Gvk,
    pub mapping: RelatedMapping,
}

impl Related {
    /// Children of this kind the plugin owns: the operator watches the kind, and a child's change (a Deployment
    /// becoming ready, a child deleted behind the plugin's back) calls the plugin for its owner.
    pub fn owned(kind: Gvk) -> Self {
        Related {
            kind,
            mapping: RelatedMapping::Owner,
        }
    }
}

/// What a plugin is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Info {
    pub name: String,
    pub version: String,
    pub kinds: Vec<Gvk>,
    pub related: Vec<Related>,
    pub finalizer: Option<String>,
    pub legacy_finalizers: Vec<String>,
    /// Capability names: `kube-read`, `kube-write`, `secrets`, `secrets-read-values`, `omni`, `workload`,
    /// `helm`, `files`.
    pub capabilities: Vec<String>,
    /// The fields of the reconciled object that name Secrets; the host lets the plugin reach no other Secret.
    pub secret_fields: Vec<SecretField>,
}

/// Where the reconciled object names a Secret: dotted paths to its name and, optionally, its namespace (absent
/// or empty: the object's own namespace).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SecretField {
    pub name: String,
    pub namespace: Option<String>,
}

impl SecretField {
    /// A Secret in the object's own namespace, named at `name`.
    pub fn local(name: impl Into<String>) -> Self {
        SecretField {
            name: name.into(),
            namespace: None,
        }
    }

    /// A Secret named at `name`, in the namespace at `namespace` (the object's own when that is empty).
    pub fn with_namespace(name: impl Into<String>, namespace: impl Into<String>) -> Self {
        SecretField {
            name: name.into(),
            namespace: Some(namespace.into()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorType {
    Required,
    Invalid,
    Forbidden,
    Duplicate,
    NotSupported,
}

/// One field error, rendered by the operator as Kubernetes does: `spec.x: Invalid value: "v": detail`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub field: String,
    pub type_: FieldErrorType,
    pub value: Option<Value>,
    pub detail: String,
}

/// The outcome of admission checks: allowed when `errors` is empty.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Verdict {
    pub errors: Vec<FieldError>,
    pub warnings: Vec<String>,
}

impl Verdict {
    pub fn allowed(&self) -> bool {
        self.errors.is_empty()
    }

    fn push(&mut self, field: &str, type_: FieldErrorType, value: Option<Value>, detail: &str) {
        self.errors.push(FieldError {
            field: field.into(),
            type_,
            value,
            detail: detail.into(),
        });
    }

    pub fn required(&mut self, field: &str, detail: &str) {
        self.push(field, FieldErrorType::Required, None, detail);
    }

    pub fn invalid(&mut self, field: &str, value: Value, detail: &str) {
        self.push(field, FieldErrorType::Invalid, Some(value), detail);
    }

    pub fn forbidden(&mut self, field: &str, detail: &str) {
        self.push(field, FieldErrorType::Forbidden, None, detail);
    }

    pub fn duplicate(&mut self, field: &str, value: Value) {
        self.push(field, FieldErrorType::Duplicate, Some(value), "");
    }

    /// `supported values: "a", "b"`.
    pub fn not_supported(&mut self, field: &str, value: Value, supported: &[&str]) {
        let list = supported
            .iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        self.push(
            field,
            FieldErrorType::NotSupported,
            Some(value),
            &format!("supported values: {list}"),
        );
    }

    pub fn warn(&mut self, message: &str) {
        self.warnings.push(message.into());
    }

    /// The errors as Kubernetes prints them, for test assertions and logs.
    pub fn messages(&self) -> Vec<String> {
        self.errors.iter().map(FieldError::to_string).collect()
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.type_ {
            FieldErrorType::Required => "Required value",
            FieldErrorType::Invalid => "Invalid value",
            FieldErrorType::Forbidden => "Forbidden",
            FieldErrorType::Duplicate => "Duplicate value",
            FieldErrorType::NotSupported => "Unsupported value",
        };
        write!(f, "{}: {kind}", self.field)?;
        if let Some(v) = &self.value {
            write!(f, ": {v}")?;
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_error_text_drops_the_kind_prefix_but_never_ends_empty() {
        assert_eq!(
            HostError::Unavailable("cluster down".into()).text(),
            "cluster down"
        );
        assert_eq!(HostError::Timeout(" ".into()).text(), "timeout");
        assert_eq!(HostError::Forbidden(String::new()).text(), "forbidden");
        assert_eq!(
            HostError::Other(String::new()).text(),
            "the operator gave no reason"
        );
    }
}
