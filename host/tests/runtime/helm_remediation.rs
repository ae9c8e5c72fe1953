//! OmniHelmRelease's Flux-grade release handling end to end (issue "OmniHelmRelease, Flux-grade"): remediation by
//! rollback and by uninstall with retry budgets, `Stalled` when they are used up and Flux's `resetAt` request to
//! try again; Helm tests after installs and upgrades, with results in status; `suspend`; Flux's Event reasons.
//! Through the real host, the built-in plugin's component, the Helm worker with libhelm_c and the simulators
//! ([`Env`]). Failures are real: a Deployment whose image never becomes ready makes Helm's wait time out, and a
//! test Pod with kube-sim's `fail` behaviour fails.

use serde_json::{Value, json};

use super::helm_env::{Env, NEVER_READY, is, merge, message};

fn count(events: &[(String, String, String)], reason: &str) -> usize {
    events.iter().filter(|(_, r, _)| r == reason).count()
}

fn int(obj: &Value, field: &str) -> i64 {
    obj["status"][field].as_i64().unwrap_or(-1)
}

/// A failed upgrade is rolled back and retried while `upgrade.remediation.retries` lasts; the failure that uses
/// them up is rolled back too (Flux's default for upgrades with retries), then the release stalls: `Stalled=True`,
/// `Ready=False` with `RetriesExceeded`, no more actions. `reconcile.fluxcd.io/resetAt` (equal to `requestedAt`)
/// clears the counters and the whole round runs again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_upgrades_are_rolled_back_until_the_retries_are_used_up_and_reset_starts_over() {
    let env = Env::start().await;
    env.apply(&env.release(
        "remedy",
        json!({"wait": true, "timeout": "8s", "upgrade": {"remediation": {"retries": 1}}}),
    ))
    .await;
    env.wait("remedy", "installed", |o| {
        is(o, "Ready", "True", "HelmInstalled")
    })
    .await;
    env.patch_spec(
        "remedy",
        json!({"chart": {"values": {"image": {"repository": NEVER_READY}}}}),
    )
    .await;

    // Upgrade (2, failed), rollback (3), upgrade (4, failed), rollback of the last failure (5): stalled.
    let stalled = env
        .wait("remedy", "stalled with the retries used up", |o| {
            is(o, "Stalled", "True", "RetriesExceeded")
        })
        .await;
    assert!(
        is(&stalled, "Ready", "False", "RetriesExceeded"),
        "{stalled:#}"
    );
    // Flux's Remediated: the last failure was rolled back.
    assert!(
        is(&stalled, "Remediated", "True", "RollbackSucceeded"),
        "{stalled:#}"
    );
    let text = message(&stalled, "Ready");
    assert!(
        text.starts_with(
            "Helm upgrade of release \"remedy\" failed 2 times and its retries are used up: "
        ),
        "{text}"
    );
    assert!(text.contains("reconcile.fluxcd.io/resetAt"), "{text}");
    assert_eq!(int(&stalled, "upgradeFailures"), 2, "{stalled:#}");
    assert_eq!(int(&stalled, "failures"), 2, "{stalled:#}");
    assert_eq!(stalled["status"]["lastAttemptedReleaseAction"], "upgrade");
    // Helm marks the revisions a rollback leaves behind superseded, the failed ones too.
    let revisions = env.revisions("remedy");
    assert_eq!(revisions.len(), 5, "{revisions:?}");
    assert_eq!(revisions[4].1["metadata"]["labels"]["status"], "deployed");
    // The last rollback left the first revision's config deployed.
    let deployment = env
        .workload
        .get("apps/v1", "Deployment", "apps", "remedy-demo")
        .expect("the Deployment");
    let image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or_default();
    assert!(!image.starts_with(NEVER_READY), "{image}");
    // status.history: newest first, the current revision with its chart.
    let history = stalled["status"]["history"].as_array().expect("history");
    assert_eq!(history[0]["version"], 5);
    assert_eq!(history[0]["status"], "deployed");
    assert_eq!(history[0]["chartName"], "demo");
    assert_eq!(history[1]["version"], 4);
    // One Event per outcome, with Flux's reasons.
    let events = env.events("remedy");
    assert_eq!(count(&events, "InstallSucceeded"), 1, "{events:?}");
    assert!(count(&events, "UpgradeFailed") >= 1, "{events:?}");
    assert!(count(&events, "RollbackSucceeded") >= 1, "{events:?}");
    assert!(events.iter().any(|(t, r, n)| t == "Warning"
        && r == "UpgradeFailed"
        && n.starts_with("Helm upgrade failed for release \"remedy\": ")));

    // Reset: the counters clear and the round runs again, from revision 6 to 9.
    env.annotate(
        "remedy",
        json!({"reconcile.fluxcd.io/requestedAt": "r1", "reconcile.fluxcd.io/resetAt": "r1"}),
    )
    .await;
    let again = env
        .wait(
            "remedy",
            "the reset handled and the retries used up again",
            |o| {
                o["status"]["lastHandledResetAt"] == "r1"
                    && is(o, "Stalled", "True", "RetriesExceeded")
                    && o["status"]["releaseRevision"] == 9
            },
        )
        .await;
    assert_eq!(int(&again, "upgradeFailures"), 2, "{again:#}");
    assert_eq!(env.revisions("remedy").len(), 9);

    // Fixing the spec clears Stalled.
    env.patch_spec("remedy", json!({"chart": {"values": {"image": null}}}))
        .await;
    let fixed = env
        .wait("remedy", "upgraded after the fix", |o| {
            is(o, "Ready", "True", "HelmUpgraded")
        })
        .await;
    assert!(is(&fixed, "Stalled", "False", "HelmUpgraded"), "{fixed:#}");
    assert!(
        is(&fixed, "Remediated", "False", "HelmUpgraded"),
        "a release ready again ends the remediation: {fixed:#}"
    );
    assert_eq!(int(&fixed, "failures"), 0, "{fixed:#}");
}

