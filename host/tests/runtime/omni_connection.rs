//! OmniConnection end to end: the built-in `omni-connection` plugin (the real component) in the real host,
//! against kube-sim and omni-sim, covering the Go controller's reconcile and deletion and its checks of the
//! service-account Secret. omni-sim verifies every signature as Omni does, so a Ready connection proves the host's
//! signing too.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use omni_operator::controllers::Settings;
use omni_operator::defaults;
use omni_operator::omni::OmniConnections;
use omni_operator::runtime::PluginSpec;
use omni_operator::stack::{Host, HostBuilder, Stack};
use omni_sim::{KeyOptions, OmniSim, Role};
use serde_json::{Value, json};

use super::support;

const API: &str = "omni.texashpc.com/v1alpha1";
const NS: &str = "team";

/// Declared so the host stops before the simulators it talks to.
struct Env {
    _host: Host,
    kube: kube_sim::KubeSim,
    omni: OmniSim,
    pool: Arc<OmniConnections>,
}

/// kube-sim with the CRDs and the namespace, Omni as `omni` builds it, and a host running only `omni-connection`.
/// The tests mint their own keys and write their own Secrets and connections.
async fn start_with(omni: omni_sim::Builder) -> Env {
    start_plugins(omni, &["omni-connection"]).await
}

async fn start_plugins(omni: omni_sim::Builder, plugins: &[&str]) -> Env {
    support::logs();
    let Stack { kube, omni, .. } = Stack::builder()
        .omni(omni)
        .namespace(NS)
        .start()
        .await
        .expect("the simulators start");
    let pool = Arc::new(OmniConnections::default());
    let settings = Settings {
        reconcile_timeout: Duration::from_secs(5),
        omni: pool.clone(),
        ..Settings::default()
    };
    let host = HostBuilder::new(support::runtime().clone())
        .built_in(plugins)
        .expect("built in")
        .settings(settings)
        .start(kube.kubeconfig(&kube.admin()))
        .await
        .expect("the host starts");
    Env {
        _host: host,
        kube,
        omni,
        pool,
    }
}

async fn start() -> Env {
    start_with(OmniSim::builder()).await
}

fn secret(name: &str, key: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NS}, "type": "Opaque",
        "stringData": {key: value}})
}

fn connection(name: &str, endpoint: &str, secret: &str) -> Value {
    json!({"apiVersion": API, "kind": "OmniConnection", "metadata": {"name": name, "namespace": NS},
        "spec": {"endpoint": endpoint, "auth": {"serviceAccountSecretRef": {"name": secret, "key": "serviceAccountKey"}}}})
}

impl Env {
    fn get(&self, name: &str) -> Value {
        self.kube
            .get(API, "OmniConnection", NS, name)
            .unwrap_or(Value::Null)
    }

