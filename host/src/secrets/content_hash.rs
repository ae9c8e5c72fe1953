//! The Go operator's content hash of a synced Secret: SHA-256 over the compact
//! `encoding/json` form of `{"version":"v1","type":…,"data":{…}}`, so a target written by the Go operator hashes
//! the same here and a migration rewrites nothing.

use std::collections::BTreeMap;

use base64::Engine as _;
// Go's string encoding, as the plugins' spec hashes use it: one implementation, checked against Go.
use omni_go::json_string as go_json_string;

/// Hex SHA-256 of the v1 content document. `data` keys are sorted (Go sorts map keys); values are standard
/// base64 with padding (Go's `[]byte` encoding); no data at all is `"data":null`.
pub fn content_hash(secret_type: &str, data: &BTreeMap<String, Vec<u8>>) -> String {
    let mut doc = format!(
        "{{\"version\":\"v1\",\"type\":{},\"data\":",
        go_json_string(secret_type)
    );
    if data.is_empty() {
        doc.push_str("null");
    } else {
        doc.push('{');
        for (i, (key, value)) in data.iter().enumerate() {
            if i > 0 {
                doc.push(',');
            }
            doc.push_str(&go_json_string(key));
            doc.push(':');
            doc.push('"');
            doc.push_str(&base64::engine::general_purpose::STANDARD.encode(value));
            doc.push('"');
        }
        doc.push('}');
    }
    doc.push('}');
    super::sha256_hex(doc.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(pairs: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .collect()
    }

    /// Hashes the Go operator computed for these Secrets.
    #[test]
    fn hashes_match_the_go_operators_vectors() {
        assert_eq!(
            content_hash(
                "kubernetes.io/dockerconfigjson",
                &data(&[(".dockerconfigjson", r#"{"auths":{"ghcr.io":{}}}"#)])
            ),
            "ccc3e840f961dd74618468d5de989ec6015d88f34cf2bc23ced35db8ce5a39c4"
        );
        assert_eq!(
            content_hash("Opaque", &data(&[("b", "two"), ("a", "one")])),
            "2210ca7988d691199049376a6b5d4bc26f1ac3b2e99023337d497b86c0932fdf"
        );
        assert_eq!(
            content_hash("Opaque", &BTreeMap::new()),
            "0414b13f5c6a6aaa228e7a59a8c43dbb12c1d698b8dfa2621883e4de82bbb867"
        );
    }

    #[test]
    fn strings_are_escaped_as_go_escapes_them() {
        assert_eq!(go_json_string("a<b>&c"), r#""a\u003cb\u003e\u0026c""#);
        assert_eq!(go_json_string("x\u{2028}y\u{2029}"), r#""x\u2028y\u2029""#);
        assert_eq!(go_json_string("q\"\\\n\t\u{1}"), r#""q\"\\\n\t\u0001""#);
        assert_eq!(go_json_string("é"), "\"é\"");
    }
}
