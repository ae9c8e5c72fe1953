//! Fuzz target `fuzz_kind_specs`: the eight kinds' objects through their built-in plugins, as WASM in the real
//! runtime. Each case starts from the kind's object in `examples/quickstart` and mutates it — a field replaced by
//! any JSON (numbers at their edges, any Unicode, nesting), removed, or added — then asks the plugin to
//! `validate` it and to `reconcile` it. What must hold, whatever the object:
//!
//! * `validate` answers a verdict: never a trap, a timeout or an error of the host;
//! * `reconcile` ends with the plugin's own error or with outputs the host accepts: never a trap (a guest
//!   panic), a timeout, memory past the cap, or output the host refuses. Every capability answers "not here"
//!   (no Omni, no cluster behind the services), so the plugins' error paths are what runs.
//!
//! Cases per run: proptest's 256, or `PROPTEST_CASES`; `tools/fuzz` runs it longer.

use std::sync::{Arc, OnceLock};

use omni_operator::capabilities::{CallObject, HostServices};
use omni_operator::defaults;
use omni_operator::runtime::{CallError, LoadedPlugin};
use proptest::prelude::*;
use serde::Deserialize;
use serde_json::{Value, json};

use super::fuzz_outputs::{json_value, text};
use super::support;

/// The kinds, each with the built-in plugin that serves it.
pub const KINDS: [(&str, &str); 8] = [
    ("OmniConnection", "omni-connection"),
    ("OmniCluster", "omni-cluster"),
    ("OmniControlPlane", "omni-controlplane"),
    ("OmniWorkers", "omni-workers"),
    ("OmniMachine", "omni-machine"),
    ("OmniHelmRelease", "omni-helm-release"),
    ("OmniKubeconfigExport", "omni-kubeconfig-export"),
    ("OmniSecretSync", "omni-secret-sync"),
];

pub struct Loaded {
    pub rt: tokio::runtime::Runtime,
    pub plugins: Vec<Arc<LoadedPlugin>>,
    pub examples: Vec<Value>,
}

pub fn loaded() -> &'static Loaded {
    static LOADED: OnceLock<Loaded> = OnceLock::new();
    LOADED.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let plugins = KINDS
            .iter()
            .map(|(_, name)| {
                let plugin = defaults::PLUGINS
                    .iter()
                    .find(|p| p.name == *name)
                    .unwrap_or_else(|| panic!("built-in plugin {name}"));
                let spec = plugin.spec().expect("the built-in grants parse");
                rt.block_on(support::runtime().load(spec))
                    .unwrap_or_else(|e| panic!("loading {name}: {e}"))
            })
            .collect();
        let examples = KINDS.iter().map(|(kind, _)| example(kind)).collect();
        Loaded {
            rt,
            plugins,
            examples,
        }
    })
}

/// The first object of `kind` in examples/quickstart, with what the API server would have added.
fn example(kind: &str) -> Value {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/quickstart");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("examples/quickstart")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    for file in files {
        let yaml = std::fs::read_to_string(&file).expect("an example");
        for doc in yaml_serde::Deserializer::from_str(&yaml) {
            let mut object = Value::deserialize(doc).expect("example YAML");
            if object["kind"] == kind {
                let metadata = &mut object["metadata"];
                metadata["uid"] = json!("6a1c9c52-4a4e-4f0e-9a0b-2f5d1c3e7b10");
                metadata["generation"] = json!(1);
                metadata["resourceVersion"] = json!("1");
                metadata["creationTimestamp"] = json!("2026-11-22T07:17:03Z");
                return object;
            }
        }
    }
    panic!("no {kind} in examples/quickstart");
}

/// One change to an object: `at` picks a place among the object's fields and list items (modulo their count).
#[derive(Debug, Clone)]
pub enum Mutation {
    Replace { at: usize, with: Value },
    Remove { at: usize },
    Add { at: usize, key: String, with: Value },
}

/// JSON pointers to every value in `v` (the root excluded), in document order.
fn places(v: &Value, here: String, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let p = format!("{here}/{}", k.replace('~', "~0").replace('/', "~1"));
                out.push(p.clone());
                places(child, p, out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                let p = format!("{here}/{i}");
                out.push(p.clone());
                places(child, p, out);
            }
        }
        _ => {}
    }
}

