//! Watch streams: newline-delimited `{"type","object"}` events, resumable from a resourceVersion, with
//! bookmarks, initial-events streaming, timeouts, and the real server's 410 ERROR event when history is gone.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Response, header};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use super::partial::Shape;
use super::{Api, Call, Resp};
use crate::error::{ApiError, ApiResult, FieldCause};
use crate::resources::ResourceType;
use crate::store::{Change, ChangeKind};

struct Filter {
    namespace: Option<String>,
    selectors: super::objects::Selectors,
}

impl Filter {
    fn matches(&self, obj: &Value) -> bool {
        if let Some(ns) = &self.namespace
            && obj["metadata"]["namespace"].as_str() != Some(ns.as_str())
        {
            return false;
        }
        self.selectors.matches(obj)
    }

    /// The event a watcher sees for a change, given its selectors: an object moving into the selection is
    /// ADDED, one moving out is DELETED, as the real watch cache reports them.
    fn event_for(&self, c: &Change) -> Option<&'static str> {
        let now = self.matches(&c.object);
        match c.kind {
            ChangeKind::Added => now.then_some("ADDED"),
            ChangeKind::Deleted => now.then_some("DELETED"),
            ChangeKind::Modified => {
                let before = c.previous.as_ref().is_some_and(|p| self.matches(p));
                match (before, now) {
                    (true, true) => Some("MODIFIED"),
                    (false, true) => Some("ADDED"),
                    (true, false) => Some("DELETED"),
                    (false, false) => None,
                }
            }
        }
    }
}

