//! Label and ID queries as cosi's in-memory backend evaluates them (`resource.LabelTerm`, `IDQuery`).

use std::collections::HashMap;

use omni_wire::cosi::label_term::Operation;
use omni_wire::cosi::{IdQuery, LabelQuery, LabelTerm, Resource};
use regex::Regex;

fn term_matches(labels: &HashMap<String, String>, term: &LabelTerm) -> bool {
    let value = labels.get(&term.key);
    let first = term.value.first().map(String::as_str).unwrap_or("");
    let result = match Operation::try_from(term.op).unwrap_or(Operation::Exists) {
        Operation::Exists => value.is_some(),
        Operation::NotExists => value.is_none(),
        Operation::Equal => value.is_some_and(|v| v == first),
        Operation::In => value.is_some_and(|v| term.value.iter().any(|x| x == v)),
        Operation::Lt => value.is_some_and(|v| v.as_str() < first),
        Operation::Lte => value.is_some_and(|v| v.as_str() <= first),
        // A label or operand that is not a number never matches (cosi: parse error → false).
        Operation::LtNumeric => numeric(value, first).is_some_and(|(a, b)| a < b),
        Operation::LteNumeric => numeric(value, first).is_some_and(|(a, b)| a <= b),
    };
    result != term.invert
}

fn numeric(value: Option<&String>, operand: &str) -> Option<(i64, i64)> {
    Some((value?.parse().ok()?, operand.parse().ok()?))
}

/// All queries and all their terms must match (both are ANDed).
pub fn labels_match(labels: &HashMap<String, String>, queries: &[LabelQuery]) -> bool {
    queries
        .iter()
        .all(|q| q.terms.iter().all(|t| term_matches(labels, t)))
}

/// A compiled ID query: Go's `regexp.MatchString`, i.e. unanchored, evaluated with the `regex` crate
/// (RE2 syntax, which both implement).
#[derive(Debug, Clone)]
pub struct IdMatcher(Option<Regex>);

impl IdMatcher {
    pub fn new(q: Option<&IdQuery>) -> Result<Self, String> {
        match q {
            Some(q) if !q.regexp.is_empty() => Regex::new(&q.regexp)
                .map(|r| IdMatcher(Some(r)))
                .map_err(|e| format!("error parsing regexp: {e}")),
            _ => Ok(IdMatcher(None)),
        }
    }

    pub fn matches(&self, id: &str) -> bool {
        self.0.as_ref().is_none_or(|r| r.is_match(id))
    }
}

/// A list/watch filter: label queries plus ID regexp.
#[derive(Debug, Clone)]
pub struct Filter {
    pub labels: Vec<LabelQuery>,
    pub id: IdMatcher,
}

impl Filter {
    /// A `key=value` term every match must satisfy (not inverted), for looking candidates up in an index.
    pub fn required_label(&self) -> Option<(&str, &str)> {
        self.labels
            .iter()
            .flat_map(|q| q.terms.iter())
            .find_map(|t| {
                let equal = Operation::try_from(t.op).ok() == Some(Operation::Equal)
                    || (Operation::try_from(t.op).ok() == Some(Operation::In)
                        && t.value.len() == 1);
                (equal && !t.invert).then(|| {
                    (
                        t.key.as_str(),
                        t.value.first().map(String::as_str).unwrap_or(""),
                    )
                })
            })
    }

    pub fn matches(&self, r: &Resource) -> bool {
        match &r.metadata {
            Some(m) => self.id.matches(&m.id) && labels_match(&m.labels, &self.labels),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(key: &str, op: Operation, value: &[&str], invert: bool) -> LabelQuery {
        LabelQuery {
            terms: vec![LabelTerm {
                key: key.into(),
                op: op as i32,
                value: value.iter().map(|s| s.to_string()).collect(),
                invert,
            }],
        }
    }

    #[test]
    fn operations_and_invert() {
        let l: HashMap<String, String> = [
            ("a".to_string(), "5".to_string()),
            ("b".to_string(), "x".to_string()),
        ]
        .into();
        assert!(labels_match(
            &l,
            &[term("a", Operation::Exists, &[], false)]
        ));
        assert!(labels_match(&l, &[term("z", Operation::Exists, &[], true)]));
        assert!(labels_match(
            &l,
            &[term("b", Operation::Equal, &["x"], false)]
        ));
        assert!(!labels_match(
            &l,
            &[term("b", Operation::Equal, &["x"], true)]
        ));
        assert!(labels_match(
            &l,
            &[term("z", Operation::Equal, &["x"], true)]
        ));
        assert!(labels_match(
            &l,
            &[term("b", Operation::In, &["y", "x"], false)]
        ));
        assert!(labels_match(
            &l,
            &[term("a", Operation::LtNumeric, &["10"], false)]
        ));
        assert!(
            !labels_match(&l, &[term("a", Operation::Lt, &["10"], false)]),
            "string order: \"5\" > \"10\""
        );
        assert!(labels_match(
            &l,
            &[term("a", Operation::LteNumeric, &["5"], false)]
        ));
        assert!(!labels_match(
            &l,
            &[term("b", Operation::LtNumeric, &["5"], false)]
        ));
        assert!(labels_match(
            &l,
            &[term("b", Operation::Lte, &["x"], false)]
        ));
        assert!(labels_match(
            &l,
            &[term("z", Operation::NotExists, &[], false)]
        ));
    }
}
