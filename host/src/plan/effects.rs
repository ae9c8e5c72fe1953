//! What recorded writes mean: remote clusters created, updated, paused or deleted; machines destroyed; CNI and
//! kube-proxy ownership changed; Helm releases installed, upgraded or uninstalled; and the review checklist's
//! answers. Secret values never reach a plan: Kubernetes writes are listed by path, Helm values by whether
//! they change.

use std::collections::{BTreeMap, BTreeSet};

use omni_wire::{cosi, specs};
use prost::Message as _;
use serde::Serialize;
use serde_json::Value;

use super::Id;
use super::line_diff::diff;
use crate::dry_run::KubeWrite;
use crate::helm::releases::PlannedStep;
use crate::omni::address::{CLUSTERS, CONFIG_PATCHES, MANIFEST_GROUPS};
use crate::omni::overlay::{OmniOp, OmniWrite};

const CLUSTER_LABEL: &str = "omni.sidero.dev/cluster";
pub(super) const MACHINE_SET_NODES: &str = "MachineSetNodes.omni.sidero.dev";
/// A machine's SideroLink: torn down (`destroyMachines` on a disconnected machine), the machine leaves Omni.
const LINKS: &str = "Links.omni.sidero.dev";
const MACHINE_SETS: &str = "MachineSets.omni.sidero.dev";
const MACHINE_SET_LABEL: &str = "omni.sidero.dev/machine-set";

/// The writes one object's plugin made during the plan.
pub struct Recorded {
    pub omni: Vec<OmniWrite>,
    pub kube: Vec<KubeWrite>,
    pub helm: Vec<PlannedStep>,
    /// Machines that leave with a cluster or machine set torn down (Omni removes their nodes itself), as
    /// looked up in Omni.
    pub machines: Vec<String>,
}

/// The label queries that find the machines a recorded write takes with it: the nodes of a cluster or of a
/// machine set torn down. (label, value) pairs.
pub fn doomed_nodes(writes: &[OmniWrite]) -> Vec<(&'static str, String)> {
    writes
        .iter()
        .filter(|w| matches!(w.op, OmniOp::Teardown | OmniOp::Destroy))
        .filter_map(|w| match w.key.type_.as_str() {
            CLUSTERS => Some((CLUSTER_LABEL, w.key.id.clone())),
            MACHINE_SETS => Some((MACHINE_SET_LABEL, w.key.id.clone())),
            _ => None,
        })
        .collect()
}

/// How the manifests change an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Change {
    Create,
    Update,
    Unchanged,
    /// Unchanged itself, planned because children it syncs change.
    Children,
    Remove,
    /// Absent from the manifests, kept by the GitOps tool.
    Kept,
    /// Absent from the manifests, and the API server refuses its deletion (the deletion guard).
    Refused,
    /// The API server refuses the manifest.
    Invalid,
}

impl Change {
    pub fn word(self) -> &'static str {
        match self {
            Change::Create => "create",
            Change::Update => "update",
            Change::Unchanged => "unchanged",
            Change::Children => "unchanged (children change)",
            Change::Remove => "remove",
            Change::Kept => "removed from the manifests, kept",
            Change::Refused => "removed from the manifests, deletion refused",
            Change::Invalid => "invalid",
        }
    }
}

/// What happens to a remote Omni cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Remote {
    pub cluster: String,
    /// `create`, `update`, `pause`, `resume`, `delete` or `orphan`.
    pub action: &'static str,
}

/// One Omni resource written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OmniChange {
    pub op: OmniOp,
    #[serde(rename = "type")]
    pub type_: String,
    pub id: String,
    /// The field-level difference (`- old`, `+ new`) for an update; the content for a create.
    pub diff: Vec<String>,
}

/// One Helm action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HelmChange {
    pub release: String,
    pub action: &'static str,
    pub detail: String,
    /// For an install or upgrade: the rendered manifests' difference, Secret data redacted
    /// ([`super::helm_diff`]).
    pub diff: Vec<String>,
}

