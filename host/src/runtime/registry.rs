//! The plugins currently serving, swappable while calls run: a call clones the `Arc` of the version it starts
//! on and finishes on it, while calls that start after a swap get the new version. The old version's compiled
//! code is freed when its last call ends.
//!
//! Two layers decide which version serves an object:
//! * the **defaults**, by plugin name: the built-ins and `--plugin-dir` files, each serving in every namespace
//!   the kinds it declares and those of the versions it replaced under its name (a file named like a built-in
//!   takes over the built-in's kinds);
//! * the **routes** of plugin bindings, per kind: a namespace's own route, else the cluster-wide route, else
//!   the default. A route may serve a canary version to some objects.
//!
//! Every change says which kinds it touched, so only their controllers re-evaluate their objects.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, PoisonError, RwLock};

use tokio::sync::watch;

use super::plugin::LoadedPlugin;
use super::types::Gvk;

/// A kind by group and name (versions do not matter for routing).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KindKey {
    pub group: String,
    pub kind: String,
}

impl KindKey {
    pub fn new(group: impl Into<String>, kind: impl Into<String>) -> Self {
        KindKey {
            group: group.into(),
            kind: kind.into(),
        }
    }
}

impl std::fmt::Display for KindKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let group = if self.group.is_empty() {
            "core"
        } else {
            &self.group
        };
        write!(f, "{group}/{}", self.kind)
    }
}

/// Whether plugins may reconcile `group`/`kind`: one of the operator's eight kinds, or one an administrator
/// allowed (`--allow-kind`); never a core kind, whatever the configuration says. The one rule for plugin files
/// and bindings alike.
pub fn serves_kind(allowed: &[(String, String)], group: &str, kind: &str) -> bool {
    if group.is_empty() {
        return false;
    }
    (group == omni_api::GROUP && omni_api::KINDS.contains(&kind))
        || allowed.iter().any(|(g, k)| g == group && k == kind)
}

/// Who serves a kind in some scope: a binding's loaded plugin, and maybe a canary version for some objects.
#[derive(Debug, Clone)]
pub struct Route {
    /// The binding, as messages name it (`PluginBinding team-a/site-rules`).
    pub binding: String,
    pub stable: Arc<LoadedPlugin>,
    pub canary: Option<CanaryRoute>,
}

/// A new version serving part of a route's objects.
#[derive(Debug, Clone)]
pub struct CanaryRoute {
    pub plugin: Arc<LoadedPlugin>,
    /// Namespaces served by the canary.
    pub namespaces: BTreeSet<String>,
    /// Share of the other objects (by a stable hash of their UID) served by the canary, 0–100.
    pub percent: u8,
}

impl Route {
    pub fn new(binding: impl Into<String>, plugin: Arc<LoadedPlugin>) -> Self {
        Route {
            binding: binding.into(),
            stable: plugin,
            canary: None,
        }
    }

    /// The version that serves an object of this route.
    pub fn select(&self, namespace: Option<&str>, uid: &str) -> &Arc<LoadedPlugin> {
        match &self.canary {
            Some(c) if c.takes(namespace, uid) => &c.plugin,
            _ => &self.stable,
        }
    }

    /// Identity for change detection: the binding and the versions serving.
    fn fingerprint(&self) -> String {
        let canary = self
            .canary
            .as_ref()
            .map(|c| format!("{}|{:?}|{}", version_id(&c.plugin), c.namespaces, c.percent));
        format!("{}|{}|{canary:?}", self.binding, version_id(&self.stable))
    }
}

/// A loaded version's identity: the same bytes loaded for two bindings with other grants are two versions.
fn version_id(plugin: &Arc<LoadedPlugin>) -> String {
    format!("{:p}", Arc::as_ptr(plugin))
}

impl CanaryRoute {
    fn takes(&self, namespace: Option<&str>, uid: &str) -> bool {
        if namespace.is_some_and(|ns| self.namespaces.contains(ns)) {
            return true;
        }
        if self.percent == 0 {
            return false;
        }
        // A stable hash, so an object stays on one side of the split for the whole canary.
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        uid.hash(&mut hasher);
        (hasher.finish() % 100) < u64::from(self.percent)
    }
}

