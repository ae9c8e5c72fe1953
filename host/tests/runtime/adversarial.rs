//! The sandbox under attack: hostile components, built as real plugins (`tests/guests/hostile`, `squatter`,
//! `stall`, and hand-written WebAssembly), run in the real host. Each attack must be contained, reported with the
//! plugin's name, and leave every other object reconciling. The first tests run the attacker through the
//! controllers against kube-sim, omni-sim and a workload kube-sim, beside the built-in export plugin whose
//! credentials are the prize.

use omni_operator::controllers::metrics::Count;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use base64::Engine as _;
use omni_operator::capabilities::{Grants, HostServices};
use omni_operator::operator::{Operator, PluginSources};
use omni_operator::runtime::{CallError, ErrorKind, PluginSpec};
use serde_json::{Value, json};

use super::guests;
use super::support::{self, FakeKube, NOW, echo_still_serves, load, try_load};
use super::workload_access::{API, CLUSTER, Env, NS, data, export, is, scan_for_leaks};

/// Every grant a plugin can be given, scoped as wide as the grammar allows (`kube-write` grants one kind at a
/// time, so it is here without kinds: the writes a plugin can make are tried in their own test).
const EVERYTHING: [&str; 12] = [
    "kube-read:*",
    "kube-write",
    "kube-read-cluster:*",
    "namespace:*",
    "secrets",
    "secrets-read-values",
    "secrets-write",
    "secrets-namespace:*",
    "workload",
    "omni",
    "helm",
    "clock",
];

/// The interfaces the hostile plugin imports: without them it does not load at all.
const IMPORTS: [&str; 6] = [
    "kube-read",
    "kube-write",
    "secrets",
    "workload",
    "omni",
    "helm",
];

/// The hostile plugin with its imports granted, plus `grants`.
fn hostile_grants(grants: &[&str]) -> Grants {
    Grants::parse(IMPORTS.iter().chain(grants)).expect("grants parse")
}

fn hostile(grants: &[&str]) -> PluginSpec {
    PluginSpec::new("hostile", guests::wasm("hostile")).grants(hostile_grants(grants))
}

/// An OmniHelmRelease carrying `attacks` (and naming Secret `named`) for the hostile plugin.
fn release(name: &str, named: &str, attacks: Value) -> Value {
    json!({"apiVersion": API, "kind": "OmniHelmRelease", "metadata": {"name": name, "namespace": NS},
        "spec": {"clusterRef": {"name": CLUSTER}, "kubeconfigSecretRef": {"name": "edge-kubeconfig"},
            "chart": {"repository": "https://charts.example.com", "chart": "demo", "version": "1.0.0",
                "values": {"secretRef": {"name": named}, "attacks": attacks}}}})
}

/// The hostile plugin's report: one JSON value per attack.
fn results(obj: &Value) -> Vec<Value> {
    let message = super::workload_access::message(obj, "Attacks");
    let texts: Vec<String> = serde_json::from_str(&message).unwrap_or_default();
    texts
        .iter()
        .map(|t| serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.clone())))
        .collect()
}

fn denied(result: &Value) -> bool {
    result["error"]
        .as_str()
        .is_some_and(|e| e.starts_with("HostError::Denied(\"plugin \\\"hostile\\\" was denied"))
}

/// The exported kubeconfig the built-in export wrote, once it is Ready.
async fn exported_kubeconfig(env: &Env) -> Vec<u8> {
    env.apply(&export("ops", json!({"name": "edge-kubeconfig"}), "Delete"))
        .await;
    env.wait("OmniKubeconfigExport", "ops", "Ready=True", |o| {
        is(o, "Ready", "True", "Exported")
    })
    .await;
    data(
        &env.secret(NS, "edge-kubeconfig")
            .expect("the export wrote its Secret"),
        "kubeconfig",
    )
}

