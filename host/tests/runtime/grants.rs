//! Capabilities are denied by default: imports outside the grants are refused at load, and reads outside the
//! object's namespace are denied at call time.

use omni_operator::capabilities::{Capability, Grants};
use omni_operator::runtime::ErrorKind;
use serde_json::json;

use crate::support::{FakeKube, echo_still_serves, load, object, services, try_load};

#[tokio::test]
async fn a_plugin_importing_an_ungranted_capability_is_refused_at_load() {
    let e = try_load("sneaky", Grants::none(), None)
        .await
        .expect_err("sneaky imports omni without a grant");

    assert_eq!(e.kind(), ErrorKind::DeniedCapability);
    assert_eq!(
        e.to_string(),
        "plugin \"sneaky\" imports omni:operator/omni@0.1.0 (capability \"omni\"), which its grants do not include"
    );
    echo_still_serves().await;
}

/// The 0.1.0 contract dropped `helm.ensure`, `helm.uninstall` and `helm.status` before any plugin shipped
/// (wit/README's change log): a component built against the old contract is refused at load, its missing import
/// named, and the runtime serves on.
#[tokio::test]
async fn a_component_importing_a_removed_helm_call_is_refused_naming_it() {
    let wasm = wat::parse_str(
        r#"(component (import "omni:operator/helm@0.1.0" (instance (export "ensure" (func)))))"#,
    )
    .expect("the component assembles");
    let e = crate::support::runtime()
        .load(
            omni_operator::runtime::PluginSpec::new("old-helm", wasm)
                .grants(Grants::none().with(Capability::Helm)),
        )
        .await
        .expect_err("refused");
    let text = format!("{e:#}");
    assert!(
        text.contains("plugin \"old-helm\" does not fit this host's contract")
            && text.contains("`ensure`"),
        "{text}"
    );
    echo_still_serves().await;
}

/// Once granted, the import is served: the host resolves the named OmniConnection (there is none here).
#[tokio::test]
async fn a_granted_capability_is_served_by_the_host() {
    let sneaky = load("sneaky", Grants::none().with(Capability::Omni)).await;
    let done = sneaky
        .reconcile(
            &object("x", "default", json!({})),
            &crate::support::default_services(),
        )
        .await
        .unwrap();
    assert_eq!(
        done.outputs.status["omni"],
        "HostError::NotFound(\"OmniConnection \\\"default\\\" not found in namespace \\\"default\\\"\")"
    );
}

#[tokio::test]
async fn every_missing_grant_is_named() {
    let e = try_load("echo", Grants::none(), None)
        .await
        .expect_err("echo needs kube-read and clock");
    assert_eq!(e.kind(), ErrorKind::DeniedCapability);
    assert!(
        e.message()
            .contains("omni:operator/kube-read@0.1.0 (capability \"kube-read\")"),
        "{e}"
    );
    assert!(
        e.message()
            .contains("omni:operator/clock@0.1.0 (capability \"clock\")"),
        "{e}"
    );
}

#[tokio::test]
async fn reads_default_to_the_objects_namespace() {
    let echo = load("echo", crate::support::echo_grants()).await;
    let kube = FakeKube::default()
        .with_config_map("team-a", "settings", json!({ "tenant": "a" }))
        .with_config_map("team-b", "settings", json!({ "tenant": "b" }));
    let done = echo
        .reconcile(
            &object("x", "team-a", json!({ "configMap": "settings" })),
            &services(kube),
        )
        .await
        .unwrap();
    assert_eq!(done.outputs.status["config"], json!({ "tenant": "a" }));
}

#[tokio::test]
async fn reads_in_another_namespace_are_denied_unless_granted() {
    let kube = || {
        FakeKube::default()
            .with_config_map("team-a", "settings", json!({ "tenant": "a" }))
            .with_config_map("team-b", "settings", json!({ "tenant": "b" }))
    };
    let spec = json!({ "configMap": "settings", "configMapNamespace": "team-b" });

    let scoped = load("echo", crate::support::echo_grants()).await;
    let done = scoped
        .reconcile(&object("x", "team-a", spec.clone()), &services(kube()))
        .await
        .unwrap();
    assert_eq!(
        done.outputs.status["readError"],
        "denied: plugin \"echo\" was denied kube-read: kube-read get ConfigMap \"settings\": reads in namespace \
         \"team-b\" are not granted to a plugin reconciling an object in namespace \"team-a\" (grant `namespace:NS`)"
    );
    // The denial is reported with the outputs, for the controller to put on the object.
    assert_eq!(done.outputs.denials.len(), 1);
    assert_eq!(done.outputs.denials[0].capability, "kube-read");
    assert!(
        !done.outputs.status.contains_key("config"),
        "no data crosses a denied read"
    );

    let widened = load(
        "echo",
        crate::support::echo_grants()
            .read_namespace("team-b")
            .unwrap(),
    )
    .await;
    let done = widened
        .reconcile(&object("x", "team-a", spec), &services(kube()))
        .await
        .unwrap();
    assert_eq!(done.outputs.status["config"], json!({ "tenant": "b" }));
}