/// The plan of one object.
#[derive(Debug, Clone, Serialize)]
pub struct ObjectPlan {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub change: Change,
    pub remote: Vec<Remote>,
    pub omni: Vec<OmniChange>,
    pub machines_destroyed: Vec<String>,
    pub networking: Vec<String>,
    pub helm: Vec<HelmChange>,
    pub kubernetes_writes: Vec<KubeWrite>,
    /// For a removal: what its deletion policy does, spelled out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removal: Option<String>,
    pub notes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Whether something remote is destroyed: a cluster deleted, machines wiped, a release uninstalled.
    pub destroys: bool,
}

impl ObjectPlan {
    pub(super) fn new(id: &Id, source: Option<&str>, change: Change) -> Self {
        ObjectPlan {
            kind: id.0.clone(),
            namespace: id.1.clone(),
            name: id.2.clone(),
            source: source.map(String::from),
            change,
            remote: Vec::new(),
            omni: Vec::new(),
            machines_destroyed: Vec::new(),
            networking: Vec::new(),
            helm: Vec::new(),
            kubernetes_writes: Vec::new(),
            removal: None,
            notes: Vec::new(),
            error: None,
            destroys: false,
        }
    }

    /// Whether the plan shows anything happening for this object.
    pub fn acts(&self) -> bool {
        !matches!(self.change, Change::Unchanged | Change::Children)
            || !self.omni.is_empty()
            || !self.helm.is_empty()
            || !self.kubernetes_writes.is_empty()
            || self.error.is_some()
    }
}

/// One answer of the review checklist.
#[derive(Debug, Clone, Serialize)]
pub struct Answer {
    pub question: &'static str,
    pub answer: String,
}

/// The whole plan.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Plan {
    pub summary: String,
    pub destroys: bool,
    pub errors: usize,
    pub checklist: Vec<Answer>,
    pub objects: Vec<ObjectPlan>,
}

impl Plan {
    /// The exit code a CI job reads: 1 when the plan could not be made whole, 2 when something remote is
    /// destroyed, 0 otherwise.
    pub fn exit_code(&self) -> i32 {
        if self.errors > 0 {
            1
        } else if self.destroys {
            2
        } else {
            0
        }
    }

    /// Totals, the summary line and the checklist, once every object is planned.
    pub(super) fn finish(&mut self) {
        self.errors = self.objects.iter().filter(|o| o.error.is_some()).count();
        self.destroys = self.objects.iter().any(|o| o.destroys);
        let remote = |action: &str| -> Vec<String> {
            let names: BTreeSet<String> = self
                .objects
                .iter()
                .flat_map(|o| o.remote.iter())
                .filter(|r| r.action == action)
                .map(|r| r.cluster.clone())
                .collect();
            names.into_iter().collect()
        };
        let mut lifecycle = Vec::new();
        for (action, verb) in [
            ("create", "creates"),
            ("update", "updates"),
            ("pause", "pauses"),
            ("resume", "resumes"),
            ("delete", "deletes"),
            ("orphan", "orphans"),
        ] {
            let names = remote(action);
            if !names.is_empty() {
                lifecycle.push(format!("{verb} {}", names.join(", ")));
            }
        }
        let removals: Vec<String> = self
            .objects
            .iter()
            .filter_map(|o| {
                o.removal
                    .as_ref()
                    .map(|r| format!("{} {}/{}: {r}", o.kind, o.namespace, o.name))
            })
            .collect();
        let networking: Vec<String> = self
            .objects
            .iter()
            .flat_map(|o| o.networking.iter().cloned())
            .collect();
        let machines: Vec<String> = self
            .objects
            .iter()
            .flat_map(|o| o.machines_destroyed.iter().cloned())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let helm: Vec<String> = self
            .objects
            .iter()
            .flat_map(|o| o.helm.iter())
            .map(|h| format!("{} {}: {}", h.action, h.release, h.detail))
            .collect();
        let or_none = |items: Vec<String>, none: &str| {
            if items.is_empty() {
                none.to_string()
            } else {
                items.join("; ")
            }
        };
        self.checklist = vec![
            Answer {
                question: "Does this change create, update, pause or delete a remote Omni cluster?",
                answer: or_none(lifecycle, "no"),
            },
            Answer {
                question: "Are machines destroyed?",
                answer: if machines.is_empty() {
                    "no".into()
                } else {
                    format!("yes, {}: {}", machines.len(), machines.join(", "))
                },
            },
            Answer {
                question: "Is anything removed from Git, and is its deletion policy intentional?",
                answer: or_none(removals, "nothing is removed"),
            },
            Answer {
                question: "Does networking ownership change (CNI, kube-proxy)?",
                answer: or_none(networking, "no"),
            },
            Answer {
                question: "Which Helm releases change?",
                answer: or_none(helm, "none"),
            },
        ];
        let acting = self.objects.iter().filter(|o| o.acts()).count();
        self.summary = format!(
            "omni-operator plan: {acting} of {} objects change; remote clusters: {}; machines destroyed: {}; Helm: {}{}",
            self.objects.len(),
            self.checklist[0].answer,
            machines.len(),
            self.checklist[4].answer,
            if self.errors > 0 {
                format!("; {} errors", self.errors)
            } else {
                String::new()
            }
        );
    }
}

