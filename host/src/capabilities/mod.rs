//! What a plugin may ask of the host during a call: one module per WIT interface, each with its grant check at
//! the top, all implemented on [`CallScope`], the capability side of one call's store.
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
mod kube_read;
mod omni;
mod secrets;
mod unavailable;
mod workload;

use std::collections::HashMap;
use std::sync::Arc;

use wasmtime::component::ResourceTable;

use crate::contract::bindings::omni::operator::types as wit_types;
use crate::omni::{OmniClient, OmniConnections};
use crate::secrets::WorkloadClients;

pub use crate::contract::{
    BoxFuture, CallContext, CallObject, Capability, Condition, ConditionStatus, Denial, Event,
    EventType, FieldSelector, FieldSelectorError, GetRequest, GrantError, Grants, HostError,
    HostFailure, KindScope, KubeReader, ListRequest, LogLevel, LogLine, LogSource, MAX_DENIALS,
    NoKubeReader, OutputBounds, Outputs, PLUGIN_LOG_TARGET, SecretField, is_secret, truncate,
};
pub use clock::{Clock, FixedClock, SystemClock, rfc3339_seconds};
pub use files::{MAX_FILE_BYTES, TemplateRoots};

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
    /// Omni clients this call resolved, by connection name: the connection and its Secret are read once per call.
    omni_clients: HashMap<String, Arc<OmniClient>>,
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
            omni_clients: HashMap::new(),
        }
    }
}

/// `types` has no functions; its host trait turns a capability's failure into the plugin's answer or a trap.
impl wit_types::Host for CallScope {
    fn convert_host_error(&mut self, err: HostFailure) -> wasmtime::Result<wit_types::HostError> {
        err.into_answer()
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
