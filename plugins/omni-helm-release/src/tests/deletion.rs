//! Deletion, never blocked silently: Orphan and suspend, the uninstall started, and each observation
//! (an action running, the release gone, a failed uninstall retried with a growing delay, the host failing the
//! call, the release still there after an uninstall), plus a missing kubeconfig that names its escape.

use omni_plugin_sdk::HostError;
use omni_plugin_sdk::helm::{
    ActionOptions, DeletionPropagation, ReleaseRef, UninstallRequest, WaitStrategy,
};
use omni_plugin_sdk::secrets::SecretKeyRef;

use super::*;

/// [`release`] being deleted.
fn deleting(policy: &str) -> Value {
    let object = set(release(), "metadata.deletionTimestamp", json!(NOW));
    set(object, "spec.deletionPolicy", json!(policy))
}

/// What the host observes once the release is gone (no source is asked about on deletion).
fn gone(last: Option<StepRecord>) -> Observation {
    Observation {
        wanted: String::new(),
        chart_version: String::new(),
        ..observation(None, last)
    }
}

/// The release still in the workload cluster at revision 2, with `status`.
fn left(status: &str, last: Option<StepRecord>) -> Observation {
    Observation {
        wanted: String::new(),
        chart_version: String::new(),
        ..observation(Some(revision(2, status, Some(WANTED))), last)
    }
}

fn finalized(host: MockHost) -> (MockHost, bool) {
    let done = OmniHelmReleasePlugin::finalize(&host).expect("finalize returns Ok");
    (host, done)
}

/// The uninstall requests started.
fn uninstalls(host: &MockHost) -> Vec<UninstallRequest> {
    starts(host)
        .into_iter()
        .map(|s| match s {
            Step::Uninstall(u) => u,
            other => panic!("only uninstalls are started on deletion, got {other:?}"),
        })
        .collect()
}

/// The status fields every update of [`release`] carries, with `more` over them.
fn with_base(more: Value) -> Map<String, Value> {
    let mut status = json!({
        "clusterRef": "edge",
        "kubeconfigSecretRef": KUBECONFIG,
        "kubeconfigSecretKey": "config",
        "releaseName": RELEASE,
        "namespace": "apps",
        "storageNamespace": "apps",
        "chart": "podinfo",
        "chartVersion": "6.7.1",
    })
    .as_object()
    .cloned()
    .unwrap();
    status.extend(more.as_object().cloned().unwrap());
    status
}

/// Helm settings of [`release`].
fn release_options() -> ActionOptions {
    ActionOptions {
        timeout_seconds: 90,
        wait: WaitStrategy::Ready,
        wait_for_jobs: true,
        disable_hooks: true,
    }
}

#[test]
fn orphan_releases_at_once_touching_nothing_and_needing_no_kubeconfig() {
    let (rec, done) = finalized(
        mock(deleting("Orphan")).with_observation(Err(HostError::Unavailable("x".into()))),
    );
    assert!(done);
    let requests = rec.requests();
    assert!(requests.helm_observes.is_empty() && requests.helm_starts.is_empty());
    assert_eq!(rec.outputs(), Default::default(), "nothing reported");
}

#[test]
fn a_suspended_release_is_left_in_the_workload_cluster_without_asking_helm() {
    let object = set(deleting("Uninstall"), "spec.suspend", json!(true));
    let (rec, done) = finalized(host(object, left("deployed", None)));
    assert!(done);
    let requests = rec.requests();
    assert!(requests.helm_observes.is_empty() && requests.helm_starts.is_empty());
    let outputs = rec.outputs();
    assert!(outputs.status.is_empty() && outputs.conditions.is_empty());
    assert_eq!(outputs.requeue_after, None);
    assert_eq!(
        outputs.logs.len(),
        1,
        "the reason the release stays is logged"
    );
}

#[test]
fn uninstall_is_the_default_policy_and_a_release_still_there_is_uninstalled() {
    let object = set(
        set(release(), "metadata.deletionTimestamp", json!(NOW)),
        "spec.deletionPolicy",
        Value::Null,
    );
    let (rec, done) = finalized(host(object, left("deployed", None)));
    assert!(!done, "the finalizer stays until the release is gone");
    assert_eq!(uninstalls(&rec).len(), 1);
    let message = "uninstalling Helm release \"podinfo\"";
    assert_eq!(cond(&rec, "Released"), expect(F, "Deleting", message));
    assert_eq!(cond(&rec, "Ready"), expect(F, "Deleting", message));
    assert_eq!(
        status(&rec),
        with_base(json!({
            "releaseRevision": 2, "releaseStatus": "deployed",
            "failures": 0, "installFailures": 0, "upgradeFailures": 0,
            "history": [snapshot(2, "deployed", Some(WANTED))],
        }))
    );
    assert_eq!(requeue(&rec), Some(30_000));
}

