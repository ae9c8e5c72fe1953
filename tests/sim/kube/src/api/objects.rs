//! Resource requests: get, list (with selectors, pagination and consistent snapshots), watch, and the writes.

use std::sync::Arc;

use base64::Engine as _;
use serde_json::{Value, json};

use super::{Api, Call, Resp, error, json_response, reviews, scale, table, tokens, watch};
use crate::cluster::{DeleteOptions, FieldValidation, PatchKind, WriteCtx};
use crate::error::{ApiError, ApiResult, FieldCause};
use crate::resources::{ResourceType, Source};
use crate::selectors::{FieldSelector, LabelSelector};

pub async fn handle(api: &Arc<Api>, call: &Call) -> Resp {
    match dispatch(api, call).await {
        Ok(r) => r,
        Err(e) => error(&e),
    }
}

fn not_served() -> ApiError {
    ApiError::new(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
    .with_details(json!({}))
}

async fn dispatch(api: &Arc<Api>, call: &Call) -> ApiResult<Resp> {
    let info = &call.info;
    let reg = api.cluster.registry();
    let rt = reg
        .get(&info.group, &info.version, &info.resource)
        .ok_or_else(not_served)?;
    // Namespaces are addressed as /api/v1/namespaces/{name}: their "namespace" is the name.
    let ns = if rt.namespaced {
        info.namespace.clone()
    } else {
        String::new()
    };
    let is_namespaces = rt.group.is_empty() && rt.plural == "namespaces";
    if !rt.namespaced && !info.namespace.is_empty() && !is_namespaces {
        return Err(not_served());
    }
    if rt.namespaced
        && ns.is_empty()
        && !matches!(info.verb.as_str(), "list" | "watch")
        && rt.source != Source::Virtual
    {
        return Err(not_served());
    }
    // `serviceaccounts/{name}/token` takes a POST (a TokenRequest), unlike the other subresources.
    if info.subresource == "token" && rt.group.is_empty() && rt.plural == "serviceaccounts" {
        if info.verb != "create" {
            return Err(ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            ));
        }
        return tokens::create(api, call, &ns, &info.name);
    }
    match info.subresource.as_str() {
        "" => {}
        "status" if rt.status_subresource => {}
        "scale" if scale::has_scale(&rt) => {}
        "finalize" if rt.group.is_empty() && rt.plural == "namespaces" => {}
        _ => return Err(not_served()),
    }
    if !info.subresource.is_empty() && !matches!(info.verb.as_str(), "get" | "update" | "patch") {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    // POST is served on collections only.
    let create_on_item = info.verb == "create" && !info.name.is_empty();
    if create_on_item || !rt.verbs.contains(&info.verb.as_str()) {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    if rt.source == Source::Virtual {
        return reviews::handle(api, call, &rt);
    }
    if info.subresource == "scale" {
        return scale::handle(api, call, &rt, &ns, write_ctx(call)?).await;
    }
    match info.verb.as_str() {
        "get" => {
            let obj = api.cluster.get(&rt, &ns, &info.name)?;
            single(call, &rt, obj, 200, &[])
        }
        "list" => list(api, call, &rt, &ns),
        "watch" => watch::serve(api, call, &rt, &ns),
        "create" => {
            let body = decode_body(call, &rt)?;
            let w = api
                .cluster
                .create(&rt, &ns, body, &write_ctx(call)?)
                .await?;
            single(call, &rt, w.object, w.status, &w.warnings)
        }
        "update" => {
            let body = decode_body(call, &rt)?;
            let w = api
                .cluster
                .update(
                    &rt,
                    &ns,
                    &info.name,
                    &info.subresource,
                    body,
                    &write_ctx(call)?,
                )
                .await?;
            single(call, &rt, w.object, w.status, &w.warnings)
        }
        "patch" => {
            let kind = PatchKind::from_content_type(call.header("content-type"))?;
            let force = call.query.flag("force");
            let w = api
                .cluster
                .patch(
                    &rt,
                    &ns,
                    &info.name,
                    &info.subresource,
                    kind,
                    &call.body,
                    force,
                    &write_ctx(call)?,
                )
                .await?;
            single(call, &rt, w.object, w.status, &w.warnings)
        }
        "delete" => {
            let opts = delete_options(call)?;
            let mut ctx = write_ctx(call)?;
            ctx.dry_run |= opts.dry_run;
            let w = api
                .cluster
                .delete(&rt, &ns, &info.name, &opts, &ctx)
                .await?;
            if w.gone && !returns_deleted_object(&rt) {
                return Ok(json_response(
                    200,
                    &deleted_status(&rt, &w.object),
                    &w.warnings,
                ));
            }
            single(call, &rt, w.object, w.status, &w.warnings)
        }
        "deletecollection" => delete_collection(api, call, &rt, &ns).await,
        _ => Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )),
    }
}

