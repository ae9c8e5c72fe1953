//! What one loaded version has done, and the call rate it may use: the figures a rollback decides on and the
//! per-plugin metrics report, and the token bucket of a tenant's call-rate quota.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::error::ErrorKind;
use crate::contract::throttle::Throttle;

/// Counters of one loaded version, since it was loaded.
#[derive(Debug, Default)]
pub struct Usage {
    calls: AtomicU64,
    failures: AtomicU64,
    traps: AtomicU64,
    /// Traps a rollback counts: every class but running out of memory, which a tenant's own memory quota can
    /// cause.
    rollback_failures: AtomicU64,
    quota_hits: AtomicU64,
    /// Capability calls refused for lack of a grant.
    denials: AtomicU64,
    /// Time spent in calls, in microseconds.
    busy_micros: AtomicU64,
    /// Traps by class, in [`TRAP_CLASSES`] order.
    traps_by_class: [AtomicU64; TRAP_CLASSES.len()],
}

/// The classes traps are counted in (`ErrorKind::reason`, a stable label for metrics).
pub const TRAP_CLASSES: [ErrorKind; 8] = [
    ErrorKind::Timeout,
    ErrorKind::OutOfMemory,
    ErrorKind::Panic,
    ErrorKind::DeniedCapability,
    ErrorKind::OutputTooLarge,
    ErrorKind::InvalidOutput,
    ErrorKind::TooManyHostCalls,
    ErrorKind::Other,
];

/// A copy of [`Usage`] at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsageFigures {
    /// Calls that ran: reconcile, finalize and validate.
    pub calls: u64,
    /// Calls that returned an error or were stopped (traps, timeouts, limits).
    pub failures: u64,
    /// Calls the runtime stopped.
    pub traps: u64,
    /// Traps other than out-of-memory: what a rollback decides on.
    pub rollback_failures: u64,
    /// Calls not started because a quota was used up.
    pub quota_hits: u64,
    /// Capability calls refused for lack of a grant.
    pub denials: u64,
    /// Time spent in calls.
    pub busy: Duration,
    /// Traps by class (`PluginTimeout`, `PluginPanic`, …), the classes with none left out.
    pub traps_by_class: Vec<(&'static str, u64)>,
}

impl Usage {
    /// One call: whether it failed, the class of its trap if the runtime stopped it, how many capability calls
    /// it was denied, and how long it took.
    pub(super) fn record(
        &self,
        failed: bool,
        trap: Option<ErrorKind>,
        denials: usize,
        took: Duration,
    ) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.denials.fetch_add(denials as u64, Ordering::Relaxed);
        self.busy_micros.fetch_add(
            u64::try_from(took.as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        if let Some(i) = trap.and_then(|k| TRAP_CLASSES.iter().position(|c| *c == k)) {
            self.traps_by_class[i].fetch_add(1, Ordering::Relaxed);
        }
        if failed {
            self.failures.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(kind) = trap {
            self.traps.fetch_add(1, Ordering::Relaxed);
            if kind != ErrorKind::OutOfMemory {
                self.rollback_failures.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    pub fn quota_hit(&self) {
        self.quota_hits.fetch_add(1, Ordering::Relaxed);
    }

    pub fn figures(&self) -> UsageFigures {
        UsageFigures {
            calls: self.calls.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
            traps: self.traps.load(Ordering::Relaxed),
            rollback_failures: self.rollback_failures.load(Ordering::Relaxed),
            quota_hits: self.quota_hits.load(Ordering::Relaxed),
            denials: self.denials.load(Ordering::Relaxed),
            busy: Duration::from_micros(self.busy_micros.load(Ordering::Relaxed)),
            traps_by_class: TRAP_CLASSES
                .iter()
                .zip(&self.traps_by_class)
                .map(|(k, n)| (k.reason(), n.load(Ordering::Relaxed)))
                .filter(|(_, n)| *n > 0)
                .collect(),
        }
    }
}

/// A call-rate quota: `per_second` calls sustained, bursts up to twice that (one [`Throttle`] bucket).
#[derive(Debug)]
pub struct RateLimit(Throttle);

impl RateLimit {
    pub fn per_second(calls: u32) -> Self {
        let calls = calls.max(1);
        RateLimit(Throttle::new(
            calls.saturating_mul(2),
            Duration::from_secs(1) / calls,
        ))
    }

    /// Takes a token now, or says how long until one is there.
    pub fn take(&self, now: Instant) -> Result<(), Duration> {
        self.0.take("", now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_allows_its_burst_then_its_rate() {
        let limit = RateLimit::per_second(10);
        let start = Instant::now();
        let burst = (0..100).take_while(|_| limit.take(start).is_ok()).count();
        assert_eq!(burst, 20);
        let wait = limit.take(start).unwrap_err();
        assert!(
            wait <= Duration::from_millis(100) && wait > Duration::ZERO,
            "{wait:?}"
        );
        // A second later, ten more.
        let later = start + Duration::from_secs(1);
        assert_eq!(
            (0..100).take_while(|_| limit.take(later).is_ok()).count(),
            10
        );
    }

    #[test]
    fn usage_counts_calls_failures_and_traps() {
        let usage = Usage::default();
        let ms = Duration::from_millis;
        usage.record(false, None, 0, ms(2));
        usage.record(true, None, 3, ms(2));
        usage.record(true, Some(ErrorKind::Panic), 0, ms(2));
        usage.record(true, Some(ErrorKind::OutOfMemory), 0, ms(4));
        usage.quota_hit();
        assert_eq!(
            usage.figures(),
            UsageFigures {
                calls: 4,
                failures: 3,
                traps: 2,
                rollback_failures: 1,
                quota_hits: 1,
                denials: 3,
                busy: ms(10),
                traps_by_class: vec![("PluginOutOfMemory", 1), ("PluginPanic", 1)],
            }
        );
    }
}
