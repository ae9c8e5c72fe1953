//! What one call reports, and the one place it is written.
//!
//! A reconcile of a live OmniCluster ends in one [`Outcome`]: `Validated`, `Synced` and `Ready` are fields, not
//! calls each path has to remember, so every path writes all three by construction. That matters because the
//! host stamps each written condition with the current generation: a `Synced=True` left over from an older spec
//! would claim the new one is in Omni.
//!
//! A finalize call ends in one [`Teardown`], which has only `Ready`: the deletion flow reports through
//! `Ready` alone, and `Validated`/`Synced` keep describing the last reconcile of the live object.

use omni_api::conditions::types;
use omni_api::{OmniClusterStatus, SyncStatusFields};
use omni_plugin_sdk::{Condition, Host, ReconcileError};

/// What one condition says; its type is the [`Outcome`] field it is in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State {
    ok: bool,
    reason: &'static str,
    message: String,
}

impl State {
    /// `status: True`.
    pub fn ok(reason: &'static str, message: impl Into<String>) -> Self {
        State {
            ok: true,
            reason,
            message: message.into(),
        }
    }

    /// `status: False`.
    pub fn failed(reason: &'static str, message: impl Into<String>) -> Self {
        State {
            ok: false,
            reason,
            message: message.into(),
        }
    }

    fn into_condition(self, type_: &str) -> Condition {
        Condition::new(type_, self.ok, self.reason, self.message)
    }
}

/// Everything one reconcile of a live OmniCluster reports.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub validated: State,
    pub synced: State,
    pub ready: State,
    /// Merged into `.status` one level deep by the host: fields left `None` keep their stored value.
    pub status: OmniClusterStatus,
    pub requeue_ms: u64,
}

impl Outcome {
    /// `Synced` and `Ready` both say `why`: the paths that stop before a sync (suspended, no connection) and the
    /// syncs that did not finish.
    pub fn stopped(
        validated: State,
        why: State,
        status: OmniClusterStatus,
        requeue_ms: u64,
    ) -> Self {
        Outcome {
            validated,
            synced: why.clone(),
            ready: why,
            status,
            requeue_ms,
        }
    }

    /// The template cannot be synced: `Validated` and `Ready` say why, `Synced` that nothing was synced because of
    /// it (a missing or invalid template, or a refused rename).
    pub fn invalid(
        reason: &'static str,
        message: &str,
        status: OmniClusterStatus,
        requeue_ms: u64,
    ) -> Self {
        Outcome {
            validated: State::failed(reason, message),
            synced: State::failed(reason, format!("not synced: {message}")),
            ready: State::failed(reason, message),
            status,
            requeue_ms,
        }
    }

    /// Writes all of it: the status, `Validated`, `Synced` and `Ready`, and the requeue. The conditions go in that
    /// order because a new status lists its conditions in the order they were first written.
    pub fn write<H: Host>(self, host: &H) -> Result<(), ReconcileError> {
        // Every field of the status is omitted when `None`, so only what the outcome set is sent; `conditions`
        // and `observedGeneration` are the host's and stay `None` here.
        host.set_status_as(&self.status)?;
        for (type_, state) in [
            (types::VALIDATED, self.validated),
            (types::SYNCED, self.synced),
            (types::READY, self.ready),
        ] {
            host.set_condition(state.into_condition(type_));
        }
        host.requeue_after(self.requeue_ms);
        Ok(())
    }
}

/// Everything one finalize call reports while the object is being deleted.
#[derive(Clone, Debug, PartialEq)]
pub enum Teardown {
    /// Omni has let go of the cluster, or the policy leaves it there: the host removes the finalizers.
    Done {
        /// What deleting printed (trimmed as Go's `trimStatus` does), empty when nothing was done.
        output: String,
    },
    /// Not yet: `Ready` says why, and the object is looked at again after `requeue_ms`.
    Blocked {
        ready: State,
        output: String,
        requeue_ms: u64,
    },
}

