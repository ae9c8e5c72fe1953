//! The real libhelm_c (Helm SDK v4.2.3) through the wrapper: versions, strict options, rendering, and a release's
//! whole life against kube-sim with its workload controllers (so Helm's readiness wait sees a Deployment become
//! available, and client-go's protobuf Secrets land in kube-sim).

use std::path::PathBuf;
use std::sync::OnceLock;

use helm_c::{ChartSource, ErrorCode, Helm};
use serde_json::{Value, json};

/// The library: `HELM_C_LIB`, or fetched by the project's own set-up (`tools/fetch-helm-c`: pip, pinned version,
/// sha256). Never skipped: without it the test fails and says how to get it.
fn helm() -> Helm {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    let path = LIB.get_or_init(|| {
        if let Some(p) = std::env::var_os("HELM_C_LIB").filter(|p| !p.is_empty()) {
            return PathBuf::from(p);
        }
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tools/fetch-helm-c");
        let out = std::process::Command::new(&script)
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", script.display()));
        assert!(
            out.status.success(),
            "tools/fetch-helm-c failed (it needs python3 with pip and the package index); set HELM_C_LIB to \
             libhelm_c.so.0.2.2 instead:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8(out.stdout).expect("a path").trim())
    });
    Helm::load(path).expect("libhelm_c loads")
}

#[test]
fn the_library_is_the_pinned_version_and_renders_a_chart() {
    let helm = helm();
    assert_eq!(helm.versions(), ("0.2.2".to_string(), "v4.2.3".to_string()));
    let dir = tempfile::tempdir().unwrap();
    let path = helm.create_chart("demo", dir.path()).unwrap();
    let chart = helm.load_chart(std::path::Path::new(&path)).unwrap();
    assert_eq!(chart.metadata().unwrap()["name"], "demo");
    let rendered = chart
        .render(
            &json!({"replicaCount": 3}),
            &json!({"name": "r1", "namespace": "apps"}),
        )
        .unwrap();
    let deployment = rendered["demo/templates/deployment.yaml"].as_str().unwrap();
    assert!(deployment.contains("replicas: 3"), "{deployment}");
    assert!(
        deployment.contains("namespace: apps") || deployment.contains("name: r1-demo"),
        "{deployment}"
    );
    // Options are parsed strictly: an unknown key is an invalid argument naming it.
    let bad = chart
        .render(&json!({}), &json!({"bogus": true}))
        .unwrap_err();
    assert_eq!(bad.code(), Some(ErrorCode::InvalidArgument));
    assert!(bad.to_string().contains("bogus"), "{bad}");
    let missing = helm.load_chart(&dir.path().join("nope")).unwrap_err();
    assert!(missing.code().is_some(), "{missing}");
    drop(chart);
}

async fn workload_cluster() -> kube_sim::KubeSim {
    kube_sim::KubeSim::builder()
        .workloads(kube_sim::workloads::WorkloadOptions::default())
        .start()
        .await
        .expect("kube-sim")
}

/// Runs a blocking Helm call off the test's runtime, so kube-sim keeps serving meanwhile.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f)
        .await
        .expect("the Helm call ran")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_installs_waits_upgrades_and_uninstalls_against_kube_sim() {
    let sim = workload_cluster().await;
    let kubeconfig = sim.kubeconfig(&sim.admin());
    let dir = tempfile::tempdir().unwrap();
    let chart_dir = dir.path().to_path_buf();
    let summary = blocking(move || {
        let helm = helm();
        let path = helm.create_chart("demo", &chart_dir).unwrap();
        let chart = helm.load_chart(std::path::Path::new(&path)).unwrap();
        let config = helm
            .config(&json!({"kubeconfig_content": kubeconfig, "namespace": "default"}))
            .unwrap();
        let options = json!({"namespace": "default", "wait": "watcher", "timeout_seconds": 60,
            "server_side_apply": true, "force_conflicts": true});
        let installed = config
            .install(
                None,
                ChartSource::Loaded(&chart),
                "web",
                &json!({"replicaCount": 2}),
                &options,
            )
            .unwrap();
        let mut upgrade_options = options.clone();
        upgrade_options["server_side_apply"] = json!("true");
        let upgraded = config
            .upgrade(
                None,
                ChartSource::Loaded(&chart),
                "web",
                &json!({"replicaCount": 3}),
                &upgrade_options,
            )
            .unwrap();
        let history = config.history("web", &json!({})).unwrap();
        (installed, upgraded, history)
    })
    .await;
    let (installed, upgraded, history) = summary;
    assert_eq!(installed["status"], "deployed", "{installed}");
    assert_eq!(installed["revision"], 1);
    assert_eq!(upgraded["revision"], 2);
    assert_eq!(history.as_array().map(Vec::len), Some(2), "{history}");
    // Helm waited for what the chart installed; the workload controllers made it available.
    let d = sim
        .get("apps/v1", "Deployment", "default", "web-demo")
        .expect("the chart's Deployment");
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(d["status"]["availableReplicas"], 3, "{}", d["status"]);
    // Helm's own storage: one Secret per revision, in Helm's format.
    for revision in [1, 2] {
        let s = sim
            .get(
                "v1",
                "Secret",
                "default",
                &format!("sh.helm.release.v1.web.v{revision}"),
            )
            .expect("release Secret");
        assert_eq!(s["type"], "helm.sh/release.v1");
        assert_eq!(s["metadata"]["labels"]["owner"], "helm");
    }
    let kubeconfig = sim.kubeconfig(&sim.admin());
    let (uninstalled, listed) = blocking(move || {
        let helm = helm();
        let config = helm
            .config(&json!({"kubeconfig_content": kubeconfig, "namespace": "default"}))
            .unwrap();
        let u = config.uninstall("web", &json!({"wait": "watcher", "timeout_seconds": 60}));
        let l = config.list(&json!({})).unwrap();
        (u, l)
    })
    .await;
    uninstalled.expect("uninstall");
    assert_eq!(listed.as_array().map(Vec::len), Some(0), "{listed}");
    assert!(
        sim.get("apps/v1", "Deployment", "default", "web-demo")
            .is_none()
    );
    assert!(
        sim.get("v1", "Secret", "default", "sh.helm.release.v1.web.v1")
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_never_ready_install_times_out_and_rollback_on_failure_removes_it() {
    let sim = workload_cluster().await;
    let kubeconfig = sim.kubeconfig(&sim.admin());
    let dir = tempfile::tempdir().unwrap();
    let chart_dir = dir.path().to_path_buf();
    let result: Result<Value, helm_c::HelmError> = blocking(move || {
        let helm = helm();
        let path = helm.create_chart("demo", &chart_dir).unwrap();
        let chart = helm.load_chart(std::path::Path::new(&path)).unwrap();
        let config = helm
            .config(&json!({"kubeconfig_content": kubeconfig, "namespace": "default"}))
            .unwrap();
        config.install(
            None,
            ChartSource::Loaded(&chart),
            "stuck",
            &json!({"image": {"repository": kube_sim::workloads::NEVER_READY_IMAGE, "tag": "1"}}),
            &json!({"namespace": "default", "wait": "watcher", "timeout_seconds": 5, "rollback_on_failure": true}),
        )
    })
    .await;
    let err = result.expect_err("a Deployment that never becomes ready cannot be waited for");
    assert_eq!(err.code(), Some(ErrorCode::Cancelled), "{err}");
    assert!(
        err.to_string().contains("rollback-on-failure") || err.to_string().contains("deadline"),
        "{err}"
    );
    // rollback_on_failure uninstalled the failed release.
    assert!(
        sim.get("v1", "Secret", "default", "sh.helm.release.v1.stuck.v1")
            .is_none()
    );
    assert!(
        sim.get("apps/v1", "Deployment", "default", "stuck-demo")
            .is_none()
    );
}

#[test]
fn a_chart_repository_index_is_generated_for_packaged_charts() {
    let helm = helm();
    let dir = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let path = helm.create_chart("demo", src.path()).unwrap();
    let chart = helm.load_chart(std::path::Path::new(&path)).unwrap();
    let archive = chart.save(dir.path()).unwrap();
    assert!(archive.ends_with("demo-0.1.0.tgz"), "{archive}");
    let index = helm
        .repo_index(
            dir.path(),
            &json!({"base_url": "http://127.0.0.1:1/charts"}),
        )
        .unwrap();
    let index: Value = serde_json::from_str(&index).expect("the index is JSON");
    let entry = &index["entries"]["demo"][0];
    assert_eq!(entry["version"], "0.1.0", "{index}");
    assert_eq!(
        entry["urls"][0], "http://127.0.0.1:1/charts/demo-0.1.0.tgz",
        "{index}"
    );
    assert!(
        entry["digest"].as_str().is_some_and(|d| d.len() == 64),
        "{index}"
    );
    let bad = helm
        .repo_index(dir.path(), &json!({"url": "x"}))
        .unwrap_err();
    assert_eq!(bad.code(), Some(ErrorCode::InvalidArgument));
}
