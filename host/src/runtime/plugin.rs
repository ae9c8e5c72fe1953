//! A loaded plugin and its calls. Loading compiles (or finds) the component, checks its imports against its
//! grants, links it once (`InstancePre`), and asks it `describe` in a throwaway instance. Every call then gets
//! a fresh store and instance, bounded in time, memory and output.
//!
//! A plugin can also be Rust logic compiled into the host (feature `native`, `native.rs`); it is served through the
//! same permits, deadline, call context, capabilities and outputs, so the two differ only in how the logic runs.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Semaphore;
use tracing::Instrument as _;
use wasmtime::Store;
use wasmtime::component::Resource;

use super::Shared;
use super::cache::{CompiledFrom, Digest};
use super::error::{self, ErrorKind, Failure, PluginError};
use super::imports;
use super::limits::{
    CallLimits, HostCallRate, HostCallRateExceeded, MAX_HOST_CALL_WAIT, MAX_MEMORIES, MAX_TABLES,
};
use super::store::HostState;
use super::types::{Info, ReconcileError, Verdict};
use super::usage::{RateLimit, Usage};
use crate::capabilities::{
    CallContext, CallObject, Capability, Denial, Grants, HostServices, Outputs, WRITE_BURST,
    WRITES_PER_SECOND, WriteLedger, truncate,
};
use crate::contract::SecretField;
use crate::contract::bindings::exports::omni::operator::{
    plugin as wit_plugin, reconciler as wit_reconciler, validator as wit_validator,
};
use crate::contract::bindings::omni::operator::types as wit;

/// How much of a plugin's own error text is kept (a condition message holds 32 KiB).
const MAX_ERROR_MESSAGE: usize = 4096;

/// What to load: a name (what the registry and every message use), the component's bytes, and what it may do.
#[derive(Debug, Clone)]
pub struct PluginSpec {
    pub name: String,
    pub wasm: Arc<[u8]>,
    pub grants: Grants,
    /// `None`: the runtime's defaults.
    pub limits: Option<CallLimits>,
    /// A tenant's quota (a plugin binding's): calls over it are turned away at once rather than queued.
    pub quota: Option<Quota>,
}

/// What one binding's calls may take from the operator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quota {
    /// Calls running at once.
    pub concurrency: Option<usize>,
    /// Calls per second, sustained (bursts up to twice it).
    pub calls_per_second: Option<u32>,
}

impl PluginSpec {
    pub fn new(name: impl Into<String>, wasm: impl Into<Arc<[u8]>>) -> Self {
        PluginSpec {
            name: name.into(),
            wasm: wasm.into(),
            grants: Grants::none(),
            limits: None,
            quota: None,
        }
    }

    pub fn from_file(name: impl Into<String>, path: &Path) -> std::io::Result<Self> {
        Ok(PluginSpec::new(name, std::fs::read(path)?))
    }

    pub fn grants(mut self, grants: Grants) -> Self {
        self.grants = grants;
        self
    }

    pub fn limits(mut self, limits: CallLimits) -> Self {
        self.limits = Some(limits);
        self
    }

    pub fn quota(mut self, quota: Quota) -> Self {
        self.quota = Some(quota);
        self
    }
}

/// A call that returned ok: its value and the outputs for the caller to commit.
#[derive(Debug, Clone, PartialEq)]
pub struct Completed<T> {
    pub value: T,
    pub outputs: Outputs,
}

/// Why a reconcile or finalize did not complete. Outputs of such a call are never returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The plugin returned `reconcile-error`. The capability calls it was denied on the way are reported
    /// with the failure, as after a successful call.
    #[error("plugin {plugin:?} failed: {error}")]
    Failed {
        plugin: String,
        error: ReconcileError,
        /// The first [`crate::capabilities::MAX_DENIALS`] refusals of the call.
        denials: Vec<Denial>,
        /// Refusals beyond those, counted.
        denials_dropped: usize,
    },
    /// The runtime stopped the call: trap, timeout, memory or output limit.
    #[error(transparent)]
    Aborted(#[from] PluginError),
}

