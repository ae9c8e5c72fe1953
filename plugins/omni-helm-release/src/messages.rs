//! Every text this plugin writes into conditions and Events, in one place so each can be checked against the
//! Go operator's wording where it had one. Go's `%q` is [`q`]. None carries a Secret value: they name Secrets,
//! keys, clusters and releases, and pass on host and Helm messages, which the host guarantees never quote a
//! credential.

use omni_plugin_sdk::helm::Action;

/// Go's `%q`.
pub use omni_plugin_sdk::go::quote as q;

/// `"ns/name"`, as the Go operator named Secrets in messages.
fn path(namespace: &str, name: &str) -> String {
    q(&format!("{namespace}/{name}"))
}

/// An action as Go's messages spell it: `install`, `upgrade`, …
pub fn verb(action: Action) -> String {
    action.name().to_lowercase()
}

pub fn missing_cluster(cluster: &str) -> String {
    format!("OmniCluster {} does not exist", q(cluster))
}

/// `Accepted=True`, worded as the other workload-cluster kinds word it.
pub fn attached(cluster: &str) -> String {
    format!("attached to OmniCluster {}", q(cluster))
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

/// A failed Helm action, with Helm's error, in the Go operator's words.
pub fn action_failed(action: Action, release: &str, error: &str) -> String {
    format!(
        "Helm {} failed for release {}: {error}",
        verb(action),
        q(release)
    )
}

/// An install or upgrade stopped because what it was making is no longer wanted.
pub fn cancelling(action: Action, release: &str) -> String {
    format!(
        "Helm {} of release {} is being cancelled: the chart or values changed while it ran",
        verb(action),
        q(release)
    )
}

pub fn cancelled(action: Action, release: &str) -> String {
    format!(
        "Helm {} of release {} was cancelled: the chart or values changed while it ran",
        verb(action),
        q(release)
    )
}

pub fn running(action: Action, release: &str) -> String {
    format!("Helm {} of release {} is running", verb(action), q(release))
}

pub fn installed(release: &str, revision: u64) -> String {
    format!("installed Helm release {} revision {revision}", q(release))
}

pub fn upgraded(release: &str, revision: u64) -> String {
    format!(
        "upgraded Helm release {} to revision {revision}",
        q(release)
    )
}

/// The Event of a successful action (Flux's `…Succeeded` reasons).
pub fn action_succeeded(action: Action, release: &str, revision: u64) -> String {
    match action {
        Action::Install => installed(release, revision),
        Action::Upgrade => upgraded(release, revision),
        Action::Test => format!(
            "Helm tests passed for release {} revision {revision}",
            q(release)
        ),
        Action::Rollback => format!(
            "rolled back Helm release {} (now revision {revision})",
            q(release)
        ),
        Action::Uninstall => uninstalled(release),
        Action::Correct => format!(
            "applied the drifted objects of Helm release {} revision {revision} again",
            q(release)
        ),
        Action::Recover => format!(
            "Helm release {} revision {revision} was left pending by an action that did not finish; marked failed",
            q(release)
        ),
    }
}

pub fn new_chart_version(chart: &str, range: &str, old: &str, new: &str, release: &str) -> String {
    format!(
        "chart {} version {} now resolves to {new} (deployed: {old}); upgrading Helm release {}",
        q(chart),
        q(range),
        q(release)
    )
}

pub fn drift_detected(release: &str, what: &str) -> String {
    format!(
        "objects of Helm release {} drifted from its manifest: {what}",
        q(release)
    )
}

pub fn no_drift(release: &str) -> String {
    format!(
        "the objects of Helm release {} match its manifest",
        q(release)
    )
}

/// Someone else's action holds the release.
pub fn pending_elsewhere(release: &str, status: &str) -> String {
    format!(
        "Helm release {} is {status} by an action this operator did not start; waiting for it to finish or \
         time out",
        q(release)
    )
}

/// `dependsOn` (or the kubeconfig's export) is not ready; `what` lists what is waited for.
pub fn dependencies_not_ready(release: &str, what: &str) -> String {
    format!(
        "Helm release {} waits for its dependencies: {what}",
        q(release)
    )
}

pub fn dependency_cycle(cycle: &str) -> String {
    format!("dependsOn forms a cycle ({cycle}); remove one of these dependencies")
}

/// The retries of an install or upgrade are used up (Flux's `RetriesExceeded`).
pub fn retries_exhausted(release: &str, action: &str, failures: i64, error: &str) -> String {
    format!(
        "Helm {action} of release {} failed {failures} times and its retries are used up: {error}; change the \
         spec, or annotate reconcile.fluxcd.io/resetAt (or forceAt) with the value of \
         reconcile.fluxcd.io/requestedAt to try again",
        q(release)
    )
}

/// A remediation (rollback or uninstall) failed.
pub fn remediation_failed(release: &str, action: Action, error: &str) -> String {
    format!(
        "remediation of Helm release {} failed: Helm {} failed: {error}; change the spec, or annotate \
         reconcile.fluxcd.io/forceAt with the value of reconcile.fluxcd.io/requestedAt to try again",
        q(release),
        verb(action)
    )
}

/// Helm tests failed (reported; whether they count is the spec's).
pub fn tests_failed(release: &str, failed: &[String]) -> String {
    if failed.is_empty() {
        format!("Helm tests failed for release {}", q(release))
    } else {
        format!(
            "Helm tests failed for release {}: {}",
            q(release),
            failed.join(", ")
        )
    }
}

pub fn tests_passed(release: &str, revision: u64) -> String {
    format!(
        "Helm tests passed for release {} revision {revision}",
        q(release)
    )
}

pub fn uninstalled(release: &str) -> String {
    format!("uninstalled Helm release {}", q(release))
}

/// Idle, but not deployed from what is wanted: a release someone else made (which the host does not adopt), or
/// a state the host reports without an action of its own to show for it.
pub fn not_converged(release: &str, status: &str) -> String {
    format!("Helm release {} is {status}", q(release))
}

/// The status word of [`not_converged`] when the workload cluster holds no release at all.
pub const NOT_INSTALLED: &str = "not installed";

/// `releaseName` that Helm would refuse; `why` from `rules::release_name_problem`.
pub fn invalid_release_name(name: &str, why: &str) -> String {
    format!(
        "releaseName {} is not a valid Helm release name: {why}",
        q(name)
    )
}

/// A `spec.timeout` that is not a Go duration, with Go's parse error.
pub fn invalid_timeout(raw: &str, why: &str) -> String {
    format!("timeout {} is not a valid duration: {why}", q(raw))
}

pub fn uninstalling(release: &str) -> String {
    format!("uninstalling Helm release {}", q(release))
}

/// The uninstall cannot start; `why` names the missing kubeconfig Secret or key.
pub fn cannot_uninstall(release: &str, why: &str) -> String {
    format!(
        "cannot uninstall Helm release {}: {why}; restore it, or set spec.deletionPolicy to Orphan to leave the \
         release in the workload cluster",
        q(release)
    )
}

/// The uninstall failed (Helm) or could not be run (the host); retried until it succeeds.
pub fn uninstall_failed(release: &str, why: &str) -> String {
    format!(
        "Helm uninstall failed for release {}: {why}; the finalizer stays until it succeeds, or set \
         spec.deletionPolicy to Orphan to leave the release",
        q(release)
    )
}

/// Uninstall answered, but the release is still there.
pub fn uninstall_stuck(release: &str, status: &str) -> String {
    format!(
        "Helm release {} is {status} and was not uninstalled; the finalizer stays until it is, or set \
         spec.deletionPolicy to Orphan to leave the release",
        q(release)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_are_lower_cased_as_go_lower_cased_them() {
        assert_eq!(
            action_failed(Action::Upgrade, "web", "boom"),
            "Helm upgrade failed for release \"web\": boom"
        );
        assert_eq!(
            running(Action::Install, "web"),
            "Helm install of release \"web\" is running"
        );
    }
}
