//! The `omni` capability through the real contract: the `omni-probe` test plugin runs Omni calls in the real
//! runtime, and the host's client talks to omni-sim. COSI's write rules, typed errors, compressed content and
//! cluster health as a plugin sees them.

use std::sync::Arc;

use omni_operator::capabilities::{CallObject, Grants, HostServices};
use omni_operator::omni::OmniConnections;
use omni_sim::{OmniSim, Role};
use omni_wire::compression::Dictionary;
use omni_wire::specs;
use prost::Message as _;
use serde_json::{Value, json};

use super::support::{self, FakeKube};

const PATCHES: &str = "ConfigPatches.omni.sidero.dev";

fn dictionary() -> Dictionary {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/omni/config.1.zdict"
    );
    Dictionary::new(std::fs::read(path).expect("Omni's dictionary beside the checkout"))
        .expect("a dictionary")
}

/// Services whose Kubernetes holds connection `c` (and its Secret) pointing at `omni` with `key`.
fn services(omni: &OmniSim, key: &str, pool: Arc<OmniConnections>) -> HostServices {
    let kube = FakeKube::default()
        .with_object(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sa", "namespace": "team"},
            "data": {"serviceAccountKey": base64_of(key)}}))
        .with_object(json!({"apiVersion": "omni.texashpc.com/v1alpha1", "kind": "OmniConnection",
            "metadata": {"name": "c", "namespace": "team"},
            "spec": {"endpoint": omni.endpoint(), "auth": {"serviceAccountSecretRef": {"name": "sa", "key": "serviceAccountKey"}}}}));
    // The real clock: omni-sim checks signature timestamps against its own (system) clock.
    HostServices::default()
        .with_kube(Arc::new(kube))
        .with_omni(pool)
}

fn base64_of(s: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(s)
}

async fn run(services: &HostServices, steps: Value) -> Vec<Value> {
    let probe = support::load("omni_probe", Grants::parse(["omni"]).expect("grants")).await;
    let object = CallObject::parse(
        json!({"apiVersion": "test.omni.texashpc.com/v1", "kind": "Probe", "metadata": {"name": "p", "namespace": "team"},
            "spec": {"connection": "c", "steps": steps}})
        .to_string(),
    )
    .expect("object");
    let done = probe
        .reconcile(&object, services)
        .await
        .expect("the probe runs");
    done.outputs.status["results"]
        .as_array()
        .cloned()
        .expect("results")
}

fn patch_spec(data: &str) -> Value {
    json!(
        specs::ConfigPatchSpec {
            data: data.into(),
            compressed_data: Vec::new()
        }
        .encode_to_vec()
    )
}

fn ok(result: &Value) -> &Value {
    assert!(result.get("ok").is_some(), "expected success, got {result}");
    &result["ok"]
}

