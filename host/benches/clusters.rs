//! 1,000 OmniClusters applied at once, each with its OmniControlPlane, one OmniWorkers and two OmniMachines (the
//! shape of the Go operator's `config/samples`, with unique names and machine UUIDs), plus one
//! OmniConnection and its Secret, until every OmniCluster has `Synced=True` against the Omni simulator. Run once
//! with the built-in plugins as components and once with the same plugins' logic compiled into the host
//! (`Runtime::load_native`), and compared. Targets: ≤ 10 s on 2 cores, host peak RSS ≤ 256 MiB,
//! WASM ≤ 10 % slower than native.
//!
//! `cargo bench -p omni-operator --bench clusters` (`-- --quick`: 100 clusters). Knobs: `--clusters N`,
//! `--concurrency N` (reconciles of one kind at once; default: what `omni-operator dev` uses), `--runs N` (each
//! mode N times, alternating; medians compared), `--only wasm|native`, `--until synced|accepted` (`accepted`: every
//! OmniMachine `Accepted=True`, a criterion that does not need the OmniCluster plugin), `--timeout SECONDS`,
//! `--profile DIR` (the host sampled by `perf record` over each run; `tools/profile-phases` splits it by phase).
//!
//! What is measured, and how. The host's memory must not include the simulators', so each run is four
//! processes, all this binary in different roles:
//! * the driver (what `cargo bench` starts) creates the objects, watches for the criterion and prints;
//! * `--role kube-sim` and `--role omni-sim` are the simulators, fresh for every run;
//! * `--role host` is the operator as `omni-operator dev` runs it — runtime (precompiled-component cache warm,
//!   as `dev` has after its first start), the built-in plugins and their grants, one set of controllers per plugin
//!   with dev's settings — talking TLS to kube-sim and gRPC to omni-sim, and nothing else.
//!
//! Time runs from the driver's first create to the moment its watch sees the last object meet the criterion (the
//! creates themselves are inside it: the objects are "applied at once" through the API, 32 requests in flight).
//! Memory is the host process's peak resident set, `VmHWM` in `/proc/self/status`, read by the host when the
//! driver asks at the end (`idle`: its `VmRSS` once the plugins are loaded and the controllers started, and of it
//! `RssAnon`, the host's own memory: the rest maps this 90 MB binary's code and the compiled plugins, page cache
//! that is shared and that the kernel can drop, and whose size depends on what else was read lately). The
//! host's CPU time (`/proc/self/stat`) from then to the end is the most direct measure of what running the logic
//! as WebAssembly costs, since the elapsed time is mostly API server and Omni round trips. Plugin calls are the
//! controllers' counter. The four processes share the machine's cores, as the operator, the API server and Omni
//! would on one small node.
//!
//! The host also serves `/metrics` on loopback, as `omni-operator run --metrics-bind-address` does. The driver
//! scrapes it while objects are being reconciled and once at the end, and checks what Prometheus would see:
//! `controller_runtime_reconcile_total` summed over results equals the plugin calls the controllers counted,
//! and each kind's count is at least its number of objects (each was reconciled at least once).

use omni_operator::controllers::metrics::Count;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::watcher;
use omni_operator::capabilities::Grants;
use omni_operator::controllers::Settings;
use omni_operator::defaults;
use omni_operator::omni::OmniConnections;
use omni_operator::runtime::{LoadedPlugin, PluginError, PluginSpec, Runtime, RuntimeConfig};
use omni_operator::stack::{self, HostBuilder};
use serde_json::{Value, json};

mod support;

use support::{Role, cpu_ms, number, proc_status_kib, ready_then_answer, serve, value};

const GROUP: &str = "omni.texashpc.com";
const VERSION: &str = "v1alpha1";
const API: &str = "omni.texashpc.com/v1alpha1";
const NAMESPACE: &str = "bench";
const CONNECTION: &str = "omni";
const SECRET: &str = "omni-service-account";
/// Creates in flight at once.
const CREATES_IN_FLIGHT: usize = 32;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match value(&args, "--role").as_deref() {
        None => driver(&args),
        Some("kube-sim") => serve(kube_sim_role(&args)),
        Some("omni-sim") => serve(omni_sim_role()),
        Some("host") => serve(host_role(&args)),
        Some(other) => bail!("unknown --role {other:?}"),
    }
}