/// Stores configured with `ReturnDeletedObject` (pods, service accounts, namespaces, custom resources) answer
/// an immediate delete with the object; every other store answers with a success Status.
fn returns_deleted_object(rt: &ResourceType) -> bool {
    rt.is_crd()
        || (rt.group.is_empty()
            && matches!(
                rt.plural.as_str(),
                "pods" | "serviceaccounts" | "namespaces"
            ))
}

fn deleted_status(rt: &ResourceType, obj: &Value) -> Value {
    let mut details =
        json!({"name": obj["metadata"]["name"], "kind": rt.plural, "uid": obj["metadata"]["uid"]});
    if !rt.group.is_empty() {
        details["group"] = json!(rt.group);
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
}

/// One object, a one-row Table (`kubectl get x name`) or its PartialObjectMetadata, as the client asks.
fn single(
    call: &Call,
    rt: &ResourceType,
    obj: Value,
    status: u16,
    warnings: &[String],
) -> ApiResult<Resp> {
    let accept = call.header("accept");
    if table::wants_table(accept) && call.method == "GET" {
        let t = table::build(
            rt,
            &[obj],
            json!({"resourceVersion": ""}),
            call.query.get("includeObject"),
        );
        return Ok(json_response(200, &t, warnings));
    }
    let obj = super::partial::object(super::partial::requested(accept), &rt.kind, obj)?;
    Ok(json_response(status, &obj, warnings))
}

fn write_ctx(call: &Call) -> ApiResult<WriteCtx> {
    let dry_run = match call.query.get("dryRun") {
        None | Some("") => false,
        Some("All") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "Invalid dry run value: \"{other}\": supported values: \"All\""
            )));
        }
    };
    let field_manager = call.query.get("fieldManager").map(String::from);
    if let Some(m) = &field_manager
        && m.chars().count() > 128
    {
        return Err(ApiError::invalid(
            "PatchOptions",
            "meta.k8s.io",
            "",
            &[FieldCause::preformatted(
                "FieldValueTooLong",
                "fieldManager",
                "fieldManager: Too long: may not be more than 128 bytes".to_string(),
            )],
        ));
    }
    Ok(WriteCtx {
        user: call.user.clone(),
        dry_run,
        field_manager,
        field_validation: FieldValidation::parse(call.query.get("fieldValidation"))?,
        user_agent: call.header("user-agent").to_string(),
    })
}

/// JSON or YAML bodies, as the real server's negotiated serializers accept.
pub fn decode_body(call: &Call, rt: &ResourceType) -> ApiResult<Value> {
    let ct = call.header("content-type");
    let base = ct.split(';').next().unwrap_or("").trim();
    let v: Value = match base {
        // Custom resources have no protobuf form, whatever the envelope claims.
        super::protobuf::CONTENT_TYPE if !rt.is_crd() => {
            super::protobuf::decode(&call.body, &rt.kind)?
        }
        "" | "application/json" | "*/*" => {
            serde_json::from_slice(&call.body).map_err(|e| decode_error(rt, &e.to_string()))?
        }
        "application/yaml" | "application/x-yaml" | "text/yaml" => {
            crate::yaml_body::parse(&call.body).map_err(|e| decode_error(rt, &e))?
        }
        other => {
            return Err(ApiError::unsupported_media_type(format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (got {other:?})"
            )));
        }
    };
    if !v.is_object() {
        return Err(decode_error(rt, "the body must be an object"));
    }
    Ok(v)
}

fn decode_error(rt: &ResourceType, why: &str) -> ApiError {
    ApiError::bad_request(format!(
        "{} in version \"{}\" cannot be handled as a {}: {why}",
        rt.kind, rt.version, rt.kind
    ))
}

fn delete_options(call: &Call) -> ApiResult<DeleteOptions> {
    let content_type = call.header("content-type");
    let mut body = if call.body.is_empty() {
        json!({})
    } else if content_type.split(';').next().map(str::trim) == Some(super::protobuf::CONTENT_TYPE) {
        // client-go's typed clients send DeleteOptions as protobuf too.
        super::protobuf::decode(&call.body, "DeleteOptions")?
    } else {
        serde_json::from_slice::<Value>(&call.body)
            .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))?
    };
    if !body.is_object() {
        return DeleteOptions::from_json(&body);
    }
    if let Some(p) = call.query.get("propagationPolicy") {
        body["propagationPolicy"] = json!(p);
    }
    if let Some(o) = call.query.get("orphanDependents") {
        body["orphanDependents"] = json!(o == "true");
    }
    DeleteOptions::from_json(&body)
}

