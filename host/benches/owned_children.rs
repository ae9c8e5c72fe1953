//! A third-party operator at scale: 1,000 SiteWidgets (the example plugin, `examples/plugins/site-widgets`, as a
//! component) applied at once, each owning a ConfigMap and a Deployment the plugin writes through `kube-write`,
//! until every widget is `Ready=True` because its Deployment's replica is ready (kube-sim's workload controllers
//! schedule and run the Pods). Prints the time, the host's CPU time, the plugin calls and the writes per second.
//!
//! `cargo bench -p omni-operator --bench owned_children` (`-- --quick`: 100 widgets; `--widgets N`,
//! `--concurrency N`, `--timeout SECONDS`).
//!
//! Three processes, this binary in different roles, so the host's CPU time is its own: the driver (creates the
//! widgets, watches for `Ready`, prints), `--role kube-sim` (with workload controllers and enough Nodes for one Pod
//! per widget), and `--role host` (the runtime, the example plugin with the grants it requests, its controllers
//! and the watches of the kinds it owns). Time runs from the first create to the first list (every 250 ms) in
//! which every widget is Ready. Each
//! plugin call applies both children; the writes sent are counted by kube-sim, the rest were answered from the
//! watch cache. Then 100 children are deleted behind the
//! plugin's back, and the time until each is put back (a new UID) is measured.

use omni_operator::controllers::metrics::Count;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use omni_operator::capabilities::Grants;
use omni_operator::controllers::Settings;
use omni_operator::runtime::{PluginSpec, Runtime, RuntimeConfig};
use omni_operator::stack::{self, HostBuilder};
use serde_json::json;

mod support;

use support::{Role, cpu_ms, number, proc_status_kib, ready_then_answer, serve, value};

const NAMESPACE: &str = "bench";
const CREATES_IN_FLIGHT: usize = 32;
/// The grants the example requests (its `export_plugin!` line).
const GRANTS: [&str; 4] = [
    "kube-read:core/ConfigMap",
    "kube-read:apps/Deployment",
    "kube-write:core/v1/ConfigMap",
    "kube-write:apps/v1/Deployment",
];

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match value(&args, "--role").as_deref() {
        None => driver(&args),
        Some("kube-sim") => serve(kube_sim_role(&args)),
        Some("host") => serve(host_role(&args)),
        Some(other) => bail!("unknown --role {other:?}"),
    }
}

fn work_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("owned-children-bench")
}

fn example_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/plugins/site-widgets")
}

/// Builds the example as its README says; returns the component's path.
fn build_example() -> Result<PathBuf> {
    let target = work_dir().join("example-target");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(["build", "--release", "--quiet", "--target", "wasm32-wasip2"])
        .arg("--target-dir")
        .arg(&target)
        .current_dir(example_dir())
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("CARGO_TARGET_DIR")
        .status()
        .context("running cargo")?;
    if !status.success() {
        bail!("building {} failed", example_dir().display());
    }
    Ok(target.join("wasm32-wasip2/release/site_widgets.wasm"))
}

fn driver(args: &[String]) -> Result<()> {
    let quick = args.iter().any(|a| a == "--quick");
    let widgets: usize = number(args, "--widgets", if quick { 100 } else { 1000 })?;
    let concurrency: u16 = number(args, "--concurrency", Settings::default().concurrency)?;
    let timeout = Duration::from_secs(number(args, "--timeout", 600)?);
    std::fs::create_dir_all(work_dir()).context("the work directory")?;
    let wasm = build_example()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("tokio")?;
    runtime.block_on(run(widgets, concurrency, timeout, &wasm))
}

fn widgets_api(client: &kube::Client) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("sites.example.com", "v1alpha1", "SiteWidget"),
        "sitewidgets",
    );
    Api::namespaced_with(client.clone(), NAMESPACE, &resource)
}

