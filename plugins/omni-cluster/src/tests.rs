//! The OmniCluster plugin against the SDK's mock host (a fake Omni with COSI's write rules): every path of
//! the Go controller with its exact conditions, and the fixes this plugin makes.

use omni_plugin_sdk::mock::MockHost;
use omni_plugin_sdk::omni::{ClusterHealth, OmniResource, Phase, ResourceKey};
use omni_plugin_sdk::{ConditionStatus, EventType, HostError, Plugin, Value, json};
use omni_template::translate::types;

use super::*;

const NS: &str = "omni-system";
const CP: &str = "11111111-1111-4111-8111-111111111111";
const W: &str = "22222222-2222-4222-8222-222222222222";

fn obj(kind: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": API_VERSION, "kind": kind, "metadata": {"name": name, "namespace": NS, "generation": 1}, "spec": spec})
}

fn cluster_spec() -> Value {
    json!({
        "connectionRef": {"name": "omni"},
        "kubernetes": {"version": "v1.35.0", "manifests": [{"name": "sample-namespace", "mode": "full",
            "inline": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}]}]},
        "talos": {"version": "v1.13.2"},
        "features": {"enableWorkloadProxy": true},
        "syncInterval": "5m"
    })
}

fn connection() -> Value {
    obj(
        "OmniConnection",
        "omni",
        json!({"endpoint": "https://omni.example.com", "auth": {"serviceAccountSecretRef": {"name": "sa"}}}),
    )
}

fn children() -> Vec<Value> {
    vec![
        obj(
            "OmniControlPlane",
            "edge-cp",
            json!({"clusterRef": {"name": "edge"}, "machines": [CP],
            "patches": [{"name": "kubespan", "inline": {"machine": {"network": {"kubespan": {"enabled": true}}}}}]}),
        ),
        obj(
            "OmniWorkers",
            "edge-workers",
            json!({"clusterRef": {"name": "edge"}, "workerSetName": "gpu", "machines": [W]}),
        ),
        obj(
            "OmniMachine",
            "edge-cp-0",
            json!({"clusterRef": {"name": "edge"}, "machineID": CP, "install": {"disk": "/dev/sda"}}),
        ),
        obj(
            "OmniMachine",
            "edge-w-0",
            json!({"clusterRef": {"name": "edge"}, "machineID": W, "install": {"disk": "/dev/sda"}}),
        ),
        // Another cluster's child: never part of this template.
        obj(
            "OmniWorkers",
            "other-workers",
            json!({"clusterRef": {"name": "other"}, "machines": [W]}),
        ),
    ]
}

/// A host reconciling `cluster` with the connection and children seeded, and Omni holding `omni`.
fn host_with(cluster: Value, extra: Vec<Value>, omni: &[OmniResource]) -> MockHost {
    let mut host = MockHost::new(cluster).with_object(connection());
    for child in children().into_iter().chain(extra) {
        host = host.with_object(child);
    }
    for r in omni {
        host = host.with_omni_resource(r.clone());
    }
    host
}

fn edge() -> Value {
    obj("OmniCluster", "edge", cluster_spec())
}

fn writes(host: &MockHost) -> Vec<String> {
    host.omni_calls()
        .into_iter()
        .filter(|c| {
            ["create", "update", "teardown", "destroy"]
                .iter()
                .any(|w| c.starts_with(w))
        })
        .collect()
}

fn cond(host: &MockHost, type_: &str) -> (ConditionStatus, String, String) {
    let c = host
        .condition(type_)
        .unwrap_or_else(|| panic!("no {type_} condition"));
    (c.status, c.reason, c.message)
}

/// What Omni says of a running, healthy cluster.
fn running() -> ClusterHealth {
    ClusterHealth {
        phase: "RUNNING".into(),
        ready: true,
        healthy: true,
        findings: vec![],
    }
}

/// Runs one reconcile and returns Omni's resources afterwards.
fn synced_omni() -> Vec<OmniResource> {
    let host = host_with(edge(), vec![], &[]);
    OmniClusterPlugin::reconcile(&host).expect("reconcile");
    host.omni_resources()
}

