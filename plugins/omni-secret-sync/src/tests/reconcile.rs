//! Reconcile: validation, missing dependencies, the copy and its metadata, the outcomes, the previous target,
//! the kubeconfig pin and the unowned target.

use super::*;

const F: ConditionStatus = ConditionStatus::False;
const T: ConditionStatus = ConditionStatus::True;

fn failed(reason: &str, message: &str) -> (ConditionStatus, String, String) {
    (F, reason.into(), message.into())
}

/// The target as the host wrote it (panics when absent).
fn written(rec: &Recording) -> FakeSecret {
    rec.workload_secret(TARGET_NS, TARGET)
        .expect("the target was written")
}

// ---- validation ----

#[test]
fn each_controller_rule_reports_its_go_text_and_touches_nothing() {
    let cases: [(&str, Value, &str); 12] = [
        (
            "spec.clusterRef.name",
            json!(""),
            "clusterRef.name is required",
        ),
        (
            "spec.clusterRef.name",
            json!("  "),
            "clusterRef.name is required",
        ),
        (
            "spec.kubeconfigSecretRef.name",
            json!(" \t"),
            "kubeconfigSecretRef.name is required",
        ),
        (
            "spec.kubeconfigSecretRef.key",
            json!("  "),
            "kubeconfigSecretRef.key must not be blank",
        ),
        (
            "spec.sourceSecretRef.name",
            json!(""),
            "sourceSecretRef.name is required",
        ),
        (
            "spec.targetSecretRef.name",
            json!(" "),
            "targetSecretRef.name is required",
        ),
        (
            "spec.targetSecretRef.namespace",
            json!(""),
            "targetSecretRef.namespace is required",
        ),
        (
            "spec.targetSecretRef.namespace",
            Value::Null,
            "targetSecretRef.namespace is required",
        ),
        ("spec.type", json!(" "), "type must not be blank"),
        (
            "spec.deletionPolicy",
            json!("Keep"),
            "deletionPolicy must be Delete or Orphan",
        ),
        (
            "spec.deletionPolicy",
            json!(""),
            "deletionPolicy must be Delete or Orphan",
        ),
        (
            "spec.deletionPolicy",
            Value::Null,
            "deletionPolicy must be Delete or Orphan",
        ),
    ];
    for (path, value, message) in cases {
        let rec = reconciled(host(set(sync(), path, value.clone())));
        let case = format!("{path} = {value}");
        assert_eq!(
            rec.cond("Synced"),
            failed("ValidationFailed", message),
            "{case}"
        );
        assert_eq!(
            rec.cond("Ready"),
            failed("ValidationFailed", message),
            "{case}"
        );
        assert!(
            rec.condition("Accepted").is_none(),
            "{case}: no Accepted on validation failures"
        );
        assert_eq!(rec.requeue(), None, "{case}: only a spec change helps");
        assert_eq!(rec.status()["lastError"], message, "{case}");
        assert_eq!(
            rec.status()["lastAttemptTime"],
            "2026-01-01T00:00:00Z",
            "{case}"
        );
        assert!(
            rec.copies().is_empty() && rec.deleted().is_empty(),
            "{case}: nothing asked of the workload cluster"
        );
    }
}

#[test]
fn an_unset_key_and_type_are_fine_and_the_first_failure_wins() {
    let ok = set(
        set(sync(), "spec.kubeconfigSecretRef.key", Value::Null),
        "spec.type",
        Value::Null,
    );
    assert_eq!(reconciled(host(ok)).cond("Ready").0, T);

    let many = set(
        set(
            set(sync(), "spec.type", json!(" ")),
            "spec.sourceSecretRef.name",
            json!(""),
        ),
        "spec.deletionPolicy",
        json!("x"),
    );
    assert_eq!(
        reconciled(host(many)).cond("Ready"),
        failed("ValidationFailed", "sourceSecretRef.name is required")
    );

    // An object without any spec field is reported, not a decode error.
    let empty = set(sync(), "spec", json!({}));
    let rec = reconciled(host(empty));
    assert_eq!(
        rec.cond("Ready"),
        failed("ValidationFailed", "clusterRef.name is required")
    );
    assert_eq!(rec.status()["clusterRef"], "");
}

