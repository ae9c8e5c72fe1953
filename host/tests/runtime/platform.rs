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
    start_with(PlatformOptions::default()).await
}

async fn start_with(options: PlatformOptions) -> Env {
    // The workload controllers run, so what a third-party operator creates (the example's Deployments) becomes
    // Ready as on a real cluster.
    let builder =
        kube_sim::KubeSim::builder().workloads(kube_sim::workloads::WorkloadOptions::default());
    let sim = stack::management_cluster(builder).await.expect("kube-sim");
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
        .platform(options)
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

    /// Runs kubectl against the management cluster; returns its output.
    fn kubectl(&self, args: &[&str], stdin: &str) -> String {
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
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn kubectl_apply(&self, yaml: &str) {
        self.kubectl(&["apply", "-f", "-"], yaml);
    }

    /// Widget 1.0 and the flaky 3.0 pushed and signed, and 1.0 served everywhere through a cluster-wide binding,
    /// its Plugin carrying `rollout`. Returns both digests.
    async fn widget_serving_v1(&self, rollout: &str) -> (String, String) {
        let v1 = self.push("widget", "1.0", Some(&self.private_key)).await;
        let v3 = self
            .push("widget_flaky", "3.0", Some(&self.private_key))
            .await;
        let host = &self.registry.host;
        self.kubectl_apply(&plugin_yaml(
            "widget",
            &format!("oci://{host}/plugins/widget@{v1}"),
            rollout,
        ));
        // A cluster-wide default binding.
        self.kubectl_apply(&format!(
            "apiVersion: {PLATFORM}\nkind: ClusterPluginBinding\nmetadata:\n  name: widget\nspec:\n  plugin: widget\n  grants: [clock]\n"
        ));
        (v1, v3)
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

    // A Plugin kept to one namespace cannot be bound elsewhere.
    env.kubectl_apply(&plugin_yaml(
        "widget-team-a-only",
        &format!("oci://{host}/plugins/widget@{v1}"),
        "  namespaces: [team-a]\n",
    ));
    env.kubectl_apply(&binding_yaml("team-c", "kept-out", "widget-team-a-only"));
    eventually(
        &env,
        "a binding outside the Plugin's namespaces refused",
        || {
            is(
                &env.binding("team-c", "kept-out"),
                "Ready",
                "False",
                "NamespaceNotAllowed",
            )
        },
    )
    .await;

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
    let rollback = "  rollout:\n    rollback: {failurePercent: 30, minCalls: 4, window: 5m}\n";
    let (v1, v3) = env.widget_serving_v1(rollback).await;
    let host = env.registry.host.clone();
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_serves_its_namespace_first_and_then_every_object() {
    let env = start().await;
    let v1 = env.push("widget", "1.0", Some(&env.private_key)).await;
    let v2 = env.push("widget_v2", "2.0", Some(&env.private_key)).await;
    let host = env.registry.host.clone();
    let canary = "  rollout:\n    canary: {namespaces: [team-b], duration: 10s}\n";
    env.kubectl_apply(&plugin_yaml(
        "widget",
        &format!("oci://{host}/plugins/widget@{v1}"),
        canary,
    ));
    env.kubectl_apply(&format!(
        "apiVersion: {PLATFORM}\nkind: ClusterPluginBinding\nmetadata:\n  name: widget\nspec:\n  plugin: widget\n  grants: [clock]\n"
    ));
    env.control_plane("team-a", "cp").await;
    env.control_plane("team-b", "cp").await;
    eventually(&env, "both namespaces on v1", || {
        env.served_by("team-a", "cp") == "ServedByv1"
            && env.served_by("team-b", "cp") == "ServedByv1"
    })
    .await;

    env.kubectl_apply(&plugin_yaml(
        "widget",
        &format!("oci://{host}/plugins/widget@{v2}"),
        canary,
    ));
    eventually(&env, "the canary namespace on v2", || {
        env.served_by("team-b", "cp") == "ServedByv2"
    })
    .await;
    // While the canary runs (10 s), the rest stays on v1 and the status says which digest is on trial.
    let plugin = env.plugin("widget");
    assert_eq!(plugin["status"]["canaryDigest"], v2.as_str(), "{plugin:#}");
    assert_eq!(plugin["status"]["digest"], v1.as_str(), "{plugin:#}");
    assert_eq!(env.served_by("team-a", "cp"), "ServedByv1");
    eventually(&env, "the canary promoted to every object", || {
        env.served_by("team-a", "cp") == "ServedByv2"
    })
    .await;
    eventually(&env, "the status after promotion", || {
        let p = env.plugin("widget");
        p["status"]["digest"] == v2.as_str()
            && p["status"].get("canaryDigest").is_none()
            && p["status"]["previousDigest"] == v1.as_str()
    })
    .await;
    assert!(
        env.events("CanaryStarted")
            .iter()
            .any(|e| e["note"].as_str().unwrap_or_default().contains(&v2)),
        "a Normal Event when the canary starts"
    );
    assert!(!env.events("CanaryPromoted").is_empty());
}

/// A canary is judged on every export: a version whose `validate` traps (and nothing else runs in the canary's
/// namespace, so no reconcile is there to fail) is rolled back, not promoted when its duration ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_whose_validate_traps_is_rolled_back_not_promoted() {
    use omni_operator::admission::{FailurePolicy, Webhooks};
    use omni_operator::runtime::KindKey;

    let env = start().await;
    let rollout = "  rollout:\n    canary: {namespaces: [team-b], duration: 15s}\n    rollback: {failurePercent: 30, minCalls: 4, window: 5m}\n";
    let (v1, v3) = env.widget_serving_v1(rollout).await;
    let host = env.registry.host.clone();
    eventually(&env, "v1 serving", || {
        env.plugin("widget")["status"]["digest"] == v1.as_str()
    })
    .await;
    env.kubectl_apply(&plugin_yaml(
        "widget",
        &format!("oci://{host}/plugins/widget@{v3}"),
        rollout,
    ));
    let registry = env._host.registry().clone();
    let kind = KindKey::new("omni.texashpc.com", "OmniControlPlane");
    eventually(&env, "the canary routing team-b's reviews", || {
        registry
            .serving(&kind, Some("team-b"), "u")
            .is_some_and(|p| p.info().version == "v3")
    })
    .await;
    // Reviews of team-b objects with odd names: the canary's validate traps on each.
    let webhooks = Webhooks::new(registry, Duration::from_secs(5), FailurePolicy::Fail);
    let path = omni_operator::admission::validate_path(
        "omni.texashpc.com",
        "v1alpha1",
        "OmniControlPlane",
    );
    for i in 0..8 {
        let name = format!("cp-{}", 2 * i + 1);
        let review = json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": format!("u-{i}"), "kind": {"group": "omni.texashpc.com", "version": "v1alpha1",
                    "kind": "OmniControlPlane"},
                "name": name, "namespace": "team-b", "operation": "CREATE",
                "object": {"apiVersion": "omni.texashpc.com/v1alpha1", "kind": "OmniControlPlane",
                    "metadata": {"name": name, "namespace": "team-b", "uid": format!("u-{i}")},
                    "spec": {"clusterRef": {"name": "edge"}}}},
        });
        let (_, answer) = webhooks.answer(&path, review.to_string().as_bytes()).await;
        assert_eq!(answer["response"]["status"]["code"], 500, "{answer}");
    }
    eventually(&env, "the canary rolled back", || {
        is(&env.plugin("widget"), "Degraded", "True", "RolledBack")
    })
    .await;
    let plugin = env.plugin("widget");
    assert_eq!(plugin["status"]["digest"], v1.as_str(), "{plugin:#}");
    assert!(plugin["status"].get("canaryDigest").is_none(), "{plugin:#}");
    assert!(
        env.events("CanaryPromoted").is_empty(),
        "a failing canary was promoted"
    );
}