/// A Secret created as `kubectl apply` creates it: the whole object, values included, in an annotation.
fn applied_secret(name: &str, value: &str) -> Value {
    let encoded = base64::engine::general_purpose::STANDARD.encode(value);
    let last = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NS},
        "data": {"password": encoded}});
    json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": NS, "labels": {"stolen-by": "hostile"},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": last.to_string(), "team": "a"}},
        "type": "Opaque", "data": {"password": encoded}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_with_every_grant_obtains_no_credential_and_every_denial_is_reported() {
    let env = Env::start_with(vec![hostile(&EVERYTHING)]).await;
    let kubeconfig = exported_kubeconfig(&env).await;
    let key = data(
        &env.secret(NS, "omni-service-account").expect("key Secret"),
        "serviceAccountKey",
    );
    env.apply(&applied_secret("app-config", "app-value-7f3"))
        .await;
    env.apply(&applied_secret("applied", "applied-value-91c"))
        .await;

    let sa = |what: &str| json!({"do": what, "name": "omni-service-account", "key": "serviceAccountKey"});
    let attacks = json!([
        // 0-3: Secrets through kube-read, however spelled.
        {"do": "get", "apiVersion": "v1", "kind": "Secret", "name": "omni-service-account"},
        {"do": "list", "apiVersion": "v1", "kind": "Secret"},
        {"do": "get", "apiVersion": "/v1", "kind": "Secret", "name": "edge-kubeconfig"},
        {"do": "list", "apiVersion": "v1", "kind": "Secret", "namespace": "kube-system"},
        // 4-7: Secrets the object does not name.
        sa("secretRead"),
        {"do": "secretRead", "name": "edge-kubeconfig", "key": "kubeconfig"},
        {"do": "secretInfo", "name": "applied"},
        sa("secretDigest"),
        // 8-9: the Secret the object names: metadata without the value-bearing annotation; its value, granted.
        {"do": "secretInfo", "name": "app-config"},
        {"do": "secretRead", "name": "app-config", "key": "password"},
        // 10-11: deletes with an owner label the plugin made up.
        {"do": "secretDelete", "name": "app-config", "ownerKey": "stolen-by", "ownerValue": "hostile"},
        {"do": "secretDelete", "name": "omni-service-account", "ownerKey": "stolen-by", "ownerValue": "hostile"},
        // 12-14: the workload cluster and Omni with credentials the object does not name.
        {"do": "probe", "name": "edge-kubeconfig", "key": "kubeconfig"},
        {"do": "copy", "kubeconfig": {"name": "edge-kubeconfig", "key": "kubeconfig"}, "source": "omni-service-account",
            "targetNamespace": "apps", "targetName": "loot", "ownerKey": "k", "ownerValue": "v"},
        {"do": "export", "connection": "omni", "cluster": CLUSTER, "name": "omni-service-account",
            "key": "serviceAccountKey", "ownerKey": "k", "ownerValue": "v"},
        // 15: points its own status at the key Secret, for the next call.
        {"do": "claim", "name": "omni-service-account"},
        // 16-17: Helm through a kubeconfig the object does not name: a chart of its choosing into kube-system, and
        // a look at what runs there.
        {"do": "helmInstall", "kubeconfig": {"name": "edge-kubeconfig", "key": "kubeconfig"}, "chart": "oci://evil.test/loot"},
        {"do": "helmRead", "kubeconfig": {"name": "edge-kubeconfig", "key": "kubeconfig"}, "release": "cilium",
            "releaseNamespace": "kube-system"},
        // 18-19: a Helm step through a kubeconfig the object does not name; values from a Secret it does not name
        // (through a kubeconfig it does).
        {"do": "helmStart", "kubeconfig": {"name": "edge-kubeconfig", "key": "kubeconfig"}},
        {"do": "helmObserve", "kubeconfig": {"name": "app-config", "key": "password"},
            "valuesSecret": "omni-service-account"},
    ]);
    env.apply(&release("h", "app-config", attacks)).await;
    let obj = env
        .wait("OmniHelmRelease", "h", "the attacks' report", |o| {
            results(o).len() == 20
        })
        .await;
    let r = results(&obj);
    for (i, result) in r.iter().enumerate() {
        if ![8, 9, 15].contains(&i) {
            assert!(denied(result), "attack {i} was not denied: {result}");
        }
    }
    assert!(
        r[0]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("Secrets are never readable through kube-read"),
        "{}",
        r[0]
    );
    let info = &r[8]["ok"];
    assert_eq!(info["keys"], json!(["password"]));
    assert!(
        !info["annotations"]
            .as_str()
            .unwrap_or_default()
            .contains("last-applied"),
        "secrets.info hands over kubectl's copy of the values: {info}"
    );
    assert!(
        info["annotations"]
            .as_str()
            .unwrap_or_default()
            .contains("team")
    );
    assert_eq!(
        r[9]["ok"],
        json!(base64::engine::general_purpose::STANDARD.encode("app-value-7f3")),
        "the named Secret's value is readable under secrets-read-values"
    );
    assert!(
        env.secret(NS, "app-config").is_some(),
        "a made-up owner label deletes nothing"
    );
    assert!(env.secret(NS, "omni-service-account").is_some());

    // The next call reaches the key Secret through the status it wrote: only for owner-checked operations,
    // never its contents.
    let again = json!([sa("secretRead"), sa("secretDigest"), {"do": "secretInfo", "name": "omni-service-account"}]);
    env.apply(&release("h", "app-config", again)).await;
    let obj = env
        .wait("OmniHelmRelease", "h", "the second report", |o| {
            let r = results(o);
            r.len() == 3
                && r.iter()
                    .all(|x| x.get("error").is_some() || x.get("ok").is_some())
        })
        .await;
    assert_eq!(
        obj["status"]["releaseName"], "omni-service-account",
        "the claim was written"
    );
    for (i, result) in results(&obj).iter().enumerate() {
        assert!(
            denied(result),
            "status-named attack {i} was not denied: {result}"
        );
    }

    // Reported as the contract promises: a condition and an Event naming plugin, capability and target, and a
    // log line; counted.
    assert!(
        is(&obj, "CapabilityDenied", "True", "CapabilityDenied"),
        "{:#}",
        obj["status"]
    );
    let condition = super::workload_access::message(&obj, "CapabilityDenied");
    assert!(
        condition.starts_with(
            "plugin \"hostile\" was denied secrets: secrets.read \"omni-service-account\""
        ),
        "{condition}"
    );
    let events = env.kube.list("events.k8s.io/v1", "Event", Some(NS));
    assert!(
        events.iter().any(|e| e["reason"] == "CapabilityDenied"
            && e["regarding"]["name"] == "h"
            && e["note"]
                .as_str()
                .is_some_and(|n| n.contains("plugin \"hostile\" was denied"))),
        "no CapabilityDenied Event on h"
    );
    let logged = String::from_utf8_lossy(&support::logs().lock().unwrap()).into_owned();
    assert!(
        logged.contains("plugin \"hostile\" was denied kube-read"),
        "no denial was logged"
    );
    // 15 refusals in the first call, 3 in the second.
    assert!(env.metrics.total(Count::Denials) >= 18);

    // A reconcile without denials clears the report.
    env.apply(&release("h", "app-config", json!([]))).await;
    env.wait("OmniHelmRelease", "h", "CapabilityDenied=False", |o| {
        is(o, "CapabilityDenied", "False", "NoDenials")
    })
    .await;

    // A call that fails after a denial reports the denial too, beside the failure.
    let mut failing = release("h", "app-config", json!([sa("secretRead")]));
    failing["spec"]["chart"]["values"]["fail"] = json!(true);
    env.apply(&failing).await;
    let obj = env
        .wait(
            "OmniHelmRelease",
            "h",
            "Ready=False and CapabilityDenied=True",
            |o| {
                is(o, "Ready", "False", "ReconcileFailed")
                    && is(o, "CapabilityDenied", "True", "CapabilityDenied")
            },
        )
        .await;
    assert!(
        super::workload_access::message(&obj, "CapabilityDenied").starts_with(
            "plugin \"hostile\" was denied secrets: secrets.read \"omni-service-account\""
        ),
        "{:#}",
        obj["status"]
    );
    assert!(
        super::workload_access::message(&obj, "Ready").contains("gave up after the attacks"),
        "{:#}",
        obj["status"]
    );
    // And a failing call without denials clears the report.
    let mut failing = release("h", "app-config", json!([]));
    failing["spec"]["chart"]["values"]["fail"] = json!(true);
    env.apply(&failing).await;
    env.wait(
        "OmniHelmRelease",
        "h",
        "CapabilityDenied=False after a failure without denials",
        |o| is(o, "CapabilityDenied", "False", "NoDenials"),
    )
    .await;

    // No byte of the key, the kubeconfig (or its token) or a value-bearing annotation reached the plugin's
    // report, any status, Event or log line.
    scan_for_leaks(&env, &[&key, &kubeconfig, b"applied-value-91c"]).await;

    // The built-in export kept serving throughout: a new one reaches Ready.
    env.apply(&export(
        "ops2",
        json!({"name": "edge-kubeconfig-2"}),
        "Delete",
    ))
    .await;
    env.wait("OmniKubeconfigExport", "ops2", "Ready=True", |o| {
        is(o, "Ready", "True", "Exported")
    })
    .await;
}

