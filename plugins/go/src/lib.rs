//! Go-compatible text helpers, for values the Go operator wrote and that must keep matching byte for byte (a spec
//! hash over Go `encoding/json`, duration strings in messages and hashes): `time.ParseDuration`,
//! `time.Duration.String` and `encoding/json` string encoding. Shared by the plugins (through the SDK, as
//! `omni_plugin_sdk::go`) and the host, which quotes and parses the same way. [`yaml`] writes YAML as go-yaml
//! does, for the cluster template's hash, Omni content, and the simulators' answers.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod yaml;

/// Nanoseconds per unit, as Go's `time.unitMap`.
fn unit_ns(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => 1,
        // U+00B5 micro sign and U+03BC Greek mu, both accepted by Go.
        "us" | "µs" | "μs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    })
}

const LIMIT: u64 = 1 << 63;

/// Go's `time.ParseDuration`: nanoseconds, or Go's error text (`time: invalid duration "x"`, `time: missing unit
/// in duration "1"`, `time: unknown unit "d" in duration "1d"`). Signed decimal numbers with units `ns`, `us`
/// (`µs`, `μs`), `ms`, `s`, `m`, `h`, such as `300ms`, `-1.5h` or `2h45m`; a bare `0` is allowed.
///
/// Fractions are computed in `f64` exactly as Go does, so results agree to the nanosecond.
pub fn parse_duration(text: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {}", time_quote(text));
    let mut s = text;
    let mut negative = false;
    if let Some(first) = s.bytes().next()
        && (first == b'-' || first == b'+')
    {
        negative = first == b'-';
        s = &s[1..];
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        let first = s.as_bytes()[0];
        if !(first == b'.' || first.is_ascii_digit()) {
            return Err(invalid());
        }
        // [0-9]*
        let before = s.len();
        let (whole, rest) = leading_int(s).ok_or_else(invalid)?;
        s = rest;
        let pre = before != s.len();

        // (\.[0-9]*)?
        let (mut fraction, mut scale, mut post) = (0u64, 1f64, false);
        if let Some(rest) = s.strip_prefix('.') {
            let before = rest.len();
            let (f, sc, rest) = leading_fraction(rest);
            (fraction, scale) = (f, sc);
            s = rest;
            post = before != s.len();
        }
        if !pre && !post {
            // No digits at all, such as ".s".
            return Err(invalid());
        }

        // The unit runs up to the next number; both ends are ASCII, so the slice is on character boundaries.
        let unit_len = s
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        if unit_len == 0 {
            return Err(format!(
                "time: missing unit in duration {}",
                time_quote(text)
            ));
        }
        let unit = &s[..unit_len];
        s = &s[unit_len..];
        let Some(scale_ns) = unit_ns(unit) else {
            return Err(format!(
                "time: unknown unit {} in duration {}",
                time_quote(unit),
                time_quote(text)
            ));
        };
        if whole > LIMIT / scale_ns {
            return Err(invalid());
        }
        let mut value = whole * scale_ns;
        if fraction > 0 {
            // Go: `v += uint64(float64(f) * (float64(unit) / scale))`; the product is at most 3.6e12.
            value += (fraction as f64 * (scale_ns as f64 / scale)) as u64;
            if value > LIMIT {
                return Err(invalid());
            }
        }
        total = total
            .checked_add(value)
            .filter(|t| *t <= LIMIT)
            .ok_or_else(invalid)?;
    }
    if negative {
        // -(1<<63) is i64::MIN, which Go accepts.
        return Ok((total as i64).wrapping_neg());
    }
    if total > LIMIT - 1 {
        return Err(invalid());
    }
    Ok(total as i64)
}

/// Go's `leadingInt`: the leading decimal digits; `None` on overflow past 1<<63.
fn leading_int(s: &str) -> Option<(u64, &str)> {
    let mut x: u64 = 0;
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    for c in s[..digits].bytes() {
        if x > LIMIT / 10 {
            return None;
        }
        x = x * 10 + u64::from(c - b'0');
        if x > LIMIT {
            return None;
        }
    }
    Some((x, &s[digits..]))
}

