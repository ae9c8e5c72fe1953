//! Object-metadata validation with the messages of k8s.io/apimachinery's validation package.

use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use crate::error::FieldCause;

const DNS1123_LABEL: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1035_LABEL: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const QUALIFIED_NAME: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const CONFIG_KEY: &str = "[-._a-zA-Z0-9]+";

/// The compiled, anchored form of a built-in pattern. The patterns are constants checked by the unit tests; were
/// one ever not to compile, nothing matches it and every value is reported invalid rather than the server dying.
fn anchored(
    pattern: &'static str,
    cell: &'static OnceLock<Option<Regex>>,
) -> Option<&'static Regex> {
    cell.get_or_init(|| Regex::new(&format!("^(?:{pattern})$")).ok())
        .as_ref()
}

fn matches(re: Option<&Regex>, s: &str) -> bool {
    re.is_some_and(|r| r.is_match(s))
}

fn label_re() -> Option<&'static Regex> {
    static R: OnceLock<Option<Regex>> = OnceLock::new();
    anchored(DNS1123_LABEL, &R)
}
fn subdomain_re() -> Option<&'static Regex> {
    static R: OnceLock<Option<Regex>> = OnceLock::new();
    anchored(DNS1123_SUBDOMAIN, &R)
}
fn dns1035_re() -> Option<&'static Regex> {
    static R: OnceLock<Option<Regex>> = OnceLock::new();
    anchored(DNS1035_LABEL, &R)
}
fn qualified_re() -> Option<&'static Regex> {
    static R: OnceLock<Option<Regex>> = OnceLock::new();
    anchored(QUALIFIED_NAME, &R)
}
fn label_value_re() -> Option<&'static Regex> {
    static R: OnceLock<Option<Regex>> = OnceLock::new();
    anchored(LABEL_VALUE, &R)
}
fn config_key_re() -> Option<&'static Regex> {
    static R: OnceLock<Option<Regex>> = OnceLock::new();
    anchored(CONFIG_KEY, &R)
}

/// Which name rule a resource uses (as its registry strategy picks in the real server).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    Dns1123Subdomain,
    Dns1123Label,
    Dns1035Label,
    /// RBAC objects: any string usable as a path segment.
    PathSegment,
}

pub fn name_rule(group: &str, resource: &str) -> NameRule {
    match (group, resource) {
        ("", "namespaces") => NameRule::Dns1123Label,
        ("", "services") => NameRule::Dns1035Label,
        ("rbac.authorization.k8s.io", _) => NameRule::PathSegment,
        _ => NameRule::Dns1123Subdomain,
    }
}

/// Errors for a name under a rule, e.g. `a lowercase RFC 1123 subdomain must consist of ...`.
pub fn name_errors(name: &str, rule: NameRule) -> Vec<String> {
    let mut errs = Vec::new();
    match rule {
        NameRule::Dns1123Subdomain => {
            if name.len() > 253 {
                errs.push("must be no more than 253 characters".to_string());
            }
            if !matches(subdomain_re(), name) {
                errs.push(format!("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '{DNS1123_SUBDOMAIN}')"));
            }
        }
        NameRule::Dns1123Label => {
            if name.len() > 63 {
                errs.push("must be no more than 63 characters".to_string());
            }
            if !matches(label_re(), name) {
                errs.push(format!("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '{DNS1123_LABEL}')"));
            }
        }
        NameRule::Dns1035Label => {
            if name.len() > 63 {
                errs.push("must be no more than 63 characters".to_string());
            }
            if !matches(dns1035_re(), name) {
                errs.push(format!("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '{DNS1035_LABEL}')"));
            }
        }
        NameRule::PathSegment => {
            if name == "." || name == ".." {
                errs.push(format!("may not be '{name}'"));
            }
            for bad in ["/", "%"] {
                if name.contains(bad) {
                    errs.push(format!("may not contain '{bad}'"));
                }
            }
        }
    }
    errs
}

/// `prefix/name` label and annotation keys.
pub fn qualified_name_errors(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if key.matches('/').count() > 1 {
        errs.push(format!("a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{QUALIFIED_NAME}') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"));
        return errs;
    }
    if let Some(p) = prefix {
        if p.is_empty() {
            errs.push("prefix part must be non-empty".to_string());
        } else {
            for e in name_errors(p, NameRule::Dns1123Subdomain) {
                errs.push(format!("prefix part {e}"));
            }
        }
    }
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else {
        if name.len() > 63 {
            errs.push("name part must be no more than 63 characters".to_string());
        }
        if !matches(qualified_re(), name) {
            errs.push(format!("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{QUALIFIED_NAME}')"));
        }
    }
    errs
}

