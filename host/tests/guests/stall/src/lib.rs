//! Never answers `describe`: a plugin that hangs at load must be reported and skipped, never block start-up.

use omni_plugin_sdk::{Host, Info, Plugin, ReconcileError};

struct Stall;

impl Plugin for Stall {
    fn describe() -> Info {
        let mut spins = 0u64;
        loop {
            spins = std::hint::black_box(spins.wrapping_add(1));
        }
    }

    fn reconcile<H: Host>(_host: &H) -> Result<(), ReconcileError> {
        Ok(())
    }
}

omni_plugin_sdk::export_plugin!(Stall);
