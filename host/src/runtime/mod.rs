//! The plugin runtime: one engine for the process, compiled components cached by digest, and a fresh sandboxed
//! store for every call.
//!
//! ```text
//! Runtime::load(PluginSpec) ─► compile or cache hit ─► imports ⊆ grants? ─► InstancePre ─► describe()
//!        │                                                                                    │
//!        ▼                                                                                    ▼
//! PluginRegistry (name → Arc<LoadedPlugin>) ─► LoadedPlugin::reconcile(object, services)
//!        permit ─► fresh Store (deadline, memory cap, deny-all WASI) ─► instantiate ─► call ─► outputs
//! ```
//!
//! With feature `native`, `Runtime::load_native::<P>` serves a plugin's logic compiled into the host through the
//! same path, for measuring what WebAssembly costs (`native.rs` says what the sandbox then no longer gives).

mod cache;
mod engine;
mod error;
mod guest_strings;
mod imports;
mod limits;
#[cfg(feature = "native")]
mod native;
mod plugin;
mod registry;
mod stdio;
mod store;
pub use crate::contract::throttle;
mod types;
mod usage;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use tokio::sync::Semaphore;
use wasmtime::Engine;
use wasmtime::component::Linker;

use crate::capabilities;

pub use crate::contract::SecretField;
/// Cutting text a plugin or a request made up to size, for the layers above that quote it (admission).
pub use crate::contract::truncated;
pub use cache::{CompiledFrom, Digest};
pub use engine::Allocator;
pub use error::{ErrorKind, PluginError};
pub use limits::CallLimits;
pub use plugin::{CallError, CallResult, Completed, LoadedPlugin, PluginSpec, Quota};
pub use registry::{CanaryRoute, KindKey, KindRoutes, PluginRegistry, Route, serves_kind};
pub(crate) use store::HostState;
pub use types::{
    FieldError, FieldErrorType, Gvk, Info, MAX_CAUSES, MAX_WARNING, MAX_WARNINGS_TOTAL,
    ReconcileError, RelatedKind, RelatedMapping, Verdict,
};
pub use usage::{RateLimit, Usage, UsageFigures};

#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Where precompiled components are kept across restarts; `None`: memory only.
    pub cache_dir: Option<PathBuf>,
    /// Plugin calls (and load-time probes) running at once across all plugins; more wait for a permit.
    pub max_concurrent_calls: usize,
    /// Limits for plugins whose spec sets none.
    pub default_limits: CallLimits,
    /// The largest memory cap any plugin may be given (sizes the instance pool).
    pub memory_ceiling: usize,
    pub allocator: Allocator,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            cache_dir: None,
            max_concurrent_calls: 64,
            default_limits: CallLimits::default(),
            memory_ceiling: 512 << 20,
            allocator: Allocator::Pooling,
        }
    }
}

/// The process's plugin runtime. Cheap to clone; clones share the engine, caches and permits.
#[derive(Clone)]
pub struct Runtime {
    shared: Arc<Shared>,
}

/// What every loaded plugin shares with the runtime.
pub(crate) struct Shared {
    engine: Engine,
    linker: Linker<HostState>,
    cache: cache::ComponentCache,
    permits: Semaphore,
    allocator: Allocator,
    config: RuntimeConfig,
}

impl Runtime {
    pub fn new(config: RuntimeConfig) -> anyhow::Result<Self> {
        anyhow::ensure!(
            config.max_concurrent_calls > 0,
            "max_concurrent_calls must be at least 1"
        );
        anyhow::ensure!(
            config.default_limits.memory_bytes <= config.memory_ceiling,
            "the default memory cap ({} bytes) is above the memory ceiling ({} bytes)",
            config.default_limits.memory_bytes,
            config.memory_ceiling
        );
        let (engine, allocator) = engine::build(&config)?;
        engine::start_epoch_ticker(&engine)?;

        // One linker for every plugin: all contract interfaces plus WASI. Which of them a plugin may use is
        // decided by its imports and grants at load, not by what is linked.
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(anyhow::Error::from)
            .context("linking WASI")?;
        capabilities::link(&mut linker).context("linking the plugin contract")?;
        guest_strings::link(&mut linker).context("bounding the plugin's text outputs")?;

        let cache = cache::ComponentCache::new(&engine, config.cache_dir.clone());
        let permits = Semaphore::new(config.max_concurrent_calls);
        Ok(Runtime {
            shared: Arc::new(Shared {
                engine,
                linker,
                cache,
                permits,
                allocator,
                config,
            }),
        })
    }

    /// The engine every plugin of this runtime runs on (its allocator, epoch interruption and limits), for
    /// benchmarks that compare a call with bare wasmtime on the same engine.
    pub fn engine(&self) -> &wasmtime::Engine {
        &self.shared.engine
    }

    /// Compiles (or finds) and checks a plugin, and asks it what it is. Refuses a plugin whose imports or
    /// declared needs exceed its grants ([`ErrorKind::DeniedCapability`]).
    pub async fn load(&self, spec: PluginSpec) -> Result<Arc<LoadedPlugin>, PluginError> {
        LoadedPlugin::load(self.shared.clone(), spec)
            .await
            .map(Arc::new)
    }

    pub fn allocator(&self) -> Allocator {
        self.shared.allocator
    }

    pub fn config(&self) -> &RuntimeConfig {
        &self.shared.config
    }
}
