//! The well-behaved plugin: reads its object, a ConfigMap through `kube-read` and the clock, and reports status,
//! a condition, an event, a log line and a requeue. Fields of its spec steer it down the paths the tests need.

use omni_plugin_sdk::{
    Condition, EventType, Gvk, Host, Info, ListQuery, LogLevel, ObjectRef, Plugin, ReconcileError,
    Value, Verdict, json,
};

struct Echo;

impl Plugin for Echo {
    fn describe() -> Info {
        Info {
            name: "echo".into(),
            version: "1.0.0".into(),
            kinds: vec![Gvk::new("test.omni.texashpc.com", "v1", "Echo")],
            finalizer: Some("test.omni.texashpc.com/echo".into()),
            capabilities: vec!["kube-read".into(), "clock".into()],
            ..Info::default()
        }
    }

    fn reconcile<H: Host>(host: &H) -> Result<(), ReconcileError> {
        let object = host.object();
        let spec = &object["spec"];
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();

        if let Some(message) = spec["fail"].as_str() {
            // Buffered outputs of a failed call must never be committed.
            host.set_status(json!({ "committed": "must not be" }));
            return Err(ReconcileError::Transient(message.into()));
        }

        let mut status = json!({ "echo": name, "observedAt": host.now() });
        if let Some(config_map) = spec["configMap"].as_str() {
            let target = ObjectRef {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                namespace: spec["configMapNamespace"].as_str().map(Into::into),
                name: config_map.into(),
            };
            match host.kube_get(&target) {
                Ok(Some(found)) => status["config"] = found["data"].clone(),
                Ok(None) => status["config"] = Value::Null,
                Err(e) => status["readError"] = json!(e.to_string()),
            }
        }
        if spec["list"].as_bool() == Some(true) {
            let query = ListQuery {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                namespace: None,
                label_selector: None,
                field_selector: None,
            };
            status["listed"] = json!(host.kube_list(&query)?.len());
        }

        host.set_status(status);
        host.set_condition(Condition::new(
            "Ready",
            true,
            "Echoed",
            format!("echoed {name}"),
        ));
        host.event(EventType::Normal, "Echoed", &format!("echoed {name}"));
        host.log(LogLevel::Info, "echoed", &[("name", &name)]);
        host.requeue_after(30_000);
        Ok(())
    }

    fn finalize<H: Host>(host: &H) -> Result<bool, ReconcileError> {
        let done = host.object()["spec"]["cleanupDone"]
            .as_bool()
            .unwrap_or(true);
        if !done {
            host.requeue_after(1_000);
        }
        Ok(done)
    }

    fn validate(object: &Value, old_object: Option<&Value>) -> Verdict {
        let mut verdict = Verdict::default();
        if object["spec"]["configMap"].is_null() {
            verdict.required("spec.configMap", "the ConfigMap to echo");
        }
        if let Some(old) = old_object {
            if old["spec"]["configMap"] != object["spec"]["configMap"] {
                verdict.forbidden("spec.configMap", "field is immutable");
            }
        }
        verdict
    }
}

omni_plugin_sdk::export_plugin!(Echo);
