//! kube-sim throughput: writes per second over HTTPS from concurrent kube-rs clients, and watch delivery
//! latency with 10 concurrent watchers. Prints figures; asserts nothing (targets: ≥ 5,000 writes/s,
//! p99 delivery ≤ 5 ms on a 2-core machine).
//!
//! Run: `cargo bench -p kube-sim --bench throughput` (add `-- --quick` for a short run).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{AsyncBufReadExt, TryStreamExt};
use kube_sim::KubeSim;
use serde_json::json;

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx]
}

async fn post(client: &kube::Client, name: &str, stamp_ns: u128) {
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "annotations": {"bench/sent-ns": stamp_ns.to_string()}}, "data": {"k": "v"}});
    let req = http::Request::post(CONFIGMAPS)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body).expect("json"))
        .expect("request");
    client.request_text(req).await.expect("write succeeds");
}

async fn writes_per_second(sim: &KubeSim, writers: usize, total: usize) -> f64 {
    let clients: Vec<kube::Client> = futures::future::join_all((0..writers).map(|_| sim.client()))
        .await
        .into_iter()
        .map(|c| c.expect("client"))
        .collect();
    let start = Instant::now();
    let per = total / writers;
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(w, c)| {
            tokio::spawn(async move {
                for i in 0..per {
                    post(&c, &format!("w{w}-{i}"), 0).await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("writer");
    }
    let secs = start.elapsed().as_secs_f64();
    // Every namespace also holds its `kube-root-ca.crt` ConfigMap.
    let stored = sim
        .list("v1", "ConfigMap", Some("default"))
        .iter()
        .filter(|c| {
            c["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with('w'))
        })
        .count();
    assert_eq!(stored, per * writers, "every write is stored");
    (per * writers) as f64 / secs
}

async fn watch_latency(
    sim: &KubeSim,
    watchers: usize,
    events: usize,
    rate_per_sec: u64,
) -> Vec<f64> {
    let epoch = Arc::new(Instant::now());
    let rv = sim.resource_version();
    let mut handles = Vec::new();
    for _ in 0..watchers {
        let c = sim.client().await.expect("client");
        let epoch = epoch.clone();
        let req = http::Request::get(format!("{CONFIGMAPS}?watch=true&resourceVersion={rv}"))
            .body(Vec::new())
            .expect("req");
        let mut lines = c.request_stream(req).await.expect("watch").lines();
        handles.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(events);
            while lat.len() < events {
                let Ok(Ok(Some(line))) =
                    tokio::time::timeout(Duration::from_secs(30), lines.try_next()).await
                else {
                    break;
                };
                let now = epoch.elapsed().as_nanos();
                let ev: serde_json::Value = serde_json::from_str(&line).expect("event");
                if let Some(sent) = ev["object"]["metadata"]["annotations"]["bench/sent-ns"]
                    .as_str()
                    .and_then(|s| s.parse::<u128>().ok())
                {
                    lat.push((now.saturating_sub(sent)) as f64 / 1e6);
                }
            }
            lat
        }));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let writer = sim.client().await.expect("client");
    let gap = Duration::from_micros(1_000_000 / rate_per_sec);
    for i in 0..events {
        let sent = epoch.elapsed().as_nanos();
        post(&writer, &format!("lat-{i}"), sent).await;
        tokio::time::sleep(gap).await;
    }
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.await.expect("watcher"));
    }
    all.sort_by(|a, b| a.total_cmp(b));
    all
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let total = if quick { 2_000 } else { 20_000 };
        for writers in [1, 8, 32] {
            let sim = KubeSim::start().await.expect("sim");
            let wps = writes_per_second(&sim, writers, total).await;
            println!("writes/s over HTTPS, {writers:>2} concurrent kube-rs clients, {total} creates: {wps:>8.0}");
        }
        let sim = KubeSim::start().await.expect("sim");
        let events = if quick { 200 } else { 2_000 };
        let lat = watch_latency(&sim, 10, events, 500).await;
        println!(
            "watch delivery latency, 10 watchers, {} deliveries at 500 writes/s: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            lat.len(),
            percentile(&lat, 0.5),
            percentile(&lat, 0.99),
            lat.last().copied().unwrap_or(f64::NAN)
        );
    });
}
