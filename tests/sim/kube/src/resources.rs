//! The resource types the server serves: the built-in kinds and the ones CustomResourceDefinitions add.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

/// Everything the server needs to know about one served group/version/resource.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceType {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub list_kind: String,
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub namespaced: bool,
    pub status_subresource: bool,
    /// Whether `metadata.generation` is maintained (CRDs and spec-bearing built-ins; not ConfigMap/Secret/...).
    pub has_generation: bool,
    pub verbs: Vec<&'static str>,
    /// The version that objects are stored at (for CRDs with several versions).
    pub storage_version: String,
    /// `openAPIV3Schema` of a CRD version; None for built-ins (they accept any fields).
    pub schema: Option<Arc<Value>>,
    /// `additionalPrinterColumns` of a CRD version, as JSON.
    pub printer_columns: Vec<Value>,
    /// `selectableFields` of a CRD version as field-selector paths (`spec.clusterRef.name` for the JSONPath
    /// `.spec.clusterRef.name`); empty for built-ins, whose selectable fields are fixed per kind.
    pub selectable_fields: Vec<String>,
    /// A CRD version's `subresources.scale` (specReplicasPath, statusReplicasPath, labelSelectorPath).
    pub scale: Option<Arc<Value>>,
    pub source: Source,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Builtin,
    CustomResource,
    /// Create-only review resources that are answered, never stored (SelfSubjectAccessReview, ...).
    Virtual,
}

impl ResourceType {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `configmaps` or `widgets.example.com`, as used in error messages.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// Where this resource's objects live. events.k8s.io Events are a view of the core Events.
    pub fn storage_key(&self) -> StorageKey {
        if crate::events::is_view(self) {
            return StorageKey {
                group: String::new(),
                resource: "events".into(),
            };
        }
        StorageKey {
            group: self.group.clone(),
            resource: self.plural.clone(),
        }
    }

    /// Whether objects are stored in this type's form: its storage version, and not a view of another group's
    /// objects.
    pub fn is_storage_type(&self) -> bool {
        self.version == self.storage_version && !crate::events::is_view(self)
    }

    pub fn is_crd(&self) -> bool {
        self.source == Source::CustomResource
    }
}

/// Objects are stored per group-resource, whatever version they are served at.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StorageKey {
    pub group: String,
    pub resource: String,
}

const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

struct Builtin {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    short: &'static [&'static str],
    namespaced: bool,
    status: bool,
    generation: bool,
    categories: &'static [&'static str],
}

#[allow(clippy::too_many_arguments)] // a table row constructor: positional keeps the table readable
const fn b(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    short: &'static [&'static str],
    namespaced: bool,
    status: bool,
    generation: bool,
) -> Builtin {
    Builtin {
        group,
        version,
        kind,
        plural,
        short,
        namespaced,
        status,
        generation,
        categories: &[],
    }
}

/// Short names, scope and subresources as kube-apiserver 1.32 registers them.
const BUILTINS: &[Builtin] = &[
    b(
        "",
        "v1",
        "Namespace",
        "namespaces",
        &["ns"],
        false,
        true,
        false,
    ),
    b("", "v1", "Secret", "secrets", &[], true, false, false),
    b(
        "",
        "v1",
        "ConfigMap",
        "configmaps",
        &["cm"],
        true,
        false,
        false,
    ),
    b(
        "",
        "v1",
        "ServiceAccount",
        "serviceaccounts",
        &["sa"],
        true,
        false,
        false,
    ),
    b("", "v1", "Event", "events", &["ev"], true, false, false),
    b("", "v1", "Service", "services", &["svc"], true, true, false),
    b("", "v1", "Pod", "pods", &["po"], true, true, false),
    b(
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        &["pvc"],
        true,
        true,
        false,
    ),
    b(
        "",
        "v1",
        "Endpoints",
        "endpoints",
        &["ep"],
        true,
        false,
        false,
    ),
    b("", "v1", "Node", "nodes", &["no"], false, true, false),
    b(
        "events.k8s.io",
        "v1",
        "Event",
        "events",
        &["ev"],
        true,
        false,
        false,
    ),
    b(
        "coordination.k8s.io",
        "v1",
        "Lease",
        "leases",
        &[],
        true,
        false,
        false,
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        "roles",
        &[],
        true,
        false,
        false,
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        &[],
        false,
        false,
        false,
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        &[],
        true,
        false,
        false,
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        &[],
        false,
        false,
        false,
    ),
    b(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        &["crd", "crds"],
        false,
        true,
        true,
    ),
    b(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        &[],
        false,
        false,
        true,
    ),
    b(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        &[],
        false,
        false,
        true,
    ),
    b(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        &["deploy"],
        true,
        true,
        true,
    ),
    b(
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        &["sts"],
        true,
        true,
        true,
    ),
    b(
        "apps",
        "v1",
        "DaemonSet",
        "daemonsets",
        &["ds"],
        true,
        true,
        true,
    ),
    b(
        "apps",
        "v1",
        "ReplicaSet",
        "replicasets",
        &["rs"],
        true,
        true,
        true,
    ),
    b("batch", "v1", "Job", "jobs", &[], true, true, true),
    b(
        "batch",
        "v1",
        "CronJob",
        "cronjobs",
        &["cj"],
        true,
        true,
        true,
    ),
    b(
        "networking.k8s.io",
        "v1",
        "Ingress",
        "ingresses",
        &["ing"],
        true,
        true,
        true,
    ),
    b(
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
        &["netpol"],
        true,
        false,
        true,
    ),
    b(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        &["pdb"],
        true,
        true,
        true,
    ),
    b(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        &["hpa"],
        true,
        true,
        false,
    ),
];

