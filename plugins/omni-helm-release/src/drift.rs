//! Drift detection (Flux's `driftDetection`): once the release is deployed from what is wanted, the host compares
//! its objects with the workload cluster. `warn` reports what drifted (the `Drifted` condition and a Warning
//! `DriftDetected` Event); `enabled` also has the host apply them again. Detection runs at every check, so an
//! object deleted or edited behind Helm's back is found within `spec.interval`.

use omni_api::{HelmDriftMode, OmniHelmReleaseSpec};
use omni_plugin_sdk::helm::{DriftIgnore, DriftReason, DriftTarget, Drifted, Step};
use omni_plugin_sdk::{Condition, ConditionStatus, EventType, Host, HostError, LogLevel};

use crate::messages;
use crate::object::ReleaseObject;
use crate::request;

/// Flux's condition type and reasons.
pub const DRIFTED: &str = "Drifted";
pub const DRIFT_DETECTED: &str = "DriftDetected";
pub const NO_DRIFT_DETECTED: &str = "NoDriftDetected";
pub const DRIFT_DETECTION_FAILED: &str = "DriftDetectionFailed";

/// Objects named in a message, at most.
const NAMED: usize = 5;

pub fn mode(spec: &OmniHelmReleaseSpec) -> HelmDriftMode {
    spec.drift_detection
        .as_ref()
        .and_then(|d| d.mode)
        .unwrap_or(HelmDriftMode::Disabled)
}

pub fn ignore_rules(spec: &OmniHelmReleaseSpec) -> Vec<DriftIgnore> {
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    spec.drift_detection
        .as_ref()
        .and_then(|d| d.ignore.as_ref())
        .map(|rules| {
            rules
                .iter()
                .map(|r| DriftIgnore {
                    paths: r.paths.clone(),
                    target: r.target.as_ref().map(|t| DriftTarget {
                        group: text(&t.group),
                        version: text(&t.version),
                        kind: text(&t.kind),
                        name: text(&t.name),
                        namespace: text(&t.namespace),
                        label_selector: text(&t.label_selector),
                        annotation_selector: text(&t.annotation_selector),
                    }),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `Deployment apps/web (modified: /spec/replicas)`, for messages.
fn describe(d: &Drifted) -> String {
    let object = if d.namespace.is_empty() {
        format!("{} {}", d.kind, d.name)
    } else {
        format!("{} {}/{}", d.kind, d.namespace, d.name)
    };
    match d.reason {
        DriftReason::Missing => format!("{object} (deleted)"),
        DriftReason::Modified => format!("{object} (modified: {})", d.fields.join(", ")),
    }
}

pub fn summary(drifted: &[Drifted]) -> String {
    let mut named: Vec<String> = drifted.iter().take(NAMED).map(describe).collect();
    if drifted.len() > NAMED {
        named.push(format!("and {} more", drifted.len() - NAMED));
    }
    named.join("; ")
}

/// Looks for drift when the spec asks; answers whether a correction was started (the caller then checks again
/// sooner).
pub fn check<H: Host>(host: &H, release: &ReleaseObject) -> bool {
    let spec = &release.typed.spec;
    let mode = mode(spec);
    if mode == HelmDriftMode::Disabled {
        return false;
    }
    let name = release.release_name();
    let release_ref = request::release_ref(release);
    let ignore = ignore_rules(spec);
    let drifted = match host.helm_detect_drift(&release_ref, &ignore) {
        Ok(d) => d,
        Err(e) => {
            host.set_condition(Condition {
                type_: DRIFTED.into(),
                status: ConditionStatus::Unknown,
                reason: DRIFT_DETECTION_FAILED.into(),
                message: e.text(),
            });
            return false;
        }
    };
    if drifted.is_empty() {
        host.set_condition(Condition::new(
            DRIFTED,
            false,
            NO_DRIFT_DETECTED,
            messages::no_drift(name),
        ));
        return false;
    }
    let message = messages::drift_detected(name, &summary(&drifted));
    host.set_condition(Condition::new(
        DRIFTED,
        true,
        DRIFT_DETECTED,
        message.as_str(),
    ));
    host.event(EventType::Warning, DRIFT_DETECTED, &message);
    if mode != HelmDriftMode::Enabled {
        return false;
    }
    match host.helm_start(&release_ref, &Step::CorrectDrift(ignore)) {
        Ok(_) | Err(HostError::Conflict(_)) => true,
        Err(e) => {
            host.log(
                LogLevel::Warn,
                "the drift correction could not start",
                &[("releaseName", name), ("error", &e.text())],
            );
            false
        }
    }
}
