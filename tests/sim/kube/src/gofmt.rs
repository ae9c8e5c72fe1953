//! Go's formatting, for error texts that must be byte-identical to what kube-apiserver's `fmt`, `strconv` and
//! `encoding/json` produce.

use serde_json::Value;

/// Nesting beyond this prints as `null`, so hostile input cannot exhaust the stack.
const MAX_DEPTH: usize = 512;

/// Whether Go's `unicode.IsPrint` holds: no controls, non-ASCII spaces, format or private-use characters.
pub fn is_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    let u = c as u32;
    let format_or_private = matches!(u,
        0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x180E | 0x200B..=0x200F | 0x202A..=0x202E
        | 0x2060..=0x2064 | 0x2066..=0x206F | 0xFEFF | 0xFFF9..=0xFFFB | 0xE000..=0xF8FF | 0xF0000..=0x10FFFF);
    !(c.is_control() || c.is_whitespace() || format_or_private)
}

/// `strconv.Quote` (`%q`), which every quoted name in the real messages uses.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{b}' => out.push_str("\\v"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if !is_printable(c) => {
                if (c as u32) < 0x10000 {
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

/// The decimal digits and exponent of the shortest representation that round-trips, as Go's strconv
/// uses for precision -1.
fn shortest_digits(f: f64) -> (String, i32) {
    let s = format!("{:e}", f.abs());
    let (mant, exp) = s.split_once('e').unwrap_or((s.as_str(), "0"));
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    (digits, exp)
}

/// fmt's %v for float64: strconv's 'g' with shortest precision, which switches to exponent
/// notation when the exponent is < -4 or >= 6 (so 1e6 prints as 1e+06).
pub fn float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let neg = f < 0.0;
    let (digits, exp) = shortest_digits(f);
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if !(-4..6).contains(&exp) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exp.abs()));
    } else {
        out.push_str(&plain_decimal(&digits, exp));
    }
    out
}

fn plain_decimal(digits: &str, exp: i32) -> String {
    let dp = exp + 1;
    let nd = digits.len() as i32;
    if dp <= 0 {
        format!("0.{}{}", "0".repeat((-dp) as usize), digits)
    } else if dp >= nd {
        format!("{}{}", digits, "0".repeat((dp - nd) as usize))
    } else {
        format!("{}.{}", &digits[..dp as usize], &digits[dp as usize..])
    }
}

/// encoding/json's float64 encoding (ES6 number formatting).
pub fn json_float(f: f64) -> String {
    if !f.is_finite() {
        return "null".into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let abs = f.abs();
    let (digits, exp) = shortest_digits(f);
    let mut out = String::new();
    if f < 0.0 {
        out.push('-');
    }
    if !(1e-6..1e21).contains(&abs) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        out.push_str(&exp.abs().to_string());
    } else {
        out.push_str(&plain_decimal(&digits, exp));
    }
    out
}

/// How a decoded Go value prints: JSON integers are int64, everything else numeric is float64.
pub fn number(n: &serde_json::Number, json: bool) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    if json { json_float(f) } else { float(f) }
}

/// json.Marshal of a decoded value (sorted keys, HTML-safe escaping).
pub fn json(v: &Value) -> String {
    json_at(v, 0)
}

fn json_at(v: &Value, depth: usize) -> String {
    if depth > MAX_DEPTH {
        return "null".into();
    }
    let json = |v: &Value| json_at(v, depth + 1);
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number(n, true),
        Value::String(s) => json_string(s),
        Value::Array(a) => format!("[{}]", a.iter().map(&json).collect::<Vec<_>>().join(",")),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| {
                    format!(
                        "{}:{}",
                        json_string(k),
                        m.get(*k).map(&json).unwrap_or_default()
                    )
                })
                .collect();
            format!("{{{}}}", parts.join(","))
        }
    }
}

pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quoting_and_numbers_print_as_go_does() {
        assert_eq!(quote("a\"b\n\u{200b}é"), "\"a\\\"b\\n\\u200bé\"");
        assert_eq!(float(1e6), "1e+06");
        assert_eq!(float(0.5), "0.5");
        assert_eq!(json_float(1e21), "1e+21");
        assert_eq!(
            json(&json!({"b": 1, "a": "<x>"})),
            "{\"a\":\"\\u003cx\\u003e\",\"b\":1}"
        );
    }
}
