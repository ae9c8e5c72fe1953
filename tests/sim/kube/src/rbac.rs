//! RBAC authorization with the decisions, reasons and 403 texts of
//! kube-apiserver's authorizer chain (privileged group `system:masters`, then
//! `plugin/pkg/auth/authorizer/rbac` over the rule resolver of
//! `pkg/registry/rbac/validation`), evaluated over RBAC objects as JSON.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::selectors::{LabelSelector, aggregate, go_quote};

pub const SYSTEM_MASTERS: &str = "system:masters";
pub const ALL_AUTHENTICATED: &str = "system:authenticated";
pub const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
pub const ANONYMOUS: &str = "system:anonymous";

#[derive(Debug, Clone, PartialEq, Default)]
pub struct UserInfo {
    pub name: String,
    pub groups: Vec<String>,
    pub uid: String,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    pub fn new(name: &str, groups: &[&str]) -> Self {
        UserInfo {
            name: name.to_string(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    /// The user the anonymous authenticator produces.
    pub fn anonymous() -> Self {
        Self::new(ANONYMOUS, &[ALL_UNAUTHENTICATED])
    }

    /// What the real authentication chain's AuthenticatedGroupAdder does after a
    /// successful authentication. The authorizer itself never adds groups, so a
    /// SubjectAccessReview for an explicit user sees only the groups it names.
    pub fn with_authenticated_group(mut self) -> Self {
        let already = self
            .groups
            .iter()
            .any(|g| g == ALL_AUTHENTICATED || g == ALL_UNAUTHENTICATED);
        if self.name != ANONYMOUS && !already {
            self.groups.push(ALL_AUTHENTICATED.to_string());
        }
        self
    }

    fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

/// What a request asks, as the apiserver's authorizer.Attributes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Attributes {
    pub verb: String,
    pub namespace: String,
    pub api_group: String,
    pub resource: String,
    pub subresource: String,
    /// For list/watch the real RequestInfo sets this from a `metadata.name`
    /// field selector (see `FieldSelector::exact_name`); create has none.
    pub name: String,
    pub path: String,
    pub resource_request: bool,
}

#[derive(Debug, Clone, PartialEq, Default)]
struct PolicyRule {
    verbs: Vec<String>,
    api_groups: Vec<String>,
    resources: Vec<String>,
    resource_names: Vec<String>,
    non_resource_urls: Vec<String>,
}

impl PolicyRule {
    fn from_json(v: &Value) -> Option<Self> {
        let o = v.as_object()?;
        Some(PolicyRule {
            verbs: strings(o.get("verbs")),
            api_groups: strings(o.get("apiGroups")),
            resources: strings(o.get("resources")),
            resource_names: strings(o.get("resourceNames")),
            non_resource_urls: strings(o.get("nonResourceURLs")),
        })
    }

    fn allows(&self, a: &Attributes) -> bool {
        let verb_ok = self.verbs.iter().any(|v| v == "*" || *v == a.verb);
        if !verb_ok {
            return false;
        }
        if !a.resource_request {
            return self.non_resource_urls.iter().any(|u| {
                u == "*"
                    || *u == a.path
                    || (u.ends_with('*') && a.path.starts_with(u.trim_end_matches('*')))
            });
        }
        let group_ok = self
            .api_groups
            .iter()
            .any(|g| g == "*" || *g == a.api_group);
        let combined = if a.subresource.is_empty() {
            a.resource.clone()
        } else {
            format!("{}/{}", a.resource, a.subresource)
        };
        let resource_ok = self.resources.iter().any(|r| {
            r == "*"
                || *r == combined
                || (!a.subresource.is_empty()
                    && r.strip_prefix("*/").is_some_and(|s| s == a.subresource))
        });
        // A rule naming resources never matches a request without a name
        // (list, watch, create, deletecollection), as ResourceNameMatches.
        let name_ok = self.resource_names.is_empty() || self.resource_names.contains(&a.name);
        group_ok && resource_ok && name_ok
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
struct Subject {
    kind: String,
    name: String,
    namespace: String,
}

#[derive(Debug, Clone, PartialEq, Default)]
struct RoleRef {
    kind: String,
    name: String,
}

#[derive(Debug, Clone)]
struct Binding {
    name: String,
    namespace: String,
    role_ref: RoleRef,
    subjects: Vec<Subject>,
}

impl Binding {
    fn from_json(v: &Value) -> Option<Self> {
        let o = v.as_object()?;
        let (name, namespace, _) = meta(o);
        let role_ref = o
            .get("roleRef")
            .and_then(Value::as_object)
            .map(|r| RoleRef {
                kind: string(r.get("kind")),
                name: string(r.get("name")),
            });
        let subjects = match o.get("subjects") {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(Value::as_object)
                .map(|s| Subject {
                    kind: string(s.get("kind")),
                    name: string(s.get("name")),
                    namespace: string(s.get("namespace")),
                })
                .collect(),
            _ => Vec::new(),
        };
        Some(Binding {
            name,
            namespace,
            role_ref: role_ref.unwrap_or_default(),
            subjects,
        })
    }

    /// `appliesTo`: the first subject naming the user. A ServiceAccount subject
    /// without a namespace takes the RoleBinding's; in a ClusterRoleBinding it
    /// never matches.
    fn subject_for(&self, user: &UserInfo, binding_namespace: &str) -> Option<&Subject> {
        self.subjects.iter().find(|s| match s.kind.as_str() {
            "User" => user.name == s.name,
            "Group" => user.in_group(&s.name),
            "ServiceAccount" => {
                let ns = if s.namespace.is_empty() {
                    binding_namespace
                } else {
                    s.namespace.as_str()
                };
                !ns.is_empty()
                    && user
                        .name
                        .strip_prefix("system:serviceaccount:")
                        .and_then(|rest| rest.strip_prefix(ns))
                        .and_then(|rest| rest.strip_prefix(':'))
                        .is_some_and(|n| n == s.name)
            }
            _ => false,
        })
    }
}

struct Role {
    name: String,
    namespace: String,
    rules: Vec<PolicyRule>,
}

struct ClusterRole {
    name: String,
    labels: Map<String, Value>,
    rules: Vec<PolicyRule>,
    /// Selectors of a valid aggregationRule; None for plain roles and for rules
    /// the aggregation controller would fail on (their stored rules stay).
    aggregation: Option<Vec<LabelSelector>>,
}

/// A snapshot of the RBAC objects (built by the caller from its store).
pub struct RbacSnapshot {
    roles: Vec<Role>,
    cluster_roles: Vec<ClusterRole>,
    role_bindings: Vec<Binding>,
    cluster_role_bindings: Vec<Binding>,
}

/// Where an allowing rule came from, described as the real authorizer does.
enum Source<'a> {
    ClusterRoleBinding(&'a Binding, &'a Subject),
    RoleBinding(&'a Binding, &'a Subject),
}

impl Source<'_> {
    fn describe(&self) -> String {
        let (kind, binding_name, b, s, binding_ns) = match self {
            Source::ClusterRoleBinding(b, s) => ("ClusterRoleBinding", b.name.clone(), b, s, ""),
            Source::RoleBinding(b, s) => (
                "RoleBinding",
                format!("{}/{}", b.name, b.namespace),
                b,
                s,
                b.namespace.as_str(),
            ),
        };
        let subject = if s.kind == "ServiceAccount" {
            let ns = if s.namespace.is_empty() {
                binding_ns
            } else {
                s.namespace.as_str()
            };
            format!("{} {}", s.kind, go_quote(&format!("{}/{}", s.name, ns)))
        } else {
            format!("{} {}", s.kind, go_quote(&s.name))
        };
        format!(
            "{kind} {} of {} {} to {subject}",
            go_quote(&binding_name),
            b.role_ref.kind,
            go_quote(&b.role_ref.name)
        )
    }
}

/// SelfSubjectRulesReview status fields.
#[derive(Debug, Clone, PartialEq)]
pub struct RulesReview {
    pub resource_rules: Value,
    pub non_resource_rules: Value,
    pub incomplete: bool,
    pub evaluation_error: String,
}

impl RbacSnapshot {
    pub fn new(
        roles: Vec<Value>,
        cluster_roles: Vec<Value>,
        role_bindings: Vec<Value>,
        cluster_role_bindings: Vec<Value>,
    ) -> Self {
        let roles = roles
            .iter()
            .filter_map(Value::as_object)
            .map(|o| {
                let (name, namespace, _) = meta(o);
                Role {
                    name,
                    namespace,
                    rules: rules(o.get("rules")),
                }
            })
            .collect();
        let mut cluster_roles: Vec<ClusterRole> = cluster_roles
            .iter()
            .filter_map(Value::as_object)
            .map(|o| {
                let (name, _, labels) = meta(o);
                ClusterRole {
                    name,
                    labels,
                    rules: rules(o.get("rules")),
                    aggregation: aggregation_selectors(o),
                }
            })
            .collect();
        resolve_aggregation(&mut cluster_roles);
        RbacSnapshot {
            roles,
            cluster_roles,
            role_bindings: role_bindings
                .iter()
                .filter_map(Binding::from_json)
                .collect(),
            cluster_role_bindings: cluster_role_bindings
                .iter()
                .filter_map(Binding::from_json)
                .collect(),
        }
    }

    /// Allowed, plus the reason the real authorizer chain reports: empty for
    /// system:masters (the privileged-group authorizer gives none) and for a
    /// plain deny; `RBAC: allowed by ...` on allow; `RBAC: <errors>` on a deny
    /// where some binding's role could not be resolved.
    pub fn authorize(&self, user: &UserInfo, attrs: &Attributes) -> (bool, String) {
        if user.in_group(SYSTEM_MASTERS) {
            return (true, String::new());
        }
        let mut errors = Vec::new();
        let mut allowed_by = None;
        self.visit_rules(user, &attrs.namespace, &mut |source, item| match item {
            Ok(rule) if rule.allows(attrs) => {
                allowed_by = Some(format!(
                    "RBAC: allowed by {}",
                    source.map(|s| s.describe()).unwrap_or_default()
                ));
                false
            }
            Ok(_) => true,
            Err(e) => {
                errors.push(e);
                true
            }
        });
        match allowed_by {
            Some(reason) => (true, reason),
            None if errors.is_empty() => (false, String::new()),
            None => (false, format!("RBAC: {}", aggregate(errors))),
        }
    }

    /// The rules that apply to `user` in `namespace`: (resourceRules, nonResourceRules).
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Value, Value) {
        let review = self.rules_review(user, namespace);
        (review.resource_rules, review.non_resource_rules)
    }

    /// The full SelfSubjectRulesReview status, including `evaluationError` for
    /// bindings whose role is missing.
    pub fn rules_review(&self, user: &UserInfo, namespace: &str) -> RulesReview {
        let mut collected: Vec<PolicyRule> = Vec::new();
        let mut errors = Vec::new();
        // The real system:masters rules come from the bootstrap cluster-admin
        // binding; stand in for it when the store does not hold that binding.
        if user.in_group(SYSTEM_MASTERS)
            && !self
                .cluster_role_bindings
                .iter()
                .any(|b| b.name == "cluster-admin")
        {
            collected.push(PolicyRule {
                verbs: vec!["*".into()],
                api_groups: vec!["*".into()],
                resources: vec!["*".into()],
                ..Default::default()
            });
            collected.push(PolicyRule {
                verbs: vec!["*".into()],
                non_resource_urls: vec!["*".into()],
                ..Default::default()
            });
        }
        self.visit_rules(user, namespace, &mut |_, item| {
            match item {
                Ok(rule) => collected.push(rule.clone()),
                Err(e) => errors.push(e),
            }
            true
        });
        let mut resource_rules = Vec::new();
        let mut non_resource_rules = Vec::new();
        for r in &collected {
            if !r.resources.is_empty() {
                let mut o = Map::new();
                o.insert("verbs".into(), json!(r.verbs));
                put_nonempty(&mut o, "apiGroups", &r.api_groups);
                put_nonempty(&mut o, "resources", &r.resources);
                put_nonempty(&mut o, "resourceNames", &r.resource_names);
                resource_rules.push(Value::Object(o));
            }
            if !r.non_resource_urls.is_empty() {
                let mut o = Map::new();
                o.insert("verbs".into(), json!(r.verbs));
                put_nonempty(&mut o, "nonResourceURLs", &r.non_resource_urls);
                non_resource_rules.push(Value::Object(o));
            }
        }
        RulesReview {
            resource_rules: Value::Array(resource_rules),
            non_resource_rules: Value::Array(non_resource_rules),
            incomplete: false,
            evaluation_error: if errors.is_empty() {
                String::new()
            } else {
                aggregate(errors)
            },
        }
    }

    /// `VisitRulesFor`: cluster role bindings first, then (only for a namespaced
    /// request) the role bindings of that namespace. The visitor returns false to stop.
    fn visit_rules<'a>(
        &'a self,
        user: &UserInfo,
        namespace: &str,
        visitor: &mut dyn FnMut(Option<Source<'a>>, Result<&'a PolicyRule, String>) -> bool,
    ) {
        for b in &self.cluster_role_bindings {
            let Some(subject) = b.subject_for(user, "") else {
                continue;
            };
            match self.role_ref_rules(&b.role_ref, "") {
                Ok(rules) => {
                    for r in rules {
                        if !visitor(Some(Source::ClusterRoleBinding(b, subject)), Ok(r)) {
                            return;
                        }
                    }
                }
                Err(e) => {
                    if !visitor(None, Err(e)) {
                        return;
                    }
                }
            }
        }
        if namespace.is_empty() {
            return;
        }
        for b in self
            .role_bindings
            .iter()
            .filter(|b| b.namespace == namespace)
        {
            let Some(subject) = b.subject_for(user, namespace) else {
                continue;
            };
            match self.role_ref_rules(&b.role_ref, namespace) {
                Ok(rules) => {
                    for r in rules {
                        if !visitor(Some(Source::RoleBinding(b, subject)), Ok(r)) {
                            return;
                        }
                    }
                }
                Err(e) => {
                    if !visitor(None, Err(e)) {
                        return;
                    }
                }
            }
        }
    }

    /// `GetRoleReferenceRules`, with the informer listers' NotFound texts.
    fn role_ref_rules(
        &self,
        role_ref: &RoleRef,
        binding_namespace: &str,
    ) -> Result<&[PolicyRule], String> {
        match role_ref.kind.as_str() {
            "Role" => self
                .roles
                .iter()
                .find(|r| r.namespace == binding_namespace && r.name == role_ref.name)
                .map(|r| r.rules.as_slice())
                .ok_or_else(|| {
                    format!(
                        "role.rbac.authorization.k8s.io {} not found",
                        go_quote(&role_ref.name)
                    )
                }),
            "ClusterRole" => self
                .cluster_roles
                .iter()
                .find(|r| r.name == role_ref.name)
                .map(|r| r.rules.as_slice())
                .ok_or_else(|| {
                    format!(
                        "clusterrole.rbac.authorization.k8s.io {} not found",
                        go_quote(&role_ref.name)
                    )
                }),
            other => Err(format!(
                "unsupported role reference kind: {}",
                go_quote(other)
            )),
        }
    }
}

/// The 403 message for a request the authorizer did not allow, as
/// responsewriters.Forbidden wraps it in apierrors.NewForbidden. A plain RBAC
/// deny has an empty reason, so this is the whole message.
pub fn forbidden_message(user: &UserInfo, attrs: &Attributes) -> String {
    forbidden_message_with_reason(user, attrs, "")
}

/// As `forbidden_message`, with the authorizer's reason appended the way the
/// real server does (`...: RBAC: clusterrole.rbac.authorization.k8s.io "x" not found`).
pub fn forbidden_message_with_reason(user: &UserInfo, attrs: &Attributes, reason: &str) -> String {
    let mut detail = if !attrs.resource_request {
        format!(
            "User {} cannot {} path {}",
            go_quote(&user.name),
            attrs.verb,
            go_quote(&attrs.path)
        )
    } else {
        let resource = if attrs.subresource.is_empty() {
            attrs.resource.clone()
        } else {
            format!("{}/{}", attrs.resource, attrs.subresource)
        };
        let scope = if attrs.namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace {}", go_quote(&attrs.namespace))
        };
        format!(
            "User {} cannot {} resource {} in API group {} {scope}",
            go_quote(&user.name),
            attrs.verb,
            go_quote(&resource),
            go_quote(&attrs.api_group)
        )
    };
    if !reason.is_empty() {
        detail.push_str(": ");
        detail.push_str(reason);
    }
    let group_resource = if attrs.api_group.is_empty() {
        attrs.resource.clone()
    } else {
        format!("{}.{}", attrs.resource, attrs.api_group)
    };
    if attrs.api_group.is_empty() && attrs.resource.is_empty() {
        format!("forbidden: {detail}")
    } else if attrs.name.is_empty() {
        format!("{group_resource} is forbidden: {detail}")
    } else {
        format!(
            "{group_resource} {} is forbidden: {detail}",
            go_quote(&attrs.name)
        )
    }
}