/// Whether a live object and what the manifest would make of it ask for the same thing: spec, labels and
/// annotations.
pub fn same_intent(live: &Value, planned: &Value) -> bool {
    live["spec"] == planned["spec"]
        && live["metadata"]["labels"] == planned["metadata"]["labels"]
        && live["metadata"]["annotations"] == planned["metadata"]["annotations"]
}

/// The cluster a resource belongs to: its own id for a Cluster, else its cluster label.
fn cluster_of(write: &OmniWrite) -> Option<String> {
    if write.key.type_ == CLUSTERS {
        return Some(write.key.id.clone());
    }
    [&write.after, &write.before]
        .into_iter()
        .flatten()
        .find_map(|r| r.metadata.as_ref()?.labels.get(CLUSTER_LABEL).cloned())
}

/// A resource's content as lines to compare: labels, annotations and the decoded spec (a patch's or manifest
/// group's text as it is).
fn lines(resource: &cosi::Resource) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(m) = &resource.metadata {
        let sorted = |map: &std::collections::HashMap<String, String>| -> BTreeMap<String, String> {
            map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        for (k, v) in sorted(&m.labels) {
            out.push(format!("label {k}={v}"));
        }
        for (k, v) in sorted(&m.annotations) {
            out.push(format!("annotation {k}={v}"));
        }
    }
    let bytes = resource
        .spec
        .as_ref()
        .map(|s| s.proto_spec.as_slice())
        .unwrap_or_default();
    let type_ = resource
        .metadata
        .as_ref()
        .map(|m| m.r#type.as_str())
        .unwrap_or_default();
    let pretty = |text: String| text.lines().map(String::from).collect::<Vec<_>>();
    let spec = match type_ {
        CONFIG_PATCHES => specs::ConfigPatchSpec::decode(bytes).map(|s| pretty(s.data)),
        MANIFEST_GROUPS => {
            specs::KubernetesManifestGroupSpec::decode(bytes).map(|s| pretty(s.data))
        }
        CLUSTERS => specs::ClusterSpec::decode(bytes).map(|s| pretty(format!("{s:#?}"))),
        MACHINE_SETS => specs::MachineSetSpec::decode(bytes).map(|s| pretty(format!("{s:#?}"))),
        _ => Ok(if bytes.is_empty() {
            Vec::new()
        } else {
            vec![format!("spec: {} bytes", bytes.len())]
        }),
    };
    out.extend(spec.unwrap_or_else(|e| vec![format!("spec does not decode: {e}")]));
    out
}

fn short_type(type_: &str) -> String {
    type_.trim_end_matches(".omni.sidero.dev").to_string()
}

/// What a CNI and kube-proxy setting the patches of one cluster make: `cluster.network.cni.name` (Talos's
/// default is flannel) and `cluster.proxy.disabled`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Networking {
    cni: Option<String>,
    proxy_disabled: Option<bool>,
}

fn networking_of(patch: &str) -> Networking {
    let mut found = Networking::default();
    for document in yaml_serde::Deserializer::from_str(patch) {
        let Ok(value) = <Value as serde::Deserialize>::deserialize(document) else {
            continue;
        };
        if let Some(cni) = value["cluster"]["network"]["cni"]["name"].as_str() {
            found.cni = Some(cni.to_string());
        }
        if let Some(disabled) = value["cluster"]["proxy"]["disabled"].as_bool() {
            found.proxy_disabled = Some(disabled);
        }
    }
    found
}

