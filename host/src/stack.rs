//! The simulated world the operator runs in, built one way for `omni-operator dev`, the end-to-end tests and the
//! benchmarks, so all of them stand up the same thing:
//!
//! - the management cluster: a kube-sim with the CRDs installed;
//! - Omni: an omni-sim, with a service-account key minted for the operator;
//! - optionally the workload cluster: a second kube-sim behind "Omni's Kubernetes proxy", on plain HTTP with
//!   anonymous requests refused, accepting exactly the tokens in the kubeconfigs omni-sim issues (while they are
//!   unexpired and their cluster still exists), with the RBAC objects the caller brings;
//! - optionally the key in a Secret and an OmniConnection to omni-sim naming it.
//!
//! [`HostBuilder`] then runs plugins and their controllers against the management cluster, either on the
//! caller's Tokio runtime or on one of its own that can be killed like a crashed process.

use std::future::Future;
use std::sync::Arc;

use anyhow::{Context, Result};
use futures::FutureExt;
use serde_json::{Value, json};

use crate::controllers::Settings;
use crate::defaults;
use crate::omni::connections::DEFAULT_SECRET_KEY;
use crate::operator::Operator;
use crate::runtime::{LoadedPlugin, PluginRegistry, PluginSpec, Runtime};

/// The name the operator's service account gets in Omni unless the builder says otherwise.
pub const SERVICE_ACCOUNT: &str = "omni-operator";

/// A Secret holding the minted key and an OmniConnection naming it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionRef {
    pub namespace: String,
    pub name: String,
    /// The Secret's name; the key is stored under `serviceAccountKey` (the API's default key).
    pub secret: String,
}

/// What to start; [`StackBuilder::start`] starts it.
pub struct StackBuilder {
    kube: kube_sim::Builder,
    omni: omni_sim::Builder,
    workload: Option<(kube_sim::Builder, Vec<Value>)>,
    account: (String, omni_sim::Role),
    namespaces: Vec<String>,
    connection: Option<ConnectionRef>,
}

impl Default for StackBuilder {
    fn default() -> Self {
        StackBuilder {
            kube: kube_sim::KubeSim::builder(),
            omni: omni_sim::OmniSim::builder(),
            workload: None,
            account: (SERVICE_ACCOUNT.to_string(), omni_sim::Role::Operator),
            namespaces: Vec::new(),
            connection: None,
        }
    }
}

impl StackBuilder {
    /// The management cluster's options (address, TLS, history).
    pub fn kube(mut self, builder: kube_sim::Builder) -> Self {
        self.kube = builder;
        self
    }

    /// Omni's options. With a workload cluster, its Kubernetes proxy URL is set to that cluster's.
    pub fn omni(mut self, builder: omni_sim::Builder) -> Self {
        self.omni = builder;
        self
    }

    /// Adds the workload cluster, with `objects` (its RBAC, namespaces) applied before anything reaches it. Its
    /// workload controllers run (one simulated Node), so what is installed there becomes Ready as on a real
    /// cluster; the management cluster has none, as the operator's own objects need none.
    pub fn workload_cluster(mut self, objects: Vec<Value>) -> Self {
        // HTTPS, as Omni's proxy: client-go (Helm, kubectl) sends no bearer token over plain HTTP.
        let builder = kube_sim::KubeSim::builder()
            .anonymous(kube_sim::Anonymous::Reject)
            .workloads(kube_sim::workloads::WorkloadOptions::default());
        self.workload = Some((builder, objects));
        self
    }

    /// The service account the key is minted for, and its role (default: `omni-operator`, Operator).
    pub fn service_account(mut self, name: &str, role: omni_sim::Role) -> Self {
        self.account = (name.to_string(), role);
        self
    }

    /// A namespace created in the management cluster.
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespaces.push(namespace.to_string());
        self
    }

    /// The key in Secret `secret` and an OmniConnection `name` to omni-sim naming it, in `namespace` (created).
    pub fn connection(mut self, namespace: &str, name: &str, secret: &str) -> Self {
        self.connection = Some(ConnectionRef {
            namespace: namespace.to_string(),
            name: name.to_string(),
            secret: secret.to_string(),
        });
        self
    }

    pub async fn start(self) -> Result<Stack> {
        let workload = match self.workload {
            Some((builder, objects)) => {
                let workload = builder
                    .start()
                    .await
                    .context("starting the workload-cluster simulator")?;
                for obj in &objects {
                    workload
                        .apply(obj)
                        .await
                        .context("applying the workload cluster's objects")?;
                }
                Some(workload)
            }
            None => None,
        };
        let omni = match &workload {
            Some(w) => self
                .omni
                .kubernetes_proxy_url(&w.url())
                .kubernetes_proxy_ca(w.ca_pem()),
            None => self.omni,
        };
        let omni = omni.start().await.context("starting the Omni simulator")?;
        if let Some(workload) = &workload {
            trust_omni_tokens(workload, &omni);
        }
        let kube = management_cluster(self.kube).await?;
        let key = omni.mint_key(&self.account.0, self.account.1);

        let mut namespaces = self.namespaces;
        if let Some(c) = &self.connection
            && !namespaces.contains(&c.namespace)
        {
            namespaces.push(c.namespace.clone());
        }
        for ns in &namespaces {
            kube.apply(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
                .await
                .with_context(|| format!("creating namespace {ns}"))?;
        }
        if let Some(c) = &self.connection {
            for obj in connection_objects(c, &omni.endpoint(), &key) {
                kube.apply(&obj).await.with_context(|| {
                    format!("creating OmniConnection {}/{}", c.namespace, c.name)
                })?;
            }
        }
        Ok(Stack {
            kube,
            omni,
            workload,
            key,
            connection: self.connection,
        })
    }
}

