//! The `omni-operator` binary as a user runs it.

use std::path::Path;
use std::process::Command;

#[path = "shared/helm_lib.rs"]
mod helm_lib;
use helm_lib::helm_c_lib;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_omni-operator"))
}

fn examples() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/quickstart")
}

/// The README's run command's arguments: the quickstart, its chart served locally, and Helm.
fn quickstart(cmd: &mut Command) -> &mut Command {
    cmd.env("HELM_C_LIB", helm_c_lib())
        .arg("--apply")
        .arg(examples())
        .arg("--serve-charts")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/charts"))
}

/// The README's first command: everything applied settles, and the command says so and exits 0.
#[test]
fn dev_settles_on_the_quickstart_examples() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = bin();
    cmd.args(["--cache-dir"])
        .arg(dir.path().join("cache"))
        .args(["dev", "--exit-when-settled", "--timeout", "90"]);
    let out = quickstart(&mut cmd)
        .arg("--kubeconfig-out")
        .arg(dir.path().join("kc"))
        .output()
        .expect("omni-operator runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("all 9 reconciled objects are ready"),
        "{stdout}"
    );
    // The example chart, packaged by Helm and served on loopback, installed into the workload cluster through
    // the exported kubeconfig.
    assert!(
        stdout.contains("Chart repository at http://127.0.0.1:"),
        "{stdout}"
    );
    assert!(stdout.contains("OmniHelmRelease omni-system/hello: chart repository https://charts.example.com/omni-operator -> http://127.0.0.1:"), "{stdout}");
    assert!(stdout.contains("ready    OmniHelmRelease omni-system/hello  Ready=True HelmInstalled: installed Helm release \"hello\" revision 1"), "{stdout}");
    assert!(stdout.contains("get secrets -A -l owner=helm"), "{stdout}");
    assert!(stdout.contains("ready    OmniKubeconfigExport omni-system/edge-sample-automation  Ready=True Exported: exported kubeconfig to Secret \"omni-system/edge-sample-kubeconfig\" key \"kubeconfig\""), "{stdout}");
    assert!(stdout.contains("ready    OmniSecretSync omni-system/registry-credentials  Ready=True Synced: synced Secret \"registry-credentials\" to workload Secret \"apps/registry-credentials\""), "{stdout}");
    assert!(
        stdout.contains("ready    OmniCluster omni-system/edge-sample  Ready=True Synced: cluster template is synced and status was read from Omni"),
        "{stdout}"
    );
    // The example's connection is pointed at the embedded Omni simulator with a minted key, and checks out.
    assert!(stdout.contains("OmniConnection omni-system/omni-sample: endpoint https://omni.example.com -> grpc://127.0.0.1:"), "{stdout}");
    assert!(stdout.contains("ready    OmniConnection omni-system/omni-sample  Ready=True ConnectionReady: connected to grpc://127.0.0.1:"), "{stdout}");
    assert!(
        stdout.contains("ready    OmniWorkers omni-system/edge-sample-workers  Accepted=True"),
        "{stdout}"
    );
    assert!(
        dir.path().join("kc").exists(),
        "the kubeconfig for kubectl is written"
    );
}

#[test]
fn dev_reports_what_did_not_settle_and_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = dir.path().join("orphan.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: omni.texashpc.com/v1alpha1\nkind: OmniMachine\nmetadata: {name: 11111111-1111-4111-8111-111111111111, namespace: default}\nspec: {clusterRef: {name: nowhere}}\n",
    )
    .expect("write");
    let out = bin()
        .args(["--cache-dir"])
        .arg(dir.path().join("cache"))
        .args(["dev", "--exit-when-settled", "--timeout", "2", "--apply"])
        .arg(&manifest)
        .arg("--kubeconfig-out")
        .arg(dir.path().join("kc"))
        .output()
        .expect("omni-operator runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    assert!(stdout.contains("not settled after 2 s"), "{stdout}");
    assert!(
        stdout.contains("MissingCluster: OmniCluster \"nowhere\" does not exist"),
        "{stdout}"
    );
}

#[test]
fn dev_refuses_a_bad_manifest_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = dir.path().join("bad.yaml");
    std::fs::write(&manifest, "apiVersion: omni.texashpc.com/v1alpha1\nkind: OmniMachine\nmetadata: {name: m, namespace: default}\nspec: {}\n").expect("write");
    let out = bin()
        .args(["--cache-dir"])
        .arg(dir.path().join("cache"))
        .args(["dev", "--exit-when-settled", "--timeout", "5", "--apply"])
        .arg(&manifest)
        .arg("--kubeconfig-out")
        .arg(dir.path().join("kc"))
        .output()
        .expect("omni-operator runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains("bad.yaml") && stderr.contains("spec.clusterRef: Required value"),
        "{stderr}"
    );
}

