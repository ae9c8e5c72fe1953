//! Fuzz target `fuzz_helm_values`: values of any shape given to the Helm worker, as an OmniHelmRelease's
//! `spec.chart.values` reaches it, rendering the example chart (`examples/charts/hello`) with the real libhelm_c
//! in the real worker process.
//!
//! Whatever the values (not an object, keys the chart reads holding the wrong types, deep nesting, numbers at
//! the edges of what JSON and Go hold, strings with every kind of character), the worker answers: the rendered
//! manifests, or Helm's error with a bounded message. It never dies: the engine starts it once for the whole run.
//! A `message` that is a printable string comes out of the rendered ConfigMap exactly as given (the chart quotes
//! it with Go's `quote`; read back as YAML).
//!
//! Cases per run: proptest's 256, or `PROPTEST_CASES`; `tools/fuzz` runs it longer.

use std::sync::OnceLock;
use std::time::Duration;

use omni_operator::helm::protocol::{ChartRef, Op};
use omni_operator::helm::{EngineError, HelmEngine, WorkerEngine, WorkerOptions};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::helm_fixtures::{lib, package};

/// Helm's error messages quote templates and values; a message past this is not an error message any more.
const MAX_ERROR: usize = 64 * 1024;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio")
    })
}

/// One worker for every case: a case that kills it shows as a second start.
fn engine() -> &'static WorkerEngine {
    static ENGINE: OnceLock<WorkerEngine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        WorkerEngine::new(WorkerOptions {
            program: env!("CARGO_BIN_EXE_omni-operator").into(),
            lib: lib(),
            concurrency: 1,
            memory_limit: Some(omni_operator::helm::DEFAULT_WORKER_MEMORY),
            scratch_base: std::env::temp_dir(),
        })
    })
}

/// `examples/charts/hello`, packaged by Helm, as the worker takes an archive (base64).
fn chart() -> &'static str {
    static CHART: OnceLock<String> = OnceLock::new();
    CHART.get_or_init(|| {
        use base64::Engine as _;
        let helm = helm_c::Helm::load(&lib()).expect("libhelm_c");
        let dir = tempfile::tempdir().expect("tempdir");
        let source = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/charts/hello");
        base64::engine::general_purpose::STANDARD.encode(package(&helm, source, dir.path()))
    })
}

/// Keys the chart reads, and others.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "replicaCount", "message", "image", "repository", "tag", "service", "port", "nameOverride",
            "fullnameOverride", "global", "resources", "labels",
        ])
        .prop_map(str::to_string),
        1 => "[a-zA-Z_.$-]{0,12}",
        1 => any::<String>().prop_map(|s| s.chars().take(16).collect()),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[ -~]{0,40}",
        // Line breaks, tabs, quotes, backslashes, template delimiters, YAML indicators.
        prop::collection::vec(
            prop::sample::select(vec![
                "\n", "\r\n", "\t", "\"", "'", "\\", "{{", "}}", ": ", "- ", "#", "&a", "*a",
                "!!str", "%", "@", "`", "|", ">", "\u{0}", "\u{7f}", "\u{85}", "\u{2028}",
                "\u{feff}", "é", "日本", "🦀", "  ",
            ]),
            0..12
        )
        .prop_map(|parts| parts.concat()),
        any::<String>().prop_map(|s| s.chars().take(64).collect()),
        // Long.
        (1usize..5000).prop_map(|n| "x".repeat(n)),
    ]
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        prop::sample::select(vec![
            0.0,
            -0.0,
            0.5,
            1e-300,
            1e300,
            f64::MAX,
            f64::MIN_POSITIVE,
            2f64.powi(53) + 1.0
        ])
        .prop_map(|f| json!(f)),
        text().prop_map(Value::String),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Mostly an object (what values are); now and then anything at all.
fn values() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => prop::collection::vec((key(), value()), 0..8)
            .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        1 => value(),
    ]
}

fn check(mut values: Value, message: Option<String>) -> Result<(), TestCaseError> {
    if let (Some(m), Some(object)) = (&message, values.as_object_mut()) {
        object.insert("message".into(), json!(m));
    }
    let render = Op::Render {
        chart: ChartRef::Archive(chart().to_string()),
        values: values.clone(),
        options: json!({"name": "fuzz", "namespace": "apps"}),
    };
    let answer = runtime().block_on(engine().run(render, None, Duration::from_secs(60)));
    match answer {
        Ok(rendered) => {
            prop_assert!(rendered.is_object(), "rendered: {rendered}");
            if let (Some(m), true) = (&message, values.is_object()) {
                let manifest = rendered
                    .as_object()
                    .and_then(|files| {
                        files
                            .iter()
                            .find(|(path, _)| path.ends_with("configmap.yaml"))
                            .and_then(|(_, text)| text.as_str())
                    })
                    .ok_or_else(|| TestCaseError::fail(format!("no ConfigMap in {rendered}")))?;
                let doc: Value = yaml_serde::from_str(manifest)
                    .map_err(|e| TestCaseError::fail(format!("{e}: {manifest}")))?;
                prop_assert_eq!(
                    doc["data"]["message"].as_str(),
                    Some(m.as_str()),
                    "{}",
                    manifest
                );
            }
        }
        Err(EngineError::Helm {
            code,
            message: text,
        }) => {
            prop_assert!(!code.is_empty());
            prop_assert!(
                text.len() <= MAX_ERROR,
                "{} bytes: {}…",
                text.len(),
                &text[..200.min(text.len())]
            );
        }
        Err(other) => {
            return Err(TestCaseError::fail(format!(
                "the worker did not answer with Helm's result or error: {other} (values {values})"
            )));
        }
    }
    prop_assert_eq!(engine().starts(), 1, "the worker died (values {})", values);
    Ok(())
}

proptest! {
    #[test]
    fn fuzz_helm_values(values in values(), message in prop::option::of("[ -~]{0,60}")) {
        check(values, message)?;
    }
}