#[test]
fn the_uninstall_sent_names_the_release_and_keeps_no_history() {
    let (rec, _) = finalized(host(deleting("Uninstall"), left("deployed", None)));
    let podinfo = ReleaseRef {
        kubeconfig: SecretKeyRef::local(KUBECONFIG, "config"),
        name: RELEASE.into(),
        namespace: "apps".into(),
        service_account: None,
    };
    let requests = rec.requests();
    assert_eq!(
        requests.helm_observes,
        [(podinfo.clone(), None)],
        "no source: nothing is installed"
    );
    assert_eq!(
        requests.helm_starts,
        [(
            podinfo,
            Step::Uninstall(UninstallRequest {
                options: release_options(),
                keep_history: false,
                propagation: DeletionPropagation::Background,
            })
        )]
    );

    let object = set(minimal(), "metadata.deletionTimestamp", json!(NOW));
    let (rec, _) = finalized(host(object, left("deployed", None)));
    assert_eq!(rec.requests().helm_starts[0].0.name, NAME);
    assert_eq!(rec.requests().helm_starts[0].0.namespace, "default");
    assert_eq!(
        uninstalls(&rec),
        [UninstallRequest {
            options: ActionOptions {
                timeout_seconds: 300,
                wait: WaitStrategy::Hooks,
                wait_for_jobs: false,
                disable_hooks: false,
            },
            keep_history: false,
            propagation: DeletionPropagation::Background,
        }]
    );
}

#[test]
fn the_uninstall_block_overrides_the_top_level_settings() {
    let object = set(
        deleting("Uninstall"),
        "spec.uninstall",
        json!({"timeout": "4m", "disableWait": true, "disableHooks": false, "keepHistory": true,
            "deletionPropagation": "foreground"}),
    );
    let (rec, _) = finalized(host(object, left("deployed", None)));
    assert_eq!(
        uninstalls(&rec),
        [UninstallRequest {
            options: ActionOptions {
                timeout_seconds: 240,
                wait: WaitStrategy::Hooks,
                wait_for_jobs: true,
                disable_hooks: false,
            },
            keep_history: true,
            propagation: DeletionPropagation::Foreground,
        }]
    );
    for (propagation, expected) in [
        ("background", DeletionPropagation::Background),
        ("orphan", DeletionPropagation::Orphan),
    ] {
        let object = set(
            deleting("Uninstall"),
            "spec.uninstall",
            json!({"deletionPropagation": propagation}),
        );
        let (rec, _) = finalized(host(object, left("deployed", None)));
        assert_eq!(uninstalls(&rec)[0].propagation, expected, "{propagation}");
    }
}

#[test]
fn a_timeout_that_does_not_parse_does_not_block_the_uninstall() {
    let object = set(deleting("Uninstall"), "spec.timeout", json!("soon"));
    let (rec, done) = finalized(host(object, left("deployed", None)));
    assert!(!done);
    assert_eq!(uninstalls(&rec)[0].options.timeout_seconds, 300);
}

#[test]
fn the_cluster_is_not_needed_to_uninstall() {
    let (rec, done) = finalized(
        mock(deleting("Uninstall"))
            .with_secret(None, KUBECONFIG, kubeconfig())
            .with_observation(Ok(left("deployed", None))),
    );
    assert!(!done);
    assert_eq!(uninstalls(&rec).len(), 1);
}

