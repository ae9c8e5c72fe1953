//! The bridge between [`Plugin`](crate::Plugin) and the generated WIT bindings, used by `export_plugin!`.

use serde_json::Value;

use crate::bindings::exports::omni::operator::{plugin as wplugin, validator as wvalidator};
use crate::bindings::omni::operator::clock as wclock;
use crate::bindings::omni::operator::files as wfiles;
use crate::bindings::omni::operator::helm as whelm;
use crate::bindings::omni::operator::kube_write as wwrite;
use crate::bindings::omni::operator::omni as womni;
use crate::bindings::omni::operator::secrets as wsecrets;
use crate::bindings::omni::operator::workload as wworkload;
use crate::bindings::omni::operator::{context as wctx, kube_read as wread, types as wtypes};
use crate::helm;
use crate::omni::{ClusterHealth, LabelOp, LabelTerm, OmniResource, Phase, ResourceKey};
use crate::secrets::{
    Copied, CopyOutcome, KubeconfigExport, OwnerLabel, Removal, SecretCopy, SecretInfo,
    SecretKeyRef,
};
use crate::{
    Condition, ConditionStatus, EventType, HostError, Info, ListQuery, LogLevel, ObjectRef, Plugin,
    ReconcileError, RelatedMapping, Verdict,
};

/// [`Host`](crate::Host) over the operator's per-call context.
pub struct WasmHost<'a>(&'a wctx::CallContext);

impl crate::Context for WasmHost<'_> {
    fn object(&self) -> Value {
        // The operator hands over what its watch decoded; it is valid JSON.
        serde_json::from_str(&self.0.object()).unwrap_or(Value::Null)
    }

    fn remaining_ms(&self) -> u64 {
        self.0.remaining_ms()
    }

    fn set_status(&self, fields: Value) {
        self.0.set_status(&fields.to_string());
    }

    fn set_condition(&self, c: Condition) {
        let status = match c.status {
            ConditionStatus::True => wctx::ConditionStatus::True,
            ConditionStatus::False => wctx::ConditionStatus::False,
            ConditionStatus::Unknown => wctx::ConditionStatus::Unknown,
        };
        self.0.set_condition(&wctx::Condition {
            type_: c.type_,
            status,
            reason: c.reason,
            message: c.message,
        });
    }

    fn requeue_after(&self, ms: u64) {
        self.0.requeue_after(ms);
    }

    fn event(&self, kind: EventType, reason: &str, message: &str) {
        let kind = match kind {
            EventType::Normal => wctx::EventType::Normal,
            EventType::Warning => wctx::EventType::Warning,
        };
        self.0.event(kind, reason, message);
    }

    fn log(&self, level: LogLevel, message: &str, fields: &[(&str, &str)]) {
        let level = match level {
            LogLevel::Trace => wtypes::LogLevel::Trace,
            LogLevel::Debug => wtypes::LogLevel::Debug,
            LogLevel::Info => wtypes::LogLevel::Info,
            LogLevel::Warn => wtypes::LogLevel::Warn,
            LogLevel::Error => wtypes::LogLevel::Error,
        };
        let fields: Vec<(String, String)> = fields
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.0.log(level, message, &fields);
    }
}

impl crate::Clock for WasmHost<'_> {
    fn now(&self) -> String {
        wclock::now(self.0)
    }
}

impl crate::KubeRead for WasmHost<'_> {
    fn kube_get(&self, target: &ObjectRef) -> Result<Option<Value>, HostError> {
        match wread::get(self.0, &object_ref(target)) {
            Ok(Some(json)) => parse(&json).map(Some),
            Ok(None) => Ok(None),
            Err(e) => Err(host_error(e)),
        }
    }

    fn kube_list(&self, query: &ListQuery) -> Result<Vec<Value>, HostError> {
        let q = wread::ListQuery {
            api_version: query.api_version.clone(),
            kind: query.kind.clone(),
            namespace: query.namespace.clone(),
            label_selector: query.label_selector.clone(),
            field_selector: query.field_selector.clone(),
        };
        let items = wread::list(self.0, &q).map_err(host_error)?;
        items.iter().map(|s| parse(s)).collect()
    }
}

fn write_options(o: crate::kube_write::WriteOptions) -> wwrite::WriteOptions {
    wwrite::WriteOptions {
        owned: o.owned,
        dry_run: o.dry_run,
        force: o.force,
    }
}

