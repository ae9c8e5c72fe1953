//! One watch per kind and namespace scope, shared by every controller that needs it (as controller-runtime's
//! shared informers are). Without it each controller watching OmniCluster — its own and every child kind's —
//! would hold its own copy of every object and make the API server encode every change once per copy.
//!
//! The shared watch keeps one reflector store (read by the controllers and by `kube-read`) and hands every event
//! to each subscriber after the store has applied it, so a reconcile an event triggers always reads a cache at
//! least as new as that event. Objects are kept without `metadata.managedFields`: nothing the host or a plugin
//! does reads them, and they are often the largest part of an object (controller-runtime strips them the same way).
//! The rest is kept as [`CachedObject`]s: typed metadata, the other fields as JSON text.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use futures::{Stream, StreamExt};
use kube::ResourceExt;
use kube::api::Api;
use kube::core::ApiResource;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::mpsc;

use super::object::CachedObject;
use super::scope::{self, Scope};
use crate::capabilities::FieldSelector;
use crate::contract::field_path;

/// How often an idle watch looks whether anyone still listens.
const SUBSCRIBER_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// A watch event as subscribers receive it (shared, never copied per subscriber).
pub type SharedEvent = Arc<watcher::Event<CachedObject>>;

/// A watch's key: the resource's apiVersion and plural, and the namespaces and labels it covers.
type WatchKey = (String, String, Scope);

/// The shared watches of one operator, keyed by resource and namespace scope.
pub struct WatchHub {
    watches: Mutex<HashMap<WatchKey, Arc<SharedWatch>>>,
    /// Every watch task started, so [`WatchHub::stop`] can wait for them to end.
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Set by [`WatchHub::stop`]: every watch ends now, not at its next subscriber check.
    stopping: tokio::sync::watch::Sender<bool>,
}

impl Default for WatchHub {
    fn default() -> Self {
        WatchHub {
            watches: Mutex::default(),
            tasks: Mutex::default(),
            stopping: tokio::sync::watch::Sender::new(false),
        }
    }
}

impl std::fmt::Debug for WatchHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchHub")
            .field("watches", &lock(&self.watches).len())
            .finish()
    }
}

struct SharedWatch {
    resource: ApiResource,
    store: Store<CachedObject>,
    fanout: Mutex<Fanout>,
    /// Objects by the text at a field path, for the paths anyone has looked objects up by so far.
    indexes: RwLock<HashMap<String, FieldIndex>>,
}

/// The objects of a watch by the text at one field path, kept in step with the store: a thousand reconciles each
/// listing "the children of this cluster" must not each scan every child.
#[derive(Default)]
struct FieldIndex {
    by_value: HashMap<String, HashSet<NameKey>>,
    /// An object's values at the path: one, or several for a path through a list.
    value_of: HashMap<NameKey, Vec<String>>,
}

/// An object of the watch by namespace and name. The index holds every object twice, so it keeps this rather
/// than an `ObjectRef`, which carries the kind's five strings as well: that cost 6 KiB per cluster in the
/// clusters bench.
type NameKey = (Option<String>, String);

fn name_key(o: &CachedObject) -> NameKey {
    (o.metadata.namespace.clone(), o.name_any())
}

impl FieldIndex {
    fn forget(&mut self, key: &NameKey) {
        for old in self.value_of.remove(key).unwrap_or_default() {
            if let Some(set) = self.by_value.get_mut(&old) {
                set.remove(key);
                if set.is_empty() {
                    self.by_value.remove(&old);
                }
            }
        }
    }

    fn record(&mut self, path: &str, o: &CachedObject) {
        let key = name_key(o);
        self.forget(&key);
        let values = field_texts(o, path);
        for value in &values {
            self.by_value
                .entry(value.clone())
                .or_default()
                .insert(key.clone());
        }
        if !values.is_empty() {
            self.value_of.insert(key, values);
        }
    }

    fn build(path: &str, store: &Store<CachedObject>) -> FieldIndex {
        let mut index = FieldIndex::default();
        for o in store.state() {
            index.record(path, &o);
        }
        index
    }
}

/// The texts at a path: through a list ([`field_path`]), every value it reaches; otherwise [`field_text`]'s one.
fn field_texts(o: &CachedObject, path: &str) -> Vec<String> {
    if field_path::through_list(path) {
        let data = o.data_for(path);
        let mut values: Vec<String> = field_path::texts_at(&data, path)
            .into_iter()
            .map(str::to_string)
            .collect();
        values.sort();
        values.dedup();
        values
    } else {
        field_text(o, path).into_iter().collect()
    }
}

