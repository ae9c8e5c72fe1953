//! The generated CRDs, installed into kube-sim (which validates like kube-apiserver), accept what the Go
//! operator's CRDs accept, default what they default, and reject what they reject with the same field
//! paths and messages.

mod common;

use common::{NAMESPACE, api, apply_all_fixtures, cluster_with_crds};
use kube::api::{Patch, PatchParams, PostParams};
use kube_sim::KubeSim;
use serde_json::{Value, json};

/// The smallest object of each kind a user can write.
fn minimal(kind: &str) -> Value {
    let spec = match kind {
        "OmniConnection" => json!({
            "endpoint": "https://omni.example.com",
            "auth": {"serviceAccountSecretRef": {"name": "omni-service-account"}}
        }),
        "OmniCluster" => json!({
            "connectionRef": {"name": "omni"},
            "kubernetes": {"version": "v1.35.0", "manifests": [{"name": "ns", "inline": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}]}]},
            "talos": {"version": "v1.13.2"}
        }),
        "OmniControlPlane" => {
            json!({"clusterRef": {"name": "edge"}, "machines": ["11111111-1111-4111-8111-111111111111"]})
        }
        "OmniWorkers" => {
            json!({"clusterRef": {"name": "edge"}, "machineClass": {"name": "pool", "size": 2}})
        }
        "OmniMachine" => json!({"clusterRef": {"name": "edge"}}),
        "OmniHelmRelease" => json!({
            "clusterRef": {"name": "edge"},
            "kubeconfigSecretRef": {"name": "edge-kubeconfig"},
            "chart": {"repository": "https://charts.example.com", "chart": "app", "version": "1.0.0"}
        }),
        "OmniKubeconfigExport" => json!({
            "clusterRef": {"name": "edge"},
            "targetSecretRef": {"name": "edge-kubeconfig"},
            "serviceAccount": {"user": "automation", "groups": ["platform:deployers"]},
            "ttl": "24h",
            "deletionPolicy": "Delete"
        }),
        "OmniSecretSync" => json!({
            "clusterRef": {"name": "edge"},
            "kubeconfigSecretRef": {"name": "edge-kubeconfig"},
            "sourceSecretRef": {"name": "registry"},
            "targetSecretRef": {"name": "registry", "namespace": "apps"},
            "deletionPolicy": "Orphan"
        }),
        other => panic!("no minimal {other}"),
    };
    json!({
        "apiVersion": "omni.texashpc.com/v1alpha1",
        "kind": kind,
        "metadata": {"name": format!("minimal-{}", kind.to_lowercase()), "namespace": NAMESPACE},
        "spec": spec
    })
}

/// `base` with the value at a JSON pointer replaced (`Some`) or removed (`None`).
fn with(mut base: Value, pointer: &str, value: Option<Value>) -> Value {
    let (parent, key) = pointer.rsplit_once('/').expect("pointer has a parent");
    let parent = base
        .pointer_mut(parent)
        .unwrap_or_else(|| panic!("{pointer}: no parent"));
    match (parent, value) {
        (Value::Object(map), Some(v)) => {
            map.insert(key.to_string(), v);
        }
        (Value::Object(map), None) => {
            map.remove(key);
        }
        (Value::Array(items), Some(v)) => items[key.parse::<usize>().expect("array index")] = v,
        (Value::Array(items), None) => {
            items.remove(key.parse::<usize>().expect("array index"));
        }
        (other, _) => panic!("{pointer}: parent is {other}"),
    }
    base
}

async fn rejection(sim: &KubeSim, obj: &Value) -> String {
    match sim.apply(obj).await {
        Ok(stored) => panic!("accepted, but should be rejected: {}", stored["spec"]),
        Err(e) => format!("{e:#}"),
    }
}

#[tokio::test]
async fn every_fixture_is_accepted() {
    let sim = cluster_with_crds().await;
    let stored = apply_all_fixtures(&sim).await;
    assert_eq!(stored.len(), common::all_fixtures().len());
}