/// Where this bench keeps its kubeconfigs, logs and the compiled-plugin cache.
fn work_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("clusters-bench")
}

fn cache_dir() -> PathBuf {
    work_dir().join("plugin-cache")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Wasm,
    Native,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Wasm => "wasm",
            Mode::Native => "native",
        }
    }

    fn parse(s: &str) -> Result<Mode> {
        match s {
            "wasm" => Ok(Mode::Wasm),
            "native" => Ok(Mode::Native),
            other => bail!("{other:?} is not a plugin mode (wasm or native)"),
        }
    }
}

/// When a run is done: every object of `kind` (there are `per_cluster` per cluster) has `condition=True`.
#[derive(Debug, Clone, Copy)]
struct Criterion {
    kind: &'static str,
    condition: &'static str,
    per_cluster: usize,
}

impl Criterion {
    fn parse(s: &str) -> Result<Criterion> {
        match s {
            "synced" => Ok(Criterion {
                kind: "OmniCluster",
                condition: "Synced",
                per_cluster: 1,
            }),
            "accepted" => Ok(Criterion {
                kind: "OmniMachine",
                condition: "Accepted",
                per_cluster: 2,
            }),
            other => bail!("--until {other:?}: expected synced or accepted"),
        }
    }

    fn met(&self, object: &DynamicObject) -> bool {
        object.data["status"]["conditions"]
            .as_array()
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == self.condition && c["status"] == "True")
            })
    }
}

// ---------------------------------------------------------------------------------------------------------------
// The driver.

struct Figures {
    mode: Mode,
    /// Seconds from the first create to the criterion met (None: not within the timeout).
    total: Option<f64>,
    /// How many objects met the criterion.
    done: usize,
    created: f64,
    peak_rss_kib: u64,
    idle_rss_kib: u64,
    /// Of `idle_rss_kib`, the anonymous pages: the host's own memory, without its code and the plugins' mapped in.
    idle_anon_kib: u64,
    calls: u64,
    failures: u64,
    /// The host's CPU time (user and system) from ready to the end of the run.
    cpu_ms: u64,
    /// The simulators' CPU time over the same span.
    kube_sim_cpu_ms: u64,
    omni_sim_cpu_ms: u64,
    clusters: usize,
}