/// The text at a dotted field path of an object, as a field selector compares it (strings as they are, numbers
/// and booleans as JSON text, missing or null as `None`). Reads the object in place: nothing is serialised.
pub fn field_text(o: &CachedObject, path: &str) -> Option<String> {
    let Some(rest) = path.strip_prefix("metadata.") else {
        return FieldSelector::value_at(&o.data_for(path), path);
    };
    let m = &o.metadata;
    match rest.split_once('.') {
        None => match rest {
            "name" => m.name.clone(),
            "namespace" => m.namespace.clone(),
            "uid" => m.uid.clone(),
            "generateName" => m.generate_name.clone(),
            "resourceVersion" => m.resource_version.clone(),
            "generation" => m.generation.map(|g| g.to_string()),
            _ => None,
        },
        Some(("labels", key)) => m.labels.as_ref()?.get(key).cloned(),
        Some(("annotations", key)) => m.annotations.as_ref()?.get(key).cloned(),
        Some(_) => None,
    }
}

/// A handle on one shared watch: its store and its field indexes.
#[derive(Clone)]
pub struct WatchHandle(Arc<SharedWatch>);

impl WatchHandle {
    pub fn store(&self) -> &Store<CachedObject> {
        &self.0.store
    }

    /// The cached objects whose field at `path` reads `value`, from an index built on first use.
    pub fn select(&self, path: &str, value: &str) -> Vec<Arc<CachedObject>> {
        let matching = |index: &FieldIndex| -> Vec<NameKey> {
            index
                .by_value
                .get(value)
                .map(|s| s.iter().cloned().collect())
                .unwrap_or_default()
        };
        let known = self
            .0
            .indexes
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(path)
            .map(matching);
        let refs = known.unwrap_or_else(|| {
            let mut indexes = self.0.indexes.write().unwrap_or_else(|p| p.into_inner());
            matching(
                indexes
                    .entry(path.to_string())
                    .or_insert_with(|| FieldIndex::build(path, &self.0.store)),
            )
        });
        refs.into_iter()
            .filter_map(|(namespace, name)| {
                let key = ObjectRef::new_with(&name, self.0.resource.clone());
                self.0.store.get(&match namespace {
                    Some(ns) => key.within(&ns),
                    None => key,
                })
            })
            .collect()
    }
}

#[derive(Default)]
struct Fanout {
    subscribers: Vec<mpsc::UnboundedSender<SharedEvent>>,
    /// The events of a (re)list in progress, for a subscriber that joins before it is done: those objects are
    /// not in the store until the list completes.
    listing: Vec<SharedEvent>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What one subscriber gets: the shared watch and its own stream of events.
pub struct Subscription {
    pub watch: WatchHandle,
    pub events: mpsc::UnboundedReceiver<SharedEvent>,
}

impl Subscription {
    pub fn stream(self) -> impl Stream<Item = SharedEvent> + Send {
        futures::stream::unfold(self.events, |mut rx| async move {
            rx.recv().await.map(|e| (e, rx))
        })
    }
}

impl WatchHub {
    /// Ends every watch now and waits until their tasks are done, so none is left reading from an API server
    /// that goes away next (a shutdown stops the controllers, then the watches, then what they watch). For good:
    /// a watch subscribed to afterwards ends at once, so a hub is stopped only at the end of the operator's run.
    pub async fn stop(&self) {
        self.stopping.send_replace(true);
        let tasks: Vec<_> = lock(&self.tasks).drain(..).collect();
        for task in tasks {
            let _ = task.await;
        }
    }

    /// The watch of `resource` over `scope` while some controller subscribes to it, so that a reader can use its
    /// cache without keeping the watch alive itself: once the last subscriber has gone, the watch stops, its
    /// store goes stale, and this answers None.
    pub fn running(&self, resource: &ApiResource, scope: &Scope) -> Option<WatchHandle> {
        let key = (
            resource.api_version.clone(),
            resource.plural.clone(),
            scope.clone(),
        );
        let watch = lock(&self.watches).get(&key).cloned()?;
        watch.listened_to().then_some(WatchHandle(watch))
    }

