//! Structural-schema handling for CustomResourceDefinitions, mirroring kube-apiserver's apiextensions:
//! defaulting, pruning, value validation (kube-openapi semantics, converted to field errors the way
//! `apiextensions-apiserver/pkg/apiserver/validation` does), embedded-resource and list-type checks, and
//! the static checks run on a CRD's schema when the CRD is written.
//!
//! Everything works on raw `serde_json::Value`s because schemas arrive as user JSON: any node may be
//! malformed, so every accessor tolerates wrong types instead of assuming a well-formed schema.

// CEL (x-kubernetes-validations) is compiled only with the crate feature `cel` (dependency
// `cel = "0.15"`); crates that do not declare the feature must not warn about it.
#![allow(unexpected_cfgs)]

use crate::gofmt::{float as go_float, json as go_json, number as go_number, quote as go_quote};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Mutex, OnceLock};

/// One field error, formatted like k8s.io/apimachinery field.Error.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub path: String,
    pub kind: FieldErrorKind,
    pub bad_value: Option<Value>,
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FieldErrorKind {
    Required,
    Invalid,
    NotSupported,
    TooLong,
    TooMany,
    Duplicate,
    Forbidden,
    TypeInvalid,
}

impl FieldErrorKind {
    fn text(self) -> &'static str {
        match self {
            FieldErrorKind::Required => "Required value",
            FieldErrorKind::Invalid | FieldErrorKind::TypeInvalid => "Invalid value",
            FieldErrorKind::NotSupported => "Unsupported value",
            FieldErrorKind::TooLong => "Too long",
            FieldErrorKind::TooMany => "Too many",
            FieldErrorKind::Duplicate => "Duplicate value",
            FieldErrorKind::Forbidden => "Forbidden",
        }
    }
}

impl FieldError {
    fn new(
        path: impl Into<String>,
        kind: FieldErrorKind,
        bad_value: Option<Value>,
        detail: impl Into<String>,
    ) -> Self {
        FieldError {
            path: path.into(),
            kind,
            bad_value,
            detail: detail.into(),
        }
    }
    fn required(path: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(path, FieldErrorKind::Required, None, detail)
    }
    fn forbidden(path: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(path, FieldErrorKind::Forbidden, None, detail)
    }
    fn invalid(path: impl Into<String>, value: Value, detail: impl Into<String>) -> Self {
        Self::new(path, FieldErrorKind::Invalid, Some(value), detail)
    }
    fn not_supported(path: impl Into<String>, value: Value, supported: &[String]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(path, FieldErrorKind::NotSupported, Some(value), detail)
    }
    /// field.TooLong as of 1.32: the value is omitted and the limit is phrased in bytes even though
    /// apiextensions counts characters.
    fn too_long(path: impl Into<String>, max: i64) -> Self {
        let detail = if max >= 0 {
            format!(
                "may not be more than {max} {}",
                if max == 1 { "byte" } else { "bytes" }
            )
        } else {
            "value is too long".to_string()
        };
        Self::new(path, FieldErrorKind::TooLong, None, detail)
    }
    fn too_many(path: impl Into<String>, actual: i64, max: i64) -> Self {
        let detail = if max >= 0 {
            format!(
                "must have at most {max} {}",
                if max == 1 { "item" } else { "items" }
            )
        } else {
            "has too many items".to_string()
        };
        let value = if actual >= 0 {
            Some(Value::from(actual))
        } else {
            None
        };
        Self::new(path, FieldErrorKind::TooMany, value, detail)
    }
    fn duplicate(path: impl Into<String>, value: Value) -> Self {
        Self::new(path, FieldErrorKind::Duplicate, Some(value), "")
    }
    fn type_invalid(path: impl Into<String>, value: Value, detail: impl Into<String>) -> Self {
        Self::new(path, FieldErrorKind::TypeInvalid, Some(value), detail)
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = self.kind.text();
        // field.Error.ErrorBody prints no value for these types, whatever BadValue holds.
        let omit = matches!(
            self.kind,
            FieldErrorKind::Required | FieldErrorKind::Forbidden | FieldErrorKind::TooLong
        );
        match (&self.bad_value, omit) {
            (Some(v), false) => write!(f, "{}: {kind}: {}", self.path, go_bad_value(v))?,
            _ => write!(f, "{}: {kind}", self.path)?,
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Go formatting helpers live in crate::gofmt.
// ---------------------------------------------------------------------------------------------

/// %#v of a decoded JSON value, as field.Error prints maps and slices.
fn go_sharp_v(v: &Value) -> String {
    go_sharp_v_at(v, 0)
}

fn go_sharp_v_at(v: &Value, depth: usize) -> String {
    if depth > MAX_DEPTH {
        return "...".into();
    }
    let go_sharp_v = |v: &Value| go_sharp_v_at(v, depth + 1);
    match v {
        Value::Null => "interface {}(nil)".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n, false),
        Value::String(s) => go_quote(s),
        Value::Array(a) => format!(
            "[]interface {{}}{{{}}}",
            a.iter().map(&go_sharp_v).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| {
                    format!(
                        "{}:{}",
                        go_quote(k),
                        m.get(*k).map(&go_sharp_v).unwrap_or_default()
                    )
                })
                .collect();
            format!("map[string]interface {{}}{{{}}}", parts.join(", "))
        }
    }
}

/// field.Error's rendering of BadValue: nil becomes the string "null", scalars print with %v / %q,
/// anything else with %#v.
fn go_bad_value(v: &Value) -> String {
    match v {
        Value::Null => go_quote("null"),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n, false),
        Value::String(s) => go_quote(s),
        other => go_sharp_v(other),
    }
}

// ---------------------------------------------------------------------------------------------
// Schema accessors tolerant of malformed input.
// ---------------------------------------------------------------------------------------------

/// Deeper nesting than this is not descended into; serde_json refuses deeper documents anyway, and
/// the bound keeps hand-built values from exhausting the stack.
const MAX_DEPTH: usize = 200;

fn get<'a>(s: &'a Value, k: &str) -> Option<&'a Value> {
    s.as_object()?.get(k)
}
fn flag(s: &Value, k: &str) -> bool {
    get(s, k).and_then(Value::as_bool).unwrap_or(false)
}
fn get_str<'a>(s: &'a Value, k: &str) -> Option<&'a str> {
    get(s, k).and_then(Value::as_str)
}
fn type_str(s: &Value) -> &str {
    get_str(s, "type").unwrap_or("")
}
fn properties(s: &Value) -> Option<&Map<String, Value>> {
    get(s, "properties")?.as_object()
}
fn items(s: &Value) -> Option<&Value> {
    get(s, "items").filter(|v| v.is_object())
}
fn get_f64(s: &Value, k: &str) -> Option<f64> {
    get(s, k).and_then(Value::as_f64)
}
/// Integer-valued keywords (maxLength, ...) given as 5, 5.0 or even a huge float.
fn get_i64(s: &Value, k: &str) -> Option<i64> {
    let v = get(s, k)?;
    if let Some(i) = v.as_i64() {
        return Some(i);
    }
    if v.is_u64() {
        return Some(i64::MAX);
    }
    let f = v.as_f64()?;
    if f.is_finite() {
        Some(f.clamp(i64::MIN as f64, i64::MAX as f64) as i64)
    } else {
        None
    }
}
fn str_list(s: &Value, k: &str) -> Vec<String> {
    get(s, k)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}
fn schema_list<'a>(s: &'a Value, k: &str) -> Vec<&'a Value> {
    get(s, k)
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

enum Additional<'a> {
    /// Absent or `false`: undeclared keys are unknown.
    No,
    /// `true`: anything goes, nothing below is known.
    Any,
    Schema(&'a Value),
}

fn additional(s: &Value) -> Additional<'_> {
    match get(s, "additionalProperties") {
        Some(Value::Bool(true)) => Additional::Any,
        Some(v @ Value::Object(_)) => Additional::Schema(v),
        _ => Additional::No,
    }
}

fn preserves_unknown(s: &Value) -> bool {
    flag(s, "x-kubernetes-preserve-unknown-fields")
}

const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// ObjectMeta's JSON fields: an embedded resource's metadata is round-tripped through the typed
/// struct, which drops anything else.
const OBJECT_META_FIELDS: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

// ---------------------------------------------------------------------------------------------
// Defaulting
// ---------------------------------------------------------------------------------------------

/// Applies `default`s as the apiserver does (defaults inside objects that are present; a missing property
/// with a default is created; an absent parent object is not created unless it has its own default).
/// Like the apiserver's decoder, nulls in non-nullable fields without a default are dropped first, and
/// such nulls with a default are replaced by it.
pub fn apply_defaults(value: &mut Value, schema: &Value) {
    default_rec(value, schema, 0);
}

