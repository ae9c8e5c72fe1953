//! OmniKubeconfigExport and OmniSecretSync end to end: the built-in plugins (real
//! components, default grants) in a real host, a management kube-sim, omni-sim minting service-account
//! kubeconfigs, and a second kube-sim as the workload cluster behind "Omni's Kubernetes proxy": it accepts exactly
//! the tokens omni-sim signs, while they are unexpired and their cluster UUID is current. The workload cluster's
//! RBAC grants the exported user only what the syncs need, so Forbidden paths are real 403s.
//!
//! The host's clock is a test clock of its own: moving it reaches rotation times and deletion bounds. Omni keeps
//! real time, as the real one would (it refuses request signatures more than five minutes off its own clock).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use base64::Engine as _;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use omni_operator::capabilities::Clock;
use omni_operator::controllers::{self, Settings};
use omni_operator::omni::OmniConnections;
use omni_operator::runtime::PluginSpec;
use omni_operator::stack::{Host, HostBuilder, Stack};
use omni_sim::{OmniSim, SimClock};
use serde_json::{Value, json};
use sha2::Digest as _;

use super::support;

pub(super) const API: &str = "omni.texashpc.com/v1alpha1";
pub(super) const NS: &str = "platform";
pub(super) const CLUSTER: &str = "edge";
const CLUSTER_UUIDS: &str = "ClusterUUIDs.omni.sidero.dev";
const WAIT: Duration = Duration::from_secs(20);
/// The user and group the exports ask Omni for; the workload cluster's RBAC names them.
const USER: &str = "automation";
const GROUP: &str = "secret-syncers";

// ---------------------------------------------------------------------------------------------------------------
// Logs, captured for the secret-leak scan.

// ---------------------------------------------------------------------------------------------------------------
// The environment.

/// The host's clock: real time plus an offset the test moves.
#[derive(Debug)]
struct SharedClock(SimClock);

impl Clock for SharedClock {
    fn now(&self) -> SystemTime {
        self.0.now()
    }
}

/// Declared so the host stops before the simulators it talks to.
pub(super) struct Env {
    _host: Host,
    /// What the plugins read as now.
    clock: SimClock,
    pub(super) omni: OmniSim,
    pub(super) kube: kube_sim::KubeSim,
    pub(super) workload: kube_sim::KubeSim,
    /// The host's counters.
    pub(super) metrics: Arc<controllers::metrics::Metrics>,
}

impl Env {
    async fn start() -> Env {
        Env::start_with(Vec::new()).await
    }

    /// The environment with `extra` plugins served beside the two built-ins under test.
    pub(super) async fn start_with(extra: Vec<PluginSpec>) -> Env {
        let _ = support::logs();
        let Stack {
            kube,
            omni,
            workload,
            ..
        } = Stack::builder()
            .omni(OmniSim::builder().account_name("acme"))
            .workload_cluster(syncer_rbac())
            .namespace("automation")
            .connection(NS, "omni", "omni-service-account")
            .start()
            .await
            .expect("the simulators start");
        let workload = workload.expect("a workload cluster");
        let cluster = omni_sim::store::new_resource(
            "default",
            "Clusters.omni.sidero.dev",
            CLUSTER,
            Vec::new(),
        );
        omni.state().create(cluster).expect("cluster");
        omni.wait_for(Duration::from_secs(5), |s| {
            s.get("default", CLUSTER_UUIDS, CLUSTER).is_some()
        })
        .await
        .expect("the cluster gets its UUID");
        kube.apply(&json!({"apiVersion": API, "kind": "OmniCluster", "metadata": {"name": CLUSTER, "namespace": NS},
            "spec": {"connectionRef": {"name": "omni"}, "kubernetes": {"version": "v1.35.0"}, "talos": {"version": "v1.13.2"}}}))
            .await
            .expect("cluster");
        let clock = SimClock::new();
        let metrics = Arc::new(controllers::metrics::Metrics::default());
        let settings = Settings {
            omni: Arc::new(OmniConnections::default()),
            clock: Arc::new(SharedClock(clock.clone())),
            metrics: metrics.clone(),
            ..Settings::default()
        };
        let mut host = HostBuilder::new(support::runtime().clone())
            .built_in(&["omni-kubeconfig-export", "omni-secret-sync"])
            .expect("built-in plugins")
            .settings(settings);
        for spec in extra {
            host = host.plugin(spec);
        }
        let host = host
            .start(kube.kubeconfig(&kube.admin()))
            .await
            .expect("the host starts");
        Env {
            _host: host,
            clock,
            omni,
            kube,
            workload,
            metrics,
        }
    }

