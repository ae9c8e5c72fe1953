//! Fuzz targets `fuzz_plugin_output_reconcile` and `_validate`: what a plugin hands the host, as the host
//! receives it. The `puppet` test plugin (tests/guests/puppet) runs a generated script through the raw contract
//! bindings — status documents that are not JSON or not objects or at the size limit's edge, conditions and
//! Events with reasons Kubernetes refuses, messages past their limits, log lines with too many fields, stdout,
//! `kube-read` calls with any arguments — in the real runtime. A model written from the contract's rules (wit/omni-operator.wit, Kubernetes' limits on conditions
//! and Events) says what the host must answer; the test checks the host answers exactly that:
//!
//! * a step the host refuses aborts the call with a typed error (`PluginInvalidOutput` / `PluginOutputTooLarge`),
//!   and no output of the call is returned;
//! * otherwise the outputs are exactly the model's (status merged one level deep, conditions upserted by type,
//!   messages cut to their limits), and every text the host keeps is within its bound;
//! * a `reconcile-error` comes back as the plugin's error with its text bounded, and no output;
//! * `validate`'s verdict comes back bounded in count and in every string.
//!
//! Cases per run: proptest's 256 (what the README's test command runs), or `PROPTEST_CASES`; `tools/fuzz` runs
//! the fuzz targets for as long as asked. Failures proptest finds are kept in `host/tests/proptest-regressions/`
//! and replayed first on every run.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use omni_operator::capabilities::Grants;
use omni_operator::runtime::{CallError, ErrorKind, LoadedPlugin, ReconcileError};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::support::{self, FakeKube};

/// Kubernetes' limits and the host's bounds on what one call may output, restated from their sources rather
/// than imported, so that the model does not move when the host does.
const MAX_STATUS_BYTES: usize = 256 * 1024;
const MAX_CONDITIONS: usize = 64;
const MAX_EVENTS: usize = 64;
const MAX_CONDITION_TYPE: usize = 316;
const MAX_CONDITION_REASON: usize = 1024;
const MAX_CONDITION_MESSAGE: usize = 32 * 1024;
const MAX_EVENT_REASON: usize = 128;
const MAX_EVENT_MESSAGE: usize = 1024;
const MAX_LOG_LINES: usize = 256;
const MAX_LOG_MESSAGE: usize = 4096;
const MAX_LOG_FIELDS: usize = 32;
const MAX_LOG_FIELD_KEY: usize = 128;
const MAX_LOG_FIELD_VALUE: usize = 1024;
const MAX_ERROR_MESSAGE: usize = 4096;
const MAX_CAUSES: usize = 100;
const MAX_WARNINGS_TOTAL: usize = 4096;
/// A denial names what the plugin asked for; however long the plugin's strings, the sentence stays readable.
const MAX_DENIAL_MESSAGE: usize = 2048;

/// One tokio runtime for every case (proptest's cases are synchronous), and the loaded puppet.
fn puppet() -> &'static (tokio::runtime::Runtime, Arc<LoadedPlugin>) {
    static PUPPET: OnceLock<(tokio::runtime::Runtime, Arc<LoadedPlugin>)> = OnceLock::new();
    PUPPET.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let grants = Grants::parse(["kube-read:core/ConfigMap"]).expect("grants parse");
        let plugin = rt.block_on(support::load("puppet", grants));
        (rt, plugin)
    })
}

#[derive(Debug, Clone)]
enum Step {
    Status(String),
    Condition {
        type_: String,
        status: &'static str,
        reason: String,
        message: String,
    },
    Event {
        warning: bool,
        reason: String,
        message: String,
    },
    Requeue(u64),
    /// A line on the plugin's stdout (captured as a log line).
    Stdout(String),
    Log {
        level: u8,
        message: String,
        fields: Vec<(String, String)>,
    },
    Get {
        api_version: String,
        kind: String,
        namespace: Option<String>,
        name: String,
    },
    List {
        api_version: String,
        kind: String,
        label_selector: Option<String>,
        field_selector: Option<String>,
    },
}