pub type CallResult<T> = Result<Completed<T>, CallError>;

pub struct LoadedPlugin {
    exec: Executor,
    info: Info,
    digest: Digest,
    imports: Vec<String>,
    compiled_from: CompiledFrom,
    usage: Usage,
    /// `None`: no tenant quota; calls queue for the plugin's permits as before.
    quota: Option<Option<RateLimit>>,
}

impl std::fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("name", &self.exec.name)
            .field("digest", &self.digest)
            .finish_non_exhaustive()
    }
}

/// Everything a call needs, shared by all calls of one loaded version.
pub(super) struct Executor {
    pub(super) name: Arc<str>,
    code: Code,
    shared: Arc<Shared>,
    pub(super) grants: Arc<Grants>,
    /// Where the reconciled object names the Secrets the plugin may reach (from `describe`).
    pub(super) secret_fields: Arc<[SecretField]>,
    pub(super) limits: CallLimits,
    /// Per-plugin concurrency, so one busy plugin cannot take every global permit.
    permits: Semaphore,
    /// Host calls across all calls of this version.
    host_call_rate: HostCallRate,
    /// `kube-write`'s ledger across all calls of this version (its writes per second, what it applied last): one
    /// per loaded version, so per binding (each binding loads versions of its own) and per plugin of
    /// `--plugin-dir`.
    pub(super) writes: Arc<WriteLedger>,
}

/// Logic compiled into the host, served behind the same calls as a component (feature `native`). `native.rs`
/// implements it, so that module depends on this one and not the other way round.
#[cfg(feature = "native")]
pub(super) trait NativeLogic: Send + Sync {
    /// Stands in for a component's digest.
    fn digest(&self) -> Digest;

    /// One call; `exec` has already granted its permits.
    fn invoke<'a>(
        &'a self,
        exec: &'a Executor,
        object: Option<&'a CallObject>,
        services: &'a HostServices,
        export: Export,
    ) -> futures::future::BoxFuture<'a, Result<(Returned, Outputs), PluginError>>;
}

/// What runs the plugin's logic.
enum Code {
    /// A component, instantiated in a fresh store for every call.
    Component(Box<ComponentCode>),
    /// Rust compiled into the host.
    #[cfg(feature = "native")]
    Native(Box<dyn NativeLogic>),
}

/// A component linked to the host, and where each of the contract's interfaces sits among its exports (looked up
/// once). A call loads only the interface it calls: loading type-checks every function of what it loads, and the
/// whole world's (`describe`'s record of lists of records among them) was a tenth of a noop call.
struct ComponentCode {
    pre: wasmtime::component::InstancePre<HostState>,
    plugin: wit_plugin::GuestIndices,
    reconciler: wit_reconciler::GuestIndices,
    validator: wit_validator::GuestIndices,
}

impl ComponentCode {
    /// Fails when the component lacks one of the contract's exports (the same lookups, in the same order, as
    /// bindgen's world-level `ReconcilePluginPre::new`, which is these three).
    fn new(pre: wasmtime::component::InstancePre<HostState>) -> wasmtime::Result<ComponentCode> {
        Ok(ComponentCode {
            plugin: wit_plugin::GuestIndices::new(&pre)?,
            reconciler: wit_reconciler::GuestIndices::new(&pre)?,
            validator: wit_validator::GuestIndices::new(&pre)?,
            pre,
        })
    }
}

/// One export call.
pub(super) enum Export {
    Describe,
    Reconcile,
    Finalize,
    // Owned: the binding takes `json` parameters as `&String`.
    Validate { object: String, old: Option<String> },
}

pub(super) enum Returned {
    Describe(wit_plugin::Info),
    Reconcile(Result<(), wit::ReconcileError>),
    Finalize(Result<bool, wit::ReconcileError>),
    Validate(wit_validator::Verdict),
}