fn driver(args: &[String]) -> Result<()> {
    let clusters: usize = number(
        args,
        "--clusters",
        if args.iter().any(|a| a == "--quick") {
            100
        } else {
            1000
        },
    )?;
    let concurrency: u16 = number(args, "--concurrency", Settings::default().concurrency)?;
    let runs: usize = number(args, "--runs", 1)?;
    let timeout = Duration::from_secs(number(args, "--timeout", 300)?);
    let criterion = Criterion::parse(value(args, "--until").as_deref().unwrap_or("synced"))?;
    // `--profile DIR`: the host's CPU sampled by `perf record` over each run, into DIR/host-<mode>.perf.data.
    let profile = value(args, "--profile").map(PathBuf::from);
    let modes = match value(args, "--only") {
        Some(mode) => vec![Mode::parse(&mode)?],
        None => vec![Mode::Wasm, Mode::Native],
    };
    std::fs::create_dir_all(work_dir())
        .with_context(|| format!("creating {}", work_dir().display()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("tokio")?;
    runtime.block_on(async {
        println!(
            "clusters: {clusters} OmniClusters with a control plane, workers and 2 machines each ({} objects) and one \
             OmniConnection with its Secret, until every {} has {}=True",
            clusters * 5,
            criterion.kind,
            criterion.condition
        );
        println!(
            "  host settings: {concurrency} reconciles per kind at once (`omni-operator dev`: {}), {} plugin calls at \
             once, reconcile deadline {} s",
            Settings::default().concurrency,
            RuntimeConfig::default().max_concurrent_calls,
            Settings::default().reconcile_timeout.as_secs()
        );
        if modes.contains(&Mode::Wasm) {
            support::warm_plugin_cache(&cache_dir()).await?;
        }
        // Runs alternate between the modes, so a drift in the machine's load affects both alike.
        let mut figures = Vec::new();
        for _ in 0..runs {
            for &mode in &modes {
                let f = run(mode, clusters, concurrency, criterion, timeout, profile.as_deref()).await?;
                print_figures(&f, clusters * criterion.per_cluster);
                figures.push(f);
            }
        }
        // Medians of the runs that finished; `None` when one did not.
        let median = |mode: Mode, of: fn(&Figures) -> Option<f64>| -> Option<f64> {
            let mut values: Vec<f64> = figures.iter().filter(|f| f.mode == mode).map(of).collect::<Option<_>>()?;
            values.sort_by(f64::total_cmp);
            values.get(values.len() / 2).copied()
        };
        let time = |f: &Figures| f.total;
        let cpu = |f: &Figures| f.total.map(|_| f.cpu_ms as f64 / 1000.0);
        if runs > 1 {
            for &mode in &modes {
                let peak = figures.iter().filter(|f| f.mode == mode).map(|f| f.peak_rss_kib).max().unwrap_or(0);
                let said = match (median(mode, time), median(mode, cpu)) {
                    (Some(t), Some(c)) => format!("{t:.2} s, host CPU {c:.2} s"),
                    _ => "not every run finished".into(),
                };
                println!("  {:<6}  median of {runs}: {said}; highest peak RSS {:.1} MiB", mode.name(), peak as f64 / 1024.0);
            }
        }
        if let (Some(w), Some(n)) = (median(Mode::Wasm, time), median(Mode::Native, time)) {
            print!("  WASM/native: time {:.3} (target ≤ 1.10)", w / n);
            if let (Some(w), Some(n)) = (median(Mode::Wasm, cpu), median(Mode::Native, cpu)) {
                print!(", host CPU {:.3}", w / n);
            }
            println!();
        }
        Ok(())
    })
}

fn print_figures(f: &Figures, target: usize) {
    let mib = |kib: u64| kib as f64 / 1024.0;
    let outcome = match f.total {
        Some(total) => format!("all {target} met after {total:.2} s"),
        None => format!("only {} of {target} met before the timeout", f.done),
    };
    println!(
        "  {:<6}  {outcome} (creates took {:.2} s); host peak RSS {:.1} MiB (idle {:.1} MiB, \
         of it {:.1} MiB anonymous), CPU {:.2} s; {} plugin \
         calls, {} failed",
        f.mode.name(),
        f.created,
        mib(f.peak_rss_kib),
        mib(f.idle_rss_kib),
        mib(f.idle_anon_kib),
        f.cpu_ms as f64 / 1000.0,
        f.calls,
        f.failures
    );
    println!(
        "  {:<6}  host CPU per cluster {:.2} ms (target ≤ 3 ms), per plugin call {:.2} ms; kube-sim CPU {:.2} s, \
         omni-sim CPU {:.2} s",
        f.mode.name(),
        f.cpu_ms as f64 / f.clusters.max(1) as f64,
        f.cpu_ms as f64 / f.calls.max(1) as f64,
        f.kube_sim_cpu_ms as f64 / 1000.0,
        f.omni_sim_cpu_ms as f64 / 1000.0
    );
}

async fn run(
    mode: Mode,
    clusters: usize,
    concurrency: u16,
    criterion: Criterion,
    timeout: Duration,
    profile: Option<&Path>,
) -> Result<Figures> {
    let kubeconfig = work_dir().join(format!("kube-sim-{}.kubeconfig", mode.name()));
    let mut kube_sim = Role::start(
        "kube-sim",
        mode.name(),
        &work_dir(),
        &["--kubeconfig".into(), kubeconfig.display().to_string()],
    )
    .await?;
    kube_sim.ready().await?;
    let mut omni_sim = Role::start("omni-sim", mode.name(), &work_dir(), &[]).await?;
    let omni = omni_sim.ready().await?;
    let [endpoint, key] = omni.as_slice() else {
        bail!("omni-sim said {omni:?}, expected an endpoint and a key")
    };

    let client = client(&kubeconfig).await?;
    create(
        &client,
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
    )
    .await?;

    let mut host = Role::start(
        "host",
        mode.name(),
        &work_dir(),
        &[
            "--plugins".into(),
            mode.name().into(),
            "--kubeconfig".into(),
            kubeconfig.display().to_string(),
            "--concurrency".into(),
            concurrency.to_string(),
        ],
    )
    .await?;
    let said = host.ready().await?;
    let ready: Vec<u64> = said.iter().filter_map(|n| n.parse().ok()).collect();
    let [idle_rss_kib, idle_anon_kib, start_cpu_ms] = ready[..] else {
        bail!(
            "the host said ready {said:?}, expected its RSS, anonymous RSS, CPU time and metrics address"
        )
    };
    let Some(metrics_at) = said.iter().find(|w| w.contains(':')).cloned() else {
        bail!(
            "the host said ready {said:?}, expected its RSS, anonymous RSS, CPU time and metrics address"
        )
    };
    // The controllers' watches start right after; objects created before they list are found by that list anyway.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let target = clusters * criterion.per_cluster;
    let mut watch = Box::pin(watcher(
        api(&client, criterion.kind)?,
        watcher::Config::default(),
    ));
    // Listed before the first create, so every later change is an event.
    while let Some(event) = watch.try_next().await.context("watching")? {
        if matches!(event, watcher::Event::InitDone) {
            break;
        }
    }

    let profiler = match (profile, host.pid()) {
        (Some(dir), Some(pid)) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            let out = dir.join(format!("host-{}.perf.data", mode.name()));
            Some(support::Profiler::start(pid, &out).await?)
        }
        _ => None,
    };
    let sims_cpu_at_start = (kube_sim.cpu_ms(), omni_sim.cpu_ms());
    let start = Instant::now();
    let objects = objects(clusters, endpoint, key);
    futures::stream::iter(objects.iter().map(|o| create(&client, o)))
        .buffer_unordered(CREATES_IN_FLIGHT)
        .try_collect::<Vec<()>>()
        .await?;
    let created = start.elapsed().as_secs_f64();

    let mut met: HashSet<String> = HashSet::new();
    let mut progress = Instant::now();
    let deadline = tokio::time::Instant::now() + timeout;
    let total = loop {
        if met.len() >= target {
            break Some(start.elapsed().as_secs_f64());
        }
        let event = match tokio::time::timeout_at(deadline, watch.try_next()).await {
            Err(_elapsed) => break None,
            Ok(event) => event.context("watching")?,
        };
        if let Some(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) = event {
            let name = object.metadata.name.clone().unwrap_or_default();
            if criterion.met(&object) {
                met.insert(name);
            } else {
                met.remove(&name);
            }
        }
        if progress.elapsed() > Duration::from_secs(5) {
            let calls = Report::of(&host.ask("report").await?).calls;
            let reconciles: f64 = scrape(&metrics_at)
                .await?
                .iter()
                .filter(|(series, _)| series.starts_with("controller_runtime_reconcile_total{"))
                .map(|(_, v)| v)
                .sum();
            eprintln!(
                "  {}: {} of {target} after {:.0} s ({calls} plugin calls so far; /metrics: {reconciles} reconciles)",
                mode.name(),
                met.len(),
                start.elapsed().as_secs_f64()
            );
            progress = Instant::now();
        }
    };

    let sims_cpu = (
        kube_sim.cpu_ms().saturating_sub(sims_cpu_at_start.0),
        omni_sim.cpu_ms().saturating_sub(sims_cpu_at_start.1),
    );
    let rpcs = omni_sim.ask("rpcs").await?;
    let total_rpcs = tally_total(&rpcs);
    println!(
        "  {:<6}  Omni RPCs: {total_rpcs} ({:.1} per cluster): {}",
        mode.name(),
        total_rpcs as f64 / clusters.max(1) as f64,
        rpcs.join(" ")
    );
    let requests = kube_sim.ask("requests").await?;
    let total_requests = tally_total(&requests);
    println!(
        "  {:<6}  kube-sim requests, the driver's {} creates among them: {total_requests} ({:.1} per cluster): {}",
        mode.name(),
        5 * clusters + 2,
        total_requests as f64 / clusters.max(1) as f64,
        requests.join(" ")
    );
    if let Some(profiler) = profiler {
        let written = profiler.stop().await?;
        let path = written.display();
        println!(
            "  {:<6}  host profile: {path} (split it by phase: tools/profile-phases {path})",
            mode.name()
        );
    }
    // The scrape and the counter agree exactly only while no reconcile runs, and a requeue (a cluster's recheck,
    // the connection's) can start one at any moment, also between the two reads. So wait until no call has run
    // for half a second, during the scrape included, and the scrape has counted every call; past the bound, the
    // last reads are compared and the difference reported.
    let settle_by = Instant::now() + Duration::from_secs(60);
    let mut last_calls = Report::of(&host.ask("report").await?).calls;
    let (scraped, report) = loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let before = Report::of(&host.ask("report").await?);
        let scraped = scrape(&metrics_at).await?;
        let report = Report::of(&host.ask("report").await?);
        let quiet = before.calls == last_calls && report.calls == before.calls;
        if (quiet && reconciles(&scraped, None) == report.calls as f64)
            || Instant::now() >= settle_by
        {
            break (scraped, report);
        }
        last_calls = report.calls;
    };
    let per_kind = |kind: &str| reconciles(&scraped, Some(kind));
    let kinds = [
        ("OmniConnection", 1),
        ("OmniCluster", clusters),
        ("OmniControlPlane", clusters),
        ("OmniWorkers", clusters),
        ("OmniMachine", 2 * clusters),
    ];
    let total_reconciles: f64 = kinds.iter().map(|(k, _)| per_kind(k)).sum();
    println!(
        "  {:<6}  /metrics scraped at the end: controller_runtime_reconcile_total {} ({}), plugin calls {}",
        mode.name(),
        total_reconciles,
        kinds
            .iter()
            .map(|(k, n)| format!("{} {} for {n} objects", k.to_lowercase(), per_kind(k)))
            .collect::<Vec<_>>()
            .join(", "),
        report.calls
    );
    if total_reconciles != report.calls as f64 {
        bail!(
            "/metrics says {total_reconciles} reconciles, the controllers counted {} plugin calls",
            report.calls
        );
    }
    if total.is_some()
        && let Some((kind, n)) = kinds.iter().find(|(k, n)| per_kind(k) < *n as f64)
    {
        bail!(
            "/metrics says {} reconciles of {kind}, fewer than its {n} objects",
            per_kind(kind)
        );
    }
    let figures = Figures {
        mode,
        total,
        done: met.len(),
        created,
        peak_rss_kib: report.hwm_kib,
        idle_rss_kib,
        idle_anon_kib,
        calls: report.calls,
        failures: report.failures,
        cpu_ms: report.cpu_ms.saturating_sub(start_cpu_ms),
        kube_sim_cpu_ms: sims_cpu.0,
        omni_sim_cpu_ms: sims_cpu.1,
        clusters,
    };
    for role in [&mut host, &mut omni_sim, &mut kube_sim] {
        role.stop().await;
    }
    Ok(figures)
}

