//! `omni-operator`: the operator binary.
//!
//! * `run` — the operator, in a cluster or against a kubeconfig;
//! * `dev` — the whole system on the embedded Kubernetes simulator, with manifests applied and progress shown;
//! * `crds` — the CRDs, for `kubectl apply -f -`;
//! * `plugin inspect|reconcile` — what a plugin author needs first: does my component load under these grants,
//!   and what does it return?

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod plugin_cli;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use futures::FutureExt;
use omni_operator::capabilities::{CallObject, Grants, HostServices};
use omni_operator::controllers::Settings;
use omni_operator::controllers::scope::Namespaces;
use omni_operator::endpoints;
use omni_operator::operator::{HostConfig, Operator, PluginSources};
use omni_operator::runtime::{CallError, LoadedPlugin, PluginSpec, Runtime, RuntimeConfig};
use serde_json::json;

#[derive(Parser)]
#[command(version, about = "The omni-cluster-operator host")]
struct Cli {
    /// Keep precompiled plugins here across runs.
    #[arg(long, env = "OMNI_OPERATOR_CACHE_DIR", global = true)]
    cache_dir: Option<PathBuf>,
    /// Log lines as text or as one JSON object per line (RUST_LOG sets the level; default warn).
    #[arg(
        long,
        env = "OMNI_OPERATOR_LOG_FORMAT",
        value_enum,
        default_value = "text",
        global = true
    )]
    log_format: LogFormat,
    #[command(flatten)]
    omni: OmniArgs,
    #[command(flatten)]
    helm: HelmArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum LogFormat {
    Text,
    Json,
}

/// How long Helm actions get to end after their cancellation at shutdown.
const HELM_SHUTDOWN_GRACE: Duration = Duration::from_secs(20);

#[derive(clap::Args, Clone)]
struct HelmArgs {
    /// libhelm_c (Helm's Go SDK as a C library; `tools/fetch-helm-c` fetches it). Helm runs in a worker process
    /// of this binary; without the library every other kind is still served.
    #[arg(long, env = "HELM_C_LIB", global = true)]
    helm_c_lib: Option<PathBuf>,
    /// Helm actions running at once (never two on one release).
    #[arg(long, default_value_t = 4, global = true)]
    helm_concurrency: usize,
    /// The Helm worker's memory limit in MiB: a worker that grows past it is stopped, the actions it ran fail
    /// with a message saying so, and the next action starts a new worker (0: no limit).
    #[arg(long, default_value_t = 1024, global = true)]
    helm_worker_memory_limit: u64,
    /// A chart source OmniHelmReleases may install from (repeatable, or comma-separated in the environment
    /// variable): `https://charts.example.com/stable`, `oci://registry.example.com/charts`. A chart is allowed when
    /// it lies under one, by scheme, host, port and whole path segments. Without any, every source is allowed.
    #[arg(
        long = "helm-chart-source",
        env = "HELM_CHART_SOURCES",
        value_delimiter = ',',
        global = true
    )]
    helm_chart_sources: Vec<String>,
    /// An OCI registry (`host:port`) reached over plain HTTP rather than HTTPS (repeatable), as Docker's insecure
    /// registries: for registries on a trusted network only.
    #[arg(
        long = "helm-plain-http-registry",
        env = "HELM_PLAIN_HTTP_REGISTRIES",
        value_delimiter = ',',
        global = true
    )]
    helm_plain_http_registries: Vec<String>,
    /// A workload-cluster namespace Helm releases may live in (repeatable, or comma-separated in the environment
    /// variable): a release elsewhere (`kube-system`, say) is refused. Without any, every namespace is allowed.
    #[arg(
        long = "helm-target-namespace",
        env = "HELM_TARGET_NAMESPACES",
        value_delimiter = ',',
        global = true
    )]
    helm_target_namespaces: Vec<String>,
    /// A ServiceAccount every OmniHelmRelease that names none (`spec.serviceAccountName`) impersonates in its
    /// release's namespace of the workload cluster (Flux's `--default-service-account`), so no release acts with
    /// the kubeconfig's full identity. The kubeconfig's identity needs the impersonate permission for it.
    #[arg(
        long = "helm-default-service-account",
        env = "HELM_DEFAULT_SERVICE_ACCOUNT",
        global = true
    )]
    helm_default_service_account: Option<String>,
}

impl HelmArgs {
    fn worker(&self) -> anyhow::Result<Option<omni_operator::helm::WorkerOptions>> {
        let Some(lib) = &self.helm_c_lib else {
            return Ok(None);
        };
        Ok(Some(omni_operator::helm::WorkerOptions {
            program: std::env::current_exe()
                .context("finding this binary to run the Helm worker")?,
            lib: lib.clone(),
            concurrency: self.helm_concurrency.max(1),
            memory_limit: Some(self.helm_worker_memory_limit << 20).filter(|l| *l > 0),
            scratch_base: std::env::temp_dir(),
        }))
    }

    /// The operator's chart-source policy, the same for `run` and `dev`.
    fn sources(&self) -> anyhow::Result<omni_operator::capabilities::ChartSources> {
        Ok(
            omni_operator::capabilities::ChartSources::only(&self.helm_chart_sources)
                .map_err(|e| anyhow::anyhow!("--helm-chart-source: {e}"))?
                .with_plain_http(&self.helm_plain_http_registries),
        )
    }

    /// The ServiceAccount releases that name none impersonate, the same for `run` and `dev`.
    fn default_service_account(&self) -> anyhow::Result<Option<String>> {
        let Some(account) = self
            .helm_default_service_account
            .clone()
            .filter(|a| !a.is_empty())
        else {
            return Ok(None);
        };
        omni_operator::capabilities::check_service_account(&account)
            .map_err(|e| anyhow::anyhow!("--helm-default-service-account {account:?}: {e}"))?;
        Ok(Some(account))
    }