#[test]
fn first_sync_creates_everything_in_omnis_order_and_reports_it() {
    let host = host_with(edge(), vec![], &[]);
    OmniClusterPlugin::reconcile(&host).expect("reconcile");
    assert_eq!(
        writes(&host),
        [
            "create Clusters.omni.sidero.dev(edge)",
            "create ConfigPatches.omni.sidero.dev(000-cm-11111111-1111-4111-8111-111111111111-install-disk)",
            "create ConfigPatches.omni.sidero.dev(000-cm-22222222-2222-4222-8222-222222222222-install-disk)",
            "create ConfigPatches.omni.sidero.dev(400-edge-control-planes-kubespan)",
            "create KubernetesManifestGroups.omni.sidero.dev(200-cluster-edge-sample-namespace)",
            "create MachineSets.omni.sidero.dev(edge-control-planes)",
            "create MachineSets.omni.sidero.dev(edge-gpu)",
            "create MachineSetNodes.omni.sidero.dev(11111111-1111-4111-8111-111111111111)",
            "create MachineSetNodes.omni.sidero.dev(22222222-2222-4222-8222-222222222222)",
        ]
    );
    assert_eq!(
        cond(&host, "Validated"),
        (
            ConditionStatus::True,
            "Validated".into(),
            "rendered Omni cluster template is valid".into()
        )
    );
    assert_eq!(
        cond(&host, "Synced"),
        (
            ConditionStatus::True,
            "Synced".into(),
            "template synced to Omni".into()
        )
    );
    // The fake Omni has no status for the cluster yet: reported, not waited for.
    assert_eq!(
        cond(&host, "Ready"),
        (
            ConditionStatus::False,
            "StatusFailed".into(),
            "Omni has no status for cluster \"edge\" yet".into()
        )
    );
    let out = host.outputs();
    let status = &out.status;
    assert_eq!(status["clusterName"], "edge");
    assert_eq!(status["connectionRef"], "omni");
    assert_eq!(status["endpoint"], "https://omni.example.com");
    assert_eq!(status["controlPlaneRef"], "edge-cp");
    assert_eq!(status["workersRefs"], json!(["edge-workers"]));
    assert_eq!(status["machineRefs"], json!(["edge-cp-0", "edge-w-0"]));
    assert_eq!(status["templateHash"].as_str().map(str::len), Some(64));
    assert_eq!(status["lastSyncTime"], "2026-01-01T00:00:00Z");
    assert_eq!(status["lastAttemptTime"], "2026-01-01T00:00:00Z");
    assert!(
        status["lastSyncOutput"]
            .as_str()
            .unwrap()
            .starts_with("* creating Clusters.omni.sidero.dev(edge)\n* creating ConfigPatches")
    );
    assert_eq!(
        out.requeue_after,
        Some(timing::NOT_READY_RECHECK_MS),
        "not ready yet: looked at again soon"
    );
    // A sync that changed Omni is an Event on the object.
    let creates = writes(&host).len();
    assert_eq!(
        out.events,
        [(
            EventType::Normal,
            "Synced".to_string(),
            format!("synced the cluster template to Omni: {creates} created")
        )]
    );
}

/// A first sync reads each resource the label lists did not find once: the cluster's own resource is looked up
/// with the listing and not asked for again.
#[test]
fn a_first_sync_asks_omni_for_each_missing_resource_once() {
    let host = host_with(edge(), vec![], &[]);
    OmniClusterPlugin::reconcile(&host).expect("reconcile");
    let calls = host.omni_calls();
    let gets: Vec<&String> = calls.iter().filter(|c| c.starts_with("get ")).collect();
    let distinct: std::collections::BTreeSet<&String> = gets.iter().copied().collect();
    assert_eq!(
        gets.len(),
        distinct.len(),
        "a resource read twice: {calls:?}"
    );
    assert!(
        gets.contains(&&"get Clusters.omni.sidero.dev(edge)".to_string()),
        "{calls:?}"
    );
    // Every created resource was looked up before anything was created.
    let first_create = calls
        .iter()
        .position(|c| c.starts_with("create "))
        .expect("creates");
    for created in writes(&host) {
        let key = created.trim_start_matches("create ");
        let looked = calls[..first_create]
            .iter()
            .any(|c| c == &format!("get {key}"));
        assert!(looked, "{key} created without a look first: {calls:?}");
    }
}

/// A resource with the template's ID that belongs to something else (it has an owner) stops the sync before
/// anything is written, whether it is the cluster itself or one of its parts.
#[test]
fn a_resource_owned_elsewhere_stops_the_sync_before_any_write() {
    for (type_, id) in [
        (types::CLUSTERS, "edge"),
        (types::CONFIG_PATCHES, "400-edge-control-planes-kubespan"),
    ] {
        let mut taken = OmniResource::new(ResourceKey::new(type_, id), vec![]);
        taken.owner = "SomeController".into();
        let host = host_with(edge(), vec![], &[taken]);
        OmniClusterPlugin::reconcile(&host).expect("a failure is not an error of the call");
        let (status, reason, message) = cond(&host, "Synced");
        assert_eq!(
            (status, reason.as_str()),
            (ConditionStatus::False, "SyncFailed")
        );
        assert!(
            message.contains(&format!(
                "resource {type_}(default/{id}) already exists for cluster \"edge\", cannot create a conflicting resource for a different cluster"
            )),
            "{message}"
        );
        assert_eq!(
            writes(&host),
            Vec::<String>::new(),
            "{type_}: nothing written"
        );
    }
}

