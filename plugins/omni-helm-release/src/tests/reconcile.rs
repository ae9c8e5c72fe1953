//! §6.5-§6.6 reconcile: validation, the cluster and kubeconfig checks, the spec sent to the host, every kind of
//! answer (running, failed, deployed, not converged, call failures), the status fields of each, the steady-state
//! rule and the Events.

use omni_plugin_sdk::HostError;
use omni_plugin_sdk::helm::{
    ActionOptions, Chart, ChartSource, InstallOptions, ReleaseSpec, UpgradeOptions, WaitStrategy,
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

fn ensures(host: &MockHost) -> Vec<ReleaseSpec> {
    host.requests().helm_ensures
}

// ---- §6.5 step 2: validation ----

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
        ("spec.maxHistory", json!(-1), "maxHistory must not be negative".into()),
        ("spec.deletionPolicy", json!("Retain"), "deletionPolicy must be Uninstall or Orphan".into()),
        ("spec.chart.values", json!(["a"]), "helm release values must be a JSON object".into()),
        ("spec.chart.values", json!("replicaCount: 2"), "helm release values must be a JSON object".into()),
    ];
    for (path, value, message) in cases {
        let rec = reconciled(host(set(release(), path, value.clone()), deployed(1, None)));
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
        assert!(ensures(&rec).is_empty(), "{what}: Helm is not asked");
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
    let rec = reconciled(host(object, deployed(1, None)));
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
    let rec = reconciled(host(object, deployed(1, None)));
    assert_eq!(
        cond(&rec, "Ready").2,
        "releaseName \"Web_App\" is not a valid Helm release name: it must consist of lower case alphanumeric \
         characters, '-' or '.', and must start and end with an alphanumeric character"
    );
    // An empty releaseName is unset (Go's `!= ""`): metadata.name is used.
    let rec = reconciled(host(
        set(minimal(), "spec.releaseName", json!("")),
        deployed(1, None),
    ));
    assert_eq!(ensures(&rec)[0].name, NAME);
}

#[test]
fn null_values_are_absent_values() {
    let mut object = release();
    object["spec"]["chart"]["values"] = Value::Null;
    let rec = reconciled(host(object, deployed(1, None)));
    assert_eq!(ensures(&rec)[0].values, json!({}));
    let rec = reconciled(host(
        set(release(), "spec.chart.values", Value::Null),
        deployed(1, None),
    ));
    assert_eq!(ensures(&rec)[0].values, json!({}), "absent");
}

// ---- §6.5 steps 3 and 4 ----

