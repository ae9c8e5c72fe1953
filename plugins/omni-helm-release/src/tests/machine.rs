//! Flux helm-controller's release state machine (`machine`) through reconcile, one reconcile after another: the
//! status each commits is fed back with the next observation, as the host does. Install, upgrade, unlock,
//! remediation (rollback, uninstall) with its retries and stall, Flux's reset and force requests, Helm tests,
//! suspend, the failure counters, and the per-action settings of the steps sent.

use omni_plugin_sdk::helm::{
    ActionOptions, ApplyMethod, ApplyRequest, CrdPolicy, DeletionPropagation, RollbackRequest,
    TestFilter, TestRequest, UninstallRequest, WaitStrategy,
};

use super::*;
use crate::ledger::Ledger;
use crate::machine::{Move, Next, Situation};
use crate::policy::Policy;

/// One reconcile of `object` observing `observed` at `now`: the host after it, and the object as the host
/// leaves it for the next reconcile.
fn next(object: &Value, observed: Observation, now: &str) -> (MockHost, Value) {
    let rec = reconciled(host(object.clone(), observed).at(now));
    let after = committed(object.clone(), &rec);
    (rec, after)
}

/// [`release`] without `atomic` (Flux's remediation replaces it), with `spec` merged over its spec.
fn flux(spec: Value) -> Value {
    let mut object = set(release(), "spec.atomic", Value::Null);
    object["spec"]
        .as_object_mut()
        .unwrap()
        .extend(spec.as_object().cloned().unwrap());
    object
}

/// A revision with Helm's description of it.
fn rev(n: u64, status: &str, digest: Option<&str>, description: &str) -> Revision {
    Revision {
        description: description.into(),
        ..revision(n, status, digest)
    }
}

/// The release at `current` with the earlier revisions `history`, `last` our last action.
fn at(current: Revision, history: Vec<Revision>, last: StepRecord) -> Observation {
    with_history(observation(Some(current), Some(last)), history)
}

/// The status a successful install of an [`OLDER`] spec (generation 2) left; the object is at generation 3.
fn installed_before(object: Value) -> Value {
    set(
        object,
        "status",
        json!({"lastAttemptedReleaseAction": "install", "lastAttemptedConfigDigest": OLDER,
            "lastAttemptedGeneration": 2, "lastActionID": "i1", "lastAttemptTime": T1, "failures": 0,
            "installFailures": 0, "upgradeFailures": 0}),
    )
}

/// The release as [`installed_before`] left it.
fn installed_older() -> Observation {
    observation(
        Some(revision(1, "deployed", Some(OLDER))),
        Some(record("i1", Action::Install, 1, None, T1, OLDER)),
    )
}

/// The status after an upgrade of what is wanted was started.
fn upgrade_started(object: Value) -> Value {
    set(
        object,
        "status",
        json!({"lastAttemptedReleaseAction": "upgrade", "lastAttemptedConfigDigest": WANTED,
            "lastAttemptedGeneration": 3, "lastActionID": "i1", "lastAttemptTime": T1}),
    )
}

fn top_level_options() -> ActionOptions {
    ActionOptions {
        timeout_seconds: 90,
        wait: WaitStrategy::Ready,
        wait_for_jobs: true,
        disable_hooks: true,
    }
}

fn rollback_to(revision: u64) -> Step {
    Step::Rollback(RollbackRequest {
        revision,
        options: top_level_options(),
        force: false,
        cleanup_on_fail: false,
        max_history: 5,
        apply_method: ApplyMethod::Auto,
    })
}

fn counters(after: &Value) -> (i64, i64, i64) {
    let s = &after["status"];
    (
        s["failures"].as_i64().unwrap(),
        s["installFailures"].as_i64().unwrap(),
        s["upgradeFailures"].as_i64().unwrap(),
    )
}

fn reasons(host: &MockHost) -> Vec<String> {
    events(host)
        .into_iter()
        .map(|(_, reason, _)| reason)
        .collect()
}

fn is(host: &MockHost, action: Action) -> bool {
    matches!(starts(host).as_slice(), [step] if step.action() == action)
}

// ---- install, nothing, upgrade ----

#[test]
fn a_release_that_is_not_there_is_installed_and_the_attempt_recorded() {
    let (rec, after) = next(&release(), observation(None, None), NOW);
    assert!(is(&rec, Action::Install), "{:?}", starts(&rec));
    assert_eq!(
        cond(&rec, "Ready"),
        expect(
            U,
            "Progressing",
            "Helm install of release \"podinfo\" is running"
        )
    );
    assert_eq!(cond(&rec, "Released"), cond(&rec, "Ready"));
    assert_eq!(requeue(&rec), Some(PROGRESS_CHECK_MS));
    let s = &after["status"];
    assert_eq!(s["lastAttemptedReleaseAction"], "install");
    assert_eq!(s["lastAttemptedConfigDigest"], WANTED);
    assert_eq!(s["lastAttemptedGeneration"], 3);
    assert_eq!(counters(&after), (0, 0, 0));

    // The next reconcile sees it running: nothing else is started.
    let mut observed = observation(None, None);
    observed.running = Some(running("mock-1", Action::Install));
    let (rec, _) = next(&after, observed, NOW);
    assert!(starts(&rec).is_empty());
    assert_eq!(cond(&rec, "Ready").0, U);
}

#[test]
fn a_deployed_revision_of_the_wanted_digest_gets_no_action_as_go_compat_requires() {
    let (rec, after) = next(&installed_before(release()), deployed(2, None), NOW);
    assert!(starts(&rec).is_empty());
    assert_eq!(cond(&rec, "Ready").0, T);
    assert_eq!(requeue(&rec), Some(RESYNC_MS));
    // However often it is looked at.
    for minute in 3..6 {
        let (rec, _) = next(&after, deployed(2, None), &time(minute * 60));
        assert!(starts(&rec).is_empty());
    }
}

