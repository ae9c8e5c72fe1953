//! OmniHelmRelease end to end (issue "OmniHelmRelease with real Helm"): the built-in
//! plugin (the real component, its default grants) in a real host, a management kube-sim, the real Helm worker
//! with libhelm_c, and a workload kube-sim with its workload controllers, so Deployments become ready (or, with
//! kube-sim's `never-ready` image, never do). Charts come from a chart repository served on loopback and from a
//! real OCI registry; the release Secrets in the workload cluster are Helm's own.

use omni_operator::controllers::metrics::Count;
use std::time::{Duration, Instant};

use kube::api::{Api, DeleteParams, Patch, PatchParams};
use omni_operator::capabilities::ChartSources;
use serde_json::{Value, json};

use super::helm_env::{API, Env, KUBECONFIG, NEVER_READY, NS, WAIT, is, message, stored_release};
use super::helm_fixtures::{FaultyProxy, chart_repo, lib, push_demo_chart, registry};
use super::support;

/// Install, nothing changed (no new revision), values changed (an upgrade), deletion (an uninstall): the
/// release Secrets are Helm's own format throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_installs_upgrades_only_on_change_and_uninstalls_on_deletion() {
    let env = Env::start().await;
    env.apply(&env.release(
        "web",
        json!({"wait": true, "chart": {"values": {"replicaCount": 1}}}),
    ))
    .await;
    let obj = env
        .wait("web", "installed", |o| {
            is(o, "Ready", "True", "HelmInstalled")
        })
        .await;
    assert_eq!(
        message(&obj, "Ready"),
        "installed Helm release \"web\" revision 1"
    );
    assert!(is(&obj, "Released", "True", "HelmInstalled"));
    assert!(is(&obj, "Accepted", "True", "Accepted"), "{obj:#}");
    let status = &obj["status"];
    assert_eq!(status["releaseRevision"], 1);
    assert_eq!(status["releaseStatus"], "deployed");
    assert_eq!(status["lastAction"], "Install");
    assert_eq!(status["releaseName"], "web");
    assert_eq!(status["namespace"], "apps");
    assert_eq!(status["chart"], "demo");
    assert_eq!(status["chartVersion"], "0.1.0");
    assert_eq!(status["lastError"], "");
    // Flux's fields: the chart version of the last install or upgrade started, and where Helm stores it.
    assert_eq!(status["lastAttemptedRevision"], "0.1.0", "{obj:#}");
    assert_eq!(status["storageNamespace"], "apps");

    // Helm's own storage: `sh.helm.release.v1.<name>.v<revision>`, type helm.sh/release.v1, Helm's labels.
    let revisions = env.revisions("web");
    assert_eq!(revisions.len(), 1, "{revisions:?}");
    let secret = &revisions[0].1;
    assert_eq!(secret["metadata"]["name"], "sh.helm.release.v1.web.v1");
    assert_eq!(secret["type"], "helm.sh/release.v1");
    assert_eq!(secret["metadata"]["labels"]["status"], "deployed");
    let stored = stored_release(secret);
    assert_eq!(stored["name"], "web");
    assert_eq!(stored["chart"]["metadata"]["version"], "0.1.0");
    assert_eq!(stored["config"], json!({"replicaCount": 1}));
    let deployment = env
        .workload
        .get("apps/v1", "Deployment", "apps", "web-demo")
        .expect("the chart's Deployment");
    assert_eq!(deployment["spec"]["replicas"], 1);

    // Nothing changed: reconciles triggered by kubeconfig "rotations" make no revision.
    for n in 0..3 {
        let before = env.metrics.total(Count::PluginCalls);
        env.touch_kubeconfig(n).await;
        env.wait_until("a reconcile after the kubeconfig changed", || {
            env.metrics.total(Count::PluginCalls) > before
        })
        .await;
    }
    // Let any action those reconciles might have started show up before counting.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        env.revisions("web").len(),
        1,
        "a reconcile with nothing changed must not make a revision"
    );
    assert_eq!(env.get("web")["status"]["releaseRevision"], 1);

    // A values change is an upgrade.
    env.patch_spec("web", json!({"chart": {"values": {"replicaCount": 2}}}))
        .await;
    let obj = env
        .wait("web", "upgraded", |o| {
            is(o, "Ready", "True", "HelmUpgraded")
        })
        .await;
    assert_eq!(
        message(&obj, "Ready"),
        "upgraded Helm release \"web\" to revision 2"
    );
    assert_eq!(obj["status"]["lastAction"], "Upgrade");
    let revisions = env.revisions("web");
    assert_eq!(
        revisions
            .iter()
            .map(|(v, s)| (*v, s["metadata"]["labels"]["status"].clone()))
            .collect::<Vec<_>>(),
        vec![(1, json!("superseded")), (2, json!("deployed"))]
    );
    let deployment = env
        .workload
        .get("apps/v1", "Deployment", "apps", "web-demo")
        .expect("the chart's Deployment");
    assert_eq!(deployment["spec"]["replicas"], 2);
    // Helm's own list and history read what the operator's Helm wrote.
    let helm = helm_c::Helm::load(&lib()).expect("libhelm_c");
    let config = helm
        .config(&json!({"kubeconfig_content": env.workload.kubeconfig(&env.workload.admin()), "namespace": "apps"}))
        .expect("a Helm configuration for the workload cluster");
    let history = config.history("web", &json!({})).expect("helm history");
    let statuses: Vec<(Value, Value)> = history
        .as_array()
        .expect("a list")
        .iter()
        .map(|r| (r["revision"].clone(), r["status"].clone()))
        .collect();
    assert_eq!(
        statuses,
        vec![
            (json!(1), json!("superseded")),
            (json!(2), json!("deployed"))
        ],
        "{history:#}"
    );
    let listed = config.list(&json!({})).expect("helm list");
    assert!(
        listed
            .as_array()
            .expect("a list")
            .iter()
            .any(|r| r["name"] == "web" && r["chart_version"] == "0.1.0"),
        "{listed:#}"
    );

    // Deletion uninstalls (policy Uninstall by default) and then lets the object go.
    env.delete("web").await;
    env.wait("web", "gone", Value::is_null).await;
    assert!(
        env.revisions("web").is_empty(),
        "the release's history is removed"
    );
    assert!(
        env.workload
            .get("apps/v1", "Deployment", "apps", "web-demo")
            .is_none()
    );
}

