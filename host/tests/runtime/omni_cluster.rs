//! OmniCluster end to end: the built-in plugins (real components, default grants and limits) in a real host,
//! reconciling the quickstart sample (the Go operator's `config/samples`, `examples/quickstart/`) in kube-sim
//! against omni-sim. Covers the OmniCluster controller and the template sync and delete algorithms of Omni's
//! client, read from what Omni was sent (omni-sim's RPC records) and what it holds (omni-sim's store).
//!
//! Every host runs on its own tokio runtime, so a test can kill it the way a crash would (every task dropped
//! at its next await) and start a fresh one against the same Kubernetes and Omni.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use kube::api::{Api, DeleteParams, DynamicObject};
use kube::core::{ApiResource, GroupVersionKind};
use omni_operator::defaults;
use omni_operator::runtime::CallLimits;
use omni_operator::stack::{Host, HostBuilder, Stack};
use omni_sim::store::md;
use omni_sim::types::{
    CLUSTERS, CONFIG_PATCHES, KUBERNETES_MANIFEST_GROUPS, LINKS, MACHINE_SET_NODES, MACHINE_SETS,
    MACHINE_STATUSES,
};
use omni_sim::{FaultAction, Matcher, OmniSim, RpcRecord, Store};
use omni_wire::specs;
use prost::Message as _;
use serde_json::{Value, json};

use super::support;

const API: &str = "omni.texashpc.com/v1alpha1";
const NS: &str = "omni-system";
const CLUSTER: &str = "edge-sample";
const CP_MACHINE: &str = "11111111-1111-4111-8111-111111111111";
const WORKER_MACHINE: &str = "22222222-2222-4222-8222-222222222222";
const KUBESPAN_PATCH: &str = "400-edge-sample-control-planes-control-plane-kubespan";
const WORKER_DISK_PATCH: &str = "000-cm-22222222-2222-4222-8222-222222222222-install-disk";
const WORKER_SET: &str = "edge-sample-gpu-workers";
/// How long a state may take to appear before the test gives up.
const WAIT: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------------------------------------------
// The sample and what it becomes in Omni.

/// The quickstart's cluster, control plane, workers and machines, as a newcomer applies them.
fn sample() -> Vec<Value> {
    [
        include_str!("../../../examples/quickstart/20-cluster.yaml"),
        include_str!("../../../examples/quickstart/30-machine-sets.yaml"),
        include_str!("../../../examples/quickstart/40-machines.yaml"),
    ]
    .iter()
    .flat_map(|yaml| kube_sim::yaml_documents(yaml).expect("the quickstart YAML parses"))
    .collect()
}

fn sample_object(kind: &str) -> Value {
    sample()
        .into_iter()
        .find(|o| o["kind"] == kind)
        .unwrap_or_else(|| panic!("the sample has an {kind}"))
}

/// The template resources the sample becomes, in the order Omni's template sync creates them (type rank: Cluster,
/// ConfigPatch, KubernetesManifestGroup, MachineSet, MachineSetNode; by ID within a type).
fn sample_creates() -> Vec<(String, String)> {
    [
        (CLUSTERS, CLUSTER),
        (
            CONFIG_PATCHES,
            "000-cm-11111111-1111-4111-8111-111111111111-install-disk",
        ),
        (CONFIG_PATCHES, WORKER_DISK_PATCH),
        (CONFIG_PATCHES, KUBESPAN_PATCH),
        (
            KUBERNETES_MANIFEST_GROUPS,
            "200-cluster-edge-sample-sample-namespace",
        ),
        (MACHINE_SETS, "edge-sample-control-planes"),
        (MACHINE_SETS, WORKER_SET),
        (MACHINE_SET_NODES, CP_MACHINE),
        (MACHINE_SET_NODES, WORKER_MACHINE),
    ]
    .iter()
    .map(|(t, id)| (t.to_string(), id.to_string()))
    .collect()
}

fn sample_resources() -> BTreeSet<(String, String)> {
    sample_creates().into_iter().collect()
}

fn key(type_: &str, id: &str) -> (String, String) {
    (type_.to_string(), id.to_string())
}