    /// The namespaces releases may live in, the same for `run` and `dev`.
    fn namespaces(&self) -> anyhow::Result<omni_operator::capabilities::TargetNamespaces> {
        omni_operator::capabilities::TargetNamespaces::only(&self.helm_target_namespaces)
            .map_err(|e| anyhow::anyhow!("--helm-target-namespace: {e}"))
    }
}

#[derive(clap::Args, Clone)]
struct OmniArgs {
    /// Omni's zstd dictionary (`config.1.zdict` from Omni's client): ConfigPatch and KubernetesManifestGroup
    /// content Omni stores compressed is read with it; without it such content is reported unreadable.
    #[arg(long, env = "OMNI_ZSTD_DICTIONARY", global = true)]
    omni_zstd_dictionary: Option<PathBuf>,
    /// A directory OmniClusters may name as `spec.templateRoot` for `file:` patches and manifests (repeatable, or
    /// comma-separated in the environment variable). Without one, every `file:` reference is refused.
    #[arg(
        long = "template-root",
        env = "OMNI_TEMPLATE_ROOTS",
        value_delimiter = ',',
        global = true
    )]
    template_roots: Vec<PathBuf>,
}

impl OmniArgs {
    /// The template roots as absolute paths: a plugin names absolute roots, and a relative flag would otherwise
    /// depend on the directory the operator was started from.
    fn template_roots(&self) -> anyhow::Result<Vec<PathBuf>> {
        self.template_roots
            .iter()
            .map(|p| {
                std::path::absolute(p)
                    .map_err(|e| anyhow::anyhow!("--template-root {}: {e}", p.display()))
            })
            .collect()
    }

    fn dictionary(&self) -> anyhow::Result<Option<omni_wire::compression::Dictionary>> {
        let Some(path) = &self.omni_zstd_dictionary else {
            return Ok(None);
        };
        let bytes = std::fs::read(path)
            .with_context(|| format!("--omni-zstd-dictionary: reading {}", path.display()))?;
        let dictionary = omni_wire::compression::Dictionary::new(bytes)
            .with_context(|| format!("--omni-zstd-dictionary {}", path.display()))?;
        Ok(Some(dictionary))
    }
}

/// Leader election (the Go operator's `--leader-elect`, Lease `5dc6398d.texashpc.com`, client-go's
/// timings). Webhooks, metrics and probes are served by every replica; only the leader reconciles.
#[derive(clap::Args, Clone)]
struct LeaderArgs {
    /// Reconcile only while holding the Lease, so several replicas never write at once.
    #[arg(long)]
    leader_elect: bool,
    /// The Lease's namespace (default: POD_NAMESPACE, then the watched namespace).
    #[arg(long)]
    leader_election_namespace: Option<String>,
    /// How long a Lease not renewed stays held (Go duration).
    #[arg(long, default_value = "15s", value_parser = go_duration)]
    leader_elect_lease_duration: Duration,
    /// How long the leader keeps trying to renew before it stops (shorter than the lease duration).
    #[arg(long, default_value = "10s", value_parser = go_duration)]
    leader_elect_renew_deadline: Duration,
    /// How often candidates try to acquire, and the leader renews.
    #[arg(long, default_value = "2s", value_parser = go_duration)]
    leader_elect_retry_period: Duration,
}

impl LeaderArgs {
    fn config(
        &self,
        namespace: Option<&str>,
        shard: Option<&str>,
    ) -> anyhow::Result<Option<omni_operator::leader::LeaderConfig>> {
        if !self.leader_elect {
            return Ok(None);
        }
        let Some(ns) = own_namespace(self.leader_election_namespace.as_deref(), namespace) else {
            bail!(
                "--leader-elect needs a namespace for its Lease: set --leader-election-namespace or POD_NAMESPACE"
            );
        };
        let mut config = omni_operator::leader::LeaderConfig::new(&ns);
        if let Some(selector) = shard {
            config.name = omni_operator::contract::shard_lease(selector);
        }
        config.lease_duration = self.leader_elect_lease_duration;
        config.renew_deadline = self.leader_elect_renew_deadline;
        config.retry_period = self.leader_elect_retry_period;
        config.check()?;
        Ok(Some(config))
    }
}

/// The namespace the operator's own objects (its Lease, its webhook Secret) live in: the flag, else the pod's
/// namespace (POD_NAMESPACE), else the one namespace it watches.
fn own_namespace(flag: Option<&str>, watched: Option<&str>) -> Option<String> {
    let from_env = std::env::var("POD_NAMESPACE")
        .ok()
        .filter(|n| !n.trim().is_empty());
    flag.map(str::to_string)
        .or(from_env)
        .or(watched.map(str::to_string))
}

/// A Go duration (`15s`, `1m30s`, `500ms`), positive.
fn go_duration(s: &str) -> Result<Duration, String> {
    let nanos = omni_go::parse_duration(s)?;
    if nanos <= 0 {
        return Err(format!("{s:?} must be positive"));
    }
    Ok(Duration::from_nanos(nanos as u64))
}

/// A Go duration, or a bare number of seconds (what `--timeout` took before it took durations).
#[cfg(feature = "dev")]
fn seconds_or_duration(s: &str) -> Result<Duration, String> {
    match s.parse::<u64>() {
        Ok(seconds) => Ok(Duration::from_secs(seconds)),
        Err(_) => go_duration(s),
    }
}