fn object_ref(target: &ObjectRef) -> wtypes::ObjectRef {
    wtypes::ObjectRef {
        api_version: target.api_version.clone(),
        kind: target.kind.clone(),
        namespace: target.namespace.clone(),
        name: target.name.clone(),
    }
}

impl crate::KubeWrite for WasmHost<'_> {
    fn kube_apply(
        &self,
        object: &Value,
        options: crate::kube_write::WriteOptions,
    ) -> Result<Value, HostError> {
        let stored = wwrite::apply(self.0, &object.to_string(), write_options(options));
        parse(&stored.map_err(host_error)?)
    }

    fn kube_create(
        &self,
        object: &Value,
        options: crate::kube_write::WriteOptions,
    ) -> Result<Value, HostError> {
        let stored = wwrite::create(self.0, &object.to_string(), write_options(options));
        parse(&stored.map_err(host_error)?)
    }

    fn kube_patch(
        &self,
        target: &ObjectRef,
        patch: &crate::kube_write::Patch,
        options: crate::kube_write::WriteOptions,
    ) -> Result<Value, HostError> {
        let (kind, body) = match patch {
            crate::kube_write::Patch::Merge(v) => (wwrite::PatchType::Merge, v),
            crate::kube_write::Patch::Json(v) => (wwrite::PatchType::Json, v),
        };
        let stored = wwrite::patch(
            self.0,
            &object_ref(target),
            kind,
            &body.to_string(),
            write_options(options),
        );
        parse(&stored.map_err(host_error)?)
    }

    fn kube_delete(
        &self,
        target: &ObjectRef,
        options: &crate::kube_write::DeleteOptions,
    ) -> Result<bool, HostError> {
        let options = wwrite::DeleteOptions {
            uid: options.uid.clone(),
            resource_version: options.resource_version.clone(),
            propagation: match options.propagation {
                crate::kube_write::Propagation::Background => wwrite::Propagation::Background,
                crate::kube_write::Propagation::Foreground => wwrite::Propagation::Foreground,
                crate::kube_write::Propagation::Orphan => wwrite::Propagation::Orphan,
            },
            dry_run: options.dry_run,
        };
        wwrite::delete(self.0, &object_ref(target), &options).map_err(host_error)
    }
}

impl crate::Files for WasmHost<'_> {
    fn read_file(&self, root: &str, path: &str) -> Result<Vec<u8>, HostError> {
        wfiles::read(self.0, root, path).map_err(host_error)
    }
}

impl crate::Omni for WasmHost<'_> {
    fn omni_ping(&self, connection: &str) -> Result<String, HostError> {
        womni::ping(self.0, connection)
            .map(|info| info.endpoint)
            .map_err(host_error)
    }

    fn omni_get(
        &self,
        connection: &str,
        key: &ResourceKey,
    ) -> Result<Option<OmniResource>, HostError> {
        Ok(womni::get(self.0, connection, &to_key(key))
            .map_err(host_error)?
            .map(from_resource))
    }

    fn omni_list(
        &self,
        connection: &str,
        namespace: &str,
        type_: &str,
        labels: &[LabelTerm],
    ) -> Result<Vec<OmniResource>, HostError> {
        let terms: Vec<womni::LabelTerm> = labels.iter().map(to_term).collect();
        Ok(womni::list(self.0, connection, namespace, type_, &terms)
            .map_err(host_error)?
            .into_iter()
            .map(from_resource)
            .collect())
    }

    fn omni_create(
        &self,
        connection: &str,
        resource: &OmniResource,
    ) -> Result<OmniResource, HostError> {
        womni::create(self.0, connection, &to_resource(resource))
            .map(from_resource)
            .map_err(host_error)
    }

    fn omni_update(
        &self,
        connection: &str,
        resource: &OmniResource,
    ) -> Result<OmniResource, HostError> {
        womni::update(self.0, connection, &to_resource(resource))
            .map(from_resource)
            .map_err(host_error)
    }

    fn omni_teardown(&self, connection: &str, key: &ResourceKey) -> Result<bool, HostError> {
        womni::teardown(self.0, connection, &to_key(key)).map_err(host_error)
    }

    fn omni_destroy(&self, connection: &str, key: &ResourceKey) -> Result<(), HostError> {
        womni::destroy(self.0, connection, &to_key(key)).map_err(host_error)
    }

    fn omni_cluster_status(
        &self,
        connection: &str,
        cluster: &str,
    ) -> Result<Option<ClusterHealth>, HostError> {
        Ok(womni::cluster_status(self.0, connection, cluster)
            .map_err(host_error)?
            .map(|h| ClusterHealth {
                phase: h.phase,
                ready: h.ready,
                healthy: h.healthy,
                findings: h.findings,
            }))
    }

    fn omni_export_kubeconfig(
        &self,
        connection: &str,
        r: &KubeconfigExport,
    ) -> Result<String, HostError> {
        let request = womni::KubeconfigExport {
            cluster: r.cluster.clone(),
            user: r.user.clone(),
            groups: r.groups.clone(),
            ttl_ns: r.ttl_ns,
            target: to_secret_key(&r.target),
            remove_key: r.remove_key.clone(),
            context_namespace: r.context_namespace.clone(),
            labels: r.labels.to_string(),
            annotations: r.annotations.to_string(),
            owner: to_owner(&r.owner),
            digest_annotation: r.digest_annotation.clone(),
        };
        womni::export_kubeconfig(self.0, connection, &request)
            .map(|e| e.digest)
            .map_err(host_error)
    }
}

