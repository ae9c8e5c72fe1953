//! Time as plugins see it: the host's clock answers RFC 3339 text (`Host::now`), and requeue and backoff decisions
//! compare it with timestamps in the object's status, such as a condition's `lastTransitionTime`.

/// Seconds since the Unix epoch of an RFC 3339 date-time (`2026-01-01T00:00:00Z`, fractions and `±hh:mm`
/// offsets accepted; fractions dropped). `None` for anything else.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let year = digits(s.get(0..4)?)?;
    let month = digits(s.get(5..7)?)?;
    let day = digits(s.get(8..10)?)?;
    let hour = digits(s.get(11..13)?)?;
    let minute = digits(s.get(14..16)?)?;
    let second = digits(s.get(17..19)?)?;
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }

    let mut rest = s.get(19..)?;
    if let Some(fraction) = rest.strip_prefix('.') {
        let n = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        rest = fraction.get(n..)?;
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first() {
                Some(b'+') => 1,
                Some(b'-') => -1,
                _ => return None,
            };
            if rest.len() != 6 || rest.as_bytes()[3] != b':' {
                return None;
            }
            let (h, m) = (digits(rest.get(1..3)?)?, digits(rest.get(4..6)?)?);
            if h > 23 || m > 59 {
                return None;
            }
            sign * (h * 3600 + m * 60)
        }
    };
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

/// An unsigned decimal of ASCII digits only (`str::parse` would also take a sign).
fn digits(s: &str) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Unix seconds as RFC 3339 UTC with seconds precision (`2026-06-03T12:00:00Z`), the form Kubernetes prints
/// `metav1.Time` in and the Go operator writes into annotations.
pub fn format_rfc3339(unix: i64) -> String {
    let (days, secs) = (unix.div_euclid(86_400), unix.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// The inverse of `days_from_civil` (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// Seconds from `since` to `now` (both RFC 3339); `None` when either does not parse. Negative when `since` is later.
pub fn seconds_between(since: &str, now: &str) -> Option<i64> {
    Some(parse_rfc3339(now)? - parse_rfc3339(since)?)
}

/// How long the object's condition `type_` has had `status` (`"True"`/`"False"`), in seconds, judged by its
/// `lastTransitionTime`; `None` when it has another status, no such condition exists, or the times do not parse.
pub fn condition_age_s(
    object: &serde_json::Value,
    type_: &str,
    status: &str,
    now: &str,
) -> Option<i64> {
    let since = object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_ && c["status"] == status)?["lastTransitionTime"]
        .as_str()?;
    seconds_between(since, now)
}

/// When to retry a failure that the object's condition `type_` reports: after as long as the condition has
/// already been False, at least 2 s and at most 60 s. A fresh failure (a dependency still starting) is retried
/// within seconds, a lasting one once a minute like the Go operator's one-minute requeue, and each retry still
/// commits the condition (a returned error would not).
pub fn failure_retry_ms(object: &serde_json::Value, type_: &str, now: &str) -> u64 {
    let age = condition_age_s(object, type_, "False", now).unwrap_or(0);
    u64::try_from(age.clamp(2, 60)).unwrap_or(60) * 1000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_parse_to_unix_seconds() {
        let cases: [(&str, Option<i64>); 16] = [
            ("1970-01-01T00:00:00Z", Some(0)),
            ("1969-12-31T23:59:59Z", Some(-1)),
            ("2026-01-01T00:00:00Z", Some(1_767_225_600)),
            ("2000-02-29T12:34:56Z", Some(951_827_696)),
            ("2000-02-29t12:34:56z", Some(951_827_696)),
            ("2000-02-29T14:34:56+02:00", Some(951_827_696)),
            ("2000-02-29T10:04:56-02:30", Some(951_827_696)),
            ("2000-02-29T12:34:56.999999999Z", Some(951_827_696)),
            ("1900-02-29T00:00:00Z", None),
            ("2026-13-01T00:00:00Z", None),
            ("2026-01-01T24:00:00Z", None),
            ("2026-01-01T00:00:00", None),
            ("2026-01-01T00:00:00.Z", None),
            ("2026-01-01T00:00:00+0100", None),
            ("+026-01-01T00:00:00Z", None),
            ("2026-01-01T00:00:00Zjunk", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_rfc3339(text), want, "{text}");
        }
        assert_eq!(
            parse_rfc3339("2026-01-01T00:00:0é"),
            None,
            "no panic on multi-byte text"
        );
        assert_eq!(parse_rfc3339(""), None);
    }

    #[test]
    fn unix_seconds_format_back_to_the_rfc3339_they_came_from() {
        for text in [
            "1970-01-01T00:00:00Z",
            "1969-12-31T23:59:59Z",
            "2000-02-29T12:34:56Z",
            "2026-06-03T12:00:00Z",
            "2400-12-31T23:59:59Z",
        ] {
            let unix = parse_rfc3339(text).expect("parses");
            assert_eq!(format_rfc3339(unix), text);
        }
    }

    #[test]
    fn failures_are_retried_sooner_while_they_are_new() {
        let failing_since = |t: &str| serde_json::json!({"status": {"conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": t}]}});
        assert_eq!(
            failure_retry_ms(&serde_json::json!({}), "Ready", "2026-01-01T00:00:00Z"),
            2_000,
            "first failure"
        );
        assert_eq!(
            failure_retry_ms(
                &failing_since("2026-01-01T00:00:00Z"),
                "Ready",
                "2026-01-01T00:00:09Z"
            ),
            9_000
        );
        assert_eq!(
            failure_retry_ms(
                &failing_since("2026-01-01T00:00:00Z"),
                "Ready",
                "2026-01-01T01:00:00Z"
            ),
            60_000
        );
    }

    #[test]
    fn condition_age_counts_from_the_last_transition_of_that_status() {
        let obj = serde_json::json!({"status": {"conditions": [
            {"type": "Synced", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        ]}});
        assert_eq!(
            condition_age_s(&obj, "Synced", "False", "2026-01-01T00:01:30Z"),
            Some(90)
        );
        assert_eq!(
            condition_age_s(&obj, "Synced", "True", "2026-01-01T00:01:30Z"),
            None
        );
        assert_eq!(
            condition_age_s(&obj, "Ready", "False", "2026-01-01T00:01:30Z"),
            None
        );
    }
}