/// The admission webhooks, as the Go operator registered them: served by every replica, with certificates the
/// operator makes and renews itself in a Secret.
#[derive(clap::Args, Clone)]
struct WebhookArgs {
    /// Serve the validating webhooks (`ENABLE_WEBHOOKS=false` turns them off, as for the Go operator).
    #[arg(long, env = "ENABLE_WEBHOOKS", default_value_t = true, action = clap::ArgAction::Set)]
    enable_webhooks: bool,
    /// The webhook server's address (`:9443`, `HOST:PORT`).
    #[arg(long, default_value = ":9443")]
    webhook_bind_address: String,
    /// The namespace of the webhook Service and certificate Secret (default: the operator's namespace).
    #[arg(long)]
    webhook_namespace: Option<String>,
    /// The Service the API server reaches the webhooks through; the serving certificate is for its DNS names.
    #[arg(long, default_value = "omni-operator-webhook-service")]
    webhook_service: String,
    /// The Secret holding the webhook CA and serving certificate (created and renewed by the operator).
    #[arg(long, default_value = "omni-operator-webhook-server-cert")]
    webhook_secret: String,
    /// ValidatingWebhookConfigurations whose caBundle the operator keeps current (repeatable).
    #[arg(
        long = "webhook-configuration",
        default_value = "omni-operator-validating-webhook-configuration"
    )]
    webhook_configurations: Vec<String>,
    /// What a webhook answers when a plugin cannot decide (trap, failure, deadline): Fail refuses the object,
    /// Ignore admits it with a warning.
    #[arg(long, default_value = "Fail")]
    webhook_failure_policy: String,
    /// How long a plugin's validation may take, as a duration (`5s`, `1500ms`); keep it under the webhook
    /// configuration's timeoutSeconds.
    #[arg(long, default_value = "5s", value_parser = go_duration)]
    webhook_deadline: Duration,
    /// The same in milliseconds: the flag's earlier spelling, still taken (not with --webhook-deadline).
    #[arg(long, hide = true, conflicts_with = "webhook_deadline")]
    webhook_deadline_ms: Option<u64>,
}

impl WebhookArgs {
    fn options(
        &self,
        namespace: Option<&str>,
    ) -> anyhow::Result<Option<omni_operator::admission::AdmissionOptions>> {
        use omni_operator::admission::{AdmissionOptions, CertSettings, FailurePolicy};
        if !self.enable_webhooks {
            return Ok(None);
        }
        let failure = FailurePolicy::parse(&self.webhook_failure_policy).with_context(|| {
            format!(
                "--webhook-failure-policy {:?}: expected Fail or Ignore",
                self.webhook_failure_policy
            )
        })?;
        let Some(ns) = own_namespace(self.webhook_namespace.as_deref(), namespace) else {
            bail!(
                "the webhooks need a namespace for their Service and Secret: set --webhook-namespace or POD_NAMESPACE, \
                 or ENABLE_WEBHOOKS=false"
            );
        };
        let service = &self.webhook_service;
        let Some(listen) =
            endpoints::bind_address("--webhook-bind-address", &self.webhook_bind_address)?
        else {
            bail!("--webhook-bind-address 0: to serve no webhooks, set --enable-webhooks=false");
        };
        Ok(Some(AdmissionOptions {
            listen,
            deadline: self
                .webhook_deadline_ms
                .map_or(self.webhook_deadline, Duration::from_millis)
                .max(Duration::from_millis(1)),
            failure,
            certs: CertSettings {
                hosts: vec![
                    format!("{service}.{ns}.svc"),
                    format!("{service}.{ns}.svc.cluster.local"),
                ],
                namespace: ns,
                secret: self.webhook_secret.clone(),
                webhook_configurations: self.webhook_configurations.clone(),
            },
            check_every: Duration::from_secs(3600),
            preview: None,
        }))
    }
}

#[derive(clap::Args, Clone)]
struct SourceArgs {
    /// Plugins (`<name>.wasm`) that replace built-in ones by name or add new ones; watched while running. A file
    /// gets only the grants `--grant` gives its name, never a built-in's.
    #[arg(long)]
    plugin_dir: Option<PathBuf>,
    /// Grants for a plugin from --plugin-dir, as NAME=GRANT[,GRANT...] (repeatable), e.g.
    /// `mine=kube-read:omni.texashpc.com/OmniCluster,clock`. `NAME@sha256:<hex>=…` pins the grants to the
    /// plugin's digest: a file with other bytes is refused.
    #[arg(long = "grant", value_name = "NAME[@DIGEST]=GRANTS")]
    grants: Vec<String>,
    /// A kind besides the eight omni.texashpc.com kinds that plugins may reconcile, as GROUP/KIND (repeatable).
    /// Core kinds are never allowed.
    #[arg(long = "allow-kind", value_name = "GROUP/KIND")]
    allow_kinds: Vec<String>,
    /// Keep Plugin artifacts here by digest. A cache seeded with `omni-operator plugin pull --cache` serves pinned
    /// Plugins without their registry (air-gapped clusters); signatures are verified again from it.
    #[arg(long, env = "OMNI_OPERATOR_PLUGIN_CACHE")]
    plugin_cache: Option<PathBuf>,
}

impl SourceArgs {
    fn sources(&self) -> anyhow::Result<PluginSources> {
        let mut sources = PluginSources {
            plugin_dir: self.plugin_dir.clone(),
            artifact_cache: self.plugin_cache.clone(),
            ..PluginSources::default()
        };
        for g in &self.grants {
            let Some((who, grants)) = g.split_once('=') else {
                bail!("--grant {g:?}: expected NAME=GRANT[,GRANT...]");
            };
            let name = match who.split_once('@') {
                Some((name, digest)) => {
                    let hex = digest.strip_prefix("sha256:").unwrap_or_default();
                    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                        bail!("--grant {g:?}: the digest must be sha256:<64 hex digits>");
                    }
                    sources
                        .pinned_digests
                        .insert(name.to_string(), digest.to_ascii_lowercase());
                    name
                }
                None => who,
            };
            let grants: Vec<String> = grants
                .split(',')
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect();
            // Checked here so a typo stops start-up with the grant named, instead of a plugin refused later.
            Grants::parse(&grants).with_context(|| format!("--grant {g:?}"))?;
            sources
                .extra_grants
                .entry(name.to_string())
                .or_default()
                .extend(grants);
        }
        for k in &self.allow_kinds {
            let Some((group, kind)) = k
                .split_once('/')
                .filter(|(g, k)| !g.is_empty() && !k.is_empty())
            else {
                bail!("--allow-kind {k:?}: expected GROUP/KIND, e.g. example.com/Widget");
            };
            if group == "core" {
                bail!("--allow-kind {k:?}: core kinds are never reconciled by plugins");
            }
            sources
                .allowed_kinds
                .push((group.to_string(), kind.to_string()));
        }
        Ok(sources)
    }
}

