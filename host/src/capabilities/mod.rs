//! What a plugin may ask of the host during a call: one module per WIT interface, each a factor of its own.
//! A capability module declares what it serves with (`Services`, shared by every call: clients, caches, the
//! operator's settings) and what it keeps for one call (`State`, made fresh per call), and implements its
//! interface's host trait on a view (`OmniCap`, `KubeReadCap`, …) that holds exactly
//! `(&mut CallCore, &mut State, &Services)`: the call's shared core ([`call`]: identity, grants, resource table,
//! denials, time budgets) and its own parts, never another capability's grants, state or services. Each view is
//! linked with bindgen's per-interface `add_to_linker`; [`capabilities!`] is the one table that registers them.
//!
//! Every host function takes the per-call `call-context` handle, so it knows the object, namespace, deadline
//! and grants of the call it serves. A service a host lacks (no Kubernetes, no Omni) answers
//! `host-error::unavailable`, so a plugin built against the full contract degrades instead of trapping.
//!
//! Layering: capabilities use [`crate::contract`] and the Omni, Secret and Helm clients; a capability module uses
//! [`call`] and no other capability; the runtime uses the capabilities; nothing here uses the runtime.

mod call;
mod clock;
mod context;
mod files;
mod helm;
mod kube_read;
mod kube_write;
mod omni;
mod secrets;
mod workload;

use std::sync::Arc;

use wasmtime::component::Linker;

use crate::contract::bindings::omni::operator::types as wit_types;
use crate::omni::OmniConnections;
use crate::secrets::WorkloadClients;

pub use crate::contract::{
    BoxFuture, CallContext, CallObject, Capability, Condition, ConditionStatus, DeleteRequest,
    Denial, Event, EventType, FieldSelector, FieldSelectorError, GetRequest, GrantError, Grants,
    HostError, HostFailure, KindScope, KubeReader, KubeWriter, ListRequest, LogLevel, LogLine,
    LogSource, MAX_DENIALS, NoKubeReader, NoKubeWriter, OutputBounds, Outputs, PLUGIN_LOG_TARGET,
    Propagation, SecretField, WriteOp, WritePermit, WriteRequest, is_secret, never_writable,
    never_writable_object, truncate, truncated,
};
pub use clock::{Clock, FixedClock, SystemClock, rfc3339_seconds};
pub use files::{MAX_FILE_BYTES, TemplateRoots};
pub use helm::{
    ActionBudget, ChartSources, HelmSettings, MAX_VALUES_BYTES, STARTS_PER_CALL, TargetNamespaces,
    check_service_account,
};
pub use kube_write::{
    MAX_WRITE_BYTES, WRITE_BURST, WRITES_PER_CALL, WRITES_PER_SECOND, WriteLedger,
};

pub use call::{CallCore, Management};
pub(crate) use context::ContextCap;
// The native plugin path calls the capabilities' views directly.
#[cfg(feature = "native")]
pub(crate) use {
    clock::ClockCap, files::FilesCap, helm::HelmCap, kube_read::KubeReadCap,
    kube_write::KubeWriteCap, omni::OmniCap, secrets::SecretsCap, workload::WorkloadCap,
};

/// The registration table: each capability module, its interface's name, and so the fields of [`HostServices`]
/// and [`CallStates`] that hold its services and per-call state, and its place in [`link`]. Adding a capability
/// is one line here (see host/README.md's checklist).
macro_rules! capabilities {
    ($($module:ident: $interface:literal),* $(,)?) => {
        /// The host's side of the capabilities, supplied by the caller for each call, one part per capability:
        /// the controllers pass their watch caches, clients and the real clock, tests pass fakes.
        #[derive(Clone, Default)]
        pub struct HostServices {
            $(pub(crate) $module: $module::Services,)*
        }

        /// What each capability keeps for one call.
        #[derive(Default)]
        pub(crate) struct CallStates {
            $($module: $module::State,)*
        }

        /// Links every contract interface into `linker`, each through its own `add_to_linker` and view. Which of
        /// them a plugin may use is decided by its imports and grants at load, and by each function's grant check.
        pub fn link<T: HasCallScope>(linker: &mut Linker<T>) -> anyhow::Result<()> {
            use anyhow::Context as _;
            link_types(linker)
                .map_err(anyhow::Error::from)
                .context("linking the types interface")?;
            $(
                $module::link(linker)
                    .map_err(anyhow::Error::from)
                    .with_context(|| format!("linking the {} interface", $interface))?;
            )*
            Ok(())
        }
    };
}

capabilities! {
    context: "context",
    kube_read: "kube-read",
    kube_write: "kube-write",
    secrets: "secrets",
    omni: "omni",
    workload: "workload",
    helm: "helm",
    files: "files",
    clock: "clock",
}

/// A store's data that carries a call's [`CallScope`]: what the capabilities are linked against.
pub trait HasCallScope: Send + 'static {
    fn call_scope(&mut self) -> &mut CallScope;
}

/// `types` has no functions, only the types the others share; it is linked as the world's bindings link it.
fn link_types<T: HasCallScope>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    wit_types::add_to_linker::<T, ContextCap<'static>>(linker, |state: &mut T| {
        ContextCap::of(state.call_scope())
    })
}