/// The kinds `kubectl get all` shows, as the real server puts them in category `all`.
const CATEGORY_ALL: &[&str] = &[
    "pods",
    "services",
    "deployments",
    "statefulsets",
    "daemonsets",
    "replicasets",
    "jobs",
    "cronjobs",
];

/// Review resources: POST-only, answered from the caller's identity, never stored.
const VIRTUAL: &[(&str, &str, &str, &str, bool)] = &[
    (
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        false,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
        false,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "SubjectAccessReview",
        "subjectaccessreviews",
        false,
    ),
    (
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        "selfsubjectreviews",
        false,
    ),
    (
        "authentication.k8s.io",
        "v1",
        "TokenReview",
        "tokenreviews",
        false,
    ),
];

fn builtin_types() -> Vec<ResourceType> {
    let mut out: Vec<ResourceType> = BUILTINS
        .iter()
        .map(|d| ResourceType {
            group: d.group.into(),
            version: d.version.into(),
            kind: d.kind.into(),
            list_kind: format!("{}List", d.kind),
            plural: d.plural.into(),
            singular: d.kind.to_lowercase(),
            short_names: d.short.iter().map(|s| s.to_string()).collect(),
            categories: if CATEGORY_ALL.contains(&d.plural) {
                vec!["all".into()]
            } else {
                d.categories.iter().map(|s| s.to_string()).collect()
            },
            namespaced: d.namespaced,
            status_subresource: d.status,
            has_generation: d.generation,
            verbs: ALL_VERBS.to_vec(),
            storage_version: d.version.into(),
            schema: None,
            printer_columns: Vec::new(),
            selectable_fields: Vec::new(),
            scale: None,
            source: Source::Builtin,
        })
        .collect();
    // Namespaces cannot be deleted as a collection on the real server.
    if let Some(ns) = out.iter_mut().find(|t| t.plural == "namespaces") {
        ns.verbs = vec![
            "create", "delete", "get", "list", "patch", "update", "watch",
        ];
    }
    for (group, version, kind, plural, namespaced) in VIRTUAL {
        out.push(ResourceType {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
            list_kind: format!("{kind}List"),
            plural: plural.to_string(),
            singular: kind.to_lowercase(),
            short_names: Vec::new(),
            categories: Vec::new(),
            namespaced: *namespaced,
            status_subresource: false,
            has_generation: false,
            verbs: vec!["create"],
            storage_version: version.to_string(),
            schema: None,
            printer_columns: Vec::new(),
            selectable_fields: Vec::new(),
            scale: None,
            source: Source::Virtual,
        });
    }
    out
}

