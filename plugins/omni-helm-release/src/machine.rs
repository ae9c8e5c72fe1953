//! The next step for a release: Flux helm-controller's release state machine (`internal/reconcile`) as a pure
//! function of the release as the host observed it, the counters in the status, and the policy the spec asks
//! for. The host runs whatever is chosen in the background; the next reconcile sees how it ended and chooses
//! again.
//!
//! States, in Flux's order: an action of ours running (wait); the latest revision `pending-*` with none of ours
//! running (unlock it, once it is ours or older than its timeout allows); no release (install); a failed
//! revision (remediate, retry, or stop with the retries used up); deployed from what is wanted (test it when
//! tests are on and it is untested; a failed test is a failure); anything else, including a release made by
//! someone else (upgrade).

use omni_plugin_sdk::helm::{Action, Observation, Revision};
use omni_plugin_sdk::time::parse_rfc3339;

use crate::ledger::Ledger;
use crate::policy::{Policy, ReleaseAction, Retry, backoff_ms};

/// Beyond the action's timeout, how long a pending revision with no action of ours may stand before it is taken
/// for abandoned (someone else's `helm` may still run it).
pub const PENDING_GRACE_S: i64 = 120;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    Install,
    Upgrade,
    Test,
    /// Remediation of a failed upgrade: back to this revision.
    Rollback(u64),
    /// Remediation of a failed install, or of an upgrade with strategy `uninstall`.
    Uninstall,
    Unlock,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// An action of ours runs.
    Running(Action),
    Start(Move),
    /// Someone else's action holds the release (`pending-*`, within its time).
    Pending(Action),
    /// A failed action is tried again after this many milliseconds.
    RetryIn(u64),
    /// Deployed from what is wanted (and tested, when tests are on).
    InSync(Tested),
    /// No more automatic actions until the spec changes or a reset or force is requested.
    Stalled(Stall),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tested {
    /// Tests are off.
    Off,
    Passed,
    /// Failed, and the spec says to ignore it.
    FailedIgnored,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stall {
    /// The retries of `action` are used up.
    RetriesExhausted(ReleaseAction),
    /// The remediation itself failed.
    RemediationFailed(Action),
}

/// What the machine decides from.
pub struct Situation<'a> {
    pub observed: &'a Observation,
    pub ledger: &'a Ledger,
    pub policy: &'a Policy,
    /// The action timeout, for judging a pending revision.
    pub timeout_seconds: u32,
    /// Unix seconds.
    pub now: Option<i64>,
    /// A `forceAt` request to honour.
    pub force: bool,
}

const DEPLOYED: &str = "deployed";
const FAILED: &str = "failed";
const UNINSTALLED: &str = "uninstalled";

