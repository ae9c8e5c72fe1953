//! Kubernetes field selectors (`spec.clusterRef.name=edge,metadata.name!=old`), parsed as the API server's
//! `fields.ParseSelector` does, so a selector means the same whether a watch cache or the API server answers it.

use std::fmt;

use serde_json::Value;

/// One term: the value at a dotted path equals (or differs from) a string.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Term {
    path: String,
    equal: bool,
    /// Unescaped.
    value: String,
}

/// A parsed field selector; every term must hold. Empty selects everything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldSelector {
    terms: Vec<Term>,
}

/// Why a field selector does not parse, worded for the plugin author who wrote it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid field selector {selector:?}: {reason}")]
pub struct FieldSelectorError {
    selector: String,
    reason: String,
}

impl FieldSelector {
    /// Terms split on unescaped commas; each at its first `!=`, `==` or `=` (in that order of preference at one
    /// position); values unescaped (`\\`, `\,`, `\=`). Empty terms are skipped, as the API server does.
    pub fn parse(selector: &str) -> Result<Self, FieldSelectorError> {
        let error = |reason: String| FieldSelectorError {
            selector: selector.to_owned(),
            reason,
        };
        let mut terms = Vec::new();
        for term in split_unescaped(selector)
            .into_iter()
            .filter(|t| !t.is_empty())
        {
            let Some((path, equal, raw)) = split_term(term) else {
                return Err(error(format!(
                    "{term:?} is not of the form path=value, path==value or path!=value"
                )));
            };
            if path.is_empty() {
                return Err(error(format!("{term:?} names no field")));
            }
            let value = unescape(raw).map_err(error)?;
            terms.push(Term {
                path: path.to_owned(),
                equal,
                value,
            });
        }
        Ok(FieldSelector { terms })
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The first `path=value` term, which a cache can answer from an index before checking the other terms.
    pub fn equality(&self) -> Option<(&str, &str)> {
        self.terms
            .iter()
            .find(|t| t.equal)
            .map(|t| (t.path.as_str(), t.value.as_str()))
    }

    /// Whether `object` (a Kubernetes object as JSON) is selected.
    pub fn matches(&self, object: &Value) -> bool {
        self.matches_by(|path| Self::value_at(object, path))
    }

    /// Whether an object is selected, with `value_of` giving the text at a dotted path (see [`Self::value_at`]); for
    /// callers holding typed objects, which need not serialise a whole object to filter it. A missing field
    /// compares as `""`, as on the API server.
    pub fn matches_by(&self, value_of: impl Fn(&str) -> Option<String>) -> bool {
        self.terms.iter().all(|term| {
            let have = value_of(&term.path).unwrap_or_default();
            (have == term.value) == term.equal
        })
    }

    /// The text a selector compares at a dotted `path` of `object`: strings as they are, numbers and booleans as
    /// their JSON text (as custom resources' selectable fields on the API server), `None` when missing or null.
    pub fn value_at(object: &Value, path: &str) -> Option<String> {
        match path
            .split('.')
            .try_fold(object, |value, key| value.get(key))?
        {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    }
}

/// The selector as the API server takes it in `fieldSelector=`: `=` for both equality spellings, values
/// re-escaped.
impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, term) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let op = if term.equal { "=" } else { "!=" };
            write!(f, "{}{op}", term.path)?;
            for c in term.value.chars() {
                if matches!(c, '\\' | ',' | '=') {
                    f.write_str("\\")?;
                }
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

fn split_unescaped(s: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// `(path, equal, raw value)` split at the first operator.
fn split_term(term: &str) -> Option<(&str, bool, &str)> {
    term.char_indices().find_map(|(i, _)| {
        let (path, rest) = term.split_at(i);
        if let Some(value) = rest.strip_prefix("!=") {
            Some((path, false, value))
        } else if let Some(value) = rest.strip_prefix("==") {
            Some((path, true, value))
        } else {
            rest.strip_prefix('=').map(|value| (path, true, value))
        }
    })
}

fn unescape(raw: &str) -> Result<String, String> {
    let mut out = String::with_capacity(raw.len());
    let mut escaped = false;
    for c in raw.chars() {
        if escaped {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(format!(
                    "invalid escape sequence \\{c} (only \\\\, \\, and \\= are allowed)"
                ));
            }
            out.push(c);
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            ',' | '=' => {
                return Err(format!(
                    "{c:?} in the value {raw:?} must be escaped as \\{c}"
                ));
            }
            _ => out.push(c),
        }
    }
    if escaped {
        return Err(format!("the value {raw:?} ends in an unfinished escape"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn child(name: &str, cluster: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "team"}, "spec": {"clusterRef": {"name": cluster}, "size": 3, "paused": false}})
    }

    #[test]
    fn terms_must_all_hold() {
        let selector =
            FieldSelector::parse("spec.clusterRef.name=edge,metadata.name!=old").unwrap();
        assert!(selector.matches(&child("new", "edge")));
        assert!(!selector.matches(&child("old", "edge")));
        assert!(!selector.matches(&child("new", "core")));
    }

    #[test]
    fn the_three_operators_of_the_api_server_are_understood() {
        let obj = child("a", "edge");
        for (selector, selected) in [
            ("spec.clusterRef.name=edge", true),
            ("spec.clusterRef.name==edge", true),
            ("spec.clusterRef.name!=edge", false),
            ("metadata.namespace=team", true),
            ("metadata.namespace=other", false),
        ] {
            assert_eq!(
                FieldSelector::parse(selector).unwrap().matches(&obj),
                selected,
                "{selector}"
            );
        }
    }

    #[test]
    fn missing_fields_are_empty_and_scalars_compare_as_text() {
        let obj = child("a", "edge");
        assert!(FieldSelector::parse("spec.nothing=").unwrap().matches(&obj));
        assert!(
            FieldSelector::parse("spec.nothing!=x")
                .unwrap()
                .matches(&obj)
        );
        assert!(FieldSelector::parse("spec.size=3").unwrap().matches(&obj));
        assert!(
            FieldSelector::parse("spec.paused=false")
                .unwrap()
                .matches(&obj)
        );
    }

    #[test]
    fn values_are_unescaped_and_rendered_back_for_the_api_server() {
        let selector = FieldSelector::parse(r"metadata.name==a\,b\=c\\d,,spec.x!=y").unwrap();
        assert!(selector.matches(&json!({"metadata": {"name": r"a,b=c\d"}})));
        assert_eq!(selector.to_string(), r"metadata.name=a\,b\=c\\d,spec.x!=y");
        assert!(FieldSelector::parse("").unwrap().is_empty());
    }

    #[test]
    fn malformed_selectors_say_what_is_wrong() {
        for (selector, message) in [
            (
                "spec.clusterRef.name",
                r#"invalid field selector "spec.clusterRef.name": "spec.clusterRef.name" is not of the form path=value, path==value or path!=value"#,
            ),
            (
                "=edge",
                r#"invalid field selector "=edge": "=edge" names no field"#,
            ),
            (
                "a=b=c",
                r#"invalid field selector "a=b=c": '=' in the value "b=c" must be escaped as \="#,
            ),
            (
                r"a=b\x",
                r#"invalid field selector "a=b\\x": invalid escape sequence \x (only \\, \, and \= are allowed)"#,
            ),
            (
                r"a=b\",
                r#"invalid field selector "a=b\\": the value "b\\" ends in an unfinished escape"#,
            ),
        ] {
            assert_eq!(
                FieldSelector::parse(selector).unwrap_err().to_string(),
                message
            );
        }
    }
}
