//! The child kinds' behaviour, natively against the mock host: reconcile and every admission message.

use omni_plugin_sdk::mock::MockHost;
use omni_plugin_sdk::{ConditionStatus, ReconcileError, json};

use super::*;

const UUID_A: &str = "3f0c1c9e-3b5b-4f7e-9d55-0d7c1b2a4e01";
const UUID_B: &str = "3f0c1c9e-3b5b-4f7e-9d55-0d7c1b2a4e02";

fn object(kind: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": API_VERSION, "kind": kind, "metadata": {"name": name, "namespace": "team", "generation": 1}, "spec": spec})
}

fn cluster(name: &str) -> Value {
    json!({"apiVersion": API_VERSION, "kind": "OmniCluster", "metadata": {"name": name, "namespace": "team"}, "spec": {}})
}

#[test]
fn a_child_of_an_existing_cluster_is_accepted_with_the_original_message() {
    let host = MockHost::new(object(
        "OmniControlPlane",
        "cp",
        json!({"clusterRef": {"name": "edge"}}),
    ))
    .with_object(cluster("edge"));
    reconcile(Child::ControlPlane, &host).expect("reconciles");
    let c = host.condition("Accepted").expect("Accepted set");
    assert_eq!(
        (c.status, c.reason.as_str(), c.message.as_str()),
        (
            ConditionStatus::True,
            "Accepted",
            "attached to OmniCluster \"edge\""
        )
    );
    assert_eq!(host.outputs().status["clusterRef"], "edge");
    assert_eq!(host.outputs().requeue_after, None, "no periodic requeue");
}

#[test]
fn a_child_without_its_cluster_reports_missing_cluster() {
    let host = MockHost::new(object(
        "OmniMachine",
        UUID_A,
        json!({"clusterRef": {"name": "gone"}}),
    ));
    reconcile(Child::Machine, &host).expect("reconciles");
    let c = host.condition("Accepted").expect("Accepted set");
    assert_eq!(
        (c.status, c.reason.as_str(), c.message.as_str()),
        (
            ConditionStatus::False,
            "MissingCluster",
            "OmniCluster \"gone\" does not exist"
        )
    );
}

#[test]
fn a_cluster_in_another_namespace_does_not_count() {
    let mut other = cluster("edge");
    other["metadata"]["namespace"] = json!("elsewhere");
    let host = MockHost::new(object(
        "OmniControlPlane",
        "cp",
        json!({"clusterRef": {"name": "edge"}}),
    ))
    .with_object(other);
    reconcile(Child::ControlPlane, &host).expect("reconciles");
    assert_eq!(
        host.condition("Accepted").expect("set").reason,
        "MissingCluster"
    );
}

#[test]
fn workers_report_their_effective_worker_set_name() {
    let host = MockHost::new(object(
        "OmniWorkers",
        "gpu",
        json!({"clusterRef": {"name": "edge"}}),
    ));
    reconcile(Child::Workers, &host).expect("reconciles");
    assert_eq!(
        host.outputs().status["workerSetName"],
        "gpu",
        "defaults to metadata.name"
    );
    let host = MockHost::new(object(
        "OmniWorkers",
        "gpu",
        json!({"clusterRef": {"name": "edge"}, "workerSetName": "accel"}),
    ));
    reconcile(Child::Workers, &host).expect("reconciles");
    assert_eq!(host.outputs().status["workerSetName"], "accel");
}

#[test]
fn machines_report_their_effective_machine_id() {
    let host = MockHost::new(object(
        "OmniMachine",
        UUID_A,
        json!({"clusterRef": {"name": "edge"}}),
    ));
    reconcile(Child::Machine, &host).expect("reconciles");
    assert_eq!(host.outputs().status["machineID"], UUID_A);
    let host = MockHost::new(object(
        "OmniMachine",
        "node-1",
        json!({"clusterRef": {"name": "edge"}, "machineID": UUID_B}),
    ));
    reconcile(Child::Machine, &host).expect("reconciles");
    assert_eq!(host.outputs().status["machineID"], UUID_B);
}