/// `wait` with a workload that never becomes ready fails with a clear condition; with `atomic` a failed install
/// is removed and a failed upgrade rolled back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_that_fail_are_reported_and_atomic_cleans_up() {
    let env = Env::start().await;
    let never_ready = json!({"image": {"repository": NEVER_READY}});
    env.apply(&env.release(
        "stuck",
        json!({"wait": true, "timeout": "10s", "chart": {"values": never_ready}}),
    ))
    .await;
    env.apply(&env.release(
        "atomic-install",
        json!({"wait": true, "atomic": true, "timeout": "10s", "chart": {"values": never_ready}}),
    ))
    .await;
    env.apply(&env.release(
        "atomic-upgrade",
        json!({"wait": true, "atomic": true, "timeout": "10s"}),
    ))
    .await;

    let stuck = env
        .wait("stuck", "the failed wait", |o| {
            is(o, "Ready", "False", "ReconcileFailed")
        })
        .await;
    let text = message(&stuck, "Ready");
    assert!(
        text.starts_with("Helm install failed for release \"stuck\": "),
        "{text}"
    );
    assert_eq!(stuck["status"]["releaseStatus"], "failed");
    assert!(is(&stuck, "Released", "False", "ReconcileFailed"));
    assert!(
        !stuck["status"]["lastError"]
            .as_str()
            .unwrap_or("")
            .is_empty()
    );

    let atomic = env
        .wait("atomic-install", "the failed atomic install", |o| {
            is(o, "Ready", "False", "ReconcileFailed")
        })
        .await;
    assert!(
        message(&atomic, "Ready").starts_with("Helm install failed for release \"atomic-install\""),
        "{atomic:#}"
    );
    assert!(
        env.revisions("atomic-install").is_empty(),
        "a failed atomic install is uninstalled"
    );

    env.wait("atomic-upgrade", "installed", |o| {
        is(o, "Ready", "True", "HelmInstalled")
    })
    .await;
    env.patch_spec("atomic-upgrade", json!({"chart": {"values": never_ready}}))
        .await;
    let upgrade = env
        .wait("atomic-upgrade", "the failed atomic upgrade", |o| {
            is(o, "Ready", "False", "ReconcileFailed")
        })
        .await;
    assert!(
        message(&upgrade, "Ready")
            .starts_with("Helm upgrade failed for release \"atomic-upgrade\""),
        "{upgrade:#}"
    );
    // Rolled back: a third revision, deployed, made from the first one's chart and values.
    let revisions = env.revisions("atomic-upgrade");
    let (last, secret) = revisions.last().expect("revisions");
    assert_eq!(*last, 3, "{revisions:?}");
    assert_eq!(secret["metadata"]["labels"]["status"], "deployed");
    let deployment = env
        .workload
        .get("apps/v1", "Deployment", "apps", "atomic-upgrade-demo")
        .expect("the Deployment");
    let image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or_default();
    assert!(!image.starts_with(NEVER_READY), "{image}");
}