/// The running simulators. Dropping it stops them; [`Stack::stop`] waits until they have.
pub struct Stack {
    /// The management cluster.
    pub kube: kube_sim::KubeSim,
    pub omni: omni_sim::OmniSim,
    /// The workload cluster behind Omni's Kubernetes proxy, when the builder asked for one.
    pub workload: Option<kube_sim::KubeSim>,
    /// The service-account key minted for the operator.
    pub key: String,
    /// The OmniConnection created, if any.
    pub connection: Option<ConnectionRef>,
}

impl Stack {
    pub fn builder() -> StackBuilder {
        StackBuilder::default()
    }

    /// The management cluster's admin kubeconfig, for a host to connect with.
    pub fn kubeconfig(&self) -> String {
        self.kube.kubeconfig(&self.kube.admin())
    }

    pub async fn stop(self) {
        self.kube.stop().await;
        self.omni.stop().await;
        if let Some(workload) = self.workload {
            workload.stop().await;
        }
    }
}

/// Starts a kube-sim and installs every CRD of the API.
pub async fn management_cluster(builder: kube_sim::Builder) -> Result<kube_sim::KubeSim> {
    let kube = builder
        .start()
        .await
        .context("starting the Kubernetes simulator")?;
    for crd in omni_api::crds::all() {
        kube.apply(&crd).await.context("installing the CRDs")?;
    }
    Ok(kube)
}

/// The workload cluster accepts a bearer token exactly when omni-sim signed it and it is still valid, as the
/// real Kubernetes proxy of Omni does.
fn trust_omni_tokens(workload: &kube_sim::KubeSim, omni: &omni_sim::OmniSim) {
    let jwt = omni.jwt_verifier();
    workload.set_token_verifier(move |token: &str| {
        jwt.verify(token).ok().map(|t| kube_sim::UserInfo {
            name: t.user,
            groups: t.groups,
            ..kube_sim::UserInfo::default()
        })
    });
}

fn connection_objects(c: &ConnectionRef, endpoint: &str, key: &str) -> [Value; 2] {
    [
        json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": c.secret, "namespace": c.namespace},
            "stringData": {DEFAULT_SECRET_KEY: key}}),
        json!({"apiVersion": omni_api::API_VERSION, "kind": "OmniConnection",
            "metadata": {"name": c.name, "namespace": c.namespace},
            "spec": {"endpoint": endpoint, "auth": {"serviceAccountSecretRef": {"name": c.secret, "key": DEFAULT_SECRET_KEY}}}}),
    ]
}

// ---------------------------------------------------------------------------------------------------------------
// The host.

enum Source {
    Spec(Box<PluginSpec>),
    Loaded(Arc<LoadedPlugin>),
}

/// Which plugins a host runs, with which settings. Each plugin gets its controllers, as `Operator::run` starts
/// them; unlike the operator, nothing is read from a plugin directory.
pub struct HostBuilder {
    runtime: Runtime,
    plugins: Vec<Source>,
    settings: Settings,
    /// Runs the plugin platform (Plugin and binding objects) beside the controllers.
    platform: Option<crate::platform::PlatformOptions>,
}

impl HostBuilder {
    /// Plugins are compiled (and cached) by `runtime`.
    pub fn new(runtime: Runtime) -> Self {
        HostBuilder {
            runtime,
            plugins: Vec::new(),
            settings: Settings::default(),
            platform: None,
        }
    }

    /// Every built-in plugin with its built-in grants.
    pub fn built_ins(self) -> Result<Self> {
        let names: Vec<&str> = defaults::PLUGINS.iter().map(|p| p.name).collect();
        self.built_in(&names)
    }

    /// The named built-in plugins with their built-in grants.
    pub fn built_in(self, names: &[&str]) -> Result<Self> {
        self.built_in_with(names, |spec| spec)
    }

    /// The named built-in plugins, their specs adjusted by `adjust` (call limits, say).
    pub fn built_in_with(
        mut self,
        names: &[&str],
        adjust: impl Fn(PluginSpec) -> PluginSpec,
    ) -> Result<Self> {
        for name in names {
            let plugin = defaults::PLUGINS
                .iter()
                .find(|p| p.name == *name)
                .with_context(|| format!("{name:?} is not a built-in plugin"))?;
            self.plugins
                .push(Source::Spec(Box::new(adjust(plugin.spec()?))));
        }
        Ok(self)
    }

