//! What a plugin may ask of the host during a call: one module per WIT interface, each with its grant check at
//! the top. A module implements its interface's host trait on a view of its own (`OmniCap`, `KubeReadCap`, …)
//! over [`CallScope`], the capability side of one call's store, and links it with bindgen's per-interface
//! `add_to_linker` ([`link`] lists them). State a capability keeps for one call (the Omni clients it resolved)
//! is a type of its module, held in the scope.
//!
//! Every host function takes the per-call `call-context` handle, so it knows the object, namespace, deadline
//! and grants of the call it serves. Interfaces whose real implementation comes later are linked anyway and
//! answer `host-error::unavailable`, so a plugin built against the full contract degrades instead of trapping.
//!
//! Layering: capabilities use [`crate::contract`] and the Omni and Secret clients; the runtime uses the
//! capabilities; nothing here uses the runtime.

mod budget;
mod clock;
mod context;
mod denial;
mod files;
mod helm;
mod kube_read;
mod kube_write;
mod omni;
mod reach;
mod secrets;
mod workload;

use std::sync::Arc;

use wasmtime::component::{Linker, ResourceTable};

use crate::contract::bindings::omni::operator::types as wit_types;
use crate::omni::OmniConnections;
use crate::secrets::WorkloadClients;

pub use crate::contract::{
    BoxFuture, CallContext, CallObject, Capability, Condition, ConditionStatus, Denial, Event,
    EventType, FieldSelector, FieldSelectorError, GetRequest, GrantError, Grants, HostError,
    HostFailure, KindScope, KubeReader, ListRequest, LogLevel, LogLine, LogSource, MAX_DENIALS,
    NoKubeReader, OutputBounds, Outputs, PLUGIN_LOG_TARGET, SecretField, is_secret, truncate,
};
pub use clock::{Clock, FixedClock, SystemClock, rfc3339_seconds};
pub use files::{MAX_FILE_BYTES, TemplateRoots};
pub use helm::{
    ActionBudget, ChartSources, HelmServices, MAX_VALUES_BYTES, STARTS_PER_CALL, TargetNamespaces,
};

pub(crate) use clock::ClockCap;
pub(crate) use context::ContextCap;
pub(crate) use files::FilesCap;
pub(crate) use helm::HelmCap;
pub(crate) use kube_read::KubeReadCap;
pub(crate) use omni::OmniCap;
pub(crate) use secrets::SecretsCap;
pub(crate) use workload::WorkloadCap;

/// A store's data that carries a call's [`CallScope`]: what the capabilities are linked against.
pub trait HasCallScope: Send + 'static {
    fn call_scope(&mut self) -> &mut CallScope;
}

/// Links every contract interface into `linker`, each through its own `add_to_linker` and view. Which of them a
/// plugin may use is decided by its imports and grants at load, and by each function's grant check.
pub fn link<T: HasCallScope>(linker: &mut Linker<T>) -> anyhow::Result<()> {
    use anyhow::Context as _;
    type Link<T> = fn(&mut Linker<T>) -> wasmtime::Result<()>;
    let interfaces: [(&str, Link<T>); 10] = [
        ("types", link_types),
        ("context", context::link),
        ("kube-read", kube_read::link),
        ("kube-write", kube_write::link),
        ("secrets", secrets::link),
        ("omni", omni::link),
        ("workload", workload::link),
        ("helm", helm::link),
        ("files", files::link),
        ("clock", clock::link),
    ];
    for (name, link) in interfaces {
        link(linker)
            .map_err(anyhow::Error::from)
            .with_context(|| format!("linking the {name} interface"))?;
    }
    Ok(())
}

/// `types` has no functions, only the types the others share; it is linked as the world's bindings link it.
fn link_types<T: HasCallScope>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    wit_types::add_to_linker::<T, ContextCap<'static>>(linker, |state: &mut T| {
        ContextCap(state.call_scope())
    })
}

/// Declares a capability's view of the call: a type of the capability's own that derefs to the [`CallScope`],
/// answers the contract's `host-error` conversion, and is linked by the interface's own `add_to_linker`.
macro_rules! capability_view {
    ($(#[$doc:meta])* $view:ident, $interface:path) => {
        $(#[$doc])*
        pub(crate) struct $view<'a>(pub(crate) &'a mut $crate::capabilities::CallScope);

        impl std::ops::Deref for $view<'_> {
            type Target = $crate::capabilities::CallScope;
            fn deref(&self) -> &Self::Target {
                self.0
            }
        }

        impl std::ops::DerefMut for $view<'_> {
            fn deref_mut(&mut self) -> &mut Self::Target {
                self.0
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
                $view(state.call_scope())
            })
        }
    };
}
use capability_view;

