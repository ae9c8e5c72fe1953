//! Fault injection: per method (and optionally per resource type), on the next N calls, on every call, or on a
//! share of the calls drawn from a seeded generator (so a chaos run replays); plus a global "unavailable" switch,
//! and a count of what was injected.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tonic::Code;

/// Which calls a fault applies to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Matcher {
    /// Full path (`/cosi.resource.State/List`) or just the method name (`List`); `None` = every method.
    pub method: Option<String>,
    /// Resource type of the request (`Clusters.omni.sidero.dev`); `None` = any.
    pub resource_type: Option<String>,
}

impl Matcher {
    pub fn any() -> Self {
        Matcher::default()
    }

    pub fn method(m: &str) -> Self {
        Matcher {
            method: Some(m.to_string()),
            resource_type: None,
        }
    }

    pub fn method_type(m: &str, ty: &str) -> Self {
        Matcher {
            method: Some(m.to_string()),
            resource_type: Some(ty.to_string()),
        }
    }

    pub fn with_type(mut self, ty: &str) -> Self {
        self.resource_type = Some(ty.to_string());
        self
    }

    fn matches(&self, path: &str, ty: Option<&str>) -> bool {
        let method_ok = match &self.method {
            None => true,
            Some(m) if m.starts_with('/') => m == path,
            Some(m) => path.rsplit('/').next() == Some(m.as_str()),
        };
        let type_ok = match &self.resource_type {
            None => true,
            Some(t) => ty == Some(t.as_str()),
        };
        method_ok && type_ok
    }
}

/// What happens to a matching call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultAction {
    /// Answer with this status instead of serving the call.
    Error { code: Code, message: String },
    /// Wait this long before serving the call.
    Latency(Duration),
    /// Drop the TCP/h2 connection the call arrived on (the client sees `Unavailable`).
    CloseConnection,
    /// List: send this many items, then end the stream with `Unavailable`.
    BreakListAfter(usize),
    /// Watch: end the stream with `Unavailable` right after BOOTSTRAPPED (kind) or the initial event (single).
    BreakWatchAfterBootstrap,
    /// Watch: never send BOOTSTRAPPED (the stream stays open and live events still flow).
    NoBootstrapped,
    /// Watch: after bootstrapping, send an ERRORED event with this text and end the stream (buffer overrun).
    ErroredEvent(String),
    /// Kubeconfig: answer OK with empty `kubeconfig` bytes.
    EmptyKubeconfig,
}

#[derive(Debug, Clone)]
struct Rule {
    matcher: Matcher,
    action: FaultAction,
    /// Calls left; `None` = every call until cleared.
    remaining: Option<u32>,
    /// The share of matching calls the rule applies to (1: all), drawn from the seeded generator.
    rate: f64,
}

#[derive(Debug)]
struct Rules {
    rules: Vec<Rule>,
    rng: StdRng,
    /// Actions taken so far, by kind (`Error(Unavailable)`, `Latency`, `CloseConnection`, ...).
    injected: BTreeMap<String, u64>,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            rules: Vec::new(),
            rng: StdRng::seed_from_u64(0),
            injected: BTreeMap::new(),
        }
    }
}

/// The fault switchboard of one simulator.
#[derive(Debug, Default)]
pub struct Faults {
    rules: Mutex<Rules>,
    unavailable: AtomicBool,
}

impl FaultAction {
    /// The kind of action, for the count of what was injected.
    fn kind(&self) -> String {
        match self {
            FaultAction::Error { code, .. } => format!("Error({code:?})"),
            FaultAction::Latency(_) => "Latency".into(),
            FaultAction::CloseConnection => "CloseConnection".into(),
            FaultAction::BreakListAfter(_) => "BreakListAfter".into(),
            FaultAction::BreakWatchAfterBootstrap => "BreakWatchAfterBootstrap".into(),
            FaultAction::NoBootstrapped => "NoBootstrapped".into(),
            FaultAction::ErroredEvent(_) => "ErroredEvent".into(),
            FaultAction::EmptyKubeconfig => "EmptyKubeconfig".into(),
        }
    }
}

/// The message every RPC gets while [`Faults::set_unavailable`] is on.
pub const UNAVAILABLE_MESSAGE: &str = "omni-sim: unavailable (fault injected)";

impl Faults {
    fn lock(&self) -> std::sync::MutexGuard<'_, Rules> {
        self.rules.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a fault for the next `times` matching calls (`None` = until cleared).
    pub fn inject(&self, matcher: Matcher, action: FaultAction, times: Option<u32>) {
        self.lock().rules.push(Rule {
            matcher,
            action,
            remaining: times,
            rate: 1.0,
        });
    }

    /// Adds a fault for a share `rate` (clamped to 0..=1) of the matching calls, until cleared.
    pub fn inject_rate(&self, matcher: Matcher, action: FaultAction, rate: f64) {
        self.lock().rules.push(Rule {
            matcher,
            action,
            remaining: None,
            rate: if rate.is_nan() {
                0.0
            } else {
                rate.clamp(0.0, 1.0)
            },
        });
    }

