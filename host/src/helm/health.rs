//! Health checks by CEL (Flux's `healthCheckExprs`): after Helm's own wait, the objects of a new revision whose
//! kind a check names are read until each is current by its expressions. Helm's wait (kstatus) cannot be given
//! status readers from here, so the check is a second wait, bounded by what is left of the action's timeout.
//!
//! The judgement follows Flux's (RFC 0009): an object whose `status.observedGeneration` differs from its
//! `metadata.generation` is in progress; otherwise `inProgress`, `failed` and `current` are evaluated in that
//! order over the object's top-level fields, the first that is true deciding, and none true means in progress.
//! An expression that cannot be evaluated (a field not there yet) leaves the object in progress, as kstatus
//! leaves a resource whose status it cannot read unknown; the error is reported if the wait times out.
//!
//! The expressions are an object author's: they are compiled behind [`omni_api::cel`]'s guard, and each
//! evaluation runs under `catch_unwind`, so an expression the guard misses cannot take the host down.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::manifest::{self, ManifestError, ManifestObject};

/// How often the objects are read again while one is in progress.
const POLL: Duration = Duration::from_secs(1);

/// CEL expressions judging a release's objects of one kind; empty `in_progress` and `failed` are not given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HealthCheck {
    pub api_version: String,
    pub kind: String,
    pub current: String,
    pub in_progress: String,
    pub failed: String,
}

impl HealthCheck {
    /// The check's expressions in Flux's order of evaluation, with what each one decides and its field name.
    fn expressions(&self, index: usize) -> [(Health, String, &str); 3] {
        let field = |key: &str| format!("healthCheckExprs[{index}].{key}");
        [
            (Health::InProgress, field("inProgress"), &self.in_progress),
            (Health::Failed, field("failed"), &self.failed),
            (Health::Current, field("current"), &self.current),
        ]
    }

    fn selects(&self, object: &ManifestObject) -> bool {
        let r = &object.resource;
        r.api_version == self.api_version && r.kind == self.kind
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    Current,
    InProgress,
    Failed,
}

impl Health {
    /// kstatus's name, as Flux's messages print it.
    fn name(self) -> &'static str {
        match self {
            Health::Current => "Current",
            Health::InProgress => "InProgress",
            Health::Failed => "Failed",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum HealthError {
    /// An expression the guard refuses or CEL cannot parse (the message names the field).
    #[error("{0}")]
    Invalid(String),
    #[error("health check failed: {object} status: 'Failed' ({field} is true)")]
    Failed { object: String, field: String },
    #[error("health check timed out after {waited:?} waiting for: {pending}")]
    Timeout { waited: Duration, pending: String },
    #[error("health check: the action was cancelled")]
    Cancelled,
    #[error("health check: {0}")]
    Manifest(#[from] ManifestError),
    #[error("health check: reading {object}: {source}")]
    Kube {
        object: String,
        #[source]
        source: kube::Error,
    },
}

/// Every expression of `checks` compiled once, so a check that could never be judged is refused before any
/// action runs.
pub fn check_expressions(checks: &[HealthCheck]) -> Result<(), HealthError> {
    for (i, check) in checks.iter().enumerate() {
        for (_, field, expr) in check.expressions(i) {
            if field.ends_with(".current") || !expr.is_empty() {
                omni_api::cel::compile(&field, expr).map_err(HealthError::Invalid)?;
            }
        }
    }
    Ok(())
}

/// How `object` stands by `check` (the `index`-th), and why when it is not current and an expression failed.
pub fn judge(check: &HealthCheck, index: usize, object: &Value) -> (Health, Option<String>) {
    let generation = object
        .pointer("/metadata/generation")
        .and_then(Value::as_i64);
    let observed = object
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64);
    if let (Some(g), Some(o)) = (generation, observed)
        && g != o
    {
        return (
            Health::InProgress,
            Some(format!("observedGeneration {o} is not generation {g}")),
        );
    }
    let fields: Vec<(&str, &Value)> = object
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    let mut why = None;
    for (decides, field, expr) in check.expressions(index) {
        if expr.is_empty() {
            continue;
        }
        let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let program = omni_api::cel::compile(&field, expr)?;
            omni_api::cel::truth(&field, &program, &fields)
        }))
        .unwrap_or_else(|_| Err(format!("{field} could not be evaluated")));
        match answer {
            Ok(true) => return (decides, None),
            Ok(false) => {}
            Err(e) => why = Some(e),
        }
    }
    (Health::InProgress, why)
}

