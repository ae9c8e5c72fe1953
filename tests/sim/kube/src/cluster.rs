//! The cluster state behind one server and the write pipeline every create, update, patch and delete goes
//! through: the same order of steps as kube-apiserver (decode, prepare, mutating admission, validation,
//! validating admission, storage with optimistic concurrency), so that clients see the same results.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard};

use base64::Engine as _;
use serde_json::{Map, Value, json};
use tokio::sync::Notify;

use crate::error::{ApiError, ApiResult, FieldCause, render_value};
use crate::managed_fields::{self, FieldTypes};
use crate::patch;
use crate::rbac::UserInfo;
use crate::resources::{Registry, ResourceType, Source, StorageKey};
use crate::schema;
use crate::store::{Change, Store};
use crate::validation;

pub const CRD_CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
pub const ORPHAN_FINALIZER: &str = "orphan";

/// How unknown fields in a write are treated (`fieldValidation` query parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

impl FieldValidation {
    pub fn parse(s: Option<&str>) -> ApiResult<Self> {
        match s.unwrap_or("") {
            "" | "Warn" => Ok(FieldValidation::Warn),
            "Ignore" => Ok(FieldValidation::Ignore),
            "Strict" => Ok(FieldValidation::Strict),
            other => Err(ApiError::bad_request(format!(
                "fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got \"{other}\""
            ))),
        }
    }
}

/// Who writes and how.
#[derive(Debug, Clone)]
pub struct WriteCtx {
    pub user: UserInfo,
    pub dry_run: bool,
    pub field_manager: Option<String>,
    pub field_validation: FieldValidation,
    pub user_agent: String,
}

impl WriteCtx {
    pub fn system(manager: &str) -> Self {
        WriteCtx {
            user: UserInfo {
                name: "system:kube-sim".into(),
                groups: vec!["system:masters".into()],
                ..Default::default()
            },
            dry_run: false,
            field_manager: Some(manager.into()),
            field_validation: FieldValidation::Ignore,
            user_agent: manager.into(),
        }
    }

    fn manager(&self) -> String {
        match &self.field_manager {
            Some(m) if !m.is_empty() => m.clone(),
            _ => managed_fields::default_manager(&self.user_agent),
        }
    }
}

/// The outcome of a write: the object as stored, the HTTP status, and warnings for `Warning` headers.
#[derive(Debug, Clone)]
pub struct Written {
    pub object: Value,
    pub status: u16,
    pub warnings: Vec<String>,
    /// A delete removed the object at once (no finalizers held it).
    pub gone: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    Json,
    Merge,
    Strategic,
    Apply,
}

impl PatchKind {
    pub fn from_content_type(ct: &str) -> ApiResult<Self> {
        let base = ct.split(';').next().unwrap_or("").trim();
        match base {
            "application/json-patch+json" => Ok(PatchKind::Json),
            "application/merge-patch+json" => Ok(PatchKind::Merge),
            "application/strategic-merge-patch+json" => Ok(PatchKind::Strategic),
            "application/apply-patch+yaml" => Ok(PatchKind::Apply),
            _ => Err(unsupported_patch(ct, true)),
        }
    }
}

fn unsupported_patch(ct: &str, strategic_ok: bool) -> ApiError {
    let accepted = if strategic_ok {
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json"
    } else {
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    };
    let _ = ct;
    ApiError::unsupported_media_type(format!(
        "the body of the request was in an unknown format - accepted media types include: {accepted}"
    ))
}

/// `DeleteOptions` as the body or query of a DELETE gives them.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    pub propagation: Option<String>,
    /// `dryRun: ["All"]` in the body, as kubectl `--dry-run=server` and kube-rs send it.
    pub dry_run: bool,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
}

impl DeleteOptions {
    pub fn from_json(v: &Value) -> ApiResult<Self> {
        if !v.is_object() {
            return Err(ApiError::bad_request(
                "DeleteOptions in version \"v1\" cannot be handled as a DeleteOptions: the body must be a JSON object",
            ));
        }
        let dry_run = match &v["dryRun"] {
            Value::Null => false,
            Value::Array(items) => {
                for item in items {
                    if item.as_str() != Some("All") {
                        return Err(ApiError::bad_request(format!(
                            "Invalid dry run value: {item}: supported values: \"All\""
                        )));
                    }
                }
                !items.is_empty()
            }
            other => {
                return Err(ApiError::bad_request(format!(
                    "dryRun must be a list, got {other}"
                )));
            }
        };
        let mut o = DeleteOptions {
            dry_run,
            propagation: v["propagationPolicy"].as_str().map(String::from),
            precondition_uid: v["preconditions"]["uid"].as_str().map(String::from),
            precondition_rv: v["preconditions"]["resourceVersion"]
                .as_str()
                .map(String::from),
        };
        if let Some(orphan) = v["orphanDependents"].as_bool() {
            if o.propagation.is_some() {
                return Err(ApiError::invalid(
                    "DeleteOptions",
                    "meta.k8s.io",
                    "",
                    &[FieldCause::invalid(
                        "propagationPolicy",
                        &v["propagationPolicy"],
                        "orphanDependents and deletionPropagation cannot be both set",
                    )],
                ));
            }
            o.propagation = Some(if orphan { "Orphan" } else { "Background" }.into());
        }
        if let Some(p) = &o.propagation
            && !["Orphan", "Background", "Foreground"].contains(&p.as_str())
        {
            return Err(ApiError::invalid(
                "DeleteOptions",
                "meta.k8s.io",
                "",
                &[FieldCause::preformatted(
                    "FieldValueNotSupported",
                    "propagationPolicy",
                    format!(
                        "propagationPolicy: Unsupported value: \"{p}\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
                    ),
                )],
            ));
        }
        Ok(o)
    }
}

/// Options fixed when the server starts.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    /// Changes kept for watch resumes and consistent continues.
    pub history_limit: usize,
    /// How long changes are kept (etcd compacts every 5 minutes by default).
    pub history_age: std::time::Duration,
    /// The cluster CA (PEM) every namespace's `kube-root-ca.crt` ConfigMap carries.
    pub root_ca_pem: String,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            history_limit: 100_000,
            history_age: std::time::Duration::from_secs(300),
            root_ca_pem: String::new(),
        }
    }
}

pub struct Cluster {
    store: Mutex<Store>,
    registry: RwLock<Arc<Registry>>,
    /// The RBAC objects as an authorizer, rebuilt only after an RBAC object changes (`rbac_epoch`).
    rbac: Mutex<Option<(u64, Arc<crate::rbac::RbacSnapshot>)>>,
    rbac_epoch: std::sync::atomic::AtomicU64,
    pub(crate) gc_wake: Notify,
    pub(crate) changed: Notify,
    pub(crate) admission: crate::admission::Admission,
    /// The cluster CA (PEM), published in every namespace.
    root_ca_pem: String,
}

impl Cluster {
    pub fn new(options: ClusterOptions) -> Arc<Self> {
        let cluster = Arc::new(Cluster {
            store: Mutex::new(Store::with_retention(
                options.history_limit,
                options.history_age,
            )),
            registry: RwLock::new(Arc::new(Registry::new())),
            rbac: Mutex::new(None),
            rbac_epoch: std::sync::atomic::AtomicU64::new(0),
            gc_wake: Notify::new(),
            changed: Notify::new(),
            admission: crate::admission::Admission::default(),
            root_ca_pem: options.root_ca_pem,
        });
        cluster.bootstrap();
        cluster
    }

