//! Native plugins: a type implementing the SDK's [`Plugin`], compiled into the host, served through exactly what
//! serves a component — the registry, the controllers, the global and per-plugin permits, the call deadline, a
//! fresh `HostState` and `call-context` per call, the same capability implementations and grants, and outputs
//! taken back through the same context. What differs is only how the logic runs, which is what the
//! "WASM plugin vs the same logic compiled natively" benchmark measures (`benches/clusters.rs`).
//!
//! What the sandbox gives a component and native code cannot have, by construction:
//! * No isolation. Native logic runs with the host's authority and could skip its `Host` altogether; only code
//!   compiled into the host can be native, which is why there is no way to load one from a file.
//! * No memory cap (the limiter governs linear memory) and no epoch interruption. The logic runs on a blocking
//!   thread; at the deadline the host abandons the call (outputs dropped, later capability calls find no time
//!   left), but the thread runs on until the logic returns.
//! * No import list to check at load. Each call into an interface is checked against the grants instead and
//!   answers `denied` when the interface is not granted (the capability's own finer checks, such as kube-read's
//!   namespaces, follow as for a component); `clock.now`, which has no error to answer with, aborts the call with
//!   [`ErrorKind::DeniedCapability`].
//! * stdout and stderr are the host's own, not captured into the call's log lines.
//! * A panic is caught at the thread boundary and reported as [`ErrorKind::Panic`], as a trap would be.

mod convert;
mod helm;
mod host;

use std::sync::Arc;
use std::time::Instant;

use omni_plugin_sdk::{Plugin, Value};
use tokio::runtime::Handle;
use tokio::task::JoinError;

use self::host::NativeHost;
use super::Runtime;
use super::cache::Digest;
use super::error::{ErrorKind, PluginError};
use super::limits::CallLimits;
use super::plugin::{Executor, Export, LoadedPlugin, NativeLogic, Returned, close_context};
use super::store::HostState;
use crate::capabilities::{CallObject, Grants, HostServices, Outputs};
use crate::contract::bindings::exports::omni::operator::validator as wit_validator;

impl Runtime {
    /// Serves `P`'s logic, compiled into this host, under `name` with `grants` and `limits` (`None`: the runtime's
    /// defaults; the memory cap does not apply). Refused, as a component would be, when `P` declares a capability
    /// its grants do not include.
    pub async fn load_native<P: Plugin>(
        &self,
        name: impl Into<String>,
        grants: Grants,
        limits: Option<CallLimits>,
    ) -> Result<Arc<LoadedPlugin>, PluginError> {
        LoadedPlugin::load_native(
            self.shared.clone(),
            name.into(),
            Box::new(NativePlugin::of::<P>()),
            grants,
            limits,
        )
        .await
        .map(Arc::new)
    }
}

impl NativeLogic for NativePlugin {
    /// Names the Rust type, which is what identifies native logic.
    fn digest(&self) -> Digest {
        Digest::of(format!("native:{}", self.type_name).as_bytes())
    }

    fn invoke<'a>(
        &'a self,
        exec: &'a Executor,
        object: Option<&'a CallObject>,
        services: &'a HostServices,
        export: Export,
    ) -> futures::future::BoxFuture<'a, Result<(Returned, Outputs), PluginError>> {
        Box::pin(self.run(exec, object, services, export))
    }
}

/// A plugin's exports as native functions, monomorphised for [`NativeHost`].
#[derive(Clone, Copy)]
pub(super) struct NativePlugin {
    type_name: &'static str,
    describe: fn() -> omni_plugin_sdk::Info,
    reconcile: fn(&NativeHost) -> Result<(), omni_plugin_sdk::ReconcileError>,
    finalize: fn(&NativeHost) -> Result<bool, omni_plugin_sdk::ReconcileError>,
    validate: fn(&Value, Option<&Value>) -> omni_plugin_sdk::Verdict,
}

impl NativePlugin {
    fn of<P: Plugin>() -> Self {
        NativePlugin {
            type_name: std::any::type_name::<P>(),
            describe: P::describe,
            reconcile: P::reconcile::<NativeHost>,
            finalize: P::finalize::<NativeHost>,
            validate: P::validate,
        }
    }

    /// One call on a blocking thread, bounded by the call's deadline; `exec` has already granted its permits.
    async fn run(
        self,
        exec: &Executor,
        object: Option<&CallObject>,
        services: &HostServices,
        export: Export,
    ) -> Result<(Returned, Outputs), PluginError> {
        let timeout = exec.limits.timeout;
        let mut state = HostState::new(
            exec.name.clone(),
            exec.grants.clone(),
            services.clone().with_write_ledger(exec.writes.clone()),
            &exec.limits,
        );
        state.scope.core.secret_fields = exec.secret_fields.clone();
        let context = exec.open_context(&mut state, object, Instant::now() + timeout)?;
        let lent = context.as_ref().map(|c| c.rep());
        let runtime = Handle::current();
        let plugin = exec.name.clone();
        let call = tokio::task::spawn_blocking(move || match (export, lent) {
            (Export::Describe, _) => (
                Ok(Returned::Describe(convert::info((self.describe)()))),
                state,
            ),
            (Export::Validate { object, old }, _) => (
                Ok(Returned::Validate(self.validate(&object, old.as_deref()))),
                state,
            ),
            (Export::Reconcile, Some(context)) => {
                let host = NativeHost::new(state, context, runtime, timeout);
                let returned = (self.reconcile)(&host).map_err(convert::reconcile_error);
                host.finish(Returned::Reconcile(returned))
            }
            (Export::Finalize, Some(context)) => {
                let host = NativeHost::new(state, context, runtime, timeout);
                let returned = (self.finalize)(&host).map_err(convert::reconcile_error);
                host.finish(Returned::Finalize(returned))
            }
            (Export::Reconcile | Export::Finalize, None) => {
                let missing =
                    "was called to reconcile or finalize without a call context (host bug)";
                (
                    Err(PluginError::new(&plugin, ErrorKind::Other, missing)),
                    state,
                )
            }
        });
        match tokio::time::timeout(timeout, call).await {
            // The thread cannot be stopped; whatever it still does is dropped with its state.
            Err(_elapsed) => Err(PluginError::timeout(&exec.name, timeout)),
            Ok(Err(joined)) => Err(panicked(&exec.name, joined)),
            Ok(Ok((returned, mut state))) => {
                let outputs = close_context(&mut state, context);
                returned.map(|returned| (returned, outputs))
            }
        }
    }

    /// Admission on the JSON the host was given, parsed as the SDK's component glue parses it.
    fn validate(self, object: &str, old: Option<&str>) -> wit_validator::Verdict {
        let parsed = serde_json::from_str::<Value>(object)
            .and_then(|object| Ok((object, old.map(serde_json::from_str::<Value>).transpose()?)));
        match parsed {
            Ok((object, old)) => convert::verdict((self.validate)(&object, old.as_ref())),
            Err(e) => convert::unparsable(&e),
        }
    }
}

/// A panic in the logic, as a component's trap would be reported.
fn panicked(plugin: &str, joined: JoinError) -> PluginError {
    if !joined.is_panic() {
        return PluginError::new(
            plugin,
            ErrorKind::Other,
            "was cancelled while the host shut down",
        );
    }
    let payload = joined.into_panic();
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "with a non-text payload".into());
    PluginError::new(plugin, ErrorKind::Panic, format!("panicked: {message}"))
}
