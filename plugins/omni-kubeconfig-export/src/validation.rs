//! The controller's own spec check: a subset of the admission rules, first failure wins, Go's
//! messages verbatim. It runs before any Omni call, so an object admitted without the webhook (or written before
//! it) never exports a kubeconfig it should not. Durations that do not parse are refused here too, naming the
//! field: the Go operator could not even decode such an object.

use crate::spec::{CLUSTER_ADMIN_GROUP, ExportSpec};

/// The validated lifetimes, in nanoseconds: `ttl > 0`, and `0 < renew_before < ttl` when set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lifetimes {
    pub ttl_ns: i64,
    pub renew_before_ns: Option<i64>,
}

fn blank(s: &str) -> bool {
    s.trim().is_empty()
}

/// Set (non-empty) but only whitespace.
fn set_but_blank(s: Option<&str>) -> bool {
    s.is_some_and(|s| !s.is_empty() && blank(s))
}

pub fn check(spec: &ExportSpec) -> Result<Lifetimes, String> {
    if blank(&spec.cluster_ref) {
        return Err("clusterRef.name is required".into());
    }
    if blank(&spec.target_name) {
        return Err("targetSecretRef.name is required".into());
    }
    if set_but_blank(spec.target_namespace.as_deref()) {
        return Err("targetSecretRef.namespace is required when set".into());
    }
    if set_but_blank(spec.target_key.as_deref()) {
        return Err("targetSecretRef.key is required".into());
    }
    if blank(&spec.user) {
        return Err("serviceAccount.user is required".into());
    }
    if spec.groups.is_empty() {
        return Err("serviceAccount.groups requires at least one group".into());
    }
    if spec.groups.iter().any(|g| blank(g)) {
        return Err("serviceAccount.groups must not contain blank values".into());
    }
    if !spec.allow_cluster_admin && spec.groups.iter().any(|g| g.trim() == CLUSTER_ADMIN_GROUP) {
        return Err("system:masters requires serviceAccount.allowClusterAdmin: true".into());
    }
    let ttl_ns = spec
        .ttl_ns()
        .map_err(|e| format!("ttl is not a valid duration: {e}"))?;
    if ttl_ns <= 0 {
        return Err("ttl must be greater than zero".into());
    }
    let renew_before_ns = match spec.renew_before_ns() {
        None => None,
        Some(parsed) => {
            let ns = parsed.map_err(|e| format!("renewBefore is not a valid duration: {e}"))?;
            if ns <= 0 {
                return Err("renewBefore must be greater than zero".into());
            }
            if ns >= ttl_ns {
                return Err("renewBefore must be less than ttl".into());
            }
            Some(ns)
        }
    };
    if !matches!(spec.deletion_policy.as_str(), "Delete" | "Orphan") {
        return Err("deletionPolicy must be Delete or Orphan".into());
    }
    Ok(Lifetimes {
        ttl_ns,
        renew_before_ns,
    })
}