#[test]
fn a_missing_cluster_is_reported_and_retried_in_a_minute() {
    let rec = reconciled(
        MockHost::new(release())
            .with_secret(None, KUBECONFIG, kubeconfig())
            .with_helm(Ok(deployed(1, None))),
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
    assert!(ensures(&rec).is_empty());
}

#[test]
fn a_missing_kubeconfig_secret_or_key_is_reported_and_retried_in_a_minute() {
    let no_secret = MockHost::new(release())
        .with_object(cluster())
        .with_helm(Ok(deployed(1, None)));
    let no_key = MockHost::new(release())
        .with_object(cluster())
        .with_secret(None, KUBECONFIG, FakeSecret::opaque(&[("kubeconfig", "x")]))
        .with_helm(Ok(deployed(1, None)));
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
        assert!(ensures(&rec).is_empty(), "{message}");
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
}

// ---- what is asked of the host ----

#[test]
fn the_spec_sent_maps_every_field() {
    let rec = reconciled(host(release(), deployed(1, None)));
    assert_eq!(
        ensures(&rec),
        [ReleaseSpec {
            kubeconfig: SecretKeyRef::local(KUBECONFIG, "config"),
            name: RELEASE.into(),
            namespace: "apps".into(),
            chart: Chart {
                source: ChartSource::Repository {
                    url: "https://stefanprodan.github.io/podinfo".into(),
                    name: "podinfo".into(),
                },
                version: "6.7.1".into(),
            },
            values: json!({"replicaCount": 2, "ui": {"color": "#34577c"}}),
            options: ActionOptions {
                timeout_seconds: 90,
                wait: WaitStrategy::Ready,
                wait_for_jobs: true,
                disable_hooks: true,
            },
            install: InstallOptions {
                create_namespace: true,
                skip_crds: true,
                rollback_on_failure: true,
            },
            upgrade: UpgradeOptions {
                skip_crds: true,
                rollback_on_failure: true,
                cleanup_on_fail: true,
                max_history: 5,
            },
        }]
    );
}

#[test]
fn the_defaults_are_those_of_section_6_1() {
    let rec = reconciled(host(minimal(), deployed(1, None)));
    assert_eq!(
        ensures(&rec),
        [ReleaseSpec {
            kubeconfig: SecretKeyRef::local(KUBECONFIG, "kubeconfig"),
            name: NAME.into(),
            namespace: "default".into(),
            chart: Chart {
                source: ChartSource::Repository {
                    url: "https://charts.example.com".into(),
                    name: "web".into(),
                },
                version: "1.0.0".into(),
            },
            values: json!({}),
            options: ActionOptions {
                timeout_seconds: 300,
                wait: WaitStrategy::Hooks,
                wait_for_jobs: false,
                disable_hooks: false,
            },
            install: InstallOptions::default(),
            upgrade: UpgradeOptions::default(),
        }]
    );
    // Explicit false and zero are the same as unset.
    let off = json!({"createNamespace": false, "wait": false, "waitForJobs": false, "atomic": false,
        "disableHooks": false, "skipCRDs": false, "maxHistory": 0, "deletionPolicy": "Orphan"});
    let mut object = minimal();
    object["spec"]
        .as_object_mut()
        .unwrap()
        .extend(off.as_object().cloned().unwrap());
    let rec = reconciled(host(object, deployed(1, None)));
    let sent = &ensures(&rec)[0];
    assert_eq!(
        (sent.install, sent.upgrade),
        (InstallOptions::default(), UpgradeOptions::default())
    );
    assert_eq!(sent.options.wait, WaitStrategy::Hooks);
}

#[test]
fn an_oci_chart_is_a_full_reference_and_the_repository_is_ignored() {
    let object = set(
        release(),
        "spec.chart.chart",
        json!("  oci://ghcr.io/stefanprodan/charts/podinfo "),
    );
    let rec = reconciled(host(object, deployed(1, None)));
    assert_eq!(
        ensures(&rec)[0].chart,
        Chart {
            source: ChartSource::Oci("oci://ghcr.io/stefanprodan/charts/podinfo".into()),
            version: "6.7.1".into(),
        }
    );
    // Only the chart decides: an oci:// repository with a chart name is still a repository chart (§6.2).
    let object = set(
        release(),
        "spec.chart.repository",
        json!("oci://ghcr.io/stefanprodan/charts"),
    );
    let rec = reconciled(host(object, deployed(1, None)));
    assert_eq!(
        ensures(&rec)[0].chart.source,
        ChartSource::Repository {
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
            deployed(1, None),
        ));
        assert_eq!(
            ensures(&rec)[0].options.timeout_seconds,
            seconds,
            "{timeout}"
        );
    }
    let rec = reconciled(host(
        set(release(), "spec.timeout", Value::Null),
        deployed(1, None),
    ));
    assert_eq!(ensures(&rec)[0].options.timeout_seconds, 300);
}

#[test]
fn a_max_history_beyond_u32_is_capped() {
    let rec = reconciled(host(
        set(release(), "spec.maxHistory", json!(1_i64 << 40)),
        deployed(1, None),
    ));
    assert_eq!(ensures(&rec)[0].upgrade.max_history, u32::MAX);
}

// ---- the host's answers ----

#[test]
fn an_install_that_succeeded_is_released() {
    let done = outcome(Action::Install, 1, None, T1, WANTED);
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
        }))
    );
    assert_eq!(requeue(&rec), Some(RESYNC_MS));
    assert_eq!(
        events(&rec),
        [(EventType::Normal, "HelmInstalled".into(), message.into())]
    );
}

#[test]
fn an_upgrade_that_succeeded_is_released() {
    let done = outcome(Action::Upgrade, 3, None, T2, WANTED);
    let rec = reconciled(host(release(), deployed(3, Some(done))));
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
        }))
    );
    assert_eq!(requeue(&rec), Some(300_000));
    assert_eq!(
        events(&rec),
        [(EventType::Normal, "HelmUpgraded".into(), message.into())]
    );
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
        with_base(json!({"releaseRevision": 1, "releaseStatus": "deployed", "lastError": ""})),
        "no action, so no action times: the ones recorded stay"
    );
    assert!(events(&rec).is_empty());

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

    // The last action ran for an older spec (the spec was set back to what is deployed): it did not make the
    // current revision, so it neither names the reason nor is it a success time.
    let old = outcome(Action::Upgrade, 5, Some("timed out"), T1, OLDER);
    let object = set(release(), "status", json!({"lastAttemptTime": T1}));
    let rec = reconciled(host(object, deployed(4, Some(old))));
    assert_eq!(cond(&rec, "Ready").1, "HelmUpgraded");
    let status = status(&rec);
    assert_eq!(status["lastAction"], "Upgrade");
    assert!(!status.contains_key("lastSuccessTime"));
    assert!(
        !status.contains_key("lastAttemptTime"),
        "not newer than recorded"
    );
    assert!(events(&rec).is_empty());
}