impl LoadedPlugin {
    pub(crate) async fn load(
        shared: Arc<Shared>,
        spec: PluginSpec,
    ) -> Result<LoadedPlugin, PluginError> {
        let PluginSpec {
            name,
            wasm,
            grants,
            limits,
            quota,
        } = spec;
        let mut limits = limits.unwrap_or(shared.config.default_limits);
        if let Some(n) = quota.and_then(|q| q.concurrency) {
            limits.max_concurrent = limits.max_concurrent.min(n.max(1));
        }
        if limits.memory_bytes > shared.config.memory_ceiling {
            return Err(PluginError::new(
                &name,
                ErrorKind::Other,
                format!(
                    "asks for a memory cap of {} bytes, above this host's ceiling of {} bytes",
                    limits.memory_bytes, shared.config.memory_ceiling
                ),
            ));
        }
        let (digest, component, compiled_from) = shared.cache.get(wasm).await.map_err(|e| {
            PluginError::new(
                &name,
                ErrorKind::Other,
                format!("is not a loadable component: {e:#}"),
            )
        })?;
        // A component with more memories or tables than a call may have is refused once, here, with the reason,
        // rather than failing every call (or, with on-demand allocation, reserving memory per memory).
        if let Some(required) = component.resources_required() {
            let (memories, tables) = (required.num_memories as usize, required.num_tables as usize);
            if memories > MAX_MEMORIES || tables > MAX_TABLES {
                return Err(PluginError::new(
                    &name,
                    ErrorKind::Other,
                    format!(
                        "defines {memories} linear memories and {tables} tables; this host allows at most \
                         {MAX_MEMORIES} memories and {MAX_TABLES} tables per plugin"
                    ),
                ));
            }
        }
        let imports = imports::check(&name, &shared.engine, &component, &grants)?;
        let pre = shared
            .linker
            .instantiate_pre(&component)
            .and_then(ComponentCode::new)
            .map_err(|e| {
                PluginError::new(
                    &name,
                    ErrorKind::Other,
                    format!("does not fit this host's contract: {e:#}"),
                )
            })?;

        let exec = Executor::new(
            shared,
            &name,
            Code::Component(Box::new(pre)),
            grants,
            limits,
        );
        let mut plugin = LoadedPlugin::ready(exec, digest, imports, compiled_from).await?;
        plugin.quota = quota.map(|q| q.calls_per_second.map(RateLimit::per_second));
        Ok(plugin)
    }

    /// Serves `native`'s logic under `name`. There is no component, so nothing to compile or link, and no
    /// import list: capabilities are checked call by call (see `native.rs`).
    #[cfg(feature = "native")]
    pub(super) async fn load_native(
        shared: Arc<Shared>,
        name: String,
        native: Box<dyn NativeLogic>,
        grants: Grants,
        limits: Option<CallLimits>,
    ) -> Result<LoadedPlugin, PluginError> {
        // The memory cap does not apply natively, so the ceiling check does not either.
        let limits = limits.unwrap_or(shared.config.default_limits);
        let digest = native.digest();
        let exec = Executor::new(shared, &name, Code::Native(native), grants, limits);
        LoadedPlugin::ready(exec, digest, Vec::new(), CompiledFrom::Native).await
    }

    /// Asks the plugin what it is and checks its declared needs against its grants.
    async fn ready(
        mut exec: Executor,
        digest: Digest,
        imports: Vec<String>,
        compiled_from: CompiledFrom,
    ) -> Result<LoadedPlugin, PluginError> {
        let info = exec.describe().await?;
        check_declared(&exec.name, &info, &exec.grants)?;
        exec.secret_fields = Arc::from(info.secret_fields.clone());
        tracing::info!(plugin = %exec.name, %digest, version = %info.version, ?compiled_from, "plugin loaded");
        Ok(LoadedPlugin {
            exec,
            info,
            digest,
            imports,
            compiled_from,
            usage: Usage::default(),
            quota: None,
        })
    }

    /// The name this plugin was loaded under.
    pub fn name(&self) -> &str {
        &self.exec.name
    }