/// Chart not found, bad values, an unreachable workload cluster, a missing kubeconfig Secret and a missing
/// OmniCluster each give the Go operator's reason, and none of them makes a revision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_reported_with_the_go_operators_reasons() {
    let env = Env::start().await;
    let dead = {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        env.workload
            .kubeconfig(&env.workload.admin())
            .replace(&env.workload.url(), &format!("https://127.0.0.1:{port}"))
    };
    env.apply(
        &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "dead", "namespace": NS},
        "stringData": {"kubeconfig": dead}}),
    )
    .await;
    env.apply(&env.release("missing-chart", json!({"chart": {"version": "9.9.9"}})))
        .await;
    env.apply(&env.release(
        "bad-values",
        json!({"chart": {"values": {"ingress": {"enabled": true, "hosts": "not-a-list"}}}}),
    ))
    .await;
    env.apply(&env.release(
        "unreachable",
        json!({"kubeconfigSecretRef": {"name": "dead"}}),
    ))
    .await;
    env.apply(&env.release(
        "no-secret",
        json!({"kubeconfigSecretRef": {"name": "nope"}}),
    ))
    .await;
    env.apply(&env.release("no-cluster", json!({"clusterRef": {"name": "nope"}})))
        .await;

    let obj = env
        .wait("missing-chart", "chart not found", |o| {
            is(o, "Ready", "False", "ReconcileFailed")
        })
        .await;
    let text = message(&obj, "Ready");
    assert!(
        text.starts_with("Helm install failed for release \"missing-chart\": ")
            && text.contains("9.9.9"),
        "{text}"
    );
    // Helm's message as Helm words it: no library call name or error class around it (those are logged).
    assert!(
        !text.contains("helm_install") && !text.contains("helm error"),
        "{text}"
    );
    // What Helm's CLI prints after `Error: ` for the same chart, in `lastError` raw as the Go operator keeps it.
    let last = obj["status"]["lastError"].as_str().unwrap_or_default();
    assert!(
        last.starts_with("chart \"demo\" version \"9.9.9\" not found in http://")
            && last.ends_with(" repository")
            && text.ends_with(last),
        "{last}"
    );
    let obj = env
        .wait("bad-values", "bad values", |o| {
            is(o, "Ready", "False", "ReconcileFailed")
        })
        .await;
    let text = message(&obj, "Ready");
    assert!(
        text.starts_with("Helm install failed for release \"bad-values\": "),
        "{text}"
    );
    let obj = env
        .wait("unreachable", "an unreachable cluster", |o| {
            is(o, "Ready", "False", "ReconcileFailed")
        })
        .await;
    assert!(!message(&obj, "Ready").is_empty());
    let obj = env
        .wait("no-secret", "a missing kubeconfig", |o| {
            is(o, "Ready", "False", "MissingSecret")
        })
        .await;
    assert_eq!(
        message(&obj, "Ready"),
        "kubeconfig Secret \"platform/nope\" does not exist"
    );
    let obj = env
        .wait("no-cluster", "a missing cluster", |o| {
            is(o, "Accepted", "False", "MissingCluster")
        })
        .await;
    assert_eq!(
        message(&obj, "Ready"),
        "OmniCluster \"nope\" does not exist"
    );
    for name in ["missing-chart", "bad-values", "no-secret", "no-cluster"] {
        assert!(env.revisions(name).is_empty(), "{name} made a revision");
    }
    // No kubeconfig ever shows in a status.
    for name in [
        "missing-chart",
        "bad-values",
        "unreachable",
        "no-secret",
        "no-cluster",
    ] {
        let status = env.get(name)["status"].to_string();
        assert!(
            !status.contains("client-key-data") && !status.contains("token"),
            "{name}: {status}"
        );
    }
}

