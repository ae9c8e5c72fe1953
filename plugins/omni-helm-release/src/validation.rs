//! The controller's own spec checks, with the Go controller's texts and order: the first failure wins. They run
//! on the raw object, before it is read as the typed one. Two checks are additions, each where Go would have
//! failed later and worse: a release name Helm refuses (after `releaseName is required`) and a timeout that is
//! not a Go duration (at the timeout check; Go could not decode such an object at all). The webhook's wording
//! differs in places (`kubeconfig Secret name is required`); see `admission`.

use omni_plugin_sdk::Value;

use crate::messages;
use crate::object;
use crate::rules::{self, blank, set_but_blank};

/// Go's `helm release values must be a JSON object`.
pub const VALUES_NOT_AN_OBJECT: &str = "helm release values must be a JSON object";

pub fn first_failure(object: &Value) -> Option<String> {
    let spec = &object["spec"];
    let chart = &spec["chart"];
    let fail = |message: &str| Some(message.to_string());

    if blank(&spec["clusterRef"]["name"]) {
        return fail("clusterRef.name is required");
    }
    if blank(&spec["kubeconfigSecretRef"]["name"]) {
        return fail("kubeconfigSecretRef.name is required");
    }
    if set_but_blank(&spec["kubeconfigSecretRef"]["key"]) {
        return fail("kubeconfigSecretRef.key must not be blank");
    }
    let release_name = object::release_name(object);
    if release_name.trim().is_empty() {
        return fail("releaseName is required");
    }
    if let Some(why) = rules::release_name_problem(release_name) {
        return Some(messages::invalid_release_name(release_name, &why));
    }
    if object::release_namespace(object).trim().is_empty() {
        return fail("namespace is required");
    }
    if chart["git"].is_object() {
        if let Some((_, why)) = rules::git_chart_problems(&chart["git"]).into_iter().next() {
            return Some(why);
        }
    } else {
        if blank(&chart["repository"]) {
            return fail("chart.repository is required");
        }
        if blank(&chart["chart"]) {
            return fail("chart.chart is required");
        }
        if blank(&chart["version"]) {
            return fail("chart.version is required");
        }
    }
    match rules::timeout(spec) {
        Some(Err(why)) => {
            return Some(messages::invalid_timeout(
                rules::text(&spec["timeout"]),
                &why,
            ));
        }
        Some(Ok(ns)) if ns <= 0 => return fail("timeout must be greater than zero"),
        _ => {}
    }
    if let Some((path, raw, why)) = rules::bad_flux_durations(spec).into_iter().next() {
        return Some(format!("{path} {} {why}", messages::q(&raw)));
    }
    if rules::negative_max_history(spec).is_some() {
        return fail("maxHistory must not be negative");
    }
    if let Some((i, _, why)) = rules::ready_expr_problems(spec).into_iter().next() {
        return Some(format!("dependsOn[{i}].{why}"));
    }
    if let Some((_, _, why)) = rules::health_check_problems(spec).into_iter().next() {
        return Some(why);
    }
    if let Some((_, _, why)) = rules::verify_problem(chart) {
        return Some(why);
    }
    if let Some((_, why)) = rules::service_account_problem(spec) {
        return Some(why);
    }
    if let Some(block) = rules::forced_server_side_apply(spec).into_iter().next() {
        return Some(rules::forced_server_side_apply_message(block));
    }
    if !rules::known_deletion_policy(spec) {
        return fail("deletionPolicy must be Uninstall or Orphan");
    }
    if !rules::values_are_an_object(chart) {
        return fail(VALUES_NOT_AN_OBJECT);
    }
    None
}
