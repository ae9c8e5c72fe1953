//! The counts a release's remediation depends on, kept in the object's status with Flux's field names
//! (`failures`, `installFailures`, `upgradeFailures`, `lastAttemptedReleaseAction`, `lastAttemptedRevision`,
//! `lastAttemptedConfigDigest`, `lastAttemptedGeneration`, `lastHandled{Reconcile,Force,Reset}At`), so they survive an operator restart.
//!
//! The host runs actions in the background and remembers how each ended under an id unique across restarts; an
//! outcome is counted once, when a reconcile first sees it (`lastActionID` names the last one counted). Counters
//! reset when the spec's generation, the chart or the values change, or on a `reconcile.fluxcd.io/resetAt`
//! request.

use omni_plugin_sdk::helm::{Action, StepRecord};
use omni_plugin_sdk::serde_json::Map;
use omni_plugin_sdk::{Value, json};

use crate::policy::{Policy, ReleaseAction};

/// Flux's request annotations (`fluxcd/pkg/apis/meta` and helm-controller's `annotations.go`).
pub const REQUESTED_AT: &str = "reconcile.fluxcd.io/requestedAt";
pub const FORCE_AT: &str = "reconcile.fluxcd.io/forceAt";
pub const RESET_AT: &str = "reconcile.fluxcd.io/resetAt";

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ledger {
    pub failures: i64,
    pub install_failures: i64,
    pub upgrade_failures: i64,
    pub last_release_action: Option<ReleaseAction>,
    /// The chart version of the last install or upgrade started (Flux's `lastAttemptedRevision`).
    pub attempted_revision: Option<String>,
    pub config_digest: Option<String>,
    pub generation: Option<i64>,
    pub last_action_id: Option<String>,
    /// When the last counted action finished (`lastAttemptTime`).
    pub last_attempt: Option<String>,
    /// The error of the last failed action counted (`lastError`), kept so a stalled release can still say why.
    pub last_error: Option<String>,
    pub handled_reconcile_at: Option<String>,
    pub handled_force_at: Option<String>,
    pub handled_reset_at: Option<String>,
}

/// What the annotations ask of this reconcile.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Requests {
    /// A one-off install or upgrade, even with the retries used up.
    pub force: bool,
}

impl Ledger {
    pub fn read(object: &Value) -> Ledger {
        let status = &object["status"];
        let text = |key: &str| status[key].as_str().map(str::to_string);
        let count = |key: &str| status[key].as_i64().unwrap_or(0).max(0);
        Ledger {
            failures: count("failures"),
            install_failures: count("installFailures"),
            upgrade_failures: count("upgradeFailures"),
            last_release_action: status["lastAttemptedReleaseAction"]
                .as_str()
                .and_then(ReleaseAction::parse),
            attempted_revision: text("lastAttemptedRevision"),
            config_digest: text("lastAttemptedConfigDigest"),
            generation: status["lastAttemptedGeneration"].as_i64(),
            last_action_id: text("lastActionID"),
            last_attempt: text("lastAttemptTime"),
            last_error: text("lastError").filter(|e| !e.is_empty()),
            handled_reconcile_at: text("lastHandledReconcileAt"),
            handled_force_at: text("lastHandledForceAt"),
            handled_reset_at: text("lastHandledResetAt"),
        }
    }

    /// The failures of `action`.
    pub fn failures_of(&self, action: ReleaseAction) -> i64 {
        match action {
            ReleaseAction::Install => self.install_failures,
            ReleaseAction::Upgrade => self.upgrade_failures,
        }
    }

    /// Takes the install or upgrade the host runs or last ran for the last attempted, whatever the status says:
    /// a status write lost (the operator stopped between starting an action and recording it, or a write was
    /// refused as stale) must not turn a failed install's test into an upgrade's.
    pub fn recall(&mut self, record: &StepRecord) {
        let action = match record.action {
            Action::Install => ReleaseAction::Install,
            Action::Upgrade => ReleaseAction::Upgrade,
            _ => return,
        };
        self.last_release_action = Some(action);
        if !record.digest.is_empty() {
            self.config_digest = Some(record.digest.clone());
        }
    }

