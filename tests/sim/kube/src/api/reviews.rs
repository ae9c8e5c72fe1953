//! The review resources that are answered, not stored: access reviews (`kubectl auth can-i`), rules reviews
//! (`can-i --list`), SelfSubjectReview (`kubectl auth whoami`) and TokenReview.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Api, Call, Resp, json_response, objects};
use crate::auth::is_superuser;
use crate::error::{ApiError, ApiResult};
use crate::rbac::{Attributes, UserInfo};
use crate::resources::ResourceType;

pub fn handle(api: &Arc<Api>, call: &Call, rt: &ResourceType) -> ApiResult<Resp> {
    let mut body = objects::decode_body(call, rt)?;
    let status = match rt.plural.as_str() {
        "selfsubjectaccessreviews" => access(api, &call.user, &body["spec"])?,
        "subjectaccessreviews" => {
            let spec = &body["spec"];
            let user = UserInfo {
                name: spec["user"].as_str().unwrap_or_default().into(),
                uid: spec["uid"].as_str().unwrap_or_default().into(),
                groups: spec["groups"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|g| g.as_str().map(String::from))
                    .collect(),
                ..Default::default()
            };
            access(api, &user, spec)?
        }
        "selfsubjectrulesreview" | "selfsubjectrulesreviews" => {
            let ns = body["spec"]["namespace"].as_str().unwrap_or_default();
            let review = api.cluster.rbac().rules_review(&call.user, ns);
            json!({"resourceRules": review.resource_rules, "nonResourceRules": review.non_resource_rules, "incomplete": review.incomplete})
        }
        "selfsubjectreviews" => json!({"userInfo": user_json(&call.user)}),
        "tokenreviews" => {
            let token = body["spec"]["token"].as_str().unwrap_or_default();
            match api
                .auth
                .authenticate(Some(&format!("Bearer {token}")), None)
            {
                Ok(u) => {
                    json!({"authenticated": true, "user": user_json(&u), "audiences": body["spec"]["audiences"]})
                }
                Err(_) => json!({"authenticated": false, "error": "invalid bearer token"}),
            }
        }
        other => {
            return Err(ApiError::new(
                404,
                "NotFound",
                format!("no review handler for {other}"),
            ));
        }
    };
    body["apiVersion"] = json!(rt.api_version());
    body["kind"] = json!(rt.kind);
    if !body["metadata"].is_object() {
        body["metadata"] = json!({});
    }
    body["metadata"]["creationTimestamp"] = Value::Null;
    body["status"] = status;
    Ok(json_response(201, &body, &[]))
}

fn user_json(u: &UserInfo) -> Value {
    let mut v = json!({"username": u.name, "groups": u.groups});
    if !u.uid.is_empty() {
        v["uid"] = json!(u.uid);
    }
    if !u.extra.is_empty() {
        v["extra"] = json!(u.extra);
    }
    v
}

fn access(api: &Arc<Api>, user: &UserInfo, spec: &Value) -> ApiResult<Value> {
    let attrs = if let Some(r) = spec["resourceAttributes"].as_object() {
        let s = |k: &str| {
            r.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        Attributes {
            verb: s("verb"),
            namespace: s("namespace"),
            api_group: s("group"),
            resource: s("resource"),
            subresource: s("subresource"),
            name: s("name"),
            path: String::new(),
            resource_request: true,
        }
    } else if let Some(n) = spec["nonResourceAttributes"].as_object() {
        Attributes {
            verb: n
                .get("verb")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .into(),
            path: n
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .into(),
            resource_request: false,
            ..Default::default()
        }
    } else {
        return Err(ApiError::invalid(
            "SelfSubjectAccessReview",
            "authorization.k8s.io",
            "",
            &[crate::error::FieldCause::invalid(
                "spec.resourceAttributes",
                &Value::Null,
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )],
        ));
    };
    if is_superuser(user) {
        return Ok(json!({"allowed": true}));
    }
    let (allowed, reason) = api.cluster.rbac().authorize(user, &attrs);
    let mut st = json!({"allowed": allowed});
    if !reason.is_empty() {
        st["reason"] = json!(reason);
    }
    Ok(st)
}