/// A release removed behind the operator's back is noticed at the next reconcile (the periodic check, or any
/// trigger) and installed again; `deletionPolicy: Orphan` then leaves the release in the workload cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_removed_behind_its_back_comes_back_and_orphan_leaves_it_behind() {
    let env = Env::start().await;
    env.apply(&env.release("kept", json!({"deletionPolicy": "Orphan"})))
        .await;
    env.wait("kept", "installed", |o| {
        is(o, "Ready", "True", "HelmInstalled")
    })
    .await;
    // Someone deletes Helm's record of the release in the workload cluster.
    let client = env.workload.client().await.expect("client");
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client, "apps");
    secrets
        .delete("sh.helm.release.v1.kept.v1", &DeleteParams::default())
        .await
        .expect("delete the release Secret");
    env.touch_kubeconfig(1).await;
    env.wait_until("the release to be installed again", || {
        env.revisions("kept")
            .first()
            .is_some_and(|(_, s)| s["metadata"]["labels"]["status"] == "deployed")
    })
    .await;
    env.wait("kept", "Ready again", |o| {
        is(o, "Ready", "True", "HelmInstalled")
    })
    .await;
    env.delete("kept").await;
    env.wait("kept", "gone", Value::is_null).await;
    let revisions = env.revisions("kept");
    assert_eq!(revisions.len(), 1);
    assert_eq!(revisions[0].1["metadata"]["labels"]["status"], "deployed");
}

/// A changed release identity (issue 29, Flux's rule): renaming the release uninstalls the old one before the new
/// one is installed, with an Event saying so; under `deletionPolicy: Orphan` the old one is left, and an Event
/// says that instead. The Go operator left the old release behind without a word.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renamed_release_uninstalls_the_old_one_first_unless_orphaned() {
    let env = Env::start().await;
    env.apply(&env.release("moved", json!({"releaseName": "first"})))
        .await;
    env.apply(&env.release(
        "left",
        json!({"releaseName": "one", "deletionPolicy": "Orphan"}),
    ))
    .await;
    for name in ["moved", "left"] {
        env.wait(name, "installed", |o| {
            is(o, "Ready", "True", "HelmInstalled")
        })
        .await;
    }
    assert_eq!(env.revisions("first").len(), 1);

    env.apply(&env.release("moved", json!({"releaseName": "second"})))
        .await;
    env.apply(&env.release(
        "left",
        json!({"releaseName": "two", "deletionPolicy": "Orphan"}),
    ))
    .await;
    let moved = env
        .wait("moved", "the new release installed", |o| {
            is(o, "Ready", "True", "HelmInstalled") && o["status"]["releaseName"] == "second"
        })
        .await;
    assert_eq!(moved["status"]["namespace"], "apps");
    assert!(
        env.revisions("first").is_empty(),
        "the old release is uninstalled: {:?}",
        env.revisions("first")
    );
    assert_eq!(env.revisions("second").len(), 1);
    env.wait_until("the uninstall's Event", || {
        env.events("moved").iter().any(|(t, r, m)| {
            t == "Normal"
                && r == "UninstallSucceeded"
                && m == "the release identity changed: uninstalled Helm release \"first\" in namespace \"apps\" \
                         (kubeconfig Secret \"edge-kubeconfig\") before installing release \"second\""
        })
    })
    .await;

    env.wait("left", "the new release installed", |o| {
        is(o, "Ready", "True", "HelmInstalled") && o["status"]["releaseName"] == "two"
    })
    .await;
    assert_eq!(
        env.revisions("one").len(),
        1,
        "Orphan leaves the old release"
    );
    assert_eq!(env.revisions("two").len(), 1);
    env.wait_until("the orphaning's Event", || {
        env.events("left")
            .iter()
            .any(|(t, r, _)| t == "Normal" && r == "ReleaseOrphaned")
    })
    .await;

    // Another kubeconfig Secret: the sandbox lets the plugin reach a cluster only through the Secret its spec
    // names, so the release behind the old one cannot be looked at; it is said, and the new one goes ahead (here
    // the same cluster, so the same release).
    let old = env
        .kube
        .get("v1", "Secret", NS, KUBECONFIG)
        .expect("the kubeconfig Secret");
    env.kube
        .apply(&json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "edge-kubeconfig-2", "namespace": NS}, "data": old["data"]}))
        .await
        .expect("a second kubeconfig Secret");
    env.apply(&env.release(
        "moved",
        json!({"releaseName": "second", "kubeconfigSecretRef": {"name": "edge-kubeconfig-2"}}),
    ))
    .await;
    env.wait("moved", "ready through the new Secret", |o| {
        is(o, "Ready", "True", "HelmInstalled")
            && o["status"]["kubeconfigSecretRef"] == "edge-kubeconfig-2"
    })
    .await;
    env.wait_until("the Warning about the old cluster", || {
        env.events("moved").iter().any(|(t, r, m)| {
            t == "Warning"
                && r == "ReleaseOrphaned"
                && m.contains("cannot be reached to uninstall it")
        })
    })
    .await;
    assert_eq!(
        env.revisions("second").len(),
        1,
        "the release itself is untouched"
    );
}

