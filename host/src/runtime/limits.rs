//! Per-call limits and the memory limiter that enforces the cap.

use std::time::Duration;

use wasmtime::{ResourceLimiter, StoreLimits, StoreLimitsBuilder};

use crate::capabilities::OutputBounds;

/// What one plugin call may use. Defaults follow DESIGN.md §5.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLimits {
    /// Wall-clock time for instantiation plus the call, including time spent in host capabilities.
    pub timeout: Duration,
    /// Bytes of linear memory, per memory (a Rust plugin has one).
    pub memory_bytes: usize,
    /// Calls of this plugin running at once; more wait.
    pub max_concurrent: usize,
    /// Bytes of stdout and of stderr kept per call; the rest is dropped.
    pub stdio_bytes: usize,
    pub outputs: OutputBounds,
}

impl Default for CallLimits {
    fn default() -> Self {
        CallLimits {
            timeout: Duration::from_secs(5),
            memory_bytes: 128 << 20,
            max_concurrent: 32,
            stdio_bytes: 64 * 1024,
            outputs: OutputBounds::default(),
        }
    }
}

/// A memory growth past the cap. A typed error (rather than `StoreLimits`' message) so the call is classified
/// as out-of-memory without matching on text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("memory growth to {desired} bytes refused: the cap is {cap} bytes")]
pub(crate) struct MemoryCapExceeded {
    pub(crate) desired: usize,
    pub(crate) cap: usize,
}

/// `StoreLimits` with `trap_on_grow_failure`, whose refusals carry [`MemoryCapExceeded`]. Trapping (rather than
/// letting `memory.grow` return -1) stops a guest at the allocation that crossed the cap, with a clear cause.
pub(crate) struct MemoryLimiter {
    limits: StoreLimits,
    cap: usize,
}

impl MemoryLimiter {
    pub(crate) fn new(cap: usize) -> Self {
        let limits = StoreLimitsBuilder::new()
            .memory_size(cap)
            .trap_on_grow_failure(true)
            .build();
        MemoryLimiter { limits, cap }
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        match self.limits.memory_growing(current, desired, maximum) {
            Ok(allowed) => Ok(allowed),
            Err(_) => Err(wasmtime::Error::new(MemoryCapExceeded {
                desired,
                cap: self.cap,
            })),
        }
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.memory_grow_failed(error)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}

#[cfg(test)]
mod tests {
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
}
