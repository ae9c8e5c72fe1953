//! The spec hash stamped on the target Secret: byte for byte the Go operator's, so Secrets it wrote
//! are reused after an upgrade instead of every export rotating at once.
//!
//! Go hashes compact `encoding/json` of a struct, so the field order, Go's string escaping (HTML characters,
//! U+2028/U+2029) and Go's duration text all matter; serde_json would differ in the escaping.

use omni_plugin_sdk::go::{format_duration, json_string};
use omni_plugin_sdk::sha256_hex;

/// The JSON the hash is taken over. The user and groups are as written (untrimmed, in spec order), as Go passed
/// them; `contextNamespace` is left out when unset. Deliberately not in it: the target Secret's name and
/// namespace, renewBefore, deletionPolicy and allowClusterAdmin.
pub fn spec_json(
    cluster_name: &str,
    target_key: &str,
    context_namespace: Option<&str>,
    user: &str,
    groups: &[String],
    ttl_ns: i64,
) -> String {
    let mut json = format!(
        "{{\"version\":\"v1\",\"clusterName\":{},\"targetSecretKey\":{}",
        json_string(cluster_name),
        json_string(target_key)
    );
    if let Some(ns) = context_namespace.filter(|ns| !ns.is_empty()) {
        json.push_str(&format!(",\"contextNamespace\":{}", json_string(ns)));
    }
    let groups = groups
        .iter()
        .map(|g| json_string(g))
        .collect::<Vec<_>>()
        .join(",");
    json.push_str(&format!(
        ",\"serviceAccountUser\":{},\"serviceAccountGroups\":[{groups}],\"ttl\":{}}}",
        json_string(user),
        json_string(&format_duration(ttl_ns))
    ));
    json
}

/// Lowercase hex SHA-256 of [`spec_json`].
pub fn spec_hash(
    cluster_name: &str,
    target_key: &str,
    context_namespace: Option<&str>,
    user: &str,
    groups: &[String],
    ttl_ns: i64,
) -> String {
    sha256_hex(
        spec_json(
            cluster_name,
            target_key,
            context_namespace,
            user,
            groups,
            ttl_ns,
        )
        .as_bytes(),
    )
}
