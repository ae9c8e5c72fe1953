//! The reserved `/__sim/` endpoints that let tests written in any language inject faults over HTTP:
//!
//! * `POST /__sim/faults` `{"verb":"update","resource":"configmaps","count":2,"status":409,"retryAfter":1}`;
//!   with `"rate":0.05` instead of a count, each matching request fails with that probability until cleared
//! * `POST /__sim/seed` `{"seed":42}` restarts the generator behind rates, so a run replays
//! * `GET /__sim/faults` answers the failures injected so far by status: `{"injected":{"410":3,"503":1}}`
//! * `POST /__sim/latency` `{"verb":"get","resource":"secrets","millis":200}`
//! * `POST /__sim/cut-watches` `{"resource":"pods","rate":0.1,"withinMillis":5000}`: that share of the matching
//!   watches ends early, each at a moment within the bound, until cleared
//! * `POST /__sim/drop-connections` `{"verb":"get","resource":"secrets","rate":0.05}`: that share of the matching
//!   requests closes its connection without an answer, until cleared
//! * `DELETE /__sim/faults` clears failures, latency, watch cuts and connection drops
//! * `POST /__sim/drop-watches`, `POST /__sim/compact`, `POST /__sim/pause`, `POST /__sim/resume`

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::{Api, Resp, error, json_ok};
use crate::error::ApiError;
use crate::faults::Matcher;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FailRequest {
    #[serde(flatten)]
    matcher: Matcher,
    #[serde(default = "one")]
    count: u32,
    status: u16,
    #[serde(default)]
    retry_after: Option<u32>,
    /// Fail this share of matching requests (0 to 1) until cleared, instead of `count` of them.
    #[serde(default)]
    rate: Option<f64>,
}

fn one() -> u32 {
    1
}

#[derive(Deserialize)]
struct SeedRequest {
    seed: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CutRequest {
    #[serde(flatten)]
    matcher: Matcher,
    rate: f64,
    within_millis: u64,
}

#[derive(Deserialize)]
struct DropRequest {
    #[serde(flatten)]
    matcher: Matcher,
    rate: f64,
}

#[derive(Deserialize)]
struct LatencyRequest {
    #[serde(flatten)]
    matcher: Matcher,
    millis: u64,
}

pub async fn handle(api: &Arc<Api>, method: &str, path: &str, body: &[u8]) -> Resp {
    let parse_err = |e: serde_json::Error| {
        error(&ApiError::bad_request(format!(
            "invalid fault request body: {e}"
        )))
    };
    match (method, path.trim_end_matches('/')) {
        ("POST", "/__sim/faults") => match serde_json::from_slice::<FailRequest>(body) {
            Ok(r) => {
                if !(400..600).contains(&r.status) {
                    return error(&ApiError::bad_request("status must be between 400 and 599"));
                }
                match r.rate {
                    Some(rate) if !(0.0..=1.0).contains(&rate) => {
                        return error(&ApiError::bad_request("rate must be between 0 and 1"));
                    }
                    Some(rate) => api
                        .faults
                        .fail_rate(r.matcher, rate, r.status, r.retry_after),
                    None => api
                        .faults
                        .fail_next(r.matcher, r.count, r.status, r.retry_after),
                }
                json_ok(&json!({"ok": true}))
            }
            Err(e) => parse_err(e),
        },
        ("GET", "/__sim/faults") => {
            let injected: serde_json::Map<String, serde_json::Value> = api
                .faults
                .injected()
                .into_iter()
                .map(|(status, n)| (status.to_string(), json!(n)))
                .collect();
            json_ok(&json!({
                "injected": injected,
                "watchesCut": api.faults.watches_cut(),
                "connectionsDropped": api.faults.connections_dropped(),
            }))
        }
        ("POST", "/__sim/seed") => match serde_json::from_slice::<SeedRequest>(body) {
            Ok(r) => {
                api.faults.seed(r.seed);
                json_ok(&json!({"ok": true}))
            }
            Err(e) => parse_err(e),
        },
        ("POST", "/__sim/cut-watches") => match serde_json::from_slice::<CutRequest>(body) {
            Ok(r) if !(0.0..=1.0).contains(&r.rate) => {
                error(&ApiError::bad_request("rate must be between 0 and 1"))
            }
            Ok(r) if r.within_millis == 0 => {
                error(&ApiError::bad_request("withinMillis must be at least 1"))
            }
            Ok(r) => {
                api.faults.cut_watches_rate(
                    r.matcher,
                    r.rate,
                    Duration::from_millis(r.within_millis),
                );
                json_ok(&json!({"ok": true}))
            }
            Err(e) => parse_err(e),
        },
        ("POST", "/__sim/drop-connections") => match serde_json::from_slice::<DropRequest>(body) {
            Ok(r) if !(0.0..=1.0).contains(&r.rate) => {
                error(&ApiError::bad_request("rate must be between 0 and 1"))
            }
            Ok(r) => {
                api.faults.drop_connections_rate(r.matcher, r.rate);
                json_ok(&json!({"ok": true}))
            }
            Err(e) => parse_err(e),
        },
        ("DELETE", "/__sim/faults") => {
            api.faults.clear();
            json_ok(&json!({"ok": true}))
        }
        ("POST", "/__sim/latency") => match serde_json::from_slice::<LatencyRequest>(body) {
            Ok(r) => {
                api.faults
                    .add_latency(r.matcher, Duration::from_millis(r.millis));
                json_ok(&json!({"ok": true}))
            }
            Err(e) => parse_err(e),
        },
        ("POST", "/__sim/drop-watches") => {
            api.faults.drop_watches();
            json_ok(&json!({"ok": true}))
        }
        ("POST", "/__sim/compact") => {
            api.cluster.store().compact();
            json_ok(
                &json!({"ok": true, "resourceVersion": api.cluster.store().current_rv().to_string()}),
            )
        }
        ("POST", "/__sim/pause") => {
            api.faults.pause();
            json_ok(&json!({"ok": true}))
        }
        ("POST", "/__sim/resume") => {
            api.faults.resume();
            json_ok(&json!({"ok": true}))
        }
        _ => error(&ApiError::new(
            404,
            "NotFound",
            format!("no simulator endpoint {method} {path}"),
        )),
    }
}