fn ready(object: &DynamicObject) -> bool {
    object.data["status"]["conditions"]
        .as_array()
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

async fn run(widgets: usize, concurrency: u16, timeout: Duration, wasm: &Path) -> Result<()> {
    let kubeconfig = work_dir().join("kube-sim.kubeconfig");
    // One Pod per widget, at most 110 per Node.
    let nodes = widgets.div_ceil(100).max(1);
    let mut kube_sim = Role::start(
        "kube-sim",
        "owned",
        &work_dir(),
        &[
            "--kubeconfig".into(),
            kubeconfig.display().to_string(),
            "--nodes".into(),
            nodes.to_string(),
        ],
    )
    .await?;
    kube_sim.ready().await?;
    let text = std::fs::read_to_string(&kubeconfig).context("the kubeconfig")?;
    let client = stack::client(&text).await?;
    let namespace: DynamicObject = serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
    )?;
    Api::<DynamicObject>::all_with(
        client.clone(),
        &ApiResource::erase::<k8s_openapi::api::core::v1::Namespace>(&()),
    )
    .create(&PostParams::default(), &namespace)
    .await
    .context("the namespace")?;

    let mut host = Role::start(
        "host",
        "owned",
        &work_dir(),
        &[
            "--kubeconfig".into(),
            kubeconfig.display().to_string(),
            "--wasm".into(),
            wasm.display().to_string(),
            "--concurrency".into(),
            concurrency.to_string(),
        ],
    )
    .await?;
    let said = host.ready().await?;
    let [idle_rss_kib, start_cpu_ms] = said
        .iter()
        .filter_map(|n| n.parse::<u64>().ok())
        .collect::<Vec<_>>()[..]
    else {
        bail!("the host said ready {said:?}, expected its RSS and CPU time")
    };
    tokio::time::sleep(Duration::from_millis(500)).await;

    let api = widgets_api(&client);
    let start = Instant::now();
    futures::stream::iter((0..widgets).map(|i| {
        let api = api.clone();
        async move {
            let widget: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "sites.example.com/v1alpha1", "kind": "SiteWidget",
                "metadata": {"name": format!("w{i:05}"), "namespace": NAMESPACE},
                "spec": {"replicas": 1},
            }))?;
            api.create(&PostParams::default(), &widget)
                .await
                .with_context(|| format!("creating widget {i}"))?;
            anyhow::Ok(())
        }
    }))
    .buffer_unordered(CREATES_IN_FLIGHT)
    .try_collect::<Vec<()>>()
    .await?;
    let created = start.elapsed().as_secs_f64();

    // Lists, not a watch: a watch consumer that falls behind sees Ready late, and that would be measured as the
    // host's time.
    let mut progress = Instant::now();
    let deadline = Instant::now() + timeout;
    let mut met: HashSet<String>;
    let total = loop {
        met = api
            .list(&ListParams::default())
            .await
            .context("listing the widgets")?
            .items
            .iter()
            .filter(|o| ready(o))
            .filter_map(|o| o.metadata.name.clone())
            .collect();
        if met.len() >= widgets {
            break Some(start.elapsed().as_secs_f64());
        }
        if Instant::now() > deadline {
            break None;
        }
        if progress.elapsed() > Duration::from_secs(5) {
            eprintln!(
                "  {} of {widgets} Ready after {:.0} s{}",
                met.len(),
                start.elapsed().as_secs_f64(),
                straggler(&client, &met, widgets).await
            );
            progress = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let writes: u64 = kube_sim
        .ask("writes")
        .await?
        .iter()
        .find_map(|w| w.parse().ok())
        .unwrap_or(0);
    let report = host.ask("report").await?;
    eprintln!("  kube-sim: {}", kube_sim.ask("watches").await?.join(" "));
    let put_back = match total {
        Some(_) => Some(put_back(&client, widgets.min(100)).await?),
        None => None,
    };
    let field = |name: &str| -> u64 {
        report
            .iter()
            .find_map(|w| w.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let (calls, failures) = (field("calls"), field("failures"));
    let cpu = field("cpu_ms").saturating_sub(start_cpu_ms) as f64 / 1000.0;
    let Some(total) = total else {
        bail!(
            "only {} of {widgets} widgets Ready after {} s ({calls} plugin calls, {failures} failed)",
            met.len(),
            timeout.as_secs()
        );
    };
    println!(
        "{widgets} SiteWidgets, each owning a ConfigMap and a Deployment: created in {created:.2} s, all Ready after \
         {total:.2} s; host CPU {cpu:.2} s; {calls} plugin calls ({failures} failed), {writes} writes sent \
         ({:.0}/s; {} applies answered from the cache); host RSS idle {:.1} MiB, peak {:.1} MiB",
        writes as f64 / total,
        (2 * calls).saturating_sub(writes),
        idle_rss_kib as f64 / 1024.0,
        field("hwm_kib") as f64 / 1024.0,
    );
    if let Some((deleted, median, max)) = put_back {
        println!(
            "{deleted} children deleted behind the plugin's back: put back after {:.0} ms (median), {:.0} ms (max)",
            median * 1000.0,
            max * 1000.0
        );
    }
    for role in [&mut host, &mut kube_sim] {
        role.stop().await;
    }
    Ok(())
}

/// What holds up the first widget not yet Ready: its condition and its Deployment's ready replicas, as the API
/// server has them.
async fn straggler(client: &kube::Client, met: &HashSet<String>, widgets: usize) -> String {
    let Some(name) = (0..widgets)
        .map(|i| format!("w{i:05}"))
        .find(|n| !met.contains(n))
    else {
        return String::new();
    };
    let widget = widgets_api(client).get_opt(&name).await.ok().flatten();
    let ready = widget
        .as_ref()
        .and_then(|w| w.data["status"]["conditions"].as_array().cloned())
        .and_then(|cs| cs.into_iter().find(|c| c["type"] == "Ready"))
        .map(|c| format!("{} {}", c["reason"], c["message"]))
        .unwrap_or_else(|| "no Ready condition".into());
    let deployments: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        NAMESPACE,
        &ApiResource::erase::<k8s_openapi::api::apps::v1::Deployment>(&()),
    );
    let deployment = deployments
        .get_opt(&name)
        .await
        .ok()
        .flatten()
        .map(|d| d.data["status"]["readyReplicas"].to_string())
        .unwrap_or_else(|| "no Deployment".into());
    format!("; {name}: Ready {ready}, Deployment readyReplicas {deployment}")
}

/// Deletes the settings ConfigMaps of the first `count` widgets, one after the other, and times each from its
/// deletion until the plugin has put it back (a new UID): the median and the longest, in seconds.
async fn put_back(client: &kube::Client, count: usize) -> Result<(usize, f64, f64)> {
    let config_maps: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        NAMESPACE,
        &ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()),
    );
    if count == 0 {
        return Ok((0, 0.0, 0.0));
    }
    let names: Vec<String> = (0..count).map(|i| format!("w{i:05}-settings")).collect();
    let mut before = Vec::new();
    for name in &names {
        let uid = config_maps.get(name).await?.metadata.uid;
        before.push(uid);
    }
    // A watch of our own sees each deletion as the API server delivers it to watchers: what separates the API
    // server's delivery from the host's reaction.
    let seen_deleted = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Instant>::new()));
    let watching = {
        let (config_maps, seen, names) = (config_maps.clone(), seen_deleted.clone(), names.clone());
        tokio::spawn(async move {
            let mut events = std::pin::pin!(kube::runtime::watcher(
                config_maps,
                kube::runtime::watcher::Config::default()
            ));
            while let Ok(Some(event)) = events.try_next().await {
                if let kube::runtime::watcher::Event::Delete(o) = event
                    && o.metadata.name.as_ref().is_some_and(|n| names.contains(n))
                    && let Ok(mut seen) = seen.lock()
                {
                    seen.push(Instant::now());
                }
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let start = Instant::now();
    let mut deleted_at = Vec::new();
    for name in &names {
        config_maps
            .delete(name, &Default::default())
            .await
            .with_context(|| format!("deleting {name}"))?;
        deleted_at.push(start.elapsed().as_secs_f64());
    }
    // One list every 50 ms (not a GET per child in a loop, which would starve the API server's watches and so
    // measure the bench, not the host).
    let mut back: Vec<Option<f64>> = vec![None; count];
    let deadline = Instant::now() + Duration::from_secs(60);
    while back.iter().any(Option::is_none) {
        if Instant::now() > deadline {
            let delivered = seen_deleted.lock().map(|s| s.len()).unwrap_or(0);
            bail!(
                "{} deleted children not put back within 60 s (the API server delivered {delivered} of the {count} \
                 deletions to a watcher of the driver's)",
                back.iter().filter(|b| b.is_none()).count()
            );
        }
        let listed = config_maps.list(&ListParams::default()).await?;
        let now = start.elapsed().as_secs_f64();
        for cm in &listed.items {
            let Some(i) = cm
                .metadata
                .name
                .as_ref()
                .and_then(|n| names.iter().position(|x| x == n))
            else {
                continue;
            };
            if back[i].is_none() && cm.metadata.uid != before[i] {
                back[i] = Some(now - deleted_at[i]);
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    watching.abort();
    let delivered: Vec<f64> = seen_deleted
        .lock()
        .map(|s| {
            s.iter()
                .map(|t| t.duration_since(start).as_secs_f64())
                .collect()
        })
        .unwrap_or_default();
    if let Some(last) = delivered.last() {
        eprintln!(
            "  the API server delivered {} of {count} deletions to a watcher, the last {:.0} ms after the last delete",
            delivered.len(),
            (last - deleted_at.last().copied().unwrap_or(0.0)) * 1000.0
        );
    }
    let mut times: Vec<f64> = back.into_iter().flatten().collect();
    times.sort_by(f64::total_cmp);
    Ok((count, times[count / 2], times[count - 1]))
}

async fn kube_sim_role(args: &[String]) -> Result<()> {
    let kubeconfig =
        PathBuf::from(value(args, "--kubeconfig").context("--kubeconfig is required")?);
    let nodes: usize = number(args, "--nodes", 1)?;
    let builder =
        kube_sim::KubeSim::builder().workloads(kube_sim::workloads::WorkloadOptions { nodes });
    let sim = stack::management_cluster(builder).await?;
    let crd = std::fs::read_to_string(example_dir().join("crd.yaml")).context("crd.yaml")?;
    sim.apply_yaml(&crd).await.context("the SiteWidget CRD")?;
    sim.write_kubeconfig(&kubeconfig, &sim.admin())?;
    ready_then_answer(&[sim.url()], |line| match line {
        // The plugin's writes as the API server saw them: applies of its children (the workload controllers
        // write in process, not through the API).
        "writes" => format!(
            "writes {}",
            sim.requests()
                .iter()
                .filter(|r| r.verb == "patch"
                    && r.subresource.is_empty()
                    && ["configmaps", "deployments"].contains(&r.resource.as_str()))
                .count()
        ),
        // How often each kind was watched: more watches than kinds means watches were closed and resumed.
        "watches" => {
            let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
            for r in sim.requests().iter().filter(|r| r.verb == "watch") {
                *counts.entry(r.resource.clone()).or_default() += 1;
            }
            let said: Vec<String> = counts.iter().map(|(k, n)| format!("{k}={n}")).collect();
            format!("watches {}", said.join(" "))
        }
        other => format!("{other} unknown"),
    })
    .await
}

/// The operator with the example plugin alone, with the grants it requests.
async fn host_role(args: &[String]) -> Result<()> {
    let kubeconfig =
        PathBuf::from(value(args, "--kubeconfig").context("--kubeconfig is required")?);
    let wasm = PathBuf::from(value(args, "--wasm").context("--wasm is required")?);
    let concurrency: u16 = number(args, "--concurrency", Settings::default().concurrency)?;
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(work_dir().join("plugin-cache")),
        ..RuntimeConfig::default()
    })?;
    let bytes = std::fs::read(&wasm).with_context(|| format!("reading {}", wasm.display()))?;
    let spec = PluginSpec::new("site-widgets", bytes).grants(Grants::parse(GRANTS)?);
    let settings = Settings {
        concurrency,
        ..Settings::default()
    };
    let metrics = settings.metrics.clone();
    let host = HostBuilder::new(runtime)
        .plugin(spec)
        .settings(settings)
        .load()
        .await?;
    let client = stack::client(&std::fs::read_to_string(&kubeconfig)?).await?;
    tokio::spawn(async move {
        if let Err(e) = host.run(client, std::future::pending()).await {
            eprintln!("the host's controllers stopped: {e:#}");
        }
    });
    ready_then_answer(
        &[proc_status_kib("VmRSS").to_string(), cpu_ms().to_string()],
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
