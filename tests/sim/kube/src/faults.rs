//! Fault injection for tests and chaos runs: failing requests (the next N, or each with a probability from a seeded
//! generator, so a run replays), added latency, dropped watches and a paused server; with a count of what was
//! injected, by status.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Deserialize;
use tokio::sync::watch;

use crate::error::ApiError;

/// Which requests a fault applies to; an empty field matches anything.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Matcher {
    /// Request verb: get, list, watch, create, update, patch, delete, deletecollection.
    #[serde(default)]
    pub verb: Option<String>,
    /// Resource plural, optionally with subresource (`configmaps`, `widgets/status`).
    #[serde(default)]
    pub resource: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
}

impl Matcher {
    pub fn verb_resource(verb: &str, resource: &str) -> Self {
        Matcher {
            verb: Some(verb.into()),
            resource: Some(resource.into()),
            ..Default::default()
        }
    }

    fn matches(&self, r: &RequestFacts<'_>) -> bool {
        let res = if r.subresource.is_empty() {
            r.resource.to_string()
        } else {
            format!("{}/{}", r.resource, r.subresource)
        };
        self.verb.as_deref().is_none_or(|v| v == r.verb)
            && self
                .resource
                .as_deref()
                .is_none_or(|x| x == res || x == r.resource)
            && self.namespace.as_deref().is_none_or(|x| x == r.namespace)
            && self.name.as_deref().is_none_or(|x| x == r.name)
    }
}

/// The facts about a request that matchers look at.
pub struct RequestFacts<'a> {
    pub verb: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

#[derive(Debug, Clone)]
struct FailRule {
    matcher: Matcher,
    /// How many more matching requests fail; `None`: a rule by rate, until cleared.
    remaining: Option<u32>,
    /// The share of matching requests that fail (0 to 1), drawn from the seeded generator.
    rate: f64,
    status: u16,
    retry_after: Option<u32>,
}

/// Watches that end early: a matching watch, drawn by rate, ends after a random moment within `within`.
#[derive(Debug, Clone)]
struct CutRule {
    matcher: Matcher,
    rate: f64,
    within: Duration,
}

/// Connections dropped: a matching request, drawn by rate, closes its connection without an answer.
#[derive(Debug, Clone)]
struct DropRule {
    matcher: Matcher,
    rate: f64,
}

#[derive(Debug, Clone)]
struct LatencyRule {
    matcher: Matcher,
    delay: Duration,
}

struct State {
    fail: Vec<FailRule>,
    latency: Vec<LatencyRule>,
    cuts: Vec<CutRule>,
    /// Watches cut short so far.
    watches_cut: u64,
    drops: Vec<DropRule>,
    /// Connections dropped so far.
    connections_dropped: u64,
    rng: StdRng,
    /// Failures injected so far, by HTTP status.
    injected: BTreeMap<u16, u64>,
}

impl Default for State {
    fn default() -> Self {
        State {
            fail: Vec::new(),
            latency: Vec::new(),
            cuts: Vec::new(),
            watches_cut: 0,
            drops: Vec::new(),
            connections_dropped: 0,
            rng: StdRng::seed_from_u64(0),
            injected: BTreeMap::new(),
        }
    }
}

pub struct Faults {
    state: Mutex<State>,
    paused: watch::Sender<bool>,
    /// Bumped to close every open watch.
    watch_epoch: watch::Sender<u64>,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            state: Mutex::default(),
            paused: watch::channel(false).0,
            watch_epoch: watch::channel(0).0,
        }
    }
}

impl Faults {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Fails the next `count` matching requests with `status` (409, 410, 429, 500, 503, ...).
    pub fn fail_next(&self, matcher: Matcher, count: u32, status: u16, retry_after: Option<u32>) {
        self.state().fail.push(FailRule {
            matcher,
            remaining: Some(count),
            rate: 1.0,
            status,
            retry_after,
        });
    }

    /// Fails each matching request with probability `rate` (clamped to 0..=1) until cleared.
    pub fn fail_rate(&self, matcher: Matcher, rate: f64, status: u16, retry_after: Option<u32>) {
        self.state().fail.push(FailRule {
            matcher,
            remaining: None,
            rate: share(rate),
            status,
            retry_after,
        });
    }

    /// Restarts the generator behind rates: the same seed and the same requests in the same order give the
    /// same failures.
    pub fn seed(&self, seed: u64) {
        self.state().rng = StdRng::seed_from_u64(seed);
    }

