//! Omni-like controllers, server validations and service-account kubeconfigs.

mod common;

use std::time::Duration;

use base64::Engine as _;
use common::*;
use omni_sim::{FaultAction, Matcher, OmniSim, Role, store::Store};
use omni_wire::management::KubeconfigRequest;
use omni_wire::specs;
use prost::Message as _;
use tonic::Code;

const CLUSTERS: &str = "Clusters.omni.sidero.dev";
const MACHINE_SETS: &str = "MachineSets.omni.sidero.dev";
const NODES: &str = "MachineSetNodes.omni.sidero.dev";
const PATCHES: &str = "ConfigPatches.omni.sidero.dev";
const CLUSTER: &str = "omni.sidero.dev/cluster";
const MS: &str = "omni.sidero.dev/machine-set";
const CP: &str = "omni.sidero.dev/role-controlplane";
const WORKER: &str = "omni.sidero.dev/role-worker";

fn err<T: std::fmt::Debug>(r: Result<T, tonic::Status>) -> (Code, String) {
    let e = r.expect_err("fails");
    (e.code(), e.message().to_string())
}

fn v1(msg: &str) -> String {
    format!("failed to validate: 1 error occurred:\n\t* {msg}\n\n")
}

fn spec<M: prost::Message + Default>(s: &Store, ty: &str, id: &str) -> Option<M> {
    s.get("default", ty, id)
        .map(|r| M::decode(r.spec.expect("spec").proto_spec.as_slice()).expect("decodes"))
}

async fn cluster_with_sets(c: &mut State) {
    create(
        c,
        res(CLUSTERS, "c1", &[], cluster_spec("1.10.3", "1.33.1")),
    )
    .await
    .expect("cluster");
    create(
        c,
        res(
            MACHINE_SETS,
            "c1-control-planes",
            &[(CLUSTER, "c1"), (CP, "")],
            vec![],
        ),
    )
    .await
    .expect("cp");
    create(
        c,
        res(
            MACHINE_SETS,
            "c1-workers",
            &[(CLUSTER, "c1"), (WORKER, "")],
            vec![],
        ),
    )
    .await
    .expect("workers");
    create(
        c,
        res(
            NODES,
            "m-cp",
            &[(CLUSTER, "c1"), (MS, "c1-control-planes"), (CP, "")],
            vec![],
        ),
    )
    .await
    .expect("cp node");
    create(
        c,
        res(
            NODES,
            "m-w",
            &[(CLUSTER, "c1"), (MS, "c1-workers"), (WORKER, "")],
            vec![],
        ),
    )
    .await
    .expect("worker node");
    create(
        c,
        res(
            PATCHES,
            "400-c1-patch",
            &[(CLUSTER, "c1")],
            specs::ConfigPatchSpec {
                data: "machine:\n  network: {}\n".into(),
                compressed_data: vec![],
            }
            .encode_to_vec(),
        ),
    )
    .await
    .expect("patch");
    create(
        c,
        res(
            PATCHES,
            "401-c1-workers-patch",
            &[(CLUSTER, "c1"), (MS, "c1-workers")],
            vec![],
        ),
    )
    .await
    .expect("ms patch");
}

