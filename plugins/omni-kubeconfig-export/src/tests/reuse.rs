//! A current, usable kubeconfig is kept without asking Omni; each reason to rotate rotates.

use omni_plugin_sdk::sha256_hex;

use super::*;

/// Ten hours after the first export: not yet due (20:00 with renewBefore 4h).
const LATER: &str = "2026-01-01T10:00:00Z";

/// A host at `at` whose target holds `secret`.
fn with_target(spec: Value, secret: FakeSecret, at: &str) -> MockHost {
    host(export_with(spec, recorded(SECRET, NS, "kubeconfig")))
        .with_secret(None, SECRET, secret)
        .at(at)
}

fn assert_kept(h: &MockHost, seeded: &FakeSecret) {
    assert_eq!(h.exports(), 0, "no new kubeconfig");
    assert!(h.omni_calls().is_empty(), "Omni is not asked");
    assert_eq!(
        h.secret(None, SECRET).as_ref(),
        Some(seeded),
        "the Secret is untouched"
    );
    assert_exported(
        h,
        &(
            ConditionStatus::True,
            "Exported".into(),
            exported_message(NS, SECRET, "kubeconfig"),
        ),
    );
}

fn assert_rotated(h: &MockHost, why: &str) {
    assert_eq!(h.exports(), 1, "{why}: a new kubeconfig");
    let secret = h.secret(None, SECRET).expect("still there");
    assert_eq!(
        secret.annotation(LAST_ROTATION_ANNOTATION),
        Some(h.now().as_str()),
        "{why}"
    );
    assert_eq!(
        secret.annotation(HASH_ANNOTATION),
        Some(sha256_hex(&secret.data["kubeconfig"]).as_str()),
        "{why}"
    );
    assert_eq!(cond(h, "Ready").0, ConditionStatus::True, "{why}");
}

#[test]
fn a_current_kubeconfig_is_kept_and_reported_from_its_annotations() {
    let seeded = written_secret(spec());
    let h = with_target(spec(), seeded.clone(), LATER);
    reconcile(&h);
    assert_kept(&h, &seeded);
    let status = status(&h);
    assert_eq!(
        status["kubeconfigHash"],
        seeded.annotation(HASH_ANNOTATION).expect("stamped")
    );
    assert_eq!(status["expirationTime"], "2026-01-02T00:00:00Z");
    assert_eq!(status["lastRotationTime"], T0);
    assert_eq!(status["nextRotationTime"], "2026-01-01T20:00:00Z");
    assert_eq!(status["targetSecretRef"], SECRET);
    assert_eq!(status["connectionRef"], "omni");
    assert_eq!(
        h.outputs().requeue_after,
        Some(10 * 3_600_000),
        "back at 20:00"
    );
}

#[test]
fn a_changed_renew_before_only_moves_the_rotation_time() {
    let seeded = written_secret(spec());
    let mut s = spec();
    s["renewBefore"] = json!("8h");
    let h = with_target(s, seeded.clone(), LATER);
    reconcile(&h);
    assert_kept(&h, &seeded);
    assert_eq!(status(&h)["nextRotationTime"], "2026-01-01T16:00:00Z");
    assert_eq!(h.outputs().requeue_after, Some(6 * 3_600_000));

    let mut s = spec();
    s["renewBefore"] = json!("16h");
    let h = with_target(s, seeded, LATER);
    reconcile(&h);
    assert_rotated(&h, "16h before expiry is already past");
}

#[test]
fn fields_outside_the_spec_hash_do_not_rotate() {
    let seeded = written_secret(spec());
    let mut s = spec();
    s["deletionPolicy"] = json!("Orphan");
    s["serviceAccount"]["allowClusterAdmin"] = json!(true);
    let h = with_target(s, seeded.clone(), LATER);
    reconcile(&h);
    assert_kept(&h, &seeded);
}

#[test]
fn rotation_is_due_at_the_rotation_time_not_a_second_later() {
    let seeded = written_secret(spec());
    let h = with_target(spec(), seeded.clone(), "2026-01-01T19:59:59Z");
    reconcile(&h);
    assert_kept(&h, &seeded);
    assert_eq!(h.outputs().requeue_after, Some(1_000));

    let h = with_target(spec(), seeded, "2026-01-01T20:00:00Z");
    reconcile(&h);
    assert_rotated(&h, "at 20:00");
    let status = status(&h);
    assert_eq!(status["lastRotationTime"], "2026-01-01T20:00:00Z");
    assert_eq!(status["expirationTime"], "2026-01-02T20:00:00Z");
    assert_eq!(status["nextRotationTime"], "2026-01-02T16:00:00Z");
}