    /// Failures injected so far, by HTTP status.
    pub fn injected(&self) -> BTreeMap<u16, u64> {
        self.state().injected.clone()
    }

    /// Delays every matching request by `delay` until cleared.
    pub fn add_latency(&self, matcher: Matcher, delay: Duration) {
        self.state().latency.push(LatencyRule { matcher, delay });
    }

    /// Ends a share `rate` of the matching watches early, each at a moment drawn within `within` of its start
    /// (seeded, like the failure rates), as a load balancer's idle timeout or an API server restart would; until
    /// cleared. The client sees the stream end and must watch again from where it was.
    pub fn cut_watches_rate(&self, matcher: Matcher, rate: f64, within: Duration) {
        self.state().cuts.push(CutRule {
            matcher,
            rate: share(rate),
            within,
        });
    }

    /// Watches cut short so far by [`Faults::cut_watches_rate`].
    pub fn watches_cut(&self) -> u64 {
        self.state().watches_cut
    }

    /// For a watch starting now: when to end it early, if a cut rule draws it.
    pub fn watch_cut(&self, r: &RequestFacts<'_>) -> Option<Duration> {
        let mut s = self.state();
        let State {
            cuts,
            rng,
            watches_cut,
            ..
        } = &mut *s;
        let cut = cuts.iter().find_map(|c| {
            if !c.matcher.matches(r) || (c.rate < 1.0 && !rng.gen_bool(c.rate)) {
                return None;
            }
            let millis = u64::try_from(c.within.as_millis())
                .unwrap_or(u64::MAX)
                .max(1);
            Some(Duration::from_millis(rng.gen_range(0..millis)))
        })?;
        *watches_cut += 1;
        Some(cut)
    }

    /// Drops the connection of a share `rate` of the matching requests, without an answer (seeded, like the
    /// failure rates), as a crashed API server or a load balancer's reset does; until cleared. The client sees its
    /// connection closed in the middle of the request.
    pub fn drop_connections_rate(&self, matcher: Matcher, rate: f64) {
        self.state().drops.push(DropRule {
            matcher,
            rate: share(rate),
        });
    }

    /// Connections dropped so far by [`Faults::drop_connections_rate`].
    pub fn connections_dropped(&self) -> u64 {
        self.state().connections_dropped
    }

    /// Whether to drop the connection a request came on, instead of answering it.
    pub fn drop_connection(&self, r: &RequestFacts<'_>) -> bool {
        let mut s = self.state();
        let State {
            drops,
            rng,
            connections_dropped,
            ..
        } = &mut *s;
        let dropped = drops
            .iter()
            .any(|d| d.matcher.matches(r) && (d.rate >= 1.0 || rng.gen_bool(d.rate)));
        if dropped {
            *connections_dropped += 1;
        }
        dropped
    }

    /// Ends the latency rules alone (a slow spell over), leaving the failure rules.
    pub fn clear_latency(&self) {
        self.state().latency.clear();
    }

    pub fn clear(&self) {
        let mut s = self.state();
        s.fail.clear();
        s.latency.clear();
        s.cuts.clear();
        s.drops.clear();
    }

    /// Ends every open watch stream, as an API server restart or a load balancer reset would.
    pub fn drop_watches(&self) {
        self.watch_epoch.send_modify(|e| *e += 1);
    }

    pub fn watch_epoch(&self) -> watch::Receiver<u64> {
        self.watch_epoch.subscribe()
    }

    /// Holds every API request until `resume`.
    pub fn pause(&self) {
        self.paused.send_replace(true);
    }

    pub fn resume(&self) {
        self.paused.send_replace(false);
    }

    /// Applies pause, latency and failure rules to one request; Some(error) fails it.
    pub async fn before(&self, r: &RequestFacts<'_>) -> Option<ApiError> {
        let mut paused = self.paused.subscribe();
        while *paused.borrow_and_update() {
            if paused.changed().await.is_err() {
                break;
            }
        }
        let (delay, failure) = {
            let mut s = self.state();
            let delay: Duration = s
                .latency
                .iter()
                .filter(|l| l.matcher.matches(r))
                .map(|l| l.delay)
                .sum();
            let State {
                fail,
                rng,
                injected,
                ..
            } = &mut *s;
            // The first matching rule that fires decides; a rule by rate draws once per matching request.
            let failure = fail
                .iter_mut()
                .filter(|f| f.remaining != Some(0) && f.matcher.matches(r))
                .find_map(|f| {
                    if f.rate < 1.0 && !rng.gen_bool(f.rate) {
                        return None;
                    }
                    if let Some(n) = f.remaining.as_mut() {
                        *n -= 1;
                    }
                    Some((f.status, f.retry_after))
                });
            fail.retain(|f| f.remaining != Some(0));
            if let Some((status, _)) = failure {
                *injected.entry(status).or_default() += 1;
            }
            (delay, failure)
        };
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        failure.map(|(status, retry_after)| injected_error(status, retry_after, r))
    }
}

