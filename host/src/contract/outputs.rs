//! What a call asks the host to commit — status fields, conditions, events, a requeue — buffered during the
//! call and bounded, so a plugin cannot flood the API server or the host's memory. The caller commits them
//! only if the call returns ok.

use std::io;
use std::time::Duration;

use serde_json::{Map, Value};

/// Limits on what one call may output. Exceeding a count or size aborts the call (`OutputTooLarge`); human
/// text (messages, log lines) is truncated instead, as Kubernetes' own event recorders do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputBounds {
    /// Serialised size of the merged status fields.
    pub max_status_bytes: usize,
    /// Distinct condition types.
    pub max_conditions: usize,
    pub max_events: usize,
    /// Log lines kept in [`Outputs::logs`]; further lines still reach tracing until the same limit, then are
    /// counted in [`Outputs::logs_dropped`].
    pub max_log_lines: usize,
}

impl Default for OutputBounds {
    fn default() -> Self {
        OutputBounds {
            max_status_bytes: 256 * 1024,
            max_conditions: 64,
            max_events: 64,
            max_log_lines: 256,
        }
    }
}

/// Kubernetes' limits for `metav1.Condition` and event notes.
pub(crate) const MAX_CONDITION_TYPE: usize = 316;
pub(crate) const MAX_REASON: usize = 1024;
pub(crate) const MAX_CONDITION_MESSAGE: usize = 32 * 1024;
pub(crate) const MAX_EVENT_REASON: usize = 128;
pub(crate) const MAX_EVENT_MESSAGE: usize = 1024;
pub(crate) const MAX_LOG_MESSAGE: usize = 4096;
/// Structured fields of one log line: how many, and how long a key and a value may be.
pub(crate) const MAX_LOG_FIELDS: usize = 32;
pub(crate) const MAX_LOG_FIELD_KEY: usize = 128;
pub(crate) const MAX_LOG_FIELD_VALUE: usize = 1024;
/// Denials recorded per call; further ones are only counted (each one was still logged).
pub const MAX_DENIALS: usize = 16;

/// Status fields the host owns: plugins report conditions through `set-condition`, and the host writes
/// `observedGeneration` itself.
const HOST_OWNED_STATUS_FIELDS: [&str; 2] = ["conditions", "observedGeneration"];

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outputs {
    /// Top-level `.status` fields to merge (a JSON merge patch one level deep: `null` removes a field).
    pub status: Map<String, Value>,
    /// Conditions to upsert, one per type, in the order first set.
    pub conditions: Vec<Condition>,
    pub requeue_after: Option<Duration>,
    pub events: Vec<Event>,
    /// The plugin's log lines and captured stdout/stderr; they were also emitted to tracing.
    pub logs: Vec<LogLine>,
    pub logs_dropped: usize,
    /// Capability calls the host refused for lack of a grant, in order; the caller reports them on the object.
    pub denials: Vec<Denial>,
    /// Denials beyond [`MAX_DENIALS`].
    pub denials_dropped: usize,
}

/// A capability call the host refused: which capability, on what, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub capability: &'static str,
    /// What the plugin tried, naming the target (`kube-read get Secret "omni-key"`).
    pub target: String,
    pub reason: String,
}

