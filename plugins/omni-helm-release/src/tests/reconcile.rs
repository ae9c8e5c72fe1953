//! Reconcile: validation, the cluster and kubeconfig checks, the release and steps sent to the host,
//! every kind of observation (running, failed, deployed, someone else's release, call failures), the status
//! fields of each, the steady-state rule and the Events.

use omni_plugin_sdk::HostError;
use omni_plugin_sdk::helm::{
    ActionOptions, ApplyMethod, ApplyRequest, ChartLocation, ChartPull, CrdPolicy, OwnedObject,
    ReleaseRef, ReleaseSource, ValuesPart, WaitStrategy,
};
use omni_plugin_sdk::secrets::SecretKeyRef;

use super::*;

/// The status fields every update of [`release`] carries.
fn base() -> Map<String, Value> {
    let fields = json!({
        "clusterRef": "edge",
        "kubeconfigSecretRef": KUBECONFIG,
        "kubeconfigSecretKey": "config",
        "releaseName": RELEASE,
        "namespace": "apps",
        "storageNamespace": "apps",
        "chart": "podinfo",
        "chartVersion": "6.7.1",
    });
    fields.as_object().cloned().unwrap()
}

/// [`base`] with `more` over it.
fn with_base(more: Value) -> Map<String, Value> {
    let mut status = base();
    status.extend(more.as_object().cloned().unwrap());
    status
}

/// What every helm call of [`release`] names.
fn podinfo() -> ReleaseRef {
    ReleaseRef {
        kubeconfig: SecretKeyRef::local(KUBECONFIG, "config"),
        name: RELEASE.into(),
        namespace: "apps".into(),
        service_account: None,
    }
}

/// The chart and values of [`release`].
fn podinfo_source() -> ReleaseSource {
    ReleaseSource {
        chart: ChartPull {
            location: ChartLocation::Repository {
                url: "https://stefanprodan.github.io/podinfo".into(),
                name: "podinfo".into(),
            },
            version: "6.7.1".into(),
            credentials: None,
            tls: None,
            verify: None,
            values_files: Vec::new(),
            ignore_missing_values_files: false,
        },
        values: vec![ValuesPart::Inline(
            json!({"replicaCount": 2, "ui": {"color": "#34577c"}}),
        )],
        post_render: None,
    }
}

/// The sources `helm_observe` was asked about.
fn sources(host: &MockHost) -> Vec<Option<ReleaseSource>> {
    host.requests()
        .helm_observes
        .into_iter()
        .map(|(_, source)| source)
        .collect()
}

/// The install or upgrade request of the only step started.
fn applied(host: &MockHost) -> ApplyRequest {
    match starts(host).as_slice() {
        [Step::Install(r) | Step::Upgrade(r)] => (**r).clone(),
        other => panic!("one install or upgrade expected, got {other:?}"),
    }
}

fn no_helm_call(host: &MockHost) -> bool {
    let r = host.requests();
    r.helm_observes.is_empty() && r.helm_starts.is_empty()
}

/// Nothing deployed and nothing remembered: the plugin installs.
fn absent() -> Observation {
    observation(None, None)
}

// ---- validation ----

#[test]
fn each_controller_check_reports_its_text_without_touching_anything() {
    let long = "a".repeat(54);
    let cases: Vec<(&str, Value, String)> = vec![
        ("spec.clusterRef.name", json!(" "), "clusterRef.name is required".into()),
        ("spec.clusterRef", Value::Null, "clusterRef.name is required".into()),
        ("spec.kubeconfigSecretRef.name", json!(""), "kubeconfigSecretRef.name is required".into()),
        ("spec.kubeconfigSecretRef.key", json!("\t"), "kubeconfigSecretRef.key must not be blank".into()),
        ("spec.releaseName", json!("  "), "releaseName is required".into()),
        (
            "spec.releaseName",
            json!("Podinfo"),
            "releaseName \"Podinfo\" is not a valid Helm release name: it must consist of lower case alphanumeric \
             characters, '-' or '.', and must start and end with an alphanumeric character"
                .into(),
        ),
        (
            "spec.releaseName",
            json!(long),
            format!("releaseName \"{long}\" is not a valid Helm release name: it must be no more than 53 characters"),
        ),
        ("spec.namespace", json!(" "), "namespace is required".into()),
        ("spec.chart.repository", json!(""), "chart.repository is required".into()),
        ("spec.chart.chart", json!(" "), "chart.chart is required".into()),
        ("spec.chart.version", Value::Null, "chart.version is required".into()),
        ("spec.chart", Value::Null, "chart.repository is required".into()),
        ("spec.timeout", json!("0s"), "timeout must be greater than zero".into()),
        ("spec.timeout", json!("-5m"), "timeout must be greater than zero".into()),
        (
            "spec.timeout",
            json!("5 minutes"),
            "timeout \"5 minutes\" is not a valid duration: time: unknown unit \" minutes\" in duration \"5 minutes\""
                .into(),
        ),
        (
            "spec.interval",
            json!("soon"),
            "interval \"soon\" is not a valid duration: time: invalid duration \"soon\"".into(),
        ),
        ("spec.upgrade.timeout", json!("0s"), "upgrade.timeout \"0s\" must be greater than zero".into()),
        ("spec.maxHistory", json!(-1), "maxHistory must not be negative".into()),
        ("spec.deletionPolicy", json!("Retain"), "deletionPolicy must be Uninstall or Orphan".into()),
        ("spec.chart.values", json!(["a"]), "helm release values must be a JSON object".into()),
        ("spec.chart.values", json!("replicaCount: 2"), "helm release values must be a JSON object".into()),
    ];
    for (path, value, message) in cases {
        let rec = reconciled(host(set(release(), path, value.clone()), absent()));
        let what = format!("{path} = {value}");
        assert_eq!(rec.condition("Accepted"), None, "{what}: no Accepted");
        assert_eq!(
            cond(&rec, "Released"),
            expect(F, "ValidationFailed", &message),
            "{what}"
        );
        assert_eq!(
            cond(&rec, "Ready"),
            expect(F, "ValidationFailed", &message),
            "{what}"
        );
        let status = status(&rec);
        assert_eq!(status["lastError"], message.as_str(), "{what}");
        assert_eq!(status["lastAttemptTime"], NOW, "{what}");
        assert_eq!(requeue(&rec), None, "{what}: only a spec change helps");
        assert!(no_helm_call(&rec), "{what}: Helm is not asked");
        assert!(events(&rec).is_empty(), "{what}");
    }
}