// ---- missing dependencies ----

#[test]
fn a_missing_cluster_is_not_accepted_and_retried_in_a_minute() {
    let rec = reconciled(
        MockHost::new(sync())
            .with_secret(None, SOURCE, source())
            .with_secret(None, KUBECONFIG, kubeconfig()),
    );
    let message = "OmniCluster \"edge\" does not exist";
    assert_eq!(rec.cond("Accepted"), failed("MissingCluster", message));
    assert_eq!(rec.cond("Synced"), failed("MissingCluster", message));
    assert_eq!(rec.cond("Ready"), failed("MissingCluster", message));
    assert_eq!(rec.requeue(), Some(60_000));
    assert_eq!(rec.status()["lastError"], message);
    assert_eq!(rec.status()["clusterRef"], "edge");
    assert_eq!(rec.status()["sourceSecretRef"], SOURCE);
    assert!(rec.copies().is_empty());
}

#[test]
fn a_missing_source_secret_is_reported_with_its_namespace() {
    let rec = reconciled(MockHost::new(sync()).with_object(cluster()).with_secret(
        None,
        KUBECONFIG,
        kubeconfig(),
    ));
    let message = "source Secret \"team/registry-creds\" does not exist";
    assert_eq!(
        rec.cond("Accepted"),
        (
            T,
            "Accepted".into(),
            "attached to OmniCluster \"edge\"".into()
        )
    );
    assert_eq!(rec.cond("Synced"), failed("MissingSecret", message));
    assert_eq!(rec.cond("Ready"), failed("MissingSecret", message));
    assert_eq!(rec.requeue(), Some(60_000));
    assert_eq!(rec.status()["lastError"], message);
    assert!(rec.copies().is_empty());
}

#[test]
fn a_missing_kubeconfig_secret_is_reported() {
    let rec = reconciled(MockHost::new(sync()).with_object(cluster()).with_secret(
        None,
        SOURCE,
        source(),
    ));
    let message = "kubeconfig Secret \"team/edge-kubeconfig\" does not exist";
    assert_eq!(rec.cond("Ready"), failed("MissingSecret", message));
    assert_eq!(rec.cond("Accepted").0, T);
    assert_eq!(rec.requeue(), Some(60_000));
    assert!(rec.copies().is_empty());
}

#[test]
fn a_kubeconfig_secret_without_the_key_or_with_an_empty_value_is_reported() {
    let without = FakeSecret::opaque(&[("config", "apiVersion: v1\n")]);
    let rec = reconciled(host(sync()).with_secret(None, KUBECONFIG, without.clone()));
    assert_eq!(
        rec.cond("Ready"),
        failed(
            "MissingSecret",
            "kubeconfig Secret \"team/edge-kubeconfig\" does not contain key \"kubeconfig\""
        )
    );
    assert_eq!(rec.requeue(), Some(60_000));
    assert!(rec.copies().is_empty());

    // The key defaults to `kubeconfig` when unset, and a set key is the one looked for.
    let rec = reconciled(
        host(set(sync(), "spec.kubeconfigSecretRef.key", Value::Null)).with_secret(
            None,
            KUBECONFIG,
            without.clone(),
        ),
    );
    assert_eq!(
        rec.cond("Ready").2,
        "kubeconfig Secret \"team/edge-kubeconfig\" does not contain key \"kubeconfig\""
    );
    let rec = reconciled(
        host(set(sync(), "spec.kubeconfigSecretRef.key", json!("value")))
            .with_secret(None, KUBECONFIG, without),
    );
    assert_eq!(
        rec.cond("Ready").2,
        "kubeconfig Secret \"team/edge-kubeconfig\" does not contain key \"value\""
    );

    let empty = FakeSecret::opaque(&[("kubeconfig", "")]);
    let rec = reconciled(host(sync()).with_secret(None, KUBECONFIG, empty));
    assert_eq!(
        rec.cond("Ready"),
        failed(
            "MissingSecret",
            "kubeconfig Secret \"team/edge-kubeconfig\" does not contain key \"kubeconfig\""
        )
    );
    assert!(rec.copies().is_empty());
}

