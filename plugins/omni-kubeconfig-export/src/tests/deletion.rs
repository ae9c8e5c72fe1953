//! Deletion: `Delete` removes the owned recorded and spec targets, `Orphan` touches nothing, and
//! neither Omni nor the workload cluster is involved.

use super::*;

const OLD: &str = "old-kubeconfig";

fn finalize<H: Host>(host: &H) -> Result<bool, ReconcileError> {
    OmniKubeconfigExportPlugin::finalize(host)
}

fn mine(value: &str) -> FakeSecret {
    owned(FakeSecret::opaque(&[("kubeconfig", value)]))
}

#[test]
fn delete_policy_removes_the_recorded_and_the_spec_target() {
    let spy = host(export_with(spec(), recorded(OLD, "tenant-a", "kubeconfig")))
        .with_secret(Some("tenant-a"), OLD, mine("old"))
        .with_secret(None, SECRET, mine("current"));
    assert_eq!(finalize(&spy), Ok(true));
    assert_eq!(spy.secret(Some("tenant-a"), OLD), None);
    assert_eq!(spy.secret(None, SECRET), None);
    assert_eq!(
        spy.requests().secret_deletions,
        vec![
            (Some("tenant-a".to_string()), OLD.to_string()),
            (Some(NS.to_string()), SECRET.to_string())
        ]
    );
    assert!(
        spy.omni_calls().is_empty(),
        "no Omni call: the token is not revoked"
    );
    assert_eq!(
        spy.requests().probes.len(),
        0,
        "the workload cluster is not needed"
    );
    assert!(spy.requests().exports.is_empty());
}

#[test]
fn the_same_secret_recorded_and_in_the_spec_is_deleted_once() {
    let spy = host(export_with(spec(), recorded(SECRET, NS, "kubeconfig"))).with_secret(
        None,
        SECRET,
        mine("current"),
    );
    assert_eq!(finalize(&spy), Ok(true));
    assert_eq!(spy.requests().secret_deletions.len(), 1);
    assert_eq!(spy.secret(None, SECRET), None);
}

#[test]
fn delete_policy_leaves_secrets_it_does_not_own() {
    let theirs = FakeSecret::opaque(&[("kubeconfig", "theirs")]);
    let other =
        FakeSecret::opaque(&[("kubeconfig", "other")]).with_label(OWNER_LABEL, "another-uid");
    let h = host(export_with(spec(), recorded(OLD, NS, "kubeconfig")))
        .with_secret(None, SECRET, theirs.clone())
        .with_secret(None, OLD, other.clone());
    assert_eq!(finalize(&h), Ok(true));
    assert_eq!(h.secret(None, SECRET), Some(theirs));
    assert_eq!(h.secret(None, OLD), Some(other));
}

#[test]
fn absent_targets_are_done() {
    let h = host(export_with(spec(), recorded(OLD, NS, "kubeconfig")));
    assert_eq!(finalize(&h), Ok(true));
}

#[test]
fn orphan_policy_touches_nothing() {
    let mut s = spec();
    s["deletionPolicy"] = json!("Orphan");
    let spy = host(export_with(s, recorded(OLD, NS, "kubeconfig")))
        .with_secret(None, OLD, mine("old"))
        .with_secret(None, SECRET, mine("current"));
    assert_eq!(finalize(&spy), Ok(true));
    assert!(spy.requests().secret_deletions.is_empty());
    assert!(spy.secret(None, OLD).is_some());
    assert!(spy.secret(None, SECRET).is_some());
}

#[test]
fn a_failed_delete_keeps_the_finalizer_and_is_retried() {
    let h = host(export(spec()))
        .with_secret(None, SECRET, mine("current"))
        .deny("secrets-write");
    assert_eq!(
        finalize(&h),
        Err(ReconcileError::Transient(
            "delete target Secret \"omni-system/edge-kubeconfig\": capability \"secrets-write\" is not granted".into()
        ))
    );
    assert!(h.secret(None, SECRET).is_some());
}

#[test]
fn without_a_uid_nothing_can_be_owned() {
    let mut object = export(spec());
    object["metadata"].as_object_mut().map(|m| m.remove("uid"));
    let spy = host(object).with_secret(
        None,
        SECRET,
        FakeSecret::opaque(&[("kubeconfig", "x")]).with_label(OWNER_LABEL, ""),
    );
    assert_eq!(finalize(&spy), Ok(true));
    assert!(spy.requests().secret_deletions.is_empty());
}
