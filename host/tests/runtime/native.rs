//! Native plugins: the same logic compiled into the host answers exactly what its component answers, through the
//! same capabilities and grants, and fails the way a component fails (denied, panic, output bounds, deadline).

use std::sync::Arc;
use std::time::Duration;

use omni_connection::OmniConnectionPlugin;
use omni_operator::capabilities::{CallObject, FixedClock, Grants, HostServices, KubeReader};
use omni_operator::controllers::Settings;
use omni_operator::controllers::reader::ApiReader;
use omni_operator::defaults;
use omni_operator::omni::OmniConnections;
use omni_operator::runtime::{
    CallError, CallLimits, CompiledFrom, ErrorKind, LoadedPlugin, PluginSpec,
};
use omni_operator::stack::{HostBuilder, Stack};
use omni_plugin_sdk::{Gvk, Host, Info, ObjectRef, Plugin, ReconcileError, json};
use omni_sim::{OmniSim, Role};
use serde_json::Value;

use super::support::{self, NOW};

const API: &str = "omni.texashpc.com/v1alpha1";
const NS: &str = "team";

fn connection_grants() -> Grants {
    let builtin = defaults::PLUGINS
        .iter()
        .find(|p| p.name == "omni-connection")
        .expect("built in");
    builtin.grants().expect("grants")
}

async fn component() -> Arc<LoadedPlugin> {
    let builtin = defaults::PLUGINS
        .iter()
        .find(|p| p.name == "omni-connection")
        .expect("built in");
    let spec = PluginSpec::new(builtin.name, builtin.wasm.to_vec()).grants(connection_grants());
    support::runtime()
        .load(spec)
        .await
        .expect("the component loads")
}

async fn native() -> Arc<LoadedPlugin> {
    support::runtime()
        .load_native::<OmniConnectionPlugin>("omni-connection", connection_grants(), None)
        .await
        .expect("the native plugin loads")
}

/// kube-sim with the CRDs and a namespace, and omni-sim with a registered Operator key.
struct Sims {
    kube: kube_sim::KubeSim,
    omni: OmniSim,
    key: String,
}

async fn sims() -> Sims {
    let Stack {
        kube, omni, key, ..
    } = Stack::builder()
        .service_account("operator-sa", Role::Operator)
        .namespace(NS)
        .start()
        .await
        .expect("the simulators start");
    Sims { kube, omni, key }
}

impl Sims {
    async fn apply(&self, object: Value) -> CallObject {
        let stored = self.kube.apply(&object).await.expect("apply");
        CallObject::parse(stored.to_string()).expect("an object")
    }

    async fn connection(&self, name: &str, secret: &str) -> CallObject {
        self.apply(json!({"apiVersion": API, "kind": "OmniConnection", "metadata": {"name": name, "namespace": NS},
            "spec": {"endpoint": self.omni.endpoint(), "auth": {"serviceAccountSecretRef": {"name": secret, "key": "serviceAccountKey"}}}}))
            .await
    }

