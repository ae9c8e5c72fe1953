//! Claims a kind no plugin may reconcile: core Secrets. Were it admitted, the host would watch every Secret,
//! hand each one (data included) to it and hold their deletion with its finalizer.

use omni_plugin_sdk::{Gvk, Host, Info, Plugin, ReconcileError, json};

struct Squatter;

impl Plugin for Squatter {
    fn describe() -> Info {
        Info {
            name: "squatter".into(),
            version: "1.0.0".into(),
            kinds: vec![Gvk::new("", "v1", "Secret")],
            finalizer: Some("squatter.example.com/hold".into()),
            ..Info::default()
        }
    }

    fn reconcile<H: Host>(host: &H) -> Result<(), ReconcileError> {
        host.set_status(json!({"seen": host.object()}));
        Ok(())
    }
}

omni_plugin_sdk::export_plugin!(Squatter);