impl crate::Secrets for WasmHost<'_> {
    fn secret_info(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<SecretInfo>, HostError> {
        let info = wsecrets::info(self.0, namespace, name).map_err(host_error)?;
        Ok(info.map(|i| SecretInfo {
            secret_type: i.secret_type,
            keys: i.keys,
            resource_version: i.resource_version,
            labels: json_object(&i.labels),
            annotations: json_object(&i.annotations),
        }))
    }

    fn secret_digest(&self, key: &SecretKeyRef) -> Result<Option<String>, HostError> {
        wsecrets::digest(self.0, &to_secret_key(key)).map_err(host_error)
    }

    fn secret_read(&self, key: &SecretKeyRef) -> Result<Option<Vec<u8>>, HostError> {
        wsecrets::read(self.0, &to_secret_key(key)).map_err(host_error)
    }

    fn secret_delete_owned(
        &self,
        namespace: Option<&str>,
        name: &str,
        owner: &OwnerLabel,
    ) -> Result<Removal, HostError> {
        wsecrets::delete_owned(self.0, namespace, name, &to_owner(owner))
            .map(from_removal)
            .map_err(host_error)
    }
}

impl crate::Workload for WasmHost<'_> {
    fn workload_probe(&self, kubeconfig: &SecretKeyRef) -> Result<String, HostError> {
        wworkload::probe(self.0, &to_secret_key(kubeconfig)).map_err(host_error)
    }

    fn workload_copy_secret(
        &self,
        kubeconfig: &SecretKeyRef,
        r: &SecretCopy,
    ) -> Result<Copied, HostError> {
        let request = wworkload::SecretCopy {
            source_name: r.source_name.clone(),
            target_namespace: r.target_namespace.clone(),
            target_name: r.target_name.clone(),
            secret_type: r.secret_type.clone(),
            labels: r.labels.to_string(),
            annotations: r.annotations.to_string(),
            create_namespace: r.create_namespace,
            owner: to_owner(&r.owner),
            digest_annotation: r.digest_annotation.clone(),
        };
        let copied = wworkload::copy_secret(self.0, &to_secret_key(kubeconfig), &request)
            .map_err(host_error)?;
        Ok(Copied {
            digest: copied.digest,
            secret_type: copied.secret_type,
            outcome: match copied.outcome {
                wworkload::CopyOutcome::Created => CopyOutcome::Created,
                wworkload::CopyOutcome::Updated => CopyOutcome::Updated,
                wworkload::CopyOutcome::Unchanged => CopyOutcome::Unchanged,
                wworkload::CopyOutcome::Recreated => CopyOutcome::Recreated,
                wworkload::CopyOutcome::NotOwned => CopyOutcome::NotOwned,
            },
        })
    }

    fn workload_delete_secret(
        &self,
        kubeconfig: &SecretKeyRef,
        namespace: &str,
        name: &str,
        owner: &OwnerLabel,
    ) -> Result<Removal, HostError> {
        wworkload::delete_secret(
            self.0,
            &to_secret_key(kubeconfig),
            namespace,
            name,
            &to_owner(owner),
        )
        .map(from_removal)
        .map_err(host_error)
    }
}

fn to_secret_key(key: &SecretKeyRef) -> wtypes::SecretKeyRef {
    wtypes::SecretKeyRef {
        namespace: key.namespace.clone(),
        name: key.name.clone(),
        key: key.key.clone(),
    }
}

