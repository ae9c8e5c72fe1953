//! Server-side apply and `metadata.managedFields`, modelled on sigs.k8s.io/structured-merge-diff (the merge,
//! compare, prune and conflict rules of `merge.Updater`) and on the chain of managers k8s.io/apiserver wraps
//! around it (strip-meta, managed-fields updater, before-first-apply, last-applied upgrade, manager cap).
//!
//! Objects are untyped JSON; what the real server reads from OpenAPI (list types, atomic maps, struct fields
//! versus free-form maps, key defaults) comes from a [`FieldTypes`].

use crate::gofmt::{is_printable as is_go_printable, quote as go_quote};
use serde_json::{Map, Number, Value};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

// ---------------------------------------------------------------------------------------------------------
// Public API

#[derive(Debug, Clone, PartialEq)]
pub enum ListType {
    Atomic,
    Set,
    Map(Vec<String>),
}

pub trait FieldTypes: Send + Sync {
    /// Path = field names from the root; list indices not included. Default Atomic.
    fn list_type(&self, path: &[&str]) -> ListType;
    /// Whether an object at the path is atomic (x-kubernetes-map-type: atomic); default granular.
    fn map_atomic(&self, path: &[&str]) -> bool {
        let _ = path;
        false
    }
    /// Whether `key` of the object at `parent` is a declared (struct) field rather than a key of a free-form
    /// map. structured-merge-diff owns non-empty entries of free-form maps as nodes of their own (`.`), and
    /// keeps an emptied struct as `{}` where an emptied map disappears.
    fn is_struct_field(&self, parent: &[&str], key: &str) -> bool {
        let _ = (parent, key);
        true
    }
    /// The value a list-map key takes when an element omits it (container and service ports default
    /// `protocol` to TCP), so `k:{...}` path elements match what the server defaults.
    fn key_default(&self, list: &[&str], key: &str) -> Option<Value> {
        let _ = (list, key);
        None
    }
    /// The value the field has in a freshly constructed (zero) object, if it is there at all: `{}` for
    /// non-pointer Go structs, `null` for slices and times serialized without omitempty. Creation diffs against
    /// that skeleton, so these nodes are not recorded as added (no `.`).
    fn zero_value(&self, path: &[&str]) -> Option<Value> {
        let _ = path;
        None
    }
}

/// Field types read from a CRD's `openAPIV3Schema`.
pub struct SchemaFieldTypes {
    root: Value,
}

impl SchemaFieldTypes {
    pub fn from_schema(schema: &Value) -> Self {
        // Callers holding the version's whole `schema` object get the same result as with its openAPIV3Schema.
        let root = schema.get("openAPIV3Schema").unwrap_or(schema).clone();
        SchemaFieldTypes { root }
    }

    fn items_of(mut node: &Value) -> &Value {
        // Bounded so a self-similar document cannot spin; real schemas nest arrays a handful of levels.
        for _ in 0..64 {
            match node.get("items") {
                Some(i) if i.is_object() => node = i,
                _ => break,
            }
        }
        node
    }

    fn child<'a>(node: &'a Value, seg: &str) -> Option<&'a Value> {
        let node = Self::items_of(node);
        if let Some(p) = node.get("properties").and_then(|p| p.get(seg)) {
            return Some(p);
        }
        match node.get("additionalProperties") {
            Some(ap @ Value::Object(_)) => Some(ap),
            _ => None,
        }
    }

    fn at(&self, path: &[&str]) -> Option<&Value> {
        let mut n = &self.root;
        for s in path {
            n = Self::child(n, s)?;
        }
        Some(n)
    }
}

impl FieldTypes for SchemaFieldTypes {
    fn list_type(&self, path: &[&str]) -> ListType {
        if let Some(t) = metadata_list_type(path) {
            return t;
        }
        let Some(n) = self.at(path) else {
            return ListType::Atomic;
        };
        match n.get("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("set") => ListType::Set,
            Some("map") => {
                let keys = n
                    .get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|ks| {
                        ks.iter()
                            .filter_map(|k| k.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default();
                ListType::Map(keys)
            }
            _ => ListType::Atomic,
        }
    }

    fn map_atomic(&self, path: &[&str]) -> bool {
        if path == ["metadata", "ownerReferences"] {
            return true;
        }
        self.at(path)
            .map(Self::items_of)
            .and_then(|n| n.get("x-kubernetes-map-type"))
            .and_then(Value::as_str)
            == Some("atomic")
    }

    fn is_struct_field(&self, parent: &[&str], key: &str) -> bool {
        // CRD schemas rarely describe metadata; the server merges ObjectMeta's own schema in, at the root and
        // under every x-kubernetes-embedded-resource.
        let mut rel = parent;
        let mut node = Some(&self.root);
        for (i, seg) in parent.iter().enumerate() {
            node = node.and_then(|n| Self::child(n, seg));
            let embedded = node
                .map(Self::items_of)
                .and_then(|n| n.get("x-kubernetes-embedded-resource"))
                == Some(&Value::Bool(true));
            if embedded {
                rel = &parent[i + 1..];
            }
        }
        if rel.is_empty() && matches!(key, "apiVersion" | "kind" | "metadata") {
            return true;
        }
        if rel.first() == Some(&"metadata") {
            return !matches!(rel, ["metadata", "labels" | "annotations"]);
        }
        match self.at(parent) {
            Some(n) => Self::items_of(n)
                .get("properties")
                .and_then(|p| p.get(key))
                .is_some(),
            // Undescribed (preserve-unknown-fields) data is deduced: every key is a map key.
            None => false,
        }
    }

    fn key_default(&self, list: &[&str], key: &str) -> Option<Value> {
        let n = Self::items_of(self.at(list)?);
        n.get("properties")?.get(key)?.get("default").cloned()
    }
}

fn metadata_list_type(path: &[&str]) -> Option<ListType> {
    match path {
        ["metadata", "finalizers"] => Some(ListType::Set),
        ["metadata", "ownerReferences"] => Some(ListType::Map(vec!["uid".into()])),
        _ => None,
    }
}

/// The list/map semantics of the built-in kinds' OpenAPI (`+listType`, `+mapType`, `+structType` markers).
struct BuiltinFieldTypes {
    group: String,
    kind: String,
    pod_spec: Option<&'static [&'static str]>,
}

const CONTAINER_LISTS: [&str; 3] = ["containers", "initContainers", "ephemeralContainers"];

/// Types marked `+structType=atomic` / `+mapType=atomic`, recognised by the field that holds them.
const ATOMIC_STRUCT_FIELDS: [&str; 13] = [
    "selector",
    "labelSelector",
    "namespaceSelector",
    "podSelector",
    "objectSelector",
    "nodeSelector",
    "configMapKeyRef",
    "secretKeyRef",
    "fieldRef",
    "resourceFieldRef",
    "secretRef",
    "configMapRef",
    "requiredDuringSchedulingIgnoredDuringExecution",
];

/// Go `map[string]...` fields: their keys are not struct fields.
const FREE_FORM_MAPS: [&str; 15] = [
    "labels",
    "annotations",
    "data",
    "binaryData",
    "stringData",
    "limits",
    "requests",
    "capacity",
    "allocatable",
    "hard",
    "used",
    "overhead",
    "parameters",
    "nodeSelector",
    "matchLabels",
];

impl BuiltinFieldTypes {
    fn pod_rel<'a, 'b>(&self, path: &'a [&'b str]) -> Option<&'a [&'b str]> {
        let prefix = self.pod_spec?;
        path.strip_prefix(prefix)
    }

    fn is_service(&self) -> bool {
        self.group.is_empty() && self.kind == "Service"
    }

    fn is_pod(&self) -> bool {
        self.group.is_empty() && self.kind == "Pod"
    }
}

impl FieldTypes for BuiltinFieldTypes {
    fn list_type(&self, path: &[&str]) -> ListType {
        let map = |keys: &[&str]| ListType::Map(keys.iter().map(|k| k.to_string()).collect());
        if let Some(t) = metadata_list_type(path) {
            return t;
        }
        match path {
            ["status", "conditions"] => return map(&["type"]),
            ["webhooks"] if self.group == "admissionregistration.k8s.io" => return map(&["name"]),
            ["spec", "ports"] if self.is_service() => return map(&["port", "protocol"]),
            ["status", "podIPs" | "hostIPs"] if self.is_pod() => return map(&["ip"]),
            _ => {}
        }
        let Some(rel) = self.pod_rel(path) else {
            return ListType::Atomic;
        };
        match rel {
            [c] if CONTAINER_LISTS.contains(c) => map(&["name"]),
            ["volumes" | "imagePullSecrets" | "resourceClaims" | "schedulingGates"] => {
                map(&["name"])
            }
            ["hostAliases"] => map(&["ip"]),
            ["topologySpreadConstraints"] => map(&["topologyKey", "whenUnsatisfiable"]),
            [c, "ports"] if CONTAINER_LISTS.contains(c) => map(&["containerPort", "protocol"]),
            [c, "env"] if CONTAINER_LISTS.contains(c) => map(&["name"]),
            [c, "volumeMounts"] if CONTAINER_LISTS.contains(c) => map(&["mountPath"]),
            [c, "volumeDevices"] if CONTAINER_LISTS.contains(c) => map(&["devicePath"]),
            [c, "resources", "claims"] if CONTAINER_LISTS.contains(c) => map(&["name"]),
            _ => ListType::Atomic,
        }
    }

    fn map_atomic(&self, path: &[&str]) -> bool {
        if path == ["metadata", "ownerReferences"] {
            return true;
        }
        path.last()
            .is_some_and(|l| ATOMIC_STRUCT_FIELDS.contains(l))
    }

    fn is_struct_field(&self, parent: &[&str], key: &str) -> bool {
        let _ = key;
        !parent
            .last()
            .is_some_and(|l| FREE_FORM_MAPS.contains(l) || (*l == "selector" && self.is_service()))
    }

    fn key_default(&self, list: &[&str], key: &str) -> Option<Value> {
        if key != "protocol" {
            return None;
        }
        let container_ports =
            matches!(self.pod_rel(list), Some([c, "ports"]) if CONTAINER_LISTS.contains(c));
        let service_ports = self.is_service() && list == ["spec", "ports"];
        (container_ports || service_ports).then(|| Value::String("TCP".into()))
    }

    fn zero_value(&self, path: &[&str]) -> Option<Value> {
        let object = || Some(Value::Object(Map::new()));
        if matches!(path, ["metadata"] | ["spec"] | ["status"]) {
            let bare = matches!(
                (self.group.as_str(), self.kind.as_str()),
                ("", "ConfigMap" | "Secret" | "ServiceAccount" | "Endpoints")
                    | ("rbac.authorization.k8s.io", _)
                    | ("admissionregistration.k8s.io", _)
                    | ("storage.k8s.io", "StorageClass")
                    | ("scheduling.k8s.io", _)
                    | ("discovery.k8s.io", _)
            );
            return if bare && path != ["metadata"] {
                None
            } else {
                object()
            };
        }
        if path == ["metadata", "creationTimestamp"] {
            return Some(Value::Null);
        }
        if let Some(prefix) = self.pod_spec {
            // Every non-pointer struct on the way down to the pod spec: templates and their ObjectMeta.
            for n in 1..=prefix.len() {
                if path == &prefix[..n] {
                    return object();
                }
                let meta = n >= 2
                    && prefix[n - 1] == "spec"
                    && path.get(..n - 1) == Some(&prefix[..n - 1]);
                if meta && path.len() == n && path[n - 1] == "metadata" {
                    return object();
                }
                if meta
                    && path.len() == n + 1
                    && path[n - 1] == "metadata"
                    && path[n] == "creationTimestamp"
                {
                    return Some(Value::Null);
                }
            }
            // PodSpec.Containers has no omitempty.
            if path.strip_prefix(prefix) == Some(&["containers"][..]) {
                return Some(Value::Null);
            }
        }
        let present = match (self.group.as_str(), self.kind.as_str()) {
            ("apps", "Deployment") => path == ["spec", "strategy"],
            ("apps", "StatefulSet" | "DaemonSet") => path == ["spec", "updateStrategy"],
            ("", "Service") | ("networking.k8s.io", "Ingress") => {
                path == ["status", "loadBalancer"]
            }
            ("", "PersistentVolumeClaim") => path == ["spec", "resources"],
            ("", "Node") => matches!(
                path,
                ["status", "daemonEndpoints"]
                    | ["status", "daemonEndpoints", "kubeletEndpoint"]
                    | ["status", "nodeInfo"]
            ),
            ("", "Event") => matches!(path, ["involvedObject"] | ["source"]),
            ("networking.k8s.io", "NetworkPolicy") => path == ["spec", "podSelector"],
            ("autoscaling", "HorizontalPodAutoscaler") => path == ["spec", "scaleTargetRef"],
            ("apiextensions.k8s.io", "CustomResourceDefinition") => {
                matches!(path, ["spec", "names"] | ["status", "acceptedNames"])
            }
            ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
                path == ["roleRef"]
            }
            ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => {
                return (path == ["rules"]).then_some(Value::Null);
            }
            _ => false,
        };
        if present { object() } else { None }
    }
}