fn err(result: &Value) -> (&str, &str) {
    (
        result["error"]
            .as_str()
            .unwrap_or_else(|| panic!("expected an error, got {result}")),
        result["message"].as_str().unwrap_or_default(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_follow_cosi_write_rules_through_the_contract() {
    let omni = OmniSim::start().await.expect("omni-sim");
    let key = omni.mint_key("operator", Role::Operator);
    let services = services(&omni, &key, Arc::default());
    let results = run(&services, json!([
        {"op": "create", "type": PATCHES, "id": "500-probe", "labels": {"team": "a"}, "spec": patch_spec("machine:\n  network: {}\n")},
        {"op": "get", "type": PATCHES, "id": "500-probe"},
        {"op": "update", "type": PATCHES, "id": "500-probe", "labels": {"team": "b"}, "spec": patch_spec("machine: {}\n")},
        {"op": "update", "type": PATCHES, "id": "500-probe", "version": "1", "spec": patch_spec("stale: true\n")},
        {"op": "create", "type": PATCHES, "id": "500-probe", "spec": patch_spec("again: true\n")},
        {"op": "list", "type": PATCHES, "equal": ["team", "b"]},
        {"op": "list", "type": PATCHES, "equal": ["team", "a"]},
        {"op": "teardown", "type": PATCHES, "id": "500-probe"},
        {"op": "get", "type": PATCHES, "id": "missing"},
        {"op": "destroy", "type": PATCHES, "id": "missing"},
        // With a finalizer the resource stays while tearing down (Omni's destroy controller waits for it). The
        // teardown itself was an update (version 2); the version check comes before the phase check.
        {"op": "create", "type": PATCHES, "id": "501-held", "finalizers": ["probe"], "spec": patch_spec("a: 1\n")},
        {"op": "teardown", "type": PATCHES, "id": "501-held"},
        {"op": "update", "type": PATCHES, "id": "501-held", "version": "2", "finalizers": ["probe"], "spec": patch_spec("late: true\n")},
        {"op": "destroy", "type": PATCHES, "id": "501-held"},
        {"op": "get", "type": PATCHES, "id": "501-held"},
    ]))
    .await;
    let created = ok(&results[0]);
    assert_eq!(
        (
            created["version"].as_str(),
            created["phase"].as_str(),
            created["owner"].as_str()
        ),
        (Some("1"), Some("running"), Some(""))
    );
    assert_eq!(ok(&results[1])["labels"], json!({"team": "a"}));
    assert_eq!(
        ok(&results[1])["spec"],
        patch_spec("machine:\n  network: {}\n")
    );
    assert_eq!(
        ok(&results[2])["version"],
        "2",
        "an update carrying the version last read succeeds"
    );
    let (kind, message) = err(&results[3]);
    assert_eq!(kind, "conflict", "a stale version: {message}");
    assert!(message.contains("code = FailedPrecondition"), "{message}");
    assert_eq!(
        err(&results[4]).0,
        "conflict",
        "create of an existing resource: AlreadyExists"
    );
    assert_eq!(ok(&results[5]).as_array().map(Vec::len), Some(1));
    assert_eq!(ok(&results[6]).as_array().map(Vec::len), Some(0));
    assert_eq!(
        ok(&results[7])["destroyReady"],
        true,
        "no finalizers: ready to destroy"
    );
    assert_eq!(
        ok(&results[8]),
        &Value::Null,
        "a missing resource is none, not an error"
    );
    assert_eq!(err(&results[9]).0, "not-found");
    assert_eq!(
        ok(&results[11])["destroyReady"],
        false,
        "a finalizer remains"
    );
    let (kind, message) = err(&results[12]);
    assert_eq!(
        kind, "invalid",
        "tearing down: the expected phase no longer holds ({message})"
    );
    let (kind, message) = err(&results[13]);
    assert_eq!(kind, "conflict", "pending finalizers ({message})");
    assert_eq!(ok(&results[14])["phase"], "tearingDown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_refusals_and_outages_are_typed_errors() {
    let omni = OmniSim::start().await.expect("omni-sim");
    let reader = omni.mint_key("reader", Role::Reader);
    let services = services(&omni, &reader, Arc::default());
    let results = run(
        &services,
        json!([
            {"op": "list", "type": PATCHES},
            {"op": "create", "type": PATCHES, "id": "500-x", "spec": patch_spec("a: 1\n")},
            {"op": "status", "cluster": "nowhere"},
        ]),
    )
    .await;
    assert_eq!(ok(&results[0]), &json!([]));
    let (kind, message) = err(&results[1]);
    assert_eq!(kind, "forbidden");
    assert!(
        message.contains("insufficient role: \\\"Reader\\\"")
            || message.contains("insufficient role: \"Reader\""),
        "{message}"
    );
    assert_eq!(
        ok(&results[2]),
        &Value::Null,
        "no ClusterStatus: none, instead of waiting for ever"
    );

    omni.faults().set_unavailable(true);
    let results = run(
        &services,
        json!([{"op": "get", "type": PATCHES, "id": "x"}]),
    )
    .await;
    assert_eq!(err(&results[0]).0, "unavailable");
    omni.faults().set_unavailable(false);

    // A connection dropped in the middle of a call (a restarted Omni, a load balancer's reset): grpc-go, which
    // Omni's own clients use, reports it as Unavailable, and so does the host, so a plugin retries it as an
    // outage rather than failing on an unknown error.
    omni.faults().inject(
        omni_sim::Matcher::method("Get"),
        omni_sim::FaultAction::CloseConnection,
        Some(1),
    );
    let results = run(
        &services,
        json!([{"op": "get", "type": PATCHES, "id": "x"}]),
    )
    .await;
    let (kind, message) = err(&results[0]);
    assert_eq!(kind, "unavailable", "{message}");
    assert!(
        message.contains("rpc error: code = Unavailable desc = "),
        "{message}"
    );
    // The client connects again; until it has, a call may still meet the dropped connection (as grpc-go's
    // would), so the next answers are awaited, within a generous bound, until Omni's own (no such patch: none).
    let reconnected = std::time::Instant::now();
    loop {
        let results = run(
            &services,
            json!([{"op": "get", "type": PATCHES, "id": "x"}]),
        )
        .await;
        if results[0]["error"].is_null() {
            assert_eq!(ok(&results[0]), &Value::Null, "{}", results[0]);
            break;
        }
        let (kind, message) = err(&results[0]);
        assert_eq!(kind, "unavailable", "{message}");
        assert!(
            reconnected.elapsed() < std::time::Duration::from_secs(30),
            "still {message} after 30 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    omni.revoke("reader");
    let results = run(
        &services,
        json!([{"op": "get", "type": PATCHES, "id": "x"}]),
    )
    .await;
    let (kind, message) = err(&results[0]);
    assert_eq!(kind, "unauthenticated");
    assert!(
        message.ends_with("rpc error: code = Unauthenticated desc = invalid signature"),
        "{message}"
    );

    let other = json!([{"op": "ping"}]);
    let no_connection = HostServices::default().with_kube(Arc::new(FakeKube::default()));
    let results = run(&no_connection, other).await;
    let (kind, message) = err(&results[0]);
    assert_eq!(kind, "not-found");
    assert!(
        message.contains("OmniConnection \"c\" not found in namespace \"team\""),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_content_is_read_with_the_dictionary_or_reported_unreadable() {
    let omni = OmniSim::builder()
        .zstd_dictionary(dictionary())
        .start()
        .await
        .expect("omni-sim");
    let key = omni.mint_key("operator", Role::Operator);
    let big = "machine:\n  sysctls:\n".to_string()
        + &(0..200)
            .map(|i| format!("    net.core.key{i}: \"{i}\"\n"))
            .collect::<String>();
    assert!(big.len() > 2048, "above Omni's compression threshold");
    let with = services(
        &omni,
        &key,
        Arc::new(OmniConnections::new(Some(dictionary()))),
    );
    let results = run(
        &with,
        json!([
            {"op": "create", "type": PATCHES, "id": "400-big", "spec": patch_spec(&big)},
            {"op": "get", "type": PATCHES, "id": "400-big"},
        ]),
    )
    .await;
    let stored = omni
        .state()
        .get("default", PATCHES, "400-big")
        .expect("stored");
    let on_server =
        specs::ConfigPatchSpec::decode(stored.spec.as_ref().expect("spec").proto_spec.as_slice())
            .expect("decodes");
    assert!(
        on_server.data.is_empty() && !on_server.compressed_data.is_empty(),
        "omni-sim stores it compressed, as Omni does"
    );
    let read = ok(&results[1]);
    assert_eq!(read["unreadable"], Value::Null);
    assert_eq!(read["spec"], patch_spec(&big), "the plugin sees plain data");

    let without = services(&omni, &key, Arc::default());
    let results = run(
        &without,
        json!([{"op": "get", "type": PATCHES, "id": "400-big"}]),
    )
    .await;
    let read = ok(&results[0]);
    assert!(
        read["unreadable"]
            .as_str()
            .is_some_and(|why| why.contains("no Omni dictionary")),
        "{read}"
    );
}

fn cluster_spec() -> Value {
    json!(
        specs::ClusterSpec {
            kubernetes_version: "1.33.1".into(),
            talos_version: "1.10.3".into(),
            features: Some(specs::cluster_spec::Features::default()),
            backup_configuration: None,
        }
        .encode_to_vec()
    )
}

/// What `omnictl cluster status` would say, read with get and list so a missing status answers at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_health_follows_omnis_status_resources() {
    let omni = OmniSim::start().await.expect("omni-sim");
    let key = omni.mint_key("operator", Role::Operator);
    let services = services(&omni, &key, Arc::default());
    let results = run(&services, json!([
        {"op": "status", "cluster": "edge"},
        {"op": "create", "type": "Clusters.omni.sidero.dev", "id": "edge", "spec": cluster_spec()},
    ]))
    .await;
    assert_eq!(ok(&results[0]), &Value::Null);
    ok(&results[1]);
    let mut health = Value::Null;
    for _ in 0..100 {
        health = ok(&run(&services, json!([{"op": "status", "cluster": "edge"}])).await[0]).clone();
        if health["healthy"] == true {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        health,
        json!({"phase": "RUNNING", "ready": true, "healthy": true, "findings": []})
    );

    omni.set_cluster_health(false);
    let mut health = Value::Null;
    for _ in 0..100 {
        health = ok(&run(&services, json!([{"op": "status", "cluster": "edge"}])).await[0]).clone();
        if health["healthy"] == false {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(health["healthy"], false);
    assert!(
        health["findings"].as_array().is_some_and(|f| !f.is_empty()),
        "{health}"
    );
}
