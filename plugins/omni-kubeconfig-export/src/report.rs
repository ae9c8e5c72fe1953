//! What a reconcile reports: the status fields every update carries, the conditions of each outcome, and
//! the fields only a written or reused kubeconfig sets.
//!
//! The host merges the sent fields into the status one level deep, so a field not sent keeps its value. Failures
//! therefore send neither the rotation data (the Secret still holds a valid kubeconfig) nor the target fields
//! (they keep naming the Secret that holds it, so a renamed-away Secret stays recorded for cleanup).

use omni_api::conditions::{reasons, types};
use omni_plugin_sdk::serde_json::Map;
use omni_plugin_sdk::{Condition, Host, Value, json};

use crate::reuse::Current;
use crate::rotation::{self, Instant, Schedule};
use crate::spec::ExportSpec;
use crate::target::Target;

/// A status field Go left out when empty (`omitempty`); `null` removes it in a merge, as Go's update did.
fn text(s: &str) -> Value {
    if s.is_empty() {
        Value::Null
    } else {
        Value::String(s.into())
    }
}

pub struct Report<'a, H: Host> {
    host: &'a H,
    cluster_ref: String,
    status: Map<String, Value>,
}

/// A written or kept kubeconfig, as the status shows it.
pub struct Exported<'a> {
    pub target: &'a Target,
    pub digest: &'a str,
    pub expiration: Instant,
    pub last_rotation: Option<Instant>,
    pub next: Instant,
}

impl<'a> Exported<'a> {
    pub fn written(target: &'a Target, digest: &'a str, schedule: &Schedule) -> Self {
        Exported {
            target,
            digest,
            expiration: schedule.expiration,
            last_rotation: Some(schedule.rotated),
            next: schedule.next,
        }
    }

    pub fn kept(target: &'a Target, current: &'a Current) -> Self {
        Exported {
            target,
            digest: &current.digest,
            expiration: current.expiration,
            last_rotation: current.last_rotation,
            next: current.next,
        }
    }
}

impl<'a, H: Host> Report<'a, H> {
    pub fn new(host: &'a H, spec: &ExportSpec) -> Self {
        let mut status = Map::new();
        status.insert("clusterRef".into(), text(&spec.cluster_ref));
        status.insert("serviceAccountUser".into(), text(&spec.user));
        let groups = if spec.groups.is_empty() {
            Value::Null
        } else {
            json!(spec.groups)
        };
        status.insert("serviceAccountGroups".into(), groups);
        Report {
            host,
            cluster_ref: spec.cluster_ref.clone(),
            status,
        }
    }

    /// The cluster is known from here on.
    pub fn cluster(&mut self, cluster_name: &str) {
        self.status.insert("clusterName".into(), text(cluster_name));
    }

    /// The connection is known from here on.
    pub fn connection(&mut self, name: &str, endpoint: &str) {
        self.status.insert("connectionRef".into(), text(name));
        self.status.insert("endpoint".into(), text(endpoint));
    }

    fn commit(self, extra: Map<String, Value>) {
        let mut status = self.status;
        status.extend(extra);
        self.host.set_status(Value::Object(status));
    }

    fn exported_pair(&self, ok: bool, reason: &str, message: &str) {
        self.host
            .set_condition(Condition::new(types::EXPORTED, ok, reason, message));
        self.host
            .set_condition(Condition::new(types::READY, ok, reason, message));
    }

    fn accepted(&self) {
        self.host.set_condition(Condition::new(
            types::ACCEPTED,
            true,
            reasons::ACCEPTED,
            format!("attached to OmniCluster {:?}", self.cluster_ref),
        ));
    }

    /// The spec is refused: no `Accepted`, no requeue; a spec change triggers the next look.
    pub fn invalid(self, message: &str) {
        self.exported_pair(false, reasons::VALIDATION_FAILED, message);
        self.commit(Map::new());
    }

    /// The OmniCluster does not exist.
    pub fn missing_cluster(self, retry_ms: u64) {
        let message = format!("OmniCluster {:?} does not exist", self.cluster_ref);
        self.host.set_condition(Condition::new(
            types::ACCEPTED,
            false,
            reasons::MISSING_CLUSTER,
            message.as_str(),
        ));
        self.exported_pair(false, reasons::MISSING_CLUSTER, &message);
        self.host.requeue_after(retry_ms);
        self.commit(Map::new());
    }

    /// Any failure once the cluster is known: it is accepted, but no kubeconfig was exported now.
    pub fn failed(self, reason: &str, message: &str, retry_ms: u64) {
        self.accepted();
        self.exported_pair(false, reason, message);
        self.host.requeue_after(retry_ms);
        self.commit(Map::new());
    }

    /// The target holds a current kubeconfig: recorded as the export's Secret, with its rotation data, and the
    /// next look at rotation time.
    pub fn exported(self, e: &Exported<'_>, now: Instant) {
        self.accepted();
        let message = format!(
            "exported kubeconfig to Secret {:?} key {:?}",
            e.target.display(),
            e.target.key
        );
        self.exported_pair(true, reasons::EXPORTED, &message);
        self.host.requeue_after(rotation::requeue_ms(now, e.next));
        let mut extra = Map::new();
        extra.insert("targetSecretRef".into(), text(&e.target.name));
        extra.insert("targetSecretNamespace".into(), text(&e.target.namespace));
        extra.insert("targetSecretKey".into(), text(&e.target.key));
        extra.insert("kubeconfigHash".into(), text(e.digest));
        extra.insert(
            "expirationTime".into(),
            json!(rotation::timestamp(e.expiration)),
        );
        // A kept Secret without the annotation has no known rotation time (Go cleared it too).
        extra.insert(
            "lastRotationTime".into(),
            e.last_rotation
                .map_or(Value::Null, |t| json!(rotation::timestamp(t))),
        );
        extra.insert(
            "nextRotationTime".into(),
            json!(rotation::timestamp(e.next)),
        );
        self.commit(extra);
    }
}
