//! `meta.k8s.io/v1` Table responses, which `kubectl get` asks for: CRD printer columns, or a few columns per
//! built-in kind, with ages rendered like the real server's HumanDuration.

use serde_json::{Value, json};

use super::printers;
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

fn columns(rt: &ResourceType) -> Vec<Column> {
    if let Some(printed) = printers::columns(rt) {
        return printed
            .iter()
            .map(|p| Column {
                name: p.name.into(),
                kind: p.kind.into(),
                format: if p.name == "Name" {
                    "name".into()
                } else {
                    String::new()
                },
                description: String::new(),
                priority: p.priority,
                path: None,
            })
            .collect();
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
            let cells: Vec<Value> = if printers::columns(rt).is_some() {
                printers::cells(rt, o)
            } else {
                cols.iter().map(|c| cell(rt, c, o)).collect()
            };
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
