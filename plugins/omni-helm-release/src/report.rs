//! What reconcile and deletion report (spec/original-operator.md §6.6): the status fields, the `Accepted`,
//! `Released` and `Ready` conditions, and the Events. Requeues are the callers' decision.
//!
//! Status is merged one level deep by the host, so a field not sent keeps its value: `releaseRevision`,
//! `releaseStatus`, `lastAction` and `lastSuccessTime` survive updates that have nothing new to say about them, as
//! in Go. Every update carries the normalised spec fields (`clusterRef` … `chartVersion`).
//!
//! Times come from the host's action outcomes, not the clock, so that a reconcile that learns nothing new sends
//! exactly the status the object already has and the host writes nothing:
//! * `lastAttemptTime` is the `finished` time of the host's last action, sent only when that outcome is newer
//!   than the recorded attempt. A failure that comes without an outcome (validation, a missing cluster or
//!   kubeconfig, the host failing the call) stamps the clock instead, as Go's "reason without error" did; an older
//!   outcome reported after it does not move the time back.
//! * `lastSuccessTime` is the `finished` time of the successful action that made what is deployed.
//! * An outcome newer than the recorded attempt is also what makes an Event: one per action, never one per
//!   reconcile.

use omni_api::conditions::{reasons, types};
use omni_plugin_sdk::helm::{Action, ActionOutcome, ReleaseReport};
use omni_plugin_sdk::serde_json::Map;
use omni_plugin_sdk::time::parse_rfc3339;
use omni_plugin_sdk::{Condition, ConditionStatus, EventType, Host, Value, json};

use crate::messages;
use crate::object;
use crate::rules::text;

/// `Released` and `Ready` while a Helm action runs, with status `Unknown` (kstatus reads that as in progress).
/// Not among omni-api's reasons: the Go operator ran Helm synchronously and never had this state.
pub const PROGRESSING: &str = "Progressing";

/// `releaseStatus` once the release is gone (Helm's status of an uninstalled release, as Go recorded it).
const UNINSTALLED: &str = "uninstalled";

pub struct Report<'a, H: Host> {
    host: &'a H,
    /// The fields every status update carries.
    base: Map<String, Value>,
    /// `status.lastAttemptTime` as the object has it.
    last_attempt: Option<String>,
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
        put("chart", text(&spec["chart"]["chart"]));
        put("chartVersion", text(&spec["chart"]["version"]));
        Report {
            host,
            base,
            last_attempt: object["status"]["lastAttemptTime"]
                .as_str()
                .map(String::from),
        }
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

    /// An action runs: `Released`/`Ready` Unknown. Nothing is known to have failed or succeeded, so `lastError`
    /// stays as it was.
    pub fn progressing(&self, answer: &ReleaseReport, message: &str) {
        self.commit(
            self.observed(answer),
            ConditionStatus::Unknown,
            PROGRESSING,
            message,
        );
    }

    /// The host answered, and the release is not where it should be: `Released`/`Ready` False with `reason`.
    /// `lastError` is `error`: Helm's error as it is when an action failed (§6.6), else the message.
    pub fn failed_with(&self, answer: &ReleaseReport, reason: &str, error: &str, message: &str) {
        let mut status = self.observed(answer);
        status.insert("lastError".into(), json!(error));
        self.commit(status, ConditionStatus::False, reason, message);
    }

    /// What is wanted is deployed. `succeeded` is the finish time of the action that deployed it, when the host
    /// remembers it.
    pub fn released(
        &self,
        answer: &ReleaseReport,
        reason: &str,
        message: &str,
        succeeded: Option<&str>,
    ) {
        let mut status = self.observed(answer);
        status.insert("lastError".into(), json!(""));
        if let Some(at) = succeeded {
            status.insert("lastSuccessTime".into(), json!(at));
        }
        self.commit(status, ConditionStatus::True, reason, message);
    }

    /// Deletion: the uninstall runs.
    pub fn deleting(&self, answer: &ReleaseReport, message: &str) {
        self.commit(
            self.observed(answer),
            ConditionStatus::False,
            reasons::DELETING,
            message,
        );
    }

    /// Deletion: the release is gone.
    pub fn uninstalled(&self, answer: &ReleaseReport, message: &str) {
        let mut status = self.observed(answer);
        status.insert("lastAction".into(), json!(Action::Uninstall.name()));
        status.insert("releaseStatus".into(), json!(UNINSTALLED));
        status.insert("lastError".into(), json!(""));
        if let Some(last) = answer
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

    /// The Event of the host's last action, once: when its outcome is newer than the recorded attempt.
    /// Successful installs and upgrades are Normal, any failed action a Warning `ReconcileFailed`.
    pub fn announce(&self, answer: &ReleaseReport, release: &str) {
        let Some(last) = answer.last.as_ref().filter(|l| self.is_new(l)) else {
            return;
        };
        match (&last.error, last.action) {
            (Some(error), action) => self.host.event(
                EventType::Warning,
                reasons::RECONCILE_FAILED,
                &messages::action_failed(action, release, error),
            ),
            (None, Action::Install) => self.host.event(
                EventType::Normal,
                reasons::HELM_INSTALLED,
                &messages::installed(release, last.revision),
            ),
            (None, Action::Upgrade) => self.host.event(
                EventType::Normal,
                reasons::HELM_UPGRADED,
                &messages::upgraded(release, last.revision),
            ),
            // Recoveries, rollbacks and tests on their own, and uninstalls (deletion reports those), say nothing
            // the conditions do not.
            (None, _) => {}
        }
    }

    /// Whether the outcome finished after the attempt the status records. Times that do not parse compare as
    /// text: any other time is new.
    fn is_new(&self, outcome: &ActionOutcome) -> bool {
        let Some(previous) = self.last_attempt.as_deref() else {
            return true;
        };
        match (parse_rfc3339(&outcome.finished), parse_rfc3339(previous)) {
            (Some(finished), Some(previous)) => finished > previous,
            _ => outcome.finished != previous,
        }
    }

    /// The base fields and what the host's answer says: the release as Helm stores it, and the last action.
    fn observed(&self, answer: &ReleaseReport) -> Map<String, Value> {
        let mut status = self.base.clone();
        if let Some(release) = &answer.release {
            let revision = i64::try_from(release.current.revision).unwrap_or(i64::MAX);
            status.insert("releaseRevision".into(), json!(revision));
            status.insert("releaseStatus".into(), json!(release.current.status));
        }
        if let Some(last) = &answer.last {
            status.insert("lastAction".into(), json!(last.action.name()));
            if self.is_new(last) {
                status.insert("lastAttemptTime".into(), json!(last.finished));
            }
        }
        status
    }

    /// Sends the status and sets `Released` and `Ready`, which always agree (§6.6).
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
    }
}
