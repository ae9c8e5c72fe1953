//! The operator as a whole: its plugins (the built-in defaults, overridden or extended from `--plugin-dir`),
//! kept current while running, and one set of controllers per plugin.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, bail};
use futures::FutureExt;

use crate::capabilities::Grants;
use crate::controllers::{self, Settings};
use crate::defaults;
use crate::runtime::{LoadedPlugin, PluginRegistry, PluginSpec, Runtime};

/// Where plugins come from and what they may do.
#[derive(Debug, Clone, Default)]
pub struct PluginSources {
    /// `<name>.wasm` files: a name of a built-in plugin replaces it (keeping its grants); other names are added
    /// with the grants `extra_grants` gives them (none by default: deny by default).
    pub plugin_dir: Option<PathBuf>,
    /// Grants for plugins that are not built in, by plugin name.
    pub extra_grants: HashMap<String, Vec<String>>,
}

impl PluginSources {
    fn grants_for(&self, name: &str) -> Result<Grants> {
        if let Some(d) = defaults::PLUGINS.iter().find(|d| d.name == name) {
            return d
                .grants()
                .with_context(|| format!("grants of built-in plugin {name:?}"));
        }
        let caps = self.extra_grants.get(name).cloned().unwrap_or_default();
        Grants::parse(&caps).with_context(|| format!("grants for plugin {name:?}"))
    }

    /// `(name, path, modified)` of every component in the plugin directory.
    fn scan(&self) -> Result<Vec<(String, PathBuf, Option<SystemTime>)>> {
        let Some(dir) = &self.plugin_dir else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir)
            .with_context(|| format!("reading plugin directory {}", dir.display()))?
        {
            let entry =
                entry.with_context(|| format!("reading plugin directory {}", dir.display()))?;
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("wasm") {
                continue;
            }
            let Some(name) = path.file_stem().and_then(|s| s.to_str()).map(String::from) else {
                continue;
            };
            let modified = entry.metadata().and_then(|m| m.modified()).ok();
            out.push((name, path, modified));
        }
        out.sort();
        Ok(out)
    }
}

/// The loaded plugins and the registry controllers read them from.
pub struct Operator {
    runtime: Runtime,
    registry: Arc<PluginRegistry>,
    sources: PluginSources,
}

impl Operator {
    /// Loads every plugin: built-ins first, then the plugin directory's files over them. A plugin that fails to
    /// load (bad component, ungranted imports) stops start-up with the reason.
    pub async fn load(runtime: Runtime, sources: PluginSources) -> Result<Self> {
        let registry = Arc::new(PluginRegistry::new());
        let files = sources.scan()?;
        for d in defaults::PLUGINS {
            if files.iter().any(|(name, _, _)| name == d.name) {
                continue;
            }
            let spec = d.spec()?;
            registry.install(
                runtime
                    .load(spec)
                    .await
                    .with_context(|| format!("loading built-in plugin {:?}", d.name))?,
            );
        }
        for (name, path, _) in files {
            let plugin = load_file(&runtime, &sources, &name, &path).await?;
            registry.install(plugin);
        }
        if registry.names().is_empty() {
            bail!("no plugins to run");
        }
        Ok(Operator {
            runtime,
            registry,
            sources,
        })
    }

    pub fn registry(&self) -> &Arc<PluginRegistry> {
        &self.registry
    }

    pub fn plugins(&self) -> Vec<Arc<LoadedPlugin>> {
        self.registry
            .names()
            .iter()
            .filter_map(|n| self.registry.get(n))
            .collect()
    }

    /// Runs every plugin's controllers, and swaps in changed plugin files, until `shutdown` resolves.
    pub async fn run(
        &self,
        client: kube::Client,
        settings: Settings,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<()> {
        let shutdown = shutdown.boxed().shared();
        let mut tasks = Vec::new();
        for name in self.registry.names() {
            let (client, registry, settings, stop) = (
                client.clone(),
                self.registry.clone(),
                settings.clone(),
                shutdown.clone(),
            );
            tasks.push(tokio::spawn(async move {
                controllers::run_plugin(client, registry, &name, settings, stop).await
            }));
        }
        if self.sources.plugin_dir.is_some() {
            let (runtime, sources, registry, stop) = (
                self.runtime.clone(),
                self.sources.clone(),
                self.registry.clone(),
                shutdown.clone(),
            );
            // A plugin that appears while running gets controllers of its own.
            let start = {
                let (client, registry, settings, stop) = (
                    client.clone(),
                    self.registry.clone(),
                    settings.clone(),
                    shutdown.clone(),
                );
                move |name: String| {
                    let (client, registry, settings, stop) = (
                        client.clone(),
                        registry.clone(),
                        settings.clone(),
                        stop.clone(),
                    );
                    tokio::spawn(async move {
                        if let Err(e) =
                            controllers::run_plugin(client, registry, &name, settings, stop).await
                        {
                            tracing::error!(plugin = %name, error = %format!("{e:#}"), "controllers of a new plugin stopped");
                        }
                    });
                }
            };
            tokio::spawn(async move {
                tokio::select! {
                    _ = watch_plugin_dir(runtime, sources, registry, start) => {}
                    _ = stop => {}
                }
            });
        }
        for t in tasks {
            t.await.context("a controller task panicked")??;
        }
        Ok(())
    }
}

async fn load_file(
    runtime: &Runtime,
    sources: &PluginSources,
    name: &str,
    path: &Path,
) -> Result<Arc<LoadedPlugin>> {
    let spec = PluginSpec::from_file(name, path)
        .with_context(|| format!("reading plugin {}", path.display()))?;
    let grants = sources.grants_for(name)?;
    runtime
        .load(spec.grants(grants))
        .await
        .with_context(|| format!("loading plugin {}", path.display()))
}

/// Polls the plugin directory; a changed file is loaded and, if it loads, replaces the running version (calls in
/// flight finish on the old one). A file that fails to load leaves the running version in place.
async fn watch_plugin_dir(
    runtime: Runtime,
    sources: PluginSources,
    registry: Arc<PluginRegistry>,
    start: impl Fn(String),
) {
    let mut seen: HashMap<String, Option<SystemTime>> = HashMap::new();
    if let Ok(files) = sources.scan() {
        for (name, _, modified) in files {
            seen.insert(name, modified);
        }
    }
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let files = match sources.scan() {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "cannot read the plugin directory");
                continue;
            }
        };
        for (name, path, modified) in files {
            if seen.get(&name) == Some(&modified) {
                continue;
            }
            seen.insert(name.clone(), modified);
            match load_file(&runtime, &sources, &name, &path).await {
                Ok(plugin) => {
                    let digest = plugin.digest().to_string();
                    let replaced = registry.install(plugin);
                    tracing::info!(plugin = %name, %digest, "plugin swapped in from the plugin directory");
                    if replaced.is_none() {
                        start(name.clone());
                    }
                }
                Err(e) => {
                    tracing::warn!(plugin = %name, error = %format!("{e:#}"), "new plugin version refused; the running one stays")
                }
            }
        }
    }
}
