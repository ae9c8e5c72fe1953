//! `kube-sim`: run the in-memory Kubernetes API server and write a kubeconfig for kubectl.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Parser;
use kube_sim::{Anonymous, KubeSim};

#[derive(Parser)]
#[command(
    name = "kube-sim",
    version,
    about = "An in-memory Kubernetes API server for tests and local development"
)]
struct Args {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:6443")]
    listen: SocketAddr,
    /// Where to write the administrator's kubeconfig.
    #[arg(long, default_value = "kube-sim.kubeconfig")]
    kubeconfig_out: PathBuf,
    /// Serve plain HTTP; requests without credentials then act as the administrator (kubectl sends none over http).
    #[arg(long)]
    insecure_http: bool,
    /// Keep objects in this file across restarts.
    #[arg(long)]
    state: Option<PathBuf>,
    /// Over HTTPS, accept requests without credentials as system:anonymous (subject to RBAC).
    #[arg(long)]
    anonymous_auth: bool,
    /// Run the workload controllers: Deployments, StatefulSets, DaemonSets and Jobs get Pods that turn Ready
    /// on simulated Nodes, Jobs complete, Services get Endpoints.
    #[arg(long)]
    workloads: bool,
    /// Simulated Nodes with --workloads.
    #[arg(long, default_value_t = 1, requires = "workloads")]
    nodes: usize,
}

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let args = Args::parse();
    let mut b = KubeSim::builder()
        .listen(args.listen)
        .insecure_http(args.insecure_http);
    if args.anonymous_auth {
        b = b.anonymous(Anonymous::Unauthenticated);
    }
    if args.workloads {
        b = b.workloads(kube_sim::workloads::WorkloadOptions { nodes: args.nodes });
    }
    if let Some(s) = &args.state {
        b = b.state_file(s);
    }
    let sim = b.start().await.context("starting kube-sim")?;
    sim.write_kubeconfig(&args.kubeconfig_out, &sim.admin())?;
    println!("kube-sim serving at {}", sim.url());
    println!(
        "kubeconfig (cluster admin): {}",
        args.kubeconfig_out.display()
    );
    println!(
        "try: kubectl --kubeconfig {} get namespaces",
        args.kubeconfig_out.display()
    );
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    sim.stop().await;
    Ok(())
}