    /// Subscribes to the watch of `resource` over `scope`, starting it if nobody watches it yet. A late subscriber
    /// first gets every object already known, as Apply events.
    pub fn subscribe(
        &self,
        client: &kube::Client,
        resource: &ApiResource,
        scope: &Scope,
    ) -> Subscription {
        let key = (
            resource.api_version.clone(),
            resource.plural.clone(),
            scope.clone(),
        );
        let (tx, rx) = mpsc::unbounded_channel();
        let mut watches = lock(&self.watches);
        if let Some(w) = watches.get(&key)
            && w.join(tx.clone())
        {
            return Subscription {
                watch: WatchHandle(w.clone()),
                events: rx,
            };
        }
        let writer = reflector::store::Writer::new(resource.clone());
        let watch = Arc::new(SharedWatch {
            resource: resource.clone(),
            store: writer.as_reader(),
            fanout: Mutex::new(Fanout {
                subscribers: vec![tx],
                listing: Vec::new(),
            }),
            indexes: RwLock::default(),
        });
        watches.insert(key.clone(), watch.clone());
        let config = match &scope.labels {
            Some(labels) => watcher::Config::default().labels(labels),
            None => watcher::Config::default(),
        };
        let watch_of = |api: Api<CachedObject>| -> scope::EventStream<'static> {
            watcher(api, config.clone()).default_backoff().boxed()
        };
        let source = match scope.namespaces.list() {
            None => watch_of(Api::all_with(client.clone(), resource)),
            Some([one]) => watch_of(Api::namespaced_with(client.clone(), one, resource)),
            Some(several) => scope::union(
                several
                    .iter()
                    .map(|ns| {
                        let api = Api::namespaced_with(client.clone(), ns, resource);
                        (ns.clone(), watch_of(api))
                    })
                    .collect(),
                writer.as_reader(),
            )
            .boxed(),
        };
        let what = format!("{}/{}", resource.api_version, resource.plural);
        let handle = WatchHandle(watch.clone());
        let mut stopping = self.stopping.subscribe();
        let task = tokio::spawn(async move {
            let events = source.modify(|o| {
                o.managed_fields_mut().clear();
            });
            let mut events = std::pin::pin!(reflector::reflector(writer, events));
            // The watch ends when its last subscriber has gone (controllers stopped), even if nothing changes.
            let mut check = tokio::time::interval(SUBSCRIBER_CHECK);
            loop {
                tokio::select! {
                    event = events.next() => match event {
                        Some(Ok(event)) => {
                            if let watcher::Event::Delete(o) = &event {
                                tracing::debug!(watch = %what, object = %o.name_any(), "deleted");
                            }
                            if !watch.publish(Arc::new(event)) {
                                break;
                            }
                        }
                        Some(Err(e)) => tracing::warn!(watch = %what, error = %e, "watch failed; retrying with backoff"),
                        None => break,
                    },
                    _ = check.tick() => {
                        if !watch.listened_to() {
                            break;
                        }
                    }
                    _ = stopping.wait_for(|stop| *stop) => break,
                }
            }
            lock(&watch.fanout).subscribers.clear();
        });
        let mut tasks = lock(&self.tasks);
        tasks.retain(|t| !t.is_finished());
        tasks.push(task);
        Subscription {
            watch: handle,
            events: rx,
        }
    }
}

impl SharedWatch {
    /// Adds a subscriber to a running watch, catching it up first; false when the watch has stopped.
    fn join(&self, tx: mpsc::UnboundedSender<SharedEvent>) -> bool {
        let mut fanout = lock(&self.fanout);
        if fanout.subscribers.is_empty() {
            return false;
        }
        for o in self.store.state() {
            let _ = tx.send(Arc::new(watcher::Event::Apply((*o).clone())));
        }
        for e in &fanout.listing {
            let _ = tx.send(e.clone());
        }
        fanout.subscribers.push(tx);
        true
    }

    fn listened_to(&self) -> bool {
        let mut fanout = lock(&self.fanout);
        fanout.subscribers.retain(|tx| !tx.is_closed());
        !fanout.subscribers.is_empty()
    }

