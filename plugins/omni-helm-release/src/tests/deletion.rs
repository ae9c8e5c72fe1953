//! §6.7 deletion with §10.13 made visible: Orphan, the uninstall sent, and each answer (running, gone, failed,
//! the host failing the call, the release still there), plus a missing kubeconfig that names its escape.

use omni_plugin_sdk::HostError;
use omni_plugin_sdk::helm::{ActionOptions, UninstallSpec, WaitStrategy};
use omni_plugin_sdk::secrets::SecretKeyRef;

use super::*;

/// [`release`] being deleted.
fn deleting(policy: &str) -> Value {
    let object = set(release(), "metadata.deletionTimestamp", json!(NOW));
    set(object, "spec.deletionPolicy", json!(policy))
}

/// What uninstall answers once the release is gone.
fn gone(last: Option<ActionOutcome>) -> ReleaseReport {
    ReleaseReport {
        release: None,
        progress: Progress::Idle,
        last,
        wanted: String::new(),
    }
}

fn finalized(host: MockHost) -> (MockHost, bool) {
    let done = OmniHelmReleasePlugin::finalize(&host).expect("finalize returns Ok");
    (host, done)
}

fn uninstalls(host: &MockHost) -> Vec<UninstallSpec> {
    host.requests().helm_uninstalls
}

/// The status fields every update of [`release`] carries, with `more` over them.
fn with_base(more: Value) -> Map<String, Value> {
    let mut status = json!({
        "clusterRef": "edge",
        "kubeconfigSecretRef": KUBECONFIG,
        "kubeconfigSecretKey": "config",
        "releaseName": RELEASE,
        "namespace": "apps",
        "chart": "podinfo",
        "chartVersion": "6.7.1",
    })
    .as_object()
    .cloned()
    .unwrap();
    status.extend(more.as_object().cloned().unwrap());
    status
}

#[test]
fn orphan_releases_at_once_touching_nothing_and_needing_no_kubeconfig() {
    let (rec, done) = finalized(
        MockHost::new(deleting("Orphan")).with_helm(Err(HostError::Unavailable("x".into()))),
    );
    assert!(done);
    assert!(uninstalls(&rec).is_empty());
    assert_eq!(rec.outputs(), Default::default(), "nothing reported");
}

#[test]
fn uninstall_is_the_default_policy() {
    let object = set(
        set(release(), "metadata.deletionTimestamp", json!(NOW)),
        "spec.deletionPolicy",
        Value::Null,
    );
    let (rec, done) = finalized(host(object, gone(None)));
    assert!(done);
    assert_eq!(uninstalls(&rec).len(), 1);
}

#[test]
fn the_uninstall_sent_names_the_release_and_keeps_no_history() {
    let (rec, _) = finalized(host(deleting("Uninstall"), gone(None)));
    assert_eq!(
        uninstalls(&rec),
        [UninstallSpec {
            kubeconfig: SecretKeyRef::local(KUBECONFIG, "config"),
            name: RELEASE.into(),
            namespace: "apps".into(),
            options: ActionOptions {
                timeout_seconds: 90,
                wait: WaitStrategy::Ready,
                wait_for_jobs: true,
                disable_hooks: true,
            },
            keep_history: false,
        }]
    );
    assert!(rec.requests().helm_ensures.is_empty());

    let object = set(minimal(), "metadata.deletionTimestamp", json!(NOW));
    let (rec, _) = finalized(host(object, gone(None)));
    assert_eq!(
        uninstalls(&rec),
        [UninstallSpec {
            kubeconfig: SecretKeyRef::local(KUBECONFIG, "kubeconfig"),
            name: NAME.into(),
            namespace: "default".into(),
            options: ActionOptions {
                timeout_seconds: 300,
                wait: WaitStrategy::Hooks,
                wait_for_jobs: false,
                disable_hooks: false,
            },
            keep_history: false,
        }]
    );
}

#[test]
fn a_timeout_that_does_not_parse_does_not_block_the_uninstall() {
    let object = set(deleting("Uninstall"), "spec.timeout", json!("soon"));
    let (rec, done) = finalized(host(object, gone(None)));
    assert!(done);
    assert_eq!(uninstalls(&rec)[0].options.timeout_seconds, 300);
}

#[test]
fn the_cluster_is_not_needed_to_uninstall() {
    let (rec, done) = finalized(
        MockHost::new(deleting("Uninstall"))
            .with_secret(None, KUBECONFIG, kubeconfig())
            .with_helm(Ok(gone(None))),
    );
    assert!(done);
    assert_eq!(uninstalls(&rec).len(), 1);
}

