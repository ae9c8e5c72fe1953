//! 100 OmniHelmReleases over 10 workload clusters, applied at once, until every one is `Ready=True`; then a steady
//! state in which nothing changes, counting the Helm actions the operator starts (target: none). Targets: all
//! Ready within 30 s on 2 cores, 0 Helm actions in steady state.
//!
//! `cargo bench -p omni-operator --bench helm_releases` (`-- --quick`: 20 releases over 2 clusters and a 60 s
//! steady state). Knobs: `--clusters N`, `--per-cluster N`, `--steady SECONDS` (default 600), `--no-wait` (Helm does
//! not wait for readiness), `--timeout SECONDS`, `--concurrency N` (reconciles at once, `run --concurrent`). Needs libhelm_c (`HELM_C_LIB`, or `tools/fetch-helm-c`).
//!
//! Processes: the driver (what `cargo bench` starts) runs the management kube-sim, the workload kube-sims (with
//! their workload controllers, so the chart's Deployments become ready) and the chart repository, creates the
//! objects and polls them; `--role host` is the operator as `omni-operator run` runs it — the built-in
//! OmniHelmRelease plugin as a component, its grants, dev's controller settings, the Helm worker it starts as a
//! child process — and nothing else. Host memory is that process's peak resident set (`VmHWM`), the worker's is
//! the worker process's (`/proc/<pid>/status`), each read when the driver asks. Helm actions are the host's count
//! of install, upgrade and uninstall actions started; the revisions in the workload clusters are counted too.

#[path = "../tests/shared/helm_lib.rs"]
mod helm_lib;
mod support;

use omni_operator::controllers::metrics::Count;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::StreamExt;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use omni_operator::capabilities::{ChartSources, HelmSettings};
use omni_operator::controllers::Settings;
use omni_operator::defaults;
use omni_operator::helm::protocol::Op;
use omni_operator::helm::releases::Releases;
use omni_operator::helm::repository::ChartRepository;
use omni_operator::helm::{HelmEngine, WorkerEngine, WorkerOptions};
use omni_operator::runtime::{Runtime, RuntimeConfig};
use omni_operator::stack::{self, HostBuilder};
use serde_json::{Value, json};

use support::{
    Role, cpu_ms, number, pid_status_kib, proc_status_kib, ready_then_answer, serve, value,
};

const API: &str = "omni.texashpc.com/v1alpha1";
const NAMESPACE: &str = "bench";
const CREATES_IN_FLIGHT: usize = 32;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match value(&args, "--role").as_deref() {
        None => serve(driver(args)),
        Some("host") => serve(host_role(&args)),
        Some(other) => bail!("unknown --role {other:?}"),
    }
}

fn work_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("helm-releases-bench")
}

