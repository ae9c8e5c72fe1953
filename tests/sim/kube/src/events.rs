//! Events are one set of objects with two APIs, as in kube-apiserver: core/v1 `events` is the storage, and
//! events.k8s.io/v1 `events` is a view of the same objects with other field names. An Event written through
//! either API is listed, watched and described through both (`kubectl describe` and `kubectl events` read
//! core/v1; kube-rs and client-go's new recorder write events.k8s.io/v1).
//!
//! Validation is the real server's `ValidateEventCreate`/`ValidateEventUpdate` (pkg/apis/core/validation/events.go):
//! legacy rules for every Event, named with core/v1 fields (the server validates its internal type) except for
//! `reportingController`, and strict rules for Events created through events.k8s.io/v1.

use serde_json::{Map, Value};

use crate::error::FieldCause;
use crate::resources::ResourceType;

/// events.k8s.io/v1 name ↔ core/v1 name, for the fields whose names differ.
const RENAMED: [(&str, &str); 8] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    // Same name in both; listed so the mapping is visibly complete for the fields Events carry.
    ("reportingInstance", "reportingInstance"),
];

const REPORTING_INSTANCE_LIMIT: usize = 128;
const ACTION_LIMIT: usize = 128;
const REASON_LIMIT: usize = 128;
const NOTE_LIMIT: usize = 1024;

/// Whether `rt` is the events.k8s.io view of the core Events.
pub fn is_view(rt: &ResourceType) -> bool {
    rt.group == "events.k8s.io" && rt.plural == "events"
}

/// Whether `rt` is either API of Events.
pub fn is_event(rt: &ResourceType) -> bool {
    rt.plural == "events" && (rt.group.is_empty() || rt.group == "events.k8s.io")
}

/// A stored (core/v1) Event as events.k8s.io/v1 shows it. Other fields pass through unchanged.
pub fn to_view(core: &Value) -> Value {
    rename(core, |name| {
        RENAMED
            .iter()
            .find(|(_, c)| *c == name)
            .map(|(view, _)| *view)
    })
}

/// An events.k8s.io/v1 Event as it is stored (core/v1).
pub fn to_core(view: &Value) -> Value {
    rename(view, |name| {
        RENAMED
            .iter()
            .find(|(v, _)| *v == name)
            .map(|(_, core)| *core)
    })
}

fn rename(obj: &Value, map: impl Fn(&str) -> Option<&'static str>) -> Value {
    let Some(fields) = obj.as_object() else {
        return obj.clone();
    };
    let mut out = Map::with_capacity(fields.len());
    for (k, v) in fields {
        let name = map(k).map(str::to_string).unwrap_or_else(|| k.clone());
        out.insert(name, v.clone());
    }
    Value::Object(out)
}

/// The stored (core/v1) field an events.k8s.io/v1 field label selects (`AddFieldLabelConversionsForEvent`):
/// `regarding.name` is `involvedObject.name`, `reportingController` is `reportingComponent`.
pub fn stored_field_label(label: &str) -> String {
    if let Some(rest) = label.strip_prefix("regarding.") {
        return format!("involvedObject.{rest}");
    }
    match label {
        "reportingController" => "reportingComponent".into(),
        other => other.into(),
    }
}

/// The real server's Event validation of `event` (in the form `rt` serves), as field causes.
pub fn validate(rt: &ResourceType, event: &Value, old: Option<&Value>) -> Vec<FieldCause> {
    let core = if is_view(rt) {
        to_core(event)
    } else {
        event.clone()
    };
    let mut out = legacy(rt, &core);
    if is_view(rt) && old.is_none() {
        out.extend(strict_create(&core));
    }
    out
}

fn text<'a>(o: &'a Value, path: &[&str]) -> &'a str {
    let mut cur = o;
    for p in path {
        cur = &cur[*p];
    }
    cur.as_str().unwrap_or_default()
}

fn set(o: &Value, path: &[&str]) -> bool {
    let mut cur = o;
    for p in path {
        cur = &cur[*p];
    }
    !cur.is_null() && cur != &Value::String(String::new())
}