#[test]
fn a_second_sync_with_no_change_writes_nothing_and_a_healthy_cluster_is_ready() {
    let host = host_with(edge(), vec![], &synced_omni()).with_cluster_health("edge", running());
    OmniClusterPlugin::reconcile(&host).expect("reconcile");
    assert_eq!(writes(&host), Vec::<String>::new());
    assert_eq!(
        cond(&host, "Ready"),
        (
            ConditionStatus::True,
            "Synced".into(),
            "cluster template is synced and status was read from Omni".into()
        )
    );
    assert_eq!(host.outputs().status["lastSyncOutput"], "");
    assert!(
        host.outputs().events.is_empty(),
        "an unchanged re-sync records no Event"
    );
    assert_eq!(
        host.outputs().requeue_after,
        Some(5 * 60 * 1000),
        "syncInterval"
    );
}

#[test]
fn a_spec_change_updates_only_what_changed_with_the_read_version() {
    let mut spec = cluster_spec();
    spec["kubernetes"]["version"] = json!("v1.36.0");
    let host = host_with(obj("OmniCluster", "edge", spec), vec![], &synced_omni());
    OmniClusterPlugin::reconcile(&host).expect("reconcile");
    assert_eq!(writes(&host), ["update Clusters.omni.sidero.dev(edge)"]);
    let stored = host
        .omni_resources()
        .into_iter()
        .find(|r| r.key.type_ == types::CLUSTERS)
        .unwrap();
    assert_eq!(stored.version, "2", "the update carried version 1");
}

#[test]
fn removing_a_worker_set_tears_down_its_machine_set_and_not_the_nodes_omni_cascades() {
    let before = synced_omni();
    let mut host = MockHost::new(edge()).with_object(connection());
    for child in children()
        .into_iter()
        .filter(|c| c["metadata"]["name"] != "edge-workers" && c["metadata"]["name"] != "edge-w-0")
    {
        host = host.with_object(child);
    }
    for r in &before {
        host = host.with_omni_resource(r.clone());
    }
    OmniClusterPlugin::reconcile(&host).expect("reconcile");
    assert_eq!(
        writes(&host),
        [
            // The node goes with its machine set; the machine's patch is phase B.
            "teardown MachineSets.omni.sidero.dev(edge-gpu)",
            "destroy MachineSets.omni.sidero.dev(edge-gpu)",
            "teardown ConfigPatches.omni.sidero.dev(000-cm-22222222-2222-4222-8222-222222222222-install-disk)",
            "destroy ConfigPatches.omni.sidero.dev(000-cm-22222222-2222-4222-8222-222222222222-install-disk)",
        ]
    );
    assert_eq!(cond(&host, "Synced").0, ConditionStatus::True);
}

#[test]
fn a_teardown_held_by_finalizers_is_reported_and_phase_b_waits() {
    let mut before = synced_omni();
    for r in &mut before {
        if r.key.id == "edge-gpu" {
            r.finalizers = vec!["MachineSetStatusController".into()];
        }
    }
    let mut host = MockHost::new(edge()).with_object(connection());
    for child in children()
        .into_iter()
        .filter(|c| c["metadata"]["name"] != "edge-workers" && c["metadata"]["name"] != "edge-w-0")
    {
        host = host.with_object(child);
    }
    for r in &before {
        host = host.with_omni_resource(r.clone());
    }
    OmniClusterPlugin::reconcile(&host).expect("reconcile");
    assert_eq!(
        writes(&host),
        ["teardown MachineSets.omni.sidero.dev(edge-gpu)"],
        "phase B waits for phase A"
    );
    let (status, reason, message) = cond(&host, "Synced");
    assert_eq!(
        (status, reason.as_str()),
        (ConditionStatus::False, "Syncing")
    );
    assert_eq!(
        message,
        "waiting for Omni to finish tearing down MachineSets.omni.sidero.dev(edge-gpu) (finalizers: MachineSetStatusController)"
    );
    assert_eq!(
        host.outputs().requeue_after,
        Some(timing::TEARDOWN_RECHECK_MS)
    );
    let tearing = host
        .omni_resources()
        .into_iter()
        .find(|r| r.key.id == "edge-gpu")
        .unwrap();
    assert_eq!(tearing.phase, Phase::TearingDown);
}

