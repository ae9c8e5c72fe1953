//! Admission rules for OmniHelmRelease, in the Go webhook's order, all errors
//! collected; CREATE and UPDATE are judged alike (Go looked at the new object only).
//!
//! Additions to Go's rules, where Go let a bad value through to fail later: a release name Helm refuses
//! (more than 53 characters, or not a DNS-1123 subdomain) is refused on `spec.releaseName`, or on
//! `metadata.name` when that is the release name; and a timeout that is not a Go duration is a field error (Go
//! could not decode such an object at all, so the request failed without saying which field was wrong).

use omni_plugin_sdk::{Value, Verdict};

use crate::rules::{self, blank, set_but_blank, text};
use crate::url;
use crate::validation::VALUES_NOT_AN_OBJECT;

pub const WORKLOAD_WARNING: &str =
    "OmniHelmRelease uses a workload-cluster kubeconfig Secret and writes directly to that cluster";

pub fn validate(object: &Value, _old: Option<&Value>) -> Verdict {
    let mut v = Verdict::default();
    let spec = &object["spec"];
    let chart = &spec["chart"];
    let kubeconfig = &spec["kubeconfigSecretRef"];

    if blank(&spec["clusterRef"]["name"]) {
        v.required("spec.clusterRef.name", "clusterRef.name is required");
    }
    if blank(&kubeconfig["name"]) {
        v.required(
            "spec.kubeconfigSecretRef.name",
            "kubeconfig Secret name is required",
        );
    }
    if set_but_blank(&kubeconfig["key"]) {
        v.required(
            "spec.kubeconfigSecretRef.key",
            "kubeconfig Secret key must not be blank",
        );
    }
    release_name(&mut v, object);
    let namespace = text(&spec["namespace"]);
    if namespace.trim() != namespace {
        v.invalid(
            "spec.namespace",
            Value::String(namespace.into()),
            "namespace must not include leading or trailing whitespace",
        );
    }
    if chart["git"].is_object() {
        for (field, why) in rules::git_chart_problems(&chart["git"]) {
            let path = format!("spec.{field}");
            let value = chart["git"][field.rsplit('.').next().unwrap_or_default()].clone();
            v.invalid(&path, value, &why);
        }
    } else {
        let repository = text(&chart["repository"]);
        if repository.trim().is_empty() {
            v.required("spec.chart.repository", "chart.repository is required");
        } else if !url::is_absolute(repository) {
            v.invalid(
                "spec.chart.repository",
                Value::String(repository.into()),
                "chart.repository must be an absolute URL",
            );
        }
        if blank(&chart["chart"]) {
            v.required("spec.chart.chart", "chart.chart is required");
        }
        if blank(&chart["version"]) {
            v.required("spec.chart.version", "chart.version is required");
        }
    }
    match rules::timeout(spec) {
        // Go printed the parsed duration (`Duration.String()`): `-5m0s`, `0s`.
        Some(Ok(ns)) if ns <= 0 => v.invalid(
            "spec.timeout",
            Value::String(omni_plugin_sdk::go::format_duration(ns)),
            "timeout must be greater than zero",
        ),
        Some(Err(why)) => v.invalid(
            "spec.timeout",
            Value::String(text(&spec["timeout"]).into()),
            &format!("timeout is not a valid duration: {why}"),
        ),
        _ => {}
    }
    for (path, raw, why) in rules::bad_flux_durations(spec) {
        v.invalid(
            &format!("spec.{path}"),
            Value::String(raw.clone()),
            &format!("{path} {why}"),
        );
    }
    if let Some(n) = rules::negative_max_history(spec) {
        v.invalid(
            "spec.maxHistory",
            Value::from(n),
            "maxHistory must not be negative",
        );
    }
    for (i, expr, why) in rules::ready_expr_problems(spec) {
        v.invalid(
            &format!("spec.dependsOn[{i}].readyExpr"),
            Value::String(expr),
            &why,
        );
    }
    for (field, expr, why) in rules::health_check_problems(spec) {
        v.invalid(&format!("spec.{field}"), Value::String(expr), &why);
    }
    if let Some((path, value, why)) = rules::verify_problem(chart) {
        if path.ends_with("secretRef") {
            v.required(path, &why);
        } else {
            v.invalid(path, value, &why);
        }
    }
    if let Some((name, why)) = rules::service_account_problem(spec) {
        v.invalid("spec.serviceAccountName", Value::String(name), &why);
    }
    for block in rules::forced_server_side_apply(spec) {
        v.invalid(
            &format!("spec.{block}.serverSideApply"),
            spec[block]["serverSideApply"].clone(),
            &rules::forced_server_side_apply_message(block),
        );
    }
    if !rules::known_deletion_policy(spec) {
        v.not_supported(
            "spec.deletionPolicy",
            spec["deletionPolicy"].clone(),
            &["Uninstall", "Orphan"],
        );
    }
    if !rules::values_are_an_object(chart) {
        v.invalid(
            "spec.chart.values",
            chart["values"].clone(),
            VALUES_NOT_AN_OBJECT,
        );
    }

    if !text(&kubeconfig["name"]).is_empty() {
        v.warn(WORKLOAD_WARNING);
    }
    v
}

/// Go's whitespace rule on `spec.releaseName`, then Helm's own rule on the name the release will have:
/// `spec.releaseName`, else `metadata.name`. A name already refused for its whitespace is not refused twice.
fn release_name(v: &mut Verdict, object: &Value) {
    let spec_name = text(&object["spec"]["releaseName"]);
    if spec_name.trim() != spec_name {
        v.invalid(
            "spec.releaseName",
            Value::String(spec_name.into()),
            "releaseName must not include leading or trailing whitespace",
        );
        return;
    }
    let (field, name, detail) = if spec_name.is_empty() {
        (
            "metadata.name",
            text(&object["metadata"]["name"]),
            "not a valid Helm release name (spec.releaseName is unset, so metadata.name is the release name)",
        )
    } else {
        (
            "spec.releaseName",
            spec_name,
            "not a valid Helm release name",
        )
    };
    // A missing name is the API server's to refuse.
    if name.is_empty() {
        return;
    }
    if let Some(why) = rules::release_name_problem(name) {
        v.invalid(
            field,
            Value::String(name.into()),
            &format!("{detail}: {why}"),
        );
    }
}
