//! Which earlier release identity reconcile retires first ([`crate::identity::previous`]).

use super::*;
use crate::identity::previous;
use crate::object::ReleaseObject;

fn object_with_status(status: Value) -> ReleaseObject {
    // The typed object is the spec's; the status is read raw, as reconcile reads it.
    let typed = omni_plugin_sdk::serde_json::from_value(release()).unwrap();
    let mut raw = release();
    raw["status"] = status;
    ReleaseObject { raw, typed }
}

/// What the status reports after a release was made under the spec's identity.
fn reported() -> Value {
    json!({"releaseName": RELEASE, "namespace": "apps", "kubeconfigSecretRef": KUBECONFIG,
        "kubeconfigSecretKey": "config", "history": [{"version": 1}]})
}

#[test]
fn the_spec_s_own_identity_and_a_release_never_made_have_nothing_to_retire() {
    let same = object_with_status(reported());
    assert_eq!(previous(&same.raw, &same), None);
    let mut never = reported();
    never["releaseName"] = json!("other");
    never["history"] = json!([]);
    let never = object_with_status(never);
    assert_eq!(previous(&never.raw, &never), None, "no revision was made");
    let go = object_with_status(json!({"releaseName": "other", "namespace": "apps"}));
    assert_eq!(
        previous(&go.raw, &go),
        None,
        "a status without the identity"
    );
}

#[test]
fn a_changed_name_namespace_secret_or_key_is_the_previous_release() {
    for (field, value) in [
        ("releaseName", "old-name"),
        ("namespace", "old-ns"),
        ("kubeconfigSecretRef", "old-kubeconfig"),
        ("kubeconfigSecretKey", "value"),
    ] {
        let mut status = reported();
        status[field] = json!(value);
        let object = object_with_status(status.clone());
        let found = previous(&object.raw, &object).unwrap_or_else(|| panic!("{field} changed"));
        assert_eq!(found.name, status["releaseName"], "{field}");
        assert_eq!(found.namespace, status["namespace"], "{field}");
        assert_eq!(
            found.kubeconfig.name, status["kubeconfigSecretRef"],
            "{field}"
        );
        assert_eq!(
            found.kubeconfig.key, status["kubeconfigSecretKey"],
            "{field}"
        );
    }
    // A status from before `kubeconfigSecretKey` was reported means the default key.
    let mut status = reported();
    status["releaseName"] = json!("old-name");
    status
        .as_object_mut()
        .unwrap()
        .remove("kubeconfigSecretKey");
    let object = object_with_status(status);
    let found = previous(&object.raw, &object).expect("the name changed");
    assert_eq!(found.kubeconfig.key, "kubeconfig");
}
