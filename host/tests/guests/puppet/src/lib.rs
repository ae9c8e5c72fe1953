//! A plugin whose every output is dictated by its object, for the fuzz tests: `spec.script` is a list of steps
//! (raw `set-status` text, conditions, events, requeues, log lines, stdout, `kube-read` calls with any
//! arguments), `spec.result` how the call ends, and `spec.verdict` what `validate` answers. It goes through the
//! raw contract bindings, so it can hand the host what the SDK would never build (invalid JSON, bad reasons,
//! oversized text); a step the host refuses ends the call there, which is what the tests check.

use omni_plugin_sdk::bindings::exports::omni::operator::{plugin, reconciler, validator};
use omni_plugin_sdk::bindings::omni::operator::context::{
    CallContext, Condition, ConditionStatus, EventType,
};
use omni_plugin_sdk::bindings::omni::operator::kube_read;
use omni_plugin_sdk::bindings::omni::operator::types::{LogLevel, ObjectRef, ReconcileError};
use omni_plugin_sdk::{Value, serde_json};

struct Puppet;

fn text(v: &Value, k: &str) -> String {
    v[k].as_str().unwrap_or_default().to_string()
}

fn opt(v: &Value, k: &str) -> Option<String> {
    v[k].as_str().map(str::to_string)
}

fn step(ctx: &CallContext, s: &Value) {
    match s["do"].as_str().unwrap_or_default() {
        "status" => ctx.set_status(&text(s, "raw")),
        "condition" => ctx.set_condition(&Condition {
            type_: text(s, "type"),
            status: match s["status"].as_str() {
                Some("True") => ConditionStatus::True,
                Some("False") => ConditionStatus::False,
                _ => ConditionStatus::Unknown,
            },
            reason: text(s, "reason"),
            message: text(s, "message"),
        }),
        "event" => ctx.event(
            if s["warning"] == Value::Bool(true) {
                EventType::Warning
            } else {
                EventType::Normal
            },
            &text(s, "reason"),
            &text(s, "message"),
        ),
        "requeue" => ctx.requeue_after(s["ms"].as_u64().unwrap_or_default()),
        "log" => {
            let fields: Vec<(String, String)> = s["fields"]
                .as_array()
                .map(|f| {
                    f.iter()
                        .map(|p| {
                            (
                                p[0].as_str().unwrap_or_default().into(),
                                p[1].as_str().unwrap_or_default().into(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            let level = match s["level"].as_u64() {
                Some(0) => LogLevel::Trace,
                Some(1) => LogLevel::Debug,
                Some(2) => LogLevel::Info,
                Some(3) => LogLevel::Warn,
                _ => LogLevel::Error,
            };
            ctx.log(level, &text(s, "message"), &fields);
        }
        "stdout" => println!("{}", text(s, "text")),
        "get" => {
            let _ = kube_read::get(
                ctx,
                &ObjectRef {
                    api_version: text(s, "apiVersion"),
                    kind: text(s, "kind"),
                    namespace: opt(s, "namespace"),
                    name: text(s, "name"),
                },
            );
        }
        "list" => {
            let _ = kube_read::list(
                ctx,
                &kube_read::ListQuery {
                    api_version: text(s, "apiVersion"),
                    kind: text(s, "kind"),
                    namespace: opt(s, "namespace"),
                    label_selector: opt(s, "labelSelector"),
                    field_selector: opt(s, "fieldSelector"),
                },
            );
        }
        _ => {}
    }
}

fn run(ctx: &CallContext) -> Result<(), ReconcileError> {
    let object: Value = serde_json::from_str(&ctx.object()).unwrap_or_default();
    for s in object["spec"]["script"].as_array().into_iter().flatten() {
        step(ctx, s);
    }
    let result = &object["spec"]["result"];
    match (result["transient"].as_str(), result["permanent"].as_str()) {
        (Some(m), _) => Err(ReconcileError::Transient(m.into())),
        (None, Some(m)) => Err(ReconcileError::Permanent(m.into())),
        (None, None) => Ok(()),
    }
}

impl plugin::Guest for Puppet {
    fn describe() -> plugin::Info {
        plugin::Info {
            name: "puppet".into(),
            version: "1.0.0".into(),
            kinds: vec![omni_plugin_sdk::bindings::omni::operator::types::Gvk {
                group: "test.omni.texashpc.com".into(),
                version: "v1".into(),
                kind: "Puppet".into(),
            }],
            related: Vec::new(),
            finalizer: None,
            legacy_finalizers: Vec::new(),
            capabilities: vec!["kube-read".into()],
            secret_fields: Vec::new(),
        }
    }
}

impl reconciler::Guest for Puppet {
    fn reconcile(ctx: &CallContext) -> Result<(), ReconcileError> {
        run(ctx)
    }

    fn finalize(ctx: &CallContext) -> Result<bool, ReconcileError> {
        run(ctx).map(|()| true)
    }
}

impl validator::Guest for Puppet {
    /// Answers `spec.verdict`: `errors` as `[field, type, value or null, detail]` and `warnings` as strings.
    fn validate(object: String, _old_object: Option<String>) -> validator::Verdict {
        let object: Value = serde_json::from_str(&object).unwrap_or_default();
        let verdict = &object["spec"]["verdict"];
        let errors = verdict["errors"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| validator::FieldError {
                field: e[0].as_str().unwrap_or_default().into(),
                type_: match e[1].as_str() {
                    Some("Required") => validator::FieldErrorType::Required,
                    Some("Forbidden") => validator::FieldErrorType::Forbidden,
                    Some("NotSupported") => validator::FieldErrorType::NotSupported,
                    Some("Duplicate") => validator::FieldErrorType::Duplicate,
                    _ => validator::FieldErrorType::Invalid,
                },
                value: e[2].as_str().map(str::to_string),
                detail: e[3].as_str().unwrap_or_default().into(),
            })
            .collect();
        let warnings = verdict["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|w| w.as_str().unwrap_or_default().to_string())
            .collect();
        validator::Verdict { errors, warnings }
    }
}

omni_plugin_sdk::bindings::export!(Puppet with_types_in omni_plugin_sdk::bindings);