impl Denial {
    /// The sentence logs, Events and conditions carry, naming the plugin, the capability and the target.
    pub fn message(&self, plugin: &str) -> String {
        format!(
            "plugin {plugin:?} was denied {}: {}: {}",
            self.capability, self.target, self.reason
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub type_: String,
    pub status: ConditionStatus,
    pub reason: String,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

impl ConditionStatus {
    /// As Kubernetes spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub type_: EventType,
    pub reason: String,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogSource {
    /// The contract's `log` function.
    Plugin,
    Stdout,
    Stderr,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub source: LogSource,
    pub level: LogLevel,
    pub message: String,
    pub fields: Vec<(String, String)>,
}

/// The tracing target of plugin log lines (`RUST_LOG=omni_operator::plugin=debug`); the macros below need
/// it as a literal.
pub const PLUGIN_LOG_TARGET: &str = "omni_operator::plugin";

impl LogLine {
    /// Emits the line as a tracing event tagged with the plugin's name.
    pub(crate) fn emit(&self, plugin: &str) {
        let source = match self.source {
            LogSource::Plugin => "log",
            LogSource::Stdout => "stdout",
            LogSource::Stderr => "stderr",
        };
        let fields = self
            .fields
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        let message = &self.message;
        match self.level {
            LogLevel::Trace => {
                tracing::trace!(target: "omni_operator::plugin", plugin, source, fields, "{message}")
            }
            LogLevel::Debug => {
                tracing::debug!(target: "omni_operator::plugin", plugin, source, fields, "{message}")
            }
            LogLevel::Info => {
                tracing::info!(target: "omni_operator::plugin", plugin, source, fields, "{message}")
            }
            LogLevel::Warn => {
                tracing::warn!(target: "omni_operator::plugin", plugin, source, fields, "{message}")
            }
            LogLevel::Error => {
                tracing::error!(target: "omni_operator::plugin", plugin, source, fields, "{message}")
            }
        }
    }
}

/// Output a call may not make; it aborts the call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum OutputViolation {
    #[error("{0}")]
    TooLarge(String),
    #[error("{0}")]
    Invalid(String),
}

impl Outputs {
    /// Merges `fields` (a JSON object) into the buffered status.
    pub(crate) fn set_status(
        &mut self,
        fields: &str,
        bounds: &OutputBounds,
    ) -> Result<(), OutputViolation> {
        // Checked before parsing, so an oversized document costs the host a length comparison, not a parse.
        if fields.len() > bounds.max_status_bytes {
            return Err(too_large_status(fields.len(), bounds));
        }
        let parsed: Value = serde_json::from_str(fields).map_err(|e| {
            OutputViolation::Invalid(format!("set-status was given invalid JSON: {e}"))
        })?;
        let Value::Object(fields) = parsed else {
            return Err(OutputViolation::Invalid(format!(
                "set-status takes a JSON object of status fields, not {}",
                json_kind(&parsed)
            )));
        };
        if let Some(owned) = HOST_OWNED_STATUS_FIELDS
            .iter()
            .find(|f| fields.contains_key(**f))
        {
            return Err(OutputViolation::Invalid(format!(
                "set-status may not set `{owned}`: the host owns it (use set-condition for conditions)"
            )));
        }
        let mut merged = self.status.clone();
        merged.extend(fields);
        let size = serialized_len(&merged);
        if size > bounds.max_status_bytes {
            return Err(too_large_status(size, bounds));
        }
        self.status = merged;
        Ok(())
    }

    /// Upserts a condition by type.
    pub(crate) fn set_condition(
        &mut self,
        mut condition: Condition,
        bounds: &OutputBounds,
    ) -> Result<(), OutputViolation> {
        let valid_type = !condition.type_.is_empty()
            && condition.type_.len() <= MAX_CONDITION_TYPE
            && condition
                .type_
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b));
        if !valid_type {
            return Err(OutputViolation::Invalid(format!(
                "condition type {:?} is not a valid Kubernetes condition type",
                condition.type_
            )));
        }
        if !is_valid_reason(&condition.reason, MAX_REASON) {
            return Err(OutputViolation::Invalid(format!(
                "condition {} has reason {:?}; a reason is CamelCase letters, digits, `_`, `,` and `:`",
                condition.type_, condition.reason
            )));
        }
        truncate(&mut condition.message, MAX_CONDITION_MESSAGE);
        match self
            .conditions
            .iter()
            .position(|c| c.type_ == condition.type_)
        {
            Some(existing) => self.conditions[existing] = condition,
            None if self.conditions.len() >= bounds.max_conditions => {
                return Err(OutputViolation::TooLarge(format!(
                    "set more than {} conditions in one call",
                    bounds.max_conditions
                )));
            }
            None => self.conditions.push(condition),
        }
        Ok(())
    }

    pub(crate) fn event(
        &mut self,
        mut event: Event,
        bounds: &OutputBounds,
    ) -> Result<(), OutputViolation> {
        if !is_valid_reason(&event.reason, MAX_EVENT_REASON) {
            return Err(OutputViolation::Invalid(format!(
                "event reason {:?} is not CamelCase letters, digits, `_`, `,` and `:` (at most {MAX_EVENT_REASON})",
                event.reason
            )));
        }
        if self.events.len() >= bounds.max_events {
            return Err(OutputViolation::TooLarge(format!(
                "emitted more than {} events in one call",
                bounds.max_events
            )));
        }
        truncate(&mut event.message, MAX_EVENT_MESSAGE);
        self.events.push(event);
        Ok(())
    }

    /// Keeps a log line unless the call already logged its share; returns whether it was kept (and should be
    /// emitted).
    /// Records a denial (the first [`MAX_DENIALS`] of a call).
    pub(crate) fn deny(&mut self, denial: Denial) {
        if self.denials.len() < MAX_DENIALS {
            self.denials.push(denial);
        } else {
            self.denials_dropped += 1;
        }
    }

    pub(crate) fn log(&mut self, mut line: LogLine, bounds: &OutputBounds) -> bool {
        if self.logs.len() >= bounds.max_log_lines {
            self.logs_dropped += 1;
            return false;
        }
        truncate(&mut line.message, MAX_LOG_MESSAGE);
        line.fields.truncate(MAX_LOG_FIELDS);
        line.fields.shrink_to_fit();
        for (key, value) in &mut line.fields {
            truncate(key, MAX_LOG_FIELD_KEY);
            truncate(value, MAX_LOG_FIELD_VALUE);
        }
        self.logs.push(line);
        true
    }
}

pub(crate) fn too_large_status(size: usize, bounds: &OutputBounds) -> OutputViolation {
    OutputViolation::TooLarge(format!(
        "set a status of {size} bytes, more than the limit of {} bytes",
        bounds.max_status_bytes
    ))
}

/// `metav1.Condition.reason`: `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`.
fn is_valid_reason(reason: &str, max: usize) -> bool {
    let bytes = reason.as_bytes();
    let inner_ok = |b: &u8| b.is_ascii_alphanumeric() || b"_,:".contains(b);
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            reason.len() <= max
                && first.is_ascii_alphabetic()
                && (last.is_ascii_alphanumeric() || *last == b'_')
                && bytes.iter().all(inner_ok)
        }
        _ => false,
    }
}

