//! The call context's text sinks (`log`, `event`, `set-condition`, `set-status`), linked so that a plugin's
//! strings are measured in its own memory before anything is copied out: only what the host keeps (a bounded
//! prefix) is copied. The bindings' own versions would first copy every string whole into host memory, so one
//! call could make the host allocate as much as the guest's memory cap, per string, before any truncation.
//!
//! These definitions shadow the generated ones for the same four functions and hand the bounded strings to
//! them, so the output rules stay in one place (`capabilities::context`).

use std::borrow::Cow;

use anyhow::Context as _;
use wasmtime::StoreContextMut;
use wasmtime::component::{ComponentType, Lift, Linker, Resource, WasmList, WasmStr};

use super::store::HostState;
use crate::capabilities::ContextCap;
use crate::contract::bindings::omni::operator::context as wit;
use crate::contract::bindings::omni::operator::types::LogLevel;
use crate::contract::{
    CallContext, MAX_CONDITION_MESSAGE, MAX_CONDITION_TYPE, MAX_EVENT_MESSAGE, MAX_EVENT_REASON,
    MAX_LOG_FIELD_KEY, MAX_LOG_FIELD_VALUE, MAX_LOG_FIELDS, MAX_LOG_MESSAGE, MAX_REASON,
    too_large_status, truncated,
};

/// The contract's `condition` record with its strings left in guest memory.
#[derive(ComponentType, Lift)]
#[component(record)]
struct GuestCondition {
    #[component(name = "type")]
    type_: WasmStr,
    status: wit::ConditionStatus,
    reason: WasmStr,
    message: WasmStr,
}

/// At most `max` bytes of `text` (cut on a character boundary); `marked` appends `…` where text was cut.
/// Only what is kept is copied.
fn prefix<T: 'static>(
    text: &WasmStr,
    store: &StoreContextMut<'_, T>,
    max: usize,
    marked: bool,
) -> wasmtime::Result<String> {
    let whole: Cow<'_, str> = text.to_str(store)?;
    Ok(if marked {
        truncated(&whole, max)
    } else {
        whole[..whole.floor_char_boundary(max)].to_owned()
    })
}

/// Shadows the generated `call-context` text sinks in `linker` (which must already hold the bindings).
pub(super) fn link(linker: &mut Linker<HostState>) -> anyhow::Result<()> {
    linker.allow_shadowing(true);
    let mut context = linker
        .instance("omni:operator/context@0.1.0")
        .map_err(anyhow::Error::from)
        .context("the context interface")?;
    context
        .func_wrap_async(
            "[method]call-context.log",
            |mut store: StoreContextMut<'_, HostState>,
             (ctx, level, message, fields): (
                Resource<CallContext>,
                LogLevel,
                WasmStr,
                WasmList<(WasmStr, WasmStr)>,
            )| {
                Box::new(async move {
                    let message = prefix(&message, &store, MAX_LOG_MESSAGE, true)?;
                    let mut kept = Vec::new();
                    for i in 0..fields.len().min(MAX_LOG_FIELDS) {
                        let Some(field) = fields.get(&mut store, i) else {
                            break;
                        };
                        let (key, value) = field?;
                        kept.push((
                            prefix(&key, &store, MAX_LOG_FIELD_KEY, true)?,
                            prefix(&value, &store, MAX_LOG_FIELD_VALUE, true)?,
                        ));
                    }
                    let scope = &mut store.data_mut().scope;
                    wit::HostCallContext::log(
                        &mut ContextCap::of(scope),
                        ctx,
                        level,
                        message,
                        kept,
                    )
                    .await?;
                    Ok(())
                })
            },
        )
        .map_err(anyhow::Error::from)
        .context("linking call-context.log")?;
    context
        .func_wrap_async(
            "[method]call-context.event",
            |store: StoreContextMut<'_, HostState>,
             (ctx, type_, reason, message): (
                Resource<CallContext>,
                wit::EventType,
                WasmStr,
                WasmStr,
            )| {
                Box::new(async move {
                    // One byte over the limit keeps an over-long reason invalid (and refused) without copying it.
                    let reason = prefix(&reason, &store, MAX_EVENT_REASON + 1, false)?;
                    let message = prefix(&message, &store, MAX_EVENT_MESSAGE, true)?;
                    let mut store = store;
                    let scope = &mut store.data_mut().scope;
                    wit::HostCallContext::event(
                        &mut ContextCap::of(scope),
                        ctx,
                        type_,
                        reason,
                        message,
                    )
                    .await?;
                    Ok(())
                })
            },
        )
        .map_err(anyhow::Error::from)
        .context("linking call-context.event")?;
    context
        .func_wrap_async(
            "[method]call-context.set-condition",
            |mut store: StoreContextMut<'_, HostState>,
             (ctx, condition): (Resource<CallContext>, GuestCondition)| {
                Box::new(async move {
                    let condition = wit::Condition {
                        type_: prefix(&condition.type_, &store, MAX_CONDITION_TYPE + 1, false)?,
                        status: condition.status,
                        reason: prefix(&condition.reason, &store, MAX_REASON + 1, false)?,
                        message: prefix(&condition.message, &store, MAX_CONDITION_MESSAGE, true)?,
                    };
                    let scope = &mut store.data_mut().scope;
                    wit::HostCallContext::set_condition(&mut ContextCap::of(scope), ctx, condition)
                        .await?;
                    Ok(())
                })
            },
        )
        .map_err(anyhow::Error::from)
        .context("linking call-context.set-condition")?;
    context
        .func_wrap_async(
            "[method]call-context.set-status",
            |mut store: StoreContextMut<'_, HostState>,
             (ctx, fields): (Resource<CallContext>, WasmStr)| {
                Box::new(async move {
                    let bounds = *store.data().scope.core.table.get(&ctx)?.bounds();
                    let size = fields.to_str(&store)?.len();
                    if size > bounds.max_status_bytes {
                        return Err(wasmtime::Error::new(too_large_status(size, &bounds)));
                    }
                    let fields = fields.to_str(&store)?.into_owned();
                    let scope = &mut store.data_mut().scope;
                    wit::HostCallContext::set_status(&mut ContextCap::of(scope), ctx, fields)
                        .await?;
                    Ok(())
                })
            },
        )
        .map_err(anyhow::Error::from)
        .context("linking call-context.set-status")?;
    linker.allow_shadowing(false);
    Ok(())
}
