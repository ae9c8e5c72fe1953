//! What a plugin may ask of the host during a call: one module per WIT interface, plus the grants that decide
//! which interfaces a plugin may import at all.
//!
//! Every host function takes the per-call `call-context` handle, so it knows the object, namespace, deadline
//! and grants of the call it serves. Interfaces whose real implementation comes later are linked anyway and
//! answer `host-error::unavailable`, so a plugin built against the full contract degrades instead of trapping.

mod clock;
mod context;
mod denial;
mod field_selector;
mod files;
mod grants;
mod host_error;
mod kube_read;
mod omni;
mod outputs;
mod secrets;
mod unavailable;
mod workload;

use std::sync::Arc;

use crate::omni::OmniConnections;
use crate::secrets::WorkloadClients;

pub use clock::{Clock, FixedClock, SystemClock, rfc3339_seconds};
pub use context::{CallContext, CallObject};
pub use field_selector::{FieldSelector, FieldSelectorError};
pub use files::{MAX_FILE_BYTES, TemplateRoots};
pub use grants::{Capability, GrantError, Grants, is_secret};
pub use host_error::HostError;
pub use kube_read::{BoxFuture, GetRequest, KindScope, KubeReader, ListRequest, NoKubeReader};
pub(crate) use outputs::OutputViolation;
pub use outputs::PLUGIN_LOG_TARGET;
pub use outputs::{
    Condition, ConditionStatus, Denial, Event, EventType, LogLevel, LogLine, LogSource,
    MAX_DENIALS, OutputBounds, Outputs, truncate,
};

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
