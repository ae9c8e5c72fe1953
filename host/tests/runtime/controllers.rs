//! The controllers end to end: the built-in plugins (real components) in the real runtime, reconciling objects
//! in kube-sim with the generated CRDs installed.

use omni_operator::controllers::metrics::Count;
use std::time::Duration;

use omni_operator::capabilities::Grants;
use omni_operator::controllers::Settings;
use omni_operator::runtime::PluginSpec;
use omni_operator::stack::{self, Host, HostBuilder};
use serde_json::{Value, json};

use super::{guests, support};

/// Declared so the host stops before the simulator it talks to.
struct Env {
    host: Host,
    sim: kube_sim::KubeSim,
    settings: Settings,
}

/// kube-sim with the CRDs and namespace `team`, and a host running every built-in plugin.
async fn start() -> Env {
    let sim = stack::management_cluster(kube_sim::KubeSim::builder())
        .await
        .expect("kube-sim");
    sim.apply(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}))
        .await
        .expect("namespace");
    let settings = Settings {
        reconcile_timeout: Duration::from_secs(5),
        ..Settings::default()
    };
    let host = HostBuilder::new(support::runtime().clone())
        .built_ins()
        .expect("the built-in plugins")
        .settings(settings.clone())
        .start(sim.kubeconfig(&sim.admin()))
        .await
        .expect("the host starts");
    Env {
        host,
        sim,
        settings,
    }
}

const API: &str = "omni.texashpc.com/v1alpha1";

fn accepted(obj: &Value) -> Option<(String, String)> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Accepted")
        .map(|c| {
            (
                c["status"].as_str().unwrap_or_default().to_string(),
                c["reason"].as_str().unwrap_or_default().to_string(),
            )
        })
}

/// Waits for `f` with a generous bound (30 s): a loaded machine may take seconds to start the controllers.
async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..1500 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "timed out waiting for {what}\nlast log lines:\n{}",
        support::log_tail(60)
    );
}

fn control_plane(cluster: &str) -> Value {
    json!({"apiVersion": API, "kind": "OmniControlPlane", "metadata": {"name": "cp", "namespace": "team"},
        "spec": {"clusterRef": {"name": cluster}, "machines": ["11111111-1111-4111-8111-111111111111"]}})
}

