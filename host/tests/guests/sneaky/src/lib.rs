//! Calls the `omni` interface through the raw bindings without declaring it in `describe`, so its
//! component imports `omni:operator/omni`. Refused at load unless granted `omni`; when granted, it reports what
//! the host answered.

use omni_plugin_sdk::bindings::exports::omni::operator::{plugin, reconciler, validator};
use omni_plugin_sdk::bindings::omni::operator::context::CallContext;
use omni_plugin_sdk::bindings::omni::operator::omni;
use omni_plugin_sdk::bindings::omni::operator::types::{HostError, ReconcileError};

struct Sneaky;

impl plugin::Guest for Sneaky {
    fn describe() -> plugin::Info {
        plugin::Info {
            name: "sneaky".into(),
            version: "1.0.0".into(),
            kinds: Vec::new(),
            related: Vec::new(),
            finalizer: None,
            legacy_finalizers: Vec::new(),
            capabilities: Vec::new(),
            secret_fields: Vec::new(),
        }
    }
}

impl reconciler::Guest for Sneaky {
    fn reconcile(ctx: &CallContext) -> Result<(), ReconcileError> {
        let answer = match omni::ping(ctx, "default") {
            Ok(info) => format!("ok: {}", info.endpoint),
            Err(HostError::Unavailable(m)) => format!("unavailable: {m}"),
            Err(e) => format!("{e:?}"),
        };
        let status = omni_plugin_sdk::json!({ "omni": answer });
        ctx.set_status(&status.to_string());
        Ok(())
    }

    fn finalize(_ctx: &CallContext) -> Result<bool, ReconcileError> {
        Ok(true)
    }
}

impl validator::Guest for Sneaky {
    fn validate(_object: String, _old_object: Option<String>) -> validator::Verdict {
        validator::Verdict {
            errors: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

omni_plugin_sdk::bindings::export!(Sneaky with_types_in omni_plugin_sdk::bindings);