/// Built-in kinds: metadata.finalizers Set; metadata.ownerReferences Map([uid]); PodSpec lists by name/key;
/// Service spec.ports Map([port, protocol]); status.conditions Map([type]); webhooks Map([name]); selectors and
/// `+structType=atomic` references atomic; everything else Atomic.
pub fn builtin_field_types(group: &str, kind: &str) -> Box<dyn FieldTypes> {
    const POD: &[&str] = &["spec"];
    const TEMPLATE: &[&str] = &["template", "spec"];
    const WORKLOAD: &[&str] = &["spec", "template", "spec"];
    const CRONJOB: &[&str] = &["spec", "jobTemplate", "spec", "template", "spec"];
    let pod_spec = match (group, kind) {
        ("", "Pod") => Some(POD),
        ("", "PodTemplate") => Some(TEMPLATE),
        ("", "ReplicationController") => Some(WORKLOAD),
        ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet") | ("batch", "Job") => {
            Some(WORKLOAD)
        }
        ("batch", "CronJob") => Some(CRONJOB),
        _ => None,
    };
    Box::new(BuiltinFieldTypes {
        group: group.to_string(),
        kind: kind.to_string(),
        pod_spec,
    })
}

#[derive(Debug, Clone, PartialEq)]
pub struct Conflict {
    pub manager: String,
    /// The conflicting entry's apiVersion; the server prints it only for Update managers.
    pub api_version: String,
    /// `.data.k`, `.spec.containers[name="nginx"].image`
    pub path: String,
    /// "Apply" or "Update": the server's description of the manager depends on it.
    pub operation: String,
    pub subresource: String,
}

impl Conflict {
    /// The manager as the apiserver prints it (printManager): `"mgr"`, `"mgr" using v1`,
    /// `"mgr" with subresource "status" using v1`. Causes read `conflict with <this>`.
    pub fn manager_description(&self) -> String {
        let mut s = go_quote(&self.manager);
        if !self.subresource.is_empty() {
            s = format!("{s} with subresource {}", go_quote(&self.subresource));
        }
        if self.operation == "Update" {
            s = format!("{s} using {}", self.api_version);
        }
        s
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ApplyError {
    Conflicts(Vec<Conflict>),
    Invalid(String),
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApplyError::Invalid(m) => f.write_str(m),
            ApplyError::Conflicts(cs) if cs.len() == 1 => {
                let c = &cs[0];
                write!(
                    f,
                    "Apply failed with 1 conflict: conflict with {}: {}",
                    c.manager_description(),
                    c.path
                )
            }
            ApplyError::Conflicts(cs) => {
                let mut by_manager: BTreeMap<String, Vec<&str>> = BTreeMap::new();
                for c in cs {
                    by_manager
                        .entry(c.manager_description())
                        .or_default()
                        .push(&c.path);
                }
                let mut lines = Vec::new();
                for (m, paths) in by_manager {
                    lines.push(format!("conflicts with {m}:"));
                    lines.extend(paths.iter().map(|p| format!("- {p}")));
                }
                write!(
                    f,
                    "Apply failed with {} conflicts: {}",
                    cs.len(),
                    lines.join("\n")
                )
            }
        }
    }
}

impl std::error::Error for ApplyError {}

