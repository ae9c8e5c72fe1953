//! The `omni-operator` binary as a user runs it.

use std::path::Path;
use std::process::Command;

#[path = "shared/git.rs"]
mod git_cli;
use git_cli::git;
#[path = "shared/helm_lib.rs"]
mod helm_lib;
use helm_lib::helm_c_lib;

/// The binary, logging at its own default level (WARN) whatever the test run's `RUST_LOG` says: the tests read
/// its warnings.
fn bin() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_omni-operator"));
    command.env_remove("RUST_LOG");
    command
}

/// `dev` with nothing to apply, settling at once: its state under `dir`.
fn dev_with_nothing_applied(dir: &Path) -> Command {
    let mut command = bin();
    command
        .args(["--cache-dir"])
        .arg(dir.join("cache"))
        .args([
            "dev",
            "--exit-when-settled",
            "--timeout",
            "30",
            "--kubeconfig-out",
        ])
        .arg(dir.join("kc"));
    command
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

/// Lines of a log at WARN or ERROR (tracing's format, colours or not).
fn warnings_and_errors(log: &str) -> Vec<String> {
    log.lines()
        .map(|line| {
            // ANSI colour sequences (ESC [ … m) out, so the level reads the same on a terminal or not.
            let mut plain = String::new();
            let mut chars = line.chars();
            while let Some(c) = chars.next() {
                if c == '\u{1b}' {
                    for c in chars.by_ref() {
                        if c == 'm' {
                            break;
                        }
                    }
                } else {
                    plain.push(c);
                }
            }
            plain
        })
        .filter(|line| line.contains(" WARN ") || line.contains(" ERROR "))
        .collect()
}

/// The README's first command: everything applied settles, and the command says so and exits 0, stopping the
/// controllers, the webhook server and Helm's worker before the simulators, so nothing on its output is a
/// warning or an error.
#[test]
fn dev_settles_on_the_quickstart_examples() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = bin();
    cmd.args(["--cache-dir"])
        .arg(dir.path().join("cache"))
        .args(["dev", "--exit-when-settled", "--timeout", "4m"]);
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
    let stderr = String::from_utf8_lossy(&out.stderr);
    let noise = [warnings_and_errors(&stdout), warnings_and_errors(&stderr)].concat();
    assert!(
        noise.is_empty(),
        "a settled dev warned or failed:\n{}",
        noise.join("\n")
    );
}

#[test]
fn the_log_filter_sees_warnings_with_or_without_colours() {
    let log = "2026-11-29T10:55:11.379823Z \u{1b}[33m WARN\u{1b}[0m kube_client: eof\n\
               2026-11-29T10:55:11.383430Z ERROR kube_client::client::builder: failed\n\
               2026-11-29T10:55:11.383430Z  INFO omni_operator: a WARNING in a message is not a level\n";
    assert_eq!(warnings_and_errors(log).len(), 2);
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

/// `dev` enforces `--helm-chart-source` and `--helm-target-namespace` as `run` does: the quickstart's release
/// names a repository outside the allowed source, or goes into a namespace outside the allowed ones, so it is
/// refused (and never settles); a source spelled with an encoded dot segment is refused at start, naming the flag.
#[test]
fn dev_enforces_the_chart_source_policy() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The quickstart under a policy flag: it never settles, and what dev prints says why.
    let refused = |flag: &str, value: &str| {
        let out = bin()
            .args(["--cache-dir"])
            .arg(dir.path().join("cache"))
            .args([flag, value])
            // A duration, as kubectl and Flux take one.
            .args(["dev", "--exit-when-settled", "--timeout", "30s", "--apply"])
            .arg(examples())
            .arg("--kubeconfig-out")
            .arg(dir.path().join("kc"))
            .output()
            .expect("omni-operator runs");
        assert_eq!(
            out.status.code(),
            Some(3),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let stdout = refused("--helm-chart-source", "https://charts.allowed.test/stable");
    assert!(
        stdout.contains("chart source \"https://charts.example.com/omni-operator\" is not among the operator's allowed chart sources (https://charts.allowed.test/stable)"),
        "{stdout}"
    );
    // Releases only in the namespaces the operator allows: the quickstart's goes into `apps`.
    let stdout = refused("--helm-target-namespace", "web");
    assert!(
        stdout.contains(
            "namespace \"apps\" is not among the operator's allowed target namespaces (web)"
        ),
        "{stdout}"
    );
    let out = bin()
        .args(["--cache-dir"])
        .arg(dir.path().join("cache"))
        .args([
            "--helm-chart-source",
            "https://charts.allowed.test/stable/%2e%2e",
        ])
        .args(["dev", "--exit-when-settled", "--timeout", "5"])
        .output()
        .expect("omni-operator runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("--helm-chart-source") && stderr.contains("dot segment"),
        "{stderr}"
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
    let dev = DevSession::start();
    let describe = dev.kubectl(&[
        "describe",
        "omnicluster",
        "edge-sample",
        "-n",
        "omni-system",
    ]);
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
    // SIGTERM (what a process manager sends) stops dev as Ctrl-C does: the chart repository it served from a
    // temporary directory goes with it.
    let mut dev = dev;
    let charts = std::env::temp_dir().join(format!("omni-operator-dev-charts-{}", dev.child.id()));
    assert!(
        charts.is_dir(),
        "{} is not there to begin with",
        charts.display()
    );
    let stopped = dev.terminate();
    assert!(
        stopped.code().is_some(),
        "dev was killed by the signal: {stopped:?}"
    );
    assert!(!charts.exists(), "{} was left behind", charts.display());
}

/// A `dev` run on the quickstart, once everything it applied is ready; killed when dropped.
struct DevSession {
    child: std::process::Child,
    kubeconfig: std::path::PathBuf,
    /// `dev`'s log (stderr), line by line as it comes.
    log: std::sync::mpsc::Receiver<String>,
    done: Option<std::sync::mpsc::Sender<()>>,
    watchdog: Option<std::thread::JoinHandle<()>>,
    reader: Option<std::thread::JoinHandle<()>>,
    log_reader: Option<std::thread::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl DevSession {
    fn start() -> DevSession {
        DevSession::start_with(&[])
    }

    /// [`DevSession::start`] with more arguments for `dev`.
    fn start_with(extra: &[&std::ffi::OsStr]) -> DevSession {
        use std::io::{BufRead, BufReader};
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kc");
        let mut cmd = bin();
        cmd.args(["--cache-dir"])
            .arg(dir.path().join("cache"))
            .args(["dev", "--timeout", "90"]);
        let mut child = quickstart(&mut cmd)
            .args(extra)
            .arg("--kubeconfig-out")
            .arg(&kubeconfig)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("omni-operator runs");
        let stderr = child.stderr.take().expect("stderr");
        let (log_tx, log) = std::sync::mpsc::channel::<String>();
        let log_reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = log_tx.send(line);
            }
        });
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
        // Stdout is drained to the end by a thread of its own: dropping the pipe after the line we wait for
        // would kill `dev` at its next print (a write to a closed pipe), racing the kubectl calls.
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
        DevSession {
            child,
            kubeconfig,
            log,
            done: Some(done_tx),
            watchdog: Some(watchdog),
            reader: Some(reader),
            log_reader: Some(log_reader),
            _dir: dir,
        }
    }

    /// Waits (up to two minutes) for a log line for which `wanted` holds; the log read so far otherwise.
    fn wait_for_log(&self, wanted: impl Fn(&str) -> bool) -> Result<String, String> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        let mut seen = String::new();
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            match self.log.recv_timeout(left) {
                Ok(line) if wanted(&line) => return Ok(line),
                Ok(line) => {
                    seen.push_str(&line);
                    seen.push('\n');
                }
                Err(_) => break,
            }
        }
        Err(seen)
    }

    /// Sends SIGTERM and waits for `dev` to exit.
    fn terminate(&mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        self.child.wait().expect("dev exits")
    }

    fn kubectl(&self, args: &[&str]) -> std::process::Output {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .output()
            .expect("kubectl runs")
    }
}

impl Drop for DevSession {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        drop(self.done.take());
        if let Some(w) = self.watchdog.take() {
            let _ = w.join();
        }
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        if let Some(r) = self.log_reader.take() {
            let _ = r.join();
        }
    }
}

