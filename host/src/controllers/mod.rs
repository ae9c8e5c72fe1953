//! One kube-runtime controller per kind a loaded plugin reconciles, over dynamic objects. The host owns the
//! bookkeeping around every plugin call: finalizers before the first side effect, status through
//! the status subresource only when it changed, conditions with observedGeneration and transition times,
//! Events, requeue-after and error backoff, a per-reconcile deadline, and bounded concurrency per kind.

pub mod finalizers;
pub mod hub;
pub mod metrics;
pub mod notify;
pub mod object;
pub mod own_writes;
pub mod reader;
pub mod scope;
pub mod status;
pub mod supervisor;
pub mod trigger;
pub mod writer;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use futures::StreamExt;
use kube::api::{Api, Patch, PatchParams};
use kube::core::ApiResource;
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::events::{Event, EventType as KubeEventType, Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};

use crate::capabilities::{
    CallObject, Clock, Denial, EventType, HelmSettings, HostServices, KubeReader, KubeWriter,
    SystemClock, TemplateRoots, rfc3339_seconds,
};
use crate::omni::OmniConnections;
use crate::runtime::throttle;
use crate::runtime::{
    CallError, ErrorKind, KindKey, LoadedPlugin, PluginRegistry, ReconcileError, RelatedMapping,
};
use object::CachedObject;
use reader::ApiReader;

/// Settings shared by every kind's controller.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The namespaces watched (`--namespace a,b` / `POD_NAMESPACE`, or every one).
    pub namespaces: scope::Namespaces,
    /// A shard's label selector (`--watch-label-selector`): only objects of the served kinds it matches are
    /// reconciled. Related objects and reads are not filtered: a shard's objects may name objects of any shard.
    pub shard: Option<String>,
    /// The deadline of one whole reconcile, host I/O included.
    pub reconcile_timeout: Duration,
    /// Reconciles of one kind running at once.
    pub concurrency: u16,
    /// The longest an object waits for its next try after failing again and again (`--max-retry-delay`).
    pub max_retry_delay: Duration,
    /// Field manager and Event reporter name.
    pub manager: String,
    /// Omni clients, pooled across every reconcile of every kind.
    pub omni: Arc<OmniConnections>,
    /// Directories plugins granted `files` may read (`--template-root`).
    pub template_roots: TemplateRoots,
    /// The watches every controller shares: one per kind and namespace scope.
    pub watches: Arc<hub::WatchHub>,
    /// Workload-cluster clients, kept per kubeconfig Secret version across every reconcile.
    pub workloads: Arc<crate::secrets::WorkloadClients>,
    /// What plugins read as the current time (`clock.now`); tests move it to reach rotation times.
    pub clock: Arc<dyn Clock>,
    /// Helm: the releases converged in a worker process, the chart sources allowed, and the wake-ups a
    /// finished action sends to the controller of the object that asked.
    pub helm: HelmSettings,
    /// Prometheus metrics under controller-runtime's names and the host's own counters (`/metrics`); what
    /// tests and benchmarks read ([`metrics::Metrics::total`]).
    pub metrics: Arc<metrics::Metrics>,
    /// An annotation new objects of some kinds are given (`--deletion-protection-default`).
    pub new_object_annotation: Option<NewObjectAnnotation>,
    /// Where Events are forwarded besides the API server (`--events-addr`: Flux's notification-controller).
    pub events_forwarder: Option<Arc<notify::Forwarder>>,
}

/// An annotation a new object of one of `kinds` is given in the patch that adds its finalizer, before its
/// plugin's first side effect, unless the object sets the annotation itself. New means it carries no finalizer
/// of the plugin yet: objects created before the setting, or under the Go operator, are left as they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewObjectAnnotation {
    /// (group, kind).
    pub kinds: Vec<(String, String)>,
    pub key: String,
    pub value: String,
}

impl NewObjectAnnotation {
    /// The annotations to add to `obj` (its kind one of `kinds`, the key absent), or None.
    fn for_object(&self, obj: &CachedObject) -> Option<Value> {
        let types = obj.types.as_ref()?;
        let group = types.api_version.split_once('/').map_or("", |(g, _)| g);
        let ours = self
            .kinds
            .iter()
            .any(|(g, k)| g == group && *k == types.kind);
        let set = obj
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(&self.key));
        (ours && !set).then(|| json!({ self.key.clone(): self.value.clone() }))
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            namespaces: scope::Namespaces::All,
            shard: None,
            reconcile_timeout: Duration::from_secs(30),
            concurrency: DEFAULT_CONCURRENCY,
            max_retry_delay: DEFAULT_MAX_RETRY_DELAY,
            manager: "omni-operator".into(),
            omni: Arc::default(),
            template_roots: TemplateRoots::default(),
            watches: Arc::default(),
            workloads: Arc::default(),
            clock: Arc::new(SystemClock),
            helm: HelmSettings::default(),
            metrics: Arc::default(),
            new_object_annotation: None,
            events_forwarder: None,
        }
    }
}