#[tokio::test]
async fn a_created_cluster_gets_a_finalizer_uuid_and_statuses_and_becomes_running_and_ready() {
    let (sim, mut c, _) = setup().await;
    cluster_with_sets(&mut c).await;
    let s = sim.state();
    sim.wait_for(Duration::from_secs(5), |s| {
        spec::<specs::ClusterStatusSpec>(s, "ClusterStatuses.omni.sidero.dev", "c1").is_some_and(
            |st| st.ready && st.phase == specs::cluster_status_spec::Phase::Running as i32,
        )
    })
    .await
    .expect("cluster RUNNING and ready");
    let cl = get(&mut c, CLUSTERS, "c1").await.expect("cluster");
    assert_eq!(md(&cl).finalizers, ["ClusterController"]);
    let uuid = s
        .get("default", "ClusterUUIDs.omni.sidero.dev", "c1")
        .expect("uuid");
    let u = specs::ClusterUuid::decode(uuid.spec.as_ref().expect("spec").proto_spec.as_slice())
        .expect("uuid spec")
        .uuid;
    assert_eq!(
        md(&uuid).labels.get("omni.sidero.dev/cluster-uuid"),
        Some(&u)
    );
    let st: specs::ClusterStatusSpec =
        spec(s, "ClusterStatuses.omni.sidero.dev", "c1").expect("status");
    assert_eq!(
        (st.talos_version.as_str(), st.kubernetes_version.as_str()),
        ("1.10.3", "1.33.1")
    );
    let k8s = s
        .get("default", "KubernetesUpgradeStatuses.omni.sidero.dev", "c1")
        .expect("k8s upgrade status");
    assert_eq!(md(&k8s).labels.get(CLUSTER).map(String::as_str), Some("c1"));
    let talos = s
        .get("default", "TalosUpgradeStatuses.omni.sidero.dev", "c1")
        .expect("talos upgrade status");
    assert!(md(&talos).labels.is_empty(), "no cluster label in v1.9.3");
    assert!(
        s.get("default", "LoadBalancerStatuses.omni.sidero.dev", "c1")
            .is_some()
    );
    sim.wait_for(Duration::from_secs(5), |s| {
        spec::<specs::MachineSetStatusSpec>(s, "MachineSetStatuses.omni.sidero.dev", "c1-workers")
            .is_some_and(|m| m.ready)
    })
    .await
    .expect("machine set ready");
    let mss = s
        .get(
            "default",
            "MachineSetStatuses.omni.sidero.dev",
            "c1-workers",
        )
        .expect("mss");
    assert_eq!(
        md(&mss).labels.get(CLUSTER).map(String::as_str),
        Some("c1"),
        "copies the MachineSet labels"
    );
    assert_eq!(
        md(&get(&mut c, MACHINE_SETS, "c1-workers").await.expect("ms")).finalizers,
        ["MachineSetStatusController"]
    );
    assert!(
        s.get(
            "default",
            "ControlPlaneStatuses.omni.sidero.dev",
            "c1-control-planes"
        )
        .is_some()
    );
    assert!(
        s.get(
            "default",
            "ControlPlaneStatuses.omni.sidero.dev",
            "c1-workers"
        )
        .is_none()
    );
    let cms = s
        .get("default", "ClusterMachineStatuses.omni.sidero.dev", "m-w")
        .expect("cluster machine status");
    assert_eq!(
        md(&cms).labels.get(MS).map(String::as_str),
        Some("c1-workers")
    );
    // Controller-owned resources are read-only to clients.
    let mut status = get(&mut c, "ClusterStatuses.omni.sidero.dev", "c1")
        .await
        .expect("status");
    status
        .metadata
        .as_mut()
        .expect("md")
        .labels
        .insert("x".into(), "y".into());
    let (code, msg) = err(update(&mut c, status).await);
    assert_eq!(code, Code::PermissionDenied);
    assert!(
        msg.contains("is owned by \"ClusterStatusController\""),
        "{msg}"
    );
}

#[tokio::test]
async fn an_unhealthy_cluster_stays_scaling_up() {
    let sim = OmniSim::builder()
        .cluster_health(false)
        .controller_delay(Duration::from_millis(10))
        .start()
        .await
        .expect("starts");
    let key = sim.mint_key("op", Role::Operator);
    let mut c = state(channel(&sim).await, Signer::new(&key));
    create(
        &mut c,
        res(CLUSTERS, "c1", &[], cluster_spec("1.10.3", "1.33.1")),
    )
    .await
    .expect("cluster");
    sim.wait_for(Duration::from_secs(5), |s| {
        s.get("default", "ClusterStatuses.omni.sidero.dev", "c1")
            .is_some()
    })
    .await
    .expect("status");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let st: specs::ClusterStatusSpec =
        spec(sim.state(), "ClusterStatuses.omni.sidero.dev", "c1").expect("status");
    assert_eq!(
        (st.phase, st.ready),
        (specs::cluster_status_spec::Phase::ScalingUp as i32, false)
    );
    sim.set_cluster_health(true);
    sim.wait_for(Duration::from_secs(5), |s| {
        spec::<specs::ClusterStatusSpec>(s, "ClusterStatuses.omni.sidero.dev", "c1")
            .is_some_and(|st| st.ready)
    })
    .await
    .expect("turns ready");
}