#[test]
fn each_stale_state_rotates() {
    type Edit = fn(FakeSecret) -> FakeSecret;
    let cases: Vec<(&str, Edit)> = vec![
        ("key missing", |mut s| {
            let v = s.data.remove("kubeconfig").unwrap_or_default();
            s.data.insert("other".into(), v);
            s
        }),
        ("data edited", |mut s| {
            s.data
                .insert("kubeconfig".into(), b"edited by hand".to_vec());
            s
        }),
        ("hash annotation missing", |mut s| {
            s.annotations.remove(HASH_ANNOTATION);
            s
        }),
        ("spec hash of another spec", |s| {
            s.with_annotation(SPEC_HASH_ANNOTATION, "0000")
        }),
        ("spec hash missing", |mut s| {
            s.annotations.remove(SPEC_HASH_ANNOTATION);
            s
        }),
        ("expiration missing", |mut s| {
            s.annotations.remove(EXPIRATION_ANNOTATION);
            s
        }),
        ("expiration unreadable", |s| {
            s.with_annotation(EXPIRATION_ANNOTATION, "tomorrow")
        }),
        ("expired", |s| {
            s.with_annotation(EXPIRATION_ANNOTATION, "2026-01-01T09:00:00Z")
        }),
        ("last rotation unreadable", |s| {
            s.with_annotation(LAST_ROTATION_ANNOTATION, "a while ago")
        }),
    ];
    let seeded = written_secret(spec());
    for (why, edit) in cases {
        let h = with_target(spec(), edit(seeded.clone()), LATER);
        reconcile(&h);
        assert_rotated(&h, why);
    }
}

#[test]
fn an_empty_kubeconfig_rotates_even_when_the_cluster_would_answer() {
    let mut seeded = written_secret(spec());
    seeded.data.insert("kubeconfig".into(), Vec::new());
    let empty = sha256_hex(b"");
    let seeded = seeded.with_annotation(HASH_ANNOTATION, &empty);
    let spy = with_target(spec(), seeded, LATER).with_workload_probe(Ok("v1.34.1".into()));
    reconcile(&spy);
    assert_eq!(spy.exports(), 1, "the digest of nothing is no kubeconfig");
    assert_eq!(spy.requests().probes.len(), 0, "decided before probing");
}

#[test]
fn a_spec_change_that_the_hash_covers_rotates() {
    let seeded = written_secret(spec());
    for (path, value) in [("user", json!("other")), ("groups", json!(["ops", "dev"]))] {
        let mut s = spec();
        s["serviceAccount"][path] = value;
        let h = with_target(s, seeded.clone(), LATER);
        reconcile(&h);
        assert_rotated(&h, path);
    }
    let mut s = spec();
    s["ttl"] = json!("48h");
    let h = with_target(s, seeded.clone(), LATER);
    reconcile(&h);
    assert_rotated(&h, "ttl");
    let mut s = spec();
    s["contextNamespace"] = json!("apps");
    let h = with_target(s, seeded, LATER);
    reconcile(&h);
    assert_rotated(&h, "contextNamespace");
}

#[test]
fn a_missing_last_rotation_time_is_no_reason_to_rotate() {
    let mut seeded = written_secret(spec());
    seeded.annotations.remove(LAST_ROTATION_ANNOTATION);
    let h = with_target(spec(), seeded.clone(), LATER);
    reconcile(&h);
    assert_kept(&h, &seeded);
    assert_eq!(
        status(&h)["lastRotationTime"],
        Value::Null,
        "unknown, so cleared"
    );
}

#[test]
fn refused_credentials_rotate() {
    let seeded = written_secret(spec());
    for error in [
        HostError::Unauthenticated(
            "the server has asked for the client to provide credentials".into(),
        ),
        HostError::Forbidden("forbidden: User \"automation\" cannot get path \"/version\"".into()),
        HostError::Invalid("kubeconfig Secret key \"kubeconfig\" does not parse".into()),
        HostError::NotFound(
            "kubeconfig Secret \"omni-system/edge-kubeconfig\" key \"kubeconfig\" does not exist"
                .into(),
        ),
    ] {
        let h = with_target(spec(), seeded.clone(), LATER).with_workload_probe(Err(error.clone()));
        reconcile(&h);
        assert_rotated(&h, &format!("{error:?}"));
        assert!(
            logged(
                &h,
                LogLevel::Info,
                "existing exported kubeconfig is no longer usable; rotating"
            ),
            "{error:?}"
        );
    }
}

#[test]
fn an_unreachable_cluster_keeps_the_kubeconfig() {
    let seeded = written_secret(spec());
    for error in [
        HostError::Timeout("GET /version: deadline exceeded".into()),
        HostError::Unavailable("503 Service Unavailable".into()),
        HostError::Other("dial tcp: lookup edge.example.com: no such host".into()),
    ] {
        let h = with_target(spec(), seeded.clone(), LATER).with_workload_probe(Err(error.clone()));
        reconcile(&h);
        assert_kept(&h, &seeded);
        assert!(
            !logged(
                &h,
                LogLevel::Info,
                "existing exported kubeconfig is no longer usable; rotating"
            ),
            "{error:?}"
        );
        assert!(
            logged(
                &h,
                LogLevel::Debug,
                "could not probe the workload cluster with the exported kubeconfig; keeping it"
            ),
            "{error:?}"
        );
    }
}

#[test]
fn the_probe_uses_the_spec_target_key() {
    let mut s = spec();
    s["targetSecretRef"] = json!({"name": SECRET, "namespace": "tenant-a", "key": "config"});
    let first = host(export(s.clone()));
    reconcile(&first);
    let seeded = first.secret(Some("tenant-a"), SECRET).expect("written");
    let h = host(export_with(s, recorded(SECRET, "tenant-a", "config")))
        .with_secret(Some("tenant-a"), SECRET, seeded.clone())
        .at(LATER);
    reconcile(&h);
    // The mock probe answers NotFound unless the Secret and key it is given hold a kubeconfig.
    assert_eq!(h.exports(), 0);
    assert_eq!(h.secret(Some("tenant-a"), SECRET), Some(seeded));
}