fn string(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).unwrap_or_default().to_string()
}

fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

fn rules(v: Option<&Value>) -> Vec<PolicyRule> {
    match v {
        Some(Value::Array(items)) => items.iter().filter_map(PolicyRule::from_json).collect(),
        _ => Vec::new(),
    }
}

fn meta(o: &Map<String, Value>) -> (String, String, Map<String, Value>) {
    let m = o.get("metadata").and_then(Value::as_object);
    let name = string(m.and_then(|m| m.get("name")));
    let namespace = string(m.and_then(|m| m.get("namespace")));
    let labels = m
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    (name, namespace, labels)
}

fn put_nonempty(o: &mut Map<String, Value>, key: &str, items: &[String]) {
    if !items.is_empty() {
        o.insert(key.to_string(), json!(items));
    }
}

fn aggregation_selectors(o: &Map<String, Value>) -> Option<Vec<LabelSelector>> {
    let rule = o.get("aggregationRule")?.as_object()?;
    let mut selectors = Vec::new();
    if let Some(Value::Array(items)) = rule.get("clusterRoleSelectors") {
        for item in items {
            // A null list element decodes to a zero LabelSelector, which selects everything.
            let sel = if item.is_null() {
                Ok(LabelSelector::everything())
            } else {
                LabelSelector::from_json(item)
            };
            selectors.push(sel.ok()?);
        }
    }
    Some(selectors)
}

