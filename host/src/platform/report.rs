//! What the platform writes back: the status of Plugins and bindings (only when it changed), and a binding's
//! usage figures with the Events they call for.

use std::time::{Duration, Instant};

use kube::ResourceExt;
use kube::api::{DynamicObject, Patch, PatchParams};
use kube::runtime::events::EventType;
use omni_api::platform::{
    BindingUsage, ComponentInfo, PluginBindingStatus, PluginSpec, PluginStatus,
};
use serde_json::{Map, Value, json};

use super::{BindingOutcome, Platform, USAGE_EVERY, now};
use crate::capabilities::Condition;
use crate::controllers::status;
use crate::runtime::{KindKey, UsageFigures};

/// Status fields the platform owns on its objects (all of them are written or removed at every write).
const OWNED_FIELDS: &[&str] = &[
    "artifact",
    "resolvedArtifact",
    "digest",
    "previousDigest",
    "canaryDigest",
    "signedBy",
    "component",
    "failures",
    "effectiveGrants",
    "kinds",
    "usage",
];

impl Platform {
    /// A binding's usage for its status: refreshed at most every [`USAGE_EVERY`] (the status keeps the last
    /// figures in between, so a busy binding is not a status write a second), with a Warning Event when its
    /// quota turned calls away since the last report.
    pub(super) async fn usage(
        &mut self,
        index: usize,
        object: &DynamicObject,
        id: &str,
    ) -> Option<BindingUsage> {
        let current: Option<BindingUsage> =
            serde_json::from_value(object.data["status"]["usage"].clone()).ok();
        let due = self
            .reported
            .get(id)
            .is_none_or(|(at, _)| at.elapsed() >= USAGE_EVERY);
        if !due {
            return current;
        }
        let marker = format!("|{id}|");
        let figures: Vec<UsageFigures> = self
            .loaded
            .iter()
            .filter(|(k, _)| k.contains(&marker))
            .map(|(_, p)| p.usage().figures())
            .collect();
        if figures.is_empty() {
            return None;
        }
        let mut usage = BindingUsage::default();
        let mut busy = Duration::ZERO;
        for f in &figures {
            usage.calls += f.calls;
            usage.failures += f.failures;
            usage.denials += f.denials;
            usage.quota_hits += f.quota_hits;
            busy += f.busy;
            for (class, n) in &f.traps_by_class {
                *usage.traps.entry(class.to_string()).or_default() += n;
            }
        }
        usage.mean_call_micros = u64::try_from(busy.as_micros())
            .unwrap_or(u64::MAX)
            .checked_div(usage.calls)
            .unwrap_or(0);
        let before = self.reported.get(id).map(|(_, hits)| *hits).unwrap_or(0);
        self.reported
            .insert(id.to_string(), (Instant::now(), usage.quota_hits));
        if usage.quota_hits > before {
            let message = format!(
                "{} calls turned away by the binding's quota since the last report; they are retried shortly",
                usage.quota_hits - before
            );
            self.event(object, index, EventType::Warning, "QuotaExceeded", message)
                .await;
        }
        Some(usage)
    }

    pub(super) async fn write_binding_status(
        &self,
        index: usize,
        object: &DynamicObject,
        outcome: BindingOutcome,
        serving: bool,
        conflicts: &[String],
        usage: Option<BindingUsage>,
    ) {
        let mut conditions = Vec::new();
        let (ready, reason, message) = if outcome.ready && !serving {
            (
                false,
                "Conflict",
                format!(
                    "another binding serves its kinds here: {}",
                    conflicts.join("; ")
                ),
            )
        } else {
            (outcome.ready, outcome.reason, outcome.message.clone())
        };
        conditions.push(status::host_condition("Ready", ready, reason, message));
        conditions.push(if conflicts.is_empty() {
            status::host_condition(
                "Conflict",
                false,
                "NoConflict",
                "no other binding claims its kinds in its scope".into(),
            )
        } else {
            status::host_condition("Conflict", true, "Conflict", conflicts.join("; "))
        });
        let fields = PluginBindingStatus {
            digest: outcome.digest.filter(|_| serving),
            effective_grants: outcome.grants,
            kinds: outcome.kinds,
            usage: usage.filter(|_| serving),
            ..PluginBindingStatus::default()
        };
        self.write_status(index, object, &fields, &conditions).await;
    }

