//! What the API server stores decodes into the Rust types and encodes back unchanged: no field is lost,
//! free-form content (inline patches, manifests, Helm values) is kept as written and integers stay
//! integers (the Go operator turns large ones into floats).

mod common;

use common::{KINDS, NAMESPACE, api, apply_all_fixtures, cluster_with_crds};
use kube::api::{Patch, PatchParams};
use kube_sim::KubeSim;
use omni_api::{
    API_VERSION, IntOrString, KubernetesManifest, KubernetesSpec, LocalObjectReference,
    ManifestMode, Object, OmniCluster, OmniClusterSpec, OmniConnectionSpec, OmniControlPlaneSpec,
    OmniHelmReleaseSpec, OmniKind, OmniKubeconfigExportSpec, OmniMachineSpec, OmniSecretSyncSpec,
    OmniWorkers, OmniWorkersSpec, TalosSpec,
};
use serde_json::{Value, json};

fn round_trip<S: OmniKind>(stored: &Value) -> Value {
    let what = format!("{} {}", stored["kind"], stored["metadata"]["name"]);
    let typed: Object<S> =
        serde_json::from_value(stored.clone()).unwrap_or_else(|e| panic!("decoding {what}: {e}"));
    serde_json::to_value(&typed).unwrap_or_else(|e| panic!("encoding {what}: {e}"))
}

fn round_trip_any(stored: &Value) -> Value {
    match stored["kind"].as_str().unwrap_or_default() {
        "OmniConnection" => round_trip::<OmniConnectionSpec>(stored),
        "OmniCluster" => round_trip::<OmniClusterSpec>(stored),
        "OmniControlPlane" => round_trip::<OmniControlPlaneSpec>(stored),
        "OmniWorkers" => round_trip::<OmniWorkersSpec>(stored),
        "OmniMachine" => round_trip::<OmniMachineSpec>(stored),
        "OmniHelmRelease" => round_trip::<OmniHelmReleaseSpec>(stored),
        "OmniKubeconfigExport" => round_trip::<OmniKubeconfigExportSpec>(stored),
        "OmniSecretSync" => round_trip::<OmniSecretSyncSpec>(stored),
        other => panic!("not an Omni kind: {other}"),
    }
}

fn stored(sim: &KubeSim, kind: &str, name: &str) -> Value {
    sim.get(API_VERSION, kind, NAMESPACE, name)
        .unwrap_or_else(|| panic!("{kind} {name} is not stored"))
}

#[tokio::test]
async fn every_stored_fixture_decodes_and_encodes_back_unchanged() {
    let sim = cluster_with_crds().await;
    for obj in apply_all_fixtures(&sim).await {
        // Read back rather than use the apply response, so this is what watches and GETs deliver.
        let obj = stored(
            &sim,
            obj["kind"].as_str().unwrap_or_default(),
            obj["metadata"]["name"].as_str().unwrap_or_default(),
        );
        assert_eq!(
            round_trip_any(&obj),
            obj,
            "{} {} changed in a round trip",
            obj["kind"],
            obj["metadata"]["name"]
        );
    }
}

