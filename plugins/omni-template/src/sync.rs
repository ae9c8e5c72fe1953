//! Keeping Omni in step with a template, and deleting a cluster, as Omni's client does both, reshaped for a
//! level-triggered reconcile: every call reads what Omni has, does what it can right now, and says whether it is
//! done or waiting. Omni's client blocked on a watch until every torn-down resource was destroyed, with no timeout;
//! here a resource still held by finalizers makes the call return [`Progress::Waiting`] and the next reconcile picks
//! up where this one stopped. So a sync never outlives its call's deadline, a host killed mid-sync converges on
//! restart (IDs are deterministic and every step is re-derived from Omni's state), and a resource that vanished
//! between listing and teardown counts as gone (the upstream client waited for it forever).
//!
//! Differences are judged on uncompressed content and decoded spec messages, never on compressed bytes.

use std::collections::{BTreeMap, BTreeSet};

use omni_plugin_sdk::omni::{LabelTerm, OmniResource, Phase, ResourceKey};
use omni_plugin_sdk::{Host, HostError};
use prost::Message;

use crate::specs;
use crate::translate::{labels, types};

/// Time a call keeps in reserve: no new Omni write starts with less than this left, so the outputs of a call that
/// ran out of time are still committed.
pub const RESERVE_MS: u64 = 1_500;

/// How a sync or delete ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// Omni matches the template (or the cluster is gone).
    Done,
    /// Omni is still tearing something down, or the call ran out of time; call again.
    Waiting(String),
}

/// What one sync or delete did: omnictl's output lines, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub lines: Vec<String>,
    pub result: Result<Progress, String>,
}

/// Omni's ordering of writes by type.
fn rank(type_: &str) -> u8 {
    match type_ {
        types::CLUSTERS => 1,
        types::EXTENSIONS_CONFIGURATIONS => 2,
        types::CONFIG_PATCHES => 3,
        types::KUBERNETES_MANIFEST_GROUPS => 4,
        types::KUBERNETES_HEALTH_CHECKS => 5,
        types::MACHINE_SETS => 6,
        types::MACHINE_SET_NODES => 7,
        types::KERNEL_ARGS => 8,
        _ => 9,
    }
}

fn order(a: &ResourceKey, b: &ResourceKey) -> std::cmp::Ordering {
    (rank(&a.type_), &a.id).cmp(&(rank(&b.type_), &b.id))
}

/// The types a template's resources are listed by (`omni.sidero.dev/cluster=<name>`).
const LISTED: [&str; 6] = [
    types::MACHINE_SETS,
    types::MACHINE_SET_NODES,
    types::CONFIG_PATCHES,
    types::EXTENSIONS_CONFIGURATIONS,
    types::KUBERNETES_MANIFEST_GROUPS,
    types::KUBERNETES_HEALTH_CHECKS,
];

type Key = (String, String);

fn key_of(r: &OmniResource) -> Key {
    (r.key.type_.clone(), r.key.id.clone())
}

/// One sync or delete against one connection.
struct Run<'h, H: Host> {
    host: &'h H,
    connection: &'h str,
    cluster: &'h str,
    lines: Vec<String>,
}

/// Why a run stopped before the end.
enum Stop {
    Failed(String),
    Waiting(String),
}

impl From<HostError> for Stop {
    fn from(e: HostError) -> Self {
        Stop::Failed(e.message().to_string())
    }
}

impl<'h, H: Host> Run<'h, H> {
    fn new(host: &'h H, connection: &'h str, cluster: &'h str) -> Self {
        Run {
            host,
            connection,
            cluster,
            lines: Vec::new(),
        }
    }

    fn finish(self, outcome: Result<(), Stop>) -> Report {
        let result = match outcome {
            Ok(()) => Ok(Progress::Done),
            Err(Stop::Waiting(why)) => Ok(Progress::Waiting(why)),
            Err(Stop::Failed(e)) => Err(e),
        };
        Report {
            lines: self.lines,
            result,
        }
    }

    /// Refuses to start another write when the call is about to run out of time.
    fn check_time(&self) -> Result<(), Stop> {
        if self.host.remaining_ms() < RESERVE_MS {
            return Err(Stop::Waiting(
                "this reconcile ran out of time; the next one continues".into(),
            ));
        }
        Ok(())
    }

    /// Template resources of the cluster in Omni: owner-less, not created by Omni's
    /// machine-set-node controller, plus the KernelArgs of listed machine-set nodes.
    fn actual(&self) -> Result<BTreeMap<Key, OmniResource>, HostError> {
        Ok(self.actual_and_cluster()?.0)
    }