    pub(super) async fn apply(&self, obj: &Value) {
        self.kube.apply(obj).await.expect("apply");
    }

    fn get(&self, kind: &str, name: &str) -> Value {
        self.kube.get(API, kind, NS, name).unwrap_or(Value::Null)
    }

    pub(super) fn secret(&self, namespace: &str, name: &str) -> Option<Value> {
        self.kube.get("v1", "Secret", namespace, name)
    }

    fn workload_secret(&self, namespace: &str, name: &str) -> Option<Value> {
        self.workload.get("v1", "Secret", namespace, name)
    }

    async fn delete(&self, kind: &str, plural: &str, name: &str) {
        let client = self.kube.client().await.expect("client");
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("omni.texashpc.com", "v1alpha1", kind),
            plural,
        );
        Api::<DynamicObject>::namespaced_with(client, NS, &ar)
            .delete(name, &DeleteParams::default())
            .await
            .expect("delete");
    }

    /// Merge-patches a management Secret, which re-triggers the objects mapped from it.
    async fn touch_secret(&self, namespace: &str, name: &str, patch: Value) {
        let client = self.kube.client().await.expect("client");
        let api: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client, namespace);
        api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("patch Secret");
    }

    /// Polls until `done` holds for the object; on timeout fails with its status.
    pub(super) async fn wait(
        &self,
        kind: &str,
        name: &str,
        what: &str,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let obj = self.get(kind, name);
            if done(&obj) {
                return obj;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {kind} {name}: {what}\nstatus: {:#}\nlast log lines:\n{}",
                obj["status"],
                support::log_tail(60)
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    pub(super) async fn wait_until(&self, what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + WAIT;
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    fn kubeconfig_rpcs(&self) -> usize {
        self.omni
            .records()
            .iter()
            .filter(|r| r.method == "/management.ManagementService/Kubeconfig")
            .count()
    }
}

/// The exported group may read, write and delete Secrets in `apps` and create namespaces, nothing else: a sync
/// into `locked` is a real 403.
fn syncer_rbac() -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "locked"}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "secret-sync", "namespace": "apps"},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "create", "update", "delete"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "secret-sync", "namespace": "apps"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "secret-sync"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": GROUP}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "namespace-maker"},
            "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "create"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "namespace-maker"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "namespace-maker"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": GROUP}]}),
    ]
}

// ---------------------------------------------------------------------------------------------------------------
// Objects and what to read off them.

pub(super) fn export(name: &str, target: Value, policy: &str) -> Value {
    json!({"apiVersion": API, "kind": "OmniKubeconfigExport", "metadata": {"name": name, "namespace": NS},
        "spec": {"clusterRef": {"name": CLUSTER}, "targetSecretRef": target,
            "serviceAccount": {"user": USER, "groups": [GROUP]}, "ttl": "24h", "renewBefore": "4h", "deletionPolicy": policy}})
}

fn sync(name: &str, kubeconfig: &str, source: &str, target_ns: &str, policy: &str) -> Value {
    json!({"apiVersion": API, "kind": "OmniSecretSync", "metadata": {"name": name, "namespace": NS},
        "spec": {"clusterRef": {"name": CLUSTER}, "kubeconfigSecretRef": {"name": kubeconfig},
            "sourceSecretRef": {"name": source}, "targetSecretRef": {"name": source, "namespace": target_ns},
            "labels": {"team": "platform"}, "deletionPolicy": policy}})
}

fn cond<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

