//! Label and field selectors with the semantics and error text of
//! k8s.io/apimachinery `pkg/labels` (`labels.Parse`, `metav1.LabelSelectorAsSelector`)
//! and `pkg/fields` (`fields.ParseSelector`), so a client sending a bad selector
//! sees the same 400 message it would get from kube-apiserver.

use std::fmt;

use serde_json::{Map, Value};

pub use crate::gofmt::quote as go_quote;

/// The operators of `k8s.io/apimachinery/pkg/selection`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    In,
    NotIn,
    Equals,
    DoubleEquals,
    NotEquals,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

/// One term of a label selector.
#[derive(Debug, Clone, PartialEq)]
pub struct Requirement {
    pub key: String,
    pub op: Operator,
    /// Sorted and deduplicated when produced by `parse` (the real parser
    /// collects values into a string set); kept as given by `from_json`.
    pub values: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
    /// `labels.Nothing()`: what a null `metav1.LabelSelector` converts to.
    nothing: bool,
}

impl LabelSelector {
    /// Matches every object (`labels.Everything()`).
    pub fn everything() -> Self {
        LabelSelector {
            requirements: Vec::new(),
            nothing: false,
        }
    }

    /// Matches no object (`labels.Nothing()`).
    pub fn nothing() -> Self {
        LabelSelector {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// Parses the `labelSelector` query syntax exactly as `labels.Parse` does,
    /// including its error messages.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut parser = Parser {
            items: scan(s.as_bytes()),
            position: 0,
        };
        let mut requirements = parser.parse()?;
        // The real parser sorts by key; a stable sort keeps same-key terms in
        // input order so Display round-trips.
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector {
            requirements,
            nothing: false,
        })
    }

    /// Converts a `metav1.LabelSelector` JSON object as `LabelSelectorAsSelector`
    /// does: null selects nothing, `{}` selects everything.
    pub fn from_json(v: &Value) -> Result<Self, String> {
        let obj = match v {
            Value::Null => return Ok(Self::nothing()),
            Value::Object(o) => o,
            _ => return Err("label selector must be an object".to_string()),
        };
        let match_labels = match obj.get("matchLabels") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m),
            Some(_) => return Err("matchLabels must be an object".to_string()),
        };
        let match_expressions = match obj.get("matchExpressions") {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) => Some(a),
            Some(_) => return Err("matchExpressions must be an array".to_string()),
        };
        let n_labels = match_labels.map_or(0, |m| m.len());
        let n_exprs = match_expressions.map_or(0, |a| a.len());
        if n_labels + n_exprs == 0 {
            return Ok(Self::everything());
        }
        let mut requirements = Vec::with_capacity(n_labels + n_exprs);
        for (k, v) in match_labels.into_iter().flatten() {
            let Some(v) = v.as_str() else {
                return Err(format!("matchLabels[{k}] must be a string"));
            };
            requirements.push(new_requirement(
                k,
                Operator::Equals,
                vec![v.to_string()],
                true,
            )?);
        }
        for expr in match_expressions.into_iter().flatten() {
            let Some(expr) = expr.as_object() else {
                return Err("matchExpressions items must be objects".to_string());
            };
            let key = expr.get("key").and_then(Value::as_str).unwrap_or("");
            let op_str = expr.get("operator").and_then(Value::as_str).unwrap_or("");
            let op = match op_str {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => {
                    return Err(format!(
                        "{} is not a valid label selector operator",
                        go_quote(other)
                    ));
                }
            };
            let mut values = Vec::new();
            match expr.get("values") {
                None | Some(Value::Null) => {}
                Some(Value::Array(a)) => {
                    for item in a {
                        let Some(s) = item.as_str() else {
                            return Err("matchExpressions values must be strings".to_string());
                        };
                        values.push(s.to_string());
                    }
                }
                Some(_) => return Err("matchExpressions values must be an array".to_string()),
            }
            requirements.push(new_requirement(key, op, values, true)?);
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector {
            requirements,
            nothing: false,
        })
    }

    pub fn matches(&self, labels: &Map<String, Value>) -> bool {
        if self.nothing {
            return false;
        }
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// True when the selector does not restrict anything (`Selector.Empty()`).
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// `Selector.RequiresExactMatch`: the single value a label must have, if the
    /// first requirement on that label pins one.
    pub fn requires_exact_match(&self, label: &str) -> Option<&str> {
        let r = self.requirements.iter().find(|r| r.key == label)?;
        match r.op {
            Operator::Equals | Operator::DoubleEquals | Operator::In if r.values.len() == 1 => {
                r.values.first().map(String::as_str)
            }
            _ => None,
        }
    }
}

