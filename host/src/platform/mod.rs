//! The plugin platform: Plugin, PluginBinding and ClusterPluginBinding objects (`plugins.omni.texashpc.com`)
//! turned into the routes the controllers call through.
//!
//! Level-triggered like everything else: any change to the three kinds (and a tick) runs [`Platform::sync`],
//! which, from the objects as they are now:
//! 1. fetches and verifies each Plugin's artifact when its spec changed ([`artifacts`]); a new digest that fails
//!    leaves the previous one serving, reported as `Degraded`;
//! 2. loads each binding's version with its effective grants (requested ∩ ceiling ∩ binding) and quota, which
//!    compiles (cached by digest) and probes it (`describe`, imports against grants) before it serves;
//! 3. resolves conflicts and publishes every route at once ([`bindings`]); only kinds whose routes changed are
//!    re-evaluated, and calls in flight finish on the version they started with;
//! 4. watches a new digest for its rollback window and returns to the previous digest when its failure rate
//!    crosses the Plugin's threshold;
//! 5. writes the objects' status (only when it changed) and Events for swaps, refusals and rollbacks.
//!
//! [`artifacts`] turns a Plugin's spec into verified bytes, [`bindings`] computes effective grants and resolves
//! conflicts, `rollout` decides rollbacks and canary promotions, `report` writes status, usage and Events, and
//! `units` reads quantities and durations.

pub mod artifacts;
pub mod bindings;
mod report;
mod rollout;
mod units;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Result;
use futures::StreamExt;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use omni_api::platform::{FailureRecord, PLATFORM_GROUP, PluginBindingSpec, PluginSpec};

use crate::capabilities::{Grants, rfc3339_seconds};
use crate::distribution::ArtifactCache;
use crate::runtime::{
    CallLimits, KindKey, LoadedPlugin, PluginRegistry, PluginSpec as LoadSpec, Quota, Route,
    Runtime,
};
use artifacts::{Artifact, Refusal};
use bindings::{BindingView, Candidate};

/// How the platform runs.
#[derive(Debug, Clone)]
pub struct PlatformOptions {
    /// Pulled artifacts are kept here, and a pre-seeded cache serves air-gapped clusters (`--plugin-cache`).
    pub cache: Option<ArtifactCache>,
    /// Kinds besides the operator's own that bindings may route (`--allow-kind`); never core kinds.
    pub allowed_kinds: Vec<(String, String)>,
    /// Field manager and Event reporter.
    pub manager: String,
    /// Whether this replica may write the objects' status and Events (the leader's job; a standby only keeps
    /// its routes current for its webhooks).
    pub writes: Arc<std::sync::atomic::AtomicBool>,
    /// Set once a first pass over the Plugins and bindings has published their routes (or the API serves no
    /// such kinds): until then a replica's webhooks and controllers would answer with the built-ins, so it is
    /// not ready.
    pub resolved: Arc<std::sync::atomic::AtomicBool>,
}

impl Default for PlatformOptions {
    fn default() -> Self {
        PlatformOptions {
            cache: None,
            allowed_kinds: Vec::new(),
            manager: "omni-operator".into(),
            // One replica, or the leader: it writes.
            writes: Arc::new(std::sync::atomic::AtomicBool::new(true)),
            resolved: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        }
    }
}

/// A failed fetch is tried again after this long (a registry outage, a signature published late).
const RETRY: Duration = Duration::from_secs(30);
/// How often the platform checks whether time-based work is due (rollback windows, canaries, retries).
const TICK: Duration = Duration::from_secs(1);
/// The longest one artifact fetch (resolve, pull, signatures) may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a new digest is looked at every tick; after that, at the usage cadence.
const CLOSE_WATCH: Duration = Duration::from_secs(600);
/// How often a binding's usage figures are written to its status.
const USAGE_EVERY: Duration = Duration::from_secs(10);
/// Failures kept in a Plugin's status.
const MAX_FAILURES: usize = 10;