    /// What `describe` answered at load.
    pub fn info(&self) -> &Info {
        &self.info
    }

    /// The component's SHA-256; for a native plugin, a digest of its Rust type's name.
    pub fn digest(&self) -> Digest {
        self.digest
    }

    /// The component's imports, as `package/interface@version` (none for a native plugin).
    pub fn imports(&self) -> &[String] {
        &self.imports
    }

    pub fn grants(&self) -> &Grants {
        &self.exec.grants
    }

    pub fn limits(&self) -> &CallLimits {
        &self.exec.limits
    }

    /// Where the load found the compiled code (memory, disk cache, or the compiler; or native code in the host).
    pub fn compiled_from(&self) -> CompiledFrom {
        self.compiled_from
    }

    /// Whether the logic runs as native code in the host rather than as a sandboxed component.
    pub fn is_native(&self) -> bool {
        #[cfg(feature = "native")]
        if matches!(self.exec.code, Code::Native(_)) {
            return true;
        }
        false
    }

    /// Asks the plugin again what it is.
    pub async fn describe(&self) -> Result<Info, PluginError> {
        self.exec.describe().await
    }

    /// Level-triggered reconcile of `object`. The outputs are the caller's to commit.
    pub async fn reconcile(&self, object: &CallObject, services: &HostServices) -> CallResult<()> {
        let span = self.call_span("reconcile");
        let started = Instant::now();
        let result = async {
            let (returned, outputs) = self
                .exec
                .invoke(Some(object), services, Export::Reconcile)
                .await?;
            match returned {
                Returned::Reconcile(Ok(())) => Ok(Completed { value: (), outputs }),
                Returned::Reconcile(Err(e)) => Err(self.failed(e, outputs)),
                _ => Err(self.exec.mismatch("reconcile").into()),
            }
        }
        .instrument(span.clone())
        .await;
        self.count(&result, &span, started);
        result
    }

    /// Cleanup before deletion; `value: true` lets the caller remove the finalizer.
    pub async fn finalize(&self, object: &CallObject, services: &HostServices) -> CallResult<bool> {
        let span = self.call_span("finalize");
        let started = Instant::now();
        let result = async {
            let (returned, outputs) = self
                .exec
                .invoke(Some(object), services, Export::Finalize)
                .await?;
            match returned {
                Returned::Finalize(Ok(done)) => Ok(Completed {
                    value: done,
                    outputs,
                }),
                Returned::Finalize(Err(e)) => Err(self.failed(e, outputs)),
                _ => Err(self.exec.mismatch("finalize").into()),
            }
        }
        .instrument(span.clone())
        .await;
        self.count(&result, &span, started);
        result
    }

    /// One span per call (`plugin.call`), with the plugin, its digest and the export; the outcome and duration
    /// are recorded when it ends.
    fn call_span(&self, export: &'static str) -> tracing::Span {
        tracing::debug_span!(
            "plugin.call",
            plugin = %self.exec.name,
            digest = %self.digest,
            export,
            outcome = tracing::field::Empty,
            duration_us = tracing::field::Empty,
        )
    }

    fn count<T>(&self, result: &CallResult<T>, span: &tracing::Span, started: Instant) {
        let took = started.elapsed();
        let (outcome, trap, denials) = match result {
            Ok(done) => (
                "ok",
                None,
                done.outputs.denials.len() + done.outputs.denials_dropped,
            ),
            Err(CallError::Failed {
                denials,
                denials_dropped,
                ..
            }) => ("error", None, denials.len() + denials_dropped),
            Err(CallError::Aborted(e)) => (e.kind().reason(), Some(e.kind()), 0),
        };
        span.record("outcome", outcome);
        span.record(
            "duration_us",
            u64::try_from(took.as_micros()).unwrap_or(u64::MAX),
        );
        self.usage.record(result.is_err(), trap, denials, took);
    }

    /// What this version has done since it was loaded.
    pub fn usage(&self) -> &Usage {
        &self.usage
    }