/// Served types, keyed by (group, version, plural). Rebuilt from CRD objects whenever one changes.
#[derive(Debug, Clone)]
pub struct Registry {
    types: BTreeMap<(String, String, String), Arc<ResourceType>>,
    /// Group → preferred version (first served version in the CRD's order, or the built-in version).
    preferred: BTreeMap<String, String>,
    /// Group-resource → its CRD's name, for CRD-backed resources.
    crd_names: BTreeMap<StorageKey, String>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    pub fn new() -> Self {
        let mut r = Registry {
            types: BTreeMap::new(),
            preferred: BTreeMap::new(),
            crd_names: BTreeMap::new(),
        };
        for t in builtin_types() {
            r.preferred
                .entry(t.group.clone())
                .or_insert_with(|| t.version.clone());
            r.types.insert(
                (t.group.clone(), t.version.clone(), t.plural.clone()),
                Arc::new(t),
            );
        }
        r
    }

    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.types
            .get(&(group.to_string(), version.to_string(), plural.to_string()))
            .cloned()
    }

    /// Finds the type for an object's apiVersion and kind (used by apply-yaml, webhooks and GC).
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceType>> {
        let (group, version) = split_api_version(api_version);
        self.types
            .values()
            .find(|t| {
                t.group == group
                    && t.version == version
                    && t.kind == kind
                    && t.source != Source::Virtual
            })
            .cloned()
    }

    pub fn all(&self) -> impl Iterator<Item = &Arc<ResourceType>> {
        self.types.values()
    }

    /// Groups in discovery order: core first, then built-in groups, then custom groups by name.
    pub fn groups(&self) -> Vec<String> {
        let mut builtin: Vec<String> = Vec::new();
        let mut custom: Vec<String> = Vec::new();
        for t in self.types.values() {
            let list = if t.source == Source::CustomResource {
                &mut custom
            } else {
                &mut builtin
            };
            if !list.contains(&t.group) {
                list.push(t.group.clone());
            }
        }
        builtin.sort_by_key(|g| (!g.is_empty(), g.clone()));
        custom.sort();
        builtin.into_iter().chain(custom).collect()
    }

    pub fn versions_of(&self, group: &str) -> Vec<String> {
        let mut vs: Vec<String> = Vec::new();
        for t in self.types.values().filter(|t| t.group == group) {
            if !vs.contains(&t.version) {
                vs.push(t.version.clone());
            }
        }
        let preferred = self.preferred_version(group);
        vs.sort_by_key(|v| (Some(v) != preferred.as_ref(), version_priority(v)));
        vs
    }

    pub fn preferred_version(&self, group: &str) -> Option<String> {
        self.preferred.get(group).cloned()
    }

    pub fn types_in(&self, group: &str, version: &str) -> Vec<Arc<ResourceType>> {
        self.types
            .values()
            .filter(|t| t.group == group && t.version == version)
            .cloned()
            .collect()
    }

    /// The CRD that defines a storage key, if it is a custom resource.
    pub fn crd_for(&self, key: &StorageKey) -> Option<&str> {
        self.crd_names.get(key).map(String::as_str)
    }

    /// Every storage key the registry serves (for GC and namespace cleanup).
    pub fn storage_keys(&self) -> Vec<(StorageKey, Arc<ResourceType>)> {
        let mut seen = BTreeMap::new();
        for t in self.types.values() {
            if t.source == Source::Virtual {
                continue;
            }
            let key = t.storage_key();
            let is_storage = t.is_storage_type();
            match seen.get(&key) {
                Some((_, true)) => {}
                _ => {
                    seen.insert(key, (t.clone(), is_storage));
                }
            }
        }
        seen.into_iter().map(|(k, (t, _))| (k, t)).collect()
    }

    /// Rebuilds the custom part of the registry from the established CRD objects.
    pub fn rebuild_custom<'a>(&mut self, crds: impl Iterator<Item = &'a Value>) {
        self.types.retain(|_, t| t.source != Source::CustomResource);
        self.crd_names.clear();
        self.preferred.retain(|g, _| {
            BUILTINS.iter().any(|b| b.group == g) || VIRTUAL.iter().any(|v| v.0 == g)
        });
        for crd in crds {
            // A CRD being deleted keeps serving until its instances are cleaned up, as the real server does.
            for t in custom_types(crd) {
                // Built-in resources always win over a CRD that claims the same group and plural.
                let key = (t.group.clone(), t.version.clone(), t.plural.clone());
                if self
                    .types
                    .get(&key)
                    .is_some_and(|existing| existing.source != Source::CustomResource)
                {
                    continue;
                }
                self.preferred
                    .entry(t.group.clone())
                    .or_insert_with(|| t.version.clone());
                self.crd_names.insert(
                    t.storage_key(),
                    crd["metadata"]["name"].as_str().unwrap_or_default().into(),
                );
                self.types.insert(
                    (t.group.clone(), t.version.clone(), t.plural.clone()),
                    Arc::new(t),
                );
            }
        }
    }
}

/// The served versions of a CRD as resource types (the CRD is assumed valid: it was validated on write).
pub fn custom_types(crd: &Value) -> Vec<ResourceType> {
    crd_versions(crd, true)
}

/// The CRD's storage version as a type, served or not (for cleaning up its objects).
pub fn storage_type_of(crd: &Value) -> Option<ResourceType> {
    crd_versions(crd, false)
        .into_iter()
        .find(|t| t.version == t.storage_version)
}

