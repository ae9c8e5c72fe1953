//! The operator as a whole: its plugins (the built-in defaults, overridden or extended from `--plugin-dir`),
//! kept current while running, and one set of controllers per plugin.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, bail};
use futures::FutureExt;

use crate::capabilities::Grants;
use crate::controllers::{self, Settings};
use crate::defaults;
use crate::platform::{Platform, PlatformOptions};
use crate::runtime::{LoadedPlugin, PluginRegistry, PluginSpec, Runtime};

/// Where plugins come from and what they may do.
#[derive(Debug, Clone, Default)]
pub struct PluginSources {
    /// `<name>.wasm` files: a name of a built-in plugin replaces it, other names are added. Either way a file
    /// gets only the grants `extra_grants` gives its name (none by default: deny by default); the built-ins'
    /// grants belong to the built-in bytes.
    pub plugin_dir: Option<PathBuf>,
    /// Grants for plugins from the plugin directory, by plugin name (`--grant NAME=GRANT,…`).
    pub extra_grants: HashMap<String, Vec<String>>,
    /// Digests (`sha256:<hex>`) a plugin must have for its grants to apply (`--grant NAME@sha256:<hex>=…`): a
    /// file of that name with other bytes is refused, not run with the grants.
    pub pinned_digests: HashMap<String, String>,
    /// Kinds besides the eight `omni.texashpc.com` kinds that plugins may reconcile (`--allow-kind GROUP/KIND`).
    /// Core kinds never.
    pub allowed_kinds: Vec<(String, String)>,
    /// Where Plugin artifacts are cached by digest; a pre-seeded one serves air-gapped clusters
    /// (`--plugin-cache`).
    pub artifact_cache: Option<PathBuf>,
}

impl PluginSources {
    fn grants_for(&self, name: &str) -> Result<Grants> {
        let grants = self.extra_grants.get(name).cloned().unwrap_or_default();
        Grants::parse(&grants).with_context(|| format!("grants for plugin {name:?}"))
    }

    /// Whether a plugin may reconcile `group`/`kind`: one of the operator's kinds, or one an administrator
    /// allowed; never a core kind, whatever the configuration says.
    fn serves(&self, group: &str, kind: &str) -> bool {
        crate::runtime::serves_kind(&self.allowed_kinds, group, kind)
    }