/// The README's five-minute tour, as written there: kubectl finds the simulator through `KUBECONFIG` and lists
/// the quickstart with `get omni -A`; and a plugin dropped into `--plugin-dir` while `dev` runs replaces the
/// built-in of its name, with only the grants `--grant` gives it, which `dev` says at WARN with both digests and
/// those grants; the object it reconciles stays Accepted.
#[test]
fn the_readme_tour_lists_the_quickstart_and_swaps_a_plugin_while_dev_runs() {
    let plugins = tempfile::tempdir().expect("tempdir");
    let dev = DevSession::start_with(&[
        "--plugin-dir".as_ref(),
        plugins.path().as_os_str(),
        "--grant".as_ref(),
        "omni-controlplane=kube-read:omni.texashpc.com/OmniCluster".as_ref(),
    ]);
    // A discovery cache of its own: kubectl keeps one per server address under $HOME, and another test's
    // simulator may have had this port (and other kinds) a moment ago.
    let home = tempfile::tempdir().expect("tempdir");
    let listed = Command::new("kubectl")
        .env("KUBECONFIG", &dev.kubeconfig)
        .env("HOME", home.path())
        .args(["get", "omni", "-A"])
        .output()
        .expect("kubectl runs");
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    for object in [
        "omnicluster.omni.texashpc.com/edge-sample",
        "omnicontrolplane.omni.texashpc.com/edge-sample-control-plane",
        "omnihelmrelease.omni.texashpc.com/hello",
    ] {
        assert!(text.contains(object), "{object} is not listed:\n{text}");
    }

    // A new version of the OmniControlPlane plugin: the built-in's bytes with a custom section appended, so the
    // digest differs and the logic is the same (the README's reader edits a message and rebuilds instead).
    let built_in = omni_operator::defaults::PLUGINS
        .iter()
        .find(|p| p.name == "omni-controlplane")
        .expect("a built-in omni-controlplane");
    let mut bytes = built_in.wasm.to_vec();
    let (name, payload) = (b"readme-tour".as_slice(), b"v2".as_slice());
    let size = 1 + name.len() + payload.len();
    bytes.extend_from_slice(&[
        0,
        u8::try_from(size).expect("small"),
        u8::try_from(name.len()).expect("small"),
    ]);
    bytes.extend_from_slice(name);
    bytes.extend_from_slice(payload);
    let staged = plugins.path().join("omni-controlplane.wasm.part");
    std::fs::write(&staged, &bytes).expect("write the plugin");
    std::fs::rename(&staged, plugins.path().join("omni-controlplane.wasm")).expect("drop it in");
    let replaced = dev
        .wait_for_log(|line| line.contains("plugin replaced by a file from the plugin directory"))
        .unwrap_or_else(|log| panic!("no replacement was logged:\n{log}"));
    assert!(replaced.contains("omni-controlplane"), "{replaced}");
    assert!(replaced.contains(" WARN "), "{replaced}");
    let field = |name: &str| {
        replaced
            .split_whitespace()
            .find_map(|word| word.strip_prefix(name))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no {name} in {replaced}"))
    };
    // Both digests, and they differ: the new bytes serve now.
    let (from, to) = (field("from="), field("to="));
    assert!(
        from.len() >= 64 && to.len() >= 64 && from != to,
        "{replaced}"
    );
    // Only what `--grant` gave the file: the built-in's own grants do not pass to it.
    let grants = field("grants=");
    assert!(
        grants.contains("kube-read:omni.texashpc.com/OmniCluster")
            && grants.split(',').all(|g| g.starts_with("kube-read")),
        "{replaced}"
    );
    let describe = dev.kubectl(&[
        "describe",
        "omnicontrolplane",
        "edge-sample-control-plane",
        "-n",
        "omni-system",
    ]);
    let text = String::from_utf8_lossy(&describe.stdout);
    assert!(describe.status.success(), "{text}");
    assert!(text.contains("Accepted"), "{text}");
}

/// An invalid example of every kind (examples/invalid, breaking its kind's admission rules) refused at
/// `kubectl apply` by the webhooks `dev` registers: kubectl prints the webhook's warnings and the causes of the
/// `Invalid` status one per line, and the status message the API server returns is the Go operator's, prefixed by
/// the API server's `admission webhook "<name>" denied the request: `. The expected texts are the Go operator's
/// rules, written out.
#[test]
fn dev_refuses_each_invalid_example_with_the_go_operators_message() {
    const HELM_WARNING: &str = "OmniHelmRelease uses a workload-cluster kubeconfig Secret and writes directly to that cluster";
    // (file, kind, name, warnings, causes in the Go webhook's order)
    type Case<'a> = (&'a str, &'a str, &'a str, &'a [&'a str], &'a [&'a str]);
    let cases: &[Case] = &[
        (
            "omnicluster.yaml",
            "OmniCluster",
            "bad-cluster",
            &[
                "cluster-level kernelArgs are valid only when every machine set uses static machines instead of \
               machineClass",
            ],
            &[
                "spec.deletePolicy: Invalid value: {\"destroyMachines\":true,\"orphan\":true}: orphan and \
                 destroyMachines cannot both be true",
                "spec.syncInterval: Invalid value: \"-5m\": syncInterval must not be negative",
                "spec.patches[0]: Required value: patch requires exactly one of file or inline",
                "spec.kubernetes.manifests[0]: Required value: manifest requires exactly one of file or inline",
            ],
        ),
        (
            "omniconnection.yaml",
            "OmniConnection",
            "bad-connection",
            &["insecureSkipTLSVerify disables Omni endpoint TLS certificate verification"],
            &[
                "spec.auth.serviceAccountSecretRef.name: Required value: service account Secret name is required",
                "spec.auth.serviceAccountSecretRef.key: Required value: service account Secret key is required",
            ],
        ),
        (
            "omnicontrolplane.yaml",
            "OmniControlPlane",
            "bad-control-plane",
            &[],
            &[
                "spec.machines[0]: Invalid value: \"not-a-uuid\": machine ID must be a UUID",
                "spec.machines[2]: Duplicate value: \"11111111-1111-4111-8111-111111111111\"",
                "spec.machines[1]: Duplicate value: \"11111111-1111-4111-8111-111111111111\"",
            ],
        ),
        (
            "omniworkers.yaml",
            "OmniWorkers",
            "bad-workers",
            &[],
            &[
                "spec.machineClass.size: Unsupported value: \"lots\": supported values: \"unlimited\", \
                 \"infinity\", \"∞\"",
                "spec.workerSetName: Invalid value: \"control-planes\": workerSetName is reserved by Omni",
            ],
        ),
        (
            "omnimachine.yaml",
            "OmniMachine",
            "bad-machine",
            &[],
            &[
                "spec.machineID: Invalid value: \"bad-machine\": machineID must be a UUID; set spec.machineID when \
               metadata.name is not the Omni machine ID",
            ],
        ),
        (
            "omnikubeconfigexport.yaml",
            "OmniKubeconfigExport",
            "bad-export",
            &[],
            &[
                "spec.serviceAccount.groups[0]: Forbidden: system:masters requires \
                 serviceAccount.allowClusterAdmin: true",
                "spec.serviceAccount.groups[1]: Required value: service account group must not be blank",
                "spec.serviceAccount.groups[3]: Duplicate value: \"ops\"",
                "spec.serviceAccount.groups[2]: Duplicate value: \"ops\"",
                // Go's webhook had only the decoded Duration to print: 48h is `48h0m0s`.
                "spec.renewBefore: Invalid value: \"48h0m0s\": renewBefore must be less than ttl",
            ],
        ),
        (
            "omnihelmrelease.yaml",
            "OmniHelmRelease",
            "bad-release",
            &[HELM_WARNING],
            &[
                "spec.kubeconfigSecretRef.key: Required value: kubeconfig Secret key must not be blank",
                "spec.releaseName: Invalid value: \" hello\": releaseName must not include leading or trailing \
                 whitespace",
                "spec.namespace: Invalid value: \"apps \": namespace must not include leading or trailing \
                 whitespace",
                "spec.chart.repository: Invalid value: \"charts.example.com/stable\": chart.repository must be an \
                 absolute URL",
            ],
        ),
        (
            "omnisecretsync.yaml",
            "OmniSecretSync",
            "bad-sync",
            &[
                "OmniSecretSync uses a workload-cluster kubeconfig Secret and writes Secret data directly to that \
               cluster",
            ],
            &[
                "spec.targetSecretRef.namespace: Required value: target Secret namespace is required",
                "spec.type: Invalid value: \" \": type must not be blank",
            ],
        ),
    ];
    let dev = DevSession::start();
    let invalid = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/invalid");
    let runtime = tokio::runtime::Runtime::new().expect("tokio");
    let client = runtime.block_on(async {
        let kc = kube::config::Kubeconfig::read_from(&dev.kubeconfig).expect("kubeconfig");
        let config =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .expect("config");
        kube::Client::try_from(config).expect("client")
    });
    for (file, kind, name, warnings, causes) in cases {
        let path = invalid.join(file);
        let out = dev.kubectl(&["apply", "-f", path.to_str().expect("utf-8 path")]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{file} was admitted: {stderr}");
        // kubectl's rendering of an Invalid status with causes (cmdutil.checkErr).
        let mut expected: String = warnings.iter().map(|w| format!("Warning: {w}\n")).collect();
        match causes {
            [one] => expected.push_str(&format!("The {kind} \"{name}\" is invalid: {one}\n")),
            many => {
                expected.push_str(&format!("The {kind} \"{name}\" is invalid: \n"));
                for c in *many {
                    expected.push_str(&format!("* {c}\n"));
                }
            }
        }
        assert_eq!(stderr, expected, "{file}");

        // The status message itself, as the API server returns it to any client.
        let object: serde_json::Value = serde_json::to_value(
            kube_sim::yaml_documents(&std::fs::read_to_string(&path).expect("reads"))
                .expect("parses")
                .remove(0),
        )
        .expect("json");
        let resource = kube::api::ApiResource {
            group: "omni.texashpc.com".into(),
            version: "v1alpha1".into(),
            api_version: "omni.texashpc.com/v1alpha1".into(),
            kind: kind.to_string(),
            // OmniWorkers is already plural.
            plural: match kind.to_lowercase() {
                k if k.ends_with('s') => k,
                k => format!("{k}s"),
            },
        };
        let api: kube::Api<kube::api::DynamicObject> =
            kube::Api::namespaced_with(client.clone(), "omni-system", &resource);
        let object: kube::api::DynamicObject = serde_json::from_value(object).expect("object");
        let refused = runtime
            .block_on(api.create(&kube::api::PostParams::default(), &object))
            .expect_err("refused");
        let kube::Error::Api(status) = refused else {
            panic!("{file}: not an API error: {refused}");
        };
        let errors = match causes {
            [one] => one.to_string(),
            many => format!("[{}]", many.join(", ")),
        };
        let webhook = format!("v{}-v1alpha1.kb.io", kind.to_lowercase());
        assert_eq!(
            (status.code, status.reason.as_str(), status.message.as_str()),
            (
                422,
                "Invalid",
                format!(
                    "admission webhook \"{webhook}\" denied the request: {kind}.omni.texashpc.com \"{name}\" is \
                     invalid: {errors}"
                )
                .as_str()
            ),
            "{file}"
        );
    }

    // Valid objects are admitted, with their warnings: the quickstart's release again, under another name.
    let release = std::fs::read_to_string(examples().join("70-helm-release.yaml"))
        .expect("reads")
        .replace("name: hello\n", "name: hello-again\n");
    assert!(release.contains("hello-again"));
    let dir = tempfile::tempdir().expect("tempdir");
    let valid = dir.path().join("release.yaml");
    std::fs::write(&valid, release).expect("writes");
    let out = dev.kubectl(&["apply", "-f", valid.to_str().expect("utf-8 path")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr, format!("Warning: {HELM_WARNING}\n"));

    // Updates are validated against the old object: an OmniSecretSync's kubeconfig Secret cannot be retargeted.
    let out = dev.kubectl(&[
        "patch",
        "omnisecretsync",
        "registry-credentials",
        "-n",
        "omni-system",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"kubeconfigSecretRef":{"name":"someone-elses-kubeconfig"}}}"#,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "The OmniSecretSync \"registry-credentials\" is invalid: spec.kubeconfigSecretRef.name: Forbidden: \
             kubeconfigSecretRef.name is immutable"
        ),
        "{stderr}"
    );
}

