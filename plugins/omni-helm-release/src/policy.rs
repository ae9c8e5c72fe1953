//! What to do when an action fails, read from the spec: Flux helm-controller's strategies when the object asks
//! for them (`install`/`upgrade` `.remediation` and `.strategy`), and otherwise the Go operator's behaviour this
//! plugin kept since its first version (a failed action retried for ever, with a growing delay between tries).
//! Also the Helm test settings and the check interval.

use omni_api::{
    HelmActionStrategyName, HelmRemediation, HelmRemediationStrategy, OmniHelmReleaseSpec,
};
use omni_plugin_sdk::go::parse_duration;

/// The check interval when `spec.interval` is unset (the Go operator had none).
pub const DEFAULT_INTERVAL_MS: u64 = 5 * 60_000;
/// Flux's `retryInterval` default for `RetryOnFailure`.
pub const DEFAULT_RETRY_INTERVAL_MS: u64 = 5 * 60_000;
/// The first delay of the default retry; it doubles per failure up to [`MAX_BACKOFF_MS`].
pub const FIRST_BACKOFF_MS: u64 = 15_000;
pub const MAX_BACKOFF_MS: u64 = 10 * 60_000;

/// An install or an upgrade: the actions that make revisions, and that remediation is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseAction {
    Install,
    Upgrade,
}

impl ReleaseAction {
    /// As Flux's `lastAttemptedReleaseAction` spells it.
    pub fn name(self) -> &'static str {
        match self {
            ReleaseAction::Install => "install",
            ReleaseAction::Upgrade => "upgrade",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "install" => Some(ReleaseAction::Install),
            "upgrade" => Some(ReleaseAction::Upgrade),
            _ => None,
        }
    }
}

/// How a failure of one action is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// No strategy in the spec: tried again after 15 s, doubling to 10 min, for ever (the Go operator retried on
    /// every reconcile; this keeps that and spaces the tries).
    Backoff,
    /// `strategy.name: RetryOnFailure`: the action again after the interval, without remediation, for ever.
    Interval(u64),
    /// `RemediateOnFailure` (or a `remediation` block): remediate, then retry while `retries` last.
    Remediate(Remediation),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remediation {
    /// Negative: without limit.
    pub retries: i64,
    pub remediate_last_failure: bool,
    /// Upgrades only; installs are always remediated by uninstalling.
    pub uninstall: bool,
}

impl Remediation {
    /// Whether `failures` failed attempts used up the retries.
    pub fn exhausted(&self, failures: i64) -> bool {
        self.retries >= 0 && failures > self.retries
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tests {
    pub timeout_seconds: u32,
    /// Failed tests are reported and never count against the release.
    pub ignore_failures: bool,
    /// Test names run (all when empty) and names never run.
    pub include: Vec<String>,
    pub exclude: Vec<String>,
}

impl Tests {
    /// Whether the test hook `name` runs under the filters.
    pub fn selects(&self, name: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|n| n == name))
            && !self.exclude.iter().any(|n| n == name)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub install: Retry,
    pub upgrade: Retry,
    /// Failed tests count as failures of the install or upgrade before them unless this says otherwise.
    pub install_ignores_tests: bool,
    pub upgrade_ignores_tests: bool,
    /// None: tests are not run.
    pub tests: Option<Tests>,
    pub interval_ms: u64,
}

impl Policy {
    /// Durations that do not parse are refused by validation before reconcile gets here; should one slip
    /// through, the default stands in.
    pub fn of(spec: &OmniHelmReleaseSpec, timeout_seconds: u32) -> Policy {
        let install = spec.install.as_ref();
        let upgrade = spec.upgrade.as_ref();
        let tests = spec.test.as_ref().filter(|t| t.enable == Some(true));
        Policy {
            install: retry(
                install.and_then(|i| i.strategy.as_ref()),
                install.and_then(|i| i.remediation.as_ref()),
                false,
            ),
            upgrade: retry(
                upgrade.and_then(|u| u.strategy.as_ref()),
                upgrade.and_then(|u| u.remediation.as_ref()),
                true,
            ),
            install_ignores_tests: ignores_tests(install.and_then(|i| i.remediation.as_ref())),
            upgrade_ignores_tests: ignores_tests(upgrade.and_then(|u| u.remediation.as_ref())),
            tests: tests.map(|t| {
                let filters = t.filters.as_deref().unwrap_or_default();
                let names = |exclude: bool| {
                    filters
                        .iter()
                        .filter(|f| f.exclude.unwrap_or(false) == exclude)
                        .map(|f| f.name.clone())
                        .collect()
                };
                Tests {
                    timeout_seconds: t
                        .timeout
                        .as_deref()
                        .and_then(seconds)
                        .unwrap_or(timeout_seconds),
                    ignore_failures: t.ignore_failures == Some(true),
                    include: names(false),
                    exclude: names(true),
                }
            }),
            interval_ms: spec
                .interval
                .as_deref()
                .and_then(millis)
                .unwrap_or(DEFAULT_INTERVAL_MS),
        }
    }

    pub fn retry(&self, action: ReleaseAction) -> Retry {
        match action {
            ReleaseAction::Install => self.install,
            ReleaseAction::Upgrade => self.upgrade,
        }
    }