/// Reconciles of one kind at once, chosen by the clusters benchmark (1,000 clusters, one run each at 1, 4, 8 and
/// 16: 15.5, 9.8, 8.5 and 7.6 s to all Synced, and 12.0, 7.5, 6.7 and 6.1 ms of host CPU per cluster, for 4 MiB
/// more peak memory at 16 than at 4). Plugin calls stay bounded by the runtime's own limit across all kinds.
pub const DEFAULT_CONCURRENCY: u16 = 16;

/// The cap on the backoff between tries of an object that keeps failing. controller-runtime caps it at 1000 s and
/// Flux at 15 min; the chaos run (an Omni that fails 4% of calls and goes down now and then, for ten minutes) drove
/// clusters that failed a dozen times in a row to backoffs of five minutes and more, so a fleet took that long to
/// recover after the faults ended. Two minutes bounds the recovery after any outage, for one try every two minutes
/// of an object that stays broken.
pub const DEFAULT_MAX_RETRY_DELAY: Duration = Duration::from_secs(120);

/// The soonest a plugin may ask to be called again: `requeue-after 0` must not become a busy loop.
pub const MIN_REQUEUE: Duration = Duration::from_secs(1);

/// The soonest a reconcile turned away by a quota is tried again.
const QUOTA_RETRY: Duration = Duration::from_millis(100);

/// How soon an object whose status write met a newer version is reconciled again.
const CONFLICT_RETRY: Duration = Duration::from_secs(1);

/// The condition that reports capability calls the plugin's grants refused.
const DENIED_CONDITION: &str = "CapabilityDenied";

/// What every reconcile of one kind shares.
struct Shared {
    client: kube::Client,
    registry: Arc<PluginRegistry>,
    /// The kind; which plugin serves an object is asked of the registry per call (namespace routes, swaps).
    kind: KindKey,
    resource: ApiResource,
    settings: Settings,
    reader: Arc<ApiReader>,
    /// `kube-write`'s writes, uncached.
    writer: Arc<writer::ApiWriter>,
    recorder: Recorder,
    /// Consecutive failures per object, for exponential backoff.
    failures: Mutex<HashMap<ObjectRef<CachedObject>, u32>>,
    /// Per-object rate limits on status writes and Events.
    status_writes: throttle::Throttle,
    events: throttle::Throttle,
    /// The last status write and any deferred one, per object.
    own_writes: own_writes::OwnWrites,
    metrics: metrics::ControllerMetrics,
}

/// Runs the controllers of every kind the registry serves until `shutdown` resolves, starting and stopping them
/// as kinds come and go ([`supervisor`]).
pub fn spawn_all(
    client: &kube::Client,
    registry: &Arc<PluginRegistry>,
    settings: &Settings,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + Clone + 'static,
) -> Vec<tokio::task::JoinHandle<Result<()>>> {
    let (client, registry, settings) = (client.clone(), registry.clone(), settings.clone());
    vec![tokio::spawn(async move {
        supervisor::supervise(client, registry, settings, shutdown).await
    })]
}

/// Runs the controller of one kind until `shutdown` resolves. `related` are the kinds whose changes map to its
/// objects, from every plugin that may serve it.
pub async fn run_kind_controller(
    client: kube::Client,
    registry: Arc<PluginRegistry>,
    gvk: crate::runtime::Gvk,
    related: Vec<crate::runtime::RelatedKind>,
    settings: Settings,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) -> Result<()> {
    let reader = Arc::new(
        ApiReader::new(client.clone())
            .sharing(settings.watches.clone(), settings.namespaces.clone()),
    );
    let (resource, _) = &*reader
        .resolve(&gvk.api_version(), &gvk.kind)
        .await
        .map_err(|e| anyhow::anyhow!("kind {}: {e}", gvk.kind))?;
    let shared = Arc::new(Shared {
        client: client.clone(),
        registry,
        kind: KindKey::new(&gvk.group, &gvk.kind),
        resource: resource.clone(),
        settings: settings.clone(),
        // Reads go through the shared watches' caches, which apply an event before any controller sees it:
        // a reconcile an event triggers never reads an older copy than that event.
        writer: Arc::new(writer::ApiWriter::new(reader.clone())),
        reader,
        recorder: Recorder::new(
            client.clone(),
            Reporter {
                controller: settings.manager.clone(),
                instance: None,
            },
        ),
        failures: Mutex::new(HashMap::new()),
        status_writes: throttle::Throttle::status_writes(),
        events: throttle::Throttle::events(),
        own_writes: own_writes::OwnWrites::default(),
        metrics: settings.metrics.controller(&gvk.kind, settings.concurrency),
    });
    run_kind(shared, related, shutdown).await
}

