//! The plugin platform end to end: Plugin and binding objects applied with kubectl, artifacts pulled from a real
//! OCI registry on loopback and verified against cosign keys, bindings serving their namespaces with versions of
//! their own, bad artifacts refused with a condition, conflicts reported on both bindings, and a broken release
//! rolled back by itself.
//!
//! The test plugin is `widget` (tests/guests/widget): it reconciles OmniControlPlanes and names its version in the
//! `Accepted` condition's reason (`ServedByv1`, `ServedByv2`); its release `v3` traps on half its objects.

use std::time::Duration;

use omni_operator::distribution::{Access, metadata, oci, signature};
use omni_operator::platform::PlatformOptions;
use omni_operator::stack::{self, HostBuilder};
use serde_json::{Value, json};

use crate::helm_fixtures::{Registry, registry};
use crate::{guests, support};

const API: &str = "omni.texashpc.com/v1alpha1";
const PLATFORM: &str = "plugins.omni.texashpc.com/v1alpha1";

struct Env {
    sim: kube_sim::KubeSim,
    registry: Registry,
    _host: stack::Host,
    kubeconfig: tempfile::TempDir,
    private_key: String,
}

fn plain() -> Access {
    Access {
        plain_http: true,
        ..Access::default()
    }
}

async fn start() -> Env {
    let sim = stack::management_cluster(kube_sim::KubeSim::builder())
        .await
        .expect("kube-sim");
    for ns in ["team-a", "team-b", "team-c", "omni-system"] {
        sim.apply(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
            .await
            .expect("namespace");
    }
    let (private_key, public_key) = signature::generate_key_pair(b"pw").expect("keygen");
    // The release key as a platform team keeps it: in a Secret the Plugin names.
    sim.apply(&json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "plugin-keys", "namespace": "omni-system"},
        "stringData": {"release.pub": public_key}}))
        .await
        .expect("key secret");
    let host = HostBuilder::new(support::runtime().clone())
        .built_ins()
        .expect("built-ins")
        .platform(PlatformOptions::default())
        .start(sim.kubeconfig(&sim.admin()))
        .await
        .expect("host");
    let kubeconfig = tempfile::tempdir().expect("tempdir");
    sim.write_kubeconfig(&kubeconfig.path().join("config"), &sim.admin())
        .expect("kubeconfig");
    Env {
        sim,
        registry: registry().await,
        _host: host,
        kubeconfig,
        private_key: private_key.to_string(),
    }
}

impl Env {
    /// Pushes a widget build under `tag`, signed by `signer` if given; returns its digest. Each tag gets bytes
    /// of its own (a custom section naming it), so no two tags share a digest or its signatures.
    async fn push(&self, guest: &str, tag: &str, signer: Option<&str>) -> String {
        let mut wasm = guests::wasm(guest);
        let mut section = vec![3u8];
        section.extend_from_slice(b"tag");
        section.extend_from_slice(tag.as_bytes());
        wasm.push(0);
        wasm.push(u8::try_from(section.len()).expect("a short tag"));
        wasm.extend_from_slice(&section);
        let reference = format!("{}/plugins/widget:{tag}", self.registry.host)
            .parse()
            .expect("reference");
        let meta = metadata::read(&wasm)
            .expect("metadata")
            .expect("the SDK wrote it");
        let digest = oci::push(
            &reference,
            &wasm,
            metadata::interfaces(&wasm).expect("interfaces"),
            metadata::annotations(&meta),
            &plain(),
        )
        .await
        .expect("push");
        if let Some(key) = signer {
            signature::sign(&reference, &digest, key.as_bytes(), b"pw", &plain())
                .await
                .expect("sign");
        }
        digest
    }

