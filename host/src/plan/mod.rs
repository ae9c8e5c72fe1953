//! `omni-operator plan`: what a change to the manifests would do in Omni, in workload clusters and in Helm,
//! before it merges. Each affected object's own plugin runs, as the operator would run it, against the live
//! systems with every write recorded instead of performed: Omni writes go to an overlay ([`crate::omni::overlay`]),
//! Kubernetes writes go out as server-side dry runs ([`crate::dry_run`]), Helm actions are recorded
//! ([`crate::helm::releases::HelmPlan`]). Reads go to the live systems, with the plan's own writes over them, so a
//! reconcile that takes several passes, or a child planned after its parent, sees what came before.
//!
//! * [`manifests`]: the files and directories given, as objects;
//! * [`reader`]: `kube-read` over the live cluster with the manifests in place of what they replace;
//! * [`effects`]: recorded writes turned into what they mean (a remote cluster created, machines destroyed);
//! * [`helm_diff`]: a release's rendered manifests before and after, as `helm diff` shows them;
//! * [`line_diff`]: the line diff both print;
//! * [`render`]: the plan as text, Markdown and JSON;
//! * [`revisions`]: the manifests at a revision of a Git repository, for a plan of two revisions.

pub mod effects;
pub mod helm_diff;
mod line_diff;
pub mod manifests;
mod reader;
pub mod render;
pub mod revisions;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use kube::api::{DeleteParams, PostParams};
use serde_json::{Value, json};

use crate::capabilities::{
    ChartSources, HelmSettings, HostServices, KubeReader, KubeWriter, TemplateRoots,
};
use crate::controllers::object::CachedObject;
use crate::controllers::reader::ApiReader;
use crate::controllers::writer::ApiWriter;
use crate::dry_run::KubeWrites;
use crate::helm::HelmEngine;
use crate::helm::releases::{HelmPlan, Releases};
use crate::omni::OmniConnections;
use crate::omni::overlay::OmniOverlay;
use crate::runtime::{KindKey, LoadedPlugin, PluginRegistry};
use crate::secrets::WorkloadClients;
pub use effects::{Change, ObjectPlan, Plan};
pub use manifests::Manifest;

/// A plugin asked for another pass (a requeue, a write it waits on) at most this many times per object: enough
/// for a create followed by its dependants, bounded so a plugin that writes on every call cannot loop.
const MAX_PASSES: usize = 4;

/// The group of the kinds the operator serves.
const GROUP: &str = "omni.texashpc.com";

/// Annotations with which GitOps tools keep an object they would otherwise prune.
pub const FLUX_PRUNE: (&str, &str) = ("kustomize.toolkit.fluxcd.io/prune", "disabled");
pub const ARGO_SYNC_OPTIONS: &str = "argocd.argoproj.io/sync-options";

/// What to plan: the manifests, an older revision's (whose objects the manifests dropped are removals), and
/// whether the manifests are the whole desired set of their namespaces (`--prune`).
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub manifests: Vec<Manifest>,
    pub previous: Vec<Manifest>,
    pub prune: bool,
}

/// What a plan runs with: the plugins, the management cluster, and the operator's Omni and Helm settings.
#[derive(Clone)]
pub struct Planner {
    pub registry: Arc<PluginRegistry>,
    pub config: kube::Config,
    pub omni_dictionary: Option<omni_wire::compression::Dictionary>,
    /// Helm, for resolving chart version ranges (read-only); none leaves ranges unresolved.
    pub helm: Option<Arc<dyn HelmEngine>>,
    pub helm_summary: String,
    pub template_roots: Vec<PathBuf>,
    /// Whether Helm renders each planned install and upgrade for a manifest diff (slower: the chart is fetched).
    pub render_helm: bool,
}

/// What a plan records, shared by every object it runs.
struct Recorders {
    omni: Arc<OmniOverlay>,
    kube: Arc<KubeWrites>,
    helm: Arc<HelmPlan>,
}

impl Recorders {
    fn marks(&self) -> (usize, usize, usize) {
        (self.omni.len(), self.kube.len(), self.helm.len())
    }
}