#[test]
fn a_finished_uninstall_releases_the_object() {
    let done_at = outcome(Action::Uninstall, 2, None, T2, "");
    let object = set(
        deleting("Uninstall"),
        "status",
        json!({"lastAttemptTime": T1, "releaseRevision": 2}),
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
        }))
    );
    assert_eq!(requeue(&rec), None);
    assert!(events(&rec).is_empty());

    // A release that never existed is gone too; the host remembers no action for it.
    let (rec, done) = finalized(host(deleting("Uninstall"), gone(None)));
    assert!(done);
    assert_eq!(
        status(&rec),
        with_base(
            json!({"lastAction": "Uninstall", "releaseStatus": "uninstalled", "lastError": ""})
        )
    );
}

#[test]
fn a_running_uninstall_keeps_the_finalizer_and_looks_again() {
    let running = ReleaseReport {
        release: Some(ReleaseState {
            current: revision(2, "uninstalling", Some(WANTED)),
            history: Vec::new(),
        }),
        progress: Progress::Running(Action::Uninstall),
        last: None,
        wanted: String::new(),
    };
    let (rec, done) = finalized(host(deleting("Uninstall"), running));
    assert!(!done);
    let message = "uninstalling Helm release \"podinfo\"";
    assert_eq!(cond(&rec, "Released"), expect(F, "Deleting", message));
    assert_eq!(cond(&rec, "Ready"), expect(F, "Deleting", message));
    assert_eq!(
        status(&rec),
        with_base(json!({"releaseRevision": 2, "releaseStatus": "uninstalling"}))
    );
    assert_eq!(requeue(&rec), Some(30_000));
}

#[test]
fn a_failed_uninstall_names_the_escape_and_is_retried_when_the_host_says() {
    let error = "uninstall: failed to delete release: context deadline exceeded";
    let failed = ReleaseReport {
        release: Some(ReleaseState {
            current: revision(2, "uninstalling", Some(WANTED)),
            history: Vec::new(),
        }),
        progress: Progress::RetryAfter(40_000),
        last: Some(outcome(Action::Uninstall, 2, Some(error), T2, "")),
        wanted: String::new(),
    };
    let (rec, done) = finalized(host(deleting("Uninstall"), failed));
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
        }))
    );
    assert_eq!(requeue(&rec), Some(40_000));
}

#[test]
fn a_missing_kubeconfig_blocks_visibly_with_the_escape() {
    let no_secret = MockHost::new(deleting("Uninstall")).with_helm(Ok(gone(None)));
    let no_key = MockHost::new(deleting("Uninstall"))
        .with_secret(None, KUBECONFIG, FakeSecret::opaque(&[("other", "x")]))
        .with_helm(Ok(gone(None)));
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
        assert!(uninstalls(&rec).is_empty());
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
        let (rec, done) = finalized(
            MockHost::new(deleting("Uninstall"))
                .with_secret(None, KUBECONFIG, kubeconfig())
                .with_helm(Err(error.clone())),
        );
        assert!(!done, "{error:?}");
        let message = format!(
            "Helm uninstall failed for release \"podinfo\": {why}; the finalizer stays until it succeeds, or set \
             spec.deletionPolicy to Orphan to leave the release"
        );
        assert_eq!(cond(&rec, "Released"), expect(F, "DeleteFailed", &message));
        assert_eq!(cond(&rec, "Ready"), expect(F, "DeleteFailed", &message));
        assert_eq!(
            status(&rec),
            with_base(json!({"lastAttemptTime": NOW, "lastError": message}))
        );
        assert_eq!(requeue(&rec), Some(60_000));
    }
}

#[test]
fn a_release_still_there_after_an_idle_answer_is_not_done() {
    let left = ReleaseReport {
        release: Some(ReleaseState {
            current: revision(1, "deployed", None),
            history: Vec::new(),
        }),
        progress: Progress::Idle,
        last: None,
        wanted: String::new(),
    };
    let (rec, done) = finalized(host(deleting("Uninstall"), left));
    assert!(!done);
    let message = "Helm release \"podinfo\" is deployed and was not uninstalled; the finalizer stays until it is, or \
                   set spec.deletionPolicy to Orphan to leave the release";
    assert_eq!(cond(&rec, "Ready"), expect(F, "DeleteFailed", message));
    assert_eq!(status(&rec)["lastError"], message);
    assert_eq!(requeue(&rec), Some(60_000));
}

#[test]
fn a_name_helm_refuses_has_nothing_to_uninstall() {
    for name in ["Podinfo", &"a".repeat(54)] {
        let object = set(deleting("Uninstall"), "spec.releaseName", json!(name));
        let (rec, done) = finalized(host(object, gone(None)));
        assert!(done, "{name}");
        assert!(uninstalls(&rec).is_empty(), "{name}");
        assert_eq!(rec.outputs().status, Map::new(), "{name}");
    }
}