    /// Whether a call may start now under this version's quotas; otherwise how long to wait. A call that may
    /// not start is counted as a quota hit and never waits inside the host: its caller requeues it, so a
    /// tenant that has used its share holds no worker another tenant could use.
    pub fn admit(&self, now: Instant) -> Result<(), std::time::Duration> {
        let Some(rate) = &self.quota else {
            return Ok(());
        };
        if self.exec.permits.available_permits() == 0 {
            self.usage.quota_hit();
            return Err(std::time::Duration::from_millis(200));
        }
        if let Some(rate) = rate
            && let Err(wait) = rate.take(now)
        {
            self.usage.quota_hit();
            return Err(wait);
        }
        Ok(())
    }

    /// Admission checks; `old` is set on updates. Counted in this version's usage as every call is, so a rollout
    /// judges a digest whose `validate` traps as it judges one whose `reconcile` does; a call abandoned by its
    /// caller (the webhook's deadline) counts as a timeout.
    pub async fn validate(&self, object: &str, old: Option<&str>) -> Result<Verdict, PluginError> {
        let mut pending = Abandoned {
            usage: &self.usage,
            started: Instant::now(),
            armed: true,
        };
        let services = HostServices::default();
        let result = match self
            .exec
            .invoke(
                None,
                &services,
                Export::Validate {
                    object: object.to_owned(),
                    old: old.map(str::to_owned),
                },
            )
            .await
        {
            Ok((Returned::Validate(verdict), _)) => Ok(Verdict::from(verdict)),
            Ok(_) => Err(self.exec.mismatch("validate")),
            Err(e) => Err(e),
        };
        pending.armed = false;
        let trap = result.as_ref().err().map(PluginError::kind);
        self.usage
            .record(result.is_err(), trap, 0, pending.started.elapsed());
        result
    }

    /// A failed call's error; of its outputs only the denials are kept.
    fn failed(&self, error: wit::ReconcileError, outputs: Outputs) -> CallError {
        // The plugin's text becomes a condition message and an Event: bounded as those are.
        let bounded = |mut m: String| {
            truncate(&mut m, MAX_ERROR_MESSAGE);
            m
        };
        let error = match error {
            wit::ReconcileError::Transient(m) => ReconcileError::Transient(bounded(m)),
            wit::ReconcileError::Permanent(m) => ReconcileError::Permanent(bounded(m)),
        };
        CallError::Failed {
            plugin: self.name().to_owned(),
            error,
            denials: outputs.denials,
            denials_dropped: outputs.denials_dropped,
        }
    }
}

/// Records a call as a timeout if it is dropped before it answers (its caller gave up waiting).
struct Abandoned<'a> {
    usage: &'a Usage,
    started: Instant,
    armed: bool,
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.usage
                .record(true, Some(ErrorKind::Timeout), 0, self.started.elapsed());
        }
    }
}

impl Executor {
    fn new(
        shared: Arc<Shared>,
        name: &str,
        code: Code,
        grants: Grants,
        limits: CallLimits,
    ) -> Self {
        Executor {
            name: Arc::from(name),
            code,
            grants: Arc::new(grants),
            secret_fields: Arc::from([]),
            permits: Semaphore::new(limits.max_concurrent.max(1)),
            host_call_rate: HostCallRate::new(limits.host_calls_per_second),
            writes: Arc::new(WriteLedger::new(WRITES_PER_SECOND, WRITE_BURST)),
            limits,
            shared,
        }
    }

    async fn describe(&self) -> Result<Info, PluginError> {
        match self
            .invoke(None, &HostServices::default(), Export::Describe)
            .await?
            .0
        {
            Returned::Describe(info) => Ok(info.into()),
            _ => Err(self.mismatch("describe")),
        }
    }