#[test]
fn suspend_renders_and_validates_but_never_calls_omni() {
    let mut spec = cluster_spec();
    spec["suspend"] = json!(true);
    let host = host_with(obj("OmniCluster", "edge", spec), vec![], &[]);
    OmniClusterPlugin::reconcile(&host).expect("reconcile");
    assert_eq!(host.omni_calls(), Vec::<String>::new());
    assert_eq!(
        cond(&host, "Ready"),
        (
            ConditionStatus::False,
            "Suspended".into(),
            "remote Omni sync is suspended".into()
        )
    );
    assert_eq!(
        cond(&host, "Synced").1,
        "Suspended",
        "no Synced=True left from an older generation"
    );
    assert_eq!(cond(&host, "Validated").0, ConditionStatus::True);
    assert!(host.outputs().status["templateHash"].is_string());
}

/// Suspension is checked before the connection and the template: whatever those say, a suspended
/// cluster reports `Ready` and `Synced` as `Suspended`, calls no Omni, and `Validated` tells the template's state.
#[test]
fn suspend_is_reported_before_any_template_or_connection_problem() {
    let suspended = || {
        let mut spec = cluster_spec();
        spec["suspend"] = json!(true);
        obj("OmniCluster", "edge", spec)
    };
    let invalid = || {
        let mut c = suspended();
        c["spec"]["patches"] = json!([{"inline": {"machine": {}}}]);
        c
    };
    let missing_template = MockHost::new(suspended()).with_object(connection());
    let mut no_connection = MockHost::new(invalid());
    for child in children() {
        no_connection = no_connection.with_object(child);
    }
    let cases: [(&str, MockHost, ConditionStatus, &str, &str); 4] = [
        (
            "missing template",
            missing_template,
            ConditionStatus::False,
            "MissingTemplate",
            "expected exactly one OmniControlPlane referencing omni-system/edge, found 0",
        ),
        (
            "invalid template",
            host_with(invalid(), vec![], &[]),
            ConditionStatus::False,
            "ValidationFailed",
            "either name or idOverride is required for inline patches",
        ),
        (
            "valid template",
            host_with(suspended(), vec![], &[]),
            ConditionStatus::True,
            "Validated",
            "rendered Omni cluster template is valid",
        ),
        (
            "invalid template and no connection",
            no_connection,
            ConditionStatus::False,
            "ValidationFailed",
            "either name or idOverride is required for inline patches",
        ),
    ];
    let suspended_condition = (
        ConditionStatus::False,
        "Suspended".to_string(),
        "remote Omni sync is suspended".to_string(),
    );
    for (case, host, validated, reason, message) in cases {
        OmniClusterPlugin::reconcile(&host).expect("reconcile");
        assert_eq!(cond(&host, "Ready"), suspended_condition, "{case}: Ready");
        assert_eq!(cond(&host, "Synced"), suspended_condition, "{case}: Synced");
        let (status, got_reason, got_message) = cond(&host, "Validated");
        assert_eq!(
            (status, got_reason.as_str()),
            (validated, reason),
            "{case}: Validated"
        );
        assert!(
            got_message.contains(message),
            "{case}: Validated: {got_message}"
        );
        assert_eq!(
            host.omni_calls(),
            Vec::<String>::new(),
            "{case}: no Omni call"
        );
        assert_eq!(
            host.outputs().requeue_after,
            Some(5 * 60 * 1000),
            "{case}: syncInterval"
        );
    }
}

/// The connection is checked before the template: `Ready` and `Synced` name the missing connection even when
/// the template is broken too; `Validated` says what is wrong with the template.
#[test]
fn a_missing_connection_is_reported_before_template_problems() {
    let mut spec = cluster_spec();
    spec["patches"] = json!([{"inline": {"machine": {}}}]);
    let missing_template = MockHost::new(edge());
    let mut invalid = MockHost::new(obj("OmniCluster", "edge", spec));
    for child in children() {
        invalid = invalid.with_object(child);
    }
    let expected = "failed to get OmniConnection \"omni\": omniconnections.omni.texashpc.com \"omni\" not found";
    for (case, host, reason) in [
        ("missing template", missing_template, "MissingTemplate"),
        ("invalid template", invalid, "ValidationFailed"),
    ] {
        OmniClusterPlugin::reconcile(&host).expect("reconcile");
        let missing = (
            ConditionStatus::False,
            "MissingConnection".to_string(),
            expected.to_string(),
        );
        assert_eq!(cond(&host, "Ready"), missing, "{case}: Ready");
        assert_eq!(cond(&host, "Synced"), missing, "{case}: Synced");
        assert_eq!(
            (cond(&host, "Validated").0, cond(&host, "Validated").1),
            (ConditionStatus::False, reason.to_string()),
            "{case}: Validated"
        );
        assert_eq!(
            host.omni_calls(),
            Vec::<String>::new(),
            "{case}: no Omni call"
        );
    }
}

