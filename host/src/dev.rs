//! `omni-operator dev`: the whole system on one machine. The embedded Kubernetes simulator (kube-sim) with the
//! CRDs installed, the Omni simulator, a second kube-sim as the workload cluster behind Omni's kubeconfigs, the
//! plugins and their controllers, the user's manifests applied, and progress shown until every object a plugin
//! reconciles is ready.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use omni_wire::compression::Dictionary;
use serde_json::json;

use base64::Engine as _;
use futures::FutureExt;

use crate::admission::{AdmissionOptions, CertSettings, FailurePolicy, Target};
use crate::omni::connections::DEFAULT_SECRET_KEY;
use crate::operator::{HostConfig, Operator, PluginSources};
use crate::runtime::{Runtime, RuntimeConfig};
use crate::stack::Stack;

pub struct DevOptions {
    pub apply: Vec<PathBuf>,
    pub kubeconfig_out: Option<PathBuf>,
    pub listen: std::net::SocketAddr,
    pub exit_when_settled: bool,
    pub timeout: Duration,
    pub sources: PluginSources,
    pub cache_dir: Option<PathBuf>,
    /// The Omni simulator's address (port 0 picks one).
    pub omni_listen: std::net::SocketAddr,
    /// Omni's zstd dictionary: the simulator stores large patches compressed with it, as Omni does, and the
    /// operator decompresses them.
    pub omni_dictionary: Option<Dictionary>,
    /// Directories OmniClusters may name as `spec.templateRoot`.
    pub template_roots: Vec<PathBuf>,
    /// Helm's worker, when a libhelm_c is configured.
    pub helm: Option<crate::helm::WorkerOptions>,
    /// The operator's chart-source policy (`--helm-chart-source`), enforced as `run` enforces it; the chart
    /// repository `dev` serves itself is added to a restricted policy.
    pub chart_sources: crate::capabilities::ChartSources,
    /// The workload-cluster namespaces releases may live in (`--helm-target-namespace`).
    pub target_namespaces: crate::capabilities::TargetNamespaces,
    /// `--helm-default-service-account`, as `run` takes it.
    pub default_service_account: Option<String>,
    /// Directories of chart directories (`examples/charts`) to serve as a chart repository on loopback; the
    /// applied OmniHelmReleases naming one of those charts are pointed at it.
    pub charts: Vec<PathBuf>,
    /// `--deletion-protection-default`, as `run` takes it.
    pub deletion_protection_default: bool,
    /// Where to write the workload cluster's admin kubeconfig (default: a file in the temporary directory).
    pub workload_kubeconfig_out: Option<PathBuf>,
    /// Objects to apply besides those under `apply` (an offline plan's older revision).
    pub objects: Vec<(PathBuf, Value)>,
    /// What `dev` says goes to standard error instead of standard output (an offline plan prints the plan there).
    pub say_on_stderr: bool,
}

/// Prints a line of what `dev` does, where [`DevOptions::say_on_stderr`] says.
macro_rules! say {
    ($on_stderr:expr, $($arg:tt)*) => {
        if $on_stderr {
            eprintln!($($arg)*)
        } else {
            println!($($arg)*)
        }
    };
}

/// What a session does once what it applied has settled (or the timeout passed).
enum Then {
    /// Serves until Ctrl-C (unless `exit_when_settled`).
    Serve,
    /// Plans `manifests` against what was applied, then stops.
    Plan(crate::plan::Request),
}

enum Outcome {
    Served(bool),
    Planned(Result<crate::plan::Plan>),
}

/// The service account `dev` mints for the operator.
const DEV_SERVICE_ACCOUNT: &str = "omni-operator";
/// What `dev` creates when the manifests bring no OmniConnection of their own.
const DEV_NAMESPACE: &str = "omni-system";
const DEV_SECRET: &str = "omni-service-account";
const DEV_CONNECTION: &str = "omni";

