//! The per-call state behind a `call-context` handle: the object the call is about, its deadline, and the
//! outputs it buffers. The host mints one per export call and lends it to the plugin.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

use super::outputs::{OutputBounds, Outputs};

/// Dotted paths to a Secret's name and (optionally) namespace in the reconciled object: where a plugin declares
/// (in `describe`) that its objects name the Secrets it may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretField {
    pub name: String,
    pub namespace: Option<String>,
}

/// The object a call is about, as JSON, with the namespace the host scopes the call's reads to.
#[derive(Debug, Clone)]
pub struct CallObject {
    json: Arc<str>,
    namespace: Option<String>,
}

impl CallObject {
    /// For callers that already know the namespace (a controller holding the decoded object): no parse.
    pub fn new(json: impl Into<Arc<str>>, namespace: Option<String>) -> Self {
        CallObject {
            json: json.into(),
            namespace,
        }
    }

    /// Reads the namespace from `metadata.namespace`; fails when `json` is not a JSON object.
    pub fn parse(json: impl Into<Arc<str>>) -> Result<Self, serde_json::Error> {
        #[derive(Deserialize)]
        struct Object {
            #[serde(default)]
            metadata: Metadata,
        }
        #[derive(Deserialize, Default)]
        struct Metadata {
            namespace: Option<String>,
        }
        let json = json.into();
        // serde would also accept `[metadata]` for a struct; an object is only ever a JSON object.
        if !json.trim_start().starts_with('{') {
            return Err(serde::de::Error::custom(
                "a Kubernetes object must be a JSON object",
            ));
        }
        let object: Object = serde_json::from_str(&json)?;
        Ok(CallObject {
            json,
            namespace: object.metadata.namespace,
        })
    }

    pub fn json(&self) -> &str {
        &self.json
    }

    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }
}

/// The state behind one `call-context` handle.
pub struct CallContext {
    object: CallObject,
    deadline: Instant,
    bounds: OutputBounds,
    outputs: Outputs,
    /// The object parsed, on first use by a capability that looks into it (Secret references, the owner UID).
    parsed: OnceLock<Value>,
}

impl CallContext {
    pub(crate) fn new(object: CallObject, deadline: Instant, bounds: OutputBounds) -> Self {
        CallContext {
            object,
            deadline,
            bounds,
            outputs: Outputs::default(),
            parsed: OnceLock::new(),
        }
    }

    /// The reconciled object as JSON (`null` if it does not parse, which a controller never hands over).
    pub(crate) fn object_value(&self) -> &Value {
        self.parsed
            .get_or_init(|| serde_json::from_str(self.object.json()).unwrap_or(Value::Null))
    }

    /// The bounds on what the call may output.
    pub fn bounds(&self) -> &OutputBounds {
        &self.bounds
    }

    /// The object the call is about.
    pub fn object(&self) -> &CallObject {
        &self.object
    }

    /// The reconciled object's namespace, which scopes the call's reads.
    pub fn namespace(&self) -> Option<&str> {
        self.object.namespace()
    }

    /// Time left before the host abandons the call.
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    pub(crate) fn outputs_mut(&mut self) -> (&mut Outputs, &OutputBounds) {
        (&mut self.outputs, &self.bounds)
    }

    pub(crate) fn into_outputs(self) -> Outputs {
        self.outputs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_reads_the_namespace() {
        let object =
            CallObject::parse(r#"{"metadata":{"name":"a","namespace":"team-a"},"spec":{}}"#)
                .unwrap();
        assert_eq!(object.namespace(), Some("team-a"));
        let cluster_scoped = CallObject::parse(r#"{"metadata":{"name":"a"}}"#).unwrap();
        assert_eq!(cluster_scoped.namespace(), None);
        assert!(CallObject::parse("[]").is_err());
    }
}
