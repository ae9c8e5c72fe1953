//! The environment every OmniHelmRelease end-to-end test runs in: the built-in plugin (the real component, its
//! default grants) in a real host, a management kube-sim, the real Helm worker with libhelm_c, and a workload
//! kube-sim with its workload controllers, so Deployments become ready (or, with kube-sim's `never-ready` image,
//! never do) and Helm test Pods succeed (or, with the charts' `testBehavior: fail` value, fail). Charts come from
//! a chart repository served on loopback.

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use omni_operator::capabilities::{ChartSources, HelmSettings};
use omni_operator::controllers::{self, Settings};
use omni_operator::helm::releases::Releases;
use omni_operator::helm::{HelmEngine, WorkerEngine, WorkerOptions};
use omni_operator::stack::{Host, HostBuilder};
use serde_json::{Value, json};

use super::helm_fixtures::{ChartRepo, chart_repo_with, lib};
use super::support;

pub const API: &str = "omni.texashpc.com/v1alpha1";
pub const NS: &str = "platform";
pub const KUBECONFIG: &str = "edge-kubeconfig";
/// Helm's waits in these tests are bounded by the objects' own `timeout`; this bounds the test's waits around
/// them, generously, so a slow machine is not a failure.
pub const WAIT: Duration = Duration::from_secs(150);
/// kube-sim's image that never becomes ready (tests/sim/kube workloads).
pub const NEVER_READY: &str = "kube-sim.invalid/never-ready";

/// Declared so the host stops before the simulators it talks to.
pub struct Env {
    pub _host: Host,
    pub engine: Arc<WorkerEngine>,
    pub kube: kube_sim::KubeSim,
    pub workload: kube_sim::KubeSim,
    pub repo: ChartRepo,
    pub metrics: Arc<controllers::metrics::Metrics>,
}

impl Env {
    pub async fn start() -> Env {
        Env::start_with(ChartSources::any()).await
    }

    pub async fn start_with(sources: ChartSources) -> Env {
        Env::start_forwarding(sources, None).await
    }

