//! The action options whose effect lands in the workload cluster, each in one end-to-end case (issue 29): the real
//! plugin in a real host, the Helm worker with libhelm_c, and a workload kube-sim whose controllers make
//! ReplicaSets for Deployments and collect garbage as the real ones do. Unit tests check that the options reach
//! Helm; these check what Helm then does with them.

use serde_json::{Value, json};

use super::helm_env::{Env, NEVER_READY, is, merge, message, stored_release};

/// The ReplicaSets of Deployment `apps/<deployment>` (by owner), and those that name no owner any more.
fn replica_sets(env: &Env, deployment: &str) -> (usize, usize) {
    let prefix = format!("{deployment}-");
    let sets: Vec<Value> = env
        .workload
        .list("apps/v1", "ReplicaSet", Some("apps"))
        .into_iter()
        .filter(|r| {
            r["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with(&prefix))
        })
        .collect();
    let owned = sets
        .iter()
        .filter(|r| {
            r["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|o| o.iter().any(|o| o["name"] == deployment))
        })
        .count();
    (owned, sets.len() - owned)
}

/// `uninstall.keepHistory` leaves the release's history in the workload cluster, marked uninstalled;
/// `uninstall.deletionPropagation: orphan` leaves the Deployment's ReplicaSet behind without its owner, where the
/// default (background) lets the garbage collector remove it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uninstall_keeps_history_and_orphans_dependents_when_asked() {
    let env = Env::start().await;
    let releases = [
        ("kept", json!({"uninstall": {"keepHistory": true}})),
        (
            "orphaning",
            json!({"uninstall": {"deletionPropagation": "orphan"}}),
        ),
        ("plain", json!({})),
    ];
    for (name, spec) in &releases {
        env.apply(&env.release(name, spec.clone())).await;
    }
    for (name, _) in &releases {
        env.wait(name, "installed", |o| {
            is(o, "Ready", "True", "HelmInstalled")
        })
        .await;
        let deployment = format!("{name}-demo");
        env.wait_until("the Deployment's ReplicaSet", || {
            replica_sets(&env, &deployment).0 == 1
        })
        .await;
    }
    for (name, _) in &releases {
        env.delete(name).await;
    }
    for (name, _) in &releases {
        env.wait(name, "gone", Value::is_null).await;
    }

    let kept = env.revisions("kept");
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0].1["metadata"]["labels"]["status"], "uninstalled");
    assert!(env.revisions("orphaning").is_empty());
    assert!(env.revisions("plain").is_empty());

    for name in ["orphaning", "plain"] {
        let deployment = format!("{name}-demo");
        env.wait_until("the Deployment gone", || {
            env.workload
                .get("apps/v1", "Deployment", "apps", &deployment)
                .is_none()
        })
        .await;
    }
    env.wait_until("the plain release's ReplicaSet collected", || {
        replica_sets(&env, "plain-demo") == (0, 0)
    })
    .await;
    assert_eq!(
        replica_sets(&env, "orphaning-demo"),
        (0, 1),
        "orphan propagation leaves the ReplicaSet, without its owner"
    );
}

