//! From the template to the Omni resources it stands for: types, IDs,
//! labels, annotations and protobuf specs exactly as Omni's client builds them, so Omni (and anyone reading it
//! with omnictl) cannot tell our resources from a `omnictl cluster template sync`.
//!
//! Content is always sent uncompressed (`data`): Omni accepts either form, and comparisons read it decompressed.

use std::collections::BTreeSet;

use omni_plugin_sdk::omni::{OmniResource, ResourceKey};
use prost::Message;

use crate::model::{
    Cluster, FileSource, Machine, MachineSet, ManifestMode, Patch, SetKind, Size, Strategy,
    StrategyType, StringMap, Template,
};
use crate::specs;
use omni_plugin_sdk::go::yaml::{self, Node};

/// Omni's resource types (`<PluralName>.omni.sidero.dev`).
pub mod types {
    pub const CLUSTERS: &str = "Clusters.omni.sidero.dev";
    pub const MACHINE_SETS: &str = "MachineSets.omni.sidero.dev";
    pub const MACHINE_SET_NODES: &str = "MachineSetNodes.omni.sidero.dev";
    pub const CONFIG_PATCHES: &str = "ConfigPatches.omni.sidero.dev";
    pub const KUBERNETES_MANIFEST_GROUPS: &str = "KubernetesManifestGroups.omni.sidero.dev";
    pub const KUBERNETES_HEALTH_CHECKS: &str = "KubernetesHealthChecks.omni.sidero.dev";
    pub const EXTENSIONS_CONFIGURATIONS: &str = "ExtensionsConfigurations.omni.sidero.dev";
    pub const KERNEL_ARGS: &str = "KernelArgs.omni.sidero.dev";
    pub const MACHINE_STATUSES: &str = "MachineStatuses.omni.sidero.dev";
    pub const LINKS: &str = "Links.omni.sidero.dev";
}

/// Omni's system labels and annotations.
pub mod labels {
    pub const CLUSTER: &str = "omni.sidero.dev/cluster";
    pub const MACHINE_SET: &str = "omni.sidero.dev/machine-set";
    pub const ROLE_CONTROLPLANE: &str = "omni.sidero.dev/role-controlplane";
    pub const ROLE_WORKER: &str = "omni.sidero.dev/role-worker";
    pub const CLUSTER_MACHINE: &str = "omni.sidero.dev/cluster-machine";
    pub const SYSTEM_PATCH: &str = "omni.sidero.dev/system-patch";
    pub const MACHINE: &str = "omni.sidero.dev/machine";
    pub const MANAGED_BY_MACHINE_SET_NODE_CONTROLLER: &str =
        "omni.sidero.dev/managed-by-machine-set-node-controller";
    pub const DISCONNECTED: &str = "omni.sidero.dev/disconnected";
    /// Annotation: the resource is managed by a cluster template.
    pub const MANAGED_BY_TEMPLATES: &str = "omni.sidero.dev/managed-by-cluster-templates";
    /// Annotation on MachineSetNodes of locked machines.
    pub const LOCKED: &str = "omni.sidero.dev/locked";
    /// Annotation naming a ConfigPatch or KubernetesManifestGroup.
    pub const NAME: &str = "name";
}

/// Base weights of patch IDs (`%03d-<prefix>-<name>`).
const CLUSTER_PATCH_WEIGHT: usize = 200;
const MACHINE_SET_PATCH_WEIGHT: usize = 400;
const MACHINE_PATCH_WEIGHT: usize = 400;
const MANIFEST_WEIGHT: usize = 200;

/// The control plane's machine-set ID suffix.
pub const CONTROL_PLANES: &str = "control-planes";
/// The worker set name Omni uses for an unnamed Workers document.
pub const DEFAULT_WORKERS: &str = "workers";

/// The machine-set ID of a document.
pub fn machine_set_id(cluster: &str, set: &MachineSet) -> String {
    match set.kind {
        SetKind::ControlPlane => format!("{cluster}-{CONTROL_PLANES}"),
        SetKind::Workers => {
            let name = set
                .name
                .as_deref()
                .filter(|n| !n.is_empty())
                .unwrap_or(DEFAULT_WORKERS);
            format!("{cluster}-{name}")
        }
    }
}