fn patch_text(resource: &Option<cosi::Resource>) -> Option<String> {
    let r = resource.as_ref()?;
    let bytes = r.spec.as_ref()?.proto_spec.as_slice();
    specs::ConfigPatchSpec::decode(bytes).ok().map(|s| s.data)
}

/// Networking lines for the patch and manifest-group writes of one cluster.
fn networking(cluster: &str, writes: &[&OmniWrite]) -> Vec<String> {
    let mut out = Vec::new();
    for w in writes {
        match w.key.type_.as_str() {
            CONFIG_PATCHES => {
                let before = patch_text(&w.before)
                    .map(|t| networking_of(&t))
                    .unwrap_or_default();
                let after = match w.op {
                    OmniOp::Teardown | OmniOp::Destroy => Networking::default(),
                    _ => patch_text(&w.after)
                        .map(|t| networking_of(&t))
                        .unwrap_or_default(),
                };
                if before.cni != after.cni {
                    let show = |c: &Option<String>| {
                        c.clone()
                            .unwrap_or_else(|| "Talos's default (flannel)".into())
                    };
                    out.push(format!(
                        "cluster {cluster}: CNI {} -> {} (patch {}); the old CNI's resources are not removed by Talos: clean them up, and deploy the new CNI's manifests",
                        show(&before.cni),
                        show(&after.cni),
                        w.key.id
                    ));
                }
                if before.proxy_disabled != after.proxy_disabled {
                    let show = |d: Option<bool>| {
                        if d == Some(true) {
                            "disabled"
                        } else {
                            "enabled"
                        }
                    };
                    out.push(format!(
                        "cluster {cluster}: kube-proxy {} -> {} (patch {})",
                        show(before.proxy_disabled),
                        show(after.proxy_disabled),
                        w.key.id
                    ));
                }
            }
            MANIFEST_GROUPS => {
                let verb = match w.op {
                    OmniOp::Create => "added",
                    OmniOp::Teardown | OmniOp::Destroy => "removed",
                    _ => "changed",
                };
                out.push(format!(
                    "cluster {cluster}: Kubernetes manifests {} {verb}",
                    w.key.id
                ));
            }
            _ => {}
        }
    }
    out.dedup();
    out
}

/// Fills `planned` from what its plugin wrote.
pub(super) fn describe(
    planned: &mut ObjectPlan,
    object: &Value,
    live: Option<&Value>,
    recorded: &Recorded,
) {
    if planned.kind == "OmniCluster" {
        let name = object["status"]["clusterName"]
            .as_str()
            .filter(|n| !n.is_empty())
            .or(object["spec"]["clusterName"].as_str())
            .unwrap_or(&planned.name)
            .to_string();
        let suspended =
            |o: Option<&Value>| o.is_some_and(|o| o["spec"]["suspend"] == Value::Bool(true));
        match (suspended(live), suspended(Some(object))) {
            (false, true) if live.is_some() => planned.remote.push(Remote {
                cluster: name.clone(),
                action: "pause",
            }),
            (true, false) => planned.remote.push(Remote {
                cluster: name.clone(),
                action: "resume",
            }),
            _ => {}
        }
        if suspended(Some(object)) {
            planned.notes.push(format!(
                "suspended: Omni cluster {name} is not synced while spec.suspend is true"
            ));
        }
    }
    add_recorded(planned, recorded);
}

