//! Plugin bindings resolved into routes: which loaded version serves which kind in which namespace, with the
//! grants requested ∩ ceiling ∩ binding, and what each binding's status says about it. Two bindings that claim
//! one kind in one scope are both told, naming each other; the older keeps serving, so adding a duplicate never
//! takes a namespace away from the binding that served it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use omni_api::platform::PluginBindingSpec;

use crate::capabilities::Grants;
use crate::runtime::{KindKey, LoadedPlugin};

/// A PluginBinding or ClusterPluginBinding as the platform sees it.
#[derive(Debug, Clone)]
pub struct BindingView {
    /// `None` for a ClusterPluginBinding.
    pub namespace: Option<String>,
    pub name: String,
    /// RFC 3339; the older of two conflicting bindings keeps serving.
    pub created: String,
    pub spec: PluginBindingSpec,
}

impl BindingView {
    /// How messages and routes name it.
    pub fn id(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("PluginBinding {ns}/{}", self.name),
            None => format!("ClusterPluginBinding {}", self.name),
        }
    }
}

/// The effective grants of a binding, or the field that is wrong.
///
/// A namespaced binding reaches named namespaces only: `namespace:*` and `secrets-namespace:*` are for
/// ClusterPluginBindings, so a tenant cannot stretch a Plugin's ceiling over every other tenant.
pub fn effective_grants(
    requested: &Grants,
    ceiling: &Grants,
    binding: &PluginBindingSpec,
    namespaced: bool,
) -> Result<Grants, String> {
    let mut bound = Grants::none();
    for (i, text) in binding.grants.iter().enumerate() {
        if namespaced && (text == "namespace:*" || text == "secrets-namespace:*") {
            return Err(format!(
                "spec.grants[{i}]: {text} reaches every namespace; a PluginBinding names the namespaces it \
                 reaches (every namespace is for a ClusterPluginBinding)"
            ));
        }
        bound = bound
            .grant(text)
            .map_err(|e| format!("spec.grants[{i}]: {e}"))?;
    }
    Ok(requested.intersect(&ceiling.intersect(&bound)))
}

/// The kinds a binding serves: those it names (each must be one its plugin reconciles), or all of them.
pub fn bound_kinds(
    plugin: &LoadedPlugin,
    spec: &PluginBindingSpec,
) -> Result<Vec<KindKey>, String> {
    let declared: Vec<KindKey> = plugin
        .info()
        .kinds
        .iter()
        .map(|k| KindKey::new(&k.group, &k.kind))
        .collect();
    if spec.kinds.is_empty() {
        return Ok(declared);
    }
    spec.kinds
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let key = KindKey::new(&k.group, &k.kind);
            if declared.contains(&key) {
                Ok(key)
            } else {
                Err(format!(
                    "spec.kinds[{i}]: plugin {:?} does not reconcile {key}; it reconciles {}",
                    plugin.name(),
                    declared
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }
        })
        .collect()
}

/// One binding that is ready to serve its kinds.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub binding: BindingView,
    pub kinds: Vec<KindKey>,
    /// The version that serves, and maybe a canary beside it (built by the caller).
    pub route: Arc<crate::runtime::Route>,
}

/// Who won each (scope, kind): the oldest binding; every loser, and each winner it lost to, is reported.
pub struct Resolution {
    pub routes: HashMap<KindKey, crate::runtime::KindRoutes>,
    /// Per binding id: the other bindings it conflicts with, by kind.
    pub conflicts: BTreeMap<String, Vec<String>>,
    /// Binding ids that serve at least one kind.
    pub serving: std::collections::BTreeSet<String>,
}

pub fn resolve(candidates: &[Candidate]) -> Resolution {
    // (scope, kind) → candidates claiming it, oldest first.
    let mut claims: BTreeMap<(Option<String>, KindKey), Vec<&Candidate>> = BTreeMap::new();
    for c in candidates {
        for kind in &c.kinds {
            claims
                .entry((c.binding.namespace.clone(), kind.clone()))
                .or_default()
                .push(c);
        }
    }
    let mut routes: HashMap<KindKey, crate::runtime::KindRoutes> = HashMap::new();
    let mut conflicts: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut serving = std::collections::BTreeSet::new();
    for ((scope, kind), mut claimants) in claims {
        claimants.sort_by(|a, b| {
            (&a.binding.created, &a.binding.name).cmp(&(&b.binding.created, &b.binding.name))
        });
        let winner = claimants[0];
        if claimants.len() > 1 {
            let ids: Vec<String> = claimants.iter().map(|c| c.binding.id()).collect();
            for (i, c) in claimants.iter().enumerate() {
                let others: Vec<&String> = ids
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .map(|(_, id)| id)
                    .collect();
                conflicts.entry(c.binding.id()).or_default().push(format!(
                    "{kind} is also bound by {}{}",
                    others
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    if i == 0 {
                        "; this binding, the oldest, keeps serving it"
                    } else {
                        "; the oldest binding serves it, not this one"
                    }
                ));
            }
        }
        serving.insert(winner.binding.id());
        let entry = routes.entry(kind).or_default();
        match scope {
            Some(ns) => {
                entry.namespaces.insert(ns, winner.route.clone());
            }
            None => entry.cluster = Some(winner.route.clone()),
        }
    }
    Resolution {
        routes,
        conflicts,
        serving,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(grants: &[&str]) -> PluginBindingSpec {
        PluginBindingSpec {
            plugin: "p".into(),
            grants: grants.iter().map(|g| g.to_string()).collect(),
            ..PluginBindingSpec::default()
        }
    }

    #[test]
    fn effective_grants_never_exceed_any_of_the_three() {
        let ceiling = Grants::parse(["kube-read:core/*", "helm"]).unwrap();
        let requested = Grants::parse(["kube-read:core/ConfigMap", "helm", "omni"]).unwrap();
        let g = effective_grants(
            &requested,
            &ceiling,
            &spec(&["kube-read:*", "omni", "secrets"]),
            true,
        )
        .unwrap();
        assert_eq!(g.describe(), ["kube-read", "kube-read:core/ConfigMap"]);
    }

    #[test]
    fn a_bad_binding_grant_is_named_by_its_field() {
        let err = effective_grants(
            &Grants::none(),
            &Grants::none(),
            &spec(&["helm", "root"]),
            true,
        )
        .unwrap_err();
        assert!(err.starts_with("spec.grants[1]: "), "{err}");
    }

    #[test]
    fn only_cluster_bindings_reach_every_namespace() {
        let all = Grants::parse([
            "kube-read:*",
            "namespace:*",
            "secrets",
            "secrets-namespace:*",
        ])
        .unwrap();
        for wide in ["namespace:*", "secrets-namespace:*"] {
            let err = effective_grants(&all, &all, &spec(&["secrets", wide]), true).unwrap_err();
            assert!(err.contains("spec.grants[1]"), "{err}");
            assert!(effective_grants(&all, &all, &spec(&["secrets", wide]), false).is_ok());
        }
    }
}
