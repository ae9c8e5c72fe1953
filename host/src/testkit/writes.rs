//! `kube-write` under `plugin test`: nothing is written anywhere, in replay or record mode alike (recording
//! reads from a live cluster must not change it). Each write the plugin makes, as the host would send it (owner
//! references set, field manager, dry run), becomes part of the case's snapshot, and is answered as a server would:
//! apply and create with the object, a merge patch with the object the case's reads give patched, a deletion with
//! whether those reads find the object.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use crate::capabilities::{
    BoxFuture, DeleteRequest, GetRequest, HostError, KubeReader, KubeWriter, Propagation, WriteOp,
    WriteRequest,
};
use crate::contract::merge_patch;

/// The UID and resourceVersion every object a case writes is answered with.
const FIXTURE_UID: &str = "00000000-0000-0000-0000-000000000001";

pub struct SnapshotWriter {
    reads: Arc<dyn KubeReader>,
    writes: Mutex<Vec<Value>>,
}

impl SnapshotWriter {
    /// Answers patches and deletions from `reads` (the case's transcript, or the live cluster when recording).
    pub fn new(reads: Arc<dyn KubeReader>) -> Self {
        SnapshotWriter {
            reads,
            writes: Mutex::default(),
        }
    }

    /// The writes so far, as the snapshot holds them.
    pub fn writes(&self) -> Vec<Value> {
        self.writes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn push(&self, write: Value) {
        self.writes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(write);
    }
}

fn stored(mut object: Value) -> Value {
    object["metadata"]["uid"] = json!(FIXTURE_UID);
    object["metadata"]["resourceVersion"] = json!("1");
    object
}

impl KubeWriter for SnapshotWriter {
    fn write(&self, request: WriteRequest) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async move {
            let (op, body) = match &request.op {
                WriteOp::Apply { object, force } => {
                    (if *force { "apply-force" } else { "apply" }, object.clone())
                }
                WriteOp::Create { object } => ("create", object.clone()),
                WriteOp::MergePatch(patch) => ("merge-patch", patch.clone()),
                WriteOp::JsonPatch(patch) => ("json-patch", patch.clone()),
            };
            self.push(json!({
                "op": op, "kind": request.kind, "namespace": request.namespace, "name": request.name,
                "fieldManager": request.field_manager, "dryRun": request.dry_run, "body": body,
            }));
            let current = || async {
                self.get(get_of(&request)).await?.ok_or_else(|| {
                    HostError::NotFound(format!("{} {:?} not found", request.kind, request.name))
                })
            };
            match &request.op {
                WriteOp::Apply { object, .. } | WriteOp::Create { object } => {
                    Ok(stored(object.clone()))
                }
                WriteOp::MergePatch(patch) => {
                    let mut object = current().await?;
                    merge_patch(&mut object, patch);
                    Ok(object)
                }
                WriteOp::JsonPatch(_) => current().await,
            }
        })
    }

    fn delete(&self, request: DeleteRequest) -> BoxFuture<'_, Result<bool, HostError>> {
        Box::pin(async move {
            let propagation = match request.propagation {
                Propagation::Background => "Background",
                Propagation::Foreground => "Foreground",
                Propagation::Orphan => "Orphan",
            };
            self.push(json!({
                "op": "delete", "kind": request.kind, "namespace": request.namespace, "name": request.name,
                "uid": request.uid, "resourceVersion": request.resource_version,
                "propagation": propagation, "dryRun": request.dry_run,
            }));
            let found = self
                .get(GetRequest {
                    api_version: request.api_version,
                    kind: request.kind,
                    namespace: request.namespace,
                    name: request.name,
                })
                .await?;
            Ok(found.is_some())
        })
    }

    fn get(&self, request: GetRequest) -> BoxFuture<'_, Result<Option<Value>, HostError>> {
        self.reads.get(request)
    }
}

fn get_of(request: &WriteRequest) -> GetRequest {
    GetRequest {
        api_version: request.api_version.clone(),
        kind: request.kind.clone(),
        namespace: request.namespace.clone(),
        name: request.name.clone(),
    }
}
