//! Events forwarded to Flux's notification-controller (`--events-addr`), as Flux's own controllers post theirs:
//! one JSON object per Event (Flux's `eventv1.Event`: the involved object, `severity` info or error, `timestamp`,
//! `message`, `reason`, `metadata` with the `revision`, the reporting controller), POSTed to the address.
//!
//! Posting never holds up a reconcile: Events queue (at most [`QUEUE`]; beyond it they are dropped and counted)
//! and one task sends them in order, each with a deadline and a few retries.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;

/// Events waiting to be sent, at most.
pub const QUEUE: usize = 1024;
/// One POST's deadline.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Tries per Event (Flux's recorder retries too).
const TRIES: u32 = 3;

/// Sends Events to a notification-controller.
#[derive(Debug)]
pub struct Forwarder {
    queue: mpsc::Sender<Value>,
    dropped: Arc<AtomicU64>,
}

/// What one Event says, besides its object.
pub struct Note<'a> {
    pub warning: bool,
    pub reason: &'a str,
    pub message: &'a str,
}

impl Forwarder {
    /// Starts the sending task (on the current runtime) for `address` (`http://notification-controller.flux-system.svc/`).
    pub fn start(address: &str) -> Result<Arc<Forwarder>, String> {
        let url = reqwest::Url::parse(address)
            .map_err(|e| format!("--events-addr {address:?} is not a URL: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "--events-addr {address:?}: the notification-controller is reached over http or https"
            ));
        }
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .build()
            .map_err(|e| format!("an HTTP client for --events-addr: {e}"))?;
        let (queue, mut events) = mpsc::channel::<Value>(QUEUE);
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                for attempt in 1..=TRIES {
                    let sent = client
                        .post(url.clone())
                        .json(&event)
                        .send()
                        .await
                        .and_then(reqwest::Response::error_for_status);
                    match sent {
                        Ok(_) => break,
                        Err(e) if attempt == TRIES => {
                            tracing::warn!(error = %e, "could not forward an Event to --events-addr");
                        }
                        Err(_) => {
                            tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt)))
                                .await
                        }
                    }
                }
            }
        });
        Ok(Arc::new(Forwarder {
            queue,
            dropped: Arc::default(),
        }))
    }

    /// Queues the Event `note` about `object` (of `api_version`/`kind`), reported by `controller`.
    pub fn send(
        &self,
        object: &Value,
        (api_version, kind): (&str, &str),
        controller: &str,
        note: Note<'_>,
    ) {
        let event = payload(object, (api_version, kind), controller, note);
        if self.queue.try_send(event).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Events dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Flux's event as notification-controller reads it. `metadata.revision` is what the object last attempted
/// (`status.lastAttemptedRevision`: an OmniHelmRelease's chart version), as helm-controller sends it.
fn payload(
    object: &Value,
    (api_version, kind): (&str, &str),
    controller: &str,
    note: Note<'_>,
) -> Value {
    let meta = &object["metadata"];
    let mut metadata = serde_json::Map::new();
    if let Some(revision) = object["status"]["lastAttemptedRevision"]
        .as_str()
        .filter(|r| !r.is_empty())
    {
        metadata.insert("revision".into(), revision.into());
    }
    let mut event = json!({
        "involvedObject": {
            "apiVersion": api_version,
            "kind": kind,
            "namespace": meta["namespace"],
            "name": meta["name"],
            "uid": meta["uid"],
            "resourceVersion": meta["resourceVersion"],
        },
        "severity": if note.warning { "error" } else { "info" },
        "timestamp": jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        "message": note.message,
        "reason": note.reason,
        "reportingController": controller,
        "reportingInstance": std::env::var("POD_NAME").unwrap_or_else(|_| controller.to_string()),
    });
    if !metadata.is_empty() {
        event["metadata"] = Value::Object(metadata);
    }
    event
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_is_fluxs_event() {
        let object = json!({"metadata": {"name": "web", "namespace": "apps", "uid": "u-1", "resourceVersion": "7"},
            "status": {"lastAttemptedRevision": "1.2.3"}});
        let e = payload(
            &object,
            ("omni.texashpc.com/v1alpha1", "OmniHelmRelease"),
            "omni-operator",
            Note {
                warning: true,
                reason: "UpgradeFailed",
                message: "Helm upgrade failed",
            },
        );
        assert_eq!(
            e["involvedObject"],
            json!({"apiVersion": "omni.texashpc.com/v1alpha1", "kind": "OmniHelmRelease", "namespace": "apps",
                "name": "web", "uid": "u-1", "resourceVersion": "7"})
        );
        assert_eq!(e["severity"], "error");
        assert_eq!(e["reason"], "UpgradeFailed");
        assert_eq!(e["metadata"], json!({"revision": "1.2.3"}));
        assert_eq!(e["reportingController"], "omni-operator");
        assert!(e["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')));
        let info = payload(
            &json!({"metadata": {"name": "x"}}),
            ("v", "K"),
            "c",
            Note {
                warning: false,
                reason: "R",
                message: "m",
            },
        );
        assert_eq!(info["severity"], "info");
        assert!(info.get("metadata").is_none(), "no revision, no metadata");
    }
}