#[tokio::test]
async fn the_server_fills_in_exactly_the_go_operator_defaults() {
    let sim = cluster_with_crds().await;
    // (kind, where a default appears, its value). Nothing else may be added: a defaulted `false` or `0`
    // would be a stored difference from the Go operator's objects.
    let defaults: [(&str, &[(&str, Value)]); 8] = [
        (
            "OmniConnection",
            &[(
                "/auth/serviceAccountSecretRef/key",
                json!("serviceAccountKey"),
            )],
        ),
        (
            "OmniCluster",
            &[
                ("/kubernetes/manifests/0/mode", json!("full")),
                ("/syncInterval", json!("5m")),
            ],
        ),
        ("OmniControlPlane", &[]),
        ("OmniWorkers", &[]),
        ("OmniMachine", &[]),
        (
            "OmniHelmRelease",
            &[
                ("/kubeconfigSecretRef/key", json!("kubeconfig")),
                ("/namespace", json!("default")),
                ("/deletionPolicy", json!("Uninstall")),
            ],
        ),
        (
            "OmniKubeconfigExport",
            &[("/targetSecretRef/key", json!("kubeconfig"))],
        ),
        (
            "OmniSecretSync",
            &[("/kubeconfigSecretRef/key", json!("kubeconfig"))],
        ),
    ];
    for (kind, expected) in defaults {
        let obj = minimal(kind);
        let mut want = obj["spec"].clone();
        for (pointer, value) in expected {
            want = with(
                json!({"spec": want}),
                &format!("/spec{pointer}"),
                Some(value.clone()),
            )["spec"]
                .clone();
        }
        let stored = sim
            .apply(&obj)
            .await
            .unwrap_or_else(|e| panic!("minimal {kind} rejected: {e:#}"));
        assert_eq!(
            stored["spec"], want,
            "{kind}: stored spec differs from the spec plus the Go defaults"
        );
    }
}

#[tokio::test]
async fn explicit_values_are_not_overwritten_by_defaults() {
    let sim = cluster_with_crds().await;
    let cluster = with(
        minimal("OmniCluster"),
        "/spec/kubernetes/manifests/0/mode",
        Some(json!("one-time")),
    );
    let cluster = with(cluster, "/spec/syncInterval", Some(json!("30s")));
    let stored = sim.apply(&cluster).await.expect("cluster accepted");
    assert_eq!(
        stored["spec"]["kubernetes"]["manifests"][0]["mode"],
        "one-time"
    );
    assert_eq!(stored["spec"]["syncInterval"], "30s");

    let connection = with(
        minimal("OmniConnection"),
        "/spec/auth/serviceAccountSecretRef/key",
        Some(json!("key.b64")),
    );
    let stored = sim.apply(&connection).await.expect("connection accepted");
    assert_eq!(
        stored["spec"]["auth"]["serviceAccountSecretRef"]["key"],
        "key.b64"
    );
}