fn default_rec(x: &mut Value, s: &Value, depth: usize) {
    if depth > MAX_DEPTH || !s.is_object() {
        return;
    }
    match x {
        Value::Object(m) => {
            let props = properties(s);
            let add = additional(s);
            // PruneNonNullableNullsWithoutDefaults.
            m.retain(|k, v| {
                if !v.is_null() {
                    return true;
                }
                let ps = match props.and_then(|p| p.get(k)) {
                    Some(ps) => Some(ps),
                    None => match add {
                        Additional::Schema(a) => Some(a),
                        _ => None,
                    },
                };
                match ps {
                    Some(ps) if ps.is_object() => {
                        flag(ps, "nullable") || get(ps, "default").is_some_and(|d| !d.is_null())
                    }
                    _ => true,
                }
            });
            if let Some(props) = props {
                for (k, ps) in props {
                    let Some(d) = get(ps, "default") else {
                        continue;
                    };
                    if d.is_null() {
                        continue;
                    }
                    let missing = match m.get(k) {
                        None => true,
                        Some(Value::Null) => !flag(ps, "nullable"),
                        Some(_) => false,
                    };
                    if missing {
                        m.insert(k.clone(), d.clone());
                    }
                }
            }
            for (k, v) in m.iter_mut() {
                if let Some(ps) = props.and_then(|p| p.get(k)) {
                    default_rec(v, ps, depth + 1);
                } else if let Additional::Schema(a) = add {
                    default_rec(v, a, depth + 1);
                }
            }
        }
        Value::Array(a) => {
            if let Some(is) = items(s) {
                for v in a.iter_mut() {
                    default_rec(v, is, depth + 1);
                }
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Pruning
// ---------------------------------------------------------------------------------------------

/// Removes fields not declared in the schema (honouring x-kubernetes-preserve-unknown-fields,
/// additionalProperties, x-kubernetes-embedded-resource where apiVersion/kind/metadata are kept,
/// int-or-string); returns removed paths as `spec.foo`, `spec.items[0].bar`, sorted as the apiserver
/// reports them. At the root, apiVersion, kind and metadata are always kept and never reported.
pub fn prune(value: &mut Value, schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let s = if schema.is_object() {
        Some(schema)
    } else {
        None
    };
    if let Value::Object(m) = value {
        if s.is_some_and(preserves_unknown) {
            skip_prune_object(m, s, true, "", &mut out, 0);
        } else {
            prune_object(m, s, true, "", &mut out, 0);
        }
    }
    out.sort();
    out
}

fn join_key(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_string()
    } else {
        format!("{path}.{k}")
    }
}

fn prune_rec(x: &mut Value, s: Option<&Value>, path: &str, out: &mut Vec<String>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let s = s.filter(|s| s.is_object());
    if let Some(sv) = s
        && preserves_unknown(sv)
    {
        skip_prune(x, sv, path, out, depth);
        return;
    }
    match x {
        Value::Object(m) => prune_object(m, s, false, path, out, depth),
        Value::Array(a) => {
            let is = s.and_then(items);
            for (i, v) in a.iter_mut().enumerate() {
                prune_rec(v, is, &format!("{path}[{i}]"), out, depth + 1);
            }
        }
        _ => {}
    }
}

fn prune_object(
    m: &mut Map<String, Value>,
    s: Option<&Value>,
    root: bool,
    path: &str,
    out: &mut Vec<String>,
    depth: usize,
) {
    let embedded = root || s.is_some_and(|s| flag(s, "x-kubernetes-embedded-resource"));
    let props = s.and_then(properties);
    let add = s.map(additional).unwrap_or(Additional::No);
    let mut remove = Vec::new();
    for (k, v) in m.iter_mut() {
        if root && META_FIELDS.contains(&k.as_str()) {
            continue;
        }
        if embedded {
            match k.as_str() {
                "apiVersion" | "kind" if v.is_string() => continue,
                "metadata" if v.is_object() => {
                    prune_embedded_metadata(v, &join_key(path, k), out);
                    continue;
                }
                _ => {}
            }
        }
        let child = join_key(path, k);
        if let Some(ps) = props.and_then(|p| p.get(k)) {
            prune_rec(v, Some(ps), &child, out, depth + 1);
        } else {
            match add {
                Additional::Schema(a) => prune_rec(v, Some(a), &child, out, depth + 1),
                Additional::Any => {}
                Additional::No => remove.push(k.clone()),
            }
        }
    }
    for k in remove {
        m.shift_remove(&k);
        out.push(join_key(path, &k));
    }
}

fn prune_embedded_metadata(v: &mut Value, path: &str, out: &mut Vec<String>) {
    if let Value::Object(m) = v {
        let unknown: Vec<String> = m
            .keys()
            .filter(|k| !OBJECT_META_FIELDS.contains(&k.as_str()))
            .cloned()
            .collect();
        for k in unknown {
            m.shift_remove(&k);
            out.push(join_key(path, &k));
        }
    }
}

/// Under x-kubernetes-preserve-unknown-fields unknown keys stay, but declared ones are still pruned.
fn skip_prune(x: &mut Value, s: &Value, path: &str, out: &mut Vec<String>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match x {
        Value::Object(m) => skip_prune_object(m, Some(s), false, path, out, depth),
        Value::Array(a) => {
            if let Some(is) = items(s) {
                for (i, v) in a.iter_mut().enumerate() {
                    skip_prune(v, is, &format!("{path}[{i}]"), out, depth + 1);
                }
            }
        }
        _ => {}
    }
}

fn skip_prune_object(
    m: &mut Map<String, Value>,
    s: Option<&Value>,
    root: bool,
    path: &str,
    out: &mut Vec<String>,
    depth: usize,
) {
    let Some(s) = s else { return };
    let embedded = root || flag(s, "x-kubernetes-embedded-resource");
    let props = properties(s);
    let add = additional(s);
    for (k, v) in m.iter_mut() {
        if embedded && META_FIELDS.contains(&k.as_str()) {
            if !root && k == "metadata" {
                prune_embedded_metadata(v, &join_key(path, k), out);
            }
            continue;
        }
        let child = join_key(path, k);
        if let Some(ps) = props.and_then(|p| p.get(k)) {
            prune_rec(v, Some(ps), &child, out, depth + 1);
        } else if let Additional::Schema(a) = add {
            prune_rec(v, Some(a), &child, out, depth + 1);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Regexes (Go RE2 syntax run on the regex crate)
// ---------------------------------------------------------------------------------------------

/// Go's \d, \w and \s are ASCII-only while the regex crate's are Unicode-aware; rewrite them so
/// patterns accept exactly what the apiserver accepts.
fn go_pattern_to_rust(p: &str) -> String {
    let mut out = String::with_capacity(p.len() + 8);
    let mut chars = p.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        if c == '\\' {
            let Some(n) = chars.next() else {
                out.push('\\');
                break;
            };
            match (n, in_class) {
                ('d', false) => out.push_str("[0-9]"),
                ('w', false) => out.push_str("[0-9A-Za-z_]"),
                ('s', false) => out.push_str("[\\t\\n\\f\\r ]"),
                ('d', true) => out.push_str("0-9"),
                ('w', true) => out.push_str("0-9A-Za-z_"),
                ('s', true) => out.push_str("\\t\\n\\f\\r "),
                (n, _) => {
                    out.push('\\');
                    out.push(n);
                }
            }
            continue;
        }
        if in_class {
            if c == ']' {
                in_class = false;
            }
            out.push(c);
            continue;
        }
        if c == '[' {
            in_class = true;
            out.push(c);
            // A leading ']' (after an optional '^') is a literal inside the class.
            if chars.peek() == Some(&'^') {
                out.push('^');
                chars.next();
            }
            if chars.peek() == Some(&']') {
                out.push(']');
                chars.next();
            }
            // POSIX classes like [[:alpha:]] keep their own brackets.
            continue;
        }
        out.push(c);
    }
    out
}

fn compiled_regex(pattern: &str) -> Result<regex::Regex, String> {
    static CACHE: OnceLock<Mutex<HashMap<String, Result<regex::Regex, String>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Ok(c) = cache.lock()
        && let Some(r) = c.get(pattern)
    {
        return r.clone();
    }
    let rust = go_pattern_to_rust(pattern);
    let compiled = regex::RegexBuilder::new(&rust)
        .size_limit(1 << 22)
        .nest_limit(200)
        .build()
        .map_err(|e| go_regex_error(pattern, &e));
    if let Ok(mut c) = cache.lock() {
        // Schemas are few; the bound only protects against pathological churn.
        if c.len() > 4096 {
            c.clear();
        }
        c.insert(pattern.to_string(), compiled.clone());
    }
    compiled
}

/// Approximates regexp.Compile's error text ("error parsing regexp: <what>: `<where>`").
fn go_regex_error(pattern: &str, e: &regex::Error) -> String {
    let msg = e.to_string();
    let lower = msg.to_lowercase();
    let what = if lower.contains("unclosed character class") {
        format!(
            "missing closing ]: `{}`",
            pattern.rfind('[').map(|i| &pattern[i..]).unwrap_or(pattern)
        )
    } else if lower.contains("unclosed group") {
        format!("missing closing ): `{pattern}`")
    } else if lower.contains("unopened group") {
        format!("unexpected ): `{pattern}`")
    } else if lower.contains("repetition operator missing expression") {
        format!(
            "missing argument to repetition operator: `{}`",
            pattern.chars().next().map(String::from).unwrap_or_default()
        )
    } else if lower.contains("look-around") {
        let at = pattern
            .find("(?")
            .and_then(|i| pattern.get(i..i + 3))
            .unwrap_or(pattern);
        format!("invalid or unsupported Perl syntax: `{at}`")
    } else if lower.contains("escape") {
        format!("invalid escape sequence: `{pattern}`")
    } else {
        let last = msg
            .lines()
            .rfind(|l| !l.trim().is_empty())
            .unwrap_or("invalid pattern")
            .trim()
            .to_string();
        let last = last.strip_prefix("error: ").unwrap_or(&last).to_string();
        format!("{last}: `{pattern}`")
    };
    format!("error parsing regexp: {what}")
}

// ---------------------------------------------------------------------------------------------
// Value validation (kube-openapi semantics)
// ---------------------------------------------------------------------------------------------

/// Validates an object after defaulting and pruning. `old` is the previous object on update (for CEL
/// transition rules), None on create.
pub fn validate(value: &Value, old: Option<&Value>, schema: &Value) -> Vec<FieldError> {
    let mut v = Validator {
        base: String::new(),
        root_object: true,
        out: Vec::new(),
    };
    v.node(value, schema, "", 0);
    let mut errs = v.out;
    errs.extend(validate_embedded(value, schema, "", true, 0));
    errs.extend(validate_list_types(value, schema, "", 0));
    #[cfg(feature = "cel")]
    if cel_rules::schema_has_rules(schema, 0) {
        // Rules could misbehave on values of the wrong type, so the apiserver does not run them then.
        if errs.iter().any(|e| {
            matches!(
                e.kind,
                FieldErrorKind::NotSupported | FieldErrorKind::TypeInvalid
            )
        }) {
            errs.push(FieldError::invalid(
                "<nil>",
                Value::Null,
                "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            ));
        } else {
            cel_rules::validate(value, old, schema, "", &mut errs, 0);
        }
    }
    // Without CEL the previous object has no use: only transition rules read it.
    #[cfg(not(feature = "cel"))]
    let _ = old;
    errs
}

struct Validator {
    /// The field.Path the kube-openapi names hang below: empty (nil) for objects, `...default` when
    /// a CRD's defaults are checked.
    base: String,
    /// Whether the top-level value is a resource, whose apiVersion/kind/metadata need no declaration.
    root_object: bool,
    out: Vec<FieldError>,
}

impl Validator {
    fn sub(&self) -> Validator {
        Validator {
            base: self.base.clone(),
            root_object: false,
            out: Vec::new(),
        }
    }

    /// kube-openapi's error name becomes a child of the base path, the leading "." of names built at
    /// the root trimmed; with neither, Go prints a nil path as "<nil>".
    fn path(&self, name: &str) -> String {
        let n = name.strip_prefix('.').unwrap_or(name);
        match (self.base.is_empty(), n.is_empty()) {
            (true, true) => "<nil>".into(),
            (true, false) => n.into(),
            (false, true) => self.base.clone(),
            (false, false) => format!("{}.{n}", self.base),
        }
    }

    fn base_path(&self) -> String {
        if self.base.is_empty() {
            "<nil>".into()
        } else {
            self.base.clone()
        }
    }

    fn type_error(&mut self, name: &str, expected: &str, got: &str) {
        let path = self.path(name);
        self.out.push(FieldError::type_invalid(
            path,
            Value::String(got.into()),
            format!(
                "{name} in body must be of type {expected}: {}",
                go_quote(got)
            ),
        ));
    }

    fn invalid(&mut self, name: &str, value: Value, detail: String) {
        let path = self.path(name);
        self.out.push(FieldError::invalid(path, value, detail));
    }

    fn node(&mut self, x: &Value, s: &Value, name: &str, depth: usize) {
        if depth > MAX_DEPTH || !s.is_object() {
            return;
        }
        if x.is_null() {
            // kube-openapi only runs the type and enum validators on nil.
            self.check_type(x, s, name);
            self.check_enum(x, s, name);
            return;
        }
        self.check_type(x, s, name);
        self.check_junctors(x, s, name, depth);
        if let Value::String(st) = x {
            self.check_string(st, s, name);
            self.check_format(st, s, name);
        }
        if let Value::Number(n) = x {
            self.check_number(x, n.as_f64().unwrap_or(0.0), s, name);
        }
        if let Value::Array(a) = x {
            self.check_array(a, s, name, depth);
        }
        self.check_enum(x, s, name);
        if let Value::Object(m) = x {
            self.check_object(m, s, name, depth);
        }
    }

    fn check_type(&mut self, x: &Value, s: &Value, name: &str) {
        let types = schema_types(s);
        if types.is_empty() {
            return;
        }
        let has = |t: &str| types.iter().any(|x| x == t);
        if x.is_null() {
            if !has("null") && !flag(s, "nullable") {
                self.type_error(name, &types.join(","), "null");
            }
            return;
        }
        let sch = json_type(x);
        let data_format = match sch {
            "integer" => "int64",
            "number" => "double",
            _ => "",
        };
        let is_float_int =
            sch == "number" && x.as_f64().is_some_and(is_json_integer) && has("integer");
        let is_int_float = sch == "integer" && has("number");
        let format = get_str(s, "format").unwrap_or("");
        let string_or_array = x.is_string() || x.is_array();
        if !string_or_array
            && !format.is_empty()
            && !(has(sch)
                || format == data_format
                || is_float_int
                || is_int_float
                || (format == "float64" && data_format == "float32"))
        {
            self.type_error(name, format, data_format);
            return;
        }
        // kube-openapi skips the type check for strings and arrays carrying a non-numeric format.
        if string_or_array && !(has("number") || has("integer") || format.is_empty()) {
            return;
        }
        if !(has(sch) || is_float_int || is_int_float) {
            self.type_error(name, &types.join(","), sch);
        }
    }

    fn check_junctors(&mut self, x: &Value, s: &Value, name: &str, depth: usize) {
        let quoted = go_quote(name);
        let any_of = schema_list(s, "anyOf");
        if !any_of.is_empty() {
            let mut best: Option<Vec<FieldError>> = None;
            let mut ok = false;
            for sub in any_of {
                let mut v = self.sub();
                v.node(x, sub, name, depth + 1);
                if v.out.is_empty() {
                    ok = true;
                    best = None;
                    break;
                }
                if best.as_ref().is_none_or(|b| v.out.len() < b.len()) {
                    best = Some(v.out);
                }
            }
            if !ok {
                let p = self.base_path();
                self.out.push(FieldError::invalid(
                    p,
                    Value::String(String::new()),
                    format!("{quoted} must validate at least one schema (anyOf)"),
                ));
            }
            if let Some(b) = best {
                self.out.extend(b);
            }
        }
        let one_of = schema_list(s, "oneOf");
        if !one_of.is_empty() {
            let mut best: Option<Vec<FieldError>> = None;
            let mut valid = 0;
            for sub in one_of {
                let mut v = self.sub();
                v.node(x, sub, name, depth + 1);
                if v.out.is_empty() {
                    valid += 1;
                    best = None;
                    continue;
                }
                if valid == 0 && best.as_ref().is_none_or(|b| v.out.len() < b.len()) {
                    best = Some(v.out);
                }
            }
            if valid != 1 {
                let extra = if valid == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {valid} valid alternatives")
                };
                let p = self.base_path();
                self.out.push(FieldError::invalid(
                    p,
                    Value::String(String::new()),
                    format!("{quoted} must validate one and only one schema (oneOf). {extra}"),
                ));
                if let Some(b) = best {
                    self.out.extend(b);
                }
            }
        }
        let all_of = schema_list(s, "allOf");
        if !all_of.is_empty() {
            let mut valid = 0;
            let mut errs = Vec::new();
            for sub in &all_of {
                let mut v = self.sub();
                v.node(x, sub, name, depth + 1);
                if v.out.is_empty() {
                    valid += 1;
                }
                errs.extend(v.out);
            }
            self.out.extend(errs);
            if valid != all_of.len() {
                let extra = if valid == 0 { ". None validated" } else { "" };
                let p = self.base_path();
                self.out.push(FieldError::invalid(
                    p,
                    Value::String(String::new()),
                    format!("{quoted} must validate all the schemas (allOf){extra}"),
                ));
            }
        }
        if let Some(not) = get(s, "not").filter(|n| n.is_object()) {
            let mut v = self.sub();
            v.node(x, not, name, depth + 1);
            if v.out.is_empty() {
                let p = self.base_path();
                self.out.push(FieldError::invalid(
                    p,
                    Value::String(String::new()),
                    format!("{quoted} must not validate the schema (not)"),
                ));
            }
        }
    }

    fn check_string(&mut self, st: &str, s: &Value, name: &str) {
        let len = st.chars().count() as i64;
        if let Some(max) = get_i64(s, "maxLength")
            && len > max
        {
            let path = self.path(name);
            self.out.push(FieldError::too_long(path, max));
        }
        if let Some(min) = get_i64(s, "minLength")
            && len < min
        {
            self.invalid(
                name,
                Value::String(st.into()),
                format!("{name} in body should be at least {min} chars long"),
            );
        }
        if let Some(p) = get_str(s, "pattern").filter(|p| !p.is_empty()) {
            match compiled_regex(p) {
                Ok(re) => {
                    if !re.is_match(st) {
                        self.invalid(
                            name,
                            Value::String(st.into()),
                            format!("{name} in body should match '{p}'"),
                        );
                    }
                }
                Err(e) => self.invalid(
                    name,
                    Value::String(st.into()),
                    format!("{name} in body should match '{p}, but pattern is invalid: {e}'"),
                ),
            }
        }
    }

    fn check_format(&mut self, st: &str, s: &Value, name: &str) {
        let Some(format) = get_str(s, "format") else {
            return;
        };
        if let Some(false) = format_ok(format, st) {
            self.type_error(name, format, st);
        }
    }

    fn check_number(&mut self, x: &Value, f: f64, s: &Value, name: &str) {
        if let Some(factor) = get_f64(s, "multipleOf") {
            if factor <= 0.0 {
                self.invalid(
                    name,
                    Value::from(factor),
                    format!(
                        "factor MultipleOf declared for {name} must be positive: {}",
                        go_float(factor)
                    ),
                );
            } else {
                let mult = if factor < 1.0 {
                    1.0 / factor * f
                } else {
                    f / factor
                };
                if !is_json_integer(mult) {
                    self.invalid(
                        name,
                        x.clone(),
                        format!(
                            "{name} in body should be a multiple of {}",
                            go_float(factor)
                        ),
                    );
                }
            }
        }
        if let Some(max) = get_f64(s, "maximum") {
            let excl = flag(s, "exclusiveMaximum");
            if (excl && f >= max) || f > max {
                let what = if excl {
                    "less than"
                } else {
                    "less than or equal to"
                };
                self.invalid(
                    name,
                    x.clone(),
                    format!("{name} in body should be {what} {}", go_float(max)),
                );
            }
        }
        if let Some(min) = get_f64(s, "minimum") {
            let excl = flag(s, "exclusiveMinimum");
            if (excl && f <= min) || f < min {
                let what = if excl {
                    "greater than"
                } else {
                    "greater than or equal to"
                };
                self.invalid(
                    name,
                    x.clone(),
                    format!("{name} in body should be {what} {}", go_float(min)),
                );
            }
        }
    }

    fn check_array(&mut self, a: &[Value], s: &Value, name: &str, depth: usize) {
        if let Some(is) = items(s) {
            for (i, v) in a.iter().enumerate() {
                self.node(v, is, &format!("{name}[{i}]"), depth + 1);
            }
        }
        let size = a.len() as i64;
        if let Some(min) = get_i64(s, "minItems")
            && size < min
        {
            self.invalid(
                name,
                Value::from(size),
                format!("{name} in body should have at least {min} items"),
            );
        }
        if let Some(max) = get_i64(s, "maxItems")
            && size > max
        {
            let path = self.path(name);
            self.out.push(FieldError::too_many(path, size, max));
        }
        if flag(s, "uniqueItems") {
            let mut seen = HashSet::new();
            if a.iter().any(|v| !seen.insert(canonical_key(v))) {
                self.invalid(
                    name,
                    Value::String(String::new()),
                    format!("{name} in body shouldn't contain duplicates"),
                );
            }
        }
    }

    fn check_enum(&mut self, x: &Value, s: &Value, name: &str) {
        let Some(Value::Array(values)) = get(s, "enum") else {
            return;
        };
        if values.is_empty() {
            return;
        }
        if values.iter().any(|e| json_equal(x, e)) {
            return;
        }
        let supported: Vec<String> = values
            .iter()
            .map(|e| {
                if let Value::String(s) = e {
                    s.clone()
                } else {
                    go_json(e)
                }
            })
            .collect();
        let path = self.path(name);
        self.out
            .push(FieldError::not_supported(path, x.clone(), &supported));
    }

    fn check_object(&mut self, m: &Map<String, Value>, s: &Value, name: &str, depth: usize) {
        let n = m.len() as i64;
        if let Some(min) = get_i64(s, "minProperties")
            && n < min
        {
            self.invalid(
                name,
                Value::from(n),
                format!("{name} in body should have at least {min} properties"),
            );
            return;
        }
        if let Some(max) = get_i64(s, "maxProperties")
            && n > max
        {
            let path = self.path(name);
            self.out.push(FieldError::too_many(path, n, max));
            return;
        }
        let props = properties(s);
        let is_root = self.root_object && depth == 0;
        let declared = |k: &str| props.is_some_and(|p| p.contains_key(k));
        match get(s, "additionalProperties") {
            Some(Value::Bool(false)) => {
                for k in m.keys() {
                    if declared(k) || (is_root && META_FIELDS.contains(&k.as_str())) {
                        continue;
                    }
                    self.invalid(
                        name,
                        Value::String(k.clone()),
                        format!("{name}.{k} in body is a forbidden property"),
                    );
                }
            }
            Some(a @ Value::Object(_)) => {
                for (k, v) in m {
                    if declared(k) || (is_root && META_FIELDS.contains(&k.as_str())) {
                        continue;
                    }
                    self.node(v, a, &format!("{name}.{k}"), depth + 1);
                }
            }
            _ => {}
        }
        if let Some(props) = props {
            for (k, ps) in props {
                if let Some(v) = m.get(k) {
                    self.node(v, ps, &join_key(name, k), depth + 1);
                }
            }
        }
        for k in str_list(s, "required") {
            if !m.contains_key(&k) {
                let path = self.path(&join_key(name, &k));
                self.out.push(FieldError::required(path, ""));
            }
        }
    }
}

fn schema_types(s: &Value) -> Vec<String> {
    if flag(s, "x-kubernetes-int-or-string") {
        return vec!["integer".into(), "string".into()];
    }
    match get(s, "type") {
        Some(Value::String(t)) if !t.is_empty() => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(|t| t.as_str().map(String::from))
            .collect(),
        _ => Vec::new(),
    }
}

/// The JSON type of a decoded value as kube-openapi infers it (int64 vs float64 after decoding).
fn json_type(x: &Value) -> &'static str {
    match x {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) => {
            if n.is_i64() {
                "integer"
            } else {
                "number"
            }
        }
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// swag.IsFloat64AJSONInteger.
fn is_json_integer(f: f64) -> bool {
    if !f.is_finite() || f.abs() > 9007199254740992.0 * 1024.0 {
        return false;
    }
    let r = f.round();
    if r == f {
        return true;
    }
    let diff = (f - r).abs();
    diff / (f.abs() + r.abs()) < 1e-15
}

/// Equality as Go's DeepEqual after the enum validator's conversions: numbers compare by value.
fn json_equal(a: &Value, b: &Value) -> bool {
    json_equal_at(a, b, 0)
}

fn json_equal_at(a: &Value, b: &Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let json_equal = |a: &Value, b: &Value| json_equal_at(a, b, depth + 1);
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// A key identifying a value the way the list-type validators hash it (type-sensitive, key-order
/// insensitive).
fn canonical_key(v: &Value) -> String {
    format!("{}:{}", json_type(v), go_json(v))
}

// --- formats ------------------------------------------------------------------------------------

/// Some(valid) for formats apiextensions checks, None for formats it ignores. Names are normalised
/// the way go-openapi/strfmt does (case and dashes/underscores ignored).
fn format_ok(format: &str, s: &str) -> Option<bool> {
    let norm: String = format
        .chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    Some(match norm.as_str() {
        "datetime" => is_date_time(s),
        "date" => is_date(s),
        "byte" => {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(s.replace(['\r', '\n'], ""))
                .is_ok()
        }
        "uuid" => is_uuid(s, None),
        "uuid3" => is_uuid(s, Some('3')),
        "uuid4" => is_uuid(s, Some('4')),
        "uuid5" => is_uuid(s, Some('5')),
        "ipv4" => s.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => s.contains(':') && s.parse::<std::net::Ipv6Addr>().is_ok(),
        "cidr" => is_cidr(s),
        "mac" => is_mac(s),
        _ => return None,
    })
}

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = s.get(r)?;
        if part.bytes().all(|c| c.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    if !(1..=12).contains(&m) || d == 0 {
        return false;
    }
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    d <= days[(m - 1) as usize]
}

/// strfmt.IsDateTime: a date, a 't', then hh:mm:ss[.frac](z|±hh:mm), case-insensitively.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    let Ok(re) =
        compiled_regex(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
    else {
        return false;
    };
    let Some(c) = re.captures(time) else {
        return false;
    };
    let field = |i: usize| c.get(i).map(|m| m.as_str()).unwrap_or("99");
    field(1) <= "23" && field(2) <= "59" && field(3) <= "59"
}

fn is_uuid(s: &str, version: Option<char>) -> bool {
    let hex: String = s.chars().filter(|c| *c != '-').collect();
    let dashes_ok = match s.len() {
        32 => !s.contains('-'),
        36 => s.char_indices().all(|(i, c)| {
            if [8, 13, 18, 23].contains(&i) {
                c == '-'
            } else {
                c != '-'
            }
        }),
        _ => false,
    };
    if !dashes_ok || hex.len() != 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return false;
    }
    match version {
        None => true,
        Some(v) => {
            let variant_ok = hex
                .chars()
                .nth(16)
                .is_some_and(|c| matches!(c.to_ascii_lowercase(), '8' | '9' | 'a' | 'b'));
            hex.chars().nth(12) == Some(v) && variant_ok
        }
    }
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    if bits.is_empty() || !bits.bytes().all(|b| b.is_ascii_digit()) || bits.len() > 3 {
        return false;
    }
    let Ok(bits) = bits.parse::<u32>() else {
        return false;
    };
    if ip.contains(':') {
        ip.parse::<std::net::Ipv6Addr>().is_ok() && bits <= 128
    } else {
        ip.parse::<std::net::Ipv4Addr>().is_ok() && bits <= 32
    }
}

/// net.ParseMAC: 6, 8 or 20 octets as aa:bb:.., aa-bb-.. or aabb.ccdd.. groups.
fn is_mac(s: &str) -> bool {
    let octets_ok = |n: usize| n == 6 || n == 8 || n == 20;
    if s.contains(':') || s.contains('-') {
        let sep = if s.contains(':') { ':' } else { '-' };
        let parts: Vec<&str> = s.split(sep).collect();
        octets_ok(parts.len())
            && parts
                .iter()
                .all(|p| p.len() == 2 && p.chars().all(|c| c.is_ascii_hexdigit()))
    } else if s.contains('.') {
        let parts: Vec<&str> = s.split('.').collect();
        octets_ok(parts.len() * 2)
            && parts
                .iter()
                .all(|p| p.len() == 4 && p.chars().all(|c| c.is_ascii_hexdigit()))
    } else {
        false
    }
}

// --- embedded resources ---------------------------------------------------------------------------

const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    if !s.split('.').all(is_dns1123_label) {
        errs.push(DNS1123_SUBDOMAIN_MSG.to_string());
    }
    errs
}

fn dns1035_label_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    let b = s.as_bytes();
    let ok = !b.is_empty()
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[b.len() - 1] != b'-';
    if !ok {
        errs.push(DNS1035_LABEL_MSG.to_string());
    }
    errs
}

/// schemaobjectmeta.Validate: every object under an x-kubernetes-embedded-resource schema needs a
/// well-formed apiVersion and kind, and its metadata.name must be a DNS subdomain.
fn validate_embedded(
    x: &Value,
    s: &Value,
    path: &str,
    root: bool,
    depth: usize,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if depth > MAX_DEPTH || !s.is_object() {
        return errs;
    }
    match x {
        Value::Object(m) => {
            let embedded = flag(s, "x-kubernetes-embedded-resource");
            if embedded {
                let child = |k: &str| join_key(path, k);
                if !m.contains_key("apiVersion") {
                    errs.push(FieldError::required(
                        child("apiVersion"),
                        "must not be empty",
                    ));
                }
                if !m.contains_key("kind") {
                    errs.push(FieldError::required(child("kind"), "must not be empty"));
                }
                for (k, v) in m {
                    match k.as_str() {
                        "apiVersion" => match v.as_str() {
                            None => errs.push(FieldError::invalid(
                                child(k),
                                v.clone(),
                                "must be a string",
                            )),
                            Some("") => errs.push(FieldError::invalid(
                                child(k),
                                v.clone(),
                                "must not be empty",
                            )),
                            Some(av) if av.matches('/').count() > 1 => {
                                errs.push(FieldError::invalid(
                                    child(k),
                                    v.clone(),
                                    format!("unexpected GroupVersion string: {av}"),
                                ))
                            }
                            Some(_) => {}
                        },
                        "kind" => {
                            match v.as_str() {
                                None => errs.push(FieldError::invalid(
                                    child(k),
                                    v.clone(),
                                    "must be a string",
                                )),
                                Some("") => errs.push(FieldError::invalid(
                                    child(k),
                                    v.clone(),
                                    "must not be empty",
                                )),
                                Some(kind) => {
                                    let e = dns1035_label_errors(&kind.to_lowercase());
                                    if !e.is_empty() {
                                        errs.push(FieldError::invalid(
                                        child(k),
                                        v.clone(),
                                        format!("may have mixed case, but should otherwise match: {}", e.join(",")),
                                    ));
                                    }
                                }
                            }
                        }
                        "metadata" => {
                            if let Some(name) = v
                                .get("name")
                                .and_then(Value::as_str)
                                .filter(|n| !n.is_empty())
                            {
                                for e in dns1123_subdomain_errors(name) {
                                    errs.push(FieldError::invalid(
                                        format!("{}.name", child(k)),
                                        Value::String(name.into()),
                                        e,
                                    ));
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
            let props = properties(s);
            let add = additional(s);
            for (k, v) in m {
                if (root || embedded) && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                if let Some(ps) = props.and_then(|p| p.get(k)) {
                    errs.extend(validate_embedded(
                        v,
                        ps,
                        &join_key(path, k),
                        false,
                        depth + 1,
                    ));
                } else if let Additional::Schema(a) = add {
                    errs.extend(validate_embedded(
                        v,
                        a,
                        &join_key(path, k),
                        false,
                        depth + 1,
                    ));
                }
            }
        }
        Value::Array(a) => {
            if let Some(is) = items(s) {
                for (i, v) in a.iter().enumerate() {
                    errs.extend(validate_embedded(
                        v,
                        is,
                        &format!("{path}[{i}]"),
                        false,
                        depth + 1,
                    ));
                }
            }
        }
        _ => {}
    }
    errs
}

// --- list types -----------------------------------------------------------------------------------

/// structurallisttype.ValidateListSetsAndMaps.
fn validate_list_types(x: &Value, s: &Value, path: &str, depth: usize) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if depth > MAX_DEPTH || !s.is_object() {
        return errs;
    }
    match x {
        Value::Array(a) => {
            match get_str(s, "x-kubernetes-list-type") {
                Some("set") => errs.extend(validate_list_set(a, path)),
                Some("map") => errs.extend(validate_list_map(a, s, path)),
                _ => {}
            }
            if let Some(is) = items(s) {
                for (i, v) in a.iter().enumerate() {
                    errs.extend(validate_list_types(
                        v,
                        is,
                        &format!("{path}[{i}]"),
                        depth + 1,
                    ));
                }
            }
        }
        Value::Object(m) => {
            let props = properties(s);
            let add = additional(s);
            for (k, v) in m {
                if let Some(ps) = props.and_then(|p| p.get(k)) {
                    errs.extend(validate_list_types(v, ps, &join_key(path, k), depth + 1));
                } else if let Additional::Schema(a) = add {
                    errs.extend(validate_list_types(v, a, &join_key(path, k), depth + 1));
                }
            }
        }
        _ => {}
    }
    errs
}

fn index_path(path: &str, i: usize) -> String {
    let p = if path.is_empty() { "<nil>" } else { path };
    format!("{p}[{i}]")
}

fn validate_list_set(a: &[Value], path: &str) -> Vec<FieldError> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut errs = Vec::new();
    for (i, v) in a.iter().enumerate() {
        let count = seen.entry(canonical_key(v)).or_insert(0);
        *count += 1;
        // Each duplicated value is reported once, at its second occurrence.
        if *count == 2 {
            errs.push(FieldError::duplicate(index_path(path, i), v.clone()));
        }
    }
    errs
}

fn validate_list_map(a: &[Value], s: &Value, path: &str) -> Vec<FieldError> {
    for (i, v) in a.iter().enumerate() {
        if !v.is_object() && !v.is_null() {
            return vec![FieldError::invalid(
                index_path(path, i),
                v.clone(),
                "must be an object for an x-kubernetes-list-type of map",
            )];
        }
    }
    let keys = str_list(s, "x-kubernetes-list-map-keys");
    if keys.is_empty() {
        return Vec::new();
    }
    let item_props = items(s).and_then(properties);
    let mut seen: HashSet<String> = HashSet::new();
    let mut errs = Vec::new();
    for (i, v) in a.iter().enumerate() {
        let Some(obj) = v.as_object() else { continue };
        let mut key_map = Map::new();
        let mut complete = true;
        for k in &keys {
            let value = obj.get(k).or_else(|| {
                item_props
                    .and_then(|p| p.get(k))
                    .and_then(|ps| get(ps, "default"))
            });
            match value {
                Some(val) => {
                    key_map.insert(k.clone(), val.clone());
                }
                None => complete = false,
            }
        }
        // An item missing a key without default cannot collide meaningfully; required-ness is
        // reported by the schema validation instead.
        if !complete {
            continue;
        }
        let key_value = Value::Object(key_map);
        if !seen.insert(canonical_key(&key_value)) {
            errs.push(FieldError::duplicate(index_path(path, i), key_value));
        }
    }
    errs
}

// ---------------------------------------------------------------------------------------------
// CRD schema checks
// ---------------------------------------------------------------------------------------------

/// Checks a CRD's schema when the CRD is written (type set where required, valid patterns,
/// list-map-keys present in item properties and required or defaulted, ...), paths prefixed with
/// `path_prefix` (e.g. `spec.versions[0].schema.openAPIV3Schema`).
pub fn validate_schema(schema: &Value, path_prefix: &str) -> Vec<FieldError> {
    let mut out = Vec::new();
    if !schema.is_object() {
        out.push(FieldError::invalid(
            path_prefix,
            Value::String(json_type(schema).into()),
            "must be an object",
        ));
        return out;
    }
    if flag(schema, "nullable") {
        out.push(FieldError::forbidden(
            format!("{path_prefix}.nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let ssv = Ssv {
        allow_defaults: true,
        reason: String::new(),
        inside_meta: false,
    };
    openapi_checks(schema, path_prefix, &ssv, true, &mut out, 0);

    let mut structural = Vec::new();
    structural_invariants(schema, Level::Root, path_prefix, &mut structural, 0);
    structural_completeness(schema, path_prefix, &mut structural, 0);
    // The apiserver sorts these by message because they come out of map iteration.
    structural.sort_by_key(|e| e.to_string());
    if structural.is_empty() {
        validate_defaults(schema, path_prefix, true, &mut out, 0);
    } else {
        out.extend(structural);
    }
    out
}

#[derive(Clone)]
struct Ssv {
    allow_defaults: bool,
    reason: String,
    inside_meta: bool,
}

fn child(path: &str, k: &str) -> String {
    format!("{path}.{k}")
}
fn key_path(path: &str, k: &str, key: &str) -> String {
    format!("{path}.{k}[{key}]")
}

const OPENAPI_V3_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

/// ValidateCustomResourceDefinitionOpenAPISchema with the v3 standard validator.
fn openapi_checks(
    s: &Value,
    path: &str,
    ssv: &Ssv,
    is_root: bool,
    out: &mut Vec<FieldError>,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    let Some(obj) = s.as_object() else {
        if !s.is_null() {
            out.push(FieldError::invalid(
                path,
                Value::String(json_type(s).into()),
                "must be an object",
            ));
        }
        return;
    };
    // The checks live in separate functions so that the recursive frame stays small.
    openapi_local_checks(s, obj, path, ssv, out);
    openapi_recurse(s, obj, path, ssv, is_root, out, depth);
    openapi_extension_checks(s, obj, path, out);
}

#[inline(never)]
fn openapi_local_checks(
    s: &Value,
    obj: &Map<String, Value>,
    path: &str,
    ssv: &Ssv,
    out: &mut Vec<FieldError>,
) {
    // The v3 standard validator.
    match obj.get("type") {
        Some(Value::String(t)) if !t.is_empty() && !OPENAPI_V3_TYPES.contains(&t.as_str()) => {
            let supported: Vec<String> = OPENAPI_V3_TYPES.iter().map(|s| s.to_string()).collect();
            out.push(FieldError::not_supported(
                child(path, "type"),
                Value::String(t.clone()),
                &supported,
            ));
        }
        Some(v) if !v.is_string() && !v.is_null() => {
            out.push(FieldError::invalid(
                child(path, "type"),
                v.clone(),
                "must be a string",
            ));
        }
        _ => {}
    }
    if obj.get("default").is_some_and(|d| !d.is_null()) && !ssv.allow_defaults {
        let mut detail = "must not be set".to_string();
        if !ssv.reason.is_empty() {
            detail.push(' ');
            detail.push_str(&ssv.reason);
        }
        out.push(FieldError::forbidden(child(path, "default"), detail));
    }
    if obj
        .get("id")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
    {
        out.push(FieldError::forbidden(
            child(path, "id"),
            "id is not supported",
        ));
    }
    for (k, what) in [
        ("additionalItems", "additionalItems is not supported"),
        ("patternProperties", "patternProperties is not supported"),
        ("definitions", "definitions is not supported"),
        ("dependencies", "dependencies is not supported"),
        ("$ref", "$ref is not supported"),
    ] {
        let present = match obj.get(k) {
            None | Some(Value::Null) => false,
            Some(Value::Object(m)) if k == "patternProperties" || k == "definitions" => {
                !m.is_empty()
            }
            Some(_) => true,
        };
        if present {
            out.push(FieldError::forbidden(child(path, k), what));
        }
    }
    if type_str(s) == "null" {
        out.push(FieldError::forbidden(
            child(path, "type"),
            "type cannot be set to null, use nullable as an alternative",
        ));
    }
    if obj.get("items").is_some_and(Value::is_array) {
        out.push(FieldError::forbidden(
            child(path, "items"),
            "items must be a schema object and not an array",
        ));
    }
    if ssv.inside_meta && flag(s, "x-kubernetes-embedded-resource") {
        out.push(FieldError::forbidden(
            child(path, "x-kubernetes-embedded-resource"),
            "must not be used inside of resource meta",
        ));
    }

    if flag(s, "uniqueItems") {
        out.push(FieldError::forbidden(
            child(path, "uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
}

fn openapi_recurse(
    s: &Value,
    obj: &Map<String, Value>,
    path: &str,
    ssv: &Ssv,
    is_root: bool,
    out: &mut Vec<FieldError>,
    depth: usize,
) {
    let has_props = properties(s).is_some_and(|p| !p.is_empty());
    if let Some(ap) = obj.get("additionalProperties").filter(|v| !v.is_null()) {
        if has_props && (ap == &Value::Bool(false) || ap.is_object()) {
            out.push(FieldError::forbidden(
                child(path, "additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        let mut sub = ssv.clone();
        if ssv.inside_meta {
            sub.allow_defaults = false;
            sub.reason = "inside additionalProperties applying to object metadata".into();
        }
        if ap.is_object() {
            openapi_checks(
                ap,
                &child(path, "additionalProperties"),
                &sub,
                false,
                out,
                depth + 1,
            );
        } else if !ap.is_boolean() {
            out.push(FieldError::invalid(
                child(path, "additionalProperties"),
                ap.clone(),
                "must be a boolean or an object",
            ));
        }
    }
    if let Some(props) = properties(s) {
        let embedded = flag(s, "x-kubernetes-embedded-resource");
        for (k, ps) in props {
            let mut sub = ssv.clone();
            if (is_root || embedded) && META_FIELDS.contains(&k.as_str()) {
                sub.inside_meta = true;
                if is_root {
                    sub.allow_defaults = false;
                    sub.reason = format!("in top-level {k}");
                }
            }
            openapi_checks(
                ps,
                &key_path(path, "properties", k),
                &sub,
                false,
                out,
                depth + 1,
            );
        }
    } else if let Some(p) = obj
        .get("properties")
        .filter(|p| !p.is_null() && !p.is_object())
    {
        out.push(FieldError::invalid(
            child(path, "properties"),
            p.clone(),
            "must be an object",
        ));
    }
    if let Some(not) = obj.get("not").filter(|n| !n.is_null()) {
        openapi_checks(not, &child(path, "not"), ssv, false, out, depth + 1);
    }
    for junctor in ["allOf", "oneOf", "anyOf"] {
        for (i, sub) in schema_list(s, junctor).into_iter().enumerate() {
            openapi_checks(
                sub,
                &format!("{path}.{junctor}[{i}]"),
                ssv,
                false,
                out,
                depth + 1,
            );
        }
    }
    if let Some(is) = items(s) {
        openapi_checks(is, &child(path, "items"), ssv, false, out, depth + 1);
    }
}

#[inline(never)]
fn openapi_extension_checks(
    s: &Value,
    obj: &Map<String, Value>,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    if let Some(v) = obj.get("x-kubernetes-preserve-unknown-fields")
        && v == &Value::Bool(false)
    {
        out.push(FieldError::invalid(
            child(path, "x-kubernetes-preserve-unknown-fields"),
            v.clone(),
            "must be true or undefined",
        ));
    }
    let ty = type_str(s);
    let map_type = obj.get("x-kubernetes-map-type").filter(|v| !v.is_null());
    if let Some(mt) = map_type {
        if ty != "object" {
            if ty.is_empty() {
                out.push(FieldError::required(
                    child(path, "type"),
                    "must be object if x-kubernetes-map-type is specified",
                ));
            } else {
                out.push(FieldError::invalid(
                    child(path, "type"),
                    Value::String(ty.into()),
                    "must be object if x-kubernetes-map-type is specified",
                ));
            }
        }
        let mts = mt.as_str().unwrap_or("");
        if mts != "atomic" && mts != "granular" {
            out.push(FieldError::not_supported(
                child(path, "x-kubernetes-map-type"),
                mt.clone(),
                &["atomic".into(), "granular".into()],
            ));
        }
    }
    let list_type = obj.get("x-kubernetes-list-type").filter(|v| !v.is_null());
    let lt = list_type.map(|v| v.as_str().unwrap_or(""));
    if let Some(lt) = lt {
        if ty != "array" {
            if ty.is_empty() {
                out.push(FieldError::required(
                    child(path, "type"),
                    "must be array if x-kubernetes-list-type is specified",
                ));
            } else {
                out.push(FieldError::invalid(
                    child(path, "type"),
                    Value::String(ty.into()),
                    "must be array if x-kubernetes-list-type is specified",
                ));
            }
        } else if lt == "set"
            && let Some(is) = items(s)
        {
            match type_str(is) {
                "array" => {
                    if let Some(ilt) =
                        get_str(is, "x-kubernetes-list-type").filter(|t| *t != "atomic")
                    {
                        out.push(FieldError::invalid(
                            format!("{path}.items.x-kubernetes-list-type"),
                            Value::String(ilt.into()),
                            "must be atomic as item of a list with x-kubernetes-list-type=set",
                        ));
                    }
                }
                "object" if get_str(is, "x-kubernetes-map-type") != Some("atomic") => {
                    // The apiserver reports the item's list-type here (a nil pointer, "null").
                    let bad = get(is, "x-kubernetes-list-type")
                        .cloned()
                        .unwrap_or(Value::Null);
                    out.push(FieldError::invalid(
                        format!("{path}.items.x-kubernetes-map-type"),
                        bad,
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    ));
                }
                _ => {}
            }
        }
        if lt != "atomic" && lt != "set" && lt != "map" {
            let bad = list_type.cloned().unwrap_or(Value::Null);
            out.push(FieldError::not_supported(
                child(path, "x-kubernetes-list-type"),
                bad,
                &["atomic".into(), "set".into(), "map".into()],
            ));
        }
    }
    let map_keys = str_list(s, "x-kubernetes-list-map-keys");
    let map_keys_value = Value::Array(map_keys.iter().map(|k| Value::String(k.clone())).collect());
    if !map_keys.is_empty() {
        match lt {
            None => out.push(FieldError::required(
                child(path, "x-kubernetes-list-type"),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some(l) if l != "map" => out.push(FieldError::invalid(
                child(path, "x-kubernetes-list-type"),
                Value::String(l.into()),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            _ => {}
        }
    }
    if lt == Some("map") {
        if map_keys.is_empty() {
            out.push(FieldError::required(
                child(path, "x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match obj.get("items") {
            None | Some(Value::Null) => out.push(FieldError::required(
                child(path, "items"),
                "must have a schema if x-kubernetes-list-type is map",
            )),
            Some(Value::Object(_)) => {
                let is = items(s).unwrap_or(&Value::Null);
                let ity = type_str(is);
                if ity != "object" {
                    out.push(FieldError::invalid(
                        format!("{path}.items.type"),
                        Value::String(ity.into()),
                        "must be object if parent array's x-kubernetes-list-type is map",
                    ));
                } else {
                    let mut seen = HashSet::new();
                    for k in &map_keys {
                        match properties(is).and_then(|p| p.get(k)) {
                            Some(ks) => {
                                let kt = type_str(ks);
                                if kt == "array" || kt == "object" {
                                    out.push(FieldError::invalid(
                                        format!("{path}.items.properties[{k}].type"),
                                        Value::String(ity.into()),
                                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                    ));
                                }
                            }
                            None => out.push(FieldError::invalid(
                                child(path, "x-kubernetes-list-map-keys"),
                                map_keys_value.clone(),
                                "entries must all be names of item properties",
                            )),
                        }
                        if !seen.insert(k.clone()) {
                            out.push(FieldError::invalid(
                                child(path, "x-kubernetes-list-map-keys"),
                                map_keys_value.clone(),
                                "must not contain duplicate entries",
                            ));
                        }
                    }
                }
            }
            Some(other) => out.push(FieldError::invalid(
                child(path, "items"),
                other.clone(),
                "must only have a single schema if x-kubernetes-list-type is map",
            )),
        }
    }
    for (i, rule) in schema_list(s, "x-kubernetes-validations")
        .into_iter()
        .enumerate()
    {
        let base = format!("{path}.x-kubernetes-validations[{i}]");
        let r = get_str(rule, "rule").unwrap_or("");
        let msg = get_str(rule, "message").unwrap_or("");
        let has_newline = |t: &str| t.contains('\n') || t.contains('\r');
        if r.trim().is_empty() {
            out.push(FieldError::required(
                format!("{base}.rule"),
                "rule is not specified",
            ));
        } else if !msg.is_empty() && msg.trim().is_empty() {
            out.push(FieldError::invalid(
                format!("{base}.message"),
                Value::String(msg.into()),
                "message must be non-empty if specified",
            ));
        } else if has_newline(msg.trim()) {
            out.push(FieldError::invalid(
                format!("{base}.message"),
                Value::String(msg.into()),
                "message must not contain line breaks",
            ));
        } else if has_newline(r.trim()) && msg.trim().is_empty() {
            out.push(FieldError::required(
                format!("{base}.message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        #[cfg(feature = "cel")]
        if !r.trim().is_empty()
            && let Err(e) = cel_rules::compile(r)
        {
            out.push(FieldError::invalid(
                format!("{base}.rule"),
                Value::String(r.into()),
                format!("compilation failed: {e}"),
            ));
        }
    }
    // validateMapListKeysMapSet.
    if let (Some(lt @ ("set" | "map")), Some(is)) = (lt, items(s)) {
        if flag(is, "nullable") {
            out.push(FieldError::forbidden(
                format!("{path}.items.nullable"),
                format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
            ));
        }
        if lt == "map" {
            let required = str_list(is, "required");
            for k in &map_keys {
                let Some(ks) = properties(is).and_then(|p| p.get(k)) else {
                    continue;
                };
                if !required.contains(k) && get(ks, "default").is_none_or(Value::is_null) {
                    out.push(FieldError::required(
                        format!("{path}.items.properties[{k}].default"),
                        "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                    ));
                }
                if flag(ks, "nullable") {
                    out.push(FieldError::forbidden(
                        format!("{path}.items.properties[{k}].nullable"),
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    ));
                }
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Level {
    Root,
    Item,
    Field,
}

/// structuralschema.validateStructuralInvariants.
fn structural_invariants(
    s: &Value,
    lvl: Level,
    path: &str,
    out: &mut Vec<FieldError>,
    depth: usize,
) {
    if depth > MAX_DEPTH || !s.is_object() {
        return;
    }
    let ty = type_str(s);
    if ty == "array" && items(s).is_none() {
        out.push(FieldError::required(
            child(path, "items"),
            "must be specified",
        ));
    }
    if let Some(is) = items(s) {
        structural_invariants(is, Level::Item, &child(path, "items"), out, depth + 1);
    }
    if let Some(props) = properties(s) {
        for (k, ps) in props {
            structural_invariants(
                ps,
                Level::Field,
                &key_path(path, "properties", k),
                out,
                depth + 1,
            );
        }
    }
    if let Some(ap) = get(s, "additionalProperties").filter(|v| !v.is_null()) {
        if lvl == Level::Root {
            out.push(FieldError::forbidden(
                child(path, "additionalProperties"),
                "must not be used at the root",
            ));
        }
        if ap.is_object() {
            structural_invariants(
                ap,
                Level::Field,
                &child(path, "additionalProperties"),
                out,
                depth + 1,
            );
        }
    }
    let int_or_string = flag(s, "x-kubernetes-int-or-string");
    let preserve = preserves_unknown(s);
    let embedded = flag(s, "x-kubernetes-embedded-resource");
    if int_or_string && preserve {
        out.push(FieldError::invalid(
            child(path, "x-kubernetes-preserve-unknown-fields"),
            Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        out.push(FieldError::invalid(
            child(path, "x-kubernetes-embedded-resource"),
            Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    let skip_any_of = is_int_or_string_any_of(s);
    let skip_first_all_of_any_of = schema_list(s, "allOf")
        .first()
        .is_some_and(|a| is_int_or_string_any_of(a));
    value_validation(s, skip_any_of, skip_first_all_of_any_of, path, out, depth);

    if embedded && ty != "object" {
        if ty.is_empty() {
            out.push(FieldError::required(
                child(path, "type"),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        } else {
            out.push(FieldError::invalid(
                child(path, "type"),
                Value::String(ty.into()),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        }
    } else if ty.is_empty() && !int_or_string && !preserve {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        out.push(FieldError::required(child(path, "type"), detail));
    }
    if embedded && get(s, "additionalProperties").is_some_and(|v| !v.is_null()) {
        out.push(FieldError::forbidden(
            child(path, "additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !ty.is_empty() && ty != "object" {
        out.push(FieldError::invalid(
            child(path, "type"),
            Value::String(ty.into()),
            "must be object at the root",
        ));
    }
    let check_metadata = lvl == Level::Root || embedded;
    if let Some(props) = properties(s) {
        if check_metadata {
            for (k, want) in [
                ("kind", "string"),
                ("apiVersion", "string"),
                ("metadata", "object"),
            ] {
                if let Some(ps) = props.get(k) {
                    let t = type_str(ps);
                    if t != want {
                        out.push(FieldError::invalid(
                            format!("{path}.properties[{k}].type"),
                            Value::String(t.into()),
                            format!("must be {want}"),
                        ));
                    }
                }
            }
        }
        if lvl == Level::Root
            && let Some(meta) = props.get("metadata")
            && !root_metadata_is_restricted_to_names(meta)
        {
            out.push(FieldError::forbidden(
                        format!("{path}.properties[metadata]"),
                        "must not specify anything other than name and generateName, but metadata is implicitly specified",
                    ));
        }
    }
    if embedded && !preserve && properties(s).is_none_or(|p| p.is_empty()) {
        out.push(FieldError::required(
            child(path, "properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// The root metadata schema may only carry a type, a (separately forbidden) default, and
/// restrictions on name and generateName.
fn root_metadata_is_restricted_to_names(meta: &Value) -> bool {
    let Some(m) = meta.as_object() else {
        return true;
    };
    m.iter().all(|(k, v)| match k.as_str() {
        "type" | "default" => true,
        "properties" => v
            .as_object()
            .is_none_or(|p| p.keys().all(|k| k == "name" || k == "generateName")),
        _ => false,
    })
}

fn is_int_or_string_any_of(s: &Value) -> bool {
    let any_of = schema_list(s, "anyOf");
    any_of.len() == 2
        && any_of[0].as_object().is_some_and(|o| {
            o.len() == 1 && o.get("type") == Some(&Value::String("integer".into()))
        })
        && any_of[1]
            .as_object()
            .is_some_and(|o| o.len() == 1 && o.get("type") == Some(&Value::String("string".into())))
}

/// validateValueValidation: junctors and pattern of one schema node.
fn value_validation(
    s: &Value,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    path: &str,
    out: &mut Vec<FieldError>,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    if !skip_any_of {
        for (i, sub) in schema_list(s, "anyOf").into_iter().enumerate() {
            nested_value_validation(sub, false, &format!("{path}.anyOf[{i}]"), out, depth + 1);
        }
    }
    for (i, sub) in schema_list(s, "allOf").into_iter().enumerate() {
        nested_value_validation(
            sub,
            skip_first_all_of_any_of && i == 0,
            &format!("{path}.allOf[{i}]"),
            out,
            depth + 1,
        );
    }
    for (i, sub) in schema_list(s, "oneOf").into_iter().enumerate() {
        nested_value_validation(sub, false, &format!("{path}.oneOf[{i}]"), out, depth + 1);
    }
    if let Some(not) = get(s, "not").filter(|n| n.is_object()) {
        nested_value_validation(not, false, &child(path, "not"), out, depth + 1);
    }
    if let Some(p) = get_str(s, "pattern").filter(|p| !p.is_empty())
        && let Err(e) = compiled_regex(p)
    {
        out.push(FieldError::invalid(
            child(path, "pattern"),
            Value::String(p.into()),
            format!("must be a valid regular expression, but isn't: {e}"),
        ));
    }
}

/// validateNestedValueValidation: inside allOf/anyOf/oneOf/not only value validations are allowed.
fn nested_value_validation(
    s: &Value,
    skip_any_of: bool,
    path: &str,
    out: &mut Vec<FieldError>,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    let Some(obj) = s.as_object() else { return };
    value_validation(s, skip_any_of, false, path, out, depth);
    if let Some(is) = items(s) {
        nested_value_validation(is, false, &child(path, "items"), out, depth + 1);
    }
    if let Some(props) = properties(s) {
        for (k, ps) in props {
            nested_value_validation(ps, false, &key_path(path, "properties", k), out, depth + 1);
        }
    }
    let set = |k: &str| obj.get(k).is_some_and(|v| !v.is_null());
    let non_empty_str = |k: &str| {
        obj.get(k)
            .and_then(Value::as_str)
            .is_some_and(|v| !v.is_empty())
    };
    if non_empty_str("type") {
        out.push(FieldError::forbidden(
            child(path, "type"),
            "must be empty to be structural",
        ));
    }
    if set("additionalProperties") {
        out.push(FieldError::forbidden(
            child(path, "additionalProperties"),
            "must be undefined to be structural",
        ));
    }
    if set("default") {
        out.push(FieldError::forbidden(
            child(path, "default"),
            "must be undefined to be structural",
        ));
    }
    if non_empty_str("title") {
        out.push(FieldError::forbidden(
            child(path, "title"),
            "must be empty to be structural",
        ));
    }
    if non_empty_str("description") {
        out.push(FieldError::forbidden(
            child(path, "description"),
            "must be empty to be structural",
        ));
    }
    if flag(s, "nullable") {
        out.push(FieldError::forbidden(
            child(path, "nullable"),
            "must be false to be structural",
        ));
    }
    for k in [
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ] {
        if flag(s, k) {
            out.push(FieldError::forbidden(
                child(path, k),
                "must be false to be structural",
            ));
        }
    }
    if !str_list(s, "x-kubernetes-list-map-keys").is_empty() {
        out.push(FieldError::forbidden(
            child(path, "x-kubernetes-list-map-keys"),
            "must be empty to be structural",
        ));
    }
    if set("x-kubernetes-list-type") {
        out.push(FieldError::forbidden(
            child(path, "x-kubernetes-list-type"),
            "must be undefined to be structural",
        ));
    }
    if set("x-kubernetes-map-type") {
        out.push(FieldError::forbidden(
            child(path, "x-kubernetes-map-type"),
            "must be undefined to be structural",
        ));
    }
    if !schema_list(s, "x-kubernetes-validations").is_empty() {
        out.push(FieldError::forbidden(
            child(path, "x-kubernetes-validations"),
            "must be empty to be structural",
        ));
    }
    if properties(s).is_some_and(|p| p.contains_key("metadata")) {
        out.push(FieldError::forbidden(
            format!("{path}.properties[metadata]"),
            "must not be specified in a nested context",
        ));
    }
}

/// validateStructuralCompleteness: everything a junctor talks about must exist in the structure.
fn structural_completeness(s: &Value, path: &str, out: &mut Vec<FieldError>, depth: usize) {
    if depth > MAX_DEPTH || !s.is_object() {
        return;
    }
    if let Some(is) = items(s) {
        structural_completeness(is, &child(path, "items"), out, depth + 1);
    }
    if let Some(props) = properties(s) {
        for (k, ps) in props {
            structural_completeness(ps, &key_path(path, "properties", k), out, depth + 1);
        }
    }
    if let Additional::Schema(a) = additional(s) {
        structural_completeness(a, &child(path, "additionalProperties"), out, depth + 1);
    }
    value_validation_completeness(s, Some(s), path, path, out, depth);
}

fn value_validation_completeness(
    v: &Value,
    s: Option<&Value>,
    s_path: &str,
    v_path: &str,
    out: &mut Vec<FieldError>,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    if let Some(not) = get(v, "not").filter(|n| n.is_object()) {
        nested_completeness(not, s, s_path, &child(v_path, "not"), out, depth + 1);
    }
    for junctor in ["allOf", "anyOf", "oneOf"] {
        for (i, sub) in schema_list(v, junctor).into_iter().enumerate() {
            nested_completeness(
                sub,
                s,
                s_path,
                &format!("{v_path}.{junctor}[{i}]"),
                out,
                depth + 1,
            );
        }
    }
}

fn nested_completeness(
    v: &Value,
    s: Option<&Value>,
    s_path: &str,
    v_path: &str,
    out: &mut Vec<FieldError>,
    depth: usize,
) {
    if depth > MAX_DEPTH || !v.is_object() {
        return;
    }
    let Some(s) = s.filter(|s| s.is_object()) else {
        out.push(FieldError::required(
            s_path,
            format!("because it is defined in {v_path}"),
        ));
        return;
    };
    value_validation_completeness(v, Some(s), s_path, v_path, out, depth);
    if let Some(vi) = items(v) {
        match items(s) {
            Some(si) => nested_completeness(
                vi,
                Some(si),
                &child(s_path, "items"),
                &child(v_path, "items"),
                out,
                depth + 1,
            ),
            None => out.push(FieldError::required(
                child(s_path, "items"),
                format!("because it is defined in {}", child(v_path, "items")),
            )),
        }
    }
    if let Some(vprops) = properties(v) {
        for (k, vp) in vprops {
            let vp_path = key_path(v_path, "properties", k);
            match properties(s).and_then(|p| p.get(k)) {
                Some(sp) => nested_completeness(
                    vp,
                    Some(sp),
                    &key_path(s_path, "properties", k),
                    &vp_path,
                    out,
                    depth + 1,
                ),
                None => match additional(s) {
                    Additional::Schema(a) => nested_completeness(
                        vp,
                        Some(a),
                        &child(s_path, "additionalProperties"),
                        &vp_path,
                        out,
                        depth + 1,
                    ),
                    _ => out.push(FieldError::required(
                        key_path(s_path, "properties", k),
                        format!("because it is defined in {vp_path}"),
                    )),
                },
            }
        }
    }
}

/// structuraldefaulting.ValidateDefaults: every default must survive pruning unchanged and validate
/// against its own schema.
fn validate_defaults(
    s: &Value,
    path: &str,
    is_root: bool,
    out: &mut Vec<FieldError>,
    depth: usize,
) {
    if depth > MAX_DEPTH || !s.is_object() {
        return;
    }
    if let Some(d) = get(s, "default").filter(|d| !d.is_null()) {
        let embedded = flag(s, "x-kubernetes-embedded-resource");
        let mut pruned = d.clone();
        let removed = match &mut pruned {
            Value::Object(m) if !preserves_unknown(s) => {
                let mut r = Vec::new();
                prune_object(m, Some(s), false, "", &mut r, depth);
                r
            }
            Value::Object(m) => {
                let mut r = Vec::new();
                skip_prune_object(m, Some(s), embedded, "", &mut r, depth);
                r
            }
            other => {
                let mut r = Vec::new();
                prune_rec(other, Some(s), "", &mut r, depth);
                r
            }
        };
        let default_path = child(path, "default");
        if !removed.is_empty() {
            out.push(FieldError::invalid(
                &default_path,
                d.clone(),
                "must not have unknown fields",
            ));
        } else {
            let mut v = Validator {
                base: default_path.clone(),
                root_object: false,
                out: Vec::new(),
            };
            v.node(d, s, "", depth);
            if !v.out.is_empty() {
                out.extend(v.out);
            } else {
                let e = validate_embedded(d, s, &default_path, false, depth);
                if !e.is_empty() {
                    out.extend(e);
                } else {
                    out.extend(validate_list_types(d, s, &default_path, depth));
                }
            }
        }
    }
    if let Some(is) = items(s) {
        validate_defaults(is, &child(path, "items"), false, out, depth + 1);
    }
    if let Some(props) = properties(s) {
        for (k, ps) in props {
            // Defaults under the root's metadata are forbidden outright by the openapi checks.
            if is_root && META_FIELDS.contains(&k.as_str()) {
                continue;
            }
            validate_defaults(ps, &key_path(path, "properties", k), false, out, depth + 1);
        }
    }
    if let Additional::Schema(a) = additional(s) {
        validate_defaults(
            a,
            &child(path, "additionalProperties"),
            false,
            out,
            depth + 1,
        );
    }
}

// ---------------------------------------------------------------------------------------------
// CEL validation rules (x-kubernetes-validations)
// ---------------------------------------------------------------------------------------------

#[cfg(feature = "cel")]
mod cel_rules {
    use super::*;
    use std::cell::RefCell;
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::rc::Rc;
    use std::sync::Arc;

    thread_local! {
        // Programs and the environment are not Sync, and compiling is the expensive part, so each
        // thread keeps its own cache.
        static ENV: Option<Arc<cel::Env>> = build_env();
        static PROGRAMS: RefCell<HashMap<String, Result<Rc<cel::Program>, String>>> = RefCell::new(HashMap::new());
    }

    /// The standard library plus the extension libraries Kubernetes enables that the crate has.
    fn build_env() -> Option<Arc<cel::Env>> {
        catch_unwind(|| {
            let mut env = cel::Env::stdlib();
            env.add_extension(cel::extensions::strings).ok()?;
            env.add_extension(cel::extensions::lists).ok()?;
            Some(Arc::new(env))
        })
        .ok()
        .flatten()
    }

    pub(super) fn compile(rule: &str) -> Result<Rc<cel::Program>, String> {
        if let Some(hit) = PROGRAMS.with(|p| p.borrow().get(rule).cloned()) {
            return hit;
        }
        let compiled = ENV.with(|env| match env {
            Some(env) => {
                let env = Arc::clone(env);
                catch_unwind(AssertUnwindSafe(|| {
                    env.compile(rule).map(Rc::new).map_err(|e| e.to_string())
                }))
                .unwrap_or_else(|_| {
                    Err("ERROR: <input>:1:1: the rule could not be compiled".into())
                })
            }
            None => Err("CEL environment unavailable".into()),
        });
        PROGRAMS.with(|p| {
            let mut p = p.borrow_mut();
            if p.len() > 4096 {
                p.clear();
            }
            p.insert(rule.to_string(), compiled.clone());
        });
        compiled
    }

    pub(super) fn schema_has_rules(s: &Value, depth: usize) -> bool {
        if depth > MAX_DEPTH || !s.is_object() {
            return false;
        }
        !schema_list(s, "x-kubernetes-validations").is_empty()
            || items(s).is_some_and(|i| schema_has_rules(i, depth + 1))
            || properties(s).is_some_and(|p| p.values().any(|ps| schema_has_rules(ps, depth + 1)))
            || matches!(additional(s), Additional::Schema(a) if schema_has_rules(a, depth + 1))
    }

    enum Outcome {
        Pass,
        Fail,
        Error(String),
    }

    fn evaluate(program: &cel::Program, this: &Value, old: Option<&Value>) -> Outcome {
        let Some(env) = ENV.with(|e| e.clone()) else {
            return Outcome::Error("CEL environment unavailable".into());
        };
        let run = || -> Result<cel::Value, String> {
            let mut ctx = cel::Context::with_env(env);
            ctx.add_variable_from_value("self", cel::to_value(this).map_err(|e| e.to_string())?);
            if let Some(old) = old {
                ctx.add_variable_from_value(
                    "oldSelf",
                    cel::to_value(old).map_err(|e| e.to_string())?,
                );
            }
            program.execute(&ctx).map_err(|e| go_eval_error(&e))
        };
        match catch_unwind(AssertUnwindSafe(run)) {
            Ok(Ok(cel::Value::Bool(true))) => Outcome::Pass,
            Ok(Ok(cel::Value::Bool(false))) => Outcome::Fail,
            Ok(Ok(_)) => Outcome::Error("no such overload".into()),
            Ok(Err(e)) => Outcome::Error(e),
            Err(_) => Outcome::Error("internal error".into()),
        }
    }

    /// cel-go's wording for the runtime errors rules commonly hit.
    fn go_eval_error(e: &cel::ExecutionError) -> String {
        use cel::ExecutionError as E;
        match e {
            E::NoSuchKey(k) => format!("no such key: {k}"),
            E::DivisionByZero(_) => "division by zero".into(),
            E::RemainderByZero(_) => "modulus by zero".into(),
            E::Overflow(..) => "integer overflow".into(),
            E::IndexOutOfBounds(i) => format!("index out of bounds: {i:?}"),
            E::NoSuchOverload(_)
            | E::UnexpectedType { .. }
            | E::UnsupportedBinaryOperator(..)
            | E::ValuesNotComparable(..) => "no such overload".into(),
            other => {
                let s = other.to_string();
                let mut c = s.chars();
                match c.next() {
                    Some(f) => f.to_lowercase().chain(c).collect(),
                    None => s,
                }
            }
        }
    }

    /// Evaluates every rule on every present value, correlating `oldSelf` through object keys and
    /// list-type=map keys as the apiserver does; transition rules only run when an old value exists.
    pub(super) fn validate(
        x: &Value,
        old: Option<&Value>,
        s: &Value,
        path: &str,
        out: &mut Vec<FieldError>,
        depth: usize,
    ) {
        if depth > MAX_DEPTH || !s.is_object() || x.is_null() {
            return;
        }
        for rule in schema_list(s, "x-kubernetes-validations") {
            check_rule(rule, x, old, s, path, out);
        }
        match x {
            Value::Object(m) => {
                let props = properties(s);
                let add = additional(s);
                for (k, v) in m {
                    if depth == 0 && META_FIELDS.contains(&k.as_str()) {
                        continue;
                    }
                    let cs = match props.and_then(|p| p.get(k)) {
                        Some(ps) => ps,
                        None => match add {
                            Additional::Schema(a) => a,
                            _ => continue,
                        },
                    };
                    let old_child = old.and_then(|o| o.get(k.as_str()));
                    validate(v, old_child, cs, &join_key(path, k), out, depth + 1);
                }
            }
            Value::Array(a) => {
                let Some(is) = items(s) else { return };
                let keys = str_list(s, "x-kubernetes-list-map-keys");
                let old_items =
                    if get_str(s, "x-kubernetes-list-type") == Some("map") && !keys.is_empty() {
                        old.and_then(Value::as_array)
                    } else {
                        None
                    };
                for (i, v) in a.iter().enumerate() {
                    let old_item = old_items.and_then(|olds| {
                        olds.iter().find(|o| {
                            keys.iter().all(|k| {
                                o.get(k.as_str()).is_some()
                                    && o.get(k.as_str()) == v.get(k.as_str())
                            })
                        })
                    });
                    validate(
                        v,
                        old_item,
                        is,
                        &format!("{}[{i}]", if path.is_empty() { "<nil>" } else { path }),
                        out,
                        depth + 1,
                    );
                }
            }
            _ => {}
        }
    }

    fn check_rule(
        rule: &Value,
        x: &Value,
        old: Option<&Value>,
        s: &Value,
        path: &str,
        out: &mut Vec<FieldError>,
    ) {
        let Some(text) = get_str(rule, "rule").filter(|r| !r.trim().is_empty()) else {
            return;
        };
        let Ok(program) = compile(text) else { return };
        let transition = program.references().has_variable("oldSelf");
        if transition && old.is_none() {
            return;
        }
        let rule_text = text.trim();
        let message = get_str(rule, "message").unwrap_or("");
        let ty = Value::String(type_str(s).to_string());
        let base = if path.is_empty() {
            "<nil>".to_string()
        } else {
            path.to_string()
        };
        let detail = match evaluate(&program, x, if transition { old } else { None }) {
            Outcome::Pass => return,
            Outcome::Error(e) if e.starts_with("no such overload") => {
                let shown = if message.trim().is_empty() {
                    rule_text
                } else {
                    message.trim()
                };
                out.push(FieldError::invalid(
                    base,
                    ty,
                    format!("'{e}': call arguments did not match a supported operator, function or macro signature for rule: {shown}"),
                ));
                return;
            }
            Outcome::Error(e) => {
                let shown = if message.trim().is_empty() {
                    rule_text
                } else {
                    message.trim()
                };
                out.push(FieldError::invalid(
                    base,
                    ty,
                    format!("{e} evaluating rule: {shown}"),
                ));
                return;
            }
            Outcome::Fail => {
                if message.is_empty() {
                    format!("failed rule: {rule_text}")
                } else {
                    message.to_string()
                }
            }
        };
        let field_path = match get_str(rule, "fieldPath")
            .map(|f| f.trim_start_matches('.'))
            .filter(|f| !f.is_empty())
        {
            Some(fp) if path.is_empty() => fp.to_string(),
            Some(fp) => format!("{path}.{fp}"),
            None => base,
        };
        out.push(match get_str(rule, "reason") {
            Some("FieldValueForbidden") => FieldError::forbidden(field_path, detail),
            Some("FieldValueRequired") => FieldError::required(field_path, detail),
            Some("FieldValueDuplicate") => FieldError::duplicate(field_path, ty),
            _ => FieldError::invalid(field_path, ty, detail),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(|e| e.to_string()).collect()
    }

    fn spec_schema(spec_props: Value) -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": spec_props}}})
    }

    fn obj(spec: Value) -> Value {
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec})
    }

    /// Each row: (what the real apiserver does, spec properties schema, spec value, expected messages).
    fn check_table(rows: &[(&str, Value, Value, &[&str])]) {
        for (what, props, spec, want) in rows {
            let schema = spec_schema(props.clone());
            let got = msgs(&validate(&obj(spec.clone()), None, &schema));
            assert_eq!(
                got,
                want.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                "{what}"
            );
        }
    }

    #[test]
    fn display_mirrors_field_error() {
        let cases = [
            (
                FieldError::required("spec.size", ""),
                "spec.size: Required value",
            ),
            (
                FieldError::required("spec.x.kind", "must not be empty"),
                "spec.x.kind: Required value: must not be empty",
            ),
            (
                FieldError::forbidden("spec.a", "nope"),
                "spec.a: Forbidden: nope",
            ),
            (
                FieldError::too_long("spec.name", 5),
                "spec.name: Too long: may not be more than 5 bytes",
            ),
            (
                FieldError::too_long("spec.name", 1),
                "spec.name: Too long: may not be more than 1 byte",
            ),
            (
                FieldError::too_many("spec.items", 3, 2),
                "spec.items: Too many: 3: must have at most 2 items",
            ),
            (
                FieldError::too_many("spec.items", 3, 1),
                "spec.items: Too many: 3: must have at most 1 item",
            ),
            (
                FieldError::duplicate("spec.tags[1]", json!("a")),
                "spec.tags[1]: Duplicate value: \"a\"",
            ),
            (
                FieldError::duplicate("spec.x[1]", json!({"name": "a"})),
                "spec.x[1]: Duplicate value: map[string]interface {}{\"name\":\"a\"}",
            ),
            (
                FieldError::invalid("spec.a", Value::Null, "bad"),
                "spec.a: Invalid value: \"null\": bad",
            ),
            (
                FieldError::invalid("spec.a", json!(true), "bad"),
                "spec.a: Invalid value: true: bad",
            ),
            (
                FieldError::invalid("spec.a", json!(1.5), "bad"),
                "spec.a: Invalid value: 1.5: bad",
            ),
            (
                FieldError::invalid("spec.a", json!(["x", 1]), ""),
                "spec.a: Invalid value: []interface {}{\"x\", 1}",
            ),
            (
                FieldError::not_supported(
                    "spec.mode",
                    json!("medium"),
                    &["fast".into(), "slow".into()],
                ),
                "spec.mode: Unsupported value: \"medium\": supported values: \"fast\", \"slow\"",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), want);
        }
    }

    #[test]
    fn go_formatting() {
        for (f, want) in [
            (1.0, "1"),
            (1.5, "1.5"),
            (100000.0, "100000"),
            (1e6, "1e+06"),
            (1234567.5, "1.2345675e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5, "-2.5"),
        ] {
            assert_eq!(go_float(f), want, "%v of {f}");
        }
        for (f, want) in [
            (1.0, "1"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (0.000001, "0.000001"),
            (1e-7, "1e-7"),
        ] {
            assert_eq!(crate::gofmt::json_float(f), want, "json of {f}");
        }
        assert_eq!(go_quote("a\"b\\c\n\u{1}é"), "\"a\\\"b\\\\c\\n\\x01é\"");
        assert_eq!(
            go_json(&json!({"b": [1, 2.5], "a": "<x>"})),
            "{\"a\":\"\\u003cx\\u003e\",\"b\":[1,2.5]}"
        );
    }

    #[test]
    fn numeric_and_enum_validation() {
        check_table(&[
            (
                "minimum",
                json!({"size": {"type": "integer", "minimum": 1}}),
                json!({"size": 0}),
                &[
                    "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1",
                ],
            ),
            (
                "maximum",
                json!({"size": {"type": "integer", "maximum": 10}}),
                json!({"size": 11}),
                &[
                    "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10",
                ],
            ),
            (
                "exclusiveMinimum (v3.0 bool form)",
                json!({"size": {"type": "integer", "minimum": 1, "exclusiveMinimum": true}}),
                json!({"size": 1}),
                &["spec.size: Invalid value: 1: spec.size in body should be greater than 1"],
            ),
            (
                "exclusiveMaximum",
                json!({"r": {"type": "number", "maximum": 1.5, "exclusiveMaximum": true}}),
                json!({"r": 1.5}),
                &["spec.r: Invalid value: 1.5: spec.r in body should be less than 1.5"],
            ),
            (
                "maximum printed with %v",
                json!({"n": {"type": "integer", "maximum": 1000000}}),
                json!({"n": 1000001}),
                &[
                    "spec.n: Invalid value: 1000001: spec.n in body should be less than or equal to 1e+06",
                ],
            ),
            (
                "multipleOf",
                json!({"n": {"type": "integer", "multipleOf": 5}}),
                json!({"n": 7}),
                &["spec.n: Invalid value: 7: spec.n in body should be a multiple of 5"],
            ),
            (
                "multipleOf fractional factor",
                json!({"n": {"type": "number", "multipleOf": 0.1}}),
                json!({"n": 0.3}),
                &[],
            ),
            (
                "enum",
                json!({"mode": {"type": "string", "enum": ["fast", "slow"]}}),
                json!({"mode": "medium"}),
                &["spec.mode: Unsupported value: \"medium\": supported values: \"fast\", \"slow\""],
            ),
            (
                "enum with numbers compares by value and quotes JSON",
                json!({"n": {"type": "integer", "enum": [1, 2]}}),
                json!({"n": 3}),
                &["spec.n: Unsupported value: 3: supported values: \"1\", \"2\""],
            ),
            (
                "enum match",
                json!({"n": {"type": "integer", "enum": [1.0, 2]}}),
                json!({"n": 1}),
                &[],
            ),
        ]);
    }

    #[test]
    fn type_validation() {
        let int = json!({"size": {"type": "integer"}});
        check_table(&[
            (
                "string for integer",
                int.clone(),
                json!({"size": "3"}),
                &[
                    "spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\"",
                ],
            ),
            (
                "bool for integer",
                int.clone(),
                json!({"size": true}),
                &[
                    "spec.size: Invalid value: \"boolean\": spec.size in body must be of type integer: \"boolean\"",
                ],
            ),
            (
                "object for integer",
                int.clone(),
                json!({"size": {}}),
                &[
                    "spec.size: Invalid value: \"object\": spec.size in body must be of type integer: \"object\"",
                ],
            ),
            (
                "array for integer",
                int.clone(),
                json!({"size": []}),
                &[
                    "spec.size: Invalid value: \"array\": spec.size in body must be of type integer: \"array\"",
                ],
            ),
            (
                "fraction for integer",
                int.clone(),
                json!({"size": 1.5}),
                &[
                    "spec.size: Invalid value: \"number\": spec.size in body must be of type integer: \"number\"",
                ],
            ),
            (
                "integral float is an integer",
                int.clone(),
                json!({"size": 2.0}),
                &[],
            ),
            (
                "integer is a number",
                json!({"r": {"type": "number"}}),
                json!({"r": 2}),
                &[],
            ),
            (
                "null without nullable",
                json!({"s": {"type": "string"}}),
                json!({"s": null}),
                &[
                    "spec.s: Invalid value: \"null\": spec.s in body must be of type string: \"null\"",
                ],
            ),
            (
                "null with nullable",
                json!({"s": {"type": "string", "nullable": true}}),
                json!({"s": null}),
                &[],
            ),
            (
                "nullable enum still checks null",
                json!({"s": {"type": "string", "nullable": true, "enum": ["a"]}}),
                json!({"s": null}),
                &["spec.s: Unsupported value: \"null\": supported values: \"a\""],
            ),
            (
                "item paths use [i]",
                json!({"xs": {"type": "array", "items": {"type": "string"}}}),
                json!({"xs": ["a", 1]}),
                &[
                    "spec.xs[1]: Invalid value: \"integer\": spec.xs[1] in body must be of type string: \"integer\"",
                ],
            ),
            (
                "map value paths use dots",
                json!({"labels": {"type": "object", "additionalProperties": {"type": "string"}}}),
                json!({"labels": {"a": "x", "b": 2}}),
                &[
                    "spec.labels.b: Invalid value: \"integer\": spec.labels.b in body must be of type string: \"integer\"",
                ],
            ),
            (
                "format on a non-string mismatching type",
                json!({"t": {"type": "string", "format": "date-time"}}),
                json!({"t": 5}),
                &[
                    "spec.t: Invalid value: \"int64\": spec.t in body must be of type date-time: \"int64\"",
                ],
            ),
        ]);
        let errs = validate(&obj(json!({"size": "x"})), None, &spec_schema(int));
        assert_eq!(errs[0].kind, FieldErrorKind::TypeInvalid);
    }

    #[test]
    fn int_or_string() {
        let s = json!({"port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}});
        check_table(&[
            ("integer accepted", s.clone(), json!({"port": 80}), &[]),
            ("string accepted", s.clone(), json!({"port": "http"}), &[]),
            (
                "bool rejected with both types listed",
                s.clone(),
                json!({"port": true}),
                &[
                    "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
                    "<nil>: Invalid value: \"\": \"spec.port\" must validate at least one schema (anyOf)",
                    "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer: \"boolean\"",
                ],
            ),
            (
                "without anyOf",
                json!({"port": {"x-kubernetes-int-or-string": true}}),
                json!({"port": 1.5}),
                &[
                    "spec.port: Invalid value: \"number\": spec.port in body must be of type integer,string: \"number\"",
                ],
            ),
        ]);
    }

    #[test]
    fn string_array_object_constraints() {
        check_table(&[
            (
                "pattern",
                json!({"name": {"type": "string", "pattern": "^[a-z]+$"}}),
                json!({"name": "Bad"}),
                &["spec.name: Invalid value: \"Bad\": spec.name in body should match '^[a-z]+$'"],
            ),
            (
                "pattern \\d is ASCII-only as in Go",
                json!({"n": {"type": "string", "pattern": "^\\d+$"}}),
                json!({"n": "١٢"}),
                &["spec.n: Invalid value: \"١٢\": spec.n in body should match '^\\d+$'"],
            ),
            (
                "maxLength counts characters, 1.32 wording",
                json!({"name": {"type": "string", "maxLength": 5}}),
                json!({"name": "abcdef"}),
                &["spec.name: Too long: may not be more than 5 bytes"],
            ),
            (
                "maxLength multibyte ok",
                json!({"name": {"type": "string", "maxLength": 2}}),
                json!({"name": "éé"}),
                &[],
            ),
            (
                "minLength",
                json!({"name": {"type": "string", "minLength": 3}}),
                json!({"name": "ab"}),
                &[
                    "spec.name: Invalid value: \"ab\": spec.name in body should be at least 3 chars long",
                ],
            ),
            (
                "maxItems",
                json!({"items": {"type": "array", "maxItems": 2, "items": {"type": "integer"}}}),
                json!({"items": [1, 2, 3]}),
                &["spec.items: Too many: 3: must have at most 2 items"],
            ),
            (
                "minItems",
                json!({"items": {"type": "array", "minItems": 2, "items": {"type": "integer"}}}),
                json!({"items": [1]}),
                &["spec.items: Invalid value: 1: spec.items in body should have at least 2 items"],
            ),
            (
                "uniqueItems",
                json!({"items": {"type": "array", "uniqueItems": true, "items": {"type": "integer"}}}),
                json!({"items": [1, 1]}),
                &[
                    "spec.items: Invalid value: \"\": spec.items in body shouldn't contain duplicates",
                ],
            ),
            (
                "maxProperties",
                json!({"m": {"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}}}),
                json!({"m": {"a": "1", "b": "2"}}),
                &["spec.m: Too many: 2: must have at most 1 item"],
            ),
            (
                "minProperties",
                json!({"m": {"type": "object", "minProperties": 2, "additionalProperties": {"type": "string"}}}),
                json!({"m": {"a": "1"}}),
                &["spec.m: Invalid value: 1: spec.m in body should have at least 2 properties"],
            ),
            (
                "required",
                json!({"size": {"type": "integer"}, "o": {"type": "object", "required": ["size"], "properties": {"size": {"type": "integer"}}}}),
                json!({"o": {}}),
                &["spec.o.size: Required value"],
            ),
            (
                "date-time format",
                json!({"t": {"type": "string", "format": "date-time"}}),
                json!({"t": "yesterday"}),
                &[
                    "spec.t: Invalid value: \"yesterday\": spec.t in body must be of type date-time: \"yesterday\"",
                ],
            ),
            (
                "date-time ok",
                json!({"t": {"type": "string", "format": "date-time"}}),
                json!({"t": "2024-02-29T10:00:00.5+01:00"}),
                &[],
            ),
            (
                "date format",
                json!({"t": {"type": "string", "format": "date"}}),
                json!({"t": "2023-02-29"}),
                &[
                    "spec.t: Invalid value: \"2023-02-29\": spec.t in body must be of type date: \"2023-02-29\"",
                ],
            ),
            (
                "uuid format",
                json!({"u": {"type": "string", "format": "uuid"}}),
                json!({"u": "nope"}),
                &["spec.u: Invalid value: \"nope\": spec.u in body must be of type uuid: \"nope\""],
            ),
            (
                "byte format",
                json!({"b": {"type": "string", "format": "byte"}}),
                json!({"b": "not base64!"}),
                &[
                    "spec.b: Invalid value: \"not base64!\": spec.b in body must be of type byte: \"not base64!\"",
                ],
            ),
            (
                "int32 format is not checked on strings or ints",
                json!({"i": {"type": "integer", "format": "int32"}}),
                json!({"i": 5000000000i64}),
                &[],
            ),
            (
                "unknown formats are ignored",
                json!({"h": {"type": "string", "format": "something"}}),
                json!({"h": "x"}),
                &[],
            ),
        ]);
    }

    #[test]
    fn junctors() {
        check_table(&[
            (
                "oneOf none valid",
                json!({"a": {"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "string"}}, "oneOf": [{"required": ["x"]}, {"required": ["y"]}]}}),
                json!({"a": {}}),
                &[
                    "<nil>: Invalid value: \"\": \"spec.a\" must validate one and only one schema (oneOf). Found none valid",
                    "spec.a.x: Required value",
                ],
            ),
            (
                "oneOf two valid",
                json!({"a": {"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "string"}}, "oneOf": [{"required": ["x"]}, {"required": ["y"]}]}}),
                json!({"a": {"x": "1", "y": "2"}}),
                &[
                    "<nil>: Invalid value: \"\": \"spec.a\" must validate one and only one schema (oneOf). Found 2 valid alternatives",
                ],
            ),
            (
                "not",
                json!({"a": {"type": "string", "not": {"enum": ["x"]}}}),
                json!({"a": "x"}),
                &["<nil>: Invalid value: \"\": \"spec.a\" must not validate the schema (not)"],
            ),
            (
                "allOf",
                json!({"a": {"type": "string", "allOf": [{"minLength": 2}, {"maxLength": 5}]}}),
                json!({"a": "x"}),
                &[
                    "spec.a: Invalid value: \"x\": spec.a in body should be at least 2 chars long",
                    "<nil>: Invalid value: \"\": \"spec.a\" must validate all the schemas (allOf)",
                ],
            ),
        ]);
    }

    #[test]
    fn root_meta_fields_need_no_declaration() {
        let schema = json!({"type": "object", "additionalProperties": false, "properties": {"spec": {"type": "object"}}});
        assert!(validate(&obj(json!({})), None, &schema).is_empty());
        // Declared metadata constraints do apply, as on the real server.
        let schema = json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 3}}}}});
        let o = json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "long-name"}});
        assert_eq!(
            msgs(&validate(&o, None, &schema)),
            ["metadata.name: Too long: may not be more than 3 bytes"]
        );
    }

    #[test]
    fn embedded_resources() {
        let props = json!({"template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}});
        check_table(&[
            (
                "apiVersion and kind are required",
                props.clone(),
                json!({"template": {"metadata": {}}}),
                &[
                    "spec.template.apiVersion: Required value: must not be empty",
                    "spec.template.kind: Required value: must not be empty",
                ],
            ),
            (
                "kind must be a DNS-1035 label in any case",
                props.clone(),
                json!({"template": {"apiVersion": "v1", "kind": "Bad_Kind"}}),
                &[
                    "spec.template.kind: Invalid value: \"Bad_Kind\": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                ],
            ),
            (
                "apiVersion must parse",
                props.clone(),
                json!({"template": {"apiVersion": "a/b/c", "kind": "Pod"}}),
                &[
                    "spec.template.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c",
                ],
            ),
            (
                "valid",
                props.clone(),
                json!({"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": 1}}}),
                &[],
            ),
        ]);
    }

    #[test]
    fn list_types() {
        check_table(&[
            (
                "set duplicates reported once at the second occurrence",
                json!({"tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}),
                json!({"tags": ["a", "a", "b", "a"]}),
                &["spec.tags[1]: Duplicate value: \"a\""],
            ),
            (
                "map duplicates show the key map",
                json!({"x": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}}}}),
                json!({"x": [{"name": "a", "v": 1}, {"name": "a", "v": 2}]}),
                &["spec.x[1]: Duplicate value: map[string]interface {}{\"name\":\"a\"}"],
            ),
            (
                "multi-key map",
                json!({"x": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "port"], "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer", "default": 80}}}}}),
                json!({"x": [{"name": "a"}, {"name": "a", "port": 80}, {"name": "a", "port": 81}]}),
                &[
                    "spec.x[1]: Duplicate value: map[string]interface {}{\"name\":\"a\", \"port\":80}",
                ],
            ),
            (
                "map items must be objects",
                json!({"x": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": {"properties": {"name": {"type": "string"}}}}}),
                json!({"x": ["s"]}),
                &[
                    "spec.x[0]: Invalid value: \"s\": must be an object for an x-kubernetes-list-type of map",
                ],
            ),
            (
                "atomic allows duplicates",
                json!({"tags": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "string"}}}),
                json!({"tags": ["a", "a"]}),
                &[],
            ),
        ]);
    }

    #[test]
    fn defaults() {
        let schema = spec_schema(json!({
            "replicas": {"type": "integer", "default": 1},
            "mode": {"type": "string", "default": "fast"},
            "resources": {"type": "object", "properties": {"cpu": {"type": "string", "default": "100m"}}},
            "policy": {"type": "object", "default": {}, "properties": {"kind": {"type": "string", "default": "Always"}}},
            "ports": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "protocol": {"type": "string", "default": "TCP"}}}},
            "opt": {"type": "string", "nullable": true, "default": "d"},
            "gone": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "object", "properties": {"v": {"type": "integer", "default": 7}}}},
        }));
        let mut o = obj(
            json!({"mode": "slow", "ports": [{"name": "a"}, {"name": "b", "protocol": "UDP"}], "opt": null, "gone": null, "replicas": null, "labels": {"x": {}}}),
        );
        apply_defaults(&mut o, &schema);
        assert_eq!(
            o["spec"],
            json!({
                "mode": "slow",
                "ports": [{"name": "a", "protocol": "TCP"}, {"name": "b", "protocol": "UDP"}],
                "opt": null,
                "replicas": 1,
                "labels": {"x": {"v": 7}},
                "policy": {"kind": "Always"},
            }),
            "absent parent objects stay absent unless defaulted; nulls: nullable kept, non-nullable replaced by default or dropped"
        );
        // A missing spec is not created.
        let mut o = json!({"apiVersion": "a/v1", "kind": "K", "metadata": {}});
        apply_defaults(&mut o, &schema);
        assert!(o.get("spec").is_none());
        // Defaulting is idempotent.
        let mut o2 = obj(json!({}));
        apply_defaults(&mut o2, &schema);
        let once = o2.clone();
        apply_defaults(&mut o2, &schema);
        assert_eq!(o2, once);
    }

    #[test]
    fn pruning() {
        let schema = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "size": {"type": "integer"},
                "port": {"x-kubernetes-int-or-string": true},
                "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "template": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}}},
                "raw": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
                "empty": {"type": "object"},
            }},
        }});
        let mut o = json!({
            "apiVersion": "a/v1", "kind": "K", "metadata": {"name": "n", "whatever": 1},
            "status": {"phase": "x"},
            "spec": {
                "size": 1, "port": "http", "bogus": true,
                "items": [{"name": "a", "extra": 1}, {"name": "b"}],
                "free": {"anything": {"deep": 1}, "known": {"a": "x", "b": "y"}},
                "labels": {"k": "v"},
                "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "junk": 1}, "spec": {"x": "1", "y": 2}, "other": 1},
                "raw": {"apiVersion": "v1", "kind": "Pod", "spec": {"anything": 1}},
                "empty": {"gone": 1},
            },
        });
        let removed = prune(&mut o, &schema);
        assert_eq!(
            removed,
            [
                "spec.bogus",
                "spec.empty.gone",
                "spec.free.known.b",
                "spec.items[0].extra",
                "spec.template.metadata.junk",
                "spec.template.other",
                "spec.template.spec.y",
                "status",
            ]
        );
        assert_eq!(
            o["metadata"],
            json!({"name": "n", "whatever": 1}),
            "root metadata is the caller's business"
        );
        assert_eq!(o["spec"]["free"]["anything"], json!({"deep": 1}));
        assert_eq!(
            o["spec"]["template"],
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": "1"}})
        );
        assert_eq!(o["spec"]["raw"]["spec"], json!({"anything": 1}));
        assert_eq!(o["spec"]["port"], json!("http"));
        assert_eq!(o["spec"]["empty"], json!({}));
        // Preserve-unknown at the root keeps everything not declared.
        let mut o = json!({"apiVersion": "a/v1", "kind": "K", "metadata": {}, "x": {"y": 1}});
        assert!(
            prune(
                &mut o,
                &json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
            )
            .is_empty()
        );
        assert_eq!(o["x"], json!({"y": 1}));
    }

    fn schema_msgs(schema: Value) -> Vec<String> {
        msgs(&validate_schema(
            &schema,
            "spec.versions[0].schema.openAPIV3Schema",
        ))
    }

    #[test]
    fn schema_checks() {
        let p = "spec.versions[0].schema.openAPIV3Schema";
        let rows: Vec<(&str, Value, Vec<String>)> = vec![
            (
                "valid realistic schema",
                json!({"type": "object", "properties": {
                    "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}},
                    "spec": {"type": "object", "required": ["size"], "properties": {
                        "size": {"type": "integer", "minimum": 1, "default": 1},
                        "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                        "free": {"x-kubernetes-preserve-unknown-fields": true},
                        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                            "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}},
                        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                        "sel": {"type": "object", "x-kubernetes-map-type": "atomic", "additionalProperties": {"type": "string"}},
                        "either": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
                    }},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                }}),
                vec![],
            ),
            (
                "missing types",
                json!({"properties": {"spec": {"properties": {"xs": {"type": "array", "items": {}}}}}}),
                vec![
                    format!(
                        "{p}.properties[spec].properties[xs].items.type: Required value: must not be empty for specified array items"
                    ),
                    format!(
                        "{p}.properties[spec].type: Required value: must not be empty for specified object fields"
                    ),
                    format!("{p}.type: Required value: must not be empty at the root"),
                ],
            ),
            (
                "array without items",
                json!({"type": "object", "properties": {"xs": {"type": "array"}}}),
                vec![format!(
                    "{p}.properties[xs].items: Required value: must be specified"
                )],
            ),
            (
                "bad pattern",
                json!({"type": "object", "properties": {"s": {"type": "string", "pattern": "[a-z"}}}),
                vec![format!(
                    "{p}.properties[s].pattern: Invalid value: \"[a-z\": must be a valid regular expression, but isn't: error parsing regexp: missing closing ]: `[a-z`"
                )],
            ),
            (
                "uniqueItems and properties with additionalProperties",
                json!({"type": "object", "properties": {
                    "xs": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
                    "o": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}},
                }}),
                vec![
                    format!(
                        "{p}.properties[xs].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
                    ),
                    format!(
                        "{p}.properties[o].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
                    ),
                ],
            ),
            (
                "list-map keys",
                json!({"type": "object", "properties": {
                    "a": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                    "b": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "missing"], "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                    "c": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": {"type": "string"}},
                    "d": {"type": "string", "x-kubernetes-list-type": "set"},
                    "e": {"type": "array", "x-kubernetes-list-type": "bag", "items": {"type": "string"}},
                }}),
                vec![
                    format!(
                        "{p}.properties[a].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"
                    ),
                    format!(
                        "{p}.properties[b].x-kubernetes-list-map-keys: Invalid value: []interface {{}}{{\"name\", \"missing\"}}: entries must all be names of item properties"
                    ),
                    format!(
                        "{p}.properties[b].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
                    ),
                    format!(
                        "{p}.properties[c].items.type: Invalid value: \"string\": must be object if parent array's x-kubernetes-list-type is map"
                    ),
                    format!(
                        "{p}.properties[d].type: Invalid value: \"string\": must be array if x-kubernetes-list-type is specified"
                    ),
                    format!(
                        "{p}.properties[e].x-kubernetes-list-type: Unsupported value: \"bag\": supported values: \"atomic\", \"set\", \"map\""
                    ),
                ],
            ),
            (
                "root restrictions",
                json!({"type": "object", "nullable": true, "properties": {"metadata": {"type": "object", "default": {}, "properties": {"labels": {"type": "object"}}}}}),
                vec![
                    format!("{p}.nullable: Forbidden: nullable cannot be true at the root"),
                    format!(
                        "{p}.properties[metadata].default: Forbidden: must not be set in top-level metadata"
                    ),
                    format!(
                        "{p}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
                    ),
                ],
            ),
            (
                "nested value validations may not carry structure",
                json!({"type": "object", "properties": {"a": {"type": "string"}}, "anyOf": [{"type": "object", "properties": {"a": {"default": "x"}}}]}),
                vec![
                    format!(
                        "{p}.anyOf[0].properties[a].default: Forbidden: must be undefined to be structural"
                    ),
                    format!("{p}.anyOf[0].type: Forbidden: must be empty to be structural"),
                ],
            ),
            (
                "nested properties must exist in the structure",
                json!({"type": "object", "properties": {"a": {"type": "string"}}, "anyOf": [{"properties": {"b": {"minLength": 1}}}]}),
                vec![format!(
                    "{p}.properties[b]: Required value: because it is defined in {p}.anyOf[0].properties[b]"
                )],
            ),
            (
                "embedded resource needs type and properties",
                json!({"type": "object", "properties": {"t": {"x-kubernetes-embedded-resource": true}}}),
                vec![
                    format!(
                        "{p}.properties[t].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"
                    ),
                    format!(
                        "{p}.properties[t].type: Required value: must be object if x-kubernetes-embedded-resource is true"
                    ),
                ],
            ),
            (
                "bad type and preserve false",
                json!({"type": "object", "properties": {"a": {"type": "strin"}, "b": {"type": "object", "x-kubernetes-preserve-unknown-fields": false}}}),
                vec![
                    format!(
                        "{p}.properties[a].type: Unsupported value: \"strin\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""
                    ),
                    format!(
                        "{p}.properties[b].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"
                    ),
                ],
            ),
            (
                "defaults are validated",
                json!({"type": "object", "properties": {
                    "n": {"type": "integer", "default": "x"},
                    "o": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"a": "x", "b": 1}},
                    "s": {"type": "string", "maxLength": 2, "default": "long"},
                }}),
                vec![
                    format!(
                        "{p}.properties[n].default: Invalid value: \"string\":  in body must be of type integer: \"string\""
                    ),
                    format!(
                        "{p}.properties[o].default: Invalid value: map[string]interface {{}}{{\"a\":\"x\", \"b\":1}}: must not have unknown fields"
                    ),
                    format!("{p}.properties[s].default: Too long: may not be more than 2 bytes"),
                ],
            ),
        ];
        for (what, schema, want) in rows {
            assert_eq!(schema_msgs(schema), want, "{what}");
        }
    }

    #[test]
    fn malformed_input_does_not_panic() {
        let weird = [
            json!(null),
            json!("string schema"),
            json!({"type": 5, "properties": [], "items": "x", "required": "spec", "enum": {}, "pattern": 3}),
            json!({"type": "object", "properties": {"a": {"pattern": "(?<=x)y", "maxLength": -1, "minimum": "1"}}}),
            json!({"type": "object", "properties": {"a": {"type": "number", "multipleOf": 0}}}),
            json!({"anyOf": [1, null, {"not": "x"}], "allOf": "no", "x-kubernetes-list-map-keys": [1, 2]}),
        ];
        let values = [
            json!(null),
            json!({"a": "xyz"}),
            json!({"a": 5, "spec": [1, {"b": null}]}),
            json!([[[]]]),
            json!(1e300),
        ];
        for s in &weird {
            let _ = validate_schema(s, "p");
            for v in &values {
                let mut v = v.clone();
                let _ = prune(&mut v, s);
                apply_defaults(&mut v, s);
                for e in validate(&v, Some(&v), s) {
                    let _ = e.to_string();
                }
            }
        }
        // Nesting far beyond what serde_json would parse is cut off instead of overflowing the stack.
        // Built by hand: json! would re-serialize the interpolated value recursively.
        let wrap = |k: &str, v: Value| Value::Object(Map::from_iter([(k.to_string(), v)]));
        let mut deep_value = json!(1);
        let mut deep_schema = json!({"type": "integer", "default": 1});
        for _ in 0..1000 {
            deep_value = wrap("a", Value::Array(vec![deep_value]));
            let mut list = json!({"type": "array", "x-kubernetes-list-type": "set"});
            if let Some(m) = list.as_object_mut() {
                m.insert("items".into(), deep_schema);
            }
            let mut o = json!({"type": "object"});
            if let Some(m) = o.as_object_mut() {
                m.insert("properties".into(), wrap("a", list));
            }
            deep_schema = o;
        }
        let _ = validate(&deep_value, None, &deep_schema);
        let _ = validate_schema(&deep_schema, "p");
        let _ = prune(&mut deep_value, &deep_schema);
        apply_defaults(&mut deep_value, &deep_schema);
        // Deep values drop recursively; leak them rather than depend on the test thread's stack.
        std::mem::forget(deep_value);
        std::mem::forget(deep_schema);
    }

    #[cfg(feature = "cel")]
    #[test]
    fn cel_rules() {
        let rules = |r: Value| {
            json!({"type": "object", "x-kubernetes-validations": r, "properties": {
                "replicas": {"type": "integer"}, "max": {"type": "integer"}, "name": {"type": "string"},
                "xs": {"type": "array", "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self.startsWith('a')"}]}},
            }})
        };
        // (name, schema, object, old object, expected errors)
        type Case = (&'static str, Value, Value, Option<Value>, Vec<&'static str>);
        let cases: Vec<Case> = vec![
            (
                "message",
                rules(
                    json!([{"rule": "self.replicas <= self.max", "message": "replicas must not exceed max"}]),
                ),
                json!({"replicas": 3, "max": 2}),
                None,
                vec!["spec: Invalid value: \"object\": replicas must not exceed max"],
            ),
            (
                "default message",
                rules(json!([{"rule": "self.replicas <= self.max"}])),
                json!({"replicas": 3, "max": 2}),
                None,
                vec!["spec: Invalid value: \"object\": failed rule: self.replicas <= self.max"],
            ),
            (
                "passing rule",
                rules(json!([{"rule": "self.replicas <= self.max"}])),
                json!({"replicas": 1, "max": 2}),
                None,
                vec![],
            ),
            (
                "fieldPath and reason",
                rules(
                    json!([{"rule": "has(self.name)", "fieldPath": ".name", "reason": "FieldValueRequired", "message": "name is required"}]),
                ),
                json!({}),
                None,
                vec!["spec.name: Required value: name is required"],
            ),
            (
                "items",
                rules(json!([])),
                json!({"xs": ["ab", "b"]}),
                None,
                vec!["spec.xs[1]: Invalid value: \"string\": failed rule: self.startsWith('a')"],
            ),
            (
                "missing key is an evaluation error",
                rules(json!([{"rule": "self.max > 0"}])),
                json!({}),
                None,
                vec![
                    "spec: Invalid value: \"object\": no such key: max evaluating rule: self.max > 0",
                ],
            ),
            (
                "transition rules skip creates",
                rules(
                    json!([{"rule": "self.name == oldSelf.name", "message": "name is immutable"}]),
                ),
                json!({"name": "b"}),
                None,
                vec![],
            ),
            (
                "transition rules run on update",
                rules(
                    json!([{"rule": "self.name == oldSelf.name", "message": "name is immutable"}]),
                ),
                json!({"name": "b"}),
                Some(json!({"name": "a"})),
                vec!["spec: Invalid value: \"object\": name is immutable"],
            ),
            (
                "type errors block rules",
                rules(json!([{"rule": "self.replicas <= self.max"}])),
                json!({"replicas": "x", "max": 2}),
                None,
                vec![
                    "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
                    "<nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
                ],
            ),
        ];
        for (what, spec_schema, spec, old_spec, want) in cases {
            let schema = json!({"type": "object", "properties": {"spec": spec_schema}});
            let old = old_spec.map(obj);
            assert_eq!(
                msgs(&validate(&obj(spec), old.as_ref(), &schema)),
                want,
                "{what}"
            );
        }
        // Root rules report a nil path.
        let schema = json!({"type": "object", "x-kubernetes-validations": [{"rule": "has(self.spec)", "message": "spec is required"}]});
        let o = json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "n"}});
        assert_eq!(
            msgs(&validate(&o, None, &schema)),
            ["<nil>: Invalid value: \"object\": spec is required"]
        );
        // List-type map items see their old counterpart by key.
        let schema = spec_schema(
            json!({"ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.port == oldSelf.port", "message": "port is immutable"}]}}}),
        );
        let old = obj(json!({"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}]}));
        let new = obj(
            json!({"ports": [{"name": "b", "port": 2}, {"name": "a", "port": 3}, {"name": "c", "port": 4}]}),
        );
        assert_eq!(
            msgs(&validate(&new, Some(&old), &schema)),
            ["spec.ports[1]: Invalid value: \"object\": port is immutable"]
        );
        // Rules that do not compile are rejected with the CRD.
        let errs = msgs(&validate_schema(
            &json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.a >"}]}),
            "p",
        ));
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with("p.x-kubernetes-validations[0].rule: Invalid value: \"self.a >\": compilation failed: ERROR: <input>:1:"), "{errs:?}");
    }

    mod props {
        use super::super::*;
        use proptest::prelude::*;

        fn leaf() -> impl Strategy<Value = Value> {
            prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(Value::from),
                (-1e6f64..1e6).prop_map(Value::from),
                prop::sample::select(vec![
                    "object",
                    "array",
                    "string",
                    "integer",
                    "number",
                    "boolean",
                    "null",
                    "set",
                    "map",
                    "atomic",
                    "granular",
                    "name",
                    "[a-z",
                    "^[a-z]+$",
                    "(",
                    "\\d+",
                    "a{2,1}",
                    "date-time",
                    "uuid",
                    "byte",
                    "int32",
                    "",
                    "x",
                    "é",
                    "2024-01-01",
                ])
                .prop_map(|s| Value::String(s.to_string())),
            ]
        }

        fn key() -> impl Strategy<Value = String> {
            prop::sample::select(vec![
                "type",
                "properties",
                "items",
                "additionalProperties",
                "required",
                "enum",
                "default",
                "nullable",
                "pattern",
                "minimum",
                "maximum",
                "exclusiveMinimum",
                "exclusiveMaximum",
                "multipleOf",
                "minLength",
                "maxLength",
                "minItems",
                "maxItems",
                "uniqueItems",
                "minProperties",
                "maxProperties",
                "format",
                "allOf",
                "anyOf",
                "oneOf",
                "not",
                "x-kubernetes-int-or-string",
                "x-kubernetes-preserve-unknown-fields",
                "x-kubernetes-embedded-resource",
                "x-kubernetes-list-type",
                "x-kubernetes-list-map-keys",
                "x-kubernetes-map-type",
                "x-kubernetes-validations",
                "apiVersion",
                "kind",
                "metadata",
                "spec",
                "name",
                "a",
                "b",
            ])
            .prop_map(String::from)
        }

        fn json_value() -> impl Strategy<Value = Value> {
            leaf().prop_recursive(5, 64, 6, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                    prop::collection::vec((key(), inner), 0..6)
                        .prop_map(|kv| Value::Object(kv.into_iter().collect())),
                ]
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]
            #[test]
            fn never_panics(value in json_value(), schema in json_value()) {
                let mut v = value.clone();
                let _ = prune(&mut v, &schema);
                apply_defaults(&mut v, &schema);
                for e in validate(&v, Some(&value), &schema) {
                    let _ = e.to_string();
                }
                for e in validate(&value, None, &schema) {
                    let _ = e.to_string();
                }
                for e in validate_schema(&schema, "p") {
                    let _ = e.to_string();
                }
            }

            #[test]
            fn prune_is_idempotent_and_defaults_stable(value in json_value(), schema in json_value()) {
                let mut v = value.clone();
                let _ = prune(&mut v, &schema);
                let again = v.clone();
                let mut v2 = again.clone();
                prop_assert!(prune(&mut v2, &schema).is_empty());
                prop_assert_eq!(v2, again);
            }
        }
    }
}