#[test]
fn a_finished_uninstall_releases_the_object() {
    let done_at = record("un1", Action::Uninstall, 2, None, T2, "");
    let object = set(
        deleting("Uninstall"),
        "status",
        json!({"lastAttemptTime": T1, "releaseRevision": 2, "lastActionID": "u1"}),
    );
    let (rec, done) = finalized(host(object, gone(Some(done_at))));
    assert!(done);
    let message = "uninstalled Helm release \"podinfo\"";
    assert_eq!(
        cond(&rec, "Released"),
        expect(F, "HelmUninstalled", message)
    );
    assert_eq!(cond(&rec, "Ready"), expect(F, "HelmUninstalled", message));
    assert_eq!(
        status(&rec),
        with_base(json!({
            "lastAction": "Uninstall",
            "releaseStatus": "uninstalled",
            "lastAttemptTime": T2,
            "lastSuccessTime": T2,
            "lastError": "",
            "failures": 0, "installFailures": 0, "upgradeFailures": 0,
            "lastActionID": "un1",
            "history": [],
        }))
    );
    assert_eq!(requeue(&rec), None);
    assert_eq!(
        events(&rec),
        [(
            EventType::Normal,
            "UninstallSucceeded".into(),
            message.into()
        )]
    );
    assert!(starts(&rec).is_empty());

    // A release that never existed is gone too; the host remembers no action for it.
    let (rec, done) = finalized(host(deleting("Uninstall"), gone(None)));
    assert!(done);
    assert_eq!(
        status(&rec),
        with_base(json!({
            "lastAction": "Uninstall", "releaseStatus": "uninstalled", "lastError": "",
            "failures": 0, "installFailures": 0, "upgradeFailures": 0, "history": [],
        }))
    );
    assert!(starts(&rec).is_empty() && events(&rec).is_empty());

    // Uninstalled with its history kept: gone as well.
    let kept = left(
        "uninstalled",
        Some(record("un1", Action::Uninstall, 2, None, T2, "")),
    );
    let (rec, done) = finalized(host(deleting("Uninstall"), kept));
    assert!(done);
    assert!(starts(&rec).is_empty());
    assert_eq!(status(&rec)["releaseStatus"], "uninstalled");
}

#[test]
fn a_running_action_is_waited_for_before_uninstalling() {
    for (action, message) in [
        (
            Action::Uninstall,
            "Helm uninstall of release \"podinfo\" is running",
        ),
        (
            Action::Upgrade,
            "Helm upgrade of release \"podinfo\" is running",
        ),
    ] {
        let mut observed = left("uninstalling", None);
        observed.running = Some(running("a1", action));
        let (rec, done) = finalized(host(deleting("Uninstall"), observed));
        assert!(!done, "{action:?}");
        assert_eq!(cond(&rec, "Released"), expect(F, "Deleting", message));
        assert_eq!(cond(&rec, "Ready"), expect(F, "Deleting", message));
        assert_eq!(
            status(&rec),
            with_base(json!({
                "releaseRevision": 2, "releaseStatus": "uninstalling",
                "failures": 0, "installFailures": 0, "upgradeFailures": 0,
                "history": [snapshot(2, "uninstalling", Some(WANTED))],
            }))
        );
        assert_eq!(requeue(&rec), Some(30_000));
        assert!(starts(&rec).is_empty(), "{action:?}: one action at a time");
    }
}

#[test]
fn a_failed_uninstall_names_the_escape_and_is_retried_with_a_growing_delay() {
    let error = "uninstall: failed to delete release: context deadline exceeded";
    let failed = || {
        left(
            "uninstalling",
            Some(record("un1", Action::Uninstall, 0, Some(error), T2, "")),
        )
    };
    let (rec, done) = finalized(host(deleting("Uninstall"), failed()));
    assert!(!done);
    let message = "Helm uninstall failed for release \"podinfo\": uninstall: failed to delete release: context deadline \
                   exceeded; the finalizer stays until it succeeds, or set spec.deletionPolicy to Orphan to leave the \
                   release";
    assert_eq!(cond(&rec, "Released"), expect(F, "DeleteFailed", message));
    assert_eq!(cond(&rec, "Ready"), expect(F, "DeleteFailed", message));
    assert_eq!(
        status(&rec),
        with_base(json!({
            "releaseRevision": 2,
            "releaseStatus": "uninstalling",
            "lastAction": "Uninstall",
            "lastAttemptTime": T2,
            "lastError": error,
            "failures": 1, "installFailures": 0, "upgradeFailures": 0,
            "lastActionID": "un1",
            "history": [snapshot(2, "uninstalling", Some(WANTED))],
        }))
    );
    assert_eq!(requeue(&rec), Some(10_000), "15 s after T2");
    assert_eq!(
        events(&rec),
        [(
            EventType::Warning,
            "UninstallFailed".into(),
            format!("Helm uninstall failed for release \"podinfo\": {error}")
        )]
    );
    assert!(starts(&rec).is_empty());

    // Once the delay passed: uninstalled again; the outcome is not counted twice.
    let after = committed(deleting("Uninstall"), &rec);
    let (rec, done) = finalized(host(after.clone(), failed()).at(&time(135)));
    assert!(!done);
    assert_eq!(uninstalls(&rec).len(), 1);
    assert_eq!(
        cond(&rec, "Ready"),
        expect(F, "Deleting", "uninstalling Helm release \"podinfo\"")
    );
    assert_eq!(status(&rec)["failures"], 1);
    assert!(events(&rec).is_empty());

    // After three failures in a row the delay is a minute.
    let third = set(after, "status.failures", json!(3));
    let (rec, _) = finalized(host(third, failed()).at(T2));
    assert_eq!(requeue(&rec), Some(60_000));
    assert!(starts(&rec).is_empty());
}