    /// The namespaces and RBAC objects every real cluster starts with.
    fn bootstrap(&self) {
        let ctx = WriteCtx::system("kube-apiserver");
        let reg = self.registry();
        let namespaces = ["default", "kube-system", "kube-public", "kube-node-lease"]
            .map(|ns| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}));
        let policy = crate::yaml_documents(include_str!("bootstrap.yaml")).unwrap_or_else(|e| {
            // The file is part of the crate and parsed by a unit test; this cannot fail in a release.
            tracing::error!(error = %format!("{e:#}"), "bootstrap policy does not parse");
            Vec::new()
        });
        for obj in namespaces.into_iter().chain(policy) {
            self.seed(&reg, "", obj, &ctx);
        }
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            self.populate_namespace(ns);
        }
    }

    /// What kube-controller-manager puts in every namespace right after it is created: the `default`
    /// ServiceAccount (serviceaccounts-controller) and the `kube-root-ca.crt` ConfigMap with the cluster CA
    /// (root-ca-cert-publisher). Objects already there are left alone.
    fn populate_namespace(&self, ns: &str) {
        let ctx = WriteCtx::system("kube-controller-manager");
        let reg = self.registry();
        let objects = [
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "kube-root-ca.crt", "namespace": ns, "annotations": {
                    "kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
                "data": {"ca.crt": self.root_ca_pem}}),
        ];
        for obj in objects {
            if self.seed(&reg, ns, obj, &ctx) {
                self.changed.notify_one();
            }
        }
    }

    /// Stores an object the system creates (no admission, no watch of its own request), unless one of that
    /// name exists. Returns whether it was stored.
    fn seed(&self, reg: &Registry, ns: &str, obj: Value, ctx: &WriteCtx) -> bool {
        let (Some(av), Some(kind)) = (obj["apiVersion"].as_str(), obj["kind"].as_str()) else {
            return false;
        };
        let Some(rt) = reg.by_kind(av, kind) else {
            return false;
        };
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if self.store().get(&rt.storage_key(), ns, &name).is_some() {
            return false;
        }
        match self.prepare_unadmitted(&rt, ns, None, obj, ctx) {
            Ok(prepared) => {
                self.store()
                    .commit(&rt.storage_key(), ns, &name, Some(prepared));
                true
            }
            Err(e) => {
                tracing::error!(%ns, %name, error = %e, "a system object was refused");
                false
            }
        }
    }

    pub fn store(&self) -> MutexGuard<'_, Store> {
        // A panic while holding the lock would be a bug; keep serving rather than poisoning every request.
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn registry(&self) -> Arc<Registry> {
        self.registry_guard().clone()
    }

    fn registry_guard(&self) -> RwLockReadGuard<'_, Arc<Registry>> {
        self.registry.read().unwrap_or_else(|p| p.into_inner())
    }

    pub fn now() -> String {
        jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string()
    }

    fn field_types(rt: &ResourceType) -> Box<dyn FieldTypes> {
        match (&rt.schema, rt.source) {
            (Some(schema), Source::CustomResource) => {
                Box::new(managed_fields::SchemaFieldTypes::from_schema(schema))
            }
            _ => managed_fields::builtin_field_types(&rt.group, &rt.kind),
        }
    }

    /// Reads one object, rendered at the requested version.
    pub fn get(&self, rt: &ResourceType, ns: &str, name: &str) -> ApiResult<Value> {
        let obj = self.store().get(&rt.storage_key(), ns, name);
        match obj {
            Some(o) => Ok(self.render(rt, &o)),
            None => Err(ApiError::not_found(&rt.group_resource(), name)),
        }
    }

    /// An object as served at `rt`'s version: objects are stored once per group-resource, and converted
    /// between CRD versions with the `None` strategy (apiVersion rewritten), as the real server does by default.
    pub fn render(&self, rt: &ResourceType, obj: &Value) -> Value {
        let mut o = if crate::events::is_view(rt) {
            crate::events::to_view(obj)
        } else {
            obj.clone()
        };
        if let Some(m) = o.as_object_mut() {
            m.insert("apiVersion".into(), Value::String(rt.api_version()));
        }
        if let Some(schema) = &rt.schema {
            schema::apply_defaults(&mut o, schema);
        }
        o
    }

    pub async fn create(
        &self,
        rt: &ResourceType,
        ns: &str,
        body: Value,
        ctx: &WriteCtx,
    ) -> ApiResult<Written> {
        let name = body["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if !body["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .is_empty()
        {
            return Err(ApiError::bad_request(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        let url_ns = ns.to_string();
        self.write_loop(rt, ns, &name, "", ctx, false, move |old, rt| {
            if let Some(o) = old {
                return Err(ApiError::already_exists(
                    &rt.group_resource(),
                    o["metadata"]["name"].as_str().unwrap_or_default(),
                ));
            }
            check_body_namespace(rt, &body, &url_ns)?;
            Ok((body.clone(), Managed::Update))
        })
        .await
    }

    pub async fn update(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        sub: &str,
        body: Value,
        ctx: &WriteCtx,
    ) -> ApiResult<Written> {
        let url_name = name.to_string();
        let url_ns = ns.to_string();
        // An update without a resourceVersion is unconditional: the real server retries it on a concurrent write.
        let unconditional = body["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .is_empty();
        // The handler checks the body against the URL before storage looks the object up (apiserver's
        // checkName), so a body naming another object is 400 even when the URL's object does not exist.
        let body_name = body["metadata"]["name"].as_str().unwrap_or_default();
        if body_name != url_name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({url_name})"
            )));
        }
        check_body_namespace(rt, &body, &url_ns)?;
        self.write_loop(rt, ns, name, sub, ctx, unconditional, move |old, rt| {
            if old.is_none() {
                return Err(ApiError::not_found(&rt.group_resource(), &url_name));
            }
            let rv = body["metadata"]["resourceVersion"].as_str().unwrap_or_default();
            if rv.is_empty() && rt.is_crd() {
                // Custom resources do not allow unconditional updates.
                return Err(ApiError::invalid(
                    &rt.kind,
                    &rt.group,
                    &url_name,
                    &[FieldCause::preformatted(
                        "FieldValueInvalid",
                        "metadata.resourceVersion",
                        "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update".into(),
                    )],
                ));
            }
            Ok((body.clone(), Managed::Update))
        })
        .await
    }

    #[allow(clippy::too_many_arguments)]
    pub async fn patch(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        sub: &str,
        kind: PatchKind,
        body: &[u8],
        force: bool,
        ctx: &WriteCtx,
    ) -> ApiResult<Written> {
        if kind == PatchKind::Strategic && rt.is_crd() {
            return Err(unsupported_patch(
                "application/strategic-merge-patch+json",
                false,
            ));
        }
        let patch_doc = decode_patch_document(kind, body)?;
        if kind == PatchKind::Apply {
            let manager = ctx.field_manager.clone().unwrap_or_default();
            if manager.is_empty() {
                return Err(ApiError::invalid(
                    "PatchOptions",
                    "meta.k8s.io",
                    "",
                    &[FieldCause::required(
                        "fieldManager",
                        "is required for apply patch",
                    )],
                ));
            }
            if !patch_doc.is_object() {
                return Err(ApiError::bad_request(
                    "error decoding YAML: the applied configuration must be an object",
                ));
            }
        } else if force {
            return Err(ApiError::invalid(
                "PatchOptions",
                "meta.k8s.io",
                "",
                &[FieldCause::forbidden(
                    "force",
                    "may not be specified for non-apply patch",
                )],
            ));
        }
        let url_name = name.to_string();
        let url_ns = ns.to_string();
        let types = Self::field_types(rt);
        let manager = ctx.manager();
        let now = Self::now();
        let sub_owned = sub.to_string();
        self.write_loop(rt, ns, name, sub, ctx, true, move |old, rt| {
            let Some(old) = old else {
                // Only the main resource creates on apply; subresources such as status cannot create.
                if kind != PatchKind::Apply || !sub_owned.is_empty() {
                    return Err(ApiError::not_found(&rt.group_resource(), &url_name));
                }
                // Apply creates: the configuration becomes the object, namespaced to the URL.
                let mut config = patch_doc.clone();
                check_body_namespace(rt, &config, &url_ns)?;
                let cfg_name = config["metadata"]["name"].as_str().unwrap_or_default().to_string();
                if !cfg_name.is_empty() && cfg_name != url_name {
                    return Err(ApiError::bad_request(format!(
                        "the name of the object ({cfg_name}) does not match the name on the URL ({url_name})"
                    )));
                }
                if let Some(m) = config.as_object_mut() {
                    let meta = m.entry("metadata").or_insert_with(|| json!({}));
                    if let Some(mm) = meta.as_object_mut() {
                        mm.insert("name".into(), Value::String(url_name.clone()));
                    }
                }
                let applied = managed_fields::apply(None, &config, &manager, force, &sub_owned, types.as_ref(), &now)
                    .map_err(|e| apply_error(rt, &url_name, e))?;
                return Ok((applied, Managed::Applied));
            };
            let result = match kind {
                PatchKind::Merge => patch::merge_patch_request(old, &patch_doc).map_err(patch_error)?,
                PatchKind::Json => patch::json_patch(old, &patch_doc).map_err(patch_error)?,
                PatchKind::Strategic => {
                    let schema = patch::builtin_strategic_schema(&rt.group, &rt.kind)
                        .ok_or_else(|| unsupported_patch("application/strategic-merge-patch+json", false))?;
                    patch::strategic_merge_patch(old, &patch_doc, schema.as_ref()).map_err(patch_error)?
                }
                PatchKind::Apply => {
                    let applied = managed_fields::apply(Some(old), &patch_doc, &manager, force, &sub_owned, types.as_ref(), &now)
                        .map_err(|e| apply_error(rt, &url_name, e))?;
                    return Ok((applied, Managed::Applied));
                }
            };
            Ok((result, Managed::Update))
        })
        .await
    }

    /// The optimistic loop of the real server's GuaranteedUpdate: read, compute, admit, and store if nothing
    /// changed meanwhile; patches retry on a concurrent write, explicit resourceVersions do not.
    #[allow(clippy::too_many_arguments)]
    async fn write_loop<F>(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        sub: &str,
        ctx: &WriteCtx,
        retry: bool,
        mutate: F,
    ) -> ApiResult<Written>
    where
        F: Fn(Option<&Value>, &ResourceType) -> ApiResult<(Value, Managed)>,
    {
        let key = rt.storage_key();
        for _attempt in 0..16 {
            let stored = if name.is_empty() {
                None
            } else {
                self.store().get(&key, ns, name)
            };
            // Every stage sees the object in the form this resource serves; it is stored in the storage form.
            let view = crate::events::is_view(rt);
            let current: Option<std::sync::Arc<Value>> = match &stored {
                Some(o) if view => Some(std::sync::Arc::new(crate::events::to_view(o))),
                other => other.clone(),
            };
            let (candidate, managed) = mutate(current.as_deref(), rt)?;
            let op = if current.is_some() {
                "UPDATE"
            } else {
                "CREATE"
            };
            // The real order: decode (with CRD pruning and defaulting), mutating admission, the kind's strategy,
            // validation, validating admission, storage.
            let (mut decoded, mut warnings) = self.decode(rt, ns, candidate, ctx)?;
            let admitted = self
                .admission
                .admit(self, rt, op, sub, &decoded, current.as_deref(), ctx)
                .await?;
            warnings.extend(admitted.warnings);
            if let Some(mutated) = admitted.patched {
                let (again, w) = self.decode(rt, ns, mutated, ctx)?;
                decoded = again;
                warnings.extend(w);
            }
            let prepared = self.prepare(rt, ns, current.as_deref(), decoded, sub)?;
            self.validate(rt, ns, current.as_deref(), &prepared)?;
            let new = self.finish(rt, current.as_deref(), prepared, sub, ctx, managed);
            // Warnings gathered so far reach the client with a denial too (the real server writes them into
            // the response headers as they arrive).
            match self
                .admission
                .validate(self, rt, op, sub, &new, current.as_deref(), ctx)
                .await
            {
                Ok(w) => warnings.extend(w),
                Err(mut e) => {
                    warnings.append(&mut e.warnings);
                    return Err(e.with_warnings(warnings));
                }
            }
            let (new, current) = if view {
                (crate::events::to_core(&new), stored)
            } else {
                (new, current)
            };
            let obj_name = new["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if let Some(old) = &current
                && same_content(old, &new)
            {
                // A write that changes nothing keeps the old resourceVersion and sends no watch event.
                return Ok(Written {
                    object: self.render(rt, old),
                    status: 200,
                    warnings,
                    gone: false,
                });
            }
            let deleting_done = new["metadata"]["deletionTimestamp"].is_string()
                && finalizers(&new).is_empty()
                && !ns_finalizers_pending(rt, &new);
            if ctx.dry_run {
                return Ok(Written {
                    object: self.render(rt, &new),
                    status: if current.is_some() { 200 } else { 201 },
                    warnings,
                    gone: false,
                });
            }
            let change = {
                let mut store = self.store();
                let now_rv = store
                    .get(&key, ns, &obj_name)
                    .map(|o| o["metadata"]["resourceVersion"].clone());
                let expected = current
                    .as_ref()
                    .map(|o| o["metadata"]["resourceVersion"].clone());
                if now_rv != expected {
                    drop(store);
                    if retry || current.is_none() {
                        if current.is_none() && now_rv.is_some() {
                            return Err(ApiError::already_exists(&rt.group_resource(), &obj_name));
                        }
                        continue;
                    }
                    return Err(ApiError::stale_resource_version(
                        &rt.group_resource(),
                        &obj_name,
                    ));
                }
                store.commit(
                    &key,
                    ns,
                    &obj_name,
                    if deleting_done { None } else { Some(new) },
                )
            };
            self.after_commit(&change).await;
            let status = if current.is_some() { 200 } else { 201 };
            return Ok(Written {
                object: self.render(rt, &change.object),
                status,
                warnings,
                gone: false,
            });
        }
        Err(ApiError::conflict(
            &rt.group_resource(),
            name,
            "too many concurrent writes; try again",
        ))
    }

    /// Runs every stage without admission (bootstrap objects, which no webhook may see).
    pub(crate) fn prepare_unadmitted(
        &self,
        rt: &ResourceType,
        ns: &str,
        old: Option<&Value>,
        new: Value,
        ctx: &WriteCtx,
    ) -> ApiResult<Value> {
        let (decoded, _) = self.decode(rt, ns, new, ctx)?;
        let prepared = self.prepare(rt, ns, old, decoded, "")?;
        self.validate(rt, ns, old, &prepared)?;
        Ok(self.finish(rt, old, prepared, "", ctx, Managed::Update))
    }

    /// What decoding does on the real server: type checks, apiVersion and kind, metadata as ObjectMeta, and for
    /// custom resources pruning (with `fieldValidation`) and defaulting. Mutating webhooks see the result.
    fn decode(
        &self,
        rt: &ResourceType,
        ns: &str,
        mut new: Value,
        ctx: &WriteCtx,
    ) -> ApiResult<(Value, Vec<String>)> {
        let mut warnings = Vec::new();
        if !rt.is_crd() {
            check_builtin_shape(rt, &new)?;
        }
        let Some(obj) = new.as_object_mut() else {
            return Err(not_an_object());
        };
        if let Some(k) = obj.get("kind").and_then(Value::as_str)
            && !k.is_empty()
            && k != rt.kind
        {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({}) for resource {}",
                rt.kind,
                rt.group_resource()
            )));
        }
        if let Some(av) = obj.get("apiVersion").and_then(Value::as_str)
            && !av.is_empty()
            && av != rt.api_version()
        {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({av}) does not match the expected API version ({})",
                rt.api_version()
            )));
        }
        obj.insert("apiVersion".into(), Value::String(rt.api_version()));
        obj.insert("kind".into(), Value::String(rt.kind.clone()));
        if !obj.get("metadata").is_some_and(Value::is_object) {
            if obj.get("metadata").is_some_and(|m| !m.is_null()) {
                return Err(ApiError::bad_request("metadata must be an object"));
            }
            obj.insert("metadata".into(), json!({}));
        }
        if rt.namespaced
            && let Some(meta) = meta_mut(&mut new)
        {
            meta.insert("namespace".into(), Value::String(ns.to_string()));
        }
        decode_kind(rt, &new)?;
        if !rt.is_crd() {
            crate::defaults::apply(rt, &mut new);
        }
        if let Some(schema) = &rt.schema {
            let unknown = schema::prune(&mut new, schema);
            if !unknown.is_empty() {
                match ctx.field_validation {
                    FieldValidation::Strict => {
                        let name = new["metadata"]["name"].as_str().unwrap_or_default();
                        let list = unknown
                            .iter()
                            .map(|p| format!("unknown field \"{p}\""))
                            .collect::<Vec<_>>()
                            .join(", ");
                        return Err(ApiError::bad_request(format!(
                            "{} in version \"{}\" cannot be handled as a {}: strict decoding error: {list}",
                            rt.kind, rt.version, rt.kind
                        ))
                        .with_details(json!({"name": name, "group": rt.group, "kind": rt.kind})));
                    }
                    FieldValidation::Warn => {
                        warnings.extend(unknown.iter().map(|p| format!("unknown field \"{p}\"")))
                    }
                    FieldValidation::Ignore => {}
                }
            }
            schema::apply_defaults(&mut new, schema);
        }
        prune_metadata(&mut new);
        Ok((new, warnings))
    }

    /// The kind's strategy (PrepareForCreate / PrepareForUpdate): system fields, status isolation, immutable
    /// metadata, finalizer rules and kind defaults.
    fn prepare(
        &self,
        rt: &ResourceType,
        ns: &str,
        old: Option<&Value>,
        mut new: Value,
        sub: &str,
    ) -> ApiResult<Value> {
        let status_sub = rt.status_subresource;
        match old {
            None => {
                let Some(meta) = meta_mut(&mut new) else {
                    return Err(not_an_object());
                };
                if meta
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .is_empty()
                    && let Some(prefix) = meta.get("generateName").and_then(Value::as_str)
                    && !prefix.is_empty()
                {
                    let name = format!("{prefix}{}", random_suffix());
                    meta.insert("name".into(), Value::String(name));
                }
                if rt.namespaced {
                    meta.insert("namespace".into(), Value::String(ns.to_string()));
                } else {
                    meta.remove("namespace");
                }
                meta.insert(
                    "uid".into(),
                    Value::String(uuid::Uuid::new_v4().to_string()),
                );
                meta.insert("creationTimestamp".into(), Value::String(Self::now()));
                for k in [
                    "deletionTimestamp",
                    "deletionGracePeriodSeconds",
                    "resourceVersion",
                    "selfLink",
                ] {
                    meta.remove(k);
                }
                if rt.has_generation {
                    meta.insert("generation".into(), json!(1));
                } else {
                    meta.remove("generation");
                }
                if status_sub && let Some(o) = new.as_object_mut() {
                    o.remove("status");
                }
                if rt.group.is_empty() && rt.plural == "pods" {
                    new["status"] = crate::pods::status_on_create(&new);
                }
            }
            Some(old) => {
                if sub == "status" {
                    // The status subresource writes status only; everything else stays as stored.
                    let mut merged = old.clone();
                    let rv = new["metadata"]["resourceVersion"].clone();
                    match new.get("status") {
                        Some(s) => merged["status"] = s.clone(),
                        None => {
                            if let Some(o) = merged.as_object_mut() {
                                o.remove("status");
                            }
                        }
                    }
                    if let Some(mf) = new["metadata"].get("managedFields") {
                        merged["metadata"]["managedFields"] = mf.clone();
                    }
                    merged["metadata"]["resourceVersion"] = rv;
                    new = merged;
                } else if status_sub {
                    match old.get("status") {
                        Some(s) => new["status"] = s.clone(),
                        None => {
                            if let Some(o) = new.as_object_mut() {
                                o.remove("status");
                            }
                        }
                    }
                }
                let rv = new["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let old_rv = old["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or_default();
                let name = old["metadata"]["name"].as_str().unwrap_or_default();
                if !rv.is_empty() && rv != old_rv {
                    return Err(ApiError::stale_resource_version(&rt.group_resource(), name));
                }
                let old_meta = old["metadata"].as_object().cloned().unwrap_or_default();
                let Some(meta) = meta_mut(&mut new) else {
                    return Err(not_an_object());
                };
                for k in [
                    "uid",
                    "creationTimestamp",
                    "deletionTimestamp",
                    "deletionGracePeriodSeconds",
                    "namespace",
                    "name",
                    "generation",
                ] {
                    match old_meta.get(k) {
                        Some(v) => {
                            meta.insert(k.into(), v.clone());
                        }
                        None => {
                            meta.remove(k);
                        }
                    }
                }
                meta.insert("resourceVersion".into(), Value::String(old_rv.to_string()));
                if old_meta.contains_key("deletionTimestamp") {
                    let before: BTreeSet<String> = finalizers(old).into_iter().collect();
                    let added: Vec<String> = finalizers(&new)
                        .into_iter()
                        .filter(|f| !before.contains(f))
                        .collect();
                    if !added.is_empty() {
                        let list = added
                            .iter()
                            .map(|f| format!("{f:?}"))
                            .collect::<Vec<_>>()
                            .join(", ");
                        return Err(ApiError::invalid(
                            &rt.kind,
                            &rt.group,
                            name,
                            &[FieldCause::forbidden(
                                "metadata.finalizers",
                                &format!(
                                    "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{list}}}"
                                ),
                            )],
                        ));
                    }
                }
            }
        }

        self.prepare_kind(rt, old, &mut new, sub)?;
        Ok(new)
    }

    /// The kind's validation: metadata, the CRD schema (with CEL), kind rules, and an open namespace.
    fn validate(
        &self,
        rt: &ResourceType,
        ns: &str,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        let mut causes = validation::validate_metadata(
            &new["metadata"],
            validation::name_rule(&rt.group, &rt.plural),
        );
        if let Some(schema) = &rt.schema {
            for e in schema::validate(new, old, schema) {
                causes.push(FieldCause::preformatted(
                    cause_reason(e.kind),
                    &e.path,
                    e.to_string(),
                ));
            }
        }
        causes.extend(self.validate_kind(rt, new, old));
        let name = new["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if !causes.is_empty() {
            return Err(ApiError::invalid(&rt.kind, &rt.group, &name, &causes));
        }
        if rt.namespaced && old.is_none() {
            self.check_namespace_open(rt, ns, &name)?;
        }
        if old.is_none() && rt.is_crd() {
            self.check_crd_not_terminating(rt)?;
        }
        Ok(())
    }

    /// What storage adds: the generation bump and field ownership.
    fn finish(
        &self,
        rt: &ResourceType,
        old: Option<&Value>,
        mut new: Value,
        sub: &str,
        ctx: &WriteCtx,
        managed: Managed,
    ) -> Value {
        if let (Some(old), true) = (old, rt.has_generation)
            && spec_changed(old, &new, rt.status_subresource)
        {
            let g = old["metadata"]["generation"].as_i64().unwrap_or(0);
            new["metadata"]["generation"] = json!(g + 1);
        }
        if managed == Managed::Update {
            let types = Self::field_types(rt);
            new = managed_fields::update(
                old,
                &new,
                &ctx.manager(),
                sub,
                types.as_ref(),
                &Self::now(),
            );
        }
        new
    }

    /// Whether a namespace exists and is not being deleted.
    fn namespace_is_live(&self, ns: &str) -> bool {
        let key = StorageKey {
            group: String::new(),
            resource: "namespaces".into(),
        };
        self.store()
            .get(&key, "", ns)
            .is_some_and(|n| !n["metadata"]["deletionTimestamp"].is_string())
    }

    fn check_namespace_open(&self, rt: &ResourceType, ns: &str, name: &str) -> ApiResult<()> {
        let key = StorageKey {
            group: String::new(),
            resource: "namespaces".into(),
        };
        match self.store().get(&key, "", ns) {
            None => Err(ApiError::not_found("namespaces", ns)),
            Some(n) if n["metadata"]["deletionTimestamp"].is_string() => Err(ApiError::forbidden(format!(
                "{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                rt.group_resource()
            ))
            .with_details(json!({"name": name, "group": rt.group, "kind": rt.plural,
                "causes": [{"reason": "NamespaceTerminating", "message": format!("namespace {ns} is being terminated"), "field": "metadata.namespace"}]}))),
            Some(_) => Ok(()),
        }
    }

    /// Kind-specific defaulting that the built-in registry strategies do.
    fn prepare_kind(
        &self,
        rt: &ResourceType,
        old: Option<&Value>,
        new: &mut Value,
        sub: &str,
    ) -> ApiResult<()> {
        match (rt.group.as_str(), rt.plural.as_str()) {
            ("batch", "jobs") if old.is_none() => crate::strategies::job_on_create(new),
            ("", "pods") if old.is_none() => crate::strategies::pod_on_create(new),
            ("", "services") => {
                let taken = {
                    let store = self.store();
                    let services = store.list(&rt.storage_key(), None);
                    crate::strategies::Allocated::from_services(services.iter().map(|s| &**s))
                };
                match old {
                    None => crate::strategies::service_on_create(new, &taken),
                    Some(old) => crate::strategies::service_on_update(new, old, &taken),
                }
            }
            ("", "secrets") => {
                if let Some(Value::Object(sd)) =
                    new.as_object_mut().and_then(|o| o.remove("stringData"))
                {
                    // `data: null` decodes to a nil map in Go, which the conversion replaces before merging.
                    if new.get("data").is_some_and(Value::is_null) {
                        new["data"] = json!({});
                    }
                    let data = new
                        .as_object_mut()
                        .map(|o| o.entry("data").or_insert_with(|| json!({})));
                    if let Some(Value::Object(data)) = data {
                        for (k, v) in sd {
                            let s = v.as_str().unwrap_or_default();
                            data.insert(
                                k,
                                Value::String(base64::engine::general_purpose::STANDARD.encode(s)),
                            );
                        }
                    }
                }
                if new
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .is_empty()
                {
                    new["type"] = json!("Opaque");
                }
            }
            ("", "namespaces") => {
                match old {
                    None => {
                        new["spec"] = json!({"finalizers": ["kubernetes"]});
                        new["status"] = json!({"phase": "Active"});
                    }
                    // Only the finalize subresource changes spec.finalizers (the namespace strategy keeps them).
                    Some(old) if sub != "finalize" => match old.get("spec") {
                        Some(spec) => new["spec"] = spec.clone(),
                        None => {
                            if let Some(o) = new.as_object_mut() {
                                o.remove("spec");
                            }
                        }
                    },
                    Some(_) => {}
                }
                let name = new["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let Some(meta) = meta_mut(new) else {
                    return Err(not_an_object());
                };
                let labels = meta.entry("labels").or_insert_with(|| json!({}));
                if let Some(l) = labels.as_object_mut() {
                    l.insert("kubernetes.io/metadata.name".into(), Value::String(name));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// New objects of a CRD that is being deleted are refused while its objects are cleaned up.
    fn check_crd_not_terminating(&self, rt: &ResourceType) -> ApiResult<()> {
        let key = StorageKey {
            group: "apiextensions.k8s.io".into(),
            resource: "customresourcedefinitions".into(),
        };
        let name = format!("{}.{}", rt.plural, rt.group);
        match self.store().get(&key, "", &name) {
            Some(crd) if crd["metadata"]["deletionTimestamp"].is_string() => {
                Err(ApiError::method_not_allowed(
                    "create not allowed while custom resource definition is terminating",
                ))
            }
            _ => Ok(()),
        }
    }

    /// Kind-specific validation the built-in strategies do (immutability, keys, CRD names and schemas).
    fn validate_kind(
        &self,
        rt: &ResourceType,
        new: &Value,
        old: Option<&Value>,
    ) -> Vec<FieldCause> {
        let mut out = Vec::new();
        if crate::events::is_event(rt) {
            out.extend(crate::events::validate(rt, new, old));
        }
        match (rt.group.as_str(), rt.plural.as_str()) {
            ("", "secrets") | ("", "configmaps") => {
                for field in ["data", "binaryData"] {
                    if let Some(Value::Object(m)) = new.get(field) {
                        for k in m.keys() {
                            for e in validation::config_key_errors(k) {
                                out.push(FieldCause::invalid(
                                    &format!("{field}[{k}]"),
                                    &Value::String(k.clone()),
                                    &e,
                                ));
                            }
                        }
                    }
                }
                let size: usize = ["data", "binaryData"]
                    .iter()
                    .filter_map(|f| new.get(*f).and_then(Value::as_object))
                    .flat_map(|m| m.iter())
                    .map(|(k, v)| {
                        let raw = v.as_str().unwrap_or_default();
                        // Secret data is base64 on the wire but limited by its decoded size.
                        k.len()
                            + if rt.plural == "secrets" {
                                raw.len() / 4 * 3
                            } else {
                                raw.len()
                            }
                    })
                    .sum();
                if size > 1024 * 1024 {
                    out.push(FieldCause::preformatted(
                        "FieldValueTooLong",
                        "data",
                        "data: Too long: must have at most 1048576 bytes".into(),
                    ));
                }
                if let Some(old) = old {
                    if old["immutable"].as_bool() == Some(true) {
                        for field in ["data", "binaryData"] {
                            if old.get(field) != new.get(field) {
                                out.push(FieldCause::forbidden(
                                    field,
                                    "field is immutable when `immutable` is set",
                                ));
                            }
                        }
                        if new["immutable"].as_bool() != Some(true) {
                            out.push(FieldCause::forbidden(
                                "immutable",
                                "field is immutable when `immutable` is set",
                            ));
                        }
                    }
                    if rt.plural == "secrets" && old.get("type") != new.get("type") {
                        out.push(FieldCause::invalid(
                            "type",
                            &new["type"],
                            "field is immutable",
                        ));
                    }
                }
            }
            ("apps", "deployments" | "replicasets" | "statefulsets" | "daemonsets") => {
                out.extend(validate_workload_selector(rt, new))
            }
            ("apiextensions.k8s.io", "customresourcedefinitions") => {
                out.extend(validate_crd(new, old))
            }
            _ => {}
        }
        out
    }

    pub async fn delete(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
        ctx: &WriteCtx,
    ) -> ApiResult<Written> {
        let key = rt.storage_key();
        for _ in 0..16 {
            let Some(current) = self.store().get(&key, ns, name) else {
                return Err(ApiError::not_found(&rt.group_resource(), name));
            };
            if let Some(uid) = &opts.precondition_uid
                && current["metadata"]["uid"].as_str() != Some(uid)
            {
                return Err(ApiError::conflict(
                    &rt.group_resource(),
                    name,
                    &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                        current["metadata"]["uid"].as_str().unwrap_or_default()
                    ),
                ));
            }
            if let Some(rv) = &opts.precondition_rv
                && current["metadata"]["resourceVersion"].as_str() != Some(rv)
            {
                return Err(ApiError::conflict(
                    &rt.group_resource(),
                    name,
                    &format!(
                        "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                        current["metadata"]["resourceVersion"]
                            .as_str()
                            .unwrap_or_default()
                    ),
                ));
            }
            self.admission
                .validate(self, rt, "DELETE", "", &Value::Null, Some(&current), ctx)
                .await?;
            let mut next = (*current).clone();
            let mut fins = finalizers(&next);
            match opts.propagation.as_deref() {
                Some("Foreground") if !fins.iter().any(|f| f == FOREGROUND_FINALIZER) => {
                    fins.push(FOREGROUND_FINALIZER.into())
                }
                Some("Orphan") if !fins.iter().any(|f| f == ORPHAN_FINALIZER) => {
                    fins.push(ORPHAN_FINALIZER.into())
                }
                _ => {}
            }
            if rt.group == "apiextensions.k8s.io"
                && !fins.iter().any(|f| f == CRD_CLEANUP_FINALIZER)
                && next["metadata"]["deletionTimestamp"].is_null()
            {
                fins.push(CRD_CLEANUP_FINALIZER.into());
            }
            let is_namespace = rt.group.is_empty() && rt.plural == "namespaces";
            // A Namespace waits for its content finalizer (`spec.finalizers`) before it goes.
            let keep = !fins.is_empty() || ns_finalizers_pending(rt, &next);
            let already_deleting = current["metadata"]["deletionTimestamp"].is_string();
            if keep {
                if !fins.is_empty() {
                    next["metadata"]["finalizers"] = json!(fins);
                }
                if !already_deleting {
                    next["metadata"]["deletionTimestamp"] = json!(Self::now());
                    next["metadata"]["deletionGracePeriodSeconds"] = json!(0);
                    if let Some(g) = next["metadata"]["generation"].as_i64()
                        && g > 0
                    {
                        next["metadata"]["generation"] = json!(g + 1);
                    }
                    if is_namespace {
                        next["status"] = json!({"phase": "Terminating"});
                    }
                }
                if already_deleting && next == *current {
                    return Ok(Written {
                        object: self.render(rt, &current),
                        status: 200,
                        warnings: Vec::new(),
                        gone: false,
                    });
                }
            }
            if ctx.dry_run {
                return Ok(Written {
                    object: self.render(rt, &next),
                    status: 200,
                    warnings: Vec::new(),
                    gone: !keep,
                });
            }
            let change = {
                let mut store = self.store();
                let now = store.get(&key, ns, name);
                if now.as_ref().map(|o| &o["metadata"]["resourceVersion"])
                    != Some(&current["metadata"]["resourceVersion"])
                {
                    continue;
                }
                store.commit(&key, ns, name, if keep { Some(next) } else { None })
            };
            self.after_commit(&change).await;
            return Ok(Written {
                object: self.render(rt, &change.object),
                status: 200,
                warnings: Vec::new(),
                gone: !keep,
            });
        }
        Err(ApiError::conflict(
            &rt.group_resource(),
            name,
            "too many concurrent writes; try again",
        ))
    }

    /// The authorizer for the RBAC objects as they are now.
    pub fn rbac(&self) -> Arc<crate::rbac::RbacSnapshot> {
        let epoch = self.rbac_epoch.load(std::sync::atomic::Ordering::Acquire);
        let mut cached = self.rbac.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((e, snap)) = cached.as_ref()
            && *e == epoch
        {
            return snap.clone();
        }
        let snap = {
            let store = self.store();
            let list = |r: &str| -> Vec<Value> {
                let key = StorageKey {
                    group: "rbac.authorization.k8s.io".into(),
                    resource: r.into(),
                };
                store
                    .list(&key, None)
                    .iter()
                    .map(|v| (**v).clone())
                    .collect()
            };
            Arc::new(crate::rbac::RbacSnapshot::new(
                list("roles"),
                list("clusterroles"),
                list("rolebindings"),
                list("clusterrolebindings"),
            ))
        };
        *cached = Some((epoch, snap.clone()));
        snap
    }

    /// Bookkeeping after a write: CRDs change what is served, RBAC changes what is allowed, deletions feed
    /// the garbage collector.
    async fn after_commit(&self, change: &Change) {
        self.changed.notify_one();
        if change.key.group == "rbac.authorization.k8s.io" {
            self.rbac_epoch
                .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        }
        if change.key.group == "apiextensions.k8s.io"
            && change.key.resource == "customresourcedefinitions"
        {
            self.rebuild_registry();
            if change.kind != crate::store::ChangeKind::Deleted && !crd_established(&change.object)
            {
                self.establish_crd(&change.name).await;
            }
        }
        if change.key.group.is_empty()
            && change.key.resource == "namespaces"
            && change.kind == crate::store::ChangeKind::Added
        {
            self.populate_namespace(&change.name);
        }
        // The controllers put a deleted default back while the namespace lives.
        let namespace_default = matches!(
            (change.key.resource.as_str(), change.name.as_str()),
            ("serviceaccounts", "default") | ("configmaps", "kube-root-ca.crt")
        );
        if change.key.group.is_empty()
            && namespace_default
            && change.kind == crate::store::ChangeKind::Deleted
            && self.namespace_is_live(&change.namespace)
        {
            self.populate_namespace(&change.namespace);
        }
        let deleting = change.object["metadata"]["deletionTimestamp"].is_string();
        if deleting || change.kind == crate::store::ChangeKind::Deleted {
            self.gc_wake.notify_one();
        }
    }

    pub(crate) fn rebuild_registry(&self) {
        // The swap happens under the store lock, so two concurrent rebuilds cannot install an older CRD set last.
        // Lock order: store, then registry (nothing takes them the other way round).
        let store = self.store();
        let key = StorageKey {
            group: "apiextensions.k8s.io".into(),
            resource: "customresourcedefinitions".into(),
        };
        let crds = store.list(&key, None);
        let mut reg = (*self.registry()).clone();
        reg.rebuild_custom(
            crds.iter()
                .map(|c| c.as_ref())
                .filter(|c| crd_established(c)),
        );
        *self.registry.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(reg);
        drop(store);
    }

    /// What the apiextensions controllers do right after a CRD is written: accept its names and mark it
    /// Established, so its resources are served.
    async fn establish_crd(&self, name: &str) {
        let reg = self.registry();
        let Some(rt) = reg.get("apiextensions.k8s.io", "v1", "customresourcedefinitions") else {
            return;
        };
        let Some(current) = self.store().get(&rt.storage_key(), "", name) else {
            return;
        };
        let now = Self::now();
        let mut status = current
            .get("status")
            .filter(|s| s.is_object())
            .cloned()
            .unwrap_or_else(|| json!({}));
        status["acceptedNames"] = current["spec"]["names"].clone();
        status["conditions"] = json!([
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": now},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": now},
        ]);
        let mut stored: Vec<Value> = status["storedVersions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if let Some(sv) = current["spec"]["versions"]
            .as_array()
            .and_then(|vs| vs.iter().find(|v| v["storage"] == json!(true)))
            && !stored.contains(&sv["name"])
        {
            stored.push(sv["name"].clone());
        }
        status["storedVersions"] = json!(stored);
        let mut body = (*current).clone();
        body["status"] = status;
        let ctx = WriteCtx::system("kube-apiserver");
        if let Err(e) = Box::pin(self.update(&rt, "", name, "status", body, &ctx)).await {
            tracing::warn!(crd = name, error = %e, "could not mark CRD established");
        }
    }
}

/// Decoding errors of built-in kinds the JSON shape check does not catch.
fn decode_kind(rt: &ResourceType, new: &Value) -> ApiResult<()> {
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "secrets") => {
            if let Some(Value::Object(data)) = new.get("data") {
                for (k, v) in data {
                    let ok = v.as_str().is_some_and(|s| {
                        base64::engine::general_purpose::STANDARD.decode(s).is_ok()
                    });
                    if !ok {
                        return Err(ApiError::bad_request(format!(
                            "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data in data[{k:?}]"
                        )));
                    }
                }
            }
            Ok(())
        }
        ("coordination.k8s.io", "leases") => {
            check_micro_times(rt, new, &[&["spec", "acquireTime"], &["spec", "renewTime"]])
        }
        ("events.k8s.io", "events") | ("", "events") => {
            check_micro_times(rt, new, &[&["eventTime"], &["series", "lastObservedTime"]])
        }
        _ => Ok(()),
    }
}

/// ValidateDeploymentSpec and its siblings: a workload needs a non-empty selector that its pod template's labels
/// satisfy (otherwise its controller would create Pods it never counts as its own, without end).
fn validate_workload_selector(rt: &ResourceType, obj: &Value) -> Vec<FieldCause> {
    let spec = &obj["spec"];
    let selector = &spec["selector"];
    if selector.is_null() {
        return vec![FieldCause::required("spec.selector", "")];
    }
    let parsed = match crate::selectors::LabelSelector::from_json(selector) {
        Ok(s) => s,
        Err(e) => return vec![FieldCause::invalid("spec.selector", selector, &e)],
    };
    let empty = selector["matchLabels"]
        .as_object()
        .is_none_or(Map::is_empty)
        && selector["matchExpressions"]
            .as_array()
            .is_none_or(Vec::is_empty);
    if empty {
        return vec![FieldCause::invalid(
            "spec.selector",
            selector,
            &format!("empty selector is invalid for {}", rt.kind.to_lowercase()),
        )];
    }
    let labels = spec["template"]["metadata"]["labels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    if !parsed.matches(&labels) {
        return vec![FieldCause::invalid(
            "spec.template.metadata.labels",
            &Value::Object(labels),
            "`selector` does not match template `labels`",
        )];
    }
    Vec::new()
}

/// `metav1.MicroTime` fields decode with Go's layout `2006-01-02T15:04:05.000000Z07:00`: exactly six fractional
/// digits. The real server refuses anything else while decoding, with 400.
fn check_micro_times(rt: &ResourceType, obj: &Value, paths: &[&[&str]]) -> ApiResult<()> {
    for path in paths {
        let mut cur = obj;
        for p in *path {
            cur = &cur[*p];
        }
        let Some(s) = cur.as_str() else { continue };
        if !is_micro_time(s) {
            return Err(ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: parsing time {s:?} as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse {:?} as \".000000\"",
                rt.kind,
                rt.version,
                rt.kind,
                s.get(19..).unwrap_or_default()
            )));
        }
    }
    Ok(())
}