#[test]
fn a_running_action_is_progress_not_failure() {
    let rec = reconciled(host(
        release(),
        answer(None, Progress::Running(Action::Install), None),
    ));
    let message = "Helm install of release \"podinfo\" is running";
    assert_eq!(cond(&rec, "Accepted").0, T);
    assert_eq!(cond(&rec, "Released"), expect(U, "Progressing", message));
    assert_eq!(cond(&rec, "Ready"), expect(U, "Progressing", message));
    assert_eq!(
        status(&rec),
        base(),
        "nothing new is known: lastError and the times stay"
    );
    assert_eq!(requeue(&rec), Some(30_000));
    assert!(events(&rec).is_empty());

    // An upgrade over revision 2, after an install the host remembers.
    let previous = outcome(Action::Install, 1, None, T1, OLDER);
    let running = answer(
        Some(revision(2, "pending-upgrade", Some(WANTED))),
        Progress::Running(Action::Upgrade),
        Some(previous),
    );
    let object = set(
        release(),
        "status",
        json!({"lastAttemptTime": T1, "lastError": ""}),
    );
    let rec = reconciled(host(object, running));
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
        with_base(
            json!({"releaseRevision": 2, "releaseStatus": "pending-upgrade", "lastAction": "Install"})
        )
    );
}

#[test]
fn a_failed_action_is_reported_with_helms_error_and_retried_when_the_host_says() {
    let error = "context deadline exceeded";
    let failed = outcome(Action::Upgrade, 2, Some(error), T2, WANTED);
    let report = answer(
        Some(revision(2, "failed", Some(WANTED))),
        Progress::RetryAfter(45_000),
        Some(failed),
    );
    let rec = reconciled(host(release(), report));
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
        })),
        "lastError is Helm's error as it is; lastSuccessTime stays"
    );
    assert_eq!(requeue(&rec), Some(45_000));
    assert_eq!(
        events(&rec),
        [(EventType::Warning, "ReconcileFailed".into(), message.into())]
    );

    // A failed install that left nothing (atomic), retried at once by the host: at least a second.
    let failed = outcome(
        Action::Install,
        1,
        Some("chart \"podinfo\" version \"9.9.9\" not found"),
        T1,
        WANTED,
    );
    let rec = reconciled(host(
        release(),
        answer(None, Progress::RetryAfter(10), Some(failed)),
    ));
    assert_eq!(
        cond(&rec, "Ready"),
        expect(
            F,
            "ReconcileFailed",
            "Helm install failed for release \"podinfo\": chart \"podinfo\" version \"9.9.9\" not found"
        )
    );
    assert!(!status(&rec).contains_key("releaseRevision"));
    assert_eq!(requeue(&rec), Some(1_000));
}

#[test]
fn a_release_the_host_does_not_converge_is_reported_as_it_is() {
    let cases = [
        // Made by someone else (no digest): the host does not adopt it.
        (
            Some(revision(1, "deployed", None)),
            Progress::Idle,
            "deployed",
            60_000,
        ),
        (
            Some(revision(3, "deployed", Some(OLDER))),
            Progress::Idle,
            "deployed",
            60_000,
        ),
        (
            Some(revision(2, "failed", Some(WANTED))),
            Progress::Idle,
            "failed",
            60_000,
        ),
        (None, Progress::Idle, "not installed", 60_000),
        // Waiting to retry without an outcome for what is wanted.
        (
            Some(revision(2, "failed", Some(OLDER))),
            Progress::RetryAfter(20_000),
            "failed",
            20_000,
        ),
    ];
    for (current, progress, word, retry) in cases {
        let revision = current.as_ref().map(|c| c.revision);
        let rec = reconciled(host(release(), answer(current, progress, None)));
        let message = format!("Helm release \"podinfo\" is {word}");
        assert_eq!(
            cond(&rec, "Released"),
            expect(F, "ReconcileFailed", &message),
            "{message}"
        );
        assert_eq!(
            cond(&rec, "Ready"),
            expect(F, "ReconcileFailed", &message),
            "{message}"
        );
        let status = status(&rec);
        assert_eq!(status["lastError"], message.as_str());
        assert!(
            !status.contains_key("lastAttemptTime"),
            "a state, not an attempt: the status stays stable"
        );
        assert_eq!(
            status.get("releaseRevision").and_then(Value::as_u64),
            revision
        );
        assert_eq!(requeue(&rec), Some(retry), "{message}");
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
            // The host names the kubeconfig itself, in §6.5 step 4's words.
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
            MockHost::new(release())
                .with_object(cluster())
                .with_secret(None, KUBECONFIG, kubeconfig())
                .with_helm(Err(error.clone())),
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
        assert_eq!(ensures(&rec).len(), 1);
    }
}

