//! From an OmniCluster and the children that reference it to the template model: documents ordered as the Go
//! operator wrote them, its render-time checks with its messages, and the object names the status reports.

use std::collections::BTreeMap;

use omni_api::{
    IntOrString, ManifestMode as ApiManifestMode, OmniCluster, OmniControlPlane, OmniMachine,
    OmniWorkers, UpdateStrategy, UpdateStrategyType,
};

use crate::model::{
    Bootstrap, Cluster, Features, Machine, MachineClass, MachineSet, Manifest, ManifestMode, Patch,
    SetKind, Size, Strategy, StrategyType, StringMap, Template,
};

/// The worker-set name Omni reserves for the control plane's machine set.
pub const RESERVED_WORKER_SET: &str = "control-planes";

/// A rendered template and what the status reports about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub template: Template,
    /// `spec.clusterName`, else `metadata.name`.
    pub cluster_name: String,
    pub control_plane_ref: String,
    /// OmniWorkers names in document order.
    pub workers_refs: Vec<String>,
    /// OmniMachine names in document order.
    pub machine_refs: Vec<String>,
}

/// The effective Omni cluster name of an OmniCluster.
pub fn cluster_name(cluster: &OmniCluster) -> String {
    match cluster.spec.cluster_name.as_deref() {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => cluster.name().to_string(),
    }
}

/// The effective worker-set name of an OmniWorkers.
pub fn worker_set_name(workers: &OmniWorkers) -> String {
    match workers.spec.worker_set_name.as_deref() {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => workers.name().to_string(),
    }
}

/// The effective Omni machine ID of an OmniMachine.
pub fn machine_id(machine: &OmniMachine) -> String {
    match machine.spec.machine_id.as_deref() {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => machine.name().to_string(),
    }
}

