//! The part of a call every capability shares ([`CallCore`]): who is calling with what grants, the resource
//! table holding the call's `call-context`, what the call was refused, and the rules built on them that more than
//! one capability applies (the time host I/O may take, [`budget`]; how a refusal is reported, [`denial`]; which
//! names reach a Secret, [`reach`]). Capabilities build on this module and never on each other.

pub(super) mod budget;
mod denial;
pub(super) mod reach;
pub(super) mod secret_types;
#[cfg(test)]
pub(super) mod testing;

use std::sync::Arc;

use wasmtime::component::ResourceTable;

use super::{Denial, Grants, HostError, SecretField};
use crate::secrets::WorkloadClients;

/// The capability-independent side of one call: made fresh for every call and dropped with it.
pub struct CallCore {
    pub(crate) plugin: Arc<str>,
    pub(crate) grants: Arc<Grants>,
    /// The fields of the reconciled object that name the Secrets this plugin may reach (from `describe`).
    pub(crate) secret_fields: Arc<[SecretField]>,
    pub(crate) table: ResourceTable,
    /// Capability calls refused during this call (the first [`super::MAX_DENIALS`]); the caller reports them.
    pub(crate) denials: Vec<Denial>,
    /// Refusals beyond those, counted.
    pub(crate) denials_dropped: usize,
}

impl CallCore {
    pub(crate) fn new(
        plugin: Arc<str>,
        grants: Arc<Grants>,
        secret_fields: Arc<[SecretField]>,
    ) -> Self {
        CallCore {
            plugin,
            grants,
            secret_fields,
            table: ResourceTable::new(),
            denials: Vec::new(),
            denials_dropped: 0,
        }
    }
}

/// The management cluster as the capabilities that reach Secrets through it hold it: the client (uncached: a
/// decision to overwrite or rotate must not rest on a stale copy) and the workload-cluster clients built from the
/// kubeconfig Secrets it stores, shared by every call. Each such capability keeps its own copy in its services.
#[derive(Clone, Default)]
pub struct Management {
    client: Option<kube::Client>,
    workloads: Arc<WorkloadClients>,
}

impl std::fmt::Debug for Management {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Management")
            .field("client", &self.client.is_some())
            .finish_non_exhaustive()
    }
}

impl Management {
    pub fn new(client: kube::Client, workloads: Arc<WorkloadClients>) -> Self {
        Management {
            client: Some(client),
            workloads,
        }
    }

    /// The client, or `unavailable` naming `what` on a host without one.
    pub(super) fn client(&self, what: &str) -> Result<kube::Client, HostError> {
        self.client.clone().ok_or_else(|| {
            HostError::Unavailable(format!(
                "{what}: this host has no client for the management cluster"
            ))
        })
    }

    pub(super) fn workloads(&self) -> &Arc<WorkloadClients> {
        &self.workloads
    }
}
