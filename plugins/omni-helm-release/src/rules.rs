//! The field rules that admission (`admission`) and the controller (`validation`) share. Both read the raw
//! object: admission because it must judge whatever was sent, the controller because a spec the webhook would
//! have refused (webhooks can be disabled) must be reported, never turned into a decode error.

use omni_plugin_sdk::Value;

/// Helm's limit on release names (`chartutil.ValidateReleaseName`): the name ends up in Secret labels and
/// resource names derived from it.
pub const MAX_RELEASE_NAME: usize = 53;

/// The text of a string field; absent or not a string is `""`, as Go's zero value.
pub fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// Empty or only whitespace (Go's `strings.TrimSpace(x) == ""`).
pub fn blank(v: &Value) -> bool {
    text(v).trim().is_empty()
}

/// Set (non-empty) but only whitespace: an unset optional field is fine, a blank one is not.
pub fn set_but_blank(v: &Value) -> bool {
    let s = text(v);
    !s.is_empty() && s.trim().is_empty()
}

/// `spec.timeout` when set: its nanoseconds, or Go's parse error. The Go operator could not even decode an
/// object with an unparsable duration; here it is a field error like any other.
pub fn timeout(spec: &Value) -> Option<Result<i64, String>> {
    let raw = spec.get("timeout").filter(|v| !v.is_null())?;
    Some(omni_plugin_sdk::go::parse_duration(text(raw)))
}

/// The durations of the Flux-style additions (`interval`, each action block's `timeout`, the strategies'
/// `retryInterval`), by their path under `spec`; none existed in the Go operator.
pub const FLUX_DURATIONS: [&str; 8] = [
    "interval",
    "install.timeout",
    "upgrade.timeout",
    "rollback.timeout",
    "uninstall.timeout",
    "test.timeout",
    "install.strategy.retryInterval",
    "upgrade.strategy.retryInterval",
];

/// Those of [`FLUX_DURATIONS`] that are set but are not positive Go durations: path, text and why.
pub fn bad_flux_durations(spec: &Value) -> Vec<(&'static str, String, String)> {
    FLUX_DURATIONS
        .iter()
        .filter_map(|path| {
            let v = path.split('.').try_fold(spec, |v, k| v.get(k))?;
            if v.is_null() {
                return None;
            }
            let raw = text(v);
            match omni_plugin_sdk::go::parse_duration(raw) {
                Ok(ns) if ns > 0 => None,
                Ok(_) => Some((
                    *path,
                    raw.to_string(),
                    "must be greater than zero".to_string(),
                )),
                Err(why) => Some((
                    *path,
                    raw.to_string(),
                    format!("is not a valid duration: {why}"),
                )),
            }
        })
        .collect()
}

/// What is wrong with `spec.chart.git`, by field (`chart.git.url`, …); empty when it is fine or absent.
pub fn git_chart_problems(git: &Value) -> Vec<(&'static str, String)> {
    if !git.is_object() {
        return Vec::new();
    }
    let mut problems = Vec::new();
    let url = text(&git["url"]);
    if url.trim().is_empty() {
        problems.push(("chart.git.url", "chart.git.url is required".to_string()));
    } else if !(url.starts_with("https://") || url.starts_with("http://")) {
        problems.push((
            "chart.git.url",
            "chart.git.url must be an https:// (or http://) URL".to_string(),
        ));
    }
    let named = ["branch", "tag", "commit"]
        .iter()
        .filter(|k| !text(&git[**k]).is_empty())
        .count();
    if named > 1 {
        problems.push((
            "chart.git",
            "chart.git: set only one of branch, tag and commit".to_string(),
        ));
    }
    let commit = text(&git["commit"]);
    let full_id = commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit());
    if !commit.is_empty() && !full_id {
        problems.push((
            "chart.git.commit",
            "chart.git.commit must be a full commit id of 40 hexadecimal digits".to_string(),
        ));
    }
    let path = text(&git["path"]);
    if path.starts_with('/') || path.split('/').any(|s| s == "..") {
        problems.push((
            "chart.git.path",
            "chart.git.path must be a relative path inside the repository".to_string(),
        ));
    }
    problems
}

/// `spec.maxHistory` when it is a negative integer.
pub fn negative_max_history(spec: &Value) -> Option<i64> {
    spec["maxHistory"].as_i64().filter(|n| *n < 0)
}

/// The action blocks (`upgrade`, `rollback`) that ask for `force` and `serverSideApply: enabled` together: Helm
/// replaces objects only client-side and refuses the two.
pub fn forced_server_side_apply(spec: &Value) -> Vec<&'static str> {
    ["upgrade", "rollback"]
        .into_iter()
        .filter(|block| {
            spec[block]["force"] == Value::Bool(true) && spec[block]["serverSideApply"] == "enabled"
        })
        .collect()
}

/// What [`forced_server_side_apply`] reports for `block`.
pub fn forced_server_side_apply_message(block: &str) -> String {
    format!(
        "{block}.serverSideApply must not be enabled together with {block}.force: Helm replaces objects only \
         with client-side apply (set serverSideApply to disabled or auto, or drop force)"
    )
}

/// The values are usable: absent (or `null`, which the API server prunes and Go decoded as absent) or a JSON
/// object.
pub fn values_are_an_object(chart: &Value) -> bool {
    matches!(
        chart.get("values"),
        None | Some(Value::Null | Value::Object(_))
    )
}

/// `spec.deletionPolicy` is unset, empty (both mean `Uninstall`), `Uninstall` or `Orphan`.
pub fn known_deletion_policy(spec: &Value) -> bool {
    match spec.get("deletionPolicy") {
        None | Some(Value::Null) => true,
        Some(v) => matches!(v.as_str(), Some("" | "Uninstall" | "Orphan")),
    }
}