#[test]
fn a_failing_read_is_returned_for_the_hosts_backoff_not_reported() {
    let rec = recording(host(sync()).deny("kube-read"));
    assert!(
        matches!(OmniSecretSyncPlugin::reconcile(&rec.inner), Err(ReconcileError::Permanent(m)) if m.contains("kube-read"))
    );
    let rec = recording(host(sync()).deny("secrets"));
    assert!(
        matches!(OmniSecretSyncPlugin::reconcile(&rec.inner), Err(ReconcileError::Permanent(m)) if m.contains("secrets"))
    );
    assert!(rec.copies().is_empty());
}

// ---- the copy ----

#[test]
fn the_first_sync_copies_the_source_with_the_operators_metadata_and_reports_it() {
    let object = set(
        set(
            sync(),
            "spec.labels",
            json!({"team": "platform", "app.kubernetes.io/managed-by": "me", "omni.texashpc.com/secret-sync-uid": "forged", "omni.texashpc.com/cluster": "other"}),
        ),
        "spec.annotations",
        json!({"note": "hi", "omni.texashpc.com/secret-sync-name": "forged", "omni.texashpc.com/secret-sync-source": "x/y",
               "omni.texashpc.com/secret-sync-content": "v0", "omni.texashpc.com/secret-sync-hash": "forged"}),
    );
    let rec = reconciled(host(object));

    // What was asked of the host.
    let copies = rec.copies();
    assert_eq!(copies.len(), 1);
    let (kubeconfig_ref, request) = &copies[0];
    assert_eq!(
        *kubeconfig_ref,
        SecretKeyRef::local(KUBECONFIG, "kubeconfig")
    );
    assert_eq!(request.source_name, SOURCE);
    assert_eq!(
        (
            request.target_namespace.as_str(),
            request.target_name.as_str()
        ),
        (TARGET_NS, TARGET)
    );
    assert_eq!(request.secret_type, None, "the source's type");
    assert!(request.create_namespace);
    assert_eq!(
        request.owner,
        OwnerLabel::new("omni.texashpc.com/secret-sync-uid", UID)
    );
    assert_eq!(
        request.digest_annotation.as_deref(),
        Some("omni.texashpc.com/secret-sync-hash")
    );
    let labels = json!({
        "team": "platform",
        "app.kubernetes.io/managed-by": "omni-cluster-operator",
        "omni.texashpc.com/secret-sync-uid": UID,
        "omni.texashpc.com/cluster": "edge-prod",
    });
    assert_eq!(
        request.labels, labels,
        "the user's labels under the operator's, which win"
    );
    let annotations = json!({
        "note": "hi",
        "omni.texashpc.com/secret-sync-name": NAME,
        "omni.texashpc.com/secret-sync-source": "team/registry-creds",
        "omni.texashpc.com/secret-sync-content": "v1",
    });
    assert_eq!(
        request.annotations, annotations,
        "the hash key is the host's: the user's value is not sent"
    );

    // What the (fake) host wrote.
    let target = written(&rec);
    assert_eq!(target.secret_type, DOCKER);
    assert_eq!(target.data, source().data);
    assert_eq!(Value::Object(target.labels.clone()), labels);
    let digest = target
        .annotation("omni.texashpc.com/secret-sync-hash")
        .expect("the host stamps the hash")
        .to_string();
    assert!(rec.workload_has_namespace(TARGET_NS), "createNamespace");

    // What is reported.
    let message = "synced Secret \"registry-creds\" to workload Secret \"apps/regcred\"";
    assert_eq!(
        rec.cond("Accepted"),
        (
            T,
            "Accepted".into(),
            "attached to OmniCluster \"edge\"".into()
        )
    );
    assert_eq!(rec.cond("Synced"), (T, "Synced".into(), message.into()));
    assert_eq!(rec.cond("Ready"), (T, "Synced".into(), message.into()));
    let status = Value::Object(rec.status());
    assert_eq!(
        status,
        json!({
            "clusterRef": "edge",
            "sourceSecretRef": SOURCE,
            "kubeconfigSecretRef": KUBECONFIG,
            "kubeconfigSecretKey": "kubeconfig",
            "targetSecretRef": TARGET,
            "targetNamespace": TARGET_NS,
            "secretType": DOCKER,
            "secretHash": digest,
            "lastAttemptTime": "2026-01-01T00:00:00Z",
            "lastSyncTime": "2026-01-01T00:00:00Z",
            "lastError": "",
        })
    );
    assert_eq!(
        rec.requeue(),
        Some(10 * 60_000),
        "drift repair: the workload cluster is not watched"
    );
}