    /// Refuses a plugin that reconciles a kind the operator does not serve, or one another plugin (by another
    /// name) already reconciles.
    fn admit(&self, registry: &PluginRegistry, plugin: &LoadedPlugin) -> Result<()> {
        for gvk in &plugin.info().kinds {
            if !self.serves(&gvk.group, &gvk.kind) {
                let group = if gvk.group.is_empty() {
                    "core"
                } else {
                    &gvk.group
                };
                bail!(
                    "plugin {:?} reconciles {group}/{}, which this operator does not serve: plugins reconcile the \
                     {} kinds and kinds an administrator allows with --allow-kind (never core kinds)",
                    plugin.name(),
                    gvk.kind,
                    omni_api::GROUP
                );
            }
            for other in registry.names().iter().filter(|n| *n != plugin.name()) {
                let Some(other) = registry.get(other) else {
                    continue;
                };
                if other
                    .info()
                    .kinds
                    .iter()
                    .any(|k| k.group == gvk.group && k.kind == gvk.kind)
                {
                    bail!(
                        "plugins {:?} and {:?} both reconcile {}/{}; one plugin per kind: remove one of them",
                        other.name(),
                        plugin.name(),
                        gvk.group,
                        gvk.kind
                    );
                }
            }
        }
        Ok(())
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
    refused: Vec<(String, String)>,
    /// Whether the platform has resolved the Plugin and binding objects into routes once (readiness).
    routes_resolved: Arc<AtomicBool>,
}

/// What `run` and `dev` configure alike, turned into the controllers' settings in one place
/// ([`HostConfig::settings`]), so the two commands assemble the same host.
pub struct HostConfig {
    /// The namespaces watched.
    pub namespaces: controllers::scope::Namespaces,
    /// A shard's label selector (`--watch-label-selector`).
    pub shard: Option<String>,
    /// Reconciles of one kind at once (`--concurrent`).
    pub concurrency: u16,
    /// The cap on an object's retry backoff (`--max-retry-delay`).
    pub max_retry_delay: std::time::Duration,
    /// Omni's zstd dictionary, for the content Omni stores compressed.
    pub omni_dictionary: Option<omni_wire::compression::Dictionary>,
    /// Directories plugins granted `files` may read (`--template-root`).
    pub template_roots: Vec<PathBuf>,
    /// The Helm releases the worker converges (or why none can proceed).
    pub releases: Arc<crate::helm::releases::Releases>,
    /// The chart sources releases may come from, and the namespaces they may live in.
    pub chart_sources: crate::capabilities::ChartSources,
    pub target_namespaces: crate::capabilities::TargetNamespaces,
    /// `--helm-default-service-account`.
    pub default_service_account: Option<String>,
    /// `--events-addr`: Events forwarded to Flux's notification-controller.
    pub events_forwarder: Option<Arc<controllers::notify::Forwarder>>,
    /// Where the controllers count (`/metrics`).
    pub metrics: Arc<controllers::metrics::Metrics>,
    /// `--deletion-protection-default`: new OmniClusters and OmniHelmReleases are protected from deletion unless
    /// they say otherwise ([`crate::admission::guard`]).
    pub deletion_protection_default: bool,
}

impl HostConfig {
    /// The controllers' settings: pooled Omni clients, the Helm releases under the operator's source and
    /// namespace policy, the template roots, and the metrics.
    pub fn settings(self) -> Settings {
        Settings {
            namespaces: self.namespaces,
            shard: self.shard,
            concurrency: self.concurrency.max(1),
            max_retry_delay: self.max_retry_delay,
            omni: Arc::new(crate::omni::OmniConnections::new(self.omni_dictionary)),
            template_roots: crate::capabilities::TemplateRoots::new(self.template_roots),
            helm: crate::capabilities::HelmSettings {
                releases: self.releases,
                sources: self.chart_sources,
                namespaces: self.target_namespaces,
                default_service_account: self.default_service_account,
                ..Default::default()
            },
            metrics: self.metrics,
            events_forwarder: self.events_forwarder,
            new_object_annotation: self.deletion_protection_default.then(|| {
                controllers::NewObjectAnnotation {
                    kinds: crate::admission::guard::GUARDED
                        .iter()
                        .map(|k| (omni_api::GROUP.to_string(), k.to_string()))
                        .collect(),
                    key: crate::admission::guard::PROTECTION.into(),
                    value: "enabled".into(),
                }
            }),
            ..Settings::default()
        }
    }
}

impl Operator {
    /// An operator serving the plugins of `registry`, loaded already (the test stack's), with no plugin
    /// directory.
    pub fn from_registry(runtime: Runtime, registry: Arc<PluginRegistry>) -> Self {
        Operator {
            runtime,
            registry,
            sources: PluginSources::default(),
            refused: Vec::new(),
            routes_resolved: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Loads every plugin: built-ins first, then the plugin directory's files over them. A plugin that fails to
    /// load (not a component, ungranted imports, a `describe` that never answers, a kind it may not reconcile) is
    /// reported and skipped; the others serve. A built-in replaced by a file that fails keeps serving.
    pub async fn load(runtime: Runtime, sources: PluginSources) -> Result<Self> {
        let registry = Arc::new(PluginRegistry::new());
        let mut refused = Vec::new();
        for d in defaults::PLUGINS {
            let spec = d.spec()?;
            match runtime.load(spec).await {
                Ok(plugin) => {
                    registry.install(plugin);
                }
                Err(e) => {
                    tracing::error!(plugin = d.name, error = %e, "built-in plugin refused; the others serve");
                    refused.push((d.name.to_string(), format!("{e}")));
                }
            }
        }
        let files = match sources.scan() {
            Ok(files) => files,
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), "cannot read the plugin directory; serving the built-in plugins");
                Vec::new()
            }
        };
        for (name, path, _) in files {
            match load_file(&runtime, &sources, &registry, &name, &path).await {
                Ok(plugin) => install(&registry, plugin),
                Err(e) => {
                    tracing::error!(plugin = %name, error = %format!("{e:#}"), "plugin refused; the others serve");
                    refused.push((name, format!("{e:#}")));
                }
            }
        }
        if registry.names().is_empty() {
            bail!("no plugins to run");
        }
        Ok(Operator {
            runtime,
            registry,
            sources,
            refused,
            routes_resolved: Arc::new(AtomicBool::new(false)),
        })
    }