fn is_micro_time(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|x| x.iter().all(u8::is_ascii_digit));
    let date_time = b.len() >= 27
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && b[19] == b'.'
        && digits(20..26);
    let zone = &s.get(26..).unwrap_or_default();
    let zone_ok = *zone == "Z"
        || (zone.len() == 6
            && (zone.starts_with('+') || zone.starts_with('-'))
            && zone.as_bytes()[3] == b':'
            && zone.as_bytes()[1..3]
                .iter()
                .chain(&zone.as_bytes()[4..6])
                .all(u8::is_ascii_digit));
    date_time && zone_ok
}

/// Whether the managedFields of a write are computed by `prepare` (ordinary writes) or already by apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Managed {
    Update,
    Applied,
}

/// Built-in kinds decode into Go structs: a top-level field of the wrong JSON type fails decoding with 400, as
/// `json: cannot unmarshal string into Go struct field Namespace.spec of type v1.NamespaceSpec` on the real server.
fn check_builtin_shape(rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    const OBJECT_FIELDS: &[&str] = &[
        "spec",
        "status",
        "data",
        "stringData",
        "binaryData",
        "roleRef",
        "aggregationRule",
    ];
    const ARRAY_FIELDS: &[&str] = &[
        "rules",
        "subjects",
        "webhooks",
        "secrets",
        "imagePullSecrets",
    ];
    let type_name = |v: &Value| match v {
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
    };
    let fail = |field: &str, v: &Value, want: &str| {
        Err(ApiError::bad_request(format!(
            "{kind} in version \"{ver}\" cannot be handled as a {kind}: json: cannot unmarshal {} into Go struct field {kind}.{field} of type {want}",
            type_name(v),
            kind = rt.kind,
            ver = rt.version,
        )))
    };
    for f in OBJECT_FIELDS {
        if let Some(v) = obj.get(*f)
            && !v.is_object()
            && !v.is_null()
        {
            return fail(f, v, "object");
        }
    }
    for f in ARRAY_FIELDS {
        if let Some(v) = obj.get(*f)
            && !v.is_array()
            && !v.is_null()
        {
            return fail(f, v, "array");
        }
    }
    for f in ["finalizers", "ownerReferences"] {
        if let Some(v) = obj["metadata"].get(f)
            && !v.is_array()
            && !v.is_null()
        {
            return fail(&format!("metadata.{f}"), v, "array");
        }
    }
    for f in ["data", "stringData"] {
        if let Some(Value::Object(m)) = obj.get(f)
            && let Some((_, v)) = m.iter().find(|(_, v)| !v.is_string())
            && matches!(rt.plural.as_str(), "secrets" | "configmaps")
        {
            return fail(f, v, "string");
        }
    }
    Ok(())
}