fn split(pointer: &str) -> (&str, String) {
    let (parent, last) = pointer.rsplit_once('/').unwrap_or(("", pointer));
    (parent, last.replace("~1", "/").replace("~0", "~"))
}

impl Mutation {
    /// Applied to anything but `apiVersion`, `kind`, `metadata.name` and `metadata.namespace`: the host routes
    /// by those before a plugin sees the object.
    pub fn apply(&self, object: &mut Value) {
        self.apply_except(
            object,
            &[
                "/apiVersion",
                "/kind",
                "/metadata",
                "/metadata/name",
                "/metadata/namespace",
            ],
        );
    }

    /// Applied anywhere but at the JSON pointers in `kept`.
    pub fn apply_except(&self, object: &mut Value, kept: &[&str]) {
        let mut all = Vec::new();
        places(object, String::new(), &mut all);
        all.retain(|p| !kept.contains(&p.as_str()));
        if all.is_empty() {
            return;
        }
        let pick = |at: usize| all[at % all.len()].clone();
        match self {
            Mutation::Replace { at, with } => {
                if let Some(slot) = object.pointer_mut(&pick(*at)) {
                    *slot = with.clone();
                }
            }
            Mutation::Remove { at } => {
                let pointer = pick(*at);
                let (parent, last) = split(&pointer);
                match object.pointer_mut(parent) {
                    Some(Value::Object(map)) => {
                        map.remove(&last);
                    }
                    Some(Value::Array(items)) => {
                        if let Ok(i) = last.parse::<usize>()
                            && i < items.len()
                        {
                            items.remove(i);
                        }
                    }
                    _ => {}
                }
            }
            Mutation::Add { at, key, with } => match object.pointer_mut(&pick(*at)) {
                Some(Value::Object(map)) => {
                    map.insert(key.clone(), with.clone());
                }
                Some(Value::Array(items)) => items.push(with.clone()),
                _ => {}
            },
        }
    }
}

pub fn mutation() -> impl Strategy<Value = Mutation> {
    let edge = prop_oneof![
        3 => json_value(),
        1 => prop::sample::select(vec![
            json!(""), json!(0), json!(-1), json!(i64::MIN), json!(u64::MAX), json!(1e308), json!(0.5),
            json!("v1.99999999999999999999.0"), json!("x".repeat(70_000)), json!([]), json!({}), json!(null),
            json!("../../etc/passwd"), json!("file:../../etc/passwd"), json!("oci://"), json!("-1s"), json!("99999h"),
        ]),
    ];
    prop_oneof![
        4 => (any::<usize>(), edge.clone()).prop_map(|(at, with)| Mutation::Replace { at, with }),
        2 => any::<usize>().prop_map(|at| Mutation::Remove { at }),
        1 => (any::<usize>(), text(), edge).prop_map(|(at, key, with)| Mutation::Add { at, key, with }),
    ]
}

fn check(kind: usize, mutations: &[Mutation]) -> Result<(), TestCaseError> {
    let loaded = loaded();
    let (kind_name, plugin_name) = KINDS[kind];
    let plugin = &loaded.plugins[kind];
    let mut object = loaded.examples[kind].clone();
    for m in mutations {
        m.apply(&mut object);
    }
    let text = object.to_string();

    let verdict = loaded.rt.block_on(plugin.validate(&text, None));
    if let Err(e) = &verdict {
        return Err(TestCaseError::fail(format!(
            "{plugin_name} could not validate an {kind_name}: {e} ({:?})\nobject: {:.2000}",
            e.kind(),
            text
        )));
    }

    let Ok(call) = CallObject::parse(text.clone()) else {
        // Not an object the host would hand a plugin (the host refuses it first).
        return Ok(());
    };
    let services = HostServices::default();
    match loaded.rt.block_on(plugin.reconcile(&call, &services)) {
        Ok(_) | Err(CallError::Failed { .. }) => Ok(()),
        Err(CallError::Aborted(e)) => Err(TestCaseError::fail(format!(
            "{plugin_name} was stopped reconciling an {kind_name}: {e} ({:?})\nobject: {:.2000}",
            e.kind(),
            text
        ))),
    }
}

proptest! {
    #[test]
    fn fuzz_kind_specs(kind in 0..KINDS.len(), mutations in prop::collection::vec(mutation(), 1..5)) {
        check(kind, &mutations)?;
    }
}
