//! Omni-like controllers (what Omni does after writes: status resources, finalizers, teardown cascades, machine
//! removal through Links, the generic destroy controller), run by one background task after every store
//! change. Like Omni's controllers, which watch their inputs, a pass looks only at what the changes since the
//! previous pass touched (a store of 10,000 resources must not be rescanned per write); it works in ID order and
//! only writes what differs, so passes settle and the outcome is deterministic. Controller-created resources
//! carry the controller name as owner.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use omni_wire::cosi::Resource;
use omni_wire::{phase, specs};
use prost::Message as _;

use crate::service::Shared;
use crate::store::{Change, ChangeKind, Store, md, new_resource};
use crate::types::*;

pub const CLUSTER_CONTROLLER: &str = "ClusterController";
pub const MACHINE_SET_CONTROLLER: &str = "MachineSetStatusController";
const CLUSTER_STATUS_OWNER: &str = "ClusterStatusController";
const CLUSTER_UUID_OWNER: &str = "ClusterUUIDController";
const KUBERNETES_UPGRADE_OWNER: &str = "KubernetesUpgradeStatusController";
const TALOS_UPGRADE_OWNER: &str = "TalosUpgradeStatusController";
const LOAD_BALANCER_OWNER: &str = "LoadBalancerController";
const MACHINE_SET_STATUS_OWNER: &str = "MachineSetStatusController";
const CONTROL_PLANE_STATUS_OWNER: &str = "ControlPlaneStatusController";
const CLUSTER_MACHINE_STATUS_OWNER: &str = "ClusterMachineStatusController";

/// Runs until shutdown.
pub(crate) async fn run(shared: Arc<Shared>) {
    let mut changes = shared.store.changes();
    let mut shutdown = shared.shutdown.clone();
    let mut ctl = Controllers {
        ready_at: HashMap::new(),
        seen: None,
    };
    loop {
        let next = ctl.reconcile(&shared);
        let sleep = async {
            match next {
                Some(t) => tokio::time::sleep_until(t.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = changes.changed() => if r.is_err() { return },
            _ = sleep => {}
            _ = shutdown.wait_for(|stop| *stop) => return,
        }
    }
}

struct Controllers {
    /// When a ClusterStatus / MachineSetStatus may turn ready (created + controller_delay), and whether the
    /// pass that saw it turn ready has run.
    ready_at: HashMap<(String, String), (Instant, bool)>,
    /// The store sequence number the last pass looked at; `None` before the first pass.
    seen: Option<u64>,
}

fn spec_of<M: prost::Message + Default>(r: &Resource) -> M {
    M::decode(
        r.spec
            .as_ref()
            .map(|s| s.proto_spec.as_slice())
            .unwrap_or(&[]),
    )
    .unwrap_or_default()
}

fn label<'a>(r: &'a Resource, k: &str) -> Option<&'a str> {
    md(r).labels.get(k).map(String::as_str)
}

fn tearing_down(r: &Resource) -> bool {
    md(r).phase == phase::TEARING_DOWN
}

/// Creates or updates a controller-owned resource when its labels or spec differ.
fn ensure(store: &Store, ty: &str, id: &str, owner: &str, labels: &[(&str, &str)], spec: Vec<u8>) {
    let labels: HashMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    match store.get(NS, ty, id) {
        None => {
            let mut r = new_resource(NS, ty, id, spec);
            if let Some(m) = r.metadata.as_mut() {
                m.labels = labels;
            }
            if let Err(e) = store.create_as(r, owner) {
                tracing::debug!(ty, id, error = %e, "controller create failed");
            }
        }
        Some(cur) => {
            // Someone else's resource with this ID: leave it alone, as Omni's controllers would fail on it.
            if md(&cur).owner != owner {
                return;
            }
            let same_spec =
                cur.spec.as_ref().map(|s| s.proto_spec.as_slice()) == Some(spec.as_slice());
            if same_spec && md(&cur).labels == labels {
                return;
            }
            store.modify(NS, ty, id, |r| {
                if let Some(m) = r.metadata.as_mut() {
                    m.labels = labels;
                }
                if let Some(s) = r.spec.as_mut() {
                    s.proto_spec = spec;
                }
            });
        }
    }
}

