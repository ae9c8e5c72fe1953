//! The units a Plugin's and binding's fields are written in: Kubernetes quantities of bytes and Go durations.

use std::time::Duration;

/// `64Mi`, `1Gi`, `500M`, `1048576`: a Kubernetes quantity of bytes.
pub(super) fn parse_quantity(text: &str) -> Option<usize> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(split);
    let n: usize = digits.parse().ok()?;
    let factor: usize = match suffix {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        _ => return None,
    };
    n.checked_mul(factor)
}

/// A Go duration of whole units (`30s`, `5m`, `1h`, `1m30s`).
pub(super) fn parse_duration(text: &str) -> Option<Duration> {
    let mut total = Duration::ZERO;
    let mut number = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let n: u64 = number.parse().ok()?;
        number.clear();
        let part = match c {
            'h' => Duration::from_secs(n.checked_mul(3600)?),
            's' => Duration::from_secs(n),
            'm' if chars.peek() == Some(&'s') => {
                chars.next();
                Duration::from_millis(n)
            }
            'm' => Duration::from_secs(n.checked_mul(60)?),
            _ => return None,
        };
        total = total.checked_add(part)?;
    }
    number.is_empty().then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_and_durations_parse_as_kubernetes_and_go_write_them() {
        assert_eq!(parse_quantity("64Mi"), Some(64 << 20));
        assert_eq!(parse_quantity("1Gi"), Some(1 << 30));
        assert_eq!(parse_quantity("500M"), Some(500_000_000));
        assert_eq!(parse_quantity("12x"), None);
        assert_eq!(parse_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("5"), None);
        assert_eq!(parse_duration("18446744073709551615s1s"), None);
        assert_eq!(parse_duration("9999999999999999h"), None);
    }
}
