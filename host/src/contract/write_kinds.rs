//! The kinds `kube-write` may write, as grants name them (`kube-write:GROUP/VERSION/KIND`), and the kinds no grant
//! can ever name. Writes are granted one exact kind at a time, never by pattern: a read grant of `apps/*` is a
//! convenience, a write grant of it would hand a plugin every kind a later CRD adds to the group.
//!
//! Never writable, whatever an administrator writes, because each one hands out more than a plugin's own objects:
//! the RBAC kinds (a plugin could grant itself the cluster), the admission and API-extension kinds (it could switch
//! off the checks that hold it, or serve another API), the plugin platform's own kinds (it could bind itself more
//! grants), Nodes and ServiceAccounts. Secrets are writable only with `secrets-write` besides the kind's grant, and
//! never one of type `kubernetes.io/service-account-token`; the operator's own Lease never: both are checked per
//! write, by the capability, since they depend on the object and not only on its kind.

use std::fmt;

/// A `kube-write` grant that names no kind, or one no grant may name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteKindError {
    #[error(
        "invalid kind {0:?} in a kube-write grant: write one exact GROUP/VERSION/KIND (`apps/v1/Deployment`, \
         `core/v1/ConfigMap`); writes are never granted by pattern"
    )]
    Invalid(String),
    #[error("{kind:?} can be written by no grant: {why}")]
    NeverWritable { kind: String, why: String },
    #[error(
        "unknown permit {0:?} in a kube-write-allow grant; known: force, privileged, host-path, host-namespaces"
    )]
    UnknownPermit(String),
    #[error(
        "invalid ServiceAccount {0:?} in a kube-write-service-account grant: use a ServiceAccount name or \"*\""
    )]
    InvalidServiceAccount(String),
}

/// What a `kube-write-allow:` grant lets a write do that is otherwise refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WritePermit {
    /// Server-side apply with `force`: take fields over from another field manager.
    Force,
    /// Pods (and pod templates) with a privileged container or capabilities beyond Pod Security's baseline.
    Privileged,
    /// Pods with `hostPath` volumes.
    HostPath,
    /// Pods in the node's network, PID or IPC namespace, or with host ports.
    HostNamespaces,
}

impl WritePermit {
    pub const ALL: [WritePermit; 4] = [
        WritePermit::Force,
        WritePermit::Privileged,
        WritePermit::HostPath,
        WritePermit::HostNamespaces,
    ];

    pub fn name(self) -> &'static str {
        match self {
            WritePermit::Force => "force",
            WritePermit::Privileged => "privileged",
            WritePermit::HostPath => "host-path",
            WritePermit::HostNamespaces => "host-namespaces",
        }
    }

    pub fn parse(text: &str) -> Result<Self, WriteKindError> {
        WritePermit::ALL
            .into_iter()
            .find(|p| p.name() == text)
            .ok_or_else(|| WriteKindError::UnknownPermit(text.into()))
    }
}

impl fmt::Display for WritePermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One kind `kube-write` may write: group (empty for the core group), version and kind, exactly.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WriteKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

/// The Lease the operator's replicas elect their leader on (the Go operator's name, kept so both never lead at
/// once). No plugin writes it, in any namespace: a plugin holding it would stop the operator.
pub const OPERATOR_LEASE: &str = "5dc6398d.texashpc.com";

/// The Lease of a shard (`--watch-label-selector`): the operator's Lease name with a digest of the selector
/// (`5dc6398d-<10 hex digits>.texashpc.com`): each shard elects its own leader, and the replicas of one shard
/// (the same selector) share it.
pub fn shard_lease(selector: &str) -> String {
    let digest = <sha2::Sha256 as sha2::Digest>::digest(selector.trim().as_bytes());
    let hex: String = digest.iter().take(5).map(|b| format!("{b:02x}")).collect();
    let (head, domain) = lease_parts();
    format!("{head}-{hex}.{domain}")
}