/// Label and field selectors of a list or watch, checked against what the resource supports.
pub(super) struct Selectors {
    label: Option<LabelSelector>,
    field: Option<FieldSelector>,
    /// The events.k8s.io view: its field labels name the stored core/v1 fields.
    events_view: bool,
}

impl Selectors {
    pub(super) fn parse(call: &Call, rt: &ResourceType) -> ApiResult<Self> {
        let label = match call.query.get("labelSelector").filter(|s| !s.is_empty()) {
            Some(s) => Some(LabelSelector::parse(s).map_err(ApiError::bad_request)?),
            None => None,
        };
        let field = match call.query.get("fieldSelector").filter(|s| !s.is_empty()) {
            Some(s) => {
                let f = FieldSelector::parse(s).map_err(ApiError::bad_request)?;
                for name in f.fields() {
                    if !supported_field(rt, name) {
                        let checked = if rt.is_crd() {
                            let selectable: Vec<&str> =
                                rt.selectable_fields.iter().map(String::as_str).collect();
                            crate::selectors::check_custom_resource_field(
                                !rt.namespaced,
                                &selectable,
                                name,
                            )
                        } else {
                            crate::selectors::check_builtin_field(&rt.group, &rt.kind, name)
                        };
                        let message = checked
                            .err()
                            .unwrap_or_else(|| crate::selectors::unsupported_field_message(name));
                        return Err(ApiError::bad_request(message));
                    }
                }
                Some(f)
            }
            None => None,
        };
        Ok(Selectors {
            label,
            field,
            events_view: crate::events::is_view(rt),
        })
    }

    fn is_empty(&self) -> bool {
        self.label.is_none() && self.field.is_none()
    }

    pub(super) fn matches(&self, obj: &Value) -> bool {
        if let Some(l) = &self.label {
            let empty = serde_json::Map::new();
            if !l.matches(obj["metadata"]["labels"].as_object().unwrap_or(&empty)) {
                return false;
            }
        }
        if let Some(f) = &self.field {
            let get = |field: &str| {
                if self.events_view {
                    field_value(obj, &crate::events::stored_field_label(field))
                } else {
                    field_value(obj, field)
                }
            };
            if !f.matches(&get) {
                return false;
            }
        }
        true
    }
}

/// Field selectors each resource supports (the real server's field label conversion functions, and a custom
/// resource version's `selectableFields`).
fn supported_field(rt: &ResourceType, field: &str) -> bool {
    if matches!(field, "metadata.name" | "metadata.namespace")
        || rt.selectable_fields.iter().any(|f| f == field)
    {
        return true;
    }
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "secrets") => field == "type",
        ("events.k8s.io", "events") => matches!(
            field,
            "regarding.kind"
                | "regarding.namespace"
                | "regarding.name"
                | "regarding.uid"
                | "regarding.apiVersion"
                | "regarding.resourceVersion"
                | "regarding.fieldPath"
                | "reason"
                | "reportingController"
                | "type"
        ),
        ("", "events") => matches!(
            field,
            "involvedObject.kind"
                | "involvedObject.namespace"
                | "involvedObject.name"
                | "involvedObject.uid"
                | "involvedObject.apiVersion"
                | "involvedObject.resourceVersion"
                | "involvedObject.fieldPath"
                | "reason"
                | "reportingComponent"
                | "source"
                | "type"
        ),
        ("", "pods") => matches!(
            field,
            "spec.nodeName"
                | "spec.restartPolicy"
                | "spec.schedulerName"
                | "spec.serviceAccountName"
                | "status.phase"
                | "status.podIP"
                | "status.nominatedNodeName"
        ),
        ("", "namespaces") => field == "status.phase",
        _ => false,
    }
}

