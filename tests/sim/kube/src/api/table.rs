//! `meta.k8s.io/v1` Table responses, which `kubectl get` asks for: CRD printer columns, or a few columns per
//! built-in kind, with ages rendered like the real server's HumanDuration.

use serde_json::{Value, json};

use crate::jsonpath;
use crate::resources::ResourceType;

pub fn wants_table(accept: &str) -> bool {
    accept
        .split(',')
        .next()
        .is_some_and(|first| first.contains("as=Table"))
}

struct Column {
    name: String,
    kind: String,
    format: String,
    description: String,
    priority: i64,
    path: Option<String>,
}

fn col(name: &str, kind: &str, path: &str, description: &str) -> Column {
    Column {
        name: name.into(),
        kind: kind.into(),
        format: String::new(),
        description: description.into(),
        priority: 0,
        path: Some(path.into()),
    }
}

/// A column the server computes from several fields (no JSONPath), at `priority` (1: `kubectl get -o wide`).
fn computed(name: &str, description: &str, priority: i64) -> Column {
    Column {
        name: name.into(),
        kind: "string".into(),
        format: if name == "Name" {
            "name".into()
        } else {
            String::new()
        },
        description: description.into(),
        priority,
        path: None,
    }
}

/// kube-apiserver's printers (pkg/printers/internalversion), which the server runs with `Wide` on: every column,
/// kubectl hiding those of priority 1 unless asked for `-o wide`.
fn printer_columns(rt: &ResourceType) -> Option<Vec<Column>> {
    if !computed_columns(rt) {
        return None;
    }
    if crate::events::is_event(rt) {
        return Some(vec![
            computed(
                "Last Seen",
                "The time at which the most recent occurrence of this event was recorded.",
                0,
            ),
            computed(
                "Type",
                "Type of this event (Normal, Warning), new types could be added in the future",
                0,
            ),
            computed(
                "Reason",
                "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
                0,
            ),
            computed("Object", "The object that this event is about.", 0),
            computed(
                "Subobject",
                "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2].",
                1,
            ),
            computed(
                "Source",
                "The component reporting this event. Should be a short machine understandable string.",
                1,
            ),
            computed(
                "Message",
                "A human-readable description of the status of this operation.",
                0,
            ),
            computed(
                "First Seen",
                "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
                1,
            ),
            computed("Count", "The number of times this event has occurred.", 1),
            computed("Name", "Name must be unique within a namespace.", 1),
        ]);
    }
    Some(vec![
        computed("Name", "Name must be unique within a namespace.", 0),
        computed("Ready", "Number of the pod with ready state", 0),
        computed(
            "Up-to-date",
            "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
            0,
        ),
        computed(
            "Available",
            "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
            0,
        ),
        computed(
            "Age",
            "CreationTimestamp is a timestamp representing the server time when this object was created.",
            0,
        ),
        computed("Containers", "Names of each container in the template.", 1),
        computed(
            "Images",
            "Images referenced by each container in the template.",
            1,
        ),
        computed(
            "Selector",
            "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.",
            1,
        ),
    ])
}

/// Whether the server prints this kind with computed columns (the kinds below), not JSONPath columns.
fn computed_columns(rt: &ResourceType) -> bool {
    crate::events::is_event(rt)
        || (rt.group.as_str(), rt.plural.as_str()) == ("apps", "deployments")
}

/// HumanDuration since an RFC 3339 time, or `<unknown>` (translateTimestampSince) for a missing one.
fn since(time: &Value) -> String {
    match time
        .as_str()
        .and_then(|s| s.parse::<jiff::Timestamp>().ok())
    {
        Some(t) => human_duration(jiff::Timestamp::now().as_second() - t.as_second()),
        None => "<unknown>".into(),
    }
}