    /// Counts `last` when it ended and was not counted before; true when it was new.
    pub fn account(&mut self, last: &StepRecord, policy: &Policy) -> bool {
        if last.finished.is_empty() || self.last_action_id.as_deref() == Some(last.id.as_str()) {
            return false;
        }
        self.last_action_id = Some(last.id.clone());
        self.last_attempt = Some(last.finished.clone());
        // Stopped because a newer spec made it obsolete: no failure of the release.
        if last.cancelled {
            return true;
        }
        let Some(error) = &last.error else {
            return true;
        };
        self.last_error = Some(error.clone());
        let failed = match last.action {
            Action::Install => Some(ReleaseAction::Install),
            Action::Upgrade => Some(ReleaseAction::Upgrade),
            // A failed test is a failure of the install or upgrade it tested, unless the spec says to ignore it.
            // With no attempt on record, the tested revision tells: a first revision was installed.
            Action::Test => self
                .last_release_action
                .or(Some(if last.revision <= 1 {
                    ReleaseAction::Install
                } else {
                    ReleaseAction::Upgrade
                }))
                .filter(|a| policy.tests_count(*a)),
            // A failed remediation or uninstall counts; an unlock is bookkeeping.
            Action::Rollback | Action::Uninstall => {
                self.failures += 1;
                None
            }
            // Unlocks and drift corrections are bookkeeping, not attempts at the release.
            Action::Recover | Action::Correct => None,
        };
        if let Some(action) = failed {
            self.failures += 1;
            match action {
                ReleaseAction::Install => self.install_failures += 1,
                ReleaseAction::Upgrade => self.upgrade_failures += 1,
            }
        }
        true
    }

    /// Handles Flux's request annotations as helm-controller does: `forceAt` and `resetAt` count only when
    /// `requestedAt` carries the same value and that value was not handled before. A reset clears the
    /// counters; the force is for the caller, which marks it handled once it acts on it ([`Ledger::forced`]).
    pub fn requests(&mut self, annotations: &Value) -> Requests {
        let get = |key: &str| annotations[key].as_str().map(str::to_string);
        let Some(requested) = get(REQUESTED_AT) else {
            return Requests::default();
        };
        if self.handled_reconcile_at.as_deref() == Some(requested.as_str()) {
            return Requests::default();
        }
        if get(RESET_AT).as_deref() == Some(requested.as_str()) {
            self.reset();
            self.handled_reset_at = Some(requested.clone());
        }
        let force = get(FORCE_AT).as_deref() == Some(requested.as_str());
        if !force {
            self.handled_reconcile_at = Some(requested);
        }
        Requests { force }
    }

    /// Marks the force request acted on.
    pub fn forced(&mut self, annotations: &Value) {
        if let Some(requested) = annotations[REQUESTED_AT].as_str() {
            self.handled_reconcile_at = Some(requested.to_string());
            self.handled_force_at = Some(requested.to_string());
        }
    }

    /// Clears the counters when what is wanted is not what the last attempt was for (Flux resets them on a new
    /// generation, chart or values).
    pub fn reset_if_changed(&mut self, wanted: &str, generation: Option<i64>) {
        let config_changed = self.config_digest.as_deref().is_some_and(|d| d != wanted);
        let generation_changed = self.generation.is_some() && generation != self.generation;
        if config_changed || generation_changed {
            self.reset();
        }
    }

    fn reset(&mut self) {
        self.failures = 0;
        self.install_failures = 0;
        self.upgrade_failures = 0;
    }

    /// Records an install or upgrade about to start: of `version` of the chart, from a source of digest `wanted`.
    pub fn attempt(
        &mut self,
        action: ReleaseAction,
        (wanted, version): (&str, &str),
        generation: Option<i64>,
    ) {
        self.last_release_action = Some(action);
        self.config_digest = Some(wanted.to_string());
        self.attempted_revision = Some(version.to_string()).filter(|v| !v.is_empty());
        self.generation = generation;
    }

