//! What the chaos run checks once the faults stop: the final state against what the fleet wants (Omni, the
//! workload clusters, the management cluster), the removals Omni saw against the deletions the driver made, and
//! every place a credential could leak to.

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;
use omni_sim::OmniSim;
use omni_sim::types::CLUSTERS;
use omni_wire::specs;
use prost::Message as _;
use serde_json::Value;

use super::fleet::{API, Fleet, NAMESPACE, RELEASE_NAMESPACE, SYNC_NAMESPACE, Unit, export_secret};
use super::history::OmniRemovals;

/// One broken invariant: the object it concerns (when one does) and what is wrong.
#[derive(Debug, Clone)]
pub struct Violation {
    pub unit: Option<Unit>,
    pub what: String,
}

fn violation(unit: Unit, what: String) -> Violation {
    Violation {
        unit: Some(unit),
        what,
    }
}

const KINDS: [&str; 8] = [
    "OmniConnection",
    "OmniCluster",
    "OmniControlPlane",
    "OmniWorkers",
    "OmniMachine",
    "OmniHelmRelease",
    "OmniKubeconfigExport",
    "OmniSecretSync",
];

fn condition_true(o: &Value, kind: &str) -> bool {
    o["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == kind && c["status"] == "True")
    })
}

fn conditions(o: &Value) -> String {
    o["status"]["conditions"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    format!(
                        "{}={} ({})",
                        c["type"].as_str().unwrap_or_default(),
                        c["status"].as_str().unwrap_or_default(),
                        c["message"].as_str().unwrap_or_default()
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_else(|| "no conditions".into())
}

/// The object's status speaks of its current generation.
fn observed(o: &Value) -> bool {
    o["status"]["observedGeneration"] == o["metadata"]["generation"]
}

/// Everything the fleet wants, as it stands now. Empty: converged.
pub fn converged(
    fleet: &Fleet,
    kube: &kube_sim::KubeSim,
    workloads: &[kube_sim::KubeSim],
    omni: &OmniSim,
) -> Vec<Violation> {
    let mut out = Vec::new();
    let state = omni.state();
    let children = super::omni_state::Children::read(kube);
    let mut wanted_clusters = BTreeSet::new();
    let mut wanted_releases: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
    for (&unit, wanted) in &fleet.wanted {
        let name = fleet.name(unit);
        if wanted.deleted {
            let held =
                fleet
                    .deleted_objects(unit)
                    .into_iter()
                    .find_map(|(api_version, kind, name)| {
                        let o = kube.get(api_version, kind, NAMESPACE, &name)?;
                        Some(format!(
                            "{kind} {name} is still being deleted (finalizers {}; {})",
                            o["metadata"]["finalizers"],
                            conditions(&o)
                        ))
                    });
            out.push(violation(
                unit,
                format!(
                    "deleted, not created again yet: {}",
                    held.unwrap_or_else(|| "its old objects are gone".into())
                ),
            ));
            continue;
        }
        for object in fleet.objects(unit) {
            let (api_version, kind) = (
                object["apiVersion"].as_str().unwrap_or_default(),
                object["kind"].as_str().unwrap_or_default(),
            );
            let object_name = object["metadata"]["name"].as_str().unwrap_or_default();
            match kube.get(api_version, kind, NAMESPACE, object_name) {
                None => out.push(violation(
                    unit,
                    format!("{kind} {object_name} does not exist"),
                )),
                Some(o) if o["metadata"]["deletionTimestamp"].is_string() => out.push(violation(
                    unit,
                    format!("{kind} {object_name} is still being deleted"),
                )),
                Some(_) => {}
            }
        }
        // The unit's own object reports its work done, for the generation it is at.
        let (kind, condition) = match unit {
            Unit::Cluster(_) => ("OmniCluster", "Synced"),
            Unit::Release(_) => ("OmniHelmRelease", "Ready"),
            Unit::Export(_) => ("OmniKubeconfigExport", "Ready"),
            Unit::Sync(_) => ("OmniSecretSync", "Ready"),
        };
        if let Some(o) = kube.get(API, kind, NAMESPACE, &name)
            && !(condition_true(&o, condition) && observed(&o))
        {
            out.push(violation(
                unit,
                format!(
                    "{kind} not {condition} at its generation: {}",
                    conditions(&o)
                ),
            ));
        }
        match unit {
            Unit::Cluster(_) => {
                wanted_clusters.insert(name.clone());
                let edits = wanted.edits;
                match state.get("default", CLUSTERS, &name) {
                    None => out.push(violation(unit, "no Cluster in Omni".into())),
                    Some(stored) => {
                        let spec = stored
                            .spec
                            .as_ref()
                            .and_then(|s| specs::ClusterSpec::decode(s.proto_spec.as_slice()).ok());
                        let proxy = spec
                            .as_ref()
                            .and_then(|s| s.features.as_ref())
                            .is_some_and(|f| f.enable_workload_proxy);
                        if proxy != Fleet::workload_proxy(edits) {
                            out.push(violation(
                                unit,
                                format!(
                                    "Omni's Cluster has enableWorkloadProxy {proxy}, the object wants {}",
                                    Fleet::workload_proxy(edits)
                                ),
                            ));
                        }
                    }
                }
                // Every resource as the objects' template renders it, and none it does not render.
                for what in super::omni_state::differences(kube, &children, state, &name) {
                    out.push(violation(unit, what));
                }
            }
            Unit::Release(r) => {
                let w = r / fleet.shape.releases_per_workload;
                wanted_releases.entry(w).or_default().insert(name.clone());
                let (_, message) = Fleet::release_values(r, wanted.edits);
                let workload = &workloads[w];
                let deployed = workload
                    .get(
                        "v1",
                        "ConfigMap",
                        RELEASE_NAMESPACE,
                        &format!("{name}-hello"),
                    )
                    .and_then(|cm| cm["data"]["message"].as_str().map(str::to_string));
                if deployed.as_deref() != Some(message.as_str()) {
                    out.push(violation(
                        unit,
                        format!("workload cluster {w} has message {deployed:?}, the object wants {message:?}"),
                    ));
                }
                let latest = latest_revision(workload, &name);
                // The chart never changes under its version here: the content the revision recorded is the chart's.
                let content = latest.as_ref().and_then(|l| l.chart_digest.clone());
                let digest = fleet.release_digest(r, wanted.edits, content.as_deref());
                match latest {
                    Some(latest) if latest.status != "deployed" => out.push(violation(
                        unit,
                        format!(
                            "Helm's latest revision {} is {}, not deployed",
                            latest.version, latest.status
                        ),
                    )),
                    Some(latest) if latest.digest.as_deref() != Some(digest.as_str()) => {
                        out.push(violation(
                            unit,
                            format!(
                                "Helm's latest revision {} was made from digest {:?}, the object wants {digest}",
                                latest.version, latest.digest
                            ),
                        ))
                    }
                    None => out.push(violation(
                        unit,
                        format!("no Helm release in workload cluster {w}"),
                    )),
                    Some(_) => {}
                }
            }
            Unit::Export(e) => {
                let exported = kube
                    .get("v1", "Secret", NAMESPACE, &export_secret(e))
                    .and_then(|s| s["data"]["kubeconfig"].as_str().map(str::len));
                if exported.unwrap_or(0) == 0 {
                    out.push(violation(
                        unit,
                        format!("Secret {} holds no kubeconfig", export_secret(e)),
                    ));
                }
            }
            Unit::Sync(s) => {
                let w = fleet.workload_of(unit).unwrap_or(0);
                let want = base64::engine::general_purpose::STANDARD
                    .encode(Fleet::sync_value(s, wanted.edits));
                let target = workloads[w]
                    .get("v1", "Secret", SYNC_NAMESPACE, &format!("synced-{s}"))
                    .and_then(|t| t["data"]["token"].as_str().map(str::to_string));
                if target.as_deref() != Some(want.as_str()) {
                    out.push(violation(
                        unit,
                        format!(
                            "the target in workload cluster {w} {}",
                            if target.is_some() {
                                "holds an older value"
                            } else {
                                "does not exist"
                            }
                        ),
                    ));
                }
            }
        }
    }
    // Nothing left that no object wants.
    for id in state.ids("default", CLUSTERS) {
        if !wanted_clusters.contains(&id) {
            out.push(Violation {
                unit: fleet.unit_named(&id),
                what: format!("Omni has Cluster {id}, which no object wants"),
            });
        }
    }
    for (w, workload) in workloads.iter().enumerate() {
        let releases: BTreeSet<String> = workload
            .list("v1", "Secret", Some(RELEASE_NAMESPACE))
            .iter()
            .filter(|s| s["metadata"]["labels"]["owner"] == "helm")
            .filter(|s| s["metadata"]["labels"]["status"] != "uninstalled")
            .filter_map(|s| s["metadata"]["labels"]["name"].as_str().map(str::to_string))
            .collect();
        for extra in releases.difference(wanted_releases.get(&w).unwrap_or(&BTreeSet::new())) {
            out.push(Violation {
                unit: fleet.unit_named(extra),
                what: format!(
                    "workload cluster {w} has Helm release {extra}, which no object wants"
                ),
            });
        }
    }
    // No object held by a finalizer after its deletion.
    for kind in KINDS {
        for o in kube.list(API, kind, Some(NAMESPACE)) {
            let name = o["metadata"]["name"].as_str().unwrap_or_default();
            if o["metadata"]["deletionTimestamp"].is_string() && fleet.unit_named(name).is_none() {
                out.push(Violation {
                    unit: None,
                    what: format!(
                        "{kind} {name} is stuck being deleted: finalizers {}",
                        o["metadata"]["finalizers"]
                    ),
                });
            }
        }
    }
    out
}

/// A release's revision as its storage Secret's labels describe it.
pub struct Revision {
    pub version: u64,
    pub status: String,
    /// What the operator made it from ([`source_digest`](omni_operator::helm::releases::source_digest)).
    pub digest: Option<String>,
    /// The chart content digest it was made from, when the operator recorded one.
    pub chart_digest: Option<String>,
}

/// The latest revision of a release Helm stores in a workload cluster.
pub fn latest_revision(workload: &kube_sim::KubeSim, release: &str) -> Option<Revision> {
    workload
        .list("v1", "Secret", Some(RELEASE_NAMESPACE))
        .iter()
        .filter(|s| {
            s["metadata"]["labels"]["owner"] == "helm" && s["metadata"]["labels"]["name"] == release
        })
        .filter_map(|s| {
            let labels = &s["metadata"]["labels"];
            Some(Revision {
                version: labels["version"].as_str()?.parse::<u64>().ok()?,
                status: labels["status"].as_str()?.to_string(),
                digest: labels[omni_operator::helm::storage::DIGEST_LABEL]
                    .as_str()
                    .map(str::to_string),
                chart_digest: labels[omni_operator::helm::storage::CHART_DIGEST_LABEL]
                    .as_str()
                    .map(str::to_string),
            })
        })
        .max_by_key(|r| r.version)
}

/// No remote destroy except of an object deleted with a destroying policy: every successful teardown or destroy
/// of an Omni cluster follows a deletion of its object that was not orphaned, and there are no more destroys than
/// such deletions.
pub fn removals(fleet: &Fleet, seen: &OmniRemovals) -> (u64, Vec<Violation>) {
    let mut out = Vec::new();
    let mut checked = 0;
    for (id, removals) in &seen.by_cluster {
        let unit = fleet.unit_named(id);
        let deletions = fleet
            .destroying_deletions
            .get(id)
            .cloned()
            .unwrap_or_default();
        for r in removals {
            checked += 1;
            if !deletions.iter().any(|d| *d <= r.at) {
                out.push(Violation {
                    unit,
                    what: format!(
                        "Omni cluster {id}: {} at {:.1}s, but no deletion of its object with a destroying policy came before it",
                        r.method,
                        r.at.as_secs_f64()
                    ),
                });
            }
        }
        let destroys = removals.iter().filter(|r| r.method != "Teardown").count();
        if destroys > deletions.len() {
            out.push(Violation {
                unit,
                what: format!(
                    "Omni cluster {id} was destroyed {destroys} times for {} deletions of its object",
                    deletions.len()
                ),
            });
        }
    }
    (checked, out)
}

/// Where a credential could leak, and the credentials: no needle in any haystack. Returns how many pairs were
/// compared.
pub fn leaks(needles: &[String], haystacks: &BTreeMap<String, String>) -> (u64, Vec<Violation>) {
    let mut out = Vec::new();
    let mut compared = 0;
    for needle in needles.iter().filter(|n| n.len() >= 8) {
        for (what, text) in haystacks {
            compared += 1;
            if text.contains(needle.as_str()) {
                out.push(Violation {
                    unit: None,
                    what: format!(
                        "a credential ({}…) appears in {what}",
                        &needle[..needle.len().min(4)]
                    ),
                });
            }
        }
    }
    (compared, out)
}

/// The places a credential must never reach: every operator object's status, every Event, the operators' logs.
pub fn haystacks(kube: &kube_sim::KubeSim, logs: String) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for kind in KINDS {
        for o in kube.list(API, kind, Some(NAMESPACE)) {
            out.insert(
                format!(
                    "{kind} {} status",
                    o["metadata"]["name"].as_str().unwrap_or_default()
                ),
                o["status"].to_string(),
            );
        }
    }
    let mut events = String::new();
    for e in kube.list("v1", "Event", None).into_iter().chain(kube.list(
        "events.k8s.io/v1",
        "Event",
        None,
    )) {
        events.push_str(&e.to_string());
        events.push('\n');
    }
    out.insert("Events".into(), events);
    out.insert("the operators' logs".into(), logs);
    out
}

/// A credential in its forms: as given, base64 (as a Secret stores it), and the bearer token of a kubeconfig.
pub fn needle_forms(value: &str) -> Vec<String> {
    let mut out = vec![
        value.to_string(),
        base64::engine::general_purpose::STANDARD.encode(value),
    ];
    if let Ok(doc) = yaml_serde::from_str::<Value>(value)
        && let Some(token) = doc["users"][0]["user"]["token"].as_str()
    {
        out.push(token.to_string());
    }
    out
}
