//! The cluster template as Omni's client models it: one Cluster, one ControlPlane,
//! any number of Workers and Machine documents. Rendering (`render`) fills it from the OmniCluster objects,
//! `encode` writes it as the YAML template whose hash goes into status, `validate` applies Omni's rules and
//! `translate` turns it into Omni resources.
//!
//! "Not set" and "empty" are the same here wherever the Go operator's renderer used `omitempty` (labels, lists,
//! optional lists): an empty `kernelArgs: []` in an object was never written into the template, so it inherits.

use std::collections::BTreeMap;

use serde_json::Value;

pub type StringMap = BTreeMap<String, String>;

/// The whole template: documents in the order the encoder writes them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Template {
    pub cluster: Cluster,
    pub control_plane: MachineSet,
    /// Sorted by worker-set name.
    pub workers: Vec<MachineSet>,
    /// Sorted by machine ID.
    pub machines: Vec<Machine>,
}

/// The `Cluster` document.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Cluster {
    pub name: String,
    pub labels: StringMap,
    pub annotations: StringMap,
    /// As written in the object, with its leading `v`.
    pub kubernetes_version: String,
    pub manifests: Vec<Manifest>,
    pub talos_version: String,
    /// `None`: no `features` key; `Some` with nothing set renders `features: {}`.
    pub features: Option<Features>,
    pub patches: Vec<Patch>,
    pub system_extensions: Vec<String>,
    pub kernel_args: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Features {
    pub enable_workload_proxy: bool,
    pub use_embedded_discovery_service: bool,
    pub disk_encryption: bool,
    /// `backupConfiguration.interval`, a Go duration string copied verbatim.
    pub backup_interval: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ManifestMode {
    #[default]
    Full,
    OneTime,
}

impl ManifestMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ManifestMode::Full => "full",
            ManifestMode::OneTime => "one-time",
        }
    }
}

/// One entry of `kubernetes.manifests`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Manifest {
    pub name: String,
    pub mode: ManifestMode,
    /// The file under the template root; when set, `inline` is ignored (the renderer drops it).
    pub file: Option<String>,
    /// The objects, each a JSON value as stored in the OmniCluster.
    pub inline: Vec<Value>,
}

/// Which document a machine set comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SetKind {
    #[default]
    ControlPlane,
    Workers,
}

/// A `ControlPlane` or `Workers` document.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MachineSet {
    pub kind: SetKind,
    /// Workers only: the effective worker-set name (`spec.workerSetName` or `metadata.name`).
    pub name: Option<String>,
    pub labels: StringMap,
    pub annotations: StringMap,
    /// Machine IDs as written (manual allocation).
    pub machines: Vec<String>,
    pub machine_class: Option<MachineClass>,
    pub bootstrap: Option<Bootstrap>,
    pub update_strategy: Option<Strategy>,
    pub upgrade_strategy: Option<Strategy>,
    pub delete_strategy: Option<Strategy>,
    pub patches: Vec<Patch>,
    pub system_extensions: Vec<String>,
    pub kernel_args: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MachineClass {
    pub name: String,
    pub size: Size,
}

/// `machineClass.size`: an integer, or a string such as `unlimited`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Size {
    Count(i64),
    Word(String),
}

impl Default for Size {
    fn default() -> Self {
        Size::Count(0)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Bootstrap {
    pub cluster_uuid: String,
    pub snapshot: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrategyType {
    Rolling,
    Unset,
}

impl StrategyType {
    pub fn as_str(self) -> &'static str {
        match self {
            StrategyType::Rolling => "Rolling",
            StrategyType::Unset => "Unset",
        }
    }
}

/// `updateStrategy`, `upgradeStrategy`, `deleteStrategy`; an empty one renders `{}`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Strategy {
    pub type_: Option<StrategyType>,
    /// `Some(None)`: `rolling: {}`.
    pub rolling: Option<Option<i64>>,
}

/// A `Machine` document.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Machine {
    /// The effective machine ID (`spec.machineID` or `metadata.name`).
    pub name: String,
    pub labels: StringMap,
    pub annotations: StringMap,
    pub locked: bool,
    pub install_disk: Option<String>,
    pub patches: Vec<Patch>,
    pub system_extensions: Vec<String>,
    pub kernel_args: Vec<String>,
}

/// One entry of a `patches` list.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Patch {
    pub file: Option<String>,
    pub name: Option<String>,
    pub id_override: Option<String>,
    pub labels: StringMap,
    pub annotations: StringMap,
    /// The inline content as stored in the object: a mapping, a list of mappings, or a string (a verbatim patch).
    pub inline: Option<Value>,
}

impl Patch {
    /// The name Omni uses in IDs, annotations and messages: `name`, else `file` as written.
    pub fn display_name(&self) -> &str {
        match (&self.name, &self.file) {
            (Some(n), _) if !n.is_empty() => n,
            (_, Some(f)) => f,
            _ => "",
        }
    }
}

/// Files named by `file:` patches and manifests, read before validation and translation (through the host's
/// `files` capability in the plugin, from memory in tests).
pub trait FileSource {
    /// The file's bytes, or why it cannot be read (the text Omni puts after `failed to access "<path>": `).
    fn read(&self, path: &str) -> Result<Vec<u8>, String>;
}

/// No template root: every file reference fails, as in the Go operator without `spec.templateRoot`.
pub struct NoFiles;

impl FileSource for NoFiles {
    fn read(&self, path: &str) -> Result<Vec<u8>, String> {
        Err(format!(
            "open {path}: no templateRoot is set, so file references cannot be read"
        ))
    }
}

/// Files held in memory (tests, and the plugin after reading everything once).
impl FileSource for BTreeMap<String, Result<Vec<u8>, String>> {
    fn read(&self, path: &str) -> Result<Vec<u8>, String> {
        match self.get(path) {
            Some(found) => found.clone(),
            None => Err(format!("open {path}: no such file or directory")),
        }
    }
}

impl Template {
    /// Every file the template refers to, in document order, without repeats.
    pub fn file_references(&self) -> Vec<&str> {
        let sets = std::iter::once(&self.control_plane).chain(&self.workers);
        let patch_files = std::iter::once(&self.cluster.patches)
            .chain(sets.map(|s| &s.patches))
            .chain(self.machines.iter().map(|m| &m.patches))
            .flatten()
            .map(|p| &p.file);
        let all = self
            .cluster
            .manifests
            .iter()
            .map(|m| &m.file)
            .chain(patch_files);
        let mut out: Vec<&str> = Vec::new();
        for f in all.filter_map(|f| f.as_deref()) {
            if !out.contains(&f) {
                out.push(f);
            }
        }
        out
    }
}
