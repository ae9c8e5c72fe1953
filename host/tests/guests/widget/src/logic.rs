// The widget plugin's logic, shared by its versions (each crate sets VERSION, FLAKY and SPINS and includes this): it
// reconciles OmniControlPlanes and says which version answered in its `Accepted` condition's reason, so tests
// see which digest served which object. The flaky version traps on objects whose name ends in an odd digit:
// half of `cp-0` … `cp-9`; the spinning version never returns. Admission behaves alike: the spinning version
// never answers and the flaky one traps on those objects.

use omni_plugin_sdk::{Condition, Gvk, Host, Info, Plugin, ReconcileError, Value, Verdict};

fn odd(name: &str) -> bool {
    name.chars()
        .last()
        .and_then(|c| c.to_digit(10))
        .is_some_and(|d| d % 2 == 1)
}

struct Widget;

impl Plugin for Widget {
    fn describe() -> Info {
        Info {
            name: "widget".into(),
            version: VERSION.into(),
            kinds: vec![Gvk::new("omni.texashpc.com", "v1alpha1", "OmniControlPlane")],
            ..Info::default()
        }
    }

    fn reconcile<H: Host>(host: &H) -> Result<(), ReconcileError> {
        let object = host.object();
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        while SPINS {
            core::hint::spin_loop();
        }
        if FLAKY && odd(name) {
            panic!("widget {VERSION} cannot handle {name}");
        }
        host.set_condition(Condition::new(
            "Accepted",
            true,
            &format!("ServedBy{}", VERSION.replace('.', "")),
            format!("widget {VERSION} accepted {name}"),
        ));
        Ok(())
    }

    fn validate(object: &Value, _old: Option<&Value>) -> Verdict {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        while SPINS {
            core::hint::spin_loop();
        }
        if FLAKY && odd(name) {
            panic!("widget {VERSION} cannot validate {name}");
        }
        Verdict::default()
    }
}

omni_plugin_sdk::export_plugin!(Widget, capabilities = "clock");