fn cluster(name: &str) -> Value {
    json!({"apiVersion": API, "kind": "OmniCluster", "metadata": {"name": name, "namespace": "team"},
        "spec": {"connectionRef": {"name": "c"}, "kubernetes": {"version": "v1.35.0"}, "talos": {"version": "v1.13.2"}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_without_their_cluster_are_missing_cluster_until_it_appears() {
    let env = start().await;
    env.sim.apply(&control_plane("edge")).await.expect("apply");
    env.sim
        .apply(&json!({"apiVersion": API, "kind": "OmniWorkers", "metadata": {"name": "gpu", "namespace": "team"},
            "spec": {"clusterRef": {"name": "edge"}, "machineClass": {"name": "big", "size": 2}}}))
        .await
        .expect("apply");
    let get = |kind: &str, name: &str| env.sim.get(API, kind, "team", name).unwrap_or(Value::Null);
    eventually("MissingCluster", || {
        accepted(&get("OmniControlPlane", "cp")) == Some(("False".into(), "MissingCluster".into()))
            && accepted(&get("OmniWorkers", "gpu"))
                == Some(("False".into(), "MissingCluster".into()))
    })
    .await;
    let cp = get("OmniControlPlane", "cp");
    assert_eq!(cp["status"]["observedGeneration"], 1);
    assert_eq!(cp["status"]["clusterRef"], "edge");
    let cond = &cp["status"]["conditions"][0];
    assert_eq!(cond["message"], "OmniCluster \"edge\" does not exist");
    assert_eq!(cond["observedGeneration"], 1);
    assert_eq!(get("OmniWorkers", "gpu")["status"]["workerSetName"], "gpu");

    // Creating the cluster re-triggers its children through the related watch.
    env.sim.apply(&cluster("edge")).await.expect("cluster");
    eventually("Accepted", || {
        accepted(&get("OmniControlPlane", "cp")) == Some(("True".into(), "Accepted".into()))
            && accepted(&get("OmniWorkers", "gpu")) == Some(("True".into(), "Accepted".into()))
    })
    .await;
    let cp = get("OmniControlPlane", "cp");
    assert_eq!(
        cp["status"]["conditions"][0]["message"],
        "attached to OmniCluster \"edge\""
    );
    assert!(
        cp["metadata"].get("finalizers").is_none(),
        "the child kinds carry no finalizer"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_and_label_only_updates_trigger_no_reconcile_but_spec_changes_do() {
    let env = start().await;
    env.sim.apply(&cluster("edge")).await.expect("cluster");
    env.sim.apply(&control_plane("edge")).await.expect("cp");
    let get = || {
        env.sim
            .get(API, "OmniControlPlane", "team", "cp")
            .unwrap_or(Value::Null)
    };
    eventually("Accepted", || accepted(&get()).is_some()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let calls = || env.settings.metrics.total(Count::PluginCalls);
    let before = calls();

    let c = env.sim.client().await.expect("client");
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
        c,
        "team",
        &kube::core::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("omni.texashpc.com", "v1alpha1", "OmniControlPlane"),
            "omnicontrolplanes",
        ),
    );
    let pp = kube::api::PatchParams::default();
    api.patch(
        "cp",
        &pp,
        &kube::api::Patch::Merge(json!({"metadata": {"labels": {"team": "a"}}})),
    )
    .await
    .expect("label");
    api.patch_status(
        "cp",
        &pp,
        &kube::api::Patch::Merge(json!({"status": {"note": "x"}})),
    )
    .await
    .expect("status");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        calls(),
        before,
        "label- and status-only updates are filtered"
    );

    api.patch(
        "cp",
        &pp,
        &kube::api::Patch::Merge(json!({"spec": {"systemExtensions": ["siderolabs/gvisor"]}})),
    )
    .await
    .expect("spec");
    eventually("a reconcile of generation 2", || {
        get()["status"]["observedGeneration"] == 2
    })
    .await;
    assert!(calls() > before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swapped_plugin_re_evaluates_every_object_without_a_change() {
    let env = start().await;
    env.sim.apply(&cluster("edge")).await.expect("cluster");
    env.sim.apply(&control_plane("edge")).await.expect("cp");
    let get = || {
        env.sim
            .get(API, "OmniControlPlane", "team", "cp")
            .unwrap_or(Value::Null)
    };
    eventually("Accepted", || accepted(&get()).is_some()).await;

    // The echo test plugin replaces omni-controlplane under the same name; its `Ready: Echoed` condition shows
    // who answered (its own status fields are pruned: they are not in the OmniControlPlane schema).
    let echo = PluginSpec::new("omni-controlplane", guests::wasm("echo"))
        .grants(Grants::parse(["kube-read:core/ConfigMap", "clock"]).expect("grants"));
    let replaced = env
        .host
        .registry()
        .install(support::runtime().load(echo).await.expect("echo loads"));
    assert!(replaced.is_some());
    // No change to the object: a swap re-evaluates every object of the kind.
    eventually("echo's condition", || {
        get()["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["reason"] == "Echoed")
        })
    })
    .await;
}

/// `--plugin-dir`: a file named like a built-in plugin replaces it while the operator runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_dropped_into_the_plugin_dir_takes_over() {
    use omni_operator::operator::{Operator, PluginSources};
    let sim = stack::management_cluster(kube_sim::KubeSim::builder())
        .await
        .expect("kube-sim");
    sim.apply(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}))
        .await
        .expect("ns");
    let dir = tempfile::tempdir().expect("tempdir");
    let sources = PluginSources {
        plugin_dir: Some(dir.path().to_path_buf()),
        ..Default::default()
    };
    let operator = Operator::load(support::runtime().clone(), sources)
        .await
        .expect("operator loads");
    let (stop, mut rx) = tokio::sync::watch::channel(false);
    let client = sim.client().await.expect("client");
    let running = tokio::spawn(async move {
        operator
            .run(client, Settings::default(), async move {
                let _ = rx.wait_for(|s| *s).await;
            })
            .await
    });
    sim.apply(&cluster("edge")).await.expect("cluster");
    sim.apply(&control_plane("edge")).await.expect("cp");
    let get = || {
        sim.get(API, "OmniControlPlane", "team", "cp")
            .unwrap_or(Value::Null)
    };
    eventually("the built-in plugin answers", || {
        accepted(&get()) == Some(("True".into(), "Accepted".into()))
    })
    .await;

    // The echo plugin needs `clock`, which omni-controlplane's grants lack: it must be refused, the built-in
    // keeps running. Then a copy of the built-in itself, renamed, loads fine.
    std::fs::write(
        dir.path().join("omni-controlplane.wasm"),
        guests::wasm("echo"),
    )
    .expect("write");
    tokio::time::sleep(Duration::from_millis(700)).await;
    sim.apply(&json!({"apiVersion": API, "kind": "OmniControlPlane", "metadata": {"name": "cp", "namespace": "team"},
        "spec": {"clusterRef": {"name": "edge"}, "machines": ["11111111-1111-4111-8111-111111111111"], "kernelArgs": ["quiet"]}}))
        .await
        .expect("spec change");
    eventually("generation 2 reconciled by the built-in", || {
        get()["status"]["observedGeneration"] == 2
    })
    .await;
    assert_eq!(
        accepted(&get()),
        Some(("True".into(), "Accepted".into())),
        "a refused file leaves the running version"
    );

    // The noop plugin sets no conditions: pointed at a missing cluster, the built-in would say MissingCluster,
    // so an unchanged Accepted=True at generation 3 shows the swapped-in plugin answered.
    std::fs::write(
        dir.path().join("omni-controlplane.wasm"),
        guests::wasm("noop"),
    )
    .expect("write");
    tokio::time::sleep(Duration::from_millis(700)).await;
    sim.apply(&json!({"apiVersion": API, "kind": "OmniControlPlane", "metadata": {"name": "cp", "namespace": "team"},
        "spec": {"clusterRef": {"name": "gone"}, "machines": ["11111111-1111-4111-8111-111111111111"], "kernelArgs": ["quiet"]}}))
        .await
        .expect("spec change");
    eventually("the swapped-in plugin reconciles generation 3", || {
        get()["status"]["observedGeneration"] == 3
    })
    .await;
    assert_eq!(
        accepted(&get()),
        Some(("True".into(), "Accepted".into())),
        "noop answered, not the built-in"
    );
    let _ = stop.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(2), running).await;
}

/// Every kind of misbehaving plugin is contained: its objects get `Ready=False` with the runtime's reason and a
/// Warning Event naming the plugin, while another plugin's controller keeps reconciling.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn misbehaving_plugins_are_reported_on_their_objects_and_the_rest_keeps_working() {
    use omni_operator::runtime::CallLimits;
    let env = start().await;
    env.sim.apply(&cluster("edge")).await.expect("cluster");
    let cases = [
        ("loop", "PluginTimeout"),
        ("bomb", "PluginOutOfMemory"),
        ("panic", "PluginPanic"),
        ("huge", "PluginOutputTooLarge"),
    ];
    for (i, (guest, reason)) in cases.iter().enumerate() {
        // A short deadline for the loop; a small memory cap for the bomb (the 10 MiB output of `huge` needs the default).
        let memory_bytes = if *guest == "bomb" {
            32 << 20
        } else {
            CallLimits::default().memory_bytes
        };
        let limits = CallLimits {
            timeout: Duration::from_millis(400),
            memory_bytes,
            ..CallLimits::default()
        };
        let spec = PluginSpec::new("omni-machine", guests::wasm(guest)).limits(limits);
        env.host.registry().install(
            support::runtime()
                .load(spec)
                .await
                .expect("the adversarial plugin loads"),
        );
        let name = format!("1111111{i}-1111-4111-8111-111111111111");
        env.sim
            .apply(&json!({"apiVersion": API, "kind": "OmniMachine", "metadata": {"name": name, "namespace": "team"}, "spec": {"clusterRef": {"name": "edge"}}}))
            .await
            .expect("machine");
        let get = || {
            env.sim
                .get(API, "OmniMachine", "team", &name)
                .unwrap_or(Value::Null)
        };
        let ready = |o: &Value| {
            o["status"]["conditions"]
                .as_array()
                .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready").cloned())
        };
        eventually(&format!("{guest}: Ready=False {reason}"), || {
            ready(&get()).is_some_and(|c| c["reason"] == *reason && c["status"] == "False")
        })
        .await;
        let message = ready(&get()).expect("condition")["message"]
            .as_str()
            .expect("message")
            .to_string();
        assert!(
            message.contains("omni-machine"),
            "{guest}: the condition names the plugin: {message}"
        );
        eventually(
            &format!("{guest}: a Warning Event with reason {reason} on the object"),
            || {
                env.sim
                    .list("events.k8s.io/v1", "Event", Some("team"))
                    .iter()
                    .any(|e| {
                        e["reason"] == *reason
                            && e["regarding"]["name"] == name.as_str()
                            && e["type"] == "Warning"
                            && e["note"]
                                .as_str()
                                .is_some_and(|n| n.contains("omni-machine"))
                    })
            },
        )
        .await;

        // Meanwhile another plugin keeps serving its objects.
        let cp = format!("cp-{guest}");
        env.sim
            .apply(&json!({"apiVersion": API, "kind": "OmniControlPlane", "metadata": {"name": cp, "namespace": "team"},
                "spec": {"clusterRef": {"name": "edge"}, "machines": ["11111111-1111-4111-8111-111111111111"]}}))
            .await
            .expect("cp");
        eventually(&format!("{cp} accepted"), || {
            accepted(
                &env.sim
                    .get(API, "OmniControlPlane", "team", &cp)
                    .unwrap_or(Value::Null),
            )
            .is_some()
        })
        .await;
    }
}

