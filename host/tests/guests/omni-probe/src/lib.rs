//! Runs the Omni calls its object's `spec.steps` lists, in order, and reports each result in
//! `status.results`: the host's `omni` capability driven through the real contract.
//!
//! A step is `{"op": "get"|"list"|"create"|"update"|"teardown"|"destroy"|"status"|"ping", "type", "id",
//! "labels": {k: v}, "finalizers": [..], "spec": [bytes], "version", "phase", "equal": [k, v], "cluster"}`;
//! `"update"` without a version uses the version of the last resource any step returned.

use omni_plugin_sdk::omni::{LabelTerm, OmniResource, Phase, ResourceKey};
use omni_plugin_sdk::{Host, HostError, Info, Plugin, ReconcileError, Value, json};

struct OmniProbe;

fn render(r: &OmniResource) -> Value {
    json!({
        "type": r.key.type_, "id": r.key.id, "version": r.version, "owner": r.owner,
        "phase": if r.phase == Phase::TearingDown { "tearingDown" } else { "running" },
        "labels": r.labels.iter().cloned().collect::<std::collections::BTreeMap<_, _>>(),
        "annotations": r.annotations.iter().cloned().collect::<std::collections::BTreeMap<_, _>>(),
        "finalizers": r.finalizers, "spec": r.spec, "unreadable": r.unreadable,
    })
}

fn error(e: HostError) -> Value {
    let kind = match &e {
        HostError::Denied(_) => "denied",
        HostError::NotFound(_) => "not-found",
        HostError::Conflict(_) => "conflict",
        HostError::Invalid(_) => "invalid",
        HostError::Unavailable(_) => "unavailable",
        HostError::Timeout(_) => "timeout",
        HostError::Unauthenticated(_) => "unauthenticated",
        HostError::Forbidden(_) => "forbidden",
        _ => "other",
    };
    json!({"error": kind, "message": e.to_string()})
}

fn resource(step: &Value, version: &str) -> OmniResource {
    let key = ResourceKey::new(
        step["type"].as_str().unwrap_or_default(),
        step["id"].as_str().unwrap_or_default(),
    );
    let spec = step["spec"]
        .as_array()
        .map(|b| {
            b.iter()
                .filter_map(|x| x.as_u64())
                .map(|x| x as u8)
                .collect()
        })
        .unwrap_or_default();
    let mut r = OmniResource::new(key, spec);
    r.version = step["version"].as_str().unwrap_or(version).to_string();
    if step["phase"] == "tearingDown" {
        r.phase = Phase::TearingDown;
    }
    if let Some(labels) = step["labels"].as_object() {
        r.labels = labels
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect();
    }
    if let Some(f) = step["finalizers"].as_array() {
        r.finalizers = f
            .iter()
            .filter_map(|x| x.as_str())
            .map(String::from)
            .collect();
    }
    r
}

impl Plugin for OmniProbe {
    fn describe() -> Info {
        Info {
            name: "omni-probe".into(),
            version: "1.0.0".into(),
            capabilities: vec!["omni".into()],
            ..Info::default()
        }
    }

    fn reconcile<H: Host>(host: &H) -> Result<(), ReconcileError> {
        let obj = host.object();
        let conn = obj["spec"]["connection"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let mut last_version = String::from("undefined");
        let mut results = Vec::new();
        for step in obj["spec"]["steps"].as_array().cloned().unwrap_or_default() {
            let key = ResourceKey::new(
                step["type"].as_str().unwrap_or_default(),
                step["id"].as_str().unwrap_or_default(),
            );
            let for_update = resource(&step, &last_version);
            let mut keep = |r: &OmniResource| {
                last_version = r.version.clone();
                render(r)
            };
            let result = match step["op"].as_str().unwrap_or_default() {
                "ping" => host.omni_ping(&conn).map(|e| json!({"endpoint": e})),
                "get" => host.omni_get(&conn, &key).map(|r| r.as_ref().map(&mut keep).unwrap_or(Value::Null)),
                "list" => {
                    let terms: Vec<LabelTerm> = match step["equal"].as_array() {
                        Some(kv) => vec![LabelTerm::equal(kv[0].as_str().unwrap_or_default(), kv[1].as_str().unwrap_or_default())],
                        None => Vec::new(),
                    };
                    host.omni_list(&conn, "default", &key.type_, &terms).map(|rs| Value::Array(rs.iter().map(render).collect()))
                }
                "create" => host.omni_create(&conn, &resource(&step, "undefined")).map(|r| keep(&r)),
                "update" => host.omni_update(&conn, &for_update).map(|r| keep(&r)),
                "teardown" => host.omni_teardown(&conn, &key).map(|ready| json!({"destroyReady": ready})),
                "destroy" => host.omni_destroy(&conn, &key).map(|()| json!("destroyed")),
                "status" => host.omni_cluster_status(&conn, step["cluster"].as_str().unwrap_or_default()).map(|h| match h {
                    Some(h) => json!({"phase": h.phase, "ready": h.ready, "healthy": h.healthy, "findings": h.findings}),
                    None => Value::Null,
                }),
                other => Ok(json!({"error": "unknown-op", "message": other})),
            };
            results.push(match result {
                Ok(v) => json!({"ok": v}),
                Err(e) => error(e),
            });
        }
        host.set_status(json!({"results": results}));
        Ok(())
    }
}

omni_plugin_sdk::export_plugin!(OmniProbe);
