//! The `scale` subresource of Deployments, StatefulSets and ReplicaSets: an `autoscaling/v1` `Scale` view of
//! `spec.replicas` (and `status.replicas` with the selector), as `kubectl scale` and horizontal autoscalers use it.
//! Writes through the view change `spec.replicas` of the object, with the Scale's resourceVersion as a
//! precondition when it carries one.

use serde_json::{Value, json};

use super::{Api, Call, Resp};
use crate::cluster::{PatchKind, WriteCtx};
use crate::error::{ApiError, ApiResult, FieldCause};
use crate::patch;
use crate::resources::ResourceType;

/// Whether `rt` serves a `scale` subresource.
pub fn has_scale(rt: &ResourceType) -> bool {
    rt.group == "apps"
        && matches!(
            rt.plural.as_str(),
            "deployments" | "statefulsets" | "replicasets"
        )
}

/// The Scale of a stored object.
pub fn scale_of(obj: &Value) -> Value {
    let m = &obj["metadata"];
    json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {"name": m["name"], "namespace": m["namespace"], "uid": m["uid"],
            "resourceVersion": m["resourceVersion"], "creationTimestamp": m["creationTimestamp"]},
        // The real strategies default spec.replicas to 1 on create.
        "spec": {"replicas": obj["spec"]["replicas"].as_i64().unwrap_or(1)},
        "status": {"replicas": obj["status"]["replicas"].as_i64().unwrap_or(0),
            "selector": super::printers::selector_string(&obj["spec"]["selector"])}})
}

fn invalid(name: &str, causes: &[FieldCause]) -> ApiError {
    ApiError::invalid("Scale", "autoscaling", name, causes)
}

/// The replicas a Scale asks for, checked as `ValidateScale` does.
fn replicas_of(scale: &Value, name: &str) -> ApiResult<i64> {
    let replicas = &scale["spec"]["replicas"];
    let n = match replicas {
        Value::Null => 0,
        v => v.as_i64().ok_or_else(|| {
            ApiError::bad_request(format!(
                "Scale in version \"v1\" cannot be handled as a Scale: json: cannot unmarshal {v} into Go struct field ScaleSpec.spec.replicas of type int32"
            ))
        })?,
    };
    if n < 0 {
        return Err(invalid(
            name,
            &[FieldCause::invalid(
                "spec.replicas",
                &json!(n),
                "must be greater than or equal to 0",
            )],
        ));
    }
    Ok(n)
}

/// GET, PUT or PATCH of `…/{name}/scale`.
pub async fn handle(
    api: &Api,
    call: &Call,
    rt: &ResourceType,
    ns: &str,
    ctx: WriteCtx,
) -> ApiResult<Resp> {
    let name = call.info.name.as_str();
    let current = api.cluster.get(rt, ns, name)?;
    let scale = scale_of(&current);
    let wanted = match call.info.verb.as_str() {
        "get" => return Ok(super::json_response(200, &scale, &[])),
        "update" => {
            let body: Value = serde_json::from_slice(&call.body).map_err(|e| {
                ApiError::bad_request(format!(
                    "Scale in version \"v1\" cannot be handled as a Scale: {e}"
                ))
            })?;
            let body_name = body["metadata"]["name"].as_str().unwrap_or_default();
            if body_name != name {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({body_name}) does not match the name on the URL ({name})"
                )));
            }
            body
        }
        "patch" => {
            let doc: Value = match PatchKind::from_content_type(call.header("content-type"))? {
                PatchKind::Apply => yaml_serde::from_slice(&call.body)
                    .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?,
                _ => serde_json::from_slice(&call.body)
                    .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?,
            };
            // A Scale has no lists and no patch merge keys: strategic and apply patches merge as merge patches.
            match PatchKind::from_content_type(call.header("content-type"))? {
                PatchKind::Json => patch::json_patch(&scale, &doc)
                    .map_err(|e| ApiError::new(e.status, e.reason(), e.message))?,
                _ => patch::merge_patch_request(&scale, &doc)
                    .map_err(|e| ApiError::new(e.status, e.reason(), e.message))?,
            }
        }
        _ => {
            return Err(ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            ));
        }
    };
    let replicas = replicas_of(&wanted, name)?;
    // The Scale's resourceVersion is a precondition on the object; without one the write applies to the
    // current version, as the real server's unconditional scale updates do.
    let precondition = wanted["metadata"]["resourceVersion"]
        .as_str()
        .filter(|rv| !rv.is_empty())
        .map(str::to_string);
    let mut object = current;
    object["spec"]["replicas"] = json!(replicas);
    if let Some(rv) = precondition {
        object["metadata"]["resourceVersion"] = json!(rv);
    }
    let written = api.cluster.update(rt, ns, name, "", object, &ctx).await?;
    Ok(super::json_response(
        200,
        &scale_of(&written.object),
        &written.warnings,
    ))
}