#[test]
fn the_first_failure_wins_and_the_status_reports_the_spec_as_it_is() {
    let object = set(
        set(
            set(release(), "spec.chart.version", json!("")),
            "spec.maxHistory",
            json!(-3),
        ),
        "spec.kubeconfigSecretRef.key",
        Value::Null,
    );
    let rec = reconciled(host(object, absent()));
    assert_eq!(
        cond(&rec, "Ready"),
        expect(F, "ValidationFailed", "chart.version is required")
    );
    assert_eq!(
        status(&rec),
        with_base(json!({
            "kubeconfigSecretKey": "kubeconfig",
            "chartVersion": "",
            "lastAttemptTime": NOW,
            "lastError": "chart.version is required",
        }))
    );
}

#[test]
fn metadata_name_is_checked_as_the_release_name_when_release_name_is_unset() {
    let object = set(
        set(minimal(), "metadata.name", json!("Web_App")),
        "spec.releaseName",
        Value::Null,
    );
    let rec = reconciled(host(object, absent()));
    assert_eq!(
        cond(&rec, "Ready").2,
        "releaseName \"Web_App\" is not a valid Helm release name: it must consist of lower case alphanumeric \
         characters, '-' or '.', and must start and end with an alphanumeric character"
    );
    // An empty releaseName is unset (Go's `!= ""`): metadata.name is used, to observe and to install.
    let rec = reconciled(host(
        set(minimal(), "spec.releaseName", json!("")),
        absent(),
    ));
    let requests = rec.requests();
    assert_eq!(requests.helm_observes[0].0.name, NAME);
    assert_eq!(requests.helm_starts[0].0.name, NAME);
}

#[test]
fn null_values_are_absent_values() {
    let mut object = release();
    object["spec"]["chart"]["values"] = Value::Null;
    let rec = reconciled(host(object, absent()));
    let none = vec![ValuesPart::Inline(json!({}))];
    assert_eq!(sources(&rec)[0].as_ref().unwrap().values, none);
    assert_eq!(applied(&rec).source.values, none);
    let rec = reconciled(host(
        set(release(), "spec.chart.values", Value::Null),
        absent(),
    ));
    assert_eq!(applied(&rec).source.values, none, "absent");
}

// ---- the OmniCluster and kubeconfig checks ----

#[test]
fn a_missing_cluster_is_reported_and_retried_in_a_minute() {
    let rec = reconciled(
        mock(release())
            .with_secret(None, KUBECONFIG, kubeconfig())
            .with_observation(Ok(deployed(1, None))),
    );
    let message = "OmniCluster \"edge\" does not exist";
    assert_eq!(cond(&rec, "Accepted"), expect(F, "MissingCluster", message));
    assert_eq!(cond(&rec, "Released"), expect(F, "MissingCluster", message));
    assert_eq!(cond(&rec, "Ready"), expect(F, "MissingCluster", message));
    assert_eq!(
        status(&rec),
        with_base(json!({"lastAttemptTime": NOW, "lastError": message}))
    );
    assert_eq!(requeue(&rec), Some(60_000));
    assert!(no_helm_call(&rec));
}

#[test]
fn a_missing_kubeconfig_secret_or_key_is_reported_and_retried_in_a_minute() {
    let no_secret = mock(release())
        .with_object(cluster())
        .with_observation(Ok(deployed(1, None)));
    let no_key = mock(release())
        .with_object(cluster())
        .with_secret(None, KUBECONFIG, FakeSecret::opaque(&[("kubeconfig", "x")]))
        .with_observation(Ok(deployed(1, None)));
    let cases = [
        (
            no_secret,
            "kubeconfig Secret \"team/edge-kubeconfig\" does not exist",
        ),
        (
            no_key,
            "kubeconfig Secret \"team/edge-kubeconfig\" does not contain key \"config\"",
        ),
    ];
    for (host, message) in cases {
        let rec = reconciled(host);
        assert_eq!(
            cond(&rec, "Accepted"),
            expect(T, "Accepted", "attached to OmniCluster \"edge\"")
        );
        assert_eq!(cond(&rec, "Released"), expect(F, "MissingSecret", message));
        assert_eq!(cond(&rec, "Ready"), expect(F, "MissingSecret", message));
        assert_eq!(
            status(&rec),
            with_base(json!({"lastAttemptTime": NOW, "lastError": message}))
        );
        assert_eq!(requeue(&rec), Some(60_000));
        assert!(no_helm_call(&rec), "{message}");
    }
}

#[test]
fn reads_that_fail_are_returned_for_the_hosts_backoff() {
    let denied = host(release(), deployed(1, None)).deny("kube-read");
    assert!(matches!(
        OmniHelmReleasePlugin::reconcile(&denied),
        Err(omni_plugin_sdk::ReconcileError::Permanent(m)) if m.contains("kube-read")
    ));
    let denied = host(release(), deployed(1, None)).deny("secrets");
    assert!(OmniHelmReleasePlugin::reconcile(&denied).is_err());
    assert!(no_helm_call(&denied));
}

// ---- what is asked of the host ----

#[test]
fn the_release_observed_and_the_install_started_map_every_field() {
    let rec = reconciled(host(release(), absent()));
    let requests = rec.requests();
    assert_eq!(
        requests.helm_observes,
        [(podinfo(), Some(podinfo_source()))]
    );
    assert_eq!(
        requests.helm_starts,
        [(
            podinfo(),
            Step::Install(Box::new(ApplyRequest {
                source: podinfo_source(),
                options: ActionOptions {
                    timeout_seconds: 90,
                    wait: WaitStrategy::Ready,
                    wait_for_jobs: true,
                    disable_hooks: true,
                },
                crds: CrdPolicy::Skip,
                create_namespace: true,
                replace: false,
                force: false,
                cleanup_on_fail: false,
                rollback_on_failure: true,
                max_history: 5,
                apply_method: ApplyMethod::Auto,
                take_ownership: false,
                skip_schema_validation: false,
                skip_openapi_validation: false,
                reuse_values: false,
                health_checks: Vec::new(),
            }))
        )]
    );
}

