//! What one loaded version has done, and the call rate it may use: the figures a rollback decides on and the
//! per-plugin metrics report, and the token bucket of a tenant's call-rate quota.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::error::ErrorKind;

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
}

/// A copy of [`Usage`] at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageFigures {
    /// Reconcile and finalize calls that ran.
    pub calls: u64,
    /// Calls that returned an error or were stopped (traps, timeouts, limits).
    pub failures: u64,
    /// Calls the runtime stopped.
    pub traps: u64,
    /// Traps other than out-of-memory: what a rollback decides on.
    pub rollback_failures: u64,
    /// Calls not started because a quota was used up.
    pub quota_hits: u64,
}

impl Usage {
    /// One call: whether it failed, and the class of its trap if the runtime stopped it.
    pub(super) fn record(&self, failed: bool, trap: Option<ErrorKind>) {
        self.calls.fetch_add(1, Ordering::Relaxed);
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
        }
    }
}

/// A token bucket: `per_second` calls sustained, bursts up to twice that.
#[derive(Debug)]
pub struct RateLimit {
    per_second: f64,
    burst: f64,
    state: Mutex<(f64, Instant)>,
}

impl RateLimit {
    pub fn per_second(calls: u32) -> Self {
        let per_second = f64::from(calls.max(1));
        RateLimit {
            per_second,
            burst: per_second * 2.0,
            state: Mutex::new((per_second * 2.0, Instant::now())),
        }
    }

    /// Takes a token now, or says how long until one is there.
    pub fn take(&self, now: Instant) -> Result<(), Duration> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (tokens, at) = *state;
        let refilled = (tokens + now.saturating_duration_since(at).as_secs_f64() * self.per_second)
            .min(self.burst);
        if refilled >= 1.0 {
            *state = (refilled - 1.0, now);
            Ok(())
        } else {
            *state = (refilled, now);
            Err(Duration::from_secs_f64((1.0 - refilled) / self.per_second))
        }
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
        usage.record(false, None);
        usage.record(true, None);
        usage.record(true, Some(ErrorKind::Panic));
        usage.record(true, Some(ErrorKind::OutOfMemory));
        usage.quota_hit();
        assert_eq!(
            usage.figures(),
            UsageFigures {
                calls: 4,
                failures: 3,
                traps: 2,
                rollback_failures: 1,
                quota_hits: 1
            }
        );
    }
}
