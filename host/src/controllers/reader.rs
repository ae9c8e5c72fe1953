//! `kube-read` for plugins. Kinds the controllers already watch (the reconciled and the related kinds) are
//! answered from those watches' caches; anything else goes to the API. Kinds are resolved by discovery once.
//! Field selectors are applied before objects reach the plugin: against the cache here, or by the API server.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use kube::api::{Api, ListParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::{self, Scope};
use kube::runtime::reflector::ObjectRef;
use serde_json::Value;

use super::hub::{WatchHandle, WatchHub, field_text};
use super::object::CachedObject;
use super::scope::{self, Namespaces};
use crate::capabilities::{
    BoxFuture, FieldSelector, GetRequest, HostError, KindScope, KubeReader, ListRequest,
};

/// A resolved kind: its resource and whether it is namespaced.
pub type ResolvedKind = Arc<(ApiResource, bool)>;

/// A watch cache a controller maintains, and the namespaces it covers.
struct Cache {
    watch: WatchHandle,
    resource: ApiResource,
    namespaces: Namespaces,
}

/// Reads through a `kube::Client`, from watch caches where there are some.
pub struct ApiReader {
    client: kube::Client,
    /// (apiVersion, kind) → resolved kind.
    kinds: RwLock<HashMap<(String, String), ResolvedKind>>,
    caches: RwLock<HashMap<(String, String), Arc<Cache>>>,
    /// The operator's shared watches, for kinds whose watch another kind's controller keeps (a Secret kind A does
    /// not relate to, but kind B does), over these namespaces.
    others: Option<(Arc<WatchHub>, Namespaces)>,
}

/// How long a read waits for a cache's first list before asking the API instead.
const CACHE_READY_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl ApiReader {
    pub fn new(client: kube::Client) -> Self {
        ApiReader {
            client,
            kinds: RwLock::new(HashMap::new()),
            caches: RwLock::new(HashMap::new()),
            others: None,
        }
    }

    /// Also serves reads from any of `hub`'s watches of every object in `namespaces` while some controller keeps
    /// one, as the API server would answer them, without a request. The Omni connection's Secret, read on every
    /// reconcile that calls Omni, is the case in point: the kinds that relate to Secrets watch them anyway.
    pub fn sharing(mut self, hub: Arc<WatchHub>, namespaces: Namespaces) -> Self {
        self.others = Some((hub, namespaces));
        self
    }

    /// Serves reads of `resource`'s kind in `namespaces` from `watch` from now on (a watch of every object of the
    /// kind there, never a shard's).
    pub fn register_cache(
        &self,
        resource: &ApiResource,
        namespaces: Namespaces,
        watch: WatchHandle,
    ) {
        let key = (resource.api_version.clone(), resource.kind.clone());
        let mut caches = self.caches.write().unwrap_or_else(|p| p.into_inner());
        caches.entry(key).or_insert_with(|| {
            Arc::new(Cache {
                watch,
                resource: resource.clone(),
                namespaces,
            })
        });
    }

    /// The cache for a kind when it covers `namespace` and has finished its first list.
    async fn cache_for(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
    ) -> Option<Arc<Cache>> {
        let own = self
            .caches
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(api_version.to_string(), kind.to_string()))
            .cloned();
        let cache = match own {
            Some(cache) => cache,
            None => self.running_elsewhere(api_version, kind)?,
        };
        if !cache.namespaces.covers(namespace) {
            return None;
        }
        match tokio::time::timeout(CACHE_READY_WAIT, cache.watch.store().wait_until_ready()).await {
            Ok(Ok(())) => Some(cache),
            _ => None,
        }
    }

    /// Another controller's watch of every object of the kind, while it runs.
    fn running_elsewhere(&self, api_version: &str, kind: &str) -> Option<Arc<Cache>> {
        let (hub, namespaces) = self.others.as_ref()?;
        // Only a kind this reader has resolved before: resolving here would ask discovery twice for a kind that
        // is not served (the API read that follows asks again, and reports why). The first read of a kind goes to
        // the API and resolves it.
        let resolved = self.resolved(api_version, kind)?;
        let (resource, _) = &*resolved;
        let watch = hub.running(resource, &scope::Scope::of(namespaces))?;
        Some(Arc::new(Cache {
            watch,
            resource: resource.clone(),
            namespaces: namespaces.clone(),
        }))
    }

    /// A kind this reader has resolved before, without asking discovery.
    fn resolved(&self, api_version: &str, kind: &str) -> Option<ResolvedKind> {
        self.kinds
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(api_version.to_string(), kind.to_string()))
            .cloned()
    }

    /// The resource for an apiVersion and kind, and whether it is namespaced.
    pub async fn resolve(&self, api_version: &str, kind: &str) -> Result<ResolvedKind, HostError> {
        if let Some(hit) = self.resolved(api_version, kind) {
            return Ok(hit);
        }
        let key = (api_version.to_string(), kind.to_string());
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (ar, caps) = discovery::pinned_kind(&self.client, &gvk)
            .await
            .map_err(|e| HostError::NotFound(format!("{api_version} {kind} is not served: {e}")))?;
        let entry = Arc::new((ar, caps.scope == Scope::Namespaced));
        self.kinds
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, entry.clone());
        Ok(entry)
    }

    fn api(
        &self,
        ar: &ApiResource,
        namespaced: bool,
        namespace: Option<&str>,
    ) -> Api<CachedObject> {
        match (namespaced, namespace) {
            (true, Some(ns)) => Api::namespaced_with(self.client.clone(), ns, ar),
            _ => Api::all_with(self.client.clone(), ar),
        }
    }

    /// The API of a kind, resolved by discovery, in `namespace` (ignored for a cluster-scoped kind).
    pub async fn api_of(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
    ) -> Result<Api<CachedObject>, HostError> {
        let resolved = self.resolve(api_version, kind).await?;
        let (resource, namespaced) = &*resolved;
        Ok(self.api(resource, *namespaced, namespace))
    }

    /// One object straight from the API server, never from a cache; `None` when it does not exist.
    pub(super) async fn get_uncached(
        &self,
        request: &GetRequest,
    ) -> Result<Option<Value>, HostError> {
        let api = self
            .api_of(
                &request.api_version,
                &request.kind,
                request.namespace.as_deref(),
            )
            .await?;
        match api.get_opt(&request.name).await {
            Ok(found) => found.as_ref().map(to_json).transpose(),
            Err(e) => Err(HostError::from_kube(
                &format!("get {} {:?}", request.kind, request.name),
                e,
            )),
        }
    }
}

