//! The subset of Kubernetes JSONPath that printer columns use: `.a.b`, `[n]`, `[*]`, `['key']` and filters
//! `[?(@.field=="value")]` (also `!=`, and `'` quotes).

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    All,
    Filter {
        path: Vec<String>,
        op_eq: bool,
        value: String,
    },
}

/// Parses a path; None when it uses syntax outside the supported subset.
fn parse(expr: &str) -> Option<Vec<Step>> {
    let e = expr.trim();
    let e = e
        .strip_prefix('{')
        .and_then(|x| x.strip_suffix('}'))
        .unwrap_or(e)
        .trim();
    let e = e.strip_prefix('$').unwrap_or(e);
    let chars: Vec<char> = e.chars().collect();
    let mut i = 0;
    let mut steps = Vec::new();
    while i < chars.len() {
        match chars[i] {
            '.' => {
                i += 1;
                let start = i;
                while i < chars.len() && chars[i] != '.' && chars[i] != '[' {
                    i += 1;
                }
                let name: String = chars[start..i].iter().collect();
                if !name.is_empty() {
                    steps.push(Step::Field(name));
                }
            }
            '[' => {
                let close = find_close(&chars, i)?;
                let inner: String = chars[i + 1..close].iter().collect();
                steps.push(bracket(inner.trim())?);
                i = close + 1;
            }
            _ => return None,
        }
    }
    Some(steps)
}

fn find_close(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut quote: Option<char> = None;
    for (j, c) in chars.iter().enumerate().skip(open) {
        match (quote, *c) {
            (Some(q), c2) if c2 == q => quote = None,
            (Some(_), _) => {}
            (None, '"') | (None, '\'') => quote = Some(*c),
            (None, '[') => depth += 1,
            (None, ']') => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

fn unquote(s: &str) -> Option<String> {
    let s = s.trim();
    for q in ['"', '\''] {
        if let Some(inner) = s.strip_prefix(q).and_then(|x| x.strip_suffix(q)) {
            return Some(inner.to_string());
        }
    }
    None
}

fn bracket(inner: &str) -> Option<Step> {
    if inner == "*" {
        return Some(Step::All);
    }
    if let Ok(n) = inner.parse::<i64>() {
        return Some(Step::Index(n));
    }
    if let Some(k) = unquote(inner) {
        return Some(Step::Field(k));
    }
    let f = inner.strip_prefix("?(")?.strip_suffix(')')?.trim();
    let (lhs, rhs, op_eq) = if let Some((l, r)) = f.split_once("==") {
        (l, r, true)
    } else if let Some((l, r)) = f.split_once("!=") {
        (l, r, false)
    } else {
        return None;
    };
    let path: Vec<String> = lhs
        .trim()
        .strip_prefix('@')?
        .split('.')
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect();
    let rhs = rhs.trim();
    let value = unquote(rhs).unwrap_or_else(|| rhs.to_string());
    Some(Step::Filter { path, op_eq, value })
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// All values the path selects, in document order.
pub fn find<'a>(root: &'a Value, expr: &str) -> Vec<&'a Value> {
    let Some(steps) = parse(expr) else {
        return Vec::new();
    };
    let mut current = vec![root];
    for step in &steps {
        let mut next = Vec::new();
        for v in current {
            match step {
                Step::Field(name) => {
                    if let Some(x) = v.get(name) {
                        next.push(x);
                    }
                }
                Step::Index(n) => {
                    if let Some(a) = v.as_array() {
                        let idx = if *n < 0 { a.len() as i64 + n } else { *n };
                        if idx >= 0
                            && let Some(x) = a.get(idx as usize)
                        {
                            next.push(x);
                        }
                    }
                }
                Step::All => match v {
                    Value::Array(a) => next.extend(a.iter()),
                    Value::Object(m) => next.extend(m.values()),
                    _ => {}
                },
                Step::Filter { path, op_eq, value } => {
                    if let Some(a) = v.as_array() {
                        for item in a {
                            let mut cur = Some(item);
                            for p in path {
                                cur = cur.and_then(|c| c.get(p));
                            }
                            let hit = cur.is_some_and(|c| scalar_text(c) == *value);
                            if hit == *op_eq && (cur.is_some() || !*op_eq) {
                                next.push(item);
                            }
                        }
                    }
                }
            }
        }
        current = next;
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn printer_column_paths_select_like_kubernetes_jsonpath() {
        let o = json!({"spec": {"replicas": 3}, "status": {"conditions": [
            {"type": "Accepted", "status": "False"}, {"type": "Ready", "status": "True", "reason": "Synced"}]}});
        assert_eq!(find(&o, ".spec.replicas"), vec![&json!(3)]);
        assert_eq!(
            find(&o, ".status.conditions[?(@.type==\"Ready\")].status"),
            vec![&json!("True")]
        );
        assert_eq!(
            find(&o, ".status.conditions[?(@.type=='Ready')].reason"),
            vec![&json!("Synced")]
        );
        assert_eq!(find(&o, ".status.conditions[*].type").len(), 2);
        assert_eq!(
            find(&o, ".status.conditions[-1].type"),
            vec![&json!("Ready")]
        );
        assert!(find(&o, ".missing.x").is_empty());
        assert!(find(&o, "not a path").is_empty());
    }
}
