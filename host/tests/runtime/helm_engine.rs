//! The Helm engine: the real `omni-operator helm-worker` process with the real libhelm_c, driven by
//! `WorkerEngine` against kube-sim with its workload controllers: actions answer, a dead worker is replaced,
//! actions on one release never overlap, a deadline cancels through Helm, and a missing library says so.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use omni_operator::helm::protocol::{ChartRef, Op, Target};
use omni_operator::helm::{EngineError, HelmEngine, WorkerEngine, WorkerOptions};
use serde_json::{Value, json};

use super::helm_fixtures::{chart_repo, demo_chart, lib, push_demo_chart, registry};

fn engine(lib: PathBuf, concurrency: usize) -> WorkerEngine {
    engine_in(lib, concurrency, std::env::temp_dir())
}

/// An engine whose workers get their scratch directories under `scratch_base`.
fn engine_in(lib: PathBuf, concurrency: usize, scratch_base: PathBuf) -> WorkerEngine {
    WorkerEngine::new(WorkerOptions {
        program: PathBuf::from(env!("CARGO_BIN_EXE_omni-operator")),
        lib,
        concurrency,
        memory_limit: Some(omni_operator::helm::DEFAULT_WORKER_MEMORY),
        scratch_base,
    })
}

async fn workload() -> (kube_sim::KubeSim, Target) {
    let sim = kube_sim::KubeSim::builder()
        .workloads(kube_sim::workloads::WorkloadOptions::default())
        .start()
        .await
        .expect("kube-sim");
    let target = Target {
        kubeconfig: sim.kubeconfig(&sim.admin()),
        namespace: "default".into(),
        as_user: None,
    };
    (sim, target)
}

const MINUTE: Duration = Duration::from_secs(60);

/// An install of the demo chart whose Deployment never becomes ready: Helm's wait holds the action until it is
/// cancelled or its worker dies.
fn never_ready_install(target: &Target, release: &str) -> Op {
    Op::Install {
        target: target.clone(),
        chart: ChartRef::Archive(demo_chart()),
        release: release.into(),
        values: json!({"image": {"repository": kube_sim::workloads::NEVER_READY_IMAGE}}),
        options: json!({"namespace": "default", "wait": "watcher", "timeout_seconds": 300}),
        auth: None,
    }
}

/// `op` on release `default/<release>`, run in a task of its own.
fn in_background(
    engine: &std::sync::Arc<WorkerEngine>,
    op: Op,
    release: &str,
    deadline: Duration,
) -> tokio::task::JoinHandle<Result<Value, EngineError>> {
    let engine = engine.clone();
    let release = format!("default/{release}");
    tokio::spawn(async move { engine.run(op, Some(release), deadline).await })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_answers_installs_and_is_replaced_when_it_dies() {
    let (sim, target) = workload().await;
    let engine = engine(lib(), 4);
    let versions = engine
        .run(Op::Versions, None, MINUTE)
        .await
        .expect("versions");
    assert_eq!(versions, json!({"helm_c": "0.2.2", "helm": "v4.2.3"}));
    let install = Op::Install {
        target: target.clone(),
        chart: ChartRef::Archive(demo_chart()),
        release: "web".into(),
        values: json!({"replicaCount": 2}),
        options: json!({"namespace": "default", "wait": "watcher", "timeout_seconds": 60}),
        auth: None,
    };
    let installed = engine
        .run(install, Some("default/web".into()), MINUTE)
        .await
        .expect("install");
    assert_eq!(installed["status"], "deployed", "{installed}");
    // Helm's server-side apply names the worker's program as field manager.
    let d = sim
        .get("apps/v1", "Deployment", "default", "web-demo")
        .expect("installed");
    let managers: Vec<&str> = d["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert!(managers.contains(&"omni-operator"), "{managers:?}");

    // The worker dies (as on a Go fatal error): the next action gets a new one.
    let pid = engine.worker_pid().await.expect("a worker runs");
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill");
    let started = Instant::now();
    let status = loop {
        match engine
            .run(
                Op::Status {
                    target: target.clone(),
                    release: "web".into(),
                },
                Some("default/web".into()),
                // A new worker loads the 81 MiB library and starts Go before it answers; with every Helm test
                // of the suite running at once on two cores that has taken over a minute.
                3 * MINUTE,
            )
            .await
        {
            Ok(s) => break s,
            // An action sent before the death was noticed is lost; the one after it runs on a new worker.
            Err(EngineError::WorkerLost) if started.elapsed() < MINUTE => continue,
            Err(e) => panic!("status after the worker died: {e}"),
        }
    };
    assert_eq!(status["status"], "deployed");
    assert!(engine.starts() >= 2, "a new worker was started");
    assert_ne!(engine.worker_pid().await, Some(pid));
}

/// Files under `dir` (recursively) whose names start with `prefix`.
fn files_named(dir: &std::path::Path, prefix: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with(prefix) {
            found.push(path.clone());
        }
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            found.extend(files_named(&path, prefix));
        }
    }
    found
}