/// The operator's Lease name before and after its first dot: a shard's name puts its digest between them.
fn lease_parts() -> (&'static str, &'static str) {
    OPERATOR_LEASE
        .split_once('.')
        .unwrap_or((OPERATOR_LEASE, ""))
}

/// Whether `name` is the operator's Lease or a shard's.
fn is_operator_lease(name: &str) -> bool {
    let (head, domain) = lease_parts();
    name == OPERATOR_LEASE
        || name
            .strip_suffix(domain)
            .and_then(|n| n.strip_suffix('.'))
            .and_then(|n| n.strip_prefix(head))
            .and_then(|n| n.strip_prefix('-'))
            .is_some_and(|hex| hex.len() == 10 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Why a write of `group`/`kind` named `name` is never allowed although its kind may be granted (the operator's
/// Leases, its own and its shards').
pub fn never_writable_object(group: &str, kind: &str, name: &str) -> Option<&'static str> {
    (group == "coordination.k8s.io" && kind == "Lease" && is_operator_lease(name))
        .then_some("the operator's leader-election Lease decides which replica runs the operator")
}

/// Kinds no grant reaches: (group, kind, why).
const NEVER_WRITABLE: &[(&str, &str, &str)] = &[
    ("rbac.authorization.k8s.io", "Role", RBAC),
    ("rbac.authorization.k8s.io", "ClusterRole", RBAC),
    ("rbac.authorization.k8s.io", "RoleBinding", RBAC),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding", RBAC),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
        ADMISSION,
    ),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
        ADMISSION,
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicy",
        ADMISSION,
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
        ADMISSION,
    ),
    (
        "admissionregistration.k8s.io",
        "MutatingAdmissionPolicy",
        ADMISSION,
    ),
    (
        "admissionregistration.k8s.io",
        "MutatingAdmissionPolicyBinding",
        ADMISSION,
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition", API),
    ("apiregistration.k8s.io", "APIService", API),
    (omni_api::platform::PLATFORM_GROUP, "Plugin", PLATFORM),
    (
        omni_api::platform::PLATFORM_GROUP,
        "PluginBinding",
        PLATFORM,
    ),
    (
        omni_api::platform::PLATFORM_GROUP,
        "ClusterPluginBinding",
        PLATFORM,
    ),
    (
        "",
        "Node",
        "Nodes are the cluster's machines, not a plugin's objects",
    ),
    (
        "",
        "ServiceAccount",
        "a ServiceAccount would give workloads an identity the plugin's grants do not bound",
    ),
];

const RBAC: &str = "RBAC objects decide what everyone in the cluster may do";
const ADMISSION: &str =
    "admission objects decide which writes the cluster accepts, the plugin's own included";
const API: &str = "API registrations decide what the cluster serves";
const PLATFORM: &str = "the plugin platform's objects decide what plugins are granted";

impl WriteKind {
    /// Parses `GROUP/VERSION/KIND` (`apps/v1/Deployment`, `core/v1/ConfigMap`); refuses patterns and the kinds no
    /// grant may name, saying why.
    pub fn parse(text: &str) -> Result<Self, WriteKindError> {
        let invalid = || WriteKindError::Invalid(text.into());
        let mut parts = text.split('/');
        let (Some(group), Some(version), Some(kind), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(invalid());
        };
        let group = if group == "core" { "" } else { group };
        let valid_group = group
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
        let valid_version = !version.is_empty()
            && version.starts_with('v')
            && version
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        let valid_kind = kind.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
            && kind.bytes().all(|b| b.is_ascii_alphanumeric());
        if !(valid_group && valid_version && valid_kind) {
            return Err(invalid());
        }
        let kind = WriteKind {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        };
        if let Some(why) = never_writable(&kind.group, &kind.kind) {
            return Err(WriteKindError::NeverWritable {
                kind: text.into(),
                why: why.into(),
            });
        }
        Ok(kind)
    }

    /// Whether this grant covers an object of `group`/`version`/`kind`, as discovery resolved them.
    pub fn matches(&self, group: &str, version: &str, kind: &str) -> bool {
        self.group == group && self.version == version && self.kind == kind
    }
}

/// The kinds no grant reaches, as (group, kind): for tests that try every one.
#[cfg(test)]
pub(crate) fn never_writable_kinds() -> impl Iterator<Item = (&'static str, &'static str)> {
    NEVER_WRITABLE.iter().map(|(g, k, _)| (*g, *k))
}

/// Why `group`/`kind` can never be written by a plugin, if it is one of those kinds. Checked when a grant is
/// parsed and again for every write, against the kind discovery resolved.
pub fn never_writable(group: &str, kind: &str) -> Option<&'static str> {
    NEVER_WRITABLE
        .iter()
        .find(|(g, k, _)| *g == group && *k == kind)
        .map(|(_, _, why)| *why)
}

