//! Between the SDK's types (what native plugin logic speaks) and the contract's host-side binding types (what the
//! capability implementations and the runtime speak): the one place a native call crosses that line, as the
//! canonical ABI does for a component.

use omni_plugin_sdk as sdk;
use omni_plugin_sdk::omni as sdk_omni;
use omni_plugin_sdk::secrets as sdk_secrets;
use serde_json::Value;

use crate::contract::bindings::exports::omni::operator::{
    plugin as wit_plugin, validator as wit_validator,
};
use crate::contract::bindings::omni::operator::context as wit_context;
use crate::contract::bindings::omni::operator::kube_read as wit_kube_read;
use crate::contract::bindings::omni::operator::kube_write as wit_kube_write;
use crate::contract::bindings::omni::operator::omni as wit_omni;
use crate::contract::bindings::omni::operator::secrets as wit_secrets;
use crate::contract::bindings::omni::operator::types as wit;
use crate::contract::bindings::omni::operator::workload as wit_workload;

pub(super) fn info(info: sdk::Info) -> wit_plugin::Info {
    let sdk::Info {
        name,
        version,
        kinds,
        related,
        finalizer,
        legacy_finalizers,
        capabilities,
        secret_fields,
    } = info;
    wit_plugin::Info {
        name,
        version,
        kinds: kinds.into_iter().map(gvk).collect(),
        related: related
            .into_iter()
            .map(|r| wit_plugin::RelatedKind {
                kind: gvk(r.kind),
                mapping: match r.mapping {
                    sdk::RelatedMapping::NameField(path) => {
                        wit_plugin::RelatedMapping::NameField(path)
                    }
                    sdk::RelatedMapping::Owner => wit_plugin::RelatedMapping::Owner,
                    sdk::RelatedMapping::NamedBy(path) => wit_plugin::RelatedMapping::NamedBy(path),
                    sdk::RelatedMapping::Annotated {
                        namespace_annotation,
                        name_annotation,
                    } => wit_plugin::RelatedMapping::Annotated(wit_plugin::AnnotationRef {
                        namespace_annotation,
                        name_annotation,
                    }),
                },
            })
            .collect(),
        finalizer,
        legacy_finalizers,
        capabilities,
        secret_fields: secret_fields
            .into_iter()
            .map(|f| wit_plugin::SecretField {
                name: f.name,
                namespace: f.namespace,
            })
            .collect(),
    }
}

fn gvk(g: sdk::Gvk) -> wit::Gvk {
    wit::Gvk {
        group: g.group,
        version: g.version,
        kind: g.kind,
    }
}

pub(super) fn reconcile_error(e: sdk::ReconcileError) -> wit::ReconcileError {
    match e {
        sdk::ReconcileError::Transient(m) => wit::ReconcileError::Transient(m),
        sdk::ReconcileError::Permanent(m) => wit::ReconcileError::Permanent(m),
    }
}

pub(super) fn verdict(v: sdk::Verdict) -> wit_validator::Verdict {
    wit_validator::Verdict {
        errors: v
            .errors
            .into_iter()
            .map(|e| wit_validator::FieldError {
                field: e.field,
                type_: match e.type_ {
                    sdk::FieldErrorType::Required => wit_validator::FieldErrorType::Required,
                    sdk::FieldErrorType::Invalid => wit_validator::FieldErrorType::Invalid,
                    sdk::FieldErrorType::Forbidden => wit_validator::FieldErrorType::Forbidden,
                    sdk::FieldErrorType::Duplicate => wit_validator::FieldErrorType::Duplicate,
                    sdk::FieldErrorType::NotSupported => {
                        wit_validator::FieldErrorType::NotSupported
                    }
                },
                value: e.value.map(|v| v.to_string()),
                detail: e.detail,
            })
            .collect(),
        warnings: v.warnings,
    }
}

/// What the SDK's component glue answers for an object that is not JSON (the host never sends one).
pub(super) fn unparsable(e: &serde_json::Error) -> wit_validator::Verdict {
    wit_validator::Verdict {
        errors: vec![wit_validator::FieldError {
            field: "<root>".into(),
            type_: wit_validator::FieldErrorType::Invalid,
            value: None,
            detail: format!("the object is not valid JSON: {e}"),
        }],
        warnings: Vec::new(),
    }
}

pub(super) fn condition(c: sdk::Condition) -> wit_context::Condition {
    wit_context::Condition {
        type_: c.type_,
        status: match c.status {
            sdk::ConditionStatus::True => wit_context::ConditionStatus::True,
            sdk::ConditionStatus::False => wit_context::ConditionStatus::False,
            sdk::ConditionStatus::Unknown => wit_context::ConditionStatus::Unknown,
        },
        reason: c.reason,
        message: c.message,
    }
}

pub(super) fn event_type(kind: sdk::EventType) -> wit_context::EventType {
    match kind {
        sdk::EventType::Normal => wit_context::EventType::Normal,
        sdk::EventType::Warning => wit_context::EventType::Warning,
    }
}

