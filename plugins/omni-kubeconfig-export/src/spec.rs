//! The export's spec and identity as the plugin reads them, and the values the Go operator normalised from them.
//!
//! Read leniently from the JSON rather than through `omni_api::OmniKubeconfigExportSpec`: that type refuses a
//! missing `ttl` or a `deletionPolicy` outside its enum, while both validations must see such objects to report
//! Go's own messages (`ttl must be greater than zero`, `deletionPolicy is required`) instead of a decoding error.

use omni_plugin_sdk::Value;

use crate::DEFAULT_TARGET_KEY;

/// The group only `allowClusterAdmin` may export; only this exact name, after trimming.
pub const CLUSTER_ADMIN_GROUP: &str = "system:masters";

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExportSpec {
    pub cluster_ref: String,
    pub target_name: String,
    /// As written; empty or absent means the export's namespace.
    pub target_namespace: Option<String>,
    /// As written; empty or absent means [`DEFAULT_TARGET_KEY`].
    pub target_key: Option<String>,
    pub user: String,
    pub groups: Vec<String>,
    pub allow_cluster_admin: bool,
    pub context_namespace: Option<String>,
    /// Go duration text; `None` when absent (Go's zero duration).
    pub ttl: Option<String>,
    pub renew_before: Option<String>,
    pub deletion_policy: String,
}

fn text(v: &Value) -> Option<String> {
    v.as_str().map(String::from)
}

impl ExportSpec {
    pub fn from_object(object: &Value) -> Self {
        let spec = &object["spec"];
        let target = &spec["targetSecretRef"];
        let account = &spec["serviceAccount"];
        ExportSpec {
            cluster_ref: text(&spec["clusterRef"]["name"]).unwrap_or_default(),
            target_name: text(&target["name"]).unwrap_or_default(),
            target_namespace: text(&target["namespace"]),
            target_key: text(&target["key"]),
            user: text(&account["user"]).unwrap_or_default(),
            // A non-string entry cannot pass the CRD; read as blank, it is refused as one.
            groups: account["groups"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|g| g.as_str().unwrap_or_default().to_string())
                        .collect()
                })
                .unwrap_or_default(),
            allow_cluster_admin: account["allowClusterAdmin"].as_bool() == Some(true),
            context_namespace: text(&spec["contextNamespace"]),
            ttl: text(&spec["ttl"]),
            renew_before: text(&spec["renewBefore"]),
            deletion_policy: text(&spec["deletionPolicy"]).unwrap_or_default(),
        }
    }

    /// `targetKey`: `spec.targetSecretRef.key`, else `kubeconfig`.
    pub fn target_key(&self) -> &str {
        match self.target_key.as_deref() {
            Some(k) if !k.is_empty() => k,
            _ => DEFAULT_TARGET_KEY,
        }
    }

    /// `targetNamespace`: `spec.targetSecretRef.namespace`, else the export's own.
    pub fn target_namespace<'a>(&'a self, own: &'a str) -> &'a str {
        match self.target_namespace.as_deref() {
            Some(ns) if !ns.is_empty() => ns,
            _ => own,
        }
    }

    /// The context namespace to set, if any (empty counts as unset, as Go's `omitempty` string).
    pub fn context_namespace(&self) -> Option<&str> {
        self.context_namespace
            .as_deref()
            .filter(|ns| !ns.is_empty())
    }

    /// `ttl` in nanoseconds; absent is Go's zero duration.
    pub fn ttl_ns(&self) -> Result<i64, String> {
        self.ttl
            .as_deref()
            .map_or(Ok(0), omni_plugin_sdk::go::parse_duration)
    }

    /// `renewBefore` in nanoseconds, `None` when absent.
    pub fn renew_before_ns(&self) -> Option<Result<i64, String>> {
        self.renew_before
            .as_deref()
            .map(omni_plugin_sdk::go::parse_duration)
    }

    /// Whether the groups include the cluster-admin group (after trimming, as the guard compares).
    pub fn grants_cluster_admin(&self) -> bool {
        self.groups.iter().any(|g| g.trim() == CLUSTER_ADMIN_GROUP)
    }

    pub fn deletes_target(&self) -> bool {
        self.deletion_policy == "Delete"
    }
}

/// The export's own name, namespace and UID.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Identity {
    pub name: String,
    pub namespace: String,
    pub uid: String,
}

impl Identity {
    pub fn of(object: &Value) -> Self {
        let meta = &object["metadata"];
        Identity {
            name: text(&meta["name"]).unwrap_or_default(),
            namespace: text(&meta["namespace"]).unwrap_or_default(),
            uid: text(&meta["uid"]).unwrap_or_default(),
        }
    }
}