/// A `spec.clusterName` changed while the cluster is suspended or its connection is missing: the status keeps the
/// name Omni has, so the rename check on resume (and deletion) still know the old cluster.
#[test]
fn a_rename_while_suspended_or_disconnected_keeps_the_omni_name_recorded() {
    let renamed = |suspend: bool| {
        let mut spec = cluster_spec();
        spec["clusterName"] = json!("renamed");
        spec["suspend"] = json!(suspend);
        let mut c = obj("OmniCluster", "edge", spec);
        c["status"] = json!({"clusterName": "edge", "lastSyncTime": "2025-12-31T00:00:00Z"});
        c
    };
    let mut disconnected = MockHost::new(renamed(false));
    for child in children() {
        disconnected = disconnected.with_object(child);
    }
    for (case, host, reason) in [
        (
            "suspended",
            host_with(renamed(true), vec![], &synced_omni()),
            "Suspended",
        ),
        ("disconnected", disconnected, "MissingConnection"),
    ] {
        OmniClusterPlugin::reconcile(&host).expect("reconcile");
        assert_eq!(cond(&host, "Ready").1, reason, "{case}");
        assert_eq!(
            host.outputs().status["clusterName"],
            "edge",
            "{case}: the Omni name stays recorded"
        );
        assert!(host.outputs().status["templateHash"].is_string(), "{case}");
        assert_eq!(host.omni_calls(), Vec::<String>::new(), "{case}");
    }
}

#[test]
fn a_missing_connection_is_reported_with_the_go_message() {
    let mut host = MockHost::new(edge());
    for child in children() {
        host = host.with_object(child);
    }
    OmniClusterPlugin::reconcile(&host).expect("reconcile");
    let expected = "failed to get OmniConnection \"omni\": omniconnections.omni.texashpc.com \"omni\" not found";
    assert_eq!(
        cond(&host, "Synced"),
        (
            ConditionStatus::False,
            "MissingConnection".into(),
            expected.into()
        )
    );
    assert_eq!(
        cond(&host, "Ready"),
        (
            ConditionStatus::False,
            "MissingConnection".into(),
            expected.into()
        )
    );
    assert_eq!(host.omni_calls(), Vec::<String>::new());
    assert_eq!(host.outputs().requeue_after, Some(5 * 60 * 1000));
}

/// A connection or child that could not be *read* (the API server failing) is reported as the Go controller
/// reported a missing one, but retried with the failure backoff, not after the whole sync interval: the chaos run
/// found clusters held for five minutes by one failed read.
#[test]
fn inputs_that_fail_to_read_are_retried_with_the_failure_backoff() {
    let failure = || HostError::Unavailable("Internal error occurred: injected fault".into());
    let mut no_connection = MockHost::new(edge()).with_read_failure("OmniConnection", failure());
    for child in children() {
        no_connection = no_connection.with_object(child);
    }
    OmniClusterPlugin::reconcile(&no_connection).expect("reconcile");
    assert_eq!(
        cond(&no_connection, "Synced"),
        (
            ConditionStatus::False,
            "MissingConnection".into(),
            "failed to get OmniConnection \"omni\": Internal error occurred: injected fault".into()
        )
    );
    assert_eq!(
        no_connection.outputs().requeue_after,
        Some(timing::MIN_BACKOFF_MS)
    );

    let mut no_children = MockHost::new(edge())
        .with_object(connection())
        .with_read_failure("OmniWorkers", failure());
    for child in children() {
        no_children = no_children.with_object(child);
    }
    OmniClusterPlugin::reconcile(&no_children).expect("reconcile");
    let (status, reason, message) = cond(&no_children, "Validated");
    assert_eq!(
        (status, reason.as_str()),
        (ConditionStatus::False, "MissingTemplate")
    );
    assert!(message.contains("injected fault"), "{message}");
    assert_eq!(
        no_children.outputs().requeue_after,
        Some(timing::MIN_BACKOFF_MS)
    );
    assert_eq!(no_children.omni_calls(), Vec::<String>::new());
}

#[test]
fn without_exactly_one_control_plane_the_template_is_missing() {
    let host = MockHost::new(edge()).with_object(connection());
    OmniClusterPlugin::reconcile(&host).expect("reconcile");
    let expected = "expected exactly one OmniControlPlane referencing omni-system/edge, found 0";
    assert_eq!(
        cond(&host, "Validated"),
        (
            ConditionStatus::False,
            "MissingTemplate".into(),
            expected.into()
        )
    );
    assert_eq!(
        cond(&host, "Synced").0,
        ConditionStatus::False,
        "never left True from an earlier sync"
    );
    assert_eq!(cond(&host, "Ready").1, "MissingTemplate");
}