pub(super) fn is(obj: &Value, type_: &str, status: &str, reason: &str) -> bool {
    cond(obj, type_).is_some_and(|c| c["status"] == status && c["reason"] == reason)
}

pub(super) fn message(obj: &Value, type_: &str) -> String {
    cond(obj, type_)
        .and_then(|c| c["message"].as_str())
        .unwrap_or_default()
        .to_string()
}

pub(super) fn data(secret: &Value, key: &str) -> Vec<u8> {
    let text = secret["data"][key].as_str().unwrap_or_default();
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect("base64 data")
}

fn sha256_hex(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn annotation(obj: &Value, key: &str) -> String {
    obj["metadata"]["annotations"][key]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn unix(rfc3339: &str) -> i64 {
    omni_plugin_sdk::time::parse_rfc3339(rfc3339)
        .unwrap_or_else(|| panic!("{rfc3339:?} is RFC 3339"))
}

/// A client of the workload cluster from an exported kubeconfig, as automation would use it.
async fn workload_client(kubeconfig: &[u8]) -> kube::Client {
    omni_operator::stack::client(std::str::from_utf8(kubeconfig).expect("UTF-8"))
        .await
        .expect("a client from the kubeconfig")
}

// ---------------------------------------------------------------------------------------------------------------
// OmniKubeconfigExport.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_writes_an_owned_rotating_kubeconfig_the_workload_cluster_accepts() {
    let env = Env::start().await;
    let mut obj = export("ops", json!({"name": "edge-kubeconfig"}), "Delete");
    obj["spec"]["contextNamespace"] = json!("apps");
    env.apply(&obj).await;
    let done = env
        .wait("OmniKubeconfigExport", "ops", "Ready=True", |o| {
            is(o, "Ready", "True", "Exported")
        })
        .await;
    assert_eq!(
        message(&done, "Ready"),
        "exported kubeconfig to Secret \"platform/edge-kubeconfig\" key \"kubeconfig\""
    );
    assert_eq!(
        message(&done, "Accepted"),
        "attached to OmniCluster \"edge\""
    );

    // The Secret's shape, labels and annotations.
    let secret = env
        .secret(NS, "edge-kubeconfig")
        .expect("the target Secret");
    let uid = done["metadata"]["uid"].as_str().expect("uid");
    assert_eq!(secret["type"], "Opaque");
    assert_eq!(
        secret["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "omni-cluster-operator"
    );
    assert_eq!(
        secret["metadata"]["labels"]["omni.texashpc.com/kubeconfig-export-uid"],
        uid
    );
    assert_eq!(
        secret["metadata"]["labels"]["omni.texashpc.com/cluster"],
        CLUSTER
    );
    assert_eq!(
        annotation(&secret, "omni.texashpc.com/kubeconfig-export-name"),
        "ops"
    );
    assert_eq!(
        annotation(&secret, "omni.texashpc.com/kubeconfig-export-namespace"),
        NS
    );
    let kubeconfig = data(&secret, "kubeconfig");
    let hash = sha256_hex(&kubeconfig);
    assert_eq!(
        annotation(&secret, "omni.texashpc.com/kubeconfig-hash"),
        hash
    );
    assert_eq!(done["status"]["kubeconfigHash"], hash.as_str());
    let spec_hash = annotation(&secret, "omni.texashpc.com/kubeconfig-export-spec-hash");
    // The Go operator's spec hash for these inputs, computed independently here.
    let go_json = format!(
        r#"{{"version":"v1","clusterName":"edge","targetSecretKey":"kubeconfig","contextNamespace":"apps","serviceAccountUser":"{USER}","serviceAccountGroups":["{GROUP}"],"ttl":"24h0m0s"}}"#
    );
    assert_eq!(spec_hash, sha256_hex(go_json.as_bytes()));

    // Rotation math on the shared clock.
    let rotated = unix(&annotation(
        &secret,
        "omni.texashpc.com/kubeconfig-last-rotation-time",
    ));
    let expires = unix(&annotation(
        &secret,
        "omni.texashpc.com/kubeconfig-expiration-time",
    ));
    assert_eq!(expires - rotated, 24 * 3600);
    assert_eq!(
        unix(done["status"]["nextRotationTime"].as_str().expect("next")),
        expires - 4 * 3600
    );
    assert_eq!(done["status"]["targetSecretRef"], "edge-kubeconfig");
    assert_eq!(done["status"]["serviceAccountGroups"], json!([GROUP]));

    // The context namespace was rewritten, and the kubeconfig works against the workload cluster as its user.
    let k = kube::config::Kubeconfig::from_yaml(std::str::from_utf8(&kubeconfig).expect("UTF-8"))
        .expect("kubeconfig");
    assert_eq!(
        k.contexts[0]
            .context
            .as_ref()
            .and_then(|c| c.namespace.as_deref()),
        Some("apps")
    );
    let client = workload_client(&kubeconfig).await;
    client
        .apiserver_version()
        .await
        .expect("the workload cluster accepts the exported token");
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(client.clone(), "locked");
    let denied = secrets
        .list(&Default::default())
        .await
        .expect_err("RBAC grants nothing in locked");
    assert!(matches!(denied, kube::Error::Api(s) if s.code == 403));
    assert_eq!(env.kubeconfig_rpcs(), 1);

    // A trigger while the kubeconfig is current reuses it: no Omni call.
    env.touch_secret(
        NS,
        "edge-kubeconfig",
        json!({"metadata": {"labels": {"touched": "1"}}}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(env.kubeconfig_rpcs(), 1, "a current kubeconfig is reused");
    assert_eq!(
        data(
            &env.secret(NS, "edge-kubeconfig").expect("Secret"),
            "kubeconfig"
        ),
        kubeconfig
    );

    // At nextRotationTime (expiry − renewBefore) the next trigger rotates.
    env.clock.advance(Duration::from_secs(20 * 3600));
    env.touch_secret(
        NS,
        "edge-kubeconfig",
        json!({"metadata": {"labels": {"touched": "2"}}}),
    )
    .await;
    // (Omni's clock did not move: the new token may even equal the old one, minted within the same second.)
    let after = env
        .wait("OmniKubeconfigExport", "ops", "a rotation", |o| {
            o["status"]["lastRotationTime"]
                .as_str()
                .is_some_and(|t| unix(t) >= rotated + 20 * 3600)
        })
        .await;
    assert_eq!(env.kubeconfig_rpcs(), 2);
    assert!(is(&after, "Ready", "True", "Exported"));
    let secret = env.secret(NS, "edge-kubeconfig").expect("Secret");
    assert_eq!(
        secret["metadata"]["labels"]["touched"], "2",
        "labels of others are kept (merged)"
    );

    // Deletion with policy Delete removes the owned Secret; no Omni call is needed.
    env.delete("OmniKubeconfigExport", "omnikubeconfigexports", "ops")
        .await;
    env.wait_until("the export and its Secret to go", || {
        env.get("OmniKubeconfigExport", "ops").is_null()
            && env.secret(NS, "edge-kubeconfig").is_none()
    })
    .await;
    assert_eq!(env.kubeconfig_rpcs(), 2);
    scan_for_leaks(&env, &[&kubeconfig]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_kubeconfig_the_workload_cluster_refuses_is_rotated() {
    let env = Env::start().await;
    env.apply(&export("ops", json!({"name": "edge-kubeconfig"}), "Orphan"))
        .await;
    let first = env
        .wait("OmniKubeconfigExport", "ops", "Ready=True", |o| {
            is(o, "Ready", "True", "Exported")
        })
        .await;
    let hash = first["status"]["kubeconfigHash"]
        .as_str()
        .expect("hash")
        .to_string();

    // The cluster is recreated under the same name: its UUID changes, so Omni's proxy answers 401 to the stored
    // token although it has not expired (the case the Go operator's probe was added for).
    let mut uuid = env
        .omni
        .state()
        .get("default", CLUSTER_UUIDS, CLUSTER)
        .expect("uuid");
    let spec = omni_wire::specs::ClusterUuid {
        uuid: "0f0e0d0c-0000-4000-8000-000000000001".into(),
    };
    uuid.spec = Some(omni_wire::cosi::Spec {
        proto_spec: prost::Message::encode_to_vec(&spec),
        yaml_spec: String::new(),
    });
    let owner = omni_sim::store::md(&uuid).owner.clone();
    env.omni
        .state()
        .update_as(uuid, &owner, None)
        .expect("the cluster's new UUID");
    env.touch_secret(
        NS,
        "edge-kubeconfig",
        json!({"metadata": {"labels": {"touched": "1"}}}),
    )
    .await;
    let after = env
        .wait("OmniKubeconfigExport", "ops", "a rotation", |o| {
            o["status"]["kubeconfigHash"] != hash.as_str()
        })
        .await;
    assert!(is(&after, "Ready", "True", "Exported"));
    assert_eq!(env.kubeconfig_rpcs(), 2);
    let kubeconfig = data(
        &env.secret(NS, "edge-kubeconfig").expect("Secret"),
        "kubeconfig",
    );
    workload_client(&kubeconfig)
        .await
        .apiserver_version()
        .await
        .expect("the new token is accepted");

    // Orphan: deleting the export leaves the Secret.
    env.delete("OmniKubeconfigExport", "omnikubeconfigexports", "ops")
        .await;
    env.wait_until("the export to go", || {
        env.get("OmniKubeconfigExport", "ops").is_null()
    })
    .await;
    assert!(
        env.secret(NS, "edge-kubeconfig").is_some(),
        "Orphan keeps the Secret"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_someone_else_owns_is_never_modified_or_deleted() {
    let env = Env::start().await;
    // Someone else's Secret in another namespace, at the name the export asks for.
    env.apply(&json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "theirs", "namespace": "automation", "labels": {"owner": "them"}},
        "type": "Opaque", "stringData": {"kubeconfig": "their-precious-value", "other": "x"}}))
        .await;
    let before = env.secret("automation", "theirs").expect("theirs");
    env.apply(&export(
        "ops",
        json!({"name": "theirs", "namespace": "automation"}),
        "Delete",
    ))
    .await;
    let refused = env
        .wait("OmniKubeconfigExport", "ops", "ExportFailed", |o| {
            is(o, "Ready", "False", "ExportFailed")
        })
        .await;
    let text = message(&refused, "Ready");
    assert!(text.starts_with("target Secret \"automation/theirs\" exists and is not managed by this OmniKubeconfigExport"), "{text}");
    assert_eq!(
        env.kubeconfig_rpcs(),
        0,
        "no token is minted for a Secret that cannot be written"
    );

    // Renaming the target to a free name writes there; the unowned previous target is not cleaned up.
    let mut renamed = export(
        "ops",
        json!({"name": "mine", "namespace": "automation"}),
        "Delete",
    );
    renamed["spec"]["targetSecretRef"]["key"] = json!("config");
    env.apply(&renamed).await;
    env.wait("OmniKubeconfigExport", "ops", "Ready=True", |o| {
        is(o, "Ready", "True", "Exported")
    })
    .await;
    assert!(!data(&env.secret("automation", "mine").expect("mine"), "config").is_empty());

    // A key change rewrites the owned Secret and drops the old key.
    let mut rekeyed = renamed.clone();
    rekeyed["spec"]["targetSecretRef"]["key"] = json!("value");
    env.apply(&rekeyed).await;
    env.wait("OmniKubeconfigExport", "ops", "the new key", |o| {
        o["status"]["targetSecretKey"] == "value"
    })
    .await;
    let mine = env.secret("automation", "mine").expect("mine");
    assert!(
        mine["data"].get("config").is_none(),
        "the old key is removed: {:#}",
        mine["data"]
    );

    // Deleting the export (policy Delete) deletes its own Secret and never theirs.
    env.delete("OmniKubeconfigExport", "omnikubeconfigexports", "ops")
        .await;
    env.wait_until("the export to go", || {
        env.get("OmniKubeconfigExport", "ops").is_null()
    })
    .await;
    assert!(env.secret("automation", "mine").is_none());
    let after = env.secret("automation", "theirs").expect("theirs survives");
    assert_eq!(
        after["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"],
        "theirs was never written"
    );
}

// ---------------------------------------------------------------------------------------------------------------
// OmniSecretSync.

/// An export that the syncs use as their kubeconfig, Ready.
async fn exported(env: &Env) {
    env.apply(&export(
        "sync-access",
        json!({"name": "edge-access"}),
        "Delete",
    ))
    .await;
    env.wait("OmniKubeconfigExport", "sync-access", "Ready=True", |o| {
        is(o, "Ready", "True", "Exported")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_mirrors_data_and_type_into_the_workload_cluster_and_follows_changes() {
    let env = Env::start().await;
    exported(&env).await;
    env.apply(&json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "registry", "namespace": NS, "labels": {"source-only": "yes"}},
        "type": "Opaque", "stringData": {"a": "registry-value-alpha", "b": "registry-value-beta"}}))
        .await;
    env.apply(&sync(
        "registry",
        "edge-access",
        "registry",
        "apps",
        "Delete",
    ))
    .await;
    let done = env
        .wait("OmniSecretSync", "registry", "Ready=True", |o| {
            is(o, "Ready", "True", "Synced")
        })
        .await;
    assert_eq!(
        message(&done, "Ready"),
        "synced Secret \"registry\" to workload Secret \"apps/registry\""
    );
    let target = env
        .workload_secret("apps", "registry")
        .expect("the workload Secret");
    assert_eq!(data(&target, "a"), b"registry-value-alpha");
    assert_eq!(target["type"], "Opaque");
    assert!(
        target["metadata"]["labels"].get("source-only").is_none(),
        "source labels are not copied"
    );
    assert_eq!(target["metadata"]["labels"]["team"], "platform");
    assert_eq!(
        target["metadata"]["labels"]["omni.texashpc.com/secret-sync-uid"],
        done["metadata"]["uid"]
    );
    assert_eq!(
        annotation(&target, "omni.texashpc.com/secret-sync-source"),
        "platform/registry"
    );
    assert_eq!(
        annotation(&target, "omni.texashpc.com/secret-sync-content"),
        "v1"
    );
    // The Go operator's content hash, computed independently here.
    let go_hash = sha256_hex(br#"{"version":"v1","type":"Opaque","data":{"a":"cmVnaXN0cnktdmFsdWUtYWxwaGE=","b":"cmVnaXN0cnktdmFsdWUtYmV0YQ=="}}"#);
    let go_hash = go_hash.as_str();
    assert_eq!(
        annotation(&target, "omni.texashpc.com/secret-sync-hash"),
        go_hash
    );
    assert_eq!(done["status"]["secretHash"], go_hash);

    // A source change reaches the workload cluster (the Secret watch triggers the sync).
    env.touch_secret(
        NS,
        "registry",
        json!({"stringData": {"a": "registry-value-gamma"}}),
    )
    .await;
    env.wait_until("the new value in the workload cluster", || {
        env.workload_secret("apps", "registry")
            .is_some_and(|s| data(&s, "a") == b"registry-value-gamma")
    })
    .await;

    // A type change of an owned target recreates it: the type is immutable.
    let uid = env.workload_secret("apps", "registry").expect("target")["metadata"]["uid"].clone();
    let mut typed = sync("registry", "edge-access", "registry", "apps", "Delete");
    typed["spec"]["type"] = json!("example.com/registry");
    env.apply(&typed).await;
    env.wait_until("the recreated target", || {
        env.workload_secret("apps", "registry")
            .is_some_and(|s| s["type"] == "example.com/registry" && s["metadata"]["uid"] != uid)
    })
    .await;

    // Deleting the sync deletes its workload Secret; the namespace stays.
    env.delete("OmniSecretSync", "omnisecretsyncs", "registry")
        .await;
    env.wait_until("the sync and its target to go", || {
        env.get("OmniSecretSync", "registry").is_null()
            && env.workload_secret("apps", "registry").is_none()
    })
    .await;
    scan_for_leaks(
        &env,
        &[
            b"registry-value-alpha",
            b"registry-value-beta",
            b"registry-value-gamma",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_never_replaces_or_deletes_an_unowned_workload_secret_and_reports_forbidden() {
    let env = Env::start().await;
    exported(&env).await;
    env.apply(&json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token", "namespace": NS}, "type": "Opaque", "stringData": {"t": "new"}})).await;
    env.workload.apply(&json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token", "namespace": "apps"}, "type": "Opaque", "stringData": {"t": "theirs"}})).await.expect("theirs");
    let before = env.workload_secret("apps", "token").expect("theirs");
    env.apply(&sync("token", "edge-access", "token", "apps", "Delete"))
        .await;
    let refused = env
        .wait("OmniSecretSync", "token", "SyncFailed", |o| {
            is(o, "Ready", "False", "SyncFailed")
        })
        .await;
    assert!(
        message(&refused, "Ready").starts_with(
            "workload Secret \"apps/token\" exists and is not managed by this OmniSecretSync"
        ),
        "{}",
        message(&refused, "Ready")
    );
    env.delete("OmniSecretSync", "omnisecretsyncs", "token")
        .await;
    env.wait_until("the sync to go", || {
        env.get("OmniSecretSync", "token").is_null()
    })
    .await;
    let after = env
        .workload_secret("apps", "token")
        .expect("theirs survives");
    assert_eq!(
        after["metadata"]["resourceVersion"],
        before["metadata"]["resourceVersion"]
    );

    // RBAC: the exported user may not write Secrets in `locked`: a real 403, reported.
    env.apply(&sync("locked", "edge-access", "token", "locked", "Delete"))
        .await;
    let forbidden = env
        .wait("OmniSecretSync", "locked", "SyncFailed", |o| {
            is(o, "Ready", "False", "SyncFailed")
        })
        .await;
    assert!(
        message(&forbidden, "Ready").contains("forbidden"),
        "{}",
        message(&forbidden, "Ready")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_sync_whose_kubeconfig_is_gone_waits_a_bounded_time_and_orphan_releases_it_at_once()
 {
    let env = Env::start().await;
    exported(&env).await;
    env.apply(&json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "cfg", "namespace": NS}, "type": "Opaque", "stringData": {"k": "v"}})).await;
    for name in ["bounded", "escaped"] {
        let mut s = sync(name, "edge-access", "cfg", "apps", "Delete");
        s["spec"]["targetSecretRef"]["name"] = json!(name);
        env.apply(&s).await;
        env.wait("OmniSecretSync", name, "Ready=True", |o| {
            is(o, "Ready", "True", "Synced")
        })
        .await;
    }
    // The kubeconfig goes first, as when its export (policy Delete) is pruned in the same change.
    env.delete(
        "OmniKubeconfigExport",
        "omnikubeconfigexports",
        "sync-access",
    )
    .await;
    env.wait_until("the exported kubeconfig to go", || {
        env.secret(NS, "edge-access").is_none()
    })
    .await;
    env.delete("OmniSecretSync", "omnisecretsyncs", "bounded")
        .await;
    env.delete("OmniSecretSync", "omnisecretsyncs", "escaped")
        .await;
    let waiting = env
        .wait("OmniSecretSync", "bounded", "DeleteFailed", |o| {
            is(o, "Ready", "False", "DeleteFailed")
        })
        .await;
    let text = message(&waiting, "Ready");
    assert!(
        text.contains("kubeconfig Secret \"platform/edge-access\" does not exist")
            && text.contains("deletionPolicy: Orphan"),
        "{text}"
    );

    // The documented escape: switching to Orphan releases the finalizer at once, leaving the workload Secret.
    let client = env.kube.client().await.expect("client");
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("omni.texashpc.com", "v1alpha1", "OmniSecretSync"),
        "omnisecretsyncs",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client, NS, &ar);
    api.patch(
        "escaped",
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"deletionPolicy": "Orphan"}})),
    )
    .await
    .expect("escape");
    env.wait_until("the escaped sync to go", || {
        env.get("OmniSecretSync", "escaped").is_null()
    })
    .await;
    assert!(
        env.workload_secret("apps", "escaped").is_some(),
        "Orphan leaves the target"
    );

    // The bound: ten minutes after deletion started the finalizer is released (the next trigger after that).
    assert!(
        !env.get("OmniSecretSync", "bounded").is_null(),
        "still waiting within the bound"
    );
    env.clock.advance(Duration::from_secs(11 * 60));
    env.touch_secret(NS, "cfg", json!({"metadata": {"labels": {"touched": "1"}}}))
        .await;
    env.wait_until("the bounded sync to go", || {
        env.get("OmniSecretSync", "bounded").is_null()
    })
    .await;
    assert!(
        env.workload_secret("apps", "bounded").is_some(),
        "the target is left in place"
    );
}

// ---------------------------------------------------------------------------------------------------------------
// The leak scan.

/// No kubeconfig, token or Secret value appears in any object's status or conditions, in Events, or in what the
/// host logged.
pub(super) async fn scan_for_leaks(env: &Env, values: &[&[u8]]) {
    let mut needles: Vec<String> = values
        .iter()
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect();
    for v in values {
        // Tokens inside kubeconfigs, and values as they are stored (base64).
        if let Ok(doc) = yaml_serde::from_slice::<Value>(v)
            && let Some(token) = doc["users"][0]["user"]["token"].as_str()
        {
            needles.push(token.to_string());
        }
        needles.push(base64::engine::general_purpose::STANDARD.encode(v));
    }
    let mut haystacks: BTreeMap<String, String> = BTreeMap::new();
    for kind in [
        "OmniKubeconfigExport",
        "OmniSecretSync",
        "OmniCluster",
        "OmniConnection",
        "OmniHelmRelease",
    ] {
        for o in env.kube.list(API, kind, Some(NS)) {
            haystacks.insert(
                format!("{kind} {} status", o["metadata"]["name"]),
                o["status"].to_string(),
            );
        }
    }
    for e in env
        .kube
        .list("v1", "Event", None)
        .into_iter()
        .chain(env.kube.list("events.k8s.io/v1", "Event", None))
    {
        haystacks.insert(format!("Event {}", e["metadata"]["name"]), e.to_string());
    }
    haystacks.insert(
        "logs".into(),
        String::from_utf8_lossy(&support::logs().lock().unwrap_or_else(|p| p.into_inner()))
            .into_owned(),
    );
    for needle in &needles {
        for (what, text) in &haystacks {
            assert!(
                !text.contains(needle.as_str()),
                "a secret value appears in {what}"
            );
        }
    }
}

/// The workload cluster of `dev` and the tests runs kube-sim's workload controllers, so what a plugin installs
/// there becomes Ready as on a real cluster; the management cluster runs none (no Nodes, no ReplicaSets).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workload_cluster_makes_deployments_available_and_the_management_cluster_runs_no_controllers()
 {
    let Stack { kube, workload, .. } = Stack::builder()
        .workload_cluster(Vec::new())
        .start()
        .await
        .expect("the simulators start");
    let workload = workload.expect("a workload cluster");
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n";
    for sim in [&workload, &kube] {
        sim.apply_yaml(deployment).await.expect("deployment");
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let d = workload.get("apps/v1", "Deployment", "default", "web");
        let available = d
            .as_ref()
            .and_then(|d| d["status"]["conditions"].as_array().cloned())
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Available" && c["status"] == "True")
            });
        if available && d.is_some_and(|d| d["status"]["readyReplicas"] == 2) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the workload cluster's Deployment never became available"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(workload.list("v1", "Node", None).len(), 1);
    assert!(kube.list("v1", "Node", None).is_empty());
    assert!(
        kube.list("apps/v1", "ReplicaSet", Some("default"))
            .is_empty()
    );
}