/// The cells of the printers' computed columns (printEvent, printDeployment).
fn computed_cell(rt: &ResourceType, column: &str, obj: &Value) -> Value {
    if crate::events::is_event(rt) {
        let e = if crate::events::is_view(rt) {
            crate::events::to_core(obj)
        } else {
            obj.clone()
        };
        let first = if e["firstTimestamp"].is_string() {
            since(&e["firstTimestamp"])
        } else {
            since(&e["eventTime"])
        };
        let series = e.get("series").filter(|s| s.is_object());
        let last = match series {
            Some(s) => since(&s["lastObservedTime"]),
            None if e["lastTimestamp"].is_string() => since(&e["lastTimestamp"]),
            None => first.clone(),
        };
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let first_non_empty = |a: &Value, b: &Value| {
            let a = text(a);
            if a.is_empty() { text(b) } else { a }
        };
        return match column {
            "Last Seen" => json!(last),
            "Type" => json!(text(&e["type"])),
            "Reason" => json!(text(&e["reason"])),
            "Object" => {
                let kind = text(&e["involvedObject"]["kind"]).to_lowercase();
                let name = text(&e["involvedObject"]["name"]);
                json!(if name.is_empty() {
                    kind
                } else {
                    format!("{kind}/{name}")
                })
            }
            "Subobject" => json!(text(&e["involvedObject"]["fieldPath"])),
            "Source" => {
                let component =
                    first_non_empty(&e["source"]["component"], &e["reportingComponent"]);
                let instance = first_non_empty(&e["source"]["host"], &e["reportingInstance"]);
                json!(if instance.is_empty() {
                    component
                } else {
                    format!("{component}, {instance}")
                })
            }
            "Message" => json!(text(&e["message"]).trim()),
            "First Seen" => json!(first),
            "Count" => {
                let count = match series {
                    Some(s) => s["count"].as_i64().unwrap_or(0),
                    None => e["count"].as_i64().filter(|c| *c != 0).unwrap_or(1),
                };
                json!(count)
            }
            "Name" => json!(text(&e["metadata"]["name"])),
            _ => Value::Null,
        };
    }
    let int = |v: &Value| v.as_i64().unwrap_or(0);
    let containers = obj["spec"]["template"]["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let joined = |field: &str| {
        containers
            .iter()
            .map(|c| c[field].as_str().unwrap_or_default())
            .collect::<Vec<_>>()
            .join(",")
    };
    match column {
        "Name" => obj["metadata"]["name"].clone(),
        "Ready" => json!(format!(
            "{}/{}",
            int(&obj["status"]["readyReplicas"]),
            obj["spec"]["replicas"].as_i64().unwrap_or(1)
        )),
        "Up-to-date" => json!(int(&obj["status"]["updatedReplicas"])),
        "Available" => json!(int(&obj["status"]["availableReplicas"])),
        "Age" => json!(since(&obj["metadata"]["creationTimestamp"])),
        "Containers" => json!(joined("name")),
        "Images" => json!(joined("image")),
        "Selector" => json!(selector_string(&obj["spec"]["selector"])),
        _ => Value::Null,
    }
}

/// A label selector's `matchLabels` and `matchExpressions` as `metav1.LabelSelectorAsSelector(...).String()`
/// prints them: requirements sorted by key, `k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`.
pub(super) fn selector_string(sel: &Value) -> String {
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(m) = sel["matchLabels"].as_object() {
        for (k, v) in m {
            reqs.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or_default())));
        }
    }
    for e in sel["matchExpressions"].as_array().into_iter().flatten() {
        let key = e["key"].as_str().unwrap_or_default().to_string();
        let mut values: Vec<&str> = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let text = match e["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.clone(),
            "DoesNotExist" => format!("!{key}"),
            _ => continue,
        };
        reqs.push((key, text));
    }
    reqs.sort();
    reqs.into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(",")
}

fn columns(rt: &ResourceType) -> Vec<Column> {
    if let Some(cols) = printer_columns(rt) {
        return cols;
    }
    let mut cols = vec![Column {
        name: "Name".into(),
        kind: "string".into(),
        format: "name".into(),
        description: "Name must be unique within a namespace.".into(),
        priority: 0,
        path: Some(".metadata.name".into()),
    }];
    if rt.is_crd() {
        if rt.printer_columns.is_empty() {
            cols.push(col("Age", "date", ".metadata.creationTimestamp", "CreationTimestamp is a timestamp representing the server time when this object was created."));
        }
        for c in &rt.printer_columns {
            cols.push(Column {
                name: c["name"].as_str().unwrap_or_default().into(),
                kind: c["type"].as_str().unwrap_or("string").into(),
                format: c["format"].as_str().unwrap_or_default().into(),
                description: c["description"].as_str().unwrap_or_default().into(),
                priority: c["priority"].as_i64().unwrap_or(0),
                path: c["jsonPath"].as_str().map(String::from),
            });
        }
        return cols;
    }
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "secrets") => {
            cols.push(col("Type", "string", ".type", "The type of the secret."));
            cols.push(Column {
                path: None,
                ..col("Data", "integer", "", "The number of keys in the secret.")
            });
        }
        ("", "configmaps") => cols.push(Column {
            path: None,
            ..col("Data", "integer", "", "The number of keys.")
        }),
        ("", "namespaces") => cols.push(col(
            "Status",
            "string",
            ".status.phase",
            "The status of the namespace.",
        )),
        ("", "serviceaccounts") => cols.push(Column {
            path: None,
            ..col("Secrets", "integer", "", "The number of secrets.")
        }),
        ("coordination.k8s.io", "leases") => cols.push(col(
            "Holder",
            "string",
            ".spec.holderIdentity",
            "The holder of the lease.",
        )),
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            cols.push(col(
                "Created At",
                "date",
                ".metadata.creationTimestamp",
                "When the CRD was created.",
            ));
            return cols;
        }
        _ => {}
    }
    cols.push(col("Age", "date", ".metadata.creationTimestamp", "CreationTimestamp is a timestamp representing the server time when this object was created."));
    cols
}