#[test]
fn a_denied_read_is_a_permanent_error_and_no_condition_is_guessed() {
    let host = MockHost::new(object(
        "OmniControlPlane",
        "cp",
        json!({"clusterRef": {"name": "edge"}}),
    ))
    .deny("kube-read");
    let e = reconcile(Child::ControlPlane, &host).expect_err("denied");
    assert!(
        matches!(e, ReconcileError::Permanent(ref m) if m.contains("kube-read")),
        "{e:?}"
    );
    assert!(host.condition("Accepted").is_none());
}

#[test]
fn describe_declares_the_cluster_relation_and_only_kube_read() {
    let info = describe(Child::Workers);
    assert_eq!(info.kinds, vec![Gvk::new(GROUP, VERSION, "OmniWorkers")]);
    assert_eq!(
        info.related[0].mapping,
        RelatedMapping::NameField("spec.clusterRef.name".into())
    );
    assert_eq!(info.finalizer, None, "the child kinds have no finalizer");
    assert_eq!(info.capabilities, vec!["kube-read"]);
}

fn messages(child: Child, kind: &str, name: &str, spec: Value) -> Vec<String> {
    validate(child, &object(kind, name, spec)).messages()
}

#[test]
fn machine_class_size_rules() {
    let m = messages(
        Child::ControlPlane,
        "OmniControlPlane",
        "cp",
        json!({"clusterRef": {"name": "c"}, "machineClass": {"name": "x", "size": 0}}),
    );
    assert_eq!(
        m,
        vec![
            "spec.machineClass.size: Invalid value: 0: machineClass size must be greater than zero"
        ]
    );
    let m = messages(
        Child::Workers,
        "OmniWorkers",
        "w",
        json!({"clusterRef": {"name": "c"}, "machineClass": {"name": "x", "size": "lots"}}),
    );
    assert_eq!(
        m,
        vec![
            "spec.machineClass.size: Unsupported value: \"lots\": supported values: \"unlimited\", \"infinity\", \"∞\""
        ]
    );
    for ok in [json!(3), json!("unlimited"), json!("infinity"), json!("∞")] {
        let m = messages(
            Child::Workers,
            "OmniWorkers",
            "w",
            json!({"clusterRef": {"name": "c"}, "machineClass": {"name": "x", "size": ok}}),
        );
        assert!(m.is_empty(), "{m:?}");
    }
}

#[test]
fn machines_must_be_uuids_and_duplicates_are_reported_at_both_indexes() {
    let m = messages(
        Child::ControlPlane,
        "OmniControlPlane",
        "cp",
        json!({"clusterRef": {"name": "c"}, "machines": ["nope", UUID_A, UUID_A]}),
    );
    assert_eq!(
        m,
        vec![
            "spec.machines[0]: Invalid value: \"nope\": machine ID must be a UUID".to_string(),
            format!("spec.machines[2]: Duplicate value: \"{UUID_A}\""),
            format!("spec.machines[1]: Duplicate value: \"{UUID_A}\""),
        ]
    );
    for form in [
        UUID_A.to_uppercase(),
        format!("urn:uuid:{UUID_A}"),
        format!("{{{UUID_A}}}"),
        UUID_A.replace('-', ""),
    ] {
        assert!(rules::is_uuid(&form), "Go's uuid.Parse accepts {form}");
    }
    assert!(
        !rules::is_uuid("3f0c1c9e-3b5b-4f7e-9d55-0d7c1b2a4e0"),
        "one digit short"
    );
}