    pub(super) async fn write_plugin_status(&self, object: &DynamicObject, spec: &PluginSpec) {
        let Some(state) = self.plugins.get(&object.name_any()) else {
            return;
        };
        let mut conditions = Vec::new();
        match (&state.serving, &state.refusal) {
            (Some(a), None) => {
                conditions.push(status::host_condition(
                    "Ready",
                    true,
                    "Serving",
                    format!("digest {} is verified and loaded", a.digest),
                ));
                conditions.push(status::host_condition(
                    "Degraded",
                    false,
                    "AsExpected",
                    "the artifact spec.artifact names is the one serving".into(),
                ));
            }
            (Some(a), Some(r)) => {
                conditions.push(status::host_condition(
                    "Ready",
                    true,
                    "Serving",
                    format!(
                        "digest {} serves; the wanted artifact was refused",
                        a.digest
                    ),
                ));
                conditions.push(status::host_condition(
                    "Degraded",
                    true,
                    r.reason,
                    r.message.clone(),
                ));
            }
            (None, refusal) => {
                let (reason, message) = refusal
                    .as_ref()
                    .map(|r| (r.reason, r.message.clone()))
                    .unwrap_or(("Pending", "the artifact is being fetched".into()));
                conditions.push(status::host_condition(
                    "Ready",
                    false,
                    reason,
                    message.clone(),
                ));
                conditions.push(status::host_condition("Degraded", true, reason, message));
            }
        }
        let verified = match (
            &state.serving,
            spec.verification.as_ref().and_then(|v| v.disabled),
        ) {
            (Some(a), _) if a.built_in.is_some() => status::host_condition(
                "Verified",
                true,
                "BuiltIn",
                "part of the operator binary".into(),
            ),
            (Some(a), _) if a.signed_by.is_some() => status::host_condition(
                "Verified",
                true,
                "SignatureVerified",
                format!(
                    "signed by key {:?}",
                    a.signed_by.clone().unwrap_or_default()
                ),
            ),
            (_, Some(true)) => status::host_condition(
                "Verified",
                false,
                "VerificationDisabled",
                "spec.verification.disabled: the artifact runs unsigned".into(),
            ),
            (_, _) => {
                let (reason, message) = state
                    .refusal
                    .as_ref()
                    .map(|r| (r.reason, r.message.clone()))
                    .unwrap_or(("Pending", "not verified yet".into()));
                status::host_condition("Verified", false, reason, message)
            }
        };
        conditions.push(verified);
        let serving = state.serving.as_ref();
        let fields = PluginStatus {
            artifact: serving.map(|a| a.source.clone()),
            resolved_artifact: serving.map(|a| a.pinned.clone()),
            digest: serving.map(|a| a.digest.clone()),
            previous_digest: state.previous.as_ref().map(|a| a.digest.clone()),
            canary_digest: state.canary.as_ref().map(|c| c.artifact.digest.clone()),
            signed_by: serving.and_then(|a| a.signed_by.clone()),
            component: serving.map(|a| ComponentInfo {
                name: a.metadata.as_ref().map(|m| m.name.clone()),
                version: a.metadata.as_ref().map(|m| m.version.clone()),
                wit: a.metadata.as_ref().map(|m| m.wit.clone()),
                requested_grants: a.requested.describe(),
                kinds: self
                    .loaded
                    .iter()
                    .find(|(k, _)| k.starts_with(&format!("{}|", a.digest)))
                    .map(|(_, p)| {
                        p.info()
                            .kinds
                            .iter()
                            .map(|k| KindKey::new(&k.group, &k.kind).to_string())
                            .collect()
                    })
                    .unwrap_or_default(),
            }),
            failures: state.failures.clone(),
            ..PluginStatus::default()
        };
        self.write_status(0, object, &fields, &conditions).await;
    }

    /// Writes `fields` and `conditions` as the object's status when they differ from what it has. Fields the
    /// platform owns and left unset are removed.
    pub(super) async fn write_status<T: serde::Serialize>(
        &self,
        index: usize,
        object: &DynamicObject,
        fields: &T,
        conditions: &[Condition],
    ) {
        let json = match serde_json::to_value(object) {
            Ok(v) => v,
            Err(_) => return,
        };
        let mut map: Map<String, Value> = match serde_json::to_value(fields) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
        map.remove("conditions");
        map.remove("observedGeneration");
        // Owned fields not set now are removed (a digest that stopped serving, say).
        for owned in OWNED_FIELDS {
            map.entry(owned.to_string()).or_insert(Value::Null);
        }
        let Some(next) = status::next_status(&json, &map, conditions, &now()) else {
            return;
        };
        if !self.writes() {
            return;
        }
        let api = self.api(index, object.namespace().as_deref());
        let patch = json!([{"op": "add", "path": "/status", "value": next}]);
        let patch = match serde_json::from_value(patch) {
            Ok(p) => p,
            Err(_) => return,
        };
        if let Err(e) = api
            .patch_status(
                &object.name_any(),
                &PatchParams::default(),
                &Patch::<()>::Json(patch),
            )
            .await
        {
            tracing::debug!(error = %e, object = %object.name_any(), "platform status write failed; retried at the next sync");
        }
    }
}