fn cell(rt: &ResourceType, c: &Column, obj: &Value) -> Value {
    if computed_columns(rt) {
        return computed_cell(rt, &c.name, obj);
    }
    let Some(path) = &c.path else {
        // Count columns of built-ins.
        return match (rt.plural.as_str(), c.name.as_str()) {
            ("secrets" | "configmaps", "Data") => {
                let n = obj["data"].as_object().map_or(0, |m| m.len())
                    + obj["binaryData"].as_object().map_or(0, |m| m.len());
                json!(n)
            }
            ("serviceaccounts", "Secrets") => json!(obj["secrets"].as_array().map_or(0, Vec::len)),
            _ => Value::Null,
        };
    };
    let Some(v) = jsonpath::find(obj, path).into_iter().next() else {
        return Value::Null;
    };
    match c.kind.as_str() {
        "date" => match v.as_str().and_then(|s| s.parse::<jiff::Timestamp>().ok()) {
            Some(t) => json!(human_duration(
                jiff::Timestamp::now().as_second() - t.as_second()
            )),
            None => Value::Null,
        },
        "integer" => v.as_i64().map(Value::from).unwrap_or(Value::Null),
        "number" => v.as_f64().map(Value::from).unwrap_or(Value::Null),
        "boolean" => v.as_bool().map(Value::from).unwrap_or(Value::Null),
        _ => match v {
            Value::String(s) => json!(s),
            other => json!(other.to_string()),
        },
    }
}

/// `includeObject`: None → PartialObjectMetadata (the default), "Object" → whole object, "None" → nothing.
pub fn build(
    rt: &ResourceType,
    objects: &[Value],
    list_meta: Value,
    include: Option<&str>,
) -> Value {
    let cols = columns(rt);
    let defs: Vec<Value> = cols
        .iter()
        .map(|c| json!({"name": c.name, "type": c.kind, "format": c.format, "description": c.description, "priority": c.priority}))
        .collect();
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let cells: Vec<Value> = cols.iter().map(|c| cell(rt, c, o)).collect();
            let object = match include {
                Some("None") => Value::Null,
                Some("Object") => o.clone(),
                _ => json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]}),
            };
            json!({"cells": cells, "object": object})
        })
        .collect();
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta, "columnDefinitions": defs, "rows": rows})
}

/// k8s.io/apimachinery/pkg/util/duration.HumanDuration.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let d = (hours / 24) % 365;
        return if d == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{d}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;

    #[test]
    fn human_duration_matches_the_apimachinery_table() {
        let cases = [
            (5, "5s"),
            (119, "119s"),
            (125, "2m5s"),
            (600, "10m"),
            (3 * 3600 + 60, "3h1m"),
            (8 * 3600, "8h"),
            (50 * 3600, "2d2h"),
            (10 * 86400, "10d"),
            (3 * 365 * 86400, "3y"),
        ];
        for (s, want) in cases {
            assert_eq!(human_duration(s), want, "{s}s");
        }
    }

    #[test]
    fn crd_printer_columns_become_table_cells() {
        let crd = json!({"metadata": {"name": "widgets.example.com"}, "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}},
                "additionalPrinterColumns": [{"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                                             {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}]}]}});
        let mut reg = Registry::new();
        reg.rebuild_custom([&crd].into_iter());
        let rt = reg.get("example.com", "v1", "widgets").expect("type");
        let obj = json!({"metadata": {"name": "w1"}, "spec": {"replicas": 2}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        let t = build(&rt, &[obj], json!({}), None);
        assert_eq!(t["columnDefinitions"].as_array().expect("cols").len(), 3);
        assert_eq!(t["rows"][0]["cells"], json!(["w1", "True", 2]));
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    }

    #[test]
    fn table_is_only_chosen_when_first_preference() {
        assert!(wants_table(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
        ));
        assert!(!wants_table("application/json"));
    }
}