impl Requirement {
    pub fn matches(&self, labels: &Map<String, Value>) -> bool {
        let value = labels.get(&self.key).map(|v| v.as_str().unwrap_or(""));
        match self.op {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                value.is_some_and(|v| self.values.iter().any(|x| x == v))
            }
            Operator::NotIn | Operator::NotEquals => {
                value.is_none_or(|v| !self.values.iter().any(|x| x == v))
            }
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(have) = value.and_then(|v| v.parse::<i64>().ok()) else {
                    return false;
                };
                let [want] = self.values.as_slice() else {
                    return false;
                };
                let Ok(want) = want.parse::<i64>() else {
                    return false;
                };
                if self.op == Operator::GreaterThan {
                    have > want
                } else {
                    have < want
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.op == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.op {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
        };
        f.write_str(op)?;
        let set = matches!(self.op, Operator::In | Operator::NotIn);
        if set {
            f.write_str("(")?;
        }
        // String() normalizes value order on output without touching the selector.
        let mut values: Vec<&str> = self.values.iter().map(String::as_str).collect();
        values.sort_unstable();
        f.write_str(&values.join(","))?;
        if set {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// The canonical form `Selector.String()` prints (parseable again).
impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Lexer and parser. They work on bytes and treat a NUL byte as end of input,
// because the real lexer's read() returns 0 for both.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn token_for(s: &[u8]) -> Option<Tok> {
    Some(match s {
        b")" => Tok::ClosedPar,
        b"," => Tok::Comma,
        b"!" => Tok::DoesNotExist,
        b"==" => Tok::DoubleEquals,
        b"=" => Tok::Equals,
        b">" => Tok::GreaterThan,
        b"in" => Tok::In,
        b"<" => Tok::LessThan,
        b"!=" => Tok::NotEquals,
        b"notin" => Tok::NotIn,
        b"(" => Tok::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Lexer<'_> {
    fn read(&mut self) -> u8 {
        match self.s.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                b
            }
            None => 0,
        }
    }

    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    fn lex(&mut self) -> (Tok, String) {
        let mut ch = self.read();
        while is_whitespace(ch) {
            ch = self.read();
        }
        if ch == 0 {
            return (Tok::EndOfString, String::new());
        }
        self.unread();
        if is_special(ch) {
            self.scan_special()
        } else {
            self.scan_identifier()
        }
    }

    fn scan_identifier(&mut self) -> (Tok, String) {
        let start = self.pos;
        let mut end = start;
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if is_special(ch) || is_whitespace(ch) {
                self.unread();
                break;
            }
            end = self.pos;
        }
        let bytes = self.s.get(start..end).unwrap_or_default();
        let lit = String::from_utf8_lossy(bytes).into_owned();
        (token_for(bytes).unwrap_or(Tok::Identifier), lit)
    }

    /// Longest run of special symbols that still forms an operator ("!=" not "!").
    fn scan_special(&mut self) -> (Tok, String) {
        let mut buf: Vec<u8> = Vec::new();
        let mut last: Option<(Tok, String)> = None;
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if !is_special(ch) {
                self.unread();
                break;
            }
            buf.push(ch);
            if let Some(t) = token_for(&buf) {
                last = Some((t, String::from_utf8_lossy(&buf).into_owned()));
            } else if last.is_some() {
                self.unread();
                break;
            }
        }
        // Every single special symbol is a token, so `last` is always set here.
        last.unwrap_or((Tok::EndOfString, String::new()))
    }
}

fn scan(s: &[u8]) -> Vec<(Tok, String)> {
    let mut lexer = Lexer { s, pos: 0 };
    let mut items = Vec::new();
    loop {
        let item = lexer.lex();
        let done = item.0 == Tok::EndOfString;
        items.push(item);
        if done {
            return items;
        }
    }
}

/// In a values context, `in` and `notin` are ordinary identifiers (`x in (in)`).
#[derive(Clone, Copy, PartialEq)]
enum Ctx {
    KeyAndOperator,
    Values,
}

struct Parser {
    items: Vec<(Tok, String)>,
    position: usize,
}

impl Parser {
    fn peek_at(&self, ctx: Ctx) -> (Tok, String) {
        let (tok, lit) = self
            .items
            .get(self.position)
            .cloned()
            .unwrap_or((Tok::EndOfString, String::new()));
        let tok = match tok {
            Tok::In | Tok::NotIn if ctx == Ctx::Values => Tok::Identifier,
            t => t,
        };
        (tok, lit)
    }

    fn lookahead(&self, ctx: Ctx) -> (Tok, String) {
        self.peek_at(ctx)
    }

