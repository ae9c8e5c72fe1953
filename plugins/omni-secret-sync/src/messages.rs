//! Every text this plugin writes into conditions and Events, in one place so each can be checked against the
//! spec. Go's `%q` is [`q`]. None of them ever carries a Secret value: they name Secrets, keys and clusters, and
//! pass on host messages, which the host guarantees never quote a value or a kubeconfig.

/// Go's `%q`.
pub use omni_plugin_sdk::go::quote as q;

/// Go's `time.Duration.String()` of whole seconds: `10m0s`.
pub fn go_duration(seconds: u64) -> String {
    omni_plugin_sdk::go::format_duration(
        i64::try_from(seconds)
            .unwrap_or(i64::MAX / 1_000_000_000)
            .saturating_mul(1_000_000_000),
    )
}

/// `"ns/name"`, as the Go operator named Secrets in messages.
pub fn path(namespace: &str, name: &str) -> String {
    q(&format!("{namespace}/{name}"))
}

pub fn missing_cluster(cluster: &str) -> String {
    format!("OmniCluster {} does not exist", q(cluster))
}

pub fn attached(cluster: &str) -> String {
    format!("attached to OmniCluster {}", q(cluster))
}

pub fn missing_source(namespace: &str, name: &str) -> String {
    format!("source Secret {} does not exist", path(namespace, name))
}

pub fn missing_kubeconfig(namespace: &str, name: &str) -> String {
    format!("kubeconfig Secret {} does not exist", path(namespace, name))
}

pub fn kubeconfig_lacks_key(namespace: &str, name: &str, key: &str) -> String {
    format!(
        "kubeconfig Secret {} does not contain key {}",
        path(namespace, name),
        q(key)
    )
}

/// The kubeconfig pin: the defence that holds without the admission webhook.
pub fn kubeconfig_retargeted(
    old_name: &str,
    old_key: &str,
    new_name: &str,
    new_key: &str,
) -> String {
    format!(
        "kubeconfigSecretRef is immutable: it was {} key {} and is now {} key {}; set it back, or delete and recreate \
         this OmniSecretSync",
        q(old_name),
        q(old_key),
        q(new_name),
        q(new_key)
    )
}

pub fn delete_previous_failed(namespace: &str, name: &str, why: &str) -> String {
    format!(
        "delete previous workload Secret {}: {why}",
        path(namespace, name)
    )
}

/// The target exists and belongs to someone else.
pub fn not_owned(namespace: &str, name: &str, owner_key: &str, uid: &str) -> String {
    format!(
        "workload Secret {} exists and is not managed by this OmniSecretSync (label {owner_key} is not {}); it is left \
         alone: delete it or choose another targetSecretRef",
        path(namespace, name),
        q(uid)
    )
}

pub fn synced(source: &str, namespace: &str, name: &str) -> String {
    format!(
        "synced Secret {} to workload Secret {}",
        q(source),
        path(namespace, name)
    )
}

/// A deletion that cannot finish, while the bounded wait runs.
pub fn delete_retrying(namespace: &str, name: &str, why: &str, deadline: &str) -> String {
    format!(
        "cannot delete workload Secret {}: {why}; retrying until {deadline}, then the finalizer is released and the \
         Secret is left in place; set spec.deletionPolicy: Orphan to release it now",
        path(namespace, name)
    )
}

/// A deletion that could not finish: the Event when the wait is over.
pub fn deletion_abandoned(namespace: &str, name: &str, waited_s: u64, why: &str) -> String {
    format!(
        "gave up deleting workload Secret {} after {}: {why}; it is left in place",
        path(namespace, name),
        go_duration(waited_s)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_follows_go_strconv_quote() {
        let cases = [
            ("edge", r#""edge""#),
            ("", r#""""#),
            ("a\"b\\c", r#""a\"b\\c""#),
            ("tab\there\nnl", r#""tab\there\nnl""#),
            ("\u{07}\u{08}\u{0b}\u{0c}\r", r#""\a\b\v\f\r""#),
            (
                "esc\u{1b}del\u{7f}nul\u{0}us\u{1f}",
                r#""esc\x1bdel\x7fnul\x00us\x1f""#,
            ),
            (
                "c1\u{85}nbsp\u{a0}ls\u{2028}",
                r#""c1\u0085nbsp\u00a0ls\u2028""#,
            ),
            ("héllo 世界", "\"héllo 世界\""),
        ];
        for (input, want) in cases {
            assert_eq!(q(input), want, "{input:?}");
        }
    }

    #[test]
    fn durations_print_as_go_does() {
        let cases = [
            (0, "0s"),
            (45, "45s"),
            (60, "1m0s"),
            (600, "10m0s"),
            (3599, "59m59s"),
            (3600, "1h0m0s"),
            (90_061, "25h1m1s"),
        ];
        for (secs, want) in cases {
            assert_eq!(go_duration(secs), want, "{secs}");
        }
    }
}