impl Teardown {
    /// Writes all of it and answers [`omni_plugin_sdk::Plugin::finalize`]: whether the finalizers may go.
    pub fn write<H: Host>(self, host: &H) -> Result<bool, ReconcileError> {
        let (output, blocked) = match self {
            Teardown::Done { output } => (output, None),
            Teardown::Blocked {
                ready,
                output,
                requeue_ms,
            } => (output, Some((ready, requeue_ms))),
        };
        // A deletion that printed nothing leaves `lastSyncOutput` describing the last sync.
        if !output.is_empty() {
            let status = OmniClusterStatus {
                sync: SyncStatusFields {
                    last_sync_output: Some(output),
                    ..SyncStatusFields::default()
                },
                ..OmniClusterStatus::default()
            };
            host.set_status_as(&status)?;
        }
        let Some((ready, requeue_ms)) = blocked else {
            return Ok(true);
        };
        host.set_condition(ready.into_condition(types::READY));
        host.requeue_after(requeue_ms);
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use omni_plugin_sdk::json;
    use omni_plugin_sdk::mock::MockHost;
    use omni_plugin_sdk::prelude::*;

    use super::*;
    use omni_plugin_sdk::Value;

    /// The typed status sends exactly the fields a path set, as the `json!` maps it replaced did: nothing unset
    /// (the host would merge it over the stored value), and empty strings and lists as values.
    #[test]
    fn only_the_fields_set_are_sent() {
        let status = OmniClusterStatus {
            sync: SyncStatusFields {
                cluster_name: Some("edge".into()),
                last_status_output: Some(String::new()),
                ..SyncStatusFields::default()
            },
            workers_refs: Some(Vec::new()),
            ..OmniClusterStatus::default()
        };
        let host = MockHost::new(json!({"metadata": {"name": "edge"}}));
        host.set_status_as(&status).expect("encodes");
        assert_eq!(
            Value::Object(host.outputs().status),
            json!({"clusterName": "edge", "lastStatusOutput": "", "workersRefs": []})
        );
    }

    #[test]
    fn an_outcome_writes_all_three_conditions_in_order_and_the_requeue() {
        let host = MockHost::new(json!({"metadata": {"name": "edge"}}));
        let outcome = Outcome::invalid(
            "ValidationFailed",
            "bad",
            OmniClusterStatus::default(),
            1_000,
        );
        assert_eq!(outcome.write(&host), Ok(()));
        let out = host.outputs();
        let written: Vec<_> = out
            .conditions
            .iter()
            .map(|c| (c.type_.as_str(), c.reason.as_str(), c.message.as_str()))
            .collect();
        assert_eq!(
            written,
            [
                ("Validated", "ValidationFailed", "bad"),
                ("Synced", "ValidationFailed", "not synced: bad"),
                ("Ready", "ValidationFailed", "bad"),
            ]
        );
        assert_eq!(out.requeue_after, Some(1_000));
    }

    #[test]
    fn a_teardown_writes_only_ready_and_only_output_it_has() {
        let host = MockHost::new(json!({"metadata": {"name": "edge"}}));
        let blocked = Teardown::Blocked {
            ready: State::failed("Deleting", "held"),
            output: String::new(),
            requeue_ms: 3_000,
        };
        assert_eq!(blocked.write(&host), Ok(false));
        let out = host.outputs();
        assert_eq!(out.conditions.len(), 1);
        assert_eq!(out.conditions[0].type_, "Ready");
        assert!(out.status.is_empty(), "no output, no status write");

        let host = MockHost::new(json!({"metadata": {"name": "edge"}}));
        let done = Teardown::Done {
            output: "* destroyed".into(),
        };
        assert_eq!(done.write(&host), Ok(true));
        let out = host.outputs();
        assert!(out.conditions.is_empty());
        assert_eq!(out.status["lastSyncOutput"], "* destroyed");
        assert_eq!(out.requeue_after, None);
    }
}