/// `controller_runtime_reconcile_total` in a scrape, summed over results: of one kind's controller, or of all.
fn reconciles(scraped: &[(String, f64)], kind: Option<&str>) -> f64 {
    let label = kind.map(|k| format!("controller=\"{}\"", k.to_lowercase()));
    scraped
        .iter()
        .filter(|(series, _)| {
            series.starts_with("controller_runtime_reconcile_total{")
                && label.as_ref().is_none_or(|l| series.contains(l.as_str()))
        })
        .map(|(_, v)| v)
        .sum()
}

/// `/metrics` from `addr`, as (series, value) pairs.
async fn scrape(addr: &str) -> Result<Vec<(String, f64)>> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(addr)
        .await
        .with_context(|| format!("connecting to the host's metrics at {addr}"))?;
    tcp.write_all(b"GET /metrics HTTP/1.0\r\nHost: bench\r\n\r\n")
        .await?;
    let mut text = String::new();
    tcp.read_to_string(&mut text).await?;
    let (head, body) = text.split_once("\r\n\r\n").context("an HTTP response")?;
    if !head.starts_with("HTTP/1.0 200") && !head.starts_with("HTTP/1.1 200") {
        bail!("GET /metrics: {}", head.lines().next().unwrap_or_default());
    }
    Ok(body
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, v) = l.rsplit_once(' ')?;
            Some((series.to_string(), v.parse().ok()?))
        })
        .collect())
}