/// The order objects are planned in: a connection before the clusters that use it, a cluster before its
/// children, a kubeconfig export before the releases and copies that use the kubeconfig.
fn rank(kind: &str) -> usize {
    match kind {
        "OmniConnection" => 0,
        "OmniCluster" => 1,
        "OmniControlPlane" => 2,
        "OmniWorkers" => 3,
        "OmniMachine" => 4,
        "OmniKubeconfigExport" => 5,
        "OmniSecretSync" => 6,
        "OmniHelmRelease" => 7,
        _ => 8,
    }
}

/// (kind, namespace, name).
type Id = (String, String, String);

fn id_of(object: &Value, default_namespace: &str) -> Id {
    (
        object["kind"].as_str().unwrap_or_default().to_string(),
        object["metadata"]["namespace"]
            .as_str()
            .unwrap_or(default_namespace)
            .to_string(),
        object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

fn group_of(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(g, _)| g)
}

/// Why a GitOps tool would not prune `object`, from its annotations.
pub fn kept_by_gitops(object: &Value) -> Option<String> {
    let annotations = &object["metadata"]["annotations"];
    if annotations[FLUX_PRUNE.0].as_str() == Some(FLUX_PRUNE.1) {
        return Some(format!(
            "Flux will not prune it ({}: {})",
            FLUX_PRUNE.0, FLUX_PRUNE.1
        ));
    }
    let argo = annotations[ARGO_SYNC_OPTIONS].as_str().unwrap_or_default();
    if argo.split(',').any(|o| o.trim() == "Delete=false") {
        return Some(format!(
            "Argo CD will not delete it ({ARGO_SYNC_OPTIONS}: Delete=false)"
        ));
    }
    None
}

impl Planner {
    /// The plan of applying `manifests`; with `prune`, they are the whole desired set of our kinds in the
    /// namespaces they touch, and what is live there but absent is planned as removed.
    pub async fn plan(&self, manifests: Vec<Manifest>, prune: bool) -> anyhow::Result<Plan> {
        self.plan_dropping(manifests, Vec::new(), prune).await
    }

    /// The plan of going from `previous` (an older revision's manifests) to `manifests`: as [`Planner::plan`],
    /// and what `previous` had that `manifests` dropped, where it is live, is planned as removed.
    pub async fn plan_dropping(
        &self,
        manifests: Vec<Manifest>,
        previous: Vec<Manifest>,
        prune: bool,
    ) -> anyhow::Result<Plan> {
        self.plan_objects(manifests, previous, prune, Given::Manifests)
            .await
    }

    async fn plan_objects(
        &self,
        manifests: Vec<Manifest>,
        previous: Vec<Manifest>,
        prune: bool,
        given: Given,
    ) -> anyhow::Result<Plan> {
        let recorders = Recorders {
            omni: Arc::new(OmniOverlay::default()),
            kube: Arc::new(KubeWrites::default()),
            helm: Arc::new(HelmPlan::new(self.render_helm)),
        };
        let default_namespace = self.config.default_namespace.clone();
        let client = recorders
            .kube
            .client(self.config.clone(), "management")
            .context("a client for the management cluster")?;
        let live_reader = Arc::new(ApiReader::new(client.clone()));
        let kinds = self.registry.kinds();

        // The objects the manifests name, and which of them the plugins serve.
        let mut desired: BTreeMap<Id, Manifest> = BTreeMap::new();
        for m in manifests {
            let id = id_of(&m.object, &default_namespace);
            if let Some(earlier) = desired.get(&id) {
                anyhow::bail!(
                    "{} {}/{} is in both {} and {}",
                    id.0,
                    id.1,
                    id.2,
                    earlier.source,
                    m.source
                );
            }
            desired.insert(id, m);
        }

        let mut plan = Plan::default();
        // Every object is validated by the API server first, as a dry run: what it would store is what the
        // plugin is given (defaults applied, the live object's metadata and status kept).
        let mut stored: BTreeMap<Id, (Value, Option<Value>)> = BTreeMap::new();
        for (id, m) in &desired {
            let pair = match given {
                Given::Manifests => self.dry_run_apply(&live_reader, &m.object, &id.1).await,
                Given::Admitted => self
                    .live(&live_reader, &kinds, id)
                    .await
                    .map(|live| (with_uid(m.object.clone(), id), live))
                    .map_err(|e| format!("{e:#}")),
            };
            match pair {
                Ok(pair) => {
                    stored.insert(id.clone(), pair);
                }
                Err(e) => {
                    let mut object = ObjectPlan::new(id, Some(&m.source), Change::Invalid);
                    object.error = Some(e);
                    plan.objects.push(object);
                }
            }
        }

        // Removals: with --prune, what is live in the manifests' namespaces and absent from them.
        let mut removed: BTreeMap<Id, Value> = BTreeMap::new();
        if prune {
            let namespaces: BTreeSet<String> = desired.keys().map(|id| id.1.clone()).collect();
            for (key, (gvk, _)) in &kinds {
                if key.group != GROUP {
                    continue;
                }
                for ns in &namespaces {
                    let api = live_reader
                        .api_of(&gvk.api_version(), &gvk.kind, Some(ns))
                        .await?;
                    let list = api
                        .list(&Default::default())
                        .await
                        .with_context(|| format!("listing {} in namespace {ns}", gvk.kind))?;
                    for o in list.items {
                        let value = serde_json::to_value(&o)?;
                        let id = id_of(&value, ns);
                        if !desired.contains_key(&id) {
                            removed.insert(id, value);
                        }
                    }
                }
            }
        }

        // Removals: what the older revision had and this one dropped, where it is live.
        for m in &previous {
            let id = id_of(&m.object, &default_namespace);
            if desired.contains_key(&id) || removed.contains_key(&id) {
                continue;
            }
            if let Some(live) = self.live(&live_reader, &kinds, &id).await? {
                removed.insert(id, live);
            }
        }

        let reader = Arc::new(reader::PlanReader::new(
            live_reader.clone(),
            stored.values().map(|(object, _)| object.clone()).collect(),
            removed.keys().cloned().collect(),
        ));
        let connections = Arc::new(OmniConnections::planning(
            self.omni_dictionary.clone(),
            recorders.omni.clone(),
        ));
        let context = Context {
            services: self.services(
                &recorders,
                client.clone(),
                reader.clone(),
                live_reader.clone(),
                connections.clone(),
            ),
            recorders: &recorders,
            connections,
            reader,
            live: live_reader,
        };

        // The parents of changed children are planned too: an OmniCluster syncs its children's machine sets.
        let mut parents: BTreeSet<Id> = BTreeSet::new();
        for (id, object) in stored
            .iter()
            .map(|(id, (o, _))| (id, o))
            .chain(removed.iter())
        {
            if matches!(
                id.0.as_str(),
                "OmniControlPlane" | "OmniWorkers" | "OmniMachine"
            ) && let Some(cluster) = object["spec"]["clusterRef"]["name"].as_str()
            {
                let parent = ("OmniCluster".to_string(), id.1.clone(), cluster.to_string());
                if !stored.contains_key(&parent) && !removed.contains_key(&parent) {
                    parents.insert(parent);
                }
            }
        }
        for parent in &parents {
            if let Some(live) = self.live(&context.live, &kinds, parent).await? {
                stored.insert(parent.clone(), (live.clone(), Some(live)));
            }
        }

        let mut order: Vec<(&Id, bool)> = stored
            .keys()
            .map(|id| (id, false))
            .chain(removed.keys().map(|id| (id, true)))
            .collect();
        order.sort_by_key(|(id, removing)| (*removing, rank(&id.0), (*id).clone()));

        for (id, removing) in order {
            let source = desired.get(id).map(|m| m.source.as_str());
            if removing {
                let live = &removed[id];
                plan.objects
                    .push(self.plan_removal(id, live, &kinds, &context).await);
                continue;
            }
            let (object, live) = &stored[id];
            let change = match live {
                None => Change::Create,
                Some(_) if parents.contains(id) => Change::Children,
                Some(live) if effects::same_intent(live, object) => Change::Unchanged,
                Some(_) => Change::Update,
            };
            let mut planned = ObjectPlan::new(id, source, change);
            let Some(plugin) = self.plugin(&kinds, object, id) else {
                plan.objects.push(planned);
                continue;
            };
            let mark = recorders.marks();
            match self.passes(&plugin, object.clone(), &context, false).await {
                Ok(note) => planned.notes.extend(note),
                Err(e) => planned.error = Some(e),
            }
            let recorded = context.since(mark, object).await;
            effects::describe(&mut planned, object, live.as_ref(), &recorded);
            plan.objects.push(planned);
        }
        plan.finish();
        Ok(plan)
    }

    fn services(
        &self,
        recorders: &Recorders,
        client: kube::Client,
        reader: Arc<reader::PlanReader>,
        live: Arc<ApiReader>,
        omni: Arc<OmniConnections>,
    ) -> HostServices {
        let workloads = WorkloadClients::planning(recorders.kube.clone());
        let releases = Releases::planning(
            self.helm.clone(),
            &self.helm_summary,
            recorders.helm.clone(),
        );
        let mut services = HostServices::default()
            .with_kube(reader as Arc<dyn KubeReader>)
            .with_kube_writer(Arc::new(ApiWriter::new(live)) as Arc<dyn KubeWriter>)
            .with_omni(omni)
            .with_management(client, Arc::new(workloads))
            .with_helm(HelmSettings {
                releases: Arc::new(releases),
                sources: ChartSources::any(),
                ..Default::default()
            });
        services.set_template_roots(TemplateRoots::new(self.template_roots.clone()));
        services
    }

    /// The plugin serving `object`'s kind, when it is one of ours.
    fn plugin(
        &self,
        kinds: &BTreeMap<KindKey, (crate::runtime::Gvk, Vec<Arc<LoadedPlugin>>)>,
        object: &Value,
        id: &Id,
    ) -> Option<Arc<LoadedPlugin>> {
        let group = group_of(object["apiVersion"].as_str().unwrap_or_default());
        let key = KindKey::new(group, id.0.as_str());
        let uid = object["metadata"]["uid"].as_str().unwrap_or_default();
        self.registry
            .serving(&key, Some(&id.1), uid)
            .or_else(|| kinds.get(&key).and_then(|(_, p)| p.first().cloned()))
    }

    async fn live(
        &self,
        reader: &ApiReader,
        kinds: &BTreeMap<KindKey, (crate::runtime::Gvk, Vec<Arc<LoadedPlugin>>)>,
        id: &Id,
    ) -> anyhow::Result<Option<Value>> {
        let Some((gvk, _)) = kinds.get(&KindKey::new(GROUP, id.0.as_str())) else {
            return Ok(None);
        };
        let api = reader
            .api_of(&gvk.api_version(), &gvk.kind, Some(&id.1))
            .await?;
        let found = api
            .get_opt(&id.2)
            .await
            .with_context(|| format!("reading {} {}/{}", id.0, id.1, id.2))?;
        Ok(found.map(serde_json::to_value).transpose()?)
    }

    /// `object` sent as a dry run: created when it does not exist, else replaced (its spec, labels and annotations
    /// the manifest's, as a GitOps tool's apply leaves them; finalizers and status the live object's). Returns
    /// what the API server would store, and the live object.
    async fn dry_run_apply(
        &self,
        reader: &ApiReader,
        object: &Value,
        namespace: &str,
    ) -> Result<(Value, Option<Value>), String> {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let kind = object["kind"].as_str().unwrap_or_default();
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let api = reader
            .api_of(api_version, kind, Some(namespace))
            .await
            .map_err(|e| e.to_string())?;
        let refused = |e: kube::Error| match e {
            kube::Error::Api(status) => format!("the API server refuses it: {}", status.message),
            other => format!("the API server could not be asked: {other}"),
        };
        let live = api
            .get_opt(name)
            .await
            .map_err(refused)?
            .map(serde_json::to_value)
            .transpose()
            .map_err(|e| e.to_string())?;
        let mut body = object.clone();
        if let Some(live) = &live {
            let meta = &mut body["metadata"];
            for field in ["resourceVersion", "uid", "finalizers", "ownerReferences"] {
                if !live["metadata"][field].is_null() {
                    meta[field] = live["metadata"][field].clone();
                }
            }
            if !live["status"].is_null() {
                body["status"] = live["status"].clone();
            }
        }
        let body = CachedObject::from_value(body).map_err(|e| e.to_string())?;
        let params = PostParams {
            dry_run: true,
            field_manager: Some(crate::admission::PREVIEW_FIELD_MANAGER.into()),
        };
        let stored = match &live {
            Some(_) => api.replace(name, &params, &body).await,
            None => api.create(&params, &body).await,
        }
        .map_err(refused)?;
        let mut stored = serde_json::to_value(stored).map_err(|e| e.to_string())?;
        if live.is_none() {
            stored = with_uid(stored, &id_of(object, namespace));
        }
        Ok((stored, live))
    }

    /// Runs `plugin` on `object` until a pass writes nothing new (at most [`MAX_PASSES`]), feeding each pass's
    /// status to the next.
    async fn passes(
        &self,
        plugin: &LoadedPlugin,
        mut object: Value,
        context: &Context<'_>,
        removing: bool,
    ) -> Result<Option<String>, String> {
        let (services, recorders) = (&context.services, context.recorders);
        // The finalizer the controller adds before a plugin's first call, as it decides it.
        let info = plugin.info();
        let current: Vec<String> = object["metadata"]["finalizers"]
            .as_array()
            .map(|f| {
                f.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(next) = crate::controllers::finalizers::to_add(
            &current,
            info.finalizer.as_deref(),
            &info.legacy_finalizers,
        ) {
            object["metadata"]["finalizers"] = json!(next);
        }
        if removing {
            object["metadata"]["deletionTimestamp"] = json!(crate::capabilities::rfc3339_seconds(
                std::time::SystemTime::now()
            ));
        }
        let mut failing = None;
        for _ in 0..MAX_PASSES {
            let mark = recorders.marks();
            let call = crate::capabilities::CallObject::new(
                object.to_string(),
                object["metadata"]["namespace"].as_str().map(String::from),
            );
            let outputs = if removing {
                let done = plugin
                    .finalize(&call, services)
                    .await
                    .map_err(|e| format!("the plugin's finalize failed: {e}"))?;
                if done.value {
                    return Ok(None);
                }
                done.outputs
            } else {
                plugin
                    .reconcile(&call, services)
                    .await
                    .map_err(|e| format!("the plugin's reconcile failed: {e}"))?
                    .outputs
            };
            // What the plugin would report on the object when it cannot go on (a deletion blocked, a sync refused).
            failing = outputs
                .conditions
                .iter()
                .find(|c| {
                    matches!(c.type_.as_str(), "Ready" | "Synced")
                        && c.status == crate::capabilities::ConditionStatus::False
                        && c.reason != "Suspended"
                })
                .map(|c| {
                    format!(
                        "the plugin reports {}={:?} {}: {}",
                        c.type_, c.status, c.reason, c.message
                    )
                });
            // A pass that wrote nothing new would be followed by one that does the same.
            if recorders.marks() == mark {
                return Ok(failing);
            }
            let now = crate::capabilities::rfc3339_seconds(std::time::SystemTime::now());
            if let Some(status) = crate::controllers::status::next_status(
                &object,
                &outputs.status,
                &outputs.conditions,
                &now,
            ) {
                object["status"] = status;
            }
        }
        Ok(failing)
    }

    /// A live object absent from the manifests: kept by the GitOps tool, refused by the deletion guard (the
    /// API server asked with a dry-run DELETE), or finalized by its plugin with every write recorded.
    async fn plan_removal(
        &self,
        id: &Id,
        live: &Value,
        kinds: &BTreeMap<KindKey, (crate::runtime::Gvk, Vec<Arc<LoadedPlugin>>)>,
        context: &Context<'_>,
    ) -> ObjectPlan {
        let mut planned = ObjectPlan::new(id, None, Change::Remove);
        if let Some(why) = kept_by_gitops(live) {
            planned.change = Change::Kept;
            planned.notes.push(why);
            effects::describe_removal(&mut planned, live, None);
            return planned;
        }
        if let Some((gvk, _)) = kinds.get(&KindKey::new(GROUP, id.0.as_str())) {
            let api = match context
                .live
                .api_of(&gvk.api_version(), &gvk.kind, Some(&id.1))
                .await
            {
                Ok(api) => api,
                Err(e) => {
                    planned.error = Some(e.to_string());
                    return planned;
                }
            };
            let params = DeleteParams {
                dry_run: true,
                ..Default::default()
            };
            if let Err(kube::Error::Api(status)) = api.delete(&id.2, &params).await {
                planned.change = Change::Refused;
                planned.notes.push(format!(
                    "the API server refuses the deletion: {}",
                    status.message
                ));
                effects::describe_removal(&mut planned, live, None);
                return planned;
            }
        }
        let mark = context.recorders.marks();
        if let Some(plugin) = self.plugin(kinds, live, id) {
            match self.passes(&plugin, live.clone(), context, true).await {
                Ok(note) => planned.notes.extend(note),
                Err(e) => planned.error = Some(e),
            }
        }
        let recorded = context.since(mark, live).await;
        effects::describe_removal(&mut planned, live, Some(&recorded));
        planned
    }
}

impl std::fmt::Debug for Planner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Planner")
            .field("render_helm", &self.render_helm)
            .finish_non_exhaustive()
    }
}

/// A dry run's admission warning: the plan of the object alone, summarised.
impl crate::admission::Preview for Planner {
    fn summary<'a>(
        &'a self,
        object: &'a Value,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, String>> + Send + 'a>>
    {
        Box::pin(async move {
            let manifest = Manifest {
                source: "the request".into(),
                object: object.clone(),
            };
            let plan = self
                .plan_objects(vec![manifest], Vec::new(), false, Given::Admitted)
                .await
                .map_err(|e| format!("{e:#}"))?;
            Ok(plan.summary)
        })
    }
}

/// What the plan's manifests are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Given {
    /// Manifests as written: each is sent as a dry run first, and planned as the API server would store it.
    Manifests,
    /// What an admission review carries: the object as the API server will store it, defaulted and admitted
    /// already. Sending it again would need the operator to be allowed to write the kind, and would come back to
    /// the webhook that asked.
    Admitted,
}