    /// [`Env::start_with`], with the host's Events also forwarded by `events`.
    pub async fn start_forwarding(
        sources: ChartSources,
        events: Option<Arc<controllers::notify::Forwarder>>,
    ) -> Env {
        let _ = support::logs();
        let kube = omni_operator::stack::management_cluster(kube_sim::KubeSim::builder())
            .await
            .expect("the management cluster");
        let workload = kube_sim::KubeSim::builder()
            .workloads(kube_sim::workloads::WorkloadOptions::default())
            .start()
            .await
            .expect("the workload cluster");
        let repo = chart_repo_with(&[
            ("cilium", "1.18.2"),
            ("metrics-server", "3.13.0"),
            ("tested", "1.0.0"),
        ])
        .await;
        for obj in [
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": KUBECONFIG, "namespace": NS},
                "stringData": {"kubeconfig": workload.kubeconfig(&workload.admin())}}),
            json!({"apiVersion": API, "kind": "OmniCluster", "metadata": {"name": "edge", "namespace": NS},
                "spec": {"connectionRef": {"name": "omni"}, "kubernetes": {"version": "v1.35.0"}, "talos": {"version": "v1.13.2"}}}),
        ] {
            kube.apply(&obj).await.expect("seed");
        }
        let engine = Arc::new(WorkerEngine::new(WorkerOptions {
            program: env!("CARGO_BIN_EXE_omni-operator").into(),
            lib: lib(),
            concurrency: 4,
            memory_limit: Some(omni_operator::helm::DEFAULT_WORKER_MEMORY),
            scratch_base: std::env::temp_dir(),
        }));
        let metrics = Arc::new(controllers::metrics::Metrics::default());
        let settings = Settings {
            metrics: metrics.clone(),
            helm: HelmSettings {
                releases: Arc::new(Releases::new(
                    Some(engine.clone() as Arc<dyn HelmEngine>),
                    "",
                )),
                sources,
                ..HelmSettings::default()
            },
            events_forwarder: events,
            ..Settings::default()
        };
        let host = HostBuilder::new(support::runtime().clone())
            .built_in(&["omni-helm-release"])
            .expect("the built-in plugin")
            .settings(settings)
            .start(kube.kubeconfig(&kube.admin()))
            .await
            .expect("the host starts");
        Env {
            _host: host,
            engine,
            kube,
            workload,
            repo,
            metrics,
        }
    }

    /// An OmniHelmRelease of the demo chart from the loopback repository, with `spec` merged over the defaults.
    pub fn release(&self, name: &str, spec: Value) -> Value {
        let mut obj = json!({"apiVersion": API, "kind": "OmniHelmRelease", "metadata": {"name": name, "namespace": NS},
            "spec": {"clusterRef": {"name": "edge"}, "kubeconfigSecretRef": {"name": KUBECONFIG},
                "namespace": "apps", "createNamespace": true,
                "chart": {"repository": self.repo.url, "chart": "demo", "version": "0.1.0"}}});
        merge(&mut obj["spec"], spec);
        obj
    }

    pub async fn apply(&self, obj: &Value) {
        self.kube.apply(obj).await.expect("apply");
    }

    pub fn get(&self, name: &str) -> Value {
        self.kube
            .get(API, "OmniHelmRelease", NS, name)
            .unwrap_or(Value::Null)
    }

    /// Polls until `done` holds for the object; on timeout fails with its status and the host's last log lines.
    pub async fn wait(&self, name: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let obj = self.get(name);
            if done(&obj) {
                return obj;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for OmniHelmRelease {name}: {what}\nstatus: {:#}\nlast log lines:\n{}",
                obj["status"],
                support::log_tail(60)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn wait_until(&self, what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + WAIT;
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The Events about the OmniHelmRelease `name`: (type, reason, note), one per occurrence (kube-rs' recorder
    /// folds repeats of one Event into its `series.count`).
    pub fn events(&self, name: &str) -> Vec<(String, String, String)> {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        self.kube
            .list("events.k8s.io/v1", "Event", Some(NS))
            .into_iter()
            .filter(|e| {
                e["regarding"]["name"] == name && e["regarding"]["kind"] == "OmniHelmRelease"
            })
            .flat_map(|e| {
                let times = e["series"]["count"].as_u64().unwrap_or(1).max(1) as usize;
                std::iter::repeat_n(
                    (text(&e["type"]), text(&e["reason"]), text(&e["note"])),
                    times,
                )
            })
            .collect()
    }

    /// Sets annotations on the OmniHelmRelease `name`.
    pub async fn annotate(&self, name: &str, annotations: Value) {
        let client = self.kube.client().await.expect("client");
        Api::<DynamicObject>::namespaced_with(client, NS, &resource())
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"metadata": {"annotations": annotations}})),
            )
            .await
            .expect("annotate");
    }

    /// Helm's release Secrets for `release` in the workload cluster, by revision.
    pub fn revisions(&self, release: &str) -> Vec<(u64, Value)> {
        let mut found: Vec<(u64, Value)> = self
            .workload
            .list("v1", "Secret", Some("apps"))
            .into_iter()
            .filter(|s| {
                s["metadata"]["labels"]["owner"] == "helm"
                    && s["metadata"]["labels"]["name"] == release
            })
            .filter_map(|s| {
                let v = s["metadata"]["labels"]["version"].as_str()?.parse().ok()?;
                Some((v, s))
            })
            .collect();
        found.sort_by_key(|(v, _)| *v);
        found
    }

    pub async fn delete(&self, name: &str) {
        let client = self.kube.client().await.expect("client");
        Api::<DynamicObject>::namespaced_with(client, NS, &resource())
            .delete(name, &DeleteParams::default())
            .await
            .expect("delete");
    }

    pub async fn patch_spec(&self, name: &str, spec: Value) {
        let client = self.kube.client().await.expect("client");
        Api::<DynamicObject>::namespaced_with(client, NS, &resource())
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"spec": spec})),
            )
            .await
            .expect("patch");
    }

    /// A change to the kubeconfig Secret, which re-triggers every release naming it (as a rotation by an
    /// OmniKubeconfigExport would).
    pub async fn touch_kubeconfig(&self, n: u32) {
        let client = self.kube.client().await.expect("client");
        let api: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client, NS);
        api.patch(
            KUBECONFIG,
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"annotations": {"rotated": n.to_string()}}})),
        )
        .await
        .expect("patch the kubeconfig Secret");
    }
}

pub fn resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("omni.texashpc.com", "v1alpha1", "OmniHelmRelease"),
        "omnihelmreleases",
    )
}

pub fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}

pub fn cond<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

pub fn is(obj: &Value, type_: &str, status: &str, reason: &str) -> bool {
    cond(obj, type_).is_some_and(|c| c["status"] == status && c["reason"] == reason)
}

pub fn message(obj: &Value, type_: &str) -> String {
    cond(obj, type_)
        .and_then(|c| c["message"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The release JSON Helm stored in one of its Secrets (base64 of gzip, inside the Secret's own base64).
pub fn stored_release(secret: &Value) -> Value {
    use std::io::Read as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let outer = b64
        .decode(secret["data"]["release"].as_str().expect("release key"))
        .expect("base64");
    let gz = b64.decode(outer).expect("Helm's base64");
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(gz.as_slice())
        .read_to_end(&mut json)
        .expect("gzip");
    serde_json::from_slice(&json).expect("JSON")
}