/// The webhook configuration `dev` registers, and the Secret holding the webhook server's certificates.
pub const DEV_WEBHOOK_CONFIGURATION: &str = "omni-operator-validating-webhook-configuration";
const DEV_WEBHOOK_SECRET: &str = "omni-operator-webhook-server-cert";
/// How long the controllers, their watches and the plugin platform get to stop before the simulators go.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// One applied object and what became of it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Progress {
    Ready(String),
    Waiting(String),
    /// No loaded plugin reconciles its kind.
    Unmanaged,
}

/// Runs until settled (with `exit_when_settled`), or until Ctrl-C. Ok(false) means it gave up at the timeout.
pub async fn run(opts: DevOptions) -> Result<bool> {
    match session(opts, Then::Serve).await? {
        Outcome::Served(settled) => Ok(settled),
        Outcome::Planned(_) => bail!("a served session made a plan"),
    }
}

/// `request` planned on the embedded simulators (`omni-operator plan --offline`): its older revision (or nothing)
/// is applied and left to settle, then its manifests are planned, both pointed at the simulators as `dev` points
/// what it applies. What `dev` says goes to standard error.
pub async fn plan_offline(
    mut opts: DevOptions,
    request: crate::plan::Request,
) -> Result<crate::plan::Plan> {
    opts.objects = request
        .previous
        .iter()
        .map(|m| (PathBuf::from(&m.source), m.object.clone()))
        .collect();
    opts.say_on_stderr = true;
    opts.exit_when_settled = true;
    match session(opts, Then::Plan(request)).await? {
        Outcome::Planned(plan) => plan,
        Outcome::Served(_) => bail!("an offline plan served instead"),
    }
}

