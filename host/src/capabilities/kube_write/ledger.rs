//! What every call of one loaded plugin shares for its writes: the rate budget, and the body it last applied to
//! each object. An operator re-applies its children on every reconcile, and owned children wake their owner on
//! every change of their own (a Deployment's status moves several times while it rolls out), so most applies
//! would change nothing; such an apply is answered from the watch cache instead of being sent, which keeps the
//! API server's load and the plugin's rate budget for writes that do something.
//!
//! An apply is skipped only when this plugin applied the very same body to the object last (an apply that omits a
//! field the previous one set releases it, so a different body is always sent) and the object as the cache holds
//! it already has every value of the body. A stale cache errs towards sending: a change the cache has not seen yet
//! wakes the owner again when it arrives, and that call compares against it.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use sha2::Digest as _;

use crate::contract::throttle::Throttle;

/// Objects remembered per plugin before the ledger starts afresh (forgetting only costs a write).
const MAX_REMEMBERED: usize = 100_000;

/// The longest a write waits for its turn at the rate. Longer, it is refused (`unavailable`): a plugin writing
/// far faster than its rate gets told, not a worker held for seconds.
pub(super) const MAX_QUEUE: Duration = Duration::from_secs(1);

/// The bucket every write of the plugin takes from: a ledger belongs to one loaded plugin.
const BUCKET: &str = "writes";

pub struct WriteLedger {
    rate: Throttle,
    per_second: u32,
    /// Object → SHA-256 of the body last applied to it.
    applied: Mutex<HashMap<String, [u8; 32]>>,
}

impl std::fmt::Debug for WriteLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteLedger")
            .field("per_second", &self.per_second)
            .finish_non_exhaustive()
    }
}

impl WriteLedger {
    /// `per_second` writes a second after a burst of `burst`.
    pub fn new(per_second: u32, burst: u32) -> Self {
        let refill = Duration::from_secs(1).div_f64(f64::from(per_second.max(1)));
        WriteLedger {
            rate: Throttle::new(burst, refill),
            per_second,
            applied: Mutex::default(),
        }
    }

    pub fn per_second(&self) -> u32 {
        self.per_second
    }

    /// Reserves one write: how long to wait before sending it (zero while the burst lasts; writes beyond it are
    /// paced at the rate, in the order they asked), or, when its turn is further off than `most` (or than
    /// [`MAX_QUEUE`]), how long until it would come.
    pub(super) fn reserve(&self, most: Duration) -> Result<Duration, Duration> {
        self.rate
            .reserve(BUCKET, Instant::now(), most.min(MAX_QUEUE))
    }

    /// Whether `body` is what this plugin last applied to `object`.
    pub(super) fn applied_last(&self, object: &str, body: &[u8; 32]) -> bool {
        self.map().get(object) == Some(body)
    }

    /// Records `body` as applied to `object`.
    pub(super) fn remember(&self, object: String, body: [u8; 32]) {
        let mut applied = self.map();
        if applied.len() >= MAX_REMEMBERED && !applied.contains_key(&object) {
            applied.clear();
        }
        applied.insert(object, body);
    }

    /// Forgets `object` (written otherwise than by apply, or deleted): its next apply is sent.
    pub(super) fn forget(&self, object: &str) {
        self.map().remove(object);
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, [u8; 32]>> {
        self.applied.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The digest a body is remembered by.
pub(super) fn digest(body: &Value) -> [u8; 32] {
    sha2::Sha256::digest(body.to_string().as_bytes()).into()
}

/// Whether `live` already holds every value of `body`: each field of an object present with a value that holds
/// it in turn, lists of the same length element by element, scalars equal. Fields only `live` has (defaults, the
/// status, other managers' fields) do not matter; a `null` in `body` (a field to remove) never holds.
pub(super) fn holds(live: &Value, body: &Value) -> bool {
    match (live, body) {
        (Value::Object(l), Value::Object(b)) => b
            .iter()
            .all(|(k, v)| l.get(k).is_some_and(|lv| holds(lv, v))),
        (Value::Array(l), Value::Array(b)) => {
            l.len() == b.len() && l.iter().zip(b).all(|(lv, bv)| holds(lv, bv))
        }
        (_, Value::Null) => false,
        (l, b) => l == b,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_body_holds_when_every_value_is_there_and_lists_match() {
        let live = json!({"metadata": {"name": "d", "uid": "u", "labels": {"a": "1", "b": "2"}},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "i", "imagePullPolicy": "Always"}]}}},
            "status": {"readyReplicas": 2}});
        let body = json!({"metadata": {"name": "d", "labels": {"a": "1"}},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        assert!(holds(&live, &body));
        let mut changed = body.clone();
        changed["spec"]["replicas"] = json!(3);
        assert!(!holds(&live, &changed));
        let mut more = body.clone();
        more["spec"]["template"]["spec"]["containers"] =
            json!([{"name": "c", "image": "i"}, {"name": "s", "image": "j"}]);
        assert!(!holds(&live, &more));
        let mut removing = body.clone();
        removing["metadata"]["labels"]["b"] = Value::Null;
        assert!(!holds(&live, &removing));
    }

    #[test]
    fn the_ledger_remembers_the_last_body_per_object() {
        let ledger = WriteLedger::new(10, 2);
        let (a, b) = (digest(&json!({"a": 1})), digest(&json!({"a": 2})));
        assert!(!ledger.applied_last("cm/x", &a));
        ledger.remember("cm/x".into(), a);
        assert!(ledger.applied_last("cm/x", &a));
        assert!(!ledger.applied_last("cm/x", &b));
        ledger.forget("cm/x");
        assert!(!ledger.applied_last("cm/x", &a));
        let now = Duration::ZERO;
        assert_eq!(ledger.reserve(Duration::from_secs(1)), Ok(now));
        assert_eq!(ledger.reserve(Duration::from_secs(1)), Ok(now));
        let paced = ledger.reserve(Duration::from_secs(1)).expect("paced");
        assert!(
            paced > now && paced <= Duration::from_millis(100),
            "{paced:?}"
        );
        assert!(ledger.reserve(Duration::ZERO).is_err(), "no time to wait");
    }
}
