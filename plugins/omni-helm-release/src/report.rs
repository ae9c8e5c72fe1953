//! What reconcile and deletion report: the status fields, the `Accepted`,
//! `Released` and `Ready` conditions (plus Flux's `Stalled` and `TestSuccess` where they apply), and the Events.
//! Requeues are the callers' decision.
//!
//! Status is merged one level deep by the host, so a field not sent keeps its value: `releaseRevision`,
//! `releaseStatus`, `lastAction` and `lastSuccessTime` survive updates that have nothing new to say about them, as
//! in Go. Every update carries the normalised spec fields (`clusterRef` … `chartVersion`).
//!
//! Times come from the host's action outcomes, not the clock, so that a reconcile that learns nothing new sends
//! exactly the status the object already has and the host writes nothing:
//! * `lastAttemptTime` is the `finished` time of the last action outcome counted ([`Ledger`]). A failure that
//!   comes without an outcome (validation, a missing cluster or kubeconfig, the host failing the call) stamps the
//!   clock instead, as Go's "reason without error" did.
//! * `lastSuccessTime` is the `finished` time of the successful action that made what is deployed.
//! * An outcome counted for the first time is what makes an Event, with Flux helm-controller's reasons
//!   (`InstallSucceeded`, `UpgradeFailed`, `TestFailed`, `RollbackSucceeded`, …): one per action, never one per
//!   reconcile.

use omni_api::conditions::{reasons, types};
use omni_plugin_sdk::helm::{Action, Observation, OwnedObject, StepRecord};
use omni_plugin_sdk::serde_json::Map;
use omni_plugin_sdk::{Condition, ConditionStatus, EventType, Host, Value, json};

use crate::ledger::Ledger;
use crate::messages;
use crate::object;
use crate::rules::text;

/// `Released` and `Ready` while a Helm action runs, with status `Unknown` (kstatus reads that as in progress).
/// Not among omni-api's reasons: the Go operator ran Helm synchronously and never had this state.
pub const PROGRESSING: &str = "Progressing";
/// Flux's condition of a release whose failure was remediated (rolled back or uninstalled).
pub const REMEDIATED: &str = "Remediated";
/// Flux's reason for a release whose retries are used up (`Stalled`, `Ready`).
pub const RETRIES_EXCEEDED: &str = "RetriesExceeded";
/// Flux's condition type for Helm test results, and its reasons.
pub const TEST_SUCCESS: &str = "TestSuccess";
pub const TEST_SUCCEEDED: &str = "TestSucceeded";
pub const TEST_FAILED: &str = "TestFailed";

/// Helm's status of a release that is up.
const DEPLOYED: &str = "deployed";
/// `releaseStatus` once the release is gone (Helm's status of an uninstalled release, as Go recorded it).
const UNINSTALLED: &str = "uninstalled";
/// Revisions listed in `status.history` (Flux keeps 5 by default).
const HISTORY: usize = 5;

/// What the host observed and what the status counts: the material of every status update after a Helm call.
pub struct Seen<'a> {
    pub observed: &'a Observation,
    pub ledger: &'a Ledger,
}

pub struct Report<'a, H: Host> {
    host: &'a H,
    /// The fields every status update carries.
    base: Map<String, Value>,
    /// The object already has a `Stalled` condition (to be cleared once it no longer holds).
    had_stalled: bool,
    /// The object already has a `Remediated` condition (to be cleared by the next successful release).
    had_remediated: bool,
    /// The object's status lists an inventory (to be removed once the release owns nothing).
    had_inventory: bool,
}