/// The Helm worker killed in the middle of an install is restarted; the revision it left `pending-install` is
/// recovered and the release converges, with nothing changed in the object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_install_is_restarted_and_the_release_converges() {
    let env = Env::start().await;
    // Pods that are not ready yet keep Helm's wait busy while the worker is killed.
    env.apply(&env.release(
        "crash",
        json!({"wait": true, "timeout": "120s", "chart": {"values": {"image": {"repository": NEVER_READY}}}}),
    ))
    .await;
    // Killed inside Helm's wait: the revision pending and the Deployment applied (Helm writes the revision
    // first, so under load a kill at the revision alone could come before the Deployment exists).
    env.wait_until(
        "Helm to write the pending-install revision and apply the Deployment",
        || {
            env.revisions("crash")
                .first()
                .is_some_and(|(_, s)| s["metadata"]["labels"]["status"] == "pending-install")
                && env
                    .workload
                    .get("apps/v1", "Deployment", "apps", "crash-demo")
                    .is_some()
        },
    )
    .await;
    let pid = env.engine.worker_pid().await.expect("a running worker");
    let starts = env.engine.starts();
    // SIGKILL, as the OOM killer or a Go fatal error would end it.
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let obj = env
        .wait("crash", "the lost action reported", |o| {
            is(o, "Ready", "False", "ReconcileFailed")
        })
        .await;
    assert!(message(&obj, "Ready").contains("worker exited"), "{obj:#}");
    // The workload turns healthy by itself (as an image that finally pulls would): kube-sim's `ready` marker on
    // the Deployment's pod template, a field Helm's apply does not own, so the retry's apply keeps it.
    let client = env.workload.client().await.expect("client");
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(client, "apps");
    deployments
        .patch(
            "crash-demo",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"template": {"metadata": {"annotations": {
                kube_sim::workloads::BEHAVIOR_ANNOTATION: "ready"}}}}})),
        )
        .await
        .expect("annotate the Deployment");
    // The retry (after the host's backoff) recovers the pending revision and upgrades over it.
    let obj = env
        .wait("crash", "converged", |o| {
            is(o, "Ready", "True", "HelmUpgraded")
        })
        .await;
    assert_eq!(obj["status"]["releaseStatus"], "deployed");
    assert_eq!(
        obj["metadata"]["generation"], 1,
        "the object was never changed"
    );
    assert!(env.engine.starts() > starts, "the worker was restarted");
    assert_ne!(env.engine.worker_pid().await, Some(pid));
    let revisions = env.revisions("crash");
    assert_eq!(
        revisions
            .iter()
            .map(|(v, s)| (*v, s["metadata"]["labels"]["status"].clone()))
            .collect::<Vec<_>>(),
        // Helm supersedes the revision an upgrade replaces, failed or not.
        vec![(1, json!("superseded")), (2, json!("deployed"))],
        "the pending revision recovered, the next one deployed"
    );
    // The recovery's own mark: the revision the dead action left pending was marked failed before the upgrade.
    let description = stored_release(&revisions[0].1)["info"]["description"].clone();
    assert!(
        description
            .as_str()
            .unwrap_or_default()
            .contains("pending-install interrupted"),
        "{description}"
    );
}

