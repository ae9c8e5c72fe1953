//! Token buckets by key, for every layer that bounds what a plugin makes the host do. The controllers rate-limit
//! what plugins make the host write per object (status writes and Events: a plugin that asks to be called back at
//! once, or emits an Event on every call, must not turn the host into a flood of API writes), as Kubernetes' own
//! event spam filter (`EventSourceObjectSpamFilter`: a burst of 25, then one every five minutes per source and
//! object); a tenant's call-rate quota is one bucket, and so are a plugin's Helm action budgets.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Buckets kept before full ones are forgotten (a full bucket is the same as no bucket).
const PRUNE_AT: usize = 4096;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Token buckets keyed by object.
#[derive(Debug)]
pub struct Throttle {
    burst: f64,
    /// Seconds per token.
    refill: Duration,
    buckets: Mutex<Buckets>,
}

#[derive(Debug, Default)]
struct Buckets {
    by_key: HashMap<String, Bucket>,
    /// The size at which full buckets are next forgotten: doubled past what a prune keeps, so a large number of
    /// busy objects costs one sweep per doubling, not one per call.
    prune_at: usize,
}

impl Throttle {
    /// `burst` at once, then one per `refill`.
    pub fn new(burst: u32, refill: Duration) -> Self {
        Throttle {
            burst: f64::from(burst.max(1)),
            refill: refill.max(Duration::from_micros(1)),
            buckets: Mutex::new(Buckets {
                by_key: HashMap::new(),
                prune_at: PRUNE_AT,
            }),
        }
    }

    /// The event spam filter's numbers: 25 at once, then one per five minutes.
    pub fn events() -> Self {
        Throttle::new(25, Duration::from_secs(300))
    }

    /// Status writes: 20 at once, then one per second.
    pub fn status_writes() -> Self {
        Throttle::new(20, Duration::from_secs(1))
    }

    /// Takes a token for `key`, or says how long until one is free.
    pub fn take(&self, key: &str, now: Instant) -> Result<(), Duration> {
        self.with_bucket(key, now, |tokens| {
            if tokens >= 1.0 {
                (tokens - 1.0, Ok(()))
            } else {
                (tokens, Err(self.refill.mul_f64(1.0 - tokens)))
            }
        })
    }

    /// Takes a token for `key` now or, when none is free, promises the next one if it comes within `most`, so
    /// callers queue in the order they asked: `Ok(wait)` to wait before using it (zero when one was free; a
    /// promise puts the bucket into debt), `Err(wait)` when the next free token is further off than `most`.
    pub fn reserve(&self, key: &str, now: Instant, most: Duration) -> Result<Duration, Duration> {
        self.with_bucket(key, now, |tokens| {
            if tokens >= 1.0 {
                return (tokens - 1.0, Ok(Duration::ZERO));
            }
            let after = tokens - 1.0;
            let wait = self.refill.mul_f64(-after);
            if wait > most || after < -self.burst {
                (tokens, Err(wait))
            } else {
                (after, Ok(wait))
            }
        })
    }

    /// Charges `key` for `cost` tokens spent already (a cost known only after the fact): the bucket may go into
    /// debt, at most one burst deep, which [`Throttle::debt`] then reports until it is earned back.
    pub fn charge(&self, key: &str, cost: u64, now: Instant) {
        let floor = -self.burst;
        self.with_bucket(key, now, |tokens| ((tokens - cost as f64).max(floor), ()));
    }

    /// How long until `key`'s bucket is out of debt; zero when it is not in debt.
    pub fn debt(&self, key: &str, now: Instant) -> Duration {
        self.with_bucket(key, now, |tokens| {
            let wait = if tokens >= 0.0 {
                Duration::ZERO
            } else {
                Duration::from_secs_f64(-tokens * self.refill.as_secs_f64())
            };
            (tokens, wait)
        })
    }

    /// Runs `f` on `key`'s tokens as of `now` (refilled, pruning full buckets first) and keeps what it returns.
    fn with_bucket<T>(&self, key: &str, now: Instant, f: impl FnOnce(f64) -> (f64, T)) -> T {
        let mut guard = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        let buckets = &mut *guard;
        if buckets.by_key.len() >= buckets.prune_at {
            let (burst, refill) = (self.burst, self.refill);
            buckets
                .by_key
                .retain(|_, b| refilled(*b, now, burst, refill) < burst);
            buckets.prune_at = (buckets.by_key.len() * 2).max(PRUNE_AT);
        }
        let bucket = buckets.by_key.entry(key.to_owned()).or_insert(Bucket {
            tokens: self.burst,
            at: now,
        });
        let (tokens, answer) = f(refilled(*bucket, now, self.burst, self.refill));
        *bucket = Bucket { tokens, at: now };
        answer
    }
}

