//! A deterministic YAML *emitter* that writes the bytes go-yaml (`go.yaml.in/yaml/v4`, v3-compatible defaults)
//! writes for the values we emit. It is used for: the cluster template, whose SHA-256 is `status.templateHash`
//! (indent 2), config-patch and manifest content re-encoded the way Omni's client does it (indent 4), and the
//! Omni simulator's `yaml_spec` renderings (indent 4). [`to_string_v2`] writes what go-yaml v2 writes under
//! `sigs.k8s.io/yaml`, as client-go's `clientcmd.Write` does for kubeconfigs. Nothing here parses YAML.
//!
//! The bytes come from two stages of go-yaml, and this module copies them in the same order:
//! * the **representer** asks for a scalar style based on what the string would read back as. Text with a newline
//!   asks for a literal block. YAML 1.1 booleans (`yes`, `off`), base-60 floats (`1:20`) and the merge key `<<` ask
//!   for single quotes. Anything that would resolve to a number, bool, null or timestamp asks for double quotes.
//!   Everything else asks for plain;
//! * the **emitter** may change that style because of the characters in the text (indicators, leading or trailing
//!   spaces, control characters). It also owns indentation, folding at 80 columns and the `---` separators.
//!
//! Port notes. The indentation rule is go-yaml's own: a collection or scalar inside a sequence item sits 2 columns
//! right of the dash. Anything else is rounded up to the next multiple of the indent, so at indent 4 a mapping
//! nested in a sequence item's mapping (which sits at 6) is at 8, not 10. Columns count characters, as go-yaml
//! does. Only the styles go-yaml picks by itself are reachable; we never ask for flow or folded (`>`) style.
//!
//! go-yaml v2 differs in three places: its indent is always 2, a block sequence that is a mapping's value starts
//! at the key's column (libyaml's "indentless" sequence), and its resolver still reads YAML 1.1's `yes`/`off`
//! words, base-60 floats and `<<` as non-strings, so those ask for double quotes; any text with a newline asks for
//! a literal block.

use std::cmp::Ordering;

/// A YAML value to emit. Maps keep their insertion order (the caller sorts when it must).
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Null,
    Bool(bool),
    /// A number already formatted (integer text such as `6443`, or a float such as `1.5`); emitted plain.
    Number(String),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(String, Node)>),
}

impl Node {
    /// A JSON value as a node: object keys sorted with `natural_cmp`; integers kept as integers (never `1e+06`,
    /// unlike the Go operator); floats with Rust's shortest round-trip text, made a valid YAML float (e.g. `1e300`
    /// must still parse as a float; NaN/inf cannot occur in JSON).
    pub fn from_json(value: &serde_json::Value) -> Node {
        use serde_json::Value;
        match value {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Number(n) => Node::Number(json_number_text(n)),
            Value::String(s) => Node::Str(s.clone()),
            Value::Array(items) => Node::Seq(items.iter().map(Node::from_json).collect()),
            Value::Object(map) => {
                let entries = map
                    .iter()
                    .map(|(k, v)| (k.clone(), Node::from_json(v)))
                    .collect();
                Node::Map(sort_by_natural_key(entries))
            }
        }
    }
}

fn json_number_text(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        i.to_string()
    } else if let Some(u) = n.as_u64() {
        u.to_string()
    } else if let Some(f) = n.as_f64() {
        yaml_float_text(f)
    } else {
        // Unreachable without serde_json's arbitrary-precision feature; its own text is the best we have.
        n.to_string()
    }
}

/// Rust's shortest round-trip text for `f` (`Debug`: `1.5`, `1e300`, `1e-7`), with the exponent form rewritten as
/// `1.0e+300` / `1.0e-7`. go-yaml and YAML 1.2 read `1e300` as a float already. YAML 1.1 readers need a dot and a
/// signed exponent, and with both the text is a float to every reader.
fn yaml_float_text(f: f64) -> String {
    let text = format!("{f:?}");
    let Some((mantissa, exponent)) = text.split_once('e') else {
        return text;
    };
    let mantissa = if mantissa.contains('.') {
        mantissa.to_owned()
    } else {
        format!("{mantissa}.0")
    };
    let exponent = if exponent.starts_with('-') {
        exponent.to_owned()
    } else {
        format!("+{exponent}")
    };
    format!("{mantissa}e{exponent}")
}

/// Emits one or more documents with `indent` spaces per level (2 for the template, 4 for Omni content).
///
/// Documents are separated by a `---` line, with none before the first and no `...` after the last; the text ends
/// with a newline. An `indent` outside 2..=9 is treated as 2, as go-yaml's emitter does.
pub fn to_string(documents: &[Node], indent: usize) -> String {
    let best_indent = if (2..=9).contains(&indent) { indent } else { 2 };
    emit(Emitter::new(best_indent, Dialect::V3), documents)
}

/// Emits documents as go-yaml v2 does (what `sigs.k8s.io/yaml` and so client-go's `clientcmd.Write` and kubectl
/// write): indent 2, sequences in a mapping not indented, YAML 1.1 words double-quoted.
pub fn to_string_v2(documents: &[Node]) -> String {
    emit(Emitter::new(2, Dialect::V2), documents)
}

fn emit(mut emitter: Emitter, documents: &[Node]) -> String {
    for (i, document) in documents.iter().enumerate() {
        emitter.document(document, i == 0);
    }
    emitter.out
}

/// Which go-yaml's rules apply where v2 and v3 differ.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dialect {
    V2,
    V3,
}

/// go-yaml's sort order for the keys of a `map[string]any` (`keyList.Less`):
/// * at the first rune where the strings differ, two letters compare by code point, so `B < a`;
/// * a letter and a non-letter: the non-letter sorts first. If the runes before were digits (`a1b` against `a1_`),
///   the letter sorts first;
/// * otherwise the digit runs starting there compare by value, so `a2 < a10`. Equal values put the shorter run
///   first (`a1 < a01`). A run that continues a number with a non-zero digit before the position counts from a
///   leading 1, so `12 < 100`. Runs that are still equal compare by the runes themselves;
/// * a string that is a prefix of the other sorts first (`x < x1`).
///
/// Letters are Unicode alphabetic characters. Digits are ASCII only: go-yaml's digit arithmetic (`r - '0'`) gives
/// nonsense for other decimal digits, and keys here are ASCII in practice.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    if a == b {
        Ordering::Equal
    } else if key_less(a, b) {
        Ordering::Less
    } else if key_less(b, a) {
        Ordering::Greater
    } else {
        // go-yaml's rule orders every pair of distinct strings; this keeps the result total regardless.
        a.cmp(b)
    }
}

