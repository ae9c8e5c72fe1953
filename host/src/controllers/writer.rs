//! `kube-write` for plugins: the checked writes the capability hands over, sent straight to the API server
//! (never through a cache) with the plugin's field manager. Kinds resolve through the reader's discovery cache,
//! so a write and a read of a kind agree on what it is.

use std::sync::Arc;

use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy};
use serde_json::Value;

use super::object::CachedObject;
use super::reader::{ApiReader, to_json};
use crate::capabilities::{
    BoxFuture, DeleteRequest, GetRequest, HostError, KubeWriter, Propagation, WriteOp, WriteRequest,
};

/// Writes through the client of the reader it is given: the same connection, and the same resolved kinds.
pub struct ApiWriter {
    kinds: Arc<ApiReader>,
}

impl ApiWriter {
    pub fn new(kinds: Arc<ApiReader>) -> Self {
        ApiWriter { kinds }
    }
}

impl KubeWriter for ApiWriter {
    fn write(&self, request: WriteRequest) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async move {
            let api = self
                .kinds
                .api_of(
                    &request.api_version,
                    &request.kind,
                    request.namespace.as_deref(),
                )
                .await?;
            let what = format!("{} {:?}", request.kind, request.name);
            let patch_params = |force: bool| PatchParams {
                dry_run: request.dry_run,
                force,
                field_manager: Some(request.field_manager.clone()),
                field_validation: None,
            };
            let stored = match &request.op {
                WriteOp::Apply { object, force } => {
                    api.patch(&request.name, &patch_params(*force), &Patch::Apply(object))
                        .await
                }
                WriteOp::Create { object } => {
                    let object = CachedObject::from_value(object.clone())
                        .map_err(|e| HostError::Invalid(format!("create {what}: {e}")))?;
                    let params = PostParams {
                        dry_run: request.dry_run,
                        field_manager: Some(request.field_manager.clone()),
                    };
                    api.create(&params, &object).await
                }
                WriteOp::MergePatch(patch) => {
                    api.patch(&request.name, &patch_params(false), &Patch::Merge(patch))
                        .await
                }
                WriteOp::JsonPatch(patch) => {
                    let patch: json_patch::Patch =
                        serde_json::from_value(patch.clone()).map_err(|e| {
                            HostError::Invalid(format!("patch {what}: not a JSON patch: {e}"))
                        })?;
                    api.patch(
                        &request.name,
                        &patch_params(false),
                        &Patch::Json::<()>(patch),
                    )
                    .await
                }
            };
            let verb = match request.op {
                WriteOp::Apply { .. } => "apply",
                WriteOp::Create { .. } => "create",
                WriteOp::MergePatch(_) | WriteOp::JsonPatch(_) => "patch",
            };
            stored
                .map_err(|e| HostError::from_kube_write(&format!("{verb} {what}"), e))
                .and_then(|o| to_json(&o))
        })
    }

    fn delete(&self, request: DeleteRequest) -> BoxFuture<'_, Result<bool, HostError>> {
        Box::pin(async move {
            let api = self
                .kinds
                .api_of(
                    &request.api_version,
                    &request.kind,
                    request.namespace.as_deref(),
                )
                .await?;
            let preconditions =
                (request.uid.is_some() || request.resource_version.is_some()).then(|| {
                    Preconditions {
                        uid: request.uid.clone(),
                        resource_version: request.resource_version.clone(),
                    }
                });
            let params = DeleteParams {
                dry_run: request.dry_run,
                grace_period_seconds: None,
                propagation_policy: Some(match request.propagation {
                    Propagation::Background => PropagationPolicy::Background,
                    Propagation::Foreground => PropagationPolicy::Foreground,
                    Propagation::Orphan => PropagationPolicy::Orphan,
                }),
                preconditions,
            };
            match api.delete(&request.name, &params).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
                Err(e) => Err(HostError::from_kube(
                    &format!("delete {} {:?}", request.kind, request.name),
                    e,
                )),
            }
        })
    }

    fn get(&self, request: GetRequest) -> BoxFuture<'_, Result<Option<Value>, HostError>> {
        Box::pin(async move { self.kinds.get_uncached(&request).await })
    }
}
