//! The deletion guard, opt-in per object: an OmniCluster or OmniHelmRelease annotated
//! `omni.texashpc.com/deletion-protection: enabled` cannot be deleted while deleting it would destroy something
//! remote (an Omni cluster, a Helm release in a workload cluster), until a separate change confirms it with
//! `omni.texashpc.com/confirm-deletion: <the name of what goes>`. A GitOps prune or a stray `kubectl delete` then
//! stops at the webhook instead of at a finalizer that carries the destruction out.
//!
//! Annotations rather than a `spec` field: the Go operator's CRD schemas prune unknown `spec` fields without a
//! word, so a manifest meant for both operators would silently lose a `spec` switch there; annotations survive
//! any schema. Objects without the annotation are deleted exactly as the Go operator deletes them.

use serde_json::Value;

/// Turns the guard on for one object (`enabled`).
pub const PROTECTION: &str = "omni.texashpc.com/deletion-protection";
/// Confirms one deletion of a protected object: the name of what its deletion destroys.
pub const CONFIRMATION: &str = "omni.texashpc.com/confirm-deletion";

/// The kinds whose deletion can destroy something remote; their webhooks also receive DELETE.
pub const GUARDED: [&str; 2] = ["OmniCluster", "OmniHelmRelease"];

/// Why deleting `old` (the stored object of kind `kind`) is refused; None when it may go.
pub fn refusal(kind: &str, old: &Value) -> Option<String> {
    let annotations = &old["metadata"]["annotations"];
    if !matches!(annotations[PROTECTION].as_str(), Some("enabled" | "true")) {
        return None;
    }
    let text = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_string);
    let name = text(&old["metadata"]["name"]).unwrap_or_default();
    let (target, consequence, escape) = match kind {
        "OmniCluster" => {
            let policy = &old["spec"]["deletePolicy"];
            if policy["orphan"] == true {
                return None;
            }
            // The name Omni has the cluster under: the recorded one first (a refused rename keeps it).
            let remote = text(&old["status"]["clusterName"])
                .or_else(|| text(&old["spec"]["clusterName"]))
                .unwrap_or_else(|| name.clone());
            let machines = if policy["destroyMachines"] == true {
                " and destroys its disconnected machines"
            } else {
                ""
            };
            (
                remote.clone(),
                format!("deleting it deletes Omni cluster {remote:?}{machines}"),
                "or set spec.deletePolicy.orphan: true to keep the Omni cluster",
            )
        }
        "OmniHelmRelease" => {
            if old["spec"]["deletionPolicy"] == "Orphan" {
                return None;
            }
            let release = text(&old["status"]["releaseName"])
                .or_else(|| text(&old["spec"]["releaseName"]))
                .unwrap_or_else(|| name.clone());
            let cluster = text(&old["spec"]["clusterRef"]["name"]).unwrap_or_default();
            (
                release.clone(),
                format!(
                    "deleting it uninstalls Helm release {release:?} from the workload cluster of OmniCluster \
                     {cluster:?}"
                ),
                "or set spec.deletionPolicy: Orphan to keep the release",
            )
        }
        _ => return None,
    };
    if annotations[CONFIRMATION].as_str() == Some(target.as_str()) {
        return None;
    }
    let namespace = text(&old["metadata"]["namespace"]).unwrap_or_default();
    Some(format!(
        "{kind} {namespace}/{name} is protected from deletion ({PROTECTION}): {consequence}. To delete it, first \
         set the annotation {CONFIRMATION}={target} in a separate change, {escape}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cluster(annotations: Value, spec: Value) -> Value {
        json!({"metadata": {"name": "edge", "namespace": "ops", "annotations": annotations},
            "spec": spec, "status": {"clusterName": "edge-prod"}})
    }

    #[test]
    fn only_protected_objects_whose_deletion_destroys_something_are_refused() {
        let protected = json!({PROTECTION: "enabled"});
        assert_eq!(refusal("OmniCluster", &cluster(json!({}), json!({}))), None);
        assert_eq!(
            refusal(
                "OmniCluster",
                &cluster(protected.clone(), json!({"deletePolicy": {"orphan": true}}))
            ),
            None,
            "an orphaning deletion destroys nothing"
        );
        assert_eq!(
            refusal("OmniCluster", &cluster(protected.clone(), json!({}))).as_deref(),
            Some(
                "OmniCluster ops/edge is protected from deletion (omni.texashpc.com/deletion-protection): deleting \
                 it deletes Omni cluster \"edge-prod\". To delete it, first set the annotation \
                 omni.texashpc.com/confirm-deletion=edge-prod in a separate change, or set \
                 spec.deletePolicy.orphan: true to keep the Omni cluster"
            )
        );
        let machines = refusal(
            "OmniCluster",
            &cluster(
                protected.clone(),
                json!({"deletePolicy": {"destroyMachines": true}}),
            ),
        )
        .expect("refused");
        assert!(
            machines.contains("\"edge-prod\" and destroys its disconnected machines"),
            "{machines}"
        );
        assert_eq!(
            refusal("OmniConnection", &cluster(protected, json!({}))),
            None
        );
    }

    #[test]
    fn a_confirmation_naming_what_goes_lets_the_deletion_through() {
        let confirmed = |value: &str| {
            cluster(
                json!({PROTECTION: "enabled", CONFIRMATION: value}),
                json!({}),
            )
        };
        assert_eq!(refusal("OmniCluster", &confirmed("edge-prod")), None);
        assert!(
            refusal("OmniCluster", &confirmed("edge")).is_some(),
            "the object's own name is not the Omni cluster's"
        );
        assert!(refusal("OmniCluster", &confirmed("yes")).is_some());
    }

    #[test]
    fn a_protected_release_names_its_release_and_cluster() {
        let release = |spec: Value| {
            json!({"metadata": {"name": "web", "namespace": "apps", "annotations": {PROTECTION: "true"}},
                "spec": spec})
        };
        assert_eq!(
            refusal(
                "OmniHelmRelease",
                &release(json!({"clusterRef": {"name": "edge"}, "releaseName": "web-prod"}))
            )
            .as_deref(),
            Some(
                "OmniHelmRelease apps/web is protected from deletion (omni.texashpc.com/deletion-protection): \
                 deleting it uninstalls Helm release \"web-prod\" from the workload cluster of OmniCluster \"edge\". \
                 To delete it, first set the annotation omni.texashpc.com/confirm-deletion=web-prod in a separate \
                 change, or set spec.deletionPolicy: Orphan to keep the release"
            )
        );
        assert_eq!(
            refusal(
                "OmniHelmRelease",
                &release(json!({"clusterRef": {"name": "edge"}, "deletionPolicy": "Orphan"}))
            ),
            None
        );
    }
}