async fn session(opts: DevOptions, then: Then) -> Result<Outcome> {
    let started = Instant::now();
    let mut omni = omni_sim::OmniSim::builder().listen(opts.omni_listen);
    if let Some(dictionary) = &opts.omni_dictionary {
        omni = omni.zstd_dictionary(dictionary.clone());
    }
    let stack = Stack::builder()
        .kube(kube_sim::KubeSim::builder().listen(opts.listen))
        .omni(omni)
        .workload_cluster(workload_rbac())
        .service_account(DEV_SERVICE_ACCOUNT, omni_sim::Role::Operator)
        .start()
        .await?;
    let (sim, omni, key) = (&stack.kube, &stack.omni, stack.key.clone());
    let kubeconfig = opts
        .kubeconfig_out
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("omni-operator-dev.kubeconfig"));
    sim.write_kubeconfig(&kubeconfig, &sim.admin())?;
    say!(
        opts.say_on_stderr,
        "Kubernetes simulator at {} (kubeconfig: {})",
        sim.url(),
        kubeconfig.display()
    );
    say!(
        opts.say_on_stderr,
        "  try: kubectl --kubeconfig {} get omni -A",
        kubeconfig.display()
    );
    say!(
        opts.say_on_stderr,
        "Omni simulator at {} (service account {DEV_SERVICE_ACCOUNT}, role Operator)",
        omni.endpoint()
    );
    let workload_kubeconfig = opts
        .workload_kubeconfig_out
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("omni-operator-dev-workload.kubeconfig"));
    if let Some(workload) = &stack.workload {
        workload.write_kubeconfig(&workload_kubeconfig, &workload.admin())?;
        say!(
            opts.say_on_stderr,
            "Workload cluster (behind Omni's Kubernetes proxy) at {} (admin kubeconfig: {}): group {DEV_WORKLOAD_GROUP} may manage Secrets, create namespaces and run the example chart's Deployments, Services and ConfigMaps; workloads there get Pods that turn Ready on a simulated Node",
            workload.url(),
            workload_kubeconfig.display()
        );
    }

    let cache_dir = opts
        .cache_dir
        .clone()
        .or_else(|| Some(std::env::temp_dir().join("omni-operator-cache")));
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir,
        ..RuntimeConfig::default()
    })?;
    let operator = Operator::load(runtime, opts.sources.clone()).await?;
    for (name, reason) in operator.refused() {
        say!(opts.say_on_stderr, "plugin {name} refused: {reason}");
    }
    let mut kinds: BTreeMap<(String, String), String> = BTreeMap::new();
    for p in operator.plugins() {
        for k in &p.info().kinds {
            kinds.insert((k.api_version(), k.kind.clone()), p.name().to_string());
        }
        say!(
            opts.say_on_stderr,
            "plugin {} {} ({}) reconciles {}",
            p.name(),
            p.info().version,
            p.digest(),
            p.info()
                .kinds
                .iter()
                .map(|k| k.kind.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }

    let client = sim.client().await?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let shutdown = {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    }
    .boxed()
    .shared();
    let helm = crate::helm::start(opts.helm.clone()).await;
    // Dry runs of the quickstart's kinds are answered with their plan, as `run` answers them.
    let planner = crate::plan::Planner {
        registry: operator.registry().clone(),
        config: sim_config(sim).await?,
        omni_dictionary: opts.omni_dictionary.clone(),
        helm: helm.ready_engine(),
        helm_summary: helm.summary.clone(),
        template_roots: opts.template_roots.clone(),
        render_helm: false,
    };
    let admission = register_webhooks(
        sim,
        &client,
        operator.registry(),
        std::sync::Arc::new(planner.clone()),
        shutdown.clone(),
        opts.say_on_stderr,
    )
    .await?;
    let metrics = std::sync::Arc::new(crate::controllers::metrics::Metrics::default());
    let probes = crate::endpoints::Endpoints::new(
        metrics.clone(),
        operator.registry().clone(),
        Some(admission.webhooks.clone()),
    );
    let probes_at = crate::endpoints::start(
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        probes,
        shutdown.clone(),
    )
    .await?;
    say!(
        opts.say_on_stderr,
        "metrics at http://{probes_at}/metrics, health at http://{probes_at}/healthz and /readyz"
    );
    say!(opts.say_on_stderr, "{}", helm.summary);
    // From here on `dev` leaves things behind (its chart directory), so Ctrl-C and SIGTERM alike stop it through
    // the clean-up below rather than ending the process where it stands.
    let mut stop_requested = Box::pin(crate::shutdown::terminated());
    let charts_dir =
        std::env::temp_dir().join(format!("omni-operator-dev-charts-{}", std::process::id()));
    let served = match (&helm.engine, helm.ready, opts.charts.is_empty()) {
        (Some(engine), true, false) => Some(
            serve_charts(
                engine.as_ref(),
                &opts.charts,
                &charts_dir,
                opts.say_on_stderr,
            )
            .await?,
        ),
        _ => None,
    };
    let releases = std::sync::Arc::new(helm.releases());
    let mut sources = opts.chart_sources.clone();
    if let Some((repo, _)) = &served {
        sources = sources
            .also_allowing(&repo.url)
            .map_err(|e| anyhow::anyhow!("the chart repository dev serves: {e}"))?;
    }
    let settings = HostConfig {
        namespaces: crate::controllers::scope::Namespaces::All,
        shard: None,
        concurrency: crate::controllers::DEFAULT_CONCURRENCY,
        max_retry_delay: crate::controllers::DEFAULT_MAX_RETRY_DELAY,
        omni_dictionary: opts.omni_dictionary.clone(),
        template_roots: opts.template_roots.clone(),
        releases: releases.clone(),
        chart_sources: sources,
        target_namespaces: opts.target_namespaces.clone(),
        default_service_account: opts.default_service_account.clone(),
        events_forwarder: None,
        metrics,
        deletion_protection_default: opts.deletion_protection_default,
    }
    .settings();
    let controllers = tokio::spawn(async move { operator.run(client, settings, shutdown).await });

    let mut objects = Vec::new();
    for dir in &opts.apply {
        objects.extend(manifests(dir)?);
    }
    objects.extend(opts.objects.iter().cloned());
    for line in point_at_simulator(&mut objects, &omni.endpoint(), &key) {
        say!(opts.say_on_stderr, "  {line}");
    }
    if let Some((repo, names)) = &served {
        let pointed = point_at_charts(&mut objects, &repo.url, names);
        for line in &pointed {
            say!(opts.say_on_stderr, "  {line}");
        }
        if !pointed.is_empty() {
            let k = workload_kubeconfig.display();
            say!(
                opts.say_on_stderr,
                "  see the releases Helm stored: kubectl --kubeconfig {k} get secrets -A -l owner=helm"
            );
            say!(
                opts.say_on_stderr,
                "  and what they installed: kubectl --kubeconfig {k} get deployments,services,configmaps -A -l app.kubernetes.io/instance"
            );
        }
    }
    let mut applied = Vec::new();
    for (file, obj) in &objects {
        let id = identity(obj);
        match sim.apply(obj).await {
            Ok(_) => applied.push(id),
            Err(e) => bail!("applying {} from {}: {e:#}", id.3, file.display()),
        }
    }
    say!(
        opts.say_on_stderr,
        "applied {} objects; started in {} ms",
        applied.len(),
        started.elapsed().as_millis()
    );

    let mut shown: BTreeMap<String, Progress> = BTreeMap::new();
    let deadline = Instant::now() + opts.timeout;
    let settled = loop {
        let mut all_ready = true;
        for (api_version, kind, ns, name) in &applied {
            if !kinds.contains_key(&(api_version.clone(), kind.clone())) {
                if is_omni(api_version) {
                    report(
                        opts.say_on_stderr,
                        &mut shown,
                        (kind, ns, name),
                        Progress::Unmanaged,
                    );
                }
                continue;
            }
            let p = match sim.get(api_version, kind, ns, name) {
                Some(obj) => progress(&obj),
                None => Progress::Waiting("deleted".into()),
            };
            all_ready &= matches!(p, Progress::Ready(_));
            report(opts.say_on_stderr, &mut shown, (kind, ns, name), p);
        }
        if all_ready {
            say!(
                opts.say_on_stderr,
                "all {} reconciled objects are ready",
                shown
                    .values()
                    .filter(|p| matches!(p, Progress::Ready(_)))
                    .count()
            );
            break true;
        }
        if opts.exit_when_settled && Instant::now() > deadline {
            say!(
                opts.say_on_stderr,
                "not settled after {} s:",
                opts.timeout.as_secs()
            );
            for (who, p) in &shown {
                if let Progress::Waiting(why) = p {
                    say!(opts.say_on_stderr, "  {who}: {why}");
                }
            }
            break false;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            _ = &mut stop_requested => {
                say!(opts.say_on_stderr, "stopped before everything settled");
                break false;
            }
        }
    };
    let outcome = match then {
        Then::Serve => {
            if !opts.exit_when_settled && settled {
                say!(opts.say_on_stderr, "running; Ctrl-C to stop");
                stop_requested.await;
            }
            Outcome::Served(settled)
        }
        Then::Plan(request) => {
            // Both revisions pointed at the simulators as what was applied was, so only their own changes show.
            let pointed = |manifests: Vec<crate::plan::Manifest>| {
                let mut objects: Vec<(PathBuf, Value)> = manifests
                    .into_iter()
                    .map(|m| (PathBuf::from(m.source), m.object))
                    .collect();
                point_at_simulator(&mut objects, &omni.endpoint(), &key);
                if let Some((repo, names)) = &served {
                    point_at_charts(&mut objects, &repo.url, names);
                }
                objects
                    .into_iter()
                    .map(|(source, object)| crate::plan::Manifest {
                        source: source.display().to_string(),
                        object,
                    })
                    .collect::<Vec<_>>()
            };
            let (manifests, previous) = (pointed(request.manifests), pointed(request.previous));
            let planner = crate::plan::Planner {
                render_helm: true,
                ..planner
            };
            Outcome::Planned(
                planner
                    .plan_dropping(manifests, previous, request.prune)
                    .await,
            )
        }
    };
    // Stopped in the order they depend on each other: the controllers (with their watches and the plugin
    // platform), the webhook and probe servers, and Helm's worker, before the simulators they talk to, so a
    // settled session ends without a warning.
    let _ = stop_tx.send(true);
    if tokio::time::timeout(SHUTDOWN_GRACE, controllers)
        .await
        .is_err()
    {
        tracing::warn!("the controllers did not stop within {SHUTDOWN_GRACE:?}");
    }
    releases.shutdown(Duration::from_secs(5)).await;
    stack.stop().await;
    drop(served);
    let _ = std::fs::remove_dir_all(&charts_dir);
    Ok(outcome)
}

/// The client configuration of the simulator's administrator.
async fn sim_config(sim: &kube_sim::KubeSim) -> Result<kube::Config> {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&sim.kubeconfig(&sim.admin()))
        .context("parsing the simulator's kubeconfig")?;
    kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
        .await
        .context("the simulator's client configuration")
}