/// The steady state of the clusterrole-aggregation controller: an aggregated
/// role's rules are replaced by the deduplicated rules of every other
/// ClusterRole its selectors match, visited by selector then by name. Iterated
/// because aggregated roles can feed each other; bounded because cycles need
/// not converge.
fn resolve_aggregation(roles: &mut [ClusterRole]) {
    for _ in 0..=roles.len() {
        let mut by_name: Vec<&ClusterRole> = roles.iter().collect();
        by_name.sort_by(|a, b| a.name.cmp(&b.name));
        let updates: Vec<Option<Vec<PolicyRule>>> = roles
            .iter()
            .map(|role| {
                let selectors = role.aggregation.as_ref()?;
                let mut new_rules: Vec<PolicyRule> = Vec::new();
                for sel in selectors {
                    for other in &by_name {
                        if other.name == role.name || !sel.matches(&other.labels) {
                            continue;
                        }
                        for r in &other.rules {
                            if !new_rules.contains(r) {
                                new_rules.push(r.clone());
                            }
                        }
                    }
                }
                (new_rules != role.rules).then_some(new_rules)
            })
            .collect();
        if updates.iter().all(Option::is_none) {
            return;
        }
        for (role, update) in roles.iter_mut().zip(updates) {
            if let Some(rules) = update {
                role.rules = rules;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cluster_role(name: &str, labels: Value, rules: Value) -> Value {
        json!({"kind": "ClusterRole", "metadata": {"name": name, "labels": labels}, "rules": rules})
    }

    fn role(ns: &str, name: &str, rules: Value) -> Value {
        json!({"kind": "Role", "metadata": {"name": name, "namespace": ns}, "rules": rules})
    }

    fn binding(
        ns: Option<&str>,
        name: &str,
        kind: &str,
        role_name: &str,
        subjects: Value,
    ) -> Value {
        let mut meta = json!({"name": name});
        if let Some(ns) = ns {
            meta["namespace"] = json!(ns);
        }
        json!({"metadata": meta, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role_name}, "subjects": subjects})
    }

    fn res(verb: &str, ns: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            namespace: ns.into(),
            api_group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            path: String::new(),
            resource_request: true,
        }
    }

    fn non_res(verb: &str, path: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            path: path.into(),
            ..Default::default()
        }
    }

    fn snapshot() -> RbacSnapshot {
        RbacSnapshot::new(
            vec![
                role(
                    "default",
                    "pod-reader",
                    json!([{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"]}]),
                ),
                role(
                    "default",
                    "named-secret",
                    json!([{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["app-token"], "verbs": ["get", "list", "watch"]}]),
                ),
            ],
            vec![
                cluster_role(
                    "view-deploy",
                    json!({}),
                    json!([{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]}]),
                ),
                cluster_role(
                    "status-all",
                    json!({}),
                    json!([{"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["*"]}]),
                ),
                cluster_role(
                    "health",
                    json!({}),
                    json!([{"nonResourceURLs": ["/healthz", "/metrics/*"], "verbs": ["get"]}]),
                ),
                cluster_role(
                    "edit-cm",
                    json!({}),
                    json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}]),
                ),
                cluster_role(
                    "crd-all",
                    json!({}),
                    json!([{"apiGroups": ["example.com"], "resources": ["*"], "verbs": ["list"]}]),
                ),
                json!({"metadata": {"name": "agg"}, "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "true"}}]}, "rules": []}),
                cluster_role(
                    "part-a",
                    json!({"agg": "true"}),
                    json!([{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create"]}]),
                ),
                cluster_role(
                    "part-b",
                    json!({"agg": "true"}),
                    json!([{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create"]}, {"apiGroups": ["batch"], "resources": ["cronjobs"], "verbs": ["get"]}]),
                ),
                json!("not an object"),
                json!({"metadata": {"name": "weird"}, "rules": [17, {"verbs": "get"}]}),
            ],
            vec![
                binding(
                    Some("default"),
                    "alice-pods",
                    "Role",
                    "pod-reader",
                    json!([{"kind": "User", "name": "alice"}]),
                ),
                binding(
                    Some("default"),
                    "sa-secret",
                    "Role",
                    "named-secret",
                    json!([{"kind": "ServiceAccount", "name": "builder"}]),
                ),
                binding(
                    Some("default"),
                    "devs-cm",
                    "ClusterRole",
                    "edit-cm",
                    json!([{"kind": "Group", "name": "devs"}]),
                ),
                binding(
                    Some("other"),
                    "alice-other",
                    "ClusterRole",
                    "edit-cm",
                    json!([{"kind": "User", "name": "alice"}]),
                ),
                binding(
                    Some("default"),
                    "dangling",
                    "Role",
                    "missing",
                    json!([{"kind": "User", "name": "carol"}]),
                ),
            ],
            vec![
                binding(
                    None,
                    "bob-deploy",
                    "ClusterRole",
                    "view-deploy",
                    json!([{"kind": "User", "name": "bob"}]),
                ),
                binding(
                    None,
                    "status",
                    "ClusterRole",
                    "status-all",
                    json!([{"kind": "User", "name": "bob"}]),
                ),
                binding(
                    None,
                    "health",
                    "ClusterRole",
                    "health",
                    json!([{"kind": "Group", "name": "system:authenticated"}]),
                ),
                binding(
                    None,
                    "sa-crd",
                    "ClusterRole",
                    "crd-all",
                    json!([{"kind": "ServiceAccount", "name": "ctl", "namespace": "ops"}, {"kind": "ServiceAccount", "name": "nons"}]),
                ),
                binding(
                    None,
                    "agg",
                    "ClusterRole",
                    "agg",
                    json!([{"kind": "User", "name": "dana"}]),
                ),
                binding(
                    None,
                    "ghost",
                    "ClusterRole",
                    "no-such-role",
                    json!([{"kind": "User", "name": "carol"}]),
                ),
                binding(
                    None,
                    "odd",
                    "Widget",
                    "x",
                    json!([{"kind": "User", "name": "carol"}]),
                ),
                json!(null),
            ],
        )
    }

    /// Decisions and reasons of the real RBAC authorizer (reason strings from
    /// rule.go's describers; a plain deny has no reason).
    #[test]
    fn authorize_table() {
        let s = snapshot();
        let alice = UserInfo::new("alice", &["system:authenticated"]);
        let bob = UserInfo::new("bob", &[]);
        let dev = UserInfo::new("erin", &["devs"]);
        let sa = UserInfo::new("system:serviceaccount:default:builder", &[]);
        let ctl = UserInfo::new("system:serviceaccount:ops:ctl", &[]);
        let nons = UserInfo::new("system:serviceaccount:default:nons", &[]);
        let dana = UserInfo::new("dana", &[]);
        let root = UserInfo::new("admin", &["system:masters"]);
        let table: Vec<(&UserInfo, Attributes, bool, &str)> = vec![
            (
                &alice,
                res("get", "default", "", "pods", "", "p"),
                true,
                r#"RBAC: allowed by RoleBinding "alice-pods/default" of Role "pod-reader" to User "alice""#,
            ),
            (
                &alice,
                res("get", "default", "", "pods", "log", "p"),
                true,
                r#"RBAC: allowed by RoleBinding "alice-pods/default" of Role "pod-reader" to User "alice""#,
            ),
            (
                &alice,
                res("get", "default", "", "pods", "exec", "p"),
                false,
                "",
            ),
            (
                &alice,
                res("delete", "default", "", "pods", "", "p"),
                false,
                "",
            ),
            (&alice, res("get", "", "", "pods", "", ""), false, ""),
            (&alice, res("get", "other", "", "pods", "", "p"), false, ""),
            (
                &alice,
                res("patch", "other", "", "configmaps", "", "c"),
                true,
                r#"RBAC: allowed by RoleBinding "alice-other/other" of ClusterRole "edit-cm" to User "alice""#,
            ),
            (
                &alice,
                res("patch", "", "", "configmaps", "", "c"),
                false,
                "",
            ),
            (
                &alice,
                non_res("get", "/healthz"),
                true,
                r#"RBAC: allowed by ClusterRoleBinding "health" of ClusterRole "health" to Group "system:authenticated""#,
            ),
            (
                &alice,
                non_res("get", "/metrics/slis"),
                true,
                r#"RBAC: allowed by ClusterRoleBinding "health" of ClusterRole "health" to Group "system:authenticated""#,
            ),
            (&alice, non_res("get", "/metrics"), false, ""),
            (&alice, non_res("post", "/healthz"), false, ""),
            (
                &bob,
                res("get", "prod", "apps", "deployments", "", "d"),
                true,
                r#"RBAC: allowed by ClusterRoleBinding "bob-deploy" of ClusterRole "view-deploy" to User "bob""#,
            ),
            (
                &bob,
                res("get", "prod", "", "deployments", "", "d"),
                false,
                "",
            ),
            (
                &bob,
                res("update", "prod", "apps", "deployments", "status", "d"),
                true,
                r#"RBAC: allowed by ClusterRoleBinding "status" of ClusterRole "status-all" to User "bob""#,
            ),
            (
                &bob,
                res("update", "prod", "apps", "deployments", "", "d"),
                false,
                "",
            ),
            (
                &dev,
                res("deletecollection", "default", "", "configmaps", "", ""),
                true,
                r#"RBAC: allowed by RoleBinding "devs-cm/default" of ClusterRole "edit-cm" to Group "devs""#,
            ),
            (
                &sa,
                res("get", "default", "", "secrets", "", "app-token"),
                true,
                r#"RBAC: allowed by RoleBinding "sa-secret/default" of Role "named-secret" to ServiceAccount "builder/default""#,
            ),
            (
                &sa,
                res("get", "default", "", "secrets", "", "other"),
                false,
                "",
            ),
            (
                &sa,
                res("list", "default", "", "secrets", "", ""),
                false,
                "",
            ),
            (
                &sa,
                res("watch", "default", "", "secrets", "", "app-token"),
                true,
                r#"RBAC: allowed by RoleBinding "sa-secret/default" of Role "named-secret" to ServiceAccount "builder/default""#,
            ),
            (
                &ctl,
                res("list", "", "example.com", "widgets", "", ""),
                true,
                r#"RBAC: allowed by ClusterRoleBinding "sa-crd" of ClusterRole "crd-all" to ServiceAccount "ctl/ops""#,
            ),
            (
                &nons,
                res("list", "", "example.com", "widgets", "", ""),
                false,
                "",
            ),
            (
                &dana,
                res("create", "x", "batch", "jobs", "", ""),
                true,
                r#"RBAC: allowed by ClusterRoleBinding "agg" of ClusterRole "agg" to User "dana""#,
            ),
            (
                &dana,
                res("get", "x", "batch", "cronjobs", "", "c"),
                true,
                r#"RBAC: allowed by ClusterRoleBinding "agg" of ClusterRole "agg" to User "dana""#,
            ),
            (&root, res("delete", "", "", "nodes", "", "n"), true, ""),
            (&root, non_res("get", "/anything"), true, ""),
        ];
        for (user, attrs, allowed, reason) in table {
            assert_eq!(
                s.authorize(user, &attrs),
                (allowed, reason.to_string()),
                "{} {attrs:?}",
                user.name
            );
        }
    }

    /// Resolution errors become the deny reason ("RBAC: " + aggregate), and the
    /// server appends that reason to the 403 text.
    #[test]
    fn resolution_errors() {
        let s = snapshot();
        let carol = UserInfo::new("carol", &[]);
        let attrs = res("get", "default", "", "pods", "", "p");
        let (allowed, reason) = s.authorize(&carol, &attrs);
        assert!(!allowed);
        assert_eq!(
            reason,
            r#"RBAC: [clusterrole.rbac.authorization.k8s.io "no-such-role" not found, unsupported role reference kind: "Widget", role.rbac.authorization.k8s.io "missing" not found]"#
        );
        let (_, cluster_reason) = s.authorize(&carol, &res("get", "", "", "nodes", "", ""));
        assert_eq!(
            cluster_reason,
            r#"RBAC: [clusterrole.rbac.authorization.k8s.io "no-such-role" not found, unsupported role reference kind: "Widget"]"#
        );
        assert_eq!(
            forbidden_message_with_reason(&carol, &attrs, &reason),
            format!(
                r#"pods "p" is forbidden: User "carol" cannot get resource "pods" in API group "" in the namespace "default": {reason}"#
            )
        );
    }

    /// responsewriters.Forbidden + apierrors.NewForbidden texts.
    #[test]
    fn forbidden_messages() {
        let alice = UserInfo::new("alice", &[]);
        let table = [
            (
                res("get", "default", "", "secrets", "", "foo"),
                r#"secrets "foo" is forbidden: User "alice" cannot get resource "secrets" in API group "" in the namespace "default""#,
            ),
            (
                res("list", "default", "", "secrets", "", ""),
                r#"secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "default""#,
            ),
            (
                res("list", "", "", "nodes", "", ""),
                r#"nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope"#,
            ),
            (
                res("get", "default", "", "pods", "log", "web"),
                r#"pods "web" is forbidden: User "alice" cannot get resource "pods/log" in API group "" in the namespace "default""#,
            ),
            (
                res("create", "default", "apps", "deployments", "", ""),
                r#"deployments.apps is forbidden: User "alice" cannot create resource "deployments" in API group "apps" in the namespace "default""#,
            ),
            (
                non_res("get", "/foo"),
                r#"forbidden: User "alice" cannot get path "/foo""#,
            ),
        ];
        for (attrs, want) in table {
            assert_eq!(forbidden_message(&alice, &attrs), want);
        }
        let sa = UserInfo::new("system:serviceaccount:ns:a\"b", &[]);
        assert_eq!(
            forbidden_message(&sa, &non_res("get", "/x")),
            r#"forbidden: User "system:serviceaccount:ns:a\"b" cannot get path "/x""#
        );
    }

    /// SelfSubjectRulesReview shape (kubectl auth can-i --list).
    #[test]
    fn rules_review_shape() {
        let s = snapshot();
        let alice = UserInfo::new("alice", &["system:authenticated"]);
        let (resource, non_resource) = s.rules_for(&alice, "default");
        assert_eq!(
            resource,
            json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "pods/log"]}])
        );
        assert_eq!(
            non_resource,
            json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/metrics/*"]}])
        );
        let (resource, _) = s.rules_for(&UserInfo::new("dana", &[]), "");
        assert_eq!(
            resource,
            json!([
                {"verbs": ["create"], "apiGroups": ["batch"], "resources": ["jobs"]},
                {"verbs": ["get"], "apiGroups": ["batch"], "resources": ["cronjobs"]}
            ])
        );
        let review = s.rules_review(&UserInfo::new("carol", &[]), "default");
        assert_eq!(review.resource_rules, json!([]));
        assert!(
            review
                .evaluation_error
                .contains(r#"role.rbac.authorization.k8s.io "missing" not found"#)
        );
        let (resource, non_resource) =
            s.rules_for(&UserInfo::new("admin", &["system:masters"]), "");
        assert_eq!(
            resource,
            json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}])
        );
        assert_eq!(
            non_resource,
            json!([{"verbs": ["*"], "nonResourceURLs": ["*"]}])
        );
    }

    /// Aggregated roles that aggregate other aggregated roles settle transitively;
    /// an empty selector selects every other ClusterRole.
    #[test]
    fn aggregation_chains() {
        let s = RbacSnapshot::new(
            vec![],
            vec![
                json!({"metadata": {"name": "top"}, "aggregationRule": {"clusterRoleSelectors": [{"matchExpressions": [{"key": "tier", "operator": "In", "values": ["mid"]}]}]}}),
                json!({"metadata": {"name": "mid", "labels": {"tier": "mid"}}, "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"tier": "leaf"}}]}}),
                cluster_role(
                    "leaf",
                    json!({"tier": "leaf"}),
                    json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]),
                ),
                json!({"metadata": {"name": "all"}, "aggregationRule": {"clusterRoleSelectors": [{}]}}),
            ],
            vec![],
            vec![
                binding(
                    None,
                    "t",
                    "ClusterRole",
                    "top",
                    json!([{"kind": "User", "name": "u"}]),
                ),
                binding(
                    None,
                    "a",
                    "ClusterRole",
                    "all",
                    json!([{"kind": "User", "name": "v"}]),
                ),
            ],
        );
        let get_pod = res("get", "x", "", "pods", "", "p");
        assert!(s.authorize(&UserInfo::new("u", &[]), &get_pod).0);
        assert!(s.authorize(&UserInfo::new("v", &[]), &get_pod).0);
    }

    #[test]
    fn user_groups() {
        assert_eq!(
            UserInfo::new("a", &[]).with_authenticated_group().groups,
            vec!["system:authenticated"]
        );
        assert_eq!(
            UserInfo::anonymous().with_authenticated_group().groups,
            vec!["system:unauthenticated"]
        );
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|n| json!(n)),
            prop_oneof![
                Just("*"),
                Just(""),
                Just("Role"),
                Just("ClusterRole"),
                Just("User"),
                Just("get"),
                Just("a")
            ]
            .prop_map(|s| json!(s)),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec(
                    (
                        prop_oneof![
                            Just("metadata"),
                            Just("name"),
                            Just("namespace"),
                            Just("rules"),
                            Just("verbs"),
                            Just("resources"),
                            Just("apiGroups"),
                            Just("roleRef"),
                            Just("kind"),
                            Just("subjects"),
                            Just("aggregationRule"),
                            Just("clusterRoleSelectors"),
                            Just("matchLabels"),
                            Just("labels")
                        ],
                        inner
                    ),
                    0..5
                )
                .prop_map(|kv| Value::Object(
                    kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                )),
            ]
        })
    }

    proptest! {
        // No failure persistence: the regressions file would land in the crate.
        #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn malformed_objects_never_panic(
            roles in proptest::collection::vec(arb_json(), 0..3),
            cluster_roles in proptest::collection::vec(arb_json(), 0..3),
            rbs in proptest::collection::vec(arb_json(), 0..3),
            crbs in proptest::collection::vec(arb_json(), 0..3),
        ) {
            let s = RbacSnapshot::new(roles, cluster_roles, rbs, crbs);
            let u = UserInfo::new("a", &["a"]);
            let _ = s.authorize(&u, &res("get", "a", "", "a", "", "a"));
            let _ = s.rules_review(&u, "a");
        }
    }
}