#[test]
fn a_revision_of_another_digest_or_made_by_someone_else_is_upgraded() {
    for digest in [Some(OLDER), None] {
        let observed = observation(Some(revision(1, "deployed", digest)), None);
        let (rec, after) = next(&installed_before(release()), observed, NOW);
        assert!(is(&rec, Action::Upgrade), "{digest:?}: {:?}", starts(&rec));
        assert_eq!(
            cond(&rec, "Ready"),
            expect(
                U,
                "Progressing",
                "Helm upgrade of release \"podinfo\" is running"
            )
        );
        assert_eq!(after["status"]["lastAttemptedReleaseAction"], "upgrade");
        assert_eq!(after["status"]["lastAttemptedConfigDigest"], WANTED);
        assert_eq!(after["status"]["lastAttemptedGeneration"], 3);
    }
}

// ---- pending revisions ----

#[test]
fn a_pending_revision_left_by_an_action_of_ours_is_unlocked() {
    let observed = observation(
        Some(revision(2, "pending-upgrade", Some(WANTED))),
        Some(record(
            "u1",
            Action::Upgrade,
            0,
            Some("operator restarted"),
            T1,
            WANTED,
        )),
    );
    let (rec, _) = next(&upgrade_started(release()), observed, NOW);
    assert_eq!(starts(&rec), [Step::Unlock]);
    assert_eq!(
        cond(&rec, "Ready"),
        expect(
            U,
            "Progressing",
            "Helm recover of release \"podinfo\" is running"
        )
    );
}

#[test]
fn a_pending_revision_of_someone_else_is_waited_for_until_its_timeout_and_grace_have_passed() {
    for status in ["pending-install", "pending-upgrade", "pending-rollback"] {
        // Updated at T1 (60 s); the longest action timeout is 90 s, plus 120 s of grace.
        let observed = observation(Some(revision(2, status, None)), None);
        let (rec, _) = next(&release(), observed.clone(), &time(60 + 210));
        assert!(starts(&rec).is_empty(), "{status}");
        let message = format!(
            "Helm release \"podinfo\" is {status} by an action this operator did not start; waiting for it to \
             finish or time out"
        );
        assert_eq!(cond(&rec, "Ready"), expect(U, "Progressing", &message));
        assert_eq!(requeue(&rec), Some(PROGRESS_CHECK_MS));
        let (rec, _) = next(&release(), observed, &time(60 + 211));
        assert_eq!(starts(&rec), [Step::Unlock], "{status}");
    }
    // A longer action timeout in the spec gives the other action longer.
    let object = set(release(), "spec.upgrade", json!({"timeout": "10m"}));
    let observed = observation(Some(revision(2, "pending-upgrade", None)), None);
    let (rec, _) = next(&object, observed.clone(), &time(60 + 211));
    assert!(starts(&rec).is_empty());
    let (rec, _) = next(&object, observed.clone(), &time(60 + 720));
    assert!(starts(&rec).is_empty());
    let (rec, _) = next(&object, observed, &time(60 + 721));
    assert_eq!(starts(&rec), [Step::Unlock]);
}

#[test]
fn without_a_clock_a_pending_revision_with_nothing_of_ours_running_is_taken_as_abandoned() {
    let observed = observation(Some(revision(2, "pending-upgrade", None)), None);
    let policy = Policy::of(&omni_api::OmniHelmReleaseSpec::default(), 300);
    let ledger = Ledger::default();
    let situation = |now| Situation {
        observed: &observed,
        ledger: &ledger,
        policy: &policy,
        timeout_seconds: 300,
        now,
        force: false,
    };
    let updated = omni_plugin_sdk::time::parse_rfc3339(T1).unwrap();
    assert_eq!(situation(None).next(), Next::Start(Move::Unlock));
    assert_eq!(
        situation(Some(updated + 420)).next(),
        Next::Pending(Action::Upgrade)
    );
    assert_eq!(
        situation(Some(updated + 421)).next(),
        Next::Start(Move::Unlock)
    );
}

#[test]
fn an_unlocked_revision_is_announced_and_then_upgraded_over() {
    let object = upgrade_started(release());
    let observed = observation(
        Some(rev(2, "failed", Some(WANTED), "marked failed")),
        Some(record("rc1", Action::Recover, 2, None, T2, "")),
    );
    let (rec, after) = next(&object, observed.clone(), NOW);
    assert_eq!(reasons(&rec), ["PendingRelease"]);
    assert!(starts(&rec).is_empty(), "the default retry waits 15 s");
    assert_eq!(requeue(&rec), Some(10_000));
    let (rec, _) = next(&after, observed, &time(135));
    assert!(is(&rec, Action::Upgrade));
}

// ---- remediation ----

