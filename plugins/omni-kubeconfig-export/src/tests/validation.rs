//! The controller's own validation, and a missing cluster or connection.

use super::*;

type Mutation = fn(&mut Value);

fn remove(v: &mut Value, key: &str) {
    if let Some(m) = v.as_object_mut() {
        m.remove(key);
    }
}

#[test]
fn controller_validation_reports_the_first_failure_verbatim_before_any_omni_call() {
    let cases: Vec<(Mutation, &str)> = vec![
        (
            |s| s["clusterRef"]["name"] = json!("  "),
            "clusterRef.name is required",
        ),
        (|s| remove(s, "clusterRef"), "clusterRef.name is required"),
        (
            |s| s["targetSecretRef"]["name"] = json!(""),
            "targetSecretRef.name is required",
        ),
        (
            |s| s["targetSecretRef"]["namespace"] = json!(" \t"),
            "targetSecretRef.namespace is required when set",
        ),
        (
            |s| s["targetSecretRef"]["key"] = json!(" "),
            "targetSecretRef.key is required",
        ),
        (
            |s| s["serviceAccount"]["user"] = json!(" "),
            "serviceAccount.user is required",
        ),
        (
            |s| s["serviceAccount"]["groups"] = json!([]),
            "serviceAccount.groups requires at least one group",
        ),
        (
            |s| remove(&mut s["serviceAccount"], "groups"),
            "serviceAccount.groups requires at least one group",
        ),
        (
            |s| s["serviceAccount"]["groups"] = json!(["ops", " "]),
            "serviceAccount.groups must not contain blank values",
        ),
        // Blank values are reported before the guard, whatever the order of the groups.
        (
            |s| s["serviceAccount"]["groups"] = json!(["system:masters", ""]),
            "serviceAccount.groups must not contain blank values",
        ),
        (
            |s| s["serviceAccount"]["groups"] = json!(["ops", " system:masters "]),
            "system:masters requires serviceAccount.allowClusterAdmin: true",
        ),
        (
            |s| {
                s["serviceAccount"]["groups"] = json!(["system:masters"]);
                s["serviceAccount"]["allowClusterAdmin"] = json!(false);
            },
            "system:masters requires serviceAccount.allowClusterAdmin: true",
        ),
        (|s| s["ttl"] = json!("0s"), "ttl must be greater than zero"),
        (|s| s["ttl"] = json!("-5m"), "ttl must be greater than zero"),
        (|s| remove(s, "ttl"), "ttl must be greater than zero"),
        (
            |s| s["ttl"] = json!("x"),
            "ttl is not a valid duration: time: invalid duration \"x\"",
        ),
        (
            |s| s["ttl"] = json!("1d"),
            "ttl is not a valid duration: time: unknown unit \"d\" in duration \"1d\"",
        ),
        (
            |s| s["renewBefore"] = json!("0s"),
            "renewBefore must be greater than zero",
        ),
        (
            |s| s["renewBefore"] = json!("-1h"),
            "renewBefore must be greater than zero",
        ),
        (
            |s| s["renewBefore"] = json!("24h"),
            "renewBefore must be less than ttl",
        ),
        (
            |s| s["renewBefore"] = json!("25h"),
            "renewBefore must be less than ttl",
        ),
        (
            |s| s["renewBefore"] = json!("soon"),
            "renewBefore is not a valid duration: time: invalid duration \"soon\"",
        ),
        (
            |s| s["deletionPolicy"] = json!("Keep"),
            "deletionPolicy must be Delete or Orphan",
        ),
        (
            |s| remove(s, "deletionPolicy"),
            "deletionPolicy must be Delete or Orphan",
        ),
        // First failure wins.
        (
            |s| {
                s["clusterRef"]["name"] = json!("");
                s["ttl"] = json!("0s");
            },
            "clusterRef.name is required",
        ),
        (
            |s| {
                s["ttl"] = json!("-1s");
                s["deletionPolicy"] = json!("Keep");
            },
            "ttl must be greater than zero",
        ),
    ];
    for (mutate, want) in cases {
        let mut s = spec();
        mutate(&mut s);
        let h = host(export(s.clone()));
        reconcile(&h);
        assert_exported(&h, &ready_false("ValidationFailed", want));
        assert!(
            h.condition("Accepted").is_none(),
            "{want}: no Accepted on a validation failure"
        );
        assert_eq!(
            h.outputs().requeue_after,
            None,
            "{want}: a spec change re-triggers, no requeue"
        );
        assert!(h.omni_calls().is_empty(), "{want}: no Omni call");
        assert_eq!(h.exports(), 0, "{want}");
        assert_eq!(h.secret(None, SECRET), None, "{want}: nothing written");
        assert_no_success_fields(&h);
    }
}