/// Helm writes the workload cluster's kubeconfig (its credentials) into its temporary directory for the length of an
/// action and removes it at the end; a worker killed mid-action cannot. Each worker's temporary directory is a
/// private one of its own, removed once the worker has exited, and the last one goes at shutdown: nothing is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_action_leaves_no_credentials_behind() {
    let (_sim, target) = workload().await;
    let base = tempfile::tempdir().expect("temp dir");
    let engine = std::sync::Arc::new(engine_in(lib(), 2, base.path().to_path_buf()));
    let running = in_background(
        &engine,
        never_ready_install(&target, "stuck"),
        "stuck",
        5 * MINUTE,
    );
    // Mid-action: Helm's kubeconfig is in the worker's own directory (a new worker loads the 81 MiB library first).
    let started = Instant::now();
    let kubeconfig = loop {
        if let Some(found) = files_named(base.path(), "helm-c-kubeconfig").pop() {
            break found;
        }
        assert!(
            started.elapsed() < 3 * MINUTE,
            "Helm never wrote its kubeconfig under the worker's directory"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let scratch = kubeconfig.parent().expect("in a directory").to_path_buf();
    assert_eq!(
        scratch.parent(),
        Some(base.path()),
        "{}",
        kubeconfig.display()
    );
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&scratch)
            .expect("scratch")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700, "private to the operator");
    }

    let pid = engine.worker_pid().await.expect("a worker runs");
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill");
    let lost = running.await.expect("the install task");
    assert!(lost.is_err(), "the install died with its worker");

    // The next action runs on a new worker; by then the dead one's directory, and the kubeconfig in it, are gone.
    let started = Instant::now();
    loop {
        match engine
            .run(
                Op::Status {
                    target: target.clone(),
                    release: "stuck".into(),
                },
                Some("default/stuck".into()),
                3 * MINUTE,
            )
            .await
        {
            // Killed before or after Helm stored the release: either way a new worker answered.
            Ok(_) | Err(EngineError::Helm { .. }) => break,
            Err(EngineError::WorkerLost) if started.elapsed() < MINUTE => continue,
            Err(e) => panic!("status after the worker died: {e}"),
        }
    }
    assert_ne!(engine.worker_pid().await, Some(pid));
    assert!(
        !scratch.exists(),
        "the killed worker's directory is removed"
    );
    assert_eq!(files_named(base.path(), "helm-c-"), Vec::<PathBuf>::new());

    // Shutdown closes the worker; its supervisor removes the directory once the process has exited.
    engine.shutdown(MINUTE).await;
    let started = Instant::now();
    loop {
        let left: Vec<PathBuf> = std::fs::read_dir(base.path())
            .expect("base")
            .map(|e| e.expect("entry").path())
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(started.elapsed() < MINUTE, "left after shutdown: {left:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_cancels_the_action_through_helm() {
    let (_sim, target) = workload().await;
    let engine = engine(lib(), 4);
    let install = never_ready_install(&target, "stuck");
    let started = Instant::now();
    let err = engine
        .run(
            install,
            Some("default/stuck".into()),
            Duration::from_secs(3),
        )
        .await
        .expect_err("the wait never ends");
    assert!(matches!(err, EngineError::Timeout(_)), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "cancelled promptly"
    );
    // Helm saw the cancellation: the release is failed, not pending forever.
    let status = engine
        .run(
            Op::Status {
                target,
                release: "stuck".into(),
            },
            Some("default/stuck".into()),
            MINUTE,
        )
        .await
        .expect("status");
    assert_eq!(status["status"], "failed", "{status}");
}

/// Shutdown cancels a running action through its Helm context: Helm records the release as failed (not
/// `pending-install`, which would block the next start), and the engine takes no more actions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_cancels_running_actions_through_helm() {
    let (sim, target) = workload().await;
    let engine = std::sync::Arc::new(engine(lib(), 4));
    let running = in_background(
        &engine,
        never_ready_install(&target, "halted"),
        "halted",
        10 * MINUTE,
    );
    // Until Helm has written the pending revision and is waiting.
    let deadline = Instant::now() + MINUTE;
    while sim
        .get("v1", "Secret", "default", "sh.helm.release.v1.halted.v1")
        .is_none_or(|s| s["metadata"]["labels"]["status"] != "pending-install")
    {
        assert!(Instant::now() < deadline, "the install never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let started = Instant::now();
    engine.shutdown(MINUTE).await;
    assert!(
        started.elapsed() < MINUTE,
        "the action ended when cancelled"
    );
    let err = running
        .await
        .expect("the task")
        .expect_err("a cancelled install");
    assert!(
        matches!(&err, EngineError::Helm { .. } | EngineError::WorkerLost),
        "{err}"
    );
    let stored = sim
        .get("v1", "Secret", "default", "sh.helm.release.v1.halted.v1")
        .expect("the revision");
    assert_eq!(
        stored["metadata"]["labels"]["status"], "failed",
        "Helm recorded the cancelled install as failed"
    );
    let after = engine
        .run(Op::Versions, None, MINUTE)
        .await
        .expect_err("no actions after shutdown");
    assert!(matches!(after, EngineError::Unavailable(_)), "{after}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn actions_on_one_release_never_overlap() {
    let (_sim, target) = workload().await;
    let engine = std::sync::Arc::new(engine(lib(), 4));
    let first = Op::Install {
        target: target.clone(),
        chart: ChartRef::Archive(demo_chart()),
        release: "serial".into(),
        values: json!({}),
        options: json!({"namespace": "default", "wait": "watcher", "timeout_seconds": 60}),
        auth: None,
    };
    engine
        .run(first, Some("default/serial".into()), MINUTE)
        .await
        .expect("install");
    let op = |n: i64| Op::Upgrade {
        target: target.clone(),
        chart: ChartRef::Archive(demo_chart()),
        release: "serial".into(),
        values: json!({"replicaCount": n}),
        options: json!({"namespace": "default", "wait": "watcher", "timeout_seconds": 60}),
        auth: None,
    };
    // Concurrent upgrades of one release would collide in Helm ("another operation is in progress"); serialised,
    // every one succeeds and the revisions count up.
    let tasks: Vec<_> = (1..=3)
        .map(|n| {
            let engine = engine.clone();
            let op = op(n);
            tokio::spawn(async move { engine.run(op, Some("default/serial".into()), MINUTE).await })
        })
        .collect();
    let mut revisions = Vec::new();
    for t in tasks {
        let r: Value = t.await.expect("task").expect("upgrade");
        revisions.push(r["revision"].as_i64().expect("revision"));
    }
    revisions.sort();
    assert_eq!(revisions, [2, 3, 4]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_library_actions_say_helm_is_unavailable() {
    let engine = engine(PathBuf::from("/nonexistent/libhelm_c.so.0.2.2"), 1);
    let err = engine
        .run(Op::Versions, None, MINUTE)
        .await
        .expect_err("no library");
    match err {
        EngineError::Unavailable(reason) => assert!(
            reason.contains("/nonexistent/libhelm_c.so.0.2.2"),
            "{reason}"
        ),
        other => panic!("expected Unavailable, got {other}"),
    }
}

/// A chart by name and version from an HTTP chart repository, resolved by Helm inside the worker; a version the
/// repository does not have is Helm's own error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chart_from_an_http_repository_installs() {
    let (sim, target) = workload().await;
    let repo = chart_repo().await;
    let engine = engine(lib(), 4);
    let install = |version: &str, release: &str| Op::Install {
        target: target.clone(),
        chart: ChartRef::Reference("demo".into()),
        release: release.into(),
        values: json!({}),
        options: json!({"namespace": "default", "chart_repo_url": repo.url, "chart_version": version,
            "wait": "watcher", "timeout_seconds": 60}),
        auth: None,
    };
    let installed = engine
        .run(
            install("0.1.0", "from-repo"),
            Some("default/from-repo".into()),
            MINUTE,
        )
        .await
        .expect("install from the repository");
    assert_eq!(installed["status"], "deployed", "{installed}");
    assert_eq!(installed["chart_version"], "0.1.0");
    assert!(
        sim.get("apps/v1", "Deployment", "default", "from-repo-demo")
            .is_some()
    );
    let missing = engine
        .run(
            install("9.9.9", "missing"),
            Some("default/missing".into()),
            MINUTE,
        )
        .await
        .expect_err("no such version");
    match missing {
        EngineError::Helm { message, .. } => assert!(message.contains("9.9.9"), "{message}"),
        other => panic!("expected Helm's error, got {other}"),
    }
}

/// A chart pushed by Helm to a real OCI registry installs from its `oci://` reference.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chart_from_an_oci_registry_installs() {
    let (sim, target) = workload().await;
    let registry = registry().await;
    let remote = push_demo_chart(&registry);
    let engine = engine(lib(), 4);
    let installed = engine
        .run(
            Op::Install {
                target,
                chart: ChartRef::Reference(format!("{remote}/demo")),
                release: "from-oci".into(),
                values: json!({}),
                options: json!({"namespace": "default", "chart_version": "0.1.0", "plain_http": true,
                    "wait": "watcher", "timeout_seconds": 60}),
                auth: None,
            },
            Some("default/from-oci".into()),
            MINUTE,
        )
        .await
        .expect("install from the registry");
    assert_eq!(installed["status"], "deployed", "{installed}");
    assert_eq!(installed["chart_name"], "demo");
    assert!(
        sim.get("apps/v1", "Deployment", "default", "from-oci-demo")
            .is_some()
    );
}

/// A worker past its memory limit is stopped: the action it ran fails saying so, the host goes on, and the next
/// action starts a new worker. (A limit of 1 MiB is below any worker's size, so every worker meets it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_past_its_memory_limit_is_stopped_and_its_action_fails_saying_so() {
    let (_sim, target) = workload().await;
    let engine = WorkerEngine::new(WorkerOptions {
        program: PathBuf::from(env!("CARGO_BIN_EXE_omni-operator")),
        lib: lib(),
        concurrency: 2,
        memory_limit: Some(1 << 20),
        scratch_base: std::env::temp_dir(),
    });
    let install = |release: &str| never_ready_install(&target, release);
    let started = Instant::now();
    let err = engine
        .run(install("big"), Some("default/big".into()), 10 * MINUTE)
        .await
        .expect_err("the worker is stopped");
    assert!(
        matches!(err, EngineError::OverMemory { limit, .. } if limit == 1 << 20),
        "{err}"
    );
    assert!(
        err.to_string().contains("above its limit of 1 MiB"),
        "{err}"
    );
    assert!(
        started.elapsed() < MINUTE,
        "stopped only after {:?}",
        started.elapsed()
    );
    let first = engine.starts();
    let again = engine
        .run(install("next"), Some("default/next".into()), 10 * MINUTE)
        .await
        .expect_err("the next worker meets the limit too");
    assert!(matches!(again, EngineError::OverMemory { .. }), "{again}");
    assert!(engine.starts() > first, "no new worker was started");
}
