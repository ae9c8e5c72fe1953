//! Admission rules for OmniCluster, in the Go webhook's order.

use omni_children::rules;
use omni_plugin_sdk::{Value, Verdict};

pub fn validate(object: &Value, _old: Option<&Value>) -> Verdict {
    let mut v = Verdict::default();
    let spec = &object["spec"];
    let policy = &spec["deletePolicy"];
    if policy["orphan"].as_bool() == Some(true) && policy["destroyMachines"].as_bool() == Some(true)
    {
        v.invalid(
            "spec.deletePolicy",
            policy.clone(),
            "orphan and destroyMachines cannot both be true",
        );
    }
    if let Some(interval) = spec["syncInterval"].as_str()
        && interval.starts_with('-')
        && omni_template::translate::parse_go_duration(interval)
            .is_ok_and(|d| d.seconds < 0 || d.nanos < 0)
    {
        v.invalid(
            "spec.syncInterval",
            Value::String(interval.into()),
            "syncInterval must not be negative",
        );
    }
    rules::patches(spec, &mut v);
    if let Some(manifests) = spec["kubernetes"]["manifests"].as_array() {
        for (i, m) in manifests.iter().enumerate() {
            let has_file = m["file"].as_str().is_some_and(|f| !f.is_empty());
            let has_inline = m["inline"].as_array().is_some_and(|l| !l.is_empty());
            let field = format!("spec.kubernetes.manifests[{i}]");
            match (has_file, has_inline) {
                (false, false) => {
                    v.required(&field, "manifest requires exactly one of file or inline")
                }
                (true, true) => v.invalid(
                    &field,
                    m.clone(),
                    "manifest must not set both file and inline",
                ),
                _ => {}
            }
        }
    }
    if spec["kernelArgs"].as_array().is_some_and(|a| !a.is_empty()) {
        v.warn("cluster-level kernelArgs are valid only when every machine set uses static machines instead of machineClass");
    }
    v
}
