//! The `scale` subresource of Deployments, StatefulSets and ReplicaSets, and of custom resources whose CRD
//! version declares `subresources.scale`: an `autoscaling/v1` `Scale` view of the desired replicas (and the
//! observed replicas with the selector), as `kubectl scale` and horizontal autoscalers use it. Writes through the
//! view change the desired replicas of the object, with the Scale's resourceVersion as a precondition when it
//! carries one.

use serde_json::{Value, json};

use super::{Api, Call, Resp};
use crate::cluster::{PatchKind, WriteCtx};
use crate::error::{ApiError, ApiResult, FieldCause};
use crate::patch;
use crate::resources::ResourceType;

/// Whether `rt` serves a `scale` subresource.
pub fn has_scale(rt: &ResourceType) -> bool {
    rt.scale.is_some()
        || (rt.group == "apps"
            && matches!(
                rt.plural.as_str(),
                "deployments" | "statefulsets" | "replicasets"
            ))
}

/// The segments of a CRD scale path (`.spec.replicas`): the CRD API allows only dotted field paths there.
fn segments(path: &str) -> Vec<&str> {
    path.trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .collect()
}

fn at<'a>(obj: &'a Value, path: &str) -> &'a Value {
    segments(path).iter().fold(obj, |v, s| &v[*s])
}

/// Where `rt` keeps the desired replicas.
fn spec_replicas_path(rt: &ResourceType) -> String {
    rt.scale
        .as_ref()
        .and_then(|s| s["specReplicasPath"].as_str())
        .unwrap_or(".spec.replicas")
        .to_string()
}

/// The Scale of a stored object.
pub fn scale_of(rt: &ResourceType, obj: &Value) -> Value {
    let m = &obj["metadata"];
    let (desired, observed, selector) = match &rt.scale {
        // apiextensions' scaleFromCustomResource: missing replicas are 0; the selector is the stored string.
        Some(scale) => (
            at(obj, &spec_replicas_path(rt)).as_i64().unwrap_or(0),
            at(
                obj,
                scale["statusReplicasPath"].as_str().unwrap_or_default(),
            )
            .as_i64()
            .unwrap_or(0),
            scale["labelSelectorPath"]
                .as_str()
                .map(|p| at(obj, p).as_str().unwrap_or_default().to_string())
                .unwrap_or_default(),
        ),
        // The built-in strategies default spec.replicas to 1 on create.
        None => (
            obj["spec"]["replicas"].as_i64().unwrap_or(1),
            obj["status"]["replicas"].as_i64().unwrap_or(0),
            super::printers::selector_string(&obj["spec"]["selector"]),
        ),
    };
    json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {"name": m["name"], "namespace": m["namespace"], "uid": m["uid"],
            "resourceVersion": m["resourceVersion"], "creationTimestamp": m["creationTimestamp"]},
        "spec": {"replicas": desired},
        "status": {"replicas": observed, "selector": selector}})
}

/// Sets the desired replicas where `rt` keeps them, creating the objects on the way.
fn set_replicas(rt: &ResourceType, obj: &mut Value, replicas: i64) {
    let path = spec_replicas_path(rt);
    let segments = segments(&path);
    let Some((last, parents)) = segments.split_last() else {
        return;
    };
    let mut cur = obj;
    for s in parents {
        if !cur[*s].is_object() {
            cur[*s] = json!({});
        }
        cur = &mut cur[*s];
    }
    cur[*last] = json!(replicas);
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
    let scale = scale_of(rt, &current);
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
            let kind = PatchKind::from_content_type(call.header("content-type"))?;
            let doc = crate::cluster::decode_patch_document(kind, &call.body)?;
            // A Scale has no lists and no patch merge keys: strategic and apply patches merge as merge patches.
            match kind {
                PatchKind::Json => patch::json_patch(&scale, &doc),
                _ => patch::merge_patch_request(&scale, &doc),
            }
            .map_err(crate::cluster::patch_error)?
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
    set_replicas(rt, &mut object, replicas);
    if let Some(rv) = precondition {
        object["metadata"]["resourceVersion"] = json!(rv);
    }
    let written = api.cluster.update(rt, ns, name, "", object, &ctx).await?;
    Ok(super::json_response(
        200,
        &scale_of(rt, &written.object),
        &written.warnings,
    ))
}
