//! A kube-sim cluster with the generated CRDs installed, and the fixture manifests.

#![allow(dead_code)] // each test binary uses a different part

use kube::Api;
use kube::core::{ApiResource, DynamicObject};
use kube_sim::KubeSim;
use serde_json::{Value, json};

/// Every fixture lives in this namespace, as the Go operator's CRs live in the operator's namespace.
pub const NAMESPACE: &str = "platform";

pub use omni_api::KINDS;

/// A fresh API server with all eight CRDs from `omni_api::crds::all()` and the fixtures' namespace.
pub async fn cluster_with_crds() -> KubeSim {
    let sim = KubeSim::start().await.expect("starting kube-sim");
    for crd in omni_api::crds::all() {
        let name = crd["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        sim.apply(&crd)
            .await
            .unwrap_or_else(|e| panic!("installing CRD {name}: {e:#}"));
    }
    sim.apply(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}))
        .await
        .expect("creating the fixtures' namespace");
    sim
}

/// The documents of `tests/fixtures/<kind in lower case>.yaml`.
pub fn fixtures(kind: &str) -> Vec<Value> {
    let path = format!(
        "{}/tests/fixtures/{}.yaml",
        env!("CARGO_MANIFEST_DIR"),
        kind.to_lowercase()
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    kube_sim::yaml_documents(&text).unwrap_or_else(|e| panic!("parsing {path}: {e:#}"))
}

pub fn all_fixtures() -> Vec<Value> {
    KINDS.iter().flat_map(|k| fixtures(k)).collect()
}

/// Applies every fixture and returns the objects as the server stored them.
pub async fn apply_all_fixtures(sim: &KubeSim) -> Vec<Value> {
    let mut stored = Vec::new();
    for obj in all_fixtures() {
        let what = format!("{} {}", obj["kind"], obj["metadata"]["name"]);
        stored.push(
            sim.apply(&obj)
                .await
                .unwrap_or_else(|e| panic!("{what} was rejected: {e:#}")),
        );
    }
    stored
}

/// A dynamic client for one kind in the fixtures' namespace (for the status subresource and tables).
pub async fn api(sim: &KubeSim, kind: &str) -> Api<DynamicObject> {
    let plural = if kind == "OmniWorkers" {
        "omniworkers".to_string()
    } else {
        format!("{}s", kind.to_lowercase())
    };
    let resource = ApiResource {
        group: omni_api::GROUP.into(),
        version: omni_api::VERSION.into(),
        api_version: omni_api::API_VERSION.into(),
        kind: kind.into(),
        plural,
    };
    Api::namespaced_with(
        sim.client().await.expect("kube client"),
        NAMESPACE,
        &resource,
    )
}