/// A real OCI registry on loopback (plain HTTP) holding the demo chart, pushed by Helm; `remote` is its
/// `oci://` repository, the only chart source the environment allows (plain HTTP by the operator's setting).
async fn oci_env() -> (super::helm_fixtures::Registry, String, Env) {
    let registry = registry().await;
    let remote = push_demo_chart(&registry);
    let sources = ChartSources::only([remote.as_str()])
        .expect("sources")
        .with_plain_http([registry.host.as_str()]);
    let env = Env::start_with(sources).await;
    (registry, remote, env)
}

/// A chart pushed by Helm to a real OCI registry on loopback installs from its `oci://` reference (the
/// registry is plain HTTP, which only the operator's setting allows; a values file is read from its chart layer),
/// and a chart source outside the operator's allowed ones is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oci_chart_installs_and_sources_outside_the_allowed_ones_are_refused() {
    let (_registry, remote, env) = oci_env().await;
    // Its own values.yaml listed as a values file: the chart's layer is pulled and read too.
    env.apply(&env.release(
        "from-oci",
        json!({"chart": {"repository": remote, "chart": format!("{remote}/demo"),
            "valuesFiles": ["values.yaml"]}}),
    ))
    .await;
    let obj = env
        .wait("from-oci", "installed", |o| {
            is(o, "Ready", "True", "HelmInstalled")
        })
        .await;
    assert_eq!(obj["status"]["chart"], format!("{remote}/demo"));
    assert_eq!(
        stored_release(&env.revisions("from-oci")[0].1)["chart"]["metadata"]["name"],
        "demo"
    );
    // The loopback HTTP repository is not among the allowed sources.
    env.apply(&env.release("elsewhere", json!({}))).await;
    let obj = env
        .wait("elsewhere", "refused", |o| {
            is(o, "Ready", "False", "ReconcileFailed")
        })
        .await;
    assert!(
        message(&obj, "Ready").contains("not among the operator's allowed chart sources"),
        "{obj:#}"
    );
    assert!(env.revisions("elsewhere").is_empty());
}

/// A chart download that stalls halfway (the repository sends half the archive and then nothing): the install
/// gives up at the release's own timeout and says so, the worker stays free for other releases meanwhile, and once
/// the repository answers in full the release converges with nothing changed in the object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_chart_download_times_out_and_the_release_converges_once_it_flows() {
    let env = Env::start().await;
    env.repo.faults().stall_downloads(true);
    env.apply(&env.release("stalled", json!({"timeout": "5s"})))
        .await;
    // The action's deadline is its timeout plus the engine's margin for Helm to stop by itself; the download
    // ignores Helm's cancel, so the worker holding it is stopped too.
    let starts = env.engine.starts();
    let obj = env
        .wait("stalled", "the stalled download reported", |o| {
            is(o, "Ready", "False", "ReconcileFailed")
        })
        .await;
    assert!(
        message(&obj, "Ready").contains("the Helm action did not finish within 65s"),
        "{obj:#}"
    );
    assert!(env.repo.faults().stalled() >= 1);
    assert!(env.revisions("stalled").is_empty(), "nothing was installed");
    // Another release, from a repository that answers, installs while the download is still held.
    let other = chart_repo().await;
    env.apply(&env.release(
        "other",
        json!({"chart": {"repository": other.url, "chart": "demo", "version": "0.1.0"}}),
    ))
    .await;
    env.wait("other", "installed beside the stalled one", |o| {
        is(o, "Ready", "True", "HelmInstalled")
    })
    .await;
    env.repo.faults().stall_downloads(false);
    let obj = env
        .wait("stalled", "converged", |o| {
            is(o, "Ready", "True", "HelmInstalled")
        })
        .await;
    assert_eq!(
        obj["metadata"]["generation"], 1,
        "the object was never changed"
    );
    // The abandoned action never wrote once its download flowed again: one revision, the retry's.
    assert_eq!(
        env.revisions("stalled")
            .iter()
            .map(|(v, s)| (*v, s["metadata"]["labels"]["status"].clone()))
            .collect::<Vec<_>>(),
        vec![(1, json!("deployed"))]
    );
    assert!(
        env.engine.starts() > starts,
        "the worker holding the download was replaced"
    );
}

