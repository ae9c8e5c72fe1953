//! The JSON the types read and write, without the `schema` feature (what WebAssembly guests compile).

use omni_api::{
    ConditionStatus, IntOrString, KubernetesManifest, MachineClass, ManifestMode, OmniConnection,
    OmniConnectionSpec, OmniKind, OmniWorkersSpec, SecretKeySelector,
};
use serde_json::json;

#[test]
fn unset_optional_fields_are_omitted() {
    let spec = OmniConnectionSpec {
        endpoint: "https://omni.example.com".into(),
        auth: omni_api::OmniAuthSpec {
            service_account_secret_ref: SecretKeySelector {
                name: "sa".into(),
                ..SecretKeySelector::default()
            },
        },
        insecure_skip_tls_verify: None,
    };
    assert_eq!(
        serde_json::to_value(&spec).expect("encoding"),
        json!({"endpoint": "https://omni.example.com", "auth": {"serviceAccountSecretRef": {"name": "sa", "key": "serviceAccountKey"}}})
    );
}

#[test]
fn fields_the_server_defaults_and_requires_decode_as_the_server_would_default_them() {
    let selector: SecretKeySelector =
        serde_json::from_value(json!({"name": "sa"})).expect("decoding");
    assert_eq!(selector.key, "serviceAccountKey");
    let manifest: KubernetesManifest =
        serde_json::from_value(json!({"name": "m", "file": "m.yaml"})).expect("decoding");
    assert_eq!(manifest.mode, ManifestMode::Full);
}

#[test]
fn go_style_field_names_are_kept() {
    let workers: OmniWorkersSpec = serde_json::from_value(json!({
        "clusterRef": {"name": "edge"},
        "machineClass": {"name": "pool", "size": "∞"},
        "updateStrategy": {"type": "Rolling", "rolling": {"maxParallelism": 2}},
        "labels": {"a": "b"}
    }))
    .expect("decoding");
    assert_eq!(
        workers.machine_set.machine_class,
        Some(MachineClass {
            name: "pool".into(),
            size: IntOrString::String("∞".into())
        })
    );
    assert_eq!(
        workers
            .machine_set
            .descriptors
            .labels
            .as_ref()
            .map(|l| l["a"].as_str()),
        Some("b")
    );
    let back = serde_json::to_value(&workers).expect("encoding");
    assert_eq!(
        back["updateStrategy"],
        json!({"type": "Rolling", "rolling": {"maxParallelism": 2}})
    );
    assert_eq!(back["labels"], json!({"a": "b"}));
}

#[test]
fn conditions_use_the_kubernetes_spelling() {
    let condition: omni_api::Condition = serde_json::from_value(json!({
        "type": "Ready", "status": "False", "observedGeneration": 3,
        "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "ConnectionFailed", "message": ""
    }))
    .expect("decoding");
    assert_eq!(condition.status, ConditionStatus::False);
    assert_eq!(
        serde_json::to_value(&condition).expect("encoding")["message"],
        "",
        "message is required, even empty"
    );
}

#[test]
fn objects_carry_their_kind_and_keep_unknown_metadata() {
    assert_eq!(<OmniConnectionSpec as OmniKind>::PLURAL, "omniconnections");
    assert_eq!(<OmniWorkersSpec as OmniKind>::SINGULAR, "omniworkers");
    let obj: OmniConnection = serde_json::from_value(json!({
        "apiVersion": "omni.texashpc.com/v1alpha1", "kind": "OmniConnection",
        "metadata": {"name": "c", "namespace": "ns", "generation": 2, "finalizers": ["omni.texashpc.com/finalizer"],
                     "managedFields": [{"manager": "kubectl"}]},
        "spec": {"endpoint": "grpc://omni:8090", "auth": {"serviceAccountSecretRef": {"name": "sa", "key": "k"}}}
    }))
    .expect("decoding");
    assert_eq!(
        (obj.name(), obj.namespace(), obj.generation()),
        ("c", "ns", 2)
    );
    assert!(obj.metadata.has_finalizer(omni_api::FINALIZER));
    assert_eq!(
        serde_json::to_value(&obj).expect("encoding")["metadata"]["managedFields"],
        json!([{"manager": "kubectl"}])
    );
}
