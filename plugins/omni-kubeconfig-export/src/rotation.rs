//! Rotation math (expiry at now + ttl, rotation renewBefore earlier) in nanoseconds since the epoch. The clock and
//! the annotations have second precision while ttl and renewBefore have nanosecond precision, so the arithmetic is
//! exact and only the printed times are cut to the second (as Go's `time.RFC3339` format does). `i128` because a
//! `now` in nanoseconds plus a ttl near Go's maximum duration overflows `i64`.

use omni_plugin_sdk::time::format_rfc3339;

const NS_PER_S: i128 = 1_000_000_000;
const NS_PER_MS: i128 = 1_000_000;
/// The shortest requeue asked for: the host's clock has second precision, so waking sooner gains nothing.
pub const MIN_REQUEUE_MS: u64 = 1_000;

/// An instant, in nanoseconds since the Unix epoch.
pub type Instant = i128;

pub fn from_seconds(unix_s: i64) -> Instant {
    i128::from(unix_s) * NS_PER_S
}

/// RFC 3339 with seconds, UTC; the fraction of a second is dropped, not rounded.
pub fn timestamp(at: Instant) -> String {
    let seconds = at.div_euclid(NS_PER_S);
    format_rfc3339(i64::try_from(seconds).unwrap_or(if seconds < 0 { i64::MIN } else { i64::MAX }))
}

/// When a kubeconfig that expires at `expiration` is due for rotation: `renewBefore` earlier, or at expiry.
pub fn next_rotation(expiration: Instant, renew_before_ns: Option<i64>) -> Instant {
    match renew_before_ns {
        Some(r) if r > 0 => expiration - i128::from(r),
        _ => expiration,
    }
}

/// The boundary is inclusive: at the rotation time the kubeconfig is rotated.
pub fn due(now: Instant, next: Instant) -> bool {
    now >= next
}

/// Milliseconds until `next`, rounded up so the wake-up is never before it, and at least [`MIN_REQUEUE_MS`].
pub fn requeue_ms(now: Instant, next: Instant) -> u64 {
    let wait = (next - now).max(0);
    let ms = (wait + NS_PER_MS - 1) / NS_PER_MS;
    u64::try_from(ms).unwrap_or(u64::MAX).max(MIN_REQUEUE_MS)
}

/// The times of a kubeconfig written now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    pub rotated: Instant,
    pub expiration: Instant,
    pub next: Instant,
}

impl Schedule {
    pub fn starting(now: Instant, ttl_ns: i64, renew_before_ns: Option<i64>) -> Self {
        let expiration = now + i128::from(ttl_ns);
        Schedule {
            rotated: now,
            expiration,
            next: next_rotation(expiration, renew_before_ns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 3_600_000_000_000;

    #[test]
    fn ttl_24h_with_renew_before_4h_rotates_after_20h() {
        let now = from_seconds(1_767_225_600);
        let s = Schedule::starting(now, 24 * H, Some(4 * H));
        assert_eq!(timestamp(s.expiration), "2026-01-02T00:00:00Z");
        assert_eq!(timestamp(s.next), "2026-01-01T20:00:00Z");
        assert_eq!(requeue_ms(now, s.next), 20 * 3_600_000);
    }

    #[test]
    fn without_renew_before_rotation_is_at_expiry() {
        let now = from_seconds(0);
        let s = Schedule::starting(now, 24 * H, None);
        assert_eq!(s.next, s.expiration);
        assert_eq!(requeue_ms(now, s.next), 24 * 3_600_000);
    }

    #[test]
    fn sub_second_lifetimes_are_exact_and_printed_cut_to_the_second() {
        let now = from_seconds(0);
        let s = Schedule::starting(now, 1_500_000_000, None);
        assert_eq!(timestamp(s.expiration), "1970-01-01T00:00:01Z");
        assert_eq!(requeue_ms(now, s.next), 1_500);
        assert_eq!(
            requeue_ms(now, now + 1),
            MIN_REQUEUE_MS,
            "never sooner than a second"
        );
        assert_eq!(
            requeue_ms(now, now + 2_500_000_001),
            2_501,
            "rounded up, not down"
        );
    }

    #[test]
    fn rotation_is_due_at_the_boundary() {
        let next = from_seconds(100);
        assert!(!due(next - 1, next));
        assert!(due(next, next));
        assert!(due(next + 1, next));
    }

    #[test]
    fn the_longest_go_duration_does_not_overflow() {
        let now = from_seconds(1_767_225_600);
        let s = Schedule::starting(now, i64::MAX, None);
        assert!(s.expiration > now);
        assert_eq!(timestamp(s.expiration), "2318-04-12T23:47:16Z");
    }
}