/// `upgrade.force` replaces the release's objects instead of patching them: a label another manager put on the
/// Deployment is gone after a forced upgrade, and kept by a plain one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_upgrade_replaces_what_others_added() {
    use k8s_openapi::api::apps::v1::Deployment;
    use kube::api::{Api, Patch, PatchParams};

    let env = Env::start().await;
    env.apply(&env.release("forced", json!({"upgrade": {"force": true}})))
        .await;
    env.apply(&env.release("patched", json!({}))).await;
    let client = env.workload.client().await.expect("workload client");
    let deployments: Api<Deployment> = Api::namespaced(client, "apps");
    for name in ["forced", "patched"] {
        env.wait(name, "installed", |o| {
            is(o, "Ready", "True", "HelmInstalled")
        })
        .await;
        deployments
            .patch(
                &format!("{name}-demo"),
                &PatchParams::apply("someone-else"),
                &Patch::Apply(&json!({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": format!("{name}-demo"), "labels": {"team": "blue"}}})),
            )
            .await
            .expect("label");
        env.patch_spec(name, json!({"chart": {"values": {"replicaCount": 2}}}))
            .await;
    }
    let label = |name: &str| {
        env.workload
            .get("apps/v1", "Deployment", "apps", &format!("{name}-demo"))
            .map(|d| d["metadata"]["labels"]["team"].clone())
            .unwrap_or(Value::Null)
    };
    for name in ["forced", "patched"] {
        env.wait(name, "upgraded", |o| is(o, "Ready", "True", "HelmUpgraded"))
            .await;
    }
    assert_eq!(
        label("patched"),
        "blue",
        "a patch keeps another manager's label"
    );
    assert_eq!(
        label("forced"),
        Value::Null,
        "a forced upgrade replaces the object"
    );
}

/// `upgrade.cleanupOnFail` deletes what a failed upgrade created: the upgrade (to a chart version that adds a
/// ConfigMap) fails its wait (an image that never gets ready); with cleanupOnFail the new ConfigMap is gone
/// afterwards, without it the ConfigMap stays. RetryOnFailure keeps remediation out of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_upgrade_cleans_up_what_it_created_when_asked() {
    let env = Env::start().await;
    env.repo.add_with(
        "demo",
        "0.2.0",
        &[(
            "templates/extra.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-extra\ndata:\n  a: b\n",
        )],
    );
    for (name, cleanup) in [("cleaned", true), ("left", false)] {
        env.apply(&env.release(
            name,
            json!({"wait": true, "timeout": "5s", "upgrade": {"cleanupOnFail": cleanup,
                "strategy": {"name": "RetryOnFailure", "retryInterval": "1h"}}}),
        ))
        .await;
        env.wait(name, "installed", |o| {
            is(o, "Ready", "True", "HelmInstalled")
        })
        .await;
        env.patch_spec(
            name,
            json!({"chart": {"version": "0.2.0", "values": {"image": {"repository": NEVER_READY}}}}),
        )
        .await;
    }
    for name in ["cleaned", "left"] {
        env.wait(name, "the upgrade failed", |o| {
            o["status"]["upgradeFailures"].as_i64() >= Some(1)
                && o["status"]["releaseStatus"] == "failed"
        })
        .await;
    }
    let config_map = |name: &str| {
        env.workload
            .get("v1", "ConfigMap", "apps", &format!("{name}-extra"))
            .is_some()
    };
    assert!(
        config_map("left"),
        "without cleanupOnFail the new object stays"
    );
    assert!(!config_map("cleaned"), "cleanupOnFail deletes it");
}

/// How a failed upgrade goes on: `RetryOnFailure` upgrades again after its interval and never rolls back;
/// `remediation.strategy: uninstall` uninstalls the release instead of rolling it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_upgrade_is_retried_or_uninstalled_as_its_strategy_says() {
    let env = Env::start().await;
    let releases = [
        (
            "retried",
            json!({"wait": true, "timeout": "3s", "upgrade": {
                "strategy": {"name": "RetryOnFailure", "retryInterval": "1s"}}}),
        ),
        (
            "removed",
            json!({"wait": true, "timeout": "3s", "upgrade": {
                "remediation": {"retries": 1, "strategy": "uninstall"}}}),
        ),
    ];
    for (name, spec) in &releases {
        env.apply(&env.release(name, spec.clone())).await;
        env.wait(name, "installed", |o| {
            is(o, "Ready", "True", "HelmInstalled")
        })
        .await;
        env.patch_spec(
            name,
            json!({"chart": {"values": {"image": {"repository": NEVER_READY}}}}),
        )
        .await;
    }
    let count = |name: &str, reason: &str| {
        env.events(name)
            .iter()
            .filter(|(_, r, _)| r == reason)
            .count()
    };
    env.wait_until("a second upgrade after the first failed", || {
        count("retried", "UpgradeFailed") >= 2
    })
    .await;
    assert_eq!(
        count("retried", "RollbackSucceeded"),
        0,
        "{:?}",
        env.events("retried")
    );
    assert_eq!(count("retried", "UninstallSucceeded"), 0);
    // Each try is an upgrade with a revision of its own: the installed one and at least two failed ones.
    assert!(
        env.revisions("retried").len() >= 3,
        "{:?}",
        env.revisions("retried")
    );

    env.wait_until("the failed upgrade remediated by an uninstall", || {
        count("removed", "UninstallSucceeded") >= 1
    })
    .await;
    assert_eq!(
        count("removed", "RollbackSucceeded"),
        0,
        "{:?}",
        env.events("removed")
    );
    assert!(count("removed", "UpgradeFailed") >= 1);
}

/// `test.filters`: a test excluded by name is not run, so a release whose only test would fail is tested and
/// ready, and the excluded hook's Pod is never made in the workload cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_excluded_test_is_not_run() {
    let env = Env::start().await;
    env.apply(&env.release(
        "filtered",
        json!({"chart": {"chart": "tested", "version": "1.0.0", "values": {"testBehavior": "fail"}},
            "test": {"enable": true, "timeout": "60s",
                "filters": [{"name": "filtered-tested-test-connection", "exclude": true}]}}),
    ))
    .await;
    let tested = env
        .wait("filtered", "tested", |o| {
            is(o, "TestSuccess", "True", "TestSucceeded")
        })
        .await;
    assert!(is(&tested, "Ready", "True", "HelmInstalled"), "{tested:#}");
    assert!(
        env.workload
            .get("v1", "Pod", "apps", "filtered-tested-test-connection")
            .is_none(),
        "the excluded hook never ran"
    );
}

/// `install.disableSchemaValidation`: values that break the chart's `values.schema.json` fail the install with
/// Helm's own schema error, unless the check is turned off; then the release installs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_validation_is_skipped_only_when_asked() {
    let env = Env::start().await;
    env.repo.add_with(
        "demo",
        "0.3.0",
        &[(
            "values.schema.json",
            r#"{"type": "object", "properties": {"team": {"type": "string"}}}"#,
        )],
    );
    let chart = json!({"version": "0.3.0", "values": {"team": 5}});
    env.apply(&env.release("checked", json!({"chart": chart})))
        .await;
    env.apply(&env.release(
        "unchecked",
        json!({"chart": chart, "install": {"disableSchemaValidation": true}}),
    ))
    .await;
    let checked = env
        .wait("checked", "the install refused by the schema", |o| {
            is(o, "Ready", "False", "ReconcileFailed")
        })
        .await;
    let text = message(&checked, "Ready");
    assert!(
        text.contains("schema") && text.contains("team"),
        "Helm's schema error: {text}"
    );
    assert!(env.revisions("checked").is_empty(), "nothing was installed");
    env.wait("unchecked", "installed", |o| {
        is(o, "Ready", "True", "HelmInstalled")
    })
    .await;
}