#[test]
fn an_uninstall_that_left_the_release_is_tried_again_after_its_delay() {
    let stuck = || {
        left(
            "deployed",
            Some(record("un1", Action::Uninstall, 2, None, T2, "")),
        )
    };
    let (rec, done) = finalized(host(deleting("Uninstall"), stuck()));
    assert!(!done);
    let message = "Helm release \"podinfo\" is deployed and was not uninstalled; the finalizer stays until it is, or \
                   set spec.deletionPolicy to Orphan to leave the release";
    assert_eq!(cond(&rec, "Ready"), expect(F, "DeleteFailed", message));
    assert_eq!(status(&rec)["lastError"], message);
    assert_eq!(requeue(&rec), Some(10_000));
    assert!(starts(&rec).is_empty());
    let (rec, _) = finalized(host(deleting("Uninstall"), stuck()).at(&time(135)));
    assert_eq!(uninstalls(&rec).len(), 1);
}

#[test]
fn a_missing_kubeconfig_blocks_visibly_with_the_escape() {
    let no_secret = mock(deleting("Uninstall")).with_observation(Ok(left("deployed", None)));
    let no_key = mock(deleting("Uninstall"))
        .with_secret(None, KUBECONFIG, FakeSecret::opaque(&[("other", "x")]))
        .with_observation(Ok(left("deployed", None)));
    let cases = [
        (
            no_secret,
            "cannot uninstall Helm release \"podinfo\": kubeconfig Secret \"team/edge-kubeconfig\" does not exist; \
             restore it, or set spec.deletionPolicy to Orphan to leave the release in the workload cluster",
        ),
        (
            no_key,
            "cannot uninstall Helm release \"podinfo\": kubeconfig Secret \"team/edge-kubeconfig\" does not contain \
             key \"config\"; restore it, or set spec.deletionPolicy to Orphan to leave the release in the workload \
             cluster",
        ),
    ];
    for (host, message) in cases {
        let (rec, done) = finalized(host);
        assert!(!done, "{message}");
        assert_eq!(cond(&rec, "Released"), expect(F, "DeleteFailed", message));
        assert_eq!(cond(&rec, "Ready"), expect(F, "DeleteFailed", message));
        assert_eq!(
            status(&rec),
            with_base(json!({"lastAttemptTime": NOW, "lastError": message}))
        );
        assert_eq!(requeue(&rec), Some(60_000));
        let requests = rec.requests();
        assert!(requests.helm_observes.is_empty() && requests.helm_starts.is_empty());
    }
}

#[test]
fn a_host_that_cannot_uninstall_says_so_with_the_escape() {
    let cases = [
        (
            HostError::Unavailable("Helm is unavailable: libhelm_c.so not found".into()),
            "Helm is unavailable: libhelm_c.so not found",
        ),
        (
            HostError::Unauthenticated("the workload cluster answered 401 Unauthorized".into()),
            "the workload cluster answered 401 Unauthorized",
        ),
        (
            HostError::NotFound(
                "kubeconfig Secret \"team/edge-kubeconfig\" key \"config\" is empty".into(),
            ),
            "kubeconfig Secret \"team/edge-kubeconfig\" key \"config\" is empty",
        ),
    ];
    for (error, why) in cases {
        let message = format!(
            "Helm uninstall failed for release \"podinfo\": {why}; the finalizer stays until it succeeds, or set \
             spec.deletionPolicy to Orphan to leave the release"
        );
        // The observation fails.
        let (rec, done) = finalized(
            mock(deleting("Uninstall"))
                .with_secret(None, KUBECONFIG, kubeconfig())
                .with_observation(Err(error.clone())),
        );
        assert!(!done, "{error:?}");
        assert_eq!(cond(&rec, "Released"), expect(F, "DeleteFailed", &message));
        assert_eq!(cond(&rec, "Ready"), expect(F, "DeleteFailed", &message));
        assert_eq!(
            status(&rec),
            with_base(json!({"lastAttemptTime": NOW, "lastError": message})),
            "{error:?}"
        );
        assert_eq!(requeue(&rec), Some(60_000));

        // The uninstall cannot start.
        let (rec, done) = finalized(
            host(deleting("Uninstall"), left("deployed", None)).with_start(Err(error.clone())),
        );
        assert!(!done, "{error:?}");
        assert_eq!(cond(&rec, "Ready"), expect(F, "DeleteFailed", &message));
        assert_eq!(status(&rec)["lastError"], message.as_str());
        assert_eq!(status(&rec)["lastAttemptTime"], NOW);
        assert_eq!(requeue(&rec), Some(60_000));
    }
}

