//! Why a plugin could not be loaded or a call did not complete, classified so the controllers can turn it into
//! a condition reason, an event and a metric label — never by matching on message text.

use std::fmt;
use std::time::Duration;

use wasmtime::Trap;
use wasmtime_wasi::I32Exit;

use super::limits::{HostCallsExceeded, MemoryCapExceeded};
use crate::contract::OutputViolation;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The call ran past its deadline (guest code or host I/O).
    Timeout,
    /// The guest grew its memory past the cap.
    OutOfMemory,
    /// The guest aborted: a Rust panic, `unreachable`, or another guest fault.
    Panic,
    /// The plugin imports a capability its grants do not include (refused at load).
    DeniedCapability,
    /// The call's outputs exceeded their bounds.
    OutputTooLarge,
    /// The call's outputs or the plugin's answers are malformed.
    InvalidOutput,
    /// The call entered the host more often than its limit allows.
    TooManyHostCalls,
    Other,
}

impl ErrorKind {
    /// A `CamelCase` reason for conditions and events, and a stable metric label.
    pub fn reason(self) -> &'static str {
        match self {
            ErrorKind::Timeout => "PluginTimeout",
            ErrorKind::OutOfMemory => "PluginOutOfMemory",
            ErrorKind::Panic => "PluginPanic",
            ErrorKind::DeniedCapability => "PluginCapabilityDenied",
            ErrorKind::OutputTooLarge => "PluginOutputTooLarge",
            ErrorKind::InvalidOutput => "PluginInvalidOutput",
            ErrorKind::TooManyHostCalls => "PluginTooManyHostCalls",
            ErrorKind::Other => "PluginFailed",
        }
    }
}

/// A load refused or a call aborted by the runtime. Displays as `plugin "<name>" <what happened>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("plugin {plugin:?} {message}")]
pub struct PluginError {
    plugin: String,
    kind: ErrorKind,
    message: String,
}

impl PluginError {
    pub(crate) fn new(plugin: &str, kind: ErrorKind, message: impl fmt::Display) -> Self {
        PluginError {
            plugin: plugin.to_owned(),
            kind,
            message: message.to_string(),
        }
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub fn plugin(&self) -> &str {
        &self.plugin
    }

    /// What happened, without the plugin's name.
    pub fn message(&self) -> &str {
        &self.message
    }

    pub(crate) fn timeout(plugin: &str, limit: Duration) -> Self {
        PluginError::new(
            plugin,
            ErrorKind::Timeout,
            format!(
                "timed out: the call did not finish within its {} ms deadline",
                limit.as_millis()
            ),
        )
    }
}

/// What the runtime knew about the call when it failed, for the message.
pub(crate) struct Failure<'a> {
    pub(crate) plugin: &'a str,
    pub(crate) timeout: Duration,
    pub(crate) stderr_tail: String,
}

/// Classifies an error from instantiating or calling a plugin by the types in its chain.
pub(crate) fn classify(error: &wasmtime::Error, failure: Failure<'_>) -> PluginError {
    let Failure {
        plugin,
        timeout,
        stderr_tail,
    } = failure;
    let stderr = if stderr_tail.is_empty() {
        String::new()
    } else {
        format!("; stderr: {stderr_tail}")
    };

    if let Some(violation) = error.downcast_ref::<OutputViolation>() {
        let kind = match violation {
            OutputViolation::TooLarge(_) => ErrorKind::OutputTooLarge,
            OutputViolation::Invalid(_) => ErrorKind::InvalidOutput,
        };
        return PluginError::new(
            plugin,
            kind,
            format!("produced output the host refuses: {violation}"),
        );
    }
    if let Some(refused) = error.downcast_ref::<MemoryCapExceeded>() {
        return PluginError::new(
            plugin,
            ErrorKind::OutOfMemory,
            format!(
                "ran out of memory: it tried to grow to {} MiB, over its {} MiB cap",
                mib(refused.desired),
                mib(refused.cap)
            ),
        );
    }
    if let Some(exceeded) = error.downcast_ref::<HostCallsExceeded>() {
        return PluginError::new(
            plugin,
            ErrorKind::TooManyHostCalls,
            format!("was stopped: it {exceeded} during one call"),
        );
    }
    if let Some(exit) = error.downcast_ref::<I32Exit>() {
        return PluginError::new(
            plugin,
            ErrorKind::Panic,
            format!("exited with status {} during the call{stderr}", exit.0),
        );
    }
    match error.downcast_ref::<Trap>() {
        Some(Trap::Interrupt | Trap::OutOfFuel) => PluginError::timeout(plugin, timeout),
        Some(Trap::UnreachableCodeReached) => PluginError::new(
            plugin,
            ErrorKind::Panic,
            format!("panicked (wasm trap: unreachable){stderr}"),
        ),
        Some(trap) => {
            PluginError::new(plugin, ErrorKind::Panic, format!("trapped: {trap}{stderr}"))
        }
        None => PluginError::new(
            plugin,
            ErrorKind::Other,
            format!("failed: {}{stderr}", root_message(error)),
        ),
    }
}

fn mib(bytes: usize) -> String {
    let mib = bytes as f64 / f64::from(1u32 << 20);
    if mib.fract() == 0.0 {
        format!("{mib:.0}")
    } else {
        format!("{mib:.1}")
    }
}

/// The error chain on one line, without wasmtime's multi-line wasm backtrace.
fn root_message(error: &wasmtime::Error) -> String {
    error
        .chain()
        .map(|e| e.to_string().lines().next().unwrap_or_default().to_owned())
        .collect::<Vec<_>>()
        .join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure() -> Failure<'static> {
        Failure {
            plugin: "p",
            timeout: Duration::from_secs(5),
            stderr_tail: "boom".into(),
        }
    }

    #[test]
    fn classification_goes_by_error_type() {
        let kind = |e: wasmtime::Error| classify(&e, failure()).kind();
        assert_eq!(
            kind(wasmtime::Error::new(OutputViolation::TooLarge("x".into()))),
            ErrorKind::OutputTooLarge
        );
        assert_eq!(
            kind(wasmtime::Error::new(OutputViolation::Invalid("x".into()))),
            ErrorKind::InvalidOutput
        );
        assert_eq!(
            kind(wasmtime::Error::new(MemoryCapExceeded {
                desired: 3 << 20,
                cap: 2 << 20
            })),
            ErrorKind::OutOfMemory
        );
        assert_eq!(
            kind(wasmtime::Error::new(Trap::Interrupt)),
            ErrorKind::Timeout
        );
        assert_eq!(
            kind(wasmtime::Error::new(Trap::UnreachableCodeReached)),
            ErrorKind::Panic
        );
        assert_eq!(kind(wasmtime::Error::msg("link error")), ErrorKind::Other);
    }

    #[test]
    fn messages_name_the_plugin_and_the_cause() {
        let e = classify(
            &wasmtime::Error::new(Trap::UnreachableCodeReached),
            failure(),
        );
        assert_eq!(
            e.to_string(),
            "plugin \"p\" panicked (wasm trap: unreachable); stderr: boom"
        );
        let e = classify(
            &wasmtime::Error::new(MemoryCapExceeded {
                desired: 129 << 20,
                cap: 128 << 20,
            }),
            failure(),
        );
        assert_eq!(
            e.message(),
            "ran out of memory: it tried to grow to 129 MiB, over its 128 MiB cap"
        );
        assert_eq!(e.kind().reason(), "PluginOutOfMemory");
    }
}
