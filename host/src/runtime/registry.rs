//! The plugins currently serving, by name, swappable while calls run: a call clones the `Arc` of the version it
//! starts on and finishes on it, while calls that start after a swap get the new version. The old version's
//! compiled code is freed when its last call ends.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};

use tokio::sync::watch;

use super::plugin::LoadedPlugin;

pub struct PluginRegistry {
    plugins: RwLock<BTreeMap<String, Arc<LoadedPlugin>>>,
    /// Bumped on every change, so controllers can re-reconcile everything a new version serves.
    generation: watch::Sender<u64>,
}

impl Default for PluginRegistry {
    fn default() -> Self {
        PluginRegistry {
            plugins: RwLock::default(),
            generation: watch::Sender::new(0),
        }
    }
}

impl PluginRegistry {
    pub fn new() -> Self {
        PluginRegistry::default()
    }

    /// The version serving `name` now.
    pub fn get(&self, name: &str) -> Option<Arc<LoadedPlugin>> {
        self.plugins
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
    }

    /// Serves `plugin` under its name from now on; returns the version it replaced.
    pub fn install(&self, plugin: Arc<LoadedPlugin>) -> Option<Arc<LoadedPlugin>> {
        let name = plugin.name().to_owned();
        let previous = self
            .plugins
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.clone(), plugin);
        self.generation.send_modify(|g| *g += 1);
        if let Some(previous) = &previous {
            tracing::debug!(plugin = %name, from = %previous.digest(), "plugin replaced");
        }
        previous
    }

    pub fn remove(&self, name: &str) -> Option<Arc<LoadedPlugin>> {
        let removed = self
            .plugins
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name);
        if removed.is_some() {
            self.generation.send_modify(|g| *g += 1);
        }
        removed
    }

    pub fn names(&self) -> Vec<String> {
        self.plugins
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }

    /// Changes as a generation counter.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }
}