/// The routes of one kind.
#[derive(Debug, Clone, Default)]
pub struct KindRoutes {
    /// Namespaces without a route of their own.
    pub cluster: Option<Arc<Route>>,
    pub namespaces: BTreeMap<String, Arc<Route>>,
}

impl KindRoutes {
    fn fingerprint(&self) -> Vec<(String, String)> {
        let mut out: Vec<_> = self
            .namespaces
            .iter()
            .map(|(ns, r)| (ns.clone(), r.fingerprint()))
            .collect();
        if let Some(c) = &self.cluster {
            out.push(("*".into(), c.fingerprint()));
        }
        out
    }

    fn plugins(&self) -> impl Iterator<Item = &Arc<LoadedPlugin>> {
        self.cluster
            .iter()
            .chain(self.namespaces.values())
            .flat_map(|r| std::iter::once(&r.stable).chain(r.canary.iter().map(|c| &c.plugin)))
    }
}

/// A default plugin and the kinds its name serves.
struct Named {
    plugin: Arc<LoadedPlugin>,
    kinds: Vec<Gvk>,
}

#[derive(Default)]
struct State {
    defaults: BTreeMap<String, Named>,
    routes: HashMap<KindKey, KindRoutes>,
}

impl State {
    fn default_for(&self, key: &KindKey) -> Option<&Arc<LoadedPlugin>> {
        self.defaults
            .values()
            .find(|d| d.kinds.iter().any(|k| key_of(k) == *key))
            .map(|d| &d.plugin)
    }
}

fn key_of(gvk: &Gvk) -> KindKey {
    KindKey::new(&gvk.group, &gvk.kind)
}

pub struct PluginRegistry {
    state: RwLock<State>,
    /// Bumped on every change, for whoever watches the whole registry.
    generation: watch::Sender<u64>,
    /// Bumped per kind when what serves it changed, so its controller re-reconciles every object.
    kinds: RwLock<HashMap<KindKey, watch::Sender<u64>>>,
}

impl std::fmt::Debug for PluginRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginRegistry")
            .field("plugins", &self.names())
            .finish_non_exhaustive()
    }
}

impl Default for PluginRegistry {
    fn default() -> Self {
        PluginRegistry {
            state: RwLock::default(),
            generation: watch::Sender::new(0),
            kinds: RwLock::default(),
        }
    }
}