#[test]
fn the_upgrade_started_maps_every_field_and_cleans_up_when_atomic_as_go_did() {
    let older = observation(Some(revision(1, "deployed", Some(OLDER))), None);
    let rec = reconciled(host(release(), older));
    assert_eq!(
        rec.requests().helm_starts,
        [(
            podinfo(),
            Step::Upgrade(Box::new(ApplyRequest {
                source: podinfo_source(),
                options: ActionOptions {
                    timeout_seconds: 90,
                    wait: WaitStrategy::Ready,
                    wait_for_jobs: true,
                    disable_hooks: true,
                },
                crds: CrdPolicy::Skip,
                create_namespace: false,
                replace: false,
                force: false,
                cleanup_on_fail: true,
                rollback_on_failure: true,
                max_history: 5,
                apply_method: ApplyMethod::Auto,
                take_ownership: false,
                skip_schema_validation: false,
                skip_openapi_validation: false,
                reuse_values: false,
                health_checks: Vec::new(),
            }))
        )]
    );
}

#[test]
fn the_defaults_are_those_of_section_6_1() {
    let rec = reconciled(host(minimal(), absent()));
    let source = ReleaseSource {
        chart: ChartPull {
            location: ChartLocation::Repository {
                url: "https://charts.example.com".into(),
                name: "web".into(),
            },
            version: "1.0.0".into(),
            credentials: None,
            tls: None,
            verify: None,
            values_files: Vec::new(),
            ignore_missing_values_files: false,
        },
        values: vec![ValuesPart::Inline(json!({}))],
        post_render: None,
    };
    let defaults = ApplyRequest {
        source: source.clone(),
        options: ActionOptions {
            timeout_seconds: 300,
            wait: WaitStrategy::Hooks,
            wait_for_jobs: false,
            disable_hooks: false,
        },
        crds: CrdPolicy::Create,
        create_namespace: false,
        replace: false,
        force: false,
        cleanup_on_fail: false,
        rollback_on_failure: false,
        max_history: 0,
        apply_method: ApplyMethod::Auto,
        take_ownership: false,
        skip_schema_validation: false,
        skip_openapi_validation: false,
        reuse_values: false,
        health_checks: Vec::new(),
    };
    let minimal_ref = ReleaseRef {
        kubeconfig: SecretKeyRef::local(KUBECONFIG, "kubeconfig"),
        name: NAME.into(),
        namespace: "default".into(),
        service_account: None,
    };
    let requests = rec.requests();
    assert_eq!(
        requests.helm_observes,
        [(minimal_ref.clone(), Some(source))]
    );
    assert_eq!(
        requests.helm_starts,
        [(minimal_ref, Step::Install(Box::new(defaults.clone())))]
    );
    // Explicit false and zero are the same as unset.
    let off = json!({"createNamespace": false, "wait": false, "waitForJobs": false, "atomic": false,
        "disableHooks": false, "skipCRDs": false, "maxHistory": 0, "deletionPolicy": "Orphan"});
    let mut object = minimal();
    object["spec"]
        .as_object_mut()
        .unwrap()
        .extend(off.as_object().cloned().unwrap());
    let rec = reconciled(host(object.clone(), absent()));
    assert_eq!(applied(&rec), defaults);
    let older = observation(Some(revision(1, "deployed", Some(OLDER))), None);
    let rec = reconciled(host(object, older));
    assert_eq!(
        starts(&rec),
        [Step::Upgrade(Box::new(defaults))],
        "an upgrade has the same defaults"
    );
}

#[test]
fn an_oci_chart_is_a_full_reference_and_the_repository_is_ignored() {
    let object = set(
        release(),
        "spec.chart.chart",
        json!("  oci://ghcr.io/stefanprodan/charts/podinfo "),
    );
    let rec = reconciled(host(object, absent()));
    let chart = applied(&rec).source.chart;
    assert_eq!(
        (chart.location, chart.version),
        (
            ChartLocation::Oci("oci://ghcr.io/stefanprodan/charts/podinfo".into()),
            "6.7.1".to_string()
        )
    );
    // Only the chart decides: an oci:// repository with a chart name is still a repository chart.
    let object = set(
        release(),
        "spec.chart.repository",
        json!("oci://ghcr.io/stefanprodan/charts"),
    );
    let rec = reconciled(host(object, absent()));
    assert_eq!(
        sources(&rec)[0].as_ref().unwrap().chart.location,
        ChartLocation::Repository {
            url: "oci://ghcr.io/stefanprodan/charts".into(),
            name: "podinfo".into()
        }
    );
}

#[test]
fn the_timeout_is_rounded_up_to_whole_seconds() {
    for (timeout, seconds) in [
        ("1500ms", 2),
        ("100ms", 1),
        ("1ns", 1),
        ("1h", 3600),
        ("2m30s", 150),
    ] {
        let rec = reconciled(host(
            set(release(), "spec.timeout", json!(timeout)),
            absent(),
        ));
        assert_eq!(applied(&rec).options.timeout_seconds, seconds, "{timeout}");
    }
    let rec = reconciled(host(set(release(), "spec.timeout", Value::Null), absent()));
    assert_eq!(applied(&rec).options.timeout_seconds, 300);
}

#[test]
fn a_max_history_beyond_u32_is_capped() {
    let rec = reconciled(host(
        set(release(), "spec.maxHistory", json!(1_i64 << 40)),
        absent(),
    ));
    assert_eq!(applied(&rec).max_history, u32::MAX);
}

// ---- what the host observed ----

#[test]
fn an_install_that_succeeded_is_released() {
    let done = record("i1", Action::Install, 1, None, T1, WANTED);
    let rec = reconciled(host(release(), deployed(1, Some(done))));
    let message = "installed Helm release \"podinfo\" revision 1";
    assert_eq!(
        cond(&rec, "Accepted"),
        expect(T, "Accepted", "attached to OmniCluster \"edge\"")
    );
    assert_eq!(cond(&rec, "Released"), expect(T, "HelmInstalled", message));
    assert_eq!(cond(&rec, "Ready"), expect(T, "HelmInstalled", message));
    assert_eq!(
        status(&rec),
        with_base(json!({
            "releaseRevision": 1,
            "releaseStatus": "deployed",
            "lastAction": "Install",
            "lastAttemptTime": T1,
            "lastSuccessTime": T1,
            "lastError": "",
            "failures": 0,
            "installFailures": 0,
            "upgradeFailures": 0,
            "lastActionID": "i1",
            // From the host's record of the install, whether or not the status kept the attempt.
            "lastAttemptedReleaseAction": "install",
            "lastAttemptedConfigDigest": WANTED,
            "history": [snapshot(1, "deployed", Some(WANTED))],
        }))
    );
    assert_eq!(requeue(&rec), Some(RESYNC_MS));
    assert_eq!(
        events(&rec),
        [(EventType::Normal, "InstallSucceeded".into(), message.into())]
    );
    assert!(starts(&rec).is_empty());
}