/// Taking ownership: an object that exists in the workload cluster without Helm's ownership metadata stops an
/// install by default (the Go operator's and Helm's behaviour), with Helm's message; `disableTakeOwnership: false`
/// adopts it, and Helm's release annotations then name the release.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn existing_objects_are_adopted_only_when_asked() {
    let env = Env::start().await;
    env.workload
        .apply(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}))
        .await
        .expect("namespace");
    for name in ["kept-out", "adopting"] {
        env.workload
            .apply(&json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": format!("{name}-demo"), "namespace": "apps",
                    "labels": {"made-by": "hand"}}}))
            .await
            .expect("an existing ServiceAccount");
    }
    env.apply(&env.release("kept-out", json!({}))).await;
    env.apply(&env.release(
        "adopting",
        json!({"install": {"disableTakeOwnership": false}}),
    ))
    .await;
    let refused = env
        .wait("kept-out", "the install refused", |o| {
            is(o, "Ready", "False", "ReconcileFailed")
        })
        .await;
    let text = message(&refused, "Ready");
    assert!(
        text.contains("kept-out-demo") && text.contains("cannot be imported"),
        "Helm's ownership error: {text}"
    );
    let account = |name: &str| {
        env.workload
            .get("v1", "ServiceAccount", "apps", &format!("{name}-demo"))
            .expect("the ServiceAccount")
    };
    assert_eq!(
        account("kept-out")["metadata"]["annotations"]["meta.helm.sh/release-name"],
        Value::Null
    );
    env.wait("adopting", "installed", |o| {
        is(o, "Ready", "True", "HelmInstalled")
    })
    .await;
    let adopted = account("adopting");
    assert_eq!(
        adopted["metadata"]["annotations"]["meta.helm.sh/release-name"],
        "adopting"
    );
    assert_eq!(adopted["metadata"]["labels"]["made-by"], "hand");
}

/// The operations that wrote a workload object's fields (its managed fields, status left out).
fn write_operations(env: &Env, kind: &str, name: &str) -> Vec<String> {
    let api_version = if kind == "Deployment" {
        "apps/v1"
    } else {
        "v1"
    };
    let object = env
        .workload
        .get(api_version, kind, "apps", name)
        .unwrap_or(Value::Null);
    object["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m.get("subresource").is_none())
        .filter_map(|m| m["operation"].as_str().map(str::to_string))
        .collect()
}

/// `serverSideApply`: an install with `serverSideApply: false` writes the release's objects with client-side
/// requests (managed fields of operation Update, none Apply), the default with server-side apply; an upgrade's
/// `auto` keeps the method the release was installed with. `upgrade.preserveValues` keeps values the spec no
/// longer sets (Helm's --reuse-values); without it they go back to the chart's defaults.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_apply_method_and_preserved_values_follow_the_action_blocks() {
    let env = Env::start().await;
    let two = json!({"chart": {"values": {"replicaCount": 2}}});
    let mut client_side = two.clone();
    merge(
        &mut client_side,
        json!({"install": {"serverSideApply": false}}),
    );
    let mut preserving = two.clone();
    merge(
        &mut preserving,
        json!({"upgrade": {"preserveValues": true}}),
    );
    let releases = [
        ("client-side", client_side),
        ("preserving", preserving),
        ("replacing", two),
    ];
    for (name, spec) in &releases {
        env.apply(&env.release(name, spec.clone())).await;
    }
    for (name, _) in &releases {
        env.wait(name, "installed", |o| {
            is(o, "Ready", "True", "HelmInstalled")
        })
        .await;
    }
    let ops = write_operations(&env, "Deployment", "client-side-demo");
    assert!(
        ops.contains(&"Update".to_string()) && !ops.contains(&"Apply".to_string()),
        "client-side writes: {ops:?}"
    );
    let ops = write_operations(&env, "Deployment", "replacing-demo");
    assert!(
        ops.contains(&"Apply".to_string()),
        "server-side apply by default: {ops:?}"
    );

    // Drop replicaCount from the spec and change another value, so each release upgrades.
    for (name, _) in &releases {
        env.patch_spec(
            name,
            json!({"chart": {"values": {"replicaCount": null, "podAnnotations": {"rev": "2"}}}}),
        )
        .await;
    }
    for (name, _) in &releases {
        env.wait(name, "upgraded", |o| is(o, "Ready", "True", "HelmUpgraded"))
            .await;
    }
    let replicas = |name: &str| {
        env.workload
            .get("apps/v1", "Deployment", "apps", &format!("{name}-demo"))
            .map(|d| d["spec"]["replicas"].clone())
            .unwrap_or(Value::Null)
    };
    assert_eq!(replicas("preserving"), 2, "the earlier value is kept");
    assert_eq!(replicas("replacing"), 1, "the chart's default again");
    let ops = write_operations(&env, "Deployment", "client-side-demo");
    assert!(
        !ops.contains(&"Apply".to_string()),
        "auto upgrades as the release was installed: {ops:?}"
    );
}

