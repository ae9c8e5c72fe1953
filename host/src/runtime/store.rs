//! The data of one call's `Store`: everything a plugin can reach, built fresh for every call and dropped with
//! it, so nothing leaks from one call (or one tenant) to the next and a trapped instance is never reused.

use std::sync::Arc;

use wasmtime::component::ResourceTable;
use wasmtime::{Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use super::limits::{CallLimits, MemoryLimiter};
use super::stdio::CapturePipe;
use crate::capabilities::{Grants, HostServices, LogLine, LogSource};

/// The data of one call's store. Public only because the runtime's linker is typed by it.
pub struct HostState {
    pub(crate) plugin: Arc<str>,
    pub(crate) grants: Arc<Grants>,
    pub(crate) services: HostServices,
    pub(crate) table: ResourceTable,
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
        let wasi = WasiCtxBuilder::new()
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .build();
        HostState {
            plugin,
            grants,
            services,
            table: ResourceTable::new(),
            wasi,
            limiter: MemoryLimiter::new(limits.memory_bytes),
            stdout,
            stderr,
        }
    }

    /// Captured stdout and stderr as log lines, emitted to tracing with the plugin's name.
    pub(crate) fn drain_stdio(&self) -> Vec<LogLine> {
        let mut lines = Vec::new();
        for (pipe, source) in [
            (&self.stdout, LogSource::Stdout),
            (&self.stderr, LogSource::Stderr),
        ] {
            let (captured, dropped) = pipe.lines(source);
            for line in &captured {
                line.emit(&self.plugin);
            }
            if dropped > 0 {
                tracing::warn!(target: "omni_operator::plugin", plugin = %self.plugin, ?source, dropped, "plugin output beyond the capture limit was dropped");
            }
            lines.extend(captured);
        }
        lines
    }

    pub(crate) fn stderr_tail(&self, max: usize) -> String {
        self.stderr.tail(max)
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}