/// Helm tests run after the install when `test.enable` is set; results are in `status.history[0].testHooks` and
/// the `TestSuccess` condition. A failing test counts as a failure of the install: with
/// `install.remediation.retries: 1` and `remediateLastFailure`, the release is uninstalled, installed again,
/// tested again, uninstalled again, and stalls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_tests_run_after_installs_and_a_failing_one_is_remediated_by_uninstalling() {
    let env = Env::start().await;
    let tested = |behaviour: &str, more: Value| {
        let mut spec = json!({"chart": {"chart": "tested", "version": "1.0.0",
                "values": {"testBehavior": behaviour}},
            "test": {"enable": true, "timeout": "60s"}});
        merge(&mut spec, more);
        spec
    };
    env.apply(&env.release("passes", tested("ready", json!({}))))
        .await;
    env.apply(&env.release(
        "fails",
        tested(
            "fail",
            json!({"install": {"remediation": {"retries": 1, "remediateLastFailure": true}}}),
        ),
    ))
    .await;

    let passed = env
        .wait("passes", "tested", |o| {
            is(o, "TestSuccess", "True", "TestSucceeded")
        })
        .await;
    assert!(is(&passed, "Ready", "True", "HelmInstalled"), "{passed:#}");
    let hooks = &passed["status"]["history"][0]["testHooks"];
    assert_eq!(
        hooks["passes-tested-test-connection"]["phase"], "Succeeded",
        "{passed:#}"
    );
    assert!(hooks["passes-tested-test-connection"]["lastCompleted"].is_string());
    // The host records an outcome's Event after the status that reports it: wait for it, then count.
    env.wait_until("the TestSucceeded Event", || {
        count(&env.events("passes"), "TestSucceeded") >= 1
    })
    .await;
    assert_eq!(count(&env.events("passes"), "TestSucceeded"), 1);

    let failed = env
        .wait("fails", "stalled after the tests failed twice", |o| {
            is(o, "Stalled", "True", "RetriesExceeded")
        })
        .await;
    assert!(
        is(&failed, "TestSuccess", "False", "TestFailed"),
        "{failed:#}"
    );
    assert_eq!(int(&failed, "installFailures"), 2, "{failed:#}");
    assert!(
        message(&failed, "Ready").starts_with("Helm install of release \"fails\" failed 2 times"),
        "{failed:#}"
    );
    // Uninstalled by the remediation of the last failure: no release left.
    assert!(
        env.revisions("fails").is_empty(),
        "{:?}",
        env.revisions("fails")
    );
    env.wait_until("the last remediation's Event", || {
        count(&env.events("fails"), "UninstallSucceeded") >= 2
    })
    .await;
    let events = env.events("fails");
    assert_eq!(count(&events, "InstallSucceeded"), 2, "{events:?}");
    assert_eq!(count(&events, "TestFailed"), 2, "{events:?}");
    assert_eq!(count(&events, "UninstallSucceeded"), 2, "{events:?}");
}

