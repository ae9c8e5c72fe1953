//! Omni-like controllers (spec §4.6, §8.3 items 9-12, 14), run by one background task after every store
//! change. Each pass reconciles everything in ID order and only writes what differs, so passes settle and
//! the outcome is deterministic. Controller-created resources carry the controller name as owner.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use omni_wire::cosi::Resource;
use omni_wire::{phase, specs};
use prost::Message as _;

use crate::service::Shared;
use crate::store::{Store, md, new_resource};
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
    let mut ctl = Controllers { ready_at: HashMap::new() };
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
            _ = shutdown.changed() => return,
        }
    }
}

struct Controllers {
    /// When a ClusterStatus / MachineSetStatus may turn ready (created + controller_delay).
    ready_at: HashMap<(String, String), Instant>,
}

fn spec_of<M: prost::Message + Default>(r: &Resource) -> M {
    M::decode(r.spec.as_ref().map(|s| s.proto_spec.as_slice()).unwrap_or(&[])).unwrap_or_default()
}

fn label<'a>(r: &'a Resource, k: &str) -> Option<&'a str> {
    md(r).labels.get(k).map(String::as_str)
}

fn tearing_down(r: &Resource) -> bool {
    md(r).phase == phase::TEARING_DOWN
}

/// Creates or updates a controller-owned resource when its labels or spec differ.
fn ensure(store: &Store, ty: &str, id: &str, owner: &str, labels: &[(&str, &str)], spec: Vec<u8>) {
    let labels: HashMap<String, String> = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
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
            let same_spec = cur.spec.as_ref().map(|s| s.proto_spec.as_slice()) == Some(spec.as_slice());
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

impl Controllers {
    /// One pass. Returns the earliest pending "turns ready" deadline.
    fn reconcile(&mut self, shared: &Shared) -> Option<Instant> {
        let store = &shared.store;
        let healthy = shared.config.cluster_health.load(Ordering::SeqCst);
        let delay = shared.config.controller_delay;
        let now = Instant::now();
        let mut next: Option<Instant> = None;
        let mut wake = |t: Instant| next = Some(next.map_or(t, |n: Instant| n.min(t)));

        // Links: tearing one down removes the machine (§4.6); before the destroy
        // controller below removes the Link itself.
        for link in store.list(NS, LINKS) {
            if tearing_down(&link) {
                store.force_destroy(NS, MACHINE_STATUSES, &md(&link).id);
            }
        }

        // Generic destroy controller (§3.1.5).
        for ty in USER_MANAGED {
            for r in store.list(NS, ty) {
                let m = md(&r);
                if m.phase == phase::TEARING_DOWN && m.owner.is_empty() && m.finalizers.is_empty() {
                    let _ = store.destroy(NS, ty, &m.id);
                }
            }
        }

        // MachineSets.
        for ms in store.list(NS, MACHINE_SETS) {
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
                    ensure(store, MACHINE_SET_STATUSES, &m.id, MACHINE_SET_STATUS_OWNER, &labels_of(&st), s.encode_to_vec());
                }
                if nodes_gone && patches_gone {
                    store.force_destroy(NS, MACHINE_SET_STATUSES, &m.id);
                    store.force_destroy(NS, CONTROL_PLANE_STATUSES, &m.id);
                    store.remove_finalizer(NS, MACHINE_SETS, &m.id, MACHINE_SET_CONTROLLER);
                    self.ready_at.remove(&(MACHINE_SET_STATUSES.to_string(), m.id.clone()));
                }
                continue;
            }
            store.add_finalizer(NS, MACHINE_SETS, &m.id, MACHINE_SET_CONTROLLER);
            let key = (MACHINE_SET_STATUSES.to_string(), m.id.clone());
            let at = *self.ready_at.entry(key).or_insert(now + delay);
            let ready = healthy && now >= at;
            if now < at {
                wake(at);
            }
            let spec: specs::MachineSetSpec = spec_of(&ms);
            let n = nodes.len() as u32;
            let status = specs::MachineSetStatusSpec {
                phase: if ready { specs::MachineSetPhase::Running } else { specs::MachineSetPhase::ScalingUp } as i32,
                ready,
                machines: Some(specs::Machines { total: n, healthy: if ready { n } else { 0 }, connected: n, requested: n }),
                machine_allocation: spec.machine_allocation.clone(),
                ..Default::default()
            };
            let labels: Vec<(&str, &str)> = m.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            ensure(store, MACHINE_SET_STATUSES, &m.id, MACHINE_SET_STATUS_OWNER, &labels, status.encode_to_vec());
            if m.labels.contains_key(LABEL_ROLE_CONTROLPLANE) {
                let cluster = label(&ms, LABEL_CLUSTER).unwrap_or("");
                ensure(store, CONTROL_PLANE_STATUSES, &m.id, CONTROL_PLANE_STATUS_OWNER, &[(LABEL_CLUSTER, cluster), (LABEL_MACHINE_SET, &m.id)], Vec::new());
            }
        }

        // MachineSetNodes → ClusterMachineStatuses.
        for node in store.list(NS, MACHINE_SET_NODES) {
            let id = md(&node).id.clone();
            let mut labels: Vec<(&str, &str)> = vec![];
            for k in [LABEL_CLUSTER, LABEL_MACHINE_SET, LABEL_ROLE_CONTROLPLANE, LABEL_ROLE_WORKER] {
                if let Some(v) = label(&node, k) {
                    labels.push((k, v));
                }
            }
            ensure(store, CLUSTER_MACHINE_STATUSES, &id, CLUSTER_MACHINE_STATUS_OWNER, &labels, specs::ClusterMachineStatusSpec { ready: true }.encode_to_vec());
        }

        // Clusters.
        for cluster in store.list(NS, CLUSTERS) {
            let id = md(&cluster).id.clone();
            let spec: specs::ClusterSpec = spec_of(&cluster);
            if tearing_down(&cluster) {
                self.cluster_teardown(store, &cluster);
                continue;
            }
            store.add_finalizer(NS, CLUSTERS, &id, CLUSTER_CONTROLLER);
            if store.get(NS, CLUSTER_UUIDS, &id).is_none() {
                let uuid = uuid::Uuid::new_v4().to_string();
                ensure(store, CLUSTER_UUIDS, &id, CLUSTER_UUID_OWNER, &[(LABEL_CLUSTER_UUID, &uuid)], specs::ClusterUuid { uuid: uuid.clone() }.encode_to_vec());
            }
            let key = (CLUSTER_STATUSES.to_string(), id.clone());
            let at = *self.ready_at.entry(key).or_insert(now + delay);
            let ready = healthy && now >= at;
            if now < at {
                wake(at);
            }
            let nodes = store.list_labeled(NS, MACHINE_SET_NODES, LABEL_CLUSTER, &id);
            let n = nodes.len() as u32;
            let status = specs::ClusterStatusSpec {
                available: true,
                machines: Some(specs::Machines { total: n, healthy: if ready { n } else { 0 }, connected: n, requested: n }),
                phase: if ready { specs::cluster_status_spec::Phase::Running } else { specs::cluster_status_spec::Phase::ScalingUp } as i32,
                ready,
                kubernetes_api_ready: ready,
                controlplane_ready: ready,
                has_connected_control_planes: ready,
                use_embedded_discovery_service: spec.features.as_ref().is_some_and(|f| f.use_embedded_discovery_service),
                talos_version: spec.talos_version.clone(),
                kubernetes_version: spec.kubernetes_version.clone(),
            };
            ensure(store, CLUSTER_STATUSES, &id, CLUSTER_STATUS_OWNER, &[], status.encode_to_vec());
            let k8s = specs::KubernetesUpgradeStatusSpec {
                phase: specs::kubernetes_upgrade_status_spec::Phase::Done as i32,
                last_upgrade_version: spec.kubernetes_version.clone(),
                ..Default::default()
            };
            ensure(store, KUBERNETES_UPGRADE_STATUSES, &id, KUBERNETES_UPGRADE_OWNER, &[(LABEL_CLUSTER, &id)], k8s.encode_to_vec());
            let talos = specs::TalosUpgradeStatusSpec {
                phase: specs::talos_upgrade_status_spec::Phase::Done as i32,
                last_upgrade_version: spec.talos_version.clone(),
                ..Default::default()
            };
            // No cluster label: Omni v1.9.3's TalosUpgradeStatus controller sets none (§4.5).
            ensure(store, TALOS_UPGRADE_STATUSES, &id, TALOS_UPGRADE_OWNER, &[], talos.encode_to_vec());
            ensure(store, LOAD_BALANCER_STATUSES, &id, LOAD_BALANCER_OWNER, &[(LABEL_CLUSTER, &id)], specs::LoadBalancerStatusSpec { healthy: true, stopped: false }.encode_to_vec());
        }

        // Status resources whose parent is gone.
        for (ty, parent) in [
            (CLUSTER_STATUSES, CLUSTERS),
            (CLUSTER_UUIDS, CLUSTERS),
            (KUBERNETES_UPGRADE_STATUSES, CLUSTERS),
            (TALOS_UPGRADE_STATUSES, CLUSTERS),
            (LOAD_BALANCER_STATUSES, CLUSTERS),
            (MACHINE_SET_STATUSES, MACHINE_SETS),
            (CONTROL_PLANE_STATUSES, MACHINE_SETS),
            (CLUSTER_MACHINE_STATUSES, MACHINE_SET_NODES),
        ] {
            for r in store.list(NS, ty) {
                let m = md(&r);
                if !m.owner.is_empty() && store.get(NS, parent, &m.id).is_none() {
                    store.force_destroy(NS, ty, &m.id);
                    self.ready_at.remove(&(ty.to_string(), m.id.clone()));
                }
            }
        }
        next
    }

    /// ClusterController's cleanup (§4.6): workers, then control planes, then the cluster's patches,
    /// manifests, extensions and health checks; then the status resources and the finalizer.
    fn cluster_teardown(&mut self, store: &Store, cluster: &Resource) {
        let id = md(cluster).id.clone();
        if let Some(st) = store.get(NS, CLUSTER_STATUSES, &id) {
            let mut s: specs::ClusterStatusSpec = spec_of(&st);
            s.phase = specs::cluster_status_spec::Phase::Destroying as i32;
            s.ready = false;
            ensure(store, CLUSTER_STATUSES, &id, CLUSTER_STATUS_OWNER, &[], s.encode_to_vec());
        }
        let sets = store.list_labeled(NS, MACHINE_SETS, LABEL_CLUSTER, &id);
        let (cps, workers): (Vec<_>, Vec<_>) = sets.into_iter().partition(|s| md(s).labels.contains_key(LABEL_ROLE_CONTROLPLANE));
        if !tear_down_all(store, &workers) {
            return;
        }
        if !tear_down_all(store, &cps) {
            return;
        }
        let mut rest = Vec::new();
        for ty in [CONFIG_PATCHES, KUBERNETES_MANIFEST_GROUPS, EXTENSIONS_CONFIGURATIONS, KUBERNETES_HEALTH_CHECKS] {
            rest.extend(store.list_labeled(NS, ty, LABEL_CLUSTER, &id).into_iter().filter(|r| md(r).owner.is_empty()));
        }
        if !tear_down_all(store, &rest) {
            return;
        }
        for ty in [CLUSTER_STATUSES, KUBERNETES_UPGRADE_STATUSES, TALOS_UPGRADE_STATUSES, LOAD_BALANCER_STATUSES, CLUSTER_UUIDS] {
            store.force_destroy(NS, ty, &id);
        }
        self.ready_at.remove(&(CLUSTER_STATUSES.to_string(), id.clone()));
        store.remove_finalizer(NS, CLUSTERS, &id, CLUSTER_CONTROLLER);
    }
}

fn labels_of(r: &Resource) -> Vec<(&str, &str)> {
    md(r).labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}