/// The deletion guard (issue "GitOps safety"): an OmniCluster annotated for protection is not deleted, and kubectl
/// says what its deletion would destroy and how to confirm it; once a separate change confirms it, the deletion
/// goes ahead. An unprotected object is deleted as before.
#[test]
fn dev_refuses_deleting_a_protected_cluster_until_a_separate_change_confirms_it() {
    let dev = DevSession::start();
    let kubectl = |args: &[&str]| {
        let out = dev.kubectl(args);
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let cluster = ["omnicluster", "edge-sample", "-n", "omni-system"];
    let (ok, _, err) = kubectl(
        &[
            &["annotate"][..],
            &cluster,
            &["omni.texashpc.com/deletion-protection=enabled"],
        ]
        .concat(),
    );
    assert!(ok, "{err}");
    let (ok, _, err) = kubectl(&[&["delete"][..], &cluster, &["--wait=false"]].concat());
    assert!(!ok, "a protected cluster is not deleted");
    assert_eq!(
        err,
        "Error from server (Forbidden): admission webhook \"vomnicluster-v1alpha1.kb.io\" denied the request: \
         OmniCluster omni-system/edge-sample is protected from deletion (omni.texashpc.com/deletion-protection): \
         deleting it deletes Omni cluster \"edge-sample\". To delete it, first set the annotation \
         omni.texashpc.com/confirm-deletion=edge-sample in a separate change, or set spec.deletePolicy.orphan: true \
         to keep the Omni cluster\n"
    );
    let (ok, out, _) = kubectl(&[&["get"][..], &cluster, &["-o", "name"]].concat());
    assert!(ok);
    assert_eq!(out, "omnicluster.omni.texashpc.com/edge-sample\n");

    // Unprotected: deleted as before.
    let (ok, out, err) = kubectl(&[
        "delete",
        "omnihelmrelease",
        "hello",
        "-n",
        "omni-system",
        "--wait=false",
    ]);
    assert!(ok, "{err}");
    assert!(
        out.starts_with("omnihelmrelease.omni.texashpc.com \"hello\" deleted"),
        "{out}"
    );

    // Confirmed by a separate change, naming the Omni cluster: the deletion goes ahead.
    let (ok, _, err) = kubectl(
        &[
            &["annotate"][..],
            &cluster,
            &["omni.texashpc.com/confirm-deletion=edge-sample"],
        ]
        .concat(),
    );
    assert!(ok, "{err}");
    let (ok, out, err) = kubectl(&[&["delete"][..], &cluster, &["--wait=false"]].concat());
    assert!(ok, "{err}");
    assert!(
        out.starts_with("omnicluster.omni.texashpc.com \"edge-sample\" deleted"),
        "{out}"
    );
}

/// `dev` checks Helm at start-up through its worker and says what it found; a library that does not load leaves
/// every other kind served and says why OmniHelmReleases cannot proceed.
#[test]
fn dev_reports_helm_at_start_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = |lib: &std::path::Path| {
        dev_with_nothing_applied(dir.path())
            .env("HELM_C_LIB", lib)
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

/// `--log-format json` (or OMNI_OPERATOR_LOG_FORMAT=json): every log line is one JSON object with the level,
/// the message and its fields, for log pipelines.
#[test]
fn json_logs_are_one_object_per_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dev_with_nothing_applied(dir.path())
        .env("RUST_LOG", "info")
        .env("OMNI_OPERATOR_LOG_FORMAT", "json")
        .env_remove("HELM_C_LIB")
        .output()
        .expect("omni-operator runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines.len() > 3, "{stderr}");
    for line in &lines {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(
            v["level"].is_string() && v["fields"]["message"].is_string(),
            "{line}"
        );
    }
    assert!(
        lines.iter().any(|l| l.contains("\"plugin loaded\"")),
        "{stderr}"
    );
}

/// One `omni-operator run --leader-elect` replica, as its own user (so kube-sim's request log tells the replicas
/// apart).
struct Replica {
    child: std::process::Child,
    stderr: std::path::PathBuf,
}

impl Replica {
    /// A replica of the leader-election test: namespace `ops`, a 4 s lease.
    fn start(sim: &kube_sim::KubeSim, user: &str, dir: &Path) -> Replica {
        Replica::run(
            sim,
            user,
            dir,
            &[
                "--namespace",
                "ops",
                "--leader-elect",
                "--leader-elect-lease-duration",
                "4s",
                "--leader-elect-renew-deadline",
                "3s",
                "--leader-elect-retry-period",
                "500ms",
            ],
        )
    }

    /// `omni-operator run` as `user` with `args`, without webhooks or probes.
    fn run(sim: &kube_sim::KubeSim, user: &str, dir: &Path, args: &[&str]) -> Replica {
        let credentials = sim.add_token_user(user, &["system:masters"]);
        let kubeconfig = dir.join(format!("{user}.kubeconfig"));
        sim.write_kubeconfig(&kubeconfig, &credentials)
            .expect("kubeconfig");
        let stderr = dir.join(format!("{user}-{}.log", std::process::id()));
        let log = std::fs::File::create(&stderr).expect("log file");
        let child = bin()
            .env("RUST_LOG", "info")
            .env_remove("HELM_C_LIB")
            .env_remove("POD_NAMESPACE")
            .args(["--cache-dir"])
            .arg(dir.join("cache"))
            .args(["run", "--kubeconfig"])
            .arg(&kubeconfig)
            .args(args)
            .args([
                "--enable-webhooks=false",
                "--health-probe-bind-address",
                "0",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .spawn()
            .expect("omni-operator run starts");
        Replica { child, stderr }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Two `omni-operator run --leader-elect` processes against one kube-sim (client-go's rules with a 4 s lease,
/// 3 s renew deadline, 500 ms retry period):
/// - exactly one reconciles; the other writes nothing;
/// - a few failed renewals (faults on Lease updates) keep the leader;
/// - killing the leader (SIGKILL, no release) hands over once the lease runs out on the candidate's clock: the
///   lease duration after it saw the last renewal, plus its next try (client-go's bound);
/// - renewals failing for the renew deadline make the leader stop and exit with an error before anyone else
///   may take over;
/// - SIGTERM releases the Lease after the controllers stop, so the standby takes over within about a retry
///   period.
///
/// Checked over kube-sim's request log of the whole run: every write by a replica is made while that replica
/// holds the Lease (the last successful Lease write was its own).
#[test]
fn two_replicas_never_write_at_once_and_hand_over_within_the_lease() {
    use std::time::{Duration, Instant};
    const LEASE: &str = "5dc6398d.texashpc.com";
    let runtime = tokio::runtime::Runtime::new().expect("tokio");
    let sim = runtime.block_on(async {
        let sim = omni_operator::stack::management_cluster(kube_sim::KubeSim::builder())
            .await
            .expect("kube-sim");
        sim.apply(&serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ops"}}))
            .await
            .expect("namespace");
        sim.apply(&serde_json::json!({"apiVersion": "omni.texashpc.com/v1alpha1", "kind": "OmniCluster",
            "metadata": {"name": "edge", "namespace": "ops"},
            "spec": {"connectionRef": {"name": "c"}, "kubernetes": {"version": "v1.35.0"},
                "talos": {"version": "v1.13.2"}}}))
            .await
            .expect("cluster");
        sim
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let control_plane = |name: &str| {
        serde_json::json!({"apiVersion": "omni.texashpc.com/v1alpha1", "kind": "OmniControlPlane",
            "metadata": {"name": name, "namespace": "ops"},
            "spec": {"clusterRef": {"name": "edge"}, "machines": ["11111111-1111-4111-8111-111111111111"]}})
    };
    let accepted = |name: &str| {
        sim.get(
            "omni.texashpc.com/v1alpha1",
            "OmniControlPlane",
            "ops",
            name,
        )
        .and_then(|o| {
            o["status"]["conditions"].as_array().map(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Accepted" && c["status"] == "True")
            })
        })
        .unwrap_or(false)
    };
    let wait = |what: &str, bound: Duration, f: &dyn Fn() -> bool| -> Instant {
        let start = Instant::now();
        while start.elapsed() < bound {
            if f() {
                return Instant::now();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("timed out after {bound:?} waiting for {what}");
    };
    let lease_writes = |user: &str| {
        sim.requests()
            .iter()
            .filter(|r| {
                r.user == user
                    && r.resource == "leases"
                    && (r.name == LEASE || r.verb == "create")
                    && r.is_write()
                    && r.succeeded()
            })
            .count()
    };
    let writes_by = |user: &str, resource: &str| {
        sim.requests()
            .iter()
            .filter(|r| r.user == user && r.resource == resource && r.is_write() && r.succeeded())
            .count()
    };
    let apply = |name: &str| {
        runtime
            .block_on(sim.apply(&control_plane(name)))
            .expect("control plane");
    };

    // Phase 1: a leads (started first, it takes the free Lease), b stands by.
    let mut a = Replica::start(&sim, "replica-a", dir.path());
    wait("a to take the lease", Duration::from_secs(60), &|| {
        lease_writes("replica-a") > 0
    });
    let b = Replica::start(&sim, "replica-b", dir.path());
    wait(
        "b to start watching the lease",
        Duration::from_secs(60),
        &|| {
            sim.requests()
                .iter()
                .any(|r| r.user == "replica-b" && r.resource == "leases")
        },
    );
    for i in 0..3 {
        apply(&format!("cp-{i}"));
    }
    wait(
        "a to reconcile the control planes",
        Duration::from_secs(30),
        &|| (0..3).all(|i| accepted(&format!("cp-{i}"))),
    );
    assert!(writes_by("replica-a", "omnicontrolplanes") >= 3);
    assert_eq!(
        writes_by("replica-b", "omnicontrolplanes"),
        0,
        "the standby writes nothing"
    );

    // Phase 2: two renewals fail (1 s of a 3 s deadline): a keeps leading.
    sim.faults().fail_next(
        kube_sim::Matcher::verb_resource("update", "leases"),
        2,
        500,
        None,
    );
    std::thread::sleep(Duration::from_secs(2));
    apply("cp-3");
    wait("a to reconcile cp-3", Duration::from_secs(30), &|| {
        accepted("cp-3")
    });
    assert!(
        a.child.try_wait().expect("status").is_none(),
        "a is still running:\n{}",
        a.log()
    );
    assert_eq!(writes_by("replica-b", "omnicontrolplanes"), 0);

    // Phase 3: a killed without releasing: b takes over once the lease runs out.
    let b_lease_writes = lease_writes("replica-b");
    let _ = a.child.kill();
    let killed = Instant::now();
    let _ = a.child.wait();
    let took_over = wait("b to take the lease", Duration::from_secs(30), &|| {
        lease_writes("replica-b") > b_lease_writes
    });
    // client-go's bound: the candidate saw the last renewal at most one try (a retry period plus up to 1.2 of
    // jitter) after it was made, the lease then runs 4 s on its clock, and its next try comes at most one more
    // try later. One second more for a loaded machine.
    let handover = took_over - killed;
    let one_try = Duration::from_millis(500 * 22 / 10);
    assert!(
        handover <= Duration::from_secs(4) + 2 * one_try + Duration::from_secs(1),
        "handover took {handover:?}"
    );
    println!("handover after SIGKILL: {handover:?} (lease 4 s, retry 500 ms)");
    apply("cp-4");
    wait("b to reconcile cp-4", Duration::from_secs(30), &|| {
        accepted("cp-4")
    });

    // Phase 4: b's renewals fail for longer than the renew deadline: it stops writing and exits with an error;
    // a (started again) takes over once the faults end.
    drop(a);
    let a = Replica::start(&sim, "replica-a", dir.path());
    let a_lease_writes = lease_writes("replica-a");
    sim.faults().fail_next(
        kube_sim::Matcher::verb_resource("update", "leases"),
        1000,
        500,
        None,
    );
    let mut b = b;
    let faulted = Instant::now();
    let status = loop {
        if let Some(status) = b.child.try_wait().expect("status") {
            break status;
        }
        assert!(
            faulted.elapsed() < Duration::from_secs(30),
            "b kept running:\n{}",
            b.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!status.success());
    assert!(b.log().contains("leader election lost"), "{}", b.log());
    // It stopped after about the renew deadline (3 s), not waiting for anything; that it wrote nothing once the
    // lease could have passed on is what the request log check below shows.
    assert!(
        faulted.elapsed() < Duration::from_secs(8),
        "{:?}",
        faulted.elapsed()
    );
    sim.faults().clear();
    wait(
        "a to take the lease again",
        Duration::from_secs(30),
        &|| lease_writes("replica-a") > a_lease_writes,
    );
    apply("cp-5");
    wait("a to reconcile cp-5", Duration::from_secs(30), &|| {
        accepted("cp-5")
    });

    // Phase 5: SIGTERM: a stops its controllers, releases the Lease, and b (started again) takes over well
    // before the lease would have run out.
    drop(b);
    let b = Replica::start(&sim, "replica-b", dir.path());
    wait("b to watch the lease", Duration::from_secs(60), &|| {
        sim.requests()
            .iter()
            .filter(|r| r.user == "replica-b" && r.resource == "leases")
            .count()
            > 2
    });
    let b_lease_writes = lease_writes("replica-b");
    let mut a = a;
    let terminated = Instant::now();
    let _ = Command::new("kill")
        .args(["-TERM", &a.child.id().to_string()])
        .status();
    let took_over = wait(
        "b to take the released lease",
        Duration::from_secs(30),
        &|| lease_writes("replica-b") > b_lease_writes,
    );
    let status = a.child.wait().expect("a exits");
    assert!(status.success(), "{}", a.log());
    assert!(a.log().contains("released the lease"), "{}", a.log());
    let handover = took_over - terminated;
    assert!(
        handover < Duration::from_secs(3),
        "handover after SIGTERM took {handover:?}"
    );
    println!("handover after SIGTERM: {handover:?}");
    apply("cp-6");
    wait("b to reconcile cp-6", Duration::from_secs(30), &|| {
        accepted("cp-6")
    });

    // The whole run: every write by a replica happened while it held the Lease.
    let mut holder: Option<String> = None;
    let mut writes = 0;
    for r in sim.requests() {
        if !r.user.starts_with("replica-") || !r.is_write() || !r.succeeded() {
            continue;
        }
        // A create names no object in its path.
        if r.resource == "leases" && (r.name == LEASE || r.verb == "create") {
            holder = Some(r.user.clone());
            continue;
        }
        writes += 1;
        assert_eq!(
            holder.as_deref(),
            Some(r.user.as_str()),
            "{} wrote {}/{} {} while the lease was {holder:?}'s",
            r.user,
            r.resource,
            r.subresource,
            r.name
        );
    }
    assert!(writes >= 7, "{writes} writes checked");
    drop(b);
}

/// One `omni-operator run` shard: `--namespace east,west`, the label selector, leader election on its own Lease,
/// as its own user (so kube-sim's request log tells the shards apart).
fn start_shard(sim: &kube_sim::KubeSim, user: &str, selector: &str, dir: &Path) -> Replica {
    Replica::run(
        sim,
        user,
        dir,
        &[
            "--namespace",
            "east,west",
            "--watch-label-selector",
            selector,
            "--leader-elect",
            "--leader-election-namespace",
            "ops",
        ],
    )
}

/// Three `omni-operator run` processes sharing one fleet by label, as Flux's controllers shard
/// (`sharding.fluxcd.io/key=shard1`, `=shard2`, and `!sharding.fluxcd.io/key` for the rest), each watching two
/// namespaces and electing a leader on its own Lease. Checked over kube-sim's request log:
/// - every object is written by exactly one process, the shard its label names; an object in a namespace no
///   shard watches is written by none;
/// - an object relabeled to another shard (with a spec change) is reconciled by the new shard, and the old one
///   writes it no more from the moment of the relabel;
/// - a killed shard's objects are left alone: a change to one stays unreconciled while the live shards go on
///   reconciling theirs.
#[test]
fn three_shards_by_label_each_reconcile_exactly_their_own_objects() {
    use std::collections::{BTreeMap, BTreeSet};
    use std::time::{Duration, Instant};
    const KEY: &str = "sharding.fluxcd.io/key";
    const GROUP: &str = "omni.texashpc.com";
    let runtime = tokio::runtime::Runtime::new().expect("tokio");
    let sim = runtime.block_on(async {
        let sim = omni_operator::stack::management_cluster(kube_sim::KubeSim::builder())
            .await
            .expect("kube-sim");
        for ns in ["ops", "east", "west", "other"] {
            sim.apply(&serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
                .await
                .expect("namespace");
        }
        sim
    });
    let shard_of = |i: usize| match i % 3 {
        1 => Some("shard1"),
        2 => Some("shard2"),
        _ => None,
    };
    let namespace_of = |i: usize| if i.is_multiple_of(2) { "east" } else { "west" };
    let control_plane = |ns: &str, name: &str, shard: Option<&str>, machines: usize| {
        let labels = match shard {
            Some(s) => serde_json::json!({ KEY: s }),
            None => serde_json::json!({}),
        };
        let ids: Vec<String> = (0..machines)
            .map(|m| format!("11111111-1111-4111-8111-{m:012}"))
            .collect();
        serde_json::json!({"apiVersion": "omni.texashpc.com/v1alpha1", "kind": "OmniControlPlane",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"clusterRef": {"name": "edge"}, "machines": ids}})
    };
    let apply = |o: serde_json::Value| runtime.block_on(sim.apply(&o)).expect("apply");
    // (generation, the generation the Accepted condition was written for)
    let generations = |ns: &str, name: &str| -> (i64, Option<i64>) {
        let o = sim
            .get("omni.texashpc.com/v1alpha1", "OmniControlPlane", ns, name)
            .expect("control plane");
        let observed = o["status"]["conditions"].as_array().and_then(|cs| {
            cs.iter()
                .find(|c| c["type"] == "Accepted" && c["status"] == "True")
                .and_then(|c| c["observedGeneration"].as_i64())
        });
        (o["metadata"]["generation"].as_i64().unwrap_or(0), observed)
    };
    let reconciled = |ns: &str, name: &str| {
        let (generation, observed) = generations(ns, name);
        observed == Some(generation)
    };
    let wait = |what: &str, f: &dyn Fn() -> bool| {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(90) {
            if f() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("timed out waiting for {what}");
    };
    // Writes to our kinds by the shards, per object: (namespace, name) → the users that wrote it, from `after`.
    let writers = |after: u64| {
        let mut by_object: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
        for r in sim.requests() {
            if r.seq > after
                && r.user.starts_with("shard-")
                && r.group == GROUP
                && r.is_write()
                && r.succeeded()
            {
                by_object
                    .entry((r.namespace.clone(), r.name.clone()))
                    .or_default()
                    .insert(r.user.clone());
            }
        }
        by_object
    };
    let user_of = |shard: Option<&str>| format!("shard-{}", shard.unwrap_or("rest"));

    // The clusters the control planes name: one in shard1, one unsharded; control planes of every shard read
    // them (reads are never filtered by a shard's selector).
    for (ns, labels) in [
        ("east", serde_json::json!({ KEY: "shard1" })),
        ("west", serde_json::json!({})),
    ] {
        apply(
            serde_json::json!({"apiVersion": "omni.texashpc.com/v1alpha1", "kind": "OmniCluster",
            "metadata": {"name": "edge", "namespace": ns, "labels": labels},
            "spec": {"connectionRef": {"name": "c"}, "kubernetes": {"version": "v1.35.0"},
                "talos": {"version": "v1.13.2"}}}),
        );
    }
    for i in 0..9 {
        apply(control_plane(
            namespace_of(i),
            &format!("cp-{i}"),
            shard_of(i),
            1,
        ));
    }
    apply(control_plane("other", "cp-elsewhere", Some("shard1"), 1));
    let dir = tempfile::tempdir().expect("tempdir");
    let one = start_shard(&sim, "shard-shard1", &format!("{KEY}=shard1"), dir.path());
    let two = start_shard(&sim, "shard-shard2", &format!("{KEY}=shard2"), dir.path());
    let mut rest = start_shard(&sim, "shard-rest", &format!("!{KEY}"), dir.path());
    wait("every shard to reconcile its control planes", &|| {
        (0..9).all(|i| reconciled(namespace_of(i), &format!("cp-{i}")))
    });

    // Each shard elected its own leader on its own Lease; the unsharded Lease is nobody's.
    for selector in [
        format!("{KEY}=shard1"),
        format!("{KEY}=shard2"),
        format!("!{KEY}"),
    ] {
        let lease = omni_operator::contract::shard_lease(&selector);
        let held = sim.get("coordination.k8s.io/v1", "Lease", "ops", &lease);
        assert!(
            held.is_some_and(|l| l["spec"]["holderIdentity"].as_str().is_some()),
            "the Lease {lease} of {selector} is held"
        );
    }
    assert!(
        sim.get(
            "coordination.k8s.io/v1",
            "Lease",
            "ops",
            "5dc6398d.texashpc.com"
        )
        .is_none()
    );

    // One writer per object, the one its label names; nothing outside the watched namespaces.
    let written = writers(0);
    for i in 0..9 {
        let key = (namespace_of(i).to_string(), format!("cp-{i}"));
        assert_eq!(
            written.get(&key).cloned().unwrap_or_default(),
            BTreeSet::from([user_of(shard_of(i))]),
            "writers of {key:?}"
        );
    }
    assert!(
        !written.keys().any(|(ns, _)| ns == "other"),
        "nothing outside east and west is written: {written:?}"
    );
    assert!(
        written.values().all(|users| users.len() == 1),
        "one writer per object: {written:?}"
    );

    // Relabeling moves cp-1 from shard1 to shard2; from then on only shard2 writes it.
    let relabeled_at = sim.requests().last().map(|r| r.seq).unwrap_or(0);
    apply(control_plane(namespace_of(1), "cp-1", Some("shard2"), 2));
    wait("shard2 to reconcile the relabeled cp-1", &|| {
        reconciled(namespace_of(1), "cp-1")
    });

    // A killed shard's objects wait for it: cp-0 changes, then cp-2 (shard2) and cp-4 (shard1) change; once
    // both live shards have reconciled theirs, cp-0 is still unreconciled and nobody wrote it.
    let _ = rest.child.kill();
    let _ = rest.child.wait();
    let killed_at = sim.requests().last().map(|r| r.seq).unwrap_or(0);
    apply(control_plane(namespace_of(0), "cp-0", None, 2));
    apply(control_plane(namespace_of(2), "cp-2", shard_of(2), 2));
    apply(control_plane(namespace_of(4), "cp-4", shard_of(4), 2));
    wait("the live shards to reconcile cp-2 and cp-4", &|| {
        reconciled(namespace_of(2), "cp-2") && reconciled(namespace_of(4), "cp-4")
    });
    assert!(
        !reconciled(namespace_of(0), "cp-0"),
        "the killed shard's object is left alone"
    );
    let after_kill = writers(killed_at);
    assert!(
        !after_kill.contains_key(&(namespace_of(0).to_string(), "cp-0".to_string())),
        "nobody writes the killed shard's object: {after_kill:?}"
    );
    let after_relabel = writers(relabeled_at);
    assert_eq!(
        after_relabel
            .get(&(namespace_of(1).to_string(), "cp-1".to_string()))
            .cloned()
            .unwrap_or_default(),
        BTreeSet::from([user_of(Some("shard2"))]),
        "after the relabel only the new shard writes cp-1 ({}, {})",
        one.log(),
        two.log()
    );
}

/// A namespace list or a shard selector the operator cannot use stops `run` at once with the flag named, not
/// with watches failing and retrying forever. The selector is judged by the API server (kube-sim parses it as
/// apimachinery's `labels.Parse` does).
#[test]
fn run_refuses_a_bad_namespace_list_or_shard_selector_naming_the_flag() {
    let out = bin()
        .args(["run", "--namespace", "east,Ops"])
        .env_remove("POD_NAMESPACE")
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("--namespace \"east,Ops\": \"Ops\" is not a namespace name"),
        "{stderr}"
    );
    for bad in ["0s", "soon"] {
        let out = bin()
            .args(["run", "--namespace", "east", "--max-retry-delay", bad])
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            stderr.contains(&format!("invalid value '{bad}' for '--max-retry-delay")),
            "{stderr}"
        );
    }

    let runtime = tokio::runtime::Runtime::new().expect("tokio");
    let sim = runtime.block_on(async {
        omni_operator::stack::management_cluster(kube_sim::KubeSim::builder())
            .await
            .expect("kube-sim")
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let credentials = sim.add_token_user("shard", &["system:masters"]);
    let kubeconfig = dir.path().join("shard.kubeconfig");
    sim.write_kubeconfig(&kubeconfig, &credentials)
        .expect("kubeconfig");
    let out = bin()
        .env_remove("HELM_C_LIB")
        .args(["run", "--kubeconfig"])
        .arg(&kubeconfig)
        .args([
            "--namespace",
            "east",
            "--watch-label-selector",
            "sharding.fluxcd.io/key in (shard1",
            "--enable-webhooks=false",
            "--health-probe-bind-address",
            "0",
        ])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(
            "--watch-label-selector \"sharding.fluxcd.io/key in (shard1\": the API server refuses it"
        ),
        "{stderr}"
    );
}

/// `plan` as a CI job runs it (issue "GitOps safety", Deliver 1), against the live quickstart: an unchanged set
/// exits 0; a values change is an upgrade; a prune that deletes the cluster exits 2 and says so in every format;
/// and planning writes nothing to the management cluster.
#[test]
fn plan_prints_a_change_in_every_format_with_the_exit_code_a_ci_job_reads() {
    use serde_json::{Value, json};
    let dev = DevSession::start();
    let kinds = "omniconnections,omniclusters,omnicontrolplanes,omniworkers,omnimachines,omnikubeconfigexports,\
                 omnisecretsyncs,omnihelmreleases";
    let stored = || {
        let out = dev.kubectl(&["get", kinds, "-n", "omni-system", "-o", "json"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).expect("kubectl prints JSON")["items"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let versions = || -> Vec<String> {
        let out = dev.kubectl(&[
            "get",
            &format!("{kinds},secrets"),
            "-A",
            "-o",
            "jsonpath={range .items[*]}{.kind}/{.metadata.name}={.metadata.resourceVersion} {end}",
        ]);
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    // The live objects as manifests: dev pointed the quickstart's connection and chart at its simulators.
    let live: Vec<Value> = stored()
        .into_iter()
        .map(|o| {
            json!({"apiVersion": o["apiVersion"], "kind": o["kind"],
                "metadata": {"name": o["metadata"]["name"], "namespace": o["metadata"]["namespace"]},
                "spec": o["spec"]})
        })
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, objects: &[Value]| {
        let path = dir.path().join(name);
        std::fs::create_dir_all(&path).expect("a directory");
        let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
        std::fs::write(path.join("objects.json"), list.to_string()).expect("written");
        path
    };
    let plan = |files: &Path, extra: &[&str]| {
        let out = bin()
            .arg("--cache-dir")
            .arg(dev._dir.path().join("cache"))
            .args(["plan", "--kubeconfig"])
            .arg(&dev.kubeconfig)
            .arg("-f")
            .arg(files)
            .args(extra)
            .output()
            .expect("omni-operator runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let before = versions();

    let (code, out, err) = plan(&write("same", &live), &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(
            "\nDoes this change create, update, pause or delete a remote Omni cluster? no\n"
        ) && out.contains("\nWhich Helm releases change? none\n"),
        "{out}"
    );

    let mut values = live.clone();
    for o in &mut values {
        if o["kind"] == "OmniHelmRelease" {
            o["spec"]["chart"]["values"]["replicaCount"] = json!(3);
        }
    }
    let (code, out, err) = plan(&write("values", &values), &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(
            "\nOmniHelmRelease omni-system/hello: update\n  helm: upgrade apps/hello: the chart's source or values change (chart hello 0.1.0)\n"
        ),
        "{out}"
    );

    // Pruned: the cluster, its children and the kubeconfig export leave the manifests.
    let pruned: Vec<Value> = live
        .iter()
        .filter(|o| {
            matches!(
                o["kind"].as_str(),
                Some("OmniConnection" | "OmniHelmRelease")
            )
        })
        .cloned()
        .collect();
    let files = write("pruned", &pruned);
    let (code, out, err) = plan(&files, &["--prune"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        out.contains("\nDoes this change create, update, pause or delete a remote Omni cluster? deletes edge-sample\n")
            && out.contains("\nOmniCluster omni-system/edge-sample: remove\n  removal: will delete remote cluster edge-sample and destroy 2 machines\n"),
        "{out}"
    );
    let (code, out, _) = plan(&files, &["--prune", "--format", "markdown"]);
    assert_eq!(code, 2);
    assert!(
        out.contains("| Does this change create, update, pause or delete a remote Omni cluster? | deletes edge-sample |\n")
            && out.contains("#### OmniCluster omni-system/edge-sample: remove\n"),
        "{out}"
    );
    let (code, out, _) = plan(&files, &["--prune", "--format", "json"]);
    assert_eq!(code, 2);
    let json: Value = serde_json::from_str(&out).expect("the plan is JSON");
    assert_eq!(json["destroys"], true);
    let cluster = json["objects"]
        .as_array()
        .and_then(|o| o.iter().find(|o| o["kind"] == "OmniCluster"))
        .expect("the cluster is planned");
    assert_eq!(cluster["change"], "remove");
    assert_eq!(
        cluster["remote"],
        json!([{"cluster": "edge-sample", "action": "delete"}])
    );
    assert_eq!(
        cluster["machines_destroyed"],
        json!([
            "11111111-1111-4111-8111-111111111111",
            "22222222-2222-4222-8222-222222222222"
        ])
    );

    // The same removals as two revisions of a Git repository: the older one without the OmniSecretSync (which
    // is live, but in neither revision, so it is not removed), the newer one as pruned above.
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join("clusters")).expect("a directory");
    let git = |args: &[&str]| {
        git(&repo, args);
    };
    git(&["init", "-q"]);
    let commit = |objects: &[Value], message: &str| {
        let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
        std::fs::write(repo.join("clusters/objects.json"), list.to_string()).expect("written");
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", message]);
    };
    let older: Vec<Value> = live
        .iter()
        .filter(|o| o["kind"] != "OmniSecretSync")
        .cloned()
        .collect();
    commit(&older, "older");
    commit(&pruned, "newer");
    // The work tree says something else again: --git reads the revisions only.
    std::fs::write(repo.join("clusters/objects.json"), "not: [valid").expect("written");
    let out = bin()
        .arg("--cache-dir")
        .arg(dev._dir.path().join("cache"))
        .args(["plan", "--kubeconfig"])
        .arg(&dev.kubeconfig)
        .args(["--git", "HEAD~1..HEAD", "--repo"])
        .arg(&repo)
        .args(["-f", "clusters", "--format", "json"])
        .output()
        .expect("omni-operator runs");
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).expect("the plan is JSON");
    let removed: Vec<String> = json["objects"]
        .as_array()
        .expect("objects")
        .iter()
        .filter(|o| o["change"] == "remove")
        .map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap_or("?"),
                o["name"].as_str().unwrap_or("?")
            )
        })
        .collect();
    assert_eq!(
        removed,
        [
            "OmniCluster/edge-sample",
            "OmniControlPlane/edge-sample-control-plane",
            "OmniWorkers/edge-sample-workers",
            "OmniMachine/edge-sample-control-plane-0",
            "OmniMachine/edge-sample-worker-0",
            "OmniKubeconfigExport/edge-sample-automation",
        ],
        "{json:#}"
    );
    assert_eq!(
        json["checklist"][0]["answer"], "deletes edge-sample",
        "{json:#}"
    );

    // A manifest the API server refuses is an error: exit 1, naming it.
    let mut invalid = live.clone();
    for o in &mut invalid {
        if o["kind"] == "OmniCluster" {
            o["spec"]["deletePolicy"] = json!({"orphan": true, "destroyMachines": true});
        }
    }
    let (code, out, err) = plan(&write("invalid", &invalid), &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains(
            "\nOmniCluster omni-system/edge-sample: invalid\n  error: the API server refuses it: "
        ) && out.contains("orphan and destroyMachines cannot both be true"),
        "{out}"
    );

    assert_eq!(
        versions(),
        before,
        "planning wrote nothing to the management cluster"
    );
}

/// `plan` of a chart upgrade against the live quickstart (issue "GitOps safety", Done means): the release's
/// rendered manifests are diffed object by object in every format, a Secret's data never shows, planning changes
/// nothing in the workload cluster, and applying the change deploys what the diff showed.
#[test]
fn plan_diffs_a_chart_upgrade_and_applying_it_deploys_what_the_diff_showed() {
    use serde_json::{Value, json};
    const TOKEN: &str = "s3cr3t-v2-token";
    // Version 0.2.0 of the quickstart's chart, served next to 0.1.0: it adds a Secret when given a token.
    let charts = tempfile::tempdir().expect("tempdir");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/charts/hello");
    let chart = charts.path().join("hello");
    std::fs::create_dir_all(chart.join("templates")).expect("chart dir");
    for file in [
        "values.yaml",
        "templates/deployment.yaml",
        "templates/configmap.yaml",
        "templates/service.yaml",
    ] {
        std::fs::copy(source.join(file), chart.join(file)).expect("copied");
    }
    let meta = std::fs::read_to_string(source.join("Chart.yaml")).expect("Chart.yaml");
    assert!(meta.contains("\nversion: 0.1.0\n"), "{meta}");
    std::fs::write(
        chart.join("Chart.yaml"),
        meta.replace("\nversion: 0.1.0\n", "\nversion: 0.2.0\n"),
    )
    .expect("written");
    std::fs::write(
        chart.join("templates/secret.yaml"),
        "{{- if .Values.token }}\napiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-token\n\
         data:\n  token: {{ .Values.token | b64enc | quote }}\n{{- end }}\n",
    )
    .expect("written");
    let dev = DevSession::start_with(&["--serve-charts".as_ref(), charts.path().as_os_str()]);

    let kubeconfig = dev.kubectl(&[
        "get",
        "secret",
        "-n",
        "omni-system",
        "edge-sample-kubeconfig",
        "-o",
        "jsonpath={.data.kubeconfig}",
    ]);
    let workload_kubeconfig = dev._dir.path().join("workload.kubeconfig");
    std::fs::write(
        &workload_kubeconfig,
        base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            &kubeconfig.stdout,
        )
        .expect("the export holds base64"),
    )
    .expect("written");
    let workload = |args: &[&str]| {
        let out = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&workload_kubeconfig)
            .args(args)
            .output()
            .expect("kubectl runs");
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    // The workload cluster's objects with their versions: any write changes this.
    let workload_state = || {
        workload(&[
            "get",
            "namespaces,configmaps,secrets,deployments,services",
            "-A",
            "-o",
            "jsonpath={range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name}={.metadata.resourceVersion} {end}",
        ])
    };
    let management_state = || {
        String::from_utf8_lossy(
            &dev.kubectl(&[
                "get", "omnihelmreleases,secrets", "-A", "-o",
                "jsonpath={range .items[*]}{.kind}/{.metadata.name}={.metadata.resourceVersion} {end}",
            ])
            .stdout,
        )
        .to_string()
    };

    let live = dev.kubectl(&[
        "get",
        "omnihelmrelease",
        "-n",
        "omni-system",
        "hello",
        "-o",
        "json",
    ]);
    let live: Value = serde_json::from_slice(&live.stdout).expect("kubectl prints JSON");
    let mut release = json!({"apiVersion": live["apiVersion"], "kind": live["kind"],
        "metadata": {"name": "hello", "namespace": "omni-system"}, "spec": live["spec"]});
    release["spec"]["chart"]["version"] = json!("0.2.0");
    release["spec"]["chart"]["values"]["message"] = json!("hello again");
    let file = dev._dir.path().join("release.json");
    std::fs::write(&file, release.to_string()).expect("written");
    // The same with a token: the chart renders a Secret from it.
    release["spec"]["chart"]["values"]["token"] = json!(TOKEN);
    let with_secret = dev._dir.path().join("with-secret.json");
    std::fs::write(&with_secret, release.to_string()).expect("written");
    let plan = |file: &Path, format: &str| {
        let out = bin()
            .env("HELM_C_LIB", helm_c_lib())
            .arg("--cache-dir")
            .arg(dev._dir.path().join("cache"))
            .args(["plan", "--kubeconfig"])
            .arg(&dev.kubeconfig)
            .arg("-f")
            .arg(file)
            .args(["--format", format])
            .output()
            .expect("omni-operator runs");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(0), "{text}{err}");
        for secret in [
            TOKEN.to_string(),
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, TOKEN),
        ] {
            assert!(
                !text.contains(&secret) && !err.contains(&secret),
                "the Secret's data shows: {text}{err}"
            );
        }
        text
    };
    let (workload_before, management_before) = (workload_state(), management_state());

    let text = plan(&file, "text");
    for line in [
        "\nWhich Helm releases change? upgrade apps/hello: chart hello 0.1.0 -> 0.2.0 (hello from http",
        "\n      ConfigMap apps/hello-hello: changed\n",
        "\n        -   message: hello from the quickstart\n        +   message: hello again\n",
    ] {
        assert!(text.contains(line), "{line:?} in:\n{text}");
    }
    assert!(!text.contains("Secret apps/hello-token"), "{text}");
    let text = plan(&with_secret, "text");
    for line in [
        "\n      Secret apps/hello-token: added\n",
        "\n        +   token: (redacted, 20 bytes, changed)\n",
    ] {
        assert!(text.contains(line), "{line:?} in:\n{text}");
    }
    let markdown = plan(&with_secret, "markdown");
    assert!(
        markdown.contains("  ```diff\n  ConfigMap apps/hello-hello: changed\n")
            && markdown.contains("\n    +   message: hello again\n"),
        "{markdown}"
    );
    let json: Value = serde_json::from_str(&plan(&with_secret, "json")).expect("the plan is JSON");
    let helm = &json["objects"][0]["helm"][0];
    assert_eq!(helm["action"], "upgrade");
    let diff: Vec<&str> = helm["diff"]
        .as_array()
        .expect("a diff")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(diff.contains(&"  +   message: hello again"), "{diff:?}");
    assert!(diff.contains(&"Secret apps/hello-token: added"), "{diff:?}");

    assert_eq!(
        workload_state(),
        workload_before,
        "planning changed nothing in the workload cluster"
    );
    assert_eq!(
        management_state(),
        management_before,
        "planning changed nothing in the management cluster"
    );

    // Applied for real (with the token): Helm deploys revision 2 of chart 0.2.0, with what the diff said.
    let out = dev.kubectl(&["apply", "-f", &with_secret.to_string_lossy()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let message = || {
        workload(&[
            "get",
            "configmap",
            "-n",
            "apps",
            "hello-hello",
            "-o",
            "jsonpath={.data.message}",
        ])
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(100);
    while message() != "hello again" {
        assert!(
            std::time::Instant::now() < deadline,
            "the upgrade never deployed: {}",
            workload(&["get", "configmaps,secrets", "-n", "apps"])
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(
        workload(&["get", "secrets", "-n", "apps", "-o", "name"])
            .contains("sh.helm.release.v1.hello.v2")
    );
    assert_eq!(
        workload(&[
            "get",
            "secret",
            "-n",
            "apps",
            "hello-token",
            "-o",
            "jsonpath={.data.token}"
        ]),
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, TOKEN),
        "the Secret the diff showed as added"
    );
}

/// The plan through the API (issue "GitOps safety", Deliver 2): `kubectl apply --dry-run=server` of a changed
/// OmniCluster and OmniHelmRelease is answered with the plan's one-line summary as a warning, as Flux's and Argo
/// CD's server-side diffs send it; the dry run stores nothing, and a real apply carries no plan.
#[test]
fn a_server_dry_run_is_answered_with_the_plan_summary_as_a_warning() {
    use serde_json::Value;
    let dev = DevSession::start();
    let get = |kind: &str, name: &str| -> Value {
        let out = dev.kubectl(&["get", kind, "-n", "omni-system", name, "-o", "json"]);
        serde_json::from_slice(&out.stdout).expect("kubectl prints JSON")
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let apply = |object: &Value, extra: &[&str]| {
        let path = dir.path().join("object.json");
        std::fs::write(&path, object.to_string()).expect("written");
        let out = dev.kubectl(&[&["apply", "-f", &path.to_string_lossy()], extra].concat());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stderr).to_string()
    };

    let mut cluster = get("omnicluster", "edge-sample");
    let version = cluster["metadata"]["resourceVersion"].clone();
    cluster["spec"]["kubernetes"]["version"] = "v1.35.3".into();
    let warnings = apply(&cluster, &["--dry-run=server"]);
    assert!(
        warnings.contains(
            "Warning: omni-operator plan: 1 of 1 objects change; remote clusters: updates edge-sample; machines \
             destroyed: 0; Helm: none\n"
        ),
        "{warnings}"
    );
    assert_eq!(
        get("omnicluster", "edge-sample")["metadata"]["resourceVersion"],
        version,
        "the dry run stored nothing"
    );

    let mut release = get("omnihelmrelease", "hello");
    release["spec"]["chart"]["values"]["replicaCount"] = 4.into();
    let warnings = apply(&release, &["--dry-run=server"]);
    assert!(
        warnings.contains(
            "Warning: omni-operator plan: 1 of 1 objects change; remote clusters: no; machines destroyed: 0; Helm: \
             upgrade apps/hello: the chart's source or values change (chart hello 0.1.0)\n"
        ),
        "{warnings}"
    );

    // `kubectl diff` and a server-side apply's dry run (what Flux and Argo CD send) get it too.
    let path = dir.path().join("object.json");
    std::fs::write(&path, cluster.to_string()).expect("written");
    let summary =
        "Warning: omni-operator plan: 1 of 1 objects change; remote clusters: updates edge-sample";
    let out = dev.kubectl(&["diff", "-f", &path.to_string_lossy()]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "kubectl diff found a difference"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(summary),
        "{out:?}"
    );
    let out = dev.kubectl(&[
        "apply",
        "--server-side",
        "--force-conflicts",
        "--dry-run=server",
        "-f",
        &path.to_string_lossy(),
    ]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(summary),
        "{out:?}"
    );
    assert_eq!(
        get("omnicluster", "edge-sample")["metadata"]["resourceVersion"],
        version,
        "the dry runs stored nothing"
    );

    let warnings = apply(&cluster, &[]);
    assert!(!warnings.contains("omni-operator plan"), "{warnings}");
}

/// `--deletion-protection-default` (issue "GitOps safety", Deliver 3): the quickstart's OmniCluster and
/// OmniHelmRelease, new to the operator, are protected with their finalizer and their deletion refused with the
/// guard's message; an object that says `disabled` itself keeps its word and is deleted as the Go operator
/// deletes it; kinds whose deletion destroys nothing remote are not annotated.
#[test]
fn deletion_protection_default_protects_new_objects_that_do_not_say_otherwise() {
    let dev = DevSession::start_with(&["--deletion-protection-default".as_ref()]);
    let annotation = |kind: &str, name: &str| {
        let out = dev.kubectl(&[
            "get",
            kind,
            name,
            "-n",
            "omni-system",
            "-o",
            r"jsonpath={.metadata.annotations.omni\.texashpc\.com/deletion-protection}",
        ]);
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    assert_eq!(annotation("omnicluster", "edge-sample"), "enabled");
    assert_eq!(annotation("omnihelmrelease", "hello"), "enabled");
    assert_eq!(annotation("omniworkers", "edge-sample-workers"), "");
    let out = dev.kubectl(&[
        "delete",
        "omnicluster",
        "edge-sample",
        "-n",
        "omni-system",
        "--wait=false",
    ]);
    assert!(!out.status.success(), "a protected cluster is not deleted");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Error from server (Forbidden): admission webhook \"vomnicluster-v1alpha1.kb.io\" denied the request: \
         OmniCluster omni-system/edge-sample is protected from deletion (omni.texashpc.com/deletion-protection): \
         deleting it deletes Omni cluster \"edge-sample\". To delete it, first set the annotation \
         omni.texashpc.com/confirm-deletion=edge-sample in a separate change, or set spec.deletePolicy.orphan: true \
         to keep the Omni cluster\n"
    );

    // A new cluster that turns protection off itself: given its finalizer, not the annotation.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("other.yaml");
    std::fs::write(
        &path,
        "apiVersion: omni.texashpc.com/v1alpha1\nkind: OmniCluster\nmetadata:\n  name: edge-other\n  \
         namespace: omni-system\n  annotations:\n    omni.texashpc.com/deletion-protection: disabled\nspec:\n  \
         connectionRef:\n    name: omni-sample\n  kubernetes:\n    version: v1.35.0\n  talos:\n    version: \
         v1.13.2\n",
    )
    .expect("written");
    let out = dev.kubectl(&["apply", "-f", &path.to_string_lossy()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let out = dev.kubectl(&[
            "get",
            "omnicluster",
            "edge-other",
            "-n",
            "omni-system",
            "-o",
            "jsonpath={.metadata.finalizers}",
        ]);
        if String::from_utf8_lossy(&out.stdout).contains("omni.texashpc.com/finalizer") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "edge-other was never given its finalizer"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(annotation("omnicluster", "edge-other"), "disabled");
    let out = dev.kubectl(&[
        "delete",
        "omnicluster",
        "edge-other",
        "-n",
        "omni-system",
        "--wait=false",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `plan --offline` (issue "GitOps safety", Deliver 1): with no management cluster, two revisions of a Git
/// repository are planned on the embedded simulators, the older one applied and settled first: the newer one's
/// Kubernetes upgrade, values change (with Helm's rendered diff) and dropped OmniSecretSync are what the plan says,
/// and what the simulators said goes to standard error. Without --git the simulators start empty: the quickstart
/// is a cluster created.
#[test]
fn plan_offline_plans_two_git_revisions_on_the_embedded_simulators() {
    use serde_json::Value;
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path();
    let git = |args: &[&str]| {
        git(repo, args);
    };
    git(&["init", "-q"]);
    let clusters = repo.join("clusters");
    std::fs::create_dir_all(&clusters).expect("a directory");
    for entry in std::fs::read_dir(examples()).expect("the quickstart") {
        let path = entry.expect("an entry").path();
        if path.extension().is_some_and(|e| e == "yaml") {
            std::fs::copy(&path, clusters.join(path.file_name().expect("a name"))).expect("copied");
        }
    }
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "the quickstart"]);
    let edit = |file: &str, from: &str, to: &str| {
        let path = clusters.join(file);
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.contains(from), "{from} in {file}");
        std::fs::write(&path, text.replace(from, to)).expect("written");
    };
    edit("20-cluster.yaml", "version: v1.35.0", "version: v1.35.1");
    edit("70-helm-release.yaml", "replicaCount: 2", "replicaCount: 3");
    git(&["rm", "-q", "clusters/60-secret-sync.yaml"]);
    git(&["commit", "-q", "-a", "-m", "upgrade"]);

    let plan = |args: &[&str]| {
        let out = bin()
            .env("HELM_C_LIB", helm_c_lib())
            .arg("--cache-dir")
            .arg(dir.path().join("cache"))
            .args(["plan", "--offline", "--serve-charts"])
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/charts"))
            .args(args)
            .output()
            .expect("omni-operator runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (code, out, err) = plan(&[
        "--git",
        "HEAD~1..HEAD",
        "--repo",
        &repo.to_string_lossy(),
        "-f",
        "clusters",
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    for line in [
        "\nDoes this change create, update, pause or delete a remote Omni cluster? updates edge-sample\n",
        "\nIs anything removed from Git, and is its deletion policy intentional? OmniSecretSync \
         omni-system/registry-credentials: deletes the Secret it wrote (spec.deletionPolicy: Delete)\n",
        "\n      -     kubernetes_version: \"1.35.0\",\n      +     kubernetes_version: \"1.35.1\",\n",
        "\n      Deployment apps/hello-hello: changed\n        -   replicas: 2\n        +   replicas: 3\n",
    ] {
        assert!(out.contains(line), "{line:?} in:\n{out}");
    }
    assert!(
        out.starts_with("omni-operator plan: "),
        "only the plan on standard output: {out}"
    );
    assert!(err.contains("all 9 reconciled objects are ready"), "{err}");

    let (code, out, err) = plan(&["-f", &clusters.to_string_lossy(), "--format", "json"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let json: Value = serde_json::from_str(&out).expect("the plan is JSON");
    assert_eq!(
        json["checklist"][0]["answer"], "creates edge-sample",
        "{json:#}"
    );
    let cluster = json["objects"]
        .as_array()
        .and_then(|o| o.iter().find(|o| o["kind"] == "OmniCluster"))
        .expect("the cluster is planned");
    assert_eq!(cluster["change"], "create");
}