#[test]
fn the_cluster_label_falls_back_to_the_clusters_object_name() {
    let rec = reconciled(host(sync()).with_object(set(cluster(), "spec.clusterName", Value::Null)));
    assert_eq!(
        written(&rec).label("omni.texashpc.com/cluster"),
        Some("edge")
    );
}

#[test]
fn spec_type_overrides_the_source_type_and_is_reported_even_on_failure() {
    let object = set(sync(), "spec.type", json!("Opaque"));
    let rec = reconciled(host(object.clone()));
    assert_eq!(rec.copies()[0].1.secret_type.as_deref(), Some("Opaque"));
    assert_eq!(written(&rec).secret_type, "Opaque");
    assert_eq!(rec.status()["secretType"], "Opaque");

    // secretType = spec.type on every update.
    let rec = reconciled(MockHost::new(object).with_object(cluster()));
    assert_eq!(rec.cond("Ready").1, "MissingSecret");
    assert_eq!(rec.status()["secretType"], "Opaque");
    let rec = reconciled(MockHost::new(sync()).with_object(cluster()));
    assert!(
        !rec.status().contains_key("secretType"),
        "no spec.type, no result: nothing to say"
    );
}

#[test]
fn a_second_sync_that_matches_writes_nothing_and_an_owned_drifted_target_is_repaired() {
    let first = reconciled(host(sync()));
    let synced = written(&first);

    let again = reconciled(host(sync()).with_workload_secret(TARGET_NS, TARGET, synced.clone()));
    assert_eq!(
        written(&again),
        synced,
        "unchanged, not even the resourceVersion"
    );
    assert_eq!(again.cond("Ready").0, T);

    // Edited in the workload cluster (data and a foreign label), still carrying the owner label: put back.
    let mut drifted = synced.clone().with_label("edited", "yes");
    drifted
        .data
        .insert(".dockerconfigjson".into(), b"{}".to_vec());
    let repaired = reconciled(host(sync()).with_workload_secret(TARGET_NS, TARGET, drifted));
    let now = written(&repaired);
    assert_eq!(
        (now.data, now.labels),
        (synced.data, synced.labels),
        "labels replaced, not merged"
    );
}

#[test]
fn an_owned_target_of_another_type_is_replaced_with_the_wanted_type() {
    let rec =
        reconciled(host(sync()).with_workload_secret(TARGET_NS, TARGET, owned(&[("old", "x")])));
    let target = written(&rec);
    assert_eq!(target.secret_type, DOCKER);
    assert!(!target.data.contains_key("old"));
    assert_eq!(rec.status()["secretType"], DOCKER);
    assert_eq!(rec.cond("Ready").0, T);
}

