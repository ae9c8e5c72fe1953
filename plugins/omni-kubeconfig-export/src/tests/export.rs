//! A new kubeconfig is requested, written host to host and reported; failures keep the rotation data.

use omni_plugin_sdk::sha256_hex;

use super::*;

const H: u64 = 3_600_000;

#[test]
fn a_first_export_writes_the_target_with_the_operator_metadata_and_reports_it() {
    let h = host(export(spec()));
    reconcile(&h);

    assert_eq!(h.omni_calls(), ["kubeconfig edge via omni"]);
    assert_eq!(h.exports(), 1);
    let secret = h.secret(None, SECRET).expect("target written");
    let bytes = secret
        .data
        .get("kubeconfig")
        .expect("under the default key");
    let digest = sha256_hex(bytes);
    assert_eq!(
        secret.label(MANAGED_BY_LABEL),
        Some("omni-cluster-operator")
    );
    assert_eq!(secret.label(OWNER_LABEL), Some(UID));
    assert_eq!(secret.label(CLUSTER_LABEL), Some("edge"));
    assert_eq!(secret.annotation(NAME_ANNOTATION), Some("edge-admin"));
    assert_eq!(secret.annotation(NAMESPACE_ANNOTATION), Some(NS));
    // The plain vector of the spec-hash tests: the same spec.
    assert_eq!(
        secret.annotation(SPEC_HASH_ANNOTATION),
        Some("6bdffbe16d6bf7f660201511009ebf99256d1f469af10ee18b73037d5c05a08a")
    );
    assert_eq!(secret.annotation(HASH_ANNOTATION), Some(digest.as_str()));
    assert_eq!(
        secret.annotation(EXPIRATION_ANNOTATION),
        Some("2026-01-02T00:00:00Z")
    );
    assert_eq!(secret.annotation(LAST_ROTATION_ANNOTATION), Some(T0));

    assert_accepted(&h);
    assert_exported(
        &h,
        &(
            ConditionStatus::True,
            "Exported".into(),
            exported_message(NS, SECRET, "kubeconfig"),
        ),
    );
    let status = status(&h);
    let want = json!({
        "clusterRef": "edge", "clusterName": "edge", "connectionRef": "omni", "endpoint": ENDPOINT,
        "serviceAccountUser": "automation", "serviceAccountGroups": ["ops"],
        "targetSecretRef": SECRET, "targetSecretNamespace": NS, "targetSecretKey": "kubeconfig",
        "kubeconfigHash": digest,
        "expirationTime": "2026-01-02T00:00:00Z", "lastRotationTime": T0, "nextRotationTime": "2026-01-01T20:00:00Z",
    });
    assert_eq!(Value::Object(status), want);
    // ttl 24h, renewBefore 4h: back in 20 hours.
    assert_eq!(h.outputs().requeue_after, Some(20 * H));
    assert!(
        h.outputs().events.is_empty(),
        "no event without system:masters"
    );
}

#[test]
fn the_request_carries_the_spec_verbatim_and_the_target_with_its_namespace() {
    let mut s = spec();
    s["serviceAccount"]["user"] = json!(" automation ");
    s["serviceAccount"]["groups"] = json!([" ops", "dev "]);
    s["contextNamespace"] = json!("apps");
    s["ttl"] = json!("1h0m0.25s");
    s.as_object_mut().map(|m| m.remove("renewBefore"));
    let spy = host(export(s));
    reconcile(&spy);
    let r = request(&spy);
    let hash = spec_hash(
        "edge",
        "kubeconfig",
        Some("apps"),
        " automation ",
        &[" ops".into(), "dev ".into()],
        3_600_250_000_000,
    );
    assert_eq!(
        r,
        KubeconfigExport {
            cluster: "edge".into(),
            user: " automation ".into(),
            groups: vec![" ops".into(), "dev ".into()],
            ttl_ns: 3_600_250_000_000,
            target: SecretKeyRef {
                namespace: Some(NS.into()),
                name: SECRET.into(),
                key: "kubeconfig".into()
            },
            remove_key: None,
            context_namespace: Some("apps".into()),
            labels: json!({MANAGED_BY_LABEL: "omni-cluster-operator", OWNER_LABEL: UID, CLUSTER_LABEL: "edge"}),
            annotations: json!({
                NAME_ANNOTATION: "edge-admin", NAMESPACE_ANNOTATION: NS, SPEC_HASH_ANNOTATION: hash,
                // The quarter second is cut from the printed time, not rounded.
                EXPIRATION_ANNOTATION: "2026-01-01T01:00:00Z", LAST_ROTATION_ANNOTATION: T0,
            }),
            owner: OwnerLabel::new(OWNER_LABEL, UID),
            digest_annotation: Some(HASH_ANNOTATION.into()),
        }
    );
    // Without renewBefore the rotation is at expiry, exactly: 1 h and a quarter second.
    assert_eq!(spy.outputs().requeue_after, Some(3_600_250));
    assert_eq!(status(&spy)["nextRotationTime"], "2026-01-01T01:00:00Z");
}

