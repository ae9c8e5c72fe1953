//! End-to-end reconcile rate of child objects: the built-in plugins in the real runtime, their controllers, and
//! kube-sim with the CRDs. Prints objects per second from the first create to the last `Accepted=True`.
//!
//! Run: `cargo bench -p omni-operator --bench reconcile_rate` (`-- --quick` for 200 objects).

use omni_operator::controllers::metrics::Count;
use std::time::{Duration, Instant};

use omni_operator::controllers::Settings;
use omni_operator::runtime::{Runtime, RuntimeConfig};
use omni_operator::stack::{self, HostBuilder};
use serde_json::json;

const API: &str = "omni.texashpc.com/v1alpha1";

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let n: usize = if quick { 200 } else { 1000 };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    rt.block_on(async move {
        let sim = stack::management_cluster(kube_sim::KubeSim::builder()).await.expect("kube-sim");
        sim.apply(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}})).await.expect("ns");
        sim.apply(&json!({"apiVersion": API, "kind": "OmniCluster", "metadata": {"name": "edge", "namespace": "bench"},
            "spec": {"connectionRef": {"name": "c"}, "kubernetes": {"version": "v1.35.0"}, "talos": {"version": "v1.13.2"}}}))
            .await
            .expect("cluster");
        let runtime = Runtime::new(RuntimeConfig::default()).expect("runtime");
        let settings = Settings { concurrency: 8, ..Settings::default() };
        let metrics = settings.metrics.clone();
        // The plugins are compiled before the clock starts (seconds, and not what this measures); the controllers
        // then get 300 ms to list and watch.
        let host = HostBuilder::new(runtime)
            .built_ins()
            .expect("the built-in plugins")
            .settings(settings)
            .load()
            .await
            .expect("the plugins load");
        let client = sim.client().await.expect("client");
        tokio::spawn(host.run(client, std::future::pending()));
        tokio::time::sleep(Duration::from_millis(300)).await;

        let start = Instant::now();
        for i in 0..n {
            let id = format!("{:08x}-1111-4111-8111-111111111111", i);
            sim.apply(&json!({"apiVersion": API, "kind": "OmniMachine", "metadata": {"name": id, "namespace": "bench"},
                "spec": {"clusterRef": {"name": "edge"}}}))
                .await
                .expect("machine");
        }
        let created = start.elapsed();
        loop {
            let done = sim
                .list(API, "OmniMachine", Some("bench"))
                .iter()
                .filter(|o| o["status"]["conditions"].as_array().is_some_and(|cs| cs.iter().any(|c| c["type"] == "Accepted" && c["status"] == "True")))
                .count();
            if done == n {
                break;
            }
            if start.elapsed() > Duration::from_secs(300) {
                panic!("only {done} of {n} reconciled after 300 s");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let total = start.elapsed();
        println!(
            "{n} OmniMachines created in {:.2} s, all Accepted after {:.2} s: {:.0} objects/s end to end ({} plugin calls)",
            created.as_secs_f64(),
            total.as_secs_f64(),
            n as f64 / total.as_secs_f64(),
            metrics.total(Count::PluginCalls)
        );
    });
}