/// An OCI registry that answers 500: the release reports the registry's failure and installs nothing; once the
/// registry answers again it converges, with nothing changed in the object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oci_registry_answering_500_fails_the_release_until_it_recovers() {
    let registry = registry().await;
    push_demo_chart(&registry);
    let proxy = FaultyProxy::start(&registry.host).await;
    proxy.fail(true);
    let remote = format!("oci://{}/charts", proxy.host);
    let sources = ChartSources::only([remote.as_str()])
        .expect("sources")
        .with_plain_http([proxy.host.as_str()]);
    let env = Env::start_with(sources).await;
    env.apply(&env.release(
        "oci-500",
        json!({"chart": {"repository": remote, "chart": format!("{remote}/demo")}}),
    ))
    .await;
    let obj = env
        .wait("oci-500", "the registry's failure reported", |o| {
            is(o, "Ready", "False", "ReconcileFailed")
        })
        .await;
    let text = message(&obj, "Ready");
    assert!(
        text.starts_with("Helm install failed for release \"oci-500\": ")
            && text.contains("/v2/charts/demo/manifests/0.1.0")
            && text.contains("response status code 500"),
        "{text}"
    );
    assert!(proxy.failed() >= 1);
    assert!(env.revisions("oci-500").is_empty(), "nothing was installed");
    proxy.fail(false);
    let obj = env
        .wait("oci-500", "converged", |o| {
            is(o, "Ready", "True", "HelmInstalled")
        })
        .await;
    assert_eq!(
        obj["metadata"]["generation"], 1,
        "the object was never changed"
    );
}