fn field_value(obj: &Value, field: &str) -> Option<String> {
    if field == "source" {
        return obj["source"]["component"].as_str().map(String::from);
    }
    let mut cur = obj;
    for part in field.split('.') {
        cur = cur.get(part)?;
    }
    match cur {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// Continue tokens carry the snapshot revision and the last key served, like the real server's. `None` is the
/// real server's revision -1: continue at the latest revision (the token it hands out when the snapshot is gone).
fn encode_continue(rv: Option<u64>, last_key: &str) -> String {
    let rv = rv.map_or(-1, |rv| i64::try_from(rv).unwrap_or(i64::MAX));
    let raw = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": format!("{last_key}\u{0}")});
    base64::engine::general_purpose::URL_SAFE.encode(raw.to_string())
}

fn decode_continue(token: &str) -> ApiResult<(Option<u64>, String)> {
    let bad = |why: &str| ApiError::bad_request(format!("continue key is not valid: {why}"));
    let raw = base64::engine::general_purpose::URL_SAFE
        .decode(token)
        .or_else(|_| base64::engine::general_purpose::STANDARD.decode(token))
        .map_err(|_| bad("incorrect encoded start resourceVersion (version meta.k8s.io/v1)"))?;
    let v: Value = serde_json::from_slice(&raw)
        .map_err(|_| bad("incorrect encoded start resourceVersion (version meta.k8s.io/v1)"))?;
    let rv = match v["rv"].as_i64() {
        Some(-1) => None,
        Some(rv) if rv > 0 => Some(rv as u64),
        Some(_) => {
            return Err(bad(
                "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
            ));
        }
        None => return Err(bad("continue key has no resource version")),
    };
    let start = v["start"]
        .as_str()
        .ok_or_else(|| bad("continue key has no start"))?;
    Ok((rv, start.trim_end_matches('\u{0}').to_string()))
}

/// A resourceVersion newer than the store's: the real server waits ~3 s for its cache to catch up, then answers
/// 504 with a retry hint. This store is never behind, so the answer comes at once.
pub fn too_large_resource_version(requested: u64, current: u64) -> ApiError {
    let mut e = ApiError::new(504, "Timeout", format!("Too large resource version: {requested}, current: {current}"))
        .with_details(json!({"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]}));
    e.retry_after = Some(1);
    e
}

fn list_options_error(detail: FieldCause) -> ApiError {
    ApiError::invalid("ListOptions", "meta.k8s.io", "", &[detail])
}

fn list(api: &Arc<Api>, call: &Call, rt: &ResourceType, ns: &str) -> ApiResult<Resp> {
    let q = &call.query;
    let sel = Selectors::parse(call, rt)?;
    let limit: usize = match q.get("limit").filter(|s| !s.is_empty()) {
        Some(l) => l
            .parse::<i64>()
            .map_err(|_| ApiError::bad_request(format!("invalid limit {l:?}")))?
            .max(0) as usize,
        None => 0,
    };
    let rv_param = q.get("resourceVersion").unwrap_or("");
    let rv_match = q.get("resourceVersionMatch").unwrap_or("");
    let cont = q.get("continue").unwrap_or("");
    if !rv_match.is_empty() && rv_param.is_empty() {
        return Err(list_options_error(FieldCause::forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        )));
    }
    if !cont.is_empty() && !rv_param.is_empty() && rv_param != "0" {
        return Err(list_options_error(FieldCause::forbidden(
            "resourceVersion",
            "specifying resource version is not allowed when using continue",
        )));
    }
    if !rv_match.is_empty() && !["Exact", "NotOlderThan"].contains(&rv_match) {
        return Err(list_options_error(FieldCause::preformatted(
            "FieldValueNotSupported",
            "resourceVersionMatch",
            format!(
                "resourceVersionMatch: Unsupported value: \"{rv_match}\": supported values: \"Exact\", \"NotOlderThan\", \"\""
            ),
        )));
    }
    let parse_rv = |s: &str| -> ApiResult<u64> {
        s.parse::<u64>().map_err(|_| {
            ApiError::bad_request(format!("resourceVersion: Invalid value: \"{s}\": strconv.ParseUint: parsing \"{s}\": invalid syntax"))
        })
    };
    if rv_match == "Exact" && rv_param == "0" {
        return Err(list_options_error(FieldCause::forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        )));
    }
    let key = rt.storage_key();
    let namespace = if ns.is_empty() { None } else { Some(ns) };
    let (snapshot_rv, items, start_after) = {
        let store = api.cluster.store();
        if !cont.is_empty() {
            match decode_continue(cont)? {
                (Some(rv), start) => {
                    let items = store.list_at(&key, namespace, rv).map_err(|_| {
                        // As the real server: the 410 carries a token that continues after the same key at the
                        // latest revision.
                        let mut e = ApiError::gone("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.");
                        e.continue_token = Some(encode_continue(None, &start));
                        e
                    })?;
                    (rv, items, Some(start))
                }
                (None, start) => (store.current_rv(), store.list(&key, namespace), Some(start)),
            }
        } else if rv_match == "Exact" {
            let rv = parse_rv(rv_param)?;
            if rv > store.current_rv() {
                return Err(too_large_resource_version(rv, store.current_rv()));
            }
            // The real server's words for a list at a compacted revision (a watch says "too old resource
            // version: …" instead).
            let items = store.list_at(&key, namespace, rv).map_err(|_| {
                ApiError::gone("The resourceVersion for the provided list is too old.")
            })?;
            (rv, items, None)
        } else {
            if !rv_param.is_empty() {
                let rv = parse_rv(rv_param)?;
                if rv > store.current_rv() {
                    return Err(too_large_resource_version(rv, store.current_rv()));
                }
            }
            (store.current_rv(), store.list(&key, namespace), None)
        }
    };
    // Keys compare as (namespace, name), the order the store lists in; a namespace never contains '/'.
    let obj_key = |o: &Value| {
        format!(
            "{}/{}",
            o["metadata"]["namespace"].as_str().unwrap_or_default(),
            o["metadata"]["name"].as_str().unwrap_or_default()
        )
    };
    let key_tuple = |k: &str| -> (String, String) {
        match k.split_once('/') {
            Some((ns, name)) => (ns.to_string(), name.to_string()),
            None => (String::new(), k.to_string()),
        }
    };
    let mut matched: Vec<Value> = Vec::new();
    let mut more = false;
    let mut remaining = 0usize;
    for o in items.iter() {
        if let Some(start) = &start_after
            && key_tuple(&obj_key(o)) <= key_tuple(start)
        {
            continue;
        }
        if !sel.matches(o) {
            continue;
        }
        if limit > 0 && matched.len() >= limit {
            more = true;
            remaining += 1;
            continue;
        }
        matched.push(api.cluster.render(rt, o));
    }
    let mut meta = json!({"resourceVersion": snapshot_rv.to_string()});
    if more && let Some(last) = matched.last() {
        meta["continue"] = json!(encode_continue(Some(snapshot_rv), &obj_key(last)));
        if sel.is_empty() {
            meta["remainingItemCount"] = json!(remaining);
        }
    }
    if table::wants_table(call.header("accept")) {
        return Ok(json_response(
            200,
            &table::build(rt, &matched, meta, q.get("includeObject")),
            &[],
        ));
    }
    let list = json!({"kind": rt.list_kind, "apiVersion": rt.api_version(), "metadata": meta, "items": matched});
    let list = super::partial::list(
        super::partial::requested(call.header("accept")),
        &rt.list_kind,
        list,
    )?;
    Ok(json_response(200, &list, &[]))
}

async fn delete_collection(
    api: &Arc<Api>,
    call: &Call,
    rt: &ResourceType,
    ns: &str,
) -> ApiResult<Resp> {
    let sel = Selectors::parse(call, rt)?;
    let opts = delete_options(call)?;
    let mut ctx = write_ctx(call)?;
    ctx.dry_run |= opts.dry_run;
    let targets: Vec<(String, String)> = {
        let store = api.cluster.store();
        store
            .list(
                &rt.storage_key(),
                if ns.is_empty() { None } else { Some(ns) },
            )
            .iter()
            .filter(|o| sel.matches(o))
            .map(|o| {
                (
                    o["metadata"]["namespace"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    o["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                )
            })
            .collect()
    };
    let mut deleted = Vec::new();
    for (ons, name) in targets {
        match api.cluster.delete(rt, &ons, &name, &opts, &ctx).await {
            Ok(w) => deleted.push(w.object),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let rv = api.cluster.store().current_rv();
    let list = json!({"kind": rt.list_kind, "apiVersion": rt.api_version(), "metadata": {"resourceVersion": rv.to_string()}, "items": deleted});
    Ok(json_response(200, &list, &[]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip_and_reject_garbage() {
        let t = encode_continue(Some(42), "default/b");
        assert_eq!(
            decode_continue(&t).expect("valid"),
            (Some(42), "default/b".to_string())
        );
        let latest = encode_continue(None, "default/b");
        assert_eq!(
            decode_continue(&latest).expect("valid"),
            (None, "default/b".to_string())
        );
        assert_eq!(
            decode_continue("not-base64!").expect_err("invalid").code,
            400
        );
    }

    #[test]
    fn field_values_come_from_dotted_paths() {
        let o = json!({"metadata": {"name": "a"}, "type": "Opaque", "source": {"component": "kubelet"}});
        assert_eq!(field_value(&o, "metadata.name").as_deref(), Some("a"));
        assert_eq!(field_value(&o, "type").as_deref(), Some("Opaque"));
        assert_eq!(field_value(&o, "source").as_deref(), Some("kubelet"));
        assert_eq!(field_value(&o, "spec.x"), None);
    }
}