/// Server-side apply of `config` onto `live` (None = create) by `manager`.
pub fn apply(
    live: Option<&Value>,
    config: &Value,
    manager: &str,
    force: bool,
    subresource: &str,
    types: &dyn FieldTypes,
    now: &str,
) -> Result<Value, ApplyError> {
    let w = Walker { types };
    let manager = if manager.is_empty() {
        "unknown"
    } else {
        manager
    };
    if !config.is_object() {
        return Err(ApplyError::Invalid(
            "apply configuration must be a JSON object".into(),
        ));
    }
    if too_deep(config) || live.is_some_and(too_deep) {
        return Err(ApplyError::Invalid(format!(
            "object nesting exceeds {MAX_DEPTH} levels"
        )));
    }
    if config.get("metadata").is_some_and(|m| !m.is_object()) {
        return Err(ApplyError::Invalid("metadata must be an object".into()));
    }
    if config
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .is_some_and(|m| !m.is_null())
    {
        return Err(ApplyError::Invalid(
            "metadata.managedFields must be nil".into(),
        ));
    }
    // A null managedFields is accepted and means nothing.
    let config = &without_managed_fields(config);
    let (config_set, errs) = w.field_set(config, true);
    if !errs.is_empty() {
        return Err(ApplyError::Invalid(format!(
            "failed to create typed patch object ({}): {}",
            gvk_string(config),
            validation_message(&errs)
        )));
    }

    let live_obj = live.filter(|v| v.is_object());
    let mut managed = live_obj
        .map(|l| decode_managed(managed_fields_of(l)).unwrap_or_default())
        .unwrap_or_default();
    let live_core = live_obj
        .map(without_managed_fields)
        .unwrap_or_else(|| Value::Object(Map::new()));
    let api_version = str_at(config, "apiVersion")
        .or_else(|| live_obj.and_then(|l| str_at(l, "apiVersion")))
        .unwrap_or_default()
        .to_string();

    // An object nobody tracks yet (created before tracking, or reset) is first attributed to
    // "before-first-apply", so appliers conflict with what is already there.
    if managed.is_empty() && live_obj.is_some() {
        let cmp = w.compare_root(None, &live_core, true);
        record_update(
            &mut managed,
            "before-first-apply",
            &api_version,
            subresource,
            cmp,
            now,
        );
    }

    let before = managed.clone();
    match w.apply_core(
        &live_core,
        config,
        config_set.clone(),
        &mut managed,
        manager,
        &api_version,
        subresource,
        force,
    ) {
        Ok(out) => finish_apply(out, &live_core, config, managed, manager, subresource, now),
        Err(conflicts) => {
            // kubectl upgrading from client-side apply may take over what its last-applied annotation claims
            // (lastAppliedManager): if every conflict is such a field, the apply goes through as if forced.
            let allowed = if manager == "kubectl" {
                w.last_applied_set(&live_core)
            } else {
                None
            };
            let Some(allowed) = allowed.map(|s| s.paths_str()) else {
                return Err(ApplyError::Conflicts(conflicts));
            };
            let remaining: Vec<Conflict> = conflicts
                .into_iter()
                .filter(|c| !allowed.contains(&c.path))
                .collect();
            if !remaining.is_empty() {
                return Err(ApplyError::Conflicts(remaining));
            }
            let mut managed = before;
            let out = w
                .apply_core(
                    &live_core,
                    config,
                    config_set,
                    &mut managed,
                    manager,
                    &api_version,
                    subresource,
                    true,
                )
                .map_err(ApplyError::Conflicts)?;
            finish_apply(out, &live_core, config, managed, manager, subresource, now)
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn finish_apply(
    pruned: Value,
    live_core: &Value,
    config: &Value,
    mut managed: Vec<Entry>,
    manager: &str,
    subresource: &str,
    now: &str,
) -> Result<Value, ApplyError> {
    // A no-op apply leaves the object and the applier's timestamp alone (managedFieldsUpdater).
    let noop = val_eq(live_core, &pruned);
    if !noop
        && let Some(e) = managed
            .iter_mut()
            .find(|e| e.is(manager, true, "", subresource))
    {
        e.time = Some(now.to_string());
    }
    let mut result = if noop { live_core.clone() } else { pruned };
    if manager == "kubectl" {
        sync_last_applied(&mut result, config);
    }
    cap_update_managers(&mut managed);
    set_managed_fields(&mut result, &managed);
    Ok(result)
}

/// Non-apply writes (create/update/patch): `manager` (operation Update) becomes owner of every field whose
/// value it changed or added relative to `old` (None = create: all fields); those fields are removed from
/// other managers' sets. Keeps the managedFields of `new` if the client sent valid ones (else those of old).
pub fn update(
    old: Option<&Value>,
    new: &Value,
    manager: &str,
    subresource: &str,
    types: &dyn FieldTypes,
    now: &str,
) -> Value {
    // The walks recurse once per level; beyond any real object's depth the write goes untracked rather
    // than risking the stack.
    if !new.is_object() || too_deep(new) || old.is_some_and(too_deep) {
        return new.clone();
    }
    let w = Walker { types };
    let manager = if manager.is_empty() {
        "unknown"
    } else {
        manager
    };
    let old_obj = old.filter(|v| v.is_object());
    let decode_old = || {
        old_obj
            .map(|o| decode_managed(managed_fields_of(o)).unwrap_or_default())
            .unwrap_or_default()
    };
    let mut managed = if !subresource.is_empty() {
        // Subresource writes cannot rewrite managedFields.
        decode_old()
    } else if is_reset(managed_fields_of(new)) {
        Vec::new()
    } else {
        match decode_managed(managed_fields_of(new)) {
            Ok(m) if !m.is_empty() => m,
            _ => decode_old(),
        }
    };
    let mut new_core = without_managed_fields(new);
    // Tracking only starts on create or apply: an existing object without managedFields stays untracked.
    let has_uid = old_obj
        .and_then(|o| o.get("metadata"))
        .and_then(|m| m.get("uid"))
        .and_then(Value::as_str)
        .is_some_and(|u| !u.is_empty());
    if managed.is_empty() && has_uid {
        return new_core;
    }
    let old_core = old_obj.map(without_managed_fields);
    let api_version = str_at(new, "apiVersion").unwrap_or_default().to_string();
    let cmp = w.compare_root(old_core.as_ref(), &new_core, old_core.is_none());
    record_update(&mut managed, manager, &api_version, subresource, cmp, now);
    cap_update_managers(&mut managed);
    set_managed_fields(&mut new_core, &managed);
    new_core
}

/// Default manager for a request without fieldManager: the User-Agent up to its first `/`, printable
/// characters only, at most 128 bytes (apiserver prefixFromUserAgent); an empty result becomes `unknown`.
pub fn default_manager(user_agent: &str) -> String {
    let prefix = user_agent.split('/').next().unwrap_or_default();
    let mut out = String::new();
    for ch in prefix.chars() {
        if !is_go_printable(ch) {
            continue;
        }
        if out.len() + ch.len_utf8() > 128 {
            break;
        }
        out.push(ch);
    }
    if out.is_empty() {
        "unknown".into()
    } else {
        out
    }
}

// ---------------------------------------------------------------------------------------------------------
// Values: ordering and equality as structured-merge-diff's value package defines them

fn type_rank(v: &Value) -> u8 {
    match v {
        Value::Number(_) => 0,
        Value::String(_) => 1,
        Value::Bool(_) => 2,
        Value::Array(_) => 3,
        Value::Object(_) => 4,
        Value::Null => 5,
    }
}

fn num_int(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

fn cmp_num(a: &Number, b: &Number) -> Ordering {
    match (num_int(a), num_int(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => {
            let x = a.as_f64().unwrap_or(0.0);
            let y = b.as_f64().unwrap_or(0.0);
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
    }
}

fn cmp_value(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => cmp_num(x, y),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (p, q) in x.iter().zip(y.iter()) {
                let c = cmp_value(p, q);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => cmp_maps(x, y),
        _ => type_rank(a).cmp(&type_rank(b)),
    }
}

fn cmp_maps(x: &Map<String, Value>, y: &Map<String, Value>) -> Ordering {
    let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
    for (i, k) in keys.into_iter().enumerate() {
        let c = if i == x.len() {
            Ordering::Less
        } else if i == y.len() {
            Ordering::Greater
        } else {
            match (x.get(k), y.get(k)) {
                (None, _) => Ordering::Greater,
                (_, None) => Ordering::Less,
                (Some(p), Some(q)) => cmp_value(p, q),
            }
        };
        if c != Ordering::Equal {
            return c;
        }
    }
    Ordering::Equal
}

fn val_eq(a: &Value, b: &Value) -> bool {
    cmp_value(a, b) == Ordering::Equal
}

/// value.ToString: how path elements print in conflicts.
fn value_to_string(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => go_quote(s),
        Value::Bool(b) => b.to_string(),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(value_to_string)
                .collect::<Vec<_>>()
                .join(",")
        ),
        Value::Object(m) => {
            let sorted: BTreeMap<&String, &Value> = m.iter().collect();
            sorted
                .iter()
                .map(|(k, v)| format!("{k}={}", value_to_string(v)))
                .collect::<Vec<_>>()
                .join("")
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Path elements and field sets (fieldpath)

#[derive(Clone, Debug)]
enum Pe {
    Field(String),
    /// List-map element: key fields sorted by name.
    Key(Vec<(String, Value)>),
    /// Set element.
    Val(Value),
    /// Granular lists without keys, and elements whose key cannot be computed.
    Index(usize),
}

impl Pe {
    fn rank(&self) -> u8 {
        match self {
            Pe::Field(_) => 0,
            Pe::Key(_) => 1,
            Pe::Val(_) => 2,
            Pe::Index(_) => 3,
        }
    }

    /// fieldpath.PathElement.String.
    fn display(&self) -> String {
        match self {
            Pe::Field(n) => format!(".{n}"),
            Pe::Key(kv) => {
                let parts: Vec<String> = kv
                    .iter()
                    .map(|(k, v)| format!("{k}={}", value_to_string(v)))
                    .collect();
                format!("[{}]", parts.join(","))
            }
            Pe::Val(v) => format!("[={}]", value_to_string(v)),
            Pe::Index(i) => format!("[{i}]"),
        }
    }

    /// The fieldsV1 key.
    fn serialize(&self) -> String {
        match self {
            Pe::Field(n) => format!("f:{n}"),
            Pe::Key(kv) => {
                let m: Map<String, Value> = kv.iter().cloned().collect();
                format!(
                    "k:{}",
                    serde_json::to_string(&Value::Object(m)).unwrap_or_default()
                )
            }
            Pe::Val(v) => format!("v:{}", serde_json::to_string(v).unwrap_or_default()),
            Pe::Index(i) => format!("i:{i}"),
        }
    }

    /// Ok(None) for prefixes this version does not know: they are dropped, as structured-merge-diff does.
    fn parse(s: &str) -> Result<Option<Pe>, String> {
        if let Some(n) = s.strip_prefix("f:") {
            return Ok(Some(Pe::Field(n.to_string())));
        }
        if let Some(k) = s.strip_prefix("k:") {
            let v: Value =
                serde_json::from_str(k).map_err(|e| format!("parsing key as path element: {e}"))?;
            let Value::Object(m) = v else {
                return Err(format!(
                    "parsing key as path element: expected object, got {k}"
                ));
            };
            let mut kv: Vec<(String, Value)> = m.into_iter().collect();
            kv.sort_by(|a, b| a.0.cmp(&b.0));
            return Ok(Some(Pe::Key(kv)));
        }
        if let Some(v) = s.strip_prefix("v:") {
            let v: Value = serde_json::from_str(v)
                .map_err(|e| format!("parsing value as path element: {e}"))?;
            return Ok(Some(Pe::Val(v)));
        }
        if let Some(i) = s.strip_prefix("i:") {
            let i: usize = i
                .parse()
                .map_err(|e| format!("parsing index as path element: {e}"))?;
            return Ok(Some(Pe::Index(i)));
        }
        Ok(None)
    }
}

impl Ord for Pe {
    fn cmp(&self, o: &Self) -> Ordering {
        match (self, o) {
            (Pe::Field(a), Pe::Field(b)) => a.cmp(b),
            (Pe::Key(a), Pe::Key(b)) => {
                for ((an, av), (bn, bv)) in a.iter().zip(b.iter()) {
                    let c = an.cmp(bn).then_with(|| cmp_value(av, bv));
                    if c != Ordering::Equal {
                        return c;
                    }
                }
                a.len().cmp(&b.len())
            }
            (Pe::Val(a), Pe::Val(b)) => cmp_value(a, b),
            (Pe::Index(a), Pe::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&o.rank()),
        }
    }
}

impl PartialOrd for Pe {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl PartialEq for Pe {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}

impl Eq for Pe {}

fn path_string(path: &[Pe]) -> String {
    path.iter().map(Pe::display).collect()
}

/// fieldpath.Set: `members` are owned nodes, `children` hold owned descendants. Children are never empty.
#[derive(Clone, Debug, Default, PartialEq)]
struct Set {
    members: BTreeSet<Pe>,
    children: BTreeMap<Pe, Set>,
}

impl Set {
    fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.values().all(Set::is_empty)
    }

    fn insert(&mut self, path: &[Pe]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    fn union(&self, o: &Set) -> Set {
        let mut out = self.clone();
        out.members.extend(o.members.iter().cloned());
        for (pe, c) in &o.children {
            let merged = match out.children.get(pe) {
                Some(mine) => mine.union(c),
                None => c.clone(),
            };
            if !merged.is_empty() {
                out.children.insert(pe.clone(), merged);
            }
        }
        out
    }

    fn difference(&self, o: &Set) -> Set {
        let members = self.members.difference(&o.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, c) in &self.children {
            let d = match o.children.get(pe) {
                Some(oc) => c.difference(oc),
                None => c.clone(),
            };
            if !d.is_empty() {
                children.insert(pe.clone(), d);
            }
        }
        Set { members, children }
    }

    fn intersection(&self, o: &Set) -> Set {
        let members = self.members.intersection(&o.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, c) in &self.children {
            if let Some(oc) = o.children.get(pe) {
                let i = c.intersection(oc);
                if !i.is_empty() {
                    children.insert(pe.clone(), i);
                }
            }
        }
        Set { members, children }
    }

    /// Members first, then children, each in path-element order (Set.Iterate).
    fn paths(&self) -> Vec<Vec<Pe>> {
        fn walk(s: &Set, prefix: &mut Vec<Pe>, out: &mut Vec<Vec<Pe>>) {
            for m in &s.members {
                prefix.push(m.clone());
                out.push(prefix.clone());
                prefix.pop();
            }
            for (pe, c) in &s.children {
                prefix.push(pe.clone());
                walk(c, prefix, out);
                prefix.pop();
            }
        }
        let mut out = Vec::new();
        walk(self, &mut Vec::new(), &mut out);
        out
    }

    fn paths_str(&self) -> BTreeSet<String> {
        self.paths().iter().map(|p| path_string(p)).collect()
    }

    /// EnsureNamedFieldsAreMembers: struct fields on the way to owned nodes count as members, so removing an
    /// owner's last field under a struct can remove the struct itself.
    fn ensure_named(&self, types: &dyn FieldTypes, fpath: &mut Vec<String>) -> Set {
        let mut members = self.members.clone();
        let mut children = BTreeMap::new();
        for (pe, c) in &self.children {
            if let Pe::Field(name) = pe {
                if types.is_struct_field(&refs(fpath), name) {
                    members.insert(pe.clone());
                }
                fpath.push(name.clone());
                children.insert(pe.clone(), c.ensure_named(types, fpath));
                fpath.pop();
            } else {
                children.insert(pe.clone(), c.ensure_named(types, fpath));
            }
        }
        Set { members, children }
    }

    /// FieldsV1 JSON: path elements in order, `.` first where a node is both owned and has owned children.
    fn to_fields_v1(&self) -> Map<String, Value> {
        let mut out = Map::new();
        let keys: BTreeSet<&Pe> = self.members.iter().chain(self.children.keys()).collect();
        for pe in keys {
            let member = self.members.contains(pe);
            match self.children.get(pe).filter(|c| !c.is_empty()) {
                Some(c) => {
                    let mut inner = Map::new();
                    if member {
                        inner.insert(".".into(), Value::Object(Map::new()));
                    }
                    inner.extend(c.to_fields_v1());
                    out.insert(pe.serialize(), Value::Object(inner));
                }
                None if member => {
                    out.insert(pe.serialize(), Value::Object(Map::new()));
                }
                None => {}
            }
        }
        out
    }

    fn from_fields_v1(v: &Value) -> Result<Set, String> {
        match v {
            Value::Object(m) => Ok(Self::read_node(m)?.0),
            Value::Null => Ok(Set::default()),
            _ => Err("fieldsV1 must be an object".into()),
        }
    }

    /// readIterV1: a node without (recognised) children is a member.
    fn read_node(m: &Map<String, Value>) -> Result<(Set, bool), String> {
        let mut set = Set::default();
        let mut member = false;
        let mut any_child = false;
        for (k, v) in m {
            if k == "." {
                member = true;
                continue;
            }
            let Some(pe) = Pe::parse(k)? else { continue };
            let Value::Object(cm) = v else {
                return Err(format!("fieldsV1 node {k} must be an object"));
            };
            let (child, child_member) = Self::read_node(cm)?;
            any_child = true;
            if child_member {
                set.members.insert(pe.clone());
            }
            if !child.is_empty() {
                let merged = match set.children.get(&pe) {
                    Some(prev) => prev.union(&child),
                    None => child,
                };
                set.children.insert(pe, merged);
            }
        }
        if !any_child {
            member = true;
        }
        Ok((set, member))
    }
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Fields the apiserver never records as owned (stripMetaManager), plus the deletion markers, which the
/// real server sets outside the field manager.
fn strip_set() -> Set {
    let mut s = Set::default();
    for p in ["apiVersion", "kind", "metadata"] {
        s.insert(&[Pe::Field(p.into())]);
    }
    for p in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        s.insert(&[Pe::Field("metadata".into()), Pe::Field(p.into())]);
    }
    s
}

// ---------------------------------------------------------------------------------------------------------
// Typed walks over objects (merge, compare, remove, ToFieldSet)

#[derive(Default)]
struct Comparison {
    added: Set,
    modified: Set,
    removed: Set,
}

#[derive(Clone, Copy)]
struct Walker<'a> {
    types: &'a dyn FieldTypes,
}

impl Walker<'_> {
    fn list_type(&self, fpath: &[String]) -> ListType {
        match self.types.list_type(&refs(fpath)) {
            ListType::Map(keys) if keys.is_empty() => ListType::Set,
            t => t,
        }
    }

    fn map_atomic(&self, fpath: &[String]) -> bool {
        !fpath.is_empty() && self.types.map_atomic(&refs(fpath))
    }

    fn item_pe(&self, fpath: &[String], lt: &ListType, item: &Value) -> Result<Pe, String> {
        match lt {
            ListType::Map(keys) => {
                let obj = match item {
                    Value::Object(o) => o,
                    Value::Null => {
                        return Err("associative list with keys may not have a null element".into());
                    }
                    _ => {
                        return Err(
                            "associative list with keys may not have non-map elements".into()
                        );
                    }
                };
                let mut kv = Vec::with_capacity(keys.len());
                for k in keys {
                    match obj
                        .get(k)
                        .cloned()
                        .or_else(|| self.types.key_default(&refs(fpath), k))
                    {
                        Some(v) => kv.push((k.clone(), v)),
                        None => {
                            return Err(format!(
                                "associative list with keys has an element that omits key field {} (and doesn't have default value)",
                                go_quote(k)
                            ));
                        }
                    }
                }
                kv.sort_by(|a, b| a.0.cmp(&b.0));
                kv.dedup_by(|a, b| a.0 == b.0);
                Ok(Pe::Key(kv))
            }
            _ => match item {
                Value::Object(_) => {
                    Err("associative list without keys has an element that's a map type".into())
                }
                Value::Array(_) => {
                    Err("associative list without keys has an element that's a list type".into())
                }
                v => Ok(Pe::Val(v.clone())),
            },
        }
    }

    /// Element path elements; an element whose key cannot be computed is addressed by index.
    fn item_pes(&self, fpath: &[String], lt: &ListType, items: &[Value]) -> Vec<Pe> {
        items
            .iter()
            .enumerate()
            .map(|(i, v)| self.item_pe(fpath, lt, v).unwrap_or(Pe::Index(i)))
            .collect()
    }

    /// ToFieldSet. `strict` reports what structured-merge-diff rejects in an applied configuration.
    fn field_set(&self, v: &Value, strict: bool) -> (Set, Vec<String>) {
        let mut set = Set::default();
        let mut errs = Vec::new();
        self.fs_walk(
            v,
            &mut Vec::new(),
            &mut Vec::new(),
            &mut set,
            &mut errs,
            strict,
        );
        (set, errs)
    }

    fn fs_walk(
        &self,
        v: &Value,
        path: &mut Vec<Pe>,
        fpath: &mut Vec<String>,
        set: &mut Set,
        errs: &mut Vec<String>,
        strict: bool,
    ) {
        match v {
            Value::Object(m) => {
                if self.map_atomic(fpath) {
                    set.insert(path);
                    return;
                }
                for (k, child) in m {
                    let named = self.types.is_struct_field(&refs(fpath), k);
                    path.push(Pe::Field(k.clone()));
                    fpath.push(k.clone());
                    self.fs_walk(child, path, fpath, set, errs, strict);
                    if child.is_null() || child.as_object().is_some_and(Map::is_empty) || !named {
                        set.insert(path);
                    }
                    path.pop();
                    fpath.pop();
                }
            }
            Value::Array(items) => {
                let lt = self.list_type(fpath);
                if lt == ListType::Atomic {
                    set.insert(path);
                    return;
                }
                let mut seen = BTreeSet::new();
                for (i, item) in items.iter().enumerate() {
                    let pe = match self.item_pe(fpath, &lt, item) {
                        Ok(pe) => pe,
                        Err(e) if strict => {
                            errs.push(format!("{}: element {i}: {e}", path_string(path)));
                            return;
                        }
                        Err(_) => Pe::Index(i),
                    };
                    if !seen.insert(pe.clone()) && strict {
                        errs.push(format!(
                            "{}: duplicate entries for key {}",
                            path_string(path),
                            pe.display()
                        ));
                        continue;
                    }
                    path.push(pe);
                    self.fs_walk(item, path, fpath, set, errs, strict);
                    set.insert(path);
                    path.pop();
                }
            }
            _ => set.insert(path),
        }
    }

    /// The merge of an applied configuration `r` into `l` (values of `r` win; maps and associative lists merge).
    fn merge(
        &self,
        l: Option<&Value>,
        r: Option<&Value>,
        fpath: &mut Vec<String>,
    ) -> Option<Value> {
        let (l, r) = match (l, r) {
            (None, None) => return None,
            (Some(l), None) => return Some(l.clone()),
            (None, Some(r)) => return Some(r.clone()),
            (Some(l), Some(r)) => (l, r),
        };
        match (l, r) {
            (Value::Object(lm), Value::Object(rm)) => {
                if (lm.is_empty() && rm.is_empty()) || self.map_atomic(fpath) {
                    return Some(r.clone());
                }
                let mut out = Map::new();
                for (k, lv) in lm {
                    fpath.push(k.clone());
                    if let Some(v) = self.merge(Some(lv), rm.get(k), fpath) {
                        out.insert(k.clone(), v);
                    }
                    fpath.pop();
                }
                for (k, rv) in rm {
                    if !lm.contains_key(k) {
                        out.insert(k.clone(), rv.clone());
                    }
                }
                Some(Value::Object(out))
            }
            // A granular map or list meets null: structured-merge-diff reads null as "no items" and keeps live's.
            (Value::Object(lm), Value::Null) if !lm.is_empty() && !self.map_atomic(fpath) => {
                Some(l.clone())
            }
            (Value::Array(la), Value::Null)
                if !la.is_empty() && self.list_type(fpath) != ListType::Atomic =>
            {
                Some(l.clone())
            }
            (Value::Array(la), Value::Array(ra)) => {
                let lt = self.list_type(fpath);
                if lt == ListType::Atomic || (la.is_empty() && ra.is_empty()) {
                    return Some(r.clone());
                }
                Some(self.merge_list(la, ra, &lt, fpath))
            }
            _ => Some(r.clone()),
        }
    }

    /// Associative list merge: the configuration's order wins for its elements, live-only elements keep
    /// their place relative to the shared ones (mergingWalker.visitListItems).
    fn merge_list(
        &self,
        la: &[Value],
        ra: &[Value],
        lt: &ListType,
        fpath: &mut Vec<String>,
    ) -> Value {
        let lpes = self.item_pes(fpath, lt, la);
        let rall = self.item_pes(fpath, lt, ra);
        // Duplicated live elements are not merged with the configuration's (observed as None).
        let mut lobs: BTreeMap<&Pe, Option<usize>> = BTreeMap::new();
        for (i, pe) in lpes.iter().enumerate() {
            lobs.entry(pe).and_modify(|e| *e = None).or_insert(Some(i));
        }
        let mut robs: BTreeMap<&Pe, usize> = BTreeMap::new();
        let mut rpes: Vec<&Pe> = Vec::new();
        for (i, pe) in rall.iter().enumerate() {
            if robs.contains_key(pe) {
                continue;
            }
            robs.insert(pe, i);
            rpes.push(pe);
        }
        let lchild = |pe: &Pe| lobs.get(pe).copied().flatten().and_then(|i| la.get(i));
        let rchild = |pe: &Pe| robs.get(pe).and_then(|&i| ra.get(i));

        let mut shared = rpes
            .iter()
            .copied()
            .filter(|pe| lobs.contains_key(pe))
            .collect::<Vec<_>>()
            .into_iter();
        let mut next_shared = shared.next();
        let mut merged_rhs: BTreeSet<&Pe> = BTreeSet::new();
        let mut out = Vec::new();
        let (ll, rl) = (lpes.len(), rpes.len());
        let (mut li, mut ri) = (0, 0);
        while li < ll || ri < rl {
            if li < ll && ri < rl {
                let pe = &lpes[li];
                if pe == rpes[ri] {
                    merged_rhs.insert(pe);
                    if let Some(v) = self.merge(lchild(pe), rchild(pe), fpath) {
                        out.push(v);
                    }
                    li += 1;
                    ri += 1;
                    next_shared = shared.next();
                    continue;
                }
                if robs.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                    li += 1;
                    continue;
                }
            }
            if li < ll {
                let pe = &lpes[li];
                if !robs.contains_key(pe) {
                    if let Some(v) = self.merge(la.get(li), None, fpath) {
                        out.push(v);
                    }
                    li += 1;
                    continue;
                } else if merged_rhs.contains(pe) {
                    li += 1;
                    continue;
                }
            }
            if ri < rl {
                let pe = rpes[ri];
                merged_rhs.insert(pe);
                if let Some(v) = self.merge(lchild(pe), rchild(pe), fpath) {
                    out.push(v);
                }
                ri += 1;
                if next_shared.is_some_and(|n| n == pe) {
                    next_shared = shared.next();
                }
            }
        }
        Value::Array(out)
    }

    fn compare_root(&self, l: Option<&Value>, r: &Value, create: bool) -> Comparison {
        let mut c = Comparison::default();
        let empty = Value::Object(Map::new());
        self.compare(
            Some(l.unwrap_or(&empty)),
            Some(r),
            &mut Vec::new(),
            &mut Vec::new(),
            create,
            &mut c,
        );
        c
    }

    /// typed.Compare: leaves are added/removed/modified; containers only added/removed.
    fn compare(
        &self,
        l: Option<&Value>,
        r: Option<&Value>,
        path: &mut Vec<Pe>,
        fpath: &mut Vec<String>,
        create: bool,
        c: &mut Comparison,
    ) {
        let zero;
        let l = match (l, r) {
            (None, Some(_)) if create && matches!(path.last(), Some(Pe::Field(_))) => {
                zero = self.types.zero_value(&refs(fpath));
                zero.as_ref()
            }
            _ => l,
        };
        let mapish = |v: Option<&Value>| matches!(v, None | Some(Value::Object(_) | Value::Null));
        let listish = |v: Option<&Value>| matches!(v, None | Some(Value::Array(_) | Value::Null));
        let any_obj = matches!(l, Some(Value::Object(_))) || matches!(r, Some(Value::Object(_)));
        let any_arr = matches!(l, Some(Value::Array(_))) || matches!(r, Some(Value::Array(_)));
        if any_obj && mapish(l) && mapish(r) {
            let lm = l.and_then(Value::as_object);
            let rm = r.and_then(Value::as_object);
            let empty = lm.is_none_or(Map::is_empty) && rm.is_none_or(Map::is_empty);
            if empty || self.map_atomic(fpath) {
                Self::leaf(l, r, path, c);
                return;
            }
            if let Some(lm) = lm {
                for (k, lv) in lm {
                    path.push(Pe::Field(k.clone()));
                    fpath.push(k.clone());
                    self.compare(Some(lv), rm.and_then(|m| m.get(k)), path, fpath, create, c);
                    path.pop();
                    fpath.pop();
                }
            }
            if let Some(rm) = rm {
                for (k, rv) in rm {
                    if lm.is_some_and(|m| m.contains_key(k)) {
                        continue;
                    }
                    path.push(Pe::Field(k.clone()));
                    fpath.push(k.clone());
                    self.compare(None, Some(rv), path, fpath, create, c);
                    path.pop();
                    fpath.pop();
                }
            }
            Self::post(l, r, path, c);
        } else if any_arr && listish(l) && listish(r) {
            let la = l
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            let ra = r
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            let lt = self.list_type(fpath);
            if lt == ListType::Atomic || (la.is_empty() && ra.is_empty()) {
                Self::leaf(l, r, path, c);
                return;
            }
            let lpes = self.item_pes(fpath, &lt, la);
            let rpes = self.item_pes(fpath, &lt, ra);
            let mut lobs: BTreeMap<&Pe, usize> = BTreeMap::new();
            for (i, pe) in lpes.iter().enumerate() {
                lobs.entry(pe).or_insert(i);
            }
            let mut robs: BTreeMap<&Pe, usize> = BTreeMap::new();
            for (i, pe) in rpes.iter().enumerate() {
                robs.entry(pe).or_insert(i);
            }
            let mut seen = BTreeSet::new();
            for pe in lpes.iter().chain(rpes.iter()) {
                if !seen.insert(pe) {
                    continue;
                }
                path.push(pe.clone());
                let lv = lobs.get(pe).and_then(|&i| la.get(i));
                let rv = robs.get(pe).and_then(|&i| ra.get(i));
                self.compare(lv, rv, path, fpath, create, c);
                path.pop();
            }
            Self::post(l, r, path, c);
        } else {
            Self::leaf(l, r, path, c);
        }
    }

    fn leaf(l: Option<&Value>, r: Option<&Value>, path: &[Pe], c: &mut Comparison) {
        if path.is_empty() {
            return;
        }
        match (l, r) {
            (None, Some(_)) => c.added.insert(path),
            (Some(_), None) => c.removed.insert(path),
            (Some(a), Some(b)) if !val_eq(a, b) => c.modified.insert(path),
            _ => {}
        }
    }

    fn post(l: Option<&Value>, r: Option<&Value>, path: &[Pe], c: &mut Comparison) {
        if path.is_empty() {
            return;
        }
        match (l, r) {
            (None, Some(_)) => c.added.insert(path),
            (Some(_), None) => c.removed.insert(path),
            _ => {}
        }
    }

    /// RemoveItems: drops every member of `set` (with its subtree) from `v`.
    fn remove(&self, v: &Value, set: &Set, fpath: &mut Vec<String>) -> Value {
        match v {
            Value::Object(m) if !m.is_empty() && !self.map_atomic(fpath) => {
                let mut out = Map::new();
                for (k, child) in m {
                    let pe = Pe::Field(k.clone());
                    if set.members.contains(&pe) {
                        continue;
                    }
                    let Some(sub) = set.children.get(&pe) else {
                        out.insert(k.clone(), child.clone());
                        continue;
                    };
                    fpath.push(k.clone());
                    let nv = self.remove(child, sub, fpath);
                    // An emptied free-form map or list disappears (Go omitempty); an emptied struct stays `{}`.
                    let emptied = match (&nv, child) {
                        (Value::Array(a), Value::Array(b)) => a.is_empty() && !b.is_empty(),
                        (Value::Object(a), Value::Object(b)) => {
                            a.is_empty()
                                && b.keys().next().is_some_and(|first| {
                                    !self.types.is_struct_field(&refs(fpath), first)
                                })
                        }
                        _ => false,
                    };
                    fpath.pop();
                    if !emptied {
                        out.insert(k.clone(), nv);
                    }
                }
                Value::Object(out)
            }
            Value::Array(items) if !items.is_empty() => {
                let lt = self.list_type(fpath);
                if lt == ListType::Atomic {
                    return v.clone();
                }
                let pes = self.item_pes(fpath, &lt, items);
                let mut out = Vec::with_capacity(items.len());
                for (item, pe) in items.iter().zip(pes.iter()) {
                    if set.members.contains(pe) {
                        continue;
                    }
                    match set.children.get(pe) {
                        Some(sub) => out.push(self.remove(item, sub, fpath)),
                        None => out.push(item.clone()),
                    }
                }
                Value::Array(out)
            }
            _ => v.clone(),
        }
    }

    fn named(&self, s: &Set) -> Set {
        s.ensure_named(self.types, &mut Vec::new())
    }

    /// Updater.prune: drops what the applier owned last time and no longer applies, unless another manager
    /// (or the new configuration) owns it; fields nobody ever owned survive.
    fn prune(&self, merged: &Value, managed: &[Entry], last: &Set) -> Value {
        if last.is_empty() {
            return merged.clone();
        }
        let last_n = self.named(last);
        let pruned = self.remove(merged, &last_n, &mut Vec::new());
        let all = managed
            .iter()
            .fold(Set::default(), |acc, e| acc.union(&e.set));
        let managed_n = self.named(&all);
        let merged_set = self.named(&self.field_set(merged, false).0);
        let pruned_set = self.named(&self.field_set(&pruned, false).0);
        let pruned = self.remove(
            merged,
            &merged_set.difference(&pruned_set.union(&managed_n)),
            &mut Vec::new(),
        );
        let pruned_set = self.named(&self.field_set(&pruned, false).0);
        self.remove(
            merged,
            &merged_set.difference(&pruned_set).intersection(&last_n),
            &mut Vec::new(),
        )
    }

    /// Updater.Apply up to conflict detection; on success the pruned object, with `managed` updated.
    #[allow(clippy::too_many_arguments)]
    fn apply_core(
        &self,
        live: &Value,
        config: &Value,
        config_set: Set,
        managed: &mut Vec<Entry>,
        manager: &str,
        api_version: &str,
        subresource: &str,
        force: bool,
    ) -> Result<Value, Vec<Conflict>> {
        let merged = self
            .merge(Some(live), Some(config), &mut Vec::new())
            .unwrap_or_else(|| Value::Object(Map::new()));
        let me = match managed
            .iter()
            .position(|e| e.is(manager, true, "", subresource))
        {
            Some(i) => i,
            None => {
                managed.push(Entry {
                    manager: manager.to_string(),
                    applied: true,
                    api_version: api_version.to_string(),
                    subresource: subresource.to_string(),
                    time: None,
                    set: Set::default(),
                });
                managed.len() - 1
            }
        };
        let last = std::mem::replace(&mut managed[me].set, config_set);
        managed[me].api_version = api_version.to_string();
        let pruned = self.prune(&merged, managed, &last);

        let mut c = Comparison::default();
        self.compare(
            Some(live),
            Some(&pruned),
            &mut Vec::new(),
            &mut Vec::new(),
            false,
            &mut c,
        );
        let changed = c.modified.union(&c.added);
        let mut conflicts: Vec<(usize, Set)> = Vec::new();
        for (i, e) in managed.iter().enumerate() {
            if i == me {
                continue;
            }
            let cs = e.set.intersection(&changed);
            if !cs.is_empty() {
                conflicts.push((i, cs));
            }
        }
        if !force && !conflicts.is_empty() {
            return Err(conflict_list(managed, &conflicts));
        }
        for (i, cs) in &conflicts {
            managed[*i].set = managed[*i].set.difference(cs);
        }
        let strip = strip_set();
        for (i, e) in managed.iter_mut().enumerate() {
            if i == me {
                e.set = e.set.difference(&strip);
            } else {
                e.set = e.set.difference(&c.removed);
            }
        }
        managed.retain(|e| !e.set.is_empty());
        Ok(pruned)
    }

    /// The fields kubectl's client-side apply annotation claims.
    fn last_applied_set(&self, live: &Value) -> Option<Set> {
        let s = live
            .get("metadata")?
            .get("annotations")?
            .get(LAST_APPLIED)?
            .as_str()?;
        if s.is_empty() {
            return None;
        }
        let v: Value = serde_json::from_str(s).ok()?;
        if !v.is_object() {
            return None;
        }
        let (set, errs) = self.field_set(&v, true);
        errs.is_empty().then_some(set)
    }
}

fn conflict_list(managed: &[Entry], conflicts: &[(usize, Set)]) -> Vec<Conflict> {
    let mut out = Vec::new();
    for (i, cs) in conflicts {
        let Some(e) = managed.get(*i) else { continue };
        for p in cs.paths() {
            out.push(Conflict {
                manager: e.manager.clone(),
                api_version: e.api_version.clone(),
                path: path_string(&p),
                operation: if e.applied { "Apply" } else { "Update" }.into(),
                subresource: e.subresource.clone(),
            });
        }
    }
    // Stable order: grouped the way the message groups them.
    out.sort_by_cached_key(|c| c.manager_description());
    out
}

// ---------------------------------------------------------------------------------------------------------
// managedFields entries

#[derive(Clone, Debug)]
struct Entry {
    manager: String,
    applied: bool,
    api_version: String,
    subresource: String,
    time: Option<String>,
    set: Set,
}

impl Entry {
    /// BuildManagerIdentifier: Apply entries are one per (manager, subresource); Update entries also per apiVersion.
    fn is(&self, manager: &str, applied: bool, api_version: &str, subresource: &str) -> bool {
        self.manager == manager
            && self.applied == applied
            && self.subresource == subresource
            && (applied || self.api_version == api_version)
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), Value::String(self.manager.clone()));
        m.insert(
            "operation".into(),
            Value::String(if self.applied { "Apply" } else { "Update" }.into()),
        );
        m.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        if let Some(t) = &self.time {
            m.insert("time".into(), Value::String(t.clone()));
        }
        m.insert("fieldsType".into(), Value::String("FieldsV1".into()));
        m.insert("fieldsV1".into(), Value::Object(self.set.to_fields_v1()));
        if !self.subresource.is_empty() {
            m.insert(
                "subresource".into(),
                Value::String(self.subresource.clone()),
            );
        }
        Value::Object(m)
    }
}

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

const MAX_DEPTH: usize = 512;

fn too_deep(v: &Value) -> bool {
    let mut stack = vec![(v, 1usize)];
    while let Some((v, d)) = stack.pop() {
        if d > MAX_DEPTH {
            return true;
        }
        match v {
            Value::Object(m) => stack.extend(m.values().map(|c| (c, d + 1))),
            Value::Array(a) => stack.extend(a.iter().map(|c| (c, d + 1))),
            _ => {}
        }
    }
    false
}

fn managed_fields_of(obj: &Value) -> Option<&Value> {
    obj.get("metadata")?.get("managedFields")
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn without_managed_fields(obj: &Value) -> Value {
    let mut out = obj.clone();
    if let Some(m) = out.get_mut("metadata").and_then(Value::as_object_mut) {
        m.shift_remove("managedFields");
    }
    out
}

/// DecodeManagedFields, with the same validation.
fn decode_managed(v: Option<&Value>) -> Result<Vec<Entry>, String> {
    let items = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err("managedFields must be a list".into()),
    };
    let mut out: Vec<Entry> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Value::Object(e) = item else {
            return Err(format!("managed fields entry {i} must be an object"));
        };
        let s = |k: &str| -> Result<String, String> {
            match e.get(k) {
                None | Some(Value::Null) => Ok(String::new()),
                Some(Value::String(s)) => Ok(s.clone()),
                Some(_) => Err(format!("{k} must be a string in managed fields entry {i}")),
            }
        };
        let operation = s("operation")?;
        if operation != "Apply" && operation != "Update" {
            return Err("operation must be `Apply` or `Update`".into());
        }
        let api_version = s("apiVersion")?;
        if api_version.is_empty() {
            return Err("apiVersion must not be empty".into());
        }
        match s("fieldsType")?.as_str() {
            "FieldsV1" => {}
            "" => return Err(format!("missing fieldsType in managed fields entry {i}")),
            other => {
                return Err(format!(
                    "invalid fieldsType {} in managed fields entry {i}",
                    go_quote(other)
                ));
            }
        }
        let set = match e.get("fieldsV1") {
            None => Set::default(),
            Some(f) => Set::from_fields_v1(f).map_err(|err| {
                format!("error decoding versioned set: error decoding set: {err}")
            })?,
        };
        let time = s("time")?;
        let entry = Entry {
            manager: s("manager")?,
            applied: operation == "Apply",
            api_version,
            subresource: s("subresource")?,
            time: (!time.is_empty()).then_some(time),
            set,
        };
        // Later entries with the same identity replace earlier ones, as in the server's map.
        out.retain(|o| {
            !o.is(
                &entry.manager,
                entry.applied,
                &entry.api_version,
                &entry.subresource,
            )
        });
        out.push(entry);
    }
    Ok(out)
}

/// `managedFields: [{}]` is the documented way to clear field ownership.
fn is_reset(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Array(items)) if items.len() == 1 => items[0].as_object().is_some_and(|m| {
            m.values().all(|x| match x {
                Value::Null => true,
                Value::String(s) => s.is_empty(),
                Value::Object(o) => o.is_empty(),
                _ => false,
            })
        }),
        _ => false,
    }
}