#[derive(Subcommand)]
#[allow(
    clippy::large_enum_variant,
    reason = "parsed once at start; the size does not matter"
)]
enum Command {
    /// Run the operator against a cluster (in-cluster configuration, or a kubeconfig).
    Run {
        /// Kubeconfig to use instead of the in-cluster configuration (or $KUBECONFIG).
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// Watch only this namespace, or these (`a,b,c`) (default: POD_NAMESPACE, then the service account's
        /// namespace).
        #[arg(long, conflicts_with = "all_namespaces")]
        namespace: Option<String>,
        /// Watch every namespace.
        #[arg(long)]
        all_namespaces: bool,
        /// Reconcile only the objects this label selector matches, as a shard (Flux's flag and syntax:
        /// `sharding.fluxcd.io/key=shard1`, `!sharding.fluxcd.io/key` for the objects no shard takes). With
        /// --leader-elect the shard has its own Lease.
        #[arg(long)]
        watch_label_selector: Option<String>,
        /// Reconciles of one kind running at once (Flux's flag name).
        #[arg(long, default_value_t = omni_operator::controllers::DEFAULT_CONCURRENCY)]
        concurrent: u16,
        /// The longest an object that keeps failing waits for its next try (Flux's flag name; a Go duration).
        /// Failures back off from 5 ms, doubling, up to this: it bounds how long the fleet takes to recover once
        /// an outage ends.
        #[arg(long, default_value = "2m", value_parser = go_duration)]
        max_retry_delay: Duration,
        /// New OmniClusters and OmniHelmReleases are protected from deletion
        /// (omni.texashpc.com/deletion-protection: enabled, set with their finalizer) unless they set the
        /// annotation themselves; objects that exist already are left as they are.
        #[arg(long)]
        deletion_protection_default: bool,
        /// Flux's notification-controller (`http://notification-controller.flux-system.svc.cluster.local./`):
        /// every Event the operator records is also posted there in Flux's event format.
        #[arg(long, env = "EVENTS_ADDR")]
        events_addr: Option<String>,
        #[command(flatten)]
        sources: SourceArgs,
        #[command(flatten)]
        webhooks: WebhookArgs,
        /// Where `/metrics` is served (Prometheus text): `:8080`, `127.0.0.1:8080`, or `0` for nowhere.
        #[arg(long, default_value = "0")]
        metrics_bind_address: String,
        /// Where `/healthz` and `/readyz` are served; `0` for nowhere.
        #[arg(long, default_value = ":8081")]
        health_probe_bind_address: String,
        #[command(flatten)]
        leader: LeaderArgs,
    },
    /// The whole system on the embedded Kubernetes simulator: CRDs, plugins, your manifests, progress.
    #[cfg(feature = "dev")]
    Dev {
        /// A manifest file or a directory of them to apply once running (repeatable).
        #[arg(long)]
        apply: Vec<PathBuf>,
        /// Where to write the simulator's kubeconfig (default: a file in the temporary directory).
        #[arg(long)]
        kubeconfig_out: Option<PathBuf>,
        /// The Kubernetes simulator's address (port 0 picks one).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: std::net::SocketAddr,
        /// The Omni simulator's address (port 0 picks one).
        #[arg(long, default_value = "127.0.0.1:0")]
        omni_listen: std::net::SocketAddr,
        /// Exit 0 once everything applied is ready, non-zero with the reasons after --timeout.
        #[arg(long)]
        exit_when_settled: bool,
        /// How long to wait for everything to settle: a duration as kubectl and Flux take it (`90s`, `4m`,
        /// `1m30s`), or a bare number of seconds.
        #[arg(long, default_value = "120", value_parser = seconds_or_duration)]
        timeout: Duration,
        /// A directory of chart directories (`examples/charts`) to serve as a chart repository on loopback
        /// (repeatable); OmniHelmReleases naming one of its charts are pointed at it. Needs Helm (HELM_C_LIB).
        #[arg(long)]
        serve_charts: Vec<PathBuf>,
        /// As `run --deletion-protection-default`: the objects applied are protected from deletion unless they
        /// say otherwise.
        #[arg(long)]
        deletion_protection_default: bool,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// What applying manifests would do in Omni, in workload clusters and in Helm: each affected object's plugin
    /// runs against the live systems with every write recorded instead of performed. Exits 0 when nothing remote
    /// is destroyed, 2 when something is, 1 on errors.
    Plan {
        /// Kubeconfig of the management cluster (default: $KUBECONFIG, then the in-cluster configuration).
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// Plan against the embedded simulators instead of a management cluster, as `dev` runs them: with --git
        /// the older revision is applied first and left to settle (up to 2 minutes); otherwise they start empty.
        /// What the simulators say goes to standard error.
        #[arg(long, conflicts_with = "kubeconfig")]
        offline: bool,
        /// With --offline: a directory of chart directories served as a chart repository, as `dev --serve-charts`
        /// serves it (repeatable).
        #[arg(long, requires = "offline")]
        serve_charts: Vec<PathBuf>,
        /// A manifest file, or a directory of them (searched recursively); repeatable. With --git, a path in the
        /// repository from its root.
        #[arg(short = 'f', long = "filename", required = true)]
        files: Vec<PathBuf>,
        /// Two revisions of a Git repository, OLD..NEW (`origin/main..HEAD`): the manifests are NEW's files under
        /// the -f paths, and what OLD had there that NEW dropped is planned as removed. The work tree is not read.
        #[arg(long, value_name = "OLD..NEW")]
        git: Option<omni_operator::plan::revisions::Range>,
        /// The Git repository --git reads (default: the one holding the current directory).
        #[arg(long, default_value = ".", requires = "git")]
        repo: PathBuf,
        /// How to print the plan.
        #[arg(long, value_enum, default_value = "text")]
        format: omni_operator::plan::render::Format,
        /// The manifests are the whole desired set for the namespaces they touch (Flux's `prune: true`): what is
        /// live there but absent from them is planned as removed.
        #[arg(long)]
        prune: bool,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Print the CustomResourceDefinitions (YAML).
    Crds,
    /// The Helm worker the operator runs for itself: loads libhelm_c and answers requests on stdin.
    #[command(hide = true)]
    HelmWorker {
        /// libhelm_c.
        #[arg(long)]
        lib: PathBuf,
    },
    /// Helm's post-renderer plugin in the Helm worker: applies the post-renderers SPEC (a JSON file) describes
    /// to the manifests on stdin and prints the result.
    #[command(hide = true)]
    HelmPostRender {
        /// The post-render spec the worker wrote for the action.
        spec: PathBuf,
    },
    /// Work with one plugin component.
    #[command(subcommand)]
    Plugin(PluginCommand),
}

#[derive(Subcommand)]
enum PluginCommand {
    /// Load a plugin and print what it is, what it imports, its metadata, and whether its grants cover that.
    Inspect(PluginArgs),
    #[command(flatten)]
    Author(plugin_cli::AuthorCommand),
    /// Run one reconcile of an object (JSON file) and print the outputs the operator would commit.
    /// There is no Kubernetes behind `kube-read` here: reads answer `unavailable`.
    Reconcile {
        #[command(flatten)]
        plugin: PluginArgs,
        /// The object, as JSON.
        #[arg(long)]
        object: PathBuf,
    },
}

#[derive(clap::Args)]
struct PluginArgs {
    /// The plugin component (`.wasm`, built for wasm32-wasip2).
    wasm: PathBuf,
    /// A grant (repeatable): kube-read:GROUP/KIND, kube-read-cluster:GROUP/KIND, kube-write:GROUP/VERSION/KIND,
    /// namespace:NS, secrets,
    /// secrets-read-values, secrets-write, secrets-namespace:NS, omni, workload, helm, files, clock, …
    #[arg(long = "grant", value_name = "CAPABILITY")]
    grants: Vec<String>,
    /// The name to load it under; defaults to the file name.
    #[arg(long)]
    name: Option<String>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let logs = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        // Colours only for a person at a terminal: a log file or a pipeline gets plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    match cli.log_format {
        // One JSON object per line, for log pipelines (fields, span and level as keys).
        LogFormat::Json => logs.json().with_current_span(true).init(),
        LogFormat::Text => logs.init(),
    }
    match run(cli).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Asks the API server whether it takes `selector` (it is the authority on label selector syntax), with a list
/// of at most one OmniCluster: a selector it refuses would otherwise fail every watch, retried forever.
async fn check_selector(
    client: &kube::Client,
    namespaces: &Namespaces,
    selector: &str,
) -> anyhow::Result<()> {
    use kube::api::{Api, DynamicObject, ListParams};
    let clusters = kube::core::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("omni.texashpc.com", "v1alpha1", "OmniCluster"),
        "omniclusters",
    );
    let api: Api<DynamicObject> = match namespaces.list().and_then(|l| l.first()) {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &clusters),
        None => Api::all_with(client.clone(), &clusters),
    };
    match api
        .list(&ListParams::default().labels(selector).limit(1))
        .await
    {
        Err(kube::Error::Api(e)) if e.code == 400 => {
            bail!(
                "--watch-label-selector {selector:?}: the API server refuses it: {}",
                e.message
            )
        }
        // Anything else (no CRDs yet, no API server yet) is for the watches to retry and report.
        Err(e) => tracing::debug!(error = %e, "could not check --watch-label-selector"),
        Ok(_) => {}
    }
    Ok(())
}