    /// [`Self::actual`], and what Omni answered for the cluster's own resource, kept or not (a sync that needs it
    /// again does not ask twice).
    fn actual_and_cluster(
        &self,
    ) -> Result<(BTreeMap<Key, OmniResource>, Option<OmniResource>), HostError> {
        let mut found = BTreeMap::new();
        let mut keep = |r: OmniResource| {
            if r.owner.is_empty()
                && r.label(labels::MANAGED_BY_MACHINE_SET_NODE_CONTROLLER)
                    .is_none()
            {
                found.insert(key_of(&r), r);
            }
        };
        let cluster = self.host.omni_get(
            self.connection,
            &ResourceKey::new(types::CLUSTERS, self.cluster),
        )?;
        if let Some(c) = &cluster {
            keep(c.clone());
        }
        let by_cluster = [LabelTerm::equal(labels::CLUSTER, self.cluster)];
        let mut nodes = Vec::new();
        for type_ in LISTED {
            for r in self
                .host
                .omni_list(self.connection, "default", type_, &by_cluster)?
            {
                if type_ == types::MACHINE_SET_NODES {
                    nodes.push(r.key.id.clone());
                }
                keep(r);
            }
        }
        for id in nodes {
            if let Some(k) = self
                .host
                .omni_get(self.connection, &ResourceKey::new(types::KERNEL_ARGS, &id))?
            {
                keep(k);
            }
        }
        Ok((found, cluster))
    }

    fn create(&mut self, r: &OmniResource) -> Result<(), Stop> {
        self.check_time()?;
        self.lines.push(format!("* creating {}", r.key));
        self.host.omni_create(self.connection, r).map_err(|e| match e {
            HostError::Conflict(_) => Stop::Failed(format!(
                "resource {}({}/{}) already exists for cluster {:?}, cannot create a conflicting resource for a different cluster",
                r.key.type_, r.key.namespace, r.key.id, self.cluster
            )),
            other => Stop::from(other),
        })?;
        Ok(())
    }

    fn update(&mut self, r: &OmniResource) -> Result<(), Stop> {
        self.check_time()?;
        self.lines.push(format!("* updating {}", r.key));
        self.host.omni_update(self.connection, r)?;
        Ok(())
    }

