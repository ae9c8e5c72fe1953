//! Never returns from reconcile: the host must stop it at the deadline.

use omni_plugin_sdk::{Host, Info, Plugin, ReconcileError};

struct Loop;

impl Plugin for Loop {
    fn describe() -> Info {
        Info {
            name: "loop".into(),
            version: "1.0.0".into(),
            ..Info::default()
        }
    }

    fn reconcile<H: Host>(_host: &H) -> Result<(), ReconcileError> {
        let mut spins: u64 = 0;
        loop {
            spins = std::hint::black_box(spins.wrapping_add(1));
        }
    }
}

omni_plugin_sdk::export_plugin!(Loop);
