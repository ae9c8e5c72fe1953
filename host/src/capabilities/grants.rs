//! Grants: the capabilities a plugin's configuration gives it. Deny by default.
//!
//! A capability is named after the contract interface it unlocks (`kube-read` unlocks
//! `omni:operator/kube-read`), plus finer grants checked inside an interface (`secrets-read-values`,
//! `secrets-write`). `types` and `context` carry no authority and are always allowed.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

/// One named capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Capability {
    KubeRead,
    KubeWrite,
    Secrets,
    /// Secret values themselves (`secrets.read`), beyond metadata and digests.
    SecretsReadValues,
    /// Writing Secrets host to host (`omni.export-kubeconfig`).
    SecretsWrite,
    Omni,
    Workload,
    Helm,
    /// Reading files under the template roots the operator admin allows (`HostServices::template_roots`); the
    /// grant gives no other filesystem access, and with no roots configured it reads nothing.
    Files,
    Clock,
}

impl Capability {
    pub const ALL: [Capability; 10] = [
        Capability::KubeRead,
        Capability::KubeWrite,
        Capability::Secrets,
        Capability::SecretsReadValues,
        Capability::SecretsWrite,
        Capability::Omni,
        Capability::Workload,
        Capability::Helm,
        Capability::Files,
        Capability::Clock,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Capability::KubeRead => "kube-read",
            Capability::KubeWrite => "kube-write",
            Capability::Secrets => "secrets",
            Capability::SecretsReadValues => "secrets-read-values",
            Capability::SecretsWrite => "secrets-write",
            Capability::Omni => "omni",
            Capability::Workload => "workload",
            Capability::Helm => "helm",
            Capability::Files => "files",
            Capability::Clock => "clock",
        }
    }

    /// What importing a contract interface requires: `Ok(None)` for interfaces that carry no authority,
    /// `Err(())` for interfaces this host does not know.
    pub(crate) fn guarding(interface: &str) -> Result<Option<Capability>, ()> {
        Ok(Some(match interface {
            "types" | "context" => return Ok(None),
            "kube-read" => Capability::KubeRead,
            "kube-write" => Capability::KubeWrite,
            "secrets" => Capability::Secrets,
            "omni" => Capability::Omni,
            "workload" => Capability::Workload,
            "helm" => Capability::Helm,
            "files" => Capability::Files,
            "clock" => Capability::Clock,
            _ => return Err(()),
        }))
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Capability {
    type Err = GrantError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Capability::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| GrantError::UnknownCapability(s.into()))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrantError {
    #[error("unknown capability {0:?}; known capabilities: {known}", known = known_names())]
    UnknownCapability(String),
    #[error(
        "invalid namespace {0:?} in a kube-read grant: use a namespace name or \"*\" for every namespace"
    )]
    InvalidNamespace(String),
}

fn known_names() -> String {
    Capability::ALL
        .iter()
        .map(|c| c.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What one plugin may do. Empty by default: a plugin with no grants can only use its call context.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    capabilities: BTreeSet<Capability>,
    /// Namespaces `kube-read` may reach besides the reconciled object's own; `"*"` means all of them.
    read_namespaces: BTreeSet<String>,
}

impl Grants {
    /// No capabilities at all.
    pub fn none() -> Self {
        Grants::default()
    }

    /// Grants from capability names, as a plugin's configuration spells them.
    pub fn parse<I, S>(names: I) -> Result<Self, GrantError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let capabilities = names
            .into_iter()
            .map(|n| n.as_ref().trim().parse())
            .collect::<Result<_, _>>()?;
        Ok(Grants {
            capabilities,
            read_namespaces: BTreeSet::new(),
        })
    }

    pub fn with(mut self, capability: Capability) -> Self {
        self.capabilities.insert(capability);
        self
    }

    /// Lets `kube-read` reach `namespace` too (`"*"`: every namespace, and cluster-wide lists).
    pub fn read_namespace(mut self, namespace: &str) -> Result<Self, GrantError> {
        let valid = namespace == "*"
            || (!namespace.is_empty()
                && namespace.len() <= 63
                && namespace
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !namespace.starts_with('-')
                && !namespace.ends_with('-'));
        if !valid {
            return Err(GrantError::InvalidNamespace(namespace.into()));
        }
        self.read_namespaces.insert(namespace.into());
        Ok(self)
    }

    pub fn allows(&self, capability: Capability) -> bool {
        self.capabilities.contains(&capability)
    }

    pub fn capabilities(&self) -> impl Iterator<Item = Capability> + '_ {
        self.capabilities.iter().copied()
    }

    /// Whether `kube-read` may reach `namespace` (`None`: cluster-scoped or across all namespaces) from a call
    /// on an object in `own`.
    pub fn may_read(&self, own: Option<&str>, namespace: Option<&str>) -> bool {
        if namespace.is_some() && namespace == own {
            return true;
        }
        self.read_namespaces.contains("*")
            || namespace.is_some_and(|ns| self.read_namespaces.contains(ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_capability_round_trips_through_its_name() {
        for c in Capability::ALL {
            assert_eq!(c.name().parse::<Capability>(), Ok(c));
        }
    }

    #[test]
    fn an_unknown_capability_is_refused_with_the_known_ones_listed() {
        let err = Grants::parse(["kube-read", "omnii"]).unwrap_err();
        assert_eq!(err, GrantError::UnknownCapability("omnii".into()));
        assert!(
            err.to_string()
                .contains("known capabilities: kube-read, kube-write"),
            "{err}"
        );
    }

    #[test]
    fn grants_deny_by_default() {
        let grants = Grants::none();
        assert!(Capability::ALL.iter().all(|c| !grants.allows(*c)));
        let grants = Grants::parse(["omni"]).unwrap();
        assert!(grants.allows(Capability::Omni));
        assert!(!grants.allows(Capability::KubeRead));
    }

    #[test]
    fn contract_interfaces_map_to_capabilities() {
        assert_eq!(Capability::guarding("context"), Ok(None));
        assert_eq!(Capability::guarding("types"), Ok(None));
        assert_eq!(Capability::guarding("omni"), Ok(Some(Capability::Omni)));
        assert_eq!(Capability::guarding("clock"), Ok(Some(Capability::Clock)));
        assert_eq!(Capability::guarding("plugin-admin"), Err(()));
    }

    #[test]
    fn reads_stay_in_the_objects_namespace_unless_granted() {
        let grants = Grants::none();
        assert!(grants.may_read(Some("team-a"), Some("team-a")));
        assert!(!grants.may_read(Some("team-a"), Some("team-b")));
        assert!(!grants.may_read(Some("team-a"), None));
        assert!(!grants.may_read(None, None));

        let grants = Grants::none().read_namespace("shared").unwrap();
        assert!(grants.may_read(Some("team-a"), Some("shared")));
        assert!(!grants.may_read(Some("team-a"), Some("team-b")));

        let grants = Grants::none().read_namespace("*").unwrap();
        assert!(grants.may_read(Some("team-a"), Some("team-b")));
        assert!(grants.may_read(Some("team-a"), None));
    }

    #[test]
    fn namespace_grants_are_validated() {
        assert_eq!(
            Grants::none().read_namespace("Team_A"),
            Err(GrantError::InvalidNamespace("Team_A".into()))
        );
        assert!(Grants::none().read_namespace("").is_err());
    }
}
