//! The endpoints controller: every Service with a selector gets an Endpoints object of its name listing the
//! matching Pods' IPs (Ready ones under `addresses`, the others under `notReadyAddresses`) with the target ports
//! resolved (a named `targetPort` through the Pod's container ports). Endpoints it manages carry the
//! `endpoints.kubernetes.io/managed-by` label and go when their Service goes.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::objects::{deleting, has_labels, labels, name, namespace, ready, uid};
use super::writes::{CONTROLLER_MANAGER, list, resource, write_object};
use crate::cluster::Cluster;

const MANAGED_BY: &str = "endpoints.kubernetes.io/managed-by";
const CONTROLLER: &str = "endpoint-controller";

pub async fn reconcile(cluster: &Cluster) -> bool {
    let (Some(svc_rt), Some(ep_rt), Some(pods_rt)) = (
        resource(cluster, "", "v1", "services"),
        resource(cluster, "", "v1", "endpoints"),
        resource(cluster, "", "v1", "pods"),
    ) else {
        return false;
    };
    let services = list(cluster, &svc_rt, None);
    let pods = list(cluster, &pods_rt, None);
    let mut wrote = false;
    for svc in &services {
        let Some(selector) = svc["spec"]["selector"]
            .as_object()
            .filter(|s| !s.is_empty())
        else {
            continue;
        };
        if deleting(svc) || svc["spec"]["type"] == "ExternalName" {
            continue;
        }
        let ns = namespace(svc);
        let members: Vec<&Value> = pods
            .iter()
            .map(|p| &**p)
            .filter(|p| namespace(p) == ns && !deleting(p))
            .filter(|p| !matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed")))
            .filter(|p| {
                p["status"]["podIP"]
                    .as_str()
                    .is_some_and(|ip| !ip.is_empty())
            })
            .filter(|p| has_labels(&labels(p), selector))
            .collect();
        // Pods with the same resolved ports share a subset.
        let mut subsets: BTreeMap<String, (Vec<Value>, Vec<Value>, Value)> = BTreeMap::new();
        for p in members {
            let ports = resolve_ports(svc, p);
            let key = ports.to_string();
            let entry = subsets
                .entry(key)
                .or_insert_with(|| (Vec::new(), Vec::new(), ports));
            let mut address = json!({
                "ip": p["status"]["podIP"],
                "targetRef": {"kind": "Pod", "name": name(p), "namespace": ns, "uid": uid(p)},
            });
            if let Some(node) = p["spec"]["nodeName"].as_str() {
                address["nodeName"] = json!(node);
            }
            // publishNotReadyAddresses lists every Pod as ready (headless StatefulSet peers find each other).
            if ready(p) || svc["spec"]["publishNotReadyAddresses"] == json!(true) {
                entry.0.push(address);
            } else {
                entry.1.push(address);
            }
        }
        let subsets: Vec<Value> = subsets
            .into_values()
            .map(|(mut ready, mut not_ready, ports)| {
                // RepackSubsets sorts addresses by IP, then by target uid.
                let key = |a: &Value| {
                    let ip = a["ip"]
                        .as_str()
                        .and_then(|s| s.parse::<std::net::IpAddr>().ok());
                    (ip, a["targetRef"]["uid"].to_string())
                };
                ready.sort_by_key(key);
                not_ready.sort_by_key(key);
                let mut s = json!({});
                if !ready.is_empty() {
                    s["addresses"] = json!(ready);
                }
                if !not_ready.is_empty() {
                    s["notReadyAddresses"] = json!(not_ready);
                }
                if ports.as_array().is_some_and(|p| !p.is_empty()) {
                    s["ports"] = ports;
                }
                s
            })
            .collect();
        let mut ep_labels = labels(svc);
        ep_labels.insert(MANAGED_BY.into(), json!(CONTROLLER));
        if svc["spec"]["clusterIP"] == "None" {
            ep_labels.insert("service.kubernetes.io/headless".into(), json!(""));
        }
        let current = cluster.store().get(&ep_rt.storage_key(), ns, name(svc));
        match current {
            None => {
                let mut ep = json!({"apiVersion": "v1", "kind": "Endpoints",
                    "metadata": {"name": name(svc), "namespace": ns, "labels": ep_labels}});
                if !subsets.is_empty() {
                    ep["subsets"] = json!(subsets);
                }
                wrote |= super::writes::create(cluster, &ep_rt, ns, ep, CONTROLLER_MANAGER).await;
            }
            Some(ep) => {
                let mut next = (*ep).clone();
                next["metadata"]["labels"] = json!(ep_labels);
                match next.as_object_mut() {
                    Some(o) if subsets.is_empty() => {
                        o.remove("subsets");
                    }
                    Some(o) => {
                        o.insert("subsets".into(), json!(subsets));
                    }
                    None => {}
                }
                if next != *ep {
                    wrote |= write_object(cluster, &ep_rt, next, CONTROLLER_MANAGER).await;
                }
            }
        }
    }
    // Endpoints this controller made whose Service is gone.
    for ep in list(cluster, &ep_rt, None) {
        let ours = ep["metadata"]["labels"][MANAGED_BY] == CONTROLLER;
        let has_service = services
            .iter()
            .any(|s| namespace(s) == namespace(&ep) && name(s) == name(&ep));
        if ours && !has_service && !deleting(&ep) {
            wrote |= super::writes::delete(cluster, &ep_rt, &ep, CONTROLLER_MANAGER).await;
        }
    }
    wrote
}

/// The Service's ports with `targetPort` resolved for this Pod; a named port the Pod lacks is left out.
fn resolve_ports(svc: &Value, pod: &Value) -> Value {
    let container_ports: Vec<&Value> = pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["ports"].as_array().into_iter().flatten())
        .collect();
    let ports: Vec<Value> = svc["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let port = match &p["targetPort"] {
                Value::Number(n) => n.as_i64(),
                Value::String(s) => s.parse::<i64>().ok().or_else(|| {
                    container_ports
                        .iter()
                        .find(|cp| cp["name"] == json!(s))
                        .and_then(|cp| cp["containerPort"].as_i64())
                }),
                _ => p["port"].as_i64(),
            }?;
            let mut out =
                json!({"port": port, "protocol": p["protocol"].as_str().unwrap_or("TCP")});
            if let Some(n) = p["name"].as_str().filter(|n| !n.is_empty()) {
                out["name"] = json!(n);
            }
            Some(out)
        })
        .collect();
    json!(ports)
}