#[test]
fn patches_need_exactly_one_source() {
    let spec = json!({"clusterRef": {"name": "c"}, "machines": [UUID_A], "patches": [
        {"name": "none"},
        {"file": "a.yaml", "inline": {"machine": {}}},
        {"file": "ok.yaml"},
        {"inline": {}}]});
    let m = messages(Child::ControlPlane, "OmniControlPlane", "cp", spec);
    assert_eq!(m.len(), 2, "{m:?}");
    assert_eq!(
        m[0],
        "spec.patches[0]: Required value: patch requires exactly one of file or inline"
    );
    assert!(
        m[1].starts_with("spec.patches[1]: Invalid value: ")
            && m[1].ends_with(": patch must not set both file and inline"),
        "{}",
        m[1]
    );
}

#[test]
fn kernel_args_are_forbidden_with_a_machine_class() {
    let m = messages(
        Child::Workers,
        "OmniWorkers",
        "w",
        json!({"clusterRef": {"name": "c"}, "machineClass": {"name": "x", "size": 1}, "kernelArgs": ["quiet"]}),
    );
    assert_eq!(
        m,
        vec![
            "spec.kernelArgs: Invalid value: [\"quiet\"]: kernelArgs are supported only for static machine sets"
        ]
    );
    let m = messages(
        Child::Workers,
        "OmniWorkers",
        "w",
        json!({"clusterRef": {"name": "c"}, "machines": [UUID_A], "kernelArgs": ["quiet"]}),
    );
    assert!(
        m.is_empty(),
        "static machine sets may have kernelArgs: {m:?}"
    );
}

#[test]
fn the_control_planes_worker_set_name_is_reserved() {
    let m = messages(
        Child::Workers,
        "OmniWorkers",
        "w",
        json!({"clusterRef": {"name": "c"}, "machines": [UUID_A], "workerSetName": "control-planes"}),
    );
    assert_eq!(
        m,
        vec![
            "spec.workerSetName: Invalid value: \"control-planes\": workerSetName is reserved by Omni"
        ]
    );
    let m = messages(
        Child::ControlPlane,
        "OmniControlPlane",
        "cp",
        json!({"clusterRef": {"name": "c"}, "machines": [UUID_A], "workerSetName": "control-planes"}),
    );
    assert!(m.is_empty(), "the rule is only for workers");
}

#[test]
fn a_machine_needs_a_uuid_from_spec_or_its_name() {
    let m = messages(
        Child::Machine,
        "OmniMachine",
        "node-1",
        json!({"clusterRef": {"name": "c"}}),
    );
    assert_eq!(
        m,
        vec![
            "spec.machineID: Invalid value: \"node-1\": machineID must be a UUID; set spec.machineID when metadata.name is not the Omni machine ID"
        ]
    );
    assert!(
        messages(
            Child::Machine,
            "OmniMachine",
            "node-1",
            json!({"clusterRef": {"name": "c"}, "machineID": UUID_A})
        )
        .is_empty()
    );
    assert!(
        messages(
            Child::Machine,
            "OmniMachine",
            UUID_A,
            json!({"clusterRef": {"name": "c"}})
        )
        .is_empty()
    );
    let m = messages(
        Child::Machine,
        "OmniMachine",
        UUID_A,
        json!({"clusterRef": {"name": "c"}, "patches": [{}]}),
    );
    assert_eq!(
        m,
        vec!["spec.patches[0]: Required value: patch requires exactly one of file or inline"]
    );
}

#[test]
fn errors_are_collected_in_the_original_order() {
    let spec = json!({"clusterRef": {"name": "c"}, "machineClass": {"name": "x", "size": -1}, "machines": ["bad"], "patches": [{}], "kernelArgs": ["a"], "workerSetName": "control-planes"});
    let fields: Vec<String> = validate(Child::Workers, &object("OmniWorkers", "w", spec))
        .errors
        .into_iter()
        .map(|e| e.field)
        .collect();
    assert_eq!(
        fields,
        vec![
            "spec.machineClass.size",
            "spec.machines[0]",
            "spec.patches[0]",
            "spec.kernelArgs",
            "spec.workerSetName"
        ]
    );
}
