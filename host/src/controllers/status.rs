//! How a plugin's outputs become the object's status, with the bookkeeping the host owns:
//! conditions upserted as `meta.SetStatusCondition` does, `observedGeneration` everywhere, and a write only when
//! something changed.

use serde_json::{Map, Value, json};

use crate::capabilities::{Condition, ConditionStatus};

/// The status the object should have after a successful call, or None when it already has it.
pub fn next_status(
    object: &Value,
    fields: &Map<String, Value>,
    conditions: &[Condition],
    now: &str,
) -> Option<Value> {
    let current = object.get("status").cloned().unwrap_or_else(|| json!({}));
    let generation = object["metadata"]["generation"].as_i64().unwrap_or(0);
    let mut next = match &current {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    for (k, v) in fields {
        // The runtime already refuses host-owned fields; a `null` removes a field (merge-patch semantics).
        if v.is_null() {
            next.remove(k);
        } else {
            next.insert(k.clone(), v.clone());
        }
    }
    let mut list: Vec<Value> = next
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for c in conditions {
        upsert_condition(&mut list, c, generation, now);
    }
    if let Some(c) = reconciling(&list) {
        upsert_condition(&mut list, &c, generation, now);
    }
    if !list.is_empty() {
        next.insert("conditions".into(), Value::Array(list));
    }
    next.insert("observedGeneration".into(), json!(generation));
    let next = Value::Object(next);
    if next == current { None } else { Some(next) }
}

/// `meta.SetStatusCondition`: a new condition or a status change stamps `lastTransitionTime`; reason, message
/// and observedGeneration are always overwritten; conditions are never removed.
pub fn upsert_condition(list: &mut Vec<Value>, c: &Condition, generation: i64, now: &str) {
    let status = c.status.as_str();
    match list.iter_mut().find(|e| e["type"] == c.type_.as_str()) {
        Some(existing) => {
            if existing["status"] != status {
                existing["lastTransitionTime"] = json!(now);
            }
            existing["status"] = json!(status);
            existing["reason"] = json!(c.reason);
            existing["message"] = json!(c.message);
            existing["observedGeneration"] = json!(generation);
        }
        None => list.push(json!({
            "type": c.type_,
            "status": status,
            "observedGeneration": generation,
            "lastTransitionTime": now,
            "reason": c.reason,
            "message": c.message,
        })),
    }
}

/// kstatus (what Flux's health checks and `kubectl wait --for=condition` tooling read) takes `Reconciling=True`
/// as in progress and `Stalled=True` as failed, and an object with neither as current once its
/// observedGeneration matches. So an object whose `Ready` is not True is `Reconciling` unless a plugin said it
/// `Stalled`; one that is Ready is not. Kinds without a `Ready` condition get nothing.
fn reconciling(list: &[Value]) -> Option<Condition> {
    let ready = list.iter().find(|c| c["type"] == "Ready")?;
    let stalled = list
        .iter()
        .any(|c| c["type"] == "Stalled" && c["status"] == "True");
    let is_ready = ready["status"] == "True";
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    Some(if !is_ready && !stalled {
        let reason = Some(text(&ready["reason"]))
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| "Progressing".into());
        host_condition("Reconciling", true, &reason, text(&ready["message"]))
    } else {
        let reason = if is_ready { "Succeeded" } else { "Stalled" };
        host_condition("Reconciling", false, reason, text(&ready["message"]))
    })
}

/// A condition the host itself reports (plugin failures), in the runtime's type.
/// Whether the object's status has condition `type_` with `status` (`"True"`, `"False"`).
pub fn condition_is(object: &Value, type_: &str, status: &str) -> bool {
    object["status"]["conditions"]
        .as_array()
        .is_some_and(|list| {
            list.iter()
                .any(|c| c["type"] == type_ && c["status"] == status)
        })
}

