//! What plugins answer, in host types: the controllers use these, never the generated binding types, so a
//! second contract version can feed the same controllers.

use crate::contract::SecretField;
use crate::contract::bindings::exports::omni::operator::{
    plugin as wit_plugin, validator as wit_validator,
};
use crate::contract::bindings::omni::operator::types as wit;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Gvk {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl Gvk {
    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// How changes of a related kind map to the reconciled objects (same namespace, except `Annotated`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RelatedMapping {
    /// Reconciled objects whose field at this dotted path equals the related object's name.
    NameField(String),
    /// The related object's controller owner.
    Owner,
    /// The reconciled object named by the related object's field at this dotted path.
    NamedBy(String),
    /// The reconciled object two annotations of the related object name (namespace, name); an empty namespace
    /// annotation means the related object's namespace.
    Annotated {
        namespace_annotation: String,
        name_annotation: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelatedKind {
    pub kind: Gvk,
    pub mapping: RelatedMapping,
}

/// What a plugin says it is, from `describe` at load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Info {
    pub name: String,
    pub version: String,
    pub kinds: Vec<Gvk>,
    pub related: Vec<RelatedKind>,
    pub finalizer: Option<String>,
    pub legacy_finalizers: Vec<String>,
    /// Capability names the plugin declares it needs.
    pub capabilities: Vec<String>,
    /// The fields of the reconciled object that name the Secrets the plugin may reach.
    pub secret_fields: Vec<SecretField>,
}

/// A reconcile or finalize the plugin itself declined.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReconcileError {
    /// Retry with backoff.
    #[error("transient: {0}")]
    Transient(String),
    /// Needs a change to the object or its inputs.
    #[error("permanent: {0}")]
    Permanent(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorType {
    Required,
    Invalid,
    Forbidden,
    Duplicate,
    NotSupported,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub type_: FieldErrorType,
    /// The offending value as JSON, when the plugin gave one.
    pub value: Option<String>,
    pub detail: String,
}

/// An admission answer: allowed when `errors` is empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    pub errors: Vec<FieldError>,
    pub warnings: Vec<String>,
}

impl Verdict {
    pub fn allowed(&self) -> bool {
        self.errors.is_empty()
    }
}

impl From<wit::Gvk> for Gvk {
    fn from(g: wit::Gvk) -> Self {
        Gvk {
            group: g.group,
            version: g.version,
            kind: g.kind,
        }
    }
}

impl From<wit_plugin::Info> for Info {
    fn from(info: wit_plugin::Info) -> Self {
        Info {
            name: info.name,
            version: info.version,
            kinds: info.kinds.into_iter().map(Gvk::from).collect(),
            related: info
                .related
                .into_iter()
                .map(|r| RelatedKind {
                    kind: r.kind.into(),
                    mapping: match r.mapping {
                        wit_plugin::RelatedMapping::NameField(path) => {
                            RelatedMapping::NameField(path)
                        }
                        wit_plugin::RelatedMapping::Owner => RelatedMapping::Owner,
                        wit_plugin::RelatedMapping::NamedBy(path) => RelatedMapping::NamedBy(path),
                        wit_plugin::RelatedMapping::Annotated(a) => RelatedMapping::Annotated {
                            namespace_annotation: a.namespace_annotation,
                            name_annotation: a.name_annotation,
                        },
                    },
                })
                .collect(),
            finalizer: info.finalizer,
            legacy_finalizers: info.legacy_finalizers,
            capabilities: info.capabilities,
            secret_fields: info
                .secret_fields
                .into_iter()
                .map(|f| SecretField {
                    name: f.name,
                    namespace: f.namespace,
                })
                .collect(),
        }
    }
}

impl From<wit::ReconcileError> for ReconcileError {
    fn from(e: wit::ReconcileError) -> Self {
        match e {
            wit::ReconcileError::Transient(m) => ReconcileError::Transient(m),
            wit::ReconcileError::Permanent(m) => ReconcileError::Permanent(m),
        }
    }
}

impl From<wit_validator::Verdict> for Verdict {
    fn from(v: wit_validator::Verdict) -> Self {
        Verdict {
            errors: v
                .errors
                .into_iter()
                .map(|e| FieldError {
                    field: e.field,
                    type_: match e.type_ {
                        wit_validator::FieldErrorType::Required => FieldErrorType::Required,
                        wit_validator::FieldErrorType::Invalid => FieldErrorType::Invalid,
                        wit_validator::FieldErrorType::Forbidden => FieldErrorType::Forbidden,
                        wit_validator::FieldErrorType::Duplicate => FieldErrorType::Duplicate,
                        wit_validator::FieldErrorType::NotSupported => FieldErrorType::NotSupported,
                    },
                    value: e.value,
                    detail: e.detail,
                })
                .collect(),
            warnings: v.warnings,
        }
    }
}