fn to_owner(owner: &OwnerLabel) -> wtypes::OwnerLabel {
    wtypes::OwnerLabel {
        key: owner.key.clone(),
        value: owner.value.clone(),
    }
}

fn from_removal(r: wtypes::Removal) -> Removal {
    match r {
        wtypes::Removal::Deleted => Removal::Deleted,
        wtypes::Removal::Absent => Removal::Absent,
        wtypes::Removal::NotOwned => Removal::NotOwned,
    }
}

/// Metadata maps cross as JSON; the operator always sends objects.
fn json_object(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::Object(Default::default()))
}

fn to_key(key: &ResourceKey) -> womni::ResourceKey {
    womni::ResourceKey {
        namespace: key.namespace.clone(),
        type_: key.type_.clone(),
        id: key.id.clone(),
    }
}

fn to_term(term: &LabelTerm) -> womni::LabelTerm {
    womni::LabelTerm {
        key: term.key.clone(),
        op: match term.op {
            LabelOp::Exists => womni::LabelOp::Exists,
            LabelOp::Equal => womni::LabelOp::Equal,
            LabelOp::In => womni::LabelOp::In,
            LabelOp::Lt => womni::LabelOp::Lt,
            LabelOp::Lte => womni::LabelOp::Lte,
            LabelOp::LtNumeric => womni::LabelOp::LtNumeric,
            LabelOp::LteNumeric => womni::LabelOp::LteNumeric,
        },
        values: term.values.clone(),
        invert: term.invert,
    }
}

fn to_resource(r: &OmniResource) -> womni::Resource {
    womni::Resource {
        key: to_key(&r.key),
        version: r.version.clone(),
        owner: r.owner.clone(),
        phase: match r.phase {
            Phase::Running => womni::Phase::Running,
            Phase::TearingDown => womni::Phase::TearingDown,
        },
        labels: r.labels.clone(),
        annotations: r.annotations.clone(),
        finalizers: r.finalizers.clone(),
        spec: r.spec.clone(),
        unreadable: r.unreadable.clone(),
    }
}

fn from_resource(r: womni::Resource) -> OmniResource {
    OmniResource {
        key: ResourceKey {
            namespace: r.key.namespace,
            type_: r.key.type_,
            id: r.key.id,
        },
        version: r.version,
        owner: r.owner,
        phase: match r.phase {
            womni::Phase::Running => Phase::Running,
            womni::Phase::TearingDown => Phase::TearingDown,
        },
        labels: r.labels,
        annotations: r.annotations,
        finalizers: r.finalizers,
        spec: r.spec,
        unreadable: r.unreadable,
    }
}

fn parse(json: &str) -> Result<Value, HostError> {
    serde_json::from_str(json)
        .map_err(|e| HostError::Invalid(format!("the operator returned invalid JSON: {e}")))
}

fn host_error(e: wtypes::HostError) -> HostError {
    match e {
        wtypes::HostError::Denied(m) => HostError::Denied(m),
        wtypes::HostError::NotFound(m) => HostError::NotFound(m),
        wtypes::HostError::Conflict(m) => HostError::Conflict(m),
        wtypes::HostError::Invalid(m) => HostError::Invalid(m),
        wtypes::HostError::Unavailable(m) => HostError::Unavailable(m),
        wtypes::HostError::Timeout(m) => HostError::Timeout(m),
        wtypes::HostError::Unauthenticated(m) => HostError::Unauthenticated(m),
        wtypes::HostError::Forbidden(m) => HostError::Forbidden(m),
        wtypes::HostError::Rejected(r) => HostError::Rejected(crate::Rejection {
            message: r.message,
            causes: r
                .causes
                .into_iter()
                .map(|c| crate::FieldCause {
                    field: c.field,
                    reason: c.reason,
                    message: c.message,
                })
                .collect(),
        }),
        wtypes::HostError::Other(m) => HostError::Other(m),
    }
}

fn reconcile_error(e: ReconcileError) -> wtypes::ReconcileError {
    match e {
        ReconcileError::Transient(m) => wtypes::ReconcileError::Transient(m),
        ReconcileError::Permanent(m) => wtypes::ReconcileError::Permanent(m),
    }
}

fn gvk(g: crate::Gvk) -> wtypes::Gvk {
    wtypes::Gvk {
        group: g.group,
        version: g.version,
        kind: g.kind,
    }
}