/// A condition the host writes itself; its message is cut to `metav1.Condition`'s limit, so a long failure (an
/// API error quoting a plugin's output) still makes a status the API server accepts.
pub fn host_condition(type_: &str, ok: bool, reason: &str, mut message: String) -> Condition {
    crate::contract::truncate(&mut message, crate::contract::MAX_CONDITION_MESSAGE);
    Condition {
        type_: type_.into(),
        status: if ok {
            ConditionStatus::True
        } else {
            ConditionStatus::False
        },
        reason: reason.into(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepted(ok: bool, reason: &str) -> Condition {
        host_condition("Accepted", ok, reason, format!("{reason} message"))
    }

    /// kstatus reads Reconciling=True as in progress, Stalled=True as failed, neither as current.
    #[test]
    fn ready_false_is_reconciling_unless_stalled_and_ready_true_is_not() {
        let obj = json!({"metadata": {"generation": 2}});
        let ready = |ok: bool, reason: &str| host_condition("Ready", ok, reason, "m".into());
        let reconciling = |s: &Value| {
            s["conditions"]
                .as_array()
                .and_then(|l| l.iter().find(|c| c["type"] == "Reconciling").cloned())
                .map(|c| (c["status"].clone(), c["reason"].clone()))
        };
        let s =
            next_status(&obj, &Map::new(), &[ready(false, "Progressing")], "T1").expect("changed");
        assert_eq!(reconciling(&s), Some((json!("True"), json!("Progressing"))));
        let s = next_status(&obj, &Map::new(), &[ready(true, "Synced")], "T1").expect("changed");
        assert_eq!(reconciling(&s), Some((json!("False"), json!("Succeeded"))));
        let stalled = host_condition("Stalled", true, "RetriesExceeded", "m".into());
        let s = next_status(&obj, &Map::new(), &[ready(false, "Failed"), stalled], "T1")
            .expect("changed");
        assert_eq!(reconciling(&s), Some((json!("False"), json!("Stalled"))));
        // No Ready condition: nothing added.
        let s =
            next_status(&obj, &Map::new(), &[accepted(true, "Accepted")], "T1").expect("changed");
        assert_eq!(reconciling(&s), None);
    }

    #[test]
    fn a_new_condition_gets_the_transition_time_and_observed_generation() {
        let obj = json!({"metadata": {"generation": 3}});
        let s =
            next_status(&obj, &Map::new(), &[accepted(true, "Accepted")], "T1").expect("changed");
        assert_eq!(s["observedGeneration"], 3);
        assert_eq!(s["conditions"][0]["lastTransitionTime"], "T1");
        assert_eq!(s["conditions"][0]["observedGeneration"], 3);
        assert_eq!(s["conditions"][0]["status"], "True");
    }

    #[test]
    fn the_transition_time_moves_only_when_the_status_changes() {
        let mut obj = json!({"metadata": {"generation": 1}});
        obj["status"] = next_status(
            &obj,
            &Map::new(),
            &[accepted(false, "MissingCluster")],
            "T1",
        )
        .expect("first");
        obj["metadata"]["generation"] = json!(2);
        let same = next_status(
            &obj,
            &Map::new(),
            &[accepted(false, "MissingCluster")],
            "T2",
        )
        .expect("generation moved");
        assert_eq!(same["conditions"][0]["lastTransitionTime"], "T1");
        assert_eq!(same["conditions"][0]["observedGeneration"], 2);
        obj["status"] = same;
        let flipped =
            next_status(&obj, &Map::new(), &[accepted(true, "Accepted")], "T3").expect("flipped");
        assert_eq!(flipped["conditions"][0]["lastTransitionTime"], "T3");
    }

    #[test]
    fn an_unchanged_status_needs_no_write() {
        let mut obj = json!({"metadata": {"generation": 1}});
        let fields: Map<String, Value> = [("clusterRef".to_string(), json!("c"))]
            .into_iter()
            .collect();
        obj["status"] =
            next_status(&obj, &fields, &[accepted(true, "Accepted")], "T1").expect("first");
        assert_eq!(
            next_status(&obj, &fields, &[accepted(true, "Accepted")], "T9"),
            None
        );
    }

    #[test]
    fn null_fields_remove_and_other_conditions_stay() {
        let obj = json!({"metadata": {"generation": 1}, "status": {"old": 1, "conditions": [{"type": "Other", "status": "True"}]}});
        let fields: Map<String, Value> = [("old".to_string(), Value::Null)].into_iter().collect();
        let s = next_status(&obj, &fields, &[accepted(true, "Accepted")], "T").expect("changed");
        assert!(s.get("old").is_none());
        assert_eq!(
            s["conditions"].as_array().expect("list").len(),
            2,
            "conditions are never removed"
        );
    }
}