#[test]
fn run_needs_a_namespace_as_the_original_operator_does() {
    let out = bin()
        .args(["run"])
        .env_remove("POD_NAMESPACE")
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("POD_NAMESPACE is required when /var/run/secrets/kubernetes.io/serviceaccount/namespace is unavailable"), "{stderr}");
}

#[test]
fn crds_prints_exactly_the_committed_crds() {
    let out = bin().arg("crds").output().expect("runs");
    assert!(out.status.success());
    let printed = String::from_utf8_lossy(&out.stdout);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crds");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("crds/")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    let mut total = 0;
    for f in &files {
        let content = std::fs::read_to_string(f).expect("read");
        total += content.len();
        assert!(
            printed.contains(&content),
            "{} is not printed as committed",
            f.display()
        );
    }
    assert_eq!(printed.len(), total, "nothing else is printed");
}

/// In `dev`, the operator's Events are where kubectl looks: `kubectl describe omnicluster` shows the sync.
#[test]
fn dev_shows_the_operators_events_in_kubectl_describe() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kc");
    let mut cmd = bin();
    cmd.args(["--cache-dir"])
        .arg(dir.path().join("cache"))
        .args(["dev", "--timeout", "90"]);
    let mut child = quickstart(&mut cmd)
        .arg("--kubeconfig-out")
        .arg(&kubeconfig)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("omni-operator runs");
    // A watchdog, so a dev that never settles fails the test instead of hanging it.
    let pid = child.id();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if done_rx
            .recv_timeout(std::time::Duration::from_secs(150))
            .is_err()
        {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    });
    // Stdout is drained to the end by a thread of its own: dropping the pipe after the line we wait for would
    // kill `dev` at its next print (a write to a closed pipe), racing the kubectl below.
    let stdout = child.stdout.take().expect("stdout");
    let (line_tx, line_rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = line_tx.send(line);
        }
    });
    let mut seen = String::new();
    while let Ok(line) = line_rx.recv() {
        seen.push_str(&line);
        seen.push('\n');
        if line.contains("reconciled objects are ready") {
            break;
        }
    }
    assert!(seen.contains("reconciled objects are ready"), "{seen}");
    let describe = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args([
            "describe",
            "omnicluster",
            "edge-sample",
            "-n",
            "omni-system",
        ])
        .output()
        .expect("kubectl runs");
    let _ = child.kill();
    let _ = child.wait();
    let _ = done_tx.send(());
    let _ = watchdog.join();
    let _ = reader.join();
    let text = String::from_utf8_lossy(&describe.stdout);
    assert!(
        describe.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&describe.stderr)
    );
    assert!(text.contains("Events:"), "{text}");
    assert!(
        text.contains("Synced") && text.contains("synced the cluster template to Omni"),
        "the operator's sync Event is shown:\n{text}"
    );
}

/// `dev` checks Helm at start-up through its worker and says what it found; a library that does not load leaves
/// every other kind served and says why OmniHelmReleases cannot proceed.
#[test]
fn dev_reports_helm_at_start_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = |lib: &std::path::Path| {
        bin()
            .env("HELM_C_LIB", lib)
            .args(["--cache-dir"])
            .arg(dir.path().join("cache"))
            .args([
                "dev",
                "--exit-when-settled",
                "--timeout",
                "30",
                "--kubeconfig-out",
            ])
            .arg(dir.path().join("kc"))
            .output()
            .expect("omni-operator runs")
    };
    let missing = run(std::path::Path::new("/nonexistent/libhelm_c.so.0.2.2"));
    let stdout = String::from_utf8_lossy(&missing.stdout);
    assert!(
        stdout.contains("Helm is unavailable")
            && stdout.contains("/nonexistent/libhelm_c.so.0.2.2"),
        "{stdout}"
    );
    assert!(stdout.contains("every other kind is served"), "{stdout}");
    assert_eq!(
        missing.status.code(),
        Some(0),
        "nothing applied settles at once: {stdout}"
    );
    let lib = helm_c_lib();
    let found = run(&lib);
    let stdout = String::from_utf8_lossy(&found.stdout);
    assert!(
        stdout.contains("Helm: libhelm_c 0.2.2 (Helm v4.2.3), run in a worker process"),
        "{stdout}"
    );
}
