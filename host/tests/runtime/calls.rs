//! A well-behaved plugin's calls: what each export returns and which outputs the caller gets to commit.

use std::time::Duration;

use omni_operator::capabilities::{
    Condition, ConditionStatus, Event, EventType, LogLevel, LogSource,
};
use omni_operator::runtime::{CallError, FieldErrorType, Gvk, ReconcileError};
use serde_json::json;

use crate::support::{FakeKube, default_services, echo_grants, load, object, services};

#[tokio::test]
async fn describe_is_asked_at_load() {
    let echo = load("echo", echo_grants()).await;
    let info = echo.info();
    assert_eq!(info.name, "echo");
    assert_eq!(
        info.kinds,
        vec![Gvk {
            group: "test.omni.texashpc.com".into(),
            version: "v1".into(),
            kind: "Echo".into()
        }]
    );
    assert_eq!(
        info.finalizer.as_deref(),
        Some("test.omni.texashpc.com/echo")
    );
    assert_eq!(info.capabilities, ["kube-read", "clock"]);
    assert_eq!(echo.describe().await.unwrap(), *info);
    assert!(
        echo.imports()
            .iter()
            .any(|i| i == "omni:operator/kube-read@0.1.0"),
        "{:?}",
        echo.imports()
    );
}

#[tokio::test]
async fn reconcile_returns_every_buffered_output() {
    let echo = load("echo", echo_grants()).await;
    let done = echo
        .reconcile(
            &object(
                "demo",
                "default",
                json!({ "configMap": "settings", "list": true }),
            ),
            &default_services(),
        )
        .await
        .unwrap();
    let out = done.outputs;

    assert_eq!(
        serde_json::Value::Object(out.status),
        json!({ "echo": "demo", "observedAt": "2026-11-22T07:17:03Z", "config": { "greeting": "hello" }, "listed": 1 })
    );
    assert_eq!(
        out.conditions,
        [Condition {
            type_: "Ready".into(),
            status: ConditionStatus::True,
            reason: "Echoed".into(),
            message: "echoed demo".into()
        }]
    );
    assert_eq!(
        out.events,
        [Event {
            type_: EventType::Normal,
            reason: "Echoed".into(),
            message: "echoed demo".into()
        }]
    );
    assert_eq!(out.requeue_after, Some(Duration::from_secs(30)));
    let log = out
        .logs
        .iter()
        .find(|l| l.source == LogSource::Plugin)
        .expect("a log line");
    assert_eq!(
        (log.level, log.message.as_str()),
        (LogLevel::Info, "echoed")
    );
    assert_eq!(log.fields, [("name".to_owned(), "demo".to_owned())]);
}

#[tokio::test]
async fn a_missing_object_reads_as_none() {
    let echo = load("echo", echo_grants()).await;
    let done = echo
        .reconcile(
            &object("demo", "default", json!({ "configMap": "absent" })),
            &services(FakeKube::default()),
        )
        .await
        .unwrap();
    assert!(done.outputs.status["config"].is_null());
    assert!(done.outputs.status.contains_key("config"));
}

#[tokio::test]
async fn a_failed_reconcile_returns_its_error_and_no_outputs() {
    let echo = load("echo", echo_grants()).await;
    let result = echo
        .reconcile(
            &object("demo", "default", json!({ "fail": "not today" })),
            &default_services(),
        )
        .await;
    assert_eq!(
        result,
        Err(CallError::Failed {
            plugin: "echo".into(),
            error: ReconcileError::Transient("not today".into()),
            denials: Vec::new(),
            denials_dropped: 0,
        })
    );
}

#[tokio::test]
async fn finalize_reports_whether_cleanup_is_done() {
    let echo = load("echo", echo_grants()).await;
    let done = echo
        .finalize(&object("demo", "default", json!({})), &default_services())
        .await
        .unwrap();
    assert!(done.value);

    let pending = echo
        .finalize(
            &object("demo", "default", json!({ "cleanupDone": false })),
            &default_services(),
        )
        .await
        .unwrap();
    assert!(!pending.value);
    assert_eq!(pending.outputs.requeue_after, Some(Duration::from_secs(1)));
}

#[tokio::test]
async fn validate_returns_field_errors() {
    let echo = load("echo", echo_grants()).await;
    let ok = echo
        .validate(r#"{"spec":{"configMap":"a"}}"#, None)
        .await
        .unwrap();
    assert!(ok.allowed());

    let missing = echo.validate(r#"{"spec":{}}"#, None).await.unwrap();
    assert_eq!(missing.errors.len(), 1);
    assert_eq!(
        (missing.errors[0].field.as_str(), missing.errors[0].type_),
        ("spec.configMap", FieldErrorType::Required)
    );

    let changed = echo
        .validate(
            r#"{"spec":{"configMap":"b"}}"#,
            Some(r#"{"spec":{"configMap":"a"}}"#),
        )
        .await
        .unwrap();
    assert_eq!(changed.errors[0].type_, FieldErrorType::Forbidden);
    assert_eq!(changed.errors[0].detail, "field is immutable");
}

#[tokio::test]
async fn the_object_reaches_the_plugin_unchanged() {
    let noop = load("noop", omni_operator::capabilities::Grants::none()).await;
    let object = object("demo", "default", json!({ "padding": "x".repeat(10_000) }));
    let done = noop.reconcile(&object, &default_services()).await.unwrap();
    assert_eq!(
        done.outputs.requeue_after,
        Some(Duration::from_millis(object.json().len() as u64))
    );
}