/// Why Helm would refuse `name` as a release name, or `None` when it is fine (the Go operator let Helm
/// find out, at every reconcile). Helm's rule is a DNS-1123 subdomain of at most 53 characters.
pub fn release_name_problem(name: &str) -> Option<String> {
    if name.len() > MAX_RELEASE_NAME {
        return Some(format!(
            "it must be no more than {MAX_RELEASE_NAME} characters"
        ));
    }
    if !is_dns1123_subdomain(name) {
        return Some(
            "it must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an \
             alphanumeric character"
                .into(),
        );
    }
    None
}

/// Each `dependsOn[i].readyExpr` that is no CEL readiness expression: (index, expression, why).
pub fn ready_expr_problems(spec: &Value) -> Vec<(usize, String, String)> {
    spec["dependsOn"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, d)| {
            let expr = d["readyExpr"].as_str()?;
            crate::ready_expr::problem(expr).map(|why| (i, expr.to_string(), why))
        })
        .collect()
}

/// Each `healthCheckExprs[i]` expression that is no CEL health expression: (its path under spec, the expression,
/// why). An empty inProgress or failed is not given; an empty current is the schema's to refuse.
pub fn health_check_problems(spec: &Value) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let checks = spec["healthCheckExprs"].as_array().into_iter().flatten();
    for (i, check) in checks.enumerate() {
        for key in ["current", "inProgress", "failed"] {
            let Some(expr) = check[key].as_str().filter(|e| !e.is_empty()) else {
                continue;
            };
            let field = format!("healthCheckExprs[{i}].{key}");
            if let Err(why) = omni_api::cel::compile(&field, expr) {
                out.push((field, expr.to_string(), why));
            }
        }
    }
    out
}

/// What is wrong with `spec.chart.verify`, as (field, value, message): a Secret of public keys is required
/// (keyless verification is not supported) and the chart must be an OCI one (only those carry cosign signatures).
pub fn verify_problem(chart: &Value) -> Option<(&'static str, Value, String)> {
    let verify = chart.get("verify").filter(|v| !v.is_null())?;
    if blank(&verify["secretRef"]["name"]) {
        return Some((
            "spec.chart.verify.secretRef",
            verify["secretRef"].clone(),
            "chart.verify.secretRef is required: keyless verification is not supported".into(),
        ));
    }
    let oci = !chart["git"].is_object() && text(&chart["chart"]).trim().starts_with("oci://");
    if !oci {
        return Some((
            "spec.chart.verify",
            verify.clone(),
            "chart.verify needs an oci:// chart: only OCI charts carry cosign signatures".into(),
        ));
    }
    None
}

/// `spec.serviceAccountName` and why the API server would refuse it as a ServiceAccount name (a DNS-1123
/// subdomain of at most 253 characters), when it is set and would.
pub fn service_account_problem(spec: &Value) -> Option<(String, String)> {
    let name = spec["serviceAccountName"].as_str()?;
    let why = if name.len() > 253 {
        "it must be no more than 253 characters"
    } else if !is_dns1123_subdomain(name) {
        "it must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an \
         alphanumeric character"
    } else {
        return None;
    };
    Some((
        name.to_string(),
        format!("serviceAccountName is not a valid ServiceAccount name: {why}"),
    ))
}

/// `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`: dot-separated labels, each starting and
/// ending with a lower-case letter or digit.
fn is_dns1123_subdomain(name: &str) -> bool {
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    name.split('.').all(|label| {
        let b = label.as_bytes();
        match (b.first(), b.last()) {
            (Some(&first), Some(&last)) => {
                alnum(first) && alnum(last) && b.iter().all(|&c| alnum(c) || c == b'-')
            }
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use omni_plugin_sdk::json;

    #[test]
    fn release_names_follow_helms_rule() {
        for good in [
            "a",
            "0",
            "web",
            "my-app",
            "my.app",
            "a-b.c-d",
            "x1.2y",
            &"a".repeat(53),
        ] {
            assert_eq!(release_name_problem(good), None, "{good}");
        }
        let pattern = "it must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an \
                       alphanumeric character";
        for bad in [
            "", "App", "my_app", "-a", "a-", "a..b", ".a", "a.", "a.-b", "a b", " a", "ü",
        ] {
            assert_eq!(
                release_name_problem(bad).as_deref(),
                Some(pattern),
                "{bad:?}"
            );
        }
        assert_eq!(
            release_name_problem(&"a".repeat(54)).as_deref(),
            Some("it must be no more than 53 characters")
        );
    }

    #[test]
    fn values_must_be_an_object_when_present() {
        assert!(values_are_an_object(&json!({})));
        assert!(values_are_an_object(&json!({"values": null})));
        assert!(values_are_an_object(&json!({"values": {"a": 1}})));
        for bad in [json!([]), json!("x"), json!(1), json!(true)] {
            assert!(!values_are_an_object(&json!({ "values": bad })), "{bad}");
        }
    }

    #[test]
    fn timeouts_parse_as_go_durations() {
        assert_eq!(timeout(&json!({})), None);
        assert_eq!(timeout(&json!({"timeout": null})), None);
        assert_eq!(
            timeout(&json!({"timeout": "90s"})),
            Some(Ok(90_000_000_000))
        );
        assert_eq!(
            timeout(&json!({"timeout": "5 minutes"})),
            Some(Err(
                "time: unknown unit \" minutes\" in duration \"5 minutes\"".into()
            ))
        );
        assert_eq!(
            timeout(&json!({"timeout": ""})),
            Some(Err("time: invalid duration \"\"".into()))
        );
    }
}