fn refilled(bucket: Bucket, now: Instant, burst: f64, refill: Duration) -> f64 {
    let earned = now.saturating_duration_since(bucket.at).as_secs_f64() / refill.as_secs_f64();
    (bucket.tokens + earned).min(burst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_queue_for_the_next_tokens_up_to_a_bound() {
        let throttle = Throttle::new(2, Duration::from_millis(100));
        let now = Instant::now();
        let most = Duration::from_millis(250);
        assert_eq!(throttle.reserve("k", now, most), Ok(Duration::ZERO));
        assert_eq!(throttle.reserve("k", now, most), Ok(Duration::ZERO));
        // Out of tokens: each next caller waits one refill longer than the one before it.
        assert_eq!(
            throttle.reserve("k", now, most),
            Ok(Duration::from_millis(100))
        );
        assert_eq!(
            throttle.reserve("k", now, most),
            Ok(Duration::from_millis(200))
        );
        // The next would wait 300 ms, past the bound: refused, and nothing is promised.
        assert_eq!(
            throttle.reserve("k", now, most),
            Err(Duration::from_millis(300))
        );
        assert_eq!(
            throttle.reserve("k", now, most),
            Err(Duration::from_millis(300))
        );
        // Time pays the promises back.
        let later = now + Duration::from_millis(250);
        assert_eq!(
            throttle.reserve("k", later, most),
            Ok(Duration::from_millis(50))
        );
    }

    #[test]
    fn a_cost_charged_after_the_fact_is_a_debt_of_at_most_one_burst() {
        let throttle = Throttle::new(4, Duration::from_secs(1));
        let t0 = Instant::now();
        assert_eq!(throttle.debt("a", t0), Duration::ZERO);
        throttle.charge("a", 6, t0);
        assert_eq!(throttle.debt("a", t0), Duration::from_secs(2));
        assert!(throttle.take("a", t0).is_err(), "no token while in debt");
        assert_eq!(
            throttle.debt("a", t0 + Duration::from_secs(2)),
            Duration::ZERO
        );
        throttle.charge("a", 1_000, t0 + Duration::from_secs(2));
        assert_eq!(
            throttle.debt("a", t0 + Duration::from_secs(2)),
            Duration::from_secs(4)
        );
        assert_eq!(
            throttle.debt("b", t0),
            Duration::ZERO,
            "another key has its own bucket"
        );
    }

    #[test]
    fn a_burst_then_one_per_refill() {
        let throttle = Throttle::new(3, Duration::from_secs(10));
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(throttle.take("a", t0), Ok(()));
        }
        let wait = throttle.take("a", t0).unwrap_err();
        assert_eq!(wait, Duration::from_secs(10));
        // Another object has its own bucket.
        assert_eq!(throttle.take("b", t0), Ok(()));
        // Half a refill later, still half a token short.
        assert_eq!(
            throttle.take("a", t0 + Duration::from_secs(5)).unwrap_err(),
            Duration::from_secs(5)
        );
        assert_eq!(throttle.take("a", t0 + Duration::from_secs(10)), Ok(()));
        assert!(throttle.take("a", t0 + Duration::from_secs(10)).is_err());
    }

    #[test]
    fn full_buckets_are_forgotten_when_there_are_many() {
        let throttle = Throttle::new(1, Duration::from_millis(1));
        let t0 = Instant::now();
        for i in 0..PRUNE_AT {
            assert_eq!(throttle.take(&i.to_string(), t0), Ok(()));
        }
        assert_eq!(throttle.take("late", t0 + Duration::from_secs(1)), Ok(()));
        assert_eq!(throttle.buckets.lock().unwrap().by_key.len(), 1);
    }
}

#[cfg(test)]
mod busy {
    use super::*;

    #[test]
    fn many_busy_objects_are_swept_once_per_doubling_not_on_every_call() {
        let throttle = Throttle::new(5, Duration::from_secs(3600));
        let t0 = Instant::now();
        for i in 0..PRUNE_AT + 10 {
            assert_eq!(throttle.take(&i.to_string(), t0), Ok(()));
        }
        // None of the buckets is full, so none is forgotten; the next sweep waits for twice as many.
        let buckets = throttle.buckets.lock().unwrap();
        assert_eq!(buckets.by_key.len(), PRUNE_AT + 10);
        assert_eq!(buckets.prune_at, 2 * PRUNE_AT);
    }
}