    /// Set once the plugin platform has published the routes its Plugins and bindings name: before that,
    /// webhooks and controllers would answer every namespace with the built-ins.
    pub fn routes_resolved(&self) -> Arc<AtomicBool> {
        self.routes_resolved.clone()
    }

    /// Plugins that were refused at start-up, with the reason.
    pub fn refused(&self) -> &[(String, String)] {
        &self.refused
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

    /// Runs every kind's controllers, the plugin platform (Plugin and binding objects), and swaps in changed
    /// plugin files, until `shutdown` resolves.
    pub async fn run(
        &self,
        client: kube::Client,
        settings: Settings,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<()> {
        let shutdown = shutdown.boxed().shared();
        let platform = self.start_platform(
            client.clone(),
            &settings.manager,
            Arc::new(AtomicBool::new(true)),
            shutdown.clone(),
        );
        let ran = self.run_controllers(client, settings, shutdown).await;
        if ran.is_ok() {
            // The controllers ended on the shutdown signal, and so does the platform: it is waited for, so that
            // nothing reads from the API server once `run` returns (a `dev` session stops its simulators next).
            let _ = platform.await;
        } else {
            // The controllers failed without a shutdown: the platform would run on, so it is stopped here and the
            // failure returned at once (the process exits; a pod restarts).
            platform.abort();
        }
        ran
    }

    /// Starts the plugin platform: Plugin and binding objects resolved into the registry's routes, so webhooks
    /// and controllers call the versions the bindings name. `writes` says whether it may also write their
    /// status and Events: a standby replica resolves routes (its webhooks need them) but leaves writing to the
    /// leader.
    pub fn start_platform(
        &self,
        client: kube::Client,
        manager: &str,
        writes: Arc<AtomicBool>,
        shutdown: impl std::future::Future<Output = ()> + Clone + Send + Sync + 'static,
    ) -> tokio::task::JoinHandle<()> {
        let options = PlatformOptions {
            cache: self
                .sources
                .artifact_cache
                .clone()
                .map(crate::distribution::ArtifactCache::new),
            allowed_kinds: self.sources.allowed_kinds.clone(),
            manager: manager.to_string(),
            writes,
            resolved: self.routes_resolved.clone(),
        };
        self.start_platform_with(client, options, shutdown)
    }

    /// [`Operator::start_platform`] with options of the caller's (the test stack's).
    pub fn start_platform_with(
        &self,
        client: kube::Client,
        options: PlatformOptions,
        shutdown: impl std::future::Future<Output = ()> + Clone + Send + Sync + 'static,
    ) -> tokio::task::JoinHandle<()> {
        // The platform is supervised: if it ever panics it starts again (from the objects as they are), rather
        // than leaving routes frozen and rollbacks unwatched while the operator looks healthy.
        let (platform_client, runtime, registry, stop) = (
            client.clone(),
            self.runtime.clone(),
            self.registry.clone(),
            shutdown.clone(),
        );
        let platform = tokio::spawn(async move {
            loop {
                let platform = Platform::new(
                    platform_client.clone(),
                    runtime.clone(),
                    registry.clone(),
                    options.clone(),
                );
                match tokio::spawn(platform.run(stop.clone())).await {
                    Ok(Ok(())) => return,
                    Ok(Err(e)) => {
                        tracing::error!(error = %format!("{e:#}"), "the plugin platform stopped; starting it again")
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "the plugin platform panicked; starting it again")
                    }
                }
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(5)) => {}
                    _ = stop.clone() => return,
                }
            }
        });
        if self.sources.plugin_dir.is_some() {
            // A plugin that appears while running gets controllers of its own: the supervisor sees the new kinds.
            let (runtime, sources, registry, stop) = (
                self.runtime.clone(),
                self.sources.clone(),
                self.registry.clone(),
                shutdown.clone(),
            );
            tokio::spawn(async move {
                tokio::select! {
                    _ = watch_plugin_dir(runtime, sources, registry) => {}
                    _ = stop => {}
                }
            });
        }
        platform
    }

    /// Runs every kind's controllers until `shutdown` resolves (the platform started on its own).
    pub async fn run_controllers(
        &self,
        client: kube::Client,
        settings: Settings,
        shutdown: impl std::future::Future<Output = ()> + Clone + Send + Sync + 'static,
    ) -> Result<()> {
        let tasks = controllers::spawn_all(&client, &self.registry, &settings, shutdown);
        let mut ran = Ok(());
        for t in tasks {
            let done = t
                .await
                .context("a controller task panicked")
                .and_then(|r| r);
            if ran.is_ok() {
                ran = done;
            }
        }
        // The controllers are done with their watches: they end now, not at their next subscriber check.
        settings.watches.stop().await;
        ran
    }
}