/// Fair scheduling between tenants: team-a's plugin spins on every object until the host's 5 s call deadline
/// stops it, with 12 objects, more than the kind's 4 workers. Its binding's quota (one call at a time) turns
/// its other reconciles away at once instead of letting them take workers, so team-b's new object is served
/// within the bound the README states (3 s; without the quota it waits behind the spinning calls, 5 s and more).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenants_looping_plugin_leaves_another_tenants_reconciles_within_the_bound() {
    let env = start().await;
    let v1 = env.push("widget", "1.0", Some(&env.private_key)).await;
    let spinning = env
        .push("widget_loop", "loop", Some(&env.private_key))
        .await;
    let host = env.registry.host.clone();
    env.kubectl_apply(&plugin_yaml(
        "widget",
        &format!("oci://{host}/plugins/widget@{v1}"),
        "",
    ));
    env.kubectl_apply(&plugin_yaml(
        "widget-loop",
        &format!("oci://{host}/plugins/widget@{spinning}"),
        "",
    ));
    env.kubectl_apply(&binding_yaml("team-b", "widget", "widget"));
    env.kubectl_apply(&format!(
        "{}  quota: {{concurrency: 1, callsPerSecond: 5}}\n",
        binding_yaml("team-a", "widget", "widget-loop")
    ));
    eventually(&env, "both bindings ready", || {
        is(&env.binding("team-a", "widget"), "Ready", "True", "Serving")
            && is(&env.binding("team-b", "widget"), "Ready", "True", "Serving")
    })
    .await;
    for i in 0..12 {
        env.control_plane("team-a", &format!("spin-{i}")).await;
    }
    // The spinning calls have started (they end in their deadline, reported on the objects).
    eventually(&env, "a spinning call stopped by its deadline", || {
        (0..12).any(|i| {
            let o = env
                .sim
                .get(API, "OmniControlPlane", "team-a", &format!("spin-{i}"))
                .unwrap_or(Value::Null);
            is(&o, "Ready", "False", "PluginTimeout")
        })
    })
    .await;

    let started = std::time::Instant::now();
    env.control_plane("team-b", "cp").await;
    eventually(&env, "team-b served", || {
        env.served_by("team-b", "cp") == "ServedByv1"
    })
    .await;
    let latency = started.elapsed();
    assert!(
        latency < Duration::from_secs(3),
        "team-b waited {latency:?} behind team-a's spinning plugin"
    );

    // Per-binding figures: team-a's status counts its timeouts and the calls its quota turned away, and a
    // Warning Event says so.
    eventually(&env, "team-a's usage in its binding's status", || {
        let usage = &env.binding("team-a", "widget")["status"]["usage"];
        usage["quotaHits"].as_u64().unwrap_or(0) > 0
            && usage["traps"]["PluginTimeout"].as_u64().unwrap_or(0) > 0
    })
    .await;
    assert!(
        env.events("QuotaExceeded")
            .iter()
            .any(|e| e["regarding"]["name"] == "widget" && e["regarding"]["namespace"] == "team-a"),
        "a QuotaExceeded Event on team-a's binding"
    );
    let team_b = &env.binding("team-b", "widget")["status"]["usage"];
    assert_eq!(team_b["quotaHits"].as_u64().unwrap_or(0), 0, "{team_b}");
}