    fn kubectl(&self, args: &[&str], stdin: &str) {
        use std::io::Write as _;
        let mut child = std::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(self.kubeconfig.path().join("config"))
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("kubectl");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(stdin.as_bytes())
            .expect("write");
        let out = child.wait_with_output().expect("kubectl output");
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn kubectl_apply(&self, yaml: &str) {
        self.kubectl(&["apply", "-f", "-"], yaml);
    }

    fn plugin(&self, name: &str) -> Value {
        self.sim
            .get(PLATFORM, "Plugin", "", name)
            .unwrap_or(Value::Null)
    }

    fn binding(&self, namespace: &str, name: &str) -> Value {
        self.sim
            .get(PLATFORM, "PluginBinding", namespace, name)
            .unwrap_or(Value::Null)
    }

    async fn control_plane(&self, namespace: &str, name: &str) {
        self.sim
            .apply(&json!({"apiVersion": API, "kind": "OmniControlPlane",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"clusterRef": {"name": "edge"}, "machines": ["11111111-1111-4111-8111-111111111111"]}}))
            .await
            .expect("control plane");
    }

    /// The reason of an OmniControlPlane's `Accepted` condition: who served it.
    fn served_by(&self, namespace: &str, name: &str) -> String {
        condition(
            &self
                .sim
                .get(API, "OmniControlPlane", namespace, name)
                .unwrap_or(Value::Null),
            "Accepted",
        )
        .map(|c| c["reason"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default()
    }

    fn events(&self, reason: &str) -> Vec<Value> {
        self.sim
            .list("events.k8s.io/v1", "Event", None)
            .into_iter()
            .filter(|e| e["reason"] == reason)
            .collect()
    }
}

fn condition(object: &Value, type_: &str) -> Option<Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .cloned()
}

fn is(object: &Value, type_: &str, status: &str, reason: &str) -> bool {
    condition(object, type_).is_some_and(|c| c["status"] == status && c["reason"] == reason)
}

/// Waits for `f`, generously: fetching, compiling and probing a plugin take seconds on a slow machine. On a
/// timeout the platform objects' status is shown with the log.
async fn eventually(env: &Env, what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..1500 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    let statuses: Vec<String> = ["Plugin", "PluginBinding", "ClusterPluginBinding"]
        .iter()
        .flat_map(|k| env.sim.list(PLATFORM, k, None))
        .map(|o| format!("{} {}: {:#}", o["kind"], o["metadata"]["name"], o["status"]))
        .collect();
    panic!(
        "timed out waiting for {what}\nplatform objects:\n{}\nlast log lines:\n{}",
        statuses.join("\n"),
        support::log_tail(30)
    );
}

fn plugin_yaml(name: &str, artifact: &str, extra: &str) -> String {
    format!(
        "apiVersion: {PLATFORM}\nkind: Plugin\nmetadata:\n  name: {name}\nspec:\n  artifact: {artifact}\n  plainHTTP: true\n  \
         grants: [clock, helm]\n  verification:\n    publicKeys:\n    - name: release\n      secretKeyRef: \
         {{name: plugin-keys, namespace: omni-system, key: release.pub}}\n{extra}"
    )
}

fn binding_yaml(namespace: &str, name: &str, plugin: &str) -> String {
    format!(
        "apiVersion: {PLATFORM}\nkind: PluginBinding\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  \
         plugin: {plugin}\n  kinds:\n  - group: omni.texashpc.com\n    kind: OmniControlPlane\n  grants: [clock, omni]\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_plugins_bound_with_kubectl_serve_their_namespaces_and_bad_artifacts_are_refused() {
    let env = start().await;
    let v1 = env.push("widget", "1.0", Some(&env.private_key)).await;
    let v2 = env.push("widget_v2", "2.0", Some(&env.private_key)).await;
    let (stranger, _) = signature::generate_key_pair(b"pw").expect("keygen");
    env.push("widget_v2", "forged", Some(&stranger)).await;
    env.push("widget_v2", "unsigned", None).await;
    env.control_plane("team-a", "cp").await;
    env.control_plane("team-b", "cp").await;

    // v1 by tag, bound in team-a.
    let host = env.registry.host.clone();
    env.kubectl_apply(&plugin_yaml(
        "widget-v1",
        &format!("oci://{host}/plugins/widget:1.0"),
        "",
    ));
    env.kubectl_apply(&binding_yaml("team-a", "widget", "widget-v1"));
    eventually(&env, "team-a served by widget v1", || {
        env.served_by("team-a", "cp") == "ServedByv1"
    })
    .await;
    let plugin = env.plugin("widget-v1");
    assert!(is(&plugin, "Ready", "True", "Serving"), "{plugin:#}");
    assert!(
        is(&plugin, "Verified", "True", "SignatureVerified"),
        "{plugin:#}"
    );
    assert_eq!(plugin["status"]["digest"], v1.as_str());
    // The tag was resolved once, and the status pins it.
    assert_eq!(
        plugin["status"]["resolvedArtifact"],
        format!("oci://{host}/plugins/widget@{v1}")
    );
    assert_eq!(plugin["status"]["signedBy"], "release");
    assert_eq!(plugin["status"]["component"]["name"], "guest-widget");
    assert_eq!(
        plugin["status"]["component"]["requestedGrants"],
        json!(["clock"])
    );
    let binding = env.binding("team-a", "widget");
    assert!(is(&binding, "Ready", "True", "Serving"), "{binding:#}");
    // Requested {clock} ∩ ceiling {clock, helm} ∩ binding {clock, omni}.
    assert_eq!(binding["status"]["effectiveGrants"], json!(["clock"]));
    assert_eq!(binding["status"]["digest"], v1.as_str());
    assert_eq!(
        binding["status"]["kinds"],
        json!(["omni.texashpc.com/OmniControlPlane"])
    );
    // team-b has no binding: the built-in still serves it.
    assert!(!env.served_by("team-b", "cp").starts_with("ServedBy"));

    // v2 pinned by digest, bound in team-b: two versions of one plugin serve two namespaces at once.
    env.kubectl_apply(&plugin_yaml(
        "widget-v2",
        &format!("oci://{host}/plugins/widget@{v2}"),
        "",
    ));
    env.kubectl_apply(&binding_yaml("team-b", "widget", "widget-v2"));
    eventually(&env, "team-b served by widget v2", || {
        env.served_by("team-b", "cp") == "ServedByv2"
    })
    .await;
    assert_eq!(env.served_by("team-a", "cp"), "ServedByv1");

    // Unsigned, and signed by a key nobody trusts: refused with a clear condition, and nothing they would serve
    // changes.
    env.kubectl_apply(&plugin_yaml(
        "widget-unsigned",
        &format!("oci://{host}/plugins/widget:unsigned"),
        "",
    ));
    env.kubectl_apply(&plugin_yaml(
        "widget-forged",
        &format!("oci://{host}/plugins/widget:forged"),
        "",
    ));
    env.kubectl_apply(&binding_yaml("team-c", "widget", "widget-unsigned"));
    eventually(&env, "the unsigned Plugin refused", || {
        is(&env.plugin("widget-unsigned"), "Ready", "False", "Unsigned")
    })
    .await;
    eventually(&env, "the forged Plugin refused", || {
        is(
            &env.plugin("widget-forged"),
            "Ready",
            "False",
            "UntrustedSignature",
        )
    })
    .await;
    let forged = condition(&env.plugin("widget-forged"), "Verified").expect("Verified");
    assert_eq!(forged["status"], "False");
    assert!(
        forged["message"]
            .as_str()
            .unwrap_or_default()
            .contains("release"),
        "the message names the trusted key: {forged}"
    );
    eventually(
        &env,
        "the binding to the unsigned Plugin is not ready",
        || {
            is(
                &env.binding("team-c", "widget"),
                "Ready",
                "False",
                "PluginNotReady",
            )
        },
    )
    .await;
    assert!(
        !env.events("Unsigned").is_empty(),
        "a Warning Event for the refusal"
    );

    // A second binding for the same kind in team-a: both are told, naming each other; the older keeps serving.
    env.kubectl_apply(&binding_yaml("team-a", "widget-again", "widget-v2"));
    eventually(&env, "both team-a bindings report the conflict", || {
        is(
            &env.binding("team-a", "widget"),
            "Conflict",
            "True",
            "Conflict",
        ) && is(
            &env.binding("team-a", "widget-again"),
            "Conflict",
            "True",
            "Conflict",
        )
    })
    .await;
    let newer = condition(&env.binding("team-a", "widget-again"), "Conflict").expect("Conflict");
    assert!(
        newer["message"]
            .as_str()
            .unwrap_or_default()
            .contains("PluginBinding team-a/widget"),
        "{newer}"
    );
    assert!(is(
        &env.binding("team-a", "widget-again"),
        "Ready",
        "False",
        "Conflict"
    ));
    assert!(is(
        &env.binding("team-a", "widget"),
        "Ready",
        "True",
        "Serving"
    ));
    assert_eq!(env.served_by("team-a", "cp"), "ServedByv1");

    // The binding goes: team-b is served by the built-in again, without any change to its objects.
    env.kubectl(&["delete", "pluginbinding", "widget", "-n", "team-b"], "");
    eventually(&env, "team-b back on the built-in", || {
        !env.served_by("team-b", "cp").starts_with("ServedBy")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_that_traps_on_half_its_objects_is_rolled_back_with_events() {
    let env = start().await;
    let v1 = env.push("widget", "1.0", Some(&env.private_key)).await;
    let v3 = env
        .push("widget_flaky", "3.0", Some(&env.private_key))
        .await;
    let host = env.registry.host.clone();
    let rollback = "  rollout:\n    rollback: {failurePercent: 30, minCalls: 4, window: 5m}\n";
    env.kubectl_apply(&plugin_yaml(
        "widget",
        &format!("oci://{host}/plugins/widget@{v1}"),
        rollback,
    ));
    // A cluster-wide default binding.
    env.kubectl_apply(&format!(
        "apiVersion: {PLATFORM}\nkind: ClusterPluginBinding\nmetadata:\n  name: widget\nspec:\n  plugin: widget\n  grants: [clock]\n"
    ));
    for i in 0..10 {
        env.control_plane("team-a", &format!("cp-{i}")).await;
    }
    eventually(&env, "every object served by v1", || {
        (0..10).all(|i| env.served_by("team-a", &format!("cp-{i}")) == "ServedByv1")
    })
    .await;

    // The broken release.
    env.kubectl_apply(&plugin_yaml(
        "widget",
        &format!("oci://{host}/plugins/widget@{v3}"),
        rollback,
    ));
    eventually(&env, "the broken release rolled back", || {
        is(&env.plugin("widget"), "Degraded", "True", "RolledBack")
    })
    .await;
    let plugin = env.plugin("widget");
    assert_eq!(plugin["status"]["digest"], v1.as_str(), "{plugin:#}");
    assert_eq!(plugin["status"]["failures"][0]["reason"], "RolledBack");
    assert_eq!(plugin["status"]["failures"][0]["digest"], v3.as_str());
    assert!(is(&plugin, "Ready", "True", "Serving"));
    let events = env.events("RolledBack");
    assert!(
        events.iter().any(|e| e["type"] == "Warning"
            && e["regarding"]["name"] == "widget"
            && e["note"].as_str().unwrap_or_default().contains(&v3)),
        "{events:#?}"
    );
    // Every object is served by v1 again, the ones v3 trapped on included.
    eventually(&env, "every object back on v1", || {
        (0..10).all(|i| env.served_by("team-a", &format!("cp-{i}")) == "ServedByv1")
    })
    .await;
    // The rolled-back digest is not tried again while the spec names it.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(env.plugin("widget")["status"]["digest"], v1.as_str());
}