/// Waits until every object of `manifest` (the new revision's, in `release_namespace`) that a check selects is
/// current, until `deadline`; fails at once when one is failed. `stop` is asked between reads (a cancelled
/// action ends the wait).
pub async fn wait(
    client: &kube::Client,
    release_namespace: &str,
    manifest: &str,
    checks: &[HealthCheck],
    deadline: Instant,
    stop: impl Fn() -> bool,
) -> Result<(), HealthError> {
    check_expressions(checks)?;
    let started = Instant::now();
    let documents: Vec<Value> = manifest::documents(manifest)?
        .into_iter()
        .filter(|d| {
            checks.iter().any(|c| {
                d["apiVersion"].as_str() == Some(&c.api_version)
                    && d["kind"].as_str() == Some(&c.kind)
            })
        })
        .collect();
    let objects = manifest::resolve_documents(client, release_namespace, documents).await?;
    let watched: Vec<(usize, &ManifestObject)> = objects
        .iter()
        .filter_map(|o| checks.iter().position(|c| c.selects(o)).map(|i| (i, o)))
        .collect();
    loop {
        if stop() {
            return Err(HealthError::Cancelled);
        }
        let mut pending = Vec::new();
        for (index, object) in &watched {
            let live = object
                .api(client)
                .get_opt(&object.name)
                .await
                .map_err(|source| HealthError::Kube {
                    object: object.describe(),
                    source,
                })?;
            let (health, why) = match live {
                None => (Health::InProgress, Some("not found".to_string())),
                Some(live) => {
                    let value = serde_json::to_value(&live).unwrap_or(Value::Null);
                    judge(&checks[*index], *index, &value)
                }
            };
            match health {
                Health::Current => {}
                Health::Failed => {
                    return Err(HealthError::Failed {
                        object: object.describe(),
                        field: format!("healthCheckExprs[{index}].failed"),
                    });
                }
                Health::InProgress => pending.push(format!(
                    "{} status: '{}'{}",
                    object.describe(),
                    health.name(),
                    why.map(|w| format!(" ({w})")).unwrap_or_default()
                )),
            }
        }
        if pending.is_empty() {
            return Ok(());
        }
        if Instant::now() + POLL > deadline {
            return Err(HealthError::Timeout {
                waited: started.elapsed(),
                pending: pending.join(", "),
            });
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn widget() -> HealthCheck {
        HealthCheck {
            api_version: "example.com/v1".into(),
            kind: "Widget".into(),
            current: "status.phase == 'Ready'".into(),
            in_progress: "status.phase == 'Provisioning'".into(),
            failed: "status.phase == 'Broken' || status.phase == 'Provisioning'".into(),
        }
    }

    #[test]
    fn the_first_true_expression_in_fluxs_order_decides() {
        let at = |phase: &str| json!({"metadata": {"generation": 2}, "status": {"phase": phase}});
        let check = widget();
        assert_eq!(judge(&check, 0, &at("Ready")), (Health::Current, None));
        assert_eq!(judge(&check, 0, &at("Broken")), (Health::Failed, None));
        assert_eq!(
            judge(&check, 0, &at("Provisioning")).0,
            Health::InProgress,
            "inProgress is asked before failed"
        );
        assert_eq!(judge(&check, 0, &at("Other")), (Health::InProgress, None));
    }

    #[test]
    fn an_old_observed_generation_is_in_progress_whatever_the_expressions_say() {
        let object = json!({"metadata": {"generation": 3},
            "status": {"observedGeneration": 2, "phase": "Ready"}});
        let (health, why) = judge(&widget(), 0, &object);
        assert_eq!(health, Health::InProgress);
        assert!(why.is_some_and(|w| w.contains("observedGeneration 2")));
    }

    #[test]
    fn an_expression_that_cannot_be_evaluated_yet_leaves_the_object_in_progress() {
        let check = HealthCheck {
            failed: String::new(),
            in_progress: String::new(),
            ..widget()
        };
        let (health, why) = judge(&check, 4, &json!({"metadata": {"name": "w"}}));
        assert_eq!(health, Health::InProgress);
        assert!(
            why.as_deref()
                .is_some_and(|w| w.starts_with("healthCheckExprs[4].current failed")),
            "{why:?}"
        );
    }

    #[test]
    fn expressions_the_guard_refuses_are_invalid_naming_the_field() {
        let check = HealthCheck {
            failed: "status.count / 0 == 1".into(),
            ..widget()
        };
        let e = check_expressions(&[widget(), check])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("healthCheckExprs[1].failed may not use"),
            "{e}"
        );
        let (health, why) = judge(
            &HealthCheck {
                current: "status.n / 0 == 1".into(),
                ..widget()
            },
            0,
            &json!({"status": {"n": 1, "phase": "x"}}),
        );
        assert_eq!(health, Health::InProgress, "refused, never evaluated");
        assert!(why.is_some_and(|w| w.contains("may not use")));
    }
}