/// Every resource the template stands for, in Omni's emission order. Errors are Omni's translate-time
/// messages (`error syncing template: …` is the caller's prefix).
pub fn translate(template: &Template, files: &dyn FileSource) -> Result<Vec<OmniResource>, String> {
    let cluster = &template.cluster;
    let name = cluster.name.as_str();
    let mut out = Vec::new();

    out.push(cluster_resource(cluster)?);
    out.extend(patch_resources(
        &cluster.patches,
        &format!("cluster-{name}"),
        CLUSTER_PATCH_WEIGHT,
        &[(labels::CLUSTER, name)],
        files,
    )?);
    for (i, m) in cluster.manifests.iter().enumerate() {
        let content = match &m.file {
            Some(path) => read_text(files, path)?,
            None => yaml::to_string(&m.inline.iter().map(Node::from_json).collect::<Vec<_>>(), 4),
        };
        let spec = specs::KubernetesManifestGroupSpec {
            data: content,
            mode: match m.mode {
                ManifestMode::Full => specs::kubernetes_manifest_group_spec::Mode::Full,
                ManifestMode::OneTime => specs::kubernetes_manifest_group_spec::Mode::OneTime,
            } as i32,
            ..Default::default()
        };
        let mut r = resource(
            types::KUBERNETES_MANIFEST_GROUPS,
            &format!("{:03}-cluster-{name}-{}", MANIFEST_WEIGHT + i, m.name),
            &spec,
        );
        r.labels = sorted(&[(labels::CLUSTER, name)], &StringMap::new());
        r.annotations = sorted(&[(labels::NAME, m.name.as_str())], &StringMap::new());
        out.push(r);
    }
    if !cluster.system_extensions.is_empty() {
        out.push(extensions(
            &format!("schematic-{name}"),
            &cluster.system_extensions,
            &[(labels::CLUSTER, name)],
        ));
    }

    let machines_by_id = |id: &str| template.machines.iter().find(|m| m.name == id);
    let locked: BTreeSet<&str> = template
        .machines
        .iter()
        .filter(|m| m.locked)
        .map(|m| m.name.as_str())
        .collect();
    for set in std::iter::once(&template.control_plane).chain(&template.workers) {
        let set_id = machine_set_id(name, set);
        let role = match set.kind {
            SetKind::ControlPlane => labels::ROLE_CONTROLPLANE,
            SetKind::Workers => labels::ROLE_WORKER,
        };
        out.push(machine_set_resource(name, &set_id, role, set));
        if set.machine_class.is_some() {
            if !cluster.kernel_args.is_empty() {
                return Err("kernelArgs cannot be defined at cluster level for this machine set since it uses a machine class".into());
            }
        } else {
            for machine_id in &set.machines {
                let doc = machines_by_id(machine_id);
                let mut r = resource(
                    types::MACHINE_SET_NODES,
                    machine_id,
                    &specs::MachineSetNodeSpec {},
                );
                let empty = StringMap::new();
                r.labels = sorted(
                    &[
                        (labels::CLUSTER, name),
                        (role, ""),
                        (labels::MACHINE_SET, set_id.as_str()),
                    ],
                    doc.map_or(&empty, |d| &d.labels),
                );
                let mut own = vec![];
                if locked.contains(machine_id.as_str()) {
                    own.push((labels::LOCKED, ""));
                }
                r.annotations = sorted(&own, doc.map_or(&empty, |d| &d.annotations));
                out.push(r);
                if doc.is_none()
                    && let Some(args) =
                        inherited_kernel_args(&[&set.kernel_args, &cluster.kernel_args])
                {
                    out.push(kernel_args(machine_id, args));
                }
            }
        }
        out.extend(patch_resources(
            &set.patches,
            &set_id,
            MACHINE_SET_PATCH_WEIGHT,
            &[
                (labels::CLUSTER, name),
                (labels::MACHINE_SET, set_id.as_str()),
            ],
            files,
        )?);
        if !set.system_extensions.is_empty() {
            out.push(extensions(
                &format!("schematic-{set_id}"),
                &set.system_extensions,
                &[
                    (labels::CLUSTER, name),
                    (labels::MACHINE_SET, set_id.as_str()),
                ],
            ));
        }
    }

    for machine in &template.machines {
        out.extend(machine_resources(template, machine, files)?);
    }

    let mut seen = BTreeSet::new();
    for r in &out {
        if !seen.insert((&r.key.type_, &r.key.id)) {
            return Err(format!(
                "resource ID duplicate {}({}/{})",
                r.key.type_, r.key.namespace, r.key.id
            ));
        }
    }
    Ok(out)
}