/// `spec.suspend`: no Helm action while it is set (a values change is not applied), and deleting the object
/// leaves the release in the workload cluster (Flux's rule).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_release_is_left_alone_and_survives_deletion() {
    let env = Env::start().await;
    env.apply(&env.release("held", json!({}))).await;
    env.wait("held", "installed", |o| {
        is(o, "Ready", "True", "HelmInstalled")
    })
    .await;
    env.patch_spec(
        "held",
        json!({"suspend": true, "chart": {"values": {"replicaCount": 3}}}),
    )
    .await;
    let generation = env.get("held")["metadata"]["generation"].clone();
    env.wait("held", "the suspended spec reconciled", |o| {
        o["status"]["observedGeneration"] == generation
    })
    .await;
    assert_eq!(env.revisions("held").len(), 1, "no upgrade while suspended");

    env.delete("held").await;
    env.wait("held", "the object gone", Value::is_null).await;
    let revisions = env.revisions("held");
    assert_eq!(revisions.len(), 1, "the release stays");
    assert_eq!(revisions[0].1["metadata"]["labels"]["status"], "deployed");
    assert!(
        env.workload
            .get("apps/v1", "Deployment", "apps", "held-demo")
            .is_some()
    );
}

/// Drift detection: a Deployment scaled and a Service deleted behind Helm's back. `warn` reports the drift (the
/// `Drifted` condition naming the object and field, a `DriftDetected` Event) and leaves it; `enabled` puts the
/// drifted objects back (the Service comes back, an edited image is restored) except what an ignore rule leaves
/// out (the scaled replicas, edited together with the image).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_is_reported_in_warn_mode_and_corrected_in_enabled_mode() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Service;
    use kube::api::{Api, DeleteParams, Patch, PatchParams};

    let env = Env::start().await;
    env.apply(&env.release(
        "warned",
        json!({"interval": "2s", "driftDetection": {"mode": "warn"}}),
    ))
    .await;
    env.apply(&env.release(
        "fixed",
        json!({"interval": "2s", "driftDetection": {"mode": "enabled", "ignore": [
            {"paths": ["/spec/replicas"], "target": {"kind": "Deployment", "name": "fix.*-demo"}}]}}),
    ))
    .await;
    for name in ["warned", "fixed"] {
        env.wait(name, "installed without drift", |o| {
            is(o, "Ready", "True", "HelmInstalled") && is(o, "Drifted", "False", "NoDriftDetected")
        })
        .await;
    }

    let client = env.workload.client().await.expect("workload client");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "apps");
    let services: Api<Service> = Api::namespaced(client, "apps");
    let scale = |name: &'static str| {
        let deployments = deployments.clone();
        async move {
            deployments
                .patch(
                    name,
                    &PatchParams::apply("kubectl-scale").force(),
                    &Patch::Apply(&json!({"apiVersion": "apps/v1", "kind": "Deployment",
                        "metadata": {"name": name}, "spec": {"replicas": 5}})),
                )
                .await
                .expect("scale");
        }
    };
    scale("warned-demo").await;
    // The ignored field and one that is not drift together in one object: the correction must put back the
    // image and leave the replicas to their new owner.
    let container = |d: Option<Deployment>| {
        d.and_then(|d| d.spec.template.spec)
            .map(|s| (s.containers[0].name.clone(), s.containers[0].image.clone()))
            .expect("a container")
    };
    let (name, chart_image) = container(deployments.get_opt("fixed-demo").await.expect("get"));
    deployments
        .patch(
            "fixed-demo",
            &PatchParams::apply("kubectl-scale").force(),
            &Patch::Apply(&json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "fixed-demo"}, "spec": {"replicas": 5, "template": {"spec": {
                    "containers": [{"name": name, "image": "drifted:1"}]}}}})),
        )
        .await
        .expect("scale and edit");
    services
        .delete("fixed-demo", &DeleteParams::default())
        .await
        .expect("delete the Service");

    let warned = env
        .wait("warned", "the drift reported", |o| {
            is(o, "Drifted", "True", "DriftDetected")
        })
        .await;
    assert_eq!(
        message(&warned, "Drifted"),
        "objects of Helm release \"warned\" drifted from its manifest: Deployment apps/warned-demo (modified: \
         /spec/replicas)"
    );
    assert!(is(&warned, "Ready", "True", "HelmInstalled"), "{warned:#}");
    // The host records an outcome's Event after the status that reports it: wait for it.
    env.wait_until("the DriftDetected Warning", || {
        env.events("warned")
            .iter()
            .any(|(t, r, _)| t == "Warning" && r == "DriftDetected")
    })
    .await;

    let fixed = env
        .wait("fixed", "the drift corrected", |o| {
            env.events("fixed")
                .iter()
                .any(|(_, r, _)| r == "DriftCorrected")
                && is(o, "Drifted", "False", "NoDriftDetected")
        })
        .await;
    assert!(is(&fixed, "Ready", "True", "HelmInstalled"), "{fixed:#}");
    assert!(
        services.get_opt("fixed-demo").await.expect("get").is_some(),
        "the Service is back"
    );
    let replicas = |d: Option<Deployment>| d.and_then(|d| d.spec.replicas);
    let fixed_demo = deployments.get_opt("fixed-demo").await.expect("get");
    assert_eq!(
        replicas(fixed_demo.clone()),
        Some(5),
        "the ignored field stays as it was edited, though another field of the object drifted with it"
    );
    assert_eq!(
        container(fixed_demo).1,
        chart_image,
        "the other field is put back"
    );
    assert_eq!(
        replicas(deployments.get_opt("warned-demo").await.expect("get")),
        Some(5),
        "warn corrects nothing"
    );
    // No new revision: drift correction is not a Helm upgrade.
    assert_eq!(env.revisions("fixed").len(), 1);
}

