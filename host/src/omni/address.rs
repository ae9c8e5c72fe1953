//! How a resource is addressed in Omni's state: namespace, type and id, and the template types the host reads.

pub const CLUSTERS: &str = "Clusters.omni.sidero.dev";
pub const CONFIG_PATCHES: &str = "ConfigPatches.omni.sidero.dev";
pub const MANIFEST_GROUPS: &str = "KubernetesManifestGroups.omni.sidero.dev";

/// Addresses one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    pub namespace: String,
    pub type_: String,
    pub id: String,
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}({})", self.type_, self.id)
    }
}