/// Runs the operator's CLI in `dir`.
fn cli(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_omni-operator"))
        .args(args)
        .current_dir(dir)
        .env("COSIGN_PASSWORD", "pw")
        .output()
        .expect("the CLI runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "omni-operator {args:?} failed:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Builds a plugin crate for wasm32-wasip2 as its README says; returns the component's path. The target dir
/// is shared between runs (the SDK's dependencies compile once); the crate itself stays where it is.
fn build_plugin(dir: &std::path::Path, lib: &str) -> std::path::PathBuf {
    let target = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target/tmp has a parent")
        .join("author-kit");
    let out = guests::wasm_build(&target)
        .current_dir(dir)
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "building {} failed:\n{}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    target.join(format!("wasm32-wasip2/release/{lib}.wasm"))
}

/// The author kit end to end, from a clean directory outside the workspace: `plugin new` → build → `plugin test`
/// → `plugin push` (signed) → Plugin and PluginBinding applied with kubectl → serving a kind of its own in one
/// namespace. The example third-party plugin in examples/plugins/site-widgets goes the same way, its committed
/// fixtures replayed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_plugin_goes_from_template_to_serving_and_so_does_the_example() {
    let env = start_with(PlatformOptions {
        allowed_kinds: vec![
            ("example.com".into(), "Widget".into()),
            ("sites.example.com".into(), "SiteWidget".into()),
        ],
        ..PlatformOptions::default()
    })
    .await;
    let work = tempfile::tempdir().expect("a directory outside the workspace");
    std::fs::write(work.path().join("release.key"), &env.private_key).expect("key");

    // plugin new → build → plugin test (the first run writes the snapshot, the second compares with it).
    cli(work.path(), &["plugin", "new", "team-widgets"]);
    let crate_dir = work.path().join("team-widgets");
    let wasm = build_plugin(&crate_dir, "team_widgets");
    let wasm_arg = wasm.display().to_string();
    let template_test = [
        "plugin",
        "test",
        &wasm_arg,
        "--fixtures",
        "fixtures",
        "--grant",
        "clock",
        "--grant",
        "kube-write:core/v1/ConfigMap",
    ];
    let first = cli(&crate_dir, &template_test);
    assert!(first.contains("written example"), "{first}");
    let snapshot = std::fs::read_to_string(crate_dir.join("fixtures/example.snapshot.json"))
        .expect("the snapshot");
    assert!(
        snapshot.contains("\"name\": \"example-settings\"")
            && snapshot.contains("\"op\": \"apply\""),
        "the template's owned child is in its snapshot:\n{snapshot}"
    );
    let second = cli(&crate_dir, &template_test);
    assert!(
        second.contains("ok      example") && second.contains("1 passed, 0 failed"),
        "{second}"
    );

    // The example plugin: its recorded interactions and snapshots replay without a cluster.
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/plugins/site-widgets");
    let example_wasm = build_plugin(&example, "site_widgets");
    let example_arg = example_wasm.display().to_string();
    let mut test_args = vec!["plugin", "test", &example_arg, "--fixtures", "fixtures"];
    for grant in SITE_WIDGETS_GRANTS {
        test_args.extend(["--grant", grant]);
    }
    let replayed = cli(&example, &test_args);
    assert!(replayed.contains("2 passed, 0 failed"), "{replayed}");

    // push, signed.
    let host = env.registry.host.clone();
    let pinned = |out: String| out.trim().to_string();
    let widgets = pinned(cli(
        work.path(),
        &[
            "plugin",
            "push",
            &wasm_arg,
            &format!("oci://{host}/team/widgets:0.1.0"),
            "--sign-key",
            "release.key",
            "--plain-http",
        ],
    ));
    let sites = pinned(cli(
        work.path(),
        &[
            "plugin",
            "push",
            &example_arg,
            &format!("oci://{host}/examples/site-widgets:0.1.0"),
            "--sign-key",
            "release.key",
            "--plain-http",
        ],
    ));

    // The kinds' CRDs, then Plugins and bindings with kubectl.
    env.sim
        .apply_yaml(&std::fs::read_to_string(example.join("crd.yaml")).expect("crd.yaml"))
        .await
        .expect("SiteWidget CRD");
    env.sim
        .apply_yaml(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\n\
             spec:\n  group: example.com\n  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}\n  \
             scope: Namespaced\n  versions:\n  - name: v1alpha1\n    served: true\n    storage: true\n    subresources: {status: {}}\n    \
             schema:\n      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}\n",
        )
        .await
        .expect("Widget CRD");
    let plugin = |name: &str, artifact: &str, grants: &str| {
        format!(
            "apiVersion: {PLATFORM}\nkind: Plugin\nmetadata:\n  name: {name}\nspec:\n  artifact: {artifact}\n  plainHTTP: true\n  \
             grants: [{grants}]\n  verification:\n    publicKeys:\n    - name: release\n      secretKeyRef: \
             {{name: plugin-keys, namespace: omni-system, key: release.pub}}\n"
        )
    };
    let binding = |ns: &str, name: &str, plugin: &str, grants: &str| {
        format!(
            "apiVersion: {PLATFORM}\nkind: PluginBinding\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  plugin: {plugin}\n  grants: [{grants}]\n"
        )
    };
    let widget_grants = "clock, kube-write:core/v1/ConfigMap";
    env.kubectl_apply(&plugin("team-widgets", &widgets, widget_grants));
    env.kubectl_apply(&binding("team-a", "widgets", "team-widgets", widget_grants));
    let site_grants = SITE_WIDGETS_GRANTS.join(", ");
    env.kubectl_apply(&plugin("site-widgets", &sites, &site_grants));
    env.kubectl_apply(&binding(
        "team-b",
        "site-widgets",
        "site-widgets",
        &site_grants,
    ));
    env.sim
        .apply(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "site-defaults", "namespace": "team-b"}, "data": {"replicas": "4"}}))
        .await
        .expect("site defaults");
    env.sim
        .apply(&json!({"apiVersion": "example.com/v1alpha1", "kind": "Widget", "metadata": {"name": "w", "namespace": "team-a"}, "spec": {"replicas": 2}}))
        .await
        .expect("widget");
    env.sim
        .apply(&json!({"apiVersion": "sites.example.com/v1alpha1", "kind": "SiteWidget", "metadata": {"name": "s", "namespace": "team-b"}, "spec": {}}))
        .await
        .expect("site widget");

    // A binding that introduces a kind starts its controller; each plugin serves its own namespace.
    eventually(&env, "the new plugin's Widget reconciled", || {
        let w = env
            .sim
            .get("example.com/v1alpha1", "Widget", "team-a", "w")
            .unwrap_or(Value::Null);
        is(&w, "Ready", "True", "Reconciled") && w["status"]["replicas"] == 2
    })
    .await;
    let settings = env
        .sim
        .get("v1", "ConfigMap", "team-a", "w-settings")
        .expect("the template's owned child");
    assert_eq!(settings["data"]["replicas"], "2");
    let site_widget = || {
        env.sim
            .get("sites.example.com/v1alpha1", "SiteWidget", "team-b", "s")
            .unwrap_or(Value::Null)
    };
    // The example is an operator: its Deployment runs the site's default of 4 replicas, and the widget is Ready
    // once kube-sim's workload controllers have made them ready.
    let ready = || {
        let s = site_widget();
        s["status"]["replicas"] == 4
            && s["status"]["readyReplicas"] == 4
            && is(&s, "Ready", "True", "Available")
    };
    let waited = tokio::time::timeout(Duration::from_secs(60), async {
        while !ready() {
            tokio::time::sleep(Duration::from_millis(40)).await;
        }
    })
    .await;
    assert!(
        waited.is_ok(),
        "the example's SiteWidget is not Ready from its Deployment:\nwidget {:#}\ndeployment {:#}",
        site_widget()["status"],
        env.sim
            .get("apps/v1", "Deployment", "team-b", "s")
            .map(|d| d["status"].clone())
            .unwrap_or_default()
    );
    assert_eq!(
        env.binding("team-b", "site-widgets")["status"]["effectiveGrants"],
        json!([
            "kube-read",
            "kube-write",
            "kube-read:core/ConfigMap",
            "kube-read:apps/Deployment",
            "kube-write:core/v1/ConfigMap",
            "kube-write:apps/v1/Deployment"
        ])
    );
    the_examples_children_are_owned_kept_and_collected(&env, &site_widget()).await;
}