pub fn serve(api: &Arc<Api>, call: &Call, rt: &ResourceType, ns: &str) -> ApiResult<Resp> {
    let q = &call.query;
    let filter = Filter {
        namespace: if ns.is_empty() {
            None
        } else {
            Some(ns.to_string())
        },
        selectors: super::objects::Selectors::parse(call, rt)?,
    };
    let bookmarks = q.flag("allowWatchBookmarks");
    let send_initial = q.get("sendInitialEvents").map(|v| v == "true");
    let rv_param = q.get("resourceVersion").unwrap_or("");
    let rv_match = q.get("resourceVersionMatch").unwrap_or("");
    if send_initial.is_some() && rv_match != "NotOlderThan" {
        return Err(ApiError::invalid(
            "ListOptions",
            "meta.k8s.io",
            "",
            &[FieldCause::forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            )],
        ));
    }
    if send_initial == Some(true) && !bookmarks {
        return Err(ApiError::invalid(
            "ListOptions",
            "meta.k8s.io",
            "",
            &[FieldCause::forbidden(
                "allowWatchBookmarks",
                "allowWatchBookmarks must be set to true when sendInitialEvents is true",
            )],
        ));
    }
    let timeout = match q
        .get("timeoutSeconds")
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|s| *s > 0)
    {
        Some(s) => Duration::from_secs(s),
        // With no (or a zero) timeout the real server picks one between 30 and 60 minutes.
        None => Duration::from_secs(1800 + u64::from(uuid::Uuid::new_v4().as_bytes()[0]) * 7),
    };
    // A watch the fault rules cut short ends early, as if the server's timeout had come.
    let timeout = match api.faults.watch_cut(&crate::faults::RequestFacts {
        verb: "watch",
        resource: &call.info.resource,
        subresource: &call.info.subresource,
        namespace: &call.info.namespace,
        name: &call.info.name,
    }) {
        Some(cut) => cut.min(timeout),
        None => timeout,
    };
    let key = rt.storage_key();
    let from_now = rv_param.is_empty() || rv_param == "0";
    let initial_list = send_initial == Some(true) || (send_initial.is_none() && from_now);
    // `sendInitialEvents=false` from "" or "0": start at the current revision without the initial state.
    let from_current = send_initial == Some(false) && from_now;
    let (initial, backlog, rx, start_rv, too_old) = {
        let store = api.cluster.store();
        if initial_list {
            let rv = store.current_rv();
            let objs = store.list(&key, filter.namespace.as_deref());
            match store.watch_from(rv) {
                Ok((backlog, rx)) => (objs, backlog, Some(rx), rv, None),
                Err(_) => (Vec::new(), Vec::new(), None, rv, None),
            }
        } else if from_current {
            let rv = store.current_rv();
            match store.watch_from(rv) {
                Ok((backlog, rx)) => (Vec::new(), backlog, Some(rx), rv, None),
                Err(_) => (Vec::new(), Vec::new(), None, rv, None),
            }
        } else {
            let rv = rv_param.parse::<u64>().map_err(|_| {
                ApiError::bad_request(format!("resourceVersion: Invalid value: \"{rv_param}\": strconv.ParseUint: parsing \"{rv_param}\": invalid syntax"))
            })?;
            if rv > store.current_rv() {
                return Err(super::objects::too_large_resource_version(
                    rv,
                    store.current_rv(),
                ));
            }
            match store.watch_from(rv) {
                Ok((backlog, rx)) => (Vec::new(), backlog, Some(rx), rv, None),
                Err(t) => (Vec::new(), Vec::new(), None, rv, Some(t)),
            }
        }
    };

    let (tx, out) = mpsc::channel::<Bytes>(256);
    let cluster = api.cluster.clone();
    let rt = rt.clone();
    let mut drop_signal = api.faults.watch_epoch();
    drop_signal.borrow_and_update();
    let initial_end = send_initial == Some(true);
    // `kubectl get -w` asks for Tables: each event then carries a one-row Table, as the real server sends.
    let as_table = super::table::wants_table(call.header("accept"));
    let shape = super::partial::requested(call.header("accept"));
    let include = call.query.get("includeObject").map(String::from);
    tokio::spawn(async move {
        let render = |o: &Value| -> Value {
            let obj = cluster.render(&rt, o);
            if as_table {
                super::table::build(
                    &rt,
                    &[obj],
                    json!({"resourceVersion": ""}),
                    include.as_deref(),
                )
            } else {
                super::partial::event_object(shape, obj)
            }
        };
        let send = |v: Value| {
            let mut line = serde_json::to_vec(&v).unwrap_or_default();
            line.push(b'\n');
            Bytes::from(line)
        };
        if let Some(t) = too_old {
            // The real server answers 200 and then a single ERROR event carrying a 410 Status.
            let e = ApiError::gone(format!(
                "too old resource version: {} ({})",
                t.requested, t.oldest
            ));
            let _ = tx
                .send(send(json!({"type": "ERROR", "object": e.to_status()})))
                .await;
            return;
        }
        for o in &initial {
            if filter.matches(o)
                && tx
                    .send(send(json!({"type": "ADDED", "object": render(o)})))
                    .await
                    .is_err()
            {
                return;
            }
        }
        let mut last_rv = start_rv;
        if initial_end {
            let bm = bookmark(&rt, last_rv, true, shape);
            if tx.send(send(bm)).await.is_err() {
                return;
            }
        }
        for c in &backlog {
            last_rv = c.rv;
            if c.key != rt.storage_key() {
                continue;
            }
            if let Some(t) = filter.event_for(c)
                && tx
                    .send(send(json!({"type": t, "object": render(&c.object)})))
                    .await
                    .is_err()
            {
                return;
            }
        }
        let Some(mut rx) = rx else { return };
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut ticker =
            tokio::time::interval(Duration::from_secs(if bookmarks { 10 } else { 3600 }));
        ticker.tick().await;
        loop {
            tokio::select! {
                _ = &mut deadline => return,
                _ = drop_signal.changed() => return,
                _ = tx.closed() => return,
                _ = ticker.tick(), if bookmarks => {
                    if tx.send(send(bookmark(&rt, last_rv, false, shape))).await.is_err() { return; }
                }
                msg = rx.recv() => match msg {
                    Ok(c) => {
                        if c.rv <= last_rv { continue; }
                        last_rv = c.rv;
                        if c.key != rt.storage_key() { continue; }
                        let received = c.at.elapsed();
                        if let Some(t) = filter.event_for(&c)
                            && tx.send(send(json!({"type": t, "object": render(&c.object)}))).await.is_err()
                        {
                            return;
                        }
                        // A change handed to its watcher long after it was stored: late to reach this task (the
                        // simulator was busy), or late to be taken by the client (it did not read its watch).
                        let handed = c.at.elapsed();
                        if handed > Duration::from_secs(1) {
                            tracing::debug!(
                                resource = %rt.plural,
                                rv = c.rv,
                                received_ms = received.as_millis() as u64,
                                handed_ms = handed.as_millis() as u64,
                                "a watch event was handed over late"
                            );
                        }
                    }
                    // A watcher too slow for the change rate is closed; clients resume from their last revision.
                    Err(broadcast::error::RecvError::Lagged(_)) | Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        }
    });

    let stream = futures::stream::unfold(out, |mut out| async move {
        out.recv()
            .await
            .map(|b| (Ok::<_, std::convert::Infallible>(Frame::data(b)), out))
    });
    let mut r = Response::new(StreamBody::new(stream).boxed_unsync());
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    Ok(r)
}

fn bookmark(rt: &ResourceType, rv: u64, initial_end: bool, shape: Shape) -> Value {
    let mut meta = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    let object = json!({"kind": rt.kind, "apiVersion": rt.api_version(), "metadata": meta});
    json!({"type": "BOOKMARK", "object": super::partial::event_object(shape, object)})
}
