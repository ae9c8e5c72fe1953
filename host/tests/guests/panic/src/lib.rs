//! Panics in reconcile.

use omni_plugin_sdk::{Host, Info, Plugin, ReconcileError};

struct Panic;

impl Plugin for Panic {
    fn describe() -> Info {
        Info {
            name: "panic".into(),
            version: "1.0.0".into(),
            ..Info::default()
        }
    }

    fn reconcile<H: Host>(_host: &H) -> Result<(), ReconcileError> {
        panic!("the panic plugin always panics");
    }
}

omni_plugin_sdk::export_plugin!(Panic);
