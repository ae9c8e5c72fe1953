//! The controller's own spec checks, with the Go controller's texts:
//! the first failure wins. They run on the raw object, before it is read as the typed one, so that a spec
//! the admission webhook would have refused (webhooks can be disabled) is reported, never a decode error.
//! The webhook's wording differs (`kubeconfig Secret name is required`); see `admission`.

use omni_plugin_sdk::Value;

fn blank(v: &Value) -> bool {
    v.as_str().unwrap_or_default().trim().is_empty()
}

/// Set (non-empty) but only whitespace: an unset optional field is fine, a blank one is not.
fn set_but_blank(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| !s.is_empty() && s.trim().is_empty())
}

pub fn first_failure(object: &Value) -> Option<&'static str> {
    let spec = &object["spec"];
    let policy = spec["deletionPolicy"].as_str();
    let checks: [(bool, &'static str); 8] = [
        (
            blank(&spec["clusterRef"]["name"]),
            "clusterRef.name is required",
        ),
        (
            blank(&spec["kubeconfigSecretRef"]["name"]),
            "kubeconfigSecretRef.name is required",
        ),
        (
            set_but_blank(&spec["kubeconfigSecretRef"]["key"]),
            "kubeconfigSecretRef.key must not be blank",
        ),
        (
            blank(&spec["sourceSecretRef"]["name"]),
            "sourceSecretRef.name is required",
        ),
        (
            blank(&spec["targetSecretRef"]["name"]),
            "targetSecretRef.name is required",
        ),
        (
            blank(&spec["targetSecretRef"]["namespace"]),
            "targetSecretRef.namespace is required",
        ),
        (set_but_blank(&spec["type"]), "type must not be blank"),
        (
            !matches!(policy, Some("Delete" | "Orphan")),
            "deletionPolicy must be Delete or Orphan",
        ),
    ];
    checks
        .into_iter()
        .find_map(|(failed, message)| failed.then_some(message))
}
