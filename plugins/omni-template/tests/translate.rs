//! Golden tests of the translation: for the Go operator's sample set and
//! for edge cases, the exact Omni resources — type, ID, labels, annotations and decoded spec — in emission order.
//! The expected text lives in `tests/golden/<name>.txt`; `UPDATE_GOLDEN=1` rewrites it (review the diff!).

mod support;

use omni_template::model::NoFiles;
use omni_template::translate::translate;
use serde_json::json;
use support::{Files, Objects, describe, sample};

fn golden(name: &str, actual: &str) {
    let path = format!("{}/tests/golden/{name}.txt", env!("CARGO_MANIFEST_DIR"));
    if std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1") {
        std::fs::write(&path, actual).expect("write golden");
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e} (UPDATE_GOLDEN=1 writes it)"));
    assert!(
        expected == actual,
        "{name} differs from {path}:\n--- expected\n{expected}\n--- actual\n{actual}"
    );
}

fn translated(objects: &Objects, files: &Files) -> String {
    let rendered = objects.render().expect("renders");
    describe(&translate(&rendered.template, files).expect("translates"))
}

const CP: &str = "11111111-1111-4111-8111-111111111111";
const W1: &str = "22222222-2222-4222-8222-222222222222";
const W2: &str = "33333333-3333-4333-8333-333333333333";

fn cluster(extra: serde_json::Value) -> serde_json::Value {
    let mut spec = json!({"connectionRef": {"name": "omni"}, "kubernetes": {"version": "v1.35.0"}, "talos": {"version": "v1.13.2"}});
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    spec
}

#[test]
fn the_go_operators_sample_set() {
    golden("sample", &translated(&sample(), &Files::new()));
}

#[test]
fn the_sample_sets_documents_render_to_the_template_yaml() {
    let rendered = sample().render().expect("renders");
    let yaml = omni_template::encode::to_yaml(&rendered.template);
    golden("sample-template", &yaml);
    assert_eq!(rendered.cluster_name, "edge-sample");
    assert_eq!(rendered.control_plane_ref, "edge-sample-control-plane");
    assert_eq!(rendered.workers_refs, ["edge-sample-workers"]);
    assert_eq!(
        rendered.machine_refs,
        ["edge-sample-control-plane-0", "edge-sample-worker-0"]
    );
}

#[test]
fn labels_annotations_and_extensions_at_every_level() {
    let objects = Objects::default()
        .cluster(
            "c1",
            cluster(json!({
                "labels": {"team": "edge", "a10": "x", "a2": "y"},
                "annotations": {"owner": "platform"},
                "systemExtensions": ["siderolabs/iscsi-tools"],
                "features": {"diskEncryption": true, "useEmbeddedDiscoveryService": true, "backupConfiguration": {"interval": "1h30m"}}
            })),
        )
        .control_plane("cp", json!({"clusterRef": {"name": "c1"}, "machines": [CP], "labels": {"tier": "cp"},
            "annotations": {"note": "first"}, "systemExtensions": ["siderolabs/gvisor"]}))
        .machine("m-cp", json!({"clusterRef": {"name": "c1"}, "machineID": CP, "labels": {"rack": "r1"},
            "annotations": {"serial": "s-1"}, "systemExtensions": ["siderolabs/nvidia"]}));
    golden("descriptors", &translated(&objects, &Files::new()));
}

#[test]
fn inline_file_and_string_patches_with_ids_and_weights() {
    let objects = Objects::default()
        .cluster(
            "c1",
            cluster(json!({"patches": [
                {"name": "first", "inline": {"machine": {"kubelet": {"extraArgs": {"max-pods": "200"}}}}},
                {"file": "patches/cluster.yaml", "labels": {"from": "file"}},
                {"idOverride": "900-custom", "name": "custom", "inline": [{"cluster": {"allowSchedulingOnControlPlanes": true}}, {"machine": {"sysctls": {"vm.max_map_count": "262144"}}}]},
                {"name": "verbatim", "inline": "machine:\n  network:\n    hostname: cp-1\n", "annotations": {"why": "string patch"}}
            ]})),
        )
        .control_plane("cp", json!({"clusterRef": {"name": "c1"}, "machines": [CP],
            "patches": [{"name": "a", "inline": {"machine": {"time": {"disabled": false}}}}, {"name": "b", "inline": {"machine": {"env": {"X": "1"}}}}]}))
        .machine("m", json!({"clusterRef": {"name": "c1"}, "machineID": CP, "patches": [{"name": "only", "inline": {"machine": {"network": {"hostname": "n1"}}}}]}));
    let files: Files = [(
        "patches/cluster.yaml".to_string(),
        Ok(b"machine:\n  install:\n    wipe: true\n".to_vec()),
    )]
    .into_iter()
    .collect();
    golden("patches", &translated(&objects, &files));
}

#[test]
fn numbers_stay_numbers_and_ambiguous_strings_stay_strings() {
    // The Go operator turned 1000000 into 1e+06 on its way through float64.
    let objects = Objects::default()
        .cluster("c1", cluster(json!({"patches": [{"name": "values", "inline": {"machine": {"kubelet": {"extraConfig": {
            "maxPods": 1000000, "imageGCHighThresholdPercent": 85, "cpuCFSQuotaPeriod": 1.5,
            "mode": "0755", "enabled": "yes", "off": "off", "version": "1.30", "empty": "", "tilde": "~", "colon": "a: b"
        }}}}}]})))
        .control_plane("cp", json!({"clusterRef": {"name": "c1"}, "machines": [CP]}));
    golden("numbers", &translated(&objects, &Files::new()));
}

