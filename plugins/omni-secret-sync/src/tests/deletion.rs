//! Deletion with its time bound: Orphan, Delete of the recorded or spec target (owned only), and every
//! kind of failure before and after the bound.

use super::*;

const DELETED_AT: &str = "2026-01-01T00:00:00Z";

/// A sync being deleted since [`DELETED_AT`].
fn deleting(policy: &str) -> Value {
    let object = set(sync(), "metadata.deletionTimestamp", json!(DELETED_AT));
    set(object, "spec.deletionPolicy", json!(policy))
}

fn finalized(host: MockHost) -> (Recording, bool) {
    let rec = recording(host);
    let done = OmniSecretSyncPlugin::finalize(&rec.inner).expect("finalize returns Ok");
    (rec, done)
}

#[test]
fn orphan_releases_at_once_touching_nothing_and_needing_no_kubeconfig() {
    let mine = owned(&[("a", "b")]);
    let (rec, done) = finalized(MockHost::new(deleting("Orphan")).with_workload_secret(
        TARGET_NS,
        TARGET,
        mine.clone(),
    ));
    assert!(done);
    assert!(rec.deleted().is_empty());
    assert_eq!(rec.workload_secret(TARGET_NS, TARGET), Some(mine));
    assert_eq!(rec.outputs(), Default::default(), "nothing reported");
}

#[test]
fn delete_removes_the_owned_spec_target_with_the_spec_kubeconfig() {
    let (rec, done) = finalized(host(deleting("Delete")).with_workload_secret(
        TARGET_NS,
        TARGET,
        owned(&[("a", "b")]),
    ));
    assert!(done);
    assert!(rec.workload_secret(TARGET_NS, TARGET).is_none());
    let deletes = rec.inner.requests().workload_deletions;
    assert_eq!(deletes.len(), 1);
    assert_eq!(deletes[0].0, SecretKeyRef::local(KUBECONFIG, "kubeconfig"));
    assert_eq!(
        (deletes[0].1.as_str(), deletes[0].2.as_str()),
        (TARGET_NS, TARGET)
    );
    assert_eq!(
        deletes[0].3,
        OwnerLabel::new("omni.texashpc.com/secret-sync-uid", UID)
    );
    assert!(rec.events().is_empty());
}

#[test]
fn delete_prefers_the_recorded_target_over_the_spec() {
    let object = set(
        deleting("Delete"),
        "status",
        json!({"targetSecretRef": "old", "targetNamespace": "default"}),
    );
    let spec_target = owned(&[("a", "b")]);
    let (rec, done) = finalized(
        host(object)
            .with_workload_secret("default", "old", owned(&[("a", "b")]))
            .with_workload_secret(TARGET_NS, TARGET, spec_target.clone()),
    );
    assert!(done);
    assert_eq!(rec.deleted(), [("default".to_string(), "old".to_string())]);
    assert!(rec.workload_secret("default", "old").is_none());
    assert_eq!(
        rec.workload_secret(TARGET_NS, TARGET),
        Some(spec_target),
        "as Go: the status target only"
    );

    // Half a record is no record: the spec target.
    let half = set(
        deleting("Delete"),
        "status",
        json!({"targetSecretRef": "old"}),
    );
    let (rec, _) = finalized(host(half));
    assert_eq!(rec.deleted(), [(TARGET_NS.to_string(), TARGET.to_string())]);
}

#[test]
fn an_absent_or_unowned_target_is_done_and_left_alone() {
    let (rec, done) = finalized(host(deleting("Delete")));
    assert!(done);
    assert_eq!(rec.deleted().len(), 1);

    let theirs = FakeSecret::opaque(&[("a", "b")])
        .with_label("omni.texashpc.com/secret-sync-uid", "someone-else");
    let (rec, done) =
        finalized(host(deleting("Delete")).with_workload_secret(TARGET_NS, TARGET, theirs.clone()));
    assert!(done);
    assert_eq!(rec.workload_secret(TARGET_NS, TARGET), Some(theirs));
    assert!(rec.events().is_empty());
}

#[test]
fn a_blank_target_never_written_needs_no_workload_call() {
    let object = set(
        deleting("Delete"),
        "spec.targetSecretRef.namespace",
        json!(" "),
    );
    let (rec, done) = finalized(host(object));
    assert!(done);
    assert!(rec.deleted().is_empty());
}