/// A CustomResourceDefinition as a chart's `crds/` file: version `v1` of `widgets.example.com`, with the printer
/// columns given.
fn widget_crd(columns: &[&str]) -> String {
    let columns: Vec<Value> = columns
        .iter()
        .map(|c| json!({"name": c, "type": "string", "jsonPath": format!(".spec.{}", c.to_lowercase())}))
        .collect();
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                "additionalPrinterColumns": columns}]}});
    serde_json::to_string(&crd).expect("JSON is YAML")
}

/// Helm installs a chart's CRDs only when they are missing and never updates them; with `crds: CreateReplace`
/// (Flux's policy) the CRDs of the chart version being installed or upgraded to are applied first, so the new
/// chart's CRD change reaches the cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_create_replace_crd_policy_brings_a_charts_new_crds_on_upgrade() {
    let env = Env::start().await;
    env.repo.add_with(
        "crdful",
        "1.0.0",
        &[("crds/widgets.yaml", &widget_crd(&["Size"]))],
    );
    env.repo.add_with(
        "crdful",
        "1.1.0",
        &[("crds/widgets.yaml", &widget_crd(&["Size", "Color"]))],
    );
    env.apply(&env.release(
        "widgets",
        json!({"chart": {"chart": "crdful", "version": "1.0.0"},
            "install": {"crds": "CreateReplace"}, "upgrade": {"crds": "CreateReplace"}}),
    ))
    .await;
    env.wait("widgets", "installed", |o| {
        is(o, "Ready", "True", "HelmInstalled")
    })
    .await;
    let columns = |env: &Env| -> Vec<String> {
        env.workload
            .get(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                "",
                "widgets.example.com",
            )
            .map(|crd| {
                crd["spec"]["versions"][0]["additionalPrinterColumns"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(columns(&env), ["Size"]);

    env.patch_spec("widgets", json!({"chart": {"version": "1.1.0"}}))
        .await;
    env.wait("widgets", "upgraded", |o| {
        is(o, "Ready", "True", "HelmUpgraded")
    })
    .await;
    assert_eq!(
        columns(&env),
        ["Size", "Color"],
        "the chart's new CRD is applied"
    );
}
