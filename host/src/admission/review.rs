//! AdmissionReview v1 in and out, and the Go operator's rejection:
//! `apierrors.NewInvalid(GroupKind, name, errs)` over the plugin's field errors, rendered as apimachinery's
//! `field.Error` and `errors.Aggregate` render them.

use std::collections::HashSet;

use omni_go::quote;
use serde_json::{Value, json};

use super::MAX_QUOTED;
use crate::runtime::{FieldError, FieldErrorType, Verdict, truncated};

/// What the operator is asked to admit.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub uid: String,
    pub group: String,
    pub version: String,
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
    pub operation: String,
    pub object: Option<Value>,
    pub old_object: Option<Value>,
    /// `request.dryRun`: nothing the request writes is stored.
    pub dry_run: bool,
    /// `request.options.fieldManager`: who writes.
    pub field_manager: Option<String>,
}

/// A body that is not an AdmissionReview v1 request.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error("the body is not JSON: {0}")]
    NotJson(#[from] serde_json::Error),
    #[error("expected an admission.k8s.io/v1 AdmissionReview, got apiVersion {0:?} kind {1:?}")]
    NotAReview(String, String),
    #[error("the AdmissionReview has no request.{0}")]
    Missing(&'static str),
}

pub const API_VERSION: &str = "admission.k8s.io/v1";

pub fn parse(body: &[u8]) -> Result<Request, ReviewError> {
    let review: Value = serde_json::from_slice(body)?;
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let (api_version, kind) = (text(&review["apiVersion"]), text(&review["kind"]));
    if api_version != API_VERSION || kind != "AdmissionReview" {
        // Quoted back in the answer and the log: only as much as a real apiVersion or kind can be long.
        return Err(ReviewError::NotAReview(
            truncated(&api_version, MAX_QUOTED),
            truncated(&kind, MAX_QUOTED),
        ));
    }
    let r = review
        .get("request")
        .filter(|r| r.is_object())
        .ok_or(ReviewError::Missing("request"))?;
    let uid = text(&r["uid"]);
    if uid.is_empty() {
        return Err(ReviewError::Missing("uid"));
    }
    let kind = &r["kind"];
    if text(&kind["kind"]).is_empty() {
        return Err(ReviewError::Missing("kind"));
    }
    let present = |key: &str| r.get(key).filter(|v| !v.is_null()).cloned();
    Ok(Request {
        uid,
        group: text(&kind["group"]),
        version: text(&kind["version"]),
        kind: text(&kind["kind"]),
        name: text(&r["name"]),
        namespace: r["namespace"]
            .as_str()
            .filter(|n| !n.is_empty())
            .map(str::to_string),
        operation: text(&r["operation"]),
        object: present("object"),
        old_object: present("oldObject"),
        dry_run: r["dryRun"] == Value::Bool(true),
        field_manager: r["options"]["fieldManager"].as_str().map(str::to_string),
    })
}

/// The review answering `uid`.
fn review(response: Value) -> Value {
    json!({"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response})
}

/// Allowed, with the plugin's warnings.
pub fn allowed(uid: &str, warnings: &[String]) -> Value {
    let mut response = json!({"uid": uid, "allowed": true});
    if !warnings.is_empty() {
        response["warnings"] = json!(warnings);
    }
    review(response)
}

/// Denied with the Go operator's `Invalid` status; warnings are returned on denials too.
pub fn denied(request: &Request, verdict: &Verdict) -> Value {
    let mut response = json!({
        "uid": request.uid,
        "allowed": false,
        "status": invalid_status(&request.group, &request.kind, &request.name, &verdict.errors),
    });
    if !verdict.warnings.is_empty() {
        response["warnings"] = json!(verdict.warnings);
    }
    review(response)
}

/// Refused outright (`apierrors.NewForbidden`'s code and reason): kubectl prints
/// `Error from server (Forbidden): admission webhook "<name>" denied the request: <message>`.
pub fn forbidden(uid: &str, message: &str) -> Value {
    review(json!({
        "uid": uid,
        "allowed": false,
        "status": {"metadata": {}, "status": "Failure", "code": 403, "reason": "Forbidden", "message": message},
    }))
}

/// Not decided: the validation itself failed (controller-runtime's `admission.Errored`).
pub fn errored(uid: &str, code: u16, message: &str) -> Value {
    review(json!({
        "uid": uid,
        "allowed": false,
        "status": {"metadata": {}, "status": "Failure", "code": code, "message": message},
    }))
}

/// `apierrors.NewInvalid`: code 422, reason Invalid, one cause per error, and the message
/// `<Kind>.<group> "<name>" is invalid: <errors>`.
pub fn invalid_status(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> Value {
    let qualified = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    let causes: Vec<Value> = errors
        .iter()
        .map(|e| json!({"reason": cause_type(e.type_), "message": error_body(e), "field": e.field}))
        .collect();
    let message = match aggregate(errors) {
        Some(all) => format!(
            "{qualified} {} is invalid: {all}",
            quote(&truncated(name, MAX_QUOTED))
        ),
        None => format!(
            "{qualified} {} is invalid",
            quote(&truncated(name, MAX_QUOTED))
        ),
    };
    json!({
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Invalid",
        "details": {"name": name, "group": group, "kind": kind, "causes": causes},
        "code": 422,
    })
}

/// `field.ErrorList.ToAggregate().Error()`: identical messages once, one without brackets, several in
/// `[a, b]`.
fn aggregate(errors: &[FieldError]) -> Option<String> {
    let mut seen = HashSet::new();
    let messages: Vec<String> = errors
        .iter()
        .map(|e| format!("{}: {}", e.field, error_body(e)))
        .filter(|m| seen.insert(m.clone()))
        .collect();
    match messages.as_slice() {
        [] => None,
        [one] => Some(one.clone()),
        many => Some(format!("[{}]", many.join(", "))),
    }
}

fn type_name(t: FieldErrorType) -> &'static str {
    match t {
        FieldErrorType::Required => "Required value",
        FieldErrorType::Invalid => "Invalid value",
        FieldErrorType::Forbidden => "Forbidden",
        FieldErrorType::Duplicate => "Duplicate value",
        FieldErrorType::NotSupported => "Unsupported value",
    }
}

fn cause_type(t: FieldErrorType) -> &'static str {
    match t {
        FieldErrorType::Required => "FieldValueRequired",
        FieldErrorType::Invalid => "FieldValueInvalid",
        FieldErrorType::Forbidden => "FieldValueForbidden",
        FieldErrorType::Duplicate => "FieldValueDuplicate",
        FieldErrorType::NotSupported => "FieldValueNotSupported",
    }
}

/// `field.Error.ErrorBody()`: the type; then, except for Required and Forbidden, the value (strings as Go's
/// `%q`, numbers and booleans plain, `null`, structures as JSON); then the detail.
fn error_body(e: &FieldError) -> String {
    let mut s = type_name(e.type_).to_string();
    let shows_value = !matches!(
        e.type_,
        FieldErrorType::Required | FieldErrorType::Forbidden
    );
    if shows_value && let Some(raw) = &e.value {
        let value = serde_json::from_str::<Value>(raw).unwrap_or(Value::String(raw.clone()));
        let shown = match &value {
            Value::String(text) => quote(text),
            other => other.to_string(),
        };
        s.push_str(": ");
        s.push_str(&shown);
    }
    if !e.detail.is_empty() {
        s.push_str(": ");
        s.push_str(&e.detail);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(field: &str, type_: FieldErrorType, value: Option<&str>, detail: &str) -> FieldError {
        FieldError {
            field: field.into(),
            type_,
            value: value.map(str::to_string),
            detail: detail.into(),
        }
    }

    #[test]
    fn one_error_is_the_message_and_several_are_bracketed_as_go_prints_them() {
        let one = [error(
            "spec.deletePolicy",
            FieldErrorType::Invalid,
            Some(r#"{"orphan":true,"destroyMachines":true}"#),
            "orphan and destroyMachines cannot both be true",
        )];
        let status = invalid_status("omni.texashpc.com", "OmniCluster", "edge", &one);
        assert_eq!(
            status["message"],
            "OmniCluster.omni.texashpc.com \"edge\" is invalid: spec.deletePolicy: Invalid value: \
             {\"orphan\":true,\"destroyMachines\":true}: orphan and destroyMachines cannot both be true"
        );
        assert_eq!(status["code"], 422);
        assert_eq!(status["reason"], "Invalid");
        assert_eq!(
            status["details"]["causes"][0]["reason"],
            "FieldValueInvalid"
        );
        assert_eq!(status["details"]["causes"][0]["field"], "spec.deletePolicy");

        let several = [
            error(
                "spec.auth.serviceAccountSecretRef.name",
                FieldErrorType::Required,
                None,
                "service account Secret name is required",
            ),
            error(
                "spec.machines[1]",
                FieldErrorType::Duplicate,
                Some("\"a\\tb\""),
                "",
            ),
            error(
                "spec.machineClass.size",
                FieldErrorType::NotSupported,
                Some("\"lots\""),
                "supported values: \"unlimited\", \"infinity\", \"∞\"",
            ),
            error(
                "spec.ttl",
                FieldErrorType::Invalid,
                Some("-5"),
                "ttl must be greater than zero",
            ),
            // Required and Forbidden never print the value, even when one is given.
            error("spec.x", FieldErrorType::Forbidden, Some("1"), "no"),
            // Go's aggregate prints an identical message once.
            error("spec.x", FieldErrorType::Forbidden, Some("1"), "no"),
        ];
        let status = invalid_status("omni.texashpc.com", "OmniConnection", "c", &several);
        assert_eq!(
            status["message"],
            "OmniConnection.omni.texashpc.com \"c\" is invalid: [spec.auth.serviceAccountSecretRef.name: Required \
             value: service account Secret name is required, spec.machines[1]: Duplicate value: \"a\\tb\", \
             spec.machineClass.size: Unsupported value: \"lots\": supported values: \"unlimited\", \"infinity\", \
             \"∞\", spec.ttl: Invalid value: -5: ttl must be greater than zero, spec.x: Forbidden: no]"
        );
        assert_eq!(
            status["details"]["causes"].as_array().map(Vec::len),
            Some(6)
        );
        assert_eq!(
            invalid_status("g", "K", "n", &[])["message"],
            "K.g \"n\" is invalid"
        );
    }

    #[test]
    fn a_review_is_parsed_and_answered_with_its_uid() {
        let body = json!({
            "apiVersion": API_VERSION, "kind": "AdmissionReview",
            "request": {"uid": "u-1", "kind": {"group": "omni.texashpc.com", "version": "v1alpha1",
                "kind": "OmniCluster"}, "name": "edge", "namespace": "omni-system", "operation": "UPDATE",
                "object": {"spec": {}}, "oldObject": null}
        });
        let r = parse(body.to_string().as_bytes()).expect("parses");
        assert_eq!(
            (r.uid.as_str(), r.kind.as_str(), r.operation.as_str()),
            ("u-1", "OmniCluster", "UPDATE")
        );
        assert_eq!(r.namespace.as_deref(), Some("omni-system"));
        assert!(r.object.is_some() && r.old_object.is_none());
        let answer = allowed("u-1", &["careful".into()]);
        assert_eq!(answer["response"]["uid"], "u-1");
        assert_eq!(answer["response"]["allowed"], true);
        assert_eq!(answer["response"]["warnings"][0], "careful");
        assert!(allowed("u-1", &[])["response"].get("warnings").is_none());

        for bad in [
            json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {}}),
            json!({"apiVersion": API_VERSION, "kind": "AdmissionReview"}),
            json!({"apiVersion": API_VERSION, "kind": "AdmissionReview", "request": {"kind": {"kind": "X"}}}),
        ] {
            assert!(parse(bad.to_string().as_bytes()).is_err(), "{bad}");
        }
        assert!(matches!(parse(b"{"), Err(ReviewError::NotJson(_))));
    }
}