pub fn describe<P: Plugin>() -> wplugin::Info {
    let Info {
        name,
        version,
        kinds,
        related,
        finalizer,
        legacy_finalizers,
        capabilities,
        secret_fields,
    } = P::describe();
    wplugin::Info {
        name,
        version,
        kinds: kinds.into_iter().map(gvk).collect(),
        related: related
            .into_iter()
            .map(|r| wplugin::RelatedKind {
                kind: gvk(r.kind),
                mapping: match r.mapping {
                    RelatedMapping::NameField(f) => wplugin::RelatedMapping::NameField(f),
                    RelatedMapping::Owner => wplugin::RelatedMapping::Owner,
                    RelatedMapping::NamedBy(f) => wplugin::RelatedMapping::NamedBy(f),
                    RelatedMapping::Annotated {
                        namespace_annotation,
                        name_annotation,
                    } => wplugin::RelatedMapping::Annotated(wplugin::AnnotationRef {
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
            .map(|f| wplugin::SecretField {
                name: f.name,
                namespace: f.namespace,
            })
            .collect(),
    }
}

pub fn reconcile<P: Plugin>(ctx: &wctx::CallContext) -> Result<(), wtypes::ReconcileError> {
    P::reconcile(&WasmHost(ctx)).map_err(reconcile_error)
}

pub fn finalize<P: Plugin>(ctx: &wctx::CallContext) -> Result<bool, wtypes::ReconcileError> {
    P::finalize(&WasmHost(ctx)).map_err(reconcile_error)
}

pub fn validate<P: Plugin>(object: String, old_object: Option<String>) -> wvalidator::Verdict {
    let parse_or_verdict = |s: &str| serde_json::from_str::<Value>(s);
    let (object, old) = match (
        parse_or_verdict(&object),
        old_object.as_deref().map(parse_or_verdict).transpose(),
    ) {
        (Ok(o), Ok(old)) => (o, old),
        (Err(e), _) | (_, Err(e)) => {
            return wvalidator::Verdict {
                errors: vec![wvalidator::FieldError {
                    field: "<root>".into(),
                    type_: wvalidator::FieldErrorType::Invalid,
                    value: None,
                    detail: format!("the object is not valid JSON: {e}"),
                }],
                warnings: Vec::new(),
            };
        }
    };
    let Verdict { errors, warnings } = P::validate(&object, old.as_ref());
    wvalidator::Verdict {
        errors: errors
            .into_iter()
            .map(|e| wvalidator::FieldError {
                field: e.field,
                type_: match e.type_ {
                    crate::FieldErrorType::Required => wvalidator::FieldErrorType::Required,
                    crate::FieldErrorType::Invalid => wvalidator::FieldErrorType::Invalid,
                    crate::FieldErrorType::Forbidden => wvalidator::FieldErrorType::Forbidden,
                    crate::FieldErrorType::Duplicate => wvalidator::FieldErrorType::Duplicate,
                    crate::FieldErrorType::NotSupported => wvalidator::FieldErrorType::NotSupported,
                },
                value: e.value.map(|v| v.to_string()),
                detail: e.detail,
            })
            .collect(),
        warnings,
    }
}

impl crate::Helm for WasmHost<'_> {
    fn helm_observe(
        &self,
        release: &helm::ReleaseRef,
        source: Option<&helm::ReleaseSource>,
    ) -> Result<helm::Observation, HostError> {
        let source = source.map(to_release_source);
        whelm::observe(self.0, &to_release_ref(release), source.as_ref())
            .map(from_observation)
            .map_err(host_error)
    }

    fn helm_detect_drift(
        &self,
        release: &helm::ReleaseRef,
        ignore: &[helm::DriftIgnore],
    ) -> Result<Vec<helm::Drifted>, HostError> {
        let ignore: Vec<whelm::DriftIgnore> = ignore.iter().map(to_drift_ignore).collect();
        whelm::detect_drift(self.0, &to_release_ref(release), &ignore)
            .map(|d| d.into_iter().map(from_drifted).collect())
            .map_err(host_error)
    }

    fn helm_cancel(&self, release: &helm::ReleaseRef, id: &str) -> Result<bool, HostError> {
        whelm::cancel(self.0, &to_release_ref(release), id).map_err(host_error)
    }

    fn helm_start(
        &self,
        release: &helm::ReleaseRef,
        step: &helm::Step,
    ) -> Result<helm::StepRecord, HostError> {
        whelm::start(self.0, &to_release_ref(release), &to_step(step))
            .map(from_step_record)
            .map_err(host_error)
    }
}

crate::helm_conversions!(whelm, to_secret_key);
