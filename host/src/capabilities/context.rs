//! `context`: the per-call handle. The host mints one `call-context` per export call and lends it to the
//! plugin; through it the plugin reads its object and buffers outputs.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;
use wasmtime::component::Resource;

use super::outputs::{
    Condition, ConditionStatus, Event, EventType, LogLevel, LogLine, LogSource, OutputBounds,
    Outputs,
};
use crate::omni::OmniClient;
use crate::runtime::HostState;
use crate::runtime::bindings::omni::operator::context as wit;
use crate::runtime::bindings::omni::operator::types::LogLevel as WitLogLevel;

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
    /// Omni clients this call resolved, by connection name: the connection and its Secret are read once per call.
    omni_clients: HashMap<String, Arc<OmniClient>>,
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
            omni_clients: HashMap::new(),
            parsed: OnceLock::new(),
        }
    }

    /// The reconciled object as JSON (`null` if it does not parse, which a controller never hands over).
    pub(crate) fn object_value(&self) -> &Value {
        self.parsed
            .get_or_init(|| serde_json::from_str(self.object.json()).unwrap_or(Value::Null))
    }

    pub(crate) fn omni_client(&self, connection: &str) -> Option<Arc<OmniClient>> {
        self.omni_clients.get(connection).cloned()
    }

    pub(crate) fn remember_omni_client(&mut self, connection: &str, client: Arc<OmniClient>) {
        self.omni_clients.insert(connection.to_owned(), client);
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

impl wit::Host for HostState {}

impl wit::HostCallContext for HostState {
    async fn object(&mut self, ctx: Resource<CallContext>) -> wasmtime::Result<String> {
        Ok(self.table.get(&ctx)?.object.json().to_owned())
    }

    async fn remaining_ms(&mut self, ctx: Resource<CallContext>) -> wasmtime::Result<u64> {
        Ok(u64::try_from(self.table.get(&ctx)?.remaining().as_millis()).unwrap_or(u64::MAX))
    }

    // Output violations abort the call (a trap classified from `OutputViolation`): the plugin cannot be
    // trusted to handle a refusal it has no return value for, and a partial status must never be committed.
    async fn set_status(
        &mut self,
        ctx: Resource<CallContext>,
        fields: String,
    ) -> wasmtime::Result<()> {
        let (outputs, bounds) = self.table.get_mut(&ctx)?.outputs_mut();
        outputs
            .set_status(&fields, bounds)
            .map_err(wasmtime::Error::new)
    }

    async fn set_condition(
        &mut self,
        ctx: Resource<CallContext>,
        condition: wit::Condition,
    ) -> wasmtime::Result<()> {
        let condition = Condition {
            type_: condition.type_,
            status: match condition.status {
                wit::ConditionStatus::True => ConditionStatus::True,
                wit::ConditionStatus::False => ConditionStatus::False,
                wit::ConditionStatus::Unknown => ConditionStatus::Unknown,
            },
            reason: condition.reason,
            message: condition.message,
        };
        let (outputs, bounds) = self.table.get_mut(&ctx)?.outputs_mut();
        outputs
            .set_condition(condition, bounds)
            .map_err(wasmtime::Error::new)
    }

    async fn requeue_after(&mut self, ctx: Resource<CallContext>, ms: u64) -> wasmtime::Result<()> {
        let (outputs, _) = self.table.get_mut(&ctx)?.outputs_mut();
        outputs.requeue_after = Some(Duration::from_millis(ms));
        Ok(())
    }

    async fn event(
        &mut self,
        ctx: Resource<CallContext>,
        type_: wit::EventType,
        reason: String,
        message: String,
    ) -> wasmtime::Result<()> {
        let type_ = match type_ {
            wit::EventType::Normal => EventType::Normal,
            wit::EventType::Warning => EventType::Warning,
        };
        let (outputs, bounds) = self.table.get_mut(&ctx)?.outputs_mut();
        outputs
            .event(
                Event {
                    type_,
                    reason,
                    message,
                },
                bounds,
            )
            .map_err(wasmtime::Error::new)
    }

    async fn log(
        &mut self,
        ctx: Resource<CallContext>,
        level: WitLogLevel,
        message: String,
        fields: Vec<(String, String)>,
    ) -> wasmtime::Result<()> {
        let level = match level {
            WitLogLevel::Trace => LogLevel::Trace,
            WitLogLevel::Debug => LogLevel::Debug,
            WitLogLevel::Info => LogLevel::Info,
            WitLogLevel::Warn => LogLevel::Warn,
            WitLogLevel::Error => LogLevel::Error,
        };
        let line = LogLine {
            source: LogSource::Plugin,
            level,
            message,
            fields,
        };
        let plugin = self.plugin.clone();
        let (outputs, bounds) = self.table.get_mut(&ctx)?.outputs_mut();
        if outputs.log(line, bounds)
            && let Some(kept) = outputs.logs.last()
        {
            kept.emit(&plugin);
        }
        Ok(())
    }

    async fn drop(&mut self, _ctx: Resource<CallContext>) -> wasmtime::Result<()> {
        // Plugins only ever borrow the context; the host removes it from the table when the call ends.
        Ok(())
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