#[test]
fn with_two_upgrade_retries_failed_upgrades_are_rolled_back_and_tried_again_until_the_retries_are_used_up()
 {
    let object = installed_before(flux(json!({"upgrade": {"remediation": {"retries": 2}}})));
    let error = |n: u64| format!("timed out waiting for the condition ({n})");

    // The spec changed: upgraded.
    let (rec, after) = next(&object, installed_older(), NOW);
    assert!(is(&rec, Action::Upgrade));

    let mut after = after;
    let mut history = vec![rev(1, "deployed", Some(OLDER), "Install complete")];
    let mut deployed_at = 1;
    let mut clock = 180;
    for attempt in 1..=3u64 {
        // The upgrade made a failed revision.
        let failed = deployed_at + 1;
        let observed = at(
            rev(failed, "failed", Some(WANTED), "Upgrade failed"),
            history.clone(),
            record(
                &format!("u{attempt}"),
                Action::Upgrade,
                0,
                Some(&error(attempt)),
                &time(clock),
                WANTED,
            ),
        );
        let (rec, next_object) = next(&after, observed, &time(clock + 1));
        after = next_object;
        assert_eq!(reasons(&rec), ["UpgradeFailed"], "attempt {attempt}");
        assert_eq!(
            counters(&after),
            (attempt as i64, 0, attempt as i64),
            "attempt {attempt}"
        );
        // Back to the newest deployed revision, the last failure included (Flux's default with retries).
        assert_eq!(
            starts(&rec),
            [rollback_to(deployed_at)],
            "attempt {attempt}"
        );
        assert_eq!(
            cond(&rec, "Ready"),
            expect(
                U,
                "Progressing",
                "Helm rollback of release \"podinfo\" is running"
            )
        );
        assert_eq!(
            after["status"]["lastError"],
            error(attempt).as_str(),
            "the failure is recorded while it is remediated"
        );
        clock += 60;

        // The rollback made a new deployed revision from the older spec.
        history[0].status = "superseded".into();
        history.insert(0, rev(failed, "failed", Some(WANTED), "Upgrade failed"));
        let rolled_back = failed + 1;
        let observed = at(
            rev(
                rolled_back,
                "deployed",
                Some(OLDER),
                &format!("Rollback to {deployed_at}"),
            ),
            history.clone(),
            record(
                &format!("r{attempt}"),
                Action::Rollback,
                rolled_back,
                None,
                &time(clock),
                "",
            ),
        );
        let (rec, next_object) = next(&after, observed.clone(), &time(clock + 1));
        after = next_object;
        assert_eq!(
            events(&rec),
            [(
                EventType::Normal,
                "RollbackSucceeded".into(),
                format!("rolled back Helm release \"podinfo\" (now revision {rolled_back})")
            )]
        );
        history.insert(
            0,
            rev(
                rolled_back,
                "deployed",
                Some(OLDER),
                &format!("Rollback to {deployed_at}"),
            ),
        );
        deployed_at = rolled_back;
        clock += 60;
        if attempt < 3 {
            assert!(is(&rec, Action::Upgrade), "attempt {attempt}: tried again");
            continue;
        }

        // The retries are used up: Flux's Stalled, and no more actions.
        assert!(starts(&rec).is_empty());
        let message = "Helm upgrade of release \"podinfo\" failed 3 times and its retries are used up: timed out \
                       waiting for the condition (3); change the spec, or annotate reconcile.fluxcd.io/resetAt (or \
                       forceAt) with the value of reconcile.fluxcd.io/requestedAt to try again";
        assert_eq!(cond(&rec, "Ready"), expect(F, "RetriesExceeded", message));
        assert_eq!(
            cond(&rec, "Released"),
            expect(F, "RetriesExceeded", message)
        );
        assert_eq!(cond(&rec, "Stalled"), expect(T, "RetriesExceeded", message));
        assert_eq!(after["status"]["lastError"], error(3).as_str());
        assert_eq!(requeue(&rec), Some(RESYNC_MS));
        // Looked at again later: still nothing.
        let (rec, again) = next(&after, observed, &time(clock + 600));
        assert!(starts(&rec).is_empty());
        assert!(events(&rec).is_empty());
        assert_eq!(again, after, "nothing new to write");
    }
}

/// The object and release after `with_two_upgrade_retries_…`: three failed upgrades, each rolled back,
/// revision 7 deployed from the older spec, stalled.
fn stalled() -> (Value, Observation) {
    let object = set(
        installed_before(flux(json!({"upgrade": {"remediation": {"retries": 2}}}))),
        "status",
        json!({"lastAttemptedReleaseAction": "upgrade", "lastAttemptedConfigDigest": WANTED,
            "lastAttemptedGeneration": 3, "lastActionID": "r3", "lastAttemptTime": T2, "failures": 3,
            "installFailures": 0, "upgradeFailures": 3, "lastError": "timed out"}),
    );
    let observed = at(
        rev(7, "deployed", Some(OLDER), "Rollback to 5"),
        vec![
            rev(6, "failed", Some(WANTED), "Upgrade failed"),
            rev(5, "superseded", Some(OLDER), "Rollback to 3"),
        ],
        record("r3", Action::Rollback, 7, None, T2, ""),
    );
    let (rec, after) = next(&object, observed.clone(), NOW);
    assert_eq!(cond(&rec, "Stalled").0, T, "the starting point is stalled");
    (after, observed)
}

fn annotate(object: &Value, annotations: Value) -> Value {
    set(object.clone(), "metadata.annotations", annotations)
}

#[test]
fn reset_at_equal_to_requested_at_clears_the_counters_and_the_upgrade_is_tried_again() {
    let (object, observed) = stalled();
    // resetAt without the same requestedAt is not a request.
    let not_yet = annotate(
        &object,
        json!({"reconcile.fluxcd.io/requestedAt": "b", "reconcile.fluxcd.io/resetAt": "a"}),
    );
    let (rec, after) = next(&not_yet, observed.clone(), NOW);
    assert!(starts(&rec).is_empty());
    assert_eq!(counters(&after), (3, 0, 3));
    assert_eq!(after["status"]["lastHandledReconcileAt"], "b");
    assert_eq!(cond(&rec, "Stalled").0, T);

    let reset = annotate(
        &object,
        json!({"reconcile.fluxcd.io/requestedAt": "c", "reconcile.fluxcd.io/resetAt": "c"}),
    );
    let (rec, after) = next(&reset, observed.clone(), NOW);
    assert!(is(&rec, Action::Upgrade), "{:?}", starts(&rec));
    assert_eq!(counters(&after), (0, 0, 0));
    assert_eq!(after["status"]["lastHandledResetAt"], "c");
    assert_eq!(after["status"]["lastHandledReconcileAt"], "c");
    assert_eq!(cond(&rec, "Ready").0, U);
    // kstatus reads Stalled=True as failed: it is cleared once it no longer holds.
    assert_eq!(cond(&rec, "Stalled").0, F);

    // The same request is handled once: failing again counts from zero, and is not reset again.
    let failed = at(
        rev(8, "failed", Some(WANTED), "Upgrade failed"),
        vec![rev(7, "deployed", Some(OLDER), "Rollback to 5")],
        record("u4", Action::Upgrade, 0, Some("boom"), &time(300), WANTED),
    );
    let (rec, after) = next(&after, failed, &time(301));
    assert_eq!(counters(&after), (1, 0, 1));
    assert_eq!(starts(&rec), [rollback_to(7)]);
}