/// What `plugin test` and the bindings grant the example third-party operator.
const SITE_WIDGETS_GRANTS: [&str; 4] = [
    "kube-read:core/ConfigMap",
    "kube-read:apps/Deployment",
    "kube-write:core/v1/ConfigMap",
    "kube-write:apps/v1/Deployment",
];

/// The example operator's children, seen as a user sees them: written under the plugin's field manager
/// (`kubectl --show-managed-fields`), owned by the widget, put back when deleted behind the plugin's back, and
/// collected with the widget.
async fn the_examples_children_are_owned_kept_and_collected(env: &Env, widget: &Value) {
    let uid = widget["metadata"]["uid"]
        .as_str()
        .expect("the widget's uid");
    for (kind, name) in [("deployment", "s"), ("configmap", "s-settings")] {
        let yaml = env.kubectl(
            &[
                "get",
                kind,
                name,
                "-n",
                "team-b",
                "-o",
                "yaml",
                "--show-managed-fields",
            ],
            "",
        );
        assert!(
            yaml.contains("manager: omni-plugin:site-widgets"),
            "the plugin's field manager owns the {kind}'s fields:\n{yaml}"
        );
        assert!(yaml.contains("operation: Apply"), "{yaml}");
        assert!(
            yaml.contains(&format!("uid: {uid}")),
            "owned by the widget:\n{yaml}"
        );
        assert!(yaml.contains("controller: true"), "{yaml}");
    }
    let settings = || env.sim.get("v1", "ConfigMap", "team-b", "s-settings");
    let first = settings().expect("the settings ConfigMap");
    env.kubectl(
        &[
            "delete",
            "configmap",
            "s-settings",
            "-n",
            "team-b",
            "--wait=false",
        ],
        "",
    );
    let started = std::time::Instant::now();
    eventually(env, "the deleted child put back", || {
        settings().is_some_and(|cm| cm["metadata"]["uid"] != first["metadata"]["uid"])
    })
    .await;
    eprintln!("a deleted child was put back in {:?}", started.elapsed());
    assert_eq!(settings().expect("put back")["data"]["replicas"], "4");

    env.kubectl(
        &["delete", "sitewidget", "s", "-n", "team-b", "--wait=false"],
        "",
    );
    eventually(env, "the widget's children collected with it", || {
        settings().is_none()
            && env
                .sim
                .get("apps/v1", "Deployment", "team-b", "s")
                .is_none()
    })
    .await;
}