#[test]
fn a_validation_failure_still_reports_what_the_spec_asks_for() {
    let mut s = spec();
    s["ttl"] = json!("0s");
    s["serviceAccount"]["groups"] = json!(["ops", "dev"]);
    let h = host(export(s));
    reconcile(&h);
    let status = status(&h);
    assert_eq!(status["clusterRef"], "edge");
    assert_eq!(status["serviceAccountUser"], "automation");
    assert_eq!(status["serviceAccountGroups"], json!(["ops", "dev"]));
    assert!(
        !status.contains_key("clusterName"),
        "the cluster was not looked up"
    );
    assert!(!status.contains_key("connectionRef"));
}

#[test]
fn cluster_admin_is_accepted_with_allow_cluster_admin() {
    let mut s = spec();
    s["serviceAccount"]["groups"] = json!(["system:masters"]);
    s["serviceAccount"]["allowClusterAdmin"] = json!(true);
    let h = host(export(s));
    reconcile(&h);
    assert_eq!(cond(&h, "Ready").0, ConditionStatus::True);
}

#[test]
fn a_missing_cluster_is_reported_and_retried_after_a_minute() {
    let h = MockHost::new(export(spec())).with_object(connection());
    reconcile(&h);
    let message = "OmniCluster \"edge\" does not exist";
    assert_eq!(cond(&h, "Accepted"), ready_false("MissingCluster", message));
    assert_exported(&h, &ready_false("MissingCluster", message));
    assert_eq!(h.outputs().requeue_after, Some(60_000));
    assert!(h.omni_calls().is_empty());
    let status = status(&h);
    assert!(!status.contains_key("clusterName"));
    assert_eq!(status["clusterRef"], "edge");
    assert_no_success_fields(&h);
}

#[test]
fn a_missing_connection_is_reported_with_the_cluster_known() {
    let h = MockHost::new(export(spec())).with_object(edge());
    reconcile(&h);
    assert_accepted(&h);
    assert_exported(
        &h,
        &ready_false(
            "MissingConnection",
            "failed to get OmniConnection \"omni\": omniconnections.omni.texashpc.com \"omni\" not found",
        ),
    );
    assert_eq!(h.outputs().requeue_after, Some(60_000));
    assert!(h.omni_calls().is_empty());
    let status = status(&h);
    assert_eq!(status["clusterName"], "edge");
    assert!(
        !status.contains_key("connectionRef"),
        "the connection is not known"
    );
    assert!(!status.contains_key("endpoint"));
    assert_no_success_fields(&h);
}

#[test]
fn a_cluster_that_cannot_be_read_is_an_error_for_the_host_to_retry() {
    let h = host(export(spec())).deny("kube-read");
    let result = OmniKubeconfigExportPlugin::reconcile(&h);
    assert!(
        matches!(result, Err(ReconcileError::Permanent(ref m)) if m.contains("kube-read")),
        "{result:?}"
    );
    assert!(h.omni_calls().is_empty());
}

#[test]
fn a_clock_that_does_not_answer_rfc3339_is_a_transient_error() {
    let h = host(export(spec())).at("yesterday");
    let result = OmniKubeconfigExportPlugin::reconcile(&h);
    assert!(
        matches!(result, Err(ReconcileError::Transient(ref m)) if m.contains("\"yesterday\"")),
        "{result:?}"
    );
    assert_eq!(h.exports(), 0);
}

#[test]
fn an_object_without_a_uid_writes_nothing() {
    let mut object = export(spec());
    object["metadata"].as_object_mut().map(|m| m.remove("uid"));
    let h = host(object);
    let result = OmniKubeconfigExportPlugin::reconcile(&h);
    assert!(
        matches!(result, Err(ReconcileError::Permanent(ref m)) if m.contains("metadata.uid")),
        "{result:?}"
    );
    assert_eq!(h.exports(), 0);
    assert_eq!(h.secret(None, SECRET), None);
}
