//! Reading and changing the objects the controllers work on: metadata accessors, ownership, labels, Pod state,
//! conditions, and writes into nested fields that never panic on a value of the wrong shape.

use serde_json::{Map, Value, json};

use crate::selectors::LabelSelector;

pub(super) fn name(obj: &Value) -> &str {
    obj["metadata"]["name"].as_str().unwrap_or_default()
}

pub(super) fn namespace(obj: &Value) -> &str {
    obj["metadata"]["namespace"].as_str().unwrap_or_default()
}

pub(super) fn uid(obj: &Value) -> &str {
    obj["metadata"]["uid"].as_str().unwrap_or_default()
}

pub(super) fn deleting(obj: &Value) -> bool {
    obj["metadata"]["deletionTimestamp"].is_string()
}

pub(super) fn generation(obj: &Value) -> i64 {
    obj["metadata"]["generation"].as_i64().unwrap_or(0)
}

/// The uid of the object's controller (its ownerReference with `controller: true`).
pub(super) fn controller_uid(obj: &Value) -> Option<&str> {
    obj["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"] == json!(true))
        .and_then(|r| r["uid"].as_str())
}

/// An ownerReference naming `owner` as the controller.
pub(super) fn controller_ref(owner: &Value) -> Value {
    json!({
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// Whether every `key: value` of `wanted` is among `labels` (a `matchLabels`-style subset test).
pub(super) fn has_labels(labels: &Map<String, Value>, wanted: &Map<String, Value>) -> bool {
    wanted.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// Sets `path` inside `obj`, creating objects where a key is missing or null. A value of another shape on the
/// way (a string where an object belongs: bad input the server did not refuse) leaves `obj` unchanged.
pub(super) fn set_in(obj: &mut Value, path: &[&str], value: Value) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut at = obj;
    for key in parents {
        let Some(map) = at.as_object_mut() else {
            return false;
        };
        let slot = map.entry(key.to_string()).or_insert(Value::Null);
        if slot.is_null() {
            *slot = json!({});
        }
        at = slot;
    }
    match at.as_object_mut() {
        Some(map) => {
            map.insert(last.to_string(), value);
            true
        }
        None => false,
    }
}

/// Status counts Go omits when zero (`omitempty` integers): set when positive, removed otherwise.
pub(super) fn put_count(status: &mut Map<String, Value>, key: &str, n: i64) {
    if n > 0 {
        status.insert(key.into(), json!(n));
    } else {
        status.remove(key);
    }
}

pub(super) fn labels(obj: &Value) -> Map<String, Value> {
    obj["metadata"]["labels"]
        .as_object()
        .cloned()
        .unwrap_or_default()
}

/// Whether the object's `spec.selector` (a LabelSelector) matches `labels`; a bad selector matches nothing.
pub(super) fn selector_matches(selector: &Value, labels: &Map<String, Value>) -> bool {
    LabelSelector::from_json(selector).is_ok_and(|s| s.matches(labels))
}

pub(super) fn phase(pod: &Value) -> &str {
    pod["status"]["phase"].as_str().unwrap_or_default()
}

/// A Pod that has not finished (Succeeded or Failed) and is not being deleted.
pub(super) fn active(pod: &Value) -> bool {
    !deleting(pod) && !matches!(phase(pod), "Succeeded" | "Failed")
}

pub(super) fn condition<'a>(obj: &'a Value, ty: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == ty)
}

pub(super) fn ready(pod: &Value) -> bool {
    condition(pod, "Ready").is_some_and(|c| c["status"] == "True")
}

/// Ready for at least `min_ready_seconds` (the controllers' "available").
pub(super) fn available(pod: &Value, min_ready_seconds: i64, now: jiff::Timestamp) -> bool {
    if !ready(pod) {
        return false;
    }
    if min_ready_seconds <= 0 {
        return true;
    }
    condition(pod, "Ready")
        .and_then(|c| c["lastTransitionTime"].as_str())
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .and_then(|t| {
            t.checked_add(jiff::SignedDuration::from_secs(min_ready_seconds))
                .ok()
        })
        .is_some_and(|ready_since| ready_since <= now)
}

/// Seconds since an RFC 3339 time, or None when absent or unparsable.
pub(super) fn seconds_since(time: &Value, now: jiff::Timestamp) -> Option<i64> {
    let t = time.as_str()?.parse::<jiff::Timestamp>().ok()?;
    Some((now - t).get_seconds())
}

/// A condition list with `ty` set. An unchanged status keeps its `lastTransitionTime` (and, where the kind has
/// one, `lastUpdateTime` when reason and message are unchanged too), so a pass that changes nothing writes nothing.
pub(super) fn set_condition(
    conditions: &mut Vec<Value>,
    mut new: Value,
    now: &str,
    has_update_time: bool,
) {
    let ty = new["type"].clone();
    let old = conditions.iter().position(|c| c["type"] == ty);
    let same_status = old.is_some_and(|i| conditions[i]["status"] == new["status"]);
    let same_all = old.is_some_and(|i| {
        same_status
            && conditions[i]["reason"] == new["reason"]
            && conditions[i]["message"] == new["message"]
    });
    new["lastTransitionTime"] = match old {
        Some(i) if same_status => conditions[i]["lastTransitionTime"].clone(),
        _ => json!(now),
    };
    if has_update_time {
        new["lastUpdateTime"] = match old {
            Some(i) if same_all => conditions[i]["lastUpdateTime"].clone(),
            _ => json!(now),
        };
    }
    match old {
        Some(i) => conditions[i] = new,
        None => conditions.push(new),
    }
}

pub(super) fn existing_conditions(obj: &Value) -> Vec<Value> {
    obj["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}