/// The attack of the sandbox's third round: the plugin writes the name of the admin kubeconfig into its own status
/// (a field it declared as a secret field), then installs, reads and probes through it. Only the spec names what a
/// call may read, install or write; a name in the status reaches only the removal of what the object made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubeconfig_named_only_by_the_plugins_own_status_reaches_no_cluster() {
    let env = Env::start_with(vec![hostile(&EVERYTHING)]).await;
    exported_kubeconfig(&env).await;
    env.apply(&release(
        "s",
        "app-config",
        json!([{"do": "claim", "name": "edge-kubeconfig"}]),
    ))
    .await;
    let obj = env
        .wait("OmniHelmRelease", "s", "the claim", |o| {
            o["status"]["releaseName"] == "edge-kubeconfig"
        })
        .await;
    let uid = obj["metadata"]["uid"].as_str().expect("uid").to_string();
    let edge = json!({"name": "edge-kubeconfig", "key": "kubeconfig"});
    let attacks = json!([
        // 0-4: reads, installs and writes through the status-named kubeconfig.
        {"do": "probe", "name": "edge-kubeconfig", "key": "kubeconfig"},
        {"do": "copy", "kubeconfig": edge, "source": "app-config", "targetNamespace": "kube-system",
            "targetName": "loot", "ownerKey": "omni.texashpc.com/owner", "ownerValue": uid},
        {"do": "helmInstall", "kubeconfig": edge, "chart": "oci://evil.test/loot"},
        {"do": "helmRead", "kubeconfig": edge, "release": "cilium", "releaseNamespace": "kube-system"},
        {"do": "helmDrift", "kubeconfig": edge, "release": "cilium", "releaseNamespace": "kube-system"},
        // 5-6: cleaning up what the object made stays possible through it (owner-checked by the host).
        {"do": "workloadDelete", "kubeconfig": edge, "targetNamespace": "apps", "targetName": "mine",
            "ownerKey": "omni.texashpc.com/owner", "ownerValue": uid},
        {"do": "helmUninstall", "kubeconfig": edge, "release": "mine", "releaseNamespace": "apps"},
    ]);
    env.apply(&release("s", "app-config", attacks)).await;
    let obj = env
        .wait("OmniHelmRelease", "s", "the attacks' report", |o| {
            results(o).len() == 7
        })
        .await;
    let r = results(&obj);
    for (i, result) in r.iter().enumerate().take(5) {
        assert!(denied(result), "attack {i} was not denied: {result}");
        assert!(
            result["error"]
                .as_str()
                .unwrap_or_default()
                .contains("a name in the status reaches only the removal"),
            "attack {i}: {result}"
        );
    }
    for (i, result) in r.iter().enumerate().skip(5) {
        assert!(
            !denied(result),
            "cleanup {i} through the status-named kubeconfig was denied: {result}"
        );
    }
    assert!(
        env.workload
            .get("v1", "Secret", "kube-system", "loot")
            .is_none(),
        "a Secret was written into the cluster the status named"
    );
}

/// A status the CRD refuses leaves the object neither dark nor stuck: the failure is reported over the stored
/// status (which the API server accepts), its Event note is cut to the API's limit, and the next good reconcile
/// writes the plugin's status again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_the_api_server_refuses_is_reported_and_the_next_good_reconcile_repairs_it() {
    let env = Env::start_with(vec![hostile(&EVERYTHING)]).await;
    env.apply(&release(
        "r",
        "app-config",
        json!([{"do": "badStatus", "bytes": 5000}]),
    ))
    .await;
    let obj = env
        .wait("OmniHelmRelease", "r", "Ready=False StatusRefused", |o| {
            is(o, "Ready", "False", "StatusRefused")
        })
        .await;
    let message = super::workload_access::message(&obj, "Ready");
    assert!(
        message.starts_with("the API server refused the status plugin \"hostile\" returned"),
        "{message}"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let events = env.kube.list("events.k8s.io/v1", "Event", Some(NS));
        let refused: Vec<&Value> = events
            .iter()
            .filter(|e| e["reason"] == "StatusRefused" && e["regarding"]["name"] == "r")
            .collect();
        if let Some(e) = refused.first() {
            let note = e["note"].as_str().unwrap_or_default();
            assert!(note.len() <= 1024, "an Event note of {} bytes", note.len());
            break;
        }
        assert!(Instant::now() < deadline, "no StatusRefused Event");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The plugin behaves again: its status is written, the refused one is not retried.
    env.apply(&release("r", "app-config", json!([]))).await;
    env.wait("OmniHelmRelease", "r", "the good status", |o| {
        super::workload_access::message(o, "Attacks") == "[]"
    })
    .await;
}

/// Work a plugin hands to Helm is bounded before Helm sees it: values by size (a megabyte values part is refused
/// before it is parsed), actions by count (distinct installs started in a loop stop at the per-call budget).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_work_a_plugin_hands_over_is_bounded() {
    let env = Env::start_with(vec![hostile(&EVERYTHING)]).await;
    exported_kubeconfig(&env).await;
    let edge = json!({"name": "edge-kubeconfig", "key": "kubeconfig"});
    let attacks = json!([
        {"do": "helmInstall", "kubeconfig": edge, "chart": "oci://evil.test/loot",
            "valuesBytes": omni_operator::capabilities::MAX_VALUES_BYTES,
            "releaseNamespace": "apps"},
        {"do": "helmStarts", "kubeconfig": edge, "chart": "oci://evil.test/loot", "count": 40,
            "releaseNamespace": "apps"},
    ]);
    // The object's spec names the kubeconfig, so every call passes the reach check and meets the budgets.
    env.apply(&release("b", "edge-kubeconfig", attacks)).await;
    let obj = env
        .wait("OmniHelmRelease", "b", "the attacks' report", |o| {
            results(o).len() == 2
        })
        .await;
    let r = results(&obj);
    let refusal = r[0]["error"].as_str().unwrap_or_default();
    assert!(
        refusal.starts_with("HostError::Invalid(")
            && refusal.contains("a release's values may be at most"),
        "{}",
        r[0]
    );
    // This host runs no Helm, so each start that passes the budget answers `unavailable` from the engine; the
    // ones past the budget are refused before.
    let last = r[1]["last"]["error"].as_str().unwrap_or_default();
    assert!(
        last.contains("a call may start at most 4 Helm actions"),
        "the 40th start was not refused by the budget: {}",
        r[1]
    );
}

