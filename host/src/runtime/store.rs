//! The data of one call's `Store`: everything a plugin can reach, built fresh for every call and dropped with
//! it, so nothing leaks from one call (or one tenant) to the next and a trapped instance is never reused.

use std::sync::Arc;
use std::time::{Duration, Instant, UNIX_EPOCH};

use wasmtime::{CallHook, Engine, Store};
use wasmtime_wasi::{
    HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView,
};

use super::limits::{CallLimits, HostCallsExceeded, MemoryLimiter};
use super::stdio::CapturePipe;
use crate::capabilities::{
    CallScope, Capability, Clock, Grants, HasCallScope, HostServices, LogLine, LogSource,
};

/// The most random bytes one WASI call may ask for (wasmtime's default is 64 MiB, which a plugin could make the
/// host allocate on every call).
const MAX_RANDOM_BYTES: u64 = 64 * 1024;

/// The data of one call's store: the capabilities' side of the call ([`CallScope`], which the contract's
/// imports are linked to) and the sandbox's (WASI, the memory limiter, captured stdio, the host-call count).
/// Public only because the runtime's linker is typed by it.
pub struct HostState {
    pub(crate) scope: CallScope,
    /// Calls into the host so far (contract and WASI alike), and the most this call may make.
    host_calls: u64,
    max_host_calls: u64,
    wasi: WasiCtx,
    limiter: MemoryLimiter,
    stdout: CapturePipe,
    stderr: CapturePipe,
}

impl HostState {
    /// A store for one call with a fresh, deny-all WASI context and the call's limits.
    pub(crate) fn store(
        engine: &Engine,
        plugin: Arc<str>,
        grants: Arc<Grants>,
        services: HostServices,
        limits: &CallLimits,
    ) -> Store<HostState> {
        let mut store = Store::new(engine, HostState::new(plugin, grants, services, limits));
        store.limiter(|state| &mut state.limiter);
        // Every entry into the host counts, WASI included: a plugin looping on cheap host calls (a cached list,
        // a clock read) would otherwise keep the host busy for its whole deadline.
        store.call_hook(|mut store, hook| {
            if matches!(hook, CallHook::CallingHost) {
                let state = store.data_mut();
                state.host_calls += 1;
                if state.host_calls > state.max_host_calls {
                    return Err(wasmtime::Error::new(HostCallsExceeded {
                        cap: state.max_host_calls,
                    }));
                }
            }
            Ok(())
        });
        // The deadline must be set before instantiation, which runs guest code. Each epoch tick the guest yields
        // to tokio and gets one more tick; the call's `tokio::time::timeout` decides when to stop. That one
        // timeout bounds guest code and host I/O alike (epochs cannot interrupt a host call).
        store.set_epoch_deadline(1);
        store.epoch_deadline_async_yield_and_update(1);
        store
    }

    /// The state alone, for a native plugin's call (`runtime/native.rs`), which reaches the same capability
    /// implementations without a wasm store. Its WASI context and memory limiter go unused there.
    pub(crate) fn new(
        plugin: Arc<str>,
        grants: Arc<Grants>,
        services: HostServices,
        limits: &CallLimits,
    ) -> HostState {
        let stdout = CapturePipe::new(limits.stdio_bytes);
        let stderr = CapturePipe::new(limits.stdio_bytes);
        // Deny-all: no preopened directories, no environment, no arguments, no stdin, and (wasmtime-wasi's
        // default) no socket address is allowed. std's file and env calls in a plugin fail cleanly.
        let mut wasi = WasiCtxBuilder::new();
        wasi.stdout(stdout.clone())
            .stderr(stderr.clone())
            .max_random_size(MAX_RANDOM_BYTES);
        // Time only through the host and only under the `clock` grant: WASI's clocks answer the host's
        // (injectable) clock, and without the grant they stand still at the Unix epoch, so `SystemTime::now()`
        // in a plugin can neither bypass a test's clock nor give an ungranted plugin the time.
        if grants.allows(Capability::Clock) {
            wasi.wall_clock(HostClock(services.clock().clone()))
                .monotonic_clock(SinceStart(Instant::now()));
        } else {
            wasi.wall_clock(StandingClock)
                .monotonic_clock(StandingClock);
        }
        let wasi = wasi.build();
        HostState {
            scope: CallScope::new(plugin, grants, services, Arc::from([])),
            host_calls: 0,
            max_host_calls: limits.max_host_calls,
            wasi,
            limiter: MemoryLimiter::new(limits.memory_bytes),
            stdout,
            stderr,
        }
    }

    /// Calls into the host this call made so far.
    pub(crate) fn host_calls(&self) -> u64 {
        self.host_calls
    }

    /// Captured stdout and stderr as log lines (the caller keeps and emits them within the call's log bounds).
    pub(crate) fn drain_stdio(&self) -> Vec<LogLine> {
        let mut lines = Vec::new();
        for (pipe, source) in [
            (&self.stdout, LogSource::Stdout),
            (&self.stderr, LogSource::Stderr),
        ] {
            let (captured, dropped) = pipe.lines(source);
            if dropped > 0 {
                tracing::warn!(target: "omni_operator::plugin", plugin = %self.scope.core.plugin, ?source, dropped, "plugin output beyond the capture limit was dropped");
            }
            lines.extend(captured);
        }
        lines
    }

    pub(crate) fn stderr_tail(&self, max: usize) -> String {
        self.stderr.tail(max)
    }
}

/// WASI's wall clock reading the host's clock.
struct HostClock(Arc<dyn Clock>);

impl HostWallClock for HostClock {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }

    fn now(&self) -> Duration {
        self.0.now().duration_since(UNIX_EPOCH).unwrap_or_default()
    }
}

/// WASI's monotonic clock, in nanoseconds since the call's store was made.
struct SinceStart(Instant);

impl HostMonotonicClock for SinceStart {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        u64::try_from(self.0.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// The clocks of a plugin without the `clock` grant: always zero.
struct StandingClock;

impl HostWallClock for StandingClock {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }

    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

impl HostMonotonicClock for StandingClock {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        0
    }
}

impl HasCallScope for HostState {
    fn call_scope(&mut self) -> &mut CallScope {
        &mut self.scope
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.scope.core.table,
        }
    }
}
