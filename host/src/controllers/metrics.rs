//! The controllers' Prometheus metrics, under controller-runtime's names and labels so dashboards and alerts
//! written for Go operators read them unchanged: `controller_runtime_reconcile_total{controller,result}`,
//! `controller_runtime_reconcile_errors_total`, `controller_runtime_reconcile_time_seconds`,
//! `controller_runtime_active_workers`, `controller_runtime_max_concurrent_reconciles`, and client-go's
//! `workqueue_*` for each controller's queue. The controller label is the kind in lower case, as
//! controller-runtime names a controller built `For` a kind.
//!
//! kube-runtime's queue is internal, so [`QueueClock`] keeps the work queue's figures from outside it, with
//! client-go's rules: an object is added once until a reconcile picks it up (adds while it waits are merged, as
//! the real queue's dirty set merges them), its wait ends when a reconcile starts, and a requeue after a delay
//! joins the queue when the delay is over.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabel {
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: String,
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    name: String,
    controller: String,
}

/// What the controllers count beyond controller-runtime's metrics, each a counter per controller
/// (`omni_operator_controller_<name>_total{controller}`). Tests and benchmarks read the same counters
/// ([`Metrics::total`]): the controllers keep no count of their own beside the metrics registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// Plugin calls started (reconcile and finalize).
    PluginCalls,
    /// Calls that failed (plugin error, trap, deadline, API error).
    PluginCallFailures,
    /// Capability calls refused for lack of a grant.
    Denials,
    /// Events a plugin asked for that the per-object rate limit dropped.
    EventsDropped,
    /// Status writes the per-object rate limit deferred to a later reconcile.
    StatusWritesDeferred,
    /// Status writes refused because the object changed since it was read (the next reconcile starts over).
    StatusConflicts,
    /// Reconciles that read the object from the API server because the cache had not shown their last write.
    FreshReads,
    /// Requeues a plugin asked for sooner than the floor, raised to it.
    RequeuesRaised,
    /// Reconciles put off because the serving binding's quota was used up.
    QuotaDeferred,
}

impl Count {
    const ALL: [Count; 9] = [
        Count::PluginCalls,
        Count::PluginCallFailures,
        Count::Denials,
        Count::EventsDropped,
        Count::StatusWritesDeferred,
        Count::StatusConflicts,
        Count::FreshReads,
        Count::RequeuesRaised,
        Count::QuotaDeferred,
    ];

    /// The metric's name (the encoder appends `_total`) and help.
    fn metric(self) -> (&'static str, &'static str) {
        match self {
            Count::PluginCalls => (
                "omni_operator_controller_plugin_calls",
                "Plugin calls (reconcile and finalize) the controllers started",
            ),
            Count::PluginCallFailures => (
                "omni_operator_controller_plugin_call_failures",
                "Controller calls that failed: plugin error, trap, deadline or API error",
            ),
            Count::Denials => (
                "omni_operator_controller_capability_denials",
                "Capability calls refused for lack of a grant, as reported on objects",
            ),
            Count::EventsDropped => (
                "omni_operator_controller_events_dropped",
                "Events a plugin asked for that the per-object rate limit dropped",
            ),
            Count::StatusWritesDeferred => (
                "omni_operator_controller_status_writes_deferred",
                "Status writes the per-object rate limit deferred to a later reconcile",
            ),
            Count::StatusConflicts => (
                "omni_operator_controller_status_conflicts",
                "Status writes that met a newer version of the object",
            ),
            Count::FreshReads => (
                "omni_operator_controller_fresh_reads",
                "Reconciles that read the object from the API server because the cache lagged their last write",
            ),
            Count::RequeuesRaised => (
                "omni_operator_controller_requeues_raised",
                "Requeues a plugin asked for sooner than the one-second floor, raised to it",
            ),
            Count::QuotaDeferred => (
                "omni_operator_controller_quota_deferred",
                "Reconciles put off because the serving binding's quota was used up",
            ),
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// controller-runtime's reconcile-time buckets (seconds).
const RECONCILE_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

fn reconcile_histogram() -> Histogram {
    Histogram::new(RECONCILE_BUCKETS.iter().copied())
}

/// client-go's work-queue buckets: 10 ns to 10 s by powers of ten.
fn queue_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-8, 10.0, 10))
}

