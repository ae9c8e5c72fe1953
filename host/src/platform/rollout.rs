//! Rollouts: a new digest on trial (a canary, or the serving digest within its rollback window) is rolled back
//! when its traps cross the Plugin's threshold, and a canary that ran its duration without crossing it is promoted
//! to serve every object.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kube::api::DynamicObject;
use kube::runtime::events::EventType;
use omni_api::platform::PluginSpec;

use super::artifacts::Refusal;
use super::{Platform, units};

impl Platform {
    /// Rolls a new digest back when its failure rate crosses the Plugin's threshold (during its window after a
    /// swap, or while it is a canary), and promotes a canary that ran its duration without crossing it.
    pub(super) async fn watch_rollbacks(
        &mut self,
        specs: &BTreeMap<String, (DynamicObject, PluginSpec)>,
    ) {
        for (name, (object, spec)) in specs {
            let rollout = spec.rollout.clone().unwrap_or_default();
            let policy = rollout.rollback.clone().unwrap_or_default();
            let window = policy
                .window
                .as_deref()
                .and_then(units::parse_duration)
                .unwrap_or(Duration::from_secs(300));
            let Some(state) = self.plugins.get(name) else {
                continue;
            };
            // The digest on trial: a canary, or a new digest within its window.
            let trial = match (
                &state.canary,
                &state.serving,
                &state.previous,
                state.swapped_at,
            ) {
                (Some(c), _, _, _) => Some((c.artifact.digest.clone(), true)),
                (None, Some(s), Some(_), Some(at)) if at.elapsed() <= window => {
                    Some((s.digest.clone(), false))
                }
                _ => None,
            };
            let Some((digest, is_canary)) = trial else {
                continue;
            };
            // This Plugin's versions of the digest only; traps count, out-of-memory excepted (a binding's own
            // memory quota can cause it, and one tenant must not be able to roll a release back for all).
            let prefix = format!("{digest}|{name}|");
            let (calls, failures) = self
                .loaded
                .iter()
                .filter(|(k, _)| k.starts_with(&prefix))
                .map(|(_, p)| p.usage().figures())
                .fold((0, 0), |(c, f), u| (c + u.calls, f + u.rollback_failures));
            let min_calls = u64::from(policy.min_calls.unwrap_or(10));
            let percent = u64::from(policy.failure_percent.unwrap_or(20));
            let failing = calls >= min_calls && failures * 100 >= percent * calls;
            let Some(state) = self.plugins.get_mut(name) else {
                continue;
            };
            if failing && policy.disabled != Some(true) {
                let back_to = if is_canary {
                    state.serving.as_ref()
                } else {
                    state.previous.as_ref()
                }
                .map(|a| a.digest.clone())
                .unwrap_or_default();
                let message = format!(
                    "digest {digest} failed {failures} of its {calls} calls (threshold {percent}%); rolled back to {back_to}"
                );
                let refusal = Refusal::new("RolledBack", message.clone());
                state.fail(Some(digest.clone()), &refusal);
                state.rolled_back.insert(digest);
                state.refusal = Some(refusal);
                if is_canary {
                    state.canary = None;
                } else {
                    state.serving = state.previous.take();
                    state.swapped_at = None;
                }
                tracing::warn!(plugin = %name, "{message}");
                self.event(object, 0, EventType::Warning, "RolledBack", message)
                    .await;
                continue;
            }
            let duration = rollout
                .canary
                .as_ref()
                .and_then(|c| c.duration.as_deref())
                .and_then(units::parse_duration)
                .unwrap_or(Duration::from_secs(60));
            if is_canary
                && state
                    .canary
                    .as_ref()
                    .is_some_and(|c| c.since.elapsed() >= duration)
            {
                let Some(canary) = state.canary.take() else {
                    continue;
                };
                let message = format!(
                    "canary digest {} ran {}s with {failures} failures in {calls} calls; it now serves every object",
                    canary.artifact.digest,
                    duration.as_secs()
                );
                state.previous = state.serving.replace(canary.artifact);
                state.swapped_at = Some(Instant::now());
                self.event(object, 0, EventType::Normal, "CanaryPromoted", message)
                    .await;
            }
        }
    }
}
