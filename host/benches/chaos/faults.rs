//! The faults of a chaos run, all seeded: failures by rate in the simulators (their own fault features), and
//! events at seeded moments — watch streams closed, history compacted, slow spells, Omni outages, the chart
//! repository answering 500 or stalling its downloads — plus the operator's processes killed, failed over and their
//! Helm workers killed (driven from `main`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kube_sim::Matcher as KubeMatcher;
use omni_operator::helm::repository::Faults as RepositoryFaults;
use omni_sim::{FaultAction, Matcher as OmniMatcher, OmniSim};
use rand::Rng;
use rand::rngs::StdRng;
use tonic::Code;

/// The failures by rate in the management cluster: (verb, status, share, Retry-After).
const KUBE_RATES: [(Option<&str>, u16, f64, Option<u32>); 7] = [
    (None, 503, 0.02, None),
    (None, 500, 0.01, None),
    (None, 429, 0.01, Some(1)),
    (Some("update"), 409, 0.03, None),
    (Some("patch"), 409, 0.01, None),
    (Some("watch"), 410, 0.03, None),
    (Some("list"), 410, 0.01, None),
];

/// How often the events happen, on average.
const WATCH_DROP_EVERY: Duration = Duration::from_secs(40);
const COMPACT_EVERY: Duration = Duration::from_secs(60);
const SLOW_EVERY: Duration = Duration::from_secs(75);
const SLOW_FOR: Duration = Duration::from_secs(10);
const OUTAGE_EVERY: Duration = Duration::from_secs(90);
const OUTAGE_FOR: Duration = Duration::from_secs(5);
const RESTART_EVERY: Duration = Duration::from_secs(150);
/// The chart repository's spells: every request answered 500, or chart downloads stalled halfway (then let go:
/// the actions waiting on them carry on, well inside their deadlines; the runtime test
/// `a_stalled_chart_download_times_out_and_the_release_converges_once_it_flows` takes one past its deadline).
const CHART_FAULT_EVERY: Duration = Duration::from_secs(60);
const CHART_FAILING_FOR: Duration = Duration::from_secs(10);
const CHART_STALLED_FOR: Duration = Duration::from_secs(20);
/// How long omni-sim stays down when it restarts.
pub const RESTART_DOWN_FOR: Duration = Duration::from_secs(2);

/// What was injected, by kind, for the report.
#[derive(Default)]
pub struct Injected {
    pub events: BTreeMap<&'static str, u64>,
}

pub struct Plan {
    rng: StdRng,
    next_drop: Instant,
    next_compact: Instant,
    next_slow: Instant,
    slow_until: Option<Instant>,
    next_outage: Instant,
    outage_until: Option<Instant>,
    next_restart: Instant,
    next_chart_fault: Instant,
    chart_fault_until: Option<Instant>,
    pub injected: Injected,
}

/// A moment about `every` from now: uniformly between half and one and a half of it.
fn after(rng: &mut StdRng, every: Duration) -> Instant {
    Instant::now() + every.mul_f64(rng.gen_range(0.5..1.5))
}