fn cluster_resource(cluster: &Cluster) -> Result<OmniResource, String> {
    let features = cluster.features.clone().unwrap_or_default();
    let backup_configuration = match features.backup_interval.as_deref() {
        Some(text) => {
            let interval = parse_go_duration(text)
                .map_err(|e| format!("invalid backupConfiguration.interval {text:?}: {e}"))?;
            (interval.seconds > 0 || interval.nanos > 0).then_some(specs::EtcdBackupConf {
                interval: Some(interval),
                enabled: true,
            })
        }
        None => None,
    };
    let spec = specs::ClusterSpec {
        kubernetes_version: cluster
            .kubernetes_version
            .trim_start_matches('v')
            .to_string(),
        talos_version: cluster.talos_version.trim_start_matches('v').to_string(),
        // Always present, all false when the template has no features.
        features: Some(specs::cluster_spec::Features {
            enable_workload_proxy: features.enable_workload_proxy,
            disk_encryption: features.disk_encryption,
            use_embedded_discovery_service: features.use_embedded_discovery_service,
            enable_node_audit_skip: false,
        }),
        backup_configuration,
    };
    let mut r = resource(types::CLUSTERS, &cluster.name, &spec);
    r.labels = sorted(&[], &cluster.labels);
    r.annotations = sorted(&[(labels::MANAGED_BY_TEMPLATES, "")], &cluster.annotations);
    Ok(r)
}

fn machine_set_resource(cluster: &str, id: &str, role: &str, set: &MachineSet) -> OmniResource {
    use specs::machine_set_spec::{self as ms, machine_allocation::Type as AllocationType};

    let strategy_type = |s: &Option<Strategy>, default: ms::UpdateStrategy| match s
        .as_ref()
        .and_then(|s| s.type_)
    {
        Some(StrategyType::Rolling) => ms::UpdateStrategy::Rolling,
        Some(StrategyType::Unset) => ms::UpdateStrategy::Unset,
        None => default,
    };
    let strategy_config = |s: &Option<Strategy>| {
        s.as_ref()
            .and_then(|s| s.rolling)
            .map(|max| ms::UpdateStrategyConfig {
                rolling: Some(ms::RollingUpdateStrategyConfig {
                    max_parallelism: u32::try_from(max.unwrap_or(0)).unwrap_or(0),
                }),
            })
    };
    let spec = specs::MachineSetSpec {
        // Rolling when not specified; delete and upgrade default to Unset (Omni's client).
        update_strategy: strategy_type(&set.update_strategy, ms::UpdateStrategy::Rolling) as i32,
        update_strategy_config: strategy_config(&set.update_strategy),
        delete_strategy: strategy_type(&set.delete_strategy, ms::UpdateStrategy::Unset) as i32,
        delete_strategy_config: strategy_config(&set.delete_strategy),
        upgrade_strategy: strategy_type(&set.upgrade_strategy, ms::UpdateStrategy::Unset) as i32,
        upgrade_strategy_config: strategy_config(&set.upgrade_strategy),
        bootstrap_spec: set.bootstrap.as_ref().map(|b| ms::BootstrapSpec {
            cluster_uuid: b.cluster_uuid.clone(),
            snapshot: b.snapshot.clone(),
        }),
        machine_allocation: set.machine_class.as_ref().map(|c| {
            let (kind, count) = match &c.size {
                Size::Count(n) => (AllocationType::Static, u32::try_from(*n).unwrap_or(0)),
                Size::Word(w) if is_unlimited(w) => (AllocationType::Unlimited, 0),
                Size::Word(w) => (AllocationType::Static, w.parse::<u32>().unwrap_or(0)),
            };
            ms::MachineAllocation {
                name: c.name.clone(),
                machine_count: count,
                allocation_type: kind as i32,
            }
        }),
        ..Default::default()
    };
    let mut r = resource(types::MACHINE_SETS, id, &spec);
    r.labels = sorted(&[(labels::CLUSTER, cluster), (role, "")], &set.labels);
    r.annotations = sorted(&[], &set.annotations);
    r
}