#[test]
fn an_upgrade_that_succeeded_is_released() {
    let done = record("u3", Action::Upgrade, 3, None, T2, WANTED);
    let observed = with_history(
        deployed(3, Some(done)),
        vec![
            revision(2, "superseded", Some(OLDER)),
            revision(1, "superseded", None),
        ],
    );
    let rec = reconciled(host(release(), observed));
    let message = "upgraded Helm release \"podinfo\" to revision 3";
    assert_eq!(cond(&rec, "Released"), expect(T, "HelmUpgraded", message));
    assert_eq!(cond(&rec, "Ready"), expect(T, "HelmUpgraded", message));
    assert_eq!(
        status(&rec),
        with_base(json!({
            "releaseRevision": 3,
            "releaseStatus": "deployed",
            "lastAction": "Upgrade",
            "lastAttemptTime": T2,
            "lastSuccessTime": T2,
            "lastError": "",
            "failures": 0,
            "installFailures": 0,
            "upgradeFailures": 0,
            "lastActionID": "u3",
            "lastAttemptedReleaseAction": "upgrade",
            "lastAttemptedConfigDigest": WANTED,
            "history": [
                snapshot(3, "deployed", Some(WANTED)),
                {"version": 2, "status": "superseded", "configDigest": OLDER},
                {"version": 1, "status": "superseded"},
            ],
        }))
    );
    assert_eq!(requeue(&rec), Some(300_000));
    assert_eq!(
        events(&rec),
        [(EventType::Normal, "UpgradeSucceeded".into(), message.into())]
    );
}

#[test]
fn the_history_lists_at_most_five_revisions_and_the_current_test_hooks() {
    let older: Vec<Revision> = (1..=8)
        .rev()
        .map(|n| revision(n, "superseded", Some(OLDER)))
        .collect();
    let observed = with_tests(
        with_history(deployed(9, None), older),
        &[("smoke", "Succeeded"), ("load", "Unknown")],
    );
    let rec = reconciled(host(release(), observed));
    let history = status(&rec)["history"].clone();
    let versions: Vec<u64> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["version"].as_u64().unwrap())
        .collect();
    assert_eq!(versions, [9, 8, 7, 6, 5]);
    assert_eq!(
        history[0]["testHooks"],
        json!({
            "smoke": {"phase": "Succeeded", "lastStarted": T1, "lastCompleted": T2},
            "load": {"phase": "Unknown"},
        })
    );
    assert!(history[1].get("testHooks").is_none(), "the current only");
}

#[test]
fn without_a_remembered_action_the_revision_tells_install_from_upgrade() {
    let rec = reconciled(host(release(), deployed(1, None)));
    assert_eq!(
        cond(&rec, "Ready"),
        expect(
            T,
            "HelmInstalled",
            "installed Helm release \"podinfo\" revision 1"
        )
    );
    assert_eq!(
        status(&rec),
        with_base(json!({
            "releaseRevision": 1, "releaseStatus": "deployed", "lastError": "",
            "failures": 0, "installFailures": 0, "upgradeFailures": 0,
            "history": [snapshot(1, "deployed", Some(WANTED))],
        })),
        "no action, so no action times: the ones recorded stay"
    );
    assert!(events(&rec).is_empty());
    assert!(starts(&rec).is_empty());

    let rec = reconciled(host(release(), deployed(4, None)));
    assert_eq!(
        cond(&rec, "Ready"),
        expect(
            T,
            "HelmUpgraded",
            "upgraded Helm release \"podinfo\" to revision 4"
        )
    );
    assert_eq!(requeue(&rec), Some(RESYNC_MS));

    // The last action ran for an older spec (the spec was set back to what is deployed) and was counted before:
    // it did not make the current revision, so it neither names the reason nor is it a success time.
    let old = record("u5", Action::Upgrade, 0, Some("timed out"), T1, OLDER);
    let object = set(
        release(),
        "status",
        json!({"lastAttemptTime": T1, "lastActionID": "u5"}),
    );
    let rec = reconciled(host(object, deployed(4, Some(old))));
    assert_eq!(cond(&rec, "Ready").1, "HelmUpgraded");
    let status = status(&rec);
    assert_eq!(status["lastAction"], "Upgrade");
    assert!(!status.contains_key("lastSuccessTime"));
    assert_eq!(status["lastAttemptTime"], T1, "as recorded");
    assert!(events(&rec).is_empty(), "counted before");
    assert!(starts(&rec).is_empty());
}

#[test]
fn a_running_action_is_progress_not_failure() {
    let mut observed = absent();
    observed.running = Some(running("i1", Action::Install));
    let rec = reconciled(host(release(), observed));
    let message = "Helm install of release \"podinfo\" is running";
    assert_eq!(cond(&rec, "Accepted").0, T);
    assert_eq!(cond(&rec, "Released"), expect(U, "Progressing", message));
    assert_eq!(cond(&rec, "Ready"), expect(U, "Progressing", message));
    assert_eq!(
        status(&rec),
        with_base(
            json!({"failures": 0, "installFailures": 0, "upgradeFailures": 0, "history": [],
                // The install running is the attempt, even when the status that recorded it was lost.
                "lastAttemptedReleaseAction": "install", "lastAttemptedConfigDigest": WANTED})
        ),
        "nothing new is known: lastError and the times stay"
    );
    assert_eq!(requeue(&rec), Some(30_000));
    assert!(events(&rec).is_empty());
    assert!(starts(&rec).is_empty(), "one action at a time");

    // An upgrade over revision 2, after an install counted before.
    let previous = record("i1", Action::Install, 1, None, T1, OLDER);
    let mut observed = observation(
        Some(revision(2, "pending-upgrade", Some(WANTED))),
        Some(previous),
    );
    observed.running = Some(running("u2", Action::Upgrade));
    let object = set(
        release(),
        "status",
        json!({"lastAttemptTime": T1, "lastError": "", "lastActionID": "i1"}),
    );
    let rec = reconciled(host(object, observed));
    assert_eq!(
        cond(&rec, "Ready"),
        expect(
            U,
            "Progressing",
            "Helm upgrade of release \"podinfo\" is running"
        )
    );
    assert_eq!(
        status(&rec),
        with_base(json!({
            "releaseRevision": 2, "releaseStatus": "pending-upgrade", "lastAction": "Install",
            "lastAttemptTime": T1, "lastActionID": "i1",
            "failures": 0, "installFailures": 0, "upgradeFailures": 0,
            // The running upgrade, not the install counted before, is the attempt.
            "lastAttemptedReleaseAction": "upgrade", "lastAttemptedConfigDigest": WANTED,
            "history": [snapshot(2, "pending-upgrade", Some(WANTED))],
        }))
    );
    assert!(events(&rec).is_empty());
    assert!(
        starts(&rec).is_empty(),
        "a pending revision of ours that runs is waited for"
    );
}

