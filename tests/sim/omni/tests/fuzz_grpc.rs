//! Fuzz target `fuzz_omni_sim_grpc`: generated COSI State calls through a real signed tonic client against omni-sim —
//! Create, Update, Get, List, Teardown and Destroy with resource types Omni has and types it does not, IDs and
//! label keys from a small pool (so the calls of a case meet) or anything, label queries of every operator with
//! any values, ID regular expressions of any text, `proto_spec` bytes that are a real spec, noise or empty, and
//! `yaml_spec` text. Real Omni answers bad calls with a gRPC status naming the problem; so must the simulator:
//!
//! * no call ends in `Internal`, or in `Unknown` other than the Go errors Omni's COSI server returns as such (a
//!   handler that panicked, or a broken stream, ends that way too);
//! * after every call the simulator still lists clusters.
//!
//! Cases per run: proptest's 256 (what the README's test command runs), or `PROPTEST_CASES`; `tools/fuzz` runs it
//! longer. Failures are kept in `fuzz_grpc.proptest-regressions` beside this file.

mod common;

use std::sync::OnceLock;

use common::*;
use omni_sim::OmniSim;
use omni_wire::cosi::{LabelQuery, LabelTerm, Resource};
use proptest::prelude::*;
use tonic::Code;

struct Sim {
    rt: tokio::runtime::Runtime,
    _sim: OmniSim,
    client: State,
}

/// One simulator for every case: what earlier cases stored stays, as it would in a long-lived Omni.
fn sim() -> &'static Sim {
    static SIM: OnceLock<Sim> = OnceLock::new();
    SIM.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let (sim, client, _) = rt.block_on(setup());
        Sim {
            rt,
            _sim: sim,
            client,
        }
    })
}

fn text() -> BoxedStrategy<String> {
    prop_oneof![
        4 => "[a-z0-9][a-z0-9.-]{0,12}",
        1 => prop::sample::select(vec!["", ".", "..", "a/b", "UPPER", "x".repeat(300).leak(), "(", "[", "*", "\\"]).prop_map(String::from),
        1 => any::<String>(),
    ]
    .boxed()
}

fn type_() -> BoxedStrategy<String> {
    prop_oneof![
        6 => prop::sample::select(vec![
            omni_sim::types::CLUSTERS, omni_sim::types::MACHINE_SETS, omni_sim::types::MACHINE_SET_NODES,
            omni_sim::types::CONFIG_PATCHES, omni_sim::types::KUBERNETES_MANIFEST_GROUPS,
            omni_sim::types::EXTENSIONS_CONFIGURATIONS, omni_sim::types::KERNEL_ARGS,
            omni_sim::types::CLUSTER_STATUSES, omni_sim::types::MACHINE_STATUSES, omni_sim::types::LINKS,
        ]).prop_map(String::from),
        1 => text(),
    ]
    .boxed()
}

fn id() -> BoxedStrategy<String> {
    prop_oneof![
        4 => prop::sample::select(vec!["edge", "edge-control-planes", "edge-workers", "400-edge-patch", "m1"]).prop_map(String::from),
        1 => text(),
    ]
    .boxed()
}

fn label_key() -> BoxedStrategy<String> {
    prop_oneof![
        4 => prop::sample::select(vec![
            omni_sim::types::LABEL_CLUSTER, omni_sim::types::LABEL_MACHINE_SET, omni_sim::types::LABEL_ROLE_WORKER, "app",
        ]).prop_map(String::from),
        1 => text(),
    ]
    .boxed()
}

fn spec() -> impl Strategy<Value = (Vec<u8>, String)> {
    (
        prop_oneof![
            2 => Just(Vec::new()),
            // A real ClusterSpec's first fields: talos and kubernetes versions as length-delimited strings.
            2 => ("v1\\.[0-9]{1,2}\\.[0-9]", "v1\\.[0-9]{1,2}\\.[0-9]").prop_map(|(t, k)| {
                let mut b = vec![0x12, t.len() as u8];
                b.extend(t.bytes());
                b.extend([0x1a, k.len() as u8]);
                b.extend(k.bytes());
                b
            }),
            2 => prop::collection::vec(any::<u8>(), 0..48),
        ],
        prop_oneof![3 => Just(String::new()), 1 => text(), 1 => Just("talosversion: v1.13.2\nkubernetesversion: [".into())],
    )
}

#[derive(Debug, Clone)]
enum Call {
    Create {
        type_: String,
        id: String,
        labels: Vec<(String, String)>,
        spec: (Vec<u8>, String),
    },
    Update {
        type_: String,
        id: String,
        labels: Vec<(String, String)>,
        spec: (Vec<u8>, String),
        version: String,
    },
    Get {
        type_: String,
        id: String,
    },
    List {
        type_: String,
        terms: Vec<(String, i32, Vec<String>, bool)>,
        id_regexp: Option<String>,
    },
    Teardown {
        type_: String,
        id: String,
    },
    Destroy {
        type_: String,
        id: String,
    },
}