#[test]
fn omnis_validation_messages_reach_validated() {
    let mut spec = cluster_spec();
    spec["patches"] = json!([{"inline": {"machine": {}}}]);
    let host = host_with(obj("OmniCluster", "edge", spec), vec![], &[]);
    OmniClusterPlugin::reconcile(&host).expect("reconcile");
    let (status, reason, message) = cond(&host, "Validated");
    assert_eq!(
        (status, reason.as_str()),
        (ConditionStatus::False, "ValidationFailed")
    );
    assert!(
        message.contains("either name or idOverride is required for inline patches"),
        "{message}"
    );
    assert_eq!(
        host.omni_calls(),
        Vec::<String>::new(),
        "nothing is sent to Omni"
    );
}

#[test]
fn file_patches_are_read_through_the_files_capability_under_the_template_root() {
    let mut spec = cluster_spec();
    spec["templateRoot"] = json!("/templates");
    spec["patches"] = json!([{"file": "patches/a.yaml"}]);
    let host = host_with(obj("OmniCluster", "edge", spec.clone()), vec![], &[]).with_file(
        "/templates",
        "patches/a.yaml",
        "machine:\n  env:\n    A: b\n",
    );
    OmniClusterPlugin::reconcile(&host).expect("reconcile");
    let patch = host
        .omni_resources()
        .into_iter()
        .find(|r| r.key.id == "200-cluster-edge-patches/a.yaml")
        .expect("created");
    let data =
        <omni_template::specs::ConfigPatchSpec as prost::Message>::decode(patch.spec.as_slice())
            .unwrap()
            .data;
    assert_eq!(data, "machine:\n  env:\n    A: b\n");

    // The same object without the file: Omni's access message, no Omni call.
    let host = host_with(obj("OmniCluster", "edge", spec), vec![], &[]);
    OmniClusterPlugin::reconcile(&host).expect("reconcile");
    let (status, _, message) = cond(&host, "Validated");
    assert_eq!(status, ConditionStatus::False);
    assert!(
        message.contains("failed to access \"patches/a.yaml\""),
        "{message}"
    );
}

#[test]
fn a_sync_failure_is_a_reported_state_with_backoff() {
    let host = host_with(edge(), vec![], &[])
        .with_omni_failure(HostError::Unavailable("connection refused".into()));
    OmniClusterPlugin::reconcile(&host).expect("a failure is not an error of the call");
    let (status, reason, message) = cond(&host, "Synced");
    assert_eq!(
        (status, reason.as_str()),
        (ConditionStatus::False, "SyncFailed")
    );
    assert_eq!(
        message,
        "sync failed: error syncing template: connection refused"
    );
    assert_eq!(cond(&host, "Ready").1, "SyncFailed");
    assert_eq!(
        host.outputs().events,
        [(
            EventType::Warning,
            "SyncFailed".to_string(),
            "sync failed: error syncing template: connection refused".to_string()
        )]
    );
    assert_eq!(host.outputs().requeue_after, Some(timing::MIN_BACKOFF_MS));
    assert!(host.outputs().status["lastAttemptTime"].is_string());
    assert!(host.outputs().status.get("lastSyncTime").is_none());
}

#[test]
fn a_cluster_name_change_after_omni_has_the_cluster_is_refused() {
    let mut spec = cluster_spec();
    spec["clusterName"] = json!("renamed");
    let mut cluster = obj("OmniCluster", "edge", spec);
    cluster["status"] = json!({"clusterName": "edge", "lastSyncTime": "2025-12-31T00:00:00Z"});
    let host = host_with(cluster.clone(), vec![], &synced_omni());
    OmniClusterPlugin::reconcile(&host).expect("reconcile");
    let (status, reason, message) = cond(&host, "Validated");
    assert_eq!(
        (status, reason.as_str()),
        (ConditionStatus::False, "ValidationFailed")
    );
    assert!(message.starts_with("spec.clusterName changed from \"edge\" to \"renamed\" after Omni created cluster \"edge\""), "{message}");
    assert_eq!(writes(&host), Vec::<String>::new(), "no second cluster");
    assert_eq!(
        host.outputs().status["clusterName"],
        "edge",
        "the Omni name stays recorded"
    );

    // When Omni does not have the old cluster, the new name is simply used.
    let host = host_with(cluster, vec![], &[]);
    OmniClusterPlugin::reconcile(&host).expect("reconcile");
    assert_eq!(writes(&host)[0], "create Clusters.omni.sidero.dev(renamed)");
}