#[tokio::test]
async fn invalid_objects_are_rejected_with_the_field_path_and_message() {
    let sim = cluster_with_crds().await;
    // (kind, JSON pointer, new value or None to remove it, expected text of the error)
    let cases: Vec<(&str, &str, Option<Value>, &str)> = vec![
        ("OmniConnection", "/spec", None, "spec: Required value"),
        (
            "OmniConnection",
            "/spec/endpoint",
            None,
            "spec.endpoint: Required value",
        ),
        (
            "OmniConnection",
            "/spec/endpoint",
            Some(json!("omni.example.com:443")),
            r#"spec.endpoint: Invalid value: "omni.example.com:443": spec.endpoint in body should match '^(https?|grpc)://.+'"#,
        ),
        (
            "OmniConnection",
            "/spec/auth",
            None,
            "spec.auth: Required value",
        ),
        (
            "OmniConnection",
            "/spec/auth/serviceAccountSecretRef/name",
            None,
            "spec.auth.serviceAccountSecretRef.name: Required value",
        ),
        (
            "OmniConnection",
            "/spec/auth/serviceAccountSecretRef/name",
            Some(json!("")),
            r#"spec.auth.serviceAccountSecretRef.name: Invalid value: "": spec.auth.serviceAccountSecretRef.name in body should be at least 1 chars long"#,
        ),
        (
            "OmniCluster",
            "/spec/connectionRef",
            None,
            "spec.connectionRef: Required value",
        ),
        (
            "OmniCluster",
            "/spec/talos",
            None,
            "spec.talos: Required value",
        ),
        (
            "OmniCluster",
            "/spec/kubernetes/version",
            Some(json!("1.35.0")),
            r#"spec.kubernetes.version: Invalid value: "1.35.0": spec.kubernetes.version in body should match '^v[0-9]+\.[0-9]+\.[0-9]+$'"#,
        ),
        (
            "OmniCluster",
            "/spec/talos/version",
            Some(json!("v1.13")),
            r#"spec.talos.version: Invalid value: "v1.13": spec.talos.version in body should match '^v[0-9]+\.[0-9]+\.[0-9]+$'"#,
        ),
        (
            "OmniCluster",
            "/spec/clusterName",
            Some(json!("edge cluster")),
            r#"spec.clusterName: Invalid value: "edge cluster": spec.clusterName in body should match '^[A-Za-z0-9_-]+$'"#,
        ),
        (
            "OmniCluster",
            "/spec/kubernetes/manifests/0/mode",
            Some(json!("always")),
            r#"spec.kubernetes.manifests[0].mode: Unsupported value: "always": supported values: "one-time", "full""#,
        ),
        (
            "OmniCluster",
            "/spec/kubernetes/manifests/0/name",
            None,
            "spec.kubernetes.manifests[0].name: Required value",
        ),
        (
            "OmniCluster",
            "/spec/features",
            Some(json!({"backupConfiguration": {}})),
            "spec.features.backupConfiguration.interval: Required value",
        ),
        (
            "OmniControlPlane",
            "/spec/machines",
            None,
            r#"spec: Invalid value: "object": exactly one of machines or machineClass is required"#,
        ),
        (
            "OmniControlPlane",
            "/spec/machineClass",
            Some(json!({"name": "pool", "size": 1})),
            r#"spec: Invalid value: "object": exactly one of machines or machineClass is required"#,
        ),
        (
            "OmniControlPlane",
            "/spec/machines",
            Some(json!([])),
            "spec.machines in body should have at least 1 items",
        ),
        (
            "OmniControlPlane",
            "/spec/clusterRef",
            None,
            "spec.clusterRef: Required value",
        ),
        (
            "OmniControlPlane",
            "/spec/bootstrapSpec",
            Some(json!({"clusterUUID": "7d7b1c2e-4f0a-4c7e-9a51-2b9f3c6d8e10"})),
            "spec.bootstrapSpec.snapshot: Required value",
        ),
        (
            "OmniWorkers",
            "/spec/machineClass",
            None,
            r#"spec: Invalid value: "object": exactly one of machines or machineClass is required"#,
        ),
        (
            "OmniWorkers",
            "/spec/machines",
            Some(json!(["22222222-2222-4222-8222-222222222222"])),
            r#"spec: Invalid value: "object": exactly one of machines or machineClass is required"#,
        ),
        (
            "OmniWorkers",
            "/spec/machineClass/size",
            None,
            "spec.machineClass.size: Required value",
        ),
        (
            "OmniWorkers",
            "/spec/machineClass/size",
            Some(json!(true)),
            "spec.machineClass.size in body must be of type integer,string",
        ),
        (
            "OmniWorkers",
            "/spec/workerSetName",
            Some(json!("gpu/workers")),
            r#"spec.workerSetName: Invalid value: "gpu/workers": spec.workerSetName in body should match '^[A-Za-z0-9_-]+$'"#,
        ),
        (
            "OmniWorkers",
            "/spec/updateStrategy",
            Some(json!({"type": "BlueGreen"})),
            r#"spec.updateStrategy.type: Unsupported value: "BlueGreen": supported values: "Rolling", "Unset""#,
        ),
        (
            "OmniWorkers",
            "/spec/upgradeStrategy",
            Some(json!({"type": "Rolling", "rolling": {"maxParallelism": 0}})),
            "spec.upgradeStrategy.rolling.maxParallelism: Invalid value: 0: spec.upgradeStrategy.rolling.maxParallelism in body should be greater than or equal to 1",
        ),
        (
            "OmniMachine",
            "/spec/install",
            Some(json!({})),
            "spec.install.disk: Required value",
        ),
        (
            "OmniMachine",
            "/spec/clusterRef/name",
            Some(json!("")),
            "spec.clusterRef.name in body should be at least 1 chars long",
        ),
        (
            "OmniHelmRelease",
            "/spec/chart",
            None,
            "spec.chart: Required value",
        ),
        (
            "OmniHelmRelease",
            "/spec/kubeconfigSecretRef",
            None,
            "spec.kubeconfigSecretRef: Required value",
        ),
        (
            "OmniHelmRelease",
            "/spec/namespace",
            Some(json!("")),
            "spec.namespace in body should be at least 1 chars long",
        ),
        (
            "OmniHelmRelease",
            "/spec/kubeconfigSecretRef/key",
            Some(json!("")),
            "spec.kubeconfigSecretRef.key in body should be at least 1 chars long",
        ),
        (
            "OmniHelmRelease",
            "/spec/maxHistory",
            Some(json!(-1)),
            "spec.maxHistory: Invalid value: -1: spec.maxHistory in body should be greater than or equal to 0",
        ),
        (
            "OmniHelmRelease",
            "/spec/deletionPolicy",
            Some(json!("Delete")),
            r#"spec.deletionPolicy: Unsupported value: "Delete": supported values: "Uninstall", "Orphan""#,
        ),
        (
            "OmniKubeconfigExport",
            "/spec/ttl",
            None,
            "spec.ttl: Required value",
        ),
        (
            "OmniKubeconfigExport",
            "/spec/deletionPolicy",
            None,
            "spec.deletionPolicy: Required value",
        ),
        (
            "OmniKubeconfigExport",
            "/spec/deletionPolicy",
            Some(json!("Uninstall")),
            r#"spec.deletionPolicy: Unsupported value: "Uninstall": supported values: "Delete", "Orphan""#,
        ),
        (
            "OmniKubeconfigExport",
            "/spec/serviceAccount/groups",
            Some(json!([])),
            "spec.serviceAccount.groups in body should have at least 1 items",
        ),
        (
            "OmniKubeconfigExport",
            "/spec/serviceAccount/groups",
            Some(json!(["viewers", "viewers"])),
            // A set is enforced while server-side apply builds the typed object, before validation.
            r#".spec.serviceAccount.groups: duplicate entries for key [="viewers"]"#,
        ),
        (
            "OmniKubeconfigExport",
            "/spec/serviceAccount/user",
            None,
            "spec.serviceAccount.user: Required value",
        ),
        (
            "OmniKubeconfigExport",
            "/spec/contextNamespace",
            Some(json!("Apps")),
            r#"spec.contextNamespace: Invalid value: "Apps": spec.contextNamespace in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'"#,
        ),
        (
            "OmniKubeconfigExport",
            "/spec/contextNamespace",
            Some(json!("a".repeat(64))),
            "spec.contextNamespace: Too long: may not be more than 63 bytes",
        ),
        (
            "OmniKubeconfigExport",
            "/spec/targetSecretRef/namespace",
            Some(json!("-apps")),
            r#"spec.targetSecretRef.namespace: Invalid value: "-apps""#,
        ),
        (
            "OmniSecretSync",
            "/spec/targetSecretRef/namespace",
            None,
            "spec.targetSecretRef.namespace: Required value",
        ),
        (
            "OmniSecretSync",
            "/spec/sourceSecretRef",
            None,
            "spec.sourceSecretRef: Required value",
        ),
        (
            "OmniSecretSync",
            "/spec/deletionPolicy",
            Some(json!("Retain")),
            r#"spec.deletionPolicy: Unsupported value: "Retain": supported values: "Delete", "Orphan""#,
        ),
    ];

    let mut failures = Vec::new();
    for (kind, pointer, value, want) in cases {
        let obj = with(minimal(kind), pointer, value.clone());
        let got = rejection(&sim, &obj).await;
        if !got.contains(want) {
            failures.push(format!(
                "{kind} {pointer} = {value:?}\n  want: {want}\n  got:  {got}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A wrong enum value on an OmniHelmRelease is refused with the one line the Go CRD gives: the kind carries no CEL
/// rule whose skipping the API server would add a second line about ("some validation rules were not checked").
/// The chart's repository, chart and version are the webhook's to require (unless `chart.git` is set).
#[tokio::test]
async fn a_helm_release_schema_error_is_the_go_crds_single_message() {
    let sim = cluster_with_crds().await;
    let bad = with(
        minimal("OmniHelmRelease"),
        "/spec/deletionPolicy",
        Some(json!("Purge")),
    );
    let got = rejection(&sim, &bad).await;
    assert!(
        got.ends_with(
            r#"is invalid: spec.deletionPolicy: Unsupported value: "Purge": supported values: "Uninstall", "Orphan""#
        ),
        "{got}"
    );
    assert!(!got.contains("validation rules"), "{got}");
    let unversioned = with(minimal("OmniHelmRelease"), "/spec/chart/version", None);
    sim.apply(&unversioned)
        .await
        .expect("the schema leaves the version to the webhook");
}

#[tokio::test]
async fn machine_class_size_is_int_or_string_at_the_schema_level() {
    // Which sizes make sense (> 0, or unlimited/infinity/∞) is the admission webhook's rule;
    // the schema only insists on an integer or a string, like the Go CRD.
    let sim = cluster_with_crds().await;
    for size in [
        json!(3),
        json!("unlimited"),
        json!("∞"),
        json!(0),
        json!("lots"),
    ] {
        let obj = with(
            minimal("OmniWorkers"),
            "/spec/machineClass/size",
            Some(size.clone()),
        );
        let stored = sim
            .apply(&obj)
            .await
            .unwrap_or_else(|e| panic!("size {size} rejected: {e:#}"));
        assert_eq!(stored["spec"]["machineClass"]["size"], size);
    }
}

#[tokio::test]
async fn free_form_fields_keep_unknown_content() {
    let sim = cluster_with_crds().await;
    apply_all_fixtures(&sim).await;
    let cluster = sim
        .get(
            omni_api::API_VERSION,
            "OmniCluster",
            NAMESPACE,
            "edge-sample",
        )
        .expect("stored cluster");
    let patch = &cluster["spec"]["patches"][0]["inline"]["machine"];
    assert_eq!(patch["sysctls"]["vm.max_map_count"], json!(262144));
    assert_eq!(patch["files"][0]["permissions"], json!(420));
    let quota = &cluster["spec"]["kubernetes"]["manifests"][0]["inline"][1]["spec"]["hard"];
    assert_eq!(quota["requests.storage"], json!(12345678901_i64));

    let release = sim
        .get(
            omni_api::API_VERSION,
            "OmniHelmRelease",
            NAMESPACE,
            "cilium",
        )
        .expect("stored release");
    assert_eq!(
        release["spec"]["chart"]["values"]["bpf"]["policyMapMax"],
        json!(16777216)
    );
    assert_eq!(release["spec"]["chart"]["values"]["extraConfig"], json!({}));
}

#[tokio::test]
async fn unknown_spec_fields_are_pruned_as_by_the_go_crd() {
    let sim = cluster_with_crds().await;
    let obj = with(
        minimal("OmniMachine"),
        "/spec/hostname",
        Some(json!("edge-0")),
    );
    let obj: kube::core::DynamicObject = serde_json::from_value(obj).expect("dynamic object");
    let stored = api(&sim, "OmniMachine")
        .await
        .create(&PostParams::default(), &obj)
        .await
        .expect("created");
    assert!(
        stored.data["spec"].get("hostname").is_none(),
        "spec.hostname should be pruned: {}",
        stored.data["spec"]
    );
}

#[tokio::test]
async fn status_conditions_follow_the_metav1_condition_schema() {
    let sim = cluster_with_crds().await;
    sim.apply(&minimal("OmniConnection"))
        .await
        .expect("connection accepted");
    let connections = api(&sim, "OmniConnection").await;
    let name = "minimal-omniconnection";
    let condition = |type_: &str, status: &str, reason: &str| json!({"type": type_, "status": status, "reason": reason, "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1});
    let patch = |conditions: Value| {
        Patch::Merge(json!({"status": {"observedGeneration": 1, "conditions": conditions}}))
    };

    connections
        .patch_status(
            name,
            &PatchParams::default(),
            &patch(json!([condition("Ready", "True", "ConnectionReady")])),
        )
        .await
        .expect("a valid Ready condition is stored");

    let bad = [
        (
            json!([condition("Ready", "Maybe", "ConnectionReady")]),
            r#"Unsupported value: "Maybe": supported values: "True", "False", "Unknown""#,
        ),
        (
            json!([condition("Ready", "True", "not a reason")]),
            "status.conditions[0].reason in body should match",
        ),
        (
            json!([condition("Ready", "True", "")]),
            "status.conditions[0].reason in body should be at least 1 chars long",
        ),
        (
            json!([
                condition("Ready", "True", "ConnectionReady"),
                condition("Ready", "False", "ConnectionFailed")
            ]),
            r#"status.conditions[1]: Duplicate value: map[string]interface {}{"type":"Ready"}"#,
        ),
        (
            json!([{"type": "Ready", "status": "True"}]),
            "status.conditions[0].reason: Required value",
        ),
    ];
    let mut failures = Vec::new();
    for (conditions, want) in bad {
        match connections
            .patch_status(name, &PatchParams::default(), &patch(conditions.clone()))
            .await
        {
            Ok(_) => failures.push(format!("accepted {conditions}")),
            Err(e) if e.to_string().contains(want) => {}
            Err(e) => failures.push(format!("{conditions}\n  want: {want}\n  got:  {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn kubectl_get_shows_the_printer_columns() {
    let sim = cluster_with_crds().await;
    apply_all_fixtures(&sim).await;
    let clusters = api(&sim, "OmniCluster").await;
    let ready = json!({"status": {"clusterName": "edge", "conditions": [{
        "type": "Ready", "status": "True", "reason": "Synced", "message": "cluster is synced",
        "lastTransitionTime": "2026-01-01T00:00:00Z"
    }, {
        "type": "Synced", "status": "True", "reason": "Synced", "message": "template synced to Omni",
        "lastTransitionTime": "2026-01-01T00:00:00Z"
    }]}});
    clusters
        .patch_status("edge-sample", &PatchParams::default(), &Patch::Merge(ready))
        .await
        .expect("status written");

    let client = sim.client().await.expect("kube client");
    let request = http::Request::get(format!(
        "/apis/omni.texashpc.com/v1alpha1/namespaces/{NAMESPACE}/omniclusters"
    ))
    .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
    .body(Vec::new())
    .expect("request");
    let table: Value = serde_json::from_str(&client.request_text(request).await.expect("table"))
        .expect("table JSON");
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(
        columns,
        [
            "Name",
            "Omni Cluster",
            "Kubernetes",
            "Talos",
            "Synced",
            "Ready",
            "Reason",
            "Age",
            "Message"
        ]
    );
    let cells = &table["rows"][0]["cells"];
    assert_eq!(cells[0], "edge-sample");
    assert_eq!(cells[1], "edge");
    assert_eq!(cells[2], "v1.35.0");
    assert_eq!(cells[3], "v1.13.2");
    assert_eq!(cells[4], "True");
    assert_eq!(cells[5], "True");
    assert_eq!(cells[6], "Synced");
    assert_eq!(cells[8], "cluster is synced");
}

#[test]
fn every_kind_is_in_the_omni_category_and_the_plugin_platforms_in_its_own() {
    for crd in omni_api::crds::all() {
        let category = if crd["spec"]["group"] == "plugins.omni.texashpc.com" {
            "omni-plugins"
        } else {
            "omni"
        };
        assert_eq!(
            crd["spec"]["names"]["categories"],
            json!([category]),
            "{}",
            crd["metadata"]["name"]
        );
        assert!(crd["spec"]["names"].get("shortNames").is_none());
    }
}