/// A failed upgrade of what is wanted, finished at [`T2`], after the plugin started it.
fn failed_upgrade(id: &str, error: &str) -> (Value, Observation) {
    let object = set(
        release(),
        "status",
        json!({"lastAttemptedReleaseAction": "upgrade", "lastAttemptedConfigDigest": WANTED,
            "lastAttemptedGeneration": 3, "lastActionID": "i1"}),
    );
    let observed = with_history(
        observation(
            Some(revision(2, "failed", Some(WANTED))),
            Some(record(id, Action::Upgrade, 0, Some(error), T2, WANTED)),
        ),
        vec![revision(1, "deployed", Some(OLDER))],
    );
    (object, observed)
}

#[test]
fn a_failed_action_is_reported_with_helms_error_and_retried_after_15_seconds() {
    let error = "context deadline exceeded";
    let (object, observed) = failed_upgrade("u2", error);
    let rec = reconciled(host(object.clone(), observed.clone()));
    let message = "Helm upgrade failed for release \"podinfo\": context deadline exceeded";
    assert_eq!(cond(&rec, "Accepted").0, T);
    assert_eq!(
        cond(&rec, "Released"),
        expect(F, "ReconcileFailed", message)
    );
    assert_eq!(cond(&rec, "Ready"), expect(F, "ReconcileFailed", message));
    assert_eq!(
        status(&rec),
        with_base(json!({
            "releaseRevision": 2,
            "releaseStatus": "failed",
            "lastAction": "Upgrade",
            "lastAttemptTime": T2,
            "lastError": error,
            "failures": 1,
            "installFailures": 0,
            "upgradeFailures": 1,
            "lastAttemptedReleaseAction": "upgrade",
            "lastAttemptedConfigDigest": WANTED,
            "lastAttemptedGeneration": 3,
            "lastActionID": "u2",
            "history": [
                snapshot(2, "failed", Some(WANTED)),
                {"version": 1, "status": "deployed", "configDigest": OLDER},
            ],
        })),
        "lastError is Helm's error as it is; lastSuccessTime stays"
    );
    assert_eq!(
        requeue(&rec),
        Some(10_000),
        "15 s after T2, 5 s have passed"
    );
    assert_eq!(
        events(&rec),
        [(EventType::Warning, "UpgradeFailed".into(), message.into())]
    );
    assert!(starts(&rec).is_empty());

    // The next reconcile, once the 15 s have passed: the upgrade again, over the failed revision.
    let after = committed(object, &rec);
    let rec = reconciled(host(after, observed).at(&time(135)));
    assert!(
        matches!(starts(&rec).as_slice(), [Step::Upgrade(_)]),
        "{:?}",
        starts(&rec)
    );
    assert_eq!(
        cond(&rec, "Ready"),
        expect(
            U,
            "Progressing",
            "Helm upgrade of release \"podinfo\" is running"
        )
    );
    assert!(events(&rec).is_empty(), "the failure was announced once");
    assert_eq!(status(&rec)["failures"], 1);
}

#[test]
fn failed_actions_are_retried_with_a_delay_doubling_from_15_seconds_to_10_minutes() {
    let (object, observed) = failed_upgrade("u2", "boom");
    let expected = [15, 30, 60, 120, 240, 480, 600, 600, 600];
    for (n, seconds) in (1..).zip(expected) {
        // Counted before, `n` failures in a row, looked at the second the last one finished.
        let object = set(
            set(
                set(object.clone(), "status.failures", json!(n)),
                "status.upgradeFailures",
                json!(n),
            ),
            "status.lastActionID",
            json!("u2"),
        );
        let object = set(object, "status.lastAttemptTime", json!(T2));
        let rec = reconciled(host(object, observed.clone()).at(T2));
        assert_eq!(requeue(&rec), Some(seconds * 1000), "after {n} failures");
        assert!(starts(&rec).is_empty(), "after {n} failures");
        assert_eq!(cond(&rec, "Ready").1, "ReconcileFailed");
    }
}

#[test]
fn a_failed_install_that_left_nothing_is_retried_after_its_delay() {
    let object = set(
        release(),
        "status",
        json!({"lastAttemptedReleaseAction": "install", "lastAttemptedConfigDigest": WANTED,
            "lastAttemptedGeneration": 3}),
    );
    let failed = record(
        "i1",
        Action::Install,
        0,
        Some("chart \"podinfo\" version \"9.9.9\" not found"),
        T2,
        WANTED,
    );
    let rec = reconciled(host(
        object.clone(),
        observation(None, Some(failed.clone())),
    ));
    let message = "Helm install failed for release \"podinfo\": chart \"podinfo\" version \"9.9.9\" not found";
    assert_eq!(cond(&rec, "Ready"), expect(F, "ReconcileFailed", message));
    assert!(!status(&rec).contains_key("releaseRevision"));
    assert_eq!(
        (
            status(&rec)["failures"].clone(),
            status(&rec)["installFailures"].clone()
        ),
        (json!(1), json!(1))
    );
    assert_eq!(requeue(&rec), Some(10_000));
    assert_eq!(
        events(&rec),
        [(EventType::Warning, "InstallFailed".into(), message.into())]
    );
    // Once its time has come: installed again.
    let rec =
        reconciled(host(committed(object, &rec), observation(None, Some(failed))).at(&time(136)));
    assert!(matches!(starts(&rec).as_slice(), [Step::Install(_)]));
}