fn call() -> impl Strategy<Value = Call> {
    let labels = prop::collection::vec((label_key(), text()), 0..3);
    prop_oneof![
        3 => (type_(), id(), labels.clone(), spec()).prop_map(|(type_, id, labels, spec)| Call::Create { type_, id, labels, spec }),
        2 => (type_(), id(), labels, spec(), prop_oneof![Just("undefined".to_string()), Just("1".to_string()), text()])
            .prop_map(|(type_, id, labels, spec, version)| Call::Update { type_, id, labels, spec, version }),
        2 => (type_(), id()).prop_map(|(type_, id)| Call::Get { type_, id }),
        2 => (type_(), prop::collection::vec((label_key(), -1i32..9, prop::collection::vec(text(), 0..3), any::<bool>()), 0..3), prop::option::of(text()))
            .prop_map(|(type_, terms, id_regexp)| Call::List { type_, terms, id_regexp }),
        1 => (type_(), id()).prop_map(|(type_, id)| Call::Teardown { type_, id }),
        1 => (type_(), id()).prop_map(|(type_, id)| Call::Destroy { type_, id }),
    ]
}

fn resource(
    type_: &str,
    id: &str,
    labels: &[(String, String)],
    spec: &(Vec<u8>, String),
) -> Resource {
    let mut r = omni_sim::store::new_resource("default", type_, id, spec.0.clone());
    if let Some(m) = r.metadata.as_mut() {
        m.labels.extend(labels.iter().cloned());
    }
    if let Some(s) = r.spec.as_mut() {
        s.yaml_spec = spec.1.clone();
    }
    r
}

async fn run(c: &mut State, call: &Call) -> Result<(), tonic::Status> {
    match call {
        Call::Create {
            type_,
            id,
            labels,
            spec,
        } => create(c, resource(type_, id, labels, spec)).await.map(drop),
        Call::Update {
            type_,
            id,
            labels,
            spec,
            version,
        } => {
            let mut r = resource(type_, id, labels, spec);
            if let Some(m) = r.metadata.as_mut() {
                m.version = version.clone();
            }
            update(c, r).await.map(drop)
        }
        Call::Get { type_, id } => get(c, type_, id).await.map(drop),
        Call::List {
            type_,
            terms,
            id_regexp,
        } => {
            let queries = vec![LabelQuery {
                terms: terms
                    .iter()
                    .map(|(key, op, value, invert)| LabelTerm {
                        key: key.clone(),
                        op: *op,
                        value: value.clone(),
                        invert: *invert,
                    })
                    .collect(),
            }];
            list(c, type_, queries, id_regexp.as_deref())
                .await
                .map(drop)
        }
        Call::Teardown { type_, id } => teardown(c, type_, id).await.map(drop),
        Call::Destroy { type_, id } => destroy(c, type_, id).await,
    }
}

fn check(calls: &[Call]) -> Result<(), TestCaseError> {
    let sim = sim();
    let mut client = sim.client.clone();
    for call in calls {
        let result = sim.rt.block_on(run(&mut client, call));
        if let Err(status) = &result {
            // Omni's COSI server returns plain Go errors for some bad calls (an ID regexp that does not compile, a
            // resource without metadata), which gRPC sends as `Unknown` with the error's text; the simulator does
            // the same on purpose. A handler that panicked or a broken stream also shows as `Unknown`, but with a
            // transport's words and not a sentence of the simulator's.
            let transport = [
                "transport error",
                "h2 protocol error",
                "error reading a body from connection",
                "connection reset",
                "broken pipe",
            ]
            .iter()
            .any(|w| status.message().contains(w));
            let fine = match status.code() {
                Code::Internal => false,
                Code::Unknown => !status.message().is_empty() && !transport,
                _ => true,
            };
            prop_assert!(
                fine,
                "{:?} answered {:?}: {}",
                call,
                status.code(),
                status.message()
            );
        }
        let alive = sim.rt.block_on(list(
            &mut client,
            omni_sim::types::CLUSTERS,
            Vec::new(),
            None,
        ));
        prop_assert!(
            alive.is_ok(),
            "the simulator stopped listing clusters after {:?}: {:?}",
            call,
            alive.err()
        );
    }
    Ok(())
}

proptest! {
    #[test]
    fn fuzz_omni_sim_grpc(calls in prop::collection::vec(call(), 1..8)) {
        check(&calls)?;
    }
}
