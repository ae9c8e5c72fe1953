//! The admission webhook's answer time as the API server sees it (targets: p99 ≤ 2 ms at 8 clients, ≥ 10,000
//! reviews/s): the operator's webhook server over HTTPS with its own certificate (made in kube-sim's Secret, as in
//! a cluster), answering AdmissionReviews of OmniClusters with the built-in plugin's `validate` as a WebAssembly
//! component. Half the reviews are valid, half are refused with the Go operator's message. The client keeps one
//! connection per worker, as kube-apiserver's webhook client pools them.
//!
//! `cargo bench -p omni-operator --bench admission` (`-- --reviews N --clients N`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use omni_operator::admission::{self, AdmissionOptions, CertSettings, FailurePolicy};
use omni_operator::defaults;
use omni_operator::runtime::{PluginRegistry, PluginSpec, Runtime, RuntimeConfig};
use rustls::pki_types::pem::PemObject;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

mod support;

use support::number;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let reviews: usize = number(&args, "--reviews", 8000)?;
    let clients: usize = number(&args, "--clients", 8)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("tokio")?;
    runtime.block_on(run(reviews, clients.max(1)))
}

async fn run(reviews: usize, clients: usize) -> Result<()> {
    let sim = omni_operator::stack::management_cluster(kube_sim::KubeSim::builder()).await?;
    let client = sim.client().await?;
    let plugins = Runtime::new(RuntimeConfig::default())?;
    let registry = Arc::new(PluginRegistry::new());
    let built_in = defaults::PLUGINS
        .iter()
        .find(|p| p.name == "omni-cluster")
        .context("the omni-cluster plugin")?;
    registry.install(
        plugins
            .load(PluginSpec::new(built_in.name, built_in.wasm.to_vec()).grants(built_in.grants()?))
            .await?,
    );
    let served = admission::start(
        client,
        registry,
        AdmissionOptions {
            listen: "127.0.0.1:0".parse()?,
            deadline: Duration::from_secs(5),
            failure: FailurePolicy::Fail,
            certs: CertSettings {
                namespace: "default".into(),
                secret: "omni-operator-webhook-server-cert".into(),
                hosts: vec!["127.0.0.1".into()],
                webhook_configurations: Vec::new(),
            },
            check_every: Duration::from_secs(3600),
            preview: None,
        },
        std::future::pending::<()>(),
    )
    .await?;
    let ca = served.ca_bundle.clone().context("no certificate made")?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(ca.as_bytes()) {
        roots.add(cert?)?;
    }
    let tls = Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth(),
    );
    let path = admission::validate_path("omni.texashpc.com", "v1alpha1", "OmniCluster");

    let per_client = reviews.div_ceil(clients);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (tls, path, addr) = (tls.clone(), path.clone(), served.addr);
        tasks.push(tokio::spawn(async move {
            client_loop(tls, addr, &path, c, per_client).await
        }));
    }
    let mut times = Vec::new();
    let mut denied = 0;
    for t in tasks {
        let (mut got, d) = t.await??;
        times.append(&mut got);
        denied += d;
    }
    let wall = started.elapsed();
    times.sort();
    let pct = |p: f64| times[((times.len() as f64 * p) as usize).min(times.len() - 1)];
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "admission: {} OmniCluster reviews over HTTPS ({clients} connections), {denied} refused with the Go message",
        times.len()
    );
    println!(
        "  answer time p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms (target p99 ≤ 2 ms at 8 clients); {:.0} reviews/s (target ≥ 10,000)",
        ms(pct(0.50)),
        ms(pct(0.99)),
        ms(times[times.len() - 1]),
        times.len() as f64 / wall.as_secs_f64()
    );
    let stats = &served.webhooks.stats;
    let undecided = stats.undecided.load(std::sync::atomic::Ordering::Relaxed);
    if undecided > 0 {
        bail!("{undecided} reviews were not decided");
    }
    Ok(())
}

/// One connection: reviews sent one after another, each timed from the first byte sent to the last read.
async fn client_loop(
    tls: Arc<rustls::ClientConfig>,
    addr: std::net::SocketAddr,
    path: &str,
    client: usize,
    count: usize,
) -> Result<(Vec<Duration>, usize)> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1")?;
    let stream = tokio_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await?;
    let mut stream = BufReader::new(stream);
    let mut times = Vec::with_capacity(count);
    let mut denied = 0;
    for i in 0..count {
        let invalid = i % 2 == 1;
        let mut spec = json!({"connectionRef": {"name": "omni"}, "kubernetes": {"version": "v1.35.0"},
            "talos": {"version": "v1.13.2"}});
        if invalid {
            spec["syncInterval"] = json!("-5m");
            spec["deletePolicy"] = json!({"orphan": true, "destroyMachines": true});
        }
        let review = json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": format!("{client}-{i}"),
                "kind": {"group": "omni.texashpc.com", "version": "v1alpha1", "kind": "OmniCluster"},
                "resource": {"group": "omni.texashpc.com", "version": "v1alpha1", "resource": "omniclusters"},
                "name": format!("edge-{i}"), "namespace": "omni-system", "operation": "CREATE",
                "object": {"apiVersion": "omni.texashpc.com/v1alpha1", "kind": "OmniCluster",
                    "metadata": {"name": format!("edge-{i}"), "namespace": "omni-system"}, "spec": spec}}
        })
        .to_string();
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{review}",
            review.len()
        );
        let sent = Instant::now();
        stream.get_mut().write_all(request.as_bytes()).await?;
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            stream.read_line(&mut line).await?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse()?;
            }
        }
        let mut body = vec![0u8; length];
        stream.read_exact(&mut body).await?;
        times.push(sent.elapsed());
        let answer: serde_json::Value = serde_json::from_slice(&body)?;
        if answer["response"]["allowed"] == false {
            let message = answer["response"]["status"]["message"]
                .as_str()
                .unwrap_or_default();
            if !message.contains("is invalid: [spec.deletePolicy") {
                bail!("unexpected refusal: {message}");
            }
            denied += 1;
        }
        if (answer["response"]["allowed"] == false) != invalid {
            bail!("review {i}: expected allowed={}, got {answer}", !invalid);
        }
    }
    Ok((times, denied))
}
