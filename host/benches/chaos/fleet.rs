//! The fleet the chaos run drives, as a GitOps tool would hold it: what each object should be (the latest spec the
//! driver applied), which objects are deleted and waiting to be created again, and the history of every change,
//! so a broken invariant can name the object and what was done to it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::{Value, json};

pub const API: &str = "omni.texashpc.com/v1alpha1";
pub const NAMESPACE: &str = "chaos";
pub const CONNECTION: &str = "omni";
pub const SERVICE_ACCOUNT_SECRET: &str = "omni-service-account";
/// Where OmniSecretSync targets land in the workload clusters.
pub const SYNC_NAMESPACE: &str = "synced";
/// Where the Helm releases live in the workload clusters.
pub const RELEASE_NAMESPACE: &str = "apps";

/// How big the fleet is.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub clusters: usize,
    pub workloads: usize,
    pub releases_per_workload: usize,
    pub exports: usize,
    pub syncs: usize,
}

impl Shape {
    /// Clusters the Helm releases, exports and secret syncs point at: edited, never deleted (their kubeconfigs and
    /// workload clusters stay), so what hangs off them always has a cluster to belong to.
    pub fn stable(&self) -> usize {
        self.workloads.max(self.exports).max(1)
    }
}

/// One object (with its children, for a cluster) the driver manages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Unit {
    Cluster(usize),
    Release(usize),
    Export(usize),
    Sync(usize),
}

/// What the driver last applied for one unit.
#[derive(Debug, Clone)]
pub struct Wanted {
    /// Edits so far; each edit picks new values from it.
    pub edits: u64,
    /// Deleted and not yet created again.
    pub deleted: bool,
}

pub struct Fleet {
    pub shape: Shape,
    pub omni_endpoint: String,
    pub repository: String,
    pub wanted: BTreeMap<Unit, Wanted>,
    /// What was done to each object, with the time since the run started.
    pub history: BTreeMap<Unit, Vec<String>>,
    /// Deletions of each cluster whose policy destroys it in Omni (not orphaned), with their times.
    pub destroying_deletions: BTreeMap<String, Vec<Duration>>,
    /// Deleted units waiting to be created again, and when.
    pub recreate: Vec<(Instant, Unit)>,
    /// What happened to the whole system (processes killed, Omni restarted), with times, for failure reports.
    pub events: Vec<String>,
    started: Instant,
}