pub(super) fn to_json(o: &CachedObject) -> Result<Value, HostError> {
    o.to_json()
        .map_err(|e| HostError::Other(format!("encoding an object: {e}")))
}

/// Whether a cached object is selected. Only the fields a selector names are looked at, so filtering a cache of
/// a thousand objects does not serialise a thousand objects.
fn selected(selector: &FieldSelector, o: &CachedObject) -> bool {
    selector.matches_by(|path| field_text(o, path))
}

/// The API server's answer to a field it cannot select on: a custom resource's field its CRD does not declare in
/// `selectableFields` (or any such field before Kubernetes 1.31), or a built-in kind's field outside its list.
fn unsupported_field(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 400
        && (s.message.starts_with("field label not supported") || s.message.contains("is not a known field selector")))
}

impl KubeReader for ApiReader {
    fn kind_scope<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
    ) -> BoxFuture<'a, Result<KindScope, HostError>> {
        Box::pin(async move {
            let resolved = self.resolve(api_version, kind).await?;
            let (resource, namespaced) = &*resolved;
            Ok(KindScope {
                group: resource.group.clone(),
                kind: resource.kind.clone(),
                namespaced: *namespaced,
            })
        })
    }

    fn get(&self, request: GetRequest) -> BoxFuture<'_, Result<Option<Value>, HostError>> {
        Box::pin(async move {
            if let Some(cache) = self
                .cache_for(
                    &request.api_version,
                    &request.kind,
                    request.namespace.as_deref(),
                )
                .await
            {
                let mut key = ObjectRef::new_with(&request.name, cache.resource.clone());
                if let Some(ns) = &request.namespace {
                    key = key.within(ns);
                }
                return cache
                    .watch
                    .store()
                    .get(&key)
                    .map(|o| to_json(&o))
                    .transpose();
            }
            self.get_uncached(&request).await
        })
    }

    fn list(&self, request: ListRequest) -> BoxFuture<'_, Result<Vec<Value>, HostError>> {
        Box::pin(async move {
            // Label selectors go to the API: the server parses them exactly as it does for everyone.
            if request.label_selector.is_none()
                && let Some(cache) = self
                    .cache_for(
                        &request.api_version,
                        &request.kind,
                        request.namespace.as_deref(),
                    )
                    .await
            {
                let ns = request.namespace.clone();
                let fields = request.field_selector.as_ref();
                // An equality term is answered from the watch's index; the other terms filter what it finds.
                let candidates = match fields.and_then(FieldSelector::equality) {
                    Some((path, value)) => cache.watch.select(path, value),
                    None => cache.watch.store().state(),
                };
                let mut items: Vec<Arc<CachedObject>> = candidates
                    .into_iter()
                    .filter(|o| ns.is_none() || o.metadata.namespace == ns)
                    .filter(|o| fields.is_none_or(|f| selected(f, o)))
                    .collect();
                items.sort_by(|a, b| {
                    (&a.metadata.namespace, &a.metadata.name)
                        .cmp(&(&b.metadata.namespace, &b.metadata.name))
                });
                return items.into_iter().map(|o| to_json(&o)).collect();
            }
            let kind = self.resolve(&request.api_version, &request.kind).await?;
            let api = self.api(&kind.0, kind.1, request.namespace.as_deref());
            let failed = |e| HostError::from_kube(&format!("list {}", request.kind), e);
            let mut params = ListParams::default();
            if let Some(sel) = &request.label_selector {
                params = params.labels(sel);
            }
            let Some(fields) = &request.field_selector else {
                let list = api.list(&params).await.map_err(failed)?;
                return list.items.iter().map(to_json).collect();
            };
            match api.list(&params.clone().fields(&fields.to_string())).await {
                Ok(list) => list.items.iter().map(to_json).collect(),
                // The kind's CRD does not declare the field selectable (or the server predates selectable
                // fields): the selector still holds, applied here instead of by the server.
                Err(e) if unsupported_field(&e) => {
                    let list = api.list(&params).await.map_err(failed)?;
                    list.items
                        .iter()
                        .filter(|o| selected(fields, o))
                        .map(to_json)
                        .collect()
                }
                Err(e) => Err(failed(e)),
            }
        })
    }
}
