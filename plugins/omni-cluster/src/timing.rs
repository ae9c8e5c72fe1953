//! When to come back, and how much status text to keep.

use omni_api::conditions::types;
use omni_plugin_sdk::Value;
use omni_plugin_sdk::time::{condition_age_s, seconds_between};

/// `spec.syncInterval` when unset, not positive or not a duration (the Go controller used 5m when ≤ 0).
pub const DEFAULT_SYNC_INTERVAL_MS: u64 = 5 * 60 * 1000;
/// While the cluster is not healthy yet its status is read this often at least, so `Ready` follows Omni within
/// seconds rather than at the next `syncInterval` (the Go operator waited the whole interval).
pub const NOT_READY_RECHECK_MS: u64 = 15_000;
/// While Omni is tearing something down, the next look.
pub const TEARDOWN_RECHECK_MS: u64 = 3_000;
/// Failure backoff bounds: from the first failure, doubling with the failure's age, never beyond the interval.
/// At most two minutes, the host's default `--max-retry-delay`: the chaos run showed clusters that had failed for
/// minutes under an unreliable Omni waiting up to five more after Omni recovered.
pub const MIN_BACKOFF_MS: u64 = 2_000;
pub const MAX_BACKOFF_MS: u64 = 2 * 60 * 1000;
/// `lastSyncOutput` and `lastStatusOutput` keep at most this many bytes (Go's `trimStatus`).
pub const STATUS_TEXT_LIMIT: usize = 4096;

/// The object's re-sync period in milliseconds.
pub fn sync_interval_ms(object: &Value) -> u64 {
    let text = object["spec"]["syncInterval"].as_str().unwrap_or_default();
    match omni_template::translate::parse_go_duration(text) {
        Ok(d) if d.seconds > 0 || (d.seconds == 0 && d.nanos > 0) => (d.seconds as u64)
            .saturating_mul(1000)
            .saturating_add(u64::from(d.nanos.unsigned_abs()) / 1_000_000)
            .max(1),
        _ => DEFAULT_SYNC_INTERVAL_MS,
    }
}

/// How long to wait after a failure: as long as the condition `type_` has been `False` (so 2 s, 2 s, 4 s, 8 s, …),
/// bounded by the sync interval and [`MAX_BACKOFF_MS`]. A failure is a reported state, not an error: the Go
/// controller returned both, and controller-runtime then ignored the interval for its own backoff.
pub fn failure_backoff_ms(object: &Value, type_: &str, now: &str) -> u64 {
    let failing_s = condition_age_s(object, type_, "False", now).unwrap_or(0);
    backoff_for(object, failing_s)
}

/// After a failed deletion: as [`failure_backoff_ms`] on `Ready`, counting no further back than the deletion
/// itself. `Ready` may have been False long before it (a cluster not healthy yet), which says nothing about how
/// long the deletion has been failing: a first failure is retried within seconds, not after the cluster's age.
pub fn deletion_backoff_ms(object: &Value, now: &str) -> u64 {
    let ready_false_s = condition_age_s(object, types::READY, "False", now).unwrap_or(0);
    let deleting_s = object["metadata"]["deletionTimestamp"]
        .as_str()
        .and_then(|since| seconds_between(since, now))
        .unwrap_or(0);
    backoff_for(object, ready_false_s.min(deleting_s))
}

fn backoff_for(object: &Value, failing_s: i64) -> u64 {
    let cap = sync_interval_ms(object).clamp(MIN_BACKOFF_MS, MAX_BACKOFF_MS);
    (failing_s.max(0) as u64)
        .saturating_mul(1000)
        .clamp(MIN_BACKOFF_MS, cap)
}

/// Go's `trimStatus` (trimmed, first 4096 bytes), cut at a character boundary instead of inside one.
pub fn trim_status(text: &str) -> String {
    let text = text.trim();
    if text.len() <= STATUS_TEXT_LIMIT {
        return text.to_string();
    }
    let mut end = STATUS_TEXT_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}