/// What the host answers to `report`.
struct Report {
    calls: u64,
    failures: u64,
    hwm_kib: u64,
    cpu_ms: u64,
}

impl Report {
    fn of(words: &[String]) -> Report {
        let field = |name: &str| -> u64 {
            words
                .iter()
                .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
                .unwrap_or(0)
        };
        Report {
            calls: field("calls"),
            failures: field("failures"),
            hwm_kib: field("hwm_kib"),
            cpu_ms: field("cpu_ms"),
        }
    }
}

async fn client(kubeconfig: &Path) -> Result<kube::Client> {
    let text = std::fs::read_to_string(kubeconfig)
        .with_context(|| format!("reading {}", kubeconfig.display()))?;
    stack::client(&text).await
}

/// The API of a kind this bench creates (in the bench namespace, for namespaced kinds).
fn api(client: &kube::Client, kind: &str) -> Result<Api<DynamicObject>> {
    let (group, version, plural) = match kind {
        "Namespace" => {
            return Ok(Api::all_with(
                client.clone(),
                &ApiResource::erase::<k8s_openapi::api::core::v1::Namespace>(&()),
            ));
        }
        "Secret" => ("", "v1", "secrets"),
        "OmniConnection" => (GROUP, VERSION, "omniconnections"),
        "OmniCluster" => (GROUP, VERSION, "omniclusters"),
        "OmniControlPlane" => (GROUP, VERSION, "omnicontrolplanes"),
        "OmniWorkers" => (GROUP, VERSION, "omniworkers"),
        "OmniMachine" => (GROUP, VERSION, "omnimachines"),
        other => bail!("this bench does not create {other}"),
    };
    let resource =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    Ok(Api::namespaced_with(client.clone(), NAMESPACE, &resource))
}