#[test]
fn force_at_equal_to_requested_at_forces_one_upgrade_with_the_retries_used_up() {
    let (object, observed) = stalled();
    let forced = annotate(
        &object,
        json!({"reconcile.fluxcd.io/requestedAt": "f", "reconcile.fluxcd.io/forceAt": "f"}),
    );
    let (rec, after) = next(&forced, observed.clone(), NOW);
    assert!(is(&rec, Action::Upgrade), "{:?}", starts(&rec));
    assert_eq!(after["status"]["lastHandledForceAt"], "f");
    assert_eq!(after["status"]["lastHandledReconcileAt"], "f");
    assert_eq!(counters(&after), (3, 0, 3), "a force does not reset");

    // It fails: the failure is remediated (the last one is, by default) and the release stalls again; the force
    // is not repeated.
    let failed = at(
        rev(8, "failed", Some(WANTED), "Upgrade failed"),
        vec![rev(7, "deployed", Some(OLDER), "Rollback to 5")],
        record("u4", Action::Upgrade, 0, Some("boom"), &time(300), WANTED),
    );
    let (rec, after) = next(&after, failed, &time(301));
    assert_eq!(counters(&after), (4, 0, 4));
    assert_eq!(starts(&rec), [rollback_to(7)]);
    let rolled_back = at(
        rev(9, "deployed", Some(OLDER), "Rollback to 7"),
        vec![rev(8, "failed", Some(WANTED), "Upgrade failed")],
        record("r4", Action::Rollback, 9, None, &time(360), ""),
    );
    let (rec, after) = next(&after, rolled_back.clone(), &time(361));
    assert!(starts(&rec).is_empty());
    assert_eq!(cond(&rec, "Stalled").0, T);
    assert_eq!(
        cond(&rec, "Ready").2,
        "Helm upgrade of release \"podinfo\" failed 4 times and its retries are used up: boom; change the spec, \
         or annotate reconcile.fluxcd.io/resetAt (or forceAt) with the value of reconcile.fluxcd.io/requestedAt \
         to try again"
    );
    let (rec, _) = next(&after, rolled_back, &time(961));
    assert!(starts(&rec).is_empty(), "handled once");

    // A force on a release that is not there installs it.
    let forced = annotate(
        &release(),
        json!({"reconcile.fluxcd.io/requestedAt": "g", "reconcile.fluxcd.io/forceAt": "g"}),
    );
    let (rec, after) = next(&forced, observation(None, None), NOW);
    assert!(is(&rec, Action::Install));
    assert_eq!(after["status"]["lastHandledForceAt"], "g");
}

#[test]
fn a_failed_remediation_stalls_the_release() {
    let object = set(
        upgrade_started(flux(json!({"upgrade": {"remediation": {"retries": 2}}}))),
        "status.lastActionID",
        json!("u1"),
    );
    let object = set(
        set(object, "status.failures", json!(1)),
        "status.upgradeFailures",
        json!(1),
    );
    let observed = at(
        rev(3, "failed", Some(OLDER), "Rollback \"podinfo\" failed"),
        vec![
            rev(2, "failed", Some(WANTED), "Upgrade failed"),
            rev(1, "superseded", Some(OLDER), "Install complete"),
        ],
        record("r1", Action::Rollback, 0, Some("timed out"), T2, ""),
    );
    let (rec, after) = next(&object, observed, NOW);
    assert!(starts(&rec).is_empty());
    assert_eq!(reasons(&rec), ["RollbackFailed"]);
    assert_eq!(counters(&after), (2, 0, 1), "a failed remediation counts");
    let message = "remediation of Helm release \"podinfo\" failed: Helm rollback failed: timed out; change the \
                   spec, or annotate reconcile.fluxcd.io/forceAt with the value of \
                   reconcile.fluxcd.io/requestedAt to try again";
    assert_eq!(cond(&rec, "Ready"), expect(F, "RetriesExceeded", message));
    assert_eq!(cond(&rec, "Stalled"), expect(T, "RetriesExceeded", message));
    assert_eq!(after["status"]["lastError"], "timed out");
}

#[test]
fn a_failed_install_is_remediated_by_uninstalling_and_installed_again() {
    let object = flux(json!({
        "install": {"remediation": {"retries": 1}},
        "uninstall": {"keepHistory": true, "deletionPropagation": "foreground", "timeout": "1m"},
    }));
    let (rec, after) = next(&object, observation(None, None), NOW);
    assert!(is(&rec, Action::Install));

    let failed = |id: &str, finished: &str| {
        observation(
            Some(rev(1, "failed", Some(WANTED), "Release \"podinfo\" failed")),
            Some(record(
                id,
                Action::Install,
                0,
                Some("image pull backoff"),
                finished,
                WANTED,
            )),
        )
    };
    let (rec, after) = next(&after, failed("i1", &time(180)), &time(181));
    assert_eq!(reasons(&rec), ["InstallFailed"]);
    assert_eq!(counters(&after), (1, 1, 0));
    assert_eq!(
        starts(&rec),
        [Step::Uninstall(UninstallRequest {
            options: ActionOptions {
                timeout_seconds: 60,
                ..top_level_options()
            },
            keep_history: true,
            propagation: DeletionPropagation::Foreground,
        })],
        "the uninstall block's settings"
    );

    // Uninstalled (history kept): installed again.
    let uninstalled = observation(
        Some(rev(
            1,
            "uninstalled",
            Some(WANTED),
            "Uninstallation complete",
        )),
        Some(record("un1", Action::Uninstall, 1, None, &time(240), "")),
    );
    let (rec, after) = next(&after, uninstalled, &time(241));
    assert_eq!(reasons(&rec), ["UninstallSucceeded"]);
    assert!(is(&rec, Action::Install), "{:?}", starts(&rec));

    // The second failure uses up the one retry; an install's last failure is not remediated by default.
    let (rec, after) = next(&after, failed("i2", &time(300)), &time(301));
    assert_eq!(counters(&after), (2, 2, 0));
    assert!(starts(&rec).is_empty());
    let message = "Helm install of release \"podinfo\" failed 2 times and its retries are used up: image pull \
                   backoff; change the spec, or annotate reconcile.fluxcd.io/resetAt (or forceAt) with the value of \
                   reconcile.fluxcd.io/requestedAt to try again";
    assert_eq!(cond(&rec, "Ready"), expect(F, "RetriesExceeded", message));
    assert_eq!(cond(&rec, "Stalled").0, T);

    // Asked to, the last failure is uninstalled too before the release stalls.
    let object = set(
        flux(json!({"install": {"remediation": {"retries": 1, "remediateLastFailure": true}}})),
        "status",
        json!({"lastAttemptedReleaseAction": "install", "lastAttemptedConfigDigest": WANTED,
            "lastAttemptedGeneration": 3, "lastActionID": "un1", "failures": 1, "installFailures": 1,
            "upgradeFailures": 0}),
    );
    let (rec, after) = next(&object, failed("i2", &time(300)), &time(301));
    assert_eq!(counters(&after), (2, 2, 0));
    assert!(is(&rec, Action::Uninstall), "{:?}", starts(&rec));
    let (rec, _) = next(
        &after,
        observation(
            None,
            Some(record("un2", Action::Uninstall, 1, None, &time(360), "")),
        ),
        &time(361),
    );
    assert!(starts(&rec).is_empty());
    assert_eq!(cond(&rec, "Stalled").0, T);
}

