//! The request for a new kubeconfig: what Omni is asked for, and where and with what
//! metadata the operator writes it. The kubeconfig goes from Omni to the Secret host to host; the plugin gets back
//! only its SHA-256.

use omni_api::labels::kubeconfig_export::{
    EXPIRATION_ANNOTATION, HASH_ANNOTATION, LAST_ROTATION_ANNOTATION, NAME_ANNOTATION,
    NAMESPACE_ANNOTATION, SPEC_HASH_ANNOTATION,
};
use omni_api::labels::{CLUSTER_LABEL, MANAGED_BY, MANAGED_BY_LABEL};
use omni_plugin_sdk::HostError;
use omni_plugin_sdk::json;
use omni_plugin_sdk::secrets::{KubeconfigExport, OwnerLabel};

use crate::rotation::{self, Schedule};
use crate::spec::{ExportSpec, Identity};
use crate::target::Target;

/// Everything the request is built from.
pub struct Inputs<'a> {
    pub me: &'a Identity,
    pub spec: &'a ExportSpec,
    pub cluster_name: &'a str,
    pub target: &'a Target,
    pub remove_key: Option<String>,
    pub owner: &'a OwnerLabel,
    pub spec_hash: &'a str,
    pub ttl_ns: i64,
    pub schedule: &'a Schedule,
}

pub fn request(i: &Inputs<'_>) -> KubeconfigExport {
    KubeconfigExport {
        cluster: i.cluster_name.to_string(),
        // Verbatim, untrimmed, in spec order: Go passed them to Omni so, and the spec hash covers them so.
        user: i.spec.user.clone(),
        groups: i.spec.groups.clone(),
        // Validation made it positive.
        ttl_ns: u64::try_from(i.ttl_ns).unwrap_or_default(),
        target: i.target.key_ref(),
        remove_key: i.remove_key.clone(),
        context_namespace: i.spec.context_namespace().map(String::from),
        labels: json!({
            MANAGED_BY_LABEL: MANAGED_BY,
            i.owner.key.as_str(): i.owner.value,
            CLUSTER_LABEL: i.cluster_name,
        }),
        annotations: json!({
            NAME_ANNOTATION: i.me.name,
            NAMESPACE_ANNOTATION: i.me.namespace,
            SPEC_HASH_ANNOTATION: i.spec_hash,
            EXPIRATION_ANNOTATION: rotation::timestamp(i.schedule.expiration),
            LAST_ROTATION_ANNOTATION: rotation::timestamp(i.schedule.rotated),
        }),
        owner: i.owner.clone(),
        // Only the host sees the bytes, so only it can stamp their digest.
        digest_annotation: Some(HASH_ANNOTATION.into()),
    }
}

/// The `ExportFailed` message for a failed export. The host reports a kubeconfig from Omni that does not parse, or
/// whose current context is missing, as `Invalid` with Go's own `generated kubeconfig …` text; everything else
/// gets Go's `failed to export kubeconfig:` prefix. The host's texts carry no kubeconfig content.
pub fn failure_message(e: &HostError) -> String {
    match e {
        HostError::Invalid(m) if m.starts_with("generated kubeconfig") => m.clone(),
        other => format!("failed to export kubeconfig: {}", other.message()),
    }
}