    /// A plugin to compile and serve.
    pub fn plugin(mut self, spec: PluginSpec) -> Self {
        self.plugins.push(Source::Spec(Box::new(spec)));
        self
    }

    /// A plugin loaded already (a native build, say).
    pub fn loaded(mut self, plugin: Arc<LoadedPlugin>) -> Self {
        self.plugins.push(Source::Loaded(plugin));
        self
    }

    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    /// Serves Plugin and binding objects too, as the operator does.
    pub fn platform(mut self, options: crate::platform::PlatformOptions) -> Self {
        self.platform = Some(options);
        self
    }

    /// Loads every plugin into one registry; the first that fails to load is the error.
    async fn registry(runtime: Runtime, plugins: Vec<Source>) -> Result<Arc<PluginRegistry>> {
        let registry = Arc::new(PluginRegistry::new());
        for source in plugins {
            let plugin = match source {
                Source::Spec(spec) => {
                    let name = spec.name.clone();
                    runtime
                        .load(*spec)
                        .await
                        .with_context(|| format!("loading plugin {name:?}"))?
                }
                Source::Loaded(plugin) => plugin,
            };
            registry.install(plugin);
        }
        Ok(registry)
    }

    /// Loads every plugin; the first that fails to load is the error.
    pub async fn load(self) -> Result<LoadedHost> {
        let registry = Self::registry(self.runtime.clone(), self.plugins).await?;
        Ok(LoadedHost {
            operator: Operator::from_registry(self.runtime, registry),
            settings: self.settings,
        })
    }

    /// Loads the plugins and runs their controllers on the current Tokio runtime until `shutdown` resolves or a
    /// controller fails.
    pub async fn run(
        self,
        client: kube::Client,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<()> {
        self.load().await?.run(client, shutdown).await
    }

    /// Loads the plugins (failing here if one does not load), then runs their controllers against the cluster
    /// `kubeconfig` names on a Tokio runtime of the host's own, as a separate operator process would.
    pub async fn start(self, kubeconfig: String) -> Result<Host> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("omni-operator")
            .enable_all()
            .build()
            .context("the host's Tokio runtime")?;
        let mut host = Host {
            runtime: Some(runtime),
            registry: Arc::new(PluginRegistry::new()),
        };
        let (plugin_runtime, plugins, settings, platform) =
            (self.runtime, self.plugins, self.settings, self.platform);
        let platform_runtime = plugin_runtime.clone();
        // The client and the registry are made on the host's runtime: a kube client's background tasks live on
        // the runtime that made it, and must die with the host, not outlive it on the caller's.
        let ready = host.spawn(async move {
            let client = client(&kubeconfig).await?;
            let registry = Self::registry(plugin_runtime, plugins).await?;
            Ok::<_, anyhow::Error>((client, registry))
        })?;
        let (client, registry) = ready
            .await
            .context("loading the host's plugins panicked")??;
        host.registry = registry.clone();
        host.spawn(async move {
            // The operator `run` and `dev` run, over these plugins; it never stops (the host is killed).
            let operator = Operator::from_registry(platform_runtime, registry);
            if let Some(options) = platform {
                drop(operator.start_platform_with(
                    client.clone(),
                    options,
                    std::future::pending::<()>(),
                ));
            }
            if let Err(e) = operator
                .run_controllers(client, settings, std::future::pending::<()>())
                .await
            {
                tracing::error!(error = %format!("{e:#}"), "controllers stopped");
            }
        })?;
        Ok(host)
    }
}

/// A host whose plugins are loaded, ready to run their controllers.
pub struct LoadedHost {
    operator: Operator,
    settings: Settings,
}

impl LoadedHost {
    pub fn registry(&self) -> &Arc<PluginRegistry> {
        self.operator.registry()
    }

    /// Runs every plugin's controllers on the current Tokio runtime until `shutdown` resolves or one fails, as
    /// the operator's `run` does (without the plugin platform).
    pub async fn run(
        self,
        client: kube::Client,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<()> {
        let shutdown = shutdown.boxed().shared();
        self.operator
            .run_controllers(client, self.settings, shutdown)
            .await
    }
}

/// A client for the cluster a kubeconfig's current context names ([`crate::operator::client`]).
pub use crate::operator::client;

/// An operator host on a runtime of its own. Dropping it (or [`Host::kill`]) ends it as a crash would: no
/// graceful shutdown, in-flight calls dropped where they stand.
pub struct Host {
    runtime: Option<tokio::runtime::Runtime>,
    registry: Arc<PluginRegistry>,
}

impl Host {
    /// The plugins the controllers call: installing a plugin under a served name swaps it in.
    pub fn registry(&self) -> &Arc<PluginRegistry> {
        &self.registry
    }

    fn spawn<F>(&self, task: F) -> Result<tokio::task::JoinHandle<F::Output>>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let runtime = self.runtime.as_ref().context("the host was stopped")?;
        Ok(runtime.spawn(task))
    }

    pub fn kill(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        // Not a blocking shutdown: the caller is usually inside another Tokio runtime, where blocking panics.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.stop_now();
    }
}
