//! Sets a 10 MiB status.

use omni_plugin_sdk::{Host, Info, Plugin, ReconcileError, json};

struct Huge;

impl Plugin for Huge {
    fn describe() -> Info {
        Info {
            name: "huge".into(),
            version: "1.0.0".into(),
            ..Info::default()
        }
    }

    fn reconcile<H: Host>(host: &H) -> Result<(), ReconcileError> {
        host.set_status(json!({ "blob": "x".repeat(10 << 20) }));
        Ok(())
    }
}

omni_plugin_sdk::export_plugin!(Huge);