fn not_an_object() -> ApiError {
    ApiError::bad_request("the body must be a JSON or YAML object")
}

/// An apply body as JSON, with the real server's error prefix.
fn decode_apply_body(body: &[u8]) -> ApiResult<Value> {
    crate::yaml_body::parse(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))
}

/// A PATCH body as JSON: YAML for apply, JSON for the other patch types.
pub(crate) fn decode_patch_document(kind: PatchKind, body: &[u8]) -> ApiResult<Value> {
    match kind {
        PatchKind::Apply => decode_apply_body(body),
        _ => serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}"))),
    }
}

fn check_body_namespace(rt: &ResourceType, body: &Value, url_ns: &str) -> ApiResult<()> {
    if rt.namespaced {
        let body_ns = body["metadata"]["namespace"].as_str().unwrap_or_default();
        if !body_ns.is_empty() && body_ns != url_ns {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
    }
    Ok(())
}

/// The object's metadata map, created if absent; None only when the object itself is not a JSON object.
fn meta_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let o = obj.as_object_mut()?;
    let meta = o.entry("metadata").or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    meta.as_object_mut()
}

pub fn finalizers(obj: &Value) -> Vec<String> {
    obj["metadata"]["finalizers"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// A Namespace stays while its content finalizer (`spec.finalizers: [kubernetes]`) is pending.
fn ns_finalizers_pending(rt: &ResourceType, obj: &Value) -> bool {
    rt.group.is_empty()
        && rt.plural == "namespaces"
        && obj["spec"]["finalizers"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
}

/// ObjectMeta fields the server keeps; anything else under metadata is dropped, as decoding into ObjectMeta does.
fn prune_metadata(obj: &mut Value) {
    const KNOWN: &[&str] = &[
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    ];
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        m.retain(|k, v| KNOWN.contains(&k.as_str()) && !v.is_null());
        for k in ["labels", "annotations"] {
            if m.get(k)
                .and_then(Value::as_object)
                .is_some_and(Map::is_empty)
            {
                m.remove(k);
            }
        }
        if m.get("finalizers")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
        {
            m.remove("finalizers");
        }
    }
}

/// The content the generation tracks: everything but metadata (and status, when it has its own subresource).
/// Without a status subresource, status is part of what the generation tracks, as on the real server.
fn spec_changed(old: &Value, new: &Value, status_subresource: bool) -> bool {
    let strip = |v: &Value| -> Map<String, Value> {
        let mut m = v.as_object().cloned().unwrap_or_default();
        for k in ["metadata", "apiVersion", "kind"] {
            m.remove(k);
        }
        if status_subresource {
            m.remove("status");
        }
        m
    };
    strip(old) != strip(new)
}

/// Equal but for the resourceVersion and the timestamps in managedFields.
fn same_content(old: &Value, new: &Value) -> bool {
    let norm = |v: &Value| -> Value {
        let mut c = v.clone();
        if let Some(m) = c.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
            if let Some(Value::Array(mf)) = m.get_mut("managedFields") {
                for e in mf.iter_mut() {
                    if let Some(o) = e.as_object_mut() {
                        o.remove("time");
                    }
                }
            }
        }
        c
    };
    norm(old) == norm(new)
}

fn random_suffix() -> String {
    // The real server draws 5 characters from an alphabet without vowels and look-alikes.
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let bytes = uuid::Uuid::new_v4().into_bytes();
    bytes
        .iter()
        .take(5)
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect()
}

pub fn crd_established(crd: &Value) -> bool {
    crd["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
    })
}

