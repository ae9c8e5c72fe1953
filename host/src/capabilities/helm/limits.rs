//! What one plugin may hand to Helm: Helm actions cost a worker slot, memory in the worker and minutes of a
//! workload cluster's API, so a plugin gets a budget of them, and values a size. Without it one plugin starting
//! installs in a loop (hundreds in one call) queued every other object's upgrade behind its own, and megabytes of
//! values took the worker to gigabytes.
//!
//! * values: at most [`MAX_VALUES_BYTES`] per release, counted on every inline part before it is parsed and on the
//!   merged values (Helm stores them in a Secret the API server caps at 1 MiB, gzip-compressed);
//! * starts: at most [`STARTS_PER_CALL`] start attempts per call (counted before any of their work: resolving a
//!   chart source costs round trips), and per plugin and per object token buckets
//!   ([`ActionBudget`]); a start over budget answers `unavailable` with the time to wait, so a well-behaved plugin
//!   retries later and a hostile one gains nothing by looping.

use std::time::{Duration, Instant};

use crate::contract::throttle::Throttle;

/// The largest values a release may be given, as JSON.
pub const MAX_VALUES_BYTES: usize = 1 << 20;
/// Helm actions one plugin call may start: a release plugin starts at most one per call.
pub const STARTS_PER_CALL: u32 = 4;
/// Per plugin: enough for a fleet's first installs at once, then two a second.
const PLUGIN_BURST: u32 = 200;
const PLUGIN_REFILL: Duration = Duration::from_millis(500);
/// Per object: a failing release retried with backoff never needs more than this.
const OBJECT_BURST: u32 = 10;
const OBJECT_REFILL: Duration = Duration::from_secs(6);

/// The action budgets of every plugin, shared by all calls.
#[derive(Debug)]
pub struct ActionBudget {
    per_plugin: Throttle,
    per_object: Throttle,
}

impl Default for ActionBudget {
    fn default() -> Self {
        ActionBudget {
            per_plugin: Throttle::new(PLUGIN_BURST, PLUGIN_REFILL),
            per_object: Throttle::new(OBJECT_BURST, OBJECT_REFILL),
        }
    }
}

impl ActionBudget {
    /// Takes one action from `plugin`'s and `object`'s buckets, or says how long until one is free. The plugin's
    /// bucket is only charged when the object's has a token, so one looping object does not use up its plugin's
    /// budget for every other object.
    pub fn take(&self, plugin: &str, object: &str, now: Instant) -> Result<(), Duration> {
        self.per_object
            .take(&format!("{plugin}\u{0}{object}"), now)?;
        self.per_plugin.take(plugin, now)
    }
}

/// Checks the size of one inline values part before it is parsed.
pub fn check_part(index: usize, text: &str) -> Result<(), String> {
    if text.len() > MAX_VALUES_BYTES {
        return Err(format!(
            "values part {index} is {} bytes; a release's values may be at most {MAX_VALUES_BYTES} bytes",
            text.len()
        ));
    }
    Ok(())
}

/// Checks the size of a post-render spec before it is parsed: it goes where the values go, and is bounded alike.
pub fn check_post_render(text: &str) -> Result<(), String> {
    if text.len() > MAX_VALUES_BYTES {
        return Err(format!(
            "the post-render spec is {} bytes; it may be at most {MAX_VALUES_BYTES} bytes",
            text.len()
        ));
    }
    Ok(())
}

/// Checks the size of a release's merged values.
pub fn check_values(values: &serde_json::Value) -> Result<(), String> {
    let size = serde_json::to_vec(values).map_or(usize::MAX, |v| v.len());
    if size > MAX_VALUES_BYTES {
        return Err(format!(
            "the merged values are {size} bytes; a release's values may be at most {MAX_VALUES_BYTES} bytes"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_looping_on_starts_is_slowed_before_its_plugin_is() {
        let budget = ActionBudget::default();
        let t0 = Instant::now();
        for _ in 0..OBJECT_BURST {
            assert_eq!(budget.take("p", "ns/a", t0), Ok(()));
        }
        let wait = budget.take("p", "ns/a", t0).unwrap_err();
        assert_eq!(wait, OBJECT_REFILL);
        // Other objects of the plugin still start: the refused starts did not charge the plugin.
        for i in 0..(PLUGIN_BURST - OBJECT_BURST) {
            assert_eq!(budget.take("p", &format!("ns/o{i}"), t0), Ok(()), "{i}");
        }
        // The plugin's own budget, once used up, holds for every object; another plugin has its own.
        assert!(budget.take("p", "ns/fresh", t0).is_err());
        assert_eq!(budget.take("q", "ns/fresh", t0), Ok(()));
    }

    #[test]
    fn values_are_measured_before_and_after_they_are_merged() {
        assert!(check_part(0, "{}").is_ok());
        let big = format!("{{\"x\":\"{}\"}}", "a".repeat(MAX_VALUES_BYTES));
        let refused = check_part(2, &big).unwrap_err();
        assert!(refused.starts_with("values part 2 is"), "{refused}");
        let merged = serde_json::json!({"x": "a".repeat(MAX_VALUES_BYTES)});
        assert!(check_values(&merged).is_err());
        assert!(check_values(&serde_json::json!({"x": 1})).is_ok());
    }
}