#[test]
fn after_a_host_restart_the_failed_revisions_description_is_the_error() {
    // The host forgot its outcomes; the status counted one failure at T2.
    let object = set(
        release(),
        "status",
        json!({"lastAttemptedReleaseAction": "upgrade", "lastAttemptedConfigDigest": WANTED,
            "lastAttemptedGeneration": 3, "failures": 1, "upgradeFailures": 1, "lastAttemptTime": T2,
            "lastActionID": "u2"}),
    );
    let mut failed = revision(2, "failed", Some(WANTED));
    failed.description = "Upgrade \"podinfo\" failed: timed out waiting for the condition".into();
    let rec = reconciled(host(
        object.clone(),
        observation(Some(failed.clone()), None),
    ));
    assert_eq!(
        cond(&rec, "Ready"),
        expect(
            F,
            "ReconcileFailed",
            "Helm upgrade failed for release \"podinfo\": Upgrade \"podinfo\" failed: timed out waiting for the \
             condition"
        )
    );
    assert_eq!(requeue(&rec), Some(10_000));
    assert!(events(&rec).is_empty(), "no outcome, no Event");

    // Without a description either: the release's state.
    failed.description.clear();
    let rec = reconciled(host(object, observation(Some(failed), None)));
    assert_eq!(
        cond(&rec, "Ready"),
        expect(
            F,
            "ReconcileFailed",
            "Helm upgrade failed for release \"podinfo\": Helm release \"podinfo\" is failed"
        )
    );
    assert_eq!(
        status(&rec)["lastError"],
        "Helm release \"podinfo\" is failed"
    );
}

#[test]
fn a_release_not_as_wanted_is_acted_on_at_once_when_nothing_failed_before() {
    let cases = [
        // Made by someone else (no digest): adopted by an upgrade.
        (Some(revision(1, "deployed", None)), Action::Upgrade),
        (Some(revision(3, "deployed", Some(OLDER))), Action::Upgrade),
        // Failed without an outcome of ours counted: Helm upgrades over it.
        (Some(revision(2, "failed", Some(WANTED))), Action::Upgrade),
        (Some(revision(2, "failed", Some(OLDER))), Action::Upgrade),
        // Uninstalled with its history kept, or not there at all.
        (
            Some(revision(2, "uninstalled", Some(WANTED))),
            Action::Install,
        ),
        (None, Action::Install),
    ];
    for (current, action) in cases {
        let what = format!("{current:?}");
        let rec = reconciled(host(release(), observation(current, None)));
        let started = starts(&rec);
        assert_eq!(started.len(), 1, "{what}");
        assert_eq!(started[0].action(), action, "{what}");
        let message = format!(
            "Helm {} of release \"podinfo\" is running",
            action.name().to_lowercase()
        );
        assert_eq!(
            cond(&rec, "Ready"),
            expect(U, "Progressing", &message),
            "{what}"
        );
        assert_eq!(requeue(&rec), Some(30_000), "{what}");
        let status = status(&rec);
        assert_eq!(
            status["lastAttemptedReleaseAction"],
            action.name().to_lowercase(),
            "{what}"
        );
        assert_eq!(status["lastAttemptedConfigDigest"], WANTED, "{what}");
        assert_eq!(status["lastAttemptedGeneration"], 3, "{what}");
        assert!(
            !status.contains_key("lastAttemptTime"),
            "{what}: not finished yet"
        );
    }
}

#[test]
fn call_failures_are_reported_with_the_hosts_text_and_retried_in_a_minute() {
    let cases = [
        (
            HostError::NotFound("kubeconfig Secret \"team/edge-kubeconfig\" key \"config\" is empty".into()),
            "MissingSecret",
            "kubeconfig Secret \"team/edge-kubeconfig\" key \"config\" is empty".to_string(),
        ),
        (
            // The host names the kubeconfig itself, in the Go operator's words.
            HostError::Invalid(
                "kubeconfig Secret \"team/edge-kubeconfig\" key \"config\" is invalid: yaml: line 3: did not find \
                 expected key"
                    .into(),
            ),
            "ValidationFailed",
            "kubeconfig Secret \"team/edge-kubeconfig\" key \"config\" is invalid: yaml: line 3: did not find \
             expected key"
                .into(),
        ),
        (
            HostError::Unavailable("Helm is unavailable: libhelm_c.so: cannot open shared object file".into()),
            "ReconcileFailed",
            "Helm is unavailable: libhelm_c.so: cannot open shared object file".into(),
        ),
        (
            HostError::Timeout("the workload cluster did not answer within 10s".into()),
            "ReconcileFailed",
            "the workload cluster did not answer within 10s".into(),
        ),
        (
            HostError::Denied("chart source oci://evil.example is not allowed".into()),
            "ReconcileFailed",
            "chart source oci://evil.example is not allowed".into(),
        ),
        (HostError::Unavailable(String::new()), "ReconcileFailed", "unavailable".into()),
    ];
    for (error, reason, message) in cases {
        let rec = reconciled(
            mock(release())
                .with_object(cluster())
                .with_secret(None, KUBECONFIG, kubeconfig())
                .with_observation(Err(error.clone())),
        );
        assert_eq!(cond(&rec, "Accepted").0, T, "{error:?}");
        assert_eq!(
            cond(&rec, "Released"),
            expect(F, reason, &message),
            "{error:?}"
        );
        assert_eq!(
            cond(&rec, "Ready"),
            expect(F, reason, &message),
            "{error:?}"
        );
        assert_eq!(
            status(&rec),
            with_base(json!({"lastAttemptTime": NOW, "lastError": message})),
            "{error:?}"
        );
        assert_eq!(requeue(&rec), Some(60_000), "{error:?}");
        assert_eq!(rec.requests().helm_observes.len(), 1);
        assert!(starts(&rec).is_empty(), "{error:?}");
    }
}

#[test]
fn a_start_the_host_refuses_is_reported_with_its_text_and_retried_in_a_minute() {
    let rec = reconciled(host(release(), absent()).with_start(Err(HostError::Invalid(
        "chart source https://stefanprodan.github.io/podinfo is not allowed".into(),
    ))));
    let message = "chart source https://stefanprodan.github.io/podinfo is not allowed";
    assert_eq!(cond(&rec, "Ready"), expect(F, "ValidationFailed", message));
    let status = status(&rec);
    assert_eq!(status["lastError"], message);
    assert_eq!(status["lastAttemptTime"], NOW);
    assert!(
        !status.contains_key("lastAttemptedReleaseAction"),
        "nothing was attempted"
    );
    assert_eq!(requeue(&rec), Some(60_000));
}