/// Loads a plugin file with the grants configured for its name, checks a pinned digest and the kinds it
/// reconciles.
async fn load_file(
    runtime: &Runtime,
    sources: &PluginSources,
    registry: &PluginRegistry,
    name: &str,
    path: &Path,
) -> Result<Arc<LoadedPlugin>> {
    let spec = PluginSpec::from_file(name, path)
        .with_context(|| format!("reading plugin {}", path.display()))?;
    let grants = sources.grants_for(name)?;
    let plugin = runtime
        .load(spec.grants(grants))
        .await
        .with_context(|| format!("loading plugin {}", path.display()))?;
    if let Some(pinned) = sources.pinned_digests.get(name) {
        let digest = plugin.digest().to_string();
        if !pinned.eq_ignore_ascii_case(&digest) {
            bail!(
                "plugin {} has digest {digest}, but its grants are pinned to {pinned}; it was not started",
                path.display()
            );
        }
    }
    sources.admit(registry, &plugin)?;
    Ok(plugin)
}

/// Serves `plugin` under its name; replacing a built-in (or any running version) is said at WARN with both
/// digests, since the new bytes now act on every object of its kinds.
fn install(registry: &PluginRegistry, plugin: Arc<LoadedPlugin>) {
    let name = plugin.name().to_owned();
    let digest = plugin.digest().to_string();
    let grants = plugin.grants().describe().join(",");
    if let Some(previous) = registry.install(plugin) {
        let built_in = defaults::PLUGINS.iter().any(|d| d.name == name);
        tracing::warn!(
            plugin = %name,
            from = %previous.digest(),
            to = %digest,
            built_in,
            grants = %grants,
            "plugin replaced by a file from the plugin directory (a development source: not signature-verified; \
             production plugins come from Plugin objects)"
        );
    } else {
        tracing::warn!(plugin = %name, %digest, grants = %grants, "plugin added from the plugin directory (a development source: not signature-verified; production plugins come from Plugin objects)");
    }
}

/// Polls the plugin directory; a changed file is loaded and, if it loads, replaces the running version (calls in
/// flight finish on the old one). A file that fails to load leaves the running version in place.
async fn watch_plugin_dir(runtime: Runtime, sources: PluginSources, registry: Arc<PluginRegistry>) {
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
            match load_file(&runtime, &sources, &registry, &name, &path).await {
                Ok(plugin) => install(&registry, plugin),
                Err(e) => {
                    tracing::warn!(plugin = %name, error = %format!("{e:#}"), "new plugin version refused; the running one stays")
                }
            }
        }
    }
}

/// A kube client for the cluster a kubeconfig (YAML) names, on the current Tokio runtime.
pub async fn client(kubeconfig: &str) -> anyhow::Result<kube::Client> {
    let config =
        kube::config::Kubeconfig::from_yaml(kubeconfig).context("parsing the kubeconfig")?;
    let config =
        kube::Config::from_custom_kubeconfig(config, &kube::config::KubeConfigOptions::default())
            .await
            .context("a client configuration from the kubeconfig")?;
    kube::Client::try_from(config).context("a kube client")
}