#[test]
fn an_unowned_target_is_left_exactly_as_it_was_and_reported() {
    let foreign = FakeSecret::opaque(&[("token", "theirs")])
        .with_label("omni.texashpc.com/secret-sync-uid", "someone-else")
        .with_annotation("owner", "team-b");
    let before = reconciled(host(sync()).with_workload_secret(TARGET_NS, TARGET, foreign.clone()));
    assert_eq!(
        written(&before),
        foreign,
        "unowned target: not a byte, label or annotation changed"
    );
    let message = format!(
        "workload Secret \"apps/regcred\" exists and is not managed by this OmniSecretSync (label \
         omni.texashpc.com/secret-sync-uid is not \"{UID}\"); it is left alone: delete it or choose another targetSecretRef"
    );
    assert_eq!(before.cond("Synced"), failed("SyncFailed", &message));
    assert_eq!(before.cond("Ready"), failed("SyncFailed", &message));
    assert_eq!(before.cond("Accepted").0, T);
    assert_eq!(before.requeue(), Some(60_000));
    let status = before.status();
    assert_eq!(status["lastError"], message.as_str());
    assert_eq!(status["lastAttemptTime"], "2026-01-01T00:00:00Z");
    for key in [
        "targetSecretRef",
        "targetNamespace",
        "secretHash",
        "lastSyncTime",
        "kubeconfigSecretRef",
        "kubeconfigSecretKey",
    ] {
        assert!(
            !status.contains_key(key),
            "{key} is written only on success"
        );
    }

    // Unlabelled counts as unowned too.
    let plain = FakeSecret::opaque(&[("token", "theirs")]);
    let rec = reconciled(host(sync()).with_workload_secret(TARGET_NS, TARGET, plain.clone()));
    assert_eq!(written(&rec), plain);
    assert_eq!(rec.cond("Ready").1, "SyncFailed");
}

#[test]
fn a_kubeconfig_that_does_not_parse_is_a_validation_failure_and_other_errors_sync_failures() {
    let rec = reconciled(host(sync()).with_workload_failure(HostError::Invalid(
        "kubeconfig Secret \"team/edge-kubeconfig\" key \"kubeconfig\" is invalid: yaml: line 3: did not find expected key".into(),
    )));
    let message = "kubeconfig Secret \"team/edge-kubeconfig\" key \"kubeconfig\" is invalid: yaml: line 3: did not find expected key";
    assert_eq!(rec.cond("Synced"), failed("ValidationFailed", message));
    assert_eq!(rec.cond("Ready"), failed("ValidationFailed", message));
    assert_eq!(rec.status()["lastError"], message);
    assert_eq!(rec.requeue(), Some(60_000));

    let errors = [
        HostError::Unavailable("get workload Secret \"apps/regcred\": connection refused".into()),
        HostError::Timeout("the workload cluster did not answer within 10s".into()),
        HostError::Unauthenticated("the workload cluster answered 401 Unauthorized".into()),
        HostError::Forbidden(
            "secrets is forbidden: User \"automation\" cannot create resource \"secrets\"".into(),
        ),
        HostError::Other("create workload Secret \"apps/regcred\": the server rejected it".into()),
    ];
    for e in errors {
        let rec = reconciled(host(sync()).with_workload_failure(e.clone()));
        assert_eq!(
            rec.cond("Synced"),
            failed("SyncFailed", e.message()),
            "{e:?}: the host's text, no kind prefix"
        );
        assert_eq!(
            rec.cond("Ready"),
            failed("SyncFailed", e.message()),
            "{e:?}"
        );
        assert_eq!(rec.status()["lastError"], e.message(), "{e:?}");
        assert_eq!(rec.requeue(), Some(60_000), "{e:?}");
    }
}

#[test]
fn a_missing_namespace_without_create_namespace_is_a_sync_failure() {
    let rec = reconciled(host(set(sync(), "spec.createNamespace", json!(false))));
    assert!(!rec.copies()[0].1.create_namespace);
    assert!(!rec.workload_has_namespace(TARGET_NS));
    let (status, reason, message) = rec.cond("Ready");
    assert_eq!((status, reason.as_str()), (F, "SyncFailed"));
    assert!(
        message.contains("namespaces \"apps\" not found"),
        "{message}"
    );
}

#[test]
fn failures_keep_the_hash_and_sync_time_of_the_copy_still_in_place() {
    let synced = set(
        sync(),
        "status",
        json!({"secretHash": "abc", "lastSyncTime": "2025-12-31T00:00:00Z", "targetSecretRef": TARGET, "targetNamespace": TARGET_NS,
               "kubeconfigSecretRef": KUBECONFIG, "kubeconfigSecretKey": "kubeconfig"}),
    );
    let rec = reconciled(host(synced).with_workload_failure(HostError::Unavailable("down".into())));
    let status = rec.status();
    assert_eq!(status["lastError"], "down");
    for key in [
        "secretHash",
        "lastSyncTime",
        "targetSecretRef",
        "targetNamespace",
    ] {
        assert!(
            !status.contains_key(key),
            "{key} not sent, so the host keeps it"
        );
    }
}