/// What templates own in Omni: every owner-less resource (controller-made status resources carry their
/// controller as owner).
fn template_resources(store: &Store) -> BTreeSet<(String, String)> {
    store
        .all()
        .iter()
        .map(md)
        .filter(|m| m.owner.is_empty())
        .map(|m| key(&m.r#type, &m.id))
        .collect()
}

/// Everything Omni holds, by (type, id).
fn all_resources(store: &Store) -> BTreeSet<(String, String)> {
    store
        .all()
        .iter()
        .map(md)
        .map(|m| key(&m.r#type, &m.id))
        .collect()
}

// ---------------------------------------------------------------------------------------------------------------
// What Omni was sent.

const WRITE_METHODS: [&str; 5] = [
    "Create",
    "Update",
    "Teardown",
    "TeardownAndDestroy",
    "Destroy",
];

/// The quoted value that follows `field` in a request's `Debug` rendering.
fn quoted_after<'a>(text: &'a str, field: &str) -> Option<&'a str> {
    let rest = &text[text.find(field)? + field.len()..];
    Some(&rest[..rest.find('"')?])
}

fn method(r: &RpcRecord) -> &str {
    r.method.rsplit('/').next().unwrap_or_default()
}

/// `<Method> <Type>(<id>)` of a call on one resource.
fn describe(r: &RpcRecord) -> String {
    let type_ = quoted_after(&r.request, "type: \"").unwrap_or("?");
    let id = quoted_after(&r.request, " id: \"").unwrap_or("?");
    format!("{} {type_}({id})", method(r))
}

fn is_write(r: &RpcRecord) -> bool {
    WRITE_METHODS.contains(&method(r))
}

/// Every write, whatever its answer, as `<Method> <Type>(<id>)`.
fn writes(records: &[RpcRecord]) -> Vec<String> {
    records
        .iter()
        .filter(|r| is_write(r))
        .map(describe)
        .collect()
}

/// The same, with a call repeated back to back (a teardown looked at again) counted once.
fn distinct_writes(records: &[RpcRecord]) -> Vec<String> {
    let mut out = writes(records);
    out.dedup();
    out
}

fn creates_of(resources: &[(String, String)]) -> Vec<String> {
    resources
        .iter()
        .map(|(t, id)| format!("Create {t}({id})"))
        .collect()
}

/// The OmniConnection controller's ping: a List of Clusters with no label query. Anything else came from
/// the OmniCluster plugin.
fn is_ping(r: &RpcRecord) -> bool {
    method(r) == "List" && r.request.contains(CLUSTERS) && r.request.contains("label_query: []")
}

// ---------------------------------------------------------------------------------------------------------------
// The host, Kubernetes and Omni.

/// Declared so the host stops before the simulators it talks to.
struct Env {
    host: Option<Host>,
    omni: OmniSim,
    kube: kube_sim::KubeSim,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Cond {
    status: String,
    reason: String,
    message: String,
    generation: i64,
}

impl Cond {
    fn is(&self, status: &str, reason: &str) -> bool {
        self.status == status && self.reason == reason
    }

    fn text(&self) -> (&str, &str, &str) {
        (&self.status, &self.reason, &self.message)
    }
}

fn cond(obj: &Value, type_: &str) -> Option<Cond> {
    let c = obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)?;
    let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
    Some(Cond {
        status: s("status"),
        reason: s("reason"),
        message: s("message"),
        generation: c["observedGeneration"].as_i64().unwrap_or(-1),
    })
}

fn synced_at(obj: &Value, generation: i64) -> bool {
    cond(obj, "Synced").is_some_and(|c| c.is("True", "Synced") && c.generation >= generation)
}

impl Env {
    /// kube-sim with the CRDs, omni-sim with an Operator key in a Secret and an OmniConnection to it, and a host.
    async fn start(omni: omni_sim::Builder, cluster_limits: Option<CallLimits>) -> Env {
        let Stack { kube, omni, .. } = Stack::builder()
            .omni(omni)
            .connection(NS, "omni-sample", "omni-service-account")
            .start()
            .await
            .expect("the simulators start");
        let mut env = Env {
            host: None,
            omni,
            kube,
        };
        env.restart_host(cluster_limits).await;
        env
    }

    /// One operator process: every built-in plugin and its controllers, on a runtime of its own.
    /// `cluster_limits` replaces the omni-cluster plugin's call limits (default: its built-in 20 s deadline).
    async fn restart_host(&mut self, cluster_limits: Option<CallLimits>) {
        let names: Vec<&str> = defaults::PLUGINS.iter().map(|p| p.name).collect();
        let host = HostBuilder::new(support::runtime().clone())
            .built_in_with(&names, |spec| match cluster_limits {
                Some(limits) if spec.name == "omni-cluster" => spec.limits(limits),
                _ => spec,
            })
            .expect("the built-in plugins")
            .start(self.kube.kubeconfig(&self.kube.admin()))
            .await
            .expect("the host starts");
        self.host = Some(host);
    }

    async fn apply(&self, obj: &Value) {
        self.kube.apply(obj).await.expect("apply");
    }

    async fn apply_sample(&self) {
        for obj in sample() {
            self.apply(&obj).await;
        }
    }

    async fn delete(&self, kind: &str, plural: &str, name: &str) {
        let client = self.kube.client().await.expect("client");
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("omni.texashpc.com", "v1alpha1", kind),
            plural,
        );
        let api: Api<DynamicObject> = Api::namespaced_with(client, NS, &ar);
        api.delete(name, &DeleteParams::default())
            .await
            .expect("delete");
    }

    /// The OmniCluster, or Null once it is gone.
    fn cluster(&self) -> Value {
        self.kube
            .get(API, "OmniCluster", NS, CLUSTER)
            .unwrap_or(Value::Null)
    }

    fn generation(&self) -> i64 {
        self.cluster()["metadata"]["generation"]
            .as_i64()
            .expect("a generation")
    }

    /// Polls the OmniCluster until `done` holds; on timeout, fails with its status and what Omni was sent.
    async fn wait(
        &self,
        what: &str,
        timeout: Duration,
        mut done: impl FnMut(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let obj = self.cluster();
            if done(&obj) {
                return obj;
            }
            if Instant::now() > deadline {
                panic!(
                    "timed out after {timeout:?} waiting for {what}\nOmniCluster status: {:#}\nOmni writes: {:#?}",
                    obj["status"],
                    writes(&self.omni.records())
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn wait_synced(&self, generation: i64) -> Value {
        self.wait(
            &format!("Synced=True at generation {generation}"),
            WAIT,
            |o| synced_at(o, generation),
        )
        .await
    }

    /// Waits until the host has reconciled every child of the sample to `Accepted=<status>`.
    async fn wait_children_accepted(&self, status: &str) {
        let deadline = Instant::now() + WAIT;
        let children: Vec<Value> = sample()
            .into_iter()
            .filter(|o| o["kind"] != "OmniCluster")
            .collect();
        let accepted = |child: &Value| {
            let name = child["metadata"]["name"].as_str().unwrap_or_default();
            let kind = child["kind"].as_str().unwrap_or_default();
            self.kube
                .get(API, kind, NS, name)
                .and_then(|o| cond(&o, "Accepted"))
                .is_some_and(|c| c.status == status)
        };
        while !children.iter().all(accepted) {
            assert!(
                Instant::now() < deadline,
                "the sample's children never became Accepted={status}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn records_since(&self, mark: usize) -> Vec<RpcRecord> {
        self.omni.records().split_off(mark)
    }

    fn store_version(&self, type_: &str, id: &str) -> String {
        md(&self
            .omni
            .state()
            .get("default", type_, id)
            .unwrap_or_else(|| panic!("Omni has {type_}({id})")))
        .version
        .clone()
    }

    /// Runs `kubectl get omniclusters` against kube-sim and returns the sample's row by column header.
    async fn kubectl_columns(&self) -> Vec<(String, String)> {
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        self.kube
            .write_kubeconfig(&kubeconfig, &self.kube.admin())
            .expect("kubeconfig");
        let output = tokio::task::spawn_blocking(move || {
            std::process::Command::new("kubectl")
                .arg("--kubeconfig")
                .arg(&kubeconfig)
                .args(["get", "omniclusters", "-n", NS])
                .output()
        })
        .await
        .expect("kubectl task")
        .expect("kubectl runs");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "kubectl failed: {}{stdout}",
            String::from_utf8_lossy(&output.stderr)
        );
        let mut lines = stdout.lines();
        let header = lines.next().expect("a header line");
        let row = lines
            .find(|l| l.starts_with(CLUSTER))
            .unwrap_or_else(|| panic!("no row for {CLUSTER}:\n{stdout}"));
        columns(header, row)
    }
}

/// Splits a `kubectl get` row at the header's column starts (headers may contain spaces: `OMNI CLUSTER`).
fn columns(header: &str, row: &str) -> Vec<(String, String)> {
    let mut starts = vec![0];
    let bytes = header.as_bytes();
    for i in 1..bytes.len() {
        // A column starts after a run of two or more spaces.
        if bytes[i] != b' ' && i >= 2 && bytes[i - 1] == b' ' && bytes[i - 2] == b' ' {
            starts.push(i);
        }
    }
    let cut = |text: &str, i: usize| {
        let from = starts[i].min(text.len());
        let to = starts
            .get(i + 1)
            .copied()
            .unwrap_or(text.len())
            .min(text.len());
        text[from..to].trim().to_string()
    };
    (0..starts.len())
        .map(|i| (cut(header, i), cut(row, i)))
        .collect()
}

fn quick() -> omni_sim::Builder {
    // Clusters and machine sets turn healthy as soon as Omni's controllers see them.
    OmniSim::builder().controller_delay(Duration::ZERO)
}

// ---------------------------------------------------------------------------------------------------------------
// 1. The first sync.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_sync_creates_the_template_in_omnis_order_and_the_cluster_turns_ready() {
    // Omni keeps the cluster "scaling up" for 3 s, so the status read right after the sync finds it not healthy.
    let env = Env::start(
        OmniSim::builder().controller_delay(Duration::from_secs(3)),
        None,
    )
    .await;
    // The children first, seen by the host, then the cluster: its first reconcile does the whole sync, so the
    // status shows that sync's output (a later no-op re-sync would report an empty output).
    for child in sample().into_iter().filter(|o| o["kind"] != "OmniCluster") {
        env.apply(&child).await;
    }
    env.wait_children_accepted("False").await;
    env.apply(&sample_object("OmniCluster")).await;
    let obj = env.wait_synced(1).await;

    // Every create, in type rank order; nothing else written.
    let records = env.omni.records();
    assert_eq!(writes(&records), creates_of(&sample_creates()));
    assert!(
        records
            .iter()
            .filter(|r| is_write(r))
            .all(|r| r.code == tonic::Code::Ok),
        "every create succeeded"
    );
    assert_eq!(template_resources(env.omni.state()), sample_resources());

    assert_eq!(
        cond(&obj, "Synced").expect("Synced").text(),
        ("True", "Synced", "template synced to Omni")
    );
    assert_eq!(
        cond(&obj, "Validated").expect("Validated").text(),
        (
            "True",
            "Validated",
            "rendered Omni cluster template is valid"
        )
    );
    assert_eq!(
        cond(&obj, "Ready").expect("Ready").text(),
        ("False", "StatusFailed", "cluster is not healthy")
    );
    for type_ in ["Synced", "Validated", "Ready"] {
        assert_eq!(
            cond(&obj, type_).expect("condition").generation,
            1,
            "{type_} observedGeneration"
        );
    }
    let status = &obj["status"];
    assert_eq!(status["observedGeneration"], 1);
    assert_eq!(status["clusterName"], CLUSTER);
    assert_eq!(status["connectionRef"], "omni-sample");
    assert_eq!(status["endpoint"], env.omni.endpoint());
    assert_eq!(status["controlPlaneRef"], "edge-sample-control-plane");
    assert_eq!(status["workersRefs"], json!(["edge-sample-workers"]));
    assert_eq!(
        status["machineRefs"],
        json!(["edge-sample-control-plane-0", "edge-sample-worker-0"])
    );
    let hash = status["templateHash"].as_str().expect("templateHash");
    assert!(
        hash.len() == 64
            && hash
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{hash}"
    );
    let synced_at = status["lastSyncTime"].as_str().expect("lastSyncTime");
    assert!(
        synced_at.len() == 20 && synced_at.ends_with('Z'),
        "RFC 3339 in seconds: {synced_at}"
    );
    assert_eq!(status["lastAttemptTime"], synced_at);
    // omnictl's output lines, one per create.
    let lines: Vec<String> = sample_creates()
        .iter()
        .map(|(t, id)| format!("* creating {t}({id})"))
        .collect();
    assert_eq!(status["lastSyncOutput"], lines.join("\n"));
    // Why it is not healthy (the Go operator's status output was always empty).
    let why = status["lastStatusOutput"]
        .as_str()
        .expect("lastStatusOutput");
    assert!(
        why.starts_with("cluster phase is SCALING_UP\ncluster is not ready"),
        "{why}"
    );
    assert_eq!(
        obj["metadata"]["finalizers"],
        json!(["omni.texashpc.com/finalizer"])
    );

    // Not healthy is looked at again soon (the plugin's 15 s recheck), not at the 5m syncInterval.
    let obj = env
        .wait("Ready=True", Duration::from_secs(30), |o| {
            cond(o, "Ready").is_some_and(|c| c.status == "True")
        })
        .await;
    assert_eq!(
        cond(&obj, "Ready").expect("Ready").text(),
        (
            "True",
            "Synced",
            "cluster template is synced and status was read from Omni"
        )
    );
    assert_eq!(obj["status"]["lastStatusOutput"], "");
    assert_eq!(
        writes(&env.omni.records()),
        creates_of(&sample_creates()),
        "the re-check wrote nothing"
    );

    let row = env.kubectl_columns().await;
    let expected = [
        ("NAME", CLUSTER),
        ("OMNI CLUSTER", CLUSTER),
        ("KUBERNETES", "v1.35.0"),
        ("TALOS", "v1.13.2"),
        ("SYNCED", "True"),
        ("READY", "True"),
        ("REASON", "Synced"),
    ];
    let shown: Vec<(&str, &str)> = row
        .iter()
        .take(expected.len())
        .map(|(h, v)| (h.as_str(), v.as_str()))
        .collect();
    assert_eq!(shown, expected, "kubectl get omniclusters: {row:?}");
    assert_eq!(row.last().map(|(h, _)| h.as_str()), Some("AGE"));
}

// ---------------------------------------------------------------------------------------------------------------
// 2. Re-syncing an unchanged template.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_sync_with_no_template_change_writes_nothing() {
    let env = Env::start(quick(), None).await;
    env.apply_sample().await;
    let first = env.wait_synced(1).await;
    let mark = env.omni.records().len();

    // A new generation whose template is the same: syncInterval is not part of the template.
    let mut cluster = sample_object("OmniCluster");
    cluster["spec"]["syncInterval"] = json!("6m");
    env.apply(&cluster).await;
    assert_eq!(env.generation(), 2);
    let obj = env.wait_synced(2).await;

    let since = env.records_since(mark);
    assert!(
        since
            .iter()
            .any(|r| describe(r) == format!("Get {CLUSTERS}({CLUSTER})")),
        "the new generation was compared with Omni, not skipped: {since:#?}"
    );
    assert_eq!(
        writes(&since),
        Vec::<String>::new(),
        "nothing differs, so nothing is written"
    );
    assert_eq!(obj["status"]["observedGeneration"], 2);
    assert_eq!(
        obj["status"]["templateHash"],
        first["status"]["templateHash"]
    );
    assert_eq!(obj["status"]["lastSyncOutput"], "");
    let (before, after) = (
        first["status"]["lastSyncTime"].as_str().expect("time"),
        obj["status"]["lastSyncTime"].as_str().expect("time"),
    );
    assert!(
        after >= before,
        "lastSyncTime {after} is not before {before}"
    );
    assert_eq!(template_resources(env.omni.state()), sample_resources());
}

// ---------------------------------------------------------------------------------------------------------------
// 3. A change updates only what changed.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_change_updates_only_that_config_patch_with_the_version_it_read() {
    let env = Env::start(quick(), None).await;
    env.apply_sample().await;
    let first = env.wait_synced(1).await;
    let version = env.store_version(CONFIG_PATCHES, KUBESPAN_PATCH);
    let mark = env.omni.records().len();

    let mut control_plane = sample_object("OmniControlPlane");
    control_plane["spec"]["patches"][0]["inline"]["machine"]["network"]["kubespan"]["enabled"] =
        json!(false);
    env.apply(&control_plane).await;
    let old_hash = first["status"]["templateHash"].clone();
    let obj = env
        .wait("Synced=True with the new template", WAIT, |o| {
            synced_at(o, 1) && o["status"]["templateHash"] != old_hash
        })
        .await;

    let since = env.records_since(mark);
    assert_eq!(
        writes(&since),
        [format!("Update {CONFIG_PATCHES}({KUBESPAN_PATCH})")]
    );
    let update = since.iter().find(|r| is_write(r)).expect("the update");
    assert_eq!(update.code, tonic::Code::Ok, "{}", update.message);
    assert_eq!(
        quoted_after(&update.request, "version: \""),
        Some(version.as_str()),
        "the update carried the version read"
    );
    let stored = env
        .omni
        .state()
        .get("default", CONFIG_PATCHES, KUBESPAN_PATCH)
        .expect("the patch");
    let spec =
        specs::ConfigPatchSpec::decode(stored.spec.as_ref().expect("spec").proto_spec.as_slice())
            .expect("ConfigPatchSpec");
    assert_eq!(
        spec.data,
        "machine:\n    network:\n        kubespan:\n            enabled: false\n"
    );
    assert_eq!(
        obj["status"]["lastSyncOutput"],
        format!("* updating {CONFIG_PATCHES}({KUBESPAN_PATCH})")
    );
    assert_eq!(template_resources(env.omni.state()), sample_resources());
}

// ---------------------------------------------------------------------------------------------------------------
// 4. Removing a worker set.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_the_workers_tears_down_their_machine_set_and_omni_cascades_the_node() {
    let env = Env::start(quick(), None).await;
    env.apply_sample().await;
    env.wait_synced(1).await;
    let mark = env.omni.records().len();

    // Without its OmniWorkers the worker machine is in no machine set: Omni's validation refuses the template,
    // and nothing is sent.
    env.delete("OmniWorkers", "omniworkers", "edge-sample-workers")
        .await;
    let obj = env
        .wait("Validated=False", WAIT, |o| {
            cond(o, "Validated").is_some_and(|c| c.status == "False")
        })
        .await;
    let refused = format!(
        "1 error occurred:\n\t* machine \"{WORKER_MACHINE}\" is not used in controlplane or workers\n\n"
    );
    assert_eq!(
        cond(&obj, "Validated").expect("Validated").text(),
        ("False", "ValidationFailed", refused.as_str())
    );
    assert_eq!(
        cond(&obj, "Synced").expect("Synced").text(),
        (
            "False",
            "ValidationFailed",
            format!("not synced: {refused}").as_str()
        )
    );
    assert_eq!(writes(&env.records_since(mark)), Vec::<String>::new());
    assert_eq!(template_resources(env.omni.state()), sample_resources());

    // With the machine gone too, the set goes: phase A (the MachineSet; its node is Omni's to remove) is finished
    // before phase B (the machine's install-disk patch) starts.
    env.delete("OmniMachine", "omnimachines", "edge-sample-worker-0")
        .await;
    let mut seen_waiting = None;
    let obj = env
        .wait("Synced=True without the workers", WAIT, |o| {
            if let Some(c) = cond(o, "Synced").filter(|c| c.reason == "Syncing") {
                seen_waiting = Some(c);
            }
            cond(o, "Synced").is_some_and(|c| c.status == "True")
                && o["status"]["workersRefs"] == json!([])
        })
        .await;
    let waiting =
        seen_waiting.expect("the teardown Omni holds with a finalizer is reported while it lasts");
    assert_eq!(
        waiting.text(),
        (
            "False",
            "Syncing",
            format!("waiting for Omni to finish tearing down {MACHINE_SETS}({WORKER_SET}) (finalizers: MachineSetStatusController)").as_str()
        )
    );
    assert_eq!(
        obj["status"]["machineRefs"],
        json!(["edge-sample-control-plane-0"])
    );

    // Omni's destroy controller or the operator destroys the released MachineSet, whichever comes first.
    let writes: Vec<String> = distinct_writes(&env.records_since(mark))
        .into_iter()
        .filter(|w| *w != format!("Destroy {MACHINE_SETS}({WORKER_SET})"))
        .collect();
    assert_eq!(
        writes,
        [
            format!("Teardown {MACHINE_SETS}({WORKER_SET})"),
            format!("Teardown {CONFIG_PATCHES}({WORKER_DISK_PATCH})"),
            format!("Destroy {CONFIG_PATCHES}({WORKER_DISK_PATCH})"),
        ]
    );
    let mut expected = sample_resources();
    for gone in [
        key(MACHINE_SETS, WORKER_SET),
        key(MACHINE_SET_NODES, WORKER_MACHINE),
        key(CONFIG_PATCHES, WORKER_DISK_PATCH),
    ] {
        expected.remove(&gone);
    }
    assert_eq!(template_resources(env.omni.state()), expected);
}

// ---------------------------------------------------------------------------------------------------------------
// 5. Suspend.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_cluster_is_not_synced_until_it_is_resumed() {
    let env = Env::start(quick(), None).await;
    env.apply_sample().await;
    env.wait_synced(1).await;

    let mut cluster = sample_object("OmniCluster");
    cluster["spec"]["suspend"] = json!(true);
    env.apply(&cluster).await;
    env.wait("Ready=False/Suspended at generation 2", WAIT, |o| {
        cond(o, "Ready").is_some_and(|c| c.is("False", "Suspended") && c.generation == 2)
    })
    .await;
    let mark = env.omni.records().len();

    cluster["spec"]["kubernetes"]["version"] = json!("v1.36.0");
    env.apply(&cluster).await;
    let obj = env
        .wait("Ready=False/Suspended at generation 3", WAIT, |o| {
            cond(o, "Ready").is_some_and(|c| c.is("False", "Suspended") && c.generation == 3)
        })
        .await;
    let suspended = ("False", "Suspended", "remote Omni sync is suspended");
    assert_eq!(cond(&obj, "Ready").expect("Ready").text(), suspended);
    assert_eq!(cond(&obj, "Synced").expect("Synced").text(), suspended);
    assert_eq!(
        cond(&obj, "Validated").expect("Validated").text(),
        (
            "True",
            "Validated",
            "rendered Omni cluster template is valid"
        )
    );
    // Suspended: no Omni call at all (the connection controller's pings aside).
    let calls: Vec<String> = env
        .records_since(mark)
        .iter()
        .filter(|r| !is_ping(r))
        .map(describe)
        .collect();
    assert_eq!(calls, Vec::<String>::new());
    let stored = env
        .omni
        .state()
        .get("default", CLUSTERS, CLUSTER)
        .expect("the cluster");
    let spec =
        specs::ClusterSpec::decode(stored.spec.as_ref().expect("spec").proto_spec.as_slice())
            .expect("ClusterSpec");
    assert_eq!(spec.kubernetes_version, "1.35.0");

    let version = env.store_version(CLUSTERS, CLUSTER);
    cluster["spec"]["suspend"] = json!(false);
    env.apply(&cluster).await;
    env.wait_synced(4).await;
    let since = env.records_since(mark);
    assert_eq!(writes(&since), [format!("Update {CLUSTERS}({CLUSTER})")]);
    let update = since.iter().find(|r| is_write(r)).expect("the update");
    assert_eq!(update.code, tonic::Code::Ok, "{}", update.message);
    assert_eq!(
        quoted_after(&update.request, "version: \""),
        Some(version.as_str())
    );
    let stored = env
        .omni
        .state()
        .get("default", CLUSTERS, CLUSTER)
        .expect("the cluster");
    let spec =
        specs::ClusterSpec::decode(stored.spec.as_ref().expect("spec").proto_spec.as_slice())
            .expect("ClusterSpec");
    assert_eq!(spec.kubernetes_version, "1.36.0");
}

// ---------------------------------------------------------------------------------------------------------------
// 6. Deletion.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_cluster_deletes_it_from_omni_and_omni_cascades_the_rest() {
    let env = Env::start(quick(), None).await;
    let before = all_resources(env.omni.state());
    env.apply_sample().await;
    env.wait_synced(1).await;
    let mark = env.omni.records().len();

    env.delete("OmniCluster", "omniclusters", CLUSTER).await;
    let mut seen_deleting = None;
    env.wait("the OmniCluster to be gone", WAIT, |o| {
        if let Some(c) = cond(o, "Ready").filter(|c| c.reason == "Deleting") {
            seen_deleting = Some(c);
        }
        o.is_null()
    })
    .await;
    let deleting = seen_deleting
        .expect("Omni holding the cluster with its finalizer is reported while it lasts");
    assert_eq!(
        deleting.text(),
        ("False", "Deleting", format!("waiting for Omni to finish tearing down {CLUSTERS}({CLUSTER}) (finalizers: ClusterController)").as_str())
    );
    // Only the Cluster is torn down (Omni's cascade removes the rest); Omni's destroy controller or the operator
    // destroys it.
    let writes: Vec<String> = distinct_writes(&env.records_since(mark))
        .into_iter()
        .filter(|w| *w != format!("Destroy {CLUSTERS}({CLUSTER})"))
        .collect();
    assert_eq!(writes, [format!("Teardown {CLUSTERS}({CLUSTER})")]);
    // The cluster, its template resources and the status resources Omni made for them are all gone.
    assert_eq!(all_resources(env.omni.state()), before);
}