async fn create(client: &kube::Client, object: &Value) -> Result<()> {
    let kind = object["kind"].as_str().unwrap_or_default();
    let api = api(client, kind)?;
    let typed: DynamicObject = serde_json::from_value(object.clone()).context("an object")?;
    api.create(&PostParams::default(), &typed)
        .await
        .with_context(|| {
            format!(
                "creating {kind} {}",
                object["metadata"]["name"].as_str().unwrap_or_default()
            )
        })?;
    Ok(())
}

/// The Secret and the connection, then each cluster with its children.
fn objects(clusters: usize, endpoint: &str, key: &str) -> Vec<Value> {
    let mut out = vec![
        json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": {"name": SECRET, "namespace": NAMESPACE},
            "stringData": {"serviceAccountKey": key}}),
        json!({"apiVersion": API, "kind": "OmniConnection", "metadata": {"name": CONNECTION, "namespace": NAMESPACE},
            "spec": {"endpoint": endpoint, "auth": {"serviceAccountSecretRef": {"name": SECRET, "key": "serviceAccountKey"}}}}),
    ];
    let meta = |name: &str| json!({"name": name, "namespace": NAMESPACE});
    let rolling = json!({"type": "Rolling", "rolling": {"maxParallelism": 1}});
    for i in 0..clusters {
        let cluster = format!("edge-{i:04}");
        let control_plane_machine = format!("{i:08x}-1111-4111-8111-111111111111");
        let worker_machine = format!("{i:08x}-2222-4222-8222-222222222222");
        out.push(json!({"apiVersion": API, "kind": "OmniCluster", "metadata": meta(&cluster), "spec": {
            "connectionRef": {"name": CONNECTION},
            "kubernetes": {"version": "v1.35.0", "manifests": [{"name": "sample-namespace", "mode": "full",
                "inline": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}]}]},
            "talos": {"version": "v1.13.2"},
            "features": {"enableWorkloadProxy": true},
            "syncInterval": "5m"}}));
        out.push(json!({"apiVersion": API, "kind": "OmniControlPlane", "metadata": meta(&format!("{cluster}-control-plane")), "spec": {
            "clusterRef": {"name": cluster},
            "machines": [control_plane_machine],
            "patches": [{"name": "control-plane-kubespan", "inline": {"machine": {"network": {"kubespan": {"enabled": true}}}}}]}}));
        out.push(json!({"apiVersion": API, "kind": "OmniWorkers", "metadata": meta(&format!("{cluster}-workers")), "spec": {
            "clusterRef": {"name": cluster},
            "workerSetName": "gpu-workers",
            "machines": [worker_machine],
            "updateStrategy": rolling,
            "upgradeStrategy": rolling}}));
        for (suffix, machine) in [
            ("control-plane-0", &control_plane_machine),
            ("worker-0", &worker_machine),
        ] {
            out.push(json!({"apiVersion": API, "kind": "OmniMachine", "metadata": meta(&format!("{cluster}-{suffix}")), "spec": {
                "clusterRef": {"name": cluster},
                "machineID": machine,
                "install": {"disk": "/dev/nvme0n1"}}}));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------------------------
// The roles.

async fn kube_sim_role(args: &[String]) -> Result<()> {
    let kubeconfig =
        PathBuf::from(value(args, "--kubeconfig").context("--kubeconfig is required")?);
    let sim = stack::management_cluster(kube_sim::KubeSim::builder()).await?;
    sim.write_kubeconfig(&kubeconfig, &sim.admin())?;
    ready_then_answer(&[sim.url()], |line| match line {
        // The requests answered so far (the driver's creates among them), by verb and resource, most frequent
        // first.
        "requests" => tally(
            "requests",
            sim.requests().into_iter().map(|r| {
                if r.subresource.is_empty() {
                    format!("{}:{}", r.verb, r.resource)
                } else {
                    format!("{}:{}/{}", r.verb, r.resource, r.subresource)
                }
            }),
        ),
        _ => format!("{line} unknown"),
    })
    .await
}

/// The sum of the counts in a [`tally`]'s words.
fn tally_total(words: &[String]) -> u64 {
    words
        .iter()
        .filter_map(|w| w.rsplit_once('=').and_then(|(_, n)| n.parse::<u64>().ok()))
        .sum()
}

/// `word` and then each distinct item as `item=count`, most frequent first.
fn tally(word: &str, items: impl Iterator<Item = String>) -> String {
    let mut counts: std::collections::BTreeMap<String, u64> = Default::default();
    for item in items {
        *counts.entry(item).or_default() += 1;
    }
    let mut list: Vec<(String, u64)> = counts.into_iter().collect();
    list.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    let words: Vec<String> = list.iter().map(|(k, n)| format!("{k}={n}")).collect();
    format!("{word} {}", words.join(" "))
}

async fn omni_sim_role() -> Result<()> {
    let sim = omni_sim::OmniSim::builder()
        .listen(([127, 0, 0, 1], 0).into())
        .start()
        .await
        .context("starting omni-sim")?;
    let key = sim.mint_key("omni-operator", omni_sim::Role::Operator);
    ready_then_answer(&[sim.endpoint(), key], |line| match line {
        // The RPCs answered so far, by method and resource type, most frequent first.
        "rpcs" => tally(
            "rpcs",
            sim.records().into_iter().map(|r| {
                let method = r.method.rsplit('/').next().unwrap_or_default().to_string();
                let kind = r
                    .request
                    .split_once("type: \"")
                    .and_then(|(_, rest)| rest.split_once('"'))
                    .map(|(t, _)| t.trim_end_matches(".omni.sidero.dev").to_string())
                    .unwrap_or_default();
                format!("{method}:{kind}")
            }),
        ),
        _ => format!("{line} unknown"),
    })
    .await
}

/// The operator: the built-in plugins (as components, or their logic natively) with their built-in grants, and
/// one set of controllers per plugin, as `Operator::run` starts them.
async fn host_role(args: &[String]) -> Result<()> {
    let mode = Mode::parse(&value(args, "--plugins").context("--plugins is required")?)?;
    let kubeconfig =
        PathBuf::from(value(args, "--kubeconfig").context("--kubeconfig is required")?);
    let concurrency: u16 = number(args, "--concurrency", Settings::default().concurrency)?;

    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(cache_dir()),
        ..RuntimeConfig::default()
    })?;
    let mut host = HostBuilder::new(runtime.clone());
    for p in defaults::PLUGINS {
        let grants = p.grants()?;
        host = match mode {
            Mode::Wasm => host.plugin(PluginSpec::new(p.name, p.wasm.to_vec()).grants(grants)),
            Mode::Native => host.loaded(
                load_native(&runtime, p.name, grants)
                    .await?
                    .with_context(|| format!("loading built-in plugin {:?}", p.name))?,
            ),
        };
    }
    let settings = Settings {
        concurrency,
        omni: Arc::new(OmniConnections::new(None)),
        ..Settings::default()
    };
    let metrics = settings.metrics.clone();
    let host = host.settings(settings).load().await?;
    let endpoints =
        omni_operator::endpoints::Endpoints::new(metrics.clone(), host.registry().clone(), None);
    let metrics_at = omni_operator::endpoints::start(
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        endpoints,
        std::future::pending::<()>(),
    )
    .await?;
    let client = client(&kubeconfig).await?;
    tokio::spawn(async move {
        if let Err(e) = host.run(client, std::future::pending()).await {
            eprintln!("the host's controllers stopped: {e:#}");
        }
    });
    ready_then_answer(
        &[
            proc_status_kib("VmRSS").to_string(),
            proc_status_kib("RssAnon").to_string(),
            cpu_ms().to_string(),
            metrics_at.to_string(),
        ],
        |line| match line {
            "report" => format!(
                "report calls={} failures={} hwm_kib={} cpu_ms={}",
                metrics.total(Count::PluginCalls),
                metrics.total(Count::PluginCallFailures),
                proc_status_kib("VmHWM"),
                cpu_ms(),
            ),
            other => format!("{other} unknown"),
        },
    )
    .await
}

