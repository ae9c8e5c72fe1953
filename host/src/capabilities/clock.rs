//! `clock`: the current time, from a source the caller supplies so tests and replays are deterministic.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use wasmtime::component::Resource;

use super::CallContext;
use crate::contract::bindings::omni::operator::clock;

/// Where `clock.now` reads the time. `Debug` so the settings that hold one can print themselves.
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now(&self) -> SystemTime;
}

#[derive(Debug)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that always answers the same instant.
#[derive(Debug)]
pub struct FixedClock(pub SystemTime);

impl FixedClock {
    /// The instant `seconds` after the Unix epoch.
    pub fn at_unix(seconds: u64) -> Self {
        FixedClock(UNIX_EPOCH + Duration::from_secs(seconds))
    }
}

impl Clock for FixedClock {
    fn now(&self) -> SystemTime {
        self.0
    }
}

/// What `clock` serves with: the time source.
#[derive(Debug, Clone)]
pub struct Services {
    pub(crate) clock: Arc<dyn Clock>,
}

impl Default for Services {
    fn default() -> Self {
        Services {
            clock: Arc::new(SystemClock),
        }
    }
}

/// `clock` keeps nothing per call.
pub(crate) type State = ();

super::capability_view!(
    /// The `clock` capability's view of a call.
    ClockCap,
    clock,
    clock
);

impl clock::Host for ClockCap<'_> {
    async fn now(&mut self, _ctx: Resource<CallContext>) -> wasmtime::Result<String> {
        Ok(rfc3339_seconds(self.services.clock.now()))
    }
}

/// `2026-11-22T06:57:03Z`: RFC 3339, seconds precision, UTC, as Kubernetes writes timestamps.
pub fn rfc3339_seconds(time: SystemTime) -> String {
    let seconds = match time.duration_since(UNIX_EPOCH) {
        Ok(after) => after.as_secs() as i64,
        Err(before) => -(before.duration().as_secs_f64().ceil() as i64),
    };
    let (days, second_of_day) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `civil_from_days`), so the host needs
/// no date crate for one format.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * shifted_month + 2) / 5 + 1) as u32;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_kubernetes_timestamps() {
        assert_eq!(rfc3339_seconds(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339_seconds(FixedClock::at_unix(951_782_400).now()),
            "2000-02-29T00:00:00Z"
        );
        assert_eq!(
            rfc3339_seconds(FixedClock::at_unix(1_700_000_000).now()),
            "2023-11-14T22:13:20Z"
        );
        assert_eq!(
            rfc3339_seconds(FixedClock::at_unix(4_102_444_799).now()),
            "2099-12-31T23:59:59Z"
        );
        assert_eq!(
            rfc3339_seconds(UNIX_EPOCH - Duration::from_secs(1)),
            "1969-12-31T23:59:59Z"
        );
    }

    #[test]
    fn sub_second_precision_is_dropped() {
        let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_999);
        assert_eq!(rfc3339_seconds(t), "2023-11-14T22:13:20Z");
    }
}

#[cfg(test)]
mod grant_checks {
    use clock::Host as _;
    use serde_json::json;

    use super::*;
    use crate::capabilities::call::testing::TestCall;

    /// `clock` is guarded when the plugin loads (an ungranted import fails the load); a linked call reads the
    /// time the operator's services give, never the host's own.
    #[tokio::test]
    async fn the_time_comes_from_the_services_clock() {
        let mut call = TestCall::new(&["clock"], json!({}), &[]);
        let services = Services {
            clock: Arc::new(FixedClock::at_unix(86_400)),
        };
        let ctx = call.ctx();
        let now = ClockCap::over(&mut call.core, &mut (), &services)
            .now(ctx)
            .await
            .expect("the time");
        assert_eq!(now, "1970-01-02T00:00:00Z");
    }
}