/// A GitOps prune of the whole template at once (issue "GitOps safety", Deliver 4): the machines, workers and
/// control plane are deleted before the cluster, without waiting, so the children are gone while the cluster's
/// remote deletion runs. The deletion completes from what the cluster knows, and Omni is left with nothing of
/// it: no half-deleted template.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruning_a_cluster_and_its_children_at_once_deletes_it_from_omni_completely() {
    let env = Env::start(quick(), None).await;
    let before = all_resources(env.omni.state());
    env.apply_sample().await;
    env.wait_synced(1).await;
    let mark = env.omni.records().len();

    // Children first, the cluster last: the worst order a prune can take.
    for obj in sample().iter().rev() {
        let kind = obj["kind"].as_str().expect("a kind");
        let plural = match kind {
            "OmniWorkers" => "omniworkers".to_string(),
            other => format!("{}s", other.to_lowercase()),
        };
        let name = obj["metadata"]["name"].as_str().expect("a name");
        env.delete(kind, &plural, name).await;
    }
    env.wait("the OmniCluster to be gone", WAIT, Value::is_null)
        .await;
    for obj in sample() {
        let (kind, name) = (
            obj["kind"].as_str().unwrap_or_default(),
            obj["metadata"]["name"].as_str().unwrap_or_default(),
        );
        let deadline = Instant::now() + WAIT;
        while env.kube.get(API, kind, NS, name).is_some() {
            assert!(Instant::now() < deadline, "{kind} {name} is never deleted");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let writes = distinct_writes(&env.records_since(mark));
    assert!(
        writes.contains(&format!("Teardown {CLUSTERS}({CLUSTER})")),
        "the cluster was torn down in Omni: {writes:#?}"
    );
    // The cluster, its template resources and the status resources Omni made for them are all gone.
    assert_eq!(all_resources(env.omni.state()), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orphaned_cluster_stays_in_omni_when_its_object_is_deleted() {
    let env = Env::start(quick(), None).await;
    env.apply_sample().await;
    let mut cluster = sample_object("OmniCluster");
    cluster["spec"]["deletePolicy"] = json!({"orphan": true});
    env.apply(&cluster).await;
    env.wait_synced(1).await;
    let mark = env.omni.records().len();

    env.delete("OmniCluster", "omniclusters", CLUSTER).await;
    env.wait("the OmniCluster to be gone", WAIT, Value::is_null)
        .await;
    assert_eq!(writes(&env.records_since(mark)), Vec::<String>::new());
    assert_eq!(template_resources(env.omni.state()), sample_resources());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn destroy_machines_removes_the_clusters_disconnected_machines_before_the_cluster() {
    const DISCONNECTED: &str = "33333333-3333-4333-8333-333333333333";
    const CONNECTED: &str = "44444444-4444-4444-8444-444444444444";
    let env = Env::start(quick(), None).await;
    let before = all_resources(env.omni.state());
    env.apply_sample().await;
    let mut cluster = sample_object("OmniCluster");
    cluster["spec"]["deletePolicy"] = json!({"destroyMachines": true});
    env.apply(&cluster).await;
    env.wait_synced(1).await;
    env.omni.add_machine(DISCONNECTED, Some(CLUSTER), true);
    env.omni.add_machine(CONNECTED, Some(CLUSTER), false);
    let mark = env.omni.records().len();

    env.delete("OmniCluster", "omniclusters", CLUSTER).await;
    env.wait("the OmniCluster to be gone", WAIT, Value::is_null)
        .await;
    let writes: Vec<String> = distinct_writes(&env.records_since(mark))
        .into_iter()
        .filter(|w| *w != format!("Destroy {CLUSTERS}({CLUSTER})"))
        .collect();
    // DestroyMachines: the disconnected machine's Link first (removing the machine), then the cluster.
    assert_eq!(
        writes,
        [
            format!("Teardown {LINKS}({DISCONNECTED})"),
            format!("Destroy {LINKS}({DISCONNECTED})"),
            format!("Teardown {CLUSTERS}({CLUSTER})"),
        ]
    );
    let mut expected = before;
    expected.extend([key(LINKS, CONNECTED), key(MACHINE_STATUSES, CONNECTED)]);
    assert_eq!(
        all_resources(env.omni.state()),
        expected,
        "the connected machine stays; everything else is gone"
    );
}

// ---------------------------------------------------------------------------------------------------------------
// 7–9. Faults.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn omni_unavailable_fails_the_sync_and_it_converges_by_itself_once_omni_is_back() {
    let env = Env::start(quick(), None).await;
    env.omni.faults().set_unavailable(true);
    env.apply_sample().await;
    let obj = env
        .wait("Synced=False", WAIT, |o| {
            cond(o, "Synced").is_some_and(|c| c.status == "False")
        })
        .await;
    let message = format!(
        "sync failed: error syncing template: get {CLUSTERS}({CLUSTER}): rpc error: code = Unavailable desc = omni-sim: unavailable (fault injected)"
    );
    assert_eq!(
        cond(&obj, "Synced").expect("Synced").text(),
        ("False", "SyncFailed", message.as_str())
    );
    assert_eq!(
        cond(&obj, "Ready").expect("Ready").text(),
        ("False", "SyncFailed", message.as_str())
    );
    assert_eq!(
        cond(&obj, "Validated").expect("Validated").text(),
        (
            "True",
            "Validated",
            "rendered Omni cluster template is valid"
        )
    );
    assert!(obj["status"]["lastAttemptTime"].is_string());
    assert!(obj["status"].get("lastSyncTime").is_none(), "never synced");
    assert_eq!(template_resources(env.omni.state()), BTreeSet::new());

    // No change to the object: the failure backoff brings the sync back.
    env.omni.faults().set_unavailable(false);
    let obj = env.wait_synced(1).await;
    assert_eq!(obj["metadata"]["generation"], 1);
    assert_eq!(template_resources(env.omni.state()), sample_resources());
    assert!(obj["status"]["lastSyncTime"].is_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_omni_is_synced_over_several_calls_without_duplicates() {
    // 250 ms per RPC: the reads alone take ~4 s and the creates ~2.3 s more, more than the 7 s deadline (minus
    // the 1.5 s the plugin keeps in reserve) of one call.
    let limits = CallLimits {
        timeout: Duration::from_secs(7),
        ..CallLimits::default()
    };
    let env = Env::start(quick(), Some(limits)).await;
    env.omni.faults().latency("*", Duration::from_millis(250));
    env.apply_sample().await;
    let mut syncing = None;
    let mut ready_reasons = BTreeSet::new();
    env.wait(
        "Synced=True despite the latency",
        Duration::from_secs(60),
        |o| {
            if let Some(c) = cond(o, "Synced").filter(|c| c.reason == "Syncing") {
                syncing = Some(c);
            }
            if let Some(c) = cond(o, "Ready") {
                ready_reasons.insert(c.reason);
            }
            synced_at(o, 1)
        },
    )
    .await;
    let syncing = syncing.expect("a call that ran out of time says so and commits its progress");
    assert_eq!(
        syncing.text(),
        (
            "False",
            "Syncing",
            "this reconcile ran out of time; the next one continues"
        )
    );
    assert!(
        !ready_reasons.contains("PluginTimeout") && !ready_reasons.contains("ReconcileTimeout"),
        "{ready_reasons:?}"
    );

    let records = env.omni.records();
    assert_eq!(
        writes(&records),
        creates_of(&sample_creates()),
        "each resource created once, in order, across the calls"
    );
    assert!(
        records
            .iter()
            .filter(|r| is_write(r))
            .all(|r| r.code == tonic::Code::Ok)
    );
    assert_eq!(template_resources(env.omni.state()), sample_resources());
}

/// A partial failure inside one sync: Omni refuses the first MachineSet create while the writes before it
/// succeeded. The sync reports the refusal; the next one (the failure backoff, no change to the object) creates
/// exactly what is still missing, so every resource is created once and nothing is left over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_refused_partway_is_completed_by_the_next_without_duplicates() {
    let env = Env::start(quick(), None).await;
    env.omni.faults().inject(
        Matcher::method_type("Create", MACHINE_SETS),
        FaultAction::Error {
            code: tonic::Code::Unavailable,
            message: "machine sets are unavailable (fault injected)".into(),
        },
        Some(1),
    );
    let mark = env.omni.records().len();
    env.apply_sample().await;
    let obj = env
        .wait("Synced=False", WAIT, |o| {
            cond(o, "Synced").is_some_and(|c| c.status == "False")
        })
        .await;
    let text = cond(&obj, "Synced").expect("Synced").text().2.to_string();
    assert!(
        text.contains("machine sets are unavailable (fault injected)"),
        "{text}"
    );
    let obj = env.wait_synced(1).await;
    assert_eq!(obj["metadata"]["generation"], 1);
    let since = env.records_since(mark);
    let refused: Vec<&RpcRecord> = since
        .iter()
        .filter(|r| is_write(r) && r.code != tonic::Code::Ok)
        .collect();
    assert_eq!(refused.len(), 1, "{refused:#?}");
    // Every template resource created once, in all: none twice, none missing.
    let mut created: Vec<String> = since
        .iter()
        .filter(|r| is_write(r) && r.code == tonic::Code::Ok)
        .map(describe)
        .collect();
    let mut wanted = creates_of(&sample_creates());
    created.sort();
    wanted.sort();
    assert_eq!(created, wanted);
    assert_eq!(template_resources(env.omni.state()), sample_resources());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_killed_mid_sync_is_completed_by_the_next_one() {
    let mut env = Env::start(quick(), None).await;
    let slow_create = Duration::from_millis(300);
    env.omni.faults().inject(
        Matcher::method("Create"),
        FaultAction::Latency(slow_create),
        None,
    );
    env.apply_sample().await;
    env.omni
        .wait_for(WAIT, |store| template_resources(store).len() >= 2)
        .await
        .expect("the first creates reach Omni");
    env.host.take().expect("the host").kill();
    // A create the killed host had in flight is answered or dropped within its latency.
    tokio::time::sleep(slow_create * 3).await;
    let survived = template_resources(env.omni.state());
    assert!(
        survived.len() >= 2 && survived.len() < sample_resources().len(),
        "killed mid-sync: {survived:?}"
    );
    assert!(
        !synced_at(&env.cluster(), 1),
        "the killed host never reported the sync done"
    );

    env.omni.faults().clear();
    let mark = env.omni.records().len();
    env.restart_host(None).await;
    env.wait_synced(1).await;

    // The new host creates exactly what is missing, and nothing is left over or twice in Omni.
    let missing: Vec<(String, String)> = sample_creates()
        .into_iter()
        .filter(|k| !survived.contains(k))
        .collect();
    let since = env.records_since(mark);
    assert_eq!(writes(&since), creates_of(&missing));
    assert!(
        since
            .iter()
            .filter(|r| is_write(r))
            .all(|r| r.code == tonic::Code::Ok),
        "{:#?}",
        since.iter().filter(|r| is_write(r)).collect::<Vec<_>>()
    );
    assert_eq!(template_resources(env.omni.state()), sample_resources());
}

mod plan;