/// Helm's take-ownership adopts objects another release or a person made, and impersonation picks whom the
/// kubeconfig acts as (possibly an account that may do more than it may), so each is a grant of its own: a plugin
/// granted everything else (`helm` included) that asks for either through the kubeconfig its spec names is
/// denied, naming the grant, and nothing starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn taking_over_objects_or_impersonating_needs_grants_of_their_own() {
    let env = Env::start_with(vec![hostile(&EVERYTHING)]).await;
    exported_kubeconfig(&env).await;
    let edge = json!({"name": "edge-kubeconfig", "key": "kubeconfig"});
    let attacks = json!([
        {"do": "helmInstall", "kubeconfig": edge, "chart": "oci://evil.test/loot",
            "releaseNamespace": "apps", "takeOwnership": true},
        {"do": "helmInstall", "kubeconfig": edge, "chart": "oci://evil.test/loot",
            "releaseNamespace": "apps"},
        {"do": "helmInstall", "kubeconfig": edge, "chart": "oci://evil.test/loot",
            "releaseNamespace": "apps", "serviceAccount": "cluster-admin"},
    ]);
    env.apply(&release("t", "edge-kubeconfig", attacks)).await;
    let obj = env
        .wait("OmniHelmRelease", "t", "the attacks' report", |o| {
            results(o).len() == 3
        })
        .await;
    let r = results(&obj);
    assert!(denied(&r[0]), "take-ownership was not denied: {}", r[0]);
    assert!(
        r[0]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("needs the grant \\\"helm-take-ownership\\\""),
        "{}",
        r[0]
    );
    // The same install without it passes every check (and reaches the engine this host does not run).
    assert!(!denied(&r[1]), "a plain install was denied: {}", r[1]);
    assert!(denied(&r[2]), "impersonation was not denied: {}", r[2]);
    assert!(
        r[2]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("needs the grant \\\"helm-impersonate\\\""),
        "{}",
        r[2]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn floods_of_calls_events_requeues_and_log_bytes_are_bounded_by_the_host() {
    let env = Env::start_with(vec![hostile(&["clock"])]).await;
    // 60 Events a call (just under the per-call bound), a requeue of 0 ms and 8 MiB log fields, every call.
    let flood = json!([
        {"do": "events", "count": 60},
        {"do": "requeue", "ms": 0},
        {"do": "logHuge", "bytes": 8 << 20, "times": 4},
    ]);
    let started = Instant::now();
    let calls_before = env.metrics.total(Count::PluginCalls);
    env.apply(&release("flood", "none", flood)).await;
    env.wait("OmniHelmRelease", "flood", "reported", |o| {
        results(o).len() == 3
    })
    .await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    let seconds = started.elapsed().as_secs_f64();
    let calls = env.metrics.total(Count::PluginCalls) - calls_before;
    // The requeue floor is 1 s; allow the first call, the status write's own trigger and slack for a slow machine.
    assert!(
        (calls as f64) <= seconds + 4.0,
        "{calls} reconciles in {seconds:.1} s despite the 1 s requeue floor"
    );
    assert!(env.metrics.total(Count::RequeuesRaised) >= 1);
    let spam = env
        .kube
        .list("events.k8s.io/v1", "Event", Some(NS))
        .into_iter()
        .filter(|e| e["regarding"]["name"] == "flood" && e["reason"] == "Spam")
        .count();
    assert!(
        (1..=25).contains(&spam),
        "{spam} Events recorded for one object; the spam filter allows a burst of 25"
    );
    assert!(env.metrics.total(Count::EventsDropped) >= 35);
    // Log lines keep at most 4 KiB of message and 1 KiB per field.
    let logged = String::from_utf8_lossy(&support::logs().lock().unwrap()).into_owned();
    assert!(
        logged.lines().all(|l| l.len() < 64 * 1024),
        "a log line of {} bytes reached the logs",
        logged.lines().map(str::len).max().unwrap_or(0)
    );

    // A loop of cheap host calls is stopped at the per-call cap and reported.
    env.apply(&release(
        "spinner",
        "none",
        json!([{"do": "spin", "calls": 50_000}]),
    ))
    .await;
    let spinner = env
        .wait("OmniHelmRelease", "spinner", "stopped", |o| {
            is(o, "Ready", "False", "PluginTooManyHostCalls")
        })
        .await;
    let why = super::workload_access::message(&spinner, "Ready");
    assert!(
        why.starts_with(
            "plugin \"hostile\" was stopped: it made more than 10000 calls into the host"
        ),
        "{why}"
    );

    // The others keep serving: the built-in export reaches Ready meanwhile.
    env.apply(&export("ops", json!({"name": "edge-kubeconfig"}), "Delete"))
        .await;
    env.wait("OmniKubeconfigExport", "ops", "Ready=True", |o| {
        is(o, "Ready", "True", "Exported")
    })
    .await;
}

/// Reconciles one attack in the runtime alone (no controllers) and returns its result and the call's outputs.
async fn attack_once(
    grants: &[&str],
    services: &HostServices,
    attack: Value,
) -> (Value, omni_operator::capabilities::Outputs) {
    let plugin = load("hostile", hostile_grants(grants)).await;
    let object = release("x", "none", json!([attack]));
    let object =
        omni_operator::capabilities::CallObject::parse(object.to_string()).expect("object");
    let done = plugin
        .reconcile(&object, services)
        .await
        .expect("the call completes");
    let report = done
        .outputs
        .conditions
        .iter()
        .find(|c| c.type_ == "Attacks")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    let texts: Vec<String> = serde_json::from_str(&report).expect("the report");
    let result = serde_json::from_str(&texts[0]).expect("one result");
    (result, done.outputs)
}

#[tokio::test]
async fn cluster_scoped_kinds_need_a_cluster_grant_and_kinds_must_be_named() {
    let services = || {
        support::services(
            FakeKube::default()
                .with_object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}}))
                .with_config_map(NS, "settings", json!({"a": "b"})),
        )
    };
    let ns = json!({"do": "get", "apiVersion": "v1", "kind": "Namespace", "name": "kube-system"});
    let (r, out) = attack_once(&["kube-read:*", "namespace:*"], &services(), ns.clone()).await;
    assert!(denied(&r), "a namespaced grant reached a Namespace: {r}");
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("`kube-read-cluster:core/Namespace`"),
        "{r}"
    );
    assert_eq!(out.denials[0].capability, "kube-read");
    let (r, _) = attack_once(&["kube-read-cluster:core/Namespace"], &services(), ns).await;
    let got: Value = serde_json::from_str(r["ok"].as_str().unwrap_or_default()).unwrap_or_default();
    assert_eq!(got["metadata"]["name"], "kube-system", "{r}");

    // A kind not named is denied even in the object's own namespace.
    let cm = json!({"do": "get", "apiVersion": "v1", "kind": "ConfigMap", "name": "settings"});
    let (r, _) = attack_once(
        &["kube-read:omni.texashpc.com/OmniCluster"],
        &services(),
        cm.clone(),
    )
    .await;
    assert!(denied(&r), "{r}");
    let (r, _) = attack_once(&["kube-read:core/ConfigMap"], &services(), cm).await;
    let got: Value = serde_json::from_str(r["ok"].as_str().unwrap_or_default()).unwrap_or_default();
    assert_eq!(got["data"], json!({"a": "b"}), "{r}");
}

#[tokio::test]
async fn a_plugins_clocks_show_the_hosts_time_only_under_the_clock_grant() {
    let services = support::default_services();
    let now = json!({"do": "now"});
    let (r, _) = attack_once(&["kube-read:core/ConfigMap"], &services, now.clone()).await;
    assert_eq!(
        r["ok"], 0,
        "without the clock grant WASI's wall clock must stand still: {r}"
    );
    let (r, _) = attack_once(&["clock"], &services, now).await;
    assert_eq!(
        r["ok"], NOW,
        "WASI's wall clock must be the host's injectable clock: {r}"
    );
}

/// On the current-thread runtime of `#[tokio::test]` the call, its fiber and every host function run on this
/// thread, so this thread's largest allocation is what serving the plugin's strings cost.
#[tokio::test]
async fn huge_strings_are_measured_in_guest_memory_and_never_copied_whole() {
    // A 96 MiB Event message and a 48 MiB log message and field, within the guest's 128 MiB cap: the host copies
    // the 1 KiB, 4 KiB and 1 KiB it keeps, never the whole strings (the generated bindings would allocate them).
    for (attack, huge) in [
        (json!({"do": "eventHuge", "bytes": 96 << 20}), 96usize << 20),
        (
            json!({"do": "logHuge", "bytes": 48 << 20, "times": 1}),
            48 << 20,
        ),
    ] {
        let plugin = load("hostile", hostile_grants(&["clock"])).await;
        let object = release("x", "none", json!([attack]));
        let object =
            omni_operator::capabilities::CallObject::parse(object.to_string()).expect("object");
        let services = support::default_services();
        support::LargestAllocation::reset_thread();
        let done = plugin
            .reconcile(&object, &services)
            .await
            .expect("the call completes");
        let largest = support::LargestAllocation::thread_largest();
        assert!(
            largest < huge / 2,
            "the host made a {} MiB allocation while serving {attack}",
            largest >> 20
        );
        assert!(done.outputs.events.iter().all(|e| e.message.len() <= 1024));
        assert!(done.outputs.logs.iter().all(|l| l.message.len() <= 4096));
    }
}