impl Step {
    fn json(&self) -> Value {
        match self {
            Step::Status(raw) => json!({"do": "status", "raw": raw}),
            Step::Condition {
                type_,
                status,
                reason,
                message,
            } => {
                json!({"do": "condition", "type": type_, "status": status, "reason": reason, "message": message})
            }
            Step::Event {
                warning,
                reason,
                message,
            } => json!({"do": "event", "warning": warning, "reason": reason, "message": message}),
            Step::Requeue(ms) => json!({"do": "requeue", "ms": ms}),
            Step::Stdout(text) => json!({"do": "stdout", "text": text}),
            Step::Log {
                level,
                message,
                fields,
            } => json!({"do": "log", "level": level, "message": message, "fields": fields}),
            Step::Get {
                api_version,
                kind,
                namespace,
                name,
            } => {
                json!({"do": "get", "apiVersion": api_version, "kind": kind, "namespace": namespace, "name": name})
            }
            Step::List {
                api_version,
                kind,
                label_selector,
                field_selector,
            } => json!({"do": "list", "apiVersion": api_version, "kind": kind,
                "labelSelector": label_selector, "fieldSelector": field_selector}),
        }
    }
}

#[derive(Debug, Clone)]
enum Ending {
    Ok,
    Transient(String),
    Permanent(String),
}

// ---- generators -------------------------------------------------------------------------------------------

/// Text of every kind the host meets: short words, any Unicode, control characters, and runs near a limit.
pub fn text() -> BoxedStrategy<String> {
    prop_oneof![
            4 => "[A-Za-z0-9 ._-]{0,24}",
            2 => any::<String>(),
            1 => "[\\x00-\\x1f\"\\\\]{0,8}",
            // Exactly one byte under, at and over a limit, ending in a two-byte character where the cut falls.
            1 => (0usize..3, prop::sample::select(vec![128usize, 316, 1024, 4096, 32 * 1024]))
                .prop_map(|(d, n)| "x".repeat(n - 3 + d) + "é"),
    ]
    .boxed()
}

/// A condition or Event reason: mostly valid CamelCase, sometimes at a length limit, sometimes anything.
fn reason() -> BoxedStrategy<String> {
    prop_oneof![
        4 => "[A-Z][A-Za-z0-9]{0,16}",
        1 => "[A-Za-z][A-Za-z0-9_,:]{0,6}[A-Za-z0-9_]",
        1 => (0usize..3, prop::sample::select(vec![MAX_EVENT_REASON, MAX_CONDITION_REASON]))
            .prop_map(|(d, n)| format!("R{}", "a".repeat(n + d - 2))),
        2 => text(),
    ]
    .boxed()
}

fn condition_type() -> BoxedStrategy<String> {
    prop_oneof![
        4 => prop::sample::select(vec!["Ready", "Synced", "example.com/Healthy", "a-b_c.d"]).prop_map(String::from),
        1 => (0usize..3).prop_map(|d| "T".repeat(MAX_CONDITION_TYPE - 1 + d)),
        1 => text(),
    ]
    .boxed()
}

/// Any JSON value, a few levels deep, with numbers at their edges.
pub fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// A `set-status` document: mostly objects of fields (now and then a host-owned one), and the other things a
/// plugin can send: other JSON, not JSON at all, numbers serde cannot hold, nesting past the parser's limit, and
/// documents at the size limit.
fn status_raw() -> BoxedStrategy<String> {
    let field = prop_oneof![
        6 => "[a-z][A-Za-z]{0,10}",
        1 => prop::sample::select(vec!["conditions", "observedGeneration"]).prop_map(String::from),
        1 => text(),
    ];
    prop_oneof![
        8 => prop::collection::vec((field, json_value()), 0..5)
            .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>()).to_string()),
        1 => json_value().prop_map(|v| v.to_string()),
        1 => text(),
        1 => prop::sample::select(vec![
            r#"{"n": 1e400}"#, r#"{"n": -0}"#, r#"{"n": 18446744073709551616}"#, r#"{"a": 1, "a": 2}"#,
            r#"{"s": "\ud800"}"#, "{", "", "null",
        ]).prop_map(String::from),
        1 => (120usize..140).prop_map(|depth| format!("{{\"d\":{}1{}}}", "[".repeat(depth), "]".repeat(depth))),
        1 => (0usize..3).prop_map(|d| {
            // `{"big":"…"}` of exactly MAX_STATUS_BYTES - 1 + d bytes.
            let overhead = r#"{"big":""}"#.len();
            format!(r#"{{"big":"{}"}}"#, "x".repeat(MAX_STATUS_BYTES - 1 + d - overhead))
        }),
    ]
    .boxed()
}