/// The ids (Flux's `namespace_name_group_kind`) of the workload objects Helm made for `release`: those of the
/// kinds a chart here renders that carry Helm's release annotation.
fn made_by(env: &Env, release: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for (api_version, kind) in [
        ("v1", "ServiceAccount"),
        ("v1", "Service"),
        ("v1", "ConfigMap"),
        ("v1", "Pod"),
        ("apps/v1", "Deployment"),
    ] {
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        for o in env.workload.list(api_version, kind, Some("apps")) {
            if o["metadata"]["annotations"]["meta.helm.sh/release-name"] == release {
                ids.push(format!(
                    "apps_{}_{group}_{kind}",
                    o["metadata"]["name"].as_str().unwrap_or_default()
                ));
            }
        }
    }
    ids.sort();
    ids
}

fn inventory_ids(obj: &Value) -> Vec<String> {
    obj["status"]["inventory"]["entries"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["id"].as_str().map(str::to_string))
        .collect()
}

/// A CRD of Widgets, example.com/v1, namespaced, any fields, no status subresource.
const WIDGET_CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: \
     widgets.example.com\nspec:\n  group: example.com\n  names:\n    kind: Widget\n    plural: widgets\n    \
     singular: widget\n    listKind: WidgetList\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: \
     true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        \
     x-kubernetes-preserve-unknown-fields: true\n";

/// `status.inventory` lists exactly what the release owns, in Flux's format: the objects Helm made for it (not
/// its test hook, which Helm deletes by its own policy), and after an upgrade that adds a ConfigMap and a chart
/// CRD, those too (the CRD cluster-scoped, with an empty namespace).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inventory_lists_exactly_what_the_release_owns() {
    let env = Env::start().await;
    env.repo.add_with(
        "demo",
        "0.4.0",
        &[
            (
                "templates/extra.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-extra\ndata:\n  a: b\n",
            ),
            ("crds/widgets.yaml", WIDGET_CRD),
        ],
    );
    env.apply(&env.release("inv", json!({}))).await;
    let installed = env
        .wait("inv", "installed with an inventory", |o| {
            is(o, "Ready", "True", "HelmInstalled") && !inventory_ids(o).is_empty()
        })
        .await;
    let made = made_by(&env, "inv");
    assert_eq!(
        made,
        [
            "apps_inv-demo__Service",
            "apps_inv-demo__ServiceAccount",
            "apps_inv-demo_apps_Deployment"
        ],
        "what Helm made"
    );
    assert_eq!(inventory_ids(&installed), made);
    let versions: Vec<&Value> = installed["status"]["inventory"]["entries"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| &e["v"])
        .collect();
    assert!(versions.iter().all(|v| *v == "v1"), "{versions:?}");

    env.patch_spec("inv", json!({"chart": {"version": "0.4.0"}}))
        .await;
    let upgraded = env
        .wait("inv", "upgraded with the new objects listed", |o| {
            is(o, "Ready", "True", "HelmUpgraded") && inventory_ids(o).len() == 5
        })
        .await;
    let mut want = made_by(&env, "inv");
    want.push("_widgets.example.com_apiextensions.k8s.io_CustomResourceDefinition".into());
    want.sort();
    assert!(
        want.contains(&"apps_inv-extra__ConfigMap".to_string()),
        "{want:?}"
    );
    assert_eq!(inventory_ids(&upgraded), want);
}

/// Cancel on a spec change: an install waiting (for up to ten minutes) on an image that never gets ready is
/// cancelled as soon as the values change, through Helm's context; the new values go ahead at once (an upgrade
/// over the cancelled revision), the cancel is announced and counts no failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spec_change_cancels_the_install_it_made_obsolete() {
    let env = Env::start().await;
    env.apply(&env.release(
        "stuck",
        json!({"wait": true, "timeout": "10m",
            "chart": {"values": {"image": {"repository": NEVER_READY}}}}),
    ))
    .await;
    env.wait("stuck", "the install waiting", |o| {
        message(o, "Ready").contains("install of release \"stuck\" is running")
    })
    .await;
    env.wait_until("Helm's pending revision", || {
        env.revisions("stuck")
            .first()
            .is_some_and(|(_, s)| s["metadata"]["labels"]["status"] == "pending-install")
    })
    .await;
    env.patch_spec(
        "stuck",
        json!({"chart": {"values": {"image": {"repository": null}}}}),
    )
    .await;
    let ready = env
        .wait("stuck", "ready with the new values", |o| {
            is(o, "Ready", "True", "HelmUpgraded")
        })
        .await;
    assert_eq!(ready["status"]["installFailures"], 0, "{ready:#}");
    assert_eq!(ready["status"]["failures"], 0, "{ready:#}");
    let reasons: Vec<String> = env
        .events("stuck")
        .into_iter()
        .map(|(_, reason, _)| reason)
        .collect();
    assert!(
        reasons.contains(&"InstallCancelled".to_string()),
        "{reasons:?}"
    );
    assert!(
        !reasons.contains(&"InstallFailed".to_string()),
        "{reasons:?}"
    );
    // The new values are the newest revision, deployed. (Revision 1, the cancelled install, is recorded failed;
    // Helm's install goroutine may still finish its wait afterwards and record it deployed: Helm 4 does not stop
    // it with the context. The newest revision is the release.)
    let revisions: Vec<(u64, Value)> = env.revisions("stuck");
    let (newest, secret) = revisions.last().expect("revisions");
    assert_eq!(*newest, 2, "one install and one upgrade");
    assert_eq!(secret["metadata"]["labels"]["status"], "deployed");
}