#[tokio::test]
async fn huge_log_lines_are_cut_before_they_are_kept() {
    let huge = json!({"do": "logHuge", "bytes": 4 << 20, "times": 2});
    let (_, out) = attack_once(&["clock"], &support::default_services(), huge).await;
    assert_eq!(out.logs.len(), 2);
    for line in &out.logs {
        assert!(line.message.len() <= 4096, "{}", line.message.len());
        assert!(
            line.message.capacity() <= 8192,
            "the cut message keeps its capacity"
        );
        assert_eq!(line.fields.len(), 1);
        assert!(line.fields[0].1.len() <= 1024, "{}", line.fields[0].1.len());
        assert!(line.fields[0].1.capacity() <= 2048);
    }
}

/// A component of `modules` core modules, each with `memories` memories of one page, all instantiated.
fn greedy(modules: usize, memories: usize) -> Vec<u8> {
    let memories: String = (0..memories).map(|_| "(memory 1)").collect();
    let body: String = (0..modules)
        .map(|i| format!("(core module $m{i} {memories}) (core instance (instantiate $m{i}))"))
        .collect();
    wat::parse_str(format!("(component {body})")).expect("the component assembles")
}

#[tokio::test]
async fn components_with_many_memories_are_refused_at_load() {
    // Sixteen modules of one memory each (every module within bounds, the component not), and one module of
    // sixteen: refused by the pooling allocator's per-component limits at compile time, so the pool's slots are
    // never taken.
    for (modules, memories) in [(16, 1), (1, 16)] {
        let e = support::runtime()
            .load(PluginSpec::new("greedy", greedy(modules, memories)))
            .await
            .expect_err("16 memories");
        assert!(e.to_string().starts_with("plugin \"greedy\""), "{e}");
        assert!(
            e.to_string().contains("16") && e.to_string().contains("memories"),
            "{e}"
        );
    }
    // With the on-demand allocator (where the pool cannot be reserved) the host's own check refuses it.
    let on_demand = omni_operator::runtime::Runtime::new(omni_operator::runtime::RuntimeConfig {
        allocator: omni_operator::runtime::Allocator::OnDemand,
        ..Default::default()
    })
    .expect("runtime");
    let e = on_demand
        .load(PluginSpec::new("greedy", greedy(16, 1)))
        .await
        .expect_err("16 memories");
    assert_eq!(
        e.to_string(),
        "plugin \"greedy\" defines 16 linear memories and 0 tables; this host allows at most 2 memories and 32 \
         tables per plugin"
    );
    echo_still_serves().await;
}

#[tokio::test]
async fn a_call_is_capped_across_all_its_memories() {
    // bomb allocates until refused: the cap holds and is classified, and the runtime serves on.
    let bomb = load("bomb", Grants::none()).await;
    let e = bomb
        .reconcile(
            &support::object("b", "default", json!({})),
            &support::default_services(),
        )
        .await
        .expect_err("the bomb is stopped");
    let CallError::Aborted(e) = e else {
        panic!("{e}")
    };
    assert_eq!(e.kind(), ErrorKind::OutOfMemory);
    echo_still_serves().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_survives_bad_plugins_and_refuses_squatters_impostors_and_rivals() {
    let dir = tempfile::tempdir().expect("tempdir");
    let put = |name: &str, bytes: &[u8]| {
        std::fs::write(dir.path().join(format!("{name}.wasm")), bytes).expect("write")
    };
    put("broken", b"not a component");
    put("stall", &guests::wasm("stall"));
    put("squatter", &guests::wasm("squatter"));
    // An impostor under a built-in's name: it gets no grants of the built-in, so its imports are refused.
    put("omni-kubeconfig-export", &guests::wasm("hostile"));
    // A built-in replaced on purpose, with grants configured for it: served, and said at WARN with both digests.
    put("omni-machine", omni_operator::defaults::PLUGINS[4].wasm);
    // Two plugins claiming one kind: the hostile guest replaces the built-in OmniHelmRelease plugin (with grants
    // configured for that name), and a rival claims the same kind.
    put("omni-helm-release", &guests::wasm("hostile"));
    put("rival", &guests::wasm("hostile"));
    let mut sources = PluginSources {
        plugin_dir: Some(dir.path().to_path_buf()),
        ..PluginSources::default()
    };
    for name in ["omni-helm-release", "rival", "squatter"] {
        sources.extra_grants.insert(
            name.into(),
            EVERYTHING.iter().map(|g| g.to_string()).collect(),
        );
    }
    sources.extra_grants.insert(
        "omni-machine".into(),
        vec!["kube-read:omni.texashpc.com/OmniCluster".into()],
    );
    let operator = Operator::load(support::runtime().clone(), sources)
        .await
        .expect("start-up survives every bad plugin");
    let refused: std::collections::BTreeMap<&str, &str> = operator
        .refused()
        .iter()
        .map(|(n, r)| (n.as_str(), r.as_str()))
        .collect();
    assert_eq!(
        refused.keys().copied().collect::<Vec<_>>(),
        [
            "broken",
            "omni-kubeconfig-export",
            "rival",
            "squatter",
            "stall"
        ],
        "{refused:#?}"
    );
    assert!(
        refused["broken"].contains("is not a loadable component"),
        "{}",
        refused["broken"]
    );
    assert!(
        refused["stall"].contains("timed out"),
        "{}",
        refused["stall"]
    );
    assert!(
        refused["squatter"].contains("reconciles core/Secret, which this operator does not serve"),
        "{}",
        refused["squatter"]
    );
    assert!(
        refused["omni-kubeconfig-export"].contains("which its grants do not include"),
        "{}",
        refused["omni-kubeconfig-export"]
    );
    assert!(
        refused["rival"].contains(
            "plugins \"omni-helm-release\" and \"rival\" both reconcile omni.texashpc.com/OmniHelmRelease"
        ),
        "{}",
        refused["rival"]
    );
    // Every built-in serves, the export as the built-in bytes.
    let names = operator.registry().names();
    for d in omni_operator::defaults::PLUGINS {
        assert!(
            names.contains(&d.name.to_string()),
            "{} is not serving",
            d.name
        );
    }
    let export = operator
        .registry()
        .get("omni-kubeconfig-export")
        .expect("export");
    let built_in = omni_operator::runtime::Digest::of(omni_operator::defaults::PLUGINS[5].wasm);
    assert_eq!(export.digest(), built_in);
    let hostile = omni_operator::runtime::Digest::of(&guests::wasm("hostile"));
    assert_eq!(
        operator
            .registry()
            .get("omni-helm-release")
            .expect("the replacement")
            .digest(),
        hostile
    );
    let logged = String::from_utf8_lossy(&support::logs().lock().unwrap()).into_owned();
    let machine =
        omni_operator::runtime::Digest::of(omni_operator::defaults::PLUGINS[4].wasm).to_string();
    assert!(
        logged.lines().any(|l| l.contains("WARN")
            && l.contains("plugin replaced by a file from the plugin directory")
            && l.contains("plugin=omni-machine")
            && l.matches(machine.as_str()).count() == 2),
        "the replacement of a built-in was not logged at WARN with both digests"
    );
}

#[tokio::test]
async fn a_plugin_dir_file_does_not_inherit_a_built_ins_grants() {
    // The echo plugin needs kube-read and clock. Under a built-in's name, without a --grant of its own, it gets
    // nothing: its imports are refused even though the built-in omni-kubeconfig-export holds both.
    let e = try_load("echo", Grants::none(), None)
        .await
        .expect_err("no grants");
    assert_eq!(e.kind(), ErrorKind::DeniedCapability);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("omni-kubeconfig-export.wasm"),
        guests::wasm("echo"),
    )
    .expect("write");
    let operator = Operator::load(
        support::runtime().clone(),
        PluginSources {
            plugin_dir: Some(dir.path().to_path_buf()),
            ..PluginSources::default()
        },
    )
    .await
    .expect("start-up");
    assert_eq!(operator.refused().len(), 1, "{:?}", operator.refused());
    assert!(
        operator.refused()[0]
            .1
            .contains("which its grants do not include")
    );
}