impl<'a, H: Host> Report<'a, H> {
    /// Reads the base fields from the raw object, so a spec that failed validation is reported as it is.
    pub fn new(host: &'a H, object: &Value) -> Self {
        let spec = &object["spec"];
        let mut base = Map::new();
        let mut put = |key: &str, value: &str| {
            base.insert(key.into(), json!(value));
        };
        put("clusterRef", text(&spec["clusterRef"]["name"]));
        put(
            "kubeconfigSecretRef",
            text(&spec["kubeconfigSecretRef"]["name"]),
        );
        put("kubeconfigSecretKey", object::kubeconfig_key(object));
        put("releaseName", object::release_name(object));
        put("namespace", object::release_namespace(object));
        // Helm stores a release in its own namespace (Flux's `storageNamespace` is not expressible in libhelm_c).
        put("storageNamespace", object::release_namespace(object));
        put("chart", text(&spec["chart"]["chart"]));
        put("chartVersion", text(&spec["chart"]["version"]));
        let has = |kind: &str| {
            object["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == kind))
        };
        Report {
            host,
            base,
            had_stalled: has(types::STALLED),
            had_remediated: has(REMEDIATED),
            had_inventory: !object["status"]["inventory"].is_null(),
        }
    }

    /// Reports `previous` as the release's identity while it is being retired ([`crate::identity`]), so the next
    /// reconcile still knows what it has to finish.
    pub fn keep_identity(&mut self, previous: &crate::identity::Previous) {
        self.base.insert("releaseName".into(), json!(previous.name));
        self.base
            .insert("namespace".into(), json!(previous.namespace));
        self.base
            .insert("storageNamespace".into(), json!(previous.namespace));
        self.base.insert(
            "kubeconfigSecretRef".into(),
            json!(previous.kubeconfig.name),
        );
        self.base
            .insert("kubeconfigSecretKey".into(), json!(previous.kubeconfig.key));
    }

    /// Back to the spec's identity, once the previous release is retired.
    pub fn forget_identity(&mut self, release: &crate::object::ReleaseObject) {
        let fresh = Report::new(self.host, &release.raw);
        self.base = fresh.base;
    }

    /// The cluster was found: `Accepted=True`.
    pub fn accepted(&self, cluster: &str) {
        self.host.set_condition(Condition::new(
            types::ACCEPTED,
            true,
            reasons::ACCEPTED,
            messages::attached(cluster),
        ));
    }

    /// The cluster was looked up and is missing: `Accepted=False` besides the failure.
    pub fn cluster_missing(&self, cluster: &str) {
        let message = messages::missing_cluster(cluster);
        self.host.set_condition(Condition::new(
            types::ACCEPTED,
            false,
            reasons::MISSING_CLUSTER,
            message.as_str(),
        ));
        self.failed(reasons::MISSING_CLUSTER, &message);
    }

    /// A failure that comes without any action outcome: `Released`/`Ready` False with `reason`, `lastError` the
    /// message, `lastAttemptTime` now.
    pub fn failed(&self, reason: &str, message: &str) {
        let mut status = self.base.clone();
        status.insert("lastAttemptTime".into(), json!(self.host.now()));
        status.insert("lastError".into(), json!(message));
        self.commit(status, ConditionStatus::False, reason, message);
    }

    /// A Helm call failed after the host answered an observation: as [`Report::failed`], with what was observed
    /// and counted, so that an outcome counted in this reconcile is not counted (and announced) again by the next.
    pub fn call_failed(&self, seen: &Seen<'_>, reason: &str, message: &str) {
        let mut status = self.observed(seen);
        status.insert("lastAttemptTime".into(), json!(self.host.now()));
        status.insert("lastError".into(), json!(message));
        self.commit(status, ConditionStatus::False, reason, message);
    }

    /// An action runs: `Released`/`Ready` Unknown. Nothing is known to have failed or succeeded, so `lastError`
    /// stays as it was.
    pub fn progressing(&self, seen: &Seen<'_>, message: &str) {
        self.commit(
            self.observed(seen),
            ConditionStatus::Unknown,
            PROGRESSING,
            message,
        );
    }

    /// The host answered, and the release is not where it should be: `Released`/`Ready` False with `reason`.
    /// `lastError` is `error`: Helm's error as it is when an action failed, else the message.
    pub fn failed_with(&self, seen: &Seen<'_>, reason: &str, error: &str, message: &str) {
        let mut status = self.observed(seen);
        status.insert("lastError".into(), json!(error));
        self.commit(status, ConditionStatus::False, reason, message);
    }

    /// No more automatic actions (Flux's `Stalled`): `Released`/`Ready` False and `Stalled` True.
    pub fn stalled(&self, seen: &Seen<'_>, error: &str, message: &str) {
        let mut status = self.observed(seen);
        status.insert("lastError".into(), json!(error));
        self.commit(status, ConditionStatus::False, RETRIES_EXCEEDED, message);
        self.host.set_condition(Condition::new(
            types::STALLED,
            true,
            RETRIES_EXCEEDED,
            message,
        ));
    }

    /// What is wanted is deployed. `succeeded` is the finish time of the action that deployed it, when the host
    /// remembers it.
    pub fn released(&self, seen: &Seen<'_>, reason: &str, message: &str, succeeded: Option<&str>) {
        let mut status = self.observed(seen);
        status.insert("lastError".into(), json!(""));
        if let Some(at) = succeeded {
            status.insert("lastSuccessTime".into(), json!(at));
        }
        self.commit(status, ConditionStatus::True, reason, message);
        if self.had_remediated {
            self.host
                .set_condition(Condition::new(REMEDIATED, false, reason, message));
        }
    }

    /// Flux's `TestSuccess` condition, set only while tests are on.
    pub fn tests(&self, passed: bool, message: &str) {
        let reason = if passed { TEST_SUCCEEDED } else { TEST_FAILED };
        self.host
            .set_condition(Condition::new(TEST_SUCCESS, passed, reason, message));
    }

    /// Deletion: the uninstall runs.
    pub fn deleting(&self, seen: &Seen<'_>, message: &str) {
        self.commit(
            self.observed(seen),
            ConditionStatus::False,
            reasons::DELETING,
            message,
        );
    }

    /// Deletion: the release is gone.
    pub fn uninstalled(&self, seen: &Seen<'_>, message: &str) {
        let mut status = self.observed(seen);
        status.insert("lastAction".into(), json!(Action::Uninstall.name()));
        status.insert("releaseStatus".into(), json!(UNINSTALLED));
        status.insert("lastError".into(), json!(""));
        if let Some(last) = seen
            .observed
            .last
            .as_ref()
            .filter(|l| l.action == Action::Uninstall && l.error.is_none())
        {
            status.insert("lastSuccessTime".into(), json!(last.finished));
        }
        self.commit(
            status,
            ConditionStatus::False,
            reasons::HELM_UNINSTALLED,
            message,
        );
    }

    /// The Event of an action outcome counted for the first time, with Flux's reason for it.
    pub fn announce(&self, last: &StepRecord, release: &str) {
        let (succeeded, failed) = match last.action {
            Action::Install => ("InstallSucceeded", "InstallFailed"),
            Action::Upgrade => ("UpgradeSucceeded", "UpgradeFailed"),
            Action::Test => (TEST_SUCCEEDED, TEST_FAILED),
            Action::Rollback => ("RollbackSucceeded", "RollbackFailed"),
            Action::Uninstall => ("UninstallSucceeded", "UninstallFailed"),
            Action::Recover => ("PendingRelease", "PendingRelease"),
            Action::Correct => ("DriftCorrected", "DriftCorrectionFailed"),
        };
        if last.cancelled {
            let reason = match last.action {
                Action::Install => "InstallCancelled",
                _ => "UpgradeCancelled",
            };
            self.host.event(
                EventType::Normal,
                reason,
                &messages::cancelled(last.action, release),
            );
            return;
        }
        match &last.error {
            Some(error) => self.host.event(
                EventType::Warning,
                failed,
                &messages::action_failed(last.action, release, error),
            ),
            None => self.host.event(
                EventType::Normal,
                succeeded,
                &messages::action_succeeded(last.action, release, last.revision),
            ),
        }
    }

    /// Flux's `Remediated` condition, from an outcome counted for the first time in a reconcile: True after a
    /// rollback or uninstall that remediated a failure, False when the remediation failed. Once the release is
    /// ready again it no longer holds ([`Report::released`] sets it False; Flux removes it, and the host's
    /// conditions are only ever set, as `Stalled` is).
    pub fn remediation(&self, last: &StepRecord, release: &str) {
        let (status, reason, message) = match (last.action, &last.error) {
            (Action::Rollback, None) => (true, "RollbackSucceeded", None),
            (Action::Rollback, Some(e)) => (false, "RollbackFailed", Some(e)),
            (Action::Uninstall, None) => (true, "UninstallSucceeded", None),
            (Action::Uninstall, Some(e)) => (false, "UninstallFailed", Some(e)),
            _ => return,
        };
        let message = match message {
            Some(error) => messages::action_failed(last.action, release, error),
            None => messages::action_succeeded(last.action, release, last.revision),
        };
        self.host
            .set_condition(Condition::new(REMEDIATED, status, reason, &message));
    }

    /// The base fields, the release as Helm stores it, the last action, the counters and the history.
    fn observed(&self, seen: &Seen<'_>) -> Map<String, Value> {
        let mut status = self.base.clone();
        let o = seen.observed;
        if let Some(release) = &o.release {
            let revision = i64::try_from(release.current.revision).unwrap_or(i64::MAX);
            status.insert("releaseRevision".into(), json!(revision));
            status.insert("releaseStatus".into(), json!(release.current.status));
        }
        if let Some(last) = &o.last {
            status.insert("lastAction".into(), json!(last.action.name()));
        }
        // The success that made the deployed revision, whatever follows it (a test step, say).
        if let (Some(release), Some(last)) = (&o.release, &o.last)
            && matches!(last.action, Action::Install | Action::Upgrade)
            && last.error.is_none()
            && last.revision == release.current.revision
            && release.current.status == DEPLOYED
        {
            status.insert("lastSuccessTime".into(), json!(last.finished));
        }
        if let Some(at) = &seen.ledger.last_attempt {
            status.insert("lastAttemptTime".into(), json!(at));
        }
        status.extend(seen.ledger.fields());
        status.insert("history".into(), history(o));
        match &o.release {
            Some(release) if release.current.status != UNINSTALLED => {
                // A failed or pending revision, or objects the host could not resolve: the inventory reported
                // last stays (a status update keeps the fields it leaves out).
                if let Some(owned) = &release.inventory {
                    status.insert("inventory".into(), inventory(owned));
                }
            }
            // Nothing is owned any more.
            _ if self.had_inventory => {
                status.insert("inventory".into(), Value::Null);
            }
            _ => {}
        }
        status
    }

    /// Sends the status and sets `Released` and `Ready`, which always agree; clears a `Stalled` that no
    /// longer holds (kstatus reads `Stalled=True` as failed).
    fn commit(
        &self,
        status: Map<String, Value>,
        condition: ConditionStatus,
        reason: &str,
        message: &str,
    ) {
        self.host.set_status(Value::Object(status));
        for type_ in [types::RELEASED, types::READY] {
            self.host.set_condition(Condition {
                type_: type_.into(),
                status: condition,
                reason: reason.into(),
                message: message.into(),
            });
        }
        if self.had_stalled && reason != RETRIES_EXCEEDED {
            self.host
                .set_condition(Condition::new(types::STALLED, false, reason, message));
        }
    }
}

/// `status.inventory` as Flux writes it: entries `{id, v}`, the id `<namespace>_<name>_<group>_<kind>` (empty
/// namespace for cluster-scoped objects, empty group for the core API) and `v` the version, sorted by id.
fn inventory(owned: &[OwnedObject]) -> Value {
    let mut entries: Vec<(String, String)> = owned
        .iter()
        .map(|o| {
            let (group, version) = o
                .api_version
                .rsplit_once('/')
                .unwrap_or(("", &o.api_version));
            (
                format!("{}_{}_{}_{}", o.namespace, o.name, group, o.kind),
                version.to_string(),
            )
        })
        .collect();
    entries.sort();
    entries.dedup();
    json!({"entries": entries.into_iter().map(|(id, v)| json!({"id": id, "v": v})).collect::<Vec<_>>()})
}

/// `status.history`: the latest revisions, newest first, with the current one's chart and test hooks (the host
/// reads those of the current revision only).
fn history(o: &Observation) -> Value {
    let Some(release) = &o.release else {
        return json!([]);
    };
    let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
    let current = &release.current;
    let mut first = Map::new();
    first.insert(
        "version".into(),
        json!(i64::try_from(current.revision).unwrap_or(i64::MAX)),
    );
    first.insert("status".into(), json!(current.status));
    for (key, value) in [
        ("chartName", some(&current.chart)),
        ("chartVersion", some(&current.chart_version)),
        ("appVersion", some(&current.app_version)),
        ("configDigest", current.digest.clone()),
        ("lastDeployed", some(&current.updated)),
    ] {
        if let Some(v) = value {
            first.insert(key.into(), json!(v));
        }
    }
    if !o.tests.is_empty() {
        let hooks: Map<String, Value> = o
            .tests
            .iter()
            .map(|t| {
                let mut h = Map::new();
                h.insert("phase".into(), json!(t.phase));
                if let Some(s) = some(&t.started) {
                    h.insert("lastStarted".into(), json!(s));
                }
                if let Some(c) = some(&t.completed) {
                    h.insert("lastCompleted".into(), json!(c));
                }
                (t.name.clone(), Value::Object(h))
            })
            .collect();
        first.insert("testHooks".into(), Value::Object(hooks));
    }
    let earlier = release.history.iter().take(HISTORY - 1).map(|r| {
        let mut m = Map::new();
        m.insert(
            "version".into(),
            json!(i64::try_from(r.revision).unwrap_or(i64::MAX)),
        );
        m.insert("status".into(), json!(r.status));
        if let Some(d) = &r.digest {
            m.insert("configDigest".into(), json!(d));
        }
        Value::Object(m)
    });
    Value::Array(
        std::iter::once(Value::Object(first))
            .chain(earlier)
            .collect(),
    )
}
