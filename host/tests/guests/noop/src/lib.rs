//! The cheapest possible reconcile for the call-overhead benchmark: it copies the object into the guest without
//! parsing it (raw bindings, not the SDK's typed `Host`) and records one output.

use omni_plugin_sdk::bindings::exports::omni::operator::{plugin, reconciler, validator};
use omni_plugin_sdk::bindings::omni::operator::context::CallContext;
use omni_plugin_sdk::bindings::omni::operator::types::ReconcileError;

struct Noop;

impl plugin::Guest for Noop {
    fn describe() -> plugin::Info {
        plugin::Info {
            name: "noop".into(),
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

impl reconciler::Guest for Noop {
    fn reconcile(ctx: &CallContext) -> Result<(), ReconcileError> {
        let object = ctx.object();
        ctx.requeue_after(object.len() as u64);
        Ok(())
    }

    fn finalize(_ctx: &CallContext) -> Result<bool, ReconcileError> {
        Ok(true)
    }
}

impl validator::Guest for Noop {
    fn validate(_object: String, _old_object: Option<String>) -> validator::Verdict {
        validator::Verdict {
            errors: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

omni_plugin_sdk::bindings::export!(Noop with_types_in omni_plugin_sdk::bindings);