#[test]
fn the_uninstall_strategy_remediates_a_failed_upgrade_by_uninstalling_and_installing_again() {
    let object = upgrade_started(flux(json!({
        "upgrade": {"remediation": {"retries": 1, "strategy": "uninstall"}},
    })));
    let failed = at(
        rev(2, "failed", Some(WANTED), "Upgrade failed"),
        vec![rev(1, "deployed", Some(OLDER), "Install complete")],
        record("u1", Action::Upgrade, 0, Some("boom"), &time(180), WANTED),
    );
    let (rec, after) = next(&object, failed, &time(181));
    assert!(
        is(&rec, Action::Uninstall),
        "not a rollback: {:?}",
        starts(&rec)
    );
    let gone = observation(
        None,
        Some(record("un1", Action::Uninstall, 2, None, &time(240), "")),
    );
    let (rec, after) = next(&after, gone, &time(241));
    assert!(is(&rec, Action::Install), "{:?}", starts(&rec));
    assert_eq!(after["status"]["lastAttemptedReleaseAction"], "install");
    assert_eq!(counters(&after), (1, 0, 1));
}

#[test]
fn retry_on_failure_waits_its_retry_interval_and_never_remediates_or_stalls() {
    let object = upgrade_started(flux(json!({
        "upgrade": {
            "strategy": {"name": "RetryOnFailure", "retryInterval": "90s"},
            "remediation": {"retries": 0},
        },
    })));
    let failed = at(
        rev(2, "failed", Some(WANTED), "Upgrade failed"),
        vec![rev(1, "deployed", Some(OLDER), "Install complete")],
        record("u1", Action::Upgrade, 0, Some("boom"), T2, WANTED),
    );
    let (rec, after) = next(&object, failed.clone(), &time(150));
    assert!(starts(&rec).is_empty());
    assert_eq!(requeue(&rec), Some(60_000));
    assert_eq!(
        cond(&rec, "Ready"),
        expect(
            F,
            "ReconcileFailed",
            "Helm upgrade failed for release \"podinfo\": boom"
        )
    );
    let (rec, _) = next(&after, failed.clone(), &time(210));
    assert!(is(&rec, Action::Upgrade), "{:?}", starts(&rec));
    // However many failures: the same interval, never stalled.
    let many = set(
        set(after, "status.failures", json!(40)),
        "status.upgradeFailures",
        json!(40),
    );
    let (rec, _) = next(&many, failed.clone(), &time(150));
    assert_eq!(requeue(&rec), Some(60_000));
    assert!(rec.condition("Stalled").is_none());

    // A failed install that left nothing waits its interval too; under a second is a second.
    let object = set(
        flux(
            json!({"install": {"strategy": {"name": "RetryOnFailure", "retryInterval": "500ms"}}}),
        ),
        "status",
        json!({"lastAttemptedReleaseAction": "install", "lastAttemptedConfigDigest": WANTED,
            "lastAttemptedGeneration": 3}),
    );
    let nothing = observation(
        None,
        Some(record("i1", Action::Install, 0, Some("boom"), T2, WANTED)),
    );
    let (rec, _) = next(&object, nothing, T2);
    assert!(starts(&rec).is_empty());
    assert_eq!(requeue(&rec), Some(1_000));
}

#[test]
fn the_default_retry_upgrades_over_a_failed_revision_and_never_stalls() {
    let object = upgrade_started(release());
    let object = set(
        set(object, "status.failures", json!(25)),
        "status.upgradeFailures",
        json!(25),
    );
    let object = set(object, "status.lastActionID", json!("u25"));
    let object = set(object, "status.lastAttemptTime", json!(T2));
    let failed = at(
        rev(2, "failed", Some(WANTED), "Upgrade failed"),
        vec![rev(1, "deployed", Some(OLDER), "Install complete")],
        record("u25", Action::Upgrade, 0, Some("boom"), T2, WANTED),
    );
    let (rec, _) = next(&object, failed.clone(), &time(120 + 599));
    assert_eq!(requeue(&rec), Some(1_000), "10 minutes at most");
    let (rec, _) = next(&object, failed, &time(120 + 600));
    assert!(is(&rec, Action::Upgrade), "{:?}", starts(&rec));
    assert!(rec.condition("Stalled").is_none());
}

// ---- tests ----

fn tests_on(more: Value) -> Value {
    let mut test = json!({"enable": true, "timeout": "2m",
        "filters": [{"name": "smoke"}, {"name": "slow", "exclude": true}]});
    test.as_object_mut()
        .unwrap()
        .extend(more.as_object().cloned().unwrap());
    test
}