/// `legacyValidateEvent`: every Event, whichever API wrote it.
fn legacy(rt: &ResourceType, e: &Value) -> Vec<FieldCause> {
    let mut out = Vec::new();
    let namespace = text(e, &["metadata", "namespace"]);
    let involved_ns = text(e, &["involvedObject", "namespace"]);
    let ns_mismatch = || {
        FieldCause::invalid(
            "involvedObject.namespace",
            &Value::String(involved_ns.to_string()),
            "does not match event.namespace",
        )
    };
    let controller_field = if is_view(rt) {
        "reportingController"
    } else {
        "reportingComponent"
    };
    if !set(e, &["eventTime"]) {
        // Old-style Events: the namespaces must agree (an empty involvedObject namespace goes with "default").
        if involved_ns.is_empty() {
            if !namespace.is_empty() && namespace != "default" {
                out.push(ns_mismatch());
            }
        } else if namespace != involved_ns {
            out.push(ns_mismatch());
        }
        return out;
    }
    if involved_ns.is_empty() && namespace != "default" && namespace != "kube-system" {
        out.push(ns_mismatch());
    }
    let controller = text(e, &["reportingComponent"]);
    if controller.is_empty() {
        out.push(FieldCause::required(controller_field, ""));
    } else {
        for msg in crate::validation::qualified_name_errors(controller) {
            out.push(FieldCause::invalid(
                controller_field,
                &Value::String(controller.to_string()),
                &msg,
            ));
        }
    }
    let mut limited = |field: &str, value: &str, required: bool, limit: usize| {
        if required && value.is_empty() {
            out.push(FieldCause::required(field, ""));
        }
        if value.chars().count() > limit {
            out.push(FieldCause::invalid(
                field,
                &Value::String(String::new()),
                &format!("can have at most {limit} characters"),
            ));
        }
    };
    limited(
        "reportingInstance",
        text(e, &["reportingInstance"]),
        true,
        REPORTING_INSTANCE_LIMIT,
    );
    limited("action", text(e, &["action"]), true, ACTION_LIMIT);
    limited("reason", text(e, &["reason"]), true, REASON_LIMIT);
    limited("message", text(e, &["message"]), false, NOTE_LIMIT);
    out
}

/// The rules added for Events created through events.k8s.io/v1.
fn strict_create(e: &Value) -> Vec<FieldCause> {
    let mut out = Vec::new();
    let empty = Value::String(String::new());
    if let Some(series) = e.get("series").filter(|s| !s.is_null()) {
        if series["count"].as_i64().unwrap_or(0) < 2 {
            out.push(FieldCause::invalid(
                "series.count",
                &empty,
                "should be at least 2",
            ));
        }
        if !set(series, &["lastObservedTime"]) {
            out.push(FieldCause::required("series.lastObservedTime", ""));
        }
    }
    if !set(e, &["eventTime"]) {
        out.push(FieldCause::required("eventTime", ""));
    }
    let type_ = text(e, &["type"]);
    if type_ != "Normal" && type_ != "Warning" {
        out.push(FieldCause::invalid(
            "type",
            &empty,
            &format!("has invalid value: {type_}"),
        ));
    }
    for (set_path, field) in [
        (&["firstTimestamp"][..], "deprecatedFirstTimestamp"),
        (&["lastTimestamp"][..], "deprecatedLastTimestamp"),
    ] {
        if set(e, set_path) {
            out.push(FieldCause::invalid(field, &empty, "needs to be unset"));
        }
    }
    if e["count"].as_i64().unwrap_or(0) != 0 {
        out.push(FieldCause::invalid(
            "deprecatedCount",
            &empty,
            "needs to be unset",
        ));
    }
    if set(e, &["source", "component"]) || set(e, &["source", "host"]) {
        out.push(FieldCause::invalid(
            "deprecatedSource",
            &empty,
            "needs to be unset",
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_two_forms_convert_both_ways() {
        let core = json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p"}, "message": "m",
            "reportingComponent": "kubelet", "reportingInstance": "n1", "source": {"component": "kubelet"},
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:01Z", "count": 3,
            "reason": "Pulled", "type": "Normal", "eventTime": null});
        let view = to_view(&core);
        assert_eq!(view["regarding"]["name"], "p");
        assert_eq!(view["note"], "m");
        assert_eq!(view["reportingController"], "kubelet");
        assert_eq!(view["deprecatedSource"]["component"], "kubelet");
        assert_eq!(view["deprecatedCount"], 3);
        assert!(view.get("involvedObject").is_none() && view.get("message").is_none());
        assert_eq!(to_core(&view), core);
    }
}