async fn driver(args: Vec<String>) -> Result<()> {
    let quick = args.iter().any(|a| a == "--quick");
    let clusters: usize = number(&args, "--clusters", if quick { 2 } else { 10 })?;
    let per_cluster: usize = number(&args, "--per-cluster", 10)?;
    let steady = Duration::from_secs(number(&args, "--steady", if quick { 60 } else { 600 })?);
    let timeout = Duration::from_secs(number(&args, "--timeout", 300)?);
    let wait = !args.iter().any(|a| a == "--no-wait");
    let concurrency: u16 = number(
        &args,
        "--concurrency",
        omni_operator::controllers::DEFAULT_CONCURRENCY,
    )?;
    let lib = helm_lib::helm_c_lib();
    std::fs::create_dir_all(work_dir())?;

    let management = stack::management_cluster(kube_sim::KubeSim::builder()).await?;
    let mut workloads = Vec::new();
    for _ in 0..clusters {
        workloads.push(
            kube_sim::KubeSim::builder()
                .workloads(kube_sim::workloads::WorkloadOptions::default())
                .start()
                .await?,
        );
    }
    let charts = tempfile::tempdir()?;
    let repo = ChartRepository::bind(charts.path()).await?;
    support::publish_example_chart(&lib, charts.path(), &repo.url).await?;

    let kubeconfig = work_dir().join("management.kubeconfig");
    management.write_kubeconfig(&kubeconfig, &management.admin())?;
    let mut host = Role::start(
        "host",
        "wasm",
        &work_dir(),
        &[
            "--kubeconfig".into(),
            kubeconfig.display().to_string(),
            "--lib".into(),
            lib.display().to_string(),
            "--concurrency".into(),
            concurrency.to_string(),
        ],
    )
    .await?;
    let idle = host.ready().await?;

    let mut objects =
        vec![json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})];
    for (c, w) in workloads.iter().enumerate() {
        objects.push(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": format!("edge-{c}-kubeconfig"), "namespace": NAMESPACE},
            "stringData": {"kubeconfig": w.kubeconfig(&w.admin())}}));
        objects.push(json!({"apiVersion": API, "kind": "OmniCluster", "metadata": {"name": format!("edge-{c}"), "namespace": NAMESPACE},
            "spec": {"connectionRef": {"name": "omni"}, "kubernetes": {"version": "v1.35.0"}, "talos": {"version": "v1.13.2"}}}));
    }
    // Set up before the clock starts: the namespace, the clusters and their kubeconfigs.
    for o in &objects {
        management.apply(o).await?;
    }
    let mut releases = Vec::new();
    for c in 0..clusters {
        for r in 0..per_cluster {
            releases.push(json!({"apiVersion": API, "kind": "OmniHelmRelease",
                "metadata": {"name": format!("app-{c}-{r}"), "namespace": NAMESPACE},
                "spec": {"clusterRef": {"name": format!("edge-{c}")}, "kubeconfigSecretRef": {"name": format!("edge-{c}-kubeconfig")},
                    "namespace": "apps", "createNamespace": true, "wait": wait, "timeout": "2m",
                    "chart": {"repository": repo.url, "chart": "hello", "version": "0.1.0",
                        "values": {"replicaCount": 1 + r % 3, "message": format!("release {r}")}}}}));
        }
    }

    let client = management.client().await?;
    let api: Api<DynamicObject> = Api::namespaced_with(
        client,
        NAMESPACE,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("omni.texashpc.com", "v1alpha1", "OmniHelmRelease"),
            "omnihelmreleases",
        ),
    );
    let started = Instant::now();
    futures::stream::iter(releases.iter())
        .map(|o| {
            let api = api.clone();
            async move {
                let obj: DynamicObject = serde_json::from_value(o.clone())?;
                api.create(&PostParams::default(), &obj)
                    .await
                    .context("creating an OmniHelmRelease")
            }
        })
        .buffer_unordered(CREATES_IN_FLIGHT)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
    let total = releases.len();
    loop {
        let ready = management
            .list(API, "OmniHelmRelease", Some(NAMESPACE))
            .iter()
            .filter(|o| is_ready(o))
            .count();
        if ready == total {
            break;
        }
        if started.elapsed() > timeout {
            bail!("only {ready} of {total} OmniHelmReleases were Ready after {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let to_ready = started.elapsed();
    let after_ready = report(&mut host).await?;
    let revisions_ready = revisions(&workloads);

    println!(
        "{total} OmniHelmReleases over {clusters} workload clusters (wait: {wait}): all Ready in {:.2} s",
        to_ready.as_secs_f64()
    );
    println!(
        "  host: idle RSS {:.1} MiB, peak RSS {:.1} MiB; Helm worker peak RSS {:.1} MiB",
        kib_to_mib(&idle, 0),
        after_ready.kib("hwm_kib"),
        after_ready.kib("worker_hwm_kib"),
    );
    println!(
        "  Helm actions to get there: {} ({} release revisions in the workload clusters)",
        after_ready.get("actions"),
        revisions_ready
    );
    println!(
        "  steady state for {} s (the plugin re-reads each release every 5 min) ...",
        steady.as_secs()
    );
    tokio::time::sleep(steady).await;
    let after_steady = report(&mut host).await?;
    let actions = after_steady.get("actions") - after_ready.get("actions");
    println!(
        "  steady state: {actions} Helm actions (target 0), {} new revisions, {} plugin calls, host CPU {} ms; host peak RSS {:.1} MiB, worker {:.1} MiB",
        revisions(&workloads) - revisions_ready,
        after_steady.get("calls") - after_ready.get("calls"),
        after_steady.get("cpu_ms") - after_ready.get("cpu_ms"),
        after_steady.kib("hwm_kib"),
        after_steady.kib("worker_hwm_kib"),
    );
    host.stop().await;
    Ok(())
}

fn kib_to_mib(words: &[String], at: usize) -> f64 {
    words
        .get(at)
        .and_then(|w| w.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

fn is_ready(o: &Value) -> bool {
    o["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

/// Helm's release Secrets across the workload clusters.
fn revisions(workloads: &[kube_sim::KubeSim]) -> usize {
    workloads
        .iter()
        .map(|w| {
            w.list("v1", "Secret", Some("apps"))
                .iter()
                .filter(|s| s["metadata"]["labels"]["owner"] == "helm")
                .count()
        })
        .sum()
}

/// The host's `key=value` report.
struct Report(Vec<(String, u64)>);

impl Report {
    fn get(&self, key: &str) -> u64 {
        self.0.iter().find(|(k, _)| k == key).map_or(0, |(_, v)| *v)
    }

    fn kib(&self, key: &str) -> f64 {
        self.get(key) as f64 / 1024.0
    }
}

async fn report(host: &mut Role) -> Result<Report> {
    let words = host.ask("report").await?;
    Ok(Report(
        words
            .iter()
            .filter_map(|w| {
                let (k, v) = w.split_once('=')?;
                Some((k.to_string(), v.parse().ok()?))
            })
            .collect(),
    ))
}

/// The operator with the built-in OmniHelmRelease plugin and Helm in its worker process.
async fn host_role(args: &[String]) -> Result<()> {
    let kubeconfig =
        PathBuf::from(value(args, "--kubeconfig").context("--kubeconfig is required")?);
    let lib = PathBuf::from(value(args, "--lib").context("--lib is required")?);
    let concurrency: u16 = number(
        args,
        "--concurrency",
        omni_operator::controllers::DEFAULT_CONCURRENCY,
    )?;
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(work_dir().join("plugin-cache")),
        ..RuntimeConfig::default()
    })?;
    let plugin = defaults::PLUGINS
        .iter()
        .find(|p| p.name == "omni-helm-release")
        .context("the built-in OmniHelmRelease plugin")?;
    // The bench binary is not the operator: the worker is the operator binary, as `run` starts it.
    let engine = Arc::new(WorkerEngine::new(WorkerOptions {
        program: env!("CARGO_BIN_EXE_omni-operator").into(),
        lib,
        concurrency: 4,
        memory_limit: Some(omni_operator::helm::DEFAULT_WORKER_MEMORY),
        scratch_base: std::env::temp_dir(),
    }));
    engine
        .run(Op::Versions, None, Duration::from_secs(60))
        .await
        .context("the Helm worker")?;
    let releases = Arc::new(Releases::new(
        Some(engine.clone() as Arc<dyn HelmEngine>),
        "",
    ));
    let settings = Settings {
        helm: HelmSettings {
            releases: releases.clone(),
            sources: ChartSources::any(),
            ..HelmSettings::default()
        },
        concurrency,
        ..Settings::default()
    };
    let metrics = settings.metrics.clone();
    let host = HostBuilder::new(runtime)
        .plugin(plugin.spec()?)
        .settings(settings)
        .load()
        .await?;
    let client = stack::client(&std::fs::read_to_string(&kubeconfig)?).await?;
    tokio::spawn(async move {
        if let Err(e) = host.run(client, std::future::pending()).await {
            eprintln!("the host's controllers stopped: {e:#}");
        }
    });
    let worker = engine.worker_pid().await;
    ready_then_answer(
        &[proc_status_kib("VmRSS").to_string()],
        move |line| match line {
            "report" => format!(
                "report actions={} calls={} hwm_kib={} worker_hwm_kib={} cpu_ms={}",
                releases.actions_started(),
                metrics.total(Count::PluginCalls),
                proc_status_kib("VmHWM"),
                worker.map_or(0, |pid| pid_status_kib(pid, "VmHWM")),
                cpu_ms(),
            ),
            other => format!("{other} unknown"),
        },
    )
    .await
}