fn cause_reason(kind: schema::FieldErrorKind) -> &'static str {
    use schema::FieldErrorKind as K;
    match kind {
        K::Required => "FieldValueRequired",
        K::Invalid => "FieldValueInvalid",
        K::NotSupported => "FieldValueNotSupported",
        K::TooLong => "FieldValueTooLong",
        K::TooMany => "FieldValueTooMany",
        K::Duplicate => "FieldValueDuplicate",
        K::Forbidden => "FieldValueForbidden",
        K::TypeInvalid => "FieldValueTypeInvalid",
    }
}

/// Patch failures keep the status and reason the real patch handler gives them.
pub(crate) fn patch_error(e: patch::PatchError) -> ApiError {
    ApiError::new(e.status, e.reason(), e.message)
}

fn apply_error(rt: &ResourceType, name: &str, e: managed_fields::ApplyError) -> ApiError {
    match e {
        managed_fields::ApplyError::Conflicts(cs) => {
            let message = managed_fields::ApplyError::Conflicts(cs.clone()).to_string();
            let causes: Vec<Value> = cs
                .iter()
                .map(|c| json!({"reason": "FieldManagerConflict", "message": format!("conflict with {}", c.manager_description()), "field": c.path}))
                .collect();
            let mut d = json!({"name": name, "kind": rt.plural, "causes": causes});
            if !rt.group.is_empty() {
                d["group"] = json!(rt.group);
            }
            ApiError::new(409, "Conflict", message).with_details(d)
        }
        managed_fields::ApplyError::Invalid(m) => ApiError::new(422, "Invalid", m),
    }
}