#[tokio::test]
async fn tearing_down_a_cluster_cascades_to_its_machine_sets_nodes_and_patches() {
    let (sim, mut c, _) = setup().await;
    cluster_with_sets(&mut c).await;
    sim.wait_for(Duration::from_secs(5), |s| {
        s.get(
            "default",
            "MachineSetStatuses.omni.sidero.dev",
            "c1-workers",
        )
        .is_some()
    })
    .await
    .expect("statuses");
    let mut w = watch(&mut c, kind_watch(MACHINE_SETS, true, vec![]))
        .await
        .expect("watch");
    assert!(
        !teardown(&mut c, CLUSTERS, "c1").await.expect("teardown"),
        "ClusterController finalizer pending"
    );
    sim.wait_for(Duration::from_secs(10), |s| {
        s.all()
            .iter()
            .all(|r| md(r).r#type == "Links.omni.sidero.dev")
    })
    .await
    .expect("everything gone");
    // Workers were torn down before the control planes.
    let mut order = vec![];
    loop {
        let e = next(&mut w).await.expect("event");
        if kind(&e) == omni_wire::cosi::EventType::Updated
            && md(e.resource.as_ref().expect("r")).phase == "tearingDown"
            && !order.contains(&id(&e))
        {
            order.push(id(&e));
        }
        if order.len() == 2 {
            break;
        }
    }
    assert_eq!(order, ["c1-workers", "c1-control-planes"]);
}

#[tokio::test]
async fn tearing_down_a_link_removes_the_machine() {
    let (sim, mut c, _) = setup().await;
    sim.add_machine("m1", Some("c1"), true);
    sim.add_machine("m2", Some("c1"), false);
    let q = vec![omni_wire::cosi::LabelQuery {
        terms: vec![
            omni_wire::cosi::LabelTerm {
                key: "omni.sidero.dev/disconnected".into(),
                op: 0,
                value: vec![],
                invert: false,
            },
            omni_wire::cosi::LabelTerm {
                key: CLUSTER.into(),
                op: 1,
                value: vec!["c1".into()],
                invert: false,
            },
        ],
    }];
    let found = list(&mut c, "MachineStatuses.omni.sidero.dev", q, None)
        .await
        .expect("list");
    assert_eq!(
        found.iter().map(|r| md(r).id.as_str()).collect::<Vec<_>>(),
        ["m1"]
    );
    assert!(
        teardown(&mut c, "Links.omni.sidero.dev", "m1")
            .await
            .expect("teardown")
    );
    sim.wait_for(Duration::from_secs(5), |s| {
        s.get("default", "MachineStatuses.omni.sidero.dev", "m1")
            .is_none()
            && s.get("default", "Links.omni.sidero.dev", "m1").is_none()
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: {:#?}", sim.state().all()));
    assert!(
        sim.state()
            .get("default", "MachineStatuses.omni.sidero.dev", "m2")
            .is_some()
    );
}

#[tokio::test]
async fn cluster_validations_reject_bad_names_versions_and_locked_deletes() {
    let (sim, mut c, _) = setup().await;
    assert_eq!(
        err(create(
            &mut c,
            res(CLUSTERS, "bad name", &[], cluster_spec("1.10.3", "1.33.1"))
        )
        .await),
        (
            Code::InvalidArgument,
            v1("name should only contain letters, digits, dashes and underscores")
        )
    );
    let (code, msg) = err(create(
        &mut c,
        res(CLUSTERS, "c", &[], cluster_spec("1.2.3", "1.33.1")),
    )
    .await);
    assert_eq!(code, Code::InvalidArgument);
    assert!(
        msg.starts_with(
            "failed to validate: 1 error occurred:\n\t* invalid talos version \"1.2.3\": "
        ),
        "{msg}"
    );
    assert_eq!(
        err(create(
            &mut c,
            res(CLUSTERS, "c", &[], cluster_spec("1.10.3", "1.29.0"))
        )
        .await)
        .1,
        v1(
            "invalid kubernetes version \"1.29.0\": is not compatible with talos version \"1.10.3\""
        )
    );
    assert!(
        err(create(&mut c, res(CLUSTERS, "c", &[], cluster_spec("", ""))).await)
            .1
            .starts_with("failed to validate: 2 errors occurred:")
    );
    create(
        &mut c,
        res(CLUSTERS, "locked", &[], cluster_spec("1.11.0", "1.34.0")),
    )
    .await
    .expect("create");
    sim.state().modify("default", CLUSTERS, "locked", |r| {
        r.metadata
            .as_mut()
            .expect("md")
            .annotations
            .insert("omni.sidero.dev/cluster-locked".into(), String::new());
    });
    assert_eq!(
        err(teardown(&mut c, CLUSTERS, "locked").await),
        (
            Code::InvalidArgument,
            v1("deletion is not allowed: the cluster \"locked\" is locked")
        )
    );
    let mut cur = get(&mut c, CLUSTERS, "locked").await.expect("get");
    cur.spec.as_mut().expect("spec").proto_spec = cluster_spec("1.11.1", "1.34.0");
    assert_eq!(
        err(update(&mut c, cur).await).1,
        v1("updating cluster configuration is not allowed: the cluster \"locked\" is locked")
    );
}

#[tokio::test]
async fn machine_set_and_node_validations() {
    let (_sim, mut c, _) = setup().await;
    assert_eq!(
        err(create(
            &mut c,
            res(
                MACHINE_SETS,
                "c1-workers",
                &[(CLUSTER, "c1"), (WORKER, "")],
                vec![]
            )
        )
        .await),
        (
            Code::InvalidArgument,
            v1("the cluster \"c1\" does not exist")
        )
    );
    create(
        &mut c,
        res(CLUSTERS, "c1", &[], cluster_spec("1.10.3", "1.33.1")),
    )
    .await
    .expect("cluster");
    assert_eq!(
        err(create(
            &mut c,
            res(MACHINE_SETS, "c1-cp", &[(CLUSTER, "c1"), (CP, "")], vec![])
        )
        .await)
        .1,
        v1("control plane machine set must have ID \"c1-control-planes\"")
    );
    assert_eq!(
        err(create(
            &mut c,
            res(
                MACHINE_SETS,
                "x-workers",
                &[(CLUSTER, "c1"), (WORKER, "")],
                vec![]
            )
        )
        .await)
        .1,
        v1("machine set of cluster \"c1\" ID must have \"c1-\" as prefix")
    );
    assert_eq!(
        err(create(&mut c, res(MACHINE_SETS, "c1-w", &[(WORKER, "")], vec![])).await).1,
        v1("label \"omni.sidero.dev/cluster\" does not exist")
    );
    create(
        &mut c,
        res(
            MACHINE_SETS,
            "c1-a",
            &[(CLUSTER, "c1"), (WORKER, "")],
            vec![],
        ),
    )
    .await
    .expect("a");
    create(
        &mut c,
        res(
            MACHINE_SETS,
            "c1-b",
            &[(CLUSTER, "c1"), (WORKER, "")],
            vec![],
        ),
    )
    .await
    .expect("b");
    assert_eq!(
        err(create(
            &mut c,
            res(NODES, "m1", &[(CLUSTER, "c1"), (MS, "c1-missing")], vec![])
        )
        .await)
        .1,
        v1(
            "adding machine set node to the machine set \"c1-missing\" is not allowed: the machine set does not exist"
        )
    );
    let node = create(
        &mut c,
        res(
            NODES,
            "m1",
            &[(CLUSTER, "c1"), (MS, "c1-a"), (WORKER, "")],
            vec![],
        ),
    )
    .await
    .expect("node");
    let mut moved = node;
    moved
        .metadata
        .as_mut()
        .expect("md")
        .labels
        .insert(MS.into(), "c1-b".into());
    assert_eq!(
        err(update(&mut c, moved).await).1,
        v1(
            "changing value of label \"omni.sidero.dev/machine-set\" from \"c1-a\" to \"c1-b\" is not allowed"
        )
    );
}

#[tokio::test]
async fn config_patch_forbidden_fields_and_manifest_mode_are_rejected() {
    let (_sim, mut c, _) = setup().await;
    let patch = |data: &str| {
        specs::ConfigPatchSpec {
            data: data.into(),
            compressed_data: vec![],
        }
        .encode_to_vec()
    };
    assert_eq!(
        err(create(
            &mut c,
            res(PATCHES, "p", &[], patch("cluster:\n  clusterName: evil\n"))
        )
        .await),
        (
            Code::InvalidArgument,
            v1("overriding \"cluster.clusterName\" is not allowed in the config patch")
        )
    );
    create(
        &mut c,
        res(
            PATCHES,
            "ok",
            &[],
            patch("machine:\n  network:\n    hostname: a\n"),
        ),
    )
    .await
    .expect("valid patch");
    let mg = specs::KubernetesManifestGroupSpec {
        data: "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n".into(),
        mode: 0,
        ..Default::default()
    };
    assert_eq!(
        err(create(
            &mut c,
            res(
                "KubernetesManifestGroups.omni.sidero.dev",
                "200-cluster-c1-m",
                &[(CLUSTER, "c1")],
                mg.encode_to_vec()
            )
        )
        .await)
        .1,
        v1("the manifest should have mode field set")
    );
}

#[tokio::test]
async fn large_patches_are_stored_compressed_with_the_dictionary() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../../shared/data/omni/config.1.zdict"
    );
    let dict = omni_wire::compression::Dictionary::new(std::fs::read(path).expect("dictionary"))
        .expect("valid");
    let sim = OmniSim::builder()
        .zstd_dictionary(dict.clone())
        .start()
        .await
        .expect("starts");
    let key = sim.mint_key("op", Role::Operator);
    let mut c = state(channel(&sim).await, Signer::new(&key));
    let big = format!(
        "machine:\n    network:\n        kubespan:\n            enabled: true\n{}",
        "# padding so the patch passes the 2 KiB threshold\n".repeat(64)
    );
    let r = create(
        &mut c,
        res(
            PATCHES,
            "big",
            &[],
            specs::ConfigPatchSpec {
                data: big.clone(),
                compressed_data: vec![],
            }
            .encode_to_vec(),
        ),
    )
    .await
    .expect("create");
    let spec = r.spec.expect("spec");
    // Omni's ConfigPatchSpec.MarshalYAML renders the content decompressed, whatever is stored.
    let indented: String = big.lines().map(|l| format!("    {l}\n")).collect();
    assert_eq!(
        spec.yaml_spec,
        format!("data: |\n{indented}compresseddata: []\n")
    );
    let s = specs::ConfigPatchSpec::decode(spec.proto_spec.as_slice()).expect("spec");
    assert!(s.data.is_empty() && !s.compressed_data.is_empty());
    assert_eq!(
        dict.decompress(&s.compressed_data).expect("decompresses"),
        big.as_bytes()
    );
    // Compressed content is validated after decompression.
    let evil = format!("{big}cluster:\n    token: x\n");
    let compressed = dict.compress(evil.as_bytes()).expect("compress");
    let e = err(create(
        &mut c,
        res(
            PATCHES,
            "evil",
            &[],
            specs::ConfigPatchSpec {
                data: String::new(),
                compressed_data: compressed,
            }
            .encode_to_vec(),
        ),
    )
    .await);
    assert_eq!(
        e.1,
        v1("overriding \"cluster.token\" is not allowed in the config patch")
    );
}

/// Omni's COSI server answers every Create, Update, Get, List and Watch with `yaml_spec` set to go-yaml v3's
/// rendering of the typed spec it stored (cosi-project/runtime `protobuf.FromResource`: `yaml.Marshal(r.Spec())`
/// over the protoc-gen-go struct), never the client's text. The expected texts below are what that marshalling
/// writes for Omni's generated structs: Go field names lower-cased, declaration order, zero values written, unset
/// messages `null`, enums as numbers, indent 4.
#[tokio::test]
async fn replies_carry_omnis_yaml_rendering_of_the_stored_spec() {
    let (_sim, mut c, _) = setup().await;
    let mut cluster = res(
        CLUSTERS,
        "c1",
        &[],
        specs::ClusterSpec {
            kubernetes_version: "1.33.1".into(),
            talos_version: "1.10.3".into(),
            features: Some(specs::cluster_spec::Features {
                enable_workload_proxy: true,
                ..Default::default()
            }),
            backup_configuration: Some(specs::EtcdBackupConf {
                interval: Some(prost_types::Duration {
                    seconds: 3600,
                    nanos: 0,
                }),
                enabled: true,
            }),
        }
        .encode_to_vec(),
    );
    cluster.spec.as_mut().expect("spec").yaml_spec = "whatever: the client wrote\n".into();
    let created = create(&mut c, cluster).await.expect("cluster");
    let cluster_yaml = "kubernetesversion: 1.33.1\ntalosversion: 1.10.3\nfeatures:\n    enableworkloadproxy: true\n    \
        diskencryption: false\n    useembeddeddiscoveryservice: false\n    enablenodeauditskip: false\n\
        backupconfiguration:\n    interval:\n        seconds: 3600\n        nanos: 0\n    enabled: true\n";
    assert_eq!(created.spec.expect("spec").yaml_spec, cluster_yaml);
    assert_eq!(
        get(&mut c, CLUSTERS, "c1")
            .await
            .expect("get")
            .spec
            .expect("spec")
            .yaml_spec,
        cluster_yaml
    );

    let set = specs::MachineSetSpec {
        update_strategy: specs::machine_set_spec::UpdateStrategy::Rolling as i32,
        machine_allocation: Some(specs::machine_set_spec::MachineAllocation {
            name: "fast".into(),
            machine_count: 2,
            ..Default::default()
        }),
        ..Default::default()
    };
    let created = create(
        &mut c,
        res(
            MACHINE_SETS,
            "c1-workers",
            &[(CLUSTER, "c1"), (WORKER, "")],
            set.encode_to_vec(),
        ),
    )
    .await
    .expect("machine set");
    assert_eq!(
        created.spec.expect("spec").yaml_spec,
        "updatestrategy: 1\nmachineclass: null\nbootstrapspec: null\ndeletestrategy: 0\n\
         updatestrategyconfig: null\ndeletestrategyconfig: null\nmachineallocation:\n    name: fast\n    \
         machinecount: 2\n    allocationtype: 0\nupgradestrategy: 0\nupgradestrategyconfig: null\n"
    );

    // Text a YAML reader would take for another type is quoted; a multi-line patch is a literal block.
    let patch = specs::ConfigPatchSpec {
        data: "machine:\n  sysctls:\n    net.core.somaxconn: \"65535\"\n".into(),
        compressed_data: vec![],
    };
    let created = create(&mut c, res(PATCHES, "p1", &[], patch.encode_to_vec()))
        .await
        .expect("patch");
    assert_eq!(
        created.spec.expect("spec").yaml_spec,
        "data: |\n    machine:\n      sysctls:\n        net.core.somaxconn: \"65535\"\ncompresseddata: []\n"
    );
    create(
        &mut c,
        res(
            MACHINE_SETS,
            "c1-control-planes",
            &[(CLUSTER, "c1"), (CP, "")],
            vec![],
        ),
    )
    .await
    .expect("control planes");
    let nodes = create(
        &mut c,
        res(
            NODES,
            "m1",
            &[(CLUSTER, "c1"), (MS, "c1-control-planes"), (CP, "")],
            vec![],
        ),
    )
    .await
    .expect("node");
    assert_eq!(nodes.spec.expect("spec").yaml_spec, "{}\n");
}

fn kubeconfig_request(ttl_secs: i64, user: &str) -> KubeconfigRequest {
    KubeconfigRequest {
        service_account: true,
        service_account_ttl: Some(prost_types::Duration {
            seconds: ttl_secs,
            nanos: 0,
        }),
        service_account_user: user.into(),
        service_account_groups: vec!["system:masters".into()],
        ..Default::default()
    }
}

#[tokio::test]
async fn service_account_kubeconfig_checks_and_jwt() {
    let sim = OmniSim::builder()
        .account_name("acme")
        .kubernetes_proxy_url("https://acme.kubernetes.example:8095")
        .start()
        .await
        .expect("starts");
    let key = sim.mint_key("op", Role::Operator);
    let ch = channel(&sim).await;
    let mut st = state(ch.clone(), Signer::new(&key));
    let mut m = management(ch.clone(), Signer::new(&key).header("context", "c1"));
    assert_eq!(
        err(m.kubeconfig(kubeconfig_request(3600, "op")).await),
        (Code::Unknown, "failed to get cluster UUID: resource ClusterUUIDs.omni.sidero.dev(default/c1@undefined) doesn't exist".into())
    );
    create(
        &mut st,
        res(CLUSTERS, "c1", &[], cluster_spec("1.10.3", "1.33.1")),
    )
    .await
    .expect("cluster");
    sim.wait_for(Duration::from_secs(5), |s| {
        s.get("default", "ClusterUUIDs.omni.sidero.dev", "c1")
            .is_some()
    })
    .await
    .expect("uuid");
    assert_eq!(
        err(m.kubeconfig(kubeconfig_request(0, "op")).await),
        (
            Code::InvalidArgument,
            "service account ttl is must be positive".into()
        )
    );
    assert_eq!(
        err(m
            .kubeconfig(kubeconfig_request(87600 * 3600 + 1, "op"))
            .await)
        .1,
        "service account ttl is too long (max allowed: 87600h0m0s)"
    );
    assert_eq!(
        err(m.kubeconfig(kubeconfig_request(3600, "")).await).1,
        "service account user name is not set"
    );
    let mut no_ttl = kubeconfig_request(3600, "op");
    no_ttl.service_account_ttl = None;
    assert_eq!(
        err(m.kubeconfig(no_ttl).await).1,
        "service account ttl is not set"
    );
    let mut no_ctx = management(ch.clone(), Signer::new(&key));
    assert_eq!(
        err(no_ctx.kubeconfig(kubeconfig_request(3600, "op")).await),
        (
            Code::InvalidArgument,
            "cluster name is not in context".into()
        )
    );
    let reader = sim.mint_key("reader", Role::Reader);
    let mut mr = management(ch.clone(), Signer::new(&reader).header("context", "c1"));
    assert_eq!(
        err(mr.kubeconfig(kubeconfig_request(3600, "op")).await),
        (
            Code::PermissionDenied,
            "unauthorized: access denied: insufficient role: \"Reader\"".into()
        )
    );

    let yaml = String::from_utf8(
        m.kubeconfig(kubeconfig_request(3600, "op"))
            .await
            .expect("kubeconfig")
            .into_inner()
            .kubeconfig,
    )
    .expect("utf8");
    let v: yaml_serde::Value = yaml_serde::from_str(&yaml).expect("yaml");
    let n = "acme-c1-op";
    // The bytes clientcmd.Write writes (sigs.k8s.io/yaml over go-yaml v2): keys sorted, sequences at their
    // key's column, plain scalars unquoted.
    let token = v["users"][0]["user"]["token"].as_str().expect("token");
    assert_eq!(
        yaml,
        format!(
            "apiVersion: v1\nclusters:\n- cluster:\n    server: https://acme.kubernetes.example:8095\n  name: {n}\n\
             contexts:\n- context:\n    cluster: {n}\n    namespace: default\n    user: {n}\n  name: {n}\n\
             current-context: {n}\nkind: Config\npreferences: {{}}\nusers:\n- name: {n}\n  user:\n    token: {token}\n"
        )
    );
    assert_eq!(v["current-context"].as_str(), Some(n));
    assert_eq!(
        v["clusters"][0]["cluster"]["server"].as_str(),
        Some("https://acme.kubernetes.example:8095")
    );
    assert_eq!(
        v["contexts"][0]["context"]["namespace"].as_str(),
        Some("default")
    );
    let token = v["users"][0]["user"]["token"].as_str().expect("token");
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 3);
    let dec = |s: &str| {
        serde_json::from_slice::<serde_json::Value>(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(s)
                .expect("b64"),
        )
        .expect("json")
    };
    let (header, claims) = (dec(parts[0]), dec(parts[1]));
    assert_eq!(header["alg"], "RS256");
    assert!(header["kid"].is_string());
    assert_eq!(claims["iss"], "omni-acme-service-account-issuer");
    assert_eq!(
        (claims["sub"].as_str(), claims["cluster"].as_str()),
        (Some("op"), Some("c1"))
    );
    assert_eq!(claims["groups"], serde_json::json!(["system:masters"]));
    assert_eq!(
        claims["exp"].as_i64().expect("exp") - claims["iat"].as_i64().expect("iat"),
        3600
    );
    let uuid = spec::<specs::ClusterUuid>(sim.state(), "ClusterUUIDs.omni.sidero.dev", "c1")
        .expect("uuid")
        .uuid;
    assert_eq!(claims["cluster_uuid"].as_str(), Some(uuid.as_str()));
    // The RS256 signature verifies with the server's key.
    use rsa::signature::Verifier as _;
    let vk = rsa::pkcs1v15::VerifyingKey::<sha2::Sha256>::new(sim.jwt_public_key().expect("key"));
    let sig = rsa::pkcs1v15::Signature::try_from(
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(parts[2])
            .expect("sig")
            .as_slice(),
    )
    .expect("sig");
    vk.verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &sig)
        .expect("verifies");

    sim.faults().inject(
        Matcher::method("Kubeconfig"),
        FaultAction::EmptyKubeconfig,
        Some(1),
    );
    assert!(
        m.kubeconfig(kubeconfig_request(3600, "op"))
            .await
            .expect("ok")
            .into_inner()
            .kubeconfig
            .is_empty()
    );
    assert!(
        sim.records()
            .iter()
            .any(|r| r.method == "/management.ManagementService/Kubeconfig"
                && r.metadata.iter().any(|(k, v)| k == "context" && v == "c1"))
    );
}

