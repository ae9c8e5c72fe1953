//! The process-wide wasmtime `Engine`: code generation, the instance allocator, and the epoch ticker that makes
//! per-call deadlines work.

use std::time::Duration;

use anyhow::Context;
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::RuntimeConfig;
use super::limits::{MAX_MEMORIES, MAX_TABLES};

/// How often the ticker advances the engine's epoch: the granularity of deadlines and of yields to tokio.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Which instance allocator the engine ended up with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allocator {
    /// Pre-reserved slots for memories, tables and stacks: instantiation is ~2x faster, at
    /// the price of reserving virtual address space up front.
    Pooling,
    /// mmap per instance; needs no reservation.
    OnDemand,
}

pub(crate) fn build(config: &RuntimeConfig) -> anyhow::Result<(Engine, Allocator)> {
    let mut wasm = Config::new();
    // Compiled code checks the epoch at function entries and loop headers; the ticker advances it. Much cheaper
    // than fuel (2-3x slowdown) and enough for wall-clock deadlines.
    wasm.epoch_interruption(true);
    wasm.wasm_component_model(true);

    if config.allocator == Allocator::Pooling {
        wasm.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling(config)));
        match Engine::new(&wasm) {
            Ok(engine) => return Ok((engine, Allocator::Pooling)),
            // The pool reserves address space at start-up; where that is refused (a low `ulimit -v`, some
            // sandboxes), serve from the on-demand allocator rather than not at all.
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "pooling allocator unavailable; using on-demand")
            }
        }
    }
    wasm.allocation_strategy(InstanceAllocationStrategy::OnDemand);
    let engine = Engine::new(&wasm)
        .map_err(anyhow::Error::from)
        .context("configuring the wasm engine")?;
    Ok((engine, Allocator::OnDemand))
}

/// Pool sizes follow the call semaphore: every instantiation holds a permit, so the pool can never run out
/// (the pooling allocator fails rather than waits when it does).
fn pooling(config: &RuntimeConfig) -> PoolingAllocationConfig {
    let calls = u32::try_from(config.max_concurrent_calls).unwrap_or(u32::MAX);
    // A Rust wasm32-wasip2 component instantiates a handful of core modules (the program, wit-component shims
    // and fix-ups); 16 per component leaves room for bigger guests.
    let core_per_component = 16;
    let memories = u32::try_from(MAX_MEMORIES).unwrap_or(u32::MAX);
    let tables = u32::try_from(MAX_TABLES).unwrap_or(u32::MAX);
    let mut pool = PoolingAllocationConfig::new();
    // Per-component maxima keep one component from taking the slots of others: a component with more
    // memories than a call may have fails to instantiate on its own account, and the pool never runs dry.
    pool.total_component_instances(calls)
        .total_core_instances(calls.saturating_mul(core_per_component))
        .max_core_instances_per_component(core_per_component)
        .total_memories(calls.saturating_mul(memories))
        .max_memories_per_component(memories)
        .total_tables(calls.saturating_mul(tables))
        .max_tables_per_component(tables)
        .total_stacks(calls)
        .max_memory_size(config.memory_ceiling)
        .table_keep_resident(16 * 1024);
    // An instance gets the slot an earlier instance of the same component used, reset in between. With the
    // kernel's PAGEMAP_SCAN (Linux 6.7+) wasmtime finds the pages the guest dirtied and copies their first
    // contents back, up to the kept size per memory, instead of unmapping them: the next call neither faults them
    // in again nor has the kernel flush TLBs (call_overhead's noop call: median 64-73 µs without, 25-31 µs with,
    // in the same hour). Pages past that are unmapped as before. The kept pages stay resident in every warm slot,
    // so the size is memory: 256 KiB made the Helm bench's host 41 MiB idle and 82-92 MiB at its peak, 64 KiB
    // 32 and 56 MiB (as without the scan), for a noop call within noise of 256 KiB's. Without the ioctl wasmtime
    // resets the *first* bytes in place instead, where a Rust guest's stack sits mostly untouched.
    if PoolingAllocationConfig::is_pagemap_scan_available() {
        pool.pagemap_scan(Enabled::Yes);
    }
    pool.linear_memory_keep_resident(64 * 1024);
    pool
}

/// Advances the epoch every [`EPOCH_TICK`] on a plain thread (never a tokio task: a busy runtime must not
/// delay deadlines). It holds only a weak handle, so it ends when the engine is dropped.
pub(crate) fn start_epoch_ticker(engine: &Engine) -> anyhow::Result<()> {
    let weak = engine.weak();
    std::thread::Builder::new()
        .name("wasm-epoch".into())
        .spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(EPOCH_TICK);
            }
        })
        .context("starting the wasm epoch ticker thread")?;
    Ok(())
}
