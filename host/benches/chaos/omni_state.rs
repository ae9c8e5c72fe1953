//! Omni's state against the templates: what omni-template renders and translates from a cluster's final objects
//! (the code the omni-cluster plugin runs) compared with what omni-sim stores, resource by resource, the way the
//! sync itself decides a resource is up to date (labels and annotations as sets, the spec message decoded).

use std::collections::{BTreeSet, HashMap};

use omni_api::{OmniCluster, OmniControlPlane, OmniMachine, OmniWorkers};
use omni_plugin_sdk::omni::{OmniResource, Phase, ResourceKey};
use omni_sim::store::Store;
use omni_template::model::NoFiles;
use omni_template::translate::{labels, types};
use omni_template::{render, sync, translate};
use serde_json::Value;

use super::fleet::{API, NAMESPACE};

/// The template-managed types a cluster's resources carry its label on; KernelArgs do not.
const LABELLED: [&str; 6] = [
    types::MACHINE_SETS,
    types::MACHINE_SET_NODES,
    types::CONFIG_PATCHES,
    types::KUBERNETES_MANIFEST_GROUPS,
    types::KUBERNETES_HEALTH_CHECKS,
    types::EXTENSIONS_CONFIGURATIONS,
];

/// The children of every cluster, read with one list per kind (a list per cluster would copy the whole fleet
/// for each of a thousand clusters).
pub struct Children {
    by_cluster: HashMap<(&'static str, String), Vec<Value>>,
}

impl Children {
    pub fn read(kube: &kube_sim::KubeSim) -> Children {
        let mut by_cluster: HashMap<(&'static str, String), Vec<Value>> = HashMap::new();
        for kind in ["OmniControlPlane", "OmniWorkers", "OmniMachine"] {
            for o in kube.list(API, kind, Some(NAMESPACE)) {
                if let Some(cluster) = o["spec"]["clusterRef"]["name"].as_str() {
                    by_cluster
                        .entry((kind, cluster.to_string()))
                        .or_default()
                        .push(o);
                }
            }
        }
        Children { by_cluster }
    }

    fn of<T: serde::de::DeserializeOwned>(
        &self,
        kind: &'static str,
        cluster: &str,
    ) -> Result<Vec<T>, String> {
        self.by_cluster
            .get(&(kind, cluster.to_string()))
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|o| serde_json::from_value(o.clone()).map_err(|e| format!("{kind}: {e}")))
            .collect()
    }
}

/// How Omni's resources differ from the cluster's rendered template; empty when they match.
pub fn differences(
    kube: &kube_sim::KubeSim,
    children: &Children,
    state: &Store,
    cluster: &str,
) -> Vec<String> {
    let desired = match desired(kube, children, cluster) {
        Ok(d) => d,
        Err(why) => return vec![format!("the template does not render: {why}")],
    };
    let mut out = Vec::new();
    let mut wanted = BTreeSet::new();
    for d in &desired {
        wanted.insert((d.key.type_.clone(), d.key.id.clone()));
        match state.get(&d.key.namespace, &d.key.type_, &d.key.id) {
            None => out.push(format!("Omni has no {}, which the template renders", d.key)),
            Some(stored) => {
                let actual = as_resource(&stored);
                if !sync::same(d, &actual) {
                    out.push(format!(
                        "Omni's {} differs from the rendered template ({})",
                        d.key,
                        what_differs(d, &actual)
                    ));
                }
            }
        }
    }
    for ty in LABELLED {
        for stored in state.list_labeled("default", ty, labels::CLUSTER, cluster) {
            let Some(md) = stored.metadata.as_ref() else {
                continue;
            };
            // Only the template's own resources: Omni's controllers label what they make too.
            if md.annotations.contains_key(labels::MANAGED_BY_TEMPLATES)
                && !wanted.contains(&(ty.to_string(), md.id.clone()))
            {
                out.push(format!(
                    "Omni has {}, which the template does not render",
                    ResourceKey::new(ty, &md.id)
                ));
            }
        }
    }
    out
}

/// The resources the cluster's objects translate into, as the plugin computes them.
fn desired(
    kube: &kube_sim::KubeSim,
    children: &Children,
    cluster: &str,
) -> Result<Vec<OmniResource>, String> {
    let object = kube
        .get(API, "OmniCluster", NAMESPACE, cluster)
        .ok_or("the OmniCluster does not exist")?;
    let omni_cluster: OmniCluster =
        serde_json::from_value(object).map_err(|e| format!("OmniCluster: {e}"))?;
    let mut control_planes: Vec<OmniControlPlane> = children.of("OmniControlPlane", cluster)?;
    if control_planes.len() != 1 {
        return Err(format!(
            "{} OmniControlPlanes reference it",
            control_planes.len()
        ));
    }
    let workers: Vec<OmniWorkers> = children.of("OmniWorkers", cluster)?;
    let machines: Vec<OmniMachine> = children.of("OmniMachine", cluster)?;
    let rendered = render::render(
        &omni_cluster,
        &control_planes.remove(0),
        &workers,
        &machines,
    )?;
    translate::translate(&rendered.template, &NoFiles)
}

/// omni-sim's stored resource as the plugin reads it (the chaos run's Omni stores nothing compressed).
fn as_resource(stored: &omni_wire::cosi::Resource) -> OmniResource {
    let md = stored.metadata.clone().unwrap_or_default();
    let pairs = |m: std::collections::HashMap<String, String>| m.into_iter().collect::<Vec<_>>();
    OmniResource {
        key: ResourceKey {
            namespace: md.namespace,
            type_: md.r#type,
            id: md.id,
        },
        version: md.version,
        owner: md.owner,
        phase: if md.phase == omni_wire::phase::TEARING_DOWN {
            Phase::TearingDown
        } else {
            Phase::Running
        },
        labels: pairs(md.labels),
        annotations: pairs(md.annotations),
        finalizers: md.finalizers,
        spec: stored
            .spec
            .as_ref()
            .map(|s| s.proto_spec.clone())
            .unwrap_or_default(),
        unreadable: None,
    }
}

/// Which parts differ, for the violation's text.
fn what_differs(desired: &OmniResource, actual: &OmniResource) -> String {
    let set = |v: &[(String, String)]| v.iter().cloned().collect::<BTreeSet<_>>();
    let mut parts = Vec::new();
    if actual.phase != Phase::Running {
        parts.push("it is tearing down");
    }
    if set(&desired.labels) != set(&actual.labels) {
        parts.push("labels");
    }
    if set(&desired.annotations) != set(&actual.annotations) {
        parts.push("annotations");
    }
    if parts.is_empty() {
        parts.push("spec");
    }
    parts.join(", ")
}