    /// Brings the indexes in step with an event the store has applied.
    fn reindex(&self, event: &watcher::Event<CachedObject>) {
        let mut indexes = self.indexes.write().unwrap_or_else(|p| p.into_inner());
        for (path, index) in indexes.iter_mut() {
            match event {
                watcher::Event::Apply(o) => index.record(path, o),
                watcher::Event::Delete(o) => index.forget(&name_key(o)),
                // A relist swaps the whole store at its end.
                watcher::Event::InitDone => *index = FieldIndex::build(path, &self.store),
                watcher::Event::Init | watcher::Event::InitApply(_) => {}
            }
        }
    }

    /// Hands one event to every subscriber, after the indexes have it; false once no subscriber is left.
    fn publish(&self, event: SharedEvent) -> bool {
        self.reindex(&event);
        let mut fanout = lock(&self.fanout);
        match &*event {
            watcher::Event::Init => fanout.listing = vec![event.clone()],
            watcher::Event::InitApply(_) => fanout.listing.push(event.clone()),
            watcher::Event::InitDone => fanout.listing.clear(),
            _ => {}
        }
        fanout
            .subscribers
            .retain(|tx| tx.send(event.clone()).is_ok());
        !fanout.subscribers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn worker(name: &str, cluster: &str) -> CachedObject {
        serde_json::from_value(json!({
            "apiVersion": "omni.texashpc.com/v1alpha1", "kind": "OmniWorkers",
            "metadata": {"name": name, "namespace": "t", "labels": {"cluster": cluster}, "generation": 3},
            "spec": {"clusterRef": {"name": cluster}, "replicas": 2, "paused": null}
        }))
        .expect("object")
    }

    #[test]
    fn field_text_reads_data_and_metadata_in_place() {
        let o = worker("w", "edge");
        assert_eq!(
            field_text(&o, "spec.clusterRef.name").as_deref(),
            Some("edge")
        );
        assert_eq!(
            field_text(&o, "metadata.labels.cluster").as_deref(),
            Some("edge")
        );
        assert_eq!(field_text(&o, "metadata.name").as_deref(), Some("w"));
        assert_eq!(field_text(&o, "metadata.namespace").as_deref(), Some("t"));
        assert_eq!(field_text(&o, "metadata.generation").as_deref(), Some("3"));
        assert_eq!(
            field_text(&o, "spec.replicas").as_deref(),
            Some("2"),
            "numbers compare as their JSON text"
        );
        assert_eq!(field_text(&o, "spec.paused"), None, "null is missing");
        assert_eq!(field_text(&o, "spec.missing.name"), None);
        assert_eq!(field_text(&o, "metadata.annotations.x"), None);
    }

    #[test]
    fn the_index_follows_applies_deletes_and_relists() {
        let ar = ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("omni.texashpc.com", "v1alpha1", "OmniWorkers"),
            "omniworkers",
        );
        let mut writer = reflector::store::Writer::new(ar.clone());
        let watch = WatchHandle(Arc::new(SharedWatch {
            resource: ar.clone(),
            store: writer.as_reader(),
            fanout: Mutex::default(),
            indexes: RwLock::default(),
        }));
        let mut apply = |e: watcher::Event<CachedObject>| {
            writer.apply_watcher_event(&e);
            watch.0.reindex(&e);
        };
        apply(watcher::Event::Init);
        apply(watcher::Event::InitApply(worker("a", "edge")));
        apply(watcher::Event::InitApply(worker("b", "core")));
        apply(watcher::Event::InitDone);
        let names = |v: Vec<Arc<CachedObject>>| {
            let mut n: Vec<String> = v.iter().map(|o| o.name_any()).collect();
            n.sort();
            n
        };
        assert_eq!(
            names(watch.select("spec.clusterRef.name", "edge")),
            ["a"],
            "built from the store on first use"
        );

        apply(watcher::Event::Apply(worker("c", "edge")));
        apply(watcher::Event::Apply(worker("b", "edge")));
        assert_eq!(
            names(watch.select("spec.clusterRef.name", "edge")),
            ["a", "b", "c"],
            "a moved object leaves its old value"
        );
        assert!(watch.select("spec.clusterRef.name", "core").is_empty());

        apply(watcher::Event::Delete(worker("a", "edge")));
        assert_eq!(
            names(watch.select("spec.clusterRef.name", "edge")),
            ["b", "c"]
        );

        apply(watcher::Event::Init);
        apply(watcher::Event::InitApply(worker("d", "edge")));
        apply(watcher::Event::InitDone);
        assert_eq!(
            names(watch.select("spec.clusterRef.name", "edge")),
            ["d"],
            "a relist replaces everything"
        );
    }
}