#[tokio::test]
async fn free_form_content_keeps_its_numbers() {
    let sim = cluster_with_crds().await;
    apply_all_fixtures(&sim).await;
    let cluster: OmniCluster = serde_json::from_value(stored(&sim, "OmniCluster", "edge-sample"))
        .expect("decoding the cluster");

    let inline = cluster
        .spec
        .patches
        .as_ref()
        .and_then(|p| p[0].inline.as_ref())
        .expect("inline patch");
    assert_eq!(
        inline["machine"]["sysctls"]["vm.max_map_count"].as_u64(),
        Some(262144)
    );
    assert_eq!(
        inline["machine"]["kubelet"]["extraArgs"]["max-pods"].as_u64(),
        Some(250)
    );
    let manifests = cluster
        .spec
        .kubernetes
        .manifests
        .as_ref()
        .expect("manifests");
    assert_eq!(
        manifests[0].mode,
        ManifestMode::Full,
        "defaulted by the server"
    );
    assert_eq!(manifests[1].mode, ManifestMode::OneTime);
    let quota = &manifests[0].inline.as_ref().expect("inline objects")[1]["spec"]["hard"];
    assert_eq!(quota["pods"].as_u64(), Some(1_000_000));
    assert_eq!(quota["requests.storage"].as_u64(), Some(12_345_678_901));
    let text = serde_json::to_string(&cluster).expect("encoding the cluster");
    assert!(
        text.contains(r#""requests.storage":12345678901"#),
        "large integers must not become floats: {text}"
    );

    let release: Object<OmniHelmReleaseSpec> =
        serde_json::from_value(stored(&sim, "OmniHelmRelease", "cilium"))
            .expect("decoding the release");
    let values = release.spec.chart.values.as_ref().expect("values");
    assert_eq!(values["bpf"]["policyMapMax"].as_u64(), Some(16_777_216));
    assert_eq!(values["bpf"]["mapDynamicSizeRatio"].as_f64(), Some(0.0025));
    assert_eq!(values["tolerations"], json!([]));
}

#[tokio::test]
async fn machine_class_sizes_decode_as_int_or_string() {
    let sim = cluster_with_crds().await;
    apply_all_fixtures(&sim).await;
    let size = |name: &str| {
        let workers: OmniWorkers =
            serde_json::from_value(stored(&sim, "OmniWorkers", name)).expect("decoding workers");
        workers
            .spec
            .machine_set
            .machine_class
            .expect("machine class")
            .size
    };
    assert_eq!(size("edge-sample-pool"), IntOrString::Int(3));
    assert_eq!(
        size("edge-sample-burst"),
        IntOrString::String("unlimited".into())
    );
}

/// A status with every field of the kind set, as the operator writes it.
fn full_status(kind: &str) -> Value {
    let t = "2026-03-01T12:00:00Z";
    let conditions = |types: &[&str]| -> Value {
        types
            .iter()
            .map(|ty| json!({"type": ty, "status": "True", "observedGeneration": 1, "lastTransitionTime": t, "reason": "Synced", "message": format!("{ty} ok")}))
            .collect()
    };
    let mut status = match kind {
        "OmniConnection" => json!({
            "conditions": conditions(&["Reachable", "Ready", "Stalled"]),
            "connectionRef": "omni-sample", "endpoint": "https://omni.example.com", "lastCheckTime": t
        }),
        "OmniCluster" => json!({
            "conditions": conditions(&["Ready", "Validated", "Synced"]),
            "connectionRef": "omni-sample", "endpoint": "https://omni.example.com",
            "clusterName": "edge-sample", "templateHash": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "lastAttemptTime": t, "lastSyncTime": t, "lastSyncOutput": "* updated Cluster(edge-sample)",
            "lastStatusOutput": "cluster is healthy", "controlPlaneRef": "edge-sample-control-plane",
            "workersRefs": ["edge-sample-workers", "edge-sample-pool"], "machineRefs": ["edge-sample-control-plane-0"]
        }),
        "OmniControlPlane" => {
            json!({"conditions": conditions(&["Accepted"]), "clusterRef": "edge-sample"})
        }
        "OmniWorkers" => {
            json!({"conditions": conditions(&["Accepted"]), "clusterRef": "edge-sample", "workerSetName": "gpu-workers"})
        }
        "OmniMachine" => {
            json!({"conditions": conditions(&["Accepted"]), "clusterRef": "edge-sample", "machineID": "11111111-1111-4111-8111-111111111111"})
        }
        "OmniHelmRelease" => json!({
            "conditions": conditions(&["Accepted", "Released", "Ready"]),
            "clusterRef": "edge-sample", "kubeconfigSecretRef": "edge-sample-kubeconfig", "kubeconfigSecretKey": "kubeconfig",
            "releaseName": "cilium", "namespace": "default", "chart": "cilium", "chartVersion": "1.18.2",
            "releaseRevision": 7, "releaseStatus": "deployed", "lastAction": "upgrade",
            "lastAttemptTime": t, "lastSuccessTime": t, "lastError": "context deadline exceeded"
        }),
        "OmniKubeconfigExport" => json!({
            "conditions": conditions(&["Accepted", "Exported", "Ready"]),
            "connectionRef": "omni-sample", "endpoint": "https://omni.example.com",
            "clusterRef": "edge-sample", "clusterName": "edge-sample", "targetSecretRef": "edge-sample-kubeconfig",
            "targetSecretNamespace": "platform", "targetSecretKey": "kubeconfig", "serviceAccountUser": "platform-automation",
            "serviceAccountGroups": ["platform:deployers", "platform:viewers"], "kubeconfigHash": "abc123",
            "expirationTime": "2026-03-31T12:00:00Z", "nextRotationTime": "2026-03-24T12:00:00Z", "lastRotationTime": t
        }),
        "OmniSecretSync" => json!({
            "conditions": conditions(&["Accepted", "Synced", "Ready"]),
            "clusterRef": "edge-sample", "kubeconfigSecretRef": "edge-sample-kubeconfig", "kubeconfigSecretKey": "kubeconfig",
            "sourceSecretRef": "registry-credentials", "targetSecretRef": "registry-credentials", "targetNamespace": "apps",
            "secretType": "kubernetes.io/dockerconfigjson", "secretHash": "def456",
            "lastAttemptTime": t, "lastSyncTime": t, "lastError": "namespace apps not found"
        }),
        other => panic!("not an Omni kind: {other}"),
    };
    status["observedGeneration"] = json!(1);
    status
}

#[tokio::test]
async fn statuses_with_every_field_decode_and_encode_back_unchanged() {
    let sim = cluster_with_crds().await;
    let objects = apply_all_fixtures(&sim).await;
    for kind in KINDS {
        let obj = objects
            .iter()
            .find(|o| o["kind"] == kind)
            .expect("a fixture of every kind");
        let name = obj["metadata"]["name"].as_str().unwrap_or_default();
        let status = full_status(kind);
        api(&sim, kind)
            .await
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": status})),
            )
            .await
            .unwrap_or_else(|e| panic!("writing the {kind} status: {e}"));

        let obj = stored(&sim, kind, name);
        assert_eq!(
            obj["status"], status,
            "{kind}: the server changed the status (a schema field is missing?)"
        );
        assert_eq!(
            round_trip_any(&obj),
            obj,
            "{kind} {name} with status changed in a round trip"
        );
    }
}