/// Every way the delete can fail, as the host reports it, with the text the condition must carry.
fn failures() -> Vec<(&'static str, MockHost, String)> {
    let mine = || owned(&[("a", "b")]);
    let failing = |e: HostError| {
        host(deleting("Delete"))
            .with_workload_secret(TARGET_NS, TARGET, mine())
            .with_workload_failure(e)
    };
    vec![
        (
            "kubeconfig Secret gone",
            MockHost::new(deleting("Delete")).with_workload_secret(TARGET_NS, TARGET, mine()),
            "kubeconfig Secret \"team/edge-kubeconfig\" key \"kubeconfig\" does not exist".into(),
        ),
        (
            "invalid",
            failing(HostError::Invalid("the kubeconfig does not parse".into())),
            "the kubeconfig does not parse".into(),
        ),
        (
            "unauthenticated",
            failing(HostError::Unauthenticated("401 Unauthorized".into())),
            "401 Unauthorized".into(),
        ),
        (
            "forbidden",
            failing(HostError::Forbidden("403 Forbidden".into())),
            "403 Forbidden".into(),
        ),
        (
            "unavailable",
            failing(HostError::Unavailable(
                "dial tcp: connection refused".into(),
            )),
            "dial tcp: connection refused".into(),
        ),
        (
            "timeout",
            failing(HostError::Timeout("no answer within 10s".into())),
            "no answer within 10s".into(),
        ),
        (
            "denied",
            failing(HostError::Denied(
                "capability \"workload\" is not granted".into(),
            )),
            "capability \"workload\" is not granted".into(),
        ),
        (
            "other",
            failing(HostError::Other("etcdserver: request timed out".into())),
            "etcdserver: request timed out".into(),
        ),
    ]
}

#[test]
fn before_the_bound_a_failed_delete_keeps_the_finalizer_and_says_until_when() {
    for (case, host, why) in failures() {
        let (rec, done) = finalized(host.at("2026-01-01T00:09:59Z"));
        assert!(!done, "{case}");
        let message = format!(
            "cannot delete workload Secret \"apps/regcred\": {why}; retrying until 2026-01-01T00:10:00Z, then the finalizer is \
             released and the Secret is left in place; set spec.deletionPolicy: Orphan to release it now"
        );
        assert_eq!(
            rec.cond("Ready"),
            (
                ConditionStatus::False,
                "DeleteFailed".into(),
                message.clone()
            ),
            "{case}"
        );
        assert_eq!(
            rec.cond("Synced"),
            (
                ConditionStatus::False,
                "DeleteFailed".into(),
                message.clone()
            ),
            "{case}"
        );
        assert_eq!(rec.requeue(), Some(30_000), "{case}");
        assert_eq!(rec.status()["lastError"], message.as_str(), "{case}");
        assert!(rec.events().is_empty(), "{case}");
        assert!(rec.workload_secret(TARGET_NS, TARGET).is_some(), "{case}");
    }
}

#[test]
fn at_and_after_the_bound_the_finalizer_is_released_with_a_warning_and_the_secret_left() {
    for now in ["2026-01-01T00:10:00Z", "2026-01-02T00:00:00Z"] {
        for (case, host, why) in failures() {
            let (rec, done) = finalized(host.at(now));
            assert!(done, "{case} at {now}");
            let message = format!(
                "gave up deleting workload Secret \"apps/regcred\" after 10m0s: {why}; it is left in place"
            );
            assert_eq!(
                rec.events(),
                [(EventType::Warning, "DeletionAbandoned".to_string(), message)],
                "{case} at {now}"
            );
            assert!(
                rec.workload_secret(TARGET_NS, TARGET).is_some(),
                "{case} at {now}"
            );
            assert_eq!(rec.requeue(), None, "{case} at {now}");
        }
    }
}

#[test]
fn the_bound_counts_from_the_deletion_timestamp_and_is_ten_minutes() {
    assert_eq!(GIVE_UP_AFTER_S, 600);
    let late = set(
        deleting("Delete"),
        "metadata.deletionTimestamp",
        json!("2026-01-01T01:00:00Z"),
    );
    let (rec, done) = finalized(MockHost::new(late).at("2026-01-01T01:05:00Z"));
    assert!(!done, "5 minutes into the deletion");
    assert!(
        rec.cond("Ready")
            .2
            .contains("retrying until 2026-01-01T01:10:00Z")
    );

    // Without a deletion timestamp (the API server always sets one) the wait counts from now.
    let undated = set(
        deleting("Delete"),
        "metadata.deletionTimestamp",
        Value::Null,
    );
    let (rec, done) = finalized(MockHost::new(undated).at("2026-01-01T00:05:00Z"));
    assert!(!done);
    assert!(
        rec.cond("Ready")
            .2
            .contains("retrying until 2026-01-01T00:15:00Z")
    );

    // A clock behind the timestamp counts as no time waited.
    let (rec, done) = finalized(MockHost::new(deleting("Delete")).at("2025-12-31T23:00:00Z"));
    assert!(!done);
    assert!(
        rec.cond("Ready")
            .2
            .contains("retrying until 2026-01-01T00:10:00Z")
    );
}

#[test]
fn switching_to_orphan_is_the_escape_while_the_delete_fails() {
    let stuck = MockHost::new(deleting("Delete")).with_workload_secret(
        TARGET_NS,
        TARGET,
        owned(&[("a", "b")]),
    );
    assert!(!finalized(stuck).1);
    let escaped = MockHost::new(deleting("Orphan")).with_workload_secret(
        TARGET_NS,
        TARGET,
        owned(&[("a", "b")]),
    );
    let (rec, done) = finalized(escaped);
    assert!(done);
    assert!(rec.workload_secret(TARGET_NS, TARGET).is_some());
}
