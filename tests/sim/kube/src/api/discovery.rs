//! API discovery: legacy (`/api`, `/apis`, per group-version resource lists) and aggregated discovery v2,
//! chosen by the Accept header as kube-apiserver does.

use std::sync::Arc;

use http::{HeaderValue, header};
use serde_json::{Value, json};

use super::{Api, Call, Resp, json_ok, json_response};
use crate::resources::{Registry, ResourceType};

const AGGREGATED_V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
const AGGREGATED_V2BETA1: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/// Which aggregated format the client accepts, if any (v2 preferred).
fn aggregated(accept: &str) -> Option<(&'static str, &'static str)> {
    let compact: String = accept.chars().filter(|c| !c.is_whitespace()).collect();
    for part in compact.split(',') {
        if part.contains("g=apidiscovery.k8s.io") && part.contains("as=APIGroupDiscoveryList") {
            if part.contains("v=v2beta1") {
                return Some(("apidiscovery.k8s.io/v2beta1", AGGREGATED_V2BETA1));
            }
            if part.contains("v=v2") {
                return Some(("apidiscovery.k8s.io/v2", AGGREGATED_V2));
            }
        }
    }
    None
}

pub fn handle(api: &Arc<Api>, call: &Call, path: &str) -> Option<Resp> {
    let reg = api.cluster.registry();
    let accept = call.header("accept");
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    match parts.as_slice() {
        ["api"] => Some(match aggregated(accept) {
            Some((av, ct)) => aggregated_response(av, ct, vec![group_discovery(&reg, "")]),
            None => json_ok(&json!({
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": api.address}],
            })),
        }),
        ["apis"] => Some(match aggregated(accept) {
            Some((av, ct)) => {
                let items = reg
                    .groups()
                    .iter()
                    .filter(|g| !g.is_empty())
                    .map(|g| group_discovery(&reg, g))
                    .collect();
                aggregated_response(av, ct, items)
            }
            None => {
                let groups: Vec<Value> = reg
                    .groups()
                    .iter()
                    .filter(|g| !g.is_empty())
                    .map(|g| api_group(&reg, g))
                    .collect();
                json_ok(&json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
            }
        }),
        ["apis", group] => {
            if reg.versions_of(group).is_empty() {
                return None;
            }
            Some(json_ok(&api_group(&reg, group)))
        }
        ["api", "v1"] => Some(json_ok(&resource_list(&reg, "", "v1"))),
        ["apis", group, version] => {
            if reg.types_in(group, version).is_empty() {
                return None;
            }
            Some(json_ok(&resource_list(&reg, group, version)))
        }
        _ => None,
    }
}

fn aggregated_response(api_version: &str, content_type: &'static str, items: Vec<Value>) -> Resp {
    let body = json!({"kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": items});
    let mut r = json_response(200, &body, &[]);
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn gv(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

fn api_group(reg: &Registry, group: &str) -> Value {
    let versions: Vec<Value> = reg
        .versions_of(group)
        .iter()
        .map(|v| json!({"groupVersion": gv(group, v), "version": v}))
        .collect();
    let preferred = reg.preferred_version(group).unwrap_or_default();
    json!({
        "kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": versions,
        "preferredVersion": {"groupVersion": gv(group, &preferred), "version": preferred},
    })
}

fn resource_list(reg: &Registry, group: &str, version: &str) -> Value {
    let mut resources = Vec::new();
    for t in reg.types_in(group, version) {
        let mut r = json!({
            "name": t.plural, "singularName": t.singular, "namespaced": t.namespaced,
            "kind": t.kind, "verbs": t.verbs,
        });
        if !t.short_names.is_empty() {
            r["shortNames"] = json!(t.short_names);
        }
        if !t.categories.is_empty() {
            r["categories"] = json!(t.categories);
        }
        resources.push(r);
        if t.status_subresource {
            resources.push(json!({"name": format!("{}/status", t.plural), "singularName": "", "namespaced": t.namespaced,
                "kind": t.kind, "verbs": ["get", "patch", "update"]}));
        }
        if t.group.is_empty() && t.plural == "serviceaccounts" {
            resources.push(json!({"name": "serviceaccounts/token", "singularName": "", "namespaced": true,
                "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest", "verbs": ["create"]}));
        }
        if super::scale::has_scale(&t) {
            resources.push(json!({"name": format!("{}/scale", t.plural), "singularName": "", "namespaced": t.namespaced,
                "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}));
        }
    }
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv(group, version), "resources": resources})
}

fn group_discovery(reg: &Registry, group: &str) -> Value {
    let versions: Vec<Value> = reg
        .versions_of(group)
        .iter()
        .map(|v| {
            let resources: Vec<Value> = reg
                .types_in(group, v)
                .iter()
                .map(|t| resource_discovery(t))
                .collect();
            json!({"version": v, "resources": resources, "freshness": "Current"})
        })
        .collect();
    json!({"metadata": {"name": group, "creationTimestamp": null}, "versions": versions})
}

fn resource_discovery(t: &ResourceType) -> Value {
    let kind = json!({"group": t.group, "version": t.version, "kind": t.kind});
    let mut r = json!({
        "resource": t.plural,
        "responseKind": kind,
        "scope": if t.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": t.singular,
        "verbs": t.verbs,
    });
    if !t.short_names.is_empty() {
        r["shortNames"] = json!(t.short_names);
    }
    if !t.categories.is_empty() {
        r["categories"] = json!(t.categories);
    }
    let mut subresources = Vec::new();
    if t.status_subresource {
        subresources.push(json!({"subresource": "status", "responseKind": kind, "verbs": ["get", "patch", "update"]}));
    }
    if t.group.is_empty() && t.plural == "serviceaccounts" {
        subresources.push(json!({"subresource": "token", "responseKind": {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"},
            "verbs": ["create"]}));
    }
    if super::scale::has_scale(t) {
        subresources.push(json!({"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
            "verbs": ["get", "patch", "update"]}));
    }
    if !subresources.is_empty() {
        r["subresources"] = json!(subresources);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregated_discovery_is_chosen_by_the_accept_header_kubectl_sends() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(aggregated(kubectl).map(|a| a.1), Some(AGGREGATED_V2));
        assert_eq!(aggregated("application/json, */*"), None);
    }

    #[test]
    fn resource_lists_show_status_subresources_and_short_names() {
        let reg = Registry::new();
        let l = resource_list(&reg, "apps", "v1");
        let names: Vec<&str> = l["resources"]
            .as_array()
            .expect("list")
            .iter()
            .filter_map(|r| r["name"].as_str())
            .collect();
        assert!(names.contains(&"deployments") && names.contains(&"deployments/status"));
        let d = group_discovery(&reg, "");
        assert_eq!(d["metadata"]["name"], "");
        let ns = d["versions"][0]["resources"]
            .as_array()
            .expect("core")
            .iter()
            .find(|r| r["resource"] == "namespaces")
            .cloned()
            .expect("ns");
        assert_eq!(ns["scope"], "Cluster");
        assert_eq!(ns["shortNames"], json!(["ns"]));
    }
}