/// A plugin with a finalizer: the host adds it before the first reconcile, keeps the object while `finalize`
/// says not done, and removes it (so the object goes) once it says done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_adds_the_plugins_finalizer_and_releases_it_when_finalize_is_done() {
    let sim = kube_sim::KubeSim::start().await.expect("kube-sim");
    sim.apply_yaml(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: echoes.test.omni.texashpc.com}
spec:
  group: test.omni.texashpc.com
  scope: Namespaced
  names: {plural: echoes, singular: echo, kind: Echo}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"#,
    )
    .await
    .expect("crd");
    let spec = PluginSpec::new("echo", guests::wasm("echo"))
        .grants(Grants::parse(["kube-read:core/ConfigMap", "clock"]).expect("grants"));
    let host = HostBuilder::new(support::runtime().clone())
        .plugin(spec)
        .start(sim.kubeconfig(&sim.admin()))
        .await
        .expect("the host starts");
    let echo = |done: bool| json!({"apiVersion": "test.omni.texashpc.com/v1", "kind": "Echo", "metadata": {"name": "e1", "namespace": "default"}, "spec": {"cleanupDone": done}});
    sim.apply(&echo(false)).await.expect("echo");
    let get = || sim.get("test.omni.texashpc.com/v1", "Echo", "default", "e1");
    eventually("finalizer added and reconciled", || {
        get().is_some_and(|o| {
            o["metadata"]["finalizers"] == json!(["test.omni.texashpc.com/echo"])
                && o["status"]["echo"] == "e1"
        })
    })
    .await;

    let c = sim.client().await.expect("client");
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
        c,
        "default",
        &kube::core::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("test.omni.texashpc.com", "v1", "Echo"),
            "echoes",
        ),
    );
    api.delete("e1", &Default::default()).await.expect("delete");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(get().is_some(), "finalize said not done: the object stays");
    sim.apply(&echo(true)).await.expect("cleanup done");
    eventually("the object is gone once finalize is done", || {
        get().is_none()
    })
    .await;
    host.kill();
}