#[test]
fn the_context_namespace_reaches_the_written_kubeconfig() {
    let mut s = spec();
    s["contextNamespace"] = json!("apps");
    let h = host(export(s));
    reconcile(&h);
    let secret = h.secret(None, SECRET).expect("written");
    // The mock's Omni marks the namespace it was asked to set.
    assert_eq!(
        secret.data["kubeconfig"],
        b"kubeconfig 1 for edge as automation in apps"
    );
    let hash = spec_hash(
        "edge",
        "kubeconfig",
        Some("apps"),
        "automation",
        &["ops".into()],
        24 * 3_600_000_000_000,
    );
    assert_eq!(secret.annotation(SPEC_HASH_ANNOTATION), Some(hash.as_str()));
}

#[test]
fn the_omni_cluster_name_comes_from_the_cluster_spec_when_set() {
    let h = MockHost::new(export(spec()))
        .with_object(cluster(
            json!({"connectionRef": {"name": "omni"}, "clusterName": "edge-prod"}),
        ))
        .with_object(connection());
    reconcile(&h);
    assert_eq!(h.omni_calls(), ["kubeconfig edge-prod via omni"]);
    let secret = h.secret(None, SECRET).expect("written");
    assert_eq!(secret.label(CLUSTER_LABEL), Some("edge-prod"));
    assert_eq!(status(&h)["clusterName"], "edge-prod");
    // The Accepted message names the OmniCluster object, not the Omni name.
    assert_accepted(&h);
}

#[test]
fn a_target_in_another_namespace_under_another_key() {
    let mut s = spec();
    s["targetSecretRef"] = json!({"name": SECRET, "namespace": "tenant-a", "key": "config"});
    let h = host(export(s));
    reconcile(&h);
    assert_eq!(
        h.secret(None, SECRET),
        None,
        "not in the export's namespace"
    );
    let secret = h
        .secret(Some("tenant-a"), SECRET)
        .expect("written in tenant-a");
    assert!(secret.data.contains_key("config"));
    assert_exported(
        &h,
        &(
            ConditionStatus::True,
            "Exported".into(),
            exported_message("tenant-a", SECRET, "config"),
        ),
    );
    let status = status(&h);
    assert_eq!(status["targetSecretNamespace"], "tenant-a");
    assert_eq!(status["targetSecretKey"], "config");
}

#[test]
fn exporting_cluster_admin_emits_a_warning_event() {
    let mut s = spec();
    s["serviceAccount"]["groups"] = json!(["ops", " system:masters"]);
    s["serviceAccount"]["allowClusterAdmin"] = json!(true);
    let h = host(export(s));
    reconcile(&h);
    assert_eq!(h.exports(), 1);
    assert_eq!(
        h.outputs().events,
        vec![(
            EventType::Warning,
            "ClusterAdminExported".to_string(),
            "system:masters exports a cluster-admin kubeconfig into the management cluster"
                .to_string()
        )]
    );
}