    /// Whether failed tests after `action` count against it.
    pub fn tests_count(&self, action: ReleaseAction) -> bool {
        let ignored = match action {
            ReleaseAction::Install => self.install_ignores_tests,
            ReleaseAction::Upgrade => self.upgrade_ignores_tests,
        };
        self.tests.as_ref().is_some_and(|t| !t.ignore_failures) && !ignored
    }
}

fn retry(
    strategy: Option<&omni_api::HelmActionStrategy>,
    remediation: Option<&HelmRemediation>,
    upgrade: bool,
) -> Retry {
    match strategy.and_then(|s| s.name) {
        Some(HelmActionStrategyName::RetryOnFailure) => Retry::Interval(
            strategy
                .and_then(|s| s.retry_interval.as_deref())
                .and_then(millis)
                .unwrap_or(DEFAULT_RETRY_INTERVAL_MS),
        ),
        Some(HelmActionStrategyName::RemediateOnFailure) => Retry::Remediate(remediation_of(
            remediation.cloned().unwrap_or_default(),
            upgrade,
        )),
        None => match remediation {
            Some(r) => Retry::Remediate(remediation_of(r.clone(), upgrade)),
            None => Retry::Backoff,
        },
    }
}

/// Flux's defaults: 0 retries; remediating the last failure defaults to true for upgrades with retries.
fn remediation_of(r: HelmRemediation, upgrade: bool) -> Remediation {
    let retries = r.retries.unwrap_or(0);
    Remediation {
        retries,
        remediate_last_failure: r.remediate_last_failure.unwrap_or(upgrade && retries != 0),
        uninstall: upgrade && r.strategy == Some(HelmRemediationStrategy::Uninstall),
    }
}

fn ignores_tests(r: Option<&HelmRemediation>) -> bool {
    r.and_then(|r| r.ignore_test_failures) == Some(true)
}

/// A positive Go duration in milliseconds (at least 1).
pub fn millis(text: &str) -> Option<u64> {
    let ns = parse_duration(text).ok().filter(|ns| *ns > 0)?;
    Some((ns as u64).div_ceil(1_000_000).max(1))
}

/// A positive Go duration in whole seconds, rounded up (at least 1).
pub fn seconds(text: &str) -> Option<u32> {
    let ns = parse_duration(text).ok().filter(|ns| *ns > 0)?;
    Some(u32::try_from((ns as u64).div_ceil(1_000_000_000).max(1)).unwrap_or(u32::MAX))
}

/// The default retry's delay after `failures` consecutive failures.
pub fn backoff_ms(failures: i64) -> u64 {
    let shift = u32::try_from(failures.saturating_sub(1).clamp(0, 10)).unwrap_or(10);
    FIRST_BACKOFF_MS
        .saturating_mul(1u64 << shift)
        .min(MAX_BACKOFF_MS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use omni_api::{HelmActionStrategy, HelmInstallSpec, HelmTestSpec, HelmUpgradeSpec};

    #[test]
    fn without_a_strategy_failures_back_off_for_ever_as_the_go_operator_retried() {
        let p = Policy::of(&OmniHelmReleaseSpec::default(), 300);
        assert_eq!((p.install, p.upgrade), (Retry::Backoff, Retry::Backoff));
        assert_eq!(p.tests, None);
        assert_eq!(p.interval_ms, DEFAULT_INTERVAL_MS);
        assert_eq!(backoff_ms(1), 15_000);
        assert_eq!(backoff_ms(3), 60_000);
        assert_eq!(backoff_ms(30), MAX_BACKOFF_MS);
    }

    #[test]
    fn flux_defaults_apply_to_a_remediation_block() {
        let spec = OmniHelmReleaseSpec {
            install: Some(HelmInstallSpec {
                remediation: Some(HelmRemediation {
                    retries: Some(3),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            upgrade: Some(HelmUpgradeSpec {
                remediation: Some(HelmRemediation {
                    retries: Some(2),
                    strategy: Some(HelmRemediationStrategy::Uninstall),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let p = Policy::of(&spec, 300);
        // Installs do not remediate their last failure unless asked; upgrades with retries do.
        assert_eq!(
            p.install,
            Retry::Remediate(Remediation {
                retries: 3,
                remediate_last_failure: false,
                uninstall: false
            })
        );
        assert_eq!(
            p.upgrade,
            Retry::Remediate(Remediation {
                retries: 2,
                remediate_last_failure: true,
                uninstall: true
            })
        );
        let Retry::Remediate(r) = p.upgrade else {
            panic!()
        };
        assert!(!r.exhausted(2) && r.exhausted(3));
        let unlimited = Remediation {
            retries: -1,
            remediate_last_failure: false,
            uninstall: false,
        };
        assert!(!unlimited.exhausted(1_000));
    }

    #[test]
    fn retry_on_failure_waits_its_interval_and_tests_follow_their_filters() {
        let spec = OmniHelmReleaseSpec {
            upgrade: Some(HelmUpgradeSpec {
                strategy: Some(HelmActionStrategy {
                    name: Some(HelmActionStrategyName::RetryOnFailure),
                    retry_interval: Some("90s".into()),
                }),
                ..Default::default()
            }),
            test: Some(HelmTestSpec {
                enable: Some(true),
                timeout: Some("2m".into()),
                filters: Some(vec![omni_api::HelmTestFilter {
                    name: "slow".into(),
                    exclude: Some(true),
                }]),
                ..Default::default()
            }),
            interval: Some("1m".into()),
            ..Default::default()
        };
        let p = Policy::of(&spec, 300);
        assert_eq!(p.upgrade, Retry::Interval(90_000));
        let t = p.tests.clone().unwrap();
        assert_eq!(t.timeout_seconds, 120);
        assert!(t.selects("smoke") && !t.selects("slow"));
        assert!(p.tests_count(ReleaseAction::Upgrade));
        assert_eq!(p.interval_ms, 60_000);
    }
}
