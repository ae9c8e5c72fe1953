//! The simulator's notion of "now": system time plus an adjustable offset, so tests can move the server's
//! clock (signature skew, key expiry, JWT timestamps) while time keeps flowing.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// An injectable clock. Clones share the same offset.
#[derive(Debug, Clone, Default)]
pub struct SimClock {
    /// Offset from system time in nanoseconds (signed: the clock may run behind).
    offset_nanos: Arc<Mutex<i128>>,
}

fn nanos(t: SystemTime) -> i128 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

impl SimClock {
    pub fn new() -> Self {
        Self::default()
    }

    fn offset(&self) -> i128 {
        *self.offset_nanos.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The current simulated time.
    pub fn now(&self) -> SystemTime {
        let n = nanos(SystemTime::now()) + self.offset();
        if n >= 0 {
            UNIX_EPOCH + Duration::from_nanos(n as u64)
        } else {
            UNIX_EPOCH - Duration::from_nanos((-n) as u64)
        }
    }

    /// Unix seconds of [`SimClock::now`].
    pub fn unix(&self) -> i64 {
        (nanos(self.now()) / 1_000_000_000) as i64
    }

    /// Makes "now" equal `t`; time keeps flowing from there.
    pub fn set(&self, t: SystemTime) {
        *self.offset_nanos.lock().unwrap_or_else(|p| p.into_inner()) =
            nanos(t) - nanos(SystemTime::now());
    }

    /// Moves the clock forward.
    pub fn advance(&self, d: Duration) {
        *self.offset_nanos.lock().unwrap_or_else(|p| p.into_inner()) += d.as_nanos() as i128;
    }

    /// Moves the clock backward.
    pub fn rewind(&self, d: Duration) {
        *self.offset_nanos.lock().unwrap_or_else(|p| p.into_inner()) -= d.as_nanos() as i128;
    }

    /// Back to system time.
    pub fn reset(&self) {
        *self.offset_nanos.lock().unwrap_or_else(|p| p.into_inner()) = 0;
    }

    pub(crate) fn timestamp(&self) -> prost_types::Timestamp {
        let n = nanos(self.now());
        prost_types::Timestamp {
            seconds: n.div_euclid(1_000_000_000) as i64,
            nanos: n.rem_euclid(1_000_000_000) as i32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_and_advance_move_now() {
        let c = SimClock::new();
        let t = UNIX_EPOCH + Duration::from_secs(1_795_320_000);
        c.set(t);
        assert!((c.unix() - 1_795_320_000).abs() <= 1);
        c.advance(Duration::from_secs(60));
        assert!((c.unix() - 1_795_320_060).abs() <= 1);
        c.rewind(Duration::from_secs(120));
        assert!((c.unix() - 1_795_319_940).abs() <= 1);
    }
}