#[test]
fn with_tests_enabled_a_wanted_revision_not_yet_tested_is_tested_with_the_filters() {
    let object = upgrade_started(flux(json!({"test": tests_on(json!({}))})));
    let upgraded = with_tests(
        deployed(2, Some(record("u1", Action::Upgrade, 2, None, T2, WANTED))),
        &[("smoke", "Unknown"), ("slow", "Unknown")],
    );
    let (rec, after) = next(&object, upgraded, NOW);
    assert_eq!(reasons(&rec), ["UpgradeSucceeded"]);
    assert_eq!(
        starts(&rec),
        [Step::Test(TestRequest {
            timeout_seconds: 120,
            filters: vec![
                TestFilter {
                    name: "smoke".into(),
                    exclude: false
                },
                TestFilter {
                    name: "slow".into(),
                    exclude: true
                },
            ],
        })]
    );
    assert_eq!(
        cond(&rec, "Ready"),
        expect(
            U,
            "Progressing",
            "Helm test of release \"podinfo\" is running"
        )
    );
    assert!(rec.condition("TestSuccess").is_none(), "not tested yet");
    assert_eq!(
        after["status"]["lastSuccessTime"], T2,
        "the upgrade that made the revision succeeded"
    );

    // The selected test passed (the excluded one never runs): released.
    let tested = with_tests(
        deployed(2, Some(record("t1", Action::Test, 2, None, &time(180), ""))),
        &[("smoke", "Succeeded"), ("slow", "Unknown")],
    );
    let (rec, after) = next(&after, tested.clone(), &time(181));
    assert!(starts(&rec).is_empty());
    assert_eq!(
        events(&rec),
        [(
            EventType::Normal,
            "TestSucceeded".into(),
            "Helm tests passed for release \"podinfo\" revision 2".into()
        )]
    );
    assert_eq!(
        cond(&rec, "TestSuccess"),
        expect(
            T,
            "TestSucceeded",
            "Helm tests passed for release \"podinfo\" revision 2"
        )
    );
    assert_eq!(
        cond(&rec, "Ready"),
        expect(
            T,
            "HelmUpgraded",
            "upgraded Helm release \"podinfo\" to revision 2"
        )
    );
    assert_eq!(after["status"]["lastSuccessTime"], T2);
    let (rec, _) = next(&after, tested, &time(600));
    assert!(starts(&rec).is_empty(), "tested once");
}

/// A test step of ours failed on revision 2, made by an upgrade of ours over revision 1.
fn tests_failed(hooks: &[(&str, &str)]) -> Observation {
    with_tests(
        at(
            revision(2, "deployed", Some(WANTED)),
            vec![revision(1, "superseded", Some(OLDER))],
            record("t1", Action::Test, 0, Some("1 test failed: smoke"), T2, ""),
        ),
        hooks,
    )
}

#[test]
fn failed_test_hooks_count_as_a_failure_and_trigger_remediation() {
    let object = upgrade_started(flux(json!({
        "test": tests_on(json!({})),
        "upgrade": {"remediation": {"retries": 1}},
    })));
    let (rec, after) = next(&object, tests_failed(&[("smoke", "Failed")]), NOW);
    assert_eq!(counters(&after), (1, 0, 1));
    assert_eq!(
        events(&rec),
        [(
            EventType::Warning,
            "TestFailed".into(),
            "Helm test failed for release \"podinfo\": 1 test failed: smoke".into()
        )]
    );
    assert_eq!(
        cond(&rec, "TestSuccess"),
        expect(
            F,
            "TestFailed",
            "Helm tests failed for release \"podinfo\": smoke"
        )
    );
    assert_eq!(starts(&rec), [rollback_to(1)]);

    // A test step that failed before any hook ran is a failed test as well, not one to run again.
    let (rec, after) = next(&object, tests_failed(&[("smoke", "Unknown")]), NOW);
    assert_eq!(counters(&after), (1, 0, 1));
    assert_eq!(starts(&rec), [rollback_to(1)]);
    assert_eq!(
        cond(&rec, "TestSuccess"),
        expect(F, "TestFailed", "Helm tests failed for release \"podinfo\"")
    );

    // A failed hook that the filters exclude is not a failure.
    let (rec, after) = next(
        &object,
        with_tests(
            deployed(2, Some(record("t2", Action::Test, 2, None, T2, ""))),
            &[("smoke", "Succeeded"), ("slow", "Failed")],
        ),
        NOW,
    );
    assert!(starts(&rec).is_empty());
    assert_eq!(counters(&after), (0, 0, 0));
    assert_eq!(cond(&rec, "TestSuccess").0, T);
    assert_eq!(cond(&rec, "Ready").0, T);
}

#[test]
fn failed_tests_do_not_count_when_the_spec_ignores_them() {
    for spec in [
        json!({"test": tests_on(json!({"ignoreFailures": true})), "upgrade": {"remediation": {"retries": 1}}}),
        json!({"test": tests_on(json!({})), "upgrade": {"remediation": {"retries": 1, "ignoreTestFailures": true}}}),
    ] {
        let object = upgrade_started(flux(spec.clone()));
        for hooks in [[("smoke", "Failed")], [("smoke", "Unknown")]] {
            let (rec, after) = next(&object, tests_failed(&hooks), NOW);
            assert!(starts(&rec).is_empty(), "{spec}: {hooks:?}");
            assert_eq!(counters(&after), (0, 0, 0), "{spec}");
            assert_eq!(reasons(&rec), ["TestFailed"], "reported all the same");
            assert_eq!(cond(&rec, "TestSuccess").0, F, "{spec}");
            assert_eq!(
                cond(&rec, "Ready"),
                expect(
                    T,
                    "HelmUpgraded",
                    "upgraded Helm release \"podinfo\" to revision 2"
                ),
                "{spec}"
            );
        }
    }
    // The install's ignoreTestFailures covers tests after an install only.
    let spec = json!({"test": tests_on(json!({})),
        "install": {"remediation": {"retries": 1, "ignoreTestFailures": true}},
        "upgrade": {"remediation": {"retries": 1}}});
    let (_, after) = next(
        &upgrade_started(flux(spec)),
        tests_failed(&[("smoke", "Failed")]),
        NOW,
    );
    assert_eq!(counters(&after), (1, 0, 1));
}