/// The token of a freshly minted kubeconfig for `c1`.
async fn kubeconfig_token(m: &mut Management, ttl_secs: i64, groups: &[&str]) -> String {
    let mut req = kubeconfig_request(ttl_secs, "op");
    req.service_account_groups = groups.iter().map(|g| g.to_string()).collect();
    let yaml = String::from_utf8(
        m.kubeconfig(req)
            .await
            .expect("kubeconfig")
            .into_inner()
            .kubeconfig,
    )
    .expect("utf8");
    let v: yaml_serde::Value = yaml_serde::from_str(&yaml).expect("yaml");
    v["users"][0]["user"]["token"]
        .as_str()
        .expect("token")
        .to_string()
}

#[tokio::test]
async fn kubeconfig_tokens_verify_like_omnis_proxy_until_exp_passes_or_the_cluster_is_recreated() {
    let (sim, mut st, key) = setup().await;
    let jwt = sim.jwt_verifier();
    let ch = channel(&sim).await;
    let mut m = management(ch, Signer::new(&key).header("context", "c1"));
    assert!(
        jwt.verify("a.b.c")
            .expect_err("no key yet")
            .contains("has not issued any kubeconfig")
    );
    create(
        &mut st,
        res(CLUSTERS, "c1", &[], cluster_spec("1.10.3", "1.33.1")),
    )
    .await
    .expect("cluster");
    sim.wait_for(Duration::from_secs(5), |s| {
        s.get("default", "ClusterUUIDs.omni.sidero.dev", "c1")
            .is_some()
    })
    .await
    .expect("uuid");
    let uuid = spec::<specs::ClusterUuid>(sim.state(), "ClusterUUIDs.omni.sidero.dev", "c1")
        .expect("uuid")
        .uuid;

    let token = kubeconfig_token(&mut m, 3600, &["system:masters"]).await;
    let ok = jwt.verify(&token).expect("a fresh token verifies");
    assert_eq!(
        (ok.user.as_str(), ok.groups.as_slice(), ok.cluster.as_str()),
        ("op", &["system:masters".to_string()][..], "c1")
    );
    assert_eq!(ok.cluster_uuid, uuid);
    assert!((ok.expires_at - sim.clock().unix() - 3600).abs() <= 1);
    // `groups: null` (none asked for) is no groups.
    assert!(
        jwt.verify(&kubeconfig_token(&mut m, 3600, &[]).await)
            .expect("no groups")
            .groups
            .is_empty()
    );

    // Tampering breaks the signature; the reason never echoes the credential.
    let segments: Vec<&str> = token.split('.').collect();
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut claims: serde_json::Value =
        serde_json::from_slice(&b64.decode(segments[1]).expect("b64")).expect("json");
    claims["sub"] = "admin".into();
    let forged = format!(
        "{}.{}.{}",
        segments[0],
        b64.encode(claims.to_string()),
        segments[2]
    );
    let reason = jwt.verify(&forged).expect_err("forged");
    assert_eq!(reason, "token signature is invalid");
    for bad in [forged.as_str(), &token[..token.len() - 4], "not-a-jwt"] {
        let reason = jwt.verify(bad).expect_err("refused");
        assert!(
            !reason.contains(bad) && !reason.contains(segments[1]) && !reason.contains(segments[2]),
            "{reason}"
        );
    }
    jwt.verify("").expect_err("empty");

    // Expiry follows the simulator clock: valid until exp, refused from exp on.
    sim.clock().advance(Duration::from_secs(3590));
    jwt.verify(&token).expect("still valid 10 s before exp");
    sim.clock().advance(Duration::from_secs(11));
    assert!(
        jwt.verify(&token)
            .expect_err("expired")
            .starts_with("token is expired")
    );
    sim.clock().reset();
    jwt.verify(&token)
        .expect("valid again once the clock is back");

    // Deleting the cluster invalidates the token; recreating it under the same name does not revive it.
    assert!(
        !teardown(&mut st, CLUSTERS, "c1").await.expect("teardown"),
        "ClusterController finalizer pending"
    );
    sim.wait_for(Duration::from_secs(10), |s| {
        s.get("default", CLUSTERS, "c1").is_none()
            && s.get("default", "ClusterUUIDs.omni.sidero.dev", "c1")
                .is_none()
    })
    .await
    .expect("cluster gone");
    assert!(
        jwt.verify(&token)
            .expect_err("cluster gone")
            .contains("does not exist")
    );
    create(
        &mut st,
        res(CLUSTERS, "c1", &[], cluster_spec("1.10.3", "1.33.1")),
    )
    .await
    .expect("recreated");
    sim.wait_for(Duration::from_secs(5), |s| {
        s.get("default", "ClusterUUIDs.omni.sidero.dev", "c1")
            .is_some()
    })
    .await
    .expect("new uuid");
    assert_ne!(
        spec::<specs::ClusterUuid>(sim.state(), "ClusterUUIDs.omni.sidero.dev", "c1")
            .expect("uuid")
            .uuid,
        uuid
    );
    assert!(
        jwt.verify(&token)
            .expect_err("old cluster's token")
            .starts_with("cluster UUID does not match")
    );
    let renewed = jwt
        .verify(&kubeconfig_token(&mut m, 3600, &["system:masters"]).await)
        .expect("a new token for the new cluster");
    assert_ne!(renewed.cluster_uuid, uuid);
}