// ---- the previous target ----

/// A sync whose status says it last wrote `old` in `apps`, now targeting `regcred`.
fn renamed(policy: &str) -> Value {
    set(
        set(sync(), "spec.deletionPolicy", json!(policy)),
        "status",
        json!({"targetSecretRef": "old", "targetNamespace": TARGET_NS, "kubeconfigSecretRef": KUBECONFIG, "kubeconfigSecretKey": "kubeconfig"}),
    )
}

#[test]
fn with_delete_policy_the_previous_target_is_deleted_before_the_new_one_is_written() {
    let rec = reconciled(host(renamed("Delete")).with_workload_secret(
        TARGET_NS,
        "old",
        owned(&[("a", "b")]),
    ));
    assert_eq!(rec.deleted(), [(TARGET_NS.to_string(), "old".to_string())]);
    assert_eq!(
        rec.inner.requests().workload_deletions[0].0,
        SecretKeyRef::local(KUBECONFIG, "kubeconfig")
    );
    assert_eq!(
        rec.inner.requests().workload_deletions[0].3,
        OwnerLabel::new("omni.texashpc.com/secret-sync-uid", UID)
    );
    assert!(rec.workload_secret(TARGET_NS, "old").is_none());
    assert!(rec.workload_secret(TARGET_NS, TARGET).is_some());
    assert_eq!(
        (
            rec.status()["targetSecretRef"].clone(),
            rec.status()["targetNamespace"].clone()
        ),
        (json!(TARGET), json!(TARGET_NS))
    );
    assert_eq!(rec.cond("Ready").0, T);

    // A namespace change alone is a different Secret too.
    let moved = set(renamed("Delete"), "status.targetSecretRef", json!(TARGET));
    let moved = set(moved, "status.targetNamespace", json!("default"));
    let rec = reconciled(host(moved).with_workload_secret("default", TARGET, owned(&[("a", "b")])));
    assert_eq!(rec.deleted(), [("default".to_string(), TARGET.to_string())]);
    assert!(rec.workload_secret("default", TARGET).is_none());
}

#[test]
fn a_previous_target_that_is_absent_or_not_owned_is_done_and_left_alone() {
    let theirs = FakeSecret::opaque(&[("a", "b")]);
    let rec =
        reconciled(host(renamed("Delete")).with_workload_secret(TARGET_NS, "old", theirs.clone()));
    assert_eq!(rec.workload_secret(TARGET_NS, "old"), Some(theirs));
    assert_eq!(rec.cond("Ready").0, T);

    let rec = reconciled(host(renamed("Delete")));
    assert_eq!(rec.deleted().len(), 1);
    assert_eq!(rec.cond("Ready").0, T);
}

#[test]
fn with_orphan_policy_the_previous_target_stays_and_is_forgotten_after_the_success() {
    let old = owned(&[("a", "b")]);
    let rec =
        reconciled(host(renamed("Orphan")).with_workload_secret(TARGET_NS, "old", old.clone()));
    assert!(rec.deleted().is_empty());
    assert_eq!(rec.workload_secret(TARGET_NS, "old"), Some(old));
    assert_eq!(rec.status()["targetSecretRef"], TARGET);
}

#[test]
fn an_unchanged_target_is_not_a_previous_one() {
    let same = set(renamed("Delete"), "status.targetSecretRef", json!(TARGET));
    let rec = reconciled(host(same).with_workload_secret(TARGET_NS, TARGET, owned(&[("a", "b")])));
    assert!(rec.deleted().is_empty());
    assert_eq!(written(&rec).secret_type, DOCKER);
}