impl Fleet {
    pub fn new(shape: Shape, omni_endpoint: &str, repository: &str) -> Fleet {
        let mut wanted = BTreeMap::new();
        let fresh = || Wanted {
            edits: 0,
            deleted: false,
        };
        for i in 0..shape.clusters {
            wanted.insert(Unit::Cluster(i), fresh());
        }
        for r in 0..shape.workloads * shape.releases_per_workload {
            wanted.insert(Unit::Release(r), fresh());
        }
        for e in 0..shape.exports {
            wanted.insert(Unit::Export(e), fresh());
        }
        for s in 0..shape.syncs {
            wanted.insert(Unit::Sync(s), fresh());
        }
        Fleet {
            shape,
            omni_endpoint: omni_endpoint.to_string(),
            repository: repository.to_string(),
            wanted,
            history: BTreeMap::new(),
            destroying_deletions: BTreeMap::new(),
            recreate: Vec::new(),
            events: Vec::new(),
            started: Instant::now(),
        }
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    pub fn note(&mut self, unit: Unit, what: String) {
        let at = self.started.elapsed().as_secs_f64();
        self.history
            .entry(unit)
            .or_default()
            .push(format!("{at:.1}s {what}"));
    }

    /// Records something that happened to the whole system.
    pub fn event(&mut self, what: String) {
        let at = self.started.elapsed().as_secs_f64();
        self.events.push(format!("{at:.1}s {what}"));
    }

    /// The history of one unit, for a failure message.
    pub fn story(&self, unit: Unit) -> String {
        match self.history.get(&unit) {
            Some(h) if !h.is_empty() => h.join("; "),
            _ => "created at the start, never changed".into(),
        }
    }

    /// Whose name is this (a cluster's children and its Omni resources carry the cluster's).
    pub fn unit_named(&self, name: &str) -> Option<Unit> {
        self.wanted.keys().copied().find(|u| self.name(*u) == name)
    }

    pub fn name(&self, unit: Unit) -> String {
        match unit {
            Unit::Cluster(i) => cluster_name(i),
            Unit::Release(r) => format!(
                "app-{}-{}",
                r / self.shape.releases_per_workload,
                r % self.shape.releases_per_workload
            ),
            Unit::Export(e) => format!("export-{e}"),
            Unit::Sync(s) => format!("sync-{s}"),
        }
    }

    /// A cluster's deletion policy: every fifth is orphaned (left in Omni when its object goes).
    pub fn orphaned(i: usize) -> bool {
        i % 5 == 4
    }

    pub fn is_stable_cluster(&self, i: usize) -> bool {
        i < self.shape.stable()
    }

    /// The workload cluster a release or a secret sync installs into.
    pub fn workload_of(&self, unit: Unit) -> Option<usize> {
        match unit {
            Unit::Release(r) => Some(r / self.shape.releases_per_workload),
            Unit::Sync(s) => Some(s % self.shape.workloads.max(1)),
            _ => None,
        }
    }

    /// The objects one unit is made of, as the driver applies them (its current edits).
    pub fn objects(&self, unit: Unit) -> Vec<Value> {
        let edits = self.wanted.get(&unit).map_or(0, |w| w.edits);
        let meta = |name: &str| json!({"name": name, "namespace": NAMESPACE});
        match unit {
            Unit::Cluster(i) => {
                let cluster = cluster_name(i);
                let cp_machine = format!("{i:08x}-1111-4111-8111-111111111111");
                let worker_machine = format!("{i:08x}-2222-4222-8222-222222222222");
                let rolling = json!({"type": "Rolling", "rolling": {"maxParallelism": 1}});
                let mut spec = json!({
                    "connectionRef": {"name": CONNECTION},
                    "kubernetes": {"version": "v1.35.0", "manifests": [{"name": "apps-namespace", "mode": "full",
                        "inline": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}]}]},
                    "talos": {"version": "v1.13.2"},
                    "features": {"enableWorkloadProxy": Self::workload_proxy(edits)},
                    "syncInterval": "5m"});
                if Self::orphaned(i) {
                    spec["deletePolicy"] = json!({"orphan": true});
                }
                let mut out = vec![
                    json!({"apiVersion": API, "kind": "OmniCluster", "metadata": meta(&cluster), "spec": spec}),
                    json!({"apiVersion": API, "kind": "OmniControlPlane", "metadata": meta(&format!("{cluster}-cp")), "spec": {
                        "clusterRef": {"name": cluster}, "machines": [cp_machine]}}),
                    json!({"apiVersion": API, "kind": "OmniWorkers", "metadata": meta(&format!("{cluster}-workers")), "spec": {
                        "clusterRef": {"name": cluster}, "workerSetName": "workers", "machines": [worker_machine],
                        "updateStrategy": rolling, "upgradeStrategy": rolling}}),
                ];
                for (suffix, machine) in [("m0", &cp_machine), ("m1", &worker_machine)] {
                    out.push(json!({"apiVersion": API, "kind": "OmniMachine", "metadata": meta(&format!("{cluster}-{suffix}")),
                        "spec": {"clusterRef": {"name": cluster}, "machineID": machine, "install": {"disk": "/dev/nvme0n1"}}}));
                }
                out
            }
            Unit::Release(r) => {
                let w = r / self.shape.releases_per_workload;
                let (replicas, message) = Self::release_values(r, edits);
                vec![
                    json!({"apiVersion": API, "kind": "OmniHelmRelease", "metadata": meta(&self.name(unit)), "spec": {
                    "clusterRef": {"name": cluster_name(w)},
                    "kubeconfigSecretRef": {"name": workload_secret(w), "key": "kubeconfig"},
                    "namespace": RELEASE_NAMESPACE, "createNamespace": true, "wait": r % 2 == 0, "timeout": "1m",
                    "chart": {"repository": self.repository, "chart": "hello", "version": "0.1.0",
                        "values": {"replicaCount": replicas, "message": message}}}}),
                ]
            }
            Unit::Export(e) => vec![
                json!({"apiVersion": API, "kind": "OmniKubeconfigExport", "metadata": meta(&self.name(unit)), "spec": {
                "clusterRef": {"name": cluster_name(e)},
                "targetSecretRef": {"name": export_secret(e), "key": "kubeconfig"},
                "serviceAccount": {"user": "automation", "groups": ["omni-automation"]},
                "ttl": "24h", "renewBefore": "4h", "deletionPolicy": "Delete"}}),
            ],
            Unit::Sync(s) => {
                let w = s % self.shape.workloads.max(1);
                vec![
                    json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": meta(&source_secret(s)),
                        "stringData": {"token": Self::sync_value(s, edits)}}),
                    json!({"apiVersion": API, "kind": "OmniSecretSync", "metadata": meta(&self.name(unit)), "spec": {
                        "clusterRef": {"name": cluster_name(w)},
                        "kubeconfigSecretRef": {"name": workload_secret(w), "key": "kubeconfig"},
                        "sourceSecretRef": {"name": source_secret(s)},
                        "targetSecretRef": {"name": format!("synced-{s}"), "namespace": SYNC_NAMESPACE},
                        "createNamespace": true, "deletionPolicy": "Delete"}}),
                ]
            }
        }
    }

    /// The objects to delete for a unit (a secret sync's source Secret stays: the sync is what goes).
    pub fn deleted_objects(&self, unit: Unit) -> Vec<(&'static str, &'static str, String)> {
        let name = self.name(unit);
        match unit {
            Unit::Cluster(_) => vec![
                (API, "OmniMachine", format!("{name}-m0")),
                (API, "OmniMachine", format!("{name}-m1")),
                (API, "OmniWorkers", format!("{name}-workers")),
                (API, "OmniControlPlane", format!("{name}-cp")),
                (API, "OmniCluster", name),
            ],
            Unit::Release(_) => vec![(API, "OmniHelmRelease", name)],
            Unit::Export(_) => vec![(API, "OmniKubeconfigExport", name)],
            Unit::Sync(_) => vec![(API, "OmniSecretSync", name)],
        }
    }

    pub fn workload_proxy(edits: u64) -> bool {
        edits.is_multiple_of(2)
    }

    pub fn release_values(r: usize, edits: u64) -> (u64, String) {
        (
            1 + (r as u64 + edits) % 3,
            format!("release {r} edit {edits}"),
        )
    }

    /// The digest the operator labels a revision of release `r` with, at `edits` (the chart's location and
    /// version and the values, as the object gives them, and the chart's content digest when recorded).
    pub fn release_digest(&self, r: usize, edits: u64, content: Option<&str>) -> String {
        let (replicas, message) = Self::release_values(r, edits);
        omni_operator::helm::releases::source_digest(
            &omni_operator::helm::releases::ChartLocation::Repository {
                url: self.repository.clone(),
                name: "hello".into(),
            },
            "0.1.0",
            &serde_json::json!({"replicaCount": replicas, "message": message}),
            None,
            content,
        )
    }

    /// A secret sync's source value: a credential the leak scan looks for.
    pub fn sync_value(s: usize, edits: u64) -> String {
        format!("chaos-secret-{s}-{edits}-5f1c9a3e7b")
    }

    /// Every value the run gave a source Secret, for the leak scan.
    pub fn sync_values(&self) -> Vec<String> {
        let mut out = Vec::new();
        for s in 0..self.shape.syncs {
            let edits = self.wanted.get(&Unit::Sync(s)).map_or(0, |w| w.edits);
            out.extend((0..=edits).map(|e| Self::sync_value(s, e)));
        }
        out
    }

    /// The objects the fleet starts from besides its units: the connection and its Secret, the workload clusters'
    /// kubeconfig Secrets.
    pub fn base_objects(&self, key: &str, workload_kubeconfigs: &[String]) -> Result<Vec<Value>> {
        anyhow::ensure!(
            workload_kubeconfigs.len() >= self.shape.workloads,
            "a kubeconfig for every workload cluster"
        );
        let mut out = vec![
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
            json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": {"name": SERVICE_ACCOUNT_SECRET, "namespace": NAMESPACE},
                "stringData": {"serviceAccountKey": key}}),
            json!({"apiVersion": API, "kind": "OmniConnection", "metadata": {"name": CONNECTION, "namespace": NAMESPACE},
                "spec": {"endpoint": self.omni_endpoint, "auth": {"serviceAccountSecretRef": {"name": SERVICE_ACCOUNT_SECRET, "key": "serviceAccountKey"}}}}),
        ];
        for (w, kubeconfig) in workload_kubeconfigs.iter().enumerate() {
            out.push(
                json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": workload_secret(w), "namespace": NAMESPACE},
                "stringData": {"kubeconfig": kubeconfig}}),
            );
        }
        Ok(out)
    }
}

pub fn cluster_name(i: usize) -> String {
    format!("c-{i:04}")
}

pub fn workload_secret(w: usize) -> String {
    format!("workload-{w}-kubeconfig")
}

pub fn export_secret(e: usize) -> String {
    format!("{}-exported-kubeconfig", cluster_name(e))
}

pub fn source_secret(s: usize) -> String {
    format!("source-{s}")
}