/// Updater.Update plus managedFieldsUpdater: the writer takes every changed or added field from everyone,
/// removed fields leave every set, and the writer's timestamp moves only if it took something.
fn record_update(
    managed: &mut Vec<Entry>,
    manager: &str,
    api_version: &str,
    subresource: &str,
    cmp: Comparison,
    now: &str,
) {
    let taken = cmp.modified.union(&cmp.added);
    for e in managed.iter_mut() {
        e.set = e.set.difference(&taken).difference(&cmp.removed);
    }
    let mine = taken.difference(&strip_set());
    if !mine.is_empty() {
        match managed
            .iter_mut()
            .find(|e| e.is(manager, false, api_version, subresource))
        {
            Some(e) => {
                e.set = e.set.union(&mine);
                e.time = Some(now.to_string());
            }
            None => managed.push(Entry {
                manager: manager.to_string(),
                applied: false,
                api_version: api_version.to_string(),
                subresource: subresource.to_string(),
                time: Some(now.to_string()),
                set: mine,
            }),
        }
    }
    managed.retain(|e| !e.set.is_empty());
}

/// capManagersManager: beyond 10 Update entries the oldest are folded into `ancient-changes`.
fn cap_update_managers(managed: &mut Vec<Entry>) {
    const MAX_UPDATE_MANAGERS: usize = 10;
    const BUCKET: &str = "ancient-changes";
    let mut updaters: Vec<usize> = (0..managed.len())
        .filter(|&i| !managed[i].applied)
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    updaters.sort_by_cached_key(|&i| {
        let e = &managed[i];
        (
            time_seconds(e.time.as_deref()),
            e.manager.clone(),
            e.api_version.clone(),
            e.subresource.clone(),
        )
    });
    let mut length = updaters.len();
    let mut removed = BTreeSet::new();
    for i in updaters {
        if length <= MAX_UPDATE_MANAGERS {
            break;
        }
        let Some(e) = managed.get(i).cloned() else {
            continue;
        };
        if e.manager == BUCKET && e.subresource.is_empty() {
            continue;
        }
        match managed
            .iter()
            .position(|b| b.is(BUCKET, false, &e.api_version, ""))
        {
            Some(b) => {
                managed[b].set = managed[b].set.union(&e.set);
                managed[b].time = e.time.clone();
                length -= 1;
            }
            None => managed.push(Entry {
                manager: BUCKET.into(),
                applied: false,
                api_version: e.api_version.clone(),
                subresource: String::new(),
                time: e.time.clone(),
                set: e.set.clone(),
            }),
        }
        removed.insert(i);
    }
    let mut idx = 0;
    managed.retain(|_| {
        let keep = !removed.contains(&idx);
        idx += 1;
        keep
    });
}