/// How a reconcile ended, as controller-runtime's `result` label says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    Error,
    Requeue,
    RequeueAfter,
}

impl Outcome {
    fn label(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Error => "error",
            Outcome::Requeue => "requeue",
            Outcome::RequeueAfter => "requeue_after",
        }
    }
}

/// Every controller's metrics, in one registry the `/metrics` endpoint encodes.
#[derive(Debug)]
pub struct Metrics {
    registry: Mutex<Registry>,
    reconciles: Family<ResultLabels, Counter>,
    errors: Family<ControllerLabel, Counter>,
    reconcile_time: Family<ControllerLabel, Histogram, fn() -> Histogram>,
    active_workers: Family<ControllerLabel, Gauge>,
    max_concurrent: Family<ControllerLabel, Gauge>,
    queue_adds: Family<QueueLabels, Counter>,
    queue_retries: Family<QueueLabels, Counter>,
    queue_duration: Family<QueueLabels, Histogram, fn() -> Histogram>,
    work_duration: Family<QueueLabels, Histogram, fn() -> Histogram>,
    clocks: Mutex<HashMap<String, Arc<QueueClock>>>,
    /// The [`Count`] counters, in `Count::ALL`'s order.
    counts: Vec<Family<ControllerLabel, Counter>>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let reconciles = Family::<ResultLabels, Counter>::default();
        let errors = Family::<ControllerLabel, Counter>::default();
        let reconcile_time =
            Family::<ControllerLabel, Histogram, fn() -> Histogram>::new_with_constructor(
                reconcile_histogram,
            );
        let active_workers = Family::<ControllerLabel, Gauge>::default();
        let max_concurrent = Family::<ControllerLabel, Gauge>::default();
        let queue_adds = Family::<QueueLabels, Counter>::default();
        let queue_retries = Family::<QueueLabels, Counter>::default();
        let queue_duration =
            Family::<QueueLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                queue_histogram,
            );
        let work_duration =
            Family::<QueueLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                queue_histogram,
            );
        // Counters are registered without `_total`: the encoder appends it.
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            reconciles.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            errors.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            reconcile_time.clone(),
        );
        registry.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            active_workers.clone(),
        );
        registry.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            max_concurrent.clone(),
        );
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            queue_adds.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            queue_retries.clone(),
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            queue_duration.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            work_duration.clone(),
        );
        let counts = Count::ALL
            .iter()
            .map(|count| {
                let (name, help) = count.metric();
                let family = Family::<ControllerLabel, Counter>::default();
                registry.register(name, help, family.clone());
                family
            })
            .collect();
        Metrics {
            counts,
            registry: Mutex::new(registry),
            reconciles,
            errors,
            reconcile_time,
            active_workers,
            max_concurrent,
            queue_adds,
            queue_retries,
            queue_duration,
            work_duration,
            clocks: Mutex::new(HashMap::new()),
        }
    }
}

impl Metrics {
    /// The metrics of the controller of `kind` (created on first use).
    pub fn controller(self: &Arc<Self>, kind: &str, concurrency: u16) -> ControllerMetrics {
        let name = kind.to_lowercase();
        self.max_concurrent
            .get_or_create(&ControllerLabel {
                controller: name.clone(),
            })
            .set(i64::from(concurrency));
        let clock = self
            .clocks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(name.clone())
            .or_default()
            .clone();
        ControllerMetrics {
            metrics: self.clone(),
            name,
            clock,
        }
    }

    /// The sum of `what` over every controller so far.
    pub fn total(&self, what: Count) -> u64 {
        let names: Vec<String> = self
            .clocks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        let family = &self.counts[what.index()];
        // `get`, not `get_or_create`: reading makes no series of its own.
        names
            .into_iter()
            .filter_map(|controller| family.get(&ControllerLabel { controller }).map(|c| c.get()))
            .sum()
    }