/// The Go operator's own sample (config/samples, a metrics-server release into `kube-system`, in the Go operator's
/// namespace) and the seed's example (a Cilium release) apply unchanged but for their chart repository, pointed at
/// the local one (which serves `helm create` charts under their names and versions), and reach Ready.
/// (The quickstart's release reaches Ready in `dev`: cli.rs `dev_settles_on_the_quickstart_examples`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_go_operators_sample_and_the_seed_example_apply_unchanged_and_become_ready() {
    let env = Env::start().await;
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/api/tests/fixtures");
    let kubeconfig = env
        .kube
        .get("v1", "Secret", NS, KUBECONFIG)
        .expect("kubeconfig");
    // (file, its original repository, the namespace of the release's Helm storage, its release name)
    let cases = [
        (
            "go-sample-omnihelmrelease.yaml",
            "https://kubernetes-sigs.github.io/metrics-server/",
            "kube-system",
            "metrics-server",
        ),
        (
            "omnihelmrelease.yaml",
            "https://helm.cilium.io",
            "default",
            "cilium",
        ),
    ];
    let mut applied = Vec::new();
    for (file, repository, _, _) in cases {
        let text = std::fs::read_to_string(fixtures.join(file)).expect("the manifest");
        let mut obj: Value = yaml_serde::from_str(&text).expect("YAML");
        let ns = obj["metadata"]["namespace"]
            .as_str()
            .expect("a namespace")
            .to_string();
        let secret = obj["spec"]["kubeconfigSecretRef"]["name"]
            .as_str()
            .expect("a Secret")
            .to_string();
        let cluster = obj["spec"]["clusterRef"]["name"]
            .as_str()
            .expect("a cluster")
            .to_string();
        // What the manifest refers to: its namespace, the OmniCluster, and the kubeconfig Secret.
        env.apply(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
            .await;
        env.apply(&json!({"apiVersion": API, "kind": "OmniCluster", "metadata": {"name": cluster, "namespace": ns},
            "spec": {"connectionRef": {"name": "omni"}, "kubernetes": {"version": "v1.35.0"}, "talos": {"version": "v1.13.2"}}}))
            .await;
        env.apply(&json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": secret, "namespace": ns},
            "data": kubeconfig["data"]}))
            .await;
        assert_eq!(obj["spec"]["chart"]["repository"], repository);
        obj["spec"]["chart"]["repository"] = json!(env.repo.url);
        env.apply(&obj).await;
        applied.push((ns, obj));
    }
    for ((ns, obj), (_, _, storage, release)) in applied.iter().zip(cases) {
        let name = obj["metadata"]["name"].as_str().expect("a name");
        let deadline = Instant::now() + WAIT;
        let ready = loop {
            let now = env
                .kube
                .get(API, "OmniHelmRelease", ns, name)
                .unwrap_or(Value::Null);
            if is(&now, "Ready", "True", "HelmInstalled") {
                break now;
            }
            assert!(
                Instant::now() < deadline,
                "{ns}/{name} never became Ready: {:#}\n{}",
                now["status"],
                support::log_tail(40)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(
            ready["status"]["chartVersion"],
            obj["spec"]["chart"]["version"]
        );
        assert_eq!(ready["status"]["releaseName"], release);
        let stored = env
            .workload
            .get(
                "v1",
                "Secret",
                storage,
                &format!("sh.helm.release.v1.{release}.v1"),
            )
            .unwrap_or_else(|| panic!("Helm's release Secret for {release} in {storage}"));
        assert_eq!(
            stored_release(&stored)["config"],
            obj["spec"]["chart"]["values"],
            "the values reach Helm as written"
        );
    }
}

/// Chart verification (`chart.verify`, cosign): an OCI chart whose manifest carries no signature is refused
/// with the reason in the condition and nothing installed; once the manifest is signed (as `cosign sign --key`
/// signs it) with a key the object's Secret holds, a release of it installs. A signature by another key is
/// refused too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsigned_chart_is_refused_and_a_signed_one_installs() {
    use omni_operator::registry::{Access, Credentials, signature};

    let (_registry, remote, env) = oci_env().await;
    let (private, public) = signature::generate_key_pair(b"pw").expect("keygen");
    let (stranger, _) = signature::generate_key_pair(b"pw").expect("keygen");
    env.kube
        .apply(&json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "chart-keys", "namespace": NS},
            "stringData": {"cosign.pub": public}}))
        .await
        .expect("the public key");
    let verified = |name: &str| {
        env.release(
            name,
            json!({"chart": {"repository": remote, "chart": format!("{remote}/demo"),
                "verify": {"provider": "cosign", "secretRef": {"name": "chart-keys"}}}}),
        )
    };
    env.apply(&verified("unsigned")).await;
    let refused = env
        .wait("unsigned", "refused", |o| {
            is(o, "Ready", "False", "ReconcileFailed")
        })
        .await;
    let text = message(&refused, "Ready");
    assert!(
        text.contains("is not verified") && text.contains("has no signature"),
        "{text}"
    );
    assert!(env.revisions("unsigned").is_empty());

    let (reference, digest) = omni_operator::helm::chart_digest::oci_manifest(
        &format!("{remote}/demo"),
        "0.1.0",
        true,
        None,
    )
    .await
    .expect("the chart's manifest");
    let access = Access {
        auth: Credentials::Anonymous,
        plain_http: true,
    };
    signature::sign(&reference, &digest, stranger.as_bytes(), b"pw", &access)
        .await
        .expect("signed by a stranger");
    env.apply(&verified("stranger-signed")).await;
    let refused = env
        .wait("stranger-signed", "refused", |o| {
            is(o, "Ready", "False", "ReconcileFailed")
        })
        .await;
    assert!(
        message(&refused, "Ready").contains("none made by a trusted key"),
        "{refused:#}"
    );

    signature::sign(&reference, &digest, private.as_bytes(), b"pw", &access)
        .await
        .expect("signed");
    env.apply(&verified("signed")).await;
    env.wait("signed", "installed", |o| {
        is(o, "Ready", "True", "HelmInstalled")
    })
    .await;
}