    fn consume(&mut self, ctx: Ctx) -> (Tok, String) {
        let item = self.peek_at(ctx);
        self.position += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut reqs = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Ctx::Values);
            match tok {
                Tok::Identifier | Tok::DoesNotExist => {
                    let r = self
                        .parse_requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    reqs.push(r);
                    let (t, l) = self.consume(Ctx::Values);
                    match t {
                        Tok::EndOfString => return Ok(reqs),
                        Tok::Comma => {
                            let (t2, l2) = self.lookahead(Ctx::Values);
                            if t2 != Tok::Identifier && t2 != Tok::DoesNotExist {
                                return Err(format!(
                                    "found '{l2}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => return Err(format!("found '{l}', expected: ',' or 'end of string'")),
                    }
                }
                Tok::EndOfString => return Ok(reqs),
                _ => {
                    return Err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let (key, inferred) = self.parse_key_and_infer_operator()?;
        if let Some(op) = inferred {
            return new_requirement(&key, op, Vec::new(), false);
        }
        let op = self.parse_operator()?;
        let values = match op {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        new_requirement(&key, op, values, false)
    }

    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut op = None;
        let (mut tok, mut lit) = self.consume(Ctx::Values);
        if tok == Tok::DoesNotExist {
            op = Some(Operator::DoesNotExist);
            (tok, lit) = self.consume(Ctx::Values);
        }
        if tok != Tok::Identifier {
            return Err(format!("found '{lit}', expected: identifier"));
        }
        let errs = is_qualified_name(&lit);
        if !errs.is_empty() {
            // The parser's field path is nil, which Go prints as "<nil>".
            return Err(invalid_string("<nil>", &lit, &errs.join("; ")));
        }
        let (next, _) = self.lookahead(Ctx::Values);
        if op.is_none() && matches!(next, Tok::EndOfString | Tok::Comma) {
            op = Some(Operator::Exists);
        }
        Ok((lit, op))
    }

    fn parse_operator(&mut self) -> Result<Operator, String> {
        let (tok, lit) = self.consume(Ctx::KeyAndOperator);
        Ok(match tok {
            Tok::In => Operator::In,
            Tok::Equals => Operator::Equals,
            Tok::DoubleEquals => Operator::DoubleEquals,
            Tok::GreaterThan => Operator::GreaterThan,
            Tok::LessThan => Operator::LessThan,
            Tok::NotIn => Operator::NotIn,
            Tok::NotEquals => Operator::NotEquals,
            _ => {
                return Err(format!(
                    "found '{lit}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        })
    }

    fn parse_values(&mut self) -> Result<Vec<String>, String> {
        let (tok, lit) = self.consume(Ctx::Values);
        if tok != Tok::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(Ctx::Values);
        match tok {
            Tok::Identifier | Tok::Comma => {
                let set = self.parse_identifiers_list()?;
                let (tok, _) = self.consume(Ctx::Values);
                if tok != Tok::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(set)
            }
            Tok::ClosedPar => {
                self.consume(Ctx::Values);
                Ok(vec![String::new()])
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    /// Returns the values sorted and deduplicated, as the real string set's List().
    fn parse_identifiers_list(&mut self) -> Result<Vec<String>, String> {
        let mut set = std::collections::BTreeSet::new();
        loop {
            let (tok, lit) = self.consume(Ctx::Values);
            match tok {
                Tok::Identifier => {
                    set.insert(lit);
                    let (tok2, lit2) = self.lookahead(Ctx::Values);
                    match tok2 {
                        Tok::Comma => continue,
                        Tok::ClosedPar => return Ok(set.into_iter().collect()),
                        _ => return Err(format!("found '{lit2}', expected: ',' or ')'")),
                    }
                }
                Tok::Comma => {
                    // Empty entries around commas ("(,a)", "(a,)", "(a,,b)") are the empty value.
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    let (tok2, _) = self.lookahead(Ctx::Values);
                    if tok2 == Tok::ClosedPar {
                        set.insert(String::new());
                        return Ok(set.into_iter().collect());
                    }
                    if tok2 == Tok::Comma {
                        self.consume(Ctx::Values);
                        set.insert(String::new());
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<Vec<String>, String> {
        let (tok, _) = self.lookahead(Ctx::Values);
        if matches!(tok, Tok::EndOfString | Tok::Comma) {
            return Ok(vec![String::new()]);
        }
        let (tok, lit) = self.consume(Ctx::Values);
        if tok == Tok::Identifier {
            return Ok(vec![lit]);
        }
        Err(format!("found '{lit}', expected: identifier"))
    }
}

/// `labels.NewRequirement`: validates and builds one requirement, returning the
/// aggregated field errors the real function returns.
fn new_requirement(
    key: &str,
    op: Operator,
    values: Vec<String>,
    from_api: bool,
) -> Result<Requirement, String> {
    let mut errs: Vec<String> = Vec::new();
    let key_errs = is_qualified_name(key);
    if !key_errs.is_empty() {
        errs.push(invalid_string("key", key, &key_errs.join("; ")));
    }
    let bad_list = |detail: &str| {
        // Go prints the []string with %#v; LabelSelectorAsSelector passes a nil
        // slice when the API object had no values.
        let shown = if values.is_empty() && from_api {
            "[]string(nil)".to_string()
        } else {
            let items: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
            format!("[]string{{{}}}", items.join(", "))
        };
        format!("values: Invalid value: {shown}: {detail}")
    };
    match op {
        Operator::In | Operator::NotIn => {
            if values.is_empty() {
                errs.push(bad_list(
                    "for 'in', 'notin' operators, values set can't be empty",
                ));
            }
        }
        Operator::Equals | Operator::DoubleEquals | Operator::NotEquals => {
            if values.len() != 1 {
                errs.push(bad_list(
                    "exact-match compatibility requires one single value",
                ));
            }
        }
        Operator::Exists | Operator::DoesNotExist => {
            if !values.is_empty() {
                errs.push(bad_list(
                    "values set must be empty for exists and does not exist",
                ));
            }
        }
        Operator::GreaterThan | Operator::LessThan => {
            if values.len() != 1 {
                errs.push(bad_list(
                    "for 'Gt', 'Lt' operators, exactly one value is required",
                ));
            }
            for (i, v) in values.iter().enumerate() {
                if v.parse::<i64>().is_err() {
                    errs.push(invalid_string(
                        &format!("values[{i}]"),
                        v,
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    ));
                }
            }
        }
    }
    for (i, v) in values.iter().enumerate() {
        let value_errs = is_valid_label_value(v);
        if !value_errs.is_empty() {
            errs.push(invalid_string(
                &format!("values[{i}][{key}]"),
                v,
                &value_errs.join("; "),
            ));
        }
    }
    if errs.is_empty() {
        Ok(Requirement {
            key: key.to_string(),
            op,
            values,
        })
    } else {
        Err(aggregate(errs))
    }
}

/// `utilerrors.NewAggregate(...).Error()`: one message alone, several deduplicated
/// inside brackets.
pub(crate) fn aggregate(errs: Vec<String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for e in errs {
        if !seen.contains(&e) {
            seen.push(e);
        }
    }
    if seen.len() == 1 {
        return seen.pop().unwrap_or_default();
    }
    format!("[{}]", seen.join(", "))
}

/// `field.Invalid(path, value, detail).Error()` for a string value.
fn invalid_string(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {}: {detail}", go_quote(value))
}

// ---------------------------------------------------------------------------
// k8s.io/apimachinery/pkg/util/validation messages.

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// `validation.RegexError`, including its doubled space before " or ".
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let mut out = msg.to_string();
    out.push_str(" (e.g. ");
    for (i, ex) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(ex);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(fmt);
    out.push_str("')");
    out
}

fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn is_dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    let label_ok = |l: &str| {
        let b = l.as_bytes();
        match (b.first(), b.last()) {
            (Some(f), Some(z)) => {
                let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
                alnum(f) && alnum(z) && b.iter().all(|c| alnum(c) || *c == b'-')
            }
            _ => false,
        }
    };
    if !s.split('.').all(label_ok) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `validation.IsQualifiedName`: the rule for label keys.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|e| format!("prefix part {e}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".to_string());
    }
    if !is_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `validation.IsValidLabelValue`.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

// ---------------------------------------------------------------------------
// Field selectors.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldOp {
    /// `=` and `==` (the real parser builds the same term for both).
    Equals,
    NotEquals,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FieldTerm {
    pub field: String,
    pub op: FieldOp,
    /// Unescaped.
    pub value: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FieldSelector {
    terms: Vec<FieldTerm>,
}

impl FieldSelector {
    /// Parses like `fields.ParseSelector`: terms split on unescaped commas and
    /// sorted as raw strings, each split at the first `!=`, `==` or `=`, and the
    /// value unescaped (`\\`, `\,`, `\=`).
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut parts = split_terms(s);
        parts.sort_unstable();
        let mut terms = Vec::new();
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let Some((lhs, op, rhs)) = split_term(part) else {
                return Err(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                ));
            };
            let value = unescape_value(rhs)?;
            terms.push(FieldTerm {
                field: lhs.to_string(),
                op,
                value,
            });
        }
        Ok(FieldSelector { terms })
    }

    pub fn terms(&self) -> &[FieldTerm] {
        &self.terms
    }

    /// Field names in evaluation order, so the caller rejects the same
    /// unsupported field first as the real server does.
    pub fn fields(&self) -> Vec<&str> {
        self.terms.iter().map(|t| t.field.as_str()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    pub fn matches(&self, get: &dyn Fn(&str) -> Option<String>) -> bool {
        self.terms.iter().all(|t| {
            let have = get(&t.field).unwrap_or_default();
            match t.op {
                FieldOp::Equals => have == t.value,
                FieldOp::NotEquals => have != t.value,
            }
        })
    }

    /// `RequiresExactMatch("metadata.name")`: how the real RequestInfo turns a
    /// list/watch into a named request for RBAC resourceNames.
    pub fn exact_name(&self) -> Option<&str> {
        self.requires_exact_match("metadata.name")
    }

    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.terms
            .iter()
            .find(|t| t.field == field && t.op == FieldOp::Equals)
            .map(|t| t.value.as_str())
    }
}

/// `Selector.String()`: `=` for both equality spellings, values re-escaped.
impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let op = if t.op == FieldOp::Equals { "=" } else { "!=" };
            write!(f, "{}{}{}", t.field, op, escape_value(&t.value))?;
        }
        Ok(())
    }
}

/// `fields.EscapeValue`.
pub fn escape_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(s.get(start..i).unwrap_or_default());
            start = i + 1;
        }
    }
    terms.push(s.get(start..).unwrap_or_default());
    terms
}

fn split_term(term: &str) -> Option<(&str, FieldOp, &str)> {
    for (i, _) in term.char_indices() {
        let rest = term.get(i..).unwrap_or_default();
        let lhs = term.get(..i).unwrap_or_default();
        if let Some(rhs) = rest.strip_prefix("!=") {
            return Some((lhs, FieldOp::NotEquals, rhs));
        }
        if let Some(rhs) = rest.strip_prefix("==") {
            return Some((lhs, FieldOp::Equals, rhs));
        }
        if let Some(rhs) = rest.strip_prefix('=') {
            return Some((lhs, FieldOp::Equals, rhs));
        }
    }
    None
}

fn unescape_value(s: &str) -> Result<String, String> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(format!(
                    "invalid field selector: invalid escape sequence: \\{c}"
                ));
            }
            out.push(c);
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            // Go formats the rune with %v, which prints its code point number.
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescapedRune character in value: {}",
                    c as u32
                ));
            }
            _ => out.push(c),
        }
    }
    if in_slash {
        return Err("invalid field selector: invalid escape sequence: \\".to_string());
    }
    Ok(out)
}

/// What the field label conversion of a custom resource (and of the core/v1
/// kinds that register one: Pod, Node, Namespace, Secret, Service, Event,
/// ReplicationController) answers for a field it does not support.
pub fn unsupported_field_message(field: &str) -> String {
    format!("field label not supported: {field}")
}

/// What `runtime.DefaultMetaV1FieldSelectorConversion` answers for built-in kinds
/// that register no conversion of their own (ConfigMap, Deployment, Ingress, ...).
pub fn unknown_field_selector_message(field: &str) -> String {
    format!(
        "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
        go_quote(field)
    )
}

/// Field selector support of a built-in kind, as its registered field label
/// conversion (or the default one) decides. `group` is "" for core/v1.
pub fn check_builtin_field(group: &str, kind: &str, field: &str) -> Result<(), String> {
    let core_fields: Option<&[&str]> = match (group, kind) {
        ("", "Pod") => Some(&[
            "metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
            "spec.host",
        ]),
        ("", "Node") => Some(&["metadata.name", "spec.unschedulable"]),
        ("", "ReplicationController") => {
            Some(&["metadata.name", "metadata.namespace", "status.replicas"])
        }
        ("", "Event") => Some(&[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
            "metadata.namespace",
            "metadata.name",
        ]),
        ("events.k8s.io", "Event") => Some(&[
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
            "regarding.apiVersion",
            "regarding.resourceVersion",
            "regarding.fieldPath",
            "reason",
            "reportingController",
            "type",
            "metadata.namespace",
            "metadata.name",
        ]),
        ("", "Namespace") => Some(&["status.phase", "metadata.name"]),
        ("", "Secret") => Some(&["type", "metadata.namespace", "metadata.name"]),
        ("", "Service") => Some(&[
            "metadata.namespace",
            "metadata.name",
            "spec.clusterIP",
            "spec.type",
        ]),
        _ => None,
    };
    match core_fields {
        Some(list) if list.contains(&field) => Ok(()),
        Some(_) => Err(unsupported_field_message(field)),
        None if group == "batch" && kind == "Job" => {
            if matches!(
                field,
                "metadata.name" | "metadata.namespace" | "status.successful"
            ) {
                Ok(())
            } else {
                Err(format!(
                    "field label {} not supported for batchv1.Job",
                    go_quote(field)
                ))
            }
        }
        None if matches!(field, "metadata.name" | "metadata.namespace") => Ok(()),
        None => Err(unknown_field_selector_message(field)),
    }
}

/// Field selector support of a custom resource: metadata.name, metadata.namespace
/// for namespaced kinds, and the CRD version's `selectableFields` JSONPaths.
pub fn check_custom_resource_field(
    cluster_scoped: bool,
    selectable_json_paths: &[&str],
    field: &str,
) -> Result<(), String> {
    if field == "metadata.name" || (!cluster_scoped && field == "metadata.namespace") {
        return Ok(());
    }
    if selectable_json_paths
        .iter()
        .any(|p| p.strip_prefix('.').unwrap_or(p) == field)
    {
        return Ok(());
    }
    Err(unsupported_field_message(field))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    const NAME_RE_ERR: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const VALUE_RE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    /// labels.Parse accepts these and String() prints the canonical form on the right
    /// (requirements sorted by key, values sorted, set operators spaced).
    #[test]
    fn label_parse_canonical_forms() {
        let table = [
            ("", ""),
            ("x", "x"),
            ("!x", "!x"),
            ("  a = b ", "a=b"),
            ("a==b", "a==b"),
            ("a!=b", "a!=b"),
            ("a=", "a="),
            ("a>1,b<2", "a>1,b<2"),
            ("z,a in (c,b,b)", "a in (b,c),z"),
            (
                "x in (foo,,baz),y,z notin ()",
                "x in (,baz,foo),y,z notin ()",
            ),
            ("a in (in),in notin (notin)", "a in (in),in notin (notin)"),
            ("example.com/app=web", "example.com/app=web"),
            ("a in (b,)", "a in (,b)"),
        ];
        for (input, want) in table {
            let sel = LabelSelector::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(sel.to_string(), want, "input {input:?}");
        }
    }

    /// Error messages of labels.Parse (the server returns them verbatim in a 400).
    #[test]
    fn label_parse_errors() {
        let table: &[(&str, String)] = &[
            ("a in", "unable to parse requirement: found '' expected: '('".into()),
            ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'".into()),
            ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier".into()),
            ("a in (b,=)", "unable to parse requirement: found '=', expected: ',', or identifier".into()),
            ("a in (,,)", "unable to parse requirement: found ')', expected: ',', or identifier".into()),
            ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt".into()),
            ("a=(", "unable to parse requirement: found '(', expected: identifier".into()),
            ("!", "unable to parse requirement: found '', expected: identifier".into()),
            ("a,", "found '', expected: identifier after ','".into()),
            ("a=b c", "found 'c', expected: ',' or 'end of string'".into()),
            ("!a=b", "found '=', expected: ',' or 'end of string'".into()),
            ("=a", "found '=', expected: !, identifier, or 'end of string'".into()),
            ("a=b,,c", "found ',', expected: identifier after ','".into()),
            ("A_-", format!("unable to parse requirement: <nil>: Invalid value: \"A_-\": {NAME_RE_ERR}")),
            ("a/b/c", format!("unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')", &NAME_RE_ERR["name part ".len()..])),
            ("/a", "unable to parse requirement: <nil>: Invalid value: \"/a\": prefix part must be non-empty".into()),
            ("Foo/a", "unable to parse requirement: <nil>: Invalid value: \"Foo/a\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".into()),
            ("a=-x", format!("unable to parse requirement: values[0][a]: Invalid value: \"-x\": {VALUE_RE_ERR}")),
            ("a in (-x,-y)", format!("unable to parse requirement: [values[0][a]: Invalid value: \"-x\": {VALUE_RE_ERR}, values[1][a]: Invalid value: \"-y\": {VALUE_RE_ERR}]")),
            ("a>b", "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' operators, the value must be an integer".into()),
            (&format!("a={}", "x".repeat(64)), format!("unable to parse requirement: values[0][a]: Invalid value: \"{}\": must be no more than 63 characters", "x".repeat(64))),
        ];
        for (input, want) in table {
            assert_eq!(
                LabelSelector::parse(input).unwrap_err(),
                *want,
                "input {input:?}"
            );
        }
    }

    /// Requirement.Matches semantics: NotIn/!= match a missing key, Gt/Lt need integers.
    #[test]
    fn label_matching() {
        let l = labels(json!({"app": "web", "tier": "", "n": "5"}));
        let table = [
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("missing!=x", true),
            ("app in (web,db)", true),
            ("app notin (web)", false),
            ("missing notin (web)", true),
            ("missing in (web)", false),
            ("tier", true),
            ("tier=", true),
            ("!tier", false),
            ("!missing", true),
            ("n>4", true),
            ("n<5", false),
            ("app>1", false),
            ("missing<9", false),
            ("", true),
            ("app=web,tier=x", false),
        ];
        for (sel, want) in table {
            assert_eq!(
                LabelSelector::parse(sel).unwrap().matches(&l),
                want,
                "selector {sel:?}"
            );
        }
    }

    /// metav1.LabelSelectorAsSelector: null → Nothing, {} → Everything, ops mapped.
    #[test]
    fn label_from_json() {
        let l = labels(json!({"app": "web"}));
        assert!(!LabelSelector::from_json(&Value::Null).unwrap().matches(&l));
        assert!(!LabelSelector::from_json(&Value::Null).unwrap().is_empty());
        let all = LabelSelector::from_json(&json!({})).unwrap();
        assert!(all.is_empty() && all.matches(&l));
        let sel = LabelSelector::from_json(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}, {"key": "app", "operator": "In", "values": ["db", "web"]}]
        }))
        .unwrap();
        assert_eq!(sel.to_string(), "app=web,app in (db,web),!tier");
        assert!(sel.matches(&l));
        assert_eq!(
            LabelSelector::from_json(
                &json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]})
            )
            .unwrap_err(),
            "\"Gt\" is not a valid label selector operator"
        );
        assert_eq!(
            LabelSelector::from_json(
                &json!({"matchExpressions": [{"key": "a", "operator": "In"}]})
            )
            .unwrap_err(),
            "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
        );
        assert_eq!(
            LabelSelector::from_json(&json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x", "y"]}]}))
                .unwrap_err(),
            "values: Invalid value: []string{\"x\", \"y\"}: values set must be empty for exists and does not exist"
        );
        assert_eq!(
            LabelSelector::from_json(&json!({"matchLabels": {"a b": "x"}})).unwrap_err(),
            format!("key: Invalid value: \"a b\": {NAME_RE_ERR}")
        );
    }

    /// fields.ParseSelector: sorting, escapes, operator precedence and error text.
    #[test]
    fn field_parse() {
        let sel =
            FieldSelector::parse("metadata.namespace!=kube-system,metadata.name==foo").unwrap();
        assert_eq!(
            sel.to_string(),
            "metadata.name=foo,metadata.namespace!=kube-system"
        );
        assert_eq!(sel.fields(), ["metadata.name", "metadata.namespace"]);
        assert_eq!(sel.exact_name(), Some("foo"));
        assert_eq!(
            FieldSelector::parse("metadata.name!=foo")
                .unwrap()
                .exact_name(),
            None
        );
        let esc = FieldSelector::parse(r"spec.x=a\,b\=c\\d,,").unwrap();
        assert_eq!(esc.terms()[0].value, r"a,b=c\d");
        assert_eq!(esc.to_string(), r"spec.x=a\,b\=c\\d");
        assert!(FieldSelector::parse("").unwrap().is_empty());
        let errs = [
            ("foo", "invalid selector: 'foo'; can't understand 'foo'"),
            ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
            (
                "a=b=c",
                "invalid field selector: unescapedRune character in value: 61",
            ),
            (
                r"a=\x",
                r"invalid field selector: invalid escape sequence: \x",
            ),
            (
                r"a=b\",
                r"invalid field selector: invalid escape sequence: \",
            ),
        ];
        for (input, want) in errs {
            assert_eq!(
                FieldSelector::parse(input).unwrap_err(),
                want,
                "input {input:?}"
            );
        }
    }

    #[test]
    fn field_matching() {
        let get = |f: &str| match f {
            "metadata.name" => Some("foo".to_string()),
            "status.phase" => Some("Running".to_string()),
            _ => None,
        };
        let table = [
            ("metadata.name=foo", true),
            ("metadata.name=bar", false),
            ("status.phase!=Running", false),
            ("spec.nodeName=", true),
            ("spec.nodeName!=", false),
            ("metadata.name=foo,status.phase=Running", true),
        ];
        for (sel, want) in table {
            assert_eq!(
                FieldSelector::parse(sel).unwrap().matches(&get),
                want,
                "selector {sel:?}"
            );
        }
    }

    /// core/v1 conversions and CRDs say "field label not supported"; kinds without a
    /// conversion fall back to DefaultMetaV1FieldSelectorConversion (docs: ingress).
    #[test]
    fn field_support_messages() {
        assert_eq!(
            check_builtin_field("", "Pod", "spec.foo").unwrap_err(),
            "field label not supported: spec.foo"
        );
        assert!(check_builtin_field("", "Pod", "status.phase").is_ok());
        assert_eq!(
            check_builtin_field("", "Node", "metadata.namespace").unwrap_err(),
            "field label not supported: metadata.namespace"
        );
        assert_eq!(
            check_builtin_field("networking.k8s.io", "Ingress", "foo.bar").unwrap_err(),
            "\"foo.bar\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        assert!(check_builtin_field("", "ConfigMap", "metadata.namespace").is_ok());
        assert_eq!(
            check_builtin_field("batch", "Job", "spec.x").unwrap_err(),
            "field label \"spec.x\" not supported for batchv1.Job"
        );
        assert!(check_custom_resource_field(false, &[".spec.color"], "spec.color").is_ok());
        assert_eq!(
            check_custom_resource_field(true, &[], "metadata.namespace").unwrap_err(),
            "field label not supported: metadata.namespace"
        );
    }

    #[test]
    fn go_quote_escapes() {
        assert_eq!(go_quote("a\"b\\c\n\u{1}é"), "\"a\\\"b\\\\c\\n\\x01é\"");
    }

    fn key_strategy() -> impl Strategy<Value = String> {
        let name = "[A-Za-z0-9]([-A-Za-z0-9_.]{0,10}[A-Za-z0-9])?";
        let prefix = "[a-z0-9]([-a-z0-9]{0,5}[a-z0-9])?(\\.[a-z0-9]{1,4}){0,2}";
        (proptest::option::of(prefix), name).prop_map(|(p, n)| match p {
            Some(p) => format!("{p}/{n}"),
            None => n,
        })
    }

    fn value_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            "[A-Za-z0-9]([-A-Za-z0-9_.]{0,10}[A-Za-z0-9])?"
        ]
    }

    fn requirement_text() -> impl Strategy<Value = String> {
        let ws = "[ \t]{0,2}";
        (
            key_strategy(),
            0..9usize,
            proptest::collection::vec(value_strategy(), 1..4),
            ws,
            any::<u32>(),
        )
            .prop_map(|(k, op, vals, w, n)| {
                // "(a,,)" and "(,,)" are rejected by the real parser, so a set
                // lists the empty value at most once, in front.
                let mut set: Vec<String> = vals.iter().filter(|v| !v.is_empty()).cloned().collect();
                if set.len() < vals.len() {
                    set.insert(0, String::new());
                }
                match op {
                    0 => k,
                    1 => format!("!{w}{k}"),
                    2 => format!("{k}{w}={w}{}", vals[0]),
                    3 => format!("{k}=={}", vals[0]),
                    4 => format!("{k}{w}!={}", vals[0]),
                    5 => format!("{k} in{w}({})", set.join(",")),
                    6 => format!("{k} notin ({})", set.join(",")),
                    7 => format!("{k}>{n}"),
                    _ => format!("{k}<{w}{n}"),
                }
            })
    }

    fn field_term_text() -> impl Strategy<Value = String> {
        (
            "[a-z]{1,6}(\\.[a-zA-Z]{1,6}){0,2}",
            any::<bool>(),
            "[ -~]{0,8}",
        )
            .prop_map(|(f, eq, v)| {
                format!("{f}{}{}", if eq { "=" } else { "!=" }, escape_value(&v))
            })
    }

    proptest! {
        // No failure persistence: the regressions file would land in the crate.
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn label_parse_never_panics(s in any::<String>()) {
            let _ = LabelSelector::parse(&s);
        }

        #[test]
        fn label_parse_never_panics_on_selector_alphabet(s in "[a-z/.=!(),<> \t\0-]{0,40}|[a-z ]{0,6}(in|notin)[ (a-z,)]{0,12}") {
            if let Ok(sel) = LabelSelector::parse(&s) {
                let again = LabelSelector::parse(&sel.to_string());
                prop_assert_eq!(again, Ok(sel));
            }
        }

        #[test]
        fn label_round_trip(reqs in proptest::collection::vec(requirement_text(), 0..5)) {
            let text = reqs.join(",");
            let sel = LabelSelector::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
            prop_assert_eq!(LabelSelector::parse(&sel.to_string()), Ok(sel));
        }

        #[test]
        fn field_parse_never_panics(s in any::<String>()) {
            let _ = FieldSelector::parse(&s);
        }

        #[test]
        fn field_round_trip(terms in proptest::collection::vec(field_term_text(), 0..5)) {
            let text = terms.join(",");
            let sel = FieldSelector::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
            prop_assert_eq!(FieldSelector::parse(&sel.to_string()), Ok(sel));
        }
    }
}