fn key_less(a: &str, b: &str) -> bool {
    let is_digit = |c: char| c.is_ascii_digit();
    let digit = |c: char| i64::from(u32::from(c) - u32::from('0'));
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let mut digits = false;
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            digits = is_digit(ar[i]);
            continue;
        }
        let al = ar[i].is_alphabetic();
        let bl = br[i].is_alphabetic();
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return if digits { al } else { bl };
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            for j in (0..i).rev() {
                if !is_digit(ar[j]) {
                    break;
                }
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        // Go's int64 arithmetic wraps on absurdly long runs; wrapping keeps the same order.
        let mut ai = i;
        while ai < ar.len() && is_digit(ar[ai]) {
            an = an.wrapping_mul(10).wrapping_add(digit(ar[ai]));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && is_digit(br[bi]) {
            bn = bn.wrapping_mul(10).wrapping_add(digit(br[bi]));
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

/// A stable merge sort by [`natural_cmp`]. It is written out because `slice::sort_by` may panic on a comparator
/// that is not a total order, and go-yaml's rule has never been shown to be transitive for every string.
/// A strange key in a user's patch must not crash the plugin.
fn sort_by_natural_key(mut entries: Vec<(String, Node)>) -> Vec<(String, Node)> {
    if entries.len() < 2 {
        return entries;
    }
    let right = entries.split_off(entries.len() / 2);
    let mut left = sort_by_natural_key(entries).into_iter().peekable();
    let mut right = sort_by_natural_key(right).into_iter().peekable();
    let mut merged = Vec::with_capacity(left.len() + right.len());
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (Some(l), Some(r)) => natural_cmp(&l.0, &r.0) != Ordering::Greater,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        merged.extend(if take_left { left.next() } else { right.next() });
    }
    merged
}

// ---------------------------------------------------------------------------------------------------------------
// Representer: the style go-yaml asks for, from what the text would read back as.
// ---------------------------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

/// go-yaml's `stringv`. Multi-line text asks for a literal block only when it has two or more bytes and some
/// non-space character (`shouldUseLiteralStyle`): `"\n"` would be an empty-looking block. Strings that YAML 1.1
/// readers take as something else ask for single quotes. Strings the resolver types ask for double quotes.
///
/// go-yaml v2 (`stringv` there) asks for a literal block for any text with a newline, and double quotes for the
/// YAML 1.1 words, which its resolver still reads as booleans, merge keys and floats.
fn requested_style(s: &str, dialect: Dialect) -> Style {
    if s.contains('\n') {
        if dialect == Dialect::V2 || (s.len() >= 2 && s.chars().any(|c| !c.is_whitespace())) {
            Style::Literal
        } else {
            Style::Double
        }
    } else if is_base60_float(s) || is_old_bool(s) || s == "<<" {
        match dialect {
            Dialect::V2 => Style::Double,
            Dialect::V3 => Style::Single,
        }
    } else if resolves_to_str(s) {
        Style::Plain
    } else {
        Style::Double
    }
}

/// YAML 1.1 booleans that go-yaml quotes so that 1.1 readers keep them strings.
fn is_old_bool(s: &str) -> bool {
    matches!(
        s,
        "y" | "Y"
            | "yes"
            | "Yes"
            | "YES"
            | "on"
            | "On"
            | "ON"
            | "n"
            | "N"
            | "no"
            | "No"
            | "NO"
            | "off"
            | "Off"
            | "OFF"
    )
}

/// YAML 1.1 base-60 floats, `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$` (go-yaml quotes them for 1.1
/// readers although it no longer reads them).
fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    if !b.get(i).is_some_and(u8::is_ascii_digit) {
        return false;
    }
    while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while b.get(i) == Some(&b':') {
        // `[0-5]?[0-9]`: two digits when the first could be a tens digit and a second follows, else one.
        match (b.get(i + 1), b.get(i + 2)) {
            (Some(b'0'..=b'5'), Some(c)) if c.is_ascii_digit() => i += 3,
            (Some(c), _) if c.is_ascii_digit() => i += 2,
            _ => return false,
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// Plain scalars the resolver maps to a fixed value (bools, nulls, special floats, the merge key).
const RESOLVE_MAP: &[&str] = &[
    "true", "True", "TRUE", "false", "False", "FALSE", "", "~", "null", "Null", "NULL", ".nan",
    ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
    "-0", "-0.0", "<<",
];

/// Whether go-yaml's resolver (`resolve("", s)`) reads the plain scalar `s` as a string. Only the first character
/// decides what else it might be, as in go-yaml's `resolveTable`.
fn resolves_to_str(s: &str) -> bool {
    let Some(&first) = s.as_bytes().first() else {
        return false; // "" is null
    };
    let hinted = matches!(first, b'+' | b'-' | b'0'..=b'9' | b'.' | b'~' | b'<')
        || b"yYnNtTfFoO".contains(&first);
    if !hinted {
        return true;
    }
    if RESOLVE_MAP.contains(&s) {
        return false;
    }
    match first {
        b'.' => !go_parses_dot_float(s),
        b'+' | b'-' | b'0'..=b'9' => {
            if is_timestamp(s) {
                return false;
            }
            let plain = s.replace('_', "");
            !(go_parses_int(&plain) || (is_yaml_style_float(&plain) && parses_finite(&plain)))
        }
        _ => true,
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)` or `ParseUint(s, 0, 64)` succeeds (underscores already removed).
fn go_parses_int(s: &str) -> bool {
    let (negative, magnitude) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => return go_parse_uint(s).is_some(),
    };
    match go_parse_uint(magnitude) {
        Some(n) if negative => n <= 1 << 63,
        Some(n) => n <= i64::MAX.unsigned_abs(),
        None => false,
    }
}

/// Go's `strconv.ParseUint(s, 0, 64)`: `0b`, `0o`, `0x` prefixes, a bare leading `0` for octal, no sign.
fn go_parse_uint(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.is_empty() {
        return None;
    }
    let (base, digits) = if b[0] == b'0' {
        match b.get(1).map(u8::to_ascii_lowercase) {
            Some(b'b') if b.len() >= 3 => (2, &s[2..]),
            Some(b'o') if b.len() >= 3 => (8, &s[2..]),
            Some(b'x') if b.len() >= 3 => (16, &s[2..]),
            _ => (8, &s[1..]),
        }
    } else {
        (10, s)
    };
    digits.chars().try_fold(0u64, |n, c| {
        let d = c.to_digit(36).filter(|d| *d < base)?;
        n.checked_mul(u64::from(base))?.checked_add(u64::from(d))
    })
}

/// go-yaml's `yamlStyleFloat`: `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn is_yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let digits_from = |mut i: usize| {
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    };
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    if b.get(i) == Some(&b'.') {
        let end = digits_from(i + 1);
        if end == i + 1 {
            return false;
        }
        i = end;
    } else {
        let end = digits_from(i);
        if end == i {
            return false;
        }
        i = end;
        if b.get(i) == Some(&b'.') {
            i = digits_from(i + 1);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let end = digits_from(i);
        if end == i {
            return false;
        }
        i = end;
    }
    i == b.len()
}

/// Go's `ParseFloat` succeeds, which for syntactically valid decimal text means it does not overflow (Go reports
/// a range error where Rust returns infinity, and go-yaml then keeps the text a string).
fn parses_finite(s: &str) -> bool {
    s.parse::<f64>().is_ok_and(f64::is_finite)
}

/// Go's `strconv.ParseFloat` on a string starting with `.`, which go-yaml tries without removing underscores. Go
/// accepts underscores between digits.
fn go_parses_dot_float(s: &str) -> bool {
    let mut saw_digit = false;
    let mut saw_underscore = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            saw_digit = true;
            saw_underscore = false;
        } else if c == '_' {
            if !saw_digit {
                return false;
            }
            saw_digit = false;
            saw_underscore = true;
        } else if saw_underscore {
            return false;
        } else {
            saw_digit = false;
        }
    }
    if saw_underscore {
        return false;
    }
    let stripped = s.replace('_', "");
    is_yaml_style_float(&stripped) && parses_finite(&stripped)
}

/// go-yaml's `parseTimestamp`: four digits and `-`, then one of Go's layouts `2006-1-2T15:4:5.999999999Z07:00`
/// (also with `t`), `2006-1-2 15:4:5.999999999` or `2006-1-2`, with `time.Parse`'s one-or-two-digit fields and
/// range checks.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.iter().take_while(|c| c.is_ascii_digit()).count() != 4 || b.get(4) != Some(&b'-') {
        return false;
    }
    let Some(rest) = go_date(b) else {
        return false;
    };
    match rest.first() {
        None => true,
        Some(b'T' | b't') => go_time(&rest[1..])
            .and_then(go_zone)
            .is_some_and(<[u8]>::is_empty),
        // The layout's space matches one or more spaces (Go's `cutspace`; tabs do not count).
        Some(b' ') => {
            let spaces = rest.iter().take_while(|c| **c == b' ').count();
            go_time(&rest[spaces..]).is_some_and(<[u8]>::is_empty)
        }
        Some(_) => false,
    }
}

/// `2006-1-2` with a valid day of the month; returns what follows.
fn go_date(b: &[u8]) -> Option<&[u8]> {
    let year: u32 = std::str::from_utf8(&b[..4]).ok()?.parse().ok()?;
    let rest = b[4..].strip_prefix(b"-")?;
    let (month, rest) = go_getnum(rest)?;
    let rest = rest.strip_prefix(b"-")?;
    let (day, rest) = go_getnum(rest)?;
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    (1..=days).contains(&day).then_some(rest)
}

/// `15:4:5.999999999`: hour, minute, second of one or two digits, then optional fractional seconds.
fn go_time(b: &[u8]) -> Option<&[u8]> {
    let (hour, rest) = go_getnum(b)?;
    let (minute, rest) = go_getnum(rest.strip_prefix(b":")?)?;
    let (second, mut rest) = go_getnum(rest.strip_prefix(b":")?)?;
    if hour >= 24 || minute >= 60 || second >= 60 {
        return None;
    }
    if matches!(rest.first(), Some(b'.' | b',')) && rest.get(1).is_some_and(u8::is_ascii_digit) {
        let digits = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
        rest = &rest[1 + digits..];
    }
    Some(rest)
}

/// `Z07:00`: `Z`, or a sign, two-digit hours (≤ 24), `:` and two-digit minutes (≤ 60).
fn go_zone(b: &[u8]) -> Option<&[u8]> {
    if let Some(rest) = b.strip_prefix(b"Z") {
        return Some(rest);
    }
    let zone = b.get(..6)?;
    let two = |d: &[u8]| {
        d.iter()
            .all(u8::is_ascii_digit)
            .then(|| u32::from(d[0] - b'0') * 10 + u32::from(d[1] - b'0'))
    };
    let (hours, minutes) = (two(&zone[1..3])?, two(&zone[4..6])?);
    let valid = matches!(zone[0], b'+' | b'-') && zone[3] == b':' && hours <= 24 && minutes <= 60;
    valid.then_some(&b[6..])
}

/// Go's `getnum(s, false)`: one digit, or two when the second is a digit too.
fn go_getnum(b: &[u8]) -> Option<(u32, &[u8])> {
    let first = u32::from(b.first().filter(|c| c.is_ascii_digit())? - b'0');
    match b.get(1).filter(|c| c.is_ascii_digit()) {
        Some(second) => Some((first * 10 + u32::from(second - b'0'), &b[2..])),
        None => Some((first, &b[1..])),
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Emitter: the structural checks, indentation and line breaking of go-yaml's `emitter.go`.
// ---------------------------------------------------------------------------------------------------------------

/// go-yaml's default preferred line width; plain and quoted scalars break at a space once past it.
const BEST_WIDTH: usize = 80;

/// Longest key (in bytes) go-yaml writes as `key: value`; longer ones use the explicit `? key` form.
const MAX_SIMPLE_KEY_LEN: usize = 128;

fn is_line_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// YAML's printable set as go-yaml tests it: 4-byte UTF-8 characters (emoji) are not printable to it, so they end
/// up as `\U` escapes in double quotes.
fn is_printable(c: char) -> bool {
    matches!(c, '\n' | '\u{20}'..='\u{7E}' | '\u{A0}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}')
        && c != '\u{FEFF}'
}

/// What go-yaml's `analyzeScalar` finds out about a scalar: which styles can hold it.
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

impl Analysis {
    fn of(value: &[char]) -> Analysis {
        if value.is_empty() {
            return Analysis {
                multiline: false,
                block_plain_allowed: true,
                single_quoted_allowed: true,
                block_allowed: false,
            };
        }
        let starts_with = |prefix: &str| value.iter().copied().take(3).eq(prefix.chars());
        let mut block_indicators = value.len() >= 3 && (starts_with("---") || starts_with("..."));
        let (mut line_breaks, mut special_characters, mut tab_characters) = (false, false, false);
        let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
            (false, false, false, false);
        let (mut break_space, mut space_break) = (false, false);
        let (mut previous_space, mut previous_break) = (false, false);
        let mut preceded_by_whitespace = true;
        let last = value.len() - 1;
        for (i, &c) in value.iter().enumerate() {
            let followed_by_whitespace = value.get(i + 1).is_none_or(|n| matches!(n, ' ' | '\t'));
            if i == 0 {
                match c {
                    '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\''
                    | '"' | '%' | '@' | '`' => {
                        block_indicators = true;
                    }
                    '?' | ':' | '-' if followed_by_whitespace => block_indicators = true,
                    _ => {}
                }
            } else {
                match c {
                    ':' if followed_by_whitespace => block_indicators = true,
                    '#' if preceded_by_whitespace => block_indicators = true,
                    _ => {}
                }
            }
            if c == '\t' {
                tab_characters = true;
            } else if !is_printable(c) {
                special_characters = true;
            }
            if c == ' ' {
                leading_space |= i == 0;
                trailing_space |= i == last;
                break_space |= previous_break;
                (previous_space, previous_break) = (true, false);
            } else if is_line_break(c) {
                line_breaks = true;
                leading_break |= i == 0;
                trailing_break |= i == last;
                space_break |= previous_space;
                (previous_space, previous_break) = (false, true);
            } else {
                (previous_space, previous_break) = (false, false);
            }
            preceded_by_whitespace = matches!(c, ' ' | '\t' | '\0') || is_line_break(c);
        }
        let unquotable = space_break || tab_characters || special_characters;
        Analysis {
            multiline: line_breaks,
            block_plain_allowed: !(leading_space
                || leading_break
                || trailing_space
                || trailing_break
                || break_space
                || unquotable
                || line_breaks
                || block_indicators),
            single_quoted_allowed: !(break_space || unquotable),
            block_allowed: !(trailing_space || space_break || special_characters),
        }
    }
}

/// go-yaml's `selectScalarStyle` (block context): plain falls back to single quotes (its legacy quote
/// preference), single quotes and literal blocks fall back to double quotes.
fn select_style(requested: Style, analysis: &Analysis, simple_key: bool, empty: bool) -> Style {
    let mut style = requested;
    if simple_key && analysis.multiline {
        style = Style::Double;
    }
    if style == Style::Plain && (!analysis.block_plain_allowed || (empty && simple_key)) {
        style = Style::Single;
    }
    if style == Style::Single && !analysis.single_quoted_allowed {
        style = Style::Double;
    }
    if style == Style::Literal && (!analysis.block_allowed || simple_key) {
        style = Style::Double;
    }
    style
}

/// Where a node sits. go-yaml decides indentation from the state on top of its stack, and the only state that
/// changes the rule is "inside a sequence item". Keys also matter because they must not break across lines.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    Root,
    SeqItem,
    SimpleKey,
    ComplexKey,
    Value,
}

/// The emitter's output and cursor state. The field names follow go-yaml so the port can be checked line by line.
struct Emitter {
    out: String,
    best_indent: usize,
    dialect: Dialect,
    /// Current indentation column; `None` at document level (go-yaml's -1).
    indent: Option<usize>,
    column: usize,
    /// Whether the last character written was whitespace (so an indicator needs no space before it).
    whitespace: bool,
    /// Whether only indentation and indicators (`-`, `?`, `:`) are on the current line so far.
    indention: bool,
}

impl Emitter {
    fn new(best_indent: usize, dialect: Dialect) -> Emitter {
        Emitter {
            out: String::new(),
            best_indent,
            dialect,
            indent: None,
            column: 0,
            whitespace: true,
            indention: true,
        }
    }

    fn document(&mut self, node: &Node, first: bool) {
        // go-yaml makes every document after the first explicit and always ends the `---` line.
        if !first {
            self.write_indent();
            self.write_indicator("---", true, false, false);
            self.write_indent();
        }
        self.node(node, Slot::Root);
        self.write_indent();
    }

    fn node(&mut self, node: &Node, slot: Slot) {
        match node {
            Node::Null => self.scalar("null", Style::Plain, slot),
            Node::Bool(b) => self.scalar(if *b { "true" } else { "false" }, Style::Plain, slot),
            Node::Number(text) => self.scalar(text, Style::Plain, slot),
            Node::Str(s) => self.scalar(s, requested_style(s, self.dialect), slot),
            // go-yaml writes an empty collection in flow style whatever style was asked for.
            Node::Seq(items) if items.is_empty() => self.empty_flow("[", "]"),
            Node::Map(entries) if entries.is_empty() => self.empty_flow("{", "}"),
            Node::Seq(items) => self.block_sequence(items, slot),
            Node::Map(entries) => self.block_mapping(entries, slot),
        }
    }

    fn empty_flow(&mut self, open: &str, close: &str) {
        self.write_indicator(open, true, true, false);
        self.write_indicator(close, false, false, false);
    }

    fn block_sequence(&mut self, items: &[Node], slot: Slot) {
        // libyaml's indentless sequence (go-yaml v2): a mapping's value on the key's line keeps the key's column.
        let outer = if self.dialect == Dialect::V2 && slot == Slot::Value && !self.indention {
            self.indent
        } else {
            self.increase_indent(false, slot)
        };
        for item in items {
            self.write_indent();
            self.write_indicator("-", true, false, true);
            self.node(item, Slot::SeqItem);
        }
        self.indent = outer;
    }

    fn block_mapping(&mut self, entries: &[(String, Node)], slot: Slot) {
        let outer = self.increase_indent(false, slot);
        for (key, value) in entries {
            self.write_indent();
            let simple = key.len() <= MAX_SIMPLE_KEY_LEN && !key.chars().any(is_line_break);
            if simple {
                self.scalar(key, requested_style(key, self.dialect), Slot::SimpleKey);
                self.write_indicator(":", false, false, false);
            } else {
                self.write_indicator("?", true, false, true);
                self.scalar(key, requested_style(key, self.dialect), Slot::ComplexKey);
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            self.node(value, Slot::Value);
        }
        self.indent = outer;
    }

    fn scalar(&mut self, value: &str, requested: Style, slot: Slot) {
        let chars: Vec<char> = value.chars().collect();
        let simple_key = slot == Slot::SimpleKey;
        let style = select_style(
            requested,
            &Analysis::of(&chars),
            simple_key,
            chars.is_empty(),
        );
        let outer = self.increase_indent(true, slot);
        match style {
            Style::Plain => self.write_plain(&chars, !simple_key),
            Style::Single => self.write_single_quoted(&chars, !simple_key),
            Style::Double => self.write_double_quoted(&chars, !simple_key),
            Style::Literal => {
                // The parser reads the indicator relative to the enclosing collection's column (the document's
                // -1 counts as 0): the distance to where the content goes.
                let content = self.indent.unwrap_or(0);
                self.write_literal(&chars, content - outer.unwrap_or(0).min(content));
            }
        }
        self.indent = outer;
    }

    /// go-yaml's `increaseIndentCompact` (without compact sequences): a sequence item's content sits 2 right of
    /// the dash; anything else moves to the next multiple of the indent. Returns the indentation to restore.
    fn increase_indent(&mut self, flow: bool, slot: Slot) -> Option<usize> {
        let outer = self.indent;
        self.indent = Some(match outer {
            None if flow => self.best_indent,
            None => 0,
            Some(indent) if slot == Slot::SeqItem => indent + 2,
            Some(indent) => self.best_indent * ((indent + self.best_indent) / self.best_indent),
        });
        outer
    }

    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
        self.indention = true;
    }

    /// A line break from the value itself: `\n` as the configured break, the others (`\r`, NEL, LS, PS) as
    /// written.
    fn write_line_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
            self.indention = true;
        }
    }

    /// Starts a new line at the current indentation unless the cursor is already there.
    fn write_indent(&mut self) {
        let indent = self.indent.unwrap_or(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
    }

    fn write_indicator(
        &mut self,
        indicator: &str,
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        for c in indicator.chars() {
            self.put(c);
        }
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    /// Folding (`allow_breaks`, never for keys): a space becomes a line break when the line is already past the
    /// width and the next character is not another space.
    fn write_plain(&mut self, value: &[char], allow_breaks: bool) {
        if !value.is_empty() && !self.whitespace {
            self.put(' ');
        }
        let (mut spaces, mut breaks) = (false, false);
        for (i, &c) in value.iter().enumerate() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && value.get(i + 1) != Some(&' ')
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_line_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_line_break(c);
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                (spaces, breaks) = (false, false);
            }
        }
        if !value.is_empty() {
            self.whitespace = false;
        }
        self.indention = false;
    }

    fn write_single_quoted(&mut self, value: &[char], allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        let (mut spaces, mut breaks) = (false, false);
        let last = value.len().saturating_sub(1);
        for (i, &c) in value.iter().enumerate() {
            if c == ' ' {
                let foldable = i > 0 && i < last && value.get(i + 1) != Some(&' ');
                if allow_breaks && !spaces && self.column > BEST_WIDTH && foldable {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_line_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_line_break(c);
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                (spaces, breaks) = (false, false);
            }
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_double_quoted(&mut self, value: &[char], allow_breaks: bool) {
        self.write_indicator("\"", true, false, false);
        let mut spaces = false;
        let last = value.len().saturating_sub(1);
        for (i, &c) in value.iter().enumerate() {
            if !is_printable(c) || c == '\u{FEFF}' || is_line_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                match c {
                    '\0' => self.put('0'),
                    '\u{07}' => self.put('a'),
                    '\u{08}' => self.put('b'),
                    '\t' => self.put('t'),
                    '\n' => self.put('n'),
                    '\u{0B}' => self.put('v'),
                    '\u{0C}' => self.put('f'),
                    '\r' => self.put('r'),
                    '\u{1B}' => self.put('e'),
                    '"' => self.put('"'),
                    '\\' => self.put('\\'),
                    '\u{85}' => self.put('N'),
                    '\u{A0}' => self.put('_'),
                    '\u{2028}' => self.put('L'),
                    '\u{2029}' => self.put('P'),
                    _ => {
                        let code = u32::from(c);
                        let (letter, width) = match code {
                            0..=0xFF => ('x', 2),
                            0x100..=0xFFFF => ('u', 4),
                            _ => ('U', 8),
                        };
                        self.put(letter);
                        for digit in format!("{code:0width$X}").chars() {
                            self.put(digit);
                        }
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks && !spaces && self.column > BEST_WIDTH && i > 0 && i < last {
                    self.write_indent();
                    // A break folds into one space; an escaped space keeps the ones after it from being trimmed.
                    if value.get(i + 1) == Some(&' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    /// `|` with go-yaml's hints: an indentation indicator when the text starts with a space, then `-` without a
    /// trailing newline, `+` with more than one, nothing with exactly one. `hint` is how far right of the
    /// enclosing collection the content sits.
    ///
    /// Where go-yaml writes what its own parser (and libyaml's) refuses or reads back changed, we write what they
    /// read back as it was, so that a config patch holding such a string reaches Omni as it is. These places were
    /// found by `fuzz_template_yaml`; none changes the bytes (or the template hash) of a template
    /// go-yaml reads back as written:
    /// * go-yaml always writes the configured indent as the indicator; inside a sequence item at indent 4 the
    ///   content sits 2 right of the dash, so the parser looks for it 2 columns too far ("did not find expected
    ///   '-' indicator"). We write the real distance (the same number everywhere at indent 2);
    /// * go-yaml writes no indicator for text that starts with a tab ("found a tab character where an indentation
    ///   space is expected"), nor (since go-yaml issue 65) for text whose first line is empty, so the spaces that
    ///   start the first line with text were read as indentation and lost. We write one for both.
    fn write_literal(&mut self, value: &[char], hint: usize) {
        self.write_indicator("|", true, false, false);
        let starts_blank = |c: Option<&char>| matches!(c, Some(' ' | '\t'));
        let first_text = value.iter().find(|c| !is_line_break(**c));
        if starts_blank(value.first())
            || (value.first().is_some_and(|c| is_line_break(*c)) && starts_blank(first_text))
        {
            self.write_indicator(&hint.to_string(), false, false, false);
        }
        let chomp = match value {
            [] => Some("-"),
            [.., last] if !is_line_break(*last) => Some("-"),
            [_] => Some("+"),
            [.., before, _] if is_line_break(*before) => Some("+"),
            _ => None,
        };
        if let Some(chomp) = chomp {
            self.write_indicator(chomp, false, false, false);
        }
        self.put_break();
        self.whitespace = true;
        let mut breaks = true;
        for &c in value {
            if is_line_break(c) {
                self.write_line_break(c);
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn s(text: &str) -> Node {
        Node::Str(text.to_owned())
    }

    fn map(entries: &[(&str, Node)]) -> Node {
        Node::Map(
            entries
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        )
    }

    fn num(text: &str) -> Node {
        Node::Number(text.to_owned())
    }

    /// `k: <value>` at indent 2, the way every scalar-quoting case below is checked.
    fn as_value(text: &str) -> String {
        to_string(&[map(&[("k", s(text))])], 2)
    }

    fn check_values(cases: &[(&str, &str)]) {
        for (input, expected) in cases {
            assert_eq!(
                as_value(input),
                format!("k: {expected}\n"),
                "value {input:?}"
            );
        }
    }

    #[test]
    fn strings_that_would_read_back_as_another_type_are_double_quoted() {
        check_values(&[
            ("2", r#""2""#),
            ("-3", r#""-3""#),
            ("+1", r#""+1""#),
            ("true", r#""true""#),
            ("True", r#""True""#),
            ("FALSE", r#""FALSE""#),
            ("0755", r#""0755""#),
            ("08", r#""08""#),
            ("1_000", r#""1_000""#),
            ("1.0", r#""1.0""#),
            ("1.", r#""1.""#),
            (".5", r#"".5""#),
            ("-.5", r#""-.5""#),
            ("1e3", r#""1e3""#),
            ("0x1F", r#""0x1F""#),
            ("0o17", r#""0o17""#),
            ("0b101", r#""0b101""#),
            ("18446744073709551615", r#""18446744073709551615""#),
            ("~", r#""~""#),
            ("null", r#""null""#),
            ("NULL", r#""NULL""#),
            (".inf", r#"".inf""#),
            ("-.Inf", r#""-.Inf""#),
            (".NaN", r#"".NaN""#),
            ("-0", r#""-0""#),
            ("2024-01-01", r#""2024-01-01""#),
            ("2024-1-2", r#""2024-1-2""#),
            ("2024-02-29", r#""2024-02-29""#),
            (
                "2001-12-14t21:59:43.10-05:00",
                r#""2001-12-14t21:59:43.10-05:00""#,
            ),
            ("2001-12-14T21:59:43Z", r#""2001-12-14T21:59:43Z""#),
            ("2001-12-14 21:59:43.10", r#""2001-12-14 21:59:43.10""#),
            ("", r#""""#),
        ]);
    }

    /// Go's `time.Parse` layouts as go-yaml uses them: one- or two-digit fields, checked ranges, one or more
    /// spaces for the layout's space, and an offset only in the `T` layouts.
    #[test]
    fn timestamps_are_recognised_as_go_yaml_recognises_them() {
        for yes in [
            "2024-1-2",
            "2024-12-31",
            "2000-02-29",
            "2024-1-2   3:4:5",
            "2024-1-2 03:04:05,5",
            "2024-1-2T3:4:5+24:00",
        ] {
            assert!(is_timestamp(yes), "{yes}");
        }
        for no in [
            "2024-1-2 \t3:4:5",
            "2024-1-2T3:4:5",
            "2024-1-2 24:00:00",
            "1900-02-29",
            "2024-001-2",
            "20240-1-2",
        ] {
            assert!(!is_timestamp(no), "{no:?}");
        }
    }

    #[test]
    fn yaml_1_1_booleans_base_60_floats_and_indicator_strings_are_single_quoted() {
        check_values(&[
            ("y", "'y'"),
            ("Y", "'Y'"),
            ("n", "'n'"),
            ("N", "'N'"),
            ("yes", "'yes'"),
            ("Yes", "'Yes'"),
            ("YES", "'YES'"),
            ("no", "'no'"),
            ("No", "'No'"),
            ("NO", "'NO'"),
            ("on", "'on'"),
            ("On", "'On'"),
            ("ON", "'ON'"),
            ("off", "'off'"),
            ("Off", "'Off'"),
            ("OFF", "'OFF'"),
            ("1:20", "'1:20'"),
            ("12:30:00", "'12:30:00'"),
            ("<<", "'<<'"),
            ("key: value", "'key: value'"),
            ("key:", "'key:'"),
            ("a #b", "'a #b'"),
            (" x", "' x'"),
            ("x ", "'x '"),
            ("*x", "'*x'"),
            ("- x", "'- x'"),
            ("-", "'-'"),
            ("&x", "'&x'"),
            ("!x", "'!x'"),
            ("|x", "'|x'"),
            (">x", "'>x'"),
            ("%x", "'%x'"),
            ("@x", "'@x'"),
            ("`x", "'`x'"),
            ("{x", "'{x'"),
            ("}x", "'}x'"),
            ("[x", "'[x'"),
            ("]x", "']x'"),
            (",x", "',x'"),
            ("#x", "'#x'"),
            ("? x", "'? x'"),
            (": x", "': x'"),
            ("---", "'---'"),
            ("...", "'...'"),
            ("'x", "'''x'"),
            ("\"x", "'\"x'"),
            ("it's: here", "'it''s: here'"),
        ]);
    }

    #[test]
    fn strings_without_another_type_or_an_indicator_stay_plain() {
        check_values(&[
            ("a:b", "a:b"),
            ("~x", "~x"),
            ("-x", "-x"),
            ("?x", "?x"),
            (":x", ":x"),
            ("a#b", "a#b"),
            ("a,b", "a,b"),
            ("a]", "a]"),
            ("it's", "it's"),
            ("hello world", "hello world"),
            ("v1.35.0", "v1.35.0"),
            ("1.2.3", "1.2.3"),
            ("/dev/nvme0n1", "/dev/nvme0n1"),
            ("yesno", "yesno"),
            ("nullable", "nullable"),
            ("2024-13-01", "2024-13-01"),
            ("2023-02-29", "2023-02-29"),
            ("0x", "0x"),
            ("1e400", "1e400"), // Go's ParseFloat reports overflow, so go-yaml keeps it a string
            ("éclair", "éclair"),
            (
                "11111111-1111-4111-8111-111111111111",
                "11111111-1111-4111-8111-111111111111",
            ),
        ]);
    }

    #[test]
    fn characters_single_quotes_cannot_hold_are_escaped_in_double_quotes() {
        check_values(&[
            ("a\tb", r#""a\tb""#),
            ("\t", r#""\t""#),
            ("\u{0}", r#""\0""#),
            ("a\rb", r#""a\rb""#),
            ("\u{7}\u{8}\u{b}\u{c}\u{1b}", r#""\a\b\v\f\e""#),
            ("\u{1}", r#""\x01""#),
            ("\u{7f}", r#""\x7F""#),
            ("\u{85}", r#""\N""#),
            ("\u{feff}x", r#""\uFEFFx""#),
            ("😀", r#""\U0001F600""#),
            (
                "tab\t\"quoted\" back\\slash",
                r#""tab\t\"quoted\" back\\slash""#,
            ),
        ]);
    }

    #[test]
    fn map_keys_follow_the_same_quoting_rules() {
        let doc = map(&[
            ("1", s("a")),
            ("true", s("b")),
            ("yes", s("c")),
            ("a b", s("d")),
            ("", s("e")),
            ("a: b", s("f")),
        ]);
        assert_eq!(
            to_string(&[doc], 2),
            "\"1\": a\n\"true\": b\n'yes': c\na b: d\n\"\": e\n'a: b': f\n"
        );
    }

    #[test]
    fn scalars_other_than_strings_are_plain() {
        let doc = map(&[
            ("port", num("6443")),
            ("ratio", num("1.5")),
            ("locked", Node::Bool(true)),
            ("none", Node::Null),
        ]);
        assert_eq!(
            to_string(&[doc], 2),
            "port: 6443\nratio: 1.5\nlocked: true\nnone: null\n"
        );
        assert_eq!(to_string(&[Node::Bool(false)], 2), "false\n");
    }

    #[test]
    fn block_sequences_are_indented_under_their_key_at_indent_2() {
        let manifest = map(&[
            ("name", s("a")),
            ("mode", s("full")),
            ("inline", Node::Seq(vec![])),
        ]);
        let doc = map(&[
            ("machines", Node::Seq(vec![s("id1"), s("id2")])),
            (
                "kubernetes",
                map(&[
                    ("version", s("v1.35.0")),
                    ("manifests", Node::Seq(vec![manifest])),
                ]),
            ),
        ]);
        assert_eq!(
            to_string(&[doc], 2),
            "machines:\n  - id1\n  - id2\nkubernetes:\n  version: v1.35.0\n  manifests:\n    - name: a\n      mode: full\n      inline: []\n"
        );
    }

    #[test]
    fn block_sequences_are_indented_under_their_key_at_indent_4() {
        let doc = map(&[
            ("key", Node::Seq(vec![s("a"), s("b")])),
            ("nested", map(&[("list", Node::Seq(vec![num("1")]))])),
        ]);
        assert_eq!(
            to_string(&[doc], 4),
            "key:\n    - a\n    - b\nnested:\n    list:\n        - 1\n"
        );
    }

    /// go-yaml puts a mapping that is a sequence item on the dash line, its keys 2 columns right of the dash at
    /// any indent: `yaml_emitter_emit_block_mapping_key` raises the indent with the sequence-item rule (+2), and
    /// `write_indent` then only pads after `- ` because the dash counts as indentation. So at indent 4 it is
    /// `- name: a` / `  mode: full`, never `-   name: a`. What sits under such a key rounds up to the next
    /// multiple of 4: from column 6 to 8.
    #[test]
    fn mappings_in_sequence_items_start_on_the_dash_line() {
        let item = map(&[("name", s("a")), ("mode", s("full"))]);
        assert_eq!(
            to_string(&[Node::Seq(vec![item.clone()])], 2),
            "- name: a\n  mode: full\n"
        );
        assert_eq!(
            to_string(&[Node::Seq(vec![item.clone()])], 4),
            "- name: a\n  mode: full\n"
        );

        let item = map(&[
            ("b", num("1")),
            ("c", map(&[("d", num("2"))])),
            ("e", Node::Seq(vec![s("x")])),
        ]);
        let doc = map(&[("a", Node::Seq(vec![item]))]);
        assert_eq!(
            to_string(std::slice::from_ref(&doc), 4),
            "a:\n    - b: 1\n      c:\n        d: 2\n      e:\n        - x\n"
        );
        assert_eq!(
            to_string(&[doc], 2),
            "a:\n  - b: 1\n    c:\n      d: 2\n    e:\n      - x\n"
        );
    }

    #[test]
    fn nested_sequences_share_the_dash_line() {
        let doc = Node::Seq(vec![
            Node::Seq(vec![num("1"), num("2")]),
            Node::Seq(vec![num("3")]),
        ]);
        assert_eq!(
            to_string(std::slice::from_ref(&doc), 2),
            "- - 1\n  - 2\n- - 3\n"
        );
        assert_eq!(
            to_string(std::slice::from_ref(&doc), 4),
            "- - 1\n  - 2\n- - 3\n"
        );
        assert_eq!(
            to_string(&[map(&[("k", doc)])], 4),
            "k:\n    - - 1\n      - 2\n    - - 3\n"
        );
    }

    #[test]
    fn empty_collections_are_written_in_flow_style() {
        let doc = map(&[
            ("features", map(&[])),
            ("inline", Node::Seq(vec![])),
            ("patches", Node::Seq(vec![map(&[])])),
            ("nested", Node::Seq(vec![Node::Seq(vec![])])),
        ]);
        assert_eq!(
            to_string(&[doc], 2),
            "features: {}\ninline: []\npatches:\n  - {}\nnested:\n  - []\n"
        );
        assert_eq!(to_string(&[map(&[])], 2), "{}\n");
        assert_eq!(to_string(&[Node::Seq(vec![])], 4), "[]\n");
    }

    #[test]
    fn documents_are_separated_by_a_dashes_line_only() {
        let docs = [
            map(&[("kind", s("Cluster"))]),
            map(&[("kind", s("ControlPlane"))]),
            map(&[("kind", s("Workers"))]),
        ];
        assert_eq!(
            to_string(&docs, 2),
            "kind: Cluster\n---\nkind: ControlPlane\n---\nkind: Workers\n"
        );
        assert_eq!(to_string(&[s("a"), s("b")], 2), "a\n---\nb\n");
        assert_eq!(
            to_string(&[s("a\n"), map(&[("k", s("v"))])], 2),
            "|\n  a\n---\nk: v\n"
        );
        assert_eq!(to_string(&[], 2), "");
    }

    #[test]
    fn multi_line_strings_are_literal_blocks_with_go_yaml_chomping() {
        check_values(&[
            ("line1\nline2\n", "|\n  line1\n  line2"),
            ("line1\nline2", "|-\n  line1\n  line2"),
            ("line1\n\n", "|+\n  line1\n"),
            ("a\n\nb\n", "|\n  a\n\n  b"),
            ("\nleading break", "|-\n\n  leading break"),
            (" lead\nx", "|2-\n   lead\n  x"),
            ("a\n\tb", "|-\n  a\n  \tb"),
        ]);
        assert_eq!(
            to_string(&[map(&[("k", s(" lead\nx\n"))])], 4),
            "k: |4\n     lead\n    x\n"
        );
        assert_eq!(
            to_string(&[map(&[("a", map(&[("b", s("x\ny\n"))]))])], 4),
            "a:\n    b: |\n        x\n        y\n"
        );
    }

    /// Where go-yaml's indentation indicator would make the text unreadable or change it, ours keeps it (found by
    /// `fuzz_template_yaml`); each answer is read back with a YAML parser.
    #[test]
    fn literal_blocks_go_yaml_would_garble_read_back_as_written() {
        let cases = [
            // go-yaml writes `|4-` here, 2 columns past the content.
            (
                map(&[("k", Node::Seq(vec![s(" a\nb")]))]),
                4,
                "k:\n    - |2-\n       a\n      b\n",
            ),
            // go-yaml writes no indicator: the tab would be read as indentation.
            (map(&[("k", s("\ta\nb"))]), 2, "k: |2-\n  \ta\n  b\n"),
            // go-yaml writes no indicator: the first line's spaces would be read as indentation.
            (map(&[("k", s("\n  a"))]), 2, "k: |2-\n\n    a\n"),
            // Unchanged: go-yaml's bytes where it reads them back as written.
            (map(&[("k", s("\na"))]), 2, "k: |-\n\n  a\n"),
            (map(&[("k", s(" a\nb"))]), 4, "k: |4-\n     a\n    b\n"),
        ];
        for (node, indent, want) in cases {
            let yaml = to_string(std::slice::from_ref(&node), indent);
            assert_eq!(yaml, want);
            let read: serde_json::Value = yaml_serde::from_str(&yaml).expect("parses");
            let Node::Map(entries) = &node else {
                unreachable!()
            };
            let written = match &entries[0].1 {
                Node::Str(text) => json!(text),
                Node::Seq(items) => json!(
                    items
                        .iter()
                        .map(|i| match i {
                            Node::Str(t) => t.clone(),
                            _ => String::new(),
                        })
                        .collect::<Vec<_>>()
                ),
                _ => unreachable!(),
            };
            assert_eq!(read["k"], written, "{yaml}");
        }
    }

    #[test]
    fn literal_blocks_in_sequences_and_as_documents() {
        assert_eq!(
            to_string(&[Node::Seq(vec![s("a\nb\n")])], 2),
            "- |\n  a\n  b\n"
        );
        assert_eq!(
            to_string(&[map(&[("k", Node::Seq(vec![s("a\nb")]))])], 4),
            "k:\n    - |-\n      a\n      b\n"
        );
        assert_eq!(to_string(&[s("text\n")], 2), "|\n  text\n");
        assert_eq!(
            to_string(&[s("machine:\n  install: {}\n")], 4),
            "|\n    machine:\n      install: {}\n"
        );
    }

    #[test]
    fn multi_line_strings_a_block_cannot_hold_are_double_quoted() {
        check_values(&[
            ("a \nb", r#""a \nb""#),   // a space before a break would be lost
            ("a\nb ", r#""a\nb ""#),   // trailing space
            ("\n", r#""\n""#),         // shorter than two bytes
            ("  \n", r#""  \n""#),     // only whitespace
            ("a\r\nb", r#""a\r\nb""#), // carriage return is not printable
        ]);
    }

    #[test]
    fn multi_line_and_very_long_keys_use_the_explicit_key_form() {
        assert_eq!(
            to_string(&[map(&[("a\nb", s("v"))])], 2),
            "? |-\n  a\n  b\n: v\n"
        );
        let long = "k".repeat(129);
        assert_eq!(
            to_string(&[map(&[(long.as_str(), s("v"))])], 2),
            format!("? {long}\n: v\n")
        );
        let longest_simple = "k".repeat(128);
        assert_eq!(
            to_string(&[map(&[(longest_simple.as_str(), s("v"))])], 2),
            format!("{longest_simple}: v\n")
        );
    }

    // Folding: go-yaml writes a space as a line break once the column is past 80 (and the next character is not a
    // space), so the word that crosses column 80 stays on the line. "description: " ends at column 13; after the
    // 7th word the column is 13 + 7*9 + 6 = 82 > 80, so the 7th following space breaks. Continuation lines are at
    // the scalar's indentation: one level under the key.
    #[test]
    fn long_plain_strings_fold_at_spaces_past_80_columns() {
        let words = ["abcdefghi"; 10].join(" ");
        assert_eq!(
            to_string(&[map(&[("description", s(&words))])], 2),
            "description: abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi\n  abcdefghi abcdefghi abcdefghi\n"
        );
        assert_eq!(
            to_string(&[map(&[("spec", map(&[("description", s(&words))]))])], 4),
            "spec:\n    description: abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi\n        abcdefghi abcdefghi abcdefghi\n"
        );
        // Only a single space can become a break; a run of spaces is kept where it is.
        let doubled = format!("{}  tail", ["abcdefghi"; 7].join(" "));
        assert_eq!(
            to_string(&[map(&[("description", s(&doubled))])], 2),
            format!("description: {}  tail\n", ["abcdefghi"; 7].join(" "))
        );
        // Text without spaces cannot fold.
        let token = "x".repeat(100);
        assert_eq!(
            to_string(&[map(&[("k", s(&token))])], 2),
            format!("k: {token}\n")
        );
    }

    #[test]
    fn long_quoted_strings_fold_too() {
        let words = format!("*{}", ["abcdefghi"; 10].join(" "));
        assert_eq!(
            as_value(&words),
            "k: '*abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi\n  abcdefghi abcdefghi'\n"
        );
        let words = format!("\t{}", ["abcdefghi"; 10].join(" "));
        assert_eq!(
            as_value(&words),
            "k: \"\\tabcdefghi abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi abcdefghi\n  abcdefghi abcdefghi\"\n"
        );
    }

    #[test]
    fn natural_cmp_is_go_yaml_key_order() {
        assert_eq!(natural_cmp("a2", "a10"), Ordering::Less);
        assert_eq!(natural_cmp("a10", "a2"), Ordering::Greater);
        assert_eq!(natural_cmp("B", "a"), Ordering::Less);
        assert_eq!(natural_cmp("x", "x1"), Ordering::Less);
        assert_eq!(natural_cmp("x", "x"), Ordering::Equal);
        assert_eq!(natural_cmp("a1", "a01"), Ordering::Less);
        assert_eq!(natural_cmp("12", "100"), Ordering::Less);
        // Non-letters before letters, but letters first right after a digit.
        assert_eq!(natural_cmp("a{", "ab"), Ordering::Less);
        assert_eq!(natural_cmp("a1b", "a1_"), Ordering::Less);
        assert_eq!(natural_cmp("1", "a"), Ordering::Less);

        let mut keys = vec!["b", "a10", "a2", "B", "a", "x1", "x", "a1"];
        keys.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(keys, ["B", "a", "a1", "a2", "a10", "b", "x", "x1"]);
    }

    #[test]
    fn from_json_keeps_integers_and_sorts_keys() {
        let value = json!({"b": 1000000, "a10": 1.5, "a2": [true, null, "x", -3], "big": 18446744073709551615u64});
        assert_eq!(
            to_string(&[Node::from_json(&value)], 2),
            "a2:\n  - true\n  - null\n  - x\n  - -3\na10: 1.5\nb: 1000000\nbig: 18446744073709551615\n"
        );
    }

    #[test]
    fn from_json_floats_read_back_as_floats() {
        let cases = [
            (json!(1.5), "1.5"),
            (json!(2.0), "2.0"),
            (json!(1e300), "1.0e+300"),
            (json!(0.00001), "1.0e-5"),
            (json!(-2.5e-300), "-2.5e-300"),
        ];
        for (value, expected) in cases {
            assert_eq!(Node::from_json(&value), num(expected));
            assert!(
                !resolves_to_str(expected),
                "{expected} must resolve as a number"
            );
        }
        assert_eq!(Node::from_json(&json!(1000000)), num("1000000"));
    }

    #[test]
    fn from_json_keeps_strings_strings() {
        let value = json!({"mode": "0755", "enabled": "true", "name": "a"});
        assert_eq!(
            to_string(&[Node::from_json(&value)], 4),
            "enabled: \"true\"\nmode: \"0755\"\nname: a\n"
        );
    }

    /// Omni's own example: the inline kubespan patch as Omni stores it.
    #[test]
    fn omni_patch_worked_example_at_indent_4() {
        let patch = json!({"machine": {"network": {"kubespan": {"enabled": true}}}});
        assert_eq!(
            to_string(&[Node::from_json(&patch)], 4),
            "machine:\n    network:\n        kubespan:\n            enabled: true\n"
        );
    }

    #[test]
    fn indents_go_yaml_rejects_fall_back_to_2() {
        let doc = map(&[("a", map(&[("b", num("1"))]))]);
        assert_eq!(to_string(std::slice::from_ref(&doc), 1), "a:\n  b: 1\n");
        assert_eq!(to_string(&[doc], 10), "a:\n  b: 1\n");
    }

    /// What client-go's `clientcmd.Write` writes for a token kubeconfig (sigs.k8s.io/yaml over go-yaml v2): keys
    /// in the order given (the caller sorts, as v2 sorts a map's keys), sequences under a key at the key's column,
    /// plain scalars unquoted.
    #[test]
    fn v2_writes_sequences_in_a_mapping_at_the_keys_column() {
        let kubeconfig = map(&[
            ("apiVersion", s("v1")),
            (
                "clusters",
                Node::Seq(vec![map(&[
                    (
                        "cluster",
                        map(&[("server", s("https://omni.example:8100"))]),
                    ),
                    ("name", s("acme-edge-ops")),
                ])]),
            ),
            ("preferences", map(&[])),
            (
                "users",
                Node::Seq(vec![map(&[
                    ("name", s("acme-edge-ops")),
                    ("user", map(&[("token", s("eyJhbGciOi.eyJzdWIi.c2ln"))])),
                ])]),
            ),
        ]);
        assert_eq!(
            to_string_v2(&[kubeconfig]),
            "apiVersion: v1\nclusters:\n- cluster:\n    server: https://omni.example:8100\n  name: acme-edge-ops\n\
             preferences: {}\nusers:\n- name: acme-edge-ops\n  user:\n    token: eyJhbGciOi.eyJzdWIi.c2ln\n"
        );
    }

    #[test]
    fn v2_nested_sequences_and_sequences_under_complex_keys_are_indented() {
        let doc = map(&[("a", Node::Seq(vec![Node::Seq(vec![num("1"), num("2")])]))]);
        assert_eq!(to_string_v2(&[doc]), "a:\n- - 1\n  - 2\n");
        let long_key = "k".repeat(MAX_SIMPLE_KEY_LEN + 1);
        let doc = Node::Map(vec![(long_key.clone(), Node::Seq(vec![num("1")]))]);
        assert_eq!(to_string_v2(&[doc]), format!("? {long_key}\n: - 1\n"));
    }

    /// v2's resolver reads YAML 1.1 booleans, `<<` and base-60 floats as non-strings, so it double-quotes them
    /// where v3 single-quotes; a lone newline is a literal block to v2.
    #[test]
    fn v2_double_quotes_yaml_1_1_words() {
        for word in ["yes", "off", "Y", "<<", "1:20"] {
            let doc = map(&[("k", s(word))]);
            assert_eq!(
                to_string_v2(std::slice::from_ref(&doc)),
                format!("k: \"{word}\"\n")
            );
            assert_eq!(to_string(&[doc], 2), format!("k: '{word}'\n"));
        }
        let doc = map(&[("k", s("true")), ("n", s("12")), ("p", s("plain text"))]);
        // Keys follow the same rule: `n` is a YAML 1.1 boolean to v2.
        assert_eq!(
            to_string_v2(&[doc]),
            "k: \"true\"\n\"n\": \"12\"\np: plain text\n"
        );
    }
}