/// The namespaces to watch: explicit (one, or a comma-separated list), then POD_NAMESPACE, then the service
/// account's namespace.
fn watched_namespaces(namespace: Option<String>, all: bool) -> anyhow::Result<Namespaces> {
    if all {
        return Ok(Namespaces::All);
    }
    if let Some(list) = namespace {
        let names: Vec<&str> = list.split(',').collect();
        return Namespaces::only(&names).map_err(|e| anyhow::anyhow!("--namespace {list:?}: {e}"));
    }
    if let Ok(ns) = std::env::var("POD_NAMESPACE")
        && !ns.trim().is_empty()
    {
        return Namespaces::only(&[ns.trim()]).map_err(|e| anyhow::anyhow!("POD_NAMESPACE: {e}"));
    }
    const SA_NAMESPACE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
    match std::fs::read_to_string(SA_NAMESPACE) {
        Ok(ns) if !ns.trim().is_empty() => Ok(Namespaces::one(ns.trim())),
        _ => bail!(
            "POD_NAMESPACE is required when {SA_NAMESPACE} is unavailable (or pass --namespace NS or --all-namespaces)"
        ),
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let runtime_config = RuntimeConfig {
        cache_dir: cli.cache_dir.clone(),
        ..RuntimeConfig::default()
    };
    match cli.command {
        Command::Run {
            kubeconfig,
            namespace,
            all_namespaces,
            watch_label_selector,
            concurrent,
            max_retry_delay,
            deletion_protection_default,
            events_addr,
            sources,
            webhooks,
            metrics_bind_address,
            health_probe_bind_address,
            leader,
        } => {
            let namespaces = watched_namespaces(namespace, all_namespaces)?;
            let shard = watch_label_selector
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty());
            let namespace = namespaces.single();
            let admission = webhooks.options(namespace)?;
            let metrics_at =
                endpoints::bind_address("--metrics-bind-address", &metrics_bind_address)?;
            let health_at =
                endpoints::bind_address("--health-probe-bind-address", &health_probe_bind_address)?;
            let leader = leader.config(namespace, shard.as_deref())?;
            let config = client_config(kubeconfig).await?;
            let client = kube::Client::try_from(config.clone())?;
            if let Some(selector) = &shard {
                check_selector(&client, &namespaces, selector).await?;
                tracing::info!(selector = %selector, namespaces = %namespaces, lease = ?leader.as_ref().map(|l| &l.name), "serving one shard");
            }
            let operator =
                Operator::load(Runtime::new(runtime_config)?, sources.sources()?).await?;
            let helm = omni_operator::helm::start(cli.helm.worker()?).await;
            if helm.ready {
                tracing::info!("{}", helm.summary);
            } else {
                tracing::warn!("{}", helm.summary);
            }
            let releases = std::sync::Arc::new(helm.releases());
            let settings = HostConfig {
                namespaces,
                shard,
                concurrency: concurrent,
                max_retry_delay,
                omni_dictionary: cli.omni.dictionary()?,
                template_roots: cli.omni.template_roots()?,
                releases: releases.clone(),
                chart_sources: cli.helm.sources()?,
                target_namespaces: cli.helm.namespaces()?,
                default_service_account: cli.helm.default_service_account()?,
                metrics: std::sync::Arc::default(),
                deletion_protection_default,
                events_forwarder: events_addr
                    .as_deref()
                    .filter(|a| !a.is_empty())
                    .map(omni_operator::controllers::notify::Forwarder::start)
                    .transpose()
                    .map_err(anyhow::Error::msg)?,
            }
            .settings();
            let shutdown = omni_operator::shutdown::terminated().boxed().shared();
            let served = match admission {
                Some(mut options) => Some({
                    // Dry runs of our kinds are answered with their plan's summary.
                    let preview = omni_operator::plan::Planner {
                        registry: operator.registry().clone(),
                        config: config.clone(),
                        omni_dictionary: cli.omni.dictionary()?,
                        helm: helm.ready_engine(),
                        helm_summary: helm.summary.clone(),
                        template_roots: cli.omni.template_roots()?,
                        render_helm: false,
                    };
                    options.preview = Some(std::sync::Arc::new(preview));
                    omni_operator::admission::start(
                        client.clone(),
                        operator.registry().clone(),
                        options,
                        shutdown.clone(),
                    )
                    .await?
                }),
                None => None,
            };
            let mut probes = endpoints::Endpoints::new(
                settings.metrics.clone(),
                operator.registry().clone(),
                served.as_ref().map(|s| s.webhooks.clone()),
            );
            {
                let resolved = operator.routes_resolved();
                probes = probes.ready_when(
                    "plugin-routes",
                    std::sync::Arc::new(move || {
                        (!resolved.load(std::sync::atomic::Ordering::Relaxed))
                            .then(|| "Plugins and bindings not resolved yet".to_string())
                    }),
                );
            }
            if let Some(served) = &served {
                let serving = served.serving.clone();
                probes = probes.ready_when(
                    "webhook-certificates",
                    std::sync::Arc::new(move || {
                        (!serving.ready()).then(|| "no webhook serving certificate yet".to_string())
                    }),
                );
            }
            for (what, at, paths) in [
                ("metrics", metrics_at, endpoints::Paths::Metrics),
                ("health probes", health_at, endpoints::Paths::Probes),
            ] {
                if let Some(at) = at {
                    let answering = probes.clone().answering(paths);
                    let bound = endpoints::start(at, answering, shutdown.clone()).await?;
                    tracing::info!(%bound, "{what} served");
                }
            }
            let ran = match leader {
                None => operator.run(client, settings, shutdown).await,
                Some(config) => lead(&operator, client, settings, config, shutdown).await,
            };
            // Running Helm actions are cancelled through their contexts, so no release is left pending.
            releases.shutdown(HELM_SHUTDOWN_GRACE).await;
            ran?;
            Ok(ExitCode::SUCCESS)
        }
        #[cfg(feature = "dev")]
        Command::Dev {
            apply,
            kubeconfig_out,
            listen,
            omni_listen,
            exit_when_settled,
            timeout,
            serve_charts,
            deletion_protection_default,
            sources,
        } => {
            let opts = omni_operator::dev::DevOptions {
                apply,
                kubeconfig_out,
                listen,
                exit_when_settled,
                timeout,
                sources: sources.sources()?,
                cache_dir: cli.cache_dir,
                omni_listen,
                omni_dictionary: cli.omni.dictionary()?,
                template_roots: cli.omni.template_roots()?,
                helm: cli.helm.worker()?,
                chart_sources: cli.helm.sources()?,
                target_namespaces: cli.helm.namespaces()?,
                default_service_account: cli.helm.default_service_account()?,
                charts: serve_charts,
                deletion_protection_default,
                workload_kubeconfig_out: None,
                objects: Vec::new(),
                say_on_stderr: false,
            };
            let settled = omni_operator::dev::run(opts).await?;
            Ok(if settled {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(3)
            })
        }
        Command::HelmWorker { lib } => {
            tokio::task::spawn_blocking(move || omni_operator::helm::worker::serve(&lib))
                .await
                .map_err(|e| anyhow::anyhow!("the Helm worker's thread: {e}"))??;
            Ok(ExitCode::SUCCESS)
        }
        Command::Plan {
            kubeconfig,
            offline,
            serve_charts,
            files,
            git,
            repo,
            format,
            prune,
            sources,
        } => {
            let (manifests, previous) = match &git {
                Some(range) => {
                    use omni_operator::plan::revisions::load;
                    (
                        load(&repo, &range.new, &files)?,
                        load(&repo, &range.old, &files)?,
                    )
                }
                None => (omni_operator::plan::manifests::load(&files)?, Vec::new()),
            };
            if offline {
                let plan = plan_offline(
                    (&cli.omni, &cli.helm, cli.cache_dir.clone()),
                    sources,
                    serve_charts,
                    omni_operator::plan::Request {
                        manifests,
                        previous,
                        prune,
                    },
                )
                .await?;
                let rendered = omni_operator::plan::render::render(&plan, format);
                std::io::Write::write_all(&mut std::io::stdout().lock(), rendered.as_bytes())
                    .context("writing the plan")?;
                return Ok(ExitCode::from(plan.exit_code() as u8));
            }
            let config = client_config(kubeconfig).await?;
            let operator =
                Operator::load(Runtime::new(runtime_config)?, sources.sources()?).await?;
            let helm = omni_operator::helm::start(cli.helm.worker()?).await;
            let planner = omni_operator::plan::Planner {
                registry: operator.registry().clone(),
                config,
                omni_dictionary: cli.omni.dictionary()?,
                helm: helm.ready_engine(),
                helm_summary: helm.summary.clone(),
                template_roots: cli.omni.template_roots()?,
                render_helm: true,
            };
            let plan = planner.plan_dropping(manifests, previous, prune).await;
            if let Some(engine) = &helm.engine {
                engine.shutdown(Duration::from_secs(5)).await;
            }
            let plan = plan?;
            let rendered = omni_operator::plan::render::render(&plan, format);
            std::io::Write::write_all(&mut std::io::stdout().lock(), rendered.as_bytes())
                .context("writing the plan")?;
            Ok(ExitCode::from(plan.exit_code() as u8))
        }
        Command::HelmPostRender { spec } => {
            let text = std::fs::read(&spec)
                .with_context(|| format!("reading the post-render spec {}", spec.display()))?;
            let spec: serde_json::Value =
                serde_json::from_slice(&text).context("the post-render spec is not JSON")?;
            let render = omni_operator::helm::post_render::PostRender::from_spec(&spec)?;
            let mut manifests = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut manifests)
                .context("reading the rendered manifests")?;
            let out = render.apply(&manifests)?;
            std::io::Write::write_all(&mut std::io::stdout().lock(), out.as_bytes())
                .context("writing the post-rendered manifests")?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Crds => {
            let files = omni_api::crds::files()
                .map_err(|e| anyhow::anyhow!("rendering CRD {}: {}", e.crd, e.source))?;
            let mut out = std::io::stdout().lock();
            for f in files {
                if let Err(e) = std::io::Write::write_all(&mut out, f.yaml.as_bytes()) {
                    // `omni-operator crds | head` closes the pipe early; that is not a failure.
                    if e.kind() == std::io::ErrorKind::BrokenPipe {
                        break;
                    }
                    return Err(e).context("writing the CRDs");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Plugin(PluginCommand::Author(command)) => {
            let ok = plugin_cli::run(command, || Runtime::new(runtime_config)).await?;
            Ok(if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Plugin(PluginCommand::Inspect(args)) => {
            let runtime = Runtime::new(runtime_config)?;
            let plugin = load(&runtime, &args).await?;
            let bytes = std::fs::read(&args.wasm)
                .with_context(|| format!("reading {}", args.wasm.display()))?;
            let metadata = omni_operator::distribution::metadata::read(&bytes)?;
            let interfaces = omni_operator::distribution::metadata::interfaces(&bytes)?;
            let info = plugin.info();
            let report = json!({
                "name": info.name,
                "version": info.version,
                "digest": plugin.digest().to_string(),
                "kinds": info.kinds.iter().map(|k| format!("{}/{}", k.api_version(), k.kind)).collect::<Vec<_>>(),
                "finalizer": info.finalizer,
                "declaredCapabilities": info.capabilities,
                "imports": plugin.imports(),
                "metadata": metadata,
                "componentImports": interfaces.imports,
                "componentExports": interfaces.exports,
            });
            println!("{}", serde_json::to_string_pretty(&report)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Plugin(PluginCommand::Reconcile { plugin, object }) => {
            let runtime = Runtime::new(runtime_config)?;
            let loaded = load(&runtime, &plugin).await?;
            let json = std::fs::read_to_string(&object)
                .with_context(|| format!("reading {}", object.display()))?;
            let object = CallObject::parse(json)
                .with_context(|| format!("{} is not a JSON object", object.display()))?;
            match loaded.reconcile(&object, &HostServices::default()).await {
                Ok(done) => {
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&omni_operator::testkit::outputs_json(
                            &done.outputs
                        ))?
                    );
                    Ok(ExitCode::SUCCESS)
                }
                Err(CallError::Failed { error, .. }) => {
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&json!({ "error": error.to_string() }))?
                    );
                    Ok(ExitCode::from(2))
                }
                Err(CallError::Aborted(e)) => Err(e.into()),
            }
        }
    }
}

async fn load(
    runtime: &Runtime,
    args: &PluginArgs,
) -> anyhow::Result<std::sync::Arc<LoadedPlugin>> {
    let name = match &args.name {
        Some(name) => name.clone(),
        None => args
            .wasm
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "plugin".into()),
    };
    let grants = Grants::parse(&args.grants)?;
    let spec = PluginSpec::from_file(name, &args.wasm)
        .with_context(|| format!("reading {}", args.wasm.display()))?;
    Ok(runtime.load(spec.grants(grants)).await?)
}

/// Runs the controllers while this replica holds the Lease. Losing it ends the process with an error at once
/// (a replica that cannot renew must stop writing before another may take over); on shutdown the controllers
/// stop first and the Lease is released after, so the next leader starts only once nothing here writes.
async fn lead(
    operator: &Operator,
    client: kube::Client,
    settings: Settings,
    config: omni_operator::leader::LeaderConfig,
    shutdown: futures::future::Shared<futures::future::BoxFuture<'static, ()>>,
) -> anyhow::Result<()> {
    let mut elector = omni_operator::leader::Elector::new(client.clone(), config);
    // Every replica keeps its plugin routes current (its webhooks validate with the versions the bindings
    // name); only the leader writes the platform's status and Events.
    let writes = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let _platform = operator.start_platform(
        client.clone(),
        &settings.manager,
        writes.clone(),
        shutdown.clone(),
    );
    tracing::info!(identity = %elector.identity(), "waiting to become the leader");
    if !elector.acquire(shutdown.clone()).await {
        return Ok(());
    }
    writes.store(true, std::sync::atomic::Ordering::Relaxed);
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let releases = settings.helm.releases.clone();
    let controllers = async {
        let ran = operator.run_controllers(client, settings, shutdown).await;
        // Helm actions in flight are cancelled and waited for too: the next leader must find no action of
        // ours still running against a release.
        releases.shutdown(HELM_SHUTDOWN_GRACE).await;
        let _ = done_tx.send(());
        ran
    };
    let holding = elector.hold(async {
        let _ = done_rx.await;
    });
    tokio::pin!(controllers);
    tokio::pin!(holding);
    let ran = tokio::select! {
        ended = &mut holding => {
            // The controllers, the plugin platform and Helm's actions run in tasks of their own: only ending
            // the process stops every one of them now, before another replica may take over (as
            // controller-runtime's manager exits in OnStoppedLeading).
            tracing::error!(?ended, "leader election lost; exiting so that only the new leader writes");
            eprintln!("error: leader election lost; exiting so that only the new leader writes");
            std::process::exit(1);
        }
        ran = &mut controllers => ran,
    };
    // The controllers have stopped: now the Lease may go.
    holding.await;
    ran
}

/// The management cluster's client configuration: `--kubeconfig`, else `$KUBECONFIG` and the in-cluster one.
async fn client_config(kubeconfig: Option<PathBuf>) -> anyhow::Result<kube::Config> {
    match kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            Ok(kube::Config::from_custom_kubeconfig(
                kc,
                &kube::config::KubeConfigOptions::default(),
            )
            .await?)
        }
        None => kube::Config::infer()
            .await
            .context("no in-cluster configuration and no kubeconfig"),
    }
}