#[test]
fn a_release_that_is_not_this_objects_is_left_alone_and_the_object_released() {
    // The host answers `conflict` when another object owns the release (or nobody does): nothing of this
    // object's is there to uninstall, so the finalizer goes and no uninstall is started.
    let why = "Helm release \"apps/podinfo\": Helm release apps/podinfo belongs to another object";
    let (rec, done) = finalized(
        mock(deleting("Uninstall"))
            .with_secret(None, KUBECONFIG, kubeconfig())
            .with_observation(Err(HostError::Conflict(why.into()))),
    );
    assert!(done, "the object must be released");
    assert!(
        starts(&rec).is_empty(),
        "another object's release was uninstalled"
    );
}

#[test]
fn a_failed_uninstall_counted_before_a_start_that_failed_is_not_counted_again() {
    let failed = || {
        left(
            "deployed",
            Some(record("un1", Action::Uninstall, 0, Some("boom"), T2, "")),
        )
    };
    let refused = || HostError::Unavailable("the workload cluster is unreachable".into());
    let (rec, done) = finalized(
        host(deleting("Uninstall"), failed())
            .at(&time(720))
            .with_start(Err(refused())),
    );
    assert!(!done);
    assert_eq!(uninstalls(&rec).len(), 1);
    assert_eq!(reasons_of(&rec), ["UninstallFailed"]);
    assert_eq!(
        cond(&rec, "Ready"),
        expect(
            F,
            "DeleteFailed",
            "Helm uninstall failed for release \"podinfo\": the workload cluster is unreachable; the finalizer \
             stays until it succeeds, or set spec.deletionPolicy to Orphan to leave the release"
        )
    );
    let after = committed(deleting("Uninstall"), &rec);
    assert_eq!(after["status"]["lastActionID"], "un1");
    assert_eq!(after["status"]["failures"], 1);
    assert_eq!(after["status"]["lastAttemptTime"], time(720).as_str());
    let (rec, _) = finalized(
        host(after, failed())
            .at(&time(780))
            .with_start(Err(refused())),
    );
    assert!(events(&rec).is_empty(), "announced once");
    assert_eq!(status(&rec)["failures"], 1, "counted once");
}

fn reasons_of(host: &MockHost) -> Vec<String> {
    events(host)
        .into_iter()
        .map(|(_, reason, _)| reason)
        .collect()
}

#[test]
fn an_uninstall_that_loses_the_race_to_another_action_waits_for_it() {
    let (rec, done) = finalized(
        host(deleting("Uninstall"), left("deployed", None))
            .with_start(Err(HostError::Conflict("an action runs".into()))),
    );
    assert!(!done);
    assert_eq!(
        cond(&rec, "Ready"),
        expect(F, "Deleting", "uninstalling Helm release \"podinfo\"")
    );
    assert_eq!(requeue(&rec), Some(30_000));
}

#[test]
fn a_name_helm_refuses_has_nothing_to_uninstall() {
    for name in ["Podinfo", &"a".repeat(54)] {
        let object = set(deleting("Uninstall"), "spec.releaseName", json!(name));
        let (rec, done) = finalized(host(object, left("deployed", None)));
        assert!(done, "{name}");
        let requests = rec.requests();
        assert!(
            requests.helm_observes.is_empty() && requests.helm_starts.is_empty(),
            "{name}"
        );
        assert_eq!(rec.outputs().status, Map::new(), "{name}");
    }
}
