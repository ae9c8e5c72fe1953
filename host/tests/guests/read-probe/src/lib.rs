//! Runs the reads its object's spec lists and reports each result, so tests drive the host's `files` and
//! `kube-read` capabilities through the real contract.
//!
//! `spec.files: [{"root", "path"}]` → `status.files[i]`: `{"bytes": n, "text": "..."}` (text only for small
//! UTF-8 files) or `{"error": kind, "message"}`.
//! `spec.lists: [{"apiVersion", "kind", "namespace"?, "labelSelector"?, "fieldSelector"?}]` → `status.lists[i]`:
//! `{"names": [...]}` or `{"error": kind, "message"}`.

use omni_plugin_sdk::{Host, HostError, Info, ListQuery, Plugin, ReconcileError, Value, json};

struct ReadProbe;

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

fn text(step: &Value, key: &str) -> Option<String> {
    step[key].as_str().map(String::from)
}

impl Plugin for ReadProbe {
    fn describe() -> Info {
        Info {
            name: "read-probe".into(),
            version: "1.0.0".into(),
            capabilities: vec!["files".into(), "kube-read".into()],
            ..Info::default()
        }
    }

    fn reconcile<H: Host>(host: &H) -> Result<(), ReconcileError> {
        let obj = host.object();
        let mut files = Vec::new();
        for step in obj["spec"]["files"].as_array().cloned().unwrap_or_default() {
            let root = step["root"].as_str().unwrap_or_default();
            let path = step["path"].as_str().unwrap_or_default();
            files.push(match host.read_file(root, path) {
                Ok(bytes) => {
                    let mut read = json!({"bytes": bytes.len()});
                    if bytes.len() <= 1024 {
                        read["text"] = json!(String::from_utf8_lossy(&bytes));
                    }
                    read
                }
                Err(e) => error(e),
            });
        }
        let mut lists = Vec::new();
        for step in obj["spec"]["lists"].as_array().cloned().unwrap_or_default() {
            let query = ListQuery {
                api_version: text(&step, "apiVersion").unwrap_or_default(),
                kind: text(&step, "kind").unwrap_or_default(),
                namespace: text(&step, "namespace"),
                label_selector: text(&step, "labelSelector"),
                field_selector: text(&step, "fieldSelector"),
            };
            lists.push(match host.kube_list(&query) {
                Ok(items) => {
                    let names: Vec<&str> = items
                        .iter()
                        .filter_map(|o| o["metadata"]["name"].as_str())
                        .collect();
                    json!({"names": names})
                }
                Err(e) => error(e),
            });
        }
        host.set_status(json!({"files": files, "lists": lists}));
        Ok(())
    }
}

omni_plugin_sdk::export_plugin!(ReadProbe);
