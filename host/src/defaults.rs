//! The plugins built into the operator binary, and the grants each gets. `--plugin-dir` overrides any of them
//! by name without rebuilding the host.

use crate::capabilities::Grants;

/// One built-in plugin: its name, the component bytes, and the capabilities it is granted.
pub struct DefaultPlugin {
    pub name: &'static str,
    pub wasm: &'static [u8],
    pub capabilities: &'static [&'static str],
}

/// The defaults, in load order.
pub const PLUGINS: &[DefaultPlugin] = &[
    DefaultPlugin {
        name: "omni-connection",
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/omni_connection.wasm")),
        // Reads the OmniClusters that still reference a connection being deleted; pings Omni; stamps lastCheckTime.
        capabilities: &["kube-read", "omni", "clock"],
    },
    DefaultPlugin {
        name: "omni-controlplane",
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/omni_controlplane.wasm")),
        capabilities: &["kube-read"],
    },
    DefaultPlugin {
        name: "omni-workers",
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/omni_workers.wasm")),
        capabilities: &["kube-read"],
    },
    DefaultPlugin {
        name: "omni-machine",
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/omni_machine.wasm")),
        capabilities: &["kube-read"],
    },
];

impl DefaultPlugin {
    pub fn grants(&self) -> Result<Grants, crate::capabilities::GrantError> {
        Grants::parse(self.capabilities.iter().copied())
    }
}