/// Go's `leadingFraction`: digits after the point as an integer and its scale; stops gaining precision instead
/// of failing when the digits overflow.
fn leading_fraction(s: &str) -> (u64, f64, &str) {
    let (mut x, mut scale, mut overflow) = (0u64, 1f64, false);
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    for c in s[..digits].bytes() {
        if overflow {
            continue;
        }
        if x > (LIMIT - 1) / 10 {
            overflow = true;
            continue;
        }
        let y = x * 10 + u64::from(c - b'0');
        if y > LIMIT {
            overflow = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, &s[digits..])
}

/// The `time` package's own `quote` for error texts: `"` and `\` escaped, every byte of a non-ASCII or control
/// character as `\xNN` (unlike `strconv.Quote`).
fn time_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if !c.is_ascii() || c < ' ' {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// Go's `time.Duration.String()`: `0s`, `1.5ms`, `300ms`, `1µs` (U+00B5), `1h30m0s`, `24h0m0s`, `-5m0s`.
pub fn format_duration(ns: i64) -> String {
    let negative = ns < 0;
    let mut u = ns.unsigned_abs();
    // Built back to front, as Go does.
    let mut out: Vec<u8> = Vec::with_capacity(32);
    if u < 1_000_000_000 {
        let prec = match u {
            0 => return "0s".into(),
            1..=999 => {
                out.extend_from_slice(b"sn");
                0
            }
            1_000..=999_999 => {
                // "µs" reversed byte-wise: the two UTF-8 bytes of µ go in back to front too.
                out.extend_from_slice(&[b's', 0xB5, 0xC2]);
                3
            }
            _ => {
                out.extend_from_slice(b"sm");
                6
            }
        };
        u = push_fraction(&mut out, u, prec);
        push_int(&mut out, u);
    } else {
        out.push(b's');
        u = push_fraction(&mut out, u, 9);
        // Whole seconds now.
        push_int(&mut out, u % 60);
        u /= 60;
        if u > 0 {
            out.push(b'm');
            push_int(&mut out, u % 60);
            u /= 60;
            // Hours are the largest unit: days differ in length.
            if u > 0 {
                out.push(b'h');
                push_int(&mut out, u);
            }
        }
    }
    if negative {
        out.push(b'-');
    }
    out.reverse();
    // Only ASCII and whole UTF-8 sequences were pushed.
    String::from_utf8(out).unwrap_or_default()
}

/// Go's `fmtFrac`, reversed: the `prec` low decimal digits of `v` as `.ddd` without trailing zeros (nothing when
/// they are all zero); returns `v / 10^prec`.
fn push_fraction(out: &mut Vec<u8>, mut v: u64, prec: usize) -> u64 {
    let mut print = false;
    for _ in 0..prec {
        let digit = (v % 10) as u8;
        print = print || digit != 0;
        if print {
            out.push(b'0' + digit);
        }
        v /= 10;
    }
    if print {
        out.push(b'.');
    }
    v
}

/// Go's `fmtInt`, reversed.
fn push_int(out: &mut Vec<u8>, mut v: u64) {
    if v == 0 {
        out.push(b'0');
        return;
    }
    while v > 0 {
        out.push(b'0' + (v % 10) as u8);
        v /= 10;
    }
}

/// A string as Go's `encoding/json` encodes it (with its default HTML escaping), quotes included: `"` and `\`
/// escaped; `\b`, `\f`, `\n`, `\r`, `\t` short forms; other control characters and `<`, `>`, `&` as `\u00XX`
/// (lowercase hex); U+2028 and U+2029 as `\u2028`/`\u2029`; everything else as raw UTF-8. serde_json escapes
/// neither HTML characters nor U+2028/U+2029, so hashes over its output would differ from Go's.
pub fn json_string(s: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{0}'..='\u{1f}' | '<' | '>' | '&' => {
                let b = c as u8;
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 0xF)]));
            }
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            other => out.push(other),
        }
    }
    out.push('"');
    out
}