/// Declares a capability's view of the call: the call's [`CallCore`] and the capability's own `State` and
/// `Services` (types of the module it is invoked in), borrowed from the [`CallScope`] by `of`; answers the
/// contract's `host-error` conversion, and is linked by the interface's own `add_to_linker`.
macro_rules! capability_view {
    ($(#[$doc:meta])* $view:ident, $interface:path, $field:ident) => {
        $(#[$doc])*
        pub(crate) struct $view<'a> {
            #[allow(dead_code, reason = "a capability that checks no grant (the clock) does not read it")]
            pub(crate) core: &'a mut $crate::capabilities::CallCore,
            #[allow(dead_code, reason = "a capability without per-call state has a unit here")]
            pub(crate) state: &'a mut State,
            #[allow(dead_code, reason = "a capability without services has a unit here")]
            pub(crate) services: &'a Services,
        }

        impl<'a> $view<'a> {
            /// The capability's parts of one call, and the call's core.
            pub(crate) fn of(scope: &'a mut $crate::capabilities::CallScope) -> Self {
                $view {
                    core: &mut scope.core,
                    state: &mut scope.states.$field,
                    services: &scope.services.$field,
                }
            }

            /// The view over parts held elsewhere (a unit test's).
            #[cfg(test)]
            pub(crate) fn over(
                core: &'a mut $crate::capabilities::CallCore,
                state: &'a mut State,
                services: &'a Services,
            ) -> Self {
                $view { core, state, services }
            }
        }

        impl wasmtime::component::HasData for $view<'static> {
            type Data<'a> = $view<'a>;
        }

        impl $crate::contract::bindings::omni::operator::types::Host for $view<'_> {
            fn convert_host_error(
                &mut self,
                err: $crate::contract::HostFailure,
            ) -> wasmtime::Result<$crate::contract::bindings::omni::operator::types::HostError> {
                err.into_answer()
            }
        }

        /// Links this interface's host functions to the view of each call's scope.
        pub(super) fn link<T: $crate::capabilities::HasCallScope>(
            linker: &mut wasmtime::component::Linker<T>,
        ) -> wasmtime::Result<()> {
            use $interface as interface;
            interface::add_to_linker::<T, $view<'static>>(linker, |state: &mut T| {
                $view::of(state.call_scope())
            })
        }
    };
}
use capability_view;

/// The capability side of one call's store: the call's core, each capability's state for it, and the services
/// that answer. Made fresh for every call and dropped with it.
pub struct CallScope {
    pub(crate) core: CallCore,
    states: CallStates,
    services: HostServices,
}

impl CallScope {
    pub(crate) fn new(
        plugin: Arc<str>,
        grants: Arc<Grants>,
        services: HostServices,
        secret_fields: Arc<[SecretField]>,
    ) -> Self {
        CallScope {
            core: CallCore::new(plugin, grants, secret_fields),
            states: CallStates::default(),
            services,
        }
    }
}

impl HostServices {
    /// Serves `kube-read`, and the OmniConnection reads of `omni`, from `kube`; `kube-write` resolves kinds
    /// through it.
    pub fn with_kube(mut self, kube: Arc<dyn KubeReader>) -> Self {
        self.kube_read.reader = kube.clone();
        self.kube_write.kinds = kube.clone();
        self.omni.reader = kube;
        self
    }

    /// Serves `kube-write`'s writes through `writer`.
    pub fn with_kube_writer(mut self, writer: Arc<dyn KubeWriter>) -> Self {
        self.kube_write.writer = writer;
        self
    }

    /// `kube-write`'s ledger for this call: the runtime passes the one every call of the plugin's loaded version
    /// shares (its rate budget and what it applied last).
    pub(crate) fn with_write_ledger(mut self, ledger: Arc<WriteLedger>) -> Self {
        self.kube_write.ledger = ledger;
        self
    }

    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock.clock = clock;
        self
    }

    /// The clock every capability and WASI's wall clock read.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock.clock
    }

    pub fn with_omni(mut self, omni: Arc<OmniConnections>) -> Self {
        self.omni.connections = omni;
        self
    }

    /// Serves `secrets`, `workload`, the Secret side of `omni.export-kubeconfig` and Helm's workload clusters
    /// through this client.
    pub fn with_management(
        mut self,
        client: kube::Client,
        workloads: Arc<WorkloadClients>,
    ) -> Self {
        let cluster = Management::new(client, workloads);
        self.secrets.cluster = cluster.clone();
        self.omni.cluster = cluster.clone();
        self.workload.cluster = cluster.clone();
        self.helm.cluster = cluster;
        self
    }

    pub fn with_helm(mut self, helm: HelmSettings) -> Self {
        self.helm.config = helm;
        self
    }

    /// Lets plugins granted `files` read under these directories and any directory inside them.
    pub fn with_template_roots<I, P>(mut self, roots: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<std::path::PathBuf>,
    {
        self.files.roots = TemplateRoots::new(roots);
        self
    }

    /// Replaces the template roots (the operator's `--template-root`).
    pub fn set_template_roots(&mut self, roots: TemplateRoots) {
        self.files.roots = roots;
    }
}