/// Reconciled objects whose field at `path` names `related` (same namespace), from the watch's index.
fn name_field_matches(
    watch: &hub::WatchHandle,
    ar: &ApiResource,
    path: &str,
    related: &CachedObject,
) -> Vec<ObjectRef<CachedObject>> {
    let ns = related.namespace();
    watch
        .select(path, &related.name_any())
        .iter()
        .filter(|o| o.namespace() == ns)
        .map(|o| ObjectRef::from_obj_with(o.as_ref(), ar.clone()))
        .collect()
}

async fn run_kind(
    shared: Arc<Shared>,
    related: Vec<crate::runtime::RelatedKind>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) -> Result<()> {
    let namespaces = &shared.settings.namespaces;
    let watches = &shared.settings.watches;
    let everything = scope::Scope::of(namespaces);
    let served = scope::Scope {
        labels: shared.settings.shard.clone(),
        ..everything.clone()
    };
    let main = watches.subscribe(&shared.client, &shared.resource, &served);
    let (main_watch, store) = (main.watch.clone(), main.watch.store().clone());
    // A shard's watch holds only its own objects: plugins reading the kind must see every one.
    if served.labels.is_none() {
        shared
            .reader
            .register_cache(&shared.resource, namespaces.clone(), main_watch.clone());
    }
    let queue = shared.metrics.clone();
    let main = trigger::spec_or_deletion_changes(main.stream()).inspect(move |event| {
        if let Ok(obj) = event {
            queue.added(&object_key(obj));
        }
    });
    let mut controller = Controller::for_stream_with(main, store.clone(), shared.resource.clone())
        .with_config(ControllerConfig::default().concurrency(shared.settings.concurrency));
    for rel in related {
        // A related kind the API server does not serve costs this kind its trigger from it, not its controller:
        // one plugin's bad declaration must not stop every namespace's reconciles.
        let rel_ar = match shared
            .reader
            .resolve(&rel.kind.api_version(), &rel.kind.kind)
            .await
        {
            Ok(found) => found,
            Err(e) => {
                tracing::error!(kind = %shared.kind, related = %rel.kind.kind, error = %e, "a related kind is not served; its changes will not trigger reconciles");
                continue;
            }
        };
        let (rel_ar, _) = &*rel_ar;
        // The related kind's watch also feeds the cache plugins read it from.
        let rel_watch = watches.subscribe(&shared.client, rel_ar, &everything);
        shared
            .reader
            .register_cache(rel_ar, namespaces.clone(), rel_watch.watch.clone());
        let events = match rel.mapping {
            RelatedMapping::Owner => trigger::every_change(rel_watch.stream()).boxed(),
            _ => trigger::spec_or_deletion_changes(rel_watch.stream()).boxed(),
        };
        let main_ar = shared.resource.clone();
        let main_watch = main_watch.clone();
        // Which objects a related change asks for is known only inside each mapping: the work queue's adds are
        // counted there.
        let queue = shared.metrics.clone();
        let added = move |refs: Vec<ObjectRef<CachedObject>>| {
            for r in &refs {
                queue.added(&ref_key(r));
            }
            refs
        };
        controller = match rel.mapping {
            RelatedMapping::NameField(path) => controller.watches_stream_with(
                events,
                move |o: CachedObject| added(name_field_matches(&main_watch, &main_ar, &path, &o)),
                rel_ar.clone(),
            ),
            RelatedMapping::NamedBy(path) => controller.watches_stream_with(
                events,
                move |o: CachedObject| {
                    let target = hub::field_text(&o, &path).filter(|name| !name.is_empty());
                    added(
                        target
                            .map(|name| {
                                let mut rf = ObjectRef::new_with(&name, main_ar.clone());
                                if let Some(ns) = o.namespace() {
                                    rf = rf.within(&ns);
                                }
                                rf
                            })
                            .into_iter()
                            .collect(),
                    )
                },
                rel_ar.clone(),
            ),
            RelatedMapping::Annotated {
                namespace_annotation,
                name_annotation,
            } => controller.watches_stream_with(
                events,
                move |o: CachedObject| {
                    let annotations = o.annotations();
                    let Some(name) = annotations.get(&name_annotation).filter(|n| !n.is_empty())
                    else {
                        return Vec::new();
                    };
                    let ns = annotations
                        .get(&namespace_annotation)
                        .filter(|n| !n.is_empty())
                        .cloned()
                        .or_else(|| o.namespace());
                    let mut rf = ObjectRef::new_with(name, main_ar.clone());
                    if let Some(ns) = ns {
                        rf = rf.within(&ns);
                    }
                    added(vec![rf])
                },
                rel_ar.clone(),
            ),
            RelatedMapping::Owner => controller.watches_stream_with(
                events,
                move |o: CachedObject| {
                    let ns = o.namespace();
                    added(
                        o.owner_references()
                            .iter()
                            .filter(|r| {
                                r.controller == Some(true)
                                    && r.kind == main_ar.kind
                                    && r.api_version.split('/').next()
                                        == main_ar.api_version.split('/').next()
                            })
                            .map(|r| {
                                let mut rf = ObjectRef::new_with(&r.name, main_ar.clone());
                                if let Some(ns) = &ns {
                                    rf = rf.within(ns);
                                }
                                rf
                            })
                            .collect::<Vec<_>>(),
                    )
                },
                rel_ar.clone(),
            ),
        };
    }
    // A swapped plugin version (or a changed binding) re-evaluates every object of the kind, not only the next
    // one to change.
    let swaps = {
        let (queue, store) = (shared.metrics.clone(), store.clone());
        futures::stream::unfold(
            shared.registry.subscribe_kind(&shared.kind),
            |mut rx| async move { rx.changed().await.ok().map(|_| ((), rx)) },
        )
        .inspect(move |_| {
            for obj in store.state() {
                queue.added(&object_key(&obj));
            }
        })
    };
    // Objects a capability asks to see again at once (a Helm action it started has ended).
    let woken = {
        let rx = shared
            .settings
            .helm
            .wakeups
            .register(&shared.resource.group, &shared.resource.kind);
        let (ar, queue) = (shared.resource.clone(), shared.metrics.clone());
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|t| (t, rx)) }).map(
            move |(ns, name)| {
                let rf = ObjectRef::new_with(&name, ar.clone());
                let rf = match ns {
                    Some(ns) => rf.within(&ns),
                    None => rf,
                };
                queue.added(&ref_key(&rf));
                rf
            },
        )
    };
    controller
        .reconcile_all_on(swaps)
        .reconcile_on(woken)
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, shared)
        .for_each(|r| async move {
            if let Err(e) = r {
                tracing::debug!(error = %e, "controller event");
            }
        })
        .await;
    Ok(())
}

