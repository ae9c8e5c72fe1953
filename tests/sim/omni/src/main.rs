//! `omni-sim`: runs the Omni simulator, mints an Operator key for `omni-operator` and prints how to use it.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use std::net::SocketAddr;

use anyhow::Result;
use clap::Parser;
use omni_sim::{KeyOptions, OmniSim, Role};

#[derive(Parser, Debug)]
#[command(
    name = "omni-sim",
    about = "An in-memory Omni API server for tests and local development"
)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8099")]
    listen: SocketAddr,
    /// Serve TLS with a generated CA (written to stderr) instead of plaintext h2c.
    #[arg(long)]
    tls: bool,
    /// The Omni account name (JWT issuer, kubeconfig names).
    #[arg(long, default_value = "omni-sim")]
    account_name: String,
    /// The Kubernetes proxy URL minted kubeconfigs point at.
    #[arg(long)]
    kubernetes_proxy_url: Option<String>,
}

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "omni_sim=info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let mut builder = OmniSim::builder()
        .listen(args.listen)
        .tls(args.tls)
        .account_name(&args.account_name);
    if let Some(url) = &args.kubernetes_proxy_url {
        builder = builder.kubernetes_proxy_url(url);
    }
    let sim = builder.start().await?;
    let key = sim.try_mint_key_with(KeyOptions::new("omni-operator", Role::Operator))?;
    println!("OMNI_ENDPOINT={}", sim.endpoint());
    println!("OMNI_SERVICE_ACCOUNT_KEY={key}");
    println!(
        "# kubectl -n omni-system create secret generic omni-service-account --from-literal=serviceAccountKey=\"$OMNI_SERVICE_ACCOUNT_KEY\""
    );
    if let Some(ca) = sim.ca_pem() {
        eprintln!("# TLS CA certificate (or set insecureSkipTLSVerify):\n{ca}");
    }
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    tokio::signal::ctrl_c().await?;
    sim.stop().await;
    Ok(())
}
