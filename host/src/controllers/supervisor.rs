//! One controller per kind something serves, kept in step with the registry: a kind that a new plugin or
//! binding introduces gets its controller, a kind nothing serves any more has its controller stopped, and a
//! kind whose set of related kinds changed (a binding's plugin watches other kinds) has it restarted. A kind
//! whose controller fails (its CRD is not installed, say) is reported and tried again at the next change; the
//! others keep serving.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use anyhow::Result;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{Settings, run_kind_controller};
use crate::runtime::{Gvk, KindKey, PluginRegistry, RelatedKind};

/// How often controllers that failed are started again.
const RETRY: std::time::Duration = std::time::Duration::from_secs(15);

/// What a kind's controller is started with; a change restarts it.
#[derive(Debug, Clone, PartialEq)]
struct Plan {
    gvk: Gvk,
    related: Vec<RelatedKind>,
}

struct Running {
    plan: Plan,
    stop: watch::Sender<bool>,
    task: JoinHandle<Result<()>>,
}

/// The controllers every kind needs now, from every version that may serve it.
fn plans(registry: &PluginRegistry) -> BTreeMap<KindKey, Plan> {
    registry
        .kinds()
        .into_iter()
        .map(|(key, (gvk, plugins))| {
            let mut related: Vec<RelatedKind> = Vec::new();
            for r in plugins.iter().flat_map(|p| p.info().related.iter()) {
                if !related.contains(r) {
                    related.push(r.clone());
                }
            }
            // Order does not matter to the controller, so it must not restart it either.
            related.sort_by_key(|r| format!("{r:?}"));
            (key, Plan { gvk, related })
        })
        .collect()
}

/// Runs controllers until `shutdown` resolves, then waits for them to finish their reconciles.
pub async fn supervise(
    client: kube::Client,
    registry: Arc<PluginRegistry>,
    settings: Settings,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + Clone + 'static,
) -> Result<()> {
    let mut running: BTreeMap<KindKey, Running> = BTreeMap::new();
    let mut changes = registry.subscribe();
    loop {
        let wanted = plans(&registry);
        let stale: BTreeSet<KindKey> = running
            .iter()
            .filter(|(key, r)| wanted.get(*key) != Some(&r.plan) || r.task.is_finished())
            .map(|(key, _)| key.clone())
            .collect();
        for key in stale {
            if let Some(r) = running.remove(&key) {
                let _ = r.stop.send(true);
                finish(&key, r.task).await;
            }
        }
        for (key, plan) in wanted {
            if running.contains_key(&key) {
                continue;
            }
            let (stop, mut stopped) = watch::channel(false);
            let end = shutdown.clone();
            let task = tokio::spawn(run_kind_controller(
                client.clone(),
                registry.clone(),
                plan.gvk.clone(),
                plan.related.clone(),
                settings.clone(),
                async move {
                    tokio::select! {
                        _ = end => {}
                        _ = stopped.wait_for(|s| *s) => {}
                    }
                },
            ));
            tracing::debug!(kind = %key, "controller started");
            running.insert(key, Running { plan, stop, task });
        }
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { break },
            // A controller that failed is tried again after a while even if nothing changes.
            _ = tokio::time::sleep(RETRY) => {}
            _ = shutdown.clone() => break,
        }
    }
    for (key, r) in running {
        finish(&key, r.task).await;
    }
    Ok(())
}

async fn finish(key: &KindKey, task: JoinHandle<Result<()>>) {
    match task.await {
        Ok(Ok(())) => tracing::debug!(kind = %key, "controller stopped"),
        Ok(Err(e)) => {
            tracing::error!(kind = %key, error = %format!("{e:#}"), "controller failed; the other kinds keep serving")
        }
        Err(e) => tracing::error!(kind = %key, error = %e, "controller task panicked"),
    }
}