/// Serves the admission webhooks on loopback and registers them with the simulator, so `kubectl apply` of an
/// invalid object is refused with the Go operator's message, as in a cluster.
async fn register_webhooks(
    sim: &kube_sim::KubeSim,
    client: &kube::Client,
    registry: &std::sync::Arc<crate::runtime::PluginRegistry>,
    preview: std::sync::Arc<dyn crate::admission::Preview>,
    shutdown: impl std::future::Future<Output = ()> + Clone + Send + 'static,
    on_stderr: bool,
) -> Result<crate::admission::Admission> {
    let failure = FailurePolicy::Fail;
    let admission = crate::admission::start(
        client.clone(),
        registry.clone(),
        AdmissionOptions {
            listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            deadline: Duration::from_secs(5),
            failure,
            certs: CertSettings {
                namespace: "default".into(),
                secret: DEV_WEBHOOK_SECRET.into(),
                hosts: vec!["127.0.0.1".into()],
                // Registered below, with the CA bundle, once the server's address is known; a `dev` session
                // ends long before its certificates would need renewing.
                webhook_configurations: Vec::new(),
            },
            check_every: Duration::from_secs(3600),
            preview: Some(preview),
        },
        shutdown,
    )
    .await?;
    let ca = admission
        .ca_bundle
        .as_deref()
        .context("the webhook certificates could not be made")?;
    let kinds = crate::admission::served_kinds(client, registry).await?;
    let config = crate::admission::configuration(
        DEV_WEBHOOK_CONFIGURATION,
        &kinds,
        &Target::Url(format!("https://{}", admission.addr)),
        failure,
        10,
        Some(&base64::engine::general_purpose::STANDARD.encode(ca)),
    );
    sim.apply(&config)
        .await
        .context("registering the admission webhooks")?;
    say!(
        on_stderr,
        "admission webhooks at https://{} validate {} kinds (ValidatingWebhookConfiguration {DEV_WEBHOOK_CONFIGURATION})",
        admission.addr,
        kinds.len()
    );
    Ok(admission)
}