/// `object` with a uid to plan under: its own, or one made up for an object not created yet.
fn with_uid(mut object: Value, id: &Id) -> Value {
    if object["metadata"]["uid"].as_str().is_none_or(str::is_empty) {
        object["metadata"]["uid"] = json!(format!("plan-{}-{}", id.1, id.2));
    }
    object
}

/// What every object of one plan is planned with.
struct Context<'a> {
    services: HostServices,
    recorders: &'a Recorders,
    /// The plan's Omni clients (writes recorded), for looking up what a teardown takes with it.
    connections: Arc<OmniConnections>,
    reader: Arc<reader::PlanReader>,
    /// The management cluster, read (and dry-run written) through discovery's cache.
    live: Arc<ApiReader>,
}

impl Context<'_> {
    /// What was recorded after `mark` while planning `object`, with the machines its teardowns take along.
    async fn since(&self, mark: (usize, usize, usize), object: &Value) -> effects::Recorded {
        let mut recorded = effects::Recorded {
            omni: self.recorders.omni.writes_since(mark.0),
            kube: self.recorders.kube.since(mark.1),
            helm: self.recorders.helm.since(mark.2),
            machines: Vec::new(),
        };
        let doomed = effects::doomed_nodes(&recorded.omni);
        let connection = object["spec"]["connectionRef"]["name"].as_str();
        let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
        let (Some(connection), false) = (connection, doomed.is_empty()) else {
            return recorded;
        };
        let client = match self
            .connections
            .resolve(&*self.reader, namespace, connection)
            .await
        {
            Ok(client) => client,
            Err(e) => {
                recorded.machines.push(format!(
                    "(unknown: OmniConnection {connection:?}: {})",
                    e.into_host_error()
                ));
                return recorded;
            }
        };
        for (label, value) in doomed {
            let term = omni_wire::cosi::LabelTerm {
                key: label.into(),
                op: omni_wire::cosi::label_term::Operation::Equal as i32,
                value: vec![value],
                invert: false,
            };
            // Listed from Omni as it stands (the plan's own teardowns leave the nodes in place).
            match client
                .list(
                    omni_wire::DEFAULT_NAMESPACE,
                    effects::MACHINE_SET_NODES,
                    vec![term],
                    OMNI_BUDGET,
                )
                .await
            {
                Ok(nodes) => recorded.machines.extend(
                    nodes
                        .into_iter()
                        .map(|n| crate::omni::overlay::key_of(&n.resource).id),
                ),
                Err(e) => recorded.machines.push(format!("(unknown: {e})")),
            }
        }
        recorded.machines.sort();
        recorded.machines.dedup();
        recorded
    }
}

/// How long one Omni read of the plan's own may take.
const OMNI_BUDGET: std::time::Duration = std::time::Duration::from_secs(20);