/// The capability side of one call's store: who is calling with what grants, the services that answer, the
/// resource table holding the call's `call-context`, and what the call was refused. Made fresh for every call
/// and dropped with it.
pub struct CallScope {
    pub(crate) plugin: Arc<str>,
    pub(crate) grants: Arc<Grants>,
    pub(crate) services: HostServices,
    /// The fields of the reconciled object that name the Secrets this plugin may reach (from `describe`).
    pub(crate) secret_fields: Arc<[SecretField]>,
    pub(crate) table: ResourceTable,
    /// Capability calls refused during this call (the first [`MAX_DENIALS`]); the caller reports them.
    pub(crate) denials: Vec<Denial>,
    /// Refusals beyond those, counted.
    pub(crate) denials_dropped: usize,
    /// The `omni` capability's state for this call.
    omni: omni::CallState,
    /// The `helm` capability's state for this call.
    helm: helm::CallState,
}

impl CallScope {
    pub(crate) fn new(
        plugin: Arc<str>,
        grants: Arc<Grants>,
        services: HostServices,
        secret_fields: Arc<[SecretField]>,
    ) -> Self {
        CallScope {
            plugin,
            grants,
            services,
            secret_fields,
            table: ResourceTable::new(),
            denials: Vec::new(),
            denials_dropped: 0,
            omni: omni::CallState::default(),
            helm: helm::CallState::default(),
        }
    }
}

/// The host's side of the capabilities, supplied by the caller for each call: the controllers pass their watch
/// caches and the real clock, tests pass fakes.
#[derive(Clone)]
pub struct HostServices {
    pub kube: Arc<dyn KubeReader>,
    pub clock: Arc<dyn Clock>,
    /// Omni clients by connection, shared by every call.
    pub omni: Arc<OmniConnections>,
    /// Directories `files` may read under (the operator's `--template-root`). Empty: every file read is denied.
    pub template_roots: TemplateRoots,
    /// The management cluster, for `secrets` and the Secret writes of `omni.export-kubeconfig` (uncached: a
    /// decision to overwrite or rotate must not rest on a stale copy). None: those calls answer `unavailable`.
    pub management: Option<kube::Client>,
    /// Workload-cluster clients by kubeconfig Secret version, shared by every call.
    pub workloads: Arc<WorkloadClients>,
    /// Helm releases converged in the background, the chart sources allowed, and the wake-ups of objects
    /// whose action ended. By default no Helm: every `helm` call that needs an action answers `unavailable`.
    pub helm: HelmServices,
}

impl Default for HostServices {
    /// No Kubernetes behind `kube-read` (every read answers `unavailable`), no template roots (every file read
    /// is denied) and the system clock: enough for `describe`, `validate` and plugins that read nothing.
    fn default() -> Self {
        HostServices {
            kube: Arc::new(NoKubeReader),
            clock: Arc::new(SystemClock),
            omni: Arc::new(OmniConnections::default()),
            template_roots: TemplateRoots::default(),
            management: None,
            workloads: Arc::default(),
            helm: HelmServices::default(),
        }
    }
}

impl HostServices {
    pub fn with_kube(mut self, kube: Arc<dyn KubeReader>) -> Self {
        self.kube = kube;
        self
    }

    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    pub fn with_omni(mut self, omni: Arc<OmniConnections>) -> Self {
        self.omni = omni;
        self
    }

    /// Serves `secrets`, `workload` and the Secret side of `omni.export-kubeconfig` through this client.
    pub fn with_management(
        mut self,
        client: kube::Client,
        workloads: Arc<WorkloadClients>,
    ) -> Self {
        self.management = Some(client);
        self.workloads = workloads;
        self
    }

    pub fn with_helm(mut self, helm: HelmServices) -> Self {
        self.helm = helm;
        self
    }

    /// Lets plugins granted `files` read under these directories and any directory inside them.
    pub fn with_template_roots<I, P>(mut self, roots: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<std::path::PathBuf>,
    {
        self.template_roots = TemplateRoots::new(roots);
        self
    }
}