#[test]
fn a_kept_cluster_admin_kubeconfig_emits_no_event() {
    let mut s = spec();
    s["serviceAccount"]["groups"] = json!(["system:masters"]);
    s["serviceAccount"]["allowClusterAdmin"] = json!(true);
    let secret = written_secret(s.clone());
    let h = host(export(s))
        .with_secret(None, SECRET, secret)
        .at("2026-01-01T01:00:00Z");
    reconcile(&h);
    assert_eq!(h.exports(), 0, "kept");
    assert!(
        h.outputs().events.is_empty(),
        "the event is for a kubeconfig written now"
    );
}

fn failing(error: HostError, status: Value) -> MockHost {
    host(export_with(spec(), status)).with_omni_failure(error)
}

#[test]
fn an_omni_failure_is_reported_with_its_message_and_retried_sooner_while_it_is_new() {
    let h = failing(
        HostError::Unavailable("connection refused".into()),
        json!({}),
    );
    reconcile(&h);
    assert_accepted(&h);
    assert_exported(
        &h,
        &ready_false(
            "ExportFailed",
            "failed to export kubeconfig: connection refused",
        ),
    );
    assert_eq!(
        h.outputs().requeue_after,
        Some(2_000),
        "a fresh failure is retried within seconds"
    );
    let lasting = json!({"conditions": [{"type": "Ready", "status": "False", "reason": "ExportFailed", "lastTransitionTime": "2025-12-31T00:00:00Z"}]});
    let h2 = failing(HostError::Unavailable("connection refused".into()), lasting);
    reconcile(&h2);
    assert_eq!(
        h2.outputs().requeue_after,
        Some(60_000),
        "a lasting one once a minute"
    );
    assert_eq!(h.secret(None, SECRET), None);
    let status = status(&h);
    assert_eq!(status["connectionRef"], "omni");
    assert_eq!(status["endpoint"], ENDPOINT);
    assert_eq!(status["clusterName"], "edge");
    assert_no_success_fields(&h);
}

#[test]
fn an_invalid_generated_kubeconfig_keeps_the_hosts_go_message() {
    for (error, want) in [
        (
            HostError::Invalid(
                "generated kubeconfig is invalid: yaml: line 3: mapping values are not allowed"
                    .into(),
            ),
            "generated kubeconfig is invalid: yaml: line 3: mapping values are not allowed",
        ),
        (
            HostError::Invalid(
                "generated kubeconfig current context \"omni-edge\" was not found".into(),
            ),
            "generated kubeconfig current context \"omni-edge\" was not found",
        ),
        (
            HostError::Invalid("service account ttl is too long (max allowed: 87600h0m0s)".into()),
            "failed to export kubeconfig: service account ttl is too long (max allowed: 87600h0m0s)",
        ),
        (
            HostError::Unauthenticated("invalid signature".into()),
            "failed to export kubeconfig: invalid signature",
        ),
        (
            HostError::Other("get kubeconfig for Omni cluster \"edge\": response was empty".into()),
            "failed to export kubeconfig: get kubeconfig for Omni cluster \"edge\": response was empty",
        ),
    ] {
        let h = failing(error, json!({}));
        reconcile(&h);
        assert_exported(&h, &ready_false("ExportFailed", want));
    }
}

#[test]
fn a_failure_keeps_the_recorded_rotation_data_and_target() {
    let before = json!({
        "targetSecretRef": SECRET, "targetSecretNamespace": NS, "targetSecretKey": "kubeconfig",
        "kubeconfigHash": "abc", "expirationTime": "2026-01-02T00:00:00Z",
        "lastRotationTime": "2026-01-01T00:00:00Z", "nextRotationTime": "2026-01-01T20:00:00Z",
    });
    // The Secret is gone, so a new kubeconfig is needed, and Omni fails.
    let h = failing(HostError::Timeout("deadline exceeded".into()), before);
    reconcile(&h);
    assert_exported(
        &h,
        &ready_false(
            "ExportFailed",
            "failed to export kubeconfig: deadline exceeded",
        ),
    );
    // Fields not sent keep their value in the host's one-level merge.
    assert_no_success_fields(&h);
}