/// Cuts `text` to at most `max` bytes on a character boundary, marking the cut.
pub fn truncate(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    text.truncate(cut_at(text, max));
    text.push('…');
    // A plugin's megabyte string cut to a kilobyte must not keep its megabyte of capacity.
    text.shrink_to_fit();
}

/// A copy of at most `max` bytes of `text`, cut as [`truncate`] cuts: for text a plugin made up, which can be as
/// long as its memory and is copied only as far as it is kept.
pub fn truncated(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut kept = text[..cut_at(text, max)].to_owned();
    kept.push('…');
    kept
}

/// Where a text longer than `max` bytes is cut so that it and the `…` marking the cut fit in `max` (every limit
/// is far above the marker's 3 bytes).
fn cut_at(text: &str, max: usize) -> usize {
    text.floor_char_boundary(max.saturating_sub('…'.len_utf8()))
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The length of `value` as JSON, without building the string.
fn serialized_len(value: &Map<String, Value>) -> usize {
    struct Count(usize);
    impl io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Serialising a `Map` of `Value`s into an infallible writer cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(status: ConditionStatus, reason: &str) -> Condition {
        Condition {
            type_: "Ready".into(),
            status,
            reason: reason.into(),
            message: "m".into(),
        }
    }

    #[test]
    fn status_fields_merge_one_level_deep() {
        let mut out = Outputs::default();
        let bounds = OutputBounds::default();
        out.set_status(r#"{"phase":"Pending","endpoint":{"a":1}}"#, &bounds)
            .unwrap();
        out.set_status(r#"{"endpoint":{"b":2},"gone":null}"#, &bounds)
            .unwrap();
        assert_eq!(
            Value::Object(out.status),
            serde_json::json!({"phase":"Pending","endpoint":{"b":2},"gone":null})
        );
    }

    #[test]
    fn status_must_be_an_object_without_host_owned_fields() {
        let bounds = OutputBounds::default();
        let mut out = Outputs::default();
        assert!(
            matches!(out.set_status("[1]", &bounds), Err(OutputViolation::Invalid(m)) if m.contains("not an array"))
        );
        assert!(
            matches!(out.set_status("{", &bounds), Err(OutputViolation::Invalid(m)) if m.contains("invalid JSON"))
        );
        assert!(matches!(
            out.set_status(r#"{"conditions":[]}"#, &bounds),
            Err(OutputViolation::Invalid(m)) if m.contains("`conditions`")
        ));
    }

    #[test]
    fn status_size_is_bounded_including_earlier_fields() {
        let bounds = OutputBounds {
            max_status_bytes: 64,
            ..OutputBounds::default()
        };
        let mut out = Outputs::default();
        out.set_status(&format!(r#"{{"a":"{}"}}"#, "x".repeat(40)), &bounds)
            .unwrap();
        let err = out
            .set_status(&format!(r#"{{"b":"{}"}}"#, "y".repeat(20)), &bounds)
            .unwrap_err();
        assert!(matches!(err, OutputViolation::TooLarge(_)), "{err}");
        assert_eq!(
            out.status.len(),
            1,
            "a refused merge leaves the buffer as it was"
        );
    }

    #[test]
    fn conditions_upsert_by_type_and_are_counted() {
        let bounds = OutputBounds {
            max_conditions: 2,
            ..OutputBounds::default()
        };
        let mut out = Outputs::default();
        out.set_condition(ready(ConditionStatus::False, "Waiting"), &bounds)
            .unwrap();
        out.set_condition(ready(ConditionStatus::True, "Synced"), &bounds)
            .unwrap();
        assert_eq!(out.conditions, vec![ready(ConditionStatus::True, "Synced")]);
        let other = |t: &str| Condition {
            type_: t.into(),
            ..ready(ConditionStatus::True, "X")
        };
        out.set_condition(other("Degraded"), &bounds).unwrap();
        assert!(matches!(
            out.set_condition(other("Third"), &bounds),
            Err(OutputViolation::TooLarge(_))
        ));
    }

    #[test]
    fn reasons_follow_kubernetes_rules() {
        assert!(is_valid_reason("Synced", MAX_REASON));
        assert!(is_valid_reason("Omni_Unavailable:Retry", MAX_REASON));
        assert!(!is_valid_reason("", MAX_REASON));
        assert!(!is_valid_reason("not synced", MAX_REASON));
        assert!(!is_valid_reason("1Synced", MAX_REASON));
        assert!(!is_valid_reason("Synced:", MAX_REASON));
        let mut out = Outputs::default();
        let err = out.set_condition(
            ready(ConditionStatus::True, "bad reason"),
            &OutputBounds::default(),
        );
        assert!(matches!(err, Err(OutputViolation::Invalid(_))));
    }

    #[test]
    fn events_are_counted_and_messages_truncated() {
        let bounds = OutputBounds {
            max_events: 1,
            ..OutputBounds::default()
        };
        let mut out = Outputs::default();
        let event = Event {
            type_: EventType::Normal,
            reason: "Synced".into(),
            message: "é".repeat(1000),
        };
        out.event(event.clone(), &bounds).unwrap();
        assert!(out.events[0].message.len() <= MAX_EVENT_MESSAGE);
        assert!(out.events[0].message.ends_with('…'));
        assert!(matches!(
            out.event(event, &bounds),
            Err(OutputViolation::TooLarge(_))
        ));
    }

    #[test]
    fn log_lines_beyond_the_bound_are_dropped_and_counted() {
        let bounds = OutputBounds {
            max_log_lines: 1,
            ..OutputBounds::default()
        };
        let mut out = Outputs::default();
        let line = LogLine {
            source: LogSource::Plugin,
            level: LogLevel::Info,
            message: "hi".into(),
            fields: vec![],
        };
        assert!(out.log(line.clone(), &bounds));
        assert!(!out.log(line, &bounds));
        assert_eq!((out.logs.len(), out.logs_dropped), (1, 1));
    }
}