/// Unix seconds of an RFC 3339 time, for ordering entries; unparsable times sort as 0 like a missing one.
fn time_seconds(t: Option<&str>) -> i64 {
    fn parse(s: &str) -> Option<i64> {
        let b = s.as_bytes();
        let num = |r: std::ops::Range<usize>| -> Option<i64> { s.get(r)?.parse().ok() };
        if b.len() < 20
            || b.get(4) != Some(&b'-')
            || b.get(10).map(|c| c.to_ascii_uppercase()) != Some(b'T')
        {
            return None;
        }
        let (y, mo, d, h, mi, se) = (
            num(0..4)?,
            num(5..7)?,
            num(8..10)?,
            num(11..13)?,
            num(14..16)?,
            num(17..19)?,
        );
        let mut rest = s.get(19..)?;
        if let Some(frac) = rest.strip_prefix('.') {
            rest = frac.trim_start_matches(|c: char| c.is_ascii_digit());
        }
        let offset = match rest {
            "Z" | "z" => 0,
            _ => {
                let sign = match rest.as_bytes().first()? {
                    b'+' => 1,
                    b'-' => -1,
                    _ => return None,
                };
                let oh: i64 = rest.get(1..3)?.parse().ok()?;
                let om: i64 = rest.get(4..6)?.parse().ok()?;
                sign * (oh * 3600 + om * 60)
            }
        };
        // days_from_civil (Howard Hinnant).
        let y2 = if mo <= 2 { y - 1 } else { y };
        let era = y2.div_euclid(400);
        let yoe = y2 - era * 400;
        let mp = (mo + 9) % 12;
        let doy = (153 * mp + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        Some(days * 86_400 + h * 3600 + mi * 60 + se - offset)
    }
    t.and_then(parse).unwrap_or(0)
}

/// EncodeObjectManagedFields: Apply entries first, then by time, manager, apiVersion, subresource.
fn set_managed_fields(obj: &mut Value, managed: &[Entry]) {
    let mut entries: Vec<&Entry> = managed.iter().filter(|e| !e.set.is_empty()).collect();
    entries.sort_by(|p, q| {
        q.applied
            .cmp(&p.applied)
            .then_with(|| time_seconds(p.time.as_deref()).cmp(&time_seconds(q.time.as_deref())))
            .then_with(|| p.manager.cmp(&q.manager))
            .then_with(|| p.api_version.cmp(&q.api_version))
            .then_with(|| p.subresource.cmp(&q.subresource))
    });
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    if entries.is_empty() {
        if let Some(m) = root.get_mut("metadata").and_then(Value::as_object_mut) {
            m.shift_remove("managedFields");
        }
        return;
    }
    let list = Value::Array(entries.iter().map(|e| e.to_json()).collect());
    let meta = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Some(m) = meta.as_object_mut() {
        m.insert("managedFields".into(), list);
    }
}

/// lastAppliedUpdater: kubectl's server-side apply keeps an existing client-side annotation in step.
fn sync_last_applied(obj: &mut Value, config: &Value) {
    let has = obj
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(LAST_APPLIED))
        .is_some();
    if !has {
        return;
    }
    let mut cfg = config.clone();
    if let Some(a) = cfg
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    {
        a.shift_remove(LAST_APPLIED);
    }
    let mut text = String::new();
    text.push_str(&crate::gofmt::json(&cfg));
    text.push('\n');
    if let Some(a) = obj
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    {
        a.insert(LAST_APPLIED.into(), Value::String(text));
    }
}