#[tokio::test]
async fn denials_beyond_the_recorded_ones_are_counted() {
    let plugin = load("hostile", hostile_grants(&[])).await;
    let get = json!({"do": "get", "apiVersion": "v1", "kind": "ConfigMap", "name": "settings"});
    let object = release("x", "none", Value::Array(vec![get; 20]));
    let object =
        omni_operator::capabilities::CallObject::parse(object.to_string()).expect("object");
    let done = plugin
        .reconcile(&object, &support::default_services())
        .await
        .expect("the call completes");
    assert_eq!(
        done.outputs.denials.len(),
        omni_operator::capabilities::MAX_DENIALS
    );
    assert_eq!(
        done.outputs.denials.len() + done.outputs.denials_dropped,
        20,
        "every refusal is recorded or counted"
    );
}

/// An AdmissionReview of `plugin`'s first kind creating an object with `spec`, and the path it goes to.
fn review_of(
    plugin: &omni_operator::runtime::LoadedPlugin,
    uid: &str,
    spec: Value,
) -> (String, Vec<u8>) {
    let gvk = plugin.info().kinds.first().cloned().expect("a kind");
    let review = json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": uid, "kind": {"group": gvk.group, "version": gvk.version, "kind": gvk.kind},
            "name": "x", "namespace": NS, "operation": "CREATE",
            "object": {"apiVersion": gvk.api_version(), "kind": gvk.kind,
                "metadata": {"name": "x", "namespace": NS, "uid": uid}, "spec": spec}},
    });
    let path = omni_operator::admission::validate_path(&gvk.group, &gvk.version, &gvk.kind);
    (path, review.to_string().into_bytes())
}

/// A hostile `validate` behind the admission webhooks: its answers are cut to a few kilobytes (as many causes as
/// the host keeps, warnings as the API server cuts them); its traps and abandoned calls count in its version's
/// figures, which canaries and rollbacks judge; and a flood of slow reviews of its kind never fails another
/// kind's admission, because each kind is decided in a pool of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_answers_are_bounded_and_one_kinds_flood_leaves_another_kinds_admission_alone() {
    use omni_operator::admission::{FailurePolicy, Webhooks};
    use omni_operator::runtime::PluginRegistry;
    use std::sync::Arc;

    // As many calls at once as the host has permits, each as long as the webhook lets it: without a pool per
    // kind, its flood holds every permit until the deadline, wave after wave, and another kind's review queues
    // behind it past its own deadline.
    let limits = omni_operator::runtime::CallLimits {
        max_concurrent: 256,
        timeout: Duration::from_secs(60),
        ..Default::default()
    };
    let hostile = try_load("hostile", hostile_grants(&[]), Some(limits))
        .await
        .expect("the hostile plugin loads");
    let echo = load("echo", support::echo_grants()).await;
    let registry = Arc::new(PluginRegistry::new());
    registry.install(hostile.clone());
    registry.install(echo.clone());
    let webhooks = Arc::new(Webhooks::new(
        registry,
        Duration::from_secs(3),
        FailurePolicy::Fail,
    ));

    // 200,000 causes, an 8 MiB detail and an 8 MiB warning become an answer of a few kilobytes.
    let huge = json!({"chart": {"values": {"validate": {"errors": 200_000, "detailBytes": 8 << 20,
        "warnings": 50, "warningBytes": 8 << 20}}}});
    let (path, body) = review_of(&hostile, "u-huge", huge);
    let (status, answer) = webhooks.answer(&path, &body).await;
    assert_eq!(status, 200);
    let size = answer.to_string().len();
    assert!(size < 256 << 10, "the answer is {size} bytes");
    let response = &answer["response"];
    assert_eq!(response["allowed"], false);
    let causes = response["status"]["details"]["causes"]
        .as_array()
        .expect("causes");
    assert_eq!(causes.len(), omni_operator::runtime::MAX_CAUSES + 1);
    assert!(
        causes.last().expect("a cause")["message"]
            .as_str()
            .is_some_and(|m| m.contains("199900 more errors not shown")),
        "{}",
        causes.last().expect("a cause")
    );
    let warnings: Vec<&str> = response["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        warnings
            .iter()
            .all(|w| w.len() <= omni_operator::runtime::MAX_WARNING)
    );
    assert!(
        warnings.iter().map(|w| w.len()).sum::<usize>()
            <= omni_operator::runtime::MAX_WARNINGS_TOTAL
    );

    // Traps and abandoned calls of `validate` count as reconciles' do.
    let before = hostile.usage().figures();
    let (path, body) = review_of(
        &hostile,
        "u-trap",
        json!({"chart": {"values": {"validate": {"trap": true}}}}),
    );
    let (_, answer) = webhooks.answer(&path, &body).await;
    assert_eq!(answer["response"]["status"]["code"], 500, "{answer}");
    let after = hostile.usage().figures();
    assert_eq!(after.calls, before.calls + 1);
    assert_eq!(after.rollback_failures, before.rollback_failures + 1);

    // A flood that never lets up: 200 clients, each sending a review that spins until the deadline, then the
    // next, far more than a kind's pool holds.
    let spin = json!({"chart": {"values": {"validate": {"spin": true}}}});
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut flood = Vec::new();
    for i in 0..200 {
        let (path, body) = review_of(&hostile, &format!("u-spin-{i}"), spin.clone());
        let (webhooks, stop) = (webhooks.clone(), stop.clone());
        flood.push(tokio::spawn(async move {
            let mut answers = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                answers.push(webhooks.answer(&path, &body).await);
            }
            answers
        }));
    }
    // Once the flood has been turned away a few times it holds every slot it can get.
    let deadline = Instant::now() + Duration::from_secs(30);
    while webhooks.stats.undecided.load(Ordering::Relaxed) < 3 {
        assert!(Instant::now() < deadline, "the flood was never turned away");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Another kind's review is decided by its own plugin (echo refuses a missing spec.configMap), not undecided.
    let (path, body) = review_of(&echo, "u-echo", json!({}));
    let (_, answer) = webhooks.answer(&path, &body).await;
    stop.store(true, Ordering::Relaxed);
    assert_eq!(
        answer["response"]["status"]["code"], 422,
        "another kind's admission failed: {answer}"
    );
    // The flood held at most its kind's pool: the rest was turned away at once, not queued for the host's
    // permits (which reconciles and every other kind share).
    let mut turned_away = 0;
    for task in flood {
        for (status, answer) in task.await.expect("a client") {
            assert_eq!(status, 200);
            assert_eq!(answer["response"]["allowed"], false);
            let message = answer["response"]["status"]["message"]
                .as_str()
                .unwrap_or_default();
            if message.contains("reviews of OmniHelmRelease are being decided already") {
                turned_away += 1;
            }
        }
    }
    assert!(
        turned_away > 0,
        "the flood was never held to its kind's pool"
    );
    let spun = hostile.usage().figures();
    assert!(
        spun.traps_by_class
            .iter()
            .any(|(class, n)| *class == "PluginTimeout" && *n > 0),
        "abandoned validate calls were not counted: {spun:?}"
    );
}