fn step() -> impl Strategy<Value = Step> {
    let maybe = |s: BoxedStrategy<String>| prop::option::of(s);
    prop_oneof![
        3 => status_raw().prop_map(Step::Status),
        3 => (condition_type(), prop::sample::select(vec!["True", "False", "Unknown"]), reason(), text())
            .prop_map(|(type_, status, reason, message)| Step::Condition { type_, status, reason, message }),
        2 => (any::<bool>(), reason(), text())
            .prop_map(|(warning, reason, message)| Step::Event { warning, reason, message }),
        1 => any::<u64>().prop_map(Step::Requeue),
        1 => text().prop_map(Step::Stdout),
        2 => (0u8..6, text(), prop::collection::vec((text(), text()), 0..40))
            .prop_map(|(level, message, fields)| Step::Log { level, message, fields }),
        2 => (
            prop_oneof![Just("v1".to_string()), Just("apps/v1".to_string()), text()],
            prop_oneof![Just("ConfigMap".to_string()), Just("Secret".to_string()), text()],
            maybe(text()),
            text(),
        ).prop_map(|(api_version, kind, namespace, name)| Step::Get { api_version, kind, namespace, name }),
        1 => (
            prop_oneof![Just("v1".to_string()), text()],
            prop_oneof![Just("ConfigMap".to_string()), text()],
            maybe(prop_oneof![Just("app=x,tier in (a,b)".to_string()), text()].boxed()),
            maybe(prop_oneof![Just("metadata.name=x".to_string()), text()].boxed()),
        ).prop_map(|(api_version, kind, label_selector, field_selector)| Step::List { api_version, kind, label_selector, field_selector }),
    ]
}

fn ending() -> impl Strategy<Value = Ending> {
    prop_oneof![
        4 => Just(Ending::Ok),
        1 => text().prop_map(Ending::Transient),
        1 => prop_oneof![text(), (0usize..3).prop_map(|d| "m".repeat(MAX_ERROR_MESSAGE - 1 + d))]
            .prop_map(Ending::Permanent),
    ]
}

/// Some scripts repeat one step many times, so the count limits are reached too.
fn script() -> impl Strategy<Value = Vec<Step>> {
    prop_oneof![
        4 => prop::collection::vec(step(), 0..12),
        1 => (step(), 60usize..70).prop_map(|(s, n)| vec![s; n]),
    ]
}

// ---- the model --------------------------------------------------------------------------------------------

/// `metav1.Condition.reason`'s pattern, `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`, and a length limit.
fn valid_reason(reason: &str, max: usize) -> bool {
    let b = reason.as_bytes();
    !b.is_empty()
        && reason.len() <= max
        && b[0].is_ascii_alphabetic()
        && (b[b.len() - 1].is_ascii_alphanumeric() || b[b.len() - 1] == b'_')
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || b"_,:".contains(c))
}

/// A condition type: a qualified name of letters, digits and `-_./`, 1 to 316 bytes.
fn valid_type(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= MAX_CONDITION_TYPE
        && t.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"-_./".contains(&c))
}

/// `text` as the host must keep it under a limit of `max` bytes: whole when it fits, otherwise a prefix cut on
/// a character boundary with `…` as its last character, within `max`.
fn kept_within(original: &str, kept: &str, max: usize) -> bool {
    if original.len() <= max {
        return kept == original;
    }
    kept.len() <= max
        && kept
            .strip_suffix('…')
            .is_some_and(|prefix| original.starts_with(prefix) && !prefix.is_empty())
}