/// Impersonation (`serviceAccountName`): through the same admin kubeconfig, a release acting as a ServiceAccount
/// that may do everything in its namespace installs, and one acting as an account with no permissions is refused
/// by the workload cluster before anything is made, its condition saying so. The kubeconfig's own identity could
/// have installed both: the refusal is the impersonation at work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_acts_as_the_service_account_it_names() {
    let env = Env::start().await;
    for obj in [
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "deployer", "namespace": "apps"}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "everything", "namespace": "apps"},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "deployer-everything", "namespace": "apps"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "everything"},
            "subjects": [{"kind": "ServiceAccount", "name": "deployer", "namespace": "apps"}]}),
    ] {
        env.workload.apply(&obj).await.expect("workload RBAC");
    }
    env.apply(&env.release(
        "as-deployer",
        json!({"createNamespace": false, "serviceAccountName": "deployer"}),
    ))
    .await;
    env.apply(&env.release(
        "as-nobody",
        json!({"createNamespace": false, "serviceAccountName": "nobody"}),
    ))
    .await;
    env.wait("as-deployer", "installed as the deployer", |o| {
        is(o, "Ready", "True", "HelmInstalled")
    })
    .await;
    assert!(
        env.workload
            .get("apps/v1", "Deployment", "apps", "as-deployer-demo")
            .is_some()
    );
    let refused = env
        .wait("as-nobody", "refused as nobody", |o| {
            o["status"]["conditions"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "False")
            })
        })
        .await;
    let text = message(&refused, "Ready");
    assert!(
        text.contains("system:serviceaccount:apps:nobody") && text.contains("forbidden"),
        "the refusal names the account: {text}"
    );
    assert!(
        env.workload
            .get("apps/v1", "Deployment", "apps", "as-nobody-demo")
            .is_none()
    );
    assert!(env.revisions("as-nobody").is_empty());
}

/// `postRenderers` and `commonMetadata` change what Helm applies: a strategic-merge patch (replicas, a pod
/// annotation), a JSON 6902 patch on the objects its target selects, an image override, and labels on every
/// object; a changed `commonMetadata` upgrades the release once and the new label lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_renderers_and_common_metadata_change_the_deployed_objects() {
    let env = Env::start().await;
    let smp = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: rendered-demo\nspec:\n  replicas: 3\n  \
               template:\n    metadata:\n      annotations:\n        patched: smp\n";
    let json6902 = r#"[{"op": "add", "path": "/metadata/labels/patched", "value": "json6902"}]"#;
    env.apply(&env.release(
        "rendered",
        json!({
            "postRenderers": [{"kustomize": {
                "patches": [{"patch": smp}, {"patch": json6902, "target": {"kind": "Service"}}],
                "images": [{"name": "nginx", "newTag": "1.27.0"}]}}],
            "commonMetadata": {"labels": {"team": "blue"}}}),
    ))
    .await;
    env.wait("rendered", "installed", |o| {
        is(o, "Ready", "True", "HelmInstalled")
    })
    .await;
    let get = |kind: &str| {
        let api_version = if kind == "Deployment" {
            "apps/v1"
        } else {
            "v1"
        };
        env.workload
            .get(api_version, kind, "apps", "rendered-demo")
            .unwrap_or(Value::Null)
    };
    let deployment = get("Deployment");
    assert_eq!(deployment["spec"]["replicas"], 3, "{deployment:#}");
    let pod = &deployment["spec"]["template"];
    assert_eq!(pod["metadata"]["annotations"]["patched"], "smp");
    assert_eq!(pod["spec"]["containers"][0]["image"], "nginx:1.27.0");
    assert_eq!(get("Service")["metadata"]["labels"]["patched"], "json6902");
    assert_eq!(
        get("ServiceAccount")["metadata"]["labels"]["patched"],
        Value::Null,
        "the JSON 6902 patch's target is Services only"
    );
    for kind in ["Deployment", "Service", "ServiceAccount"] {
        assert_eq!(get(kind)["metadata"]["labels"]["team"], "blue", "{kind}");
    }

    env.patch_spec(
        "rendered",
        json!({"commonMetadata": {"labels": {"team": "green"}}}),
    )
    .await;
    env.wait("rendered", "upgraded for the new metadata", |o| {
        is(o, "Ready", "True", "HelmUpgraded")
    })
    .await;
    assert_eq!(get("Deployment")["metadata"]["labels"]["team"], "green");
    assert_eq!(env.revisions("rendered").len(), 2, "one upgrade");
}