/// What the platform knows of one Plugin between syncs.
#[derive(Default)]
struct PluginState {
    /// The artifact-relevant spec last acted on.
    fingerprint: String,
    serving: Option<Arc<Artifact>>,
    previous: Option<Arc<Artifact>>,
    /// Why the wanted artifact is not the one serving (or not serving at all).
    refusal: Option<Refusal>,
    retry_at: Option<Instant>,
    /// Digests rolled back; not served again until the spec changes.
    rolled_back: BTreeSet<String>,
    /// When the serving digest took over from a previous one (its rollback window runs from here).
    swapped_at: Option<Instant>,
    /// A new digest serving part of the objects before it serves all of them.
    canary: Option<Canary>,
    failures: Vec<FailureRecord>,
}

/// A canary in progress.
struct Canary {
    artifact: Arc<Artifact>,
    since: Instant,
}

impl PluginState {
    fn fail(&mut self, digest: Option<String>, refusal: &Refusal) {
        self.failures.insert(
            0,
            FailureRecord {
                time: now(),
                digest,
                reason: refusal.reason.to_string(),
                message: refusal.message.clone(),
            },
        );
        self.failures.truncate(MAX_FAILURES);
    }
}

/// The plugin platform's controller.
pub struct Platform {
    client: kube::Client,
    runtime: Runtime,
    registry: Arc<PluginRegistry>,
    options: PlatformOptions,
    plugins: HashMap<String, PluginState>,
    /// Loaded versions by digest, grants and quota, reused across syncs.
    loaded: HashMap<String, Arc<LoadedPlugin>>,
    recorder: Recorder,
    resources: [ApiResource; 3],
    /// When each binding's usage was last reported, and its quota hits then.
    reported: HashMap<String, (Instant, u64)>,
}

fn resource(kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(
        PLATFORM_GROUP,
        omni_api::VERSION,
        kind,
    ))
}

/// Whether a sync failed because the API server does not serve the plugin kinds (their CRDs are not installed),
/// as opposed to failing to answer.
fn api_not_served(error: &anyhow::Error) -> bool {
    error
        .chain()
        .filter_map(|e| e.downcast_ref::<kube::Error>())
        .any(|e| matches!(e, kube::Error::Api(status) if status.code == 404))
}

fn now() -> String {
    rfc3339_seconds(std::time::SystemTime::now())
}

