//! API errors, rendered as the `metav1.Status` bodies kube-apiserver returns.

use serde_json::{Value, json};

/// A failed request, carrying everything needed to build the real server's `Status` reply.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    /// Boxed: most errors carry none, and results stay small.
    pub details: Option<Box<Value>>,
    /// Seconds for a `Retry-After` header (429/503), as the real server sends with throttling.
    pub retry_after: Option<u32>,
    /// A `metadata.continue` token in the Status: the real server hands one out with the 410 for an expired
    /// continue token, to resume the list (inconsistently) at the latest revision.
    pub continue_token: Option<String>,
    /// `Warning` headers sent with the error: admission webhooks' warnings reach the client on denials too.
    pub warnings: Vec<String>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
            retry_after: None,
            continue_token: None,
            warnings: Vec::new(),
        }
    }

    pub fn with_warnings(mut self, warnings: Vec<String>) -> Self {
        self.warnings = warnings;
        self
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// `configmaps "x" not found` / `widgets.example.com "x" not found`.
    pub fn not_found(group_resource: &str, name: &str) -> Self {
        let (resource, group) = split_group_resource(group_resource);
        Self::new(
            404,
            "NotFound",
            format!("{group_resource} \"{name}\" not found"),
        )
        .with_details(details(name, group, resource))
    }

    pub fn already_exists(group_resource: &str, name: &str) -> Self {
        let (resource, group) = split_group_resource(group_resource);
        Self::new(
            409,
            "AlreadyExists",
            format!("{group_resource} \"{name}\" already exists"),
        )
        .with_details(details(name, group, resource))
    }

    /// The optimistic-concurrency failure every client retries on.
    pub fn conflict(group_resource: &str, name: &str, why: &str) -> Self {
        let (resource, group) = split_group_resource(group_resource);
        Self::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {group_resource} \"{name}\": {why}"),
        )
        .with_details(details(name, group, resource))
    }

    pub fn stale_resource_version(group_resource: &str, name: &str) -> Self {
        Self::conflict(
            group_resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 with field causes: `Kind "name" is invalid: <errors>`; several errors are bracketed and comma-joined.
    pub fn invalid(kind: &str, group: &str, name: &str, errors: &[FieldCause]) -> Self {
        let joined = match errors {
            [one] => one.message.clone(),
            many => format!(
                "[{}]",
                many.iter()
                    .map(|e| e.message.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let qualified = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let causes: Vec<Value> = errors
            .iter()
            .map(|e| json!({"reason": e.reason, "message": e.detail, "field": e.field}))
            .collect();
        let mut d = json!({"name": name, "kind": kind, "causes": causes});
        if !group.is_empty() {
            d["group"] = json!(group);
        }
        Self::new(
            422,
            "Invalid",
            format!("{qualified} \"{name}\" is invalid: {joined}"),
        )
        .with_details(d)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    /// 410 Gone for a watch or list that asks for history the server no longer keeps.
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(415, "UnsupportedMediaType", message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {}", message.into()),
        )
    }

    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// The `metav1.Status` body for this error.
    pub fn to_status(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = (**d).clone();
        }
        if let Some(token) = &self.continue_token {
            s["metadata"]["continue"] = json!(token);
        }
        if let Some(secs) = self.retry_after {
            let d = s["details"].as_object_mut().map(|_| ()).is_some();
            if !d {
                s["details"] = json!({});
            }
            s["details"]["retryAfterSeconds"] = json!(secs);
        }
        s
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

/// One field-level cause of a 422, in the shape of `metav1.StatusCause`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldCause {
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldValueForbidden`, ...
    pub reason: &'static str,
    pub field: String,
    /// The whole `field: Kind: detail` text, as printed in the Status message.
    pub message: String,
    /// The cause's own message: the same text without the leading `field: `, as field.Error.ErrorBody() gives
    /// it (kubectl prints `field: message` from the causes, so repeating the field would print it twice).
    pub detail: String,
}

impl FieldCause {
    fn new(reason: &'static str, field: &str, text: String) -> Self {
        let detail = text
            .strip_prefix(&format!("{field}: "))
            .unwrap_or(&text)
            .to_string();
        FieldCause {
            reason,
            field: field.into(),
            message: text,
            detail,
        }
    }

    pub fn invalid(field: &str, value: &Value, detail: &str) -> Self {
        Self::new(
            "FieldValueInvalid",
            field,
            format!("{field}: Invalid value: {}: {detail}", render_value(value)),
        )
    }

    pub fn required(field: &str, detail: &str) -> Self {
        let text = if detail.is_empty() {
            format!("{field}: Required value")
        } else {
            format!("{field}: Required value: {detail}")
        };
        Self::new("FieldValueRequired", field, text)
    }

    pub fn forbidden(field: &str, detail: &str) -> Self {
        Self::new(
            "FieldValueForbidden",
            field,
            format!("{field}: Forbidden: {detail}"),
        )
    }

    /// A cause whose text was already formatted elsewhere (schema validation).
    pub fn preformatted(reason: &'static str, field: &str, text: String) -> Self {
        Self::new(reason, field, text)
    }
}

/// Renders a bad value the way Go's field errors quote it: strings quoted, numbers bare, objects by type.
pub fn render_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".into(),
        Value::Array(_) => "\"array\"".into(),
        Value::Object(_) => "\"object\"".into(),
    }
}

fn split_group_resource(gr: &str) -> (&str, &str) {
    match gr.split_once('.') {
        Some((r, g)) => (r, g),
        None => (gr, ""),
    }
}

fn details(name: &str, group: &str, resource: &str) -> Value {
    let mut d = json!({"name": name, "kind": resource});
    if !group.is_empty() {
        d["group"] = json!(group);
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_mirrors_the_real_status_for_core_and_group_resources() {
        let e = ApiError::not_found("configmaps", "demo").to_status();
        assert_eq!(e["message"], "configmaps \"demo\" not found");
        assert_eq!(e["reason"], "NotFound");
        assert_eq!(e["code"], 404);
        assert_eq!(e["details"], json!({"name": "demo", "kind": "configmaps"}));
        let e = ApiError::not_found("widgets.example.com", "w1").to_status();
        assert_eq!(
            e["details"],
            json!({"name": "w1", "kind": "widgets", "group": "example.com"})
        );
    }

    #[test]
    fn invalid_joins_several_causes_in_brackets_like_the_real_server() {
        let errs = [
            FieldCause::required("spec.a", ""),
            FieldCause::invalid("spec.b", &json!("x"), "must be an integer"),
        ];
        let e = ApiError::invalid("Widget", "example.com", "w1", &errs);
        assert_eq!(
            e.message,
            "Widget.example.com \"w1\" is invalid: [spec.a: Required value, spec.b: Invalid value: \"x\": must be an integer]"
        );
        let one = ApiError::invalid("ConfigMap", "", "c", &errs[..1]);
        assert_eq!(
            one.message,
            "ConfigMap \"c\" is invalid: spec.a: Required value"
        );
        let cause = &one.to_status()["details"]["causes"][0];
        assert_eq!(
            cause["message"], "Required value",
            "the cause message omits the field, as ErrorBody() does"
        );
        assert_eq!(cause["field"], "spec.a");
    }
}