#[test]
fn the_mock_hosts_own_kubeconfig_and_grant_checks_map_the_same_way() {
    // The key exists but is empty: the plugin's look passes, the host refuses.
    let empty = MockHost::new(release())
        .with_object(cluster())
        .with_secret(None, KUBECONFIG, FakeSecret::opaque(&[("config", "")]))
        .with_helm(Ok(deployed(1, None)));
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
    let scripts = [
        deployed(1, Some(outcome(Action::Install, 1, None, T1, WANTED))),
        deployed(4, None),
        answer(
            Some(revision(2, "failed", Some(WANTED))),
            Progress::RetryAfter(30_000),
            Some(outcome(Action::Upgrade, 2, Some("boom"), T2, WANTED)),
        ),
        answer(Some(revision(1, "deployed", None)), Progress::Idle, None),
        answer(None, Progress::Running(Action::Install), None),
    ];
    for script in scripts {
        let first = reconciled(host(release(), script.clone()));
        let after_first = committed(release(), &first);
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
        assert_eq!(requeue(&second), requeue(&first), "{script:?}");
    }
}

#[test]
fn events_come_only_with_outcomes_newer_than_the_recorded_attempt() {
    let upgraded = || deployed(2, Some(outcome(Action::Upgrade, 2, None, T2, WANTED)));

    // Recorded at T1, finished at T2: new.
    let rec = reconciled(host(
        set(release(), "status", json!({"lastAttemptTime": T1})),
        upgraded(),
    ));
    assert_eq!(
        events(&rec),
        [(
            EventType::Normal,
            "HelmUpgraded".into(),
            "upgraded Helm release \"podinfo\" to revision 2".into()
        )]
    );
    assert_eq!(status(&rec)["lastAttemptTime"], T2);

    // Already recorded.
    let rec = reconciled(host(
        set(release(), "status", json!({"lastAttemptTime": T2})),
        upgraded(),
    ));
    assert!(events(&rec).is_empty());
    assert!(!status(&rec).contains_key("lastAttemptTime"));

    // A failure without an outcome was recorded later (the kubeconfig was briefly missing): the older outcome
    // is neither announced again nor moves the attempt time back.
    let later = "2026-01-01T00:05:00Z";
    let rec = reconciled(host(
        set(release(), "status", json!({"lastAttemptTime": later})),
        upgraded(),
    ));
    assert!(events(&rec).is_empty());
    assert!(!status(&rec).contains_key("lastAttemptTime"));
    assert_eq!(
        status(&rec)["lastSuccessTime"],
        T2,
        "still the time of the success in place"
    );
    assert_eq!(status(&rec)["lastError"], "", "the failure is over");

    // A recorded time that does not parse is compared as text.
    let rec = reconciled(host(
        set(release(), "status", json!({"lastAttemptTime": "yesterday"})),
        upgraded(),
    ));
    assert_eq!(events(&rec).len(), 1);

    // Outcomes of other actions make no Event of their own.
    let recovered = deployed(2, Some(outcome(Action::Recover, 2, None, T2, WANTED)));
    let rec = reconciled(host(release(), recovered));
    assert!(events(&rec).is_empty());
    assert_eq!(status(&rec)["lastAction"], "Recover");
    assert_eq!(
        cond(&rec, "Ready").1,
        "HelmUpgraded",
        "revision 2, and no install or upgrade remembered"
    );
}

#[test]
fn fields_not_recomputed_keep_their_values() {
    let earlier = json!({
        "releaseRevision": 7, "releaseStatus": "deployed", "lastAction": "Upgrade",
        "lastAttemptTime": T1, "lastSuccessTime": T1, "lastError": ""
    });
    let object = set(release(), "status", earlier.clone());
    // The host restarted and reports an upgrade running, with no release read and no outcome.
    let rec = reconciled(host(
        object.clone(),
        answer(None, Progress::Running(Action::Upgrade), None),
    ));
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