pub(super) fn log_level(level: sdk::LogLevel) -> wit::LogLevel {
    match level {
        sdk::LogLevel::Trace => wit::LogLevel::Trace,
        sdk::LogLevel::Debug => wit::LogLevel::Debug,
        sdk::LogLevel::Info => wit::LogLevel::Info,
        sdk::LogLevel::Warn => wit::LogLevel::Warn,
        sdk::LogLevel::Error => wit::LogLevel::Error,
    }
}

pub(super) fn object_ref(r: &sdk::ObjectRef) -> wit::ObjectRef {
    wit::ObjectRef {
        api_version: r.api_version.clone(),
        kind: r.kind.clone(),
        namespace: r.namespace.clone(),
        name: r.name.clone(),
    }
}

pub(super) fn write_options(o: sdk::kube_write::WriteOptions) -> wit_kube_write::WriteOptions {
    wit_kube_write::WriteOptions {
        owned: o.owned,
        dry_run: o.dry_run,
        force: o.force,
    }
}

/// A patch as its type and its JSON text.
pub(super) fn patch(p: &sdk::kube_write::Patch) -> (wit_kube_write::PatchType, String) {
    match p {
        sdk::kube_write::Patch::Merge(v) => (wit_kube_write::PatchType::Merge, v.to_string()),
        sdk::kube_write::Patch::Json(v) => (wit_kube_write::PatchType::Json, v.to_string()),
    }
}

pub(super) fn delete_options(o: &sdk::kube_write::DeleteOptions) -> wit_kube_write::DeleteOptions {
    use sdk::kube_write::Propagation;
    wit_kube_write::DeleteOptions {
        uid: o.uid.clone(),
        resource_version: o.resource_version.clone(),
        propagation: match o.propagation {
            Propagation::Background => wit_kube_write::Propagation::Background,
            Propagation::Foreground => wit_kube_write::Propagation::Foreground,
            Propagation::Orphan => wit_kube_write::Propagation::Orphan,
        },
        dry_run: o.dry_run,
    }
}

pub(super) fn list_query(q: &sdk::ListQuery) -> wit_kube_read::ListQuery {
    wit_kube_read::ListQuery {
        api_version: q.api_version.clone(),
        kind: q.kind.clone(),
        namespace: q.namespace.clone(),
        label_selector: q.label_selector.clone(),
        field_selector: q.field_selector.clone(),
    }
}

pub(super) fn host_error(e: wit::HostError) -> sdk::HostError {
    match e {
        wit::HostError::Denied(m) => sdk::HostError::Denied(m),
        wit::HostError::NotFound(m) => sdk::HostError::NotFound(m),
        wit::HostError::Conflict(m) => sdk::HostError::Conflict(m),
        wit::HostError::Invalid(m) => sdk::HostError::Invalid(m),
        wit::HostError::Unavailable(m) => sdk::HostError::Unavailable(m),
        wit::HostError::Timeout(m) => sdk::HostError::Timeout(m),
        wit::HostError::Unauthenticated(m) => sdk::HostError::Unauthenticated(m),
        wit::HostError::Forbidden(m) => sdk::HostError::Forbidden(m),
        wit::HostError::Rejected(r) => sdk::HostError::Rejected(sdk::Rejection {
            message: r.message,
            causes: r
                .causes
                .into_iter()
                .map(|c| sdk::FieldCause {
                    field: c.field,
                    reason: c.reason,
                    message: c.message,
                })
                .collect(),
        }),
        wit::HostError::Other(m) => sdk::HostError::Other(m),
    }
}

/// JSON a capability returned, parsed as the SDK's component glue parses it.
pub(super) fn parse(json: &str) -> Result<Value, sdk::HostError> {
    serde_json::from_str(json)
        .map_err(|e| sdk::HostError::Invalid(format!("the operator returned invalid JSON: {e}")))
}

pub(super) fn resource_key(key: &sdk_omni::ResourceKey) -> wit_omni::ResourceKey {
    wit_omni::ResourceKey {
        namespace: key.namespace.clone(),
        type_: key.type_.clone(),
        id: key.id.clone(),
    }
}

pub(super) fn label_term(term: &sdk_omni::LabelTerm) -> wit_omni::LabelTerm {
    wit_omni::LabelTerm {
        key: term.key.clone(),
        op: match term.op {
            sdk_omni::LabelOp::Exists => wit_omni::LabelOp::Exists,
            sdk_omni::LabelOp::Equal => wit_omni::LabelOp::Equal,
            sdk_omni::LabelOp::In => wit_omni::LabelOp::In,
            sdk_omni::LabelOp::Lt => wit_omni::LabelOp::Lt,
            sdk_omni::LabelOp::Lte => wit_omni::LabelOp::Lte,
            sdk_omni::LabelOp::LtNumeric => wit_omni::LabelOp::LtNumeric,
            sdk_omni::LabelOp::LteNumeric => wit_omni::LabelOp::LteNumeric,
        },
        values: term.values.clone(),
        invert: term.invert,
    }
}