/// Errors that reach kube-runtime's error policy.
#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error("{0}")]
    Call(#[from] CallError),
    #[error("{0}")]
    Kube(#[from] kube::Error),
    #[error("reconcile of {0} exceeded its deadline")]
    Deadline(String),
    #[error("{0}")]
    Encode(#[from] serde_json::Error),
}

/// What a reconcile asks for next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    AwaitChange,
    After(Duration),
}

/// One reconcile, measured: its time, its outcome and (for a requeue) when the object rejoins the queue.
async fn reconcile(obj: Arc<CachedObject>, shared: Arc<Shared>) -> Result<Action, Failure> {
    let key = object_key(&obj);
    let started = shared.metrics.started(&key);
    let result = reconcile_once(obj, &shared).await;
    match &result {
        Ok(Next::AwaitChange) => started.finished(metrics::Outcome::Success),
        Ok(Next::After(d)) => {
            started.finished(metrics::Outcome::RequeueAfter);
            shared.metrics.requeued(&key, *d, false);
        }
        // error_policy records the retry.
        Err(_) => started.finished(metrics::Outcome::Error),
    }
    result.map(|next| match next {
        Next::AwaitChange => Action::await_change(),
        Next::After(d) => Action::requeue(d),
    })
}

async fn reconcile_once(obj: Arc<CachedObject>, shared: &Arc<Shared>) -> Result<Next, Failure> {
    // The plugin is looked up per call, so a hot swap or a new binding takes over at the next reconcile, and
    // the call finishes on the version it started with.
    let uid = obj.uid().unwrap_or_default();
    let Some(plugin) = shared
        .registry
        .serving(&shared.kind, obj.namespace().as_deref(), &uid)
    else {
        // Nothing serves the kind here any more (its last binding went); the supervisor stops this controller.
        return Ok(Next::AwaitChange);
    };
    // A tenant over its quota is asked again shortly, without taking a worker while it waits.
    if let Err(wait) = plugin.admit(std::time::Instant::now()) {
        shared.metrics.count(metrics::Count::QuotaDeferred, 1);
        return Ok(Next::After(wait.max(QUOTA_RETRY)));
    }
    shared.metrics.count(metrics::Count::PluginCalls, 1);
    let Some(mut obj) = latest(obj, shared).await? else {
        return Ok(Next::AwaitChange);
    };
    let who = object_key(&obj);
    let deadline = shared.settings.reconcile_timeout;
    let action =
        match tokio::time::timeout(deadline, reconcile_inner(&mut obj, shared, &plugin)).await {
            Ok(r) => r,
            Err(_) => Err(Failure::Deadline(who.clone())),
        };
    match &action {
        Ok(_) => {
            shared
                .failures
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&ObjectRef::from_obj_with(
                    obj.as_ref(),
                    shared.resource.clone(),
                ));
        }
        Err(e) => {
            shared.metrics.count(metrics::Count::PluginCallFailures, 1);
            report_failure(&obj, shared, plugin.name(), e).await
        }
    }
    action
}