/// A chart pushed again under the same version (new content, same `0.1.0`) upgrades its release once: the
/// repository's index lists a new digest for the version, the release's digest takes it, and the revision
/// records it (label `omni.texashpc.com/chart-digest`). A reconcile after that upgrades nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chart_pushed_again_under_the_same_version_upgrades_once() {
    use std::time::{Duration, Instant};

    let env = Env::start().await;
    env.apply(&env.release("repushed", json!({}))).await;
    env.wait("repushed", "installed", |o| {
        is(o, "Ready", "True", "HelmInstalled")
    })
    .await;
    let first = env.revisions("repushed");
    let recorded = first[0].1["metadata"]["labels"]["omni.texashpc.com/chart-digest"].clone();
    assert!(
        recorded.is_string(),
        "the content digest is recorded: {recorded}"
    );

    env.repo.add_with(
        "demo",
        "0.1.0",
        &[(
            "templates/extra.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-repushed\ndata:\n  a: b\n",
        )],
    );
    // The release is looked at again on request (its interval is minutes); the source is read again once its
    // last reading is older than 20 s, so the request is repeated until the upgrade shows.
    let deadline = Instant::now() + super::helm_env::WAIT;
    let mut asked = 0;
    while !is(&env.get("repushed"), "Ready", "True", "HelmUpgraded") {
        assert!(
            Instant::now() < deadline,
            "no upgrade for the re-pushed chart: {:#}",
            env.get("repushed")["status"]
        );
        asked += 1;
        env.annotate(
            "repushed",
            json!({"reconcile.fluxcd.io/requestedAt": format!("push-{asked}")}),
        )
        .await;
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    assert!(
        env.workload
            .get("v1", "ConfigMap", "apps", "repushed-repushed")
            .is_some(),
        "the re-pushed content is deployed"
    );
    let revisions = env.revisions("repushed");
    assert_eq!(revisions.len(), 2, "one upgrade");
    let now = revisions[1].1["metadata"]["labels"]["omni.texashpc.com/chart-digest"].clone();
    assert!(now.is_string() && now != recorded, "{recorded} then {now}");

    env.annotate(
        "repushed",
        json!({"reconcile.fluxcd.io/requestedAt": "after"}),
    )
    .await;
    env.wait("repushed", "the next reconcile", |o| {
        o["status"]["lastHandledReconcileAt"] == "after"
    })
    .await;
    assert_eq!(env.revisions("repushed").len(), 2, "and only once");
}

