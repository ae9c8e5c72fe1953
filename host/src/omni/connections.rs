//! From an OmniConnection's name to a ready client: read the connection and its service-account Secret, check
//! the key as the original operator did, and reuse one client (and so one gRPC channel) per endpoint,
//! TLS setting and key. A changed Secret value is a new key, so the next call gets a new channel; clients idle
//! for a while are dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use omni_wire::ServiceAccountKey;
use omni_wire::compression::Dictionary;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::client::OmniClient;
use super::endpoint::Endpoint;
use super::overlay::OmniOverlay;
use super::service_account::{SecretKeyRef, check_secret_value};
use crate::contract::{GetRequest, HostError, KubeReader};

/// Clients unused for this long are closed.
const IDLE: Duration = Duration::from_secs(15 * 60);
/// The Secret key an OmniConnection reads when `serviceAccountSecretRef.key` is blank (the CRD's default).
pub const DEFAULT_SECRET_KEY: &str = "serviceAccountKey";

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct PoolKey {
    endpoint: String,
    insecure: bool,
    key_digest: [u8; 32],
}

struct Pooled {
    client: Arc<OmniClient>,
    last_used: Instant,
}

/// Why a connection could not be set up, by stage, each with the text the Go operator reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupError {
    /// The OmniConnection itself is missing or unreadable.
    Connection(HostError),
    /// The Secret or its key is missing, empty, or not a base64 key (with the Go operator's messages).
    Secret(HostError),
    /// The endpoint URL does not parse, or the TLS set-up failed.
    Client(String),
    /// The key decodes but is not a usable service-account key (Go fails the first RPC this way).
    Key(String),
}

impl SetupError {
    /// The error a plugin sees from any Omni call.
    pub fn into_host_error(self) -> HostError {
        match self {
            SetupError::Connection(e) | SetupError::Secret(e) => e,
            SetupError::Client(m) => HostError::Invalid(format!("create Omni client: {m}")),
            SetupError::Key(m) => HostError::Unauthenticated(m),
        }
    }
}

/// The shared pool of Omni clients.
pub struct OmniConnections {
    clients: Mutex<HashMap<PoolKey, Pooled>>,
    dictionary: Option<Dictionary>,
    /// A plan's overlay: every client made here records its writes there instead of sending them.
    plan: Option<Arc<OmniOverlay>>,
}

impl std::fmt::Debug for OmniConnections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OmniConnections")
            .field("open_clients", &self.open_clients())
            .field("dictionary", &self.dictionary)
            .finish()
    }
}

impl Default for OmniConnections {
    fn default() -> Self {
        Self::new(None)
    }
}

impl OmniConnections {
    /// `dictionary` decompresses content Omni stores compressed; without one such content is reported unreadable.
    pub fn new(dictionary: Option<Dictionary>) -> Self {
        OmniConnections {
            clients: Mutex::new(HashMap::new()),
            dictionary,
            plan: None,
        }
    }

    /// Connections for a plan: reads go to Omni, writes are recorded in `overlay` and never sent.
    pub fn planning(dictionary: Option<Dictionary>, overlay: Arc<OmniOverlay>) -> Self {
        OmniConnections {
            plan: Some(overlay),
            ..Self::new(dictionary)
        }
    }

    /// Clients currently open (for tests and metrics).
    pub fn open_clients(&self) -> usize {
        self.clients.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// The client for OmniConnection `namespace/name`.
    pub async fn resolve(
        &self,
        kube: &dyn KubeReader,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<OmniClient>, SetupError> {
        let connection = kube
            .get(GetRequest {
                api_version: "omni.texashpc.com/v1alpha1".into(),
                kind: "OmniConnection".into(),
                namespace: Some(namespace.into()),
                name: name.into(),
            })
            .await
            .map_err(SetupError::Connection)?
            .ok_or_else(|| {
                SetupError::Connection(HostError::NotFound(format!(
                    "OmniConnection {name:?} not found in namespace {namespace:?}"
                )))
            })?;
        let spec = &connection["spec"];
        let url = spec["endpoint"].as_str().unwrap_or_default();
        let insecure = spec["insecureSkipTLSVerify"].as_bool().unwrap_or(false);
        let secret_ref = &spec["auth"]["serviceAccountSecretRef"];
        let secret_name = secret_ref["name"].as_str().unwrap_or_default().trim();
        let secret_key = match secret_ref["key"].as_str().map(str::trim) {
            Some(key) if !key.is_empty() => key,
            _ => DEFAULT_SECRET_KEY,
        };

        let value = self
            .secret_value(kube, namespace, secret_name, secret_key)
            .await?;
        let endpoint = Endpoint::parse(url).map_err(SetupError::Client)?;
        let pool_key = PoolKey {
            endpoint: endpoint.normalized.clone(),
            insecure,
            key_digest: Sha256::digest(value.as_bytes()).into(),
        };
        let now = Instant::now();
        {
            let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
            clients.retain(|_, pooled| now.duration_since(pooled.last_used) < IDLE);
            if let Some(pooled) = clients.get_mut(&pool_key) {
                pooled.last_used = now;
                return Ok(pooled.client.clone());
            }
        }
        let key = ServiceAccountKey::parse(&value).map_err(|e| SetupError::Key(e.to_string()))?;
        let mut client = OmniClient::new(endpoint, insecure, key, self.dictionary.clone())
            .map_err(SetupError::Client)?;
        if let Some(plan) = &self.plan {
            client = client.planning(plan.clone());
        }
        let client = Arc::new(client);
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        // Two calls may have raced to build the same client; the first one stored wins.
        let pooled = clients.entry(pool_key).or_insert(Pooled {
            client,
            last_used: now,
        });
        Ok(pooled.client.clone())
    }

    /// The trimmed base64 key from the Secret, checked as the Go operator did: the Secret and key exist, the value
    /// is not blank, holds no environment assignments and is base64.
    async fn secret_value(
        &self,
        kube: &dyn KubeReader,
        namespace: &str,
        name: &str,
        key: &str,
    ) -> Result<String, SetupError> {
        let secret = kube
            .get(GetRequest {
                api_version: "v1".into(),
                kind: "Secret".into(),
                namespace: Some(namespace.into()),
                name: name.into(),
            })
            .await
            .map_err(SetupError::Secret)?
            .ok_or_else(|| {
                SetupError::Secret(HostError::NotFound(format!(
                    "MissingSecret {name:?}: secrets {name:?} not found"
                )))
            })?;
        // `data` values are base64 in the API's JSON; a value that is not is treated as absent bytes.
        let raw = match &secret["data"][key] {
            Value::String(encoded) => Some(
                base64::engine::general_purpose::STANDARD
                    .decode(encoded)
                    .unwrap_or_default(),
            ),
            _ => None,
        };
        let at = SecretKeyRef {
            namespace,
            name,
            key,
        };
        check_secret_value(at, raw.as_deref()).map_err(|e| {
            let message = e.to_string();
            SetupError::Secret(match e {
                super::service_account::KeyError::MissingKey { .. } => HostError::NotFound(message),
                _ => HostError::Unauthenticated(message),
            })
        })
    }
}