/// Registry credentials come from the Secret a Plugin names (dockerconfigjson), reach the registry, and appear
/// in no status, Event or log line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_requiring_credentials_is_reached_with_the_secret_the_plugin_names() {
    use base64::Engine as _;
    let mut env = start().await;
    let v1 = env.push("widget", "1.0", Some(&env.private_key)).await;
    let token = "s3cret-registry-token";
    env.registry.require_auth("puller", token).await;
    let host = env.registry.host.clone();
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let config =
        json!({"auths": {host.clone(): {"auth": b64(&format!("puller:{token}"))}}}).to_string();
    env.sim
        .apply(
            &json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
            "metadata": {"name": "registry", "namespace": "omni-system"},
            "data": {".dockerconfigjson": b64(&config)}}),
        )
        .await
        .expect("pull secret");

    let artifact = format!("oci://{host}/plugins/widget@{v1}");
    env.kubectl_apply(&plugin_yaml("anonymous", &artifact, ""));
    env.kubectl_apply(&plugin_yaml(
        "authenticated",
        &artifact,
        "  credentialsSecretRef: {name: registry, namespace: omni-system}\n",
    ));
    eventually(
        &env,
        "the Plugin with credentials verified and ready",
        || is(&env.plugin("authenticated"), "Ready", "True", "Serving"),
    )
    .await;
    eventually(&env, "the anonymous Plugin refused by the registry", || {
        is(&env.plugin("anonymous"), "Ready", "False", "PullFailed")
    })
    .await;

    let everything = format!(
        "{} {} {:?} {}",
        env.plugin("authenticated"),
        env.plugin("anonymous"),
        env.sim.list("events.k8s.io/v1", "Event", None),
        support::log_tail(2000)
    );
    assert!(!everything.contains(token), "the registry token leaked");
    assert!(
        !everything.contains(&b64(&format!("puller:{token}"))),
        "the encoded credentials leaked"
    );
}

