//! What a kind's controller itself last did to each object's status, so that no reconcile starts from a copy
//! older than its own work.
//!
//! Two things can make the copy a reconcile reads stale:
//! - the watch cache has not yet delivered the controller's last status write (a reconcile woken by a finished
//!   Helm action or a requeue can run before the watch event arrives): the write's resourceVersion is kept, and
//!   a reconcile that finds another one in the cache reads the object from the API server instead;
//! - the per-object rate limit deferred a status write: the status is kept, and the next reconcile starts from
//!   it as long as the stored status is still the one it was computed from.
//!
//! Plugins that keep counts in status (the Helm release's remediation ledger) would otherwise count an outcome
//! twice or lose an attempt.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use serde_json::Value;

/// Beyond this many objects remembered, entries with nothing deferred are forgotten (at worst one reconcile
/// reads the cache's copy as it did before this existed).
const PRUNE_AT: usize = 100_000;

#[derive(Debug, Default)]
pub struct OwnWrites {
    by_key: Mutex<HashMap<String, Entry>>,
}

#[derive(Debug, Default)]
struct Entry {
    /// The resourceVersion the last status write produced.
    written: Option<String>,
    deferred: Option<Deferred>,
}

#[derive(Debug)]
struct Deferred {
    /// The stored status the deferred one was computed from.
    base: Value,
    status: Value,
}

impl OwnWrites {
    /// Whether the cached copy of `key`, at `cached_rv`, may predate the last status write: true when a write
    /// is remembered and the cache shows another version. A cache showing the write itself has caught up: the
    /// write is forgotten. Otherwise it stays remembered until [`OwnWrites::read_fresh`] says the caller got
    /// the latest copy, so a failed fresh read leaves the next attempt as careful.
    pub fn lags(&self, key: &str, cached_rv: Option<&str>) -> bool {
        let mut map = self.by_key.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(entry) = map.get_mut(key) else {
            return false;
        };
        let Some(written) = &entry.written else {
            return false;
        };
        if cached_rv == Some(written.as_str()) {
            entry.written = None;
            if entry.deferred.is_none() {
                map.remove(key);
            }
            return false;
        }
        true
    }

    /// The caller read `key` from the API server: nothing older than that copy can come from the cache now.
    pub fn read_fresh(&self, key: &str) {
        let mut map = self.by_key.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = map.get_mut(key) {
            entry.written = None;
            if entry.deferred.is_none() {
                map.remove(key);
            }
        }
    }

    /// The object is gone (or no longer ours to write): everything about it is forgotten.
    pub fn forget(&self, key: &str) {
        self.by_key
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }

    /// A status write of `key` produced `rv`; nothing is deferred any more.
    pub fn wrote(&self, key: &str, rv: Option<String>) {
        let mut map = self.by_key.lock().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= PRUNE_AT {
            map.retain(|_, e| e.deferred.is_some());
        }
        match rv {
            Some(rv) => {
                map.insert(
                    key.to_owned(),
                    Entry {
                        written: Some(rv),
                        deferred: None,
                    },
                );
            }
            None => {
                map.remove(key);
            }
        }
    }

    /// The rate limit deferred writing `status` over the stored `base`.
    pub fn defer(&self, key: &str, base: Value, status: Value) {
        let mut map = self.by_key.lock().unwrap_or_else(PoisonError::into_inner);
        map.entry(key.to_owned()).or_default().deferred = Some(Deferred { base, status });
    }

    /// Nothing deferred for `key` stands any more (the stored status moved on, or no status needs writing).
    pub fn settled(&self, key: &str) {
        let mut map = self.by_key.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = map.get_mut(key) {
            entry.deferred = None;
            if entry.written.is_none() {
                map.remove(key);
            }
        }
    }

    /// The status deferred for `key`, when the stored status is still the one it was computed from; a deferred
    /// status whose base moved on (someone else wrote status) is dropped.
    pub fn deferred_over(&self, key: &str, stored: &Value) -> Option<Value> {
        let mut map = self.by_key.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = map.get_mut(key)?;
        let deferred = entry.deferred.take()?;
        if deferred.base == *stored {
            let status = deferred.status.clone();
            entry.deferred = Some(deferred);
            Some(status)
        } else {
            if entry.written.is_none() {
                map.remove(key);
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_cache_showing_another_version_than_the_last_write_lags_once() {
        let w = OwnWrites::default();
        assert!(!w.lags("ns/a", Some("5")), "nothing written");
        w.wrote("ns/a", Some("7".into()));
        assert!(w.lags("ns/a", Some("5")));
        assert!(
            w.lags("ns/a", Some("5")),
            "still remembered while no fresh read succeeded"
        );
        w.read_fresh("ns/a");
        assert!(!w.lags("ns/a", Some("5")), "forgotten after the fresh read");
        w.wrote("ns/a", Some("9".into()));
        assert!(!w.lags("ns/a", Some("9")), "the cache caught up");
        assert!(!w.lags("ns/a", Some("5")), "and that was remembered");
        assert!(!w.lags("ns/b", None));
        w.wrote("ns/c", Some("3".into()));
        w.forget("ns/c");
        assert!(!w.lags("ns/c", Some("1")));
    }

    #[test]
    fn a_deferred_status_stands_only_over_the_status_it_was_computed_from() {
        let w = OwnWrites::default();
        let base = json!({"failures": 0});
        w.defer("ns/a", base.clone(), json!({"failures": 1}));
        assert_eq!(w.deferred_over("ns/a", &base), Some(json!({"failures": 1})));
        assert_eq!(
            w.deferred_over("ns/a", &base),
            Some(json!({"failures": 1})),
            "kept until written"
        );
        assert_eq!(w.deferred_over("ns/a", &json!({"failures": 5})), None);
        assert_eq!(
            w.deferred_over("ns/a", &base),
            None,
            "dropped once moved on"
        );

        w.defer("ns/a", base.clone(), json!({"failures": 2}));
        w.wrote("ns/a", Some("3".into()));
        assert_eq!(w.deferred_over("ns/a", &base), None, "written");
        w.defer("ns/a", base.clone(), json!({"failures": 2}));
        w.settled("ns/a");
        assert_eq!(w.deferred_over("ns/a", &base), None, "settled");
    }
}
