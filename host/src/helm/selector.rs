//! Kubernetes label selectors as text (`app=web,tier!=db,env in (a,b),!legacy`), matched against an object's
//! labels or annotations: the targets of post-render patches and of drift ignore rules select with them, as
//! kustomize's and Flux's selectors do.

use serde_json::Value;

/// One requirement of a label selector.
#[derive(Debug, PartialEq)]
pub enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    Exists(String),
    NotExists(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

/// A Kubernetes label selector's text (`app=web,tier!=db,env in (a,b),!legacy`) as requirements.
pub fn parse(text: &str) -> Result<Vec<Requirement>, String> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    let mut out = Vec::new();
    for part in parts.into_iter().map(str::trim).filter(|p| !p.is_empty()) {
        let set = |rest: &str| -> Result<Vec<String>, String> {
            let inner = rest
                .trim()
                .strip_prefix('(')
                .and_then(|r| r.strip_suffix(')'))
                .ok_or_else(|| format!("{part:?}: a set needs parentheses"))?;
            Ok(inner.split(',').map(|v| v.trim().to_string()).collect())
        };
        let r = if let Some((k, rest)) = part.split_once(" notin ") {
            Requirement::NotIn(k.trim().into(), set(rest)?)
        } else if let Some((k, rest)) = part.split_once(" in ") {
            Requirement::In(k.trim().into(), set(rest)?)
        } else if let Some((k, v)) = part.split_once("!=") {
            Requirement::NotEquals(k.trim().into(), v.trim().into())
        } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
            Requirement::Equals(k.trim().into(), v.trim().into())
        } else if let Some(k) = part.strip_prefix('!') {
            Requirement::NotExists(k.trim().into())
        } else {
            Requirement::Exists(part.into())
        };
        let key = match &r {
            Requirement::Equals(k, _)
            | Requirement::NotEquals(k, _)
            | Requirement::Exists(k)
            | Requirement::NotExists(k)
            | Requirement::In(k, _)
            | Requirement::NotIn(k, _) => k,
        };
        if key.is_empty() || key.contains(char::is_whitespace) {
            return Err(format!("{part:?} is not a selector requirement"));
        }
        out.push(r);
    }
    Ok(out)
}

/// Whether `text` (a selector; empty: everything) selects `labels` (an object, or null for none); one that
/// does not parse selects nothing (callers refuse it with [`parse`] first).
pub fn matches(text: &str, labels: &Value) -> bool {
    let Ok(reqs) = parse(text) else {
        return false;
    };
    let get = |k: &str| labels.get(k).and_then(Value::as_str);
    reqs.iter().all(|r| match r {
        Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
        Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
        Requirement::Exists(k) => get(k).is_some(),
        Requirement::NotExists(k) => get(k).is_none(),
        Requirement::In(k, vs) => get(k).is_some_and(|have| vs.iter().any(|v| v == have)),
        Requirement::NotIn(k, vs) => get(k).is_none_or(|have| !vs.iter().any(|v| v == have)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors_match_as_kubernetes_reads_them() {
        let labels = json!({"app": "web", "tier": "front"});
        for (selector, want) in [
            ("", true),
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app", true),
            ("!app", false),
            ("!legacy", true),
            ("tier in (front, back)", true),
            ("tier notin (front)", false),
            ("app=web,tier=back", false),
        ] {
            assert_eq!(matches(selector, &labels), want, "{selector}");
        }
        assert!(matches("!app", &Value::Null));
        assert!(parse("a b").is_err());
        assert!(parse("tier in front").is_err());
    }
}