/// A rate as a share of requests: clamped to 0..=1, and NaN as none.
fn share(rate: f64) -> f64 {
    if rate.is_nan() {
        0.0
    } else {
        rate.clamp(0.0, 1.0)
    }
}

/// An error shaped like the real server's for that status.
fn injected_error(status: u16, retry_after: Option<u32>, r: &RequestFacts<'_>) -> ApiError {
    let mut e = match status {
        409 => ApiError::stale_resource_version(r.resource, r.name),
        429 => ApiError::new(
            429,
            "TooManyRequests",
            "Too many requests, please try again later.",
        ),
        500 => ApiError::internal("injected fault"),
        503 => ApiError::new(
            503,
            "ServiceUnavailable",
            "the server is currently unable to handle the request",
        ),
        504 => ApiError::new(
            504,
            "Timeout",
            "the server was unable to return a response in the time allotted, but may still be processing the request",
        ),
        404 => ApiError::not_found(r.resource, r.name),
        // What a list from a compacted resourceVersion gets (etcd's "required revision has been compacted", as the
        // API server words it). The real server tells a watch the same in an ERROR event of a 200 stream; here a
        // watch gets it as the answer itself, which client-go and kube-rs treat alike: they relist.
        410 => ApiError::new(410, "Expired", "too old resource version: 1 (2)"),
        other => ApiError::new(other, "", format!("injected fault with status {other}")),
    };
    e.retry_after = retry_after.or(if status == 429 { Some(1) } else { None });
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts<'a>(verb: &'a str, resource: &'a str) -> RequestFacts<'a> {
        RequestFacts {
            verb,
            resource,
            subresource: "",
            namespace: "default",
            name: "x",
        }
    }

    #[tokio::test]
    async fn fail_next_counts_down_and_only_matches_its_requests() {
        let f = Faults::default();
        f.fail_next(
            Matcher::verb_resource("update", "configmaps"),
            2,
            429,
            Some(3),
        );
        assert!(f.before(&facts("get", "configmaps")).await.is_none());
        let e = f
            .before(&facts("update", "configmaps"))
            .await
            .expect("first failure");
        assert_eq!((e.code, e.retry_after), (429, Some(3)));
        assert!(f.before(&facts("update", "configmaps")).await.is_some());
        assert!(f.before(&facts("update", "configmaps")).await.is_none());
    }

    #[tokio::test]
    async fn failures_by_rate_replay_from_their_seed_and_are_counted() {
        let draws = |seed: u64| async move {
            let f = Faults::default();
            f.seed(seed);
            f.fail_rate(Matcher::verb_resource("list", "configmaps"), 0.3, 410, None);
            let mut fired = Vec::new();
            for _ in 0..200 {
                fired.push(f.before(&facts("list", "configmaps")).await.is_some());
            }
            // Another resource never matches, and draws nothing.
            assert!(f.before(&facts("list", "secrets")).await.is_none());
            (fired, f.injected())
        };
        let (a, counted) = draws(7).await;
        let (b, _) = draws(7).await;
        let (c, _) = draws(8).await;
        assert_eq!(a, b, "the same seed replays the same failures");
        assert_ne!(a, c, "another seed draws others");
        let n = a.iter().filter(|x| **x).count();
        assert!((30..90).contains(&n), "about 30% of 200 fail, not {n}");
        assert_eq!(counted.get(&410), Some(&(n as u64)));
        let f = Faults::default();
        f.fail_rate(Matcher::default(), 1.0, 410, None);
        let e = f
            .before(&facts("watch", "pods"))
            .await
            .expect("rate 1 always fails");
        assert_eq!((e.code, e.reason), (410, "Expired"));
        f.clear();
        assert!(f.before(&facts("watch", "pods")).await.is_none());
    }

    #[tokio::test]
    async fn paused_requests_wait_for_resume() {
        let f = std::sync::Arc::new(Faults::default());
        f.pause();
        let f2 = f.clone();
        let t = tokio::spawn(async move { f2.before(&facts("get", "configmaps")).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!t.is_finished());
        f.resume();
        assert!(t.await.expect("join").is_none());
    }
}
