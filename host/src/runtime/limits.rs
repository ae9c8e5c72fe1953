//! Per-call limits and the memory limiter that enforces the cap.

use std::time::Duration;

use wasmtime::ResourceLimiter;

use crate::contract::OutputBounds;
use crate::contract::throttle::Throttle;

/// What one plugin call may use; by default 5 s and 128 MiB per call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLimits {
    /// Wall-clock time for instantiation plus the call, including time spent in host capabilities.
    pub timeout: Duration,
    /// Bytes of linear memory and table space, counted across every memory and table of the call's instance.
    pub memory_bytes: usize,
    /// Calls of this plugin running at once; more wait.
    pub max_concurrent: usize,
    /// Bytes of stdout and of stderr kept per call; the rest is dropped.
    pub stdio_bytes: usize,
    /// Entries into the host (contract functions and WASI alike) one call may make.
    pub max_host_calls: u64,
    /// Entries into the host the plugin may make per second across all its calls, sustained; bursts of four
    /// seconds' worth ([`HostCallRate`]).
    pub host_calls_per_second: u64,
    pub outputs: OutputBounds,
}

impl Default for CallLimits {
    fn default() -> Self {
        CallLimits {
            timeout: Duration::from_secs(5),
            memory_bytes: 128 << 20,
            max_concurrent: 32,
            stdio_bytes: 64 * 1024,
            max_host_calls: 10_000,
            host_calls_per_second: 50_000,
            outputs: OutputBounds::default(),
        }
    }
}

/// Linear memories one call's instance may have (a Rust component has one). Each memory is a separate
/// reservation, so a component with many would multiply what it costs the host.
pub(crate) const MAX_MEMORIES: usize = 2;
/// Tables and core instances one call's instance may have; generous for wit-component's shims.
pub(crate) const MAX_TABLES: usize = 32;
pub(crate) const MAX_INSTANCES: usize = 32;
/// What one table element is counted as against the memory cap (a function reference in the host).
const TABLE_ELEMENT_BYTES: usize = 16;

/// The longest a call waits for its plugin's host-call budget to recover before it is refused.
pub(crate) const MAX_HOST_CALL_WAIT: Duration = Duration::from_secs(1);

/// A plugin's host-call rate across all its calls: each call's host calls are charged when it ends, and a call
/// that starts while the plugin is in debt waits until the debt is paid (slowed), or is refused when that would
/// take longer than [`MAX_HOST_CALL_WAIT`]. One budget per loaded version, so a plugin looping on host calls in
/// every call slows only itself. Charging after the call keeps the per-host-call path free of locks. One
/// [`Throttle`] bucket of four seconds' worth.
#[derive(Debug)]
pub(crate) struct HostCallRate {
    per_second: u64,
    bucket: Throttle,
}

impl HostCallRate {
    pub(crate) fn new(per_second: u64) -> Self {
        let per_second = per_second.clamp(1, u64::from(u32::MAX / 4));
        let burst = u32::try_from(per_second * 4).unwrap_or(u32::MAX);
        HostCallRate {
            per_second,
            bucket: Throttle::new(burst, Duration::from_secs(1).div_f64(per_second as f64)),
        }
    }

    /// How long a call starting now must wait for the debt to be paid; zero when there is none.
    pub(crate) fn wait(&self, now: std::time::Instant) -> Duration {
        self.bucket.debt("", now)
    }

    /// Charges the host calls a call made. The debt is capped at one burst, so a plugin is never locked out
    /// for longer than the burst takes to earn back.
    pub(crate) fn charge(&self, calls: u64, now: std::time::Instant) {
        self.bucket.charge("", calls, now);
    }

    pub(crate) fn per_second(&self) -> u64 {
        self.per_second
    }
}

/// A call refused because its plugin used up its host-call rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "was refused a call: it has used up its host-call rate ({per_second} per second across its calls; the budget \
     recovers in {wait_ms} ms)"
)]
pub(crate) struct HostCallRateExceeded {
    pub(crate) per_second: u64,
    pub(crate) wait_ms: u128,
}

/// A memory or table growth past the cap. A typed error (rather than `StoreLimits`' message) so the call is
/// classified as out-of-memory without matching on text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("growth to {desired} bytes in total refused: the cap is {cap} bytes")]
pub(crate) struct MemoryCapExceeded {
    /// The call's total (every memory and table) had the growth been allowed.
    pub(crate) desired: usize,
    pub(crate) cap: usize,
}