/// The copy of `obj` to reconcile: the cache's, unless the cache has not yet shown this controller's last status
/// write, then the API server's (None once the object is gone).
async fn latest(
    obj: Arc<CachedObject>,
    shared: &Shared,
) -> Result<Option<Arc<CachedObject>>, Failure> {
    let key = own_key(&obj);
    if !shared
        .own_writes
        .lags(&key, obj.resource_version().as_deref())
    {
        return Ok(Some(obj));
    }
    shared.metrics.count(metrics::Count::FreshReads, 1);
    let api = Api::<CachedObject>::namespaced_with(
        shared.client.clone(),
        &obj.namespace().unwrap_or_default(),
        &shared.resource,
    );
    let fresh = api.get_opt(&obj.name_any()).await?;
    match &fresh {
        // Recreated under the same name: the copy read is another object's.
        Some(o) if o.uid() != obj.uid() => shared.own_writes.forget(&key),
        Some(_) => shared.own_writes.read_fresh(&key),
        None => shared.own_writes.forget(&key),
    }
    Ok(fresh.map(Arc::new))
}

/// The key of an object's own writes: its name and uid, so an object recreated under the same name never
/// inherits what was deferred for the one before.
fn own_key(obj: &CachedObject) -> String {
    format!("{}#{}", object_key(obj), obj.uid().unwrap_or_default())
}

/// The object as the plugin sees it: stored, with a status the rate limit deferred in place of the stored one.
fn call_input(obj: &CachedObject, shared: &Shared) -> Result<Value, serde_json::Error> {
    let mut json = obj.to_json()?;
    let stored = json.get("status").cloned().unwrap_or(Value::Null);
    if let Some(deferred) = shared.own_writes.deferred_over(&own_key(obj), &stored)
        && let Some(fields) = json.as_object_mut()
    {
        fields.insert("status".into(), deferred);
    }
    Ok(json)
}