    /// Tears down and, once no finalizer holds it, destroys one resource. `Ok(false)`: still held.
    fn remove(&mut self, r: &OmniResource) -> Result<bool, Stop> {
        self.check_time()?;
        if r.phase == Phase::Running {
            self.lines.push(format!("* tearing down {}", r.key));
        }
        let free = match self.host.omni_teardown(self.connection, &r.key) {
            Ok(free) => free,
            // Gone between the read and the teardown: done (the upstream client waited for it forever).
            Err(HostError::NotFound(_)) => return Ok(true),
            Err(e) => return Err(e.into()),
        };
        if !free {
            return Ok(false);
        }
        match self.host.omni_destroy(self.connection, &r.key) {
            Ok(()) | Err(HostError::NotFound(_)) => {}
            // A finalizer arrived between teardown and destroy: wait for it like any other.
            Err(HostError::Conflict(_)) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
        self.lines.push(format!("* destroyed {}", r.key));
        Ok(true)
    }

    /// Removes phase after phase, each finished before the next starts.
    fn remove_phases(&mut self, phases: Vec<Vec<OmniResource>>) -> Result<(), Stop> {
        for mut phase in phases {
            phase.sort_by(|a, b| order(&a.key, &b.key));
            let mut held = Vec::new();
            for r in &phase {
                if !self.remove(r)? {
                    held.push(r);
                }
            }
            if !held.is_empty() {
                return Err(Stop::Waiting(waiting_for(&held)));
            }
        }
        Ok(())
    }

    /// KernelArgs the template no longer names lose their managed-by-templates annotation instead of being
    /// deleted: they belong to the machine, not to the cluster.
    fn orphan_kernel_args(&mut self, r: &OmniResource) -> Result<(), Stop> {
        let mut orphan = r.clone();
        orphan
            .annotations
            .retain(|(k, _)| k != labels::MANAGED_BY_TEMPLATES);
        self.update(&orphan)
    }

    /// What to do with a resource Omni has and the template does not: `Ok(true)` delete it.
    fn unwanted(&mut self, r: &OmniResource) -> Result<bool, Stop> {
        if r.key.type_ == types::KERNEL_ARGS {
            if r.annotations
                .iter()
                .any(|(k, _)| k == labels::MANAGED_BY_TEMPLATES)
            {
                self.orphan_kernel_args(r)?;
            }
            return Ok(false);
        }
        let owner = r.label(labels::CLUSTER).unwrap_or_default();
        if r.key.type_ != types::CLUSTERS && owner != self.cluster {
            return Err(Stop::Failed(format!(
                "resource {}({}/{}) belongs to cluster {owner:?}, but template is for cluster {:?}",
                r.key.type_, r.key.namespace, r.key.id, self.cluster
            )));
        }
        Ok(true)
    }
}

fn waiting_for(held: &[&OmniResource]) -> String {
    let names: Vec<String> = held
        .iter()
        .map(|r| {
            // Finalizers as last read (before the teardown); the teardown itself only says "still held".
            if r.finalizers.is_empty() {
                r.key.to_string()
            } else {
                format!("{} (finalizers: {})", r.key, r.finalizers.join(", "))
            }
        })
        .collect();
    format!(
        "waiting for Omni to finish tearing down {}",
        names.join(", ")
    )
}

/// Drops what Omni's cascade removes anyway and splits the rest into phase A (machine sets and
/// their nodes) and phase B (everything else).
fn delete_phases(mut doomed: Vec<OmniResource>) -> Vec<Vec<OmniResource>> {
    let sets: BTreeSet<String> = doomed
        .iter()
        .filter(|r| r.key.type_ == types::MACHINE_SETS)
        .map(|r| r.key.id.clone())
        .collect();
    let clusters: BTreeSet<String> = doomed
        .iter()
        .filter(|r| r.key.type_ == types::CLUSTERS)
        .map(|r| r.key.id.clone())
        .collect();
    doomed.retain(|r| {
        if r.key.type_ == types::MACHINE_SET_NODES
            && let Some(set) = r.label(labels::MACHINE_SET)
        {
            return !sets.contains(set);
        }
        if r.key.type_ == types::CLUSTERS || r.key.type_ == types::MACHINE_SET_NODES {
            return true;
        }
        !r.label(labels::CLUSTER)
            .is_some_and(|c| clusters.contains(c))
    });
    let (a, b): (Vec<_>, Vec<_>) = doomed.into_iter().partition(|r| {
        r.key.type_ == types::MACHINE_SET_NODES || r.key.type_ == types::MACHINE_SETS
    });
    vec![a, b]
}

/// Makes Omni match `desired` (the template's translation) for cluster `cluster`, as Omni's template sync does.
pub fn sync<H: Host>(
    host: &H,
    connection: &str,
    cluster: &str,
    desired: &[OmniResource],
) -> Report {
    let mut run = Run::new(host, connection, cluster);
    let outcome = sync_steps(&mut run, desired);
    run.finish(outcome)
}

fn sync_steps<H: Host>(run: &mut Run<'_, H>, desired: &[OmniResource]) -> Result<(), Stop> {
    let (mut actual, cluster) = run.actual_and_cluster()?;
    let cluster_key = ResourceKey::new(types::CLUSTERS, run.cluster);
    // Desired resources not found by label: KernelArgs of machines new to the template, or resources with the
    // same ID that belong elsewhere. The cluster's own resource was read just now.
    for d in desired {
        if actual.contains_key(&key_of(d)) {
            continue;
        }
        let found = if d.key == cluster_key {
            cluster.clone()
        } else {
            run.host.omni_get(run.connection, &d.key)?
        };
        if let Some(found) = found {
            if !found.owner.is_empty() && d.key.type_ != types::KERNEL_ARGS {
                return Err(Stop::Failed(format!(
                    "resource {}({}/{}) already exists for cluster {:?}, cannot create a conflicting resource for a different cluster",
                    d.key.type_, d.key.namespace, d.key.id, run.cluster
                )));
            }
            if found.owner.is_empty() {
                actual.insert(key_of(&found), found);
            }
        }
    }

    let mut creates = Vec::new();
    let mut updates = Vec::new();
    let mut reborn = Vec::new();
    let wanted: BTreeSet<Key> = desired.iter().map(key_of).collect();
    for d in desired {
        match actual.get(&key_of(d)) {
            None => creates.push(d.clone()),
            // Still being torn down (a set removed and added back quickly): it must be destroyed before it can
            // be created again; updating it would be refused as a phase conflict.
            Some(a) if a.phase == Phase::TearingDown => reborn.push((a.clone(), d.clone())),
            Some(a) if !same(d, a) => {
                let mut next = d.clone();
                next.version = a.version.clone();
                next.finalizers = a.finalizers.clone();
                updates.push(next);
            }
            Some(_) => {}
        }
    }
    let mut doomed = Vec::new();
    for (key, a) in &actual {
        if !wanted.contains(key) && run.unwanted(a)? {
            doomed.push(a.clone());
        }
    }

    reborn.sort_by(|a, b| order(&a.0.key, &b.0.key));
    let mut still_held = Vec::new();
    for (old, new) in &reborn {
        if run.remove(old)? {
            creates.push(new.clone());
        } else {
            still_held.push(old);
        }
    }
    creates.sort_by(|a, b| order(&a.key, &b.key));
    for c in &creates {
        run.create(c)?;
    }
    updates.sort_by(|a, b| order(&a.key, &b.key));
    for u in &updates {
        run.update(u)?;
    }
    run.remove_phases(delete_phases(doomed))?;
    if !still_held.is_empty() {
        return Err(Stop::Waiting(waiting_for(&still_held)));
    }
    Ok(())
}

/// What to tear down besides the cluster when `destroyMachines` is set: the cluster's
/// disconnected machines, by their Links and machine patches, and its extension configurations.
fn destroy_machines_phases<H: Host>(run: &Run<'_, H>) -> Result<Vec<Vec<OmniResource>>, HostError> {
    let (host, conn) = (run.host, run.connection);
    let machines = host.omni_list(
        conn,
        "default",
        types::MACHINE_STATUSES,
        &[
            LabelTerm::exists(labels::DISCONNECTED),
            LabelTerm::equal(labels::CLUSTER, run.cluster),
        ],
    )?;
    let mut links = Vec::new();
    let mut patches = Vec::new();
    for m in &machines {
        patches.extend(host.omni_list(
            conn,
            "default",
            types::CONFIG_PATCHES,
            &[LabelTerm::equal(labels::MACHINE, &m.key.id)],
        )?);
        if let Some(link) = host.omni_get(conn, &ResourceKey::new(types::LINKS, &m.key.id))? {
            links.push(link);
        }
    }
    let extensions = host.omni_list(
        conn,
        "default",
        types::EXTENSIONS_CONFIGURATIONS,
        &[LabelTerm::equal(labels::CLUSTER, run.cluster)],
    )?;
    Ok(vec![extensions, links, patches])
}

/// Deletes the cluster's template resources from Omni: usually just the Cluster, whose teardown Omni
/// cascades. With `destroy_machines`, the cluster's disconnected machines go first.
pub fn delete<H: Host>(
    host: &H,
    connection: &str,
    cluster: &str,
    destroy_machines: bool,
) -> Report {
    let mut run = Run::new(host, connection, cluster);
    let outcome = delete_steps(&mut run, destroy_machines);
    run.finish(outcome)
}

fn delete_steps<H: Host>(run: &mut Run<'_, H>, destroy_machines: bool) -> Result<(), Stop> {
    let actual = run.actual()?;
    let mut doomed = Vec::new();
    for a in actual.values() {
        if run.unwanted(a)? {
            doomed.push(a.clone());
        }
    }
    let mut phases = Vec::new();
    if destroy_machines {
        phases.extend(destroy_machines_phases(run)?);
    }
    phases.extend(delete_phases(doomed));
    run.remove_phases(phases)
}

/// Whether Omni's copy already says what the template says: labels and annotations as sets, and the spec
/// message's content (uncompressed, decoded), never its bytes.
pub fn same(desired: &OmniResource, actual: &OmniResource) -> bool {
    let as_set = |v: &[(String, String)]| v.iter().cloned().collect::<BTreeMap<_, _>>();
    actual.phase == Phase::Running
        && actual.unreadable.is_none()
        && as_set(&desired.labels) == as_set(&actual.labels)
        && as_set(&desired.annotations) == as_set(&actual.annotations)
        && same_spec(&desired.key.type_, &desired.spec, &actual.spec)
}

fn same_spec(type_: &str, desired: &[u8], actual: &[u8]) -> bool {
    fn decoded<M: Message + Default + PartialEq>(a: &[u8], b: &[u8]) -> bool {
        match (M::decode(a), M::decode(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }
    match type_ {
        types::CLUSTERS => decoded::<specs::ClusterSpec>(desired, actual),
        types::MACHINE_SETS => decoded::<specs::MachineSetSpec>(desired, actual),
        types::MACHINE_SET_NODES => decoded::<specs::MachineSetNodeSpec>(desired, actual),
        types::CONFIG_PATCHES => decoded::<specs::ConfigPatchSpec>(desired, actual),
        types::KUBERNETES_MANIFEST_GROUPS => {
            decoded::<specs::KubernetesManifestGroupSpec>(desired, actual)
        }
        types::KUBERNETES_HEALTH_CHECKS => {
            decoded::<specs::KubernetesHealthCheckSpec>(desired, actual)
        }
        types::EXTENSIONS_CONFIGURATIONS => {
            decoded::<specs::ExtensionsConfigurationSpec>(desired, actual)
        }
        types::KERNEL_ARGS => decoded::<specs::KernelArgsSpec>(desired, actual),
        _ => desired == actual,
    }
}