impl Plan {
    /// Turns the failures by rate on, seeded from `rng`'s draws so the run replays.
    pub fn start(
        mut rng: StdRng,
        kube: &kube_sim::KubeSim,
        workloads: &[kube_sim::KubeSim],
        omni: &OmniSim,
    ) -> Plan {
        kube.faults().seed(rng.r#gen());
        for (verb, status, rate, retry_after) in KUBE_RATES {
            let matcher = KubeMatcher {
                verb: verb.map(str::to_string),
                ..KubeMatcher::default()
            };
            kube.faults().fail_rate(matcher, rate, status, retry_after);
        }
        // A fifth of the watches end early, within 30 s of their start (an idle timeout, a restarted API server),
        // and one request in 500 loses its connection without an answer.
        kube.faults()
            .cut_watches_rate(KubeMatcher::default(), 0.2, Duration::from_secs(30));
        kube.faults()
            .drop_connections_rate(KubeMatcher::default(), 0.002);
        for w in workloads {
            w.faults().seed(rng.r#gen());
            w.faults()
                .fail_rate(KubeMatcher::default(), 0.02, 503, None);
        }
        omni.faults().seed(rng.r#gen());
        let error = |code: Code| FaultAction::Error {
            code,
            message: format!("{code:?} (chaos)"),
        };
        omni.faults()
            .inject_rate(OmniMatcher::any(), error(Code::Unavailable), 0.03);
        omni.faults()
            .inject_rate(OmniMatcher::any(), error(Code::DeadlineExceeded), 0.01);
        omni.faults().inject_rate(
            OmniMatcher::any(),
            FaultAction::Latency(Duration::from_millis(300)),
            0.02,
        );
        omni.faults()
            .inject_rate(OmniMatcher::any(), FaultAction::CloseConnection, 0.003);
        Plan {
            next_drop: after(&mut rng, WATCH_DROP_EVERY),
            next_compact: after(&mut rng, COMPACT_EVERY),
            next_slow: after(&mut rng, SLOW_EVERY),
            slow_until: None,
            next_outage: after(&mut rng, OUTAGE_EVERY),
            outage_until: None,
            next_restart: after(&mut rng, RESTART_EVERY),
            next_chart_fault: after(&mut rng, CHART_FAULT_EVERY),
            chart_fault_until: None,
            rng,
            injected: Injected::default(),
        }
    }

    /// Fires the events that are due.
    pub fn tick(&mut self, kube: &kube_sim::KubeSim, omni: &OmniSim, charts: &RepositoryFaults) {
        let now = Instant::now();
        if now >= self.next_drop {
            kube.faults().drop_watches();
            self.count("kube-sim: every watch stream closed");
            self.next_drop = after(&mut self.rng, WATCH_DROP_EVERY);
        }
        if now >= self.next_compact {
            kube.compact();
            self.count("kube-sim: history compacted (resumes get 410)");
            self.next_compact = after(&mut self.rng, COMPACT_EVERY);
        }
        match self.slow_until {
            Some(until) if now >= until => {
                kube.faults().clear_latency();
                self.slow_until = None;
            }
            None if now >= self.next_slow => {
                kube.faults()
                    .add_latency(KubeMatcher::default(), Duration::from_millis(250));
                self.count("kube-sim: slow spell (250 ms a request, 10 s)");
                self.slow_until = Some(now + SLOW_FOR);
                self.next_slow = after(&mut self.rng, SLOW_EVERY);
            }
            _ => {}
        }
        match self.outage_until {
            Some(until) if now >= until => {
                omni.faults().set_unavailable(false);
                self.outage_until = None;
            }
            None if now >= self.next_outage => {
                omni.faults().set_unavailable(true);
                self.count("omni-sim: outage (every call Unavailable, 5 s)");
                self.outage_until = Some(now + OUTAGE_FOR);
                self.next_outage = after(&mut self.rng, OUTAGE_EVERY);
            }
            _ => {}
        }
        match self.chart_fault_until {
            Some(until) if now >= until => {
                charts.fail_with(None);
                charts.stall_downloads(false);
                self.chart_fault_until = None;
            }
            None if now >= self.next_chart_fault => {
                let spell = if self.rng.gen_bool(0.5) {
                    charts.fail_with(Some(500));
                    self.count("chart repository: every request answered 500 (10 s)");
                    CHART_FAILING_FOR
                } else {
                    charts.stall_downloads(true);
                    self.count("chart repository: downloads stalled halfway (20 s)");
                    CHART_STALLED_FOR
                };
                self.chart_fault_until = Some(now + spell);
                self.next_chart_fault = after(&mut self.rng, CHART_FAULT_EVERY);
            }
            _ => {}
        }
    }

    /// Whether omni-sim should restart now (keeping its state); the caller restarts it, since that takes a while.
    pub fn restart_due(&mut self) -> bool {
        if Instant::now() < self.next_restart {
            return false;
        }
        self.next_restart = after(&mut self.rng, RESTART_EVERY);
        self.count("omni-sim: restarted, state kept (every connection dropped, 2 s down)");
        true
    }

    pub fn count(&mut self, what: &'static str) {
        *self.injected.events.entry(what).or_default() += 1;
    }

    /// Every fault off: the rates, latency, an outage in progress.
    pub fn stop(
        &mut self,
        kube: &kube_sim::KubeSim,
        workloads: &[kube_sim::KubeSim],
        omni: &OmniSim,
        charts: &RepositoryFaults,
    ) {
        charts.fail_with(None);
        charts.stall_downloads(false);
        self.chart_fault_until = None;
        kube.faults().clear();
        for w in workloads {
            w.faults().clear();
        }
        omni.faults().clear();
        omni.faults().set_unavailable(false);
        self.slow_until = None;
        self.outage_until = None;
    }
}