    /// (status, reason, message) of a condition.
    fn condition(&self, name: &str, type_: &str) -> Option<(String, String, String)> {
        self.get(name)["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == type_)
            .map(|c| {
                let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
                (s("status"), s("reason"), s("message"))
            })
    }

    async fn wait_ready(&self, name: &str, want: &str) -> (String, String, String) {
        for _ in 0..500 {
            if let Some(ready) = self.condition(name, "Ready")
                && ready.0 == want
            {
                return ready;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!(
            "OmniConnection {name} never got Ready={want}: {:#}",
            self.get(name)["status"]
        );
    }

    async fn apply(&self, obj: &Value) {
        self.kube.apply(obj).await.expect("apply");
    }

    async fn delete(&self, kind: &str, plural: &str, name: &str) {
        let client = self.kube.client().await.expect("client");
        let (group, version) = API.split_once('/').expect("group/version");
        let ar =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
        let api: Api<DynamicObject> = Api::namespaced_with(client, NS, &ar);
        api.delete(name, &DeleteParams::default())
            .await
            .expect("delete");
    }

    /// Puts a new key (of `operator-sa-2`) into Secret `sa`, then changes connection `one`'s spec in a way that
    /// leaves endpoint and TLS setting as they were, so that only the key differs at its next check. Returns the
    /// Omni calls made since the new key was stored, once `one` is Ready again at generation 2.
    async fn rotate_key_and_recheck_one(&self) -> Vec<omni_sim::RpcRecord> {
        let rotated = self.omni.mint_key("operator-sa-2", Role::Operator);
        self.apply(&secret("sa", "serviceAccountKey", &rotated))
            .await;
        self.omni.clear_records();
        let mut changed = connection("one", &self.omni.endpoint(), "sa");
        changed["spec"]["insecureSkipTLSVerify"] = json!(false);
        self.apply(&changed).await;
        for _ in 0..500 {
            if self.get("one")["status"]["observedGeneration"] == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            self.condition("one", "Ready").map(|c| c.0),
            Some("True".into())
        );
        self.omni.records()
    }

    /// Every Event and condition message in the namespace, and every captured log line.
    async fn everything_said(&self) -> String {
        let mut said = String::from_utf8_lossy(&support::logs().lock().unwrap()).into_owned();
        for event in self.kube.list("v1", "Event", Some(NS)) {
            said.push_str(&event.to_string());
        }
        for conn in self.kube.list(API, "OmniConnection", Some(NS)) {
            said.push_str(&conn["status"].to_string());
        }
        said
    }
}

/// The strings that would betray a service-account key: the value itself, a slice of it, and its armored key.
fn key_material(value: &str) -> Vec<String> {
    let json = base64::engine::general_purpose::STANDARD
        .decode(value)
        .expect("base64 key");
    let parsed: Value = serde_json::from_slice(&json).expect("key JSON");
    let armored = parsed["pgp_key"].as_str().expect("pgp_key").to_string();
    let body_line = armored
        .lines()
        .find(|l| l.len() > 40)
        .expect("an armored line")
        .to_string();
    vec![
        value.to_string(),
        value[100..160].to_string(),
        body_line,
        "PRIVATE KEY".into(),
    ]
}

fn assert_no_key_material(said: &str, value: &str) {
    for needle in key_material(value) {
        assert!(!said.contains(&needle), "key material {needle:?} leaked");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_with_a_registered_key_is_ready_reachable_and_not_stalled() {
    let env = start().await;
    let key = env.omni.mint_key("operator-sa", Role::Reader);
    env.apply(&secret("sa", "serviceAccountKey", &key)).await;
    env.apply(&connection("c", &env.omni.endpoint(), "sa"))
        .await;
    let ready = env.wait_ready("c", "True").await;
    let expected = format!("connected to {}", env.omni.endpoint());
    assert_eq!(
        ready,
        ("True".into(), "ConnectionReady".into(), expected.clone())
    );
    assert_eq!(
        env.condition("c", "Reachable"),
        Some(("True".into(), "ConnectionReady".into(), expected.clone()))
    );
    assert_eq!(
        env.condition("c", "Stalled"),
        Some(("False".into(), "ConnectionReady".into(), expected))
    );
    let obj = env.get("c");
    assert_eq!(obj["status"]["connectionRef"], "c");
    assert_eq!(obj["status"]["endpoint"], env.omni.endpoint());
    assert!(
        obj["status"]["lastCheckTime"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    assert_eq!(obj["status"]["observedGeneration"], 1);
    assert_eq!(
        obj["metadata"]["finalizers"],
        json!(["omni.texashpc.com/finalizer"])
    );

    // The ping is the Go client's: a signed List of clusters in namespace default, accepted by omni-sim's verifier.
    let lists: Vec<_> = env
        .omni
        .records()
        .into_iter()
        .filter(|r| r.method == "/cosi.resource.State/List")
        .collect();
    assert!(!lists.is_empty());
    assert_eq!(lists[0].code, tonic::Code::Ok, "{}", lists[0].message);
    assert_eq!(
        lists[0].identity.as_deref(),
        Some("operator-sa@serviceaccount.omni.sidero.dev")
    );
    assert!(
        lists[0].request.contains("Clusters.omni.sidero.dev"),
        "{}",
        lists[0].request
    );
    // Requests go uncompressed: the bulky payloads are zstd already.
    assert!(
        !lists[0].metadata.iter().any(|(k, _)| k == "grpc-encoding"),
        "requests are not gzip-compressed"
    );
    assert!(
        lists[0].metadata.iter().any(|(k, _)| k == "grpc-timeout"),
        "every call carries a deadline"
    );
    assert!(
        !support::logs().lock().unwrap().is_empty(),
        "the scan below reads the process's log lines"
    );
    assert_no_key_material(&env.everything_said().await, &key);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unregistered_or_revoked_key_is_unauthenticated_and_stalls_the_connection() {
    let env = start().await;
    let key = env.omni.mint_key_with(KeyOptions {
        registered: false,
        ..KeyOptions::new("stranger", Role::Operator)
    });
    env.apply(&secret("sa", "serviceAccountKey", &key)).await;
    env.apply(&connection("c", &env.omni.endpoint(), "sa"))
        .await;
    let ready = env.wait_ready("c", "False").await;
    let message = "failed to connect to Omni: list Omni clusters: rpc error: code = Unauthenticated desc = invalid signature";
    assert_eq!(
        ready,
        ("False".into(), "ConnectionFailed".into(), message.into())
    );
    assert_eq!(
        env.condition("c", "Reachable"),
        Some(("False".into(), "ConnectionFailed".into(), message.into()))
    );
    assert_eq!(
        env.condition("c", "Stalled"),
        Some(("True".into(), "ConnectionFailed".into(), message.into()))
    );
    assert_no_key_material(&env.everything_said().await, &key);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn omni_unavailable_fails_the_check_and_the_connection_recovers_by_itself() {
    let env = start().await;
    let key = env.omni.mint_key("operator-sa", Role::Operator);
    env.omni.faults().set_unavailable(true);
    env.apply(&secret("sa", "serviceAccountKey", &key)).await;
    env.apply(&connection("c", &env.omni.endpoint(), "sa"))
        .await;
    let (_, reason, message) = env.wait_ready("c", "False").await;
    assert_eq!(reason, "ConnectionFailed");
    assert!(
        message.starts_with(
            "failed to connect to Omni: list Omni clusters: rpc error: code = Unavailable desc = "
        ),
        "{message}"
    );
    // No change to the object: the failure requeue (2 s at first) brings the check back.
    env.omni.faults().set_unavailable(false);
    let (_, reason, _) = env.wait_ready("c", "True").await;
    assert_eq!(reason, "ConnectionReady");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_environment_block_in_the_secret_is_refused_without_echoing_it() {
    let env = start().await;
    let key = env.omni.mint_key("operator-sa", Role::Operator);
    let block = format!(
        "OMNI_ENDPOINT={}\nexport OMNI_SERVICE_ACCOUNT_KEY={key}\n",
        env.omni.endpoint()
    );
    env.apply(&secret("sa", "serviceAccountKey", &block)).await;
    env.apply(&connection("c", &env.omni.endpoint(), "sa"))
        .await;
    let (_, reason, message) = env.wait_ready("c", "False").await;
    assert_eq!(reason, "ConnectionFailed");
    assert_eq!(
        message,
        "failed to connect to Omni: secret team/sa key \"serviceAccountKey\" contains Omni environment assignments; \
         store only the OMNI_SERVICE_ACCOUNT_KEY value"
    );
    assert!(
        env.omni.records().is_empty(),
        "nothing is sent to Omni with an unusable key"
    );
    assert_no_key_material(&env.everything_said().await, &key);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_secret_or_key_is_reported_and_fixing_it_makes_the_connection_ready() {
    let env = start().await;
    env.apply(&connection("c", &env.omni.endpoint(), "sa"))
        .await;
    let (_, _, message) = env.wait_ready("c", "False").await;
    assert_eq!(
        message,
        "failed to connect to Omni: MissingSecret \"sa\": secrets \"sa\" not found"
    );

    let key = env.omni.mint_key("operator-sa", Role::Operator);
    env.apply(&secret("sa", "otherKey", &key)).await;
    for _ in 0..300 {
        if env
            .condition("c", "Ready")
            .is_some_and(|c| c.2.contains("missing key"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        env.condition("c", "Ready").map(|c| c.2),
        Some("failed to connect to Omni: secret team/sa missing key \"serviceAccountKey\"".into())
    );

    // The right key: the next (backed-off) check succeeds without touching the connection.
    let client = env.kube.client().await.expect("client");
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client, NS);
    secrets
        .patch(
            "sa",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"serviceAccountKey": key}})),
        )
        .await
        .expect("patch");
    env.wait_ready("c", "True").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletion_waits_for_referencing_clusters_and_then_releases_the_connection() {
    let env = start().await;
    let key = env.omni.mint_key("operator-sa", Role::Operator);
    env.apply(&secret("sa", "serviceAccountKey", &key)).await;
    env.apply(&connection("c", &env.omni.endpoint(), "sa"))
        .await;
    env.wait_ready("c", "True").await;
    for (name, conn) in [("edge-b", "c"), ("edge-a", "c"), ("other", "elsewhere")] {
        env.apply(&json!({"apiVersion": API, "kind": "OmniCluster", "metadata": {"name": name, "namespace": NS},
            "spec": {"connectionRef": {"name": conn}, "kubernetes": {"version": "v1.35.0"}, "talos": {"version": "v1.13.2"}}}))
            .await;
    }
    // Each new cluster re-triggers the connection it names (one more check each); let those settle.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pings = env.omni.records().len();

    env.delete("OmniConnection", "omniconnections", "c").await;
    let (_, reason, message) = env.wait_ready("c", "False").await;
    assert_eq!(reason, "Deleting");
    assert_eq!(
        message,
        "waiting for OmniCluster references to be deleted: edge-a, edge-b"
    );
    assert_eq!(
        env.condition("c", "Stalled").map(|c| (c.0, c.1)),
        Some(("True".into(), "Deleting".into()))
    );
    assert!(
        env.get("c")["metadata"]["deletionTimestamp"].is_string(),
        "held by the finalizer"
    );

    env.delete("OmniCluster", "omniclusters", "edge-a").await;
    for _ in 0..300 {
        if env
            .condition("c", "Ready")
            .is_some_and(|c| c.2.ends_with(": edge-b"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        env.condition("c", "Ready").map(|c| c.2),
        Some("waiting for OmniCluster references to be deleted: edge-b".into())
    );
    // The last reference going away re-triggers the connection through the cluster watch, which releases it.
    env.delete("OmniCluster", "omniclusters", "edge-b").await;
    for _ in 0..300 {
        if env.kube.get(API, "OmniConnection", NS, "c").is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        env.kube.get(API, "OmniConnection", NS, "c").is_none(),
        "the finalizer was removed and the connection is gone"
    );
    assert_eq!(
        env.omni.records().len(),
        pings,
        "Omni is never called during deletion"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_channel_serves_every_check_and_a_new_key_gets_a_new_one() {
    let env = start().await;
    let key = env.omni.mint_key("operator-sa", Role::Operator);
    env.apply(&secret("sa", "serviceAccountKey", &key)).await;
    for name in ["one", "two", "three"] {
        env.apply(&connection(name, &env.omni.endpoint(), "sa"))
            .await;
    }
    for name in ["one", "two", "three"] {
        env.wait_ready(name, "True").await;
    }
    let connections: std::collections::BTreeSet<u64> =
        env.omni.records().iter().map(|r| r.connection).collect();
    assert_eq!(
        connections.len(),
        1,
        "three connections with one endpoint and key share one channel: {connections:?}"
    );
    assert_eq!(env.pool.open_clients(), 1);

    // A rotated key is a new client and channel, from the connection's next check.
    let records = env.rotate_key_and_recheck_one().await;
    assert!(
        records
            .iter()
            .all(|r| r.identity.as_deref() == Some("operator-sa-2@serviceaccount.omni.sidero.dev")),
        "{records:?}"
    );
    assert!(
        records.iter().all(|r| !connections.contains(&r.connection)),
        "a new channel for the new key"
    );
}

/// Reads of the service-account Secret `sa` the host sent to the API server so far.
fn key_reads(kube: &kube_sim::KubeSim) -> usize {
    kube.requests()
        .iter()
        .filter(|r| r.verb == "get" && r.resource == "secrets" && r.name == "sa")
        .count()
}

/// With no controller watching Secrets (this host runs only omni-connection), every check reads the key from the
/// API server. With one that does (omni-secret-sync relates to Secrets), the other kinds' reads come from its
/// watch once the kind is resolved: no request, and a rotated key is used from the moment the watch has it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_is_read_from_a_secret_watch_another_kind_keeps_and_a_rotation_follows_it() {
    let alone = start().await;
    let key = alone.omni.mint_key("operator-sa", Role::Operator);
    alone.apply(&secret("sa", "serviceAccountKey", &key)).await;
    alone
        .apply(&connection("one", &alone.omni.endpoint(), "sa"))
        .await;
    alone.wait_ready("one", "True").await;
    assert!(
        key_reads(&alone.kube) >= 1,
        "without a Secret watch the key is read from the API"
    );
    drop(alone);

    let env = start_plugins(OmniSim::builder(), &["omni-connection", "omni-secret-sync"]).await;
    // omni-secret-sync's controller watches every Secret; the reads wait for that watch's first list.
    for _ in 0..500 {
        if env
            .kube
            .requests()
            .iter()
            .any(|r| r.verb == "watch" && r.resource == "secrets")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let key = env.omni.mint_key("operator-sa", Role::Operator);
    env.apply(&secret("sa", "serviceAccountKey", &key)).await;
    for name in ["one", "two"] {
        env.apply(&connection(name, &env.omni.endpoint(), "sa"))
            .await;
    }
    for name in ["one", "two"] {
        env.wait_ready(name, "True").await;
    }
    // A reader sends its first read of a kind to the API, which resolves the kind (both connections' first checks
    // may run before that); from then on the key comes from the watch.
    let first = key_reads(&env.kube);
    assert!(first <= 2, "{first} reads of the key");
    env.apply(&connection("three", &env.omni.endpoint(), "sa"))
        .await;
    env.wait_ready("three", "True").await;
    assert_eq!(key_reads(&env.kube), first, "the key came from the watch");

    // A rotation reaches the next check through the watch.
    let records = env.rotate_key_and_recheck_one().await;
    assert!(
        !records.is_empty(),
        "the check after the rotation called Omni"
    );
    assert!(
        records
            .iter()
            .all(|r| r.identity.as_deref() == Some("operator-sa-2@serviceaccount.omni.sidero.dev")),
        "{records:?}"
    );
    assert_eq!(key_reads(&env.kube), first, "still no read from the API");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_endpoints_verify_certificates_unless_insecure_skip_tls_verify() {
    let env = start_with(OmniSim::builder().tls(true)).await;
    assert!(env.omni.endpoint().starts_with("https://"));
    let key = env.omni.mint_key("operator-sa", Role::Operator);
    env.apply(&secret("sa", "serviceAccountKey", &key)).await;
    env.apply(&connection("verified", &env.omni.endpoint(), "sa"))
        .await;
    let (_, _, message) = env.wait_ready("verified", "False").await;
    assert!(
        message.starts_with(
            "failed to connect to Omni: list Omni clusters: rpc error: code = Unavailable"
        ),
        "{message}"
    );

    let mut insecure = connection("insecure", &env.omni.endpoint(), "sa");
    insecure["spec"]["insecureSkipTLSVerify"] = json!(true);
    env.apply(&insecure).await;
    let (_, _, message) = env.wait_ready("insecure", "True").await;
    assert_eq!(message, format!("connected to {}", env.omni.endpoint()));
}

/// The admission rules through the real component's `validate` export (the admission webhook's logic): blank
/// Secret name and key are required, a malformed endpoint is refused (our addition), and insecureSkipTLSVerify
/// warns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_validation_rules_run_in_the_real_component() {
    let plugin = defaults::PLUGINS
        .iter()
        .find(|p| p.name == "omni-connection")
        .expect("built in");
    let spec =
        PluginSpec::new(plugin.name, plugin.wasm.to_vec()).grants(plugin.grants().expect("grants"));
    let loaded = support::runtime().load(spec).await.expect("loads");
    let bad = json!({"apiVersion": API, "kind": "OmniConnection", "metadata": {"name": "c", "namespace": NS},
        "spec": {"endpoint": "ftp://omni", "insecureSkipTLSVerify": true,
            "auth": {"serviceAccountSecretRef": {"name": "  ", "key": ""}}}});
    let verdict = loaded
        .validate(&bad.to_string(), None)
        .await
        .expect("validates");
    let fields: Vec<(&str, &str)> = verdict
        .errors
        .iter()
        .map(|e| (e.field.as_str(), e.detail.as_str()))
        .collect();
    assert!(
        fields.contains(&(
            "spec.auth.serviceAccountSecretRef.name",
            "service account Secret name is required"
        )),
        "{fields:?}"
    );
    assert!(
        fields.contains(&(
            "spec.auth.serviceAccountSecretRef.key",
            "service account Secret key is required"
        )),
        "{fields:?}"
    );
    assert!(
        fields
            .iter()
            .any(|(f, d)| *f == "spec.endpoint" && d.contains("http://, https:// or grpc://")),
        "{fields:?}"
    );
    assert_eq!(
        verdict.warnings,
        ["insecureSkipTLSVerify disables Omni endpoint TLS certificate verification"]
    );

    let good = connection("c", "https://omni.example.com", "sa");
    let verdict = loaded
        .validate(&good.to_string(), None)
        .await
        .expect("validates");
    assert!(
        verdict.allowed() && verdict.warnings.is_empty(),
        "{verdict:?}"
    );
}