/// `kube-read` of a kind the controller watches is served from its watch cache: with every direct GET of
/// OmniClusters failing, the children still find their cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_of_watched_kinds_come_from_the_watch_cache() {
    let env = start().await;
    env.sim.apply(&cluster("edge")).await.expect("cluster");
    env.sim.faults().fail_next(
        kube_sim::Matcher::verb_resource("get", "omniclusters"),
        10_000,
        500,
        None,
    );
    env.sim.apply(&control_plane("edge")).await.expect("cp");
    let get = || {
        env.sim
            .get(API, "OmniControlPlane", "team", "cp")
            .unwrap_or(Value::Null)
    };
    eventually("Accepted from the cache", || {
        accepted(&get()) == Some(("True".into(), "Accepted".into()))
    })
    .await;
    env.sim.faults().clear();
}

/// `/metrics`, scraped over HTTP as Prometheus does: controller-runtime's reconcile counts per kind match the
/// objects reconciled, an error is counted as such and retried through the work queue, and each loaded plugin
/// version's calls and traps are there under its name and digest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_reconciles_per_controller_and_calls_per_plugin_version() {
    use omni_operator::endpoints::{Endpoints, start as serve_endpoints};
    let env = start().await;
    let endpoints = Endpoints::new(
        env.settings.metrics.clone(),
        env.host.registry().clone(),
        None,
    );
    let at = serve_endpoints(
        "127.0.0.1:0".parse().expect("address"),
        endpoints,
        std::future::pending::<()>(),
    )
    .await
    .expect("serves");
    let scrape = || async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut tcp = tokio::net::TcpStream::connect(at).await.expect("connects");
        tcp.write_all(b"GET /metrics HTTP/1.0\r\n\r\n")
            .await
            .expect("writes");
        let mut text = String::new();
        tcp.read_to_string(&mut text).await.expect("reads");
        assert!(
            text.starts_with("HTTP/1.0 200") || text.starts_with("HTTP/1.1 200"),
            "{text}"
        );
        text
    };
    let value = |text: &str, series: &str| -> f64 {
        text.lines()
            .filter_map(|l| l.strip_prefix(series))
            .filter_map(|rest| rest.trim().parse::<f64>().ok())
            .sum()
    };

    env.sim.apply(&cluster("edge")).await.expect("cluster");
    for i in 0..3 {
        env.sim
            .apply(&json!({"apiVersion": API, "kind": "OmniControlPlane",
                "metadata": {"name": format!("cp-{i}"), "namespace": "team"},
                "spec": {"clusterRef": {"name": "edge"}, "machines": ["11111111-1111-4111-8111-111111111111"]}}))
            .await
            .expect("cp");
    }
    let get = |name: &str| {
        env.sim
            .get(API, "OmniControlPlane", "team", name)
            .unwrap_or(Value::Null)
    };
    eventually("three control planes accepted", || {
        (0..3)
            .all(|i| accepted(&get(&format!("cp-{i}"))) == Some(("True".into(), "Accepted".into())))
    })
    .await;
    // Reconciles of control planes: at least one per object, every one a success (no requeue asked), and the
    // controller's count equals the plugin's calls. A reconcile is counted when it returns, just after the
    // status write the wait above saw: scrape until all three are in.
    let success =
        "controller_runtime_reconcile_total{controller=\"omnicontrolplane\",result=\"success\"}";
    let mut text = scrape().await;
    for _ in 0..1500 {
        if value(&text, success) >= 3.0
            && value(
                &text,
                "controller_runtime_active_workers{controller=\"omnicontrolplane\"}",
            ) == 0.0
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        text = scrape().await;
    }
    assert!(value(&text, success) >= 3.0, "{text}");
    let plugin = env
        .host
        .registry()
        .get("omni-controlplane")
        .expect("loaded");
    let calls = value(
        &text,
        &format!(
            "omni_operator_plugin_calls_total{{plugin=\"omni-controlplane\",digest=\"{}\",binding=\"\"}}",
            plugin.digest()
        ),
    );
    let cp_all: f64 = ["success", "error", "requeue", "requeue_after"]
        .iter()
        .map(|r| {
            value(
                &text,
                &format!("controller_runtime_reconcile_total{{controller=\"omnicontrolplane\",result=\"{r}\"}}"),
            )
        })
        .sum();
    assert_eq!(cp_all, calls, "{text}");
    assert_eq!(
        value(
            &text,
            "controller_runtime_reconcile_time_seconds_count{controller=\"omnicontrolplane\"}"
        ),
        cp_all
    );
    assert_eq!(
        value(
            &text,
            "controller_runtime_active_workers{controller=\"omnicontrolplane\"}"
        ),
        0.0
    );
    assert!(
        text.contains("workqueue_depth{name=\"omnicontrolplane\",controller=\"omnicontrolplane\"}")
    );
    assert!(
        value(
            &text,
            "workqueue_adds_total{name=\"omnicontrolplane\",controller=\"omnicontrolplane\"}"
        ) >= 3.0,
        "{text}"
    );

    // A plugin that panics: its reconciles are errors, retried through the queue, its traps counted by class.
    let panicking = support::runtime()
        .load(PluginSpec::new("omni-machine", guests::wasm("panic")))
        .await
        .expect("loads");
    let digest = panicking.digest().to_string();
    env.host.registry().install(panicking);
    env.sim
        .apply(&json!({"apiVersion": API, "kind": "OmniMachine",
            "metadata": {"name": "11111111-1111-4111-8111-111111111111", "namespace": "team"},
            "spec": {"clusterRef": {"name": "edge"}}}))
        .await
        .expect("machine");
    let mut text = String::new();
    for _ in 0..1500 {
        text = scrape().await;
        if value(
            &text,
            "workqueue_retries_total{name=\"omnimachine\",controller=\"omnimachine\"}",
        ) >= 2.0
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let errors = value(
        &text,
        "controller_runtime_reconcile_total{controller=\"omnimachine\",result=\"error\"}",
    );
    assert!(errors >= 2.0, "{text}");
    assert_eq!(
        value(
            &text,
            "controller_runtime_reconcile_errors_total{controller=\"omnimachine\"}"
        ),
        errors
    );
    let traps = value(
        &text,
        &format!(
            "omni_operator_plugin_traps_by_class_total{{plugin=\"omni-machine\",digest=\"{digest}\",binding=\"\",class=\"PluginPanic\"}}"
        ),
    );
    assert!(traps >= 2.0, "{text}");
    assert!(text.ends_with("# EOF\n"));
}