/// `plan --offline`: the plan made on the embedded simulators, as `dev` runs them, in files of this process's own.
#[cfg(feature = "dev")]
async fn plan_offline(
    (omni, helm, cache_dir): (&OmniArgs, &HelmArgs, Option<PathBuf>),
    sources: SourceArgs,
    charts: Vec<PathBuf>,
    request: omni_operator::plan::Request,
) -> anyhow::Result<omni_operator::plan::Plan> {
    let scratch = std::env::temp_dir().join(format!("omni-operator-plan-{}", std::process::id()));
    let opts = omni_operator::dev::DevOptions {
        apply: Vec::new(),
        kubeconfig_out: Some(scratch.with_extension("kubeconfig")),
        workload_kubeconfig_out: Some(scratch.with_extension("workload.kubeconfig")),
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        exit_when_settled: true,
        timeout: Duration::from_secs(120),
        sources: sources.sources()?,
        cache_dir,
        omni_listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        omni_dictionary: omni.dictionary()?,
        template_roots: omni.template_roots()?,
        helm: helm.worker()?,
        chart_sources: helm.sources()?,
        target_namespaces: helm.namespaces()?,
        default_service_account: helm.default_service_account()?,
        charts,
        deletion_protection_default: false,
        objects: Vec::new(),
        say_on_stderr: true,
    };
    let plan = omni_operator::dev::plan_offline(opts, request).await;
    for file in ["kubeconfig", "workload.kubeconfig"] {
        let _ = std::fs::remove_file(scratch.with_extension(file));
    }
    plan
}