#[test]
fn a_failed_cleanup_is_reported_and_nothing_new_is_written() {
    let rec = reconciled(
        host(renamed("Delete"))
            .with_workload_secret(TARGET_NS, "old", owned(&[("a", "b")]))
            .with_workload_failure(HostError::Unavailable(
                "the workload API server did not answer".into(),
            )),
    );
    let message =
        "delete previous workload Secret \"apps/old\": the workload API server did not answer";
    assert_eq!(rec.cond("Synced"), failed("DeleteFailed", message));
    assert_eq!(rec.cond("Ready"), failed("DeleteFailed", message));
    assert_eq!(rec.cond("Accepted").0, T);
    assert_eq!(rec.requeue(), Some(60_000));
    assert_eq!(rec.status()["lastError"], message);
    assert!(rec.copies().is_empty(), "no copy after a failed cleanup");
    assert!(
        !rec.status().contains_key("targetSecretRef"),
        "the previous target stays recorded"
    );
}

// ---- the kubeconfig pin ----

#[test]
fn a_changed_kubeconfig_name_or_key_does_nothing_in_any_workload_cluster() {
    let pinned = json!({"kubeconfigSecretRef": "old-kubeconfig", "kubeconfigSecretKey": "kubeconfig", "targetSecretRef": TARGET, "targetNamespace": TARGET_NS});
    let rec = reconciled(host(set(sync(), "status", pinned)));
    let message = "kubeconfigSecretRef is immutable: it was \"old-kubeconfig\" key \"kubeconfig\" and is now \"edge-kubeconfig\" key \
                   \"kubeconfig\"; set it back, or delete and recreate this OmniSecretSync";
    assert_eq!(rec.cond("Synced"), failed("ValidationFailed", message));
    assert_eq!(rec.cond("Ready"), failed("ValidationFailed", message));
    assert!(rec.condition("Accepted").is_none());
    assert_eq!(rec.requeue(), None);
    assert!(rec.copies().is_empty() && rec.deleted().is_empty());
    assert!(rec.workload_secret(TARGET_NS, TARGET).is_none());
    assert!(
        !rec.status().contains_key("kubeconfigSecretRef"),
        "the pin stays"
    );

    let pinned = json!({"kubeconfigSecretRef": KUBECONFIG, "kubeconfigSecretKey": "config"});
    let rec = reconciled(host(set(sync(), "status", pinned)));
    assert_eq!(
        rec.cond("Ready"),
        failed(
            "ValidationFailed",
            "kubeconfigSecretRef is immutable: it was \"edge-kubeconfig\" key \"config\" and is now \"edge-kubeconfig\" key \
             \"kubeconfig\"; set it back, or delete and recreate this OmniSecretSync"
        )
    );
    assert!(rec.copies().is_empty());

    // Only the key pinned: the name counts as unchanged and is printed as it is.
    let rec = reconciled(host(set(
        sync(),
        "status",
        json!({"kubeconfigSecretKey": "config"}),
    )));
    assert!(rec.cond("Ready").2.starts_with(
        "kubeconfigSecretRef is immutable: it was \"edge-kubeconfig\" key \"config\""
    ));
}

#[test]
fn the_pin_compares_the_normalised_key_and_an_unpinned_sync_proceeds() {
    // Pinned as "kubeconfig"; the spec leaves the key unset, which means the same.
    let pinned = json!({"kubeconfigSecretRef": KUBECONFIG, "kubeconfigSecretKey": "kubeconfig"});
    let object = set(
        set(sync(), "status", pinned),
        "spec.kubeconfigSecretRef.key",
        Value::Null,
    );
    let rec = reconciled(host(object));
    assert_eq!(rec.cond("Ready").0, T);
    assert_eq!(rec.status()["kubeconfigSecretKey"], "kubeconfig");

    // An empty key (the CRD's minLength forbids it; Go defaulted it) is the default key.
    let rec = reconciled(host(set(sync(), "spec.kubeconfigSecretRef.key", json!(""))));
    assert_eq!(
        rec.copies()[0].0,
        SecretKeyRef::local(KUBECONFIG, "kubeconfig")
    );
    assert_eq!(rec.status()["kubeconfigSecretKey"], "kubeconfig");

    let rec = reconciled(host(set(sync(), "status", json!({"secretHash": "x"}))));
    assert_eq!(rec.cond("Ready").0, T);
    assert_eq!(
        rec.status()["kubeconfigSecretRef"],
        KUBECONFIG,
        "the first success pins it"
    );
}