impl fmt::Display for WriteKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let group = if self.group.is_empty() {
            "core"
        } else {
            &self.group
        };
        write!(f, "{group}/{}/{}", self.version, self.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shards_lease_is_as_unwritable_as_the_operators() {
        let one = shard_lease("sharding.fluxcd.io/key=shard1");
        let two = shard_lease("sharding.fluxcd.io/key=shard2");
        assert_ne!(one, two);
        assert_eq!(one, shard_lease(" sharding.fluxcd.io/key=shard1 "));
        assert!(
            one.starts_with("5dc6398d-") && one.ends_with(".texashpc.com"),
            "{one}"
        );
        for name in [OPERATOR_LEASE, one.as_str(), two.as_str()] {
            assert!(
                never_writable_object("coordination.k8s.io", "Lease", name).is_some(),
                "{name}"
            );
        }
        for name in [
            "5dc6398d-x.texashpc.com",
            "other",
            "5dc6398d.texashpc.com.evil",
        ] {
            assert!(
                never_writable_object("coordination.k8s.io", "Lease", name).is_none(),
                "{name}"
            );
        }
    }

    #[test]
    fn a_write_grant_names_one_exact_kind() {
        let deployments = WriteKind::parse("apps/v1/Deployment").expect("a kind");
        assert!(deployments.matches("apps", "v1", "Deployment"));
        assert!(!deployments.matches("apps", "v1", "StatefulSet"));
        assert!(!deployments.matches("apps", "v1beta1", "Deployment"));
        let config_maps = WriteKind::parse("core/v1/ConfigMap").expect("a core kind");
        assert!(config_maps.matches("", "v1", "ConfigMap"));
        assert_eq!(config_maps.to_string(), "core/v1/ConfigMap");
        assert_eq!(
            WriteKind::parse(&deployments.to_string()),
            Ok(deployments),
            "a grant round-trips through its spelling"
        );
        for bad in [
            "*",
            "apps/*",
            "apps/v1/*",
            "apps/Deployment",
            "apps/v1/Deployment/x",
            "Apps/v1/Deployment",
            "apps/1/Deployment",
            "apps/v1/deployment",
            "",
        ] {
            assert_eq!(
                WriteKind::parse(bad),
                Err(WriteKindError::Invalid(bad.into())),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn the_kinds_that_hand_out_more_than_a_plugins_objects_are_never_writable() {
        for (group, kind, _) in NEVER_WRITABLE {
            let group = if group.is_empty() { "core" } else { group };
            for version in ["v1", "v1beta1", "v2alpha1"] {
                let text = format!("{group}/{version}/{kind}");
                let refused = WriteKind::parse(&text).expect_err(&text);
                assert!(
                    matches!(&refused, WriteKindError::NeverWritable { kind, .. } if *kind == text),
                    "{refused:?}"
                );
                assert!(refused.to_string().contains("no grant"), "{refused}");
            }
        }
        // Secrets are a kind a grant can name; their writes need `secrets-write` too, checked per write.
        assert!(WriteKind::parse("core/v1/Secret").is_ok());
        assert!(never_writable("rbac.authorization.k8s.io", "ClusterRoleBinding").is_some());
        assert!(never_writable("apps", "Deployment").is_none());
        // A kind of the same name in another group is another kind.
        assert!(WriteKind::parse("example.com/v1/Role").is_ok());
    }
}