#[test]
fn an_outcome_counted_before_a_start_that_failed_is_not_counted_again() {
    // The failure at T2 is new; its retry is due at once (the clock is 10 minutes on), and the host cannot
    // start it.
    let (object, observed) = failed_upgrade("u2", "boom");
    let refused = || HostError::Timeout("the workload cluster did not answer within 10s".into());
    let rec = reconciled(
        host(object.clone(), observed.clone())
            .at(&time(720))
            .with_start(Err(refused())),
    );
    assert_eq!(starts(&rec).len(), 1);
    assert_eq!(events(&rec).len(), 1, "the failure announced");
    assert_eq!(
        cond(&rec, "Ready"),
        expect(
            F,
            "ReconcileFailed",
            "the workload cluster did not answer within 10s"
        )
    );
    let after = committed(object, &rec);
    assert_eq!(after["status"]["failures"], 1);
    assert_eq!(after["status"]["lastActionID"], "u2");
    // The next reconcile sees the same outcome: neither counted nor announced again.
    let rec = reconciled(
        host(after, observed)
            .at(&time(780))
            .with_start(Err(refused())),
    );
    assert!(events(&rec).is_empty());
    assert_eq!(status(&rec)["failures"], 1);
}

#[test]
fn a_start_that_loses_the_race_to_another_action_waits_for_it() {
    let rec = reconciled(
        host(release(), absent()).with_start(Err(HostError::Conflict(
            "an action runs for this release".into(),
        ))),
    );
    assert_eq!(
        cond(&rec, "Ready"),
        expect(
            U,
            "Progressing",
            "Helm install of release \"podinfo\" is running"
        )
    );
    assert_eq!(requeue(&rec), Some(30_000));
    assert!(!status(&rec).contains_key("lastAttemptedReleaseAction"));
}

#[test]
fn the_mock_hosts_own_kubeconfig_and_grant_checks_map_the_same_way() {
    // The key exists but is empty: the plugin's look passes, the host refuses.
    let empty = mock(release())
        .with_object(cluster())
        .with_secret(None, KUBECONFIG, FakeSecret::opaque(&[("config", "")]))
        .with_observation(Ok(deployed(1, None)));
    let rec = reconciled(empty);
    assert_eq!(
        cond(&rec, "Ready"),
        expect(
            F,
            "MissingSecret",
            "kubeconfig Secret \"team/edge-kubeconfig\" key \"config\" is empty"
        )
    );

    let rec = reconciled(host(release(), deployed(1, None)).deny("helm"));
    assert_eq!(
        cond(&rec, "Ready"),
        expect(F, "ReconcileFailed", "capability \"helm\" is not granted")
    );
    assert_eq!(requeue(&rec), Some(60_000));
}

// ---- the steady state and Events ----

#[test]
fn a_reconcile_that_learns_nothing_new_changes_nothing() {
    let mut running_install = absent();
    running_install.running = Some(running("i1", Action::Install));
    let (failed_object, failed) = failed_upgrade("u2", "boom");
    let scripts = [
        (
            release(),
            deployed(1, Some(record("i1", Action::Install, 1, None, T1, WANTED))),
        ),
        (release(), deployed(4, None)),
        (failed_object, failed),
        (release(), running_install),
    ];
    for (object, script) in scripts {
        let first = reconciled(host(object.clone(), script.clone()));
        let after_first = committed(object, &first);
        let second = reconciled(host(after_first.clone(), script.clone()));
        assert_eq!(
            committed(after_first.clone(), &second),
            after_first,
            "{script:?}: the status must stay byte for byte"
        );
        assert!(
            events(&second).is_empty(),
            "{script:?}: one Event per outcome"
        );
        assert!(starts(&second).is_empty(), "{script:?}");
        assert_eq!(requeue(&second), requeue(&first), "{script:?}");
    }
}

#[test]
fn events_come_once_per_outcome_by_its_id() {
    let upgraded = || deployed(2, Some(record("u2", Action::Upgrade, 2, None, T2, WANTED)));

    // The status counted an earlier action: this one is new.
    let rec = reconciled(host(
        set(
            release(),
            "status",
            json!({"lastAttemptTime": T1, "lastActionID": "i1"}),
        ),
        upgraded(),
    ));
    assert_eq!(
        events(&rec),
        [(
            EventType::Normal,
            "UpgradeSucceeded".into(),
            "upgraded Helm release \"podinfo\" to revision 2".into()
        )]
    );
    assert_eq!(status(&rec)["lastAttemptTime"], T2);
    assert_eq!(status(&rec)["lastActionID"], "u2");

    // Already counted.
    let rec = reconciled(host(
        set(
            release(),
            "status",
            json!({"lastAttemptTime": T2, "lastActionID": "u2"}),
        ),
        upgraded(),
    ));
    assert!(events(&rec).is_empty());
    assert_eq!(status(&rec)["lastAttemptTime"], T2);

    // A failure without an outcome was recorded later (the kubeconfig was briefly missing): the outcome counted
    // before is neither announced again nor moves the attempt time back.
    let later = "2026-01-01T00:05:00Z";
    let rec = reconciled(host(
        set(
            release(),
            "status",
            json!({"lastAttemptTime": later, "lastActionID": "u2", "lastError": "kubeconfig gone"}),
        ),
        upgraded(),
    ));
    assert!(events(&rec).is_empty());
    assert_eq!(status(&rec)["lastAttemptTime"], later);
    assert_eq!(
        status(&rec)["lastSuccessTime"],
        T2,
        "still the time of the success in place"
    );
    assert_eq!(status(&rec)["lastError"], "", "the failure is over");

    // An unlock of ours is announced as Flux's PendingRelease.
    let recovered = deployed(2, Some(record("r2", Action::Recover, 2, None, T2, "")));
    let rec = reconciled(host(release(), recovered));
    assert_eq!(
        events(&rec),
        [(
            EventType::Normal,
            "PendingRelease".into(),
            "Helm release \"podinfo\" revision 2 was left pending by an action that did not finish; marked failed"
                .into()
        )]
    );
    assert_eq!(status(&rec)["lastAction"], "Recover");
    assert_eq!(
        cond(&rec, "Ready").1,
        "HelmUpgraded",
        "revision 2, and no install or upgrade remembered"
    );
}