/// The checks apiextensions-apiserver makes on a CRD.
fn validate_crd(crd: &Value, old: Option<&Value>) -> Vec<FieldCause> {
    let mut out = Vec::new();
    let spec = &crd["spec"];
    let group = spec["group"].as_str().unwrap_or_default();
    let plural = spec["names"]["plural"].as_str().unwrap_or_default();
    let name = crd["metadata"]["name"].as_str().unwrap_or_default();
    if group.is_empty() {
        out.push(FieldCause::required("spec.group", ""));
    } else if !group.contains('.') {
        out.push(FieldCause::invalid(
            "spec.group",
            &spec["group"],
            "should be a domain with at least one dot",
        ));
    }
    if plural.is_empty() {
        out.push(FieldCause::required("spec.names.plural", ""));
    }
    if spec["names"]["kind"]
        .as_str()
        .unwrap_or_default()
        .is_empty()
    {
        out.push(FieldCause::required("spec.names.kind", ""));
    }
    let protected = group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io");
    if protected
        && crd["metadata"]["annotations"]["api-approved.kubernetes.io"]
            .as_str()
            .unwrap_or_default()
            .is_empty()
    {
        out.push(FieldCause::required(
            "metadata.annotations[api-approved.kubernetes.io]",
            "protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111",
        ));
    }
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        out.push(FieldCause::invalid(
            "metadata.name",
            &crd["metadata"]["name"],
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    match spec["scope"].as_str() {
        Some("Namespaced") | Some("Cluster") => {}
        _ => out.push(FieldCause::preformatted(
            "FieldValueNotSupported",
            "spec.scope",
            format!(
                "spec.scope: Unsupported value: {}: supported values: \"Cluster\", \"Namespaced\"",
                render_value(&spec["scope"])
            ),
        )),
    }
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    if versions.is_empty() {
        out.push(FieldCause::invalid(
            "spec.versions",
            &spec["versions"],
            "must have exactly one version marked as storage version",
        ));
    } else if versions
        .iter()
        .filter(|v| v["storage"] == json!(true))
        .count()
        != 1
    {
        out.push(FieldCause::invalid(
            "spec.versions",
            &json!(versions.len()),
            "must have exactly one version marked as storage version",
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        if v["name"].as_str().unwrap_or_default().is_empty() {
            out.push(FieldCause::required(
                &format!("spec.versions[{i}].name"),
                "",
            ));
        }
        let s = &v["schema"]["openAPIV3Schema"];
        if s.is_null() {
            out.push(FieldCause::required(
                &format!("spec.versions[{i}].schema.openAPIV3Schema"),
                "schemas are required",
            ));
        } else {
            for e in
                schema::validate_schema(s, &format!("spec.versions[{i}].schema.openAPIV3Schema"))
            {
                out.push(FieldCause::preformatted(
                    cause_reason(e.kind),
                    &e.path,
                    e.to_string(),
                ));
            }
        }
        out.extend(selectable_field_errors(v, i));
    }
    if let Some(old) = old {
        for (field, what) in [("group", "spec.group"), ("scope", "spec.scope")] {
            if old["spec"][field] != spec[field] && old["metadata"]["deletionTimestamp"].is_null() {
                if field == "scope" {
                    continue;
                }
                out.push(FieldCause::invalid(
                    what,
                    &spec[field],
                    "field is immutable",
                ));
            }
        }
    }
    out
}

/// apiextensions' checks of one version's `selectableFields` (Kubernetes 1.31+): each a simple JSONPath to a
/// string, boolean or integer field of the version's schema, outside metadata, listed once, at most eight.
fn selectable_field_errors(version: &Value, i: usize) -> Vec<FieldCause> {
    const MAX_SELECTABLE_FIELDS: usize = 8;
    let mut out = Vec::new();
    let Some(fields) = version["selectableFields"].as_array() else {
        return out;
    };
    let base = format!("spec.versions[{i}].selectableFields");
    let schema = &version["schema"]["openAPIV3Schema"];
    let mut unique = BTreeSet::new();
    for (j, selectable) in fields.iter().enumerate() {
        let field = format!("{base}[{j}].jsonPath");
        let path = selectable["jsonPath"].as_str().unwrap_or_default();
        if path.is_empty() {
            out.push(FieldCause::required(&field, ""));
            continue;
        }
        let value = Value::String(path.to_string());
        let (segments, found) = match schema_at_json_path(schema, path) {
            Ok(found) => found,
            Err(e) => {
                out.push(FieldCause::invalid(
                    &field,
                    &value,
                    &format!("is an invalid path: {e}"),
                ));
                continue;
            }
        };
        if segments.first().map(String::as_str) == Some("metadata") {
            out.push(FieldCause::invalid(
                &field,
                &value,
                "must not point to fields in metadata",
            ));
        }
        if !matches!(
            found["type"].as_str(),
            Some("string" | "boolean" | "integer")
        ) {
            out.push(FieldCause::invalid(
                &field,
                &value,
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        if !unique.insert(segments.join(".")) {
            out.push(FieldCause::preformatted(
                "FieldValueDuplicate",
                &field,
                format!("{field}: Duplicate value: {}", render_value(&value)),
            ));
        }
    }
    if unique.len() > MAX_SELECTABLE_FIELDS {
        out.push(FieldCause::preformatted(
            "FieldValueTooMany",
            &base,
            format!(
                "{base}: Too many: {}: must have at most {MAX_SELECTABLE_FIELDS} items",
                unique.len()
            ),
        ));
    }
    out
}

/// The path segments of a simple JSONPath (`.spec.x.y`) and the schema it leads to, walked as `cel.ValidFieldPath`
/// walks it: properties by name, `additionalProperties` by key; array notation is not allowed here.
fn schema_at_json_path<'a>(
    schema: &'a Value,
    path: &str,
) -> Result<(Vec<String>, &'a Value), String> {
    let mut segments = Vec::new();
    let mut current = schema;
    let mut rest = path;
    while !rest.is_empty() {
        let Some(after_dot) = rest.strip_prefix('.') else {
            let token = if rest.starts_with(['[', ']']) {
                &rest[..1]
            } else {
                rest.split(['.', '[', ']']).next().unwrap_or(rest)
            };
            return Err(format!("expected [ or . but got: {token}"));
        };
        if after_dot.is_empty() {
            return Err("unexpected end of JSON path".into());
        }
        let end = after_dot.find(['.', '[', ']']).unwrap_or(after_dot.len());
        let (name, tail) = after_dot.split_at(end);
        if name.is_empty() {
            return Err("does not refer to a valid field".into());
        }
        current = if let Some(properties) = current["properties"].as_object() {
            properties
                .get(name)
                .ok_or("does not refer to a valid field")?
        } else if current["additionalProperties"].is_object() {
            &current["additionalProperties"]
        } else {
            return Err("does not refer to a valid field".into());
        };
        segments.push(name.to_string());
        rest = tail;
    }
    Ok((segments, current))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_depth_counts_brackets_outside_quoted_scalars_and_comments() {
        use crate::yaml_body::flow_depth;
        assert_eq!(flow_depth(b"a: [1, {b: [2]}]"), 3);
        assert_eq!(flow_depth(b"a: '[[[['\nb: \"[[\\\"[\"\n# [[[[\n"), 0);
        // Quotes and `#` inside a plain scalar are literal, so they cannot hide brackets the parser nests.
        assert_eq!(flow_depth(b"a: don't [[x]]"), 2);
        assert_eq!(flow_depth(b"a: b#c [[x]]"), 2);
        assert_eq!(flow_depth(b"a: 'it''s' [[x]]"), 2);
        let deep = format!("a: {}{}", "[".repeat(20_000), "]".repeat(20_000));
        assert_eq!(flow_depth(deep.as_bytes()), 20_000);
        assert!(
            matches!(decode_apply_body(deep.as_bytes()), Err(e) if e.code == 400 && e.message.contains("exceeded max depth of 10000"))
        );
    }

    #[test]
    fn selectable_fields_must_be_simple_paths_to_scalar_fields() {
        let version = |paths: &[&str]| {
            json!({"name": "v1", "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
                "spec": {"type": "object", "properties": {
                    "clusterRef": {"type": "object", "properties": {"name": {"type": "string"}}},
                    "replicas": {"type": "integer"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "machines": {"type": "array", "items": {"type": "string"}}}}}}},
                "selectableFields": paths.iter().map(|p| json!({"jsonPath": p})).collect::<Vec<_>>()})
        };
        let messages = |paths: &[&str]| {
            selectable_field_errors(&version(paths), 0)
                .into_iter()
                .map(|c| c.message)
                .collect::<Vec<_>>()
        };
        assert!(
            messages(&[
                ".spec.clusterRef.name",
                ".spec.replicas",
                ".spec.labels.team"
            ])
            .is_empty()
        );
        let f = "spec.versions[0].selectableFields[0].jsonPath";
        assert_eq!(
            messages(&[".spec.nope"]),
            [format!(
                "{f}: Invalid value: \".spec.nope\": is an invalid path: does not refer to a valid field"
            )]
        );
        assert_eq!(
            messages(&["spec.x"]),
            [format!(
                "{f}: Invalid value: \"spec.x\": is an invalid path: expected [ or . but got: spec"
            )]
        );
        assert_eq!(
            messages(&[".spec."]),
            [format!(
                "{f}: Invalid value: \".spec.\": is an invalid path: unexpected end of JSON path"
            )]
        );
        assert_eq!(
            messages(&[".metadata.name"]),
            [format!(
                "{f}: Invalid value: \".metadata.name\": must not point to fields in metadata"
            )]
        );
        assert_eq!(
            messages(&[".spec.machines"]),
            [format!(
                "{f}: Invalid value: \".spec.machines\": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."
            )]
        );
        assert_eq!(messages(&[""]), [format!("{f}: Required value")]);
        assert_eq!(
            messages(&[".spec.replicas", ".spec.replicas"]),
            ["spec.versions[0].selectableFields[1].jsonPath: Duplicate value: \".spec.replicas\""]
        );
        let nine: Vec<String> = (0..9).map(|k| format!(".spec.labels.k{k}")).collect();
        let nine: Vec<&str> = nine.iter().map(String::as_str).collect();
        assert_eq!(
            messages(&nine),
            ["spec.versions[0].selectableFields: Too many: 9: must have at most 8 items"]
        );
    }

    #[test]
    fn spec_changes_bump_generation_but_metadata_and_status_do_not() {
        let a = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"x": 1}, "status": {"y": 1}});
        let b = json!({"metadata": {"labels": {"a": "2"}}, "spec": {"x": 1}, "status": {"y": 2}});
        assert!(!spec_changed(&a, &b, true));
        assert!(
            spec_changed(&a, &b, false),
            "without a status subresource, status counts"
        );
        let c = json!({"metadata": {}, "spec": {"x": 2}});
        assert!(spec_changed(&a, &c, true));
    }

    #[test]
    fn the_bootstrap_policy_parses_and_a_new_cluster_holds_it() {
        let docs = crate::yaml_documents(include_str!("bootstrap.yaml")).expect("parses");
        assert!(docs.len() >= 10);
        let c = Cluster::new(ClusterOptions::default());
        let key = StorageKey {
            group: "rbac.authorization.k8s.io".into(),
            resource: "clusterrolebindings".into(),
        };
        assert!(c.store().get(&key, "", "system:basic-user").is_some());
    }

    #[test]
    fn micro_times_need_exactly_six_fractional_digits() {
        assert!(is_micro_time("2026-01-01T00:00:00.000000Z"));
        assert!(is_micro_time("2026-01-01T00:00:00.123456+02:00"));
        assert!(!is_micro_time("2026-01-01T00:00:00Z"));
        assert!(!is_micro_time("2026-01-01T00:00:00.123456789Z"));
        assert!(!is_micro_time("2026-01-01T00:00:00.123456"));
        assert!(!is_micro_time("ü"));
    }

    #[test]
    fn generated_names_use_five_characters_of_the_real_alphabet() {
        let s = random_suffix();
        assert_eq!(s.len(), 5);
        assert!(s.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
    }
}