/// An HTTP endpoint that records the JSON bodies POSTed to it and answers 202, as notification-controller's
/// event receiver does.
async fn recording_endpoint() -> (String, std::sync::Arc<std::sync::Mutex<Vec<Value>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = format!("http://{}/", listener.local_addr().expect("address"));
    let seen: std::sync::Arc<std::sync::Mutex<Vec<Value>>> = std::sync::Arc::default();
    let record = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let record = record.clone();
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    // One request: headers, then Content-Length bytes of body.
                    let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                        }
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buffer[..end]).to_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    while buffer.len() < end + 4 + length {
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let body: Vec<u8> = buffer.drain(..end + 4 + length).skip(end + 4).collect();
                    if head.starts_with("post ")
                        && let Ok(v) = serde_json::from_slice::<Value>(&body)
                    {
                        record.lock().expect("record").push(v);
                    }
                    if socket
                        .write_all(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    (address, seen)
}

/// `--events-addr`: the Events of a release are posted in Flux's event format (the involved object, severity,
/// reason, message, metadata with the revision, the reporting controller) to the address, as Flux's controllers
/// post theirs to the notification-controller.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_forwarded_in_fluxs_event_format() {
    let (address, seen) = recording_endpoint().await;
    let forwarder =
        omni_operator::controllers::notify::Forwarder::start(&address).expect("forwarder");
    let env = Env::start_forwarding(
        omni_operator::capabilities::ChartSources::any(),
        Some(forwarder),
    )
    .await;
    env.apply(&env.release("notified", json!({}))).await;
    env.wait("notified", "installed", |o| {
        is(o, "Ready", "True", "HelmInstalled")
    })
    .await;
    let uid = env.get("notified")["metadata"]["uid"].clone();
    let installed = |e: &Value| e["reason"] == "InstallSucceeded";
    env.wait_until("the InstallSucceeded event posted", || {
        seen.lock().expect("seen").iter().any(installed)
    })
    .await;
    let events = seen.lock().expect("seen").clone();
    let event = events.iter().find(|e| installed(e)).expect("posted");
    assert_eq!(
        event["involvedObject"]["kind"], "OmniHelmRelease",
        "{event:#}"
    );
    assert_eq!(
        event["involvedObject"]["apiVersion"],
        "omni.texashpc.com/v1alpha1"
    );
    assert_eq!(event["involvedObject"]["name"], "notified");
    assert_eq!(event["involvedObject"]["namespace"], super::helm_env::NS);
    assert_eq!(event["involvedObject"]["uid"], uid);
    assert_eq!(event["severity"], "info");
    assert!(
        event["message"]
            .as_str()
            .is_some_and(|m| m.contains("notified")),
        "{event:#}"
    );
    assert_eq!(event["metadata"]["revision"], "0.1.0", "{event:#}");
    assert!(event["reportingController"].is_string());
    assert!(
        event["timestamp"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
}

/// `dependsOn[].readyExpr` (CEL over `self` and `dep`) decides when a dependency counts as ready, in place of its
/// Ready condition: an expression that holds lets the release install, one that does not keeps it waiting
/// (`DependencyNotReady`, the expression named) though the dependency is Ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ready_expression_decides_when_a_dependency_is_ready() {
    let env = Env::start().await;
    env.apply(&env.release("base", json!({}))).await;
    env.wait("base", "installed", |o| {
        is(o, "Ready", "True", "HelmInstalled")
    })
    .await;
    env.apply(&env.release(
        "follower",
        json!({"dependsOn": [{"name": "base",
            "readyExpr": "dep.status.releaseStatus == 'deployed' && self.metadata.name == 'follower'"}]}),
    ))
    .await;
    env.apply(&env.release(
        "gated",
        json!({"dependsOn": [{"name": "base", "readyExpr": "dep.status.releaseStatus == 'superseded'"}]}),
    ))
    .await;
    env.wait("follower", "installed", |o| {
        is(o, "Ready", "True", "HelmInstalled")
    })
    .await;
    let gated = env
        .wait("gated", "waiting", |o| {
            is(o, "Ready", "False", "DependencyNotReady")
        })
        .await;
    assert!(
        message(&gated, "Ready").contains("is not ready by its readyExpr"),
        "{gated:#}"
    );
    assert!(env.revisions("gated").is_empty());
}

/// `chart.valuesFiles`: values files packaged in the chart are read from its archive and merged under the
/// object's values; a listed file the chart lacks is refused naming it, unless `ignoreMissingValuesFiles`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_files_packaged_in_the_chart_are_merged_under_the_values() {
    let env = Env::start().await;
    env.repo.add_with(
        "demo",
        "0.5.0",
        &[
            (
                "values-prod.yaml",
                "replicaCount: 3\npodAnnotations: {tier: prod}\n",
            ),
            ("values-big.yaml", "replicaCount: 5\n"),
        ],
    );
    let chart = |files: Value| json!({"version": "0.5.0", "valuesFiles": files});
    env.apply(&env.release(
        "prod",
        json!({"chart": chart(json!(["values-prod.yaml", "values-big.yaml"]))}),
    ))
    .await;
    let mut overridden = json!({"chart": chart(json!(["values-prod.yaml"]))});
    overridden["chart"]["values"] = json!({"replicaCount": 2});
    env.apply(&env.release("overridden", overridden)).await;
    env.apply(&env.release(
        "missing",
        json!({"chart": chart(json!(["values-dev.yaml"]))}),
    ))
    .await;
    let mut tolerated = json!({"chart": chart(json!(["values-dev.yaml", "values-prod.yaml"]))});
    tolerated["chart"]["ignoreMissingValuesFiles"] = json!(true);
    env.apply(&env.release("tolerated", tolerated)).await;
    for name in ["prod", "overridden", "tolerated"] {
        env.wait(name, "installed", |o| {
            is(o, "Ready", "True", "HelmInstalled")
        })
        .await;
    }
    let deployment = |name: &str| {
        env.workload
            .get("apps/v1", "Deployment", "apps", &format!("{name}-demo"))
            .unwrap_or(Value::Null)
    };
    assert_eq!(
        deployment("prod")["spec"]["replicas"],
        5,
        "later files over earlier"
    );
    assert_eq!(
        deployment("prod")["spec"]["template"]["metadata"]["annotations"]["tier"],
        "prod"
    );
    assert_eq!(
        deployment("overridden")["spec"]["replicas"],
        2,
        "the values over the files"
    );
    assert_eq!(deployment("tolerated")["spec"]["replicas"], 3);
    let missing = env
        .wait("missing", "refused", |o| {
            is(o, "Ready", "False", "ValidationFailed")
        })
        .await;
    assert!(
        message(&missing, "Ready").contains("values-dev.yaml"),
        "{missing:#}"
    );
    assert!(env.revisions("missing").is_empty());
}

/// The chart that makes one Widget (a custom resource with no readiness of its own) beside the demo Deployment.
fn add_widget_chart(env: &Env) {
    env.repo.add_with(
        "demo",
        "0.6.0",
        &[
            ("crds/widgets.yaml", WIDGET_CRD),
            (
                "templates/widget.yaml",
                "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {{ .Release.Name }}-w\nspec:\n  size: 1\n",
            ),
        ],
    );
}

/// Sets the phase of a release's Widget in the workload cluster, as the Widget's own controller would, once
/// Helm has made it.
async fn set_widget_phase(env: &Env, release: &str, phase: &str) {
    let name = format!("{release}-w");
    env.wait_until("the Widget made", || {
        env.workload
            .get("example.com/v1", "Widget", "apps", &name)
            .is_some()
    })
    .await;
    let client = env.workload.client().await.expect("workload client");
    let widgets: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
        client,
        "apps",
        &kube::core::ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
            "example.com",
            "v1",
            "Widget",
        )),
    );
    widgets
        .patch(
            &name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"status": {"phase": phase}})),
        )
        .await
        .expect("the Widget's status set");
}