    /// Restarts the generator behind rates: the same seed and the same calls in the same order give the same
    /// faults.
    pub fn seed(&self, seed: u64) {
        self.lock().rng = StdRng::seed_from_u64(seed);
    }

    /// Actions taken so far, by kind (`Error(Unavailable)`, `Latency`, `CloseConnection`, ...).
    pub fn injected(&self) -> BTreeMap<String, u64> {
        self.lock().injected.clone()
    }

    /// The next `n` calls of `method` fail with `code` and `message`.
    pub fn fail_next(&self, method: &str, n: u32, code: Code, message: &str) {
        self.inject(
            Matcher::method(method),
            FaultAction::Error {
                code,
                message: message.into(),
            },
            Some(n),
        );
    }

    /// Every call of `method` fails until cleared.
    pub fn fail_always(&self, method: &str, code: Code, message: &str) {
        self.inject(
            Matcher::method(method),
            FaultAction::Error {
                code,
                message: message.into(),
            },
            None,
        );
    }

    /// Every call of `method` (or every call, for `"*"`) waits `delay` first.
    pub fn latency(&self, method: &str, delay: Duration) {
        let m = if method == "*" {
            Matcher::any()
        } else {
            Matcher::method(method)
        };
        self.inject(m, FaultAction::Latency(delay), None);
    }

    /// The next `n` calls of `method` drop their connection.
    pub fn close_connection_next(&self, method: &str, n: u32) {
        self.inject(
            Matcher::method(method),
            FaultAction::CloseConnection,
            Some(n),
        );
    }

    /// While on, every RPC answers `Unavailable "omni-sim: unavailable (fault injected)"`.
    pub fn set_unavailable(&self, on: bool) {
        self.unavailable.store(on, Ordering::SeqCst);
    }

    pub fn is_unavailable(&self) -> bool {
        self.unavailable.load(Ordering::SeqCst)
    }

    /// Removes every fault and turns the unavailable switch off (the counts stay).
    pub fn clear(&self) {
        self.lock().rules.clear();
        self.set_unavailable(false);
    }

    /// Takes the actions that apply to this call, consuming one use of each counted rule; a rule by rate draws
    /// once per matching call.
    pub(crate) fn take(&self, path: &str, ty: Option<&str>) -> Vec<FaultAction> {
        let mut guard = self.lock();
        let Rules {
            rules,
            rng,
            injected,
        } = &mut *guard;
        let mut out = Vec::new();
        for rule in rules.iter_mut() {
            if rule.remaining == Some(0) || !rule.matcher.matches(path, ty) {
                continue;
            }
            if rule.rate < 1.0 && !rng.gen_bool(rule.rate) {
                continue;
            }
            if let Some(n) = rule.remaining.as_mut() {
                *n -= 1;
            }
            *injected.entry(rule.action.kind()).or_default() += 1;
            out.push(rule.action.clone());
        }
        rules.retain(|r| r.remaining != Some(0));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_faults_run_out_and_match_by_method_and_type() {
        let f = Faults::default();
        f.fail_next("List", 2, Code::Unavailable, "x");
        f.inject(
            Matcher::method_type("Get", "A"),
            FaultAction::CloseConnection,
            None,
        );
        assert_eq!(f.take("/cosi.resource.State/List", None).len(), 1);
        assert_eq!(f.take("/cosi.resource.State/List", None).len(), 1);
        assert!(f.take("/cosi.resource.State/List", None).is_empty());
        assert!(f.take("/cosi.resource.State/Get", Some("B")).is_empty());
        assert_eq!(
            f.take("/cosi.resource.State/Get", Some("A")),
            vec![FaultAction::CloseConnection]
        );
        assert_eq!(
            f.take("/cosi.resource.State/Get", Some("A")).len(),
            1,
            "persistent"
        );
        f.clear();
        assert!(f.take("/cosi.resource.State/Get", Some("A")).is_empty());
    }

    #[test]
    fn faults_by_rate_replay_from_their_seed_and_are_counted() {
        let draws = |seed: u64| {
            let f = Faults::default();
            f.seed(seed);
            f.inject_rate(
                Matcher::method("Get"),
                FaultAction::Error {
                    code: Code::Unavailable,
                    message: "x".into(),
                },
                0.25,
            );
            let fired: Vec<bool> = (0..400)
                .map(|_| !f.take("/cosi.resource.State/Get", None).is_empty())
                .collect();
            assert!(f.take("/cosi.resource.State/List", None).is_empty());
            (fired, f.injected())
        };
        let (a, counted) = draws(3);
        assert_eq!(a, draws(3).0, "the same seed replays");
        assert_ne!(a, draws(4).0, "another seed draws others");
        let n = a.iter().filter(|x| **x).count();
        assert!((60..140).contains(&n), "about a quarter of 400, not {n}");
        assert_eq!(counted.get("Error(Unavailable)"), Some(&(n as u64)));
    }
}