/// A call that entered the host more often than its limits allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("made more than {cap} calls into the host")]
pub(crate) struct HostCallsExceeded {
    pub(crate) cap: u64,
}

/// Counts every memory and table of the call against one cap. Trapping (rather than letting `memory.grow`
/// return -1) stops a guest at the allocation that crossed the cap, with a clear cause.
pub(crate) struct MemoryLimiter {
    cap: usize,
    /// Bytes of every memory and table so far.
    used: usize,
}

impl MemoryLimiter {
    pub(crate) fn new(cap: usize) -> Self {
        MemoryLimiter { cap, used: 0 }
    }

    /// Admits a growth of one memory or table from `current` to `desired` bytes against the call's total.
    fn grow(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if maximum.is_some_and(|max| desired > max) {
            return Ok(false);
        }
        let total = self.used.saturating_sub(current).saturating_add(desired);
        if total > self.cap {
            return Err(wasmtime::Error::new(MemoryCapExceeded {
                desired: total,
                cap: self.cap,
            }));
        }
        self.used = total;
        Ok(true)
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.grow(current, desired, maximum)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.grow(
            current.saturating_mul(TABLE_ELEMENT_BYTES),
            desired.saturating_mul(TABLE_ELEMENT_BYTES),
            maximum.map(|m| m.saturating_mul(TABLE_ELEMENT_BYTES)),
        )
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn host_calls_past_the_rate_are_a_debt_the_next_calls_wait_for() {
        use super::HostCallRate;
        use std::time::{Duration, Instant};
        let rate = HostCallRate::new(1000);
        let t0 = Instant::now();
        assert_eq!(rate.wait(t0), Duration::ZERO);
        rate.charge(3000, t0);
        assert_eq!(rate.wait(t0), Duration::ZERO, "within the burst");
        rate.charge(3000, t0);
        assert_eq!(rate.wait(t0), Duration::from_secs(2));
        assert_eq!(
            rate.wait(t0 + Duration::from_millis(1500)),
            Duration::from_millis(500)
        );
        assert_eq!(rate.wait(t0 + Duration::from_secs(2)), Duration::ZERO);
        // The debt is capped at one burst.
        rate.charge(1_000_000, t0 + Duration::from_secs(2));
        assert_eq!(
            rate.wait(t0 + Duration::from_secs(2)),
            Duration::from_secs(4)
        );
    }

    use super::*;

    #[test]
    fn growth_past_the_cap_is_a_typed_refusal() {
        let mut limiter = MemoryLimiter::new(1 << 20);
        assert!(limiter.memory_growing(0, 1 << 20, None).unwrap());
        let err = limiter.memory_growing(1 << 20, 2 << 20, None).unwrap_err();
        assert_eq!(
            err.downcast_ref::<MemoryCapExceeded>(),
            Some(&MemoryCapExceeded {
                desired: 2 << 20,
                cap: 1 << 20
            })
        );
    }

    #[test]
    fn the_cap_counts_every_memory_and_table_of_the_call() {
        let mut limiter = MemoryLimiter::new(4 << 20);
        // Two memories of 2 MiB each fill the cap together; a third byte anywhere is refused.
        assert!(limiter.memory_growing(0, 2 << 20, None).unwrap());
        assert!(limiter.memory_growing(0, 2 << 20, None).unwrap());
        let err = limiter.memory_growing(0, 64 << 10, None).unwrap_err();
        assert_eq!(
            err.downcast_ref::<MemoryCapExceeded>().map(|e| e.desired),
            Some((4 << 20) + (64 << 10))
        );
        assert!(limiter.table_growing(0, 1, None).is_err());
        // Growth within a memory counts only the difference.
        let mut limiter = MemoryLimiter::new(4 << 20);
        assert!(limiter.memory_growing(0, 1 << 20, None).unwrap());
        assert!(limiter.memory_growing(1 << 20, 4 << 20, None).unwrap());
    }

    #[test]
    fn a_growth_past_the_declared_maximum_fails_without_trapping() {
        let mut limiter = MemoryLimiter::new(4 << 20);
        assert!(!limiter.memory_growing(0, 2 << 20, Some(1 << 20)).unwrap());
    }
}
