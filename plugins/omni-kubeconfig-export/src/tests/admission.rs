//! The OmniKubeconfigExport admission rules, all errors collected in order, and the cluster-admin warning.

use super::*;

fn validate(spec: Value) -> Verdict {
    OmniKubeconfigExportPlugin::validate(&export(spec), None)
}

const WARNING: &str =
    "system:masters exports a cluster-admin kubeconfig into the management cluster";

#[test]
fn a_valid_export_is_allowed_without_warnings() {
    let v = validate(spec());
    assert!(v.allowed(), "{:?}", v.messages());
    assert!(v.warnings.is_empty());
    let mut s = spec();
    s["targetSecretRef"] = json!({"name": SECRET, "namespace": "tenant-a", "key": "config"});
    s["contextNamespace"] = json!("apps");
    s["ttl"] = json!("1.5h");
    s["renewBefore"] = json!("89m59.999999999s");
    let v = validate(s);
    assert!(v.allowed(), "{:?}", v.messages());
}

#[test]
fn every_error_is_collected_in_the_webhooks_order() {
    let s = json!({
        "clusterRef": {"name": " "},
        "targetSecretRef": {"name": "", "namespace": "  ", "key": " "},
        "contextNamespace": "\t",
        "serviceAccount": {"user": " ", "groups": ["ops", " ", "system:masters", " ops"]},
        "ttl": "-5m",
        "renewBefore": "0s",
        "deletionPolicy": "Keep"
    });
    let v = validate(s);
    assert_eq!(
        v.messages(),
        [
            "spec.clusterRef.name: Required value: clusterRef.name is required",
            "spec.targetSecretRef.name: Required value: target Secret name is required",
            "spec.targetSecretRef.namespace: Required value: target Secret namespace must not be blank",
            "spec.contextNamespace: Required value: context namespace must not be blank",
            "spec.targetSecretRef.key: Required value: target Secret key must not be blank",
            "spec.serviceAccount.user: Required value: service account user is required",
            "spec.serviceAccount.groups[1]: Required value: service account group must not be blank",
            "spec.serviceAccount.groups[2]: Forbidden: system:masters requires serviceAccount.allowClusterAdmin: true",
            "spec.serviceAccount.groups[3]: Duplicate value: \"ops\"",
            "spec.serviceAccount.groups[0]: Duplicate value: \"ops\"",
            "spec.ttl: Invalid value: \"-5m0s\": ttl must be greater than zero",
            "spec.renewBefore: Invalid value: \"0s\": renewBefore must be greater than zero",
            "spec.deletionPolicy: Unsupported value: \"Keep\": supported values: \"Delete\", \"Orphan\"",
        ]
    );
    assert!(v.warnings.is_empty(), "allowClusterAdmin is not set");
}

#[test]
fn missing_fields_are_required() {
    let v =
        OmniKubeconfigExportPlugin::validate(&json!({"metadata": {"name": "x"}, "spec": {}}), None);
    assert_eq!(
        v.messages(),
        [
            "spec.clusterRef.name: Required value: clusterRef.name is required",
            "spec.targetSecretRef.name: Required value: target Secret name is required",
            "spec.serviceAccount.user: Required value: service account user is required",
            "spec.serviceAccount.groups: Required value: at least one service account group is required",
            "spec.ttl: Invalid value: \"0s\": ttl must be greater than zero",
            "spec.deletionPolicy: Required value: deletionPolicy is required",
        ]
    );
}

#[test]
fn empty_optional_strings_count_as_unset() {
    let mut s = spec();
    s["targetSecretRef"] = json!({"name": SECRET, "namespace": "", "key": ""});
    s["contextNamespace"] = json!("");
    assert!(validate(s).allowed());
}

#[test]
fn a_group_repeated_three_times_names_each_repeat_with_the_first() {
    let mut s = spec();
    s["serviceAccount"]["groups"] = json!(["dev", "ops", "dev", "dev "]);
    assert_eq!(
        validate(s).messages(),
        [
            "spec.serviceAccount.groups[2]: Duplicate value: \"dev\"",
            "spec.serviceAccount.groups[0]: Duplicate value: \"dev\"",
            "spec.serviceAccount.groups[3]: Duplicate value: \"dev\"",
            "spec.serviceAccount.groups[0]: Duplicate value: \"dev\"",
        ]
    );
}

#[test]
fn renew_before_must_be_less_than_a_positive_ttl() {
    let mut s = spec();
    s["renewBefore"] = json!("24h");
    assert_eq!(
        validate(s).messages(),
        ["spec.renewBefore: Invalid value: \"24h0m0s\": renewBefore must be less than ttl"]
    );
    let mut s = spec();
    s["ttl"] = json!("1.5h");
    s["renewBefore"] = json!("90m0s1ns");
    assert_eq!(
        validate(s).messages(),
        [
            "spec.renewBefore: Invalid value: \"1h30m0.000000001s\": renewBefore must be less than ttl"
        ]
    );
    let mut s = spec();
    s["renewBefore"] = json!("48h");
    s["ttl"] = json!("0");
    assert_eq!(
        validate(s).messages(),
        ["spec.ttl: Invalid value: \"0s\": ttl must be greater than zero"],
        "no comparison with a ttl that is refused"
    );
}

#[test]
fn durations_that_do_not_parse_are_invalid_with_gos_error() {
    let mut s = spec();
    s["ttl"] = json!("1d");
    s["renewBefore"] = json!("x");
    assert_eq!(
        validate(s).messages(),
        [
            "spec.ttl: Invalid value: \"1d\": time: unknown unit \"d\" in duration \"1d\"",
            "spec.renewBefore: Invalid value: \"x\": time: invalid duration \"x\"",
        ]
    );
    let mut s = spec();
    s["renewBefore"] = json!("");
    assert_eq!(
        validate(s).messages(),
        ["spec.renewBefore: Invalid value: \"\": time: invalid duration \"\""]
    );
}

#[test]
fn allowed_cluster_admin_is_admitted_with_a_warning() {
    let mut s = spec();
    s["serviceAccount"]["groups"] = json!(["ops", " system:masters "]);
    s["serviceAccount"]["allowClusterAdmin"] = json!(true);
    let v = validate(s);
    assert!(v.allowed(), "{:?}", v.messages());
    assert_eq!(v.warnings, [WARNING]);

    let mut s = spec();
    s["serviceAccount"]["allowClusterAdmin"] = json!(true);
    assert!(
        validate(s).warnings.is_empty(),
        "allowClusterAdmin alone exports no cluster-admin"
    );

    let mut s = spec();
    s["serviceAccount"]["groups"] = json!(["system:masters-readonly"]);
    assert!(validate(s).allowed(), "only the exact name is guarded");
}

#[test]
fn the_warning_comes_with_other_errors_too() {
    let mut s = spec();
    s["serviceAccount"]["groups"] = json!(["system:masters"]);
    s["serviceAccount"]["allowClusterAdmin"] = json!(true);
    s["deletionPolicy"] = json!("");
    let v = validate(s);
    assert_eq!(
        v.messages(),
        ["spec.deletionPolicy: Required value: deletionPolicy is required"]
    );
    assert_eq!(v.warnings, [WARNING]);
}
