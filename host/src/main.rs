//! `omni-operator`: the operator binary. Until the controllers land, it inspects and runs plugins, which is
//! what a plugin author needs first: does my component load under these grants, and what does it return?

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use omni_operator::capabilities::{CallObject, Grants, HostServices, Outputs};
use omni_operator::runtime::{CallError, LoadedPlugin, PluginSpec, Runtime, RuntimeConfig};
use serde_json::{Value, json};

#[derive(Parser)]
#[command(version, about = "The omni-cluster-operator host")]
struct Cli {
    /// Keep precompiled plugins here across runs.
    #[arg(long, env = "OMNI_OPERATOR_CACHE_DIR", global = true)]
    cache_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Load a plugin and print what it is, what it imports, and whether its grants cover that.
    Inspect(PluginArgs),
    /// Run one reconcile of an object (JSON file) and print the outputs the operator would commit.
    /// There is no Kubernetes behind `kube-read` here: reads answer `unavailable`.
    Reconcile {
        #[command(flatten)]
        plugin: PluginArgs,
        /// The object, as JSON.
        #[arg(long)]
        object: PathBuf,
    },
}

#[derive(clap::Args)]
struct PluginArgs {
    /// The plugin component (`.wasm`, built for wasm32-wasip2).
    wasm: PathBuf,
    /// A capability to grant (repeatable): kube-read, kube-write, secrets, omni, workload, helm, files, clock, …
    #[arg(long = "grant", value_name = "CAPABILITY")]
    grants: Vec<String>,
    /// The name to load it under; defaults to the file name.
    #[arg(long)]
    name: Option<String>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match run(Cli::parse()).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: cli.cache_dir,
        ..RuntimeConfig::default()
    })?;
    match cli.command {
        Command::Inspect(args) => {
            let plugin = load(&runtime, &args).await?;
            let info = plugin.info();
            let report = json!({
                "name": info.name,
                "version": info.version,
                "digest": plugin.digest().to_string(),
                "kinds": info.kinds.iter().map(|k| format!("{}/{}", k.api_version(), k.kind)).collect::<Vec<_>>(),
                "finalizer": info.finalizer,
                "declaredCapabilities": info.capabilities,
                "imports": plugin.imports(),
            });
            println!("{}", serde_json::to_string_pretty(&report)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Reconcile { plugin, object } => {
            let loaded = load(&runtime, &plugin).await?;
            let json = std::fs::read_to_string(&object)
                .with_context(|| format!("reading {}", object.display()))?;
            let object = CallObject::parse(json)
                .with_context(|| format!("{} is not a JSON object", object.display()))?;
            match loaded.reconcile(&object, &HostServices::default()).await {
                Ok(done) => {
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&outputs_json(&done.outputs))?
                    );
                    Ok(ExitCode::SUCCESS)
                }
                Err(CallError::Failed { error, .. }) => {
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&json!({ "error": error.to_string() }))?
                    );
                    Ok(ExitCode::from(2))
                }
                Err(CallError::Aborted(e)) => Err(e.into()),
            }
        }
    }
}

async fn load(
    runtime: &Runtime,
    args: &PluginArgs,
) -> anyhow::Result<std::sync::Arc<LoadedPlugin>> {
    let name = match &args.name {
        Some(name) => name.clone(),
        None => args
            .wasm
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "plugin".into()),
    };
    let grants = Grants::parse(&args.grants)?;
    let spec = PluginSpec::from_file(name, &args.wasm)
        .with_context(|| format!("reading {}", args.wasm.display()))?;
    Ok(runtime.load(spec.grants(grants)).await?)
}

fn outputs_json(outputs: &Outputs) -> Value {
    json!({
        "status": outputs.status,
        "conditions": outputs.conditions.iter().map(|c| json!({
            "type": c.type_, "status": c.status.as_str(), "reason": c.reason, "message": c.message,
        })).collect::<Vec<_>>(),
        "events": outputs.events.iter().map(|e| json!({
            "type": format!("{:?}", e.type_), "reason": e.reason, "message": e.message,
        })).collect::<Vec<_>>(),
        "requeueAfterMs": outputs.requeue_after.map(|d| d.as_millis() as u64),
        "logs": outputs.logs.iter().map(|l| format!("{:?} {:?}: {}", l.source, l.level, l.message)).collect::<Vec<_>>(),
    })
}
