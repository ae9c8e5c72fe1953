//! Targets: never write or adopt an unowned Secret, clean up the previous target, check and write the spec's
//! target, and rename the key.

use super::*;

const OLD: &str = "old-kubeconfig";

fn not_managed(namespace: &str) -> String {
    format!(
        "target Secret \"{namespace}/{SECRET}\" exists and is not managed by this OmniKubeconfigExport (label \
         omni.texashpc.com/kubeconfig-export-uid is not \"{UID}\"); it is left alone: delete it or choose another \
         targetSecretRef"
    )
}

#[test]
fn an_unowned_target_is_never_written_and_omni_is_not_asked() {
    let theirs = FakeSecret::opaque(&[("kubeconfig", "someone else's"), ("token", "x")]);
    let other_export = FakeSecret::opaque(&[("kubeconfig", "another export's")])
        .with_label(OWNER_LABEL, "another-uid");
    for seeded in [theirs, other_export] {
        let spy = host(export(spec())).with_secret(None, SECRET, seeded.clone());
        reconcile(&spy);
        assert!(
            spy.requests().exports.is_empty(),
            "the plugin does not even ask the host to export"
        );
        assert_eq!(
            spy.requests().probes.len(),
            0,
            "nor probe someone else's kubeconfig"
        );
        let h = &spy;
        assert_eq!(
            h.secret(None, SECRET),
            Some(seeded),
            "no data, label or annotation added"
        );
        assert_eq!(h.exports(), 0);
        assert!(h.omni_calls().is_empty());
        assert_accepted(h);
        assert_exported(h, &ready_false("ExportFailed", &not_managed(NS)));
        assert_eq!(h.outputs().requeue_after, Some(60_000));
        assert_no_success_fields(h);
    }
}

#[test]
fn a_target_created_by_someone_else_during_the_export_is_left_alone() {
    let theirs = FakeSecret::opaque(&[("kubeconfig", "someone else's")]);
    // The look finds nothing; the host's create-only write then finds the Secret and answers Conflict.
    let spy = host(export(spec()))
        .with_secret(None, SECRET, theirs.clone())
        .hiding_secret_info();
    reconcile(&spy);
    assert_eq!(spy.requests().exports.len(), 1);
    assert_eq!(spy.secret(None, SECRET), Some(theirs));
    assert_eq!(spy.exports(), 0);
    assert!(
        spy.omni_calls().is_empty(),
        "the host refuses before asking Omni"
    );
    assert_exported(&spy, &ready_false("ExportFailed", &not_managed(NS)));
    assert_no_success_fields(&spy);
}

#[test]
fn a_renamed_target_with_delete_policy_deletes_the_previous_owned_secret() {
    let old = owned(FakeSecret::opaque(&[("kubeconfig", "old")]));
    let h = host(export_with(spec(), recorded(OLD, NS, "kubeconfig"))).with_secret(None, OLD, old);
    reconcile(&h);
    assert_eq!(h.secret(None, OLD), None, "deleted");
    assert!(
        h.secret(None, SECRET).is_some(),
        "the new target is written"
    );
    assert_eq!(
        status(&h)["targetSecretRef"],
        SECRET,
        "the status now records the new target"
    );
}

#[test]
fn a_previous_secret_that_is_not_owned_is_left_alone() {
    let theirs = FakeSecret::opaque(&[("kubeconfig", "theirs")]);
    let h = host(export_with(spec(), recorded(OLD, NS, "kubeconfig"))).with_secret(
        None,
        OLD,
        theirs.clone(),
    );
    reconcile(&h);
    assert_eq!(h.secret(None, OLD), Some(theirs));
    assert!(h.secret(None, SECRET).is_some());
    assert_eq!(cond(&h, "Ready").0, ConditionStatus::True);
}