/// The words Omni reads as an unlimited machine class size.
pub fn is_unlimited(word: &str) -> bool {
    matches!(word, "Unlimited" | "unlimited" | "infinity" | "∞")
}

fn machine_resources(
    template: &Template,
    machine: &Machine,
    files: &dyn FileSource,
) -> Result<Vec<OmniResource>, String> {
    let cluster = template.cluster.name.as_str();
    let id = machine.name.as_str();
    let prefix = format!("cm-{id}");
    let base = [(labels::CLUSTER, cluster), (labels::CLUSTER_MACHINE, id)];
    let mut out = Vec::new();
    if let Some(disk) = &machine.install_disk {
        let content = Node::Map(vec![(
            "machine".into(),
            Node::Map(vec![(
                "install".into(),
                Node::Map(vec![("disk".into(), Node::Str(disk.clone()))]),
            )]),
        )]);
        let spec = specs::ConfigPatchSpec {
            data: yaml::to_string(&[content], 4),
            ..Default::default()
        };
        let mut r = resource(
            types::CONFIG_PATCHES,
            &format!("000-{prefix}-install-disk"),
            &spec,
        );
        r.labels = sorted(
            &[base[0], base[1], (labels::SYSTEM_PATCH, "")],
            &StringMap::new(),
        );
        r.annotations = sorted(&[(labels::NAME, "install-disk")], &StringMap::new());
        out.push(r);
    }
    out.extend(patch_resources(
        &machine.patches,
        &prefix,
        MACHINE_PATCH_WEIGHT,
        &base,
        files,
    )?);
    let set = std::iter::once(&template.control_plane)
        .chain(&template.workers)
        .find(|s| s.machines.iter().any(|m| m == id));
    // KernelArgs only for machines of manual sets (a machine in no set fails validation first).
    if let Some(set) = set.filter(|s| s.machine_class.is_none())
        && let Some(args) = inherited_kernel_args(&[
            &machine.kernel_args,
            &set.kernel_args,
            &template.cluster.kernel_args,
        ])
    {
        out.push(kernel_args(id, args));
    }
    if !machine.system_extensions.is_empty() {
        out.push(extensions(
            &format!("schematic-{id}"),
            &machine.system_extensions,
            &base,
        ));
    }
    Ok(out)
}

/// The first list that is set, in precedence order (machine, machine set, cluster).
fn inherited_kernel_args<'a>(levels: &[&'a Vec<String>]) -> Option<&'a Vec<String>> {
    levels.iter().copied().find(|l| !l.is_empty())
}

fn kernel_args(machine_id: &str, args: &[String]) -> OmniResource {
    let mut r = resource(
        types::KERNEL_ARGS,
        machine_id,
        &specs::KernelArgsSpec {
            args: args.to_vec(),
        },
    );
    // No cluster label: KernelArgs outlive the cluster unless the template un-annotates them.
    r.annotations = sorted(&[(labels::MANAGED_BY_TEMPLATES, "")], &StringMap::new());
    r
}

fn extensions(id: &str, list: &[String], own_labels: &[(&str, &str)]) -> OmniResource {
    let mut r = resource(
        types::EXTENSIONS_CONFIGURATIONS,
        id,
        &specs::ExtensionsConfigurationSpec {
            extensions: list.to_vec(),
        },
    );
    r.labels = sorted(own_labels, &StringMap::new());
    r
}