    /// What the controllers give a call: reads from the API server, the Omni pool, and here a fixed clock so
    /// the two runs stamp the same time.
    async fn services(&self) -> HostServices {
        let client = self.kube.client().await.expect("client");
        HostServices::default()
            .with_kube(Arc::new(ApiReader::new(client)) as Arc<dyn KubeReader>)
            .with_clock(Arc::new(FixedClock::at_unix(NOW)))
            .with_omni(Arc::new(OmniConnections::default()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_plugin_loads_with_what_its_component_declares() {
    let (wasm, native) = (component().await, native().await);
    assert_eq!(native.info(), wasm.info());
    assert_eq!(native.grants(), wasm.grants());
    assert!(native.is_native() && !wasm.is_native());
    assert_eq!(native.compiled_from(), CompiledFrom::Native);
    assert!(
        native.imports().is_empty(),
        "native code has no import list; its calls are checked instead"
    );
    assert_ne!(native.digest(), wasm.digest());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_native_omni_connection_answers_what_its_component_answers() {
    let sims = sims().await;
    let (wasm, native) = (component().await, native().await);
    let services = sims.services().await;
    sims.apply(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sa", "namespace": NS}, "type": "Opaque",
        "stringData": {"serviceAccountKey": sims.key}}))
        .await;
    let ready = sims.connection("ready", "sa").await;
    let missing_secret = sims.connection("no-secret", "absent").await;
    for name in ["edge-b", "edge-a"] {
        sims.apply(json!({"apiVersion": API, "kind": "OmniCluster", "metadata": {"name": name, "namespace": NS},
            "spec": {"connectionRef": {"name": "ready"}, "kubernetes": {"version": "v1.35.0"}, "talos": {"version": "v1.13.2"}}}))
            .await;
    }

    for object in [&ready, &missing_secret] {
        let from_wasm = wasm
            .reconcile(object, &services)
            .await
            .expect("the component reconciles");
        let from_native = native
            .reconcile(object, &services)
            .await
            .expect("the native plugin reconciles");
        assert_eq!(from_native, from_wasm, "reconcile of {}", object.json());
    }
    let ready_conditions = &native
        .reconcile(&ready, &services)
        .await
        .expect("reconciles")
        .outputs
        .conditions;
    assert!(
        ready_conditions
            .iter()
            .all(|c| c.reason == "ConnectionReady"),
        "{ready_conditions:?}"
    );

    // Finalize lists the clusters through kube-read and holds the connection while two refer to it.
    let from_wasm = wasm
        .finalize(&ready, &services)
        .await
        .expect("the component finalizes");
    let from_native = native
        .finalize(&ready, &services)
        .await
        .expect("the native plugin finalizes");
    assert_eq!(from_native, from_wasm);
    assert!(!from_native.value);
    assert_eq!(
        from_native.outputs.conditions[0].message,
        "waiting for OmniCluster references to be deleted: edge-a, edge-b"
    );

    let bad = json!({"apiVersion": API, "kind": "OmniConnection", "metadata": {"name": "c", "namespace": NS},
        "spec": {"endpoint": "ftp://omni", "insecureSkipTLSVerify": true, "auth": {"serviceAccountSecretRef": {"name": " ", "key": ""}}}})
    .to_string();
    let verdict = native.validate(&bad, None).await.expect("validates");
    assert!(!verdict.allowed());
    assert_eq!(verdict, wasm.validate(&bad, None).await.expect("validates"));
    assert_eq!(
        native.validate("{not json", None).await.expect("answers"),
        wasm.validate("{not json", None).await.expect("answers")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controllers_serve_a_native_plugin_as_they_serve_a_component() {
    let sims = sims().await;
    let settings = Settings {
        reconcile_timeout: Duration::from_secs(5),
        ..Settings::default()
    };
    let host = HostBuilder::new(support::runtime().clone())
        .loaded(native().await)
        .settings(settings)
        .start(sims.kube.kubeconfig(&sims.kube.admin()))
        .await
        .expect("the host starts");

    sims.apply(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sa", "namespace": NS}, "type": "Opaque",
        "stringData": {"serviceAccountKey": sims.key}}))
        .await;
    sims.connection("c", "sa").await;
    let mut ready = Value::Null;
    for _ in 0..500 {
        let object = sims
            .kube
            .get(API, "OmniConnection", NS, "c")
            .unwrap_or(Value::Null);
        ready = object["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready").cloned())
            .unwrap_or(Value::Null);
        if ready["status"] == "True" {
            assert_eq!(object["status"]["observedGeneration"], 1);
            assert_eq!(
                object["metadata"]["finalizers"],
                json!(["omni.texashpc.com/finalizer"])
            );
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        ready["message"],
        format!("connected to {}", sims.omni.endpoint())
    );
    host.kill();
}

/// A plugin that declares no capabilities and does what its object's `spec.action` says.
struct Probe;

impl Plugin for Probe {
    fn describe() -> Info {
        Info {
            name: "probe".into(),
            version: "0.1.0".into(),
            kinds: vec![Gvk::new("test.omni.texashpc.com", "v1", "Probe")],
            ..Info::default()
        }
    }

    fn reconcile<H: Host>(host: &H) -> Result<(), ReconcileError> {
        let object = host.object();
        match object["spec"]["action"].as_str().unwrap_or_default() {
            "reach" => {
                let read = host
                    .kube_get(&ObjectRef::local("v1", "ConfigMap", "settings"))
                    .err();
                let ping = host.omni_ping("omni").err();
                let file = host.read_file("/templates", "patch.yaml").err();
                host.set_status(json!({
                    "read": read.map(|e| e.to_string()),
                    "ping": ping.map(|e| e.to_string()),
                    "file": file.map(|e| e.to_string()),
                }));
            }
            "now" => host.set_status(json!({"now": host.now()})),
            "write" | "write-invalid" => {
                let name = if object["spec"]["action"] == "write" {
                    "probe-child"
                } else {
                    "Not_A_Name"
                };
                let child = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name}, "data": {"a": "1"}});
                match host.apply_owned(&child) {
                    Ok(stored) => host.set_status(json!({"wrote": stored["metadata"]["uid"]})),
                    Err(omni_plugin_sdk::HostError::Rejected(r)) => host.set_status(json!({
                        "rejected": r.causes.iter().map(|c| json!([c.field, c.reason])).collect::<Vec<_>>(),
                    })),
                    Err(e) => host.set_status(json!({"write": e.to_string()})),
                }
            }
            "flood" => host.set_status(json!({"blob": "x".repeat(300 * 1024)})),
            "sleep" => std::thread::sleep(Duration::from_millis(400)),
            "panic" => panic!("the probe was asked to panic"),
            other => {
                return Err(ReconcileError::Permanent(format!(
                    "unknown action {other:?}"
                )));
            }
        }
        Ok(())
    }
}