#[test]
fn each_outcome_has_flux_helm_controllers_event_reason() {
    let release_name = "\"podinfo\"";
    let cases = [
        (
            Action::Install,
            None,
            EventType::Normal,
            "InstallSucceeded",
            format!("installed Helm release {release_name} revision 2"),
        ),
        (
            Action::Install,
            Some("x"),
            EventType::Warning,
            "InstallFailed",
            format!("Helm install failed for release {release_name}: x"),
        ),
        (
            Action::Upgrade,
            None,
            EventType::Normal,
            "UpgradeSucceeded",
            format!("upgraded Helm release {release_name} to revision 2"),
        ),
        (
            Action::Upgrade,
            Some("x"),
            EventType::Warning,
            "UpgradeFailed",
            format!("Helm upgrade failed for release {release_name}: x"),
        ),
        (
            Action::Test,
            None,
            EventType::Normal,
            "TestSucceeded",
            format!("Helm tests passed for release {release_name} revision 2"),
        ),
        (
            Action::Test,
            Some("x"),
            EventType::Warning,
            "TestFailed",
            format!("Helm test failed for release {release_name}: x"),
        ),
        (
            Action::Rollback,
            None,
            EventType::Normal,
            "RollbackSucceeded",
            format!("rolled back Helm release {release_name} (now revision 2)"),
        ),
        (
            Action::Rollback,
            Some("x"),
            EventType::Warning,
            "RollbackFailed",
            format!("Helm rollback failed for release {release_name}: x"),
        ),
        (
            Action::Uninstall,
            None,
            EventType::Normal,
            "UninstallSucceeded",
            format!("uninstalled Helm release {release_name}"),
        ),
        (
            Action::Uninstall,
            Some("x"),
            EventType::Warning,
            "UninstallFailed",
            format!("Helm uninstall failed for release {release_name}: x"),
        ),
        (
            Action::Recover,
            Some("x"),
            EventType::Warning,
            "PendingRelease",
            format!("Helm recover failed for release {release_name}: x"),
        ),
    ];
    for (action, error, kind, reason, message) in cases {
        let last = record("a1", action, 2, error, T1, WANTED);
        let rec = reconciled(host(release(), deployed(2, Some(last))));
        assert_eq!(
            events(&rec),
            [(kind, reason.to_string(), message)],
            "{action:?} {error:?}"
        );
    }
}

/// `status.inventory` in Flux's format from what the host says the deployed revision owns; a failed revision (no
/// inventory from the host) leaves the one reported before; no release, or an uninstalled one, owns nothing.
#[test]
fn the_inventory_lists_what_the_deployed_revision_owns_in_fluxs_format() {
    let owned = |api_version: &str, kind: &str, namespace: &str, name: &str| OwnedObject {
        api_version: api_version.into(),
        kind: kind.into(),
        namespace: namespace.into(),
        name: name.into(),
    };
    let mut observed = deployed(1, None);
    if let Some(release) = &mut observed.release {
        release.inventory = Some(vec![
            owned("v1", "ServiceAccount", "apps", "web"),
            owned("apps/v1", "Deployment", "apps", "web"),
            owned(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                "",
                "widgets.example.com",
            ),
        ]);
    }
    let rec = reconciled(host(release(), observed));
    assert_eq!(
        status(&rec)["inventory"],
        json!({"entries": [
            {"id": "_widgets.example.com_apiextensions.k8s.io_CustomResourceDefinition", "v": "v1"},
            {"id": "apps_web__ServiceAccount", "v": "v1"},
            {"id": "apps_web_apps_Deployment", "v": "v1"},
        ]})
    );

    let failed = observation(Some(revision(2, "failed", Some(WANTED))), None);
    let rec = reconciled(host(release(), failed));
    assert!(
        !status(&rec).contains_key("inventory"),
        "a failed revision keeps the inventory reported before"
    );
    let listed = set(
        release(),
        "status.inventory",
        json!({"entries": [{"id": "apps_web_apps_Deployment", "v": "v1"}]}),
    );
    let uninstalled = observation(Some(revision(2, "uninstalled", Some(WANTED))), None);
    for observed in [absent(), uninstalled] {
        let rec = reconciled(host(listed.clone(), observed.clone()));
        assert_eq!(status(&rec)["inventory"], Value::Null);
        assert!(status(&rec).contains_key("inventory"), "removed, not left");
        // Without one to remove, the status names none.
        let rec = reconciled(host(release(), observed));
        assert!(!status(&rec).contains_key("inventory"));
    }
}

#[test]
fn fields_not_recomputed_keep_their_values() {
    let earlier = json!({
        "releaseRevision": 7, "releaseStatus": "deployed", "lastAction": "Upgrade",
        "lastAttemptTime": T1, "lastSuccessTime": T1, "lastError": ""
    });
    let object = set(release(), "status", earlier.clone());
    // The host restarted and reports an upgrade running, with no release read and no outcome.
    let mut observed = absent();
    observed.running = Some(running("u8", Action::Upgrade));
    let rec = reconciled(host(object.clone(), observed));
    let after = committed(object, &rec);
    for key in [
        "releaseRevision",
        "releaseStatus",
        "lastAction",
        "lastAttemptTime",
        "lastSuccessTime",
        "lastError",
    ] {
        assert_eq!(after["status"][key], earlier[key], "{key}");
    }
}

#[test]
fn chart_credentials_and_tls_are_named_to_the_host_and_values_from_come_first_in_order() {
    let object = set(
        set(
            release(),
            "spec.chart.secretRef",
            json!({"name": "repo-creds"}),
        ),
        "spec.chart.certSecretRef",
        json!({"name": "repo-tls"}),
    );
    let object = set(
        object,
        "spec.valuesFrom",
        json!([{"kind": "ConfigMap", "name": "defaults"},
            {"kind": "Secret", "name": "token", "valuesKey": "t", "targetPath": "a.b", "optional": true}]),
    );
    let h = reconciled(host(object, deployed(1, None)));
    let source = sources(&h).into_iter().next().flatten().expect("a source");
    assert_eq!(source.chart.credentials.as_deref(), Some("repo-creds"));
    assert_eq!(source.chart.tls.as_deref(), Some("repo-tls"));
    use omni_plugin_sdk::helm::{ValuesKind, ValuesPart, ValuesRef};
    assert_eq!(
        source.values,
        vec![
            ValuesPart::Referenced(ValuesRef {
                kind: ValuesKind::ConfigMap,
                name: "defaults".into(),
                key: "values.yaml".into(),
                target_path: None,
                optional: false,
            }),
            ValuesPart::Referenced(ValuesRef {
                kind: ValuesKind::Secret,
                name: "token".into(),
                key: "t".into(),
                target_path: Some("a.b".into()),
                optional: true,
            }),
            ValuesPart::Inline(json!({"replicaCount": 2, "ui": {"color": "#34577c"}})),
        ]
    );
}