fn patch_resources(
    patches: &[Patch],
    prefix: &str,
    base_weight: usize,
    own_labels: &[(&str, &str)],
    files: &dyn FileSource,
) -> Result<Vec<OmniResource>, String> {
    patches
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let name = p.display_name();
            let id = match &p.id_override {
                Some(id) => id.clone(),
                None => format!("{:03}-{prefix}-{name}", base_weight + i),
            };
            let spec = specs::ConfigPatchSpec {
                data: patch_content(p, files)?,
                ..Default::default()
            };
            let mut r = resource(types::CONFIG_PATCHES, &id, &spec);
            r.labels = sorted(own_labels, &p.labels);
            r.annotations = sorted(&[(labels::NAME, name)], &p.annotations);
            Ok(r)
        })
        .collect()
}

/// A patch's YAML: a file verbatim; an inline string verbatim; inline mappings re-encoded as Omni's client does
/// (four-space indentation, one document per list item).
pub fn patch_content(p: &Patch, files: &dyn FileSource) -> Result<String, String> {
    if let Some(path) = &p.file {
        return read_text(files, path);
    }
    Ok(match &p.inline {
        Some(serde_json::Value::String(verbatim)) => verbatim.clone(),
        Some(serde_json::Value::Array(docs)) => {
            yaml::to_string(&docs.iter().map(Node::from_json).collect::<Vec<_>>(), 4)
        }
        Some(value) => yaml::to_string(&[Node::from_json(value)], 4),
        None => String::new(),
    })
}

fn read_text(files: &dyn FileSource, path: &str) -> Result<String, String> {
    let bytes = files
        .read(path)
        .map_err(|e| format!("failed to access {path:?}: {e}"))?;
    String::from_utf8(bytes).map_err(|_| format!("file {path:?} is not UTF-8 text"))
}

fn resource(type_: &str, id: &str, spec: &impl Message) -> OmniResource {
    OmniResource::new(ResourceKey::new(type_, id), spec.encode_to_vec())
}

/// System entries first, then the document's own (a document cannot override system keys: validation refuses the
/// reserved prefix), sorted by key for stable output.
fn sorted(system: &[(&str, &str)], own: &StringMap) -> Vec<(String, String)> {
    let mut all: std::collections::BTreeMap<String, String> = own.clone();
    for (k, v) in system {
        all.insert((*k).to_string(), (*v).to_string());
    }
    all.into_iter().collect()
}

/// Go's `time.ParseDuration` (`omni_plugin_sdk::go::parse_duration`, where the parsing lives once) as a protobuf
/// `Duration`, the form Omni's resources carry: seconds and nanoseconds with the same sign.
pub fn parse_go_duration(text: &str) -> Result<prost_types::Duration, String> {
    let ns = omni_plugin_sdk::go::parse_duration(text)?;
    Ok(prost_types::Duration {
        seconds: ns / 1_000_000_000,
        // |ns % 1e9| < 1e9 always fits.
        nanos: i32::try_from(ns % 1_000_000_000).unwrap_or_default(),
    })
}

#[cfg(test)]
mod duration_tests {
    use super::parse_go_duration;

    #[test]
    fn go_durations_become_protobuf_durations_with_one_sign() {
        let d = |seconds, nanos| prost_types::Duration { seconds, nanos };
        assert_eq!(parse_go_duration("1h30m"), Ok(d(5400, 0)));
        assert_eq!(parse_go_duration("1.5s"), Ok(d(1, 500_000_000)));
        assert_eq!(parse_go_duration("-1.5s"), Ok(d(-1, -500_000_000)));
        assert_eq!(parse_go_duration("0"), Ok(d(0, 0)));
        assert_eq!(
            parse_go_duration("1d"),
            Err(r#"time: unknown unit "d" in duration "1d""#.to_string())
        );
        assert_eq!(
            parse_go_duration("5"),
            Err(r#"time: missing unit in duration "5""#.to_string())
        );
    }
}
