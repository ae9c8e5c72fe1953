//! `omni-operator plugin test`: a plugin's real `.wasm` in the real runtime against fixtures, with its host
//! interactions recorded from a live cluster once and replayed from then on, and its outputs compared with
//! snapshots (Zellij's insta tests and kwctl's record/replay are the models).
//!
//! A fixture directory holds one case per `NAME.object.json` (the object a reconcile gets). Beside it:
//! * `NAME.interactions.json`: the Kubernetes reads and their answers. Recorded with `--record` against the
//!   cluster a kubeconfig names; replayed otherwise. A read not in it fails the case.
//! * `NAME.snapshot.json`: what the call returned (status, conditions, Events, requeue, logs, or the error), and
//!   the writes it made, which reach no cluster ([`writes`]). Written when missing or with `--update`; compared
//!   otherwise.
//!
//! The clock stands still at [`FIXTURE_TIME`], so snapshots do not change from one run to the next.

pub mod transcript;
pub mod writes;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::capabilities::{CallObject, FixedClock, HostServices, Outputs};
use crate::contract::KubeReader;
use crate::runtime::{CallError, LoadedPlugin};
use transcript::{Interaction, Recorder, Replayer};

/// What `clock.now` answers during a test: 2026-01-01T00:00:00Z.
pub const FIXTURE_TIME: u64 = 1_767_225_600;

/// How a run treats interactions and snapshots.
pub enum Mode {
    /// Answer reads from the transcripts, compare with the snapshots (write the missing ones).
    Replay { update: bool },
    /// Answer reads from this reader (a live cluster) and write transcripts and snapshots.
    Record(Arc<dyn KubeReader>),
}

/// One case's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseResult {
    pub name: String,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    /// A snapshot was written (first run, `--update` or `--record`).
    Written,
    Failed(String),
}

#[derive(Debug, thiserror::Error)]
pub enum TestkitError {
    #[error("reading fixtures in {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not valid JSON: {source}")]
    Json {
        path: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("no fixtures (NAME.object.json) in {0}")]
    Empty(String),
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, TestkitError> {
    let text = std::fs::read_to_string(path).map_err(|source| TestkitError::Io {
        path: path.display().to_string(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| TestkitError::Json {
        path: path.display().to_string(),
        source,
    })
}

fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<(), TestkitError> {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    std::fs::write(path, text).map_err(|source| TestkitError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// The cases in `dir`, by name, in order.
pub fn cases(dir: &Path) -> Result<Vec<(String, PathBuf)>, TestkitError> {
    let io = |source| TestkitError::Io {
        path: dir.display().to_string(),
        source,
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".object.json"))
        else {
            continue;
        };
        out.push((name.to_string(), path.clone()));
    }
    out.sort();
    if out.is_empty() {
        return Err(TestkitError::Empty(dir.display().to_string()));
    }
    Ok(out)
}

/// Runs every case in `dir` against `plugin`.
pub async fn run(
    plugin: &LoadedPlugin,
    dir: &Path,
    mode: &Mode,
) -> Result<Vec<CaseResult>, TestkitError> {
    let mut results = Vec::new();
    for (name, path) in cases(dir)? {
        let object: Value = read_json(&path)?;
        let transcript_path = dir.join(format!("{name}.interactions.json"));
        let snapshot_path = dir.join(format!("{name}.snapshot.json"));
        let (reader, replayer, recorder): (Arc<dyn KubeReader>, _, _) = match mode {
            Mode::Replay { .. } => {
                let transcript: Vec<Interaction> = if transcript_path.exists() {
                    read_json(&transcript_path)?
                } else {
                    Vec::new()
                };
                let replayer = Arc::new(Replayer::new(transcript));
                (replayer.clone(), Some(replayer), None)
            }
            Mode::Record(live) => {
                let recorder = Arc::new(Recorder::new(live.clone()));
                (recorder.clone(), None, Some(recorder))
            }
        };
        let writer = Arc::new(writes::SnapshotWriter::new(reader.clone()));
        let services = HostServices::default()
            .with_kube(reader)
            .with_kube_writer(writer.clone())
            .with_clock(Arc::new(FixedClock::at_unix(FIXTURE_TIME)));
        let call = CallObject::new(
            object.to_string(),
            object["metadata"]["namespace"].as_str().map(String::from),
        );
        let result = plugin.reconcile(&call, &services).await;
        let mut snapshot = match &result {
            Ok(done) => json!({ "result": "ok", "outputs": outputs_json(&done.outputs) }),
            Err(CallError::Failed { error, .. }) => {
                json!({ "result": "error", "error": error.to_string() })
            }
            Err(CallError::Aborted(e)) => json!({ "result": "aborted", "error": e.to_string() }),
        };
        // Only a plugin that writes has writes in its snapshot, so the snapshots of the others stay as they were.
        let writes = writer.writes();
        if !writes.is_empty() {
            snapshot["writes"] = Value::Array(writes);
        }
        let outcome = match (mode, recorder, replayer) {
            (Mode::Record(_), Some(recorder), _) => {
                write_json(&transcript_path, &recorder.transcript())?;
                write_json(&snapshot_path, &snapshot)?;
                Outcome::Written
            }
            (Mode::Replay { update }, _, Some(replayer)) => {
                let misses = replayer.misses();
                if !misses.is_empty() {
                    Outcome::Failed(format!(
                        "reads not in {}: {}; record them again with --record",
                        transcript_path.display(),
                        misses.join("; ")
                    ))
                } else if *update || !snapshot_path.exists() {
                    write_json(&snapshot_path, &snapshot)?;
                    Outcome::Written
                } else {
                    let expected: Value = read_json(&snapshot_path)?;
                    if expected == snapshot {
                        Outcome::Passed
                    } else {
                        Outcome::Failed(format!(
                            "the outputs differ from {}:\n  expected: {}\n  actual:   {}\n(accept them with --update)",
                            snapshot_path.display(),
                            expected,
                            snapshot
                        ))
                    }
                }
            }
            _ => Outcome::Failed("internal: mode without its reader".into()),
        };
        results.push(CaseResult { name, outcome });
    }
    Ok(results)
}

/// A call's outputs as the operator would commit them, as JSON.
pub fn outputs_json(outputs: &Outputs) -> Value {
    json!({
        "status": outputs.status,
        "conditions": outputs.conditions.iter().map(|c| json!({
            "type": c.type_, "status": c.status.as_str(), "reason": c.reason, "message": c.message,
        })).collect::<Vec<_>>(),
        "events": outputs.events.iter().map(|e| json!({
            "type": format!("{:?}", e.type_), "reason": e.reason, "message": e.message,
        })).collect::<Vec<_>>(),
        "requeueAfterMs": outputs.requeue_after.map(|d| d.as_millis() as u64),
        "logs": outputs.logs.iter().map(|l| format!("{:?} {:?}: {}", l.source, l.level, l.message)).collect::<Vec<_>>(),
    })
}