/// The same built-in plugin, its logic compiled into this binary.
async fn load_native(
    runtime: &Runtime,
    name: &str,
    grants: Grants,
) -> Result<Result<Arc<LoadedPlugin>, PluginError>> {
    Ok(match name {
        "omni-connection" => {
            runtime
                .load_native::<omni_connection::OmniConnectionPlugin>(name, grants, None)
                .await
        }
        "omni-cluster" => {
            runtime
                .load_native::<omni_cluster::OmniClusterPlugin>(name, grants, None)
                .await
        }
        "omni-controlplane" => {
            runtime
                .load_native::<omni_controlplane::ControlPlane>(name, grants, None)
                .await
        }
        "omni-workers" => {
            runtime
                .load_native::<omni_workers::Workers>(name, grants, None)
                .await
        }
        "omni-machine" => {
            runtime
                .load_native::<omni_machine::Machine>(name, grants, None)
                .await
        }
        "omni-kubeconfig-export" => {
            runtime
                .load_native::<omni_kubeconfig_export::OmniKubeconfigExportPlugin>(
                    name, grants, None,
                )
                .await
        }
        "omni-secret-sync" => {
            runtime
                .load_native::<omni_secret_sync::OmniSecretSyncPlugin>(name, grants, None)
                .await
        }
        "omni-helm-release" => {
            runtime
                .load_native::<omni_helm_release::OmniHelmReleasePlugin>(name, grants, None)
                .await
        }
        other => bail!("the built-in plugin {other:?} has no native build in this bench"),
    })
}