    /// Registers more metrics (the per-plugin figures, admission) beside the controllers'.
    pub fn with_registry<T>(&self, f: impl FnOnce(&mut Registry) -> T) -> T {
        f(&mut self.registry.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The Prometheus text exposition of everything registered, with each queue's depth as of now.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let now = Instant::now();
        let depths: Vec<(String, usize)> = self
            .clocks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(name, clock)| (name.clone(), clock.depth(now)))
            .collect();
        let mut out = String::new();
        prometheus_client::encoding::text::encode_registry(
            &mut out,
            &self.registry.lock().unwrap_or_else(PoisonError::into_inner),
        )?;
        // The depth is a figure of the moment, computed at the scrape (the clock holds the waiting objects).
        out.push_str(
            "# HELP workqueue_depth Current depth of workqueue.\n# TYPE workqueue_depth gauge\n",
        );
        for (name, depth) in depths {
            out.push_str(&format!(
                "workqueue_depth{{name=\"{name}\",controller=\"{name}\"}} {depth}\n"
            ));
        }
        prometheus_client::encoding::text::encode_eof(&mut out)?;
        Ok(out)
    }
}

/// One controller's handle on the metrics.
#[derive(Debug, Clone)]
pub struct ControllerMetrics {
    metrics: Arc<Metrics>,
    name: String,
    clock: Arc<QueueClock>,
}

impl ControllerMetrics {
    fn label(&self) -> ControllerLabel {
        ControllerLabel {
            controller: self.name.clone(),
        }
    }

    fn queue(&self) -> QueueLabels {
        QueueLabels {
            name: self.name.clone(),
            controller: self.name.clone(),
        }
    }

    /// Counts `by` of `what` for this controller.
    pub fn count(&self, what: Count, by: u64) {
        self.metrics.counts[what.index()]
            .get_or_create(&self.label())
            .inc_by(by);
    }

    /// `key` was asked for (a watch event, a related change, a wake-up), to run as soon as a worker is free.
    pub fn added(&self, key: &str) {
        self.added_at(key, Instant::now());
    }

    /// `key` is to run after `delay` (a requeue), joining the queue then.
    pub fn requeued(&self, key: &str, delay: Duration, retry: bool) {
        if retry {
            self.metrics
                .queue_retries
                .get_or_create(&self.queue())
                .inc();
        }
        let now = Instant::now();
        self.added_at(key, now.checked_add(delay).unwrap_or(now));
    }

    fn added_at(&self, key: &str, due: Instant) {
        if self.clock.add(key, due) {
            self.metrics.queue_adds.get_or_create(&self.queue()).inc();
        }
    }

    /// A reconcile of `key` starts: its wait in the queue ends.
    pub fn started(&self, key: &str) -> Started {
        let now = Instant::now();
        if let Some(waited) = self.clock.take(key, now) {
            self.metrics
                .queue_duration
                .get_or_create(&self.queue())
                .observe(waited.as_secs_f64());
        }
        self.metrics
            .active_workers
            .get_or_create(&self.label())
            .inc();
        Started {
            metrics: self.clone(),
            at: now,
        }
    }
}

/// A reconcile in progress; [`Started::finished`] records how it ended.
#[derive(Debug)]
pub struct Started {
    metrics: ControllerMetrics,
    at: Instant,
}

impl Started {
    pub fn finished(self, outcome: Outcome) {
        let m = &self.metrics;
        let took = self.at.elapsed().as_secs_f64();
        m.metrics
            .reconcile_time
            .get_or_create(&m.label())
            .observe(took);
        m.metrics
            .work_duration
            .get_or_create(&m.queue())
            .observe(took);
        m.metrics
            .reconciles
            .get_or_create(&ResultLabels {
                controller: m.name.clone(),
                result: outcome.label().into(),
            })
            .inc();
        if outcome == Outcome::Error {
            m.metrics.errors.get_or_create(&m.label()).inc();
        }
        m.metrics.active_workers.get_or_create(&m.label()).dec();
    }
}

/// Longer than any object waits for a worker in a working operator.
const STALE: Duration = Duration::from_secs(600);

/// When each waiting object joined the queue (or will, after its requeue delay).
#[derive(Debug, Default)]
pub struct QueueClock {
    waiting: Mutex<HashMap<String, Instant>>,
}

impl QueueClock {
    /// True when `key` was not already waiting (client-go counts an add only then). A sooner due time replaces
    /// a later one, as a watch event overtakes a pending requeue.
    fn add(&self, key: &str, due: Instant) -> bool {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        match waiting.get_mut(key) {
            Some(at) => {
                if due < *at {
                    *at = due;
                }
                false
            }
            None => {
                waiting.insert(key.to_owned(), due);
                true
            }
        }
    }

