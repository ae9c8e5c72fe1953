//! The plugins built into the operator binary, and the grants each gets. `--plugin-dir` may replace any of them
//! by name without rebuilding the host; a replacement gets only the grants the operator's configuration gives
//! it (`--grant NAME=…`), never these, which belong to the built-in bytes.

use std::time::Duration;

use crate::capabilities::Grants;
use crate::runtime::{CallLimits, PluginSpec};

/// One built-in plugin: its name, the component bytes, and what it is granted.
pub struct DefaultPlugin {
    pub name: &'static str,
    pub wasm: &'static [u8],
    /// Grants as an admin would write them (`capabilities::grants` documents the forms): least privilege, no
    /// wildcard kind, and reads in the object's own namespace only.
    pub grants: &'static [&'static str],
    /// A longer call deadline than the runtime's default, for plugins that make many remote calls per reconcile.
    pub timeout: Option<Duration>,
}

impl std::fmt::Debug for DefaultPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the component's bytes.
        f.debug_struct("DefaultPlugin")
            .field("name", &self.name)
            .field("grants", &self.grants)
            .finish_non_exhaustive()
    }
}

/// The defaults, in load order. docs/plugins.md's grant table lists the same grants: change both together.
pub const PLUGINS: &[DefaultPlugin] = &[
    DefaultPlugin {
        name: "omni-connection",
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/omni_connection.wasm")),
        // Reads the OmniClusters that still reference a connection being deleted; pings Omni; stamps lastCheckTime.
        grants: &["kube-read:omni.texashpc.com/OmniCluster", "omni", "clock"],
        timeout: None,
    },
    DefaultPlugin {
        name: "omni-cluster",
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/omni_cluster.wasm")),
        // Reads the cluster's connection and children; syncs the template to Omni; reads `file:` patches and
        // manifests under the object's templateRoot; stamps sync times.
        grants: &[
            "kube-read:omni.texashpc.com/OmniConnection",
            "kube-read:omni.texashpc.com/OmniControlPlane",
            "kube-read:omni.texashpc.com/OmniWorkers",
            "kube-read:omni.texashpc.com/OmniMachine",
            "omni",
            "files",
            "clock",
        ],
        // A first sync is ~30 Omni calls; a slow Omni gets the time, and the plugin stops writing 1.5 s before the
        // deadline either way, so a call that runs out still commits its progress. Below the host's 30 s reconcile
        // deadline.
        timeout: Some(Duration::from_secs(20)),
    },
    DefaultPlugin {
        name: "omni-controlplane",
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/omni_controlplane.wasm")),
        grants: &["kube-read:omni.texashpc.com/OmniCluster"],
        timeout: None,
    },
    DefaultPlugin {
        name: "omni-workers",
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/omni_workers.wasm")),
        grants: &["kube-read:omni.texashpc.com/OmniCluster"],
        timeout: None,
    },
    DefaultPlugin {
        name: "omni-machine",
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/omni_machine.wasm")),
        grants: &["kube-read:omni.texashpc.com/OmniCluster"],
        timeout: None,
    },
    DefaultPlugin {
        name: "omni-kubeconfig-export",
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/omni_kubeconfig_export.wasm")),
        // Reads the cluster and its connection; reads the target Secret's metadata and digest; has Omni mint the
        // kubeconfig and writes it host to host; probes the workload cluster with the stored one.
        // `targetSecretRef.namespace` may name any namespace, as with the Go operator:
        // `secrets-namespace:*` reaches only the Secret the export names there (and the one its status records),
        // and writes or deletes it only when it carries the export's UID label. An admin who wants exports confined
        // to their own namespace replaces this grant.
        grants: &[
            "kube-read:omni.texashpc.com/OmniCluster",
            "kube-read:omni.texashpc.com/OmniConnection",
            "omni",
            "secrets",
            "secrets-write",
            "secrets-namespace:*",
            "workload",
            "clock",
        ],
        timeout: None,
    },
    DefaultPlugin {
        name: "omni-secret-sync",
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/omni_secret_sync.wasm")),
        // Reads the cluster; reads the metadata of the Secrets it names, in its own namespace only; copies host to
        // host.
        grants: &[
            "kube-read:omni.texashpc.com/OmniCluster",
            "secrets",
            "workload",
            "clock",
        ],
        timeout: None,
    },
    DefaultPlugin {
        name: "omni-helm-release",
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/omni_helm_release.wasm")),
        // Reads the cluster, the releases it depends on and the export writing its kubeconfig; reads the metadata
        // of the kubeconfig Secret it names, in its own namespace only; states each Helm action and lets the host
        // run Helm with that kubeconfig (chart sources: the operator's `--helm-chart-source` list) and with the
        // values of the ConfigMaps and Secrets it names (never seen by the plugin). Dependencies in other
        // namespaces need the operator's `namespace:NS` grant on top. `helm-take-ownership` lets a release adopt
        // existing objects, which it asks for only when its object says `disableTakeOwnership: false`; an admin
        // of a shared workload cluster who wants no release to take another's objects replaces these grants.
        // `helm-impersonate` lets a release act as the ServiceAccount its `serviceAccountName` names.
        grants: &[
            "kube-read:omni.texashpc.com/OmniCluster",
            "kube-read:omni.texashpc.com/OmniHelmRelease",
            "kube-read:omni.texashpc.com/OmniKubeconfigExport",
            "secrets",
            "helm",
            "helm-take-ownership",
            "helm-impersonate",
            "clock",
        ],
        timeout: None,
    },
];

impl DefaultPlugin {
    pub fn grants(&self) -> Result<Grants, crate::capabilities::GrantError> {
        Grants::parse(self.grants.iter().copied())
    }

    /// What to load: the component, its grants and its limits.
    pub fn spec(&self) -> Result<PluginSpec, crate::capabilities::GrantError> {
        let mut spec = PluginSpec::new(self.name, self.wasm.to_vec()).grants(self.grants()?);
        if let Some(timeout) = self.timeout {
            spec = spec.limits(CallLimits {
                timeout,
                ..CallLimits::default()
            });
        }
        Ok(spec)
    }
}