impl Situation<'_> {
    pub fn next(&self) -> Next {
        let o = self.observed;
        if let Some(r) = &o.running {
            return Next::Running(r.action);
        }
        let latest = o.release.as_ref().map(|r| &r.current);
        if let Some(r) = latest.filter(|r| r.status.starts_with("pending-")) {
            return if o.last.is_some() || self.abandoned(r) {
                Next::Start(Move::Unlock)
            } else {
                Next::Pending(if r.status == "pending-install" {
                    Action::Install
                } else {
                    Action::Upgrade
                })
            };
        }
        let absent = latest.is_none_or(|r| r.status == UNINSTALLED);
        if self.force {
            return Next::Start(if absent { Move::Install } else { Move::Upgrade });
        }
        let Some(current) = latest.filter(|_| !absent) else {
            return self.again(ReleaseAction::Install, Move::Install);
        };
        if current.status == FAILED {
            // Failed because it was cancelled for a newer spec: that spec goes ahead (Helm upgrades over a failed
            // revision), without remediation or a failure counted.
            let cancelled = o.last.as_ref().is_some_and(|l| l.cancelled);
            if cancelled && current.digest.as_deref() != Some(&o.wanted) {
                return Next::Start(Move::Upgrade);
            }
            return self.failed();
        }
        let wanted = current.status == DEPLOYED && current.digest.as_deref() == Some(&o.wanted);
        if !wanted {
            return self.again(ReleaseAction::Upgrade, Move::Upgrade);
        }
        match self.tests() {
            TestState::Untested => Next::Start(Move::Test),
            TestState::Failed if self.test_failure_counts() => self.failed(),
            TestState::Failed => Next::InSync(Tested::FailedIgnored),
            TestState::Passed => Next::InSync(Tested::Passed),
            TestState::Off => Next::InSync(Tested::Off),
        }
    }

    /// An install or upgrade wanted again: at once unless a failure of this config waits its turn or used up
    /// the retries.
    fn again(&self, action: ReleaseAction, step: Move) -> Next {
        let l = self.ledger;
        let failed_before =
            l.failures > 0 && l.config_digest.as_deref() == Some(&self.observed.wanted);
        if !failed_before {
            return Next::Start(step);
        }
        let attempted = l.last_release_action.unwrap_or(action);
        match self.policy.retry(attempted) {
            Retry::Remediate(r) if r.exhausted(l.failures_of(attempted)) => {
                Next::Stalled(Stall::RetriesExhausted(attempted))
            }
            Retry::Remediate(_) => Next::Start(step),
            Retry::Backoff => self.after(backoff_ms(l.failures), step),
            Retry::Interval(ms) => self.after(ms, step),
        }
    }

    /// The latest revision failed (or its tests did, and they count).
    fn failed(&self) -> Next {
        let l = self.ledger;
        if let Some(last) = &self.observed.last
            && matches!(last.action, Action::Rollback | Action::Uninstall)
            && last.error.is_some()
        {
            return Next::Stalled(Stall::RemediationFailed(last.action));
        }
        let attempted = l.last_release_action.unwrap_or(ReleaseAction::Upgrade);
        match self.policy.retry(attempted) {
            Retry::Remediate(r) => {
                let exhausted = r.exhausted(l.failures_of(attempted));
                if exhausted && !r.remediate_last_failure {
                    return Next::Stalled(Stall::RetriesExhausted(attempted));
                }
                // Back to the newest revision that was deployed; a failed install, or an upgrade with nothing
                // to go back to, is uninstalled.
                let target = self.observed.release.as_ref().and_then(|r| {
                    r.history
                        .iter()
                        .find(|h| matches!(h.status.as_str(), "superseded" | DEPLOYED))
                        .map(|h| h.revision)
                });
                match target {
                    Some(revision) if attempted == ReleaseAction::Upgrade && !r.uninstall => {
                        Next::Start(Move::Rollback(revision))
                    }
                    _ => Next::Start(Move::Uninstall),
                }
            }
            // Helm upgrades over a failed revision (and over a failed first install).
            Retry::Backoff => self.after(backoff_ms(l.failures.max(1)), Move::Upgrade),
            Retry::Interval(ms) => self.after(ms, Move::Upgrade),
        }
    }

    /// `step` once `ms` have passed since the last action finished.
    fn after(&self, ms: u64, step: Move) -> Next {
        let finished = self.ledger.last_attempt.as_deref().and_then(parse_rfc3339);
        match (finished, self.now) {
            (Some(finished), Some(now)) => {
                let due = finished.saturating_mul(1000).saturating_add(ms as i64);
                let left = due.saturating_sub(now.saturating_mul(1000));
                if left > 0 {
                    Next::RetryIn(left as u64)
                } else {
                    Next::Start(step)
                }
            }
            _ => Next::Start(step),
        }
    }

    fn abandoned(&self, r: &Revision) -> bool {
        match (parse_rfc3339(&r.updated), self.now) {
            (Some(since), Some(now)) => {
                now - since > i64::from(self.timeout_seconds) + PENDING_GRACE_S
            }
            // No time to judge by: with no action of ours running, take it as abandoned.
            _ => true,
        }
    }

    fn tests(&self) -> TestState {
        let Some(tests) = &self.policy.tests else {
            return TestState::Off;
        };
        let o = self.observed;
        let revision = o.release.as_ref().map_or(0, |r| r.current.revision);
        let selected: Vec<_> = o.tests.iter().filter(|t| tests.selects(&t.name)).collect();
        // A test step of ours that failed on this revision, even one that left no hook result (a timeout before
        // any hook ran), is a failed test, so it is not run again and again.
        let our_failure = o.last.as_ref().is_some_and(|l| {
            l.action == Action::Test
                && l.error.is_some()
                && (l.revision == 0 || l.revision == revision)
        });
        if our_failure || selected.iter().any(|t| t.phase == "Failed") {
            TestState::Failed
        } else if selected.iter().any(|t| t.phase != "Succeeded") {
            TestState::Untested
        } else {
            TestState::Passed
        }
    }

    fn test_failure_counts(&self) -> bool {
        let action = self
            .ledger
            .last_release_action
            .unwrap_or(ReleaseAction::Upgrade);
        self.policy.tests_count(action)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TestState {
    Off,
    Untested,
    Passed,
    Failed,
}