    /// One call, after a global and a per-plugin permit. `object`, when given, becomes the call's
    /// `call-context`.
    async fn invoke(
        &self,
        object: Option<&CallObject>,
        services: &HostServices,
        export: Export,
    ) -> Result<(Returned, Outputs), PluginError> {
        let closed = |_| {
            PluginError::new(
                &self.name,
                ErrorKind::Other,
                "was called while the host is shutting down",
            )
        };
        // A plugin in debt on its host-call rate waits for it (slowed), or is refused when that would take too
        // long. Before the permits, so a slowed call holds none. The refusal is classified like a trap, so it
        // is reported on the object and counted.
        let wait = self.host_call_rate.wait(Instant::now());
        if wait > MAX_HOST_CALL_WAIT {
            let refused = HostCallRateExceeded {
                per_second: self.host_call_rate.per_second(),
                wait_ms: wait.as_millis(),
            };
            return Err(PluginError::new(
                &self.name,
                ErrorKind::TooManyHostCalls,
                refused.to_string(),
            ));
        }
        if !wait.is_zero() {
            tracing::debug!(plugin = %self.name, wait_ms = wait.as_millis(), "call slowed: the plugin is over its host-call rate");
            tokio::time::sleep(wait).await;
        }
        let _host_permit = self.shared.permits.acquire().await.map_err(closed)?;
        let _plugin_permit = self.permits.acquire().await.map_err(closed)?;
        match &self.code {
            Code::Component(code) => self.invoke_component(code, object, services, export).await,
            #[cfg(feature = "native")]
            Code::Native(native) => native.invoke(self, object, services, export).await,
        }
    }

    /// One call in a fresh store and instance.
    async fn invoke_component(
        &self,
        code: &ComponentCode,
        object: Option<&CallObject>,
        services: &HostServices,
        export: Export,
    ) -> Result<(Returned, Outputs), PluginError> {
        let limits = &self.limits;
        let deadline = Instant::now() + limits.timeout;
        let mut store = HostState::store(
            &self.shared.engine,
            self.name.clone(),
            self.grants.clone(),
            services.clone().with_write_ledger(self.writes.clone()),
            limits,
        );
        store.data_mut().scope.core.secret_fields = self.secret_fields.clone();
        let context = self.open_context(store.data_mut(), object, deadline)?;
        // The plugin gets a borrow; the host keeps the owning handle and takes the outputs back through it.
        let lent = context.as_ref().map(|c| Resource::new_borrow(c.rep()));

        let run = async {
            let instance = code.pre.instantiate_async(&mut store).await?;
            call_export(code, &instance, &mut store, export, lent).await
        };
        let outcome = tokio::time::timeout(limits.timeout, run).await;

        let state = store.data_mut();
        // Charged when the call ends, trapped or not (a call its caller abandons is not charged; its own cap of
        // host calls still bounds it).
        self.host_call_rate
            .charge(state.host_calls(), Instant::now());
        let stdio = state.drain_stdio();
        let mut outputs = close_context(state, context);
        // Captured output counts against the call's log lines and is cut like them: 64 KiB of one-character lines
        // would otherwise be 32,000 log lines from one call (found by fuzz_plugin_output_reconcile).
        for line in stdio {
            if outputs.log(line, &limits.outputs)
                && let Some(kept) = outputs.logs.last()
            {
                kept.emit(&self.name);
            }
        }
        match outcome {
            Err(_elapsed) => Err(PluginError::timeout(&self.name, limits.timeout)),
            Ok(Err(e)) => Err(error::classify(
                &e,
                Failure {
                    plugin: &self.name,
                    timeout: limits.timeout,
                    stderr_tail: state.stderr_tail(1024),
                },
            )),
            Ok(Ok(returned)) => Ok((returned, outputs)),
        }
    }

    /// The call's state behind a `call-context` handle in `state`'s table, when the export takes one. The
    /// returned handle owns it; the plugin only ever gets borrows.
    pub(super) fn open_context(
        &self,
        state: &mut HostState,
        object: Option<&CallObject>,
        deadline: Instant,
    ) -> Result<Option<Resource<CallContext>>, PluginError> {
        let Some(object) = object else {
            return Ok(None);
        };
        let context = CallContext::new(object.clone(), deadline, self.limits.outputs);
        state.scope.core.table.push(context).map(Some).map_err(|e| {
            PluginError::new(
                &self.name,
                ErrorKind::Other,
                format!("could not be given a call context: {e}"),
            )
        })
    }