#[test]
fn without_tests_enabled_no_test_runs_and_no_test_condition_is_set() {
    let observed = with_tests(deployed(2, None), &[("smoke", "Unknown")]);
    let (rec, _) = next(&release(), observed, NOW);
    assert!(starts(&rec).is_empty());
    assert!(rec.condition("TestSuccess").is_none());
    let object = flux(json!({"test": {"enable": false}}));
    let (rec, _) = next(
        &object,
        with_tests(deployed(2, None), &[("smoke", "Failed")]),
        NOW,
    );
    assert!(starts(&rec).is_empty());
    assert!(rec.condition("TestSuccess").is_none());
    assert_eq!(cond(&rec, "Ready").0, T);
}

// ---- suspend ----

#[test]
fn a_suspended_release_gets_no_helm_call_and_its_status_is_left_as_it_is() {
    let (object, observed) = stalled();
    let object = set(object, "spec.suspend", json!(true));
    let rec = reconciled(host(object, observed));
    let requests = rec.requests();
    assert!(requests.helm_observes.is_empty() && requests.helm_starts.is_empty());
    let outputs = rec.outputs();
    assert!(outputs.status.is_empty() && outputs.conditions.is_empty());
    assert_eq!(outputs.requeue_after, None);
    assert!(outputs.events.is_empty());
    assert_eq!(outputs.logs.len(), 1, "the suspension is logged");
    // suspend: false is not suspended.
    let rec = reconciled(host(
        set(release(), "spec.suspend", json!(false)),
        observation(None, None),
    ));
    assert!(is(&rec, Action::Install));
}

// ---- the counters ----

#[test]
fn an_outcome_is_counted_once_however_many_reconciles_see_it() {
    let object = upgrade_started(release());
    let failed = at(
        rev(2, "failed", Some(WANTED), "Upgrade failed"),
        vec![rev(1, "deployed", Some(OLDER), "Install complete")],
        record("u1", Action::Upgrade, 0, Some("boom"), T2, WANTED),
    );
    let (rec, after) = next(&object, failed.clone(), NOW);
    assert_eq!(counters(&after), (1, 0, 1));
    assert_eq!(reasons(&rec), ["UpgradeFailed"]);
    let mut now = after;
    for second in [6, 7, 8] {
        let (rec, after) = next(&now, failed.clone(), &time(120 + second));
        assert_eq!(counters(&after), (1, 0, 1));
        assert!(events(&rec).is_empty());
        now = after;
    }
}

#[test]
fn the_counters_reset_when_the_config_digest_or_the_generation_changes() {
    // The chart or values changed: the host's digest of what is wanted differs from the last attempt's.
    let (object, mut observed) = stalled();
    observed.wanted = "d-newest".into();
    let (rec, after) = next(&object, observed, NOW);
    assert!(is(&rec, Action::Upgrade), "{:?}", starts(&rec));
    assert_eq!(counters(&after), (0, 0, 0));
    assert_eq!(after["status"]["lastAttemptedConfigDigest"], "d-newest");
    assert_eq!(cond(&rec, "Stalled").0, F);

    // Any other spec change (a new generation) with the same digest.
    let (object, observed) = stalled();
    let object = set(object, "metadata.generation", json!(4));
    let (rec, after) = next(&object, observed, NOW);
    assert!(is(&rec, Action::Upgrade), "{:?}", starts(&rec));
    assert_eq!(counters(&after), (0, 0, 0));
    assert_eq!(after["status"]["lastAttemptedGeneration"], 4);

    // Neither changed: still stalled.
    let (object, observed) = stalled();
    let (rec, after) = next(&object, observed, NOW);
    assert!(starts(&rec).is_empty());
    assert_eq!(counters(&after), (3, 0, 3));
}

// ---- the settings of the steps sent ----

#[test]
fn per_action_blocks_override_the_top_level_settings_in_the_steps_sent() {
    let object = set(
        release(),
        "spec.install",
        json!({"timeout": "2m", "disableWait": true, "disableWaitForJobs": true, "disableHooks": false,
            "crds": "CreateReplace", "createNamespace": false, "replace": true, "serverSideApply": false,
            "disableTakeOwnership": false, "disableSchemaValidation": true}),
    );
    let object = set(
        object,
        "spec.upgrade",
        json!({"timeout": "3m", "disableHooks": false, "crds": "Create", "force": true, "cleanupOnFail": false,
            "remediation": {"retries": 1}, "disableOpenAPIValidation": true, "disableTakeOwnership": true,
            "preserveValues": true}),
    );
    let object = set(
        object,
        "spec.rollback",
        json!({"timeout": "4m", "disableWait": true, "force": true, "cleanupOnFail": true,
            "serverSideApply": "disabled", "recreate": true}),
    );
    let source = |rec: &MockHost| rec.requests().helm_observes[0].1.clone().unwrap();

    let (rec, _) = next(&object, observation(None, None), NOW);
    assert_eq!(
        starts(&rec),
        [Step::Install(Box::new(ApplyRequest {
            source: source(&rec),
            options: ActionOptions {
                timeout_seconds: 120,
                wait: WaitStrategy::Hooks,
                wait_for_jobs: false,
                disable_hooks: false,
            },
            crds: CrdPolicy::CreateReplace,
            create_namespace: false,
            replace: true,
            force: false,
            cleanup_on_fail: false,
            // The Go operator's atomic stays the default of both.
            rollback_on_failure: true,
            max_history: 5,
            apply_method: ApplyMethod::ClientSide,
            take_ownership: true,
            skip_schema_validation: true,
            skip_openapi_validation: false,
            reuse_values: false,
            health_checks: Vec::new(),
        }))]
    );

    let (rec, _) = next(&installed_before(object.clone()), installed_older(), NOW);
    assert_eq!(
        starts(&rec),
        [Step::Upgrade(Box::new(ApplyRequest {
            source: source(&rec),
            options: ActionOptions {
                timeout_seconds: 180,
                wait: WaitStrategy::Ready,
                wait_for_jobs: true,
                disable_hooks: false,
            },
            crds: CrdPolicy::Create,
            create_namespace: false,
            replace: false,
            force: true,
            cleanup_on_fail: false,
            rollback_on_failure: true,
            max_history: 5,
            apply_method: ApplyMethod::Auto,
            take_ownership: false,
            skip_schema_validation: false,
            skip_openapi_validation: true,
            reuse_values: true,
            health_checks: Vec::new(),
        }))]
    );

    let failed = at(
        rev(2, "failed", Some(WANTED), "Upgrade failed"),
        vec![rev(1, "deployed", Some(OLDER), "Install complete")],
        record("u1", Action::Upgrade, 0, Some("boom"), T2, WANTED),
    );
    let (rec, _) = next(&upgrade_started(object), failed, NOW);
    assert_eq!(
        starts(&rec),
        [Step::Rollback(RollbackRequest {
            revision: 1,
            options: ActionOptions {
                timeout_seconds: 240,
                wait: WaitStrategy::Hooks,
                wait_for_jobs: true,
                disable_hooks: true,
            },
            force: true,
            cleanup_on_fail: true,
            max_history: 5,
            apply_method: ApplyMethod::ClientSide,
        })]
    );
}