async fn reconcile_inner(
    obj: &mut Arc<CachedObject>,
    shared: &Shared,
    plugin: &LoadedPlugin,
) -> Result<Next, Failure> {
    let info = plugin.info().clone();
    let api = Api::<CachedObject>::namespaced_with(
        shared.client.clone(),
        &obj.namespace().unwrap_or_default(),
        &shared.resource,
    );
    let current = obj.finalizers().to_vec();
    let (finalizer, legacy) = (info.finalizer.as_deref(), info.legacy_finalizers.as_slice());
    let mut services = HostServices::default()
        .with_kube(shared.reader.clone() as Arc<dyn KubeReader>)
        .with_kube_writer(shared.writer.clone() as Arc<dyn KubeWriter>)
        .with_omni(shared.settings.omni.clone())
        .with_management(shared.client.clone(), shared.settings.workloads.clone())
        .with_clock(shared.settings.clock.clone())
        .with_helm(shared.settings.helm.clone());
    services.set_template_roots(shared.settings.template_roots.clone());

    if obj.meta().deletion_timestamp.is_some() {
        if !finalizers::held(&current, finalizer, legacy) {
            return Ok(Next::AwaitChange);
        }
        let json = call_input(obj, shared)?;
        let call_obj = CallObject::new(json.to_string(), obj.namespace());
        let done = plugin.finalize(&call_obj, &services).await?;
        let settled = commit(obj, shared, plugin.name(), &json, &done.outputs).await?;
        if done.value {
            let kept = finalizers::after_cleanup(&current, finalizer, legacy);
            // Over the version the status write just made, when it made one.
            let version = settled.written.or_else(|| obj.resource_version());
            let patch = json!({"metadata": {"finalizers": kept, "resourceVersion": version}});
            api.patch(
                &obj.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await?;
            shared.own_writes.forget(&own_key(obj));
            return Ok(Next::AwaitChange);
        }
        let asked = done.outputs.requeue_after.or(Some(Duration::from_secs(10)));
        return Ok(requeue(shared, asked, settled.requeue));
    }

    if let Some(next) = finalizers::to_add(&current, finalizer, legacy) {
        // Before the plugin's first side effect, so a deletion can never skip its cleanup.
        let mut patch =
            json!({"metadata": {"finalizers": next, "resourceVersion": obj.resource_version()}});
        // With the finalizer, so a default protection is in place before anything remote exists to protect.
        if let Some(annotations) = shared
            .settings
            .new_object_annotation
            .as_ref()
            .and_then(|a| a.for_object(obj))
        {
            patch["metadata"]["annotations"] = annotations;
        }
        let patched = api
            .patch(
                &obj.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await?;
        // Status is written over this version, not the one read before the finalizer.
        *obj = Arc::new(patched);
    }

    let json = call_input(obj, shared)?;
    let call_obj = CallObject::new(json.to_string(), obj.namespace());
    let done = plugin.reconcile(&call_obj, &services).await?;
    let settled = commit(obj, shared, plugin.name(), &json, &done.outputs).await?;
    Ok(requeue(shared, done.outputs.requeue_after, settled.requeue))
}

/// The next reconcile: what the plugin asked for, never sooner than [`MIN_REQUEUE`], and no later than a
/// status write the rate limit deferred.
fn requeue(shared: &Shared, asked: Option<Duration>, deferred: Option<Duration>) -> Next {
    let asked = asked.map(|d| {
        if d < MIN_REQUEUE {
            shared.metrics.count(metrics::Count::RequeuesRaised, 1);
        }
        d.max(MIN_REQUEUE)
    });
    match (asked, deferred.map(|d| d.max(MIN_REQUEUE))) {
        (Some(a), Some(d)) => Next::After(a.min(d)),
        (Some(t), None) | (None, Some(t)) => Next::After(t),
        (None, None) => Next::AwaitChange,
    }
}

/// Writes what a successful call produced: status (only when changed) and Events, each within the object's
/// rate limit, plus the report of any capability the plugin was denied. Returns how long until a status write
/// the rate limit deferred may happen.
async fn commit(
    obj: &CachedObject,
    shared: &Shared,
    plugin: &str,
    json: &Value,
    outputs: &crate::capabilities::Outputs,
) -> Result<Settled, Failure> {
    let key = object_key(obj);
    let mut conditions = outputs.conditions.clone();
    let mut events: Vec<Event> = outputs.events.iter().map(kube_event).collect();
    let (condition, event) = denial_report(
        shared,
        plugin,
        json,
        &outputs.denials,
        outputs.denials_dropped,
    );
    conditions.extend(condition);
    events.extend(event);
    let settled = settle_status(obj, shared, json, &outputs.status, &conditions).await?;
    publish(obj, shared, &key, events).await;
    Ok(settled)
}

/// Writes the status `fields` and `conditions` make of `json`'s (the status the call started from), unless it
/// is what is stored. The write is conditional on the object's resourceVersion, so a reconcile that started
/// from an older copy never overwrites a newer status. Returns how long until the object should be reconciled
/// again because the write was deferred by the rate limit or met a newer version, and the resourceVersion a
/// write produced. A status not written (deferred, refused, failed) is kept for the next reconcile to start from,
/// as long as the stored status stays the one it was computed from: counts kept in status are never lost.
async fn settle_status(
    obj: &CachedObject,
    shared: &Shared,
    json: &Value,
    fields: &serde_json::Map<String, Value>,
    conditions: &[crate::capabilities::Condition],
) -> Result<Settled, kube::Error> {
    let now = rfc3339_seconds(std::time::SystemTime::now());
    let (key, own) = (object_key(obj), own_key(obj));
    let stored = obj.field("status").unwrap_or(Value::Null);
    let next = status::next_status(json, fields, conditions, &now)
        .unwrap_or_else(|| json.get("status").cloned().unwrap_or(Value::Null));
    if next == stored {
        shared.own_writes.settled(&own);
        return Ok(Settled::default());
    }
    if let Err(wait) = shared.status_writes.take(&key, std::time::Instant::now()) {
        shared
            .metrics
            .count(metrics::Count::StatusWritesDeferred, 1);
        tracing::debug!(object = %key, "status write deferred by the per-object rate limit");
        shared.own_writes.defer(&own, stored, next);
        return Ok(Settled {
            requeue: Some(wait),
            written: None,
        });
    }
    match write_status(obj, shared, next.clone()).await {
        Ok(rv) => {
            shared.own_writes.wrote(&own, rv.clone());
            Ok(Settled {
                requeue: None,
                written: rv,
            })
        }
        Err(e) if status_refused(&e) => {
            // The API server refused the status itself (the CRD's schema, a malformed field): it is not kept as
            // the next reconcile's input, so the failure is reported over the stored status, which is valid, and
            // the next good reconcile starts clean.
            shared.own_writes.settled(&own);
            Err(e)
        }
        Err(e) => {
            shared.own_writes.defer(&own, stored, next);
            if let kube::Error::Api(status) = &e
                && status.code == 409
            {
                shared.metrics.count(metrics::Count::StatusConflicts, 1);
                tracing::debug!(object = %key, "status write met a newer version of the object; reconciling again");
                return Ok(Settled {
                    requeue: Some(CONFLICT_RETRY),
                    written: None,
                });
            }
            Err(e)
        }
    }
}

/// Whether the API server refused a status write for what it held (400 Bad Request, 422 Invalid), not for when
/// or where it was sent.
fn status_refused(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 400 || s.code == 422)
}

/// How a status write went.
#[derive(Debug, Default)]
struct Settled {
    /// Reconcile again this soon (the write was deferred, or met a newer version).
    requeue: Option<Duration>,
    /// The resourceVersion the write produced.
    written: Option<String>,
}

/// Publishes Events on the object, each within its rate limit (the rest are counted as dropped), with the note
/// and reason cut to the API's limits (events.k8s.io/v1: a note of at most 1 KiB, a reason of at most 128), so a
/// long failure message still makes an Event.
async fn publish(obj: &CachedObject, shared: &Shared, key: &str, events: Vec<Event>) {
    for mut ev in events {
        if let Some(note) = ev.note.as_mut() {
            crate::contract::truncate(note, crate::contract::MAX_EVENT_MESSAGE);
        }
        crate::contract::truncate(&mut ev.reason, crate::contract::MAX_EVENT_REASON);
        if shared.events.take(key, std::time::Instant::now()).is_err() {
            shared.metrics.count(metrics::Count::EventsDropped, 1);
            continue;
        }
        if let Err(err) = shared
            .recorder
            .publish(&ev, &obj.object_ref(&shared.resource))
            .await
        {
            tracing::warn!(error = %err, "could not publish an event");
        }
        if let Some(forwarder) = &shared.settings.events_forwarder {
            let object = obj.to_json().unwrap_or(Value::Null);
            forwarder.send(
                &object,
                (&shared.resource.api_version, &shared.resource.kind),
                &shared.settings.manager,
                notify::Note {
                    warning: ev.type_ == KubeEventType::Warning,
                    reason: &ev.reason,
                    message: ev.note.as_deref().unwrap_or_default(),
                },
            );
        }
    }
}

/// The report of the capability calls one completed call was denied: a `CapabilityDenied=True` condition and a
/// Warning Event naming the first and counting the rest (counted in the metrics too), or, with none, the
/// condition turned False if it was True.
fn denial_report(
    shared: &Shared,
    plugin: &str,
    object: &Value,
    denials: &[Denial],
    dropped: usize,
) -> (Option<crate::capabilities::Condition>, Option<Event>) {
    let Some(first) = denials.first() else {
        let cleared = status::condition_is(object, DENIED_CONDITION, "True").then(|| {
            status::host_condition(
                DENIED_CONDITION,
                false,
                "NoDenials",
                format!("plugin {plugin:?} made no denied capability call in its last reconcile"),
            )
        });
        return (cleared, None);
    };
    let denied = denials.len() + dropped;
    shared.metrics.count(metrics::Count::Denials, denied as u64);
    let more = if denied > 1 {
        format!(" (and {} more in the same call)", denied - 1)
    } else {
        String::new()
    };
    let message = format!("{}{more}", first.message(plugin));
    let condition =
        status::host_condition(DENIED_CONDITION, true, "CapabilityDenied", message.clone());
    let event = Event {
        type_: KubeEventType::Warning,
        reason: "CapabilityDenied".into(),
        note: Some(message),
        action: "Reconcile".into(),
        secondary: None,
    };
    (Some(condition), Some(event))
}

fn kube_event(e: &crate::capabilities::Event) -> Event {
    Event {
        type_: match e.type_ {
            EventType::Warning => KubeEventType::Warning,
            EventType::Normal => KubeEventType::Normal,
        },
        reason: e.reason.clone(),
        note: Some(e.message.clone()),
        action: "Reconcile".into(),
        secondary: None,
    }
}

/// `namespace/name`, the key of an object's rate limits and work-queue entry.
fn object_key(obj: &CachedObject) -> String {
    format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any())
}

