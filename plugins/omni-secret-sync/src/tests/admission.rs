//! OmniSecretSync admission: every rule with its path, type and text, all errors in order, the UPDATE-only
//! immutability of kubeconfigSecretRef and the warning.

use super::*;

const WARNING: &str = "OmniSecretSync uses a workload-cluster kubeconfig Secret and writes Secret data directly to that cluster";

fn messages(object: &Value, old: Option<&Value>) -> Vec<String> {
    OmniSecretSyncPlugin::validate(object, old).messages()
}

#[test]
fn a_valid_sync_is_allowed_with_the_workload_warning() {
    let v = OmniSecretSyncPlugin::validate(&sync(), None);
    assert!(v.allowed());
    assert_eq!(v.warnings, [WARNING]);
    // Optional fields unset are fine too.
    let minimal = set(
        set(
            set(sync(), "spec.kubeconfigSecretRef.key", Value::Null),
            "spec.type",
            Value::Null,
        ),
        "spec.createNamespace",
        Value::Null,
    );
    assert!(OmniSecretSyncPlugin::validate(&minimal, None).allowed());
    assert!(
        OmniSecretSyncPlugin::validate(&set(sync(), "spec.deletionPolicy", json!("Orphan")), None)
            .allowed()
    );
}

#[test]
fn each_rule_has_its_path_type_and_text() {
    let cases: [(&str, Value, &str); 13] = [
        (
            "spec.clusterRef.name",
            json!(""),
            "spec.clusterRef.name: Required value: clusterRef.name is required",
        ),
        (
            "spec.clusterRef.name",
            json!(" "),
            "spec.clusterRef.name: Required value: clusterRef.name is required",
        ),
        (
            "spec.kubeconfigSecretRef.name",
            json!("\t"),
            "spec.kubeconfigSecretRef.name: Required value: kubeconfig Secret name is required",
        ),
        (
            "spec.kubeconfigSecretRef.key",
            json!("  "),
            "spec.kubeconfigSecretRef.key: Required value: kubeconfig Secret key must not be blank",
        ),
        (
            "spec.sourceSecretRef.name",
            json!(""),
            "spec.sourceSecretRef.name: Required value: source Secret name is required",
        ),
        (
            "spec.sourceSecretRef",
            Value::Null,
            "spec.sourceSecretRef.name: Required value: source Secret name is required",
        ),
        (
            "spec.targetSecretRef.name",
            json!(" "),
            "spec.targetSecretRef.name: Required value: target Secret name is required",
        ),
        (
            "spec.targetSecretRef.namespace",
            json!(""),
            "spec.targetSecretRef.namespace: Required value: target Secret namespace is required",
        ),
        (
            "spec.type",
            json!("  "),
            "spec.type: Invalid value: \"  \": type must not be blank",
        ),
        (
            "spec.deletionPolicy",
            json!(""),
            "spec.deletionPolicy: Required value: deletionPolicy is required",
        ),
        (
            "spec.deletionPolicy",
            Value::Null,
            "spec.deletionPolicy: Required value: deletionPolicy is required",
        ),
        (
            "spec.deletionPolicy",
            json!("Retain"),
            "spec.deletionPolicy: Unsupported value: \"Retain\": supported values: \"Delete\", \"Orphan\"",
        ),
        (
            "spec.deletionPolicy",
            json!("delete"),
            "spec.deletionPolicy: Unsupported value: \"delete\": supported values: \"Delete\", \"Orphan\"",
        ),
    ];
    for (path, value, want) in cases {
        assert_eq!(
            messages(&set(sync(), path, value.clone()), None),
            [want],
            "{path} = {value}"
        );
    }
}

#[test]
fn all_errors_are_collected_in_the_webhooks_order() {
    let object = json!({"metadata": {"name": NAME, "namespace": NS}, "spec": {"kubeconfigSecretRef": {"key": " "}, "type": " ", "deletionPolicy": "x"}});
    assert_eq!(
        messages(&object, None),
        [
            "spec.clusterRef.name: Required value: clusterRef.name is required",
            "spec.kubeconfigSecretRef.name: Required value: kubeconfig Secret name is required",
            "spec.kubeconfigSecretRef.key: Required value: kubeconfig Secret key must not be blank",
            "spec.sourceSecretRef.name: Required value: source Secret name is required",
            "spec.targetSecretRef.name: Required value: target Secret name is required",
            "spec.targetSecretRef.namespace: Required value: target Secret namespace is required",
            "spec.type: Invalid value: \" \": type must not be blank",
            "spec.deletionPolicy: Unsupported value: \"x\": supported values: \"Delete\", \"Orphan\"",
        ]
    );
    assert!(
        OmniSecretSyncPlugin::validate(&object, None)
            .warnings
            .is_empty(),
        "no kubeconfig name, no warning"
    );
}

#[test]
fn on_update_the_kubeconfig_reference_is_immutable() {
    let old = sync();
    let renamed = set(
        sync(),
        "spec.kubeconfigSecretRef.name",
        json!("other-kubeconfig"),
    );
    assert_eq!(
        messages(&renamed, Some(&old)),
        ["spec.kubeconfigSecretRef.name: Forbidden: kubeconfigSecretRef.name is immutable"]
    );
    assert_eq!(
        messages(&renamed, None),
        Vec::<String>::new(),
        "CREATE has nothing to compare with"
    );

    let rekeyed = set(sync(), "spec.kubeconfigSecretRef.key", json!("config"));
    assert_eq!(
        messages(&rekeyed, Some(&old)),
        ["spec.kubeconfigSecretRef.key: Forbidden: kubeconfigSecretRef.key is immutable"]
    );

    // Raw strings, as Go compares them: an unset key is not the same as "kubeconfig".
    let unset = set(sync(), "spec.kubeconfigSecretRef.key", Value::Null);
    assert_eq!(
        messages(&unset, Some(&old)),
        ["spec.kubeconfigSecretRef.key: Forbidden: kubeconfigSecretRef.key is immutable"]
    );

    // Both, after the other rules, and the warning still given on a refused update.
    let both = set(
        set(renamed, "spec.kubeconfigSecretRef.key", json!("config")),
        "spec.clusterRef.name",
        json!(""),
    );
    let verdict = OmniSecretSyncPlugin::validate(&both, Some(&old));
    assert_eq!(
        verdict.messages(),
        [
            "spec.clusterRef.name: Required value: clusterRef.name is required",
            "spec.kubeconfigSecretRef.name: Forbidden: kubeconfigSecretRef.name is immutable",
            "spec.kubeconfigSecretRef.key: Forbidden: kubeconfigSecretRef.key is immutable",
        ]
    );
    assert_eq!(verdict.warnings, [WARNING]);

    // Other spec changes are allowed on update.
    let retargeted = set(sync(), "spec.targetSecretRef.name", json!("other"));
    assert!(OmniSecretSyncPlugin::validate(&retargeted, Some(&old)).allowed());
}

#[test]
fn the_warning_follows_a_non_empty_kubeconfig_name_even_when_blank() {
    let blank = set(sync(), "spec.kubeconfigSecretRef.name", json!(" "));
    let verdict = OmniSecretSyncPlugin::validate(&blank, None);
    assert!(!verdict.allowed());
    assert_eq!(
        verdict.warnings,
        [WARNING],
        "Go warns whenever the name is non-empty"
    );
    let empty = set(sync(), "spec.kubeconfigSecretRef.name", json!(""));
    assert!(
        OmniSecretSyncPlugin::validate(&empty, None)
            .warnings
            .is_empty()
    );
}