#[derive(Debug, PartialEq)]
enum Refusal {
    Invalid,
    TooLarge,
}

#[derive(Default, Debug)]
struct Model {
    status: Map<String, Value>,
    /// (type, status, reason, original message), in the order first set.
    conditions: Vec<(String, String, String, String)>,
    events: Vec<(bool, String, String)>,
    requeue: Option<u64>,
    plugin_logs: Vec<(String, usize)>,
}

impl Model {
    /// Applies one step as the contract says; `Err` when the host must abort the call there.
    fn apply(&mut self, step: &Step) -> Result<(), Refusal> {
        match step {
            Step::Status(raw) => {
                if raw.len() > MAX_STATUS_BYTES {
                    return Err(Refusal::TooLarge);
                }
                let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(raw) else {
                    return Err(Refusal::Invalid);
                };
                if fields.contains_key("conditions") || fields.contains_key("observedGeneration") {
                    return Err(Refusal::Invalid);
                }
                let mut merged = self.status.clone();
                merged.extend(fields);
                if Value::Object(merged.clone()).to_string().len() > MAX_STATUS_BYTES {
                    return Err(Refusal::TooLarge);
                }
                self.status = merged;
            }
            Step::Condition {
                type_,
                status,
                reason,
                message,
            } => {
                if !valid_type(type_) || !valid_reason(reason, MAX_CONDITION_REASON) {
                    return Err(Refusal::Invalid);
                }
                let entry = (
                    type_.clone(),
                    status.to_string(),
                    reason.clone(),
                    message.clone(),
                );
                match self.conditions.iter().position(|c| &c.0 == type_) {
                    Some(i) => self.conditions[i] = entry,
                    None if self.conditions.len() >= MAX_CONDITIONS => {
                        return Err(Refusal::TooLarge);
                    }
                    None => self.conditions.push(entry),
                }
            }
            Step::Event {
                warning,
                reason,
                message,
            } => {
                if !valid_reason(reason, MAX_EVENT_REASON) {
                    return Err(Refusal::Invalid);
                }
                if self.events.len() >= MAX_EVENTS {
                    return Err(Refusal::TooLarge);
                }
                self.events
                    .push((*warning, reason.clone(), message.clone()));
            }
            Step::Requeue(ms) => self.requeue = Some(*ms),
            Step::Stdout(_) => {}
            Step::Log {
                message, fields, ..
            } => self.plugin_logs.push((message.clone(), fields.len())),
            Step::Get { .. } | Step::List { .. } => {}
        }
        Ok(())
    }
}

fn puppet_object(script: &[Step], ending: &Ending) -> omni_operator::capabilities::CallObject {
    let result = match ending {
        Ending::Ok => json!({}),
        Ending::Transient(m) => json!({"transient": m}),
        Ending::Permanent(m) => json!({"permanent": m}),
    };
    let object = json!({
        "apiVersion": "test.omni.texashpc.com/v1", "kind": "Puppet",
        "metadata": {"name": "p", "namespace": "default", "generation": 1},
        "spec": {"script": script.iter().map(Step::json).collect::<Vec<_>>(), "result": result},
    });
    omni_operator::capabilities::CallObject::parse(object.to_string()).expect("the object parses")
}