// The parse and print tables below were also run through Go 1.19's `time` and `encoding/json`, with the same
// results; the `\b`/`\f` short forms are Go 1.22's (older Go wrote `\u0008`/`\u000c`).
/// Go's `strconv.Quote` (`%q`) for the names quoted here: `"` and `\` escaped, the C escapes `\a \b \f \n \r \t
/// \v`, other ASCII controls as `\x..`, other non-printable characters as `\u....`/`\U........`. Rust's `{:?}`
/// differs for controls (`\u{1b}` instead of `\x1b`), which would make messages differ from the Go operator's.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{07}' => out.push_str("\\a"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{0b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            // Go prints only graphic characters and the ASCII space raw; other controls and spaces are escaped.
            c if c.is_control() || (c.is_whitespace() && c != ' ') => {
                if (c as u32) < 0x1_0000 {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;
    const MIN: i64 = 60 * S;
    const H: i64 = 60 * MIN;

    #[test]
    fn durations_parse_as_go_parses_them() {
        let cases: &[(&str, i64)] = &[
            ("0", 0),
            ("-0", 0),
            ("+0", 0),
            ("0s", 0),
            ("5s", 5 * S),
            ("30s", 30 * S),
            ("1478s", 1478 * S),
            ("-5s", -5 * S),
            ("+5s", 5 * S),
            ("-0s", 0),
            ("5.0s", 5 * S),
            ("5.6s", 5 * S + 600_000_000),
            ("5.s", 5 * S),
            (".5s", S / 2),
            ("1.0s", S),
            ("1.00s", S),
            ("1.004s", S + 4_000_000),
            ("1.0040s", S + 4_000_000),
            ("100.00100s", 100 * S + 1_000_000),
            ("10ns", 10),
            ("11us", 11_000),
            ("12µs", 12_000),
            ("12μs", 12_000),
            ("13ms", 13_000_000),
            ("14s", 14 * S),
            ("15m", 15 * MIN),
            ("16h", 16 * H),
            ("3h30m", 3 * H + 30 * MIN),
            ("10.5s4m", 4 * MIN + 10 * S + 500_000_000),
            ("-2m3.4s", -(2 * MIN + 3 * S + 400_000_000)),
            (
                "1h2m3s4ms5us6ns",
                H + 2 * MIN + 3 * S + 4_000_000 + 5_000 + 6,
            ),
            ("39h9m14.425s", 39 * H + 9 * MIN + 14 * S + 425_000_000),
            ("52763797000ns", 52_763_797_000),
            ("0.3333333333333333333h", 20 * MIN),
            ("9007199254740993ns", (1 << 53) + 1),
            ("9223372036854775807ns", i64::MAX),
            ("9223372036854775.807us", i64::MAX),
            ("9223372036s854ms775us807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
            ("-9223372036854775.808us", i64::MIN),
            ("-9223372036s854ms775us808ns", i64::MIN),
            ("-2562047h47m16.854775808s", i64::MIN),
            ("0.100000000000000000000h", 6 * MIN),
            ("0.830103483285477580700h", 49 * MIN + 48 * S + 372_539_827),
            ("1.5h", 90 * MIN),
            ("300ms", 300_000_000),
        ];
        for (text, want) in cases {
            assert_eq!(parse_duration(text), Ok(*want), "{text}");
        }
    }

    #[test]
    fn bad_durations_fail_with_go_error_texts() {
        let cases: &[(&str, &str)] = &[
            ("", r#"time: invalid duration """#),
            ("3", r#"time: missing unit in duration "3""#),
            ("-", r#"time: invalid duration "-""#),
            ("s", r#"time: invalid duration "s""#),
            (".", r#"time: invalid duration ".""#),
            ("-.", r#"time: invalid duration "-.""#),
            (".s", r#"time: invalid duration ".s""#),
            ("+.s", r#"time: invalid duration "+.s""#),
            ("x", r#"time: invalid duration "x""#),
            ("1d", r#"time: unknown unit "d" in duration "1d""#),
            ("1h-2m", r#"time: unknown unit "h-" in duration "1h-2m""#),
            ("1.5.5s", r#"time: missing unit in duration "1.5.5s""#),
            (" 1s", r#"time: invalid duration " 1s""#),
            ("1s ", r#"time: unknown unit "s " in duration "1s ""#),
            (
                "1µ",
                r#"time: unknown unit "\xc2\xb5" in duration "1\xc2\xb5""#,
            ),
            ("\"1\"s", r#"time: invalid duration "\"1\"s""#),
            (
                "9223372036854775810ns",
                r#"time: invalid duration "9223372036854775810ns""#,
            ),
            (
                "9223372036854775808ns",
                r#"time: invalid duration "9223372036854775808ns""#,
            ),
            (
                "-9223372036854775809ns",
                r#"time: invalid duration "-9223372036854775809ns""#,
            ),
            (
                "9223372036854ms775us808ns",
                r#"time: invalid duration "9223372036854ms775us808ns""#,
            ),
            ("3000000h", r#"time: invalid duration "3000000h""#),
            (
                "99999999999999999999s",
                r#"time: invalid duration "99999999999999999999s""#,
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse_duration(text), Err(want.to_string()), "{text:?}");
        }
    }

    #[test]
    fn durations_print_as_go_prints_them() {
        let cases: &[(i64, &str)] = &[
            (0, "0s"),
            (1, "1ns"),
            (1_100, "1.1µs"),
            (1_000, "1µs"),
            (2_200_000, "2.2ms"),
            (1_500_000, "1.5ms"),
            (300_000_000, "300ms"),
            (3_300_000_000, "3.3s"),
            (S + S / 2, "1.5s"),
            (5 * MIN, "5m0s"),
            (4 * MIN + 5 * S, "4m5s"),
            (4 * MIN + 5 * S + 1_000_000, "4m5.001s"),
            (5 * H + 6 * MIN + 7 * S + 1_000_000, "5h6m7.001s"),
            (8 * MIN + 1, "8m0.000000001s"),
            (H + S + S / 2, "1h0m1.5s"),
            (90 * MIN, "1h30m0s"),
            (12 * H, "12h0m0s"),
            (24 * H, "24h0m0s"),
            (87_600 * H, "87600h0m0s"),
            (i64::MAX, "2562047h47m16.854775807s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
            (-1, "-1ns"),
            (-1_500_000, "-1.5ms"),
            (-5 * MIN, "-5m0s"),
        ];
        for (ns, want) in cases {
            assert_eq!(format_duration(*ns), *want, "{ns}");
        }
    }

    #[test]
    fn printed_durations_parse_back() {
        for ns in [
            0,
            1,
            999,
            1_000,
            1_500_000,
            S,
            90 * MIN,
            24 * H + 1,
            -(3 * H),
            i64::MAX,
            i64::MIN,
        ] {
            assert_eq!(parse_duration(&format_duration(ns)), Ok(ns), "{ns}");
        }
    }

    #[test]
    fn json_strings_are_escaped_as_go_escapes_them() {
        let cases: &[(&str, &str)] = &[
            ("", r#""""#),
            ("plain", r#""plain""#),
            ("quote\"back\\slash", r#""quote\"back\\slash""#),
            ("a<b&c>", r#""a\u003cb\u0026c\u003e""#),
            ("\u{8}\u{c}\n\r\t", r#""\b\f\n\r\t""#),
            ("\u{0}\u{1}\u{1f}", r#""\u0000\u0001\u001f""#),
            ("\u{1b}[0m", r#""\u001b[0m""#),
            ("line\u{2028}para\u{2029}", r#""line\u2028para\u2029""#),
            // Everything else is raw UTF-8, DEL and slash included.
            ("é µ 日本 \u{7f} / '", "\"é µ 日本 \u{7f} / '\""),
        ];
        for (text, want) in cases {
            assert_eq!(json_string(text), *want, "{text:?}");
        }
    }

    #[test]
    fn json_strings_agree_with_serde_json_where_go_does_not_escape_more() {
        for text in ["automation", "ops team", "system:masters", "x\"y\\z\n", "é"] {
            assert_eq!(
                json_string(text),
                serde_json::to_string(text).unwrap_or_default(),
                "{text:?}"
            );
        }
    }
}