pub fn label_value_errors(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !matches(label_value_re(), v) {
        errs.push(format!("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '{LABEL_VALUE}')"));
    }
    errs
}

pub fn config_key_errors(k: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if k.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    if !matches(config_key_re(), k) {
        errs.push(format!("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '{CONFIG_KEY}')"));
    }
    if k == "." || k == ".." {
        errs.push(format!("must not be '{k}'"));
    }
    errs
}

/// Labels, annotations and the name of an object, as ValidateObjectMeta checks them.
pub fn validate_metadata(meta: &Value, rule: NameRule) -> Vec<FieldCause> {
    let mut out = Vec::new();
    let name = meta["name"].as_str().unwrap_or_default();
    if name.is_empty() {
        out.push(FieldCause::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for e in name_errors(name, rule) {
            out.push(FieldCause::invalid(
                "metadata.name",
                &Value::String(name.into()),
                &e,
            ));
        }
    }
    if let Some(labels) = meta.get("labels") {
        match labels.as_object() {
            Some(map) => {
                for (k, v) in map {
                    for e in qualified_name_errors(k) {
                        out.push(FieldCause::invalid(
                            "metadata.labels",
                            &Value::String(k.clone()),
                            &e,
                        ));
                    }
                    match v.as_str() {
                        Some(s) => {
                            for e in label_value_errors(s) {
                                out.push(FieldCause::invalid("metadata.labels", v, &e));
                            }
                        }
                        None if v.is_null() => {}
                        None => out.push(FieldCause::invalid(
                            "metadata.labels",
                            v,
                            "label values must be strings",
                        )),
                    }
                }
            }
            None if labels.is_null() => {}
            None => out.push(FieldCause::invalid(
                "metadata.labels",
                labels,
                "must be a map of strings",
            )),
        }
    }
    if let Some(ann) = meta.get("annotations") {
        match ann.as_object() {
            Some(map) => {
                let mut total = 0usize;
                for (k, v) in map {
                    total += k.len() + v.as_str().map_or(0, str::len);
                    for e in qualified_name_errors(&k.to_lowercase()) {
                        out.push(FieldCause::invalid(
                            "metadata.annotations",
                            &Value::String(k.clone()),
                            &e,
                        ));
                    }
                    if !v.is_string() && !v.is_null() {
                        out.push(FieldCause::invalid(
                            "metadata.annotations",
                            v,
                            "annotation values must be strings",
                        ));
                    }
                }
                if total > 256 * 1024 {
                    out.push(FieldCause::preformatted(
                        "FieldValueTooLong",
                        "metadata.annotations",
                        format!(
                            "metadata.annotations: Too long: may not be more than {} bytes",
                            256 * 1024
                        ),
                    ));
                }
            }
            None if ann.is_null() => {}
            None => out.push(FieldCause::invalid(
                "metadata.annotations",
                ann,
                "must be a map of strings",
            )),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_built_in_pattern_compiles() {
        for re in [
            label_re(),
            subdomain_re(),
            dns1035_re(),
            qualified_re(),
            label_value_re(),
            config_key_re(),
        ] {
            assert!(re.is_some());
        }
    }

    #[test]
    fn subdomain_names_reject_uppercase_with_the_real_message() {
        let errs = name_errors("Bad_Name", NameRule::Dns1123Subdomain);
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with("a lowercase RFC 1123 subdomain must consist of"));
        assert!(name_errors("good.name-1", NameRule::Dns1123Subdomain).is_empty());
        assert!(!name_errors("a.b", NameRule::Dns1123Label).is_empty());
        assert!(!name_errors("1abc", NameRule::Dns1035Label).is_empty());
        assert!(name_errors("system:controller:x", NameRule::PathSegment).is_empty());
    }

    #[test]
    fn label_keys_and_values_follow_qualified_name_rules() {
        assert!(qualified_name_errors("app.kubernetes.io/name").is_empty());
        assert!(!qualified_name_errors("a/b/c").is_empty());
        assert!(!qualified_name_errors("-bad").is_empty());
        assert!(label_value_errors("").is_empty());
        assert!(!label_value_errors("has space").is_empty());
        let errs = validate_metadata(
            &json!({"name": "x", "labels": {"ok": "v", "bad key": "v"}}),
            NameRule::Dns1123Subdomain,
        );
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0]
                .message
                .starts_with("metadata.labels: Invalid value: \"bad key\": name part must consist")
        );
    }

    #[test]
    fn config_keys_allow_dots_and_underscores_only() {
        assert!(config_key_errors("KEY_name.1-x").is_empty());
        assert!(!config_key_errors("bad/key").is_empty());
        assert!(!config_key_errors("..").is_empty());
    }
}