/// Renders the template. Errors are the Go operator's render-time messages (reported as `ValidationFailed`).
pub fn render(
    cluster: &OmniCluster,
    control_plane: &OmniControlPlane,
    workers: &[OmniWorkers],
    machines: &[OmniMachine],
) -> Result<Rendered, String> {
    let manifests = cluster
        .spec
        .kubernetes
        .manifests
        .as_deref()
        .unwrap_or_default();
    let mut seen = std::collections::BTreeSet::new();
    for m in manifests {
        if !seen.insert(m.name.as_str()) {
            return Err(format!(
                "duplicate Kubernetes manifest name {:?} for OmniCluster.spec.kubernetes.manifests[] conflicts with \
                 OmniCluster.spec.kubernetes.manifests[]",
                m.name
            ));
        }
    }

    let spec = &cluster.spec;
    let name = cluster_name(cluster);
    let cluster_doc = Cluster {
        name: name.clone(),
        labels: map(&spec.descriptors.labels),
        annotations: map(&spec.descriptors.annotations),
        kubernetes_version: spec.kubernetes.version.clone(),
        manifests: manifests
            .iter()
            .map(|m| {
                let file = m.file.clone().filter(|f| !f.is_empty());
                Manifest {
                    name: m.name.clone(),
                    mode: match m.mode {
                        ApiManifestMode::Full => ManifestMode::Full,
                        ApiManifestMode::OneTime => ManifestMode::OneTime,
                    },
                    // A file wins: the Go renderer dropped inline items when a file was named.
                    inline: if file.is_some() {
                        Vec::new()
                    } else {
                        m.inline.clone().unwrap_or_default()
                    },
                    file,
                }
            })
            .collect(),
        talos_version: spec.talos.version.clone(),
        features: spec.features.as_ref().map(|f| Features {
            enable_workload_proxy: f.enable_workload_proxy.unwrap_or(false),
            use_embedded_discovery_service: f.use_embedded_discovery_service.unwrap_or(false),
            disk_encryption: f.disk_encryption.unwrap_or(false),
            backup_interval: f.backup_configuration.as_ref().map(|b| b.interval.clone()),
        }),
        patches: patches(&spec.patches),
        system_extensions: list(&spec.system_extensions),
        kernel_args: list(&spec.kernel_args),
    };

    let cp_fields = &control_plane.spec.machine_set;
    let control_plane_doc = MachineSet {
        kind: SetKind::ControlPlane,
        name: None,
        labels: map(&cp_fields.descriptors.labels),
        annotations: map(&cp_fields.descriptors.annotations),
        machines: list(&cp_fields.machines),
        machine_class: machine_class(cp_fields.machine_class.as_ref()),
        bootstrap: control_plane
            .spec
            .bootstrap_spec
            .as_ref()
            .map(|b| Bootstrap {
                cluster_uuid: b.cluster_uuid.clone(),
                snapshot: b.snapshot.clone(),
            }),
        patches: patches(&cp_fields.patches),
        system_extensions: list(&cp_fields.system_extensions),
        kernel_args: list(&cp_fields.kernel_args),
        ..MachineSet::default()
    };

    let mut sorted_workers: Vec<(String, &OmniWorkers)> =
        workers.iter().map(|w| (worker_set_name(w), w)).collect();
    sorted_workers.sort_by(|a, b| a.0.cmp(&b.0));
    let mut workers_docs = Vec::with_capacity(sorted_workers.len());
    for (set_name, w) in &sorted_workers {
        if set_name == RESERVED_WORKER_SET {
            return Err(format!(
                "workers {:?} uses reserved workerSetName {:?}",
                w.name(),
                set_name
            ));
        }
        let fields = &w.spec.machine_set;
        workers_docs.push(MachineSet {
            kind: SetKind::Workers,
            name: Some(set_name.clone()),
            labels: map(&fields.descriptors.labels),
            annotations: map(&fields.descriptors.annotations),
            machines: list(&fields.machines),
            machine_class: machine_class(fields.machine_class.as_ref()),
            bootstrap: None,
            update_strategy: w.spec.update_strategy.as_ref().map(strategy),
            upgrade_strategy: w.spec.upgrade_strategy.as_ref().map(strategy),
            delete_strategy: w.spec.delete_strategy.as_ref().map(strategy),
            patches: patches(&fields.patches),
            system_extensions: list(&fields.system_extensions),
            kernel_args: list(&fields.kernel_args),
        });
    }

    let mut sorted_machines: Vec<(String, &OmniMachine)> =
        machines.iter().map(|m| (machine_id(m), m)).collect();
    sorted_machines.sort_by(|a, b| a.0.cmp(&b.0));
    let machine_docs = sorted_machines
        .iter()
        .map(|(id, m)| Machine {
            name: id.clone(),
            labels: map(&m.spec.descriptors.labels),
            annotations: map(&m.spec.descriptors.annotations),
            locked: m.spec.locked.unwrap_or(false),
            install_disk: m.spec.install.as_ref().map(|i| i.disk.clone()),
            patches: patches(&m.spec.patches),
            system_extensions: list(&m.spec.system_extensions),
            kernel_args: list(&m.spec.kernel_args),
        })
        .collect();

    Ok(Rendered {
        template: Template {
            cluster: cluster_doc,
            control_plane: control_plane_doc,
            workers: workers_docs,
            machines: machine_docs,
        },
        cluster_name: name,
        control_plane_ref: control_plane.name().to_string(),
        workers_refs: sorted_workers
            .iter()
            .map(|(_, w)| w.name().to_string())
            .collect(),
        machine_refs: sorted_machines
            .iter()
            .map(|(_, m)| m.name().to_string())
            .collect(),
    })
}

fn map(m: &Option<BTreeMap<String, String>>) -> StringMap {
    m.clone().unwrap_or_default()
}

fn list(l: &Option<Vec<String>>) -> Vec<String> {
    l.clone().unwrap_or_default()
}

fn patches(p: &Option<Vec<omni_api::Patch>>) -> Vec<Patch> {
    p.as_deref()
        .unwrap_or_default()
        .iter()
        .map(|p| Patch {
            file: p.file.clone().filter(|f| !f.is_empty()),
            name: p.name.clone().filter(|n| !n.is_empty()),
            id_override: p.id_override.clone().filter(|i| !i.is_empty()),
            labels: map(&p.labels),
            annotations: map(&p.annotations),
            inline: p.inline.clone(),
        })
        .collect()
}

fn machine_class(c: Option<&omni_api::MachineClass>) -> Option<MachineClass> {
    c.map(|c| MachineClass {
        name: c.name.clone(),
        size: match &c.size {
            IntOrString::Int(n) => Size::Count(i64::from(*n)),
            IntOrString::String(s) => Size::Word(s.clone()),
        },
    })
}

fn strategy(s: &UpdateStrategy) -> Strategy {
    Strategy {
        type_: s.type_.map(|t| match t {
            UpdateStrategyType::Rolling => StrategyType::Rolling,
            UpdateStrategyType::Unset => StrategyType::Unset,
        }),
        rolling: s.rolling.as_ref().map(|r| r.max_parallelism.map(i64::from)),
    }
}