fn add_recorded(planned: &mut ObjectPlan, recorded: &Recorded) {
    let mut clusters: BTreeMap<String, Vec<&OmniWrite>> = BTreeMap::new();
    for w in &recorded.omni {
        let diff = match (&w.before, &w.after, w.op) {
            (_, _, OmniOp::Kubeconfig) => Vec::new(),
            (None, Some(after), _) => lines(after).into_iter().map(|l| format!("+ {l}")).collect(),
            (Some(before), Some(after), OmniOp::Update) => diff(&lines(before), &lines(after)),
            _ => Vec::new(),
        };
        // A teardown followed by its destroy is one removal: shown once, as the teardown.
        if w.op == OmniOp::Destroy
            && planned.omni.iter().any(|c| {
                c.op == OmniOp::Teardown && c.type_ == short_type(&w.key.type_) && c.id == w.key.id
            })
        {
            continue;
        }
        planned.omni.push(OmniChange {
            op: w.op,
            type_: short_type(&w.key.type_),
            id: w.key.id.clone(),
            diff,
        });
        if matches!(w.op, OmniOp::Teardown | OmniOp::Destroy)
            && (w.key.type_ == MACHINE_SET_NODES || w.key.type_ == LINKS)
        {
            let machine = w.key.id.clone();
            if !planned.machines_destroyed.contains(&machine) {
                planned.machines_destroyed.push(machine);
            }
        }
        if let Some(cluster) = cluster_of(w) {
            clusters.entry(cluster).or_default().push(w);
        }
    }
    for (cluster, writes) in &clusters {
        let on_cluster = |ops: &[OmniOp]| {
            writes
                .iter()
                .any(|w| w.key.type_ == CLUSTERS && ops.contains(&w.op))
        };
        let action = if on_cluster(&[OmniOp::Create]) {
            Some("create")
        } else if on_cluster(&[OmniOp::Teardown, OmniOp::Destroy]) {
            Some("delete")
        } else if writes.iter().any(|w| w.op != OmniOp::Kubeconfig) {
            Some("update")
        } else {
            None
        };
        if let Some(action) = action
            && !planned
                .remote
                .iter()
                .any(|r| r.cluster == *cluster && r.action == action)
        {
            planned.remote.push(Remote {
                cluster: cluster.clone(),
                action,
            });
        }
        planned.networking.extend(networking(cluster, writes));
    }
    for step in &recorded.helm {
        let release = format!("{}/{}", step.namespace, step.name);
        let chart = step.chart.clone().unwrap_or_default();
        let version = step.version.clone().unwrap_or_default();
        let detail = match (step.action, &step.stored) {
            ("install", _) => format!("chart {chart} version {version}"),
            ("upgrade", Some(s)) if s.version != version => {
                format!("chart {} {} -> {version} ({chart})", s.chart, s.version)
            }
            ("upgrade", Some(s)) => match step.source_changed {
                Some(true) => format!(
                    "the chart's source or values change (chart {} {})",
                    s.chart, s.version
                ),
                _ => format!(
                    "chart {} {} again (revision {} is {})",
                    s.chart, s.version, s.revision, s.status
                ),
            },
            ("uninstall", Some(s)) => {
                format!("revision {} of chart {} {}", s.revision, s.chart, s.version)
            }
            (_, Some(s)) => format!(
                "from revision {} ({} {}, {})",
                s.revision, s.chart, s.version, s.status
            ),
            (_, None) => String::new(),
        };
        if step.action == "uninstall" {
            planned.destroys = true;
        }
        let diff = match step.manifests.as_ref().map(|m| (&m.stored, &m.rendered)) {
            Some((stored, Ok(rendered))) => {
                super::helm_diff::manifest_diff(stored.as_deref(), rendered, &step.namespace)
            }
            Some((_, Err(e))) => {
                planned
                    .notes
                    .push(format!("Helm could not render {release}: {e}"));
                Vec::new()
            }
            None => Vec::new(),
        };
        planned.helm.push(HelmChange {
            release,
            action: step.action,
            detail,
            diff,
        });
    }
    for machine in &recorded.machines {
        if !planned.machines_destroyed.contains(machine) {
            planned.machines_destroyed.push(machine.clone());
        }
    }
    planned
        .kubernetes_writes
        .extend(recorded.kube.iter().cloned());
    if planned.remote.iter().any(|r| r.action == "delete") || !planned.machines_destroyed.is_empty()
    {
        planned.destroys = true;
    }
}

