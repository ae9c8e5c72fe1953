//! Hot swap under load: 1,000 OmniControlPlanes served by a bound plugin (`widget` v1, a signed `file://`
//! artifact), then the Plugin's artifact changed to v2. Prints:
//! * **swap**: from the Plugin update until the new digest serves every object's next call (the route is
//!   published; calls in flight finish on v1);
//! * **re-evaluated**: until every object's status says v2 answered (each object reconciled again, at the
//!   controller's concurrency);
//! * **failed**: reconciles that failed from the update to the end (target 0).
//!
//! Run: `cargo bench -p omni-operator --bench plugin_swap` (`-- --quick` for 200 objects).

#[path = "../tests/runtime/guests.rs"]
mod guests;

use omni_operator::controllers::metrics::Count;
use std::time::{Duration, Instant};

use omni_operator::controllers::Settings;
use omni_operator::distribution::signature;
use omni_operator::platform::PlatformOptions;
use omni_operator::runtime::{KindKey, Runtime, RuntimeConfig};
use omni_operator::stack::{self, HostBuilder};
use serde_json::{Value, json};

const API: &str = "omni.texashpc.com/v1alpha1";
const PLATFORM: &str = "plugins.omni.texashpc.com/v1alpha1";

fn served_by(o: &Value, version: &str) -> bool {
    o["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Accepted" && c["reason"] == format!("ServedBy{version}"))
    })
}

fn plugin(path: &std::path::Path, public: &str) -> Value {
    json!({"apiVersion": PLATFORM, "kind": "Plugin", "metadata": {"name": "widget"},
        "spec": {"artifact": format!("file://{}", path.display()), "grants": ["clock"],
            "verification": {"publicKeys": [{"name": "release", "pem": public}]}}})
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let n: usize = if quick { 200 } else { 1000 };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    rt.block_on(async move {
        let dir = tempfile::tempdir().expect("tempdir");
        let (private, public) = signature::generate_key_pair(b"pw").expect("keygen");
        let mut paths = Vec::new();
        for (guest, file) in [("widget", "v1.wasm"), ("widget_v2", "v2.wasm")] {
            let wasm = guests::wasm(guest);
            let path = dir.path().join(file);
            std::fs::write(&path, &wasm).expect("write");
            let sig = signature::sign_blob(&wasm, private.as_bytes(), b"pw").expect("sign");
            std::fs::write(dir.path().join(format!("{file}.sig")), sig).expect("write sig");
            paths.push(path);
        }

        let sim = stack::management_cluster(kube_sim::KubeSim::builder()).await.expect("kube-sim");
        sim.apply(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}))
            .await
            .expect("ns");
        let runtime = Runtime::new(RuntimeConfig::default()).expect("runtime");
        let settings = Settings { concurrency: 8, ..Settings::default() };
        let metrics = settings.metrics.clone();
        let host = HostBuilder::new(runtime)
            .built_ins()
            .expect("the built-in plugins")
            .settings(settings)
            .platform(PlatformOptions::default())
            .start(sim.kubeconfig(&sim.admin()))
            .await
            .expect("host");
        sim.apply(&plugin(&paths[0], &public)).await.expect("plugin");
        sim.apply(&json!({"apiVersion": PLATFORM, "kind": "ClusterPluginBinding", "metadata": {"name": "widget"},
            "spec": {"plugin": "widget", "grants": ["clock"]}}))
            .await
            .expect("binding");
        for i in 0..n {
            sim.apply(&json!({"apiVersion": API, "kind": "OmniControlPlane",
                "metadata": {"name": format!("cp-{i}"), "namespace": "bench"},
                "spec": {"clusterRef": {"name": "edge"}, "machines": ["11111111-1111-4111-8111-111111111111"]}}))
                .await
                .expect("control plane");
        }
        let wait = |version: &'static str, limit: Duration| {
            let sim = &sim;
            async move {
                let start = Instant::now();
                loop {
                    let done = sim
                        .list(API, "OmniControlPlane", Some("bench"))
                        .iter()
                        .filter(|o| served_by(o, version))
                        .count();
                    if done == n {
                        return start.elapsed();
                    }
                    assert!(start.elapsed() < limit, "only {done} of {n} served by {version}");
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        };
        wait("v1", Duration::from_secs(300)).await;
        let failed_before = metrics.total(Count::PluginCallFailures);
        let calls_before = metrics.total(Count::PluginCalls);

        // The swap. The registry in this process tells when v2's route is published.
        let key = KindKey::new("omni.texashpc.com", "OmniControlPlane");
        let v1 = host.registry().serving(&key, Some("bench"), "x").expect("v1 serves").digest();
        let start = Instant::now();
        sim.apply(&plugin(&paths[1], &public)).await.expect("update");
        let swap = loop {
            let serving = host.registry().serving(&key, Some("bench"), "x").map(|p| p.digest());
            if serving.is_some_and(|d| d != v1) {
                break start.elapsed();
            }
            assert!(start.elapsed() < Duration::from_secs(60), "v2 never took over");
            tokio::time::sleep(Duration::from_millis(1)).await;
        };
        wait("v2", Duration::from_secs(300)).await;
        let reevaluated = start.elapsed();
        let failed = metrics.total(Count::PluginCallFailures) - failed_before;
        let calls = metrics.total(Count::PluginCalls) - calls_before;
        println!(
            "plugin_swap: {n} objects: swap {:.1} ms (update applied -> new digest serves every next call), \
             re-evaluated {:.0} ms (every object answered by v2), {calls} calls, {failed} failed",
            swap.as_secs_f64() * 1000.0,
            reevaluated.as_secs_f64() * 1000.0,
        );
        drop(host);
    });
}