async fn probe(grants: Grants, limits: Option<CallLimits>) -> Arc<LoadedPlugin> {
    support::runtime()
        .load_native::<Probe>("probe", grants, limits)
        .await
        .expect("the probe loads")
}

fn asking(action: &str) -> CallObject {
    support::object("p", "default", json!({"action": action}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capability_outside_the_grants_is_denied_natively_too() {
    // Declared but not granted: refused at load, as the component is.
    let refused = support::runtime()
        .load_native::<OmniConnectionPlugin>(
            "omni-connection",
            Grants::parse(["kube-read", "clock"]).expect("grants"),
            None,
        )
        .await
        .expect_err("omni is declared but not granted");
    assert_eq!(refused.kind(), ErrorKind::DeniedCapability);
    assert!(refused.message().contains("\"omni\""), "{refused}");

    // Used without being declared or granted: each call answers `denied`, naming the interface.
    let plugin = probe(Grants::none(), None).await;
    let done = plugin
        .reconcile(&asking("reach"), &support::default_services())
        .await
        .expect("the call completes");
    for (field, capability) in [("read", "kube-read"), ("ping", "omni"), ("file", "files")] {
        let said = done.outputs.status[field].as_str().unwrap_or_default();
        assert!(
            said.starts_with("denied: ") && said.contains(&format!("\"{capability}\"")),
            "{field}: {said}"
        );
    }

    // `clock.now` cannot answer an error: the call is aborted as the component would have been refused.
    let aborted = plugin
        .reconcile(&asking("now"), &support::default_services())
        .await
        .expect_err("aborted");
    let CallError::Aborted(e) = aborted else {
        panic!("expected an aborted call, got {aborted:?}")
    };
    assert_eq!(e.kind(), ErrorKind::DeniedCapability);
    assert!(e.message().contains("clock.now"), "{e}");

    let clock = probe(Grants::parse(["clock"]).expect("grants"), None).await;
    let done = clock
        .reconcile(&asking("now"), &support::default_services())
        .await
        .expect("granted");
    assert_eq!(done.outputs.status["now"], "2026-11-22T07:17:03Z");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_failures_are_classified_as_component_failures_are() {
    let plugin = probe(Grants::none(), None).await;
    let kind = |result: Result<_, CallError>| match result {
        Err(CallError::Aborted(e)) => e.kind(),
        other => panic!("expected an aborted call, got {other:?}"),
    };
    let services = support::default_services();
    assert_eq!(
        kind(plugin.reconcile(&asking("flood"), &services).await),
        ErrorKind::OutputTooLarge
    );
    let panicked = plugin.reconcile(&asking("panic"), &services).await;
    assert!(
        matches!(&panicked, Err(CallError::Aborted(e)) if e.message() == "panicked: the probe was asked to panic"),
        "{panicked:?}"
    );
    assert_eq!(kind(panicked), ErrorKind::Panic);
    // Native code cannot be interrupted: the host stops waiting at the deadline and drops what the call does.
    let hasty = CallLimits {
        timeout: Duration::from_millis(100),
        ..CallLimits::default()
    };
    let started = std::time::Instant::now();
    let timed_out = probe(Grants::none(), Some(hasty))
        .await
        .reconcile(&asking("sleep"), &services)
        .await;
    assert_eq!(kind(timed_out), ErrorKind::Timeout);
    assert!(
        started.elapsed() < Duration::from_millis(400),
        "the host did not wait for the sleeping logic"
    );
    assert_eq!(
        plugin
            .reconcile(&asking("dance"), &services)
            .await
            .expect_err("refused"),
        CallError::Failed {
            plugin: "probe".into(),
            error: omni_operator::runtime::ReconcileError::Permanent(
                "unknown action \"dance\"".into()
            ),
            denials: Vec::new(),
            denials_dropped: 0,
        }
    );
    // And the host keeps serving.
    support::echo_still_serves().await;
}

/// `kube-write` natively: the same grant checks (denied without the grant), and with it the same write: owned by
/// the reconciled object, under the plugin's field manager.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_plugin_writes_through_the_same_checks() {
    use omni_operator::capabilities::KubeWriter;
    use omni_operator::controllers::writer::ApiWriter;
    let sims = sims().await;
    let client = sims.kube.client().await.expect("client");
    let reader = Arc::new(ApiReader::new(client));
    let services = HostServices::default()
        .with_kube(reader.clone() as Arc<dyn KubeReader>)
        .with_kube_writer(Arc::new(ApiWriter::new(reader)) as Arc<dyn KubeWriter>);
    let object = CallObject::parse(
        json!({"apiVersion": "test.omni.texashpc.com/v1", "kind": "Probe",
            "metadata": {"name": "p", "namespace": NS, "uid": "probe-uid"}, "spec": {"action": "write"}})
        .to_string(),
    )
    .expect("an object");

    let ungranted = probe(Grants::none(), None).await;
    let done = ungranted
        .reconcile(&object, &services)
        .await
        .expect("the call completes");
    let said = done.outputs.status["write"].as_str().unwrap_or_default();
    assert!(
        said.starts_with("denied: ") && said.contains("\"kube-write\""),
        "{said}"
    );
    assert!(
        sims.kube
            .get("v1", "ConfigMap", NS, "probe-child")
            .is_none()
    );

    let granted = probe(
        Grants::parse(["kube-write:core/v1/ConfigMap"]).expect("grants"),
        None,
    )
    .await;
    let done = granted
        .reconcile(&object, &services)
        .await
        .expect("the call completes");
    let child = sims
        .kube
        .get("v1", "ConfigMap", NS, "probe-child")
        .expect("written");
    assert_eq!(done.outputs.status["wrote"], child["metadata"]["uid"]);
    assert_eq!(child["metadata"]["ownerReferences"][0]["uid"], "probe-uid");
    assert_eq!(child["metadata"]["ownerReferences"][0]["controller"], true);
    assert_eq!(
        child["metadata"]["managedFields"][0]["manager"],
        "omni-plugin:probe"
    );

    // An object the API server refuses comes back `rejected`, naming the field, as the API server's causes do.
    let invalid = CallObject::parse(
        json!({"apiVersion": "test.omni.texashpc.com/v1", "kind": "Probe",
            "metadata": {"name": "p", "namespace": NS, "uid": "probe-uid"}, "spec": {"action": "write-invalid"}})
        .to_string(),
    )
    .expect("an object");
    let done = granted
        .reconcile(&invalid, &services)
        .await
        .expect("the call completes");
    assert_eq!(
        done.outputs.status["rejected"],
        json!([["metadata.name", "FieldValueInvalid"]]),
        "{:?}",
        done.outputs.status
    );
}
