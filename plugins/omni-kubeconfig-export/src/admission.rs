//! Admission rules for OmniKubeconfigExport: every error collected, in the Go webhook's order, with its field
//! paths and texts, and the `system:masters` warning.
//!
//! Durations: an Invalid ttl/renewBefore prints Go's `Duration.String()` of the value, the only text the Go
//! webhook had after decoding (`-5m` prints `"-5m0s"`); one that does not parse is Invalid with Go's parse error
//! and the text as written.

use std::collections::BTreeMap;

use omni_plugin_sdk::go::{format_duration, parse_duration};
use omni_plugin_sdk::{Value, Verdict};

use crate::spec::{CLUSTER_ADMIN_GROUP, ExportSpec};

const CLUSTER_ADMIN_WARNING: &str =
    "system:masters exports a cluster-admin kubeconfig into the management cluster";

fn blank(s: &str) -> bool {
    s.trim().is_empty()
}

fn set_but_blank(s: Option<&str>) -> bool {
    s.is_some_and(|s| !s.is_empty() && blank(s))
}

pub fn validate(object: &Value, _old: Option<&Value>) -> Verdict {
    let mut v = Verdict::default();
    let spec = ExportSpec::from_object(object);

    if blank(&spec.cluster_ref) {
        v.required("spec.clusterRef.name", "clusterRef.name is required");
    }
    if blank(&spec.target_name) {
        v.required(
            "spec.targetSecretRef.name",
            "target Secret name is required",
        );
    }
    if set_but_blank(spec.target_namespace.as_deref()) {
        v.required(
            "spec.targetSecretRef.namespace",
            "target Secret namespace must not be blank",
        );
    }
    if set_but_blank(spec.context_namespace.as_deref()) {
        v.required(
            "spec.contextNamespace",
            "context namespace must not be blank",
        );
    }
    if set_but_blank(spec.target_key.as_deref()) {
        v.required(
            "spec.targetSecretRef.key",
            "target Secret key must not be blank",
        );
    }
    if blank(&spec.user) {
        v.required(
            "spec.serviceAccount.user",
            "service account user is required",
        );
    }
    groups(&spec, &mut v);
    let ttl = lifetime(
        &mut v,
        "spec.ttl",
        spec.ttl.as_deref().or(Some("0")),
        "ttl must be greater than zero",
    );
    if spec.renew_before.is_some()
        && let Some(renew) = lifetime(
            &mut v,
            "spec.renewBefore",
            spec.renew_before.as_deref(),
            "renewBefore must be greater than zero",
        )
        && let Some(ttl) = ttl.filter(|t| *t > 0)
        && renew > 0
        && renew >= ttl
    {
        v.invalid(
            "spec.renewBefore",
            Value::String(format_duration(renew)),
            "renewBefore must be less than ttl",
        );
    }
    match spec.deletion_policy.as_str() {
        "" => v.required("spec.deletionPolicy", "deletionPolicy is required"),
        "Delete" | "Orphan" => {}
        other => v.not_supported(
            "spec.deletionPolicy",
            Value::String(other.into()),
            &["Delete", "Orphan"],
        ),
    }

    if spec.allow_cluster_admin && spec.grants_cluster_admin() {
        v.warn(CLUSTER_ADMIN_WARNING);
    }
    v
}

fn groups(spec: &ExportSpec, v: &mut Verdict) {
    if spec.groups.is_empty() {
        v.required(
            "spec.serviceAccount.groups",
            "at least one service account group is required",
        );
        return;
    }
    // Trimmed group → the index it first appeared at.
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, raw) in spec.groups.iter().enumerate() {
        let field = format!("spec.serviceAccount.groups[{i}]");
        let group = raw.trim();
        if group.is_empty() {
            v.required(&field, "service account group must not be blank");
            continue;
        }
        match seen.get(group) {
            // Both entries are named, so the user sees which two collide.
            Some(first) => {
                v.duplicate(&field, Value::String(group.into()));
                v.duplicate(
                    &format!("spec.serviceAccount.groups[{first}]"),
                    Value::String(group.into()),
                );
            }
            None => {
                seen.insert(group, i);
            }
        }
        if group == CLUSTER_ADMIN_GROUP && !spec.allow_cluster_admin {
            v.forbidden(
                &field,
                "system:masters requires serviceAccount.allowClusterAdmin: true",
            );
        }
    }
}

/// Checks one positive duration; its value when it parses (whatever its sign), `None` when it does not.
fn lifetime(v: &mut Verdict, field: &str, text: Option<&str>, not_positive: &str) -> Option<i64> {
    let text = text.unwrap_or_default();
    match parse_duration(text) {
        Ok(ns) => {
            if ns <= 0 {
                v.invalid(field, Value::String(format_duration(ns)), not_positive);
            }
            Some(ns)
        }
        Err(e) => {
            v.invalid(field, Value::String(text.into()), &e);
            None
        }
    }
}