    fn mismatch(&self, export: &str) -> PluginError {
        PluginError::new(
            &self.name,
            ErrorKind::Other,
            format!("answered {export} with the wrong shape (host bug)"),
        )
    }
}

/// The outputs the call buffered in its context (none without one).
pub(super) fn close_context(
    state: &mut HostState,
    context: Option<Resource<CallContext>>,
) -> Outputs {
    let mut outputs = match context {
        Some(handle) => state
            .scope
            .core
            .table
            .delete(handle)
            .map(CallContext::into_outputs)
            .unwrap_or_default(),
        None => Outputs::default(),
    };
    for denial in state.scope.core.denials.drain(..) {
        outputs.deny(denial);
    }
    outputs.denials_dropped += std::mem::take(&mut state.scope.core.denials_dropped);
    outputs
}

async fn call_export(
    code: &ComponentCode,
    instance: &wasmtime::component::Instance,
    store: &mut Store<HostState>,
    export: Export,
    context: Option<Resource<CallContext>>,
) -> wasmtime::Result<Returned> {
    let context = || {
        context.ok_or_else(|| {
            wasmtime::Error::msg("reconcile and finalize need a call context (host bug)")
        })
    };
    Ok(match export {
        Export::Describe => Returned::Describe(
            code.plugin
                .load(&mut *store, instance)?
                .call_describe(store)
                .await?,
        ),
        Export::Reconcile => Returned::Reconcile(
            code.reconciler
                .load(&mut *store, instance)?
                .call_reconcile(store, context()?)
                .await?,
        ),
        Export::Finalize => Returned::Finalize(
            code.reconciler
                .load(&mut *store, instance)?
                .call_finalize(store, context()?)
                .await?,
        ),
        Export::Validate { object, old } => Returned::Validate(
            code.validator
                .load(&mut *store, instance)?
                .call_validate(store, &object, old.as_ref())
                .await?,
        ),
    })
}

/// The capabilities a plugin declares it needs must be granted too: a plugin that says it needs `omni` but
/// was not granted it would fail at its first Omni call, so it is refused now, with the reason.
fn check_declared(plugin: &str, info: &Info, grants: &Grants) -> Result<(), PluginError> {
    let refusals: Vec<String> = info
        .capabilities
        .iter()
        .filter_map(|name| match name.parse::<Capability>() {
            Ok(capability) if grants.allows(capability) => None,
            Ok(_) => Some(format!(
                "declares it needs capability {name:?}, which its grants do not include"
            )),
            Err(_) => Some(format!(
                "declares capability {name:?}, which this host does not know"
            )),
        })
        .collect();
    if refusals.is_empty() {
        Ok(())
    } else {
        Err(PluginError::new(
            plugin,
            ErrorKind::DeniedCapability,
            refusals.join("; "),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declaring(capabilities: &[&str]) -> Info {
        Info {
            name: "p".into(),
            version: "1".into(),
            kinds: Vec::new(),
            related: Vec::new(),
            finalizer: None,
            legacy_finalizers: Vec::new(),
            capabilities: capabilities.iter().map(|c| c.to_string()).collect(),
            secret_fields: Vec::new(),
        }
    }

    #[test]
    fn declared_needs_must_be_granted() {
        let grants = Grants::parse(["omni"]).unwrap();
        assert_eq!(check_declared("p", &declaring(&["omni"]), &grants), Ok(()));

        let e = check_declared(
            "p",
            &declaring(&["omni", "secrets-read-values", "teleport"]),
            &grants,
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::DeniedCapability);
        assert_eq!(
            e.to_string(),
            "plugin \"p\" declares it needs capability \"secrets-read-values\", which its grants do not include; \
             declares capability \"teleport\", which this host does not know"
        );
    }
}
