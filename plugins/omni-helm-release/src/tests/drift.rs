//! Drift detection through reconcile: asked of the host only when the spec turns it on and the release is in
//! sync; `warn` reports, `enabled` also starts a correction with the ignore rules; errors of the check leave the
//! release Ready.

use omni_plugin_sdk::HostError;
use omni_plugin_sdk::helm::{DriftIgnore, DriftReason, DriftTarget, Drifted};

use super::*;

fn drifting(mode: &str) -> Value {
    set(
        release(),
        "spec.driftDetection",
        json!({"mode": mode, "ignore": [{"paths": ["/spec/replicas"], "target": {"kind": "Deployment"}}]}),
    )
}

fn scaled() -> Vec<Drifted> {
    vec![
        Drifted {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: "apps".into(),
            name: "podinfo".into(),
            reason: DriftReason::Modified,
            fields: vec!["/spec/template/spec/containers/0/image".into()],
        },
        Drifted {
            api_version: "v1".into(),
            kind: "Service".into(),
            namespace: "apps".into(),
            name: "podinfo".into(),
            reason: DriftReason::Missing,
            fields: Vec::new(),
        },
    ]
}

const MESSAGE: &str = "objects of Helm release \"podinfo\" drifted from its manifest: Deployment apps/podinfo \
    (modified: /spec/template/spec/containers/0/image); Service apps/podinfo (deleted)";

#[test]
fn without_drift_detection_the_host_is_never_asked() {
    let h = reconciled(host(release(), deployed(1, None)));
    assert!(h.requests().helm_drift_checks.is_empty());
    assert!(h.condition(crate::drift::DRIFTED).is_none());
}

#[test]
fn warn_reports_what_drifted_and_corrects_nothing() {
    let h = reconciled(host(drifting("warn"), deployed(1, None)).with_drift(Ok(scaled())));
    let checks = h.requests().helm_drift_checks;
    assert_eq!(checks.len(), 1);
    assert_eq!(
        checks[0].1,
        vec![DriftIgnore {
            paths: vec!["/spec/replicas".into()],
            target: Some(DriftTarget {
                kind: "Deployment".into(),
                ..Default::default()
            }),
        }]
    );
    assert_eq!(cond(&h, "Drifted"), expect(T, "DriftDetected", MESSAGE));
    assert_eq!(
        cond(&h, "Ready").0,
        T,
        "drift does not make the release unready"
    );
    assert!(
        events(&h).contains(&(EventType::Warning, "DriftDetected".into(), MESSAGE.into())),
        "{:?}",
        events(&h)
    );
    assert!(starts(&h).is_empty());
    assert_eq!(requeue(&h), Some(RESYNC_MS));
}

#[test]
fn enabled_starts_a_correction_with_the_ignore_rules_and_looks_again_soon() {
    let h = reconciled(host(drifting("enabled"), deployed(1, None)).with_drift(Ok(scaled())));
    let s = starts(&h);
    assert_eq!(s.len(), 1);
    let Step::CorrectDrift(ignore) = &s[0] else {
        panic!("a drift correction: {s:?}")
    };
    assert_eq!(ignore[0].paths, ["/spec/replicas"]);
    assert_eq!(requeue(&h), Some(PROGRESS_CHECK_MS));
    // No drift: the condition says so.
    let h = reconciled(host(drifting("enabled"), deployed(1, None)));
    assert_eq!(
        cond(&h, "Drifted"),
        expect(
            F,
            "NoDriftDetected",
            "the objects of Helm release \"podinfo\" match its manifest"
        )
    );
    assert!(starts(&h).is_empty());
}

#[test]
fn drift_is_only_looked_for_once_the_release_is_in_sync_and_a_failed_check_is_unknown() {
    let upgrading = host(
        drifting("enabled"),
        observation(Some(revision(1, "deployed", Some(OLDER))), None),
    );
    let h = reconciled(upgrading);
    assert!(h.requests().helm_drift_checks.is_empty());
    let h = reconciled(host(drifting("warn"), deployed(1, None)).with_drift(Err(
        HostError::Unavailable("the workload cluster did not answer".into()),
    )));
    assert_eq!(
        cond(&h, "Drifted"),
        expect(
            U,
            "DriftDetectionFailed",
            "the workload cluster did not answer"
        )
    );
    assert_eq!(cond(&h, "Ready").0, T);
}

#[test]
fn a_correction_outcome_is_announced_with_fluxs_reason_and_counts_as_no_failure() {
    let mut done = record("9-1", Action::Correct, 1, None, T1, "");
    done.digest.clear();
    let h = reconciled(host(drifting("enabled"), deployed(1, Some(done))));
    assert!(
        events(&h)
            .iter()
            .any(|(t, r, _)| *t == EventType::Normal && r == "DriftCorrected")
    );
    assert_eq!(status(&h)["failures"], 0);
}
