//! Workload-cluster clients, one per kubeconfig Secret version: a reconcile that finds the Secret unchanged
//! reuses the client (and its connection pool); a rotated kubeconfig gets a new client on its next use.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{client_config, get, quoted};
use crate::contract::HostError;
use crate::dry_run::KubeWrites;

/// Beyond this many cached clients the cache starts over, so Secrets that come and go cannot grow it forever.
const MAX_CLIENTS: usize = 1024;

/// (namespace, name, key, the user impersonated or empty) → (the Secret's resourceVersion, the client built from
/// that version, and the kubeconfig itself for the Helm worker, which builds its own client from it).
type Cache = HashMap<(String, String, String, String), (String, kube::Client, Arc<str>)>;

#[derive(Default)]
pub struct WorkloadClients {
    clients: Mutex<Cache>,
    /// A plan's: the clients made here send their writes as recorded dry runs.
    plan: Option<Arc<KubeWrites>>,
}

impl std::fmt::Debug for WorkloadClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkloadClients")
            .field("clients", &self.len())
            .finish()
    }
}

impl WorkloadClients {
    /// Clients for a plan: their writes are dry runs recorded in `writes`.
    pub fn planning(writes: Arc<KubeWrites>) -> Self {
        WorkloadClients {
            clients: Mutex::default(),
            plan: Some(writes),
        }
    }

    /// The client for the kubeconfig under `key` of the management-cluster Secret `namespace/name`, read
    /// uncached through `management`.
    pub async fn client(
        &self,
        management: &kube::Client,
        namespace: &str,
        name: &str,
        key: &str,
    ) -> Result<kube::Client, HostError> {
        Ok(self.access(management, namespace, name, key, None).await?.0)
    }

    /// The client, and the kubeconfig it was built from (for Helm, which must be handed the kubeconfig itself;
    /// it stays in the host and the Helm worker). With `as_user`, the client impersonates that user
    /// (`Impersonate-User`), as the kubeconfig's identity allows.
    pub async fn access(
        &self,
        management: &kube::Client,
        namespace: &str,
        name: &str,
        key: &str,
        as_user: Option<&str>,
    ) -> Result<(kube::Client, Arc<str>), HostError> {
        let what = format!("kubeconfig Secret {}", quoted(namespace, name));
        let secret = get(management, "", namespace, name)
            .await?
            .ok_or_else(|| HostError::NotFound(format!("{what} does not exist")))?;
        let bytes = secret
            .data
            .as_ref()
            .and_then(|d| d.get(key))
            .map(|v| v.0.as_slice())
            .unwrap_or_default();
        if bytes.is_empty() {
            return Err(HostError::NotFound(format!(
                "{what} does not contain key {key:?}"
            )));
        }
        let version = secret.metadata.resource_version.clone().unwrap_or_default();
        let id = (
            namespace.to_string(),
            name.to_string(),
            key.to_string(),
            as_user.unwrap_or_default().to_string(),
        );
        if let Some((v, client, kubeconfig)) = self.lock().get(&id)
            && *v == version
        {
            return Ok((client.clone(), kubeconfig.clone()));
        }
        let mut config = client_config(bytes, &format!("{what} key {key:?}")).await?;
        if let Some(user) = as_user {
            config.auth_info.impersonate = Some(user.to_string());
        }
        let kubeconfig: Arc<str> = std::str::from_utf8(bytes)
            .map_err(|_| {
                HostError::Invalid(format!("{what} key {key:?}: the kubeconfig is not UTF-8"))
            })?
            .into();
        let client = match &self.plan {
            Some(writes) => writes.client(config, &format!("{namespace}/{name}")),
            None => kube::Client::try_from(config),
        };
        let client = client.map_err(|e| {
            HostError::Invalid(format!(
                "{what} key {key:?}: cannot build a client: {}",
                e.to_string().lines().next().unwrap_or_default()
            ))
        })?;
        let mut cache = self.lock();
        if cache.len() >= MAX_CLIENTS {
            cache.clear();
        }
        cache.insert(id, (version, client.clone(), kubeconfig.clone()));
        Ok((client, kubeconfig))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.clients.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Clients held now (tests read it to see reuse).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