#[test]
fn a_renamed_target_with_orphan_policy_keeps_the_previous_secret_and_writes_the_new_one() {
    let mut s = spec();
    s["deletionPolicy"] = json!("Orphan");
    let old = owned(FakeSecret::opaque(&[("kubeconfig", "old")]));
    let spy =
        host(export_with(s, recorded(OLD, NS, "kubeconfig"))).with_secret(None, OLD, old.clone());
    reconcile(&spy);
    assert!(
        spy.requests().secret_deletions.is_empty(),
        "nothing deleted"
    );
    assert_eq!(spy.secret(None, OLD), Some(old));
    // The new kubeconfig goes to the spec's Secret, not the recorded one.
    assert!(spy.secret(None, SECRET).is_some());
    assert_eq!(request(&spy).target.name, SECRET);
    assert_eq!(
        request(&spy).remove_key,
        None,
        "another Secret: no key to remove"
    );
    let status = status(&spy);
    assert_eq!(
        status["targetSecretRef"], SECRET,
        "the old one is forgotten"
    );
    assert_eq!(status["targetSecretNamespace"], NS);
}

#[test]
fn a_target_moved_to_another_namespace_is_another_secret() {
    let old = owned(FakeSecret::opaque(&[("kubeconfig", "old")]));
    let h = host(export_with(
        spec(),
        recorded(SECRET, "tenant-a", "kubeconfig"),
    ))
    .with_secret(Some("tenant-a"), SECRET, old);
    reconcile(&h);
    assert_eq!(
        h.secret(Some("tenant-a"), SECRET),
        None,
        "the Secret left behind in tenant-a is deleted"
    );
    assert!(h.secret(None, SECRET).is_some());
}

#[test]
fn an_empty_recorded_namespace_is_the_exports_own() {
    let seeded = written_secret(spec());
    let spy = host(export_with(spec(), recorded(SECRET, "", "kubeconfig")))
        .with_secret(None, SECRET, seeded.clone())
        .at("2026-01-01T10:00:00Z");
    reconcile(&spy);
    assert!(
        spy.requests().secret_deletions.is_empty(),
        "the recorded Secret is the spec's: no cleanup"
    );
    assert_eq!(spy.secret(None, SECRET), Some(seeded), "kept");
}

#[test]
fn a_failed_cleanup_is_reported_and_nothing_is_exported() {
    let old = owned(FakeSecret::opaque(&[("kubeconfig", "old")]));
    let h = host(export_with(spec(), recorded(OLD, NS, "kubeconfig")))
        .with_secret(None, OLD, old.clone())
        .deny("secrets-write");
    reconcile(&h);
    assert_accepted(&h);
    assert_exported(
        &h,
        &ready_false(
            "ExportFailed",
            "delete previous target Secret \"omni-system/old-kubeconfig\": capability \"secrets-write\" is not granted",
        ),
    );
    assert_eq!(h.outputs().requeue_after, Some(60_000));
    assert_eq!(h.secret(None, OLD), Some(old));
    assert_eq!(h.exports(), 0);
    // Still recorded, so the next reconcile tries again.
    assert_no_success_fields(&h);
}

#[test]
fn a_renamed_key_is_removed_from_the_same_secret() {
    let mut old_spec = spec();
    old_spec["targetSecretRef"]["key"] = json!("config");
    let seeded = written_secret(old_spec);
    assert!(seeded.data.contains_key("config"));
    let spy =
        host(export_with(spec(), recorded(SECRET, NS, "config"))).with_secret(None, SECRET, seeded);
    reconcile(&spy);
    assert_eq!(request(&spy).remove_key.as_deref(), Some("config"));
    let secret = spy.secret(None, SECRET).expect("still there");
    assert!(!secret.data.contains_key("config"), "the old key is gone");
    assert!(secret.data.contains_key("kubeconfig"));
    assert_eq!(status(&spy)["targetSecretKey"], "kubeconfig");
    assert!(
        spy.requests().secret_deletions.is_empty(),
        "same Secret: not a previous target"
    );
}

#[test]
fn the_same_key_or_no_recorded_key_removes_nothing() {
    for status in [
        recorded(SECRET, NS, "kubeconfig"),
        recorded(SECRET, NS, ""),
        json!({}),
    ] {
        let spy = host(export_with(spec(), status.clone()));
        reconcile(&spy);
        assert_eq!(request(&spy).remove_key, None, "{status}");
    }
}
