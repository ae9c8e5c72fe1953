//! What plugins answer, in host types: the controllers use these, never the generated binding types, so a
//! second contract version can feed the same controllers.

use crate::contract::bindings::exports::omni::operator::{
    plugin as wit_plugin, validator as wit_validator,
};
use crate::contract::bindings::omni::operator::types as wit;
use crate::contract::{SecretField, truncate};

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
    /// The related object's controller owner; every change of the related object triggers (an owned child).
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

/// Field errors a verdict keeps: beyond them one cause says how many more there were.
pub const MAX_CAUSES: usize = 100;
/// Bytes of a field path, a detail and an offending value a verdict keeps of each error.
const MAX_FIELD: usize = 256;
const MAX_DETAIL: usize = 1024;
const MAX_VALUE: usize = 1024;
/// The API server's own limits on admission warnings: each cut to 256 characters, and warnings past 4,096
/// characters in all dropped (Kubernetes' dynamic admission control documentation, "Response").
pub const MAX_WARNING: usize = 256;
pub const MAX_WARNINGS_TOTAL: usize = 4096;

impl From<wit_validator::Verdict> for Verdict {
    /// A plugin's verdict is bad input like any of its output: bounded here, before it becomes an answer to the
    /// API server, in the number of causes and in every string (a hostile `validate` answering a 48 MiB detail or
    /// 200,000 errors gets a review of a few kilobytes).
    fn from(v: wit_validator::Verdict) -> Self {
        let total = v.errors.len();
        let mut errors: Vec<FieldError> = v
            .errors
            .into_iter()
            .take(MAX_CAUSES)
            .map(|e| {
                let (mut field, mut detail) = (e.field, e.detail);
                truncate(&mut field, MAX_FIELD);
                truncate(&mut detail, MAX_DETAIL);
                FieldError {
                    field,
                    type_: match e.type_ {
                        wit_validator::FieldErrorType::Required => FieldErrorType::Required,
                        wit_validator::FieldErrorType::Invalid => FieldErrorType::Invalid,
                        wit_validator::FieldErrorType::Forbidden => FieldErrorType::Forbidden,
                        wit_validator::FieldErrorType::Duplicate => FieldErrorType::Duplicate,
                        wit_validator::FieldErrorType::NotSupported => FieldErrorType::NotSupported,
                    },
                    value: e.value.map(|mut v| {
                        truncate(&mut v, MAX_VALUE);
                        v
                    }),
                    detail,
                }
            })
            .collect();
        if total > MAX_CAUSES {
            errors.push(FieldError {
                field: String::new(),
                type_: FieldErrorType::Invalid,
                value: None,
                detail: format!("and {} more errors not shown", total - MAX_CAUSES),
            });
        }
        let mut warnings = Vec::new();
        let mut used = 0;
        for mut w in v.warnings {
            truncate(&mut w, MAX_WARNING);
            used += w.len();
            if used > MAX_WARNINGS_TOTAL {
                break;
            }
            warnings.push(w);
        }
        Verdict { errors, warnings }
    }
}