#[tokio::test]
async fn objects_built_in_rust_are_accepted() {
    let sim = cluster_with_crds().await;
    let cluster = OmniCluster::new(
        NAMESPACE,
        "from-rust",
        OmniClusterSpec {
            connection_ref: LocalObjectReference {
                name: "omni-sample".into(),
            },
            kubernetes: KubernetesSpec {
                version: "v1.35.0".into(),
                manifests: Some(vec![KubernetesManifest {
                    name: "apps".into(),
                    inline: Some(vec![
                        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}),
                    ]),
                    ..KubernetesManifest::default()
                }]),
            },
            talos: TalosSpec {
                version: "v1.13.2".into(),
            },
            ..OmniClusterSpec::default()
        },
    );
    let sent = serde_json::to_value(&cluster).expect("encoding");
    assert_eq!(sent["apiVersion"], API_VERSION);
    assert_eq!(sent["kind"], "OmniCluster");
    assert!(
        sent.get("status").is_none() && sent["spec"].get("suspend").is_none(),
        "unset fields are omitted: {sent}"
    );

    sim.apply(&sent)
        .await
        .expect("the Rust-built cluster is accepted");
    let back: OmniCluster =
        serde_json::from_value(stored(&sim, "OmniCluster", "from-rust")).expect("decoding");
    assert_eq!(back.spec.sync_interval.as_deref(), Some("5m"));
    assert_eq!(back.spec.kubernetes, cluster.spec.kubernetes);
    assert!(back.generation() >= 1 && back.metadata.uid.is_some());
}