/// [`object_key`] of a reference.
fn ref_key(r: &ObjectRef<CachedObject>) -> String {
    format!("{}/{}", r.namespace.as_deref().unwrap_or_default(), r.name)
}

/// Replaces the status of `obj` as of its resourceVersion; answers the resourceVersion written.
async fn write_status(
    obj: &CachedObject,
    shared: &Shared,
    status: Value,
) -> Result<Option<String>, kube::Error> {
    let api = Api::<CachedObject>::namespaced_with(
        shared.client.clone(),
        &obj.namespace().unwrap_or_default(),
        &shared.resource,
    );
    // Replacing the whole status keeps removed fields removed; the status subresource leaves spec alone. A
    // resourceVersion in the patched object is a precondition: the API server answers 409 Conflict when the
    // stored object is newer.
    let mut patch = vec![json!({"op": "add", "path": "/status", "value": status})];
    if let Some(rv) = obj.resource_version() {
        patch.push(json!({"op": "add", "path": "/metadata/resourceVersion", "value": rv}));
    }
    let written = api
        .patch_status(
            &obj.name_any(),
            &PatchParams::default(),
            &Patch::<()>::Json(
                serde_json::from_value(Value::Array(patch)).map_err(kube::Error::SerdeError)?,
            ),
        )
        .await?;
    Ok(written.resource_version())
}

