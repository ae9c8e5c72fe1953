//! Hot swap: a new version serves new calls at once, while calls already running finish on the old one.

use std::sync::Arc;

use omni_operator::capabilities::Grants;
use omni_operator::runtime::PluginRegistry;
use serde_json::json;
use tokio::sync::Semaphore;

use crate::support::{FakeKube, echo_grants, load, object, services};

#[tokio::test]
async fn calls_in_flight_finish_on_the_old_version() {
    let registry = PluginRegistry::new();
    let mut changes = registry.subscribe();
    let v1 = load("echo", echo_grants()).await;
    registry.install(v1.clone());
    assert!(changes.has_changed().unwrap());
    changes.borrow_and_update();

    // A call on v1 that blocks inside its kube-read until the gate opens.
    let gate = Arc::new(Semaphore::new(0));
    let kube = FakeKube::gated(gate.clone()).with_config_map("default", "settings", json!({}));
    let blocked_services = services(kube);
    let started = registry.get("echo").unwrap();
    let in_flight = tokio::spawn(async move {
        started
            .reconcile(
                &object("slow", "default", json!({ "configMap": "settings" })),
                &blocked_services,
            )
            .await
    });
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;

    // Swap in a different component under the same name.
    let v2 = crate::support::runtime()
        .load(
            omni_operator::runtime::PluginSpec::new("echo", crate::guests::wasm("noop"))
                .grants(Grants::none()),
        )
        .await
        .unwrap();
    let previous = registry.install(v2.clone()).expect("v1 was serving");
    assert_eq!(previous.digest(), v1.digest());
    assert!(changes.has_changed().unwrap());

    // New calls use v2 (noop answers with a requeue and no status) while v1's call is still blocked.
    let now = registry.get("echo").unwrap();
    assert_eq!(now.digest(), v2.digest());
    let fresh = now
        .reconcile(
            &object("fresh", "default", json!({})),
            &crate::support::default_services(),
        )
        .await
        .unwrap();
    assert!(fresh.outputs.status.is_empty());
    assert!(!in_flight.is_finished());

    gate.add_permits(1);
    let finished = in_flight
        .await
        .unwrap()
        .expect("the old version's call completes");
    assert_eq!(finished.outputs.status["echo"], "slow", "answered by v1");

    assert!(registry.remove("echo").is_some());
    assert!(registry.get("echo").is_none());
}