impl PluginRegistry {
    pub fn new() -> Self {
        PluginRegistry::default()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// The default version serving `name` now.
    pub fn get(&self, name: &str) -> Option<Arc<LoadedPlugin>> {
        self.read().defaults.get(name).map(|d| d.plugin.clone())
    }

    /// Serves `plugin` as the default under its name from now on; returns the version it replaced.
    pub fn install(&self, plugin: Arc<LoadedPlugin>) -> Option<Arc<LoadedPlugin>> {
        let name = plugin.name().to_owned();
        let mut kinds = plugin.info().kinds.clone();
        let previous = {
            let mut state = self.write();
            if let Some(old) = state.defaults.get(&name) {
                for k in &old.kinds {
                    if !kinds.iter().any(|n| key_of(n) == key_of(k)) {
                        kinds.push(k.clone());
                    }
                }
            }
            let touched: BTreeSet<KindKey> = kinds.iter().map(key_of).collect();
            let previous = state.defaults.insert(name.clone(), Named { plugin, kinds });
            drop(state);
            self.changed(touched);
            previous.map(|d| d.plugin)
        };
        if let Some(previous) = &previous {
            tracing::debug!(plugin = %name, from = %previous.digest(), "plugin replaced");
        }
        previous
    }

    pub fn remove(&self, name: &str) -> Option<Arc<LoadedPlugin>> {
        let removed = self.write().defaults.remove(name);
        if let Some(removed) = &removed {
            self.changed(removed.kinds.iter().map(key_of).collect());
        }
        removed.map(|d| d.plugin)
    }

    /// Names of the default plugins.
    pub fn names(&self) -> Vec<String> {
        self.read().defaults.keys().cloned().collect()
    }

    /// Replaces every binding route at once; only kinds whose routes changed are told.
    pub fn set_routes(&self, routes: HashMap<KindKey, KindRoutes>) {
        let touched: BTreeSet<KindKey> = {
            let mut state = self.write();
            let keys: BTreeSet<KindKey> =
                state.routes.keys().chain(routes.keys()).cloned().collect();
            let touched = keys
                .into_iter()
                .filter(|k| {
                    state.routes.get(k).map(KindRoutes::fingerprint)
                        != routes.get(k).map(KindRoutes::fingerprint)
                })
                .collect();
            state.routes = routes;
            touched
        };
        if !touched.is_empty() {
            self.changed(touched);
        }
    }

    /// The version that serves an object of `key` in `namespace` with `uid`: the namespace's route, else the
    /// cluster-wide route, else the default plugin declaring the kind.
    pub fn serving(
        &self,
        key: &KindKey,
        namespace: Option<&str>,
        uid: &str,
    ) -> Option<Arc<LoadedPlugin>> {
        let state = self.read();
        if let Some(routes) = state.routes.get(key) {
            let route = namespace
                .and_then(|ns| routes.namespaces.get(ns))
                .or(routes.cluster.as_ref());
            if let Some(route) = route {
                return Some(route.select(namespace, uid).clone());
            }
        }
        state.default_for(key).cloned()
    }

    /// Every version loaded to serve something now, with the binding it serves for (`""` for the default
    /// plugins): one entry per loaded version, a canary included.
    pub fn versions(&self) -> Vec<(String, Arc<LoadedPlugin>)> {
        let state = self.read();
        let mut out: Vec<(String, Arc<LoadedPlugin>)> = Vec::new();
        let mut push = |binding: &str, plugin: &Arc<LoadedPlugin>| {
            if !out.iter().any(|(_, p)| Arc::ptr_eq(p, plugin)) {
                out.push((binding.to_string(), plugin.clone()));
            }
        };
        for d in state.defaults.values() {
            push("", &d.plugin);
        }
        for routes in state.routes.values() {
            for route in routes.cluster.iter().chain(routes.namespaces.values()) {
                push(&route.binding, &route.stable);
                if let Some(canary) = &route.canary {
                    push(&route.binding, &canary.plugin);
                }
            }
        }
        out
    }

    /// Every kind something serves: its group, version and kind, and every version that may serve it (for the
    /// related kinds its controller must watch).
    pub fn kinds(&self) -> BTreeMap<KindKey, (Gvk, Vec<Arc<LoadedPlugin>>)> {
        let state = self.read();
        let mut out: BTreeMap<KindKey, (Gvk, Vec<Arc<LoadedPlugin>>)> = BTreeMap::new();
        for d in state.defaults.values() {
            for gvk in &d.kinds {
                out.entry(key_of(gvk))
                    .or_insert_with(|| (gvk.clone(), Vec::new()))
                    .1
                    .push(d.plugin.clone());
            }
        }
        for (key, routes) in &state.routes {
            for plugin in routes.plugins() {
                let Some(gvk) = plugin.info().kinds.iter().find(|k| key_of(k) == *key) else {
                    continue;
                };
                out.entry(key.clone())
                    .or_insert_with(|| (gvk.clone(), Vec::new()))
                    .1
                    .push(plugin.clone());
            }
        }
        out
    }

    /// Changes as a generation counter, for the whole registry.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Changes to what serves `key`.
    pub fn subscribe_kind(&self, key: &KindKey) -> watch::Receiver<u64> {
        let mut kinds = self.kinds.write().unwrap_or_else(PoisonError::into_inner);
        kinds
            .entry(key.clone())
            .or_insert_with(|| watch::Sender::new(0))
            .subscribe()
    }

    fn changed(&self, touched: BTreeSet<KindKey>) {
        {
            let mut kinds = self.kinds.write().unwrap_or_else(PoisonError::into_inner);
            for key in touched {
                kinds
                    .entry(key)
                    .or_insert_with(|| watch::Sender::new(0))
                    .send_modify(|g| *g += 1);
            }
        }
        self.generation.send_modify(|g| *g += 1);
    }
}