/// Failures become a condition, an Event and a log line naming the plugin; the other objects keep being served.
async fn report_failure(obj: &CachedObject, shared: &Shared, plugin: &str, failure: &Failure) {
    let (reason, message) = match failure {
        Failure::Call(CallError::Failed {
            plugin,
            error: ReconcileError::Transient(m) | ReconcileError::Permanent(m),
            ..
        }) => ("ReconcileFailed", format!("plugin {plugin:?}: {m}")),
        Failure::Call(CallError::Aborted(e)) => (plugin_reason(e.kind()), e.to_string()),
        Failure::Deadline(_) => ("ReconcileTimeout", format!("plugin {plugin:?}: {failure}")),
        Failure::Kube(e @ kube::Error::Api(s)) if status_refused(e) => (
            "StatusRefused",
            format!(
                "the API server refused the status plugin {plugin:?} returned: {}",
                s.message
            ),
        ),
        other => ("ReconcileFailed", format!("plugin {plugin:?}: {other}")),
    };
    tracing::warn!(%plugin, object = %object_key(obj), reason, "{message}");
    let json = call_input(obj, shared).unwrap_or(Value::Null);
    let mut conditions = vec![status::host_condition(
        "Ready",
        false,
        reason,
        message.clone(),
    )];
    let mut events = vec![Event {
        type_: KubeEventType::Warning,
        reason: reason.into(),
        note: Some(message),
        action: "Reconcile".into(),
        secondary: None,
    }];
    // A plugin that fails because a capability was denied gets the same report as one that succeeds anyway.
    // (An aborted call's denials are only logged: the runtime drops everything a trapped call buffered.)
    if let Failure::Call(CallError::Failed {
        denials,
        denials_dropped,
        ..
    }) = failure
    {
        let (condition, event) = denial_report(shared, plugin, &json, denials, *denials_dropped);
        conditions.extend(condition);
        events.extend(event);
    }
    // A deferred or conflicting write is left to the retry, which reports the failure again if it persists.
    if let Err(e) = settle_status(obj, shared, &json, &serde_json::Map::new(), &conditions).await {
        tracing::warn!(error = %e, "could not record the failure in status");
    }
    publish(obj, shared, &object_key(obj), events).await;
}

fn plugin_reason(kind: ErrorKind) -> &'static str {
    kind.reason()
}

/// The wait before the next try after `failures` failures in a row: 5 ms doubling (controller-runtime's
/// per-object backoff), capped at `max`.
pub fn retry_delay(failures: u32, max: Duration) -> Duration {
    Duration::from_millis(5u64.saturating_mul(1u64 << failures.min(30))).min(max)
}

/// Exponential backoff per object ([`retry_delay`]), except for permanent plugin errors, which wait for a change
/// to the object.
fn error_policy(obj: Arc<CachedObject>, failure: &Failure, shared: Arc<Shared>) -> Action {
    if matches!(
        failure,
        Failure::Call(CallError::Failed {
            error: ReconcileError::Permanent(_),
            ..
        })
    ) {
        return Action::await_change();
    }
    let key = ObjectRef::from_obj_with(obj.as_ref(), shared.resource.clone());
    let mut failures = shared.failures.lock().unwrap_or_else(|p| p.into_inner());
    let n = failures.entry(key).or_insert(0);
    *n = n.saturating_add(1);
    let backoff = retry_delay(*n, shared.settings.max_retry_delay);
    drop(failures);
    shared.metrics.requeued(&object_key(&obj), backoff, true);
    Action::requeue(backoff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_object_annotation_goes_to_its_kinds_only_and_never_over_the_objects_own() {
        let rule = NewObjectAnnotation {
            kinds: vec![("omni.texashpc.com".into(), "OmniCluster".into())],
            key: "omni.texashpc.com/deletion-protection".into(),
            value: "enabled".into(),
        };
        let object = |api_version: &str, kind: &str, annotations: Value| -> CachedObject {
            serde_json::from_value(json!({"apiVersion": api_version, "kind": kind,
                "metadata": {"name": "x", "annotations": annotations}}))
            .expect("an object")
        };
        let api = "omni.texashpc.com/v1alpha1";
        assert_eq!(
            rule.for_object(&object(api, "OmniCluster", json!({"other": "a"}))),
            Some(json!({"omni.texashpc.com/deletion-protection": "enabled"}))
        );
        let own = json!({"omni.texashpc.com/deletion-protection": "disabled"});
        assert_eq!(rule.for_object(&object(api, "OmniCluster", own)), None);
        assert_eq!(
            rule.for_object(&object(api, "OmniWorkers", json!({}))),
            None
        );
        assert_eq!(
            rule.for_object(&object("other.example/v1", "OmniCluster", json!({}))),
            None
        );
    }

    #[test]
    fn retries_back_off_from_five_milliseconds_doubling_up_to_the_cap() {
        let cap = DEFAULT_MAX_RETRY_DELAY;
        assert_eq!(retry_delay(0, cap), Duration::from_millis(5));
        assert_eq!(retry_delay(1, cap), Duration::from_millis(10));
        assert_eq!(retry_delay(14, cap), Duration::from_millis(81_920));
        // controller-runtime's 15th try would wait 164 s, its 18th 1000 s: the cap holds from the 15th.
        assert_eq!(retry_delay(15, cap), cap);
        assert_eq!(retry_delay(u32::MAX, cap), cap);
        assert_eq!(
            retry_delay(40, Duration::from_secs(1000)),
            Duration::from_secs(1000),
            "no overflow past the shift's limit"
        );
    }
}