/// A plugin looping on host calls in every call runs up a debt on its host-call rate: its next calls are slowed
/// until the debt is paid, refused (and classified, so reported and counted) when that would take too long, and
/// served again once it is paid. Its own calls only: the budget is the plugin's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_looping_on_host_calls_is_slowed_then_refused_and_reported() {
    let limits = omni_operator::runtime::CallLimits {
        host_calls_per_second: 1000,
        ..Default::default()
    };
    let plugin = try_load("hostile", hostile_grants(&[]), Some(limits))
        .await
        .expect("the hostile plugin loads");
    let object = release("x", "none", json!([{"do": "spin", "calls": 3900}]));
    let object =
        omni_operator::capabilities::CallObject::parse(object.to_string()).expect("object");
    let services = HostServices::default();
    // Two calls of 3,900 host calls each: the first within the burst (4,000), the second nearly four seconds into
    // debt, so the third is refused even on a machine that stalls between them.
    for _ in 0..2 {
        plugin
            .reconcile(&object, &services)
            .await
            .expect("within the rate");
    }
    let refused = match plugin.reconcile(&object, &services).await {
        Err(CallError::Aborted(e)) => e,
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("a plugin two seconds in debt was called at once"),
    };
    assert_eq!(refused.kind(), ErrorKind::TooManyHostCalls);
    assert!(
        refused
            .to_string()
            .contains("has used up its host-call rate (1000 per second"),
        "{refused}"
    );
    let figures = plugin.usage().figures();
    assert!(
        figures
            .traps_by_class
            .iter()
            .any(|(class, n)| *class == "PluginTooManyHostCalls" && *n > 0),
        "{figures:?}"
    );
    // Once the debt is within a second, calls are slowed rather than refused, and then served.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match plugin.reconcile(&object, &services).await {
            Ok(_) => break,
            Err(CallError::Aborted(e)) if e.kind() == ErrorKind::TooManyHostCalls => {}
            Err(other) => panic!("{other}"),
        }
        assert!(
            Instant::now() < deadline,
            "the plugin was never served again"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Another plugin's calls were never affected.
    echo_still_serves().await;
}

/// Admission is under the tenant's quota as reconciles are: a binding allowed one call a second (bursts of two)
/// gets a review in a quick row answered as undecided, naming the quota, without its plugin being called.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviews_count_against_the_tenants_call_quota() {
    use omni_operator::admission::{FailurePolicy, Webhooks};
    use omni_operator::runtime::{PluginRegistry, Quota};
    use std::sync::Arc;

    let quota = Quota {
        concurrency: None,
        calls_per_second: Some(1),
    };
    let plugin = support::runtime()
        .load(hostile(&[]).quota(quota))
        .await
        .expect("the hostile plugin loads");
    let registry = Arc::new(PluginRegistry::new());
    registry.install(plugin.clone());
    let webhooks = Webhooks::new(registry, Duration::from_secs(5), FailurePolicy::Fail);
    // Reviews in a row until one is turned away: one a second (bursts of two) cannot admit them all.
    let mut allowed = 0;
    let refused = loop {
        let (path, body) = review_of(&plugin, &format!("u-{allowed}"), json!({}));
        let answer = webhooks.answer(&path, &body).await.1;
        if answer["response"]["allowed"] == true {
            allowed += 1;
            assert!(allowed < 20, "20 reviews in a row were all admitted");
        } else {
            break answer;
        }
    };
    assert!(allowed >= 2, "the burst was not admitted: {refused}");
    let refused = &refused["response"];
    assert!(
        refused["status"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("is over its tenant's quota")),
        "{refused}"
    );
    assert_eq!(
        plugin.usage().figures().calls,
        allowed,
        "the refused review called the plugin"
    );
    assert!(plugin.usage().figures().quota_hits >= 1);
}

/// The writes an administrator can grant at most, for the write attacks: every kind they try that a grant can
/// name, the Secret grant with `secrets-write`, and no other namespace, force or Pod permit.
const WRITER: [&str; 6] = [
    "kube-write:core/v1/ConfigMap",
    "kube-write:core/v1/Pod",
    "kube-write:apps/v1/Deployment",
    "kube-write:core/v1/Secret",
    "kube-write:coordination.k8s.io/v1/Lease",
    "secrets-write",
];

/// The kinds no grant reaches, as (apiVersion, kind, cluster-scoped).
const NEVER_WRITABLE: [(&str, &str); 13] = [
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicy",
    ),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ("apiregistration.k8s.io/v1", "APIService"),
    ("plugins.omni.texashpc.com/v1alpha1", "Plugin"),
    ("plugins.omni.texashpc.com/v1alpha1", "PluginBinding"),
    ("v1", "Node"),
    ("v1", "ServiceAccount"),
];

fn pod(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["containers"] = json!([{"name": "c", "image": "registry.k8s.io/pause:3.10"}]);
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
}

