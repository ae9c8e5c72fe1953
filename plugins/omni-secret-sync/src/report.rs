//! What reconcile and deletion report: the status fields and the `Accepted`,
//! `Synced` and `Ready` conditions. Requeues are the callers' decision.
//!
//! Status is merged one level deep by the host, so a field not sent keeps its value. That is how two fixes are
//! made: on failures `secretHash` and `lastSyncTime` are not sent, so they keep describing the copy that is still
//! in the workload cluster; and `targetSecretRef`/`targetNamespace` and `kubeconfigSecretRef`/`kubeconfigSecretKey`
//! are sent only on success, so they record what was last written and with which kubeconfig — the Go controller
//! copied the spec into them on every update.

use omni_api::conditions::{reasons, types};
use omni_plugin_sdk::secrets::Copied;
use omni_plugin_sdk::serde_json::Map;
use omni_plugin_sdk::{Condition, Host, Value, json};

use crate::messages;
use crate::object::SyncObject;

pub struct Report<'a, H: Host> {
    host: &'a H,
    now: String,
    /// The fields every status update carries.
    base: Map<String, Value>,
}

impl<'a, H: Host> Report<'a, H> {
    /// Reads the base fields from the raw object, so a spec that failed validation is reported as it is.
    pub fn new(host: &'a H, object: &Value, now: &str) -> Self {
        let spec = &object["spec"];
        let text = |v: &Value| Value::String(v.as_str().unwrap_or_default().to_string());
        let mut base = Map::new();
        base.insert("clusterRef".into(), text(&spec["clusterRef"]["name"]));
        base.insert(
            "sourceSecretRef".into(),
            text(&spec["sourceSecretRef"]["name"]),
        );
        if let Some(t) = spec["type"].as_str().filter(|t| !t.is_empty()) {
            base.insert("secretType".into(), json!(t));
        }
        // Every update has a result, an error or a reason, so every one is an attempt.
        base.insert("lastAttemptTime".into(), json!(now));
        Report {
            host,
            now: now.to_string(),
            base,
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

    /// `Synced=False` and `Ready=False` with `reason`; `lastError` is the message.
    pub fn failed(&self, reason: &str, message: &str) {
        let mut status = self.base.clone();
        status.insert("lastError".into(), json!(message));
        self.host.set_status(Value::Object(status));
        self.host
            .set_condition(Condition::new(types::SYNCED, false, reason, message));
        self.host
            .set_condition(Condition::new(types::READY, false, reason, message));
    }

    /// The copy is in place: records what was written, where, and with which kubeconfig.
    pub fn synced(&self, sync: &SyncObject, copied: &Copied) {
        let target = sync.target();
        let mut status = self.base.clone();
        let fields = json!({
            "kubeconfigSecretRef": sync.kubeconfig_name(),
            "kubeconfigSecretKey": sync.kubeconfig_key(),
            "targetSecretRef": target.name,
            "targetNamespace": target.namespace,
            "secretType": copied.secret_type,
            "secretHash": copied.digest,
            "lastSyncTime": self.now,
            "lastError": "",
        });
        if let Value::Object(fields) = fields {
            status.extend(fields);
        }
        self.host.set_status(Value::Object(status));
        let message = messages::synced(sync.source_name(), &target.namespace, &target.name);
        self.host.set_condition(Condition::new(
            types::SYNCED,
            true,
            reasons::SYNCED,
            message.as_str(),
        ));
        self.host
            .set_condition(Condition::new(types::READY, true, reasons::SYNCED, message));
    }
}