pub(super) fn to_resource(r: &sdk_omni::OmniResource) -> wit_omni::Resource {
    wit_omni::Resource {
        key: resource_key(&r.key),
        version: r.version.clone(),
        owner: r.owner.clone(),
        phase: match r.phase {
            sdk_omni::Phase::Running => wit_omni::Phase::Running,
            sdk_omni::Phase::TearingDown => wit_omni::Phase::TearingDown,
        },
        labels: r.labels.clone(),
        annotations: r.annotations.clone(),
        finalizers: r.finalizers.clone(),
        spec: r.spec.clone(),
        unreadable: r.unreadable.clone(),
    }
}

pub(super) fn from_resource(r: wit_omni::Resource) -> sdk_omni::OmniResource {
    sdk_omni::OmniResource {
        key: sdk_omni::ResourceKey {
            namespace: r.key.namespace,
            type_: r.key.type_,
            id: r.key.id,
        },
        version: r.version,
        owner: r.owner,
        phase: match r.phase {
            wit_omni::Phase::Running => sdk_omni::Phase::Running,
            wit_omni::Phase::TearingDown => sdk_omni::Phase::TearingDown,
        },
        labels: r.labels,
        annotations: r.annotations,
        finalizers: r.finalizers,
        spec: r.spec,
        unreadable: r.unreadable,
    }
}

pub(super) fn cluster_health(h: wit_omni::ClusterHealth) -> sdk_omni::ClusterHealth {
    sdk_omni::ClusterHealth {
        phase: h.phase,
        ready: h.ready,
        healthy: h.healthy,
        findings: h.findings,
    }
}

pub(super) fn secret_key(key: &sdk_secrets::SecretKeyRef) -> wit::SecretKeyRef {
    wit::SecretKeyRef {
        namespace: key.namespace.clone(),
        name: key.name.clone(),
        key: key.key.clone(),
    }
}

pub(super) fn owner(owner: &sdk_secrets::OwnerLabel) -> wit::OwnerLabel {
    wit::OwnerLabel {
        key: owner.key.clone(),
        value: owner.value.clone(),
    }
}

pub(super) fn removal(r: wit::Removal) -> sdk_secrets::Removal {
    match r {
        wit::Removal::Deleted => sdk_secrets::Removal::Deleted,
        wit::Removal::Absent => sdk_secrets::Removal::Absent,
        wit::Removal::NotOwned => sdk_secrets::Removal::NotOwned,
    }
}

/// Labels and annotations cross as JSON objects; the host always sends objects.
fn json_object(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::Object(Default::default()))
}

pub(super) fn secret_info(i: wit_secrets::SecretInfo) -> sdk_secrets::SecretInfo {
    sdk_secrets::SecretInfo {
        secret_type: i.secret_type,
        keys: i.keys,
        resource_version: i.resource_version,
        labels: json_object(&i.labels),
        annotations: json_object(&i.annotations),
    }
}

pub(super) fn kubeconfig_export(r: &sdk_secrets::KubeconfigExport) -> wit_omni::KubeconfigExport {
    wit_omni::KubeconfigExport {
        cluster: r.cluster.clone(),
        user: r.user.clone(),
        groups: r.groups.clone(),
        ttl_ns: r.ttl_ns,
        target: secret_key(&r.target),
        remove_key: r.remove_key.clone(),
        context_namespace: r.context_namespace.clone(),
        labels: r.labels.to_string(),
        annotations: r.annotations.to_string(),
        owner: owner(&r.owner),
        digest_annotation: r.digest_annotation.clone(),
    }
}

pub(super) fn secret_copy(r: &sdk_secrets::SecretCopy) -> wit_workload::SecretCopy {
    wit_workload::SecretCopy {
        source_name: r.source_name.clone(),
        target_namespace: r.target_namespace.clone(),
        target_name: r.target_name.clone(),
        secret_type: r.secret_type.clone(),
        labels: r.labels.to_string(),
        annotations: r.annotations.to_string(),
        create_namespace: r.create_namespace,
        owner: owner(&r.owner),
        digest_annotation: r.digest_annotation.clone(),
    }
}

pub(super) fn copied(c: wit_workload::Copied) -> sdk_secrets::Copied {
    sdk_secrets::Copied {
        digest: c.digest,
        secret_type: c.secret_type,
        outcome: match c.outcome {
            wit_workload::CopyOutcome::Created => sdk_secrets::CopyOutcome::Created,
            wit_workload::CopyOutcome::Updated => sdk_secrets::CopyOutcome::Updated,
            wit_workload::CopyOutcome::Unchanged => sdk_secrets::CopyOutcome::Unchanged,
            wit_workload::CopyOutcome::Recreated => sdk_secrets::CopyOutcome::Recreated,
            wit_workload::CopyOutcome::NotOwned => sdk_secrets::CopyOutcome::NotOwned,
        },
    }
}