    /// The status fields this keeps.
    pub fn fields(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("failures".into(), json!(self.failures));
        m.insert("installFailures".into(), json!(self.install_failures));
        m.insert("upgradeFailures".into(), json!(self.upgrade_failures));
        let mut put = |key: &str, v: &Option<String>| {
            if let Some(v) = v {
                m.insert(key.into(), json!(v));
            }
        };
        put(
            "lastAttemptedReleaseAction",
            &self.last_release_action.map(|a| a.name().to_string()),
        );
        put("lastAttemptedRevision", &self.attempted_revision);
        put("lastAttemptedConfigDigest", &self.config_digest);
        put("lastActionID", &self.last_action_id);
        put("lastError", &self.last_error);
        put("lastHandledReconcileAt", &self.handled_reconcile_at);
        put("lastHandledForceAt", &self.handled_force_at);
        put("lastHandledResetAt", &self.handled_reset_at);
        if let Some(g) = self.generation {
            m.insert("lastAttemptedGeneration".into(), json!(g));
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, action: Action, error: Option<&str>) -> StepRecord {
        StepRecord {
            id: id.into(),
            action,
            digest: "d".into(),
            started: "2026-01-01T00:00:00Z".into(),
            finished: "2026-01-01T00:01:00Z".into(),
            revision: 2,
            error: error.map(str::to_string),
            cancelled: false,
        }
    }

    fn policy() -> Policy {
        Policy::of(&omni_api::OmniHelmReleaseSpec::default(), 300)
    }

    #[test]
    fn an_outcome_is_counted_once_whatever_the_number_of_reconciles_that_see_it() {
        let mut l = Ledger::default();
        let failed = record("7-1", Action::Upgrade, Some("boom"));
        assert!(l.account(&failed, &policy()));
        assert!(!l.account(&failed, &policy()));
        assert_eq!(
            (l.failures, l.upgrade_failures, l.install_failures),
            (1, 1, 0)
        );
        assert_eq!(l.last_attempt.as_deref(), Some("2026-01-01T00:01:00Z"));
        // A running action (no finish time) is not an outcome yet.
        let mut running = record("7-2", Action::Install, Some("x"));
        running.finished.clear();
        assert!(!l.account(&running, &policy()));
        // Status round trip.
        let object = json!({"status": l.fields()});
        let mut read = Ledger::read(&object);
        read.last_attempt = l.last_attempt.clone();
        assert_eq!(read, l);
    }

    #[test]
    fn failed_tests_count_against_the_release_only_when_tests_count() {
        let mut l = Ledger {
            last_release_action: Some(ReleaseAction::Install),
            ..Default::default()
        };
        // Tests not enabled: nothing counts.
        l.account(&record("1-1", Action::Test, Some("failed")), &policy());
        assert_eq!(l.failures, 0);
        let spec = omni_api::OmniHelmReleaseSpec {
            test: Some(omni_api::HelmTestSpec {
                enable: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        };
        l.account(
            &record("1-2", Action::Test, Some("failed")),
            &Policy::of(&spec, 300),
        );
        assert_eq!((l.failures, l.install_failures), (1, 1));
    }

    /// The race CI hit: a reconcile woken by the finished install read a copy without the install recorded and
    /// rewrote the status. The host's record of the install still makes the failed test count against it.
    #[test]
    fn the_hosts_record_of_an_install_or_upgrade_wins_over_a_status_that_lost_it() {
        let spec = omni_api::OmniHelmReleaseSpec {
            test: Some(omni_api::HelmTestSpec {
                enable: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        };
        let tests_on = Policy::of(&spec, 300);
        let mut l = Ledger::default();
        let mut install = record("3-1", Action::Install, None);
        install.digest = "d1".into();
        l.recall(&install);
        assert_eq!(l.last_release_action, Some(ReleaseAction::Install));
        assert_eq!(l.config_digest.as_deref(), Some("d1"));
        // A test or a remediation says nothing about which release action was attempted.
        l.recall(&record("3-2", Action::Uninstall, None));
        assert_eq!(l.last_release_action, Some(ReleaseAction::Install));
        l.account(&record("3-3", Action::Test, Some("failed")), &tests_on);
        assert_eq!((l.failures, l.install_failures), (1, 1));

        // No attempt on record at all: the tested revision tells (1 was installed, later ones upgraded).
        let mut l = Ledger::default();
        let mut first = record("4-1", Action::Test, Some("failed"));
        first.revision = 1;
        l.account(&first, &tests_on);
        assert_eq!((l.install_failures, l.upgrade_failures), (1, 0));
        let mut l = Ledger::default();
        l.account(&record("4-2", Action::Test, Some("failed")), &tests_on);
        assert_eq!((l.install_failures, l.upgrade_failures), (0, 1));
    }

    #[test]
    fn force_and_reset_need_a_matching_unhandled_requested_at_as_in_flux() {
        let mut l = Ledger {
            failures: 3,
            upgrade_failures: 3,
            ..Default::default()
        };
        // resetAt without the same requestedAt does nothing.
        let r = l.requests(&json!({RESET_AT: "a", REQUESTED_AT: "b"}));
        assert_eq!((r.force, l.failures), (false, 3));
        assert_eq!(l.handled_reconcile_at.as_deref(), Some("b"));
        let r = l.requests(&json!({RESET_AT: "c", REQUESTED_AT: "c"}));
        assert_eq!((r.force, l.failures, l.upgrade_failures), (false, 0, 0));
        assert_eq!(l.handled_reset_at.as_deref(), Some("c"));
        // Handled once: the same value again is nothing new.
        l.failures = 2;
        l.requests(&json!({RESET_AT: "c", REQUESTED_AT: "c"}));
        assert_eq!(l.failures, 2);
        // A force stays pending until acted on.
        let annotations = json!({FORCE_AT: "d", REQUESTED_AT: "d"});
        assert!(l.requests(&annotations).force);
        assert!(l.requests(&annotations).force);
        l.forced(&annotations);
        assert!(!l.requests(&annotations).force);
        assert_eq!(l.handled_force_at.as_deref(), Some("d"));
    }

    #[test]
    fn counters_reset_when_the_config_or_generation_changes() {
        let mut l = Ledger {
            failures: 2,
            install_failures: 2,
            config_digest: Some("d1".into()),
            generation: Some(4),
            ..Default::default()
        };
        l.reset_if_changed("d1", Some(4));
        assert_eq!(l.failures, 2);
        l.reset_if_changed("d1", Some(5));
        assert_eq!(l.failures, 0);
        l.failures = 1;
        l.generation = Some(5);
        l.reset_if_changed("d2", Some(5));
        assert_eq!(l.failures, 0);
    }
}