impl Platform {
    pub fn new(
        client: kube::Client,
        runtime: Runtime,
        registry: Arc<PluginRegistry>,
        options: PlatformOptions,
    ) -> Self {
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: if options.manager.is_empty() {
                    "omni-operator".into()
                } else {
                    options.manager.clone()
                },
                instance: None,
            },
        );
        Platform {
            client,
            runtime,
            registry,
            options,
            plugins: HashMap::new(),
            loaded: HashMap::new(),
            reported: HashMap::new(),
            recorder,
            resources: [
                resource("Plugin"),
                resource("PluginBinding"),
                resource("ClusterPluginBinding"),
            ],
        }
    }

    /// Syncs at every change of the three kinds and every [`TICK`], until `shutdown` resolves.
    pub async fn run(
        mut self,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> Result<()> {
        let streams = self.resources.clone().map(|ar| {
            watcher::watcher(
                Api::<DynamicObject>::all_with(self.client.clone(), &ar),
                watcher::Config::default(),
            )
            // Without the CRDs (or the API), errors come back off at a growing interval, not in a hot loop.
            .default_backoff()
            .map(|_| ())
            .boxed()
        });
        let mut changes = futures::stream::select_all(streams);
        tokio::pin!(shutdown);
        loop {
            let failed = match self.sync().await {
                Ok(()) => {
                    self.options.resolved.store(true, Ordering::Relaxed);
                    false
                }
                Err(e) if api_not_served(&e) => {
                    // Without the plugin CRDs nothing can be bound: the built-ins are the routes.
                    self.options.resolved.store(true, Ordering::Relaxed);
                    // Its watches retry with a growing backoff and wake this loop once the CRDs appear.
                    tracing::debug!(error = %format!("{e:#}"), "the plugin API is not served; built-ins serve every kind");
                    false
                }
                Err(e) => {
                    tracing::warn!(error = %format!("{e:#}"), "plugin platform sync failed; trying again");
                    true
                }
            };
            let synced = Instant::now();
            // Wait for a change, or for time-based work: a tick looks again only when something is due, so a
            // quiet platform lists its objects every USAGE_EVERY, not every second.
            loop {
                tokio::select! {
                    _ = &mut shutdown => return Ok(()),
                    _ = changes.next() => {
                        // Let a burst of changes (a kubectl apply of several objects) land before looking.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        break;
                    }
                    _ = tokio::time::sleep(TICK) => {
                        if failed || self.timed_work_due(synced) {
                            break;
                        }
                    }
                }
            }
        }
    }

    /// Whether something waits on the clock: a usage report, a fetch to retry, a canary, or a new digest in its
    /// first minutes (longer rollback windows are watched at the usage cadence).
    fn timed_work_due(&self, synced: Instant) -> bool {
        let now = Instant::now();
        now.duration_since(synced) >= USAGE_EVERY
            || self.plugins.values().any(|s| {
                s.canary.is_some()
                    || s.retry_at.is_some_and(|t| now >= t)
                    || s.swapped_at
                        .is_some_and(|t| now.duration_since(t) < CLOSE_WATCH)
            })
    }

    fn api(&self, index: usize, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &self.resources[index]),
            None => Api::all_with(self.client.clone(), &self.resources[index]),
        }
    }

    /// One pass over every Plugin and binding.
    pub async fn sync(&mut self) -> Result<()> {
        let plugins = self.api(0, None).list(&ListParams::default()).await?.items;
        let namespaced = self.api(1, None).list(&ListParams::default()).await?.items;
        let cluster = self.api(2, None).list(&ListParams::default()).await?.items;

        // 1. Artifacts.
        let mut specs: BTreeMap<String, (DynamicObject, PluginSpec)> = BTreeMap::new();
        for object in plugins {
            let name = object.name_any();
            match decode::<PluginSpec>(&object) {
                Ok(spec) => {
                    self.fetch(&object, &spec).await;
                    specs.insert(name, (object, spec));
                }
                Err(e) => {
                    let state = self.plugins.entry(name.clone()).or_default();
                    state.refusal = Some(Refusal::new("InvalidSpec", e));
                }
            }
        }
        self.plugins.retain(|name, _| specs.contains_key(name));
        self.watch_rollbacks(&specs).await;

        // 2. Bindings.
        let mut views = Vec::new();
        for (object, cluster_wide) in namespaced
            .into_iter()
            .map(|o| (o, false))
            .chain(cluster.into_iter().map(|o| (o, true)))
        {
            let spec = decode::<PluginBindingSpec>(&object);
            views.push((object, cluster_wide, spec));
        }
        let mut candidates = Vec::new();
        let mut outcomes: Vec<(DynamicObject, bool, BindingOutcome)> = Vec::new();
        let mut used = BTreeSet::new();
        for (object, cluster_wide, spec) in views {
            let outcome = match spec {
                Err(e) => BindingOutcome::refused("InvalidSpec", e),
                Ok(spec) => {
                    let view = BindingView {
                        namespace: if cluster_wide {
                            None
                        } else {
                            object.namespace()
                        },
                        name: object.name_any(),
                        created: object
                            .meta()
                            .creation_timestamp
                            .as_ref()
                            .map(|t| t.0.to_string())
                            .unwrap_or_default(),
                        spec,
                    };
                    self.bind(&view, &specs, &mut used, &mut candidates).await
                }
            };
            outcomes.push((object, cluster_wide, outcome));
        }
        self.loaded.retain(|key, _| used.contains(key));
        let ids: BTreeSet<String> = outcomes
            .iter()
            .map(|(o, cluster_wide, _)| binding_id(o, *cluster_wide))
            .collect();
        self.reported.retain(|id, _| ids.contains(id));

        // 3. Routes.
        let resolution = bindings::resolve(&candidates);
        self.registry.set_routes(resolution.routes);

        // 4. Status.
        for (object, cluster_wide, outcome) in outcomes {
            let id = binding_id(&object, cluster_wide);
            let conflicts = resolution.conflicts.get(&id).cloned().unwrap_or_default();
            let serving = resolution.serving.contains(&id);
            let index = if cluster_wide { 2 } else { 1 };
            let usage = self.usage(index, &object, &id).await;
            self.write_binding_status(index, &object, outcome, serving, &conflicts, usage)
                .await;
        }
        for (object, spec) in specs.values() {
            self.write_plugin_status(object, spec).await;
        }
        Ok(())
    }

    /// Fetches a Plugin's artifact when its spec changed or a failed fetch is due again.
    async fn fetch(&mut self, object: &DynamicObject, spec: &PluginSpec) {
        let name = object.name_any();
        let fingerprint = artifacts::fingerprint(spec);
        let state = self.plugins.entry(name.clone()).or_default();
        let changed = state.fingerprint != fingerprint;
        let due = state.refusal.is_some() && state.retry_at.is_some_and(|t| Instant::now() >= t);
        if !changed && !due {
            return;
        }
        if changed {
            state.fingerprint = fingerprint;
            state.rolled_back.clear();
        }
        // A tag resolved before stays resolved: the status keeps the digest, across restarts too.
        let resolved = resolved_digest(object, &spec.artifact);
        // A slow or hostile registry holds up one sync for at most this long.
        let fetch = artifacts::resolve(
            &self.client,
            spec,
            resolved.as_deref(),
            self.options.cache.as_ref(),
        );
        let result = match tokio::time::timeout(FETCH_TIMEOUT, fetch).await {
            Ok(result) => result,
            Err(_) => Err(Refusal::new(
                "PullFailed",
                format!(
                    "fetching {} took longer than {} s",
                    spec.artifact,
                    FETCH_TIMEOUT.as_secs()
                ),
            )),
        };
        let state = self.plugins.entry(name.clone()).or_default();
        let event = match result {
            Ok(artifact) if state.rolled_back.contains(&artifact.digest) => {
                let refusal = Refusal::new(
                    "RolledBack",
                    format!(
                        "digest {} was rolled back; change spec.artifact to try again",
                        artifact.digest
                    ),
                );
                state.refusal = Some(refusal);
                state.retry_at = None;
                None
            }
            Ok(artifact) => {
                state.refusal = None;
                state.retry_at = None;
                let same = state
                    .serving
                    .as_ref()
                    .is_some_and(|s| s.digest == artifact.digest);
                let canary_same = state
                    .canary
                    .as_ref()
                    .is_some_and(|c| c.artifact.digest == artifact.digest);
                let canary = spec.rollout.as_ref().and_then(|r| r.canary.as_ref());
                if same || canary_same {
                    if same {
                        state.canary = None;
                    }
                    None
                } else if let (Some(_), Some(old)) = (canary, &state.serving) {
                    let message = format!(
                        "digest {} verified{}; serving it to the canary first while {} serves the rest",
                        artifact.digest,
                        signed_text(&artifact),
                        old.digest
                    );
                    state.canary = Some(Canary {
                        artifact: Arc::new(artifact),
                        since: Instant::now(),
                    });
                    Some((EventType::Normal, "CanaryStarted", message))
                } else {
                    let message = match &state.serving {
                        Some(old) => format!(
                            "digest {} verified{}; replacing {}",
                            artifact.digest,
                            signed_text(&artifact),
                            old.digest
                        ),
                        None => format!(
                            "digest {} verified{}",
                            artifact.digest,
                            signed_text(&artifact)
                        ),
                    };
                    state.previous = state.serving.take();
                    state.swapped_at = state.previous.is_some().then(Instant::now);
                    state.serving = Some(Arc::new(artifact));
                    state.canary = None;
                    Some((EventType::Normal, "ArtifactVerified", message))
                }
            }
            Err(refusal) => {
                // A retry that fails the same way again is neither a new failure nor a new Event.
                let repeated = state.refusal.as_ref() == Some(&refusal);
                state.retry_at = Some(Instant::now() + RETRY);
                if repeated {
                    None
                } else {
                    state.fail(None, &refusal);
                    let message = if state.serving.is_some() {
                        format!("{}; the previous digest keeps serving", refusal.message)
                    } else {
                        refusal.message.clone()
                    };
                    state.refusal = Some(refusal.clone());
                    Some((EventType::Warning, refusal.reason, message))
                }
            }
        };
        if let Some((type_, reason, message)) = event {
            self.event(object, 0, type_, reason, message).await;
        }
    }

    /// Loads one binding's version and says whether it can serve.
    async fn bind(
        &mut self,
        view: &BindingView,
        specs: &BTreeMap<String, (DynamicObject, PluginSpec)>,
        used: &mut BTreeSet<String>,
        candidates: &mut Vec<Candidate>,
    ) -> BindingOutcome {
        let plugin_name = &view.spec.plugin;
        let Some((_, plugin_spec)) = specs.get(plugin_name) else {
            return BindingOutcome::refused(
                "PluginNotFound",
                format!("spec.plugin: Plugin {plugin_name:?} does not exist"),
            );
        };
        // An administrator may keep a Plugin (and its ceiling) to some tenants.
        if !plugin_spec.namespaces.is_empty() {
            let allowed = view
                .namespace
                .as_ref()
                .is_some_and(|ns| plugin_spec.namespaces.contains(ns));
            if !allowed {
                return BindingOutcome::refused(
                    "NamespaceNotAllowed",
                    format!(
                        "spec.plugin: Plugin {plugin_name:?} may be bound only in {} (its spec.namespaces)",
                        plugin_spec.namespaces.join(", ")
                    ),
                );
            }
        }
        let Some(state) = self.plugins.get(plugin_name) else {
            return BindingOutcome::refused(
                "PluginNotReady",
                format!("Plugin {plugin_name:?} is not ready"),
            );
        };
        let Some(artifact) = state.serving.clone() else {
            let why = state
                .refusal
                .as_ref()
                .map(|r| r.message.clone())
                .unwrap_or_else(|| "its artifact is not fetched yet".into());
            return BindingOutcome::refused(
                "PluginNotReady",
                format!("Plugin {plugin_name:?} is not ready: {why}"),
            );
        };
        let previous = state.previous.clone();
        // Each artifact gets the grants its own request allows: a fallback or a canary never inherits another
        // digest's.
        let namespaced = view.namespace.is_some();
        let effective_for = |artifact: &Artifact| -> Result<Grants, String> {
            let ceiling = ceiling(plugin_spec, artifact)
                .map_err(|e| format!("Plugin {plugin_name:?} {e}"))?;
            bindings::effective_grants(&artifact.requested, &ceiling, &view.spec, namespaced)
        };
        let mut effective = match effective_for(&artifact) {
            Ok(g) => g,
            Err(e) => return BindingOutcome::refused("InvalidGrants", e),
        };
        let (limits, quota) = match limits(&self.runtime, plugin_spec, &view.spec) {
            Ok(l) => l,
            Err(e) => return BindingOutcome::refused("InvalidQuota", e),
        };
        let id = view.id();
        // The new digest is probed for this binding; if it cannot serve it, the previous digest keeps serving.
        let mut note = None;
        let (loaded, served) = match self
            .load(&id, plugin_name, &artifact, &effective, limits, quota, used)
            .await
        {
            Ok(p) => (p, artifact.clone()),
            Err(message) => {
                let Some(old) = previous.clone() else {
                    return BindingOutcome::refused("LoadFailed", message);
                };
                let fallback = match effective_for(&old) {
                    Ok(g) => {
                        effective = g;
                        self.load(&id, plugin_name, &old, &effective, limits, quota, used)
                            .await
                    }
                    Err(e) => Err(e),
                };
                let Ok(p) = fallback else {
                    return BindingOutcome::refused("LoadFailed", message);
                };
                note = Some(format!(
                    "digest {} was refused for this binding ({message}); digest {} keeps serving",
                    artifact.digest, old.digest
                ));
                (p, old)
            }
        };
        let kinds = match bindings::bound_kinds(&loaded, &view.spec) {
            Ok(k) => k,
            Err(e) => return BindingOutcome::refused("InvalidKinds", e),
        };
        // A related kind makes the host watch (and cache) every object of it: only kinds this operator serves,
        // the ConfigMaps and Secrets capabilities read on a plugin's behalf, or kinds it may read itself.
        if let Some(related) = loaded.info().related.iter().find(|r| {
            let key = KindKey::new(&r.kind.group, &r.kind.kind);
            let capability_read =
                r.kind.group.is_empty() && (r.kind.kind == "ConfigMap" || r.kind.kind == "Secret");
            !(self.serves(&key)
                || capability_read
                || effective.may_read_kind(&r.kind.group, &r.kind.kind, true)
                || effective.may_read_kind(&r.kind.group, &r.kind.kind, false))
        }) {
            return BindingOutcome::refused(
                "RelatedKindNotAllowed",
                format!(
                    "plugin {plugin_name:?} declares related kind {}, which is not a kind this operator serves \
                     and not one its effective grants read",
                    KindKey::new(&related.kind.group, &related.kind.kind)
                ),
            );
        }
        if let Some(kind) = kinds.iter().find(|k| !self.serves(k)) {
            return BindingOutcome::refused(
                "KindNotServed",
                format!(
                    "{kind} is not a kind this operator serves: bindings route the {} kinds and kinds an \
                     administrator allows with --allow-kind (never core kinds)",
                    omni_api::GROUP
                ),
            );
        }
        // A canary serves the objects the Plugin's rollout picks; a canary that cannot load for this binding
        // is left out here (the others still try it).
        let canary = match (
            state_canary(&self.plugins, plugin_name),
            plugin_spec.rollout.as_ref().and_then(|r| r.canary.as_ref()),
        ) {
            (Some(c), Some(policy)) => match effective_for(&c) {
                Ok(grants) => self
                    .load(&id, plugin_name, &c, &grants, limits, quota, used)
                    .await
                    .ok(),
                Err(_) => None,
            }
            .map(|plugin| crate::runtime::CanaryRoute {
                plugin,
                namespaces: policy.namespaces.iter().cloned().collect(),
                percent: policy.percent.unwrap_or(0).min(100),
            }),
            _ => None,
        };
        let digest = served.digest.clone();
        let outcome = BindingOutcome {
            ready: true,
            reason: "Serving",
            message: note.unwrap_or_else(|| {
                format!(
                    "{} serves {} with digest {digest}",
                    view.id(),
                    kinds
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }),
            digest: Some(digest),
            grants: effective.describe(),
            kinds: kinds.iter().map(ToString::to_string).collect(),
        };
        let mut route = Route::new(view.id(), loaded);
        route.canary = canary;
        candidates.push(Candidate {
            binding: view.clone(),
            kinds,
            route: Arc::new(route),
        });
        outcome
    }

    /// The loaded version of `artifact` with these grants and quota, loading (compiling once per digest,
    /// probing every time) when new.
    /// Each binding gets versions of its own, so one tenant's calls never use another's quota.
    #[allow(clippy::too_many_arguments)]
    async fn load(
        &mut self,
        binding: &str,
        name: &str,
        artifact: &Artifact,
        grants: &Grants,
        limits: CallLimits,
        quota: Quota,
        used: &mut BTreeSet<String>,
    ) -> Result<Arc<LoadedPlugin>, String> {
        let key = format!(
            "{}|{name}|{binding}|{:?}|{:?}|{:?}",
            artifact.digest,
            grants.describe(),
            limits.memory_bytes,
            quota
        );
        used.insert(key.clone());
        if let Some(p) = self.loaded.get(&key) {
            return Ok(p.clone());
        }
        let spec = LoadSpec::new(name, artifact.component.clone())
            .grants(grants.clone())
            .limits(limits)
            .quota(quota);
        let loaded = self.runtime.load(spec).await.map_err(|e| e.to_string())?;
        self.loaded.insert(key, loaded.clone());
        Ok(loaded)
    }

    fn writes(&self) -> bool {
        self.options
            .writes
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    fn serves(&self, kind: &KindKey) -> bool {
        crate::runtime::serves_kind(&self.options.allowed_kinds, &kind.group, &kind.kind)
    }

    async fn event(
        &self,
        object: &DynamicObject,
        index: usize,
        type_: EventType,
        reason: &str,
        message: String,
    ) {
        if !self.writes() {
            return;
        }
        let event = Event {
            type_,
            reason: reason.into(),
            note: Some(message),
            action: "Reconcile".into(),
            secondary: None,
        };
        if let Err(e) = self
            .recorder
            .publish(&event, &object.object_ref(&self.resources[index]))
            .await
        {
            tracing::warn!(error = %e, "could not publish a plugin platform event");
        }
    }
}

/// How routes and messages name a binding object (as [`BindingView::id`]).
fn binding_id(object: &DynamicObject, cluster_wide: bool) -> String {
    if cluster_wide {
        format!("ClusterPluginBinding {}", object.name_any())
    } else {
        format!(
            "PluginBinding {}/{}",
            object.namespace().unwrap_or_default(),
            object.name_any()
        )
    }
}

/// What a binding's status says.
struct BindingOutcome {
    ready: bool,
    reason: &'static str,
    message: String,
    digest: Option<String>,
    grants: Vec<String>,
    kinds: Vec<String>,
}

impl BindingOutcome {
    fn refused(reason: &'static str, message: impl Into<String>) -> Self {
        BindingOutcome {
            ready: false,
            reason,
            message: message.into(),
            digest: None,
            grants: Vec::new(),
            kinds: Vec::new(),
        }
    }
}

/// The canary artifact of a Plugin, if one is in progress.
fn state_canary(plugins: &HashMap<String, PluginState>, name: &str) -> Option<Arc<Artifact>> {
    plugins
        .get(name)
        .and_then(|s| s.canary.as_ref())
        .map(|c| c.artifact.clone())
}

/// A Plugin's grant ceiling; a built-in's is also bounded by the grants it has as a built-in.
fn ceiling(spec: &PluginSpec, artifact: &Artifact) -> Result<Grants, String> {
    let mut ceiling = Grants::none();
    for (i, text) in spec.grants.iter().enumerate() {
        ceiling = ceiling
            .grant(text)
            .map_err(|e| format!("spec.grants[{i}]: {e}"))?;
    }
    if let Some(built_in) = artifact.built_in {
        let own = built_in.grants().map_err(|e| e.to_string())?;
        ceiling = ceiling.intersect(&own);
    }
    Ok(ceiling)
}

/// A binding's call limits and quota: the Plugin's quota, lowered by the binding's own (a tenant can only ask
/// for less than the administrator allows).
fn limits(
    runtime: &Runtime,
    plugin: &PluginSpec,
    spec: &PluginBindingSpec,
) -> Result<(CallLimits, Quota), String> {
    let mut limits = runtime.config().default_limits;
    let ceiling = runtime.config().memory_ceiling;
    let mut quota = Quota::default();
    fn lower<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
    for (field, q) in [
        ("Plugin spec.quota", &plugin.quota),
        ("spec.quota", &spec.quota),
    ] {
        let Some(q) = q else {
            continue;
        };
        if let Some(memory) = &q.memory {
            let bytes = units::parse_quantity(memory).ok_or_else(|| {
                format!("{field}.memory: {memory:?} is not a quantity such as 64Mi")
            })?;
            if bytes > ceiling {
                return Err(format!(
                    "{field}.memory: {memory} is above this operator's ceiling of {ceiling} bytes"
                ));
            }
            limits.memory_bytes = limits.memory_bytes.min(bytes);
        }
        quota.concurrency = lower(quota.concurrency, q.concurrency.map(|c| c as usize));
        quota.calls_per_second = lower(quota.calls_per_second, q.calls_per_second);
    }
    Ok((limits, quota))
}

/// The digest the status pinned `artifact` to, when the serving digest was fetched for exactly this
/// `spec.artifact`: a tag is resolved once, also across operator restarts, and a changed spec (or one whose fetch
/// failed) resolves again.
fn resolved_digest(object: &DynamicObject, artifact: &str) -> Option<String> {
    if object.data["status"]["artifact"].as_str() != Some(artifact) {
        return None;
    }
    let pinned = object.data["status"]["resolvedArtifact"].as_str()?;
    let (repository, digest) = pinned.rsplit_once('@')?;
    let wanted = artifact.trim_start_matches("oci://");
    let wanted_repo = wanted.split('@').next()?;
    let wanted_repo = match wanted_repo.rsplit_once(':') {
        // A tag, not a port: the part after the last ':' has no '/'.
        Some((repo, tag)) if !tag.contains('/') => repo,
        _ => wanted_repo,
    };
    (repository.trim_start_matches("oci://") == wanted_repo).then(|| digest.to_string())
}

fn signed_text(artifact: &Artifact) -> String {
    match &artifact.signed_by {
        Some(key) => format!(" (signed by {key:?})"),
        None => String::new(),
    }
}

fn decode<T: serde::de::DeserializeOwned>(object: &DynamicObject) -> Result<T, String> {
    serde_json::from_value(object.data["spec"].clone()).map_err(|e| format!("spec: {e}"))
}
