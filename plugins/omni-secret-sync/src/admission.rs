//! Admission rules for OmniSecretSync, in the Go webhook's order, all errors collected. `old` is present on
//! UPDATE, where `kubeconfigSecretRef` must not change (the Go Helm chart never registered this webhook, so the
//! guard against retargeting a sync's Secret data at another cluster never ran there; reconcile defends on its own
//! too).

use omni_plugin_sdk::{Value, Verdict};

pub const WORKLOAD_WARNING: &str = "OmniSecretSync uses a workload-cluster kubeconfig Secret and writes Secret data directly to that cluster";

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

pub fn validate(object: &Value, old: Option<&Value>) -> Verdict {
    let mut v = Verdict::default();
    let spec = &object["spec"];
    let kubeconfig = &spec["kubeconfigSecretRef"];

    let required = [
        (
            "spec.clusterRef.name",
            &spec["clusterRef"]["name"],
            "clusterRef.name is required",
        ),
        (
            "spec.kubeconfigSecretRef.name",
            &kubeconfig["name"],
            "kubeconfig Secret name is required",
        ),
    ];
    for (field, value, detail) in required {
        if text(value).trim().is_empty() {
            v.required(field, detail);
        }
    }
    let key = text(&kubeconfig["key"]);
    if !key.is_empty() && key.trim().is_empty() {
        v.required(
            "spec.kubeconfigSecretRef.key",
            "kubeconfig Secret key must not be blank",
        );
    }
    let required = [
        (
            "spec.sourceSecretRef.name",
            &spec["sourceSecretRef"]["name"],
            "source Secret name is required",
        ),
        (
            "spec.targetSecretRef.name",
            &spec["targetSecretRef"]["name"],
            "target Secret name is required",
        ),
        (
            "spec.targetSecretRef.namespace",
            &spec["targetSecretRef"]["namespace"],
            "target Secret namespace is required",
        ),
    ];
    for (field, value, detail) in required {
        if text(value).trim().is_empty() {
            v.required(field, detail);
        }
    }
    let type_ = text(&spec["type"]);
    if !type_.is_empty() && type_.trim().is_empty() {
        v.invalid(
            "spec.type",
            Value::String(type_.into()),
            "type must not be blank",
        );
    }
    match text(&spec["deletionPolicy"]) {
        "" => v.required("spec.deletionPolicy", "deletionPolicy is required"),
        "Delete" | "Orphan" => {}
        other => v.not_supported(
            "spec.deletionPolicy",
            Value::String(other.into()),
            &["Delete", "Orphan"],
        ),
    }

    if let Some(old) = old {
        // Raw strings, as Go compares them: an absent key is "" and differs from an explicit "kubeconfig".
        let before = &old["spec"]["kubeconfigSecretRef"];
        if text(&before["name"]) != text(&kubeconfig["name"]) {
            v.forbidden(
                "spec.kubeconfigSecretRef.name",
                "kubeconfigSecretRef.name is immutable",
            );
        }
        if text(&before["key"]) != key {
            v.forbidden(
                "spec.kubeconfigSecretRef.key",
                "kubeconfigSecretRef.key is immutable",
            );
        }
    }

    if !text(&kubeconfig["name"]).is_empty() {
        v.warn(WORKLOAD_WARNING);
    }
    v
}