fn crd_versions(crd: &Value, served_only: bool) -> Vec<ResourceType> {
    let spec = &crd["spec"];
    let names = &spec["names"];
    let (Some(group), Some(plural), Some(kind)) = (
        spec["group"].as_str(),
        names["plural"].as_str(),
        names["kind"].as_str(),
    ) else {
        return Vec::new();
    };
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    let storage_version = versions
        .iter()
        .find(|v| v["storage"].as_bool() == Some(true))
        .and_then(|v| v["name"].as_str())
        .unwrap_or_default()
        .to_string();
    versions
        .iter()
        .filter(|v| !served_only || v["served"].as_bool() == Some(true))
        .filter_map(|v| {
            let version = v["name"].as_str()?;
            let schema = v["schema"]["openAPIV3Schema"].clone();
            Some(ResourceType {
                group: group.into(),
                version: version.into(),
                kind: kind.into(),
                list_kind: names["listKind"]
                    .as_str()
                    .map(String::from)
                    .unwrap_or_else(|| format!("{kind}List")),
                plural: plural.into(),
                singular: names["singular"]
                    .as_str()
                    .map(String::from)
                    .unwrap_or_else(|| kind.to_lowercase()),
                short_names: strings(&names["shortNames"]),
                categories: strings(&names["categories"]),
                namespaced: spec["scope"].as_str() != Some("Cluster"),
                status_subresource: v["subresources"]["status"].is_object(),
                has_generation: true,
                verbs: ALL_VERBS.to_vec(),
                storage_version: storage_version.clone(),
                schema: if schema.is_object() {
                    Some(Arc::new(schema))
                } else {
                    None
                },
                printer_columns: v["additionalPrinterColumns"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
                selectable_fields: v["selectableFields"]
                    .as_array()
                    .map(|fields| {
                        fields
                            .iter()
                            .filter_map(|f| f["jsonPath"].as_str())
                            .map(|p| p.trim_start_matches('.').to_string())
                            .collect()
                    })
                    .unwrap_or_default(),
                scale: v["subresources"]["scale"]
                    .is_object()
                    .then(|| Arc::new(v["subresources"]["scale"].clone())),
                source: Source::CustomResource,
            })
        })
        .collect()
}

pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

/// Kubernetes version ordering: GA before beta before alpha, higher numbers first; others last.
pub fn version_priority(v: &str) -> (u8, i64, i64, String) {
    let rest = match v.strip_prefix('v') {
        Some(r) => r,
        None => return (3, 0, 0, v.to_string()),
    };
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let Ok(major) = digits.parse::<i64>() else {
        return (3, 0, 0, v.to_string());
    };
    let tail = &rest[digits.len()..];
    let (class, minor_str) = if tail.is_empty() {
        (0, "0")
    } else if let Some(m) = tail.strip_prefix("beta") {
        (1, m)
    } else if let Some(m) = tail.strip_prefix("alpha") {
        (2, m)
    } else {
        return (3, 0, 0, v.to_string());
    };
    let Ok(minor) = minor_str.parse::<i64>() else {
        return (3, 0, 0, v.to_string());
    };
    (class, -major, -minor, String::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builtins_have_the_real_short_names_and_scopes() {
        let r = Registry::new();
        let ns = r.get("", "v1", "namespaces").expect("namespaces");
        assert!(!ns.namespaced);
        assert_eq!(ns.short_names, vec!["ns"]);
        let crd = r
            .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .expect("crds");
        assert_eq!(crd.short_names, vec!["crd", "crds"]);
        assert!(
            r.get("apps", "v1", "deployments")
                .expect("deploy")
                .categories
                .contains(&"all".to_string())
        );
    }

    #[test]
    fn served_crd_versions_become_types_and_unserved_do_not() {
        let crd = json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [
                    {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                     "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v1beta1", "served": false, "storage": false}
                ]}
        });
        let mut r = Registry::new();
        r.rebuild_custom([&crd].into_iter());
        let w = r.get("example.com", "v1", "widgets").expect("served");
        assert!(w.status_subresource && w.namespaced && w.has_generation);
        assert_eq!(w.list_kind, "WidgetList");
        assert!(r.get("example.com", "v1beta1", "widgets").is_none());
        r.rebuild_custom(std::iter::empty());
        assert!(r.get("example.com", "v1", "widgets").is_none());
    }

    #[test]
    fn versions_sort_like_kubernetes() {
        let mut v = vec!["v1alpha1", "v2", "v1beta2", "v1", "foo"];
        v.sort_by_key(|s| version_priority(s));
        assert_eq!(v, vec!["v2", "v1", "v1beta2", "v1alpha1", "foo"]);
    }
}