/// `healthCheckExprs` (Flux's CEL health checks) judge the release's Widgets after Helm's wait: the install stays
/// running while the Widget has no phase, and succeeds once its `current` expression holds; a Widget whose
/// `failed` expression holds fails the install (the condition and Event with the object and the expression), and
/// Helm's revision is recorded failed, as Helm records a failed wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_check_expressions_decide_whether_an_install_succeeds() {
    let env = Env::start().await;
    add_widget_chart(&env);
    let checks = json!([{"apiVersion": "example.com/v1", "kind": "Widget",
        "current": "has(status.phase) && status.phase == 'Ready'",
        "failed": "has(status.phase) && status.phase == 'Broken'"}]);
    for name in ["healthy", "broken"] {
        env.apply(&env.release(
            name,
            json!({"wait": true, "timeout": "5m", "chart": {"version": "0.6.0"},
                "healthCheckExprs": checks}),
        ))
        .await;
    }
    set_widget_phase(&env, "healthy", "Pending").await;
    // Helm's own wait is over (a Widget has no readiness kstatus knows) and its revision deployed, yet the
    // install goes on: the Widget is not current.
    env.wait_until("Helm's deployed revision", || {
        env.revisions("healthy")
            .first()
            .is_some_and(|(_, s)| s["metadata"]["labels"]["status"] == "deployed")
    })
    .await;
    let running = env.get("healthy");
    assert!(
        message(&running, "Ready").contains("install of release \"healthy\" is running"),
        "{running:#}"
    );
    set_widget_phase(&env, "healthy", "Ready").await;
    env.wait("healthy", "installed once the Widget is current", |o| {
        is(o, "Ready", "True", "HelmInstalled")
    })
    .await;

    set_widget_phase(&env, "broken", "Broken").await;
    // The failed install is retried as upgrades (the Go operator's way); each fails the same way.
    let failed = env
        .wait("broken", "failed by its health check", |o| {
            o["status"]["installFailures"] == 1
                && o["status"]["lastError"]
                    .as_str()
                    .is_some_and(|e| e.starts_with("health check failed"))
        })
        .await;
    assert_eq!(
        failed["status"]["lastError"],
        "health check failed: Widget apps/broken-w status: 'Failed' (healthCheckExprs[0].failed is true)"
    );
    // The Event is published after the status write that reports the failure.
    env.wait_until("the InstallFailed Event", || {
        env.events("broken").iter().any(|(_, reason, text)| {
            reason == "InstallFailed" && text.contains("health check failed: Widget apps/broken-w")
        })
    })
    .await;
    // Helm's own wait succeeded each time, yet no revision stays deployed: each is recorded failed, as Helm
    // records a failed wait (and superseded by the next attempt).
    let statuses: Vec<Value> = env
        .revisions("broken")
        .into_iter()
        .map(|(_, s)| s["metadata"]["labels"]["status"].clone())
        .collect();
    assert!(
        statuses.iter().all(|s| s == "failed" || s == "superseded"),
        "{statuses:?}"
    );
    assert_eq!(statuses[0], "failed", "{statuses:?}");
}

/// With `atomic`, an upgrade whose health check fails is rolled back, as Helm's atomic rolls back an upgrade whose
/// wait failed: the upgraded revision is recorded failed and a rollback to the installed one follows, the error
/// in Helm's atomic wording.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_atomic_upgrade_failing_its_health_check_is_rolled_back() {
    let env = Env::start().await;
    add_widget_chart(&env);
    env.apply(&env.release(
        "atom",
        json!({"wait": true, "atomic": true, "timeout": "5m", "chart": {"version": "0.6.0"}}),
    ))
    .await;
    env.wait("atom", "installed", |o| {
        is(o, "Ready", "True", "HelmInstalled")
    })
    .await;
    set_widget_phase(&env, "atom", "Broken").await;
    env.patch_spec(
        "atom",
        json!({"chart": {"values": {"replicaCount": 2}},
            "healthCheckExprs": [{"apiVersion": "example.com/v1", "kind": "Widget",
                "current": "status.phase == 'Ready'", "failed": "status.phase == 'Broken'"}]}),
    )
    .await;
    let failed = env
        .wait("atom", "the upgrade failed and rolled back", |o| {
            o["status"]["upgradeFailures"] == 1
        })
        .await;
    assert_eq!(
        failed["status"]["lastError"],
        "release atom failed, and has been rolled back due to atomic being set: health check failed: Widget \
         apps/atom-w status: 'Failed' (healthCheckExprs[0].failed is true)"
    );
    let revisions = env.revisions("atom");
    let status = |n: usize| revisions[n].1["metadata"]["labels"]["status"].clone();
    assert!(revisions.len() >= 3, "{revisions:?}");
    assert_eq!(status(1), "failed", "the upgrade");
    let rollback = stored_release(&revisions[2].1);
    assert_eq!(
        rollback["info"]["description"], "Rollback to 1",
        "{rollback:#}"
    );
}
