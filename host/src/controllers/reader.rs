//! `kube-read` for plugins, over the Kubernetes API: kinds resolved by discovery once and cached.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use kube::api::{Api, DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::{self, Scope};
use serde_json::Value;

use crate::capabilities::{BoxFuture, GetRequest, HostError, KubeReader, ListRequest};

/// A resolved kind: its resource and whether it is namespaced.
pub type ResolvedKind = Arc<(ApiResource, bool)>;

/// Reads through a `kube::Client`.
pub struct ApiReader {
    client: kube::Client,
    /// (apiVersion, kind) → resolved kind.
    kinds: RwLock<HashMap<(String, String), ResolvedKind>>,
}

impl ApiReader {
    pub fn new(client: kube::Client) -> Self {
        ApiReader { client, kinds: RwLock::new(HashMap::new()) }
    }

    /// The resource for an apiVersion and kind, and whether it is namespaced.
    pub async fn resolve(&self, api_version: &str, kind: &str) -> Result<ResolvedKind, HostError> {
        let key = (api_version.to_string(), kind.to_string());
        if let Some(hit) = self.kinds.read().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(hit.clone());
        }
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (ar, caps) = discovery::pinned_kind(&self.client, &gvk)
            .await
            .map_err(|e| HostError::NotFound(format!("{api_version} {kind} is not served: {e}")))?;
        let entry = Arc::new((ar, caps.scope == Scope::Namespaced));
        self.kinds.write().unwrap_or_else(|p| p.into_inner()).insert(key, entry.clone());
        Ok(entry)
    }

    fn api(&self, ar: &ApiResource, namespaced: bool, namespace: Option<&str>) -> Api<DynamicObject> {
        match (namespaced, namespace) {
            (true, Some(ns)) => Api::namespaced_with(self.client.clone(), ns, ar),
            _ => Api::all_with(self.client.clone(), ar),
        }
    }
}

fn api_error(e: kube::Error) -> HostError {
    match e {
        kube::Error::Api(s) if s.code == 403 => HostError::Denied(s.message),
        kube::Error::Api(s) if s.code == 409 => HostError::Conflict(s.message),
        kube::Error::Api(s) if s.code == 429 || s.code >= 500 => HostError::Unavailable(s.message),
        kube::Error::Api(s) => HostError::Other(s.message),
        other => HostError::Unavailable(other.to_string()),
    }
}

fn to_json(o: DynamicObject) -> Result<Value, HostError> {
    serde_json::to_value(o).map_err(|e| HostError::Other(format!("encoding an object: {e}")))
}

impl KubeReader for ApiReader {
    fn get(&self, request: GetRequest) -> BoxFuture<'_, Result<Option<Value>, HostError>> {
        Box::pin(async move {
            let kind = self.resolve(&request.api_version, &request.kind).await?;
            let api = self.api(&kind.0, kind.1, request.namespace.as_deref());
            match api.get_opt(&request.name).await {
                Ok(Some(o)) => to_json(o).map(Some),
                Ok(None) => Ok(None),
                Err(e) => Err(api_error(e)),
            }
        })
    }

    fn list(&self, request: ListRequest) -> BoxFuture<'_, Result<Vec<Value>, HostError>> {
        Box::pin(async move {
            let kind = self.resolve(&request.api_version, &request.kind).await?;
            let api = self.api(&kind.0, kind.1, request.namespace.as_deref());
            let mut params = ListParams::default();
            if let Some(sel) = &request.label_selector {
                params = params.labels(sel);
            }
            let list = api.list(&params).await.map_err(api_error)?;
            list.items.into_iter().map(to_json).collect()
        })
    }
}