fn check_reconcile(script: &[Step], ending: &Ending) -> Result<(), TestCaseError> {
    let (rt, plugin) = puppet();
    let object = puppet_object(script, ending);
    let services = support::services(FakeKube::default().with_config_map(
        "default",
        "settings",
        json!({"k": "v"}),
    ));
    let result = rt.block_on(plugin.reconcile(&object, &services));

    let mut model = Model::default();
    let refusal = script.iter().find_map(|s| model.apply(s).err());
    if let Some(refusal) = refusal {
        let Err(CallError::Aborted(e)) = &result else {
            return Err(TestCaseError::fail(format!(
                "the host must abort the call ({refusal:?}), but answered {result:?}"
            )));
        };
        let want = match refusal {
            Refusal::Invalid => ErrorKind::InvalidOutput,
            Refusal::TooLarge => ErrorKind::OutputTooLarge,
        };
        prop_assert_eq!(e.kind(), want, "error: {}", e);
        prop_assert!(
            e.message()
                .starts_with("produced output the host refuses: ")
        );
        prop_assert!(
            e.message().len() <= MAX_ERROR_MESSAGE,
            "an abort message of {} bytes",
            e.message().len()
        );
        return Ok(());
    }

    let outputs = match (ending, result) {
        (Ending::Ok, Ok(done)) => done.outputs,
        (
            Ending::Transient(m) | Ending::Permanent(m),
            Err(CallError::Failed { error, denials, .. }),
        ) => {
            let (kept, transient) = match &error {
                ReconcileError::Transient(k) => (k, true),
                ReconcileError::Permanent(k) => (k, false),
            };
            prop_assert_eq!(transient, matches!(ending, Ending::Transient(_)));
            prop_assert!(
                kept_within(m, kept, MAX_ERROR_MESSAGE),
                "error text {} bytes",
                kept.len()
            );
            check_denials(&denials)?;
            return Ok(());
        }
        (_, other) => {
            return Err(TestCaseError::fail(format!(
                "ending {ending:?} answered as {other:?}"
            )));
        }
    };

    prop_assert_eq!(&outputs.status, &model.status);
    prop_assert_eq!(outputs.conditions.len(), model.conditions.len());
    for (got, (type_, status, reason, message)) in outputs.conditions.iter().zip(&model.conditions)
    {
        prop_assert_eq!(&got.type_, type_);
        prop_assert_eq!(got.status.as_str(), status.as_str());
        prop_assert_eq!(&got.reason, reason);
        prop_assert!(kept_within(message, &got.message, MAX_CONDITION_MESSAGE));
    }
    prop_assert_eq!(outputs.events.len(), model.events.len());
    for (got, (warning, reason, message)) in outputs.events.iter().zip(&model.events) {
        prop_assert_eq!(
            got.type_ == omni_operator::contract::EventType::Warning,
            *warning
        );
        prop_assert_eq!(&got.reason, reason);
        prop_assert!(kept_within(message, &got.message, MAX_EVENT_MESSAGE));
    }
    prop_assert_eq!(
        outputs.requeue_after,
        model.requeue.map(Duration::from_millis)
    );
    prop_assert!(outputs.logs.len() <= MAX_LOG_LINES);
    // Every line kept, the plugin's and its stdout's, is within its bounds.
    for line in &outputs.logs {
        prop_assert!(
            line.message.len() <= MAX_LOG_MESSAGE,
            "a log line of {} bytes",
            line.message.len()
        );
        prop_assert!(line.fields.len() <= MAX_LOG_FIELDS);
        for (key, value) in &line.fields {
            prop_assert!(key.len() <= MAX_LOG_FIELD_KEY && value.len() <= MAX_LOG_FIELD_VALUE);
        }
    }
    let plugin_logs: Vec<_> = outputs
        .logs
        .iter()
        .filter(|l| l.source == omni_operator::contract::LogSource::Plugin)
        .collect();
    prop_assert_eq!(
        plugin_logs.len() + outputs.logs_dropped >= model.plugin_logs.len(),
        true,
        "log lines lost without being counted"
    );
    for (got, (message, fields)) in plugin_logs.iter().zip(&model.plugin_logs) {
        prop_assert!(kept_within(message, &got.message, MAX_LOG_MESSAGE));
        prop_assert_eq!(got.fields.len(), (*fields).min(MAX_LOG_FIELDS));
    }
    check_denials(&outputs.denials)
}

fn check_denials(denials: &[omni_operator::contract::Denial]) -> Result<(), TestCaseError> {
    prop_assert!(denials.len() <= omni_operator::contract::MAX_DENIALS);
    for d in denials {
        let message = d.message("puppet");
        prop_assert!(
            message.len() <= MAX_DENIAL_MESSAGE,
            "a denial of {} bytes: {}",
            message.len(),
            runs_shortened(&message)
        );
    }
    Ok(())
}