#[test]
fn machine_classes_several_worker_sets_locked_machines_and_kernel_args() {
    let objects = Objects::default()
        .cluster("c1", cluster(json!({"kernelArgs": ["console=ttyS0"]})))
        .control_plane("cp", json!({"clusterRef": {"name": "c1"}, "machines": [CP]}))
        // Sorted by worker-set name: "batch" (metadata.name) before "gpu".
        .workers("w-gpu", json!({"clusterRef": {"name": "c1"}, "workerSetName": "gpu", "machines": [W1], "kernelArgs": ["nomodeset"],
            "deleteStrategy": {"type": "Rolling", "rolling": {"maxParallelism": 2}}, "updateStrategy": {"type": "Unset"}}))
        .workers("batch", json!({"clusterRef": {"name": "c1"}, "machines": [W2]}))
        .machine("locked", json!({"clusterRef": {"name": "c1"}, "machineID": W2, "locked": true, "kernelArgs": ["quiet"],
            "install": {"disk": "/dev/sda"}}));
    golden("machine-sets", &translated(&objects, &Files::new()));

    let classes = Objects::default()
        .cluster("c2", cluster(json!({})))
        .control_plane("cp", json!({"clusterRef": {"name": "c2"}, "machineClass": {"name": "cp-class", "size": 3}}))
        .workers("any", json!({"clusterRef": {"name": "c2"}, "machineClass": {"name": "big", "size": "unlimited"}}))
        .workers("inf", json!({"clusterRef": {"name": "c2"}, "machineClass": {"name": "big", "size": "∞"}}));
    golden("machine-classes", &translated(&classes, &Files::new()));
}

#[test]
fn cluster_kernel_args_with_a_machine_class_fail_translation() {
    let objects = Objects::default()
        .cluster("c1", cluster(json!({"kernelArgs": ["console=ttyS0"]})))
        .control_plane(
            "cp",
            json!({"clusterRef": {"name": "c1"}, "machineClass": {"name": "x", "size": 1}}),
        );
    let rendered = objects.render().expect("renders");
    assert_eq!(
        translate(&rendered.template, &NoFiles).expect_err("refused"),
        "kernelArgs cannot be defined at cluster level for this machine set since it uses a machine class"
    );
}

#[test]
fn duplicate_ids_fail_translation() {
    let objects = Objects::default()
        .cluster(
            "c1",
            cluster(json!({"patches": [
                {"idOverride": "same", "name": "a", "inline": {"machine": {}}},
                {"idOverride": "same", "name": "b", "inline": {"machine": {}}}
            ]})),
        )
        .control_plane(
            "cp",
            json!({"clusterRef": {"name": "c1"}, "machines": [CP]}),
        );
    let rendered = objects.render().expect("renders");
    assert_eq!(
        translate(&rendered.template, &NoFiles).expect_err("refused"),
        "resource ID duplicate ConfigPatches.omni.sidero.dev(default/same)"
    );
}

#[test]
fn manifests_from_files_and_one_time_mode() {
    let objects = Objects::default()
        .cluster("c1", cluster(json!({"kubernetes": {"version": "v1.35.0", "manifests": [
            {"name": "from-file", "mode": "one-time", "file": "manifests/ns.yaml"},
            {"name": "two-docs", "inline": [{"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "a"}},
                {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "b", "namespace": "a"}, "data": {"k": "line1\nline2\n"}}]}
        ]}})))
        .control_plane("cp", json!({"clusterRef": {"name": "c1"}, "machines": [CP]}));
    let files: Files = [(
        "manifests/ns.yaml".to_string(),
        Ok(b"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: from-file\n".to_vec()),
    )]
    .into_iter()
    .collect();
    golden("manifests", &translated(&objects, &files));
}

#[test]
fn render_refuses_duplicate_manifests_and_the_reserved_worker_set_name() {
    let dup = Objects::default()
        .cluster(
            "c1",
            cluster(json!({"kubernetes": {"version": "v1.35.0", "manifests": [
            {"name": "x", "inline": [{"kind": "A"}]}, {"name": "x", "inline": [{"kind": "B"}]}]}})),
        )
        .control_plane(
            "cp",
            json!({"clusterRef": {"name": "c1"}, "machines": [CP]}),
        );
    assert_eq!(
        dup.render().expect_err("refused"),
        "duplicate Kubernetes manifest name \"x\" for OmniCluster.spec.kubernetes.manifests[] conflicts with OmniCluster.spec.kubernetes.manifests[]"
    );
    let reserved = Objects::default()
        .cluster("c1", cluster(json!({})))
        .control_plane(
            "cp",
            json!({"clusterRef": {"name": "c1"}, "machines": [CP]}),
        )
        .workers(
            "control-planes",
            json!({"clusterRef": {"name": "c1"}, "machines": [W1]}),
        );
    assert_eq!(
        reserved.render().expect_err("refused"),
        "workers \"control-planes\" uses reserved workerSetName \"control-planes\""
    );
}

#[test]
fn cluster_name_overrides_and_versions_lose_their_v() {
    let objects = Objects::default()
        .cluster("k8s-object", cluster(json!({"clusterName": "omni-name", "kubernetes": {"version": "v1.34.1"}, "talos": {"version": "v1.12.0"}})))
        .control_plane("cp", json!({"clusterRef": {"name": "k8s-object"}, "machines": [CP]}));
    let out = translated(&objects, &Files::new());
    assert!(
        out.starts_with("Clusters.omni.sidero.dev(omni-name)\n"),
        "{out}"
    );
    assert!(
        out.contains("kubernetes_version: \"1.34.1\", talos_version: \"1.12.0\""),
        "{out}"
    );
    assert!(
        out.contains("MachineSets.omni.sidero.dev(omni-name-control-planes)"),
        "{out}"
    );
}