/// Fills the plan of a removal: its deletion policy spelled out, and (when the plugin ran) what it wrote.
pub(super) fn describe_removal(
    planned: &mut ObjectPlan,
    live: &Value,
    recorded: Option<&Recorded>,
) {
    if let Some(recorded) = recorded {
        add_recorded(planned, recorded);
    }
    let spec = &live["spec"];
    let policy = match planned.kind.as_str() {
        "OmniCluster" => {
            let name = live["status"]["clusterName"]
                .as_str()
                .filter(|n| !n.is_empty())
                .or(spec["clusterName"].as_str())
                .unwrap_or(&planned.name)
                .to_string();
            if spec["deletePolicy"]["orphan"] == Value::Bool(true) {
                planned.remote.push(Remote {
                    cluster: name.clone(),
                    action: "orphan",
                });
                format!(
                    "orphans the remote cluster {name} (spec.deletePolicy.orphan: true): it stays in Omni, unmanaged"
                )
            } else {
                let machines = planned.machines_destroyed.len();
                let mut text = format!(
                    "will delete remote cluster {name} and destroy {machines} machine{}",
                    if machines == 1 { "" } else { "s" }
                );
                if spec["deletePolicy"]["destroyMachines"] == Value::Bool(true) {
                    text.push_str(", removing its disconnected machines from Omni (spec.deletePolicy.destroyMachines)");
                }
                text
            }
        }
        "OmniHelmRelease" => {
            let release = format!(
                "{}/{}",
                spec["namespace"].as_str().unwrap_or("default"),
                spec["releaseName"].as_str().unwrap_or(&planned.name)
            );
            if spec["deletionPolicy"].as_str() == Some("Orphan") {
                format!("leaves Helm release {release} installed (spec.deletionPolicy: Orphan)")
            } else {
                format!("uninstalls Helm release {release} (spec.deletionPolicy: Uninstall)")
            }
        }
        "OmniKubeconfigExport" | "OmniSecretSync" => {
            if spec["deletionPolicy"].as_str() == Some("Orphan") {
                "leaves the Secret it wrote in place (spec.deletionPolicy: Orphan)".to_string()
            } else {
                "deletes the Secret it wrote (spec.deletionPolicy: Delete)".to_string()
            }
        }
        "OmniControlPlane" | "OmniWorkers" => format!(
            "its machine set leaves cluster {} when the OmniCluster syncs, destroying its machines",
            spec["clusterRef"]["name"].as_str().unwrap_or_default()
        ),
        "OmniMachine" => format!(
            "its machine's settings (labels, patches) leave cluster {} when the OmniCluster syncs",
            spec["clusterRef"]["name"].as_str().unwrap_or_default()
        ),
        _ => "deleted".to_string(),
    };
    let policy = match planned.change {
        Change::Kept | Change::Refused => format!("not deleted; if it were, it {policy}"),
        _ => policy,
    };
    if matches!(planned.change, Change::Kept | Change::Refused) {
        // Nothing is destroyed while the object stays.
        planned.destroys = false;
    }
    planned.removal = Some(policy);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cni_and_proxy_are_read_from_patches() {
        let n = networking_of(
            "cluster:\n  network:\n    cni:\n      name: none\n  proxy:\n    disabled: true\n",
        );
        assert_eq!(n.cni.as_deref(), Some("none"));
        assert_eq!(n.proxy_disabled, Some(true));
        assert_eq!(networking_of("machine: {}\n"), Networking::default());
    }

    #[test]
    fn gitops_annotations_keep_an_object() {
        let flux = serde_json::json!({"metadata": {"annotations": {"kustomize.toolkit.fluxcd.io/prune": "disabled"}}});
        assert!(super::super::kept_by_gitops(&flux).is_some_and(|w| w.starts_with("Flux")));
        let argo = serde_json::json!({"metadata": {"annotations": {"argocd.argoproj.io/sync-options": "Prune=false,Delete=false"}}});
        assert!(super::super::kept_by_gitops(&argo).is_some_and(|w| w.starts_with("Argo CD")));
        let plain = serde_json::json!({"metadata": {}});
        assert!(super::super::kept_by_gitops(&plain).is_none());
    }

    #[test]
    fn exit_codes_follow_errors_then_destruction() {
        let mut plan = Plan::default();
        assert_eq!(plan.exit_code(), 0);
        let id = ("OmniCluster".to_string(), "ns".to_string(), "a".to_string());
        let mut o = ObjectPlan::new(&id, None, Change::Remove);
        o.destroys = true;
        plan.objects.push(o);
        plan.finish();
        assert_eq!(plan.exit_code(), 2);
        let mut o = ObjectPlan::new(&id, None, Change::Update);
        o.error = Some("boom".into());
        plan.objects.push(o);
        plan.finish();
        assert_eq!(plan.exit_code(), 1);
    }
}
