//! Request bodies in YAML (of which JSON is a subset), as the real server decodes them for every write that
//! accepts YAML (create and update with `application/yaml`, server-side apply). Nesting is measured before the
//! YAML parser runs: it takes time quadratic in the depth, so a 200 KB body of brackets would otherwise hold the
//! server for many seconds. A body that is JSON is decoded as JSON, whose decoder refuses deep nesting as it
//! reads; anything else (YAML flow style included) goes to the YAML parser.

use serde_json::Value;

/// The deepest flow nesting (`[`, `{`) a body may have: go-yaml's limit, which kube-apiserver's YAML decoder
/// inherits.
const MAX_FLOW_DEPTH: usize = 10_000;

/// The body as JSON, or the decoder's error text.
pub fn parse(body: &[u8]) -> Result<Value, String> {
    if body.trim_ascii_start().first() == Some(&b'{')
        && let Ok(v) = serde_json::from_slice(body)
    {
        return Ok(v);
    }
    if flow_depth(body) > MAX_FLOW_DEPTH {
        return Err(format!("exceeded max depth of {MAX_FLOW_DEPTH}"));
    }
    yaml_serde::from_slice(body).map_err(|e| e.to_string())
}

/// The deepest nesting of `[`/`{` in a YAML text, outside quoted scalars and comments. A quote opens a scalar,
/// and `#` a comment, only after whitespace, a flow indicator or the start of the text, as in YAML; elsewhere
/// they are part of a plain scalar, so text cannot hide brackets from this count that the parser would nest.
pub(crate) fn flow_depth(text: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut quote: Option<u8> = None;
    let mut comment = false;
    let mut escaped = false;
    let mut prev: Option<u8> = None;
    for &b in text {
        let boundary = matches!(
            prev,
            None | Some(b' ' | b'\t' | b'\n' | b'\r' | b'[' | b'{' | b',')
        );
        prev = Some(b);
        if comment {
            comment = b != b'\n';
            continue;
        }
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if q == b'"' && b == b'\\' {
                    escaped = true;
                } else if b == q {
                    quote = None;
                    // A closing quote is never the start of the next scalar.
                    prev = Some(b'x');
                }
            }
            None => match b {
                b'"' | b'\'' if boundary => quote = Some(b),
                b'#' if boundary => comment = true,
                b'[' | b'{' => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_and_yaml_flow_style_both_decode_and_deep_nesting_is_refused_before_parsing() {
        assert_eq!(parse(br#"{"a": [1]}"#), Ok(json!({"a": [1]})));
        // Flow-style YAML starts like JSON but is not JSON: it still reaches the YAML parser.
        assert_eq!(parse(b"{a: 1, b: [x]}"), Ok(json!({"a": 1, "b": ["x"]})));
        let deep = format!("{{\"a\": {}{}}}", "[".repeat(20_000), "]".repeat(20_000));
        assert_eq!(
            parse(deep.as_bytes()),
            Err("exceeded max depth of 10000".to_string())
        );
    }
}
