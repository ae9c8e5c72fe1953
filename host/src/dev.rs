//! `omni-operator dev`: the whole system on one machine. The embedded Kubernetes simulator (kube-sim) with the
//! CRDs installed, the plugins and their controllers, the user's manifests applied, and progress shown until
//! every object a plugin reconciles is ready.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::controllers::Settings;
use crate::operator::{Operator, PluginSources};
use crate::runtime::{Runtime, RuntimeConfig};

pub struct DevOptions {
    pub apply: Vec<PathBuf>,
    pub kubeconfig_out: Option<PathBuf>,
    pub listen: std::net::SocketAddr,
    pub exit_when_settled: bool,
    pub timeout: Duration,
    pub sources: PluginSources,
    pub cache_dir: Option<PathBuf>,
}

/// One applied object and what became of it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Progress {
    Ready(String),
    Waiting(String),
    /// No loaded plugin reconciles its kind.
    Unmanaged,
}

/// Runs until settled (with `exit_when_settled`), or until Ctrl-C. Ok(false) means it gave up at the timeout.
pub async fn run(opts: DevOptions) -> Result<bool> {
    let started = Instant::now();
    let sim = kube_sim::KubeSim::builder().listen(opts.listen).start().await.context("starting the Kubernetes simulator")?;
    let kubeconfig = opts.kubeconfig_out.clone().unwrap_or_else(|| std::env::temp_dir().join("omni-operator-dev.kubeconfig"));
    sim.write_kubeconfig(&kubeconfig, &sim.admin())?;
    println!("Kubernetes simulator at {} (kubeconfig: {})", sim.url(), kubeconfig.display());
    println!("  try: kubectl --kubeconfig {} get omni -A", kubeconfig.display());

    for crd in omni_api::crds::all() {
        sim.apply(&crd).await.context("installing the CRDs")?;
    }
    let cache_dir = opts.cache_dir.clone().or_else(|| Some(std::env::temp_dir().join("omni-operator-cache")));
    let runtime = Runtime::new(RuntimeConfig { cache_dir, ..RuntimeConfig::default() })?;
    let operator = Operator::load(runtime, opts.sources.clone()).await?;
    let mut kinds: BTreeMap<(String, String), String> = BTreeMap::new();
    for p in operator.plugins() {
        for k in &p.info().kinds {
            kinds.insert((k.api_version(), k.kind.clone()), p.name().to_string());
        }
        println!("plugin {} {} ({}) reconciles {}", p.name(), p.info().version, p.digest(), p.info().kinds.iter().map(|k| k.kind.as_str()).collect::<Vec<_>>().join(", "));
    }

    let client = sim.client().await?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let shutdown = {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    };
    let controllers = tokio::spawn(async move { operator.run(client, Settings::default(), shutdown).await });

    let mut applied = Vec::new();
    for dir in &opts.apply {
        for (file, obj) in manifests(dir)? {
            let id = identity(&obj);
            match sim.apply(&obj).await {
                Ok(_) => applied.push(id),
                Err(e) => bail!("applying {} from {}: {e:#}", id.3, file.display()),
            }
        }
    }
    println!("applied {} objects; started in {} ms", applied.len(), started.elapsed().as_millis());

    let mut shown: BTreeMap<String, Progress> = BTreeMap::new();
    let deadline = Instant::now() + opts.timeout;
    let settled = loop {
        let mut all_ready = true;
        for (api_version, kind, ns, name) in &applied {
            if !kinds.contains_key(&(api_version.clone(), kind.clone())) {
                if is_omni(api_version) {
                    report(&mut shown, kind, ns, name, Progress::Unmanaged);
                }
                continue;
            }
            let p = match sim.get(api_version, kind, ns, name) {
                Some(obj) => progress(&obj),
                None => Progress::Waiting("deleted".into()),
            };
            all_ready &= matches!(p, Progress::Ready(_));
            report(&mut shown, kind, ns, name, p);
        }
        if all_ready {
            println!("all {} reconciled objects are ready", shown.values().filter(|p| matches!(p, Progress::Ready(_))).count());
            break true;
        }
        if opts.exit_when_settled && Instant::now() > deadline {
            println!("not settled after {} s:", opts.timeout.as_secs());
            for (who, p) in &shown {
                if let Progress::Waiting(why) = p {
                    println!("  {who}: {why}");
                }
            }
            break false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    if !opts.exit_when_settled {
        println!("running; Ctrl-C to stop");
        tokio::signal::ctrl_c().await.context("waiting for Ctrl-C")?;
    }
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(2), controllers).await;
    sim.stop().await;
    Ok(settled)
}

fn is_omni(api_version: &str) -> bool {
    api_version.starts_with("omni.texashpc.com/")
}

/// Ready when the latest generation was observed and the object's readiness condition (Ready, or Accepted for
/// kinds that only report that) is True.
fn progress(obj: &Value) -> Progress {
    let generation = obj["metadata"]["generation"].as_i64();
    let observed = obj["status"]["observedGeneration"].as_i64();
    let conditions = obj["status"]["conditions"].as_array().cloned().unwrap_or_default();
    let find = |t: &str| conditions.iter().find(|c| c["type"] == t).cloned();
    let Some(c) = find("Ready").or_else(|| find("Accepted")) else {
        return Progress::Waiting("not reconciled yet".into());
    };
    let describe = format!(
        "{}={} {}: {}",
        c["type"].as_str().unwrap_or_default(),
        c["status"].as_str().unwrap_or_default(),
        c["reason"].as_str().unwrap_or_default(),
        c["message"].as_str().unwrap_or_default()
    );
    if c["status"] == "True" && observed.is_some() && observed == generation {
        Progress::Ready(describe)
    } else {
        Progress::Waiting(describe)
    }
}

fn report(shown: &mut BTreeMap<String, Progress>, kind: &str, ns: &str, name: &str, p: Progress) {
    let who = format!("{kind} {ns}/{name}");
    if shown.get(&who) == Some(&p) {
        return;
    }
    match &p {
        Progress::Ready(why) => println!("  ready    {who}  {why}"),
        Progress::Waiting(why) => println!("  waiting  {who}  {why}"),
        Progress::Unmanaged => println!("  skipped  {who}  (no plugin reconciles {kind} in this version)"),
    }
    shown.insert(who, p);
}

fn identity(obj: &Value) -> (String, String, String, String) {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let ns = obj["metadata"]["namespace"].as_str().unwrap_or("default").to_string();
    (s(&obj["apiVersion"]), s(&obj["kind"]), ns, s(&obj["metadata"]["name"]))
}

/// Every object in the YAML/JSON files of a directory (or one file), in file-name order.
fn manifests(path: &Path) -> Result<Vec<(PathBuf, Value)>> {
    let mut files = Vec::new();
    if path.is_dir() {
        for entry in std::fs::read_dir(path).with_context(|| format!("reading {}", path.display()))? {
            let p = entry.with_context(|| format!("reading {}", path.display()))?.path();
            if matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml" | "json")) {
                files.push(p);
            }
        }
        files.sort();
    } else {
        files.push(path.to_path_buf());
    }
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
        for obj in kube_sim::yaml_documents(&text).with_context(|| format!("parsing {}", f.display()))? {
            out.push((f.clone(), obj));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn readiness_needs_the_current_generation_and_a_true_condition() {
        let ready = json!({"metadata": {"generation": 2}, "status": {"observedGeneration": 2, "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "ok"}]}});
        assert!(matches!(progress(&ready), Progress::Ready(_)));
        let stale = json!({"metadata": {"generation": 3}, "status": {"observedGeneration": 2, "conditions": [{"type": "Accepted", "status": "True"}]}});
        assert!(matches!(progress(&stale), Progress::Waiting(_)));
        let failing = json!({"metadata": {"generation": 1}, "status": {"observedGeneration": 1, "conditions": [
            {"type": "Accepted", "status": "True"}, {"type": "Ready", "status": "False", "reason": "PluginTimeout", "message": "m"}]}});
        assert_eq!(progress(&failing), Progress::Waiting("Ready=False PluginTimeout: m".into()), "Ready wins over Accepted");
        assert!(matches!(progress(&json!({"metadata": {}})), Progress::Waiting(_)));
    }
}