/// schema.GroupVersionKind.String of the applied object, as the server's typed-conversion errors print it.
fn gvk_string(obj: &Value) -> String {
    let av = str_at(obj, "apiVersion").unwrap_or_default();
    let kind = str_at(obj, "kind").unwrap_or_default();
    let (group, version) = av.rsplit_once('/').unwrap_or(("", av));
    format!("{group}/{version}, Kind={kind}")
}

/// ValidationErrors.Error.
fn validation_message(errs: &[String]) -> String {
    if errs.len() == 1 {
        return errs[0].clone();
    }
    let mut lines = vec!["errors:".to_string()];
    lines.extend(errs.iter().map(|e| format!("  {e}")));
    lines.join("\n")
}

// ---------------------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const T0: &str = "2024-01-01T00:00:00Z";
    const T1: &str = "2024-01-01T00:00:01Z";
    const T2: &str = "2024-01-01T00:00:02Z";

    fn cm(name: &str, data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
    }

    fn types(kind: &str) -> Box<dyn FieldTypes> {
        let group = match kind {
            "Deployment" => "apps",
            _ => "",
        };
        builtin_field_types(group, kind)
    }

    fn entries(obj: &Value) -> Vec<Value> {
        obj["metadata"]["managedFields"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn fields(obj: &Value, manager: &str, op: &str) -> Value {
        entries(obj)
            .into_iter()
            .find(|e| e["manager"] == manager && e["operation"] == op)
            .map(|e| e["fieldsV1"].clone())
            .unwrap_or(Value::Null)
    }

    fn apply_ok(
        live: Option<&Value>,
        cfg: &Value,
        mgr: &str,
        force: bool,
        kind: &str,
        now: &str,
    ) -> Value {
        match apply(live, cfg, mgr, force, "", types(kind).as_ref(), now) {
            Ok(v) => v,
            Err(e) => panic!("apply by {mgr} failed: {e}"),
        }
    }

    #[test]
    fn create_by_apply_owns_exactly_the_configuration() {
        let mut cfg = cm("a", json!({"k": "v"}));
        cfg["metadata"]["labels"] = json!({"app": "x"});
        let out = apply_ok(None, &cfg, "mgr", false, "ConfigMap", T0);
        assert_eq!(out["data"], json!({"k": "v"}));
        assert_eq!(
            out["metadata"]["managedFields"],
            json!([{"manager": "mgr", "operation": "Apply", "apiVersion": "v1", "time": T0, "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {"f:k": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}}])
        );
        let keys: Vec<&String> = out["metadata"]["managedFields"][0]
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        assert_eq!(
            keys,
            [
                "manager",
                "operation",
                "apiVersion",
                "time",
                "fieldsType",
                "fieldsV1"
            ]
        );
    }

    #[test]
    fn reapplying_the_same_configuration_changes_nothing() {
        let cfg = cm("a", json!({"k": "v", "j": "w"}));
        let first = apply_ok(None, &cfg, "mgr", false, "ConfigMap", T0);
        let second = apply_ok(Some(&first), &cfg, "mgr", false, "ConfigMap", T1);
        assert_eq!(first, second, "a no-op apply keeps even the timestamp");
    }

    #[test]
    fn apply_removes_fields_the_manager_dropped_unless_someone_else_owns_them() {
        let live = apply_ok(
            None,
            &cm("a", json!({"a": "1", "b": "2", "c": "3"})),
            "one",
            false,
            "ConfigMap",
            T0,
        );
        let live = apply_ok(
            Some(&live),
            &cm("a", json!({"c": "3"})),
            "two",
            false,
            "ConfigMap",
            T1,
        );
        let out = apply_ok(
            Some(&live),
            &cm("a", json!({"a": "10"})),
            "one",
            false,
            "ConfigMap",
            T2,
        );
        assert_eq!(
            out["data"],
            json!({"a": "10", "c": "3"}),
            "b dropped; c still owned by two"
        );
        assert_eq!(fields(&out, "one", "Apply"), json!({"f:data": {"f:a": {}}}));
        assert_eq!(fields(&out, "two", "Apply"), json!({"f:data": {"f:c": {}}}));
    }

    #[test]
    fn two_appliers_with_equal_values_share_the_field() {
        let live = apply_ok(
            None,
            &cm("a", json!({"k": "v"})),
            "one",
            false,
            "ConfigMap",
            T0,
        );
        let out = apply_ok(
            Some(&live),
            &cm("a", json!({"k": "v"})),
            "two",
            false,
            "ConfigMap",
            T1,
        );
        assert_eq!(fields(&out, "one", "Apply"), json!({"f:data": {"f:k": {}}}));
        assert_eq!(fields(&out, "two", "Apply"), json!({"f:data": {"f:k": {}}}));
        // Nothing changed, so the new applier's entry carries no time (managedFieldsUpdater).
        assert!(
            entries(&out)
                .iter()
                .any(|e| e["manager"] == "two" && e.get("time").is_none())
        );
    }

    #[test]
    fn conflict_with_an_update_manager_reports_the_real_message() {
        let created = update(
            None,
            &cm("a", json!({"k": "v", "j": "w"})),
            "kubectl-client-side-apply",
            "",
            types("ConfigMap").as_ref(),
            T0,
        );
        assert_eq!(
            fields(&created, "kubectl-client-side-apply", "Update"),
            json!({"f:data": {".": {}, "f:j": {}, "f:k": {}}})
        );
        let err = apply(
            Some(&created),
            &cm("a", json!({"k": "x"})),
            "mgr",
            false,
            "",
            types("ConfigMap").as_ref(),
            T1,
        );
        let Err(err) = err else {
            panic!("expected a conflict")
        };
        assert_eq!(
            err.to_string(),
            r#"Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.k"#
        );
        let Err(err) = apply(
            Some(&created),
            &cm("a", json!({"k": "x", "j": "y"})),
            "mgr",
            false,
            "",
            types("ConfigMap").as_ref(),
            T1,
        ) else {
            panic!("expected conflicts")
        };
        assert_eq!(
            err.to_string(),
            "Apply failed with 2 conflicts: conflicts with \"kubectl-client-side-apply\" using v1:\n- .data.j\n- .data.k"
        );
        let ApplyError::Conflicts(cs) = err else {
            panic!("conflicts")
        };
        assert_eq!(
            cs[0].manager_description(),
            r#""kubectl-client-side-apply" using v1"#
        );
        // An Apply manager prints without a version.
        let applied = apply_ok(
            None,
            &cm("b", json!({"k": "1"})),
            "one",
            false,
            "ConfigMap",
            T0,
        );
        let Err(err) = apply(
            Some(&applied),
            &cm("b", json!({"k": "2"})),
            "two",
            false,
            "",
            types("ConfigMap").as_ref(),
            T1,
        ) else {
            panic!("conflict")
        };
        assert_eq!(
            err.to_string(),
            r#"Apply failed with 1 conflict: conflict with "one": .data.k"#
        );
    }

    #[test]
    fn force_takes_ownership() {
        let live = apply_ok(
            None,
            &cm("a", json!({"a": "1", "b": "1"})),
            "mgr-a",
            false,
            "ConfigMap",
            T0,
        );
        let out = apply_ok(
            Some(&live),
            &cm("a", json!({"a": "3"})),
            "mgr-b",
            true,
            "ConfigMap",
            T1,
        );
        assert_eq!(out["data"], json!({"a": "3", "b": "1"}));
        assert_eq!(
            fields(&out, "mgr-a", "Apply"),
            json!({"f:data": {"f:b": {}}})
        );
        assert_eq!(
            fields(&out, "mgr-b", "Apply"),
            json!({"f:data": {"f:a": {}}})
        );
        // mgr-a no longer claims a: applying without it neither conflicts nor removes it.
        let again = apply_ok(
            Some(&out),
            &cm("a", json!({"b": "1"})),
            "mgr-a",
            false,
            "ConfigMap",
            T2,
        );
        assert_eq!(again["data"], json!({"a": "3", "b": "1"}));
    }

    fn deploy(containers: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
               "spec": {"template": {"spec": {"containers": containers}}}})
    }

    #[test]
    fn containers_merge_by_name_between_two_appliers() {
        let live = apply_ok(
            None,
            &deploy(json!([{"name": "app", "image": "a:1", "ports": [{"containerPort": 80}]}])),
            "one",
            false,
            "Deployment",
            T0,
        );
        let out = apply_ok(
            Some(&live),
            &deploy(json!([{"name": "side", "image": "s:1"}])),
            "two",
            false,
            "Deployment",
            T1,
        );
        let names: Vec<&str> = out["spec"]["template"]["spec"]["containers"]
            .as_array()
            .map(|cs| cs.iter().filter_map(|c| c["name"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(names, ["app", "side"]);
        assert_eq!(
            fields(&out, "one", "Apply"),
            json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {
                ".": {}, "f:image": {}, "f:name": {},
                "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}}}}}})
        );
        assert_eq!(
            fields(&out, "two", "Apply"),
            json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"side\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}})
        );
        // two changing app's image conflicts on a readable path.
        let Err(err) = apply(
            Some(&out),
            &deploy(json!([{"name": "app", "image": "a:2"}])),
            "two",
            false,
            "",
            types("Deployment").as_ref(),
            T2,
        ) else {
            panic!("conflict")
        };
        assert_eq!(
            err.to_string(),
            r#"Apply failed with 1 conflict: conflict with "one": .spec.template.spec.containers[name="app"].image"#
        );
        // one dropping its container removes it; two's stays.
        let out = apply_ok(
            Some(&out),
            &deploy(json!([])),
            "one",
            false,
            "Deployment",
            T2,
        );
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"],
            json!([{"name": "side", "image": "s:1"}])
        );
    }

    #[test]
    fn duplicate_keys_in_a_configuration_are_invalid() {
        let Err(err) = apply(
            None,
            &deploy(json!([{"name": "a"}, {"name": "a"}])),
            "m",
            false,
            "",
            types("Deployment").as_ref(),
            T0,
        ) else {
            panic!("invalid")
        };
        assert_eq!(
            err.to_string(),
            r#"failed to create typed patch object (apps/v1, Kind=Deployment): .spec.template.spec.containers: duplicate entries for key [name="a"]"#
        );
        let Err(ApplyError::Invalid(_)) = apply(
            None,
            &deploy(json!([{"image": "x"}])),
            "m",
            false,
            "",
            types("Deployment").as_ref(),
            T0,
        ) else {
            panic!("missing key is invalid")
        };
    }

    #[test]
    fn finalizers_are_a_set() {
        let mut a = cm("a", json!({}));
        a["metadata"]["finalizers"] = json!(["x"]);
        let live = apply_ok(None, &a, "one", false, "ConfigMap", T0);
        let mut b = cm("a", json!({}));
        b["metadata"]["finalizers"] = json!(["y"]);
        let out = apply_ok(Some(&live), &b, "two", false, "ConfigMap", T1);
        assert_eq!(out["metadata"]["finalizers"], json!(["x", "y"]));
        assert_eq!(
            fields(&out, "one", "Apply"),
            json!({"f:data": {}, "f:metadata": {"f:finalizers": {"v:\"x\"": {}}}})
        );
        assert_eq!(
            fields(&out, "two", "Apply"),
            json!({"f:data": {}, "f:metadata": {"f:finalizers": {"v:\"y\"": {}}}})
        );
        let mut none = cm("a", json!({}));
        none["metadata"]["finalizers"] = json!([]);
        let out = apply_ok(Some(&out), &none, "one", false, "ConfigMap", T2);
        assert_eq!(out["metadata"]["finalizers"], json!(["y"]));
    }

    #[test]
    fn update_after_apply_moves_ownership() {
        let live = apply_ok(
            None,
            &cm("a", json!({"k": "v", "j": "w"})),
            "kubectl",
            false,
            "ConfigMap",
            T0,
        );
        let mut edited = live.clone();
        edited["data"]["k"] = json!("changed");
        edited["data"]["n"] = json!("new");
        let out = update(
            Some(&live),
            &edited,
            "kubectl-edit",
            "",
            types("ConfigMap").as_ref(),
            T1,
        );
        assert_eq!(
            fields(&out, "kubectl", "Apply"),
            json!({"f:data": {"f:j": {}}})
        );
        assert_eq!(
            fields(&out, "kubectl-edit", "Update"),
            json!({"f:data": {"f:k": {}, "f:n": {}}})
        );
        assert_eq!(
            entries(&out)[0]["manager"],
            "kubectl",
            "Apply entries sort first"
        );
        // An update that changes nothing leaves managedFields alone.
        let same = update(
            Some(&out),
            &out,
            "other",
            "",
            types("ConfigMap").as_ref(),
            T2,
        );
        assert_eq!(same, out);
    }

    #[test]
    fn create_by_update_marks_new_maps_with_dot() {
        let mut obj = cm("a", json!({"k": "v"}));
        obj["metadata"]["labels"] = json!({"app": "x"});
        obj["metadata"]["uid"] = json!("u1");
        let out = update(None, &obj, "tool-a", "", types("ConfigMap").as_ref(), T0);
        assert_eq!(
            out["metadata"]["managedFields"],
            json!([{"manager": "tool-a", "operation": "Update", "apiVersion": "v1", "time": T0, "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {".": {}, "f:k": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}])
        );
        // A Deployment's spec and template structs exist in the zero object, so they carry no `.`.
        let d = update(
            None,
            &deploy(json!([{"name": "app", "image": "a"}])),
            "kubectl-create",
            "",
            types("Deployment").as_ref(),
            T0,
        );
        assert_eq!(
            fields(&d, "kubectl-create", "Update"),
            json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}})
        );
    }

    #[test]
    fn status_subresource_entries_are_separate() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u"},
                         "spec": {"containers": [{"name": "c", "image": "i"}]}});
        let live = apply_ok(None, &pod, "me", false, "Pod", T0);
        let status = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                            "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        let out = match apply(
            Some(&live),
            &status,
            "kubelet",
            false,
            "status",
            types("Pod").as_ref(),
            T1,
        ) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        };
        let entry = entries(&out)
            .into_iter()
            .find(|e| e["manager"] == "kubelet")
            .unwrap_or_default();
        assert_eq!(entry["subresource"], "status");
        assert_eq!(
            entry["fieldsV1"],
            json!({"f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}, "f:type": {}}}}})
        );
        let mut changed = out.clone();
        changed["status"]["phase"] = json!("Running");
        let out2 = update(
            Some(&out),
            &changed,
            "kubelet",
            "status",
            types("Pod").as_ref(),
            T2,
        );
        let e = entries(&out2)
            .into_iter()
            .find(|e| e["manager"] == "kubelet" && e["operation"] == "Update")
            .unwrap_or_default();
        assert_eq!(
            (e["subresource"].as_str(), e["fieldsV1"].clone()),
            (Some("status"), json!({"f:status": {"f:phase": {}}}))
        );
        // Status conflicts name the subresource.
        let mut other = status.clone();
        other["status"]["phase"] = json!("Failed");
        let Err(err) = apply(
            Some(&out2),
            &other,
            "x",
            false,
            "status",
            types("Pod").as_ref(),
            T2,
        ) else {
            panic!("conflict")
        };
        assert_eq!(
            err.to_string(),
            r#"Apply failed with 1 conflict: conflict with "kubelet" with subresource "status" using v1: .status.phase"#
        );
    }

    #[test]
    fn client_sent_managed_fields_are_kept_and_reset_clears_them() {
        let live = apply_ok(
            None,
            &cm("a", json!({"k": "v"})),
            "one",
            false,
            "ConfigMap",
            T0,
        );
        let mut live = live;
        live["metadata"]["uid"] = json!("u");
        let mut rewritten = live.clone();
        rewritten["metadata"]["managedFields"][0]["manager"] = json!("renamed");
        let out = update(
            Some(&live),
            &rewritten,
            "x",
            "",
            types("ConfigMap").as_ref(),
            T1,
        );
        assert_eq!(entries(&out)[0]["manager"], "renamed");
        let mut reset = live.clone();
        reset["metadata"]["managedFields"] = json!([{}]);
        let out = update(
            Some(&live),
            &reset,
            "x",
            "",
            types("ConfigMap").as_ref(),
            T1,
        );
        assert!(out["metadata"].get("managedFields").is_none(), "{out}");
        // Untracked objects stay untracked on update, and an apply attributes what exists to before-first-apply.
        let mut edited = out.clone();
        edited["data"]["k"] = json!("w");
        let out = update(
            Some(&out),
            &edited,
            "x",
            "",
            types("ConfigMap").as_ref(),
            T1,
        );
        assert!(out["metadata"].get("managedFields").is_none());
        let Err(err) = apply(
            Some(&out),
            &cm("a", json!({"k": "z"})),
            "m",
            false,
            "",
            types("ConfigMap").as_ref(),
            T2,
        ) else {
            panic!("conflict")
        };
        assert_eq!(
            err.to_string(),
            r#"Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.k"#
        );
    }

    #[test]
    fn kubectl_upgrades_from_client_side_apply_without_conflicts() {
        let mut obj = cm("a", json!({"k": "v"}));
        obj["metadata"]["annotations"] = json!({LAST_APPLIED: "{\"apiVersion\":\"v1\",\"data\":{\"k\":\"v\"},\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{},\"name\":\"a\"}}\n"});
        let live = update(
            None,
            &obj,
            "kubectl-client-side-apply",
            "",
            types("ConfigMap").as_ref(),
            T0,
        );
        let out = apply_ok(
            Some(&live),
            &cm("a", json!({"k": "new"})),
            "kubectl",
            false,
            "ConfigMap",
            T1,
        );
        assert_eq!(out["data"]["k"], "new");
        assert_eq!(
            out["metadata"]["annotations"][LAST_APPLIED],
            "{\"apiVersion\":\"v1\",\"data\":{\"k\":\"new\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\"}}\n"
        );
        assert!(
            apply(
                Some(&live),
                &cm("a", json!({"k": "new"})),
                "other",
                false,
                "",
                types("ConfigMap").as_ref(),
                T1
            )
            .is_err()
        );
    }

    #[test]
    fn fields_v1_round_trips_in_order() {
        let f = json!({"f:metadata": {"f:finalizers": {"v:\"x\"": {}}, "f:labels": {".": {}, "f:a": {}}},
                       "f:spec": {"f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}}}}});
        let set = Set::from_fields_v1(&f).unwrap_or_default();
        assert_eq!(Value::Object(set.to_fields_v1()), f);
        assert!(Set::from_fields_v1(&json!({"k:notjson": {}})).is_err());
        assert!(Set::from_fields_v1(&json!({"zz:unknown": {}, "f:a": {}})).is_ok());
    }

    #[test]
    fn schema_field_types_read_crd_markers() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "properties": {"name": {"type": "string"}, "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}}},
            "sel": {"type": "object", "x-kubernetes-map-type": "atomic"},
            "free": {"type": "object", "additionalProperties": {"type": "object", "properties": {"x": {"type": "integer"}}}}}}}});
        let t = SchemaFieldTypes::from_schema(&schema);
        assert_eq!(
            t.list_type(&["spec", "items"]),
            ListType::Map(vec!["name".into()])
        );
        assert_eq!(t.list_type(&["spec", "items", "tags"]), ListType::Set);
        assert_eq!(t.list_type(&["spec", "other"]), ListType::Atomic);
        assert!(t.map_atomic(&["spec", "sel"]));
        assert!(t.is_struct_field(&["spec"], "free") && !t.is_struct_field(&["spec", "free"], "k"));
        let cr = json!({"apiVersion": "x/v1", "kind": "W", "metadata": {"name": "w"},
                        "spec": {"free": {"k": {"x": 1}}, "sel": {"a": 1}, "items": [{"name": "n", "tags": ["t"]}]}});
        let out = match apply(None, &cr, "m", false, "", &t, T0) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(
            fields(&out, "m", "Apply"),
            json!({"f:spec": {"f:free": {"f:k": {".": {}, "f:x": {}}},
                              "f:items": {"k:{\"name\":\"n\"}": {".": {}, "f:name": {}, "f:tags": {"v:\"t\"": {}}}},
                              "f:sel": {}}})
        );
    }

    #[test]
    fn default_manager_is_the_user_agent_prefix() {
        assert_eq!(
            default_manager("kubectl/v1.32.5 (linux/amd64) kubernetes/9894294"),
            "kubectl"
        );
        assert_eq!(default_manager("kubectl.exe/v1.32.5"), "kubectl.exe");
        assert_eq!(default_manager(""), "unknown");
        assert_eq!(default_manager("a\u{1}b/x"), "ab");
        assert_eq!(default_manager(&"x".repeat(200)).len(), 128);
    }

    #[test]
    fn update_managers_are_capped_at_ten() {
        let mut obj = update(
            None,
            &cm("a", json!({"k0": "v"})),
            "m0",
            "",
            types("ConfigMap").as_ref(),
            "2024-01-01T00:00:00Z",
        );
        for i in 1..12 {
            let mut next = obj.clone();
            next["data"][format!("k{i}")] = json!("v");
            obj = update(
                Some(&obj),
                &next,
                &format!("m{i}"),
                "",
                types("ConfigMap").as_ref(),
                &format!("2024-01-01T00:00:{i:02}Z"),
            );
        }
        let es = entries(&obj);
        assert_eq!(es.len(), 10, "{es:?}");
        assert!(es.iter().any(|e| e["manager"] == "ancient-changes"));
    }

    #[test]
    fn deep_nesting_is_refused_or_handled_without_overflow() {
        for depth in [MAX_DEPTH - 2, MAX_DEPTH + 5] {
            let mut v = json!("leaf");
            for i in 0..depth {
                v = if i % 2 == 0 {
                    json!([v])
                } else {
                    json!({"spec": v})
                };
            }
            let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "spec": v});
            let created = update(None, &obj, "m", "", types("ConfigMap").as_ref(), T0);
            let _ = update(
                Some(&created),
                &obj,
                "n",
                "",
                types("ConfigMap").as_ref(),
                T1,
            );
            let _ = apply(
                Some(&created),
                &obj,
                "m",
                false,
                "",
                types("ConfigMap").as_ref(),
                T1,
            );
        }
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        fn arb_json() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                (-3i64..300).prop_map(|n| json!(n)),
                prop_oneof![Just("a"), Just("b"), Just("name"), Just("TCP"), Just("")]
                    .prop_map(|s| json!(s)),
            ];
            leaf.prop_recursive(4, 40, 5, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                    prop::collection::vec(
                        (
                            prop_oneof![
                                Just("name"),
                                Just("containers"),
                                Just("spec"),
                                Just("metadata"),
                                Just("ports"),
                                Just("containerPort"),
                                Just("image"),
                                Just("finalizers"),
                                Just("data"),
                                Just("k"),
                                Just("managedFields"),
                                Just("template"),
                                Just("env"),
                                Just("status"),
                                Just("conditions"),
                                Just("type")
                            ],
                            inner
                        ),
                        0..4
                    )
                    .prop_map(|kv| Value::Object(
                        kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                    )),
                ]
            })
        }

        fn arb_obj() -> impl Strategy<Value = Value> {
            (arb_json(), arb_json(), arb_json()).prop_map(|(spec, meta, data)| {
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "data": data})
            })
        }

        fn arb_container() -> impl Strategy<Value = Value> {
            (
                prop_oneof![Just("a"), Just("b"), Just("c")],
                prop::option::of(prop_oneof![Just("img:1"), Just("img:2")]),
                prop::collection::vec(
                    (
                        prop_oneof![Just(80), Just(81)],
                        prop::option::of(prop_oneof![Just("TCP"), Just("UDP")]),
                    ),
                    0..3,
                ),
                prop::collection::vec(
                    (
                        prop_oneof![Just("X"), Just("Y")],
                        prop_oneof![Just("1"), Just("2")],
                    ),
                    0..3,
                ),
            )
                .prop_map(|(name, image, ports, env)| {
                    let mut c = json!({"name": name});
                    if let Some(i) = image {
                        c["image"] = json!(i);
                    }
                    if !ports.is_empty() {
                        c["ports"] = Value::Array(
                            ports
                                .into_iter()
                                .map(|(p, proto)| match proto {
                                    Some(pr) => json!({"containerPort": p, "protocol": pr}),
                                    None => json!({"containerPort": p}),
                                })
                                .collect(),
                        );
                    }
                    if !env.is_empty() {
                        c["env"] = Value::Array(
                            env.into_iter()
                                .map(|(n, v)| json!({"name": n, "value": v}))
                                .collect(),
                        );
                    }
                    c
                })
        }

        fn arb_deploy() -> impl Strategy<Value = Value> {
            (
                prop::collection::vec(arb_container(), 1..3),
                prop::option::of(0i64..3),
                prop::collection::btree_map(
                    prop_oneof![Just("app"), Just("tier")],
                    prop_oneof![Just("x"), Just("y")],
                    0..2,
                ),
                prop::collection::vec(prop_oneof![Just("f1"), Just("f2")], 0..2),
            )
                .prop_map(|(containers, replicas, labels, finalizers)| {
                    let mut d = deploy(Value::Array(containers));
                    if let Some(r) = replicas {
                        d["spec"]["replicas"] = json!(r);
                    }
                    if !labels.is_empty() {
                        d["metadata"]["labels"] = json!(labels);
                    }
                    if !finalizers.is_empty() {
                        d["metadata"]["finalizers"] = json!(finalizers);
                    }
                    d
                })
        }

        /// Every scalar the configuration sets, with its path, for checking that applied values win.
        fn leaves(v: &Value, prefix: String, out: &mut Vec<(String, Value)>) {
            match v {
                Value::Object(m) => m
                    .iter()
                    .for_each(|(k, c)| leaves(c, format!("{prefix}/{k}"), out)),
                Value::Array(_) => {}
                _ => out.push((prefix, v.clone())),
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig { failure_persistence: None, cases: 400, ..ProptestConfig::default() })]

            #[test]
            fn structured_applies_are_idempotent_and_applied_values_win(
                a in arb_deploy(), b in arb_deploy(), a2 in arb_deploy(), force in any::<bool>()
            ) {
                let t = types("Deployment");
                let Ok(one) = apply(None, &a, "one", false, "", t.as_ref(), T0) else { return Ok(()) };
                prop_assert_eq!(apply(Some(&one), &a, "one", false, "", t.as_ref(), T1), Ok(one.clone()));
                if let Ok(two) = apply(Some(&one), &b, "two", force, "", t.as_ref(), T1) {
                    let mut ls = Vec::new();
                    leaves(&b, String::new(), &mut ls);
                    for (p, v) in ls {
                        prop_assert_eq!(two.pointer(&p), Some(&v), "{} in {}", p, two);
                    }
                    prop_assert_eq!(apply(Some(&two), &b, "two", false, "", t.as_ref(), T2), Ok(two.clone()));
                    // The first applier changing its configuration must still leave the object consistent.
                    if let Ok(three) = apply(Some(&two), &a2, "one", true, "", t.as_ref(), T2) {
                        prop_assert_eq!(apply(Some(&three), &a2, "one", false, "", t.as_ref(), T2), Ok(three.clone()));
                        let upd = update(Some(&three), &three, "x", "", t.as_ref(), T2);
                        prop_assert_eq!(upd, three);
                    }
                }
            }

            #[test]
            fn apply_and_update_never_panic(live in arb_json(), cfg in arb_json(), live2 in arb_obj(), cfg2 in arb_obj(), force in any::<bool>()) {
                for kind in ["Pod", "Deployment", "Service"] {
                    let t = types(kind);
                    let _ = apply(Some(&live), &cfg, "m", force, "", t.as_ref(), T0);
                    let _ = apply(Some(&live2), &cfg2, "m", force, "", t.as_ref(), T0);
                    let _ = apply(None, &cfg2, "", force, "status", t.as_ref(), T0);
                    let _ = update(Some(&live), &cfg, "m", "", t.as_ref(), T0);
                    let _ = update(Some(&live2), &cfg2, "m", "", t.as_ref(), T0);
                    let _ = update(None, &cfg2, "m", "status", t.as_ref(), T0);
                    let _ = update(Some(&cfg2), &live2, "", "", t.as_ref(), T0);
                }
                let _ = default_manager(&cfg.to_string());
            }

            #[test]
            fn applying_the_same_configuration_twice_is_idempotent(live in arb_obj(), cfg in arb_obj()) {
                let t = types("Pod");
                let base = update(None, &live, "creator", "", t.as_ref(), T0);
                if let Ok(once) = apply(Some(&base), &cfg, "m", true, "", t.as_ref(), T1) {
                    let twice = apply(Some(&once), &cfg, "m", false, "", t.as_ref(), T2);
                    prop_assert_eq!(Ok(once.clone()), twice);
                }
                if let Ok(created) = apply(None, &cfg, "m", false, "", t.as_ref(), T1) {
                    prop_assert_eq!(Ok(created.clone()), apply(Some(&created), &cfg, "m", false, "", t.as_ref(), T2));
                }
            }
        }
    }
}
