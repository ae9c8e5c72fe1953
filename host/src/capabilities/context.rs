//! `context`: the per-call handle. The host mints one `call-context` per export call and lends it to the
//! plugin; through it the plugin reads its object and buffers outputs (the state itself is
//! [`crate::contract::CallContext`]).

use std::time::Duration;

use wasmtime::component::Resource;

use super::{
    CallContext, Condition, ConditionStatus, Event, EventType, LogLevel, LogLine, LogSource,
};
use crate::contract::bindings::omni::operator::context as wit;
use crate::contract::bindings::omni::operator::types::LogLevel as WitLogLevel;

/// `context` serves with nothing but the call's core.
#[derive(Debug, Clone, Default)]
pub struct Services;

/// `context` keeps nothing per call beyond the call-context resource in the core's table.
pub(crate) type State = ();

super::capability_view!(
    /// The `context` interface's view of a call: the call-context resource every plugin uses.
    ContextCap,
    wit,
    context
);

impl wit::Host for ContextCap<'_> {}

impl wit::HostCallContext for ContextCap<'_> {
    async fn object(&mut self, ctx: Resource<CallContext>) -> wasmtime::Result<String> {
        Ok(self.core.table.get(&ctx)?.object().json().to_owned())
    }

    async fn remaining_ms(&mut self, ctx: Resource<CallContext>) -> wasmtime::Result<u64> {
        Ok(u64::try_from(self.core.table.get(&ctx)?.remaining().as_millis()).unwrap_or(u64::MAX))
    }

    // Output violations abort the call (a trap classified from `OutputViolation`): the plugin cannot be
    // trusted to handle a refusal it has no return value for, and a partial status must never be committed.
    async fn set_status(
        &mut self,
        ctx: Resource<CallContext>,
        fields: String,
    ) -> wasmtime::Result<()> {
        let (outputs, bounds) = self.core.table.get_mut(&ctx)?.outputs_mut();
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
        let (outputs, bounds) = self.core.table.get_mut(&ctx)?.outputs_mut();
        outputs
            .set_condition(condition, bounds)
            .map_err(wasmtime::Error::new)
    }

    async fn requeue_after(&mut self, ctx: Resource<CallContext>, ms: u64) -> wasmtime::Result<()> {
        let (outputs, _) = self.core.table.get_mut(&ctx)?.outputs_mut();
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
        let (outputs, bounds) = self.core.table.get_mut(&ctx)?.outputs_mut();
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
        let plugin = self.core.plugin.clone();
        let (outputs, bounds) = self.core.table.get_mut(&ctx)?.outputs_mut();
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
mod grant_checks {
    use serde_json::json;
    use wit::HostCallContext as _;

    use super::*;
    use crate::capabilities::call::testing::TestCall;

    /// `context` needs no grant: every plugin reads its own object and buffers its outputs, within the call's
    /// output bounds (a status over them aborts the call rather than being cut).
    #[tokio::test]
    async fn every_plugin_reads_its_own_object_and_its_outputs_are_bounded() {
        let mut call = TestCall::new(&[], json!({"spec": {"size": 3}}), &[]);
        let ctx = call.ctx();
        let object = ContextCap::over(&mut call.core, &mut (), &Services)
            .object(ctx)
            .await
            .expect("the object");
        assert!(object.contains("\"size\":3"), "{object}");
        let ctx = call.ctx();
        let huge = json!({ "x": "y".repeat(1 << 20) }).to_string();
        let answer = ContextCap::over(&mut call.core, &mut (), &Services)
            .set_status(ctx, huge)
            .await;
        assert!(answer.is_err(), "a status over the bounds aborts the call");
    }
}