#[cfg(not(feature = "dev"))]
async fn plan_offline(
    _: (&OmniArgs, &HelmArgs, Option<PathBuf>),
    _: SourceArgs,
    _: Vec<PathBuf>,
    _: omni_operator::plan::Request,
) -> anyhow::Result<omni_operator::plan::Plan> {
    anyhow::bail!("--offline: this build has no embedded simulators (the `dev` feature)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "dev")]
    #[test]
    fn timeouts_take_durations_as_kubectl_does_and_bare_numbers_as_seconds() {
        assert_eq!(seconds_or_duration("240"), Ok(Duration::from_secs(240)));
        assert_eq!(seconds_or_duration("240s"), Ok(Duration::from_secs(240)));
        assert_eq!(seconds_or_duration("4m"), Ok(Duration::from_secs(240)));
        assert_eq!(seconds_or_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(seconds_or_duration("500ms"), Ok(Duration::from_millis(500)));
        for bad in ["", "4 minutes", "-5s", "0s"] {
            assert!(seconds_or_duration(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_webhook_deadline_is_a_duration_and_its_millisecond_spelling_still_works() {
        let deadline = |args: &[&str]| {
            let mut all = vec!["omni-operator", "run"];
            all.extend_from_slice(args);
            let Cli { command, .. } = Cli::try_parse_from(all).expect("parses");
            let Command::Run { webhooks, .. } = command else {
                panic!("run")
            };
            webhooks
                .options(Some("ns"))
                .expect("options")
                .map(|o| o.deadline)
        };
        let on = ["--webhook-service", "svc"];
        assert_eq!(deadline(&on), Some(Duration::from_secs(5)));
        assert_eq!(
            deadline(&[&on[..], &["--webhook-deadline", "1500ms"]].concat()),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            deadline(&[&on[..], &["--webhook-deadline-ms", "2000"]].concat()),
            Some(Duration::from_secs(2))
        );
        assert!(Cli::try_parse_from(["omni-operator", "run", "--webhook-deadline", "5"]).is_err());
        let both = [
            "omni-operator",
            "run",
            "--webhook-deadline",
            "2s",
            "--webhook-deadline-ms",
            "2000",
        ];
        assert!(Cli::try_parse_from(both).is_err(), "one spelling at a time");
    }
}