/// Packages every chart under `roots` with Helm (in its worker) into `dir`, indexes them, and serves `dir` as a
/// chart repository on loopback. Returns the repository and the chart names it serves.
async fn serve_charts(
    engine: &dyn crate::helm::HelmEngine,
    roots: &[PathBuf],
    dir: &Path,
    on_stderr: bool,
) -> Result<(crate::helm::repository::ChartRepository, Vec<String>)> {
    let mut charts = Vec::new();
    for root in roots {
        let entries = std::fs::read_dir(root)
            .with_context(|| format!("--serve-charts {}: reading the directory", root.display()))?;
        for entry in entries {
            let path = entry?.path();
            if path.join("Chart.yaml").is_file() {
                charts.push(path);
            }
        }
    }
    charts.sort();
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let repo = crate::helm::repository::ChartRepository::bind(dir)
        .await
        .context("serving the chart repository on loopback")?;
    let publish = crate::helm::protocol::Op::Publish {
        charts: charts.iter().map(|c| c.display().to_string()).collect(),
        dir: dir.display().to_string(),
        base_url: repo.url.clone(),
    };
    engine
        .run(publish, None, Duration::from_secs(60))
        .await
        .context("packaging the charts with Helm")?;
    let names: Vec<String> = charts
        .iter()
        .filter_map(|c| c.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    say!(
        on_stderr,
        "Chart repository at {} (made by Helm from {}): {}",
        repo.url,
        roots
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        names.join(", ")
    );
    Ok((repo, names))
}

/// Points the OmniHelmReleases whose chart `dev` serves at its local chart repository. OCI charts and charts it
/// does not serve are left alone.
fn point_at_charts(objects: &mut [(PathBuf, Value)], url: &str, names: &[String]) -> Vec<String> {
    let mut said = Vec::new();
    for (_, obj) in objects.iter_mut() {
        if obj["kind"] != "OmniHelmRelease"
            || !is_omni(obj["apiVersion"].as_str().unwrap_or_default())
        {
            continue;
        }
        let chart = obj["spec"]["chart"]["chart"]
            .as_str()
            .unwrap_or_default()
            .trim()
            .to_string();
        if chart.starts_with("oci://") || !names.contains(&chart) {
            continue;
        }
        let (_, _, ns, name) = identity(obj);
        let before = obj["spec"]["chart"]["repository"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        obj["spec"]["chart"]["repository"] = json!(url);
        said.push(format!(
            "OmniHelmRelease {ns}/{name}: chart repository {before} -> {url} (served by dev)"
        ));
    }
    said
}

/// The group the dev workload cluster's RBAC grants Secrets (everywhere), namespace creation and the example
/// chart's kinds: what the examples' OmniKubeconfigExport asks for, and no more.
const DEV_WORKLOAD_GROUP: &str = "omni-automation";

/// The workload cluster's RBAC: the group may manage Secrets everywhere, create namespaces, and manage what the
/// example chart installs.
fn workload_rbac() -> Vec<Value> {
    vec![
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": DEV_WORKLOAD_GROUP},
            // Secrets as a chart's objects too: Helm applies them server-side (patch).
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
                      // Helm's `createNamespace` applies the namespace server-side: `patch`.
                      {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "create", "patch"]},
                      // What Helm needs for examples/charts/hello: its objects (applied server-side, hence patch) and
                      // their readiness (watched for `wait`).
                      {"apiGroups": ["", "apps"], "resources": ["configmaps", "services", "deployments"],
                       "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
                      // Helm's readiness wait (kstatus) reads a Deployment's ReplicaSets and their Pods too.
                      {"apiGroups": ["", "apps"], "resources": ["pods", "replicasets"], "verbs": ["get", "list", "watch"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": DEV_WORKLOAD_GROUP},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": DEV_WORKLOAD_GROUP},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": DEV_WORKLOAD_GROUP}]}),
    ]
}

/// Points the manifests at the embedded Omni simulator: every OmniConnection's endpoint becomes the simulator's,
/// and every Secret a connection names gets the minted service-account key (added when the manifests do not
/// bring that Secret). Without any OmniConnection, a namespace, Secret and connection are added so there is one
/// to watch. Returns what it changed, for the user to read.
fn point_at_simulator(
    objects: &mut Vec<(PathBuf, Value)>,
    endpoint: &str,
    key: &str,
) -> Vec<String> {
    let mut said = Vec::new();
    // (namespace, Secret name, key, index of the connection naming it)
    let mut secrets: Vec<(String, String, String, usize)> = Vec::new();
    for (index, (_, obj)) in objects.iter_mut().enumerate() {
        if obj["kind"] != "OmniConnection"
            || !is_omni(obj["apiVersion"].as_str().unwrap_or_default())
        {
            continue;
        }
        let (_, _, ns, name) = identity(obj);
        let before = obj["spec"]["endpoint"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        obj["spec"]["endpoint"] = json!(endpoint);
        if let Some(spec) = obj["spec"].as_object_mut() {
            spec.remove("insecureSkipTLSVerify");
        }
        said.push(format!(
            "OmniConnection {ns}/{name}: endpoint {before} -> {endpoint} (the Omni simulator)"
        ));
        let secret_ref = &obj["spec"]["auth"]["serviceAccountSecretRef"];
        let secret = secret_ref["name"].as_str().unwrap_or_default().to_string();
        let secret_key = secret_ref["key"]
            .as_str()
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .unwrap_or(DEFAULT_SECRET_KEY)
            .to_string();
        secrets.push((ns, secret, secret_key, index));
    }
    if secrets.is_empty() {
        objects.push((
            PathBuf::from("(omni-operator dev)"),
            json!({
                "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": DEV_NAMESPACE},
            }),
        ));
        secrets.push((
            DEV_NAMESPACE.into(),
            DEV_SECRET.into(),
            DEFAULT_SECRET_KEY.into(),
            objects.len(),
        ));
        objects.push((PathBuf::from("(omni-operator dev)"), json!({
            "apiVersion": "omni.texashpc.com/v1alpha1", "kind": "OmniConnection",
            "metadata": {"name": DEV_CONNECTION, "namespace": DEV_NAMESPACE},
            "spec": {"endpoint": endpoint, "auth": {"serviceAccountSecretRef": {"name": DEV_SECRET, "key": DEFAULT_SECRET_KEY}}},
        })));
        said.push(format!("OmniConnection {DEV_NAMESPACE}/{DEV_CONNECTION} -> {endpoint} (added: the manifests have none)"));
    }
    // Later connections first, so the indexes of earlier ones stay valid while Secrets are inserted.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.3));
    for (ns, name, secret_key, connection_at) in secrets {
        let found = objects.iter_mut().find(|(_, o)| {
            o["apiVersion"] == "v1"
                && o["kind"] == "Secret"
                && identity(o).2 == ns
                && identity(o).3 == name
        });
        match found {
            Some((_, secret)) => {
                // `get_mut`, not indexing: indexing would add `data: null` to a Secret that has none.
                if let Some(data) = secret.get_mut("data").and_then(Value::as_object_mut) {
                    data.remove(&secret_key);
                }
                secret["stringData"][&secret_key] = json!(key);
                said.push(format!("Secret {ns}/{name}: key {secret_key} holds a service-account key minted by the simulator"));
            }
            None => {
                // Right before the connection, after its namespace, so its first check finds the Secret.
                objects.insert(
                    connection_at,
                    (
                        PathBuf::from("(omni-operator dev)"),
                        json!({
                            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                            "metadata": {"name": name, "namespace": ns},
                            "stringData": {secret_key.clone(): key},
                        }),
                    ),
                );
                said.push(format!(
                    "Secret {ns}/{name}: added with a service-account key minted by the simulator"
                ));
            }
        }
    }
    said
}

fn is_omni(api_version: &str) -> bool {
    api_version.starts_with("omni.texashpc.com/")
}

/// Ready when the latest generation was observed and the object's readiness condition (Ready, or Accepted for
/// kinds that only report that) is True.
fn progress(obj: &Value) -> Progress {
    let generation = obj["metadata"]["generation"].as_i64();
    let observed = obj["status"]["observedGeneration"].as_i64();
    let conditions = obj["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let find = |t: &str| conditions.iter().find(|c| c["type"] == t).cloned();
    let Some(c) = find("Ready").or_else(|| find("Accepted")) else {
        return Progress::Waiting("not reconciled yet".into());
    };
    let describe = format!(
        "{}={} {}: {}",
        c["type"].as_str().unwrap_or_default(),
        c["status"].as_str().unwrap_or_default(),
        c["reason"].as_str().unwrap_or_default(),
        c["message"].as_str().unwrap_or_default()
    );
    if c["status"] == "True" && observed.is_some() && observed == generation {
        Progress::Ready(describe)
    } else {
        Progress::Waiting(describe)
    }
}

fn report(
    on_stderr: bool,
    shown: &mut BTreeMap<String, Progress>,
    (kind, ns, name): (&str, &str, &str),
    p: Progress,
) {
    let who = format!("{kind} {ns}/{name}");
    if shown.get(&who) == Some(&p) {
        return;
    }
    match &p {
        Progress::Ready(why) => say!(on_stderr, "  ready    {who}  {why}"),
        Progress::Waiting(why) => say!(on_stderr, "  waiting  {who}  {why}"),
        Progress::Unmanaged => {
            say!(
                on_stderr,
                "  skipped  {who}  (no plugin reconciles {kind} in this version)"
            )
        }
    }
    shown.insert(who, p);
}

fn identity(obj: &Value) -> (String, String, String, String) {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let ns = obj["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default")
        .to_string();
    (
        s(&obj["apiVersion"]),
        s(&obj["kind"]),
        ns,
        s(&obj["metadata"]["name"]),
    )
}

/// Every object in the YAML/JSON files of a directory (or one file), in file-name order.
fn manifests(path: &Path) -> Result<Vec<(PathBuf, Value)>> {
    let mut files = Vec::new();
    if path.is_dir() {
        for entry in
            std::fs::read_dir(path).with_context(|| format!("reading {}", path.display()))?
        {
            let p = entry
                .with_context(|| format!("reading {}", path.display()))?
                .path();
            if matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml" | "json")
            ) {
                files.push(p);
            }
        }
        files.sort();
    } else {
        files.push(path.to_path_buf());
    }
    let mut out = Vec::new();
    for f in files {
        let text =
            std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
        for obj in
            kube_sim::yaml_documents(&text).with_context(|| format!("parsing {}", f.display()))?
        {
            out.push((f.clone(), obj));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_pointed_at_the_simulator_with_a_minted_key() {
        let file = PathBuf::from("x.yaml");
        let mut objects = vec![
            (
                file.clone(),
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sa", "namespace": "t"}, "stringData": {"serviceAccountKey": "placeholder"}}),
            ),
            (
                file.clone(),
                json!({"apiVersion": "omni.texashpc.com/v1alpha1", "kind": "OmniConnection", "metadata": {"name": "c", "namespace": "t"},
                "spec": {"endpoint": "https://omni.example.com", "insecureSkipTLSVerify": true, "auth": {"serviceAccountSecretRef": {"name": "sa", "key": "serviceAccountKey"}}}}),
            ),
        ];
        let said = point_at_simulator(&mut objects, "grpc://127.0.0.1:9", "KEY");
        assert_eq!(objects.len(), 2, "{said:?}");
        assert_eq!(objects[0].1["stringData"]["serviceAccountKey"], "KEY");
        assert_eq!(objects[1].1["spec"]["endpoint"], "grpc://127.0.0.1:9");
        assert!(objects[1].1["spec"].get("insecureSkipTLSVerify").is_none());
        assert!(
            said[0].contains("https://omni.example.com -> grpc://127.0.0.1:9"),
            "{said:?}"
        );

        let mut none = Vec::new();
        point_at_simulator(&mut none, "grpc://127.0.0.1:9", "KEY");
        let kinds: Vec<&str> = none
            .iter()
            .map(|(_, o)| o["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["Namespace", "Secret", "OmniConnection"]);
    }

    #[test]
    fn readiness_needs_the_current_generation_and_a_true_condition() {
        let ready = json!({"metadata": {"generation": 2}, "status": {"observedGeneration": 2, "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "ok"}]}});
        assert!(matches!(progress(&ready), Progress::Ready(_)));
        let stale = json!({"metadata": {"generation": 3}, "status": {"observedGeneration": 2, "conditions": [{"type": "Accepted", "status": "True"}]}});
        assert!(matches!(progress(&stale), Progress::Waiting(_)));
        let failing = json!({"metadata": {"generation": 1}, "status": {"observedGeneration": 1, "conditions": [
            {"type": "Accepted", "status": "True"}, {"type": "Ready", "status": "False", "reason": "PluginTimeout", "message": "m"}]}});
        assert_eq!(
            progress(&failing),
            Progress::Waiting("Ready=False PluginTimeout: m".into()),
            "Ready wins over Accepted"
        );
        assert!(matches!(
            progress(&json!({"metadata": {}})),
            Progress::Waiting(_)
        ));
    }
}