    /// How long `key` waited in the queue, once due; None when it was not waiting (or started early).
    fn take(&self, key: &str, now: Instant) -> Option<Duration> {
        let due = self
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key)?;
        now.checked_duration_since(due)
    }

    /// Objects due and not yet picked up. An entry due for longer than [`STALE`] is an object kube-runtime will
    /// never reconcile (it was deleted while waiting: the controller skips objects gone from its store) and is
    /// dropped, so the depth returns to zero and the clock does not grow with churn.
    fn depth(&self, now: Instant) -> usize {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        waiting.retain(|_, due| {
            now.checked_duration_since(*due)
                .is_none_or(|late| late < STALE)
        });
        waiting.values().filter(|due| **due <= now).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_count_is_its_own_series_and_totals_add_up_over_controllers() {
        for (i, count) in Count::ALL.iter().enumerate() {
            assert_eq!(count.index(), i, "{count:?}");
        }
        let metrics = Arc::new(Metrics::default());
        let (a, b) = (
            metrics.controller("OmniCluster", 4),
            metrics.controller("OmniMachine", 4),
        );
        a.count(Count::PluginCalls, 2);
        b.count(Count::PluginCalls, 3);
        b.count(Count::Denials, 1);
        assert_eq!(metrics.total(Count::PluginCalls), 5);
        assert_eq!(metrics.total(Count::Denials), 1);
        assert_eq!(metrics.total(Count::EventsDropped), 0);
        let text = metrics.encode().expect("encodes");
        assert!(
            text.contains(
                "omni_operator_controller_plugin_calls_total{controller=\"omnimachine\"} 3"
            ),
            "{text}"
        );
        assert!(
            !text.contains("omni_operator_controller_events_dropped_total{"),
            "reading made a series: {text}"
        );
    }

    fn value(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
    }

    #[test]
    fn reconciles_are_counted_under_controller_runtimes_names() {
        let metrics = Arc::new(Metrics::default());
        let c = metrics.controller("OmniCluster", 4);
        c.added("ns/a");
        c.added("ns/a");
        c.added("ns/b");
        let text = metrics.encode().expect("encodes");
        assert_eq!(
            value(
                &text,
                "workqueue_depth{name=\"omnicluster\",controller=\"omnicluster\"}"
            ),
            Some(2.0),
            "{text}"
        );
        c.started("ns/a").finished(Outcome::Success);
        c.started("ns/b").finished(Outcome::Error);
        c.requeued("ns/b", Duration::from_secs(60), true);
        let text = metrics.encode().expect("encodes");
        for (series, want) in [
            (
                "controller_runtime_reconcile_total{controller=\"omnicluster\",result=\"success\"}",
                1.0,
            ),
            (
                "controller_runtime_reconcile_total{controller=\"omnicluster\",result=\"error\"}",
                1.0,
            ),
            (
                "controller_runtime_reconcile_errors_total{controller=\"omnicluster\"}",
                1.0,
            ),
            (
                "controller_runtime_reconcile_time_seconds_count{controller=\"omnicluster\"}",
                2.0,
            ),
            (
                "controller_runtime_active_workers{controller=\"omnicluster\"}",
                0.0,
            ),
            (
                "controller_runtime_max_concurrent_reconciles{controller=\"omnicluster\"}",
                4.0,
            ),
            // a twice while waiting is one add; b's requeue is a third.
            (
                "workqueue_adds_total{name=\"omnicluster\",controller=\"omnicluster\"}",
                3.0,
            ),
            (
                "workqueue_retries_total{name=\"omnicluster\",controller=\"omnicluster\"}",
                1.0,
            ),
            // The requeue is not due for a minute: not in the queue yet.
            (
                "workqueue_depth{name=\"omnicluster\",controller=\"omnicluster\"}",
                0.0,
            ),
            (
                "workqueue_queue_duration_seconds_count{name=\"omnicluster\",controller=\"omnicluster\"}",
                2.0,
            ),
        ] {
            assert_eq!(value(&text, series), Some(want), "{series} in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