/// `text` with every run of one character longer than 8 written as `c×n`, so a failure shows the shape of a long
/// text.
pub fn runs_shortened(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let mut n = 1;
        while chars.peek() == Some(&c) {
            chars.next();
            n += 1;
        }
        if n > 8 {
            out.push_str(&format!("{c:?}×{n}"));
        } else {
            out.extend(std::iter::repeat_n(c, n));
        }
    }
    out
}

fn check_validate(
    errors: &[(String, String, Option<String>, String)],
    warnings: &[String],
) -> Result<(), TestCaseError> {
    let (rt, plugin) = puppet();
    let verdict_in = json!({
        "errors": errors.iter().map(|(f, t, v, d)| json!([f, t, v, d])).collect::<Vec<_>>(),
        "warnings": warnings,
    });
    let object = json!({"apiVersion": "test.omni.texashpc.com/v1", "kind": "Puppet",
        "metadata": {"name": "p", "namespace": "default"}, "spec": {"verdict": verdict_in}});
    let verdict = rt
        .block_on(plugin.validate(&object.to_string(), None))
        .map_err(|e| TestCaseError::fail(format!("validate failed: {e}")))?;
    let shown = errors.len().min(MAX_CAUSES);
    let summary = usize::from(errors.len() > MAX_CAUSES);
    prop_assert_eq!(verdict.errors.len(), shown + summary);
    for (got, (field, _, value, detail)) in verdict.errors.iter().zip(errors).take(shown) {
        prop_assert!(kept_within(field, &got.field, 256));
        prop_assert!(kept_within(detail, &got.detail, 1024));
        match (value, &got.value) {
            (None, None) => {}
            (Some(v), Some(g)) => prop_assert!(kept_within(v, g, 1024)),
            _ => return Err(TestCaseError::fail("the offending value changed presence")),
        }
    }
    prop_assert!(verdict.warnings.iter().map(String::len).sum::<usize>() <= MAX_WARNINGS_TOTAL);
    for (got, sent) in verdict.warnings.iter().zip(warnings) {
        prop_assert!(kept_within(sent, got, 256));
    }
    prop_assert_eq!(verdict.allowed(), errors.is_empty());
    Ok(())
}

proptest! {
    #[test]
    fn fuzz_plugin_output_reconcile(script in script(), ending in ending()) {
        check_reconcile(&script, &ending)?;
    }

    #[test]
    fn fuzz_plugin_output_validate(
        errors in prop_oneof![
            4 => prop::collection::vec((text(), prop::sample::select(vec!["Required", "Invalid", "Forbidden", "Duplicate", "NotSupported"]).prop_map(String::from), prop::option::of(text()), text()), 0..6),
            1 => (text(), 95usize..110).prop_map(|(t, n)| vec![(t.clone(), "Invalid".to_string(), None, t); n]),
        ],
        warnings in prop::collection::vec(text(), 0..40),
    ) {
        check_validate(&errors, &warnings)?;
    }
}

/// Found by `fuzz_plugin_output_reconcile`: captured stdout became log lines outside the call's log bounds, so
/// 64 KiB of one-character lines would have been tens of thousands of log lines from one call. Now they count
/// against the call's lines and each is cut like the plugin's own.
#[test]
fn a_plugin_flooding_stdout_gets_the_log_bounds_of_its_own_lines() {
    let (rt, plugin) = puppet();
    let script = [
        Step::Stdout("x\n".repeat(5_000)),
        Step::Stdout("y".repeat(20_000)),
    ];
    let done = rt
        .block_on(plugin.reconcile(
            &puppet_object(&script, &Ending::Ok),
            &support::services(FakeKube::default()),
        ))
        .expect("the call completes");
    let logs = &done.outputs.logs;
    assert_eq!(logs.len(), MAX_LOG_LINES, "lines kept");
    assert!(
        done.outputs.logs_dropped >= 5_000 - MAX_LOG_LINES,
        "{} dropped",
        done.outputs.logs_dropped
    );
    assert!(logs.iter().all(|l| l.message.len() <= MAX_LOG_MESSAGE));
}