/// Every write a plugin must not get away with, through the real component in the real host against kube-sim:
/// each is refused, nothing is stored, every refusal is reported on the object, and the host keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_write_attacks_write_nothing_and_are_reported() {
    // An administrator's ceiling cannot even name the kinds no grant reaches.
    for (api_version, kind) in NEVER_WRITABLE {
        let (group, version) = api_version.split_once('/').unwrap_or(("core", api_version));
        let grant = format!("kube-write:{group}/{version}/{kind}");
        let refused = Grants::parse([&grant]).expect_err(&grant);
        assert!(
            refused.to_string().contains("no grant"),
            "{grant}: {refused}"
        );
    }
    let env = Env::start_with(vec![hostile(&WRITER)]).await;
    let cluster_uid = env
        .kube
        .get(API, "OmniCluster", NS, CLUSTER)
        .expect("the OmniCluster")["metadata"]["uid"]
        .clone();
    let write = |object: Value| json!({"do": "write", "object": object});
    let mut attacks: Vec<Value> = NEVER_WRITABLE
        .iter()
        .map(|(api_version, kind)| {
            write(json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "loot"}}))
        })
        .collect();
    let config_map = |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {}});
    let mut elsewhere = config_map("loot");
    elsewhere["metadata"]["namespace"] = json!("kube-system");
    let mut adopted = config_map("adopted");
    adopted["metadata"]["ownerReferences"] = json!([{"apiVersion": API, "kind": "OmniCluster", "name": CLUSTER,
        "uid": cluster_uid, "controller": true}]);
    attacks.extend([
        // 13: the operator's Lease, with Leases granted.
        write(json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "5dc6398d.texashpc.com"}, "spec": {"holderIdentity": "hostile"}})),
        // 14-15: another namespace; an owner the call does not reconcile.
        write(elsewhere),
        write(adopted),
        // 16: a ServiceAccount token, with Secrets granted.
        write(json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
            "metadata": {"name": "token", "annotations": {"kubernetes.io/service-account.name": "default"}}})),
        // 17-20: Pods that leave the baseline.
        write(pod("root", json!({"hostPID": true}))),
        write(pod("disk", json!({"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}))),
        write(pod("admin", json!({"serviceAccountName": "operator"}))),
        write({
            let mut p = pod("privileged", json!({}));
            p["spec"]["containers"][0]["securityContext"] = json!({"privileged": true});
            p
        }),
        // 21: 10 MiB.
        json!({"do": "write", "object": config_map("huge"), "padBytes": 10 << 20}),
    ]);
    env.apply(&release("w", "none", json!(attacks))).await;
    let obj = env
        .wait("OmniHelmRelease", "w", "the write attacks' report", |o| {
            results(o).len() == 22
        })
        .await;
    for (i, result) in results(&obj).iter().enumerate() {
        assert!(denied(result), "write attack {i} was not denied: {result}");
    }
    let stored = |api_version: &str, kind: &str, namespace: &str, name: &str| {
        env.kube.get(api_version, kind, namespace, name).is_some()
    };
    for (api_version, kind) in NEVER_WRITABLE {
        assert!(
            !stored(api_version, kind, NS, "loot") && !stored(api_version, kind, "", "loot"),
            "{kind}"
        );
    }
    assert!(!stored("v1", "ConfigMap", "kube-system", "loot"));
    assert!(!stored("v1", "ConfigMap", NS, "adopted"));
    assert!(!stored("v1", "Secret", NS, "token"));
    for name in ["root", "disk", "admin", "privileged"] {
        assert!(!stored("v1", "Pod", NS, name), "{name}");
    }
    assert!(!stored("v1", "ConfigMap", NS, "huge"));
    let lease = env.kube.get(
        "coordination.k8s.io/v1",
        "Lease",
        NS,
        "5dc6398d.texashpc.com",
    );
    assert!(lease.is_none(), "{lease:?}");
    assert!(
        is(&obj, "CapabilityDenied", "True", "CapabilityDenied"),
        "{:#}",
        obj["status"]
    );
    env.wait_until("a CapabilityDenied Event on w naming kube-write", || {
        env.kube
            .list("events.k8s.io/v1", "Event", Some(NS))
            .iter()
            .any(|e| {
                e["reason"] == "CapabilityDenied"
                    && e["regarding"]["name"] == "w"
                    && e["note"]
                        .as_str()
                        .is_some_and(|n| n.contains("plugin \"hostile\" was denied kube-write"))
            })
    })
    .await;

    // 10,000 objects in one call: the call's write budget lets 100 through and refuses the rest, and the call is
    // stopped once it has made more host calls than any call may; the host goes on. Retries of the stopped call
    // write the same 100 again, never one more.
    let flood = json!([{"do": "write", "object": config_map("flood"), "count": 10_000}]);
    env.apply(&release("w", "none", flood)).await;
    let flooded = || {
        env.kube
            .list("v1", "ConfigMap", Some(NS))
            .iter()
            .filter(|c| {
                c["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("flood-"))
            })
            .count()
    };
    let obj = env
        .wait("OmniHelmRelease", "w", "the flooding call stopped", |o| {
            is(o, "Ready", "False", "PluginTooManyHostCalls")
        })
        .await;
    assert!(
        is(&obj, "CapabilityDenied", "True", "CapabilityDenied"),
        "{:#}",
        obj["status"]
    );
    assert_eq!(flooded(), 100);
    let retried = env.metrics.total(Count::PluginCalls);
    env.wait_until("the stopped call retried", || {
        env.metrics.total(Count::PluginCalls) > retried
    })
    .await;
    assert_eq!(flooded(), 100, "a retry writes no object beyond the budget");
    echo_still_serves().await;
}

/// A plugin writing at full speed, on eight objects that each ask to be called again at once, is held to its write
/// rate (a burst, then its writes wait their turn at `WRITES_PER_SECOND`), and the host keeps serving other
/// objects within the bound the tenant-fairness test holds (3 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_loop_at_full_speed_is_held_to_its_rate_and_the_host_keeps_serving() {
    use omni_operator::capabilities::{WRITE_BURST, WRITES_PER_SECOND};
    let env = Env::start_with(vec![hostile(&WRITER)]).await;
    let writes = || {
        env.kube
            .requests()
            .iter()
            .filter(|r| {
                r.resource == "configmaps" && r.verb == "patch" && r.name.starts_with("loop")
            })
            .count()
    };
    let started = Instant::now();
    for i in 0..8 {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("loop{i}")}, "data": {}});
        let attacks = json!([{"do": "write", "object": object, "count": 100, "vary": true}, {"do": "requeue", "ms": 0}]);
        env.apply(&release(&format!("loop-{i}"), "none", attacks))
            .await;
    }
    env.wait_until("the loop to spend its burst", || {
        writes() >= WRITE_BURST as usize
    })
    .await;

    let asked = Instant::now();
    env.apply(&export("ops", json!({"name": "edge-kubeconfig"}), "Delete"))
        .await;
    env.wait("OmniKubeconfigExport", "ops", "Ready=True", |o| {
        is(o, "Ready", "True", "Exported")
    })
    .await;
    let latency = asked.elapsed();
    assert!(
        latency < Duration::from_secs(3),
        "another object waited {latency:?} behind the write loop"
    );
    let elapsed = started.elapsed().as_secs_f64();
    let made = writes();
    let allowed = f64::from(WRITE_BURST) + f64::from(WRITES_PER_SECOND) * elapsed;
    assert!(
        (made as f64) <= allowed,
        "{made} writes in {elapsed:.1} s, more than the burst and rate allow ({allowed:.0})"
    );
    assert!(
        made >= WRITE_BURST as usize,
        "the burst was written: {made}"
    );
}
