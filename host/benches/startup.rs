//! Start-up to first reconcile: `omni-operator run` started as a process against kube-sim that already holds an
//! OmniControlPlane, until the object's `Accepted=True` is stored. The time runs from the process's spawn and
//! includes loading the eight built-in plugins from the compiled-component cache (warmed by a first, unmeasured
//! start), the client's set-up, the watches' first lists, the reconcile and its status write. Target ≤ 300 ms.
//!
//! `cargo bench -p omni-operator --bench startup` (`-- --runs N`, default 7). Prints figures; asserts nothing.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::json;

fn accepted(sim: &kube_sim::KubeSim, name: &str) -> bool {
    sim.get("omni.texashpc.com/v1alpha1", "OmniControlPlane", name, name)
        .and_then(|o| {
            o["status"]["conditions"].as_array().map(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Accepted" && c["status"] == "True")
            })
        })
        .unwrap_or(false)
}

fn start(kubeconfig: &Path, cache: &Path, log: &Path, namespace: &str) -> Result<Child> {
    let stderr =
        std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    Command::new(env!("CARGO_BIN_EXE_omni-operator"))
        .env("RUST_LOG", "warn")
        .env_remove("HELM_C_LIB")
        .env_remove("POD_NAMESPACE")
        .arg("--cache-dir")
        .arg(cache)
        .args(["run", "--kubeconfig"])
        .arg(kubeconfig)
        .args([
            "--namespace",
            namespace,
            "--enable-webhooks=false",
            "--health-probe-bind-address",
            "0",
        ])
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .context("starting omni-operator run")
}

/// Spawns the operator watching a namespace of its own, `name`, that holds one OmniControlPlane (and the
/// OmniCluster it names), and waits for the control plane to be accepted; the time from spawn.
fn first_reconcile(
    sim: &kube_sim::KubeSim,
    runtime: &tokio::runtime::Runtime,
    dir: &Path,
    name: &str,
) -> Result<Duration> {
    runtime.block_on(async {
        sim.apply(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}))
            .await?;
        sim.apply(&json!({"apiVersion": "omni.texashpc.com/v1alpha1", "kind": "OmniCluster",
            "metadata": {"name": "edge", "namespace": name},
            "spec": {"connectionRef": {"name": "c"}, "kubernetes": {"version": "v1.35.0"},
                "talos": {"version": "v1.13.2"}}}))
            .await?;
        sim.apply(&json!({"apiVersion": "omni.texashpc.com/v1alpha1", "kind": "OmniControlPlane",
            "metadata": {"name": name, "namespace": name},
            "spec": {"clusterRef": {"name": "edge"}, "machines": ["11111111-1111-4111-8111-111111111111"]}}))
            .await
    })?;
    let spawned = Instant::now();
    let mut child = start(
        &dir.join("kubeconfig"),
        &dir.join("cache"),
        &dir.join(format!("{name}.log")),
        name,
    )?;
    let took = loop {
        if accepted(sim, name) {
            break spawned.elapsed();
        }
        if spawned.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            bail!(
                "{name} was not accepted within 300 s; see {}",
                dir.join(format!("{name}.log")).display()
            );
        }
        if let Some(status) = child.try_wait()? {
            bail!(
                "omni-operator exited ({status}); see {}",
                dir.join(format!("{name}.log")).display()
            );
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let _ = child.kill();
    let _ = child.wait();
    Ok(took)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runs: usize = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .map(|n| n.parse())
        .transpose()
        .context("--runs: not a number")?
        .unwrap_or(7);
    let runtime = tokio::runtime::Runtime::new().context("tokio")?;
    let sim = runtime.block_on(omni_operator::stack::management_cluster(
        kube_sim::KubeSim::builder(),
    ))?;
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("startup-bench");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let _ = std::fs::remove_dir_all(dir.join("cache"));
    let credentials = sim.add_token_user("operator", &["system:masters"]);
    sim.write_kubeconfig(&dir.join("kubeconfig"), &credentials)?;

    // The first start compiles the components into the cache; it is not what a restarted operator pays.
    let cold = first_reconcile(&sim, &runtime, &dir, "cold")?;
    let mut warm: Vec<Duration> = (0..runs)
        .map(|i| first_reconcile(&sim, &runtime, &dir, &format!("warm-{i}")))
        .collect::<Result<_>>()?;
    warm.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "startup: process spawn → first object reconciled and its status stored, warm compile cache: median {:.0} ms, \
         min {:.0} ms, max {:.0} ms over {runs} starts (target ≤ 300 ms); cold cache (compiling 8 plugins): {:.0} ms",
        ms(warm[warm.len() / 2]),
        ms(warm[0]),
        ms(warm[warm.len() - 1]),
        ms(cold)
    );
    Ok(())
}
