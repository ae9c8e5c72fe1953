//! The plugins built into the operator binary, and the grants each gets. `--plugin-dir` overrides any of them
//! by name without rebuilding the host.

use std::time::Duration;

use crate::capabilities::Grants;
use crate::runtime::{CallLimits, PluginSpec};

/// One built-in plugin: its name, the component bytes, and the capabilities it is granted.
pub struct DefaultPlugin {
    pub name: &'static str,
    pub wasm: &'static [u8],
    pub capabilities: &'static [&'static str],
    /// A longer call deadline than the runtime's default, for plugins that make many remote calls per reconcile.
    pub timeout: Option<Duration>,
    /// Namespaces besides the object's own that the plugin may read and whose Secrets it may reach (`"*"`: all).
    pub namespaces: &'static [&'static str],
}

/// The defaults, in load order.
pub const PLUGINS: &[DefaultPlugin] = &[
    DefaultPlugin {
        name: "omni-connection",
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/omni_connection.wasm")),
        // Reads the OmniClusters that still reference a connection being deleted; pings Omni; stamps lastCheckTime.
        capabilities: &["kube-read", "omni", "clock"],
        timeout: None,
        namespaces: &[],
    },
    DefaultPlugin {
        name: "omni-cluster",
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/omni_cluster.wasm")),
        // Reads the cluster's connection and children; syncs the template to Omni; reads `file:` patches and
        // manifests under the object's templateRoot; stamps sync times.
        capabilities: &["kube-read", "omni", "files", "clock"],
        // A first sync is ~30 Omni calls; a slow Omni gets the time, and the plugin stops writing 1.5 s before the
        // deadline either way, so a call that runs out still commits its progress. Below the host's 30 s reconcile
        // deadline.
        timeout: Some(Duration::from_secs(20)),
        namespaces: &[],
    },
    DefaultPlugin {
        name: "omni-controlplane",
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/omni_controlplane.wasm")),
        capabilities: &["kube-read"],
        timeout: None,
        namespaces: &[],
    },
    DefaultPlugin {
        name: "omni-workers",
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/omni_workers.wasm")),
        capabilities: &["kube-read"],
        timeout: None,
        namespaces: &[],
    },
    DefaultPlugin {
        name: "omni-machine",
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/omni_machine.wasm")),
        capabilities: &["kube-read"],
        timeout: None,
        namespaces: &[],
    },
    DefaultPlugin {
        name: "omni-kubeconfig-export",
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/omni_kubeconfig_export.wasm")),
        // Reads the cluster and its connection; reads the target Secret's metadata and digest; has Omni mint the
        // kubeconfig and writes it host to host; probes the workload cluster with the stored one.
        capabilities: &[
            "kube-read",
            "omni",
            "secrets",
            "secrets-write",
            "workload",
            "clock",
        ],
        timeout: None,
        // `targetSecretRef.namespace` may name any namespace, as with the Go operator (original-operator.md
        // §4.1); an admin who wants exports confined to their own namespace overrides this plugin's grants.
        namespaces: &["*"],
    },
    DefaultPlugin {
        name: "omni-secret-sync",
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/omni_secret_sync.wasm")),
        // Reads the cluster; reads Secret metadata in its own namespace only; copies host to host.
        capabilities: &["kube-read", "secrets", "workload", "clock"],
        timeout: None,
        namespaces: &[],
    },
];

impl DefaultPlugin {
    pub fn grants(&self) -> Result<Grants, crate::capabilities::GrantError> {
        self.namespaces.iter().try_fold(
            Grants::parse(self.capabilities.iter().copied())?,
            |g, ns| g.read_namespace(ns),
        )
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