/// Tears down every owner-less resource in `items`; true when none is left.
fn tear_down_all(store: &Store, items: &[Resource]) -> bool {
    for r in items {
        let m = md(r);
        if m.owner.is_empty() && m.phase != phase::TEARING_DOWN {
            let _ = store.teardown(NS, &m.r#type, &m.id);
        }
    }
    items.is_empty()
}

/// The IDs one pass looks at: those touched by the changes since the last pass, or everything.
#[derive(Default)]
struct Dirty {
    links: BTreeSet<String>,
    destroy: BTreeSet<(&'static str, String)>,
    machine_sets: BTreeSet<String>,
    nodes: BTreeSet<String>,
    clusters: BTreeSet<String>,
}

/// Which parent kind a controller-owned status resource hangs off (it shares the parent's ID).
const STATUS_PARENTS: [(&str, &str); 8] = [
    (CLUSTER_STATUSES, CLUSTERS),
    (CLUSTER_UUIDS, CLUSTERS),
    (KUBERNETES_UPGRADE_STATUSES, CLUSTERS),
    (TALOS_UPGRADE_STATUSES, CLUSTERS),
    (LOAD_BALANCER_STATUSES, CLUSTERS),
    (MACHINE_SET_STATUSES, MACHINE_SETS),
    (CONTROL_PLANE_STATUSES, MACHINE_SETS),
    (CLUSTER_MACHINE_STATUSES, MACHINE_SET_NODES),
];

impl Dirty {
    fn parent(&mut self, ty: &str, id: &str) {
        let set = match ty {
            CLUSTERS => &mut self.clusters,
            MACHINE_SETS => &mut self.machine_sets,
            MACHINE_SET_NODES => &mut self.nodes,
            _ => return,
        };
        set.insert(id.to_string());
    }

    /// Everything in the store (the first pass, a poke, or a history that no longer reaches back).
    fn everything(store: &Store) -> Dirty {
        let mut d = Dirty {
            links: store.ids(NS, LINKS).into_iter().collect(),
            ..Dirty::default()
        };
        for ty in USER_MANAGED {
            d.destroy
                .extend(store.ids(NS, ty).into_iter().map(|id| (ty, id)));
        }
        for ty in [CLUSTERS, MACHINE_SETS, MACHINE_SET_NODES] {
            for id in store.ids(NS, ty) {
                d.parent(ty, &id);
            }
        }
        for (ty, parent) in STATUS_PARENTS {
            for id in store.ids(NS, ty) {
                d.parent(parent, &id);
            }
        }
        d
    }

    /// What one stored change (its old and new state) may affect, as Omni's controllers watch their inputs.
    fn note(&mut self, change: &Change) {
        for r in std::iter::once(&change.resource).chain(change.old.as_ref()) {
            let m = md(r);
            let (ty, id) = (m.r#type.as_str(), m.id.as_str());
            if let Some(ty) = USER_MANAGED.iter().find(|t| **t == ty) {
                self.destroy.insert((ty, id.to_string()));
            }
            if ty == LINKS {
                self.links.insert(id.to_string());
            }
            self.parent(ty, id);
            // A machine set waits for its nodes and patches; a cluster for everything labelled with it.
            if let Some(ms) = m.labels.get(LABEL_MACHINE_SET)
                && matches!(ty, MACHINE_SET_NODES | CONFIG_PATCHES)
            {
                self.machine_sets.insert(ms.clone());
            }
            if let Some(cluster) = m.labels.get(LABEL_CLUSTER)
                && USER_MANAGED.contains(&ty)
            {
                self.clusters.insert(cluster.clone());
            }
            // A status someone removed is put back (its parent is looked at again); the controllers' own
            // status writes need no second look.
            if change.kind == ChangeKind::Destroyed
                && let Some((_, parent)) = STATUS_PARENTS.iter().find(|(t, _)| *t == ty)
            {
                self.parent(parent, id);
            }
        }
    }
}

impl Controllers {
    /// One pass over what changed since the last one (everything on the first pass or after a poke). Returns
    /// the earliest pending "turns ready" deadline.
    fn reconcile(&mut self, shared: &Shared) -> Option<Instant> {
        let store = &shared.store;
        let now = Instant::now();
        let poked = store.take_poke();
        let seq = store.seq();
        let changes = match self.seen {
            Some(seen) if !poked => store.changes_since(seen),
            _ => None,
        };
        let mut dirty = match changes {
            None => Dirty::everything(store),
            Some(changes) => {
                let mut d = Dirty::default();
                for c in changes.iter().filter(|c| c.seq <= seq) {
                    d.note(c);
                }
                d
            }
        };
        self.seen = Some(seq);
        // Statuses whose delay ran out since the last pass turn ready now.
        let mut next: Option<Instant> = None;
        for ((ty, id), (at, fired)) in &mut self.ready_at {
            if *fired {
                continue;
            }
            if *at <= now {
                *fired = true;
                dirty.parent(
                    if ty == CLUSTER_STATUSES {
                        CLUSTERS
                    } else {
                        MACHINE_SETS
                    },
                    id,
                );
            } else {
                next = Some(next.map_or(*at, |n: Instant| n.min(*at)));
            }
        }
        let next_ready = self.pass(shared, &dirty, now);
        next.into_iter().chain(next_ready).min()
    }

    /// When a status created now may turn ready, and whether it is ready at `now`.
    fn ready(
        &mut self,
        ty: &str,
        id: &str,
        healthy: bool,
        delay: Duration,
        now: Instant,
        wake: &mut impl FnMut(Instant),
    ) -> bool {
        let (at, fired) = self
            .ready_at
            .entry((ty.to_string(), id.to_string()))
            .or_insert((now + delay, false));
        if now >= *at {
            *fired = true;
        } else {
            wake(*at);
        }
        healthy && now >= *at
    }

    fn pass(&mut self, shared: &Shared, dirty: &Dirty, now: Instant) -> Option<Instant> {
        let store = &shared.store;
        let healthy = shared.config.cluster_health.load(Ordering::SeqCst);
        let delay = shared.config.controller_delay;
        let mut next: Option<Instant> = None;
        let mut wake = |t: Instant| next = Some(next.map_or(t, |n: Instant| n.min(t)));

        // Links: tearing one down removes the machine; before the destroy
        // controller below removes the Link itself.
        for id in &dirty.links {
            if store
                .get(NS, LINKS, id)
                .is_some_and(|link| tearing_down(&link))
            {
                store.force_destroy(NS, MACHINE_STATUSES, id);
            }
        }

        // Generic destroy controller: torn-down, owner-less resources go once their finalizers are gone.
        for (ty, id) in &dirty.destroy {
            if let Some(r) = store.get(NS, ty, id) {
                let m = md(&r);
                if m.phase == phase::TEARING_DOWN && m.owner.is_empty() && m.finalizers.is_empty() {
                    let _ = store.destroy(NS, ty, id);
                }
            }
        }

        // MachineSets.
        for id in &dirty.machine_sets {
            let Some(ms) = store.get(NS, MACHINE_SETS, id) else {
                self.orphaned(store, MACHINE_SETS, id);
                continue;
            };
            let m = md(&ms).clone();
            let nodes = store.list_labeled(NS, MACHINE_SET_NODES, LABEL_MACHINE_SET, &m.id);
            if tearing_down(&ms) {
                let patches = store.list_labeled(NS, CONFIG_PATCHES, LABEL_MACHINE_SET, &m.id);
                let nodes_gone = tear_down_all(store, &nodes);
                let patches_gone = tear_down_all(store, &patches);
                if let Some(st) = store.get(NS, MACHINE_SET_STATUSES, &m.id) {
                    let mut s: specs::MachineSetStatusSpec = spec_of(&st);
                    s.phase = specs::MachineSetPhase::Destroying as i32;
                    s.ready = false;
                    ensure(
                        store,
                        MACHINE_SET_STATUSES,
                        &m.id,
                        MACHINE_SET_STATUS_OWNER,
                        &labels_of(&st),
                        s.encode_to_vec(),
                    );
                }
                if nodes_gone && patches_gone {
                    store.force_destroy(NS, MACHINE_SET_STATUSES, &m.id);
                    store.force_destroy(NS, CONTROL_PLANE_STATUSES, &m.id);
                    store.remove_finalizer(NS, MACHINE_SETS, &m.id, MACHINE_SET_CONTROLLER);
                    self.ready_at
                        .remove(&(MACHINE_SET_STATUSES.to_string(), m.id.clone()));
                }
                continue;
            }
            store.add_finalizer(NS, MACHINE_SETS, &m.id, MACHINE_SET_CONTROLLER);
            let ready = self.ready(MACHINE_SET_STATUSES, &m.id, healthy, delay, now, &mut wake);
            let spec: specs::MachineSetSpec = spec_of(&ms);
            let n = nodes.len() as u32;
            let status = specs::MachineSetStatusSpec {
                phase: if ready {
                    specs::MachineSetPhase::Running
                } else {
                    specs::MachineSetPhase::ScalingUp
                } as i32,
                ready,
                machines: Some(specs::Machines {
                    total: n,
                    healthy: if ready { n } else { 0 },
                    connected: n,
                    requested: n,
                }),
                machine_allocation: spec.machine_allocation.clone(),
                ..Default::default()
            };
            let labels: Vec<(&str, &str)> = m
                .labels
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            ensure(
                store,
                MACHINE_SET_STATUSES,
                &m.id,
                MACHINE_SET_STATUS_OWNER,
                &labels,
                status.encode_to_vec(),
            );
            if m.labels.contains_key(LABEL_ROLE_CONTROLPLANE) {
                let cluster = label(&ms, LABEL_CLUSTER).unwrap_or("");
                ensure(
                    store,
                    CONTROL_PLANE_STATUSES,
                    &m.id,
                    CONTROL_PLANE_STATUS_OWNER,
                    &[(LABEL_CLUSTER, cluster), (LABEL_MACHINE_SET, &m.id)],
                    Vec::new(),
                );
            }
        }

        // MachineSetNodes → ClusterMachineStatuses.
        for id in &dirty.nodes {
            let Some(node) = store.get(NS, MACHINE_SET_NODES, id) else {
                self.orphaned(store, MACHINE_SET_NODES, id);
                continue;
            };
            let mut labels: Vec<(&str, &str)> = vec![];
            for k in [
                LABEL_CLUSTER,
                LABEL_MACHINE_SET,
                LABEL_ROLE_CONTROLPLANE,
                LABEL_ROLE_WORKER,
            ] {
                if let Some(v) = label(&node, k) {
                    labels.push((k, v));
                }
            }
            ensure(
                store,
                CLUSTER_MACHINE_STATUSES,
                id,
                CLUSTER_MACHINE_STATUS_OWNER,
                &labels,
                specs::ClusterMachineStatusSpec { ready: true }.encode_to_vec(),
            );
        }

        // Clusters.
        for id in &dirty.clusters {
            let Some(cluster) = store.get(NS, CLUSTERS, id) else {
                self.orphaned(store, CLUSTERS, id);
                continue;
            };
            let spec: specs::ClusterSpec = spec_of(&cluster);
            if tearing_down(&cluster) {
                self.cluster_teardown(store, &cluster);
                continue;
            }
            store.add_finalizer(NS, CLUSTERS, id, CLUSTER_CONTROLLER);
            if store.get(NS, CLUSTER_UUIDS, id).is_none() {
                let uuid = uuid::Uuid::new_v4().to_string();
                ensure(
                    store,
                    CLUSTER_UUIDS,
                    id,
                    CLUSTER_UUID_OWNER,
                    &[(LABEL_CLUSTER_UUID, &uuid)],
                    specs::ClusterUuid { uuid: uuid.clone() }.encode_to_vec(),
                );
            }
            let ready = self.ready(CLUSTER_STATUSES, id, healthy, delay, now, &mut wake);
            let nodes = store.list_labeled(NS, MACHINE_SET_NODES, LABEL_CLUSTER, id);
            let n = nodes.len() as u32;
            let status = specs::ClusterStatusSpec {
                available: true,
                machines: Some(specs::Machines {
                    total: n,
                    healthy: if ready { n } else { 0 },
                    connected: n,
                    requested: n,
                }),
                phase: if ready {
                    specs::cluster_status_spec::Phase::Running
                } else {
                    specs::cluster_status_spec::Phase::ScalingUp
                } as i32,
                ready,
                kubernetes_api_ready: ready,
                controlplane_ready: ready,
                has_connected_control_planes: ready,
                use_embedded_discovery_service: spec
                    .features
                    .as_ref()
                    .is_some_and(|f| f.use_embedded_discovery_service),
                talos_version: spec.talos_version.clone(),
                kubernetes_version: spec.kubernetes_version.clone(),
            };
            ensure(
                store,
                CLUSTER_STATUSES,
                id,
                CLUSTER_STATUS_OWNER,
                &[],
                status.encode_to_vec(),
            );
            let k8s = specs::KubernetesUpgradeStatusSpec {
                phase: specs::kubernetes_upgrade_status_spec::Phase::Done as i32,
                last_upgrade_version: spec.kubernetes_version.clone(),
                ..Default::default()
            };
            ensure(
                store,
                KUBERNETES_UPGRADE_STATUSES,
                id,
                KUBERNETES_UPGRADE_OWNER,
                &[(LABEL_CLUSTER, id)],
                k8s.encode_to_vec(),
            );
            let talos = specs::TalosUpgradeStatusSpec {
                phase: specs::talos_upgrade_status_spec::Phase::Done as i32,
                last_upgrade_version: spec.talos_version.clone(),
                ..Default::default()
            };
            // No cluster label: Omni v1.9.3's TalosUpgradeStatus controller sets none.
            ensure(
                store,
                TALOS_UPGRADE_STATUSES,
                id,
                TALOS_UPGRADE_OWNER,
                &[],
                talos.encode_to_vec(),
            );
            ensure(
                store,
                LOAD_BALANCER_STATUSES,
                id,
                LOAD_BALANCER_OWNER,
                &[(LABEL_CLUSTER, id)],
                specs::LoadBalancerStatusSpec {
                    healthy: true,
                    stopped: false,
                }
                .encode_to_vec(),
            );
        }
        next
    }

    /// The controller-owned statuses of a parent that is gone go with it.
    fn orphaned(&mut self, store: &Store, parent: &str, id: &str) {
        for (ty, _) in STATUS_PARENTS.iter().filter(|(_, p)| *p == parent) {
            if store
                .get(NS, ty, id)
                .is_some_and(|r| !md(&r).owner.is_empty())
            {
                store.force_destroy(NS, ty, id);
            }
            self.ready_at.remove(&(ty.to_string(), id.to_string()));
        }
    }

    /// ClusterController's cleanup: workers, then control planes, then the cluster's patches,
    /// manifests, extensions and health checks; then the status resources and the finalizer.
    fn cluster_teardown(&mut self, store: &Store, cluster: &Resource) {
        let id = md(cluster).id.clone();
        if let Some(st) = store.get(NS, CLUSTER_STATUSES, &id) {
            let mut s: specs::ClusterStatusSpec = spec_of(&st);
            s.phase = specs::cluster_status_spec::Phase::Destroying as i32;
            s.ready = false;
            ensure(
                store,
                CLUSTER_STATUSES,
                &id,
                CLUSTER_STATUS_OWNER,
                &[],
                s.encode_to_vec(),
            );
        }
        let sets = store.list_labeled(NS, MACHINE_SETS, LABEL_CLUSTER, &id);
        let (cps, workers): (Vec<_>, Vec<_>) = sets
            .into_iter()
            .partition(|s| md(s).labels.contains_key(LABEL_ROLE_CONTROLPLANE));
        if !tear_down_all(store, &workers) {
            return;
        }
        if !tear_down_all(store, &cps) {
            return;
        }
        let mut rest = Vec::new();
        for ty in [
            CONFIG_PATCHES,
            KUBERNETES_MANIFEST_GROUPS,
            EXTENSIONS_CONFIGURATIONS,
            KUBERNETES_HEALTH_CHECKS,
        ] {
            rest.extend(
                store
                    .list_labeled(NS, ty, LABEL_CLUSTER, &id)
                    .into_iter()
                    .filter(|r| md(r).owner.is_empty()),
            );
        }
        if !tear_down_all(store, &rest) {
            return;
        }
        for ty in [
            CLUSTER_STATUSES,
            KUBERNETES_UPGRADE_STATUSES,
            TALOS_UPGRADE_STATUSES,
            LOAD_BALANCER_STATUSES,
            CLUSTER_UUIDS,
        ] {
            store.force_destroy(NS, ty, &id);
        }
        self.ready_at
            .remove(&(CLUSTER_STATUSES.to_string(), id.clone()));
        store.remove_finalizer(NS, CLUSTERS, &id, CLUSTER_CONTROLLER);
    }
}

fn labels_of(r: &Resource) -> Vec<(&str, &str)> {
    md(r)
        .labels
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}