fn deleting(spec: Value) -> Value {
    let mut c = obj("OmniCluster", "edge", spec);
    c["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    c["metadata"]["finalizers"] = json!([FINALIZER]);
    c
}

#[test]
fn deletion_tears_down_the_cluster_and_omni_cascades_the_rest() {
    let host = host_with(deleting(cluster_spec()), vec![], &synced_omni());
    assert_eq!(OmniClusterPlugin::finalize(&host), Ok(true));
    // Everything else carries the cluster label and goes with the cluster's teardown.
    assert_eq!(
        writes(&host),
        [
            "teardown Clusters.omni.sidero.dev(edge)",
            "destroy Clusters.omni.sidero.dev(edge)"
        ]
    );
    assert_eq!(
        host.outputs().status["lastSyncOutput"],
        "* tearing down Clusters.omni.sidero.dev(edge)\n* destroyed Clusters.omni.sidero.dev(edge)"
    );
}

#[test]
fn deletion_waits_while_omni_holds_the_cluster() {
    let mut omni = synced_omni();
    for r in &mut omni {
        if r.key.type_ == types::CLUSTERS {
            r.finalizers = vec!["ClusterController".into()];
        }
    }
    let host = host_with(deleting(cluster_spec()), vec![], &omni);
    assert_eq!(OmniClusterPlugin::finalize(&host), Ok(false));
    assert_eq!(cond(&host, "Ready"), (ConditionStatus::False, "Deleting".into(),
        "waiting for Omni to finish tearing down Clusters.omni.sidero.dev(edge) (finalizers: ClusterController)".into()));
}

#[test]
fn orphan_leaves_omni_alone() {
    let mut spec = cluster_spec();
    spec["deletePolicy"] = json!({"orphan": true});
    let host = host_with(deleting(spec), vec![], &synced_omni());
    assert_eq!(OmniClusterPlugin::finalize(&host), Ok(true));
    assert_eq!(host.omni_calls(), Vec::<String>::new());
}

#[test]
fn destroy_machines_removes_disconnected_machines_first() {
    let mut spec = cluster_spec();
    spec["deletePolicy"] = json!({"destroyMachines": true});
    let mut omni = synced_omni();
    let mut status = OmniResource::new(ResourceKey::new(types::MACHINE_STATUSES, W), vec![]);
    status.owner = "MachineStatusController".into();
    status.labels = vec![
        ("omni.sidero.dev/cluster".into(), "edge".into()),
        ("omni.sidero.dev/disconnected".into(), String::new()),
    ];
    omni.push(status);
    omni.push(OmniResource::new(ResourceKey::new(types::LINKS, W), vec![]));
    let host = host_with(deleting(spec), vec![], &omni);
    assert_eq!(OmniClusterPlugin::finalize(&host), Ok(true));
    assert_eq!(
        writes(&host),
        [
            "teardown Links.omni.sidero.dev(22222222-2222-4222-8222-222222222222)",
            "destroy Links.omni.sidero.dev(22222222-2222-4222-8222-222222222222)",
            "teardown Clusters.omni.sidero.dev(edge)",
            "destroy Clusters.omni.sidero.dev(edge)",
        ]
    );
}

/// A deletion that fails is retried after as long as the deletion has been failing, not after as long as `Ready`
/// has been False: a cluster never healthy for a month retries its first failed deletion within seconds.
#[test]
fn a_failed_deletion_backs_off_from_the_deletion_not_from_readys_age() {
    let mut cluster = deleting(cluster_spec());
    cluster["status"]["conditions"] = json!([{"type": "Ready", "status": "False", "reason": "NotReady",
        "message": "waiting for the cluster", "lastTransitionTime": "2025-12-01T00:00:00Z"}]);
    let at = |now: &str| {
        let host = host_with(cluster.clone(), vec![], &synced_omni())
            .with_omni_failure(HostError::Unavailable("connection refused".into()))
            .at(now);
        assert_eq!(OmniClusterPlugin::finalize(&host), Ok(false));
        assert_eq!(cond(&host, "Ready").1, "DeleteFailed");
        host.outputs().requeue_after
    };
    // Deleted at midnight: 10 s into the deletion, then an hour into it (capped).
    assert_eq!(at("2026-01-01T00:00:10Z"), Some(10_000));
    assert_eq!(at("2026-01-01T01:00:00Z"), Some(timing::MAX_BACKOFF_MS));
    assert_eq!(
        timing::MAX_BACKOFF_MS,
        120_000,
        "the host's --max-retry-delay"
    );
}

#[test]
fn deletion_without_the_connection_says_how_to_get_out() {
    let mut host = MockHost::new(deleting(cluster_spec()));
    for child in children() {
        host = host.with_object(child);
    }
    assert_eq!(OmniClusterPlugin::finalize(&host), Ok(false));
    let (_, reason, message) = cond(&host, "Ready");
    assert_eq!(reason, "DeleteFailed");
    assert!(message.starts_with("cannot delete remote Omni cluster without OmniConnection \"omni\": failed to get OmniConnection"), "{message}");
    assert!(
        message.contains("spec.deletePolicy.orphan: true"),
        "{message}"
    );
}

#[test]
fn admission_rules_of_the_go_webhook() {
    let bad = obj(
        "OmniCluster",
        "edge",
        json!({
            "connectionRef": {"name": "omni"}, "kubernetes": {"version": "v1.35.0", "manifests": [{"name": "m"}]},
            "talos": {"version": "v1.13.2"}, "deletePolicy": {"orphan": true, "destroyMachines": true},
            "syncInterval": "-1m", "patches": [{"name": "p"}], "kernelArgs": ["quiet"]
        }),
    );
    let v = OmniClusterPlugin::validate(&bad, None);
    let messages = v.messages();
    // The JSON value's key order depends on serde_json's features in the build, so only its frame is compared.
    assert!(
        messages[0].starts_with("spec.deletePolicy: Invalid value: {"),
        "{}",
        messages[0]
    );
    assert!(
        messages[0].ends_with("}: orphan and destroyMachines cannot both be true"),
        "{}",
        messages[0]
    );
    assert_eq!(
        messages[1..],
        [
            "spec.syncInterval: Invalid value: \"-1m\": syncInterval must not be negative",
            "spec.patches[0]: Required value: patch requires exactly one of file or inline",
            "spec.kubernetes.manifests[0]: Required value: manifest requires exactly one of file or inline",
        ]
    );
    assert_eq!(
        v.warnings,
        [
            "cluster-level kernelArgs are valid only when every machine set uses static machines instead of machineClass"
        ]
    );
    assert!(OmniClusterPlugin::validate(&edge(), None).allowed());
}

/// `edge` as the host would hand it in after `first` reconciled it at generation 1: the status `first` wrote, with
/// the conditions and `observedGeneration` the host adds.
fn after(first: &MockHost, spec: Value) -> Value {
    let outputs = first.outputs();
    let mut status = Value::Object(outputs.status.clone());
    status["observedGeneration"] = json!(1);
    status["conditions"] = Value::Array(
        outputs
            .conditions
            .iter()
            .map(|c| {
                json!({"type": c.type_, "reason": c.reason, "message": c.message,
                    "status": if c.status == ConditionStatus::True { "True" } else { "False" },
                    "observedGeneration": 1, "lastTransitionTime": "2026-01-01T00:00:00Z"})
            })
            .collect(),
    );
    let mut object = obj("OmniCluster", "edge", spec);
    object["metadata"]["generation"] = json!(1);
    object["status"] = status;
    object
}

/// A cluster synced but not yet healthy is looked at again after NOT_READY_RECHECK_MS. That look reads Omni's
/// status and nothing else while the template is the one synced within the interval; past the interval, or with a
/// changed template, the whole template is synced again.
#[test]
fn a_readiness_recheck_reads_only_the_status_until_the_template_or_the_interval_says_sync() {
    let mut edge = edge();
    edge["metadata"]["generation"] = json!(1);
    let first = host_with(edge, vec![], &[]).at("2026-01-01T00:00:00Z");
    OmniClusterPlugin::reconcile(&first).expect("reconcile");
    assert_eq!(
        cond(&first, "Ready").1,
        "StatusFailed",
        "Omni has no status yet"
    );
    assert_eq!(first.outputs().requeue_after, Some(15_000));
    let omni = first.omni_resources();

    // 15 s later, nothing changed: one status read.
    let recheck = host_with(after(&first, cluster_spec()), vec![], &omni)
        .at("2026-01-01T00:00:15Z")
        .with_cluster_health("edge", running());
    OmniClusterPlugin::reconcile(&recheck).expect("reconcile");
    assert_eq!(recheck.omni_calls(), ["status edge"]);
    assert_eq!(cond(&recheck, "Ready").0, ConditionStatus::True);
    assert_eq!(cond(&recheck, "Synced").0, ConditionStatus::True);
    assert!(
        recheck.outputs().status.get("lastSyncTime").is_none(),
        "the last sync's time is left as it was"
    );

    // Past the sync interval (5m): the whole template again.
    let late = host_with(after(&first, cluster_spec()), vec![], &omni).at("2026-01-01T00:05:01Z");
    OmniClusterPlugin::reconcile(&late).expect("reconcile");
    assert!(
        late.omni_calls().iter().any(|c| c.starts_with("list")),
        "{:?}",
        late.omni_calls()
    );
    assert_eq!(
        late.outputs().status["lastSyncTime"],
        "2026-01-01T00:05:01Z"
    );

    // A changed input (the template renders differently) syncs at once.
    let mut changed = after(&first, cluster_spec());
    changed["status"]["templateHash"] = json!("0000");
    let resync = host_with(changed, vec![], &omni).at("2026-01-01T00:00:15Z");
    OmniClusterPlugin::reconcile(&resync).expect("reconcile");
    assert!(
        resync.omni_calls().iter().any(|c| c.starts_with("list")),
        "{:?}",
        resync.omni_calls()
    );
}
