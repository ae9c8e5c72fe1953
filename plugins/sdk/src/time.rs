//! Time as plugins see it: the host's clock answers RFC 3339 text (`Host::now`), and requeue and backoff decisions
//! compare it with timestamps in the object's status, such as a condition's `lastTransitionTime`.

/// Seconds since the Unix epoch of an RFC 3339 date-time (`2026-01-01T00:00:00Z`, fractions and `±hh:mm`
/// offsets accepted; fractions dropped). `None` for anything else.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let year = digits(s.get(0..4)?)?;
    let month = digits(s.get(5..7)?)?;
    let day = digits(s.get(8..10)?)?;
    let hour = digits(s.get(11..13)?)?;
    let minute = digits(s.get(14..16)?)?;
    let second = digits(s.get(17..19)?)?;
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) || hour > 23 || minute > 59 || second > 60 {
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

/// Seconds from `since` to `now` (both RFC 3339); `None` when either does not parse. Negative when `since` is later.
pub fn seconds_between(since: &str, now: &str) -> Option<i64> {
    Some(parse_rfc3339(now)? - parse_rfc3339(since)?)
}

/// How long the object's condition `type_` has had `status` (`"True"`/`"False"`), in seconds, judged by its
/// `lastTransitionTime`; `None` when it has another status, no such condition exists, or the times do not parse.
pub fn condition_age_s(object: &serde_json::Value, type_: &str, status: &str, now: &str) -> Option<i64> {
    let since = object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_ && c["status"] == status)?["lastTransitionTime"]
        .as_str()?;
    seconds_between(since, now)
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
        assert_eq!(parse_rfc3339("2026-01-01T00:00:0é"), None, "no panic on multi-byte text");
        assert_eq!(parse_rfc3339(""), None);
    }

    #[test]
    fn condition_age_counts_from_the_last_transition_of_that_status() {
        let obj = serde_json::json!({"status": {"conditions": [
            {"type": "Synced", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        ]}});
        assert_eq!(condition_age_s(&obj, "Synced", "False", "2026-01-01T00:01:30Z"), Some(90));
        assert_eq!(condition_age_s(&obj, "Synced", "True", "2026-01-01T00:01:30Z"), None);
        assert_eq!(condition_age_s(&obj, "Ready", "False", "2026-01-01T00:01:30Z"), None);
    }
}
