//! Builds templates from OmniCluster objects written as JSON, and prints Omni resources in a compact, exact form
//! for golden comparisons: type, ID, labels, annotations, and the decoded spec message.

use std::collections::BTreeMap;

use omni_api::{OmniCluster, OmniControlPlane, OmniMachine, OmniWorkers};
use omni_plugin_sdk::omni::OmniResource;
use omni_template::render::{self, Rendered};
use omni_template::specs;
use omni_template::translate::types;
use prost::Message;
use serde_json::Value;

pub type Files = BTreeMap<String, Result<Vec<u8>, String>>;

fn object<T: serde::de::DeserializeOwned>(kind: &str, name: &str, spec: Value) -> T {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "omni.texashpc.com/v1alpha1", "kind": kind,
        "metadata": {"name": name, "namespace": "t"},
        "spec": spec,
    }))
    .unwrap_or_else(|e| panic!("{kind} {name}: {e}"))
}

/// The objects of one cluster, as they would be listed.
#[derive(Default)]
pub struct Objects {
    pub cluster: Option<OmniCluster>,
    pub control_plane: Option<OmniControlPlane>,
    pub workers: Vec<OmniWorkers>,
    pub machines: Vec<OmniMachine>,
}

impl Objects {
    pub fn cluster(mut self, name: &str, spec: Value) -> Self {
        self.cluster = Some(object("OmniCluster", name, spec));
        self
    }
    pub fn control_plane(mut self, name: &str, spec: Value) -> Self {
        self.control_plane = Some(object("OmniControlPlane", name, spec));
        self
    }
    pub fn workers(mut self, name: &str, spec: Value) -> Self {
        self.workers.push(object("OmniWorkers", name, spec));
        self
    }
    pub fn machine(mut self, name: &str, spec: Value) -> Self {
        self.machines.push(object("OmniMachine", name, spec));
        self
    }
    pub fn render(&self) -> Result<Rendered, String> {
        render::render(
            self.cluster.as_ref().expect("a cluster"),
            self.control_plane.as_ref().expect("a control plane"),
            &self.workers,
            &self.machines,
        )
    }
}

/// The Go operator's sample set (its `config/samples`).
pub fn sample() -> Objects {
    Objects::default()
        .cluster(
            "edge-sample",
            serde_json::json!({
                "connectionRef": {"name": "omni-sample"},
                "kubernetes": {"version": "v1.35.0", "manifests": [{"name": "sample-namespace", "mode": "full",
                    "inline": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}]}]},
                "talos": {"version": "v1.13.2"},
                "features": {"enableWorkloadProxy": true},
                "syncInterval": "5m"
            }),
        )
        .control_plane(
            "edge-sample-control-plane",
            serde_json::json!({
                "clusterRef": {"name": "edge-sample"},
                "machines": ["11111111-1111-4111-8111-111111111111"],
                "patches": [{"name": "control-plane-kubespan", "inline": {"machine": {"network": {"kubespan": {"enabled": true}}}}}]
            }),
        )
        .workers(
            "edge-sample-workers",
            serde_json::json!({
                "clusterRef": {"name": "edge-sample"},
                "workerSetName": "gpu-workers",
                "machines": ["22222222-2222-4222-8222-222222222222"],
                "updateStrategy": {"type": "Rolling", "rolling": {"maxParallelism": 1}},
                "upgradeStrategy": {"type": "Rolling", "rolling": {"maxParallelism": 1}}
            }),
        )
        .machine(
            "edge-sample-control-plane-0",
            serde_json::json!({"clusterRef": {"name": "edge-sample"}, "machineID": "11111111-1111-4111-8111-111111111111",
                "install": {"disk": "/dev/nvme0n1"}}),
        )
        .machine(
            "edge-sample-worker-0",
            serde_json::json!({"clusterRef": {"name": "edge-sample"}, "machineID": "22222222-2222-4222-8222-222222222222",
                "install": {"disk": "/dev/nvme0n1"}}),
        )
}

/// One resource per paragraph: `Type(id)`, then labels, annotations and the decoded spec.
pub fn describe(resources: &[OmniResource]) -> String {
    let mut out = String::new();
    for r in resources {
        let pairs = |v: &[(String, String)]| {
            v.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push_str(&format!("{}({})\n", r.key.type_, r.key.id));
        out.push_str(&format!("  labels: {}\n", pairs(&r.labels)));
        out.push_str(&format!("  annotations: {}\n", pairs(&r.annotations)));
        out.push_str(&format!("  spec: {}\n", spec(&r.key.type_, &r.spec)));
    }
    out
}

fn spec(type_: &str, bytes: &[u8]) -> String {
    fn d<M: Message + Default + std::fmt::Debug>(b: &[u8]) -> String {
        format!("{:?}", M::decode(b).expect("decodes"))
    }
    match type_ {
        types::CLUSTERS => d::<specs::ClusterSpec>(bytes),
        types::MACHINE_SETS => d::<specs::MachineSetSpec>(bytes),
        types::MACHINE_SET_NODES => d::<specs::MachineSetNodeSpec>(bytes),
        types::CONFIG_PATCHES => {
            let s = specs::ConfigPatchSpec::decode(bytes).expect("decodes");
            assert!(s.compressed_data.is_empty(), "content is sent uncompressed");
            format!("data={:?}", s.data)
        }
        types::KUBERNETES_MANIFEST_GROUPS => {
            let s = specs::KubernetesManifestGroupSpec::decode(bytes).expect("decodes");
            format!("mode={} data={:?}", s.mode, s.data)
        }
        types::EXTENSIONS_CONFIGURATIONS => d::<specs::ExtensionsConfigurationSpec>(bytes),
        types::KERNEL_ARGS => d::<specs::KernelArgsSpec>(bytes),
        other => panic!("unexpected type {other}"),
    }
}
