//! Resource type strings, labels and annotations Omni uses.

pub const NS: &str = "default";

pub const CLUSTERS: &str = "Clusters.omni.sidero.dev";
pub const MACHINE_SETS: &str = "MachineSets.omni.sidero.dev";
pub const MACHINE_SET_NODES: &str = "MachineSetNodes.omni.sidero.dev";
pub const CONFIG_PATCHES: &str = "ConfigPatches.omni.sidero.dev";
pub const KUBERNETES_MANIFEST_GROUPS: &str = "KubernetesManifestGroups.omni.sidero.dev";
pub const KUBERNETES_HEALTH_CHECKS: &str = "KubernetesHealthChecks.omni.sidero.dev";
pub const EXTENSIONS_CONFIGURATIONS: &str = "ExtensionsConfigurations.omni.sidero.dev";
pub const KERNEL_ARGS: &str = "KernelArgs.omni.sidero.dev";
pub const CLUSTER_STATUSES: &str = "ClusterStatuses.omni.sidero.dev";
pub const MACHINE_SET_STATUSES: &str = "MachineSetStatuses.omni.sidero.dev";
pub const KUBERNETES_UPGRADE_STATUSES: &str = "KubernetesUpgradeStatuses.omni.sidero.dev";
pub const TALOS_UPGRADE_STATUSES: &str = "TalosUpgradeStatuses.omni.sidero.dev";
pub const CONTROL_PLANE_STATUSES: &str = "ControlPlaneStatuses.omni.sidero.dev";
pub const LOAD_BALANCER_STATUSES: &str = "LoadBalancerStatuses.omni.sidero.dev";
pub const CLUSTER_MACHINE_STATUSES: &str = "ClusterMachineStatuses.omni.sidero.dev";
pub const CLUSTER_UUIDS: &str = "ClusterUUIDs.omni.sidero.dev";
pub const MACHINE_STATUSES: &str = "MachineStatuses.omni.sidero.dev";
pub const LINKS: &str = "Links.omni.sidero.dev";

/// Types Omni's generic destroy controller removes once torn down, owner-less and finalizer-free;
/// Links are included because tearing one down is how a machine is removed.
pub const USER_MANAGED: [&str; 9] = [
    CLUSTERS,
    CONFIG_PATCHES,
    MACHINE_SETS,
    MACHINE_SET_NODES,
    EXTENSIONS_CONFIGURATIONS,
    KERNEL_ARGS,
    KUBERNETES_MANIFEST_GROUPS,
    KUBERNETES_HEALTH_CHECKS,
    LINKS,
];

/// Types only an Admin may touch.
pub const ADMIN_ONLY: [&str; 3] = [
    "PublicKeys.omni.sidero.dev",
    "Users.omni.sidero.dev",
    "Identities.omni.sidero.dev",
];

pub const LABEL_CLUSTER: &str = "omni.sidero.dev/cluster";
pub const LABEL_MACHINE_SET: &str = "omni.sidero.dev/machine-set";
pub const LABEL_ROLE_CONTROLPLANE: &str = "omni.sidero.dev/role-controlplane";
pub const LABEL_ROLE_WORKER: &str = "omni.sidero.dev/role-worker";
pub const LABEL_CLUSTER_MACHINE: &str = "omni.sidero.dev/cluster-machine";
pub const LABEL_MACHINE: &str = "omni.sidero.dev/machine";
pub const LABEL_DISCONNECTED: &str = "omni.sidero.dev/disconnected";
pub const LABEL_CLUSTER_UUID: &str = "omni.sidero.dev/cluster-uuid";
pub const LABEL_SYSTEM_MANIFEST: &str = "omni.sidero.dev/system-manifest";

pub const ANNOTATION_LOCKED: &str = "omni.sidero.dev/locked";
pub const ANNOTATION_CLUSTER_LOCKED: &str = "omni.sidero.dev/cluster-locked";