/// A replica counts as ready (`/readyz`'s `plugin-routes` check) only once its platform has resolved the Plugins
/// and bindings already stored into routes: when `resolved` is first seen set, the namespace's binding already
/// serves it, so there is no window in which its webhooks or controllers answer that namespace with the
/// built-in. Without the plugin API (its CRDs not installed) nothing can be bound and the built-ins are the
/// routes: resolved as well, rather than never ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_is_ready_only_once_the_stored_bindings_serve() {
    use omni_operator::runtime::KindKey;
    // Starts a host with the platform on the cluster `kubeconfig` names and waits until it reports its routes
    // resolved.
    let start_resolved = |kubeconfig: String| async move {
        let options = PlatformOptions::default();
        let resolved = options.resolved.clone();
        let host = HostBuilder::new(support::runtime().clone())
            .built_ins()
            .expect("built-ins")
            .platform(options)
            .start(kubeconfig)
            .await
            .expect("host");
        let seen = tokio::time::timeout(Duration::from_secs(60), async {
            while !resolved.load(std::sync::atomic::Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        assert!(
            seen.is_ok(),
            "routes not resolved within 60 s\n{}",
            support::log_tail(30)
        );
        host
    };
    let key = KindKey::new("omni.texashpc.com", "OmniControlPlane");

    let sim = stack::management_cluster(kube_sim::KubeSim::builder())
        .await
        .expect("kube-sim");
    for ns in ["team-a", "team-b"] {
        sim.apply(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
            .await
            .expect("namespace");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("widget.wasm");
    std::fs::write(&path, guests::wasm("widget")).expect("write");
    sim.apply(
        &json!({"apiVersion": PLATFORM, "kind": "Plugin", "metadata": {"name": "widget"},
        "spec": {"artifact": format!("file://{}", path.display()), "grants": ["clock"],
            "verification": {"disabled": true}}}),
    )
    .await
    .expect("plugin");
    sim.apply(&json!({"apiVersion": PLATFORM, "kind": "PluginBinding",
        "metadata": {"name": "widget", "namespace": "team-a"},
        "spec": {"plugin": "widget", "kinds": [{"group": "omni.texashpc.com", "kind": "OmniControlPlane"}],
            "grants": ["clock"]}}))
        .await
        .expect("binding");
    let host = start_resolved(sim.kubeconfig(&sim.admin())).await;
    let bound = host
        .registry()
        .serving(&key, Some("team-a"), "u1")
        .expect("team-a served");
    let default = host
        .registry()
        .serving(&key, Some("team-b"), "u1")
        .expect("team-b served");
    assert!(
        !std::sync::Arc::ptr_eq(&bound, &default),
        "team-a was still served by the built-in ({}) when the routes were reported resolved",
        bound.name()
    );
    host.kill();

    // A cluster without the plugin CRDs.
    let bare = kube_sim::KubeSim::builder()
        .start()
        .await
        .expect("kube-sim");
    start_resolved(bare.kubeconfig(&bare.admin())).await.kill();
}