#[test]
fn action_blocks_can_turn_waiting_on_where_the_top_level_leaves_it_off() {
    let object = set(
        minimal(),
        "spec.install",
        json!({"disableWait": false, "disableWaitForJobs": false, "disableHooks": true, "createNamespace": true,
            "crds": "Skip"}),
    );
    let (rec, _) = next(&object, observation(None, None), NOW);
    let started = starts(&rec);
    let [Step::Install(install)] = started.as_slice() else {
        panic!("{started:?}")
    };
    assert_eq!(
        install.options,
        ActionOptions {
            timeout_seconds: 300,
            wait: WaitStrategy::Ready,
            wait_for_jobs: true,
            disable_hooks: true,
        }
    );
    assert_eq!(install.crds, CrdPolicy::Skip);
    assert!(install.create_namespace);
    assert!(!install.rollback_on_failure);
}

#[test]
fn the_interval_is_the_requeue_of_a_release_in_sync_and_of_a_stalled_one() {
    let object = set(release(), "spec.interval", json!("1m"));
    let (rec, _) = next(&object, deployed(1, None), NOW);
    assert_eq!(requeue(&rec), Some(60_000));
    let (object, observed) = stalled();
    let (rec, _) = next(&set(object, "spec.interval", json!("90s")), observed, NOW);
    assert!(starts(&rec).is_empty());
    assert_eq!(requeue(&rec), Some(90_000));
}

// ---- cancelling an action a newer spec made obsolete ----

/// An upgrade that runs for an older spec is cancelled (its id sent to the host) and reported as being cancelled;
/// one that runs for what is wanted is left to finish; rollbacks are never cancelled.
#[test]
fn an_install_or_upgrade_for_an_older_spec_is_cancelled() {
    let cancels = |rec: &MockHost| rec.requests().helm_cancels;
    let mut obsolete = deployed(1, None);
    obsolete.running = Some(StepRecord {
        digest: OLDER.into(),
        ..running("u2", Action::Upgrade)
    });
    let (rec, after) = next(&release(), obsolete, NOW);
    let cancelled: Vec<(String, String)> = cancels(&rec)
        .into_iter()
        .map(|(r, id)| (format!("{}/{}", r.namespace, r.name), id))
        .collect();
    assert_eq!(cancelled, [("apps/podinfo".to_string(), "u2".to_string())]);
    assert_eq!(
        cond(&rec, "Ready"),
        expect(
            U,
            "Progressing",
            "Helm upgrade of release \"podinfo\" is being cancelled: the chart or values changed while it ran"
        )
    );
    assert!(starts(&rec).is_empty(), "nothing starts while it stops");
    assert_eq!(counters(&after), (0, 0, 0));

    let mut current = deployed(1, None);
    current.running = Some(running("u2", Action::Upgrade));
    let (rec, _) = next(&release(), current, NOW);
    assert!(
        cancels(&rec).is_empty(),
        "the action for what is wanted runs on"
    );

    let mut rollback = deployed(1, None);
    rollback.running = Some(StepRecord {
        digest: OLDER.into(),
        ..running("r3", Action::Rollback)
    });
    let (rec, _) = next(&release(), rollback, NOW);
    assert!(cancels(&rec).is_empty(), "a rollback runs to its end");
}

/// A cancelled upgrade leaves its revision failed: that is no failure of the release. It is announced as
/// cancelled (not failed), counts nothing, sets no lastError, and the new spec is upgraded to at once, even
/// where remediation would have rolled a real failure back.
#[test]
fn a_cancelled_upgrade_counts_no_failure_and_the_new_spec_goes_ahead() {
    let object = flux(json!({"upgrade": {"remediation": {"retries": 3}}}));
    let mut last = record(
        "u2",
        Action::Upgrade,
        2,
        Some("context canceled"),
        T2,
        OLDER,
    );
    last.cancelled = true;
    let cancelled = at(
        rev(
            2,
            "failed",
            Some(OLDER),
            "Upgrade \"podinfo\" failed: context canceled",
        ),
        vec![rev(1, "deployed", Some(OLDER), "Install complete")],
        last,
    );
    let (rec, after) = next(&installed_before(object), cancelled, NOW);
    assert!(
        matches!(starts(&rec).as_slice(), [Step::Upgrade(_)]),
        "{:?}",
        starts(&rec)
    );
    assert_eq!(counters(&after), (0, 0, 0));
    assert_eq!(after["status"]["lastError"], Value::Null);
    let reasons: Vec<String> = events(&rec).into_iter().map(|(_, r, _)| r).collect();
    assert!(
        reasons.contains(&"UpgradeCancelled".to_string()),
        "{reasons:?}"
    );
    assert!(
        !reasons.contains(&"UpgradeFailed".to_string()),
        "{reasons:?}"
    );
}
