//! Grants: what a plugin's configuration lets it touch. Deny by default.
//!
//! A grant is one string, as an operator admin writes it (`--grant NAME=GRANT,GRANT`):
//!
//! | grant | gives |
//! |---|---|
//! | `kube-read`, `kube-write`, `secrets`, `omni`, `workload`, `helm`, `files`, `clock` | the contract interface of that name (imports are checked against these at load) |
//! | `secrets-read-values`, `secrets-write` | finer grants inside `secrets` (and the Secret writes of `omni`) |
//! | `helm-take-ownership` | a finer grant inside `helm`: installs and upgrades that adopt existing objects, including another release's (Helm's `--take-ownership`) |
//! | `helm-impersonate` | a finer grant inside `helm`: acting on a release as a ServiceAccount of its namespace the release names (Flux's `serviceAccountName`) |
//! | `kube-read:GROUP/KIND` | `kube-read` of that namespaced kind (`core/ConfigMap`; `GROUP/*` or `*`: every kind of a group, or every kind) |
//! | `kube-read-cluster:GROUP/KIND` | `kube-read` of that cluster-scoped kind (Namespaces, CRDs, ClusterRoles: never by a namespaced grant) |
//! | `namespace:NS` | `kube-read` in namespace NS besides the reconciled object's own (`namespace:*`: every namespace) |
//! | `secrets-namespace:NS` | Secrets named by the reconciled object in namespace NS besides its own (`*`: any) |
//! | `kube-write:GROUP/VERSION/KIND` | `kube-write` of that one namespaced kind (`apps/v1/Deployment`); never a pattern |
//! | `kube-write-cluster:GROUP/VERSION/KIND` | `kube-write` of that one cluster-scoped kind |
//! | `kube-write-namespace:NS` | `kube-write` in namespace NS besides the reconciled object's own (`*`: any) |
//! | `kube-write-allow:PERMIT` | what writes are otherwise refused: `force` (apply taking fields from another manager), and for Pods and pod templates `privileged`, `host-path`, `host-namespaces` |
//! | `kube-write-service-account:NAME` | Pods and pod templates may run as ServiceAccount NAME besides `default` (`*`: any) |
//!
//! Some kinds no `kube-write` grant can name, whatever an administrator writes (RBAC, admission, API
//! registration, the plugin platform's kinds, Nodes, ServiceAccounts): see `write_kinds`. A Secret needs
//! `secrets-write` besides its kind's grant, and is never of type `kubernetes.io/service-account-token`.
//!
//! Secrets are never readable through `kube-read`, whatever the grant: no pattern matches them and
//! `kube-read:core/Secret` is refused. Reads never authorise writes: writes are grants of their own.

use std::collections::BTreeSet;

use super::write_kinds::{WriteKind, WriteKindError, WritePermit, never_writable};
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
    /// Writing and deleting Secrets host to host (`secrets.delete-owned`, `omni.export-kubeconfig`).
    SecretsWrite,
    Omni,
    Workload,
    Helm,
    /// Helm actions that adopt existing objects the release does not own, another release's included (Helm's
    /// `--take-ownership`): without it a release can only create objects or change its own.
    HelmTakeOwnership,
    /// Releases acted on as a ServiceAccount of their namespace in the workload cluster (impersonation): which
    /// account is the plugin's choice, so choosing is granted; the kubeconfig's identity may impersonate more than
    /// it may do itself.
    HelmImpersonate,
    /// Reading files under the template roots the operator admin allows (`HostServices::with_template_roots`); the
    /// grant gives no other filesystem access, and with no roots configured it reads nothing.
    Files,
    /// The current time, through `clock.now` and WASI's clocks. Without it a plugin's clocks stand still.
    Clock,
}

impl Capability {
    pub const ALL: [Capability; 12] = [
        Capability::KubeRead,
        Capability::KubeWrite,
        Capability::Secrets,
        Capability::SecretsReadValues,
        Capability::SecretsWrite,
        Capability::Omni,
        Capability::Workload,
        Capability::Helm,
        Capability::HelmTakeOwnership,
        Capability::HelmImpersonate,
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
            Capability::HelmTakeOwnership => "helm-take-ownership",
            Capability::HelmImpersonate => "helm-impersonate",
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
    #[error(
        "unknown grant {0:?}; known capabilities: {known}, and the scoped forms kube-read:GROUP/KIND, \
         kube-read-cluster:GROUP/KIND, kube-write:GROUP/VERSION/KIND, kube-write-cluster:GROUP/VERSION/KIND, \
         kube-write-namespace:NS, kube-write-allow:PERMIT, kube-write-service-account:NAME, namespace:NS, \
         secrets-namespace:NS",
        known = known_names()
    )]
    UnknownCapability(String),
    #[error(
        "invalid namespace {0:?} in a grant: use a namespace name (lowercase letters, digits and '-', at most 63) \
         or \"*\" for every namespace"
    )]
    InvalidNamespace(String),
    #[error(
        "invalid kind {0:?} in a kube-read grant: write GROUP/KIND (`core/ConfigMap`, \
         `omni.texashpc.com/OmniCluster`), GROUP/* or *"
    )]
    InvalidKind(String),
    #[error(
        "{0:?} would let a plugin read Secrets through kube-read, which no grant allows: grant `secrets` and name \
         the Secrets in the object instead"
    )]
    SecretsNotReadable(String),
    #[error(transparent)]
    Write(#[from] WriteKindError),
}

fn known_names() -> String {
    Capability::ALL
        .iter()
        .map(|c| c.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A kind `kube-read` may reach: one kind, every kind of a group, or every kind.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KindPattern {
    /// `None`: any group.
    group: Option<String>,
    /// `None`: any kind.
    kind: Option<String>,
}

impl KindPattern {
    /// Parses `GROUP/KIND`, `GROUP/*` or `*`; the core group is `core` (or empty).
    fn parse(text: &str) -> Result<Self, GrantError> {
        let invalid = || GrantError::InvalidKind(text.into());
        if text == "*" {
            return Ok(KindPattern {
                group: None,
                kind: None,
            });
        }
        let (group, kind) = text.split_once('/').ok_or_else(invalid)?;
        let group = if group == "core" { "" } else { group };
        let valid_group = group
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
        let valid_kind =
            kind == "*" || (!kind.is_empty() && kind.bytes().all(|b| b.is_ascii_alphanumeric()));
        if group == "*" || !valid_group || !valid_kind {
            return Err(invalid());
        }
        if group.is_empty() && kind == "Secret" {
            return Err(GrantError::SecretsNotReadable(text.into()));
        }
        Ok(KindPattern {
            group: Some(group.into()),
            kind: (kind != "*").then(|| kind.into()),
        })
    }

    fn matches(&self, group: &str, kind: &str) -> bool {
        self.group.as_deref().is_none_or(|g| g == group)
            && self.kind.as_deref().is_none_or(|k| k == kind)
    }

    /// The kinds both patterns reach, if any: `*` ∩ p = p, `g/*` ∩ `g/K` = `g/K`, different groups or kinds
    /// reach nothing in common.
    fn meet(&self, other: &KindPattern) -> Option<KindPattern> {
        fn one(a: &Option<String>, b: &Option<String>) -> Option<Option<String>> {
            match (a, b) {
                (None, x) | (x, None) => Some(x.clone()),
                (Some(x), Some(y)) => (x == y).then(|| Some(x.clone())),
            }
        }
        let group = one(&self.group, &other.group)?;
        let kind = one(&self.kind, &other.kind)?;
        // `*/Kind` is not a form a grant can be written in; a group-less pattern with a kind never arises,
        // because a pattern with a kind always names its group.
        Some(KindPattern { group, kind })
    }
}

/// The patterns both sets reach.
fn meet_patterns(a: &BTreeSet<KindPattern>, b: &BTreeSet<KindPattern>) -> BTreeSet<KindPattern> {
    a.iter()
        .flat_map(|x| b.iter().filter_map(move |y| x.meet(y)))
        .collect()
}

/// The namespaces both sets reach (`*` is every namespace).
fn meet_namespaces(a: &BTreeSet<String>, b: &BTreeSet<String>) -> BTreeSet<String> {
    match (a.contains("*"), b.contains("*")) {
        (true, _) => b.clone(),
        (_, true) => a.clone(),
        _ => a.intersection(b).cloned().collect(),
    }
}

impl fmt::Display for KindPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.group, &self.kind) {
            (None, _) => f.write_str("*"),
            (Some(g), k) => {
                let g = if g.is_empty() { "core" } else { g };
                write!(f, "{g}/{}", k.as_deref().unwrap_or("*"))
            }
        }
    }
}

/// Whether `group`/`kind` is a Secret, which `kube-read` never returns. Kinds are case-sensitive in the
/// Kubernetes API, and the host compares the kind discovery resolved, never the plugin's spelling.
pub fn is_secret(group: &str, kind: &str) -> bool {
    group.is_empty() && kind == "Secret"
}

/// What one plugin may do. Empty by default: a plugin with no grants can only use its call context.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    capabilities: BTreeSet<Capability>,
    /// Namespaced kinds `kube-read` may reach.
    read_kinds: BTreeSet<KindPattern>,
    /// Cluster-scoped kinds `kube-read` may reach.
    cluster_kinds: BTreeSet<KindPattern>,
    /// Namespaces `kube-read` may reach besides the reconciled object's own; `"*"` means all of them.
    read_namespaces: BTreeSet<String>,
    /// Namespaces whose Secrets (named by the object) the plugin may reach besides the object's own.
    secret_namespaces: BTreeSet<String>,
    /// Namespaced kinds `kube-write` may write, each exactly.
    write_kinds: BTreeSet<WriteKind>,
    /// Cluster-scoped kinds `kube-write` may write, each exactly.
    cluster_write_kinds: BTreeSet<WriteKind>,
    /// Namespaces `kube-write` may write in besides the reconciled object's own; `"*"` means all of them.
    write_namespaces: BTreeSet<String>,
    /// What writes may do that is otherwise refused.
    write_permits: BTreeSet<WritePermit>,
    /// ServiceAccounts besides `default` that written Pods may run as; `"*"` means any.
    write_service_accounts: BTreeSet<String>,
}

impl Grants {
    /// No capabilities at all.
    pub fn none() -> Self {
        Grants::default()
    }

    /// Grants as an operator admin spells them (see the module documentation).
    pub fn parse<I, S>(grants: I) -> Result<Self, GrantError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        grants
            .into_iter()
            .try_fold(Grants::none(), |g, text| g.grant(text.as_ref().trim()))
    }

    /// Adds one grant string.
    pub fn grant(self, text: &str) -> Result<Self, GrantError> {
        let Some((scope, value)) = text.split_once(':') else {
            return Ok(self.with(text.parse()?));
        };
        match scope {
            "kube-read" => self.read_kind_pattern(value),
            "kube-read-cluster" => {
                let mut g = self.with(Capability::KubeRead);
                g.cluster_kinds.insert(KindPattern::parse(value)?);
                Ok(g)
            }
            "kube-write" => {
                let mut g = self.with(Capability::KubeWrite);
                g.write_kinds.insert(WriteKind::parse(value)?);
                Ok(g)
            }
            "kube-write-cluster" => {
                let mut g = self.with(Capability::KubeWrite);
                g.cluster_write_kinds.insert(WriteKind::parse(value)?);
                Ok(g)
            }
            "kube-write-namespace" => {
                let mut g = self;
                g.write_namespaces.insert(valid_namespace(value)?);
                Ok(g)
            }
            "kube-write-allow" => {
                let mut g = self;
                g.write_permits.insert(WritePermit::parse(value)?);
                Ok(g)
            }
            "kube-write-service-account" => {
                let mut g = self;
                g.write_service_accounts
                    .insert(valid_service_account(value)?);
                Ok(g)
            }
            "namespace" => self.read_namespace(value),
            "secrets-namespace" => self.secret_namespace(value),
            _ => Err(GrantError::UnknownCapability(text.into())),
        }
    }

    pub fn with(mut self, capability: Capability) -> Self {
        self.capabilities.insert(capability);
        self
    }

    /// Lets `kube-read` reach namespaced objects of `GROUP/KIND` (`core/ConfigMap`, `GROUP/*`, `*`).
    pub fn read_kind_pattern(self, pattern: &str) -> Result<Self, GrantError> {
        let mut g = self.with(Capability::KubeRead);
        g.read_kinds.insert(KindPattern::parse(pattern)?);
        Ok(g)
    }

    /// Lets `kube-read` reach namespaced objects of one kind; `group` is empty for the core group.
    pub fn read_kind(self, group: &str, kind: &str) -> Result<Self, GrantError> {
        let group = if group.is_empty() { "core" } else { group };
        self.read_kind_pattern(&format!("{group}/{kind}"))
    }

    /// Lets `kube-read` reach `namespace` too (`"*"`: every namespace, and cluster-wide lists).
    pub fn read_namespace(mut self, namespace: &str) -> Result<Self, GrantError> {
        self.read_namespaces.insert(valid_namespace(namespace)?);
        Ok(self)
    }

    /// Lets `secrets`, `workload` and `omni.export-kubeconfig` reach Secrets the object names in `namespace`
    /// (`"*"`: any namespace).
    pub fn secret_namespace(mut self, namespace: &str) -> Result<Self, GrantError> {
        self.secret_namespaces.insert(valid_namespace(namespace)?);
        Ok(self)
    }

    pub fn allows(&self, capability: Capability) -> bool {
        self.capabilities.contains(&capability)
    }

    pub fn capabilities(&self) -> impl Iterator<Item = Capability> + '_ {
        self.capabilities.iter().copied()
    }

    /// Whether `kube-read` may reach objects of this kind, as discovery resolved it. Never a Secret.
    pub fn may_read_kind(&self, group: &str, kind: &str, namespaced: bool) -> bool {
        if is_secret(group, kind) || !self.allows(Capability::KubeRead) {
            return false;
        }
        let patterns = if namespaced {
            &self.read_kinds
        } else {
            &self.cluster_kinds
        };
        patterns.iter().any(|p| p.matches(group, kind))
    }

    /// Whether `kube-write` may write objects of this kind, as discovery resolved it: granted exactly, and never
    /// one of the kinds no grant reaches (checked again here, whatever the grants say).
    pub fn may_write_kind(&self, group: &str, version: &str, kind: &str, namespaced: bool) -> bool {
        if never_writable(group, kind).is_some() || !self.allows(Capability::KubeWrite) {
            return false;
        }
        let kinds = if namespaced {
            &self.write_kinds
        } else {
            &self.cluster_write_kinds
        };
        kinds.iter().any(|k| k.matches(group, version, kind))
    }

    /// Whether `kube-write` may write in `namespace` from a call on an object in `own`.
    pub fn may_write_in(&self, own: Option<&str>, namespace: &str) -> bool {
        in_scope(&self.write_namespaces, own, Some(namespace))
    }

    /// Whether writes may do what `permit` names.
    pub fn permits(&self, permit: WritePermit) -> bool {
        self.write_permits.contains(&permit)
    }

    /// Whether written Pods may run as ServiceAccount `name` (`default`, or an empty name, always).
    pub fn may_run_as(&self, name: &str) -> bool {
        name.is_empty()
            || name == "default"
            || self.write_service_accounts.contains("*")
            || self.write_service_accounts.contains(name)
    }

    /// Whether `kube-read` may reach `namespace` (`None`: across all namespaces) from a call on an object in
    /// `own`.
    pub fn may_read(&self, own: Option<&str>, namespace: Option<&str>) -> bool {
        in_scope(&self.read_namespaces, own, namespace)
    }

    /// Whether a Secret the object names in `namespace` is in reach from a call on an object in `own`.
    pub fn may_reach_secrets_in(&self, own: Option<&str>, namespace: &str) -> bool {
        in_scope(&self.secret_namespaces, own, Some(namespace))
    }

    /// What both grant sets allow: the effective grants of a plugin binding are what the component requests
    /// ∩ the Plugin's ceiling ∩ the binding's grants. Each part meets separately, so the result never allows
    /// anything one side does not (a kind pattern narrows to the more specific, `*` namespaces to the named).
    pub fn intersect(&self, other: &Grants) -> Grants {
        Grants {
            capabilities: self
                .capabilities
                .intersection(&other.capabilities)
                .copied()
                .collect(),
            read_kinds: meet_patterns(&self.read_kinds, &other.read_kinds),
            cluster_kinds: meet_patterns(&self.cluster_kinds, &other.cluster_kinds),
            read_namespaces: meet_namespaces(&self.read_namespaces, &other.read_namespaces),
            secret_namespaces: meet_namespaces(&self.secret_namespaces, &other.secret_namespaces),
            write_kinds: self
                .write_kinds
                .intersection(&other.write_kinds)
                .cloned()
                .collect(),
            cluster_write_kinds: self
                .cluster_write_kinds
                .intersection(&other.cluster_write_kinds)
                .cloned()
                .collect(),
            write_namespaces: meet_namespaces(&self.write_namespaces, &other.write_namespaces),
            write_permits: self
                .write_permits
                .intersection(&other.write_permits)
                .copied()
                .collect(),
            write_service_accounts: meet_namespaces(
                &self.write_service_accounts,
                &other.write_service_accounts,
            ),
        }
    }

    /// Every grant, spelled as [`Grants::parse`] takes it: for messages, `plugin inspect` and the docs.
    pub fn describe(&self) -> Vec<String> {
        let mut out: Vec<String> = self.capabilities.iter().map(|c| c.name().into()).collect();
        out.extend(self.read_kinds.iter().map(|k| format!("kube-read:{k}")));
        out.extend(
            self.cluster_kinds
                .iter()
                .map(|k| format!("kube-read-cluster:{k}")),
        );
        out.extend(
            self.read_namespaces
                .iter()
                .map(|n| format!("namespace:{n}")),
        );
        out.extend(
            self.secret_namespaces
                .iter()
                .map(|n| format!("secrets-namespace:{n}")),
        );
        out.extend(self.write_kinds.iter().map(|k| format!("kube-write:{k}")));
        out.extend(
            self.cluster_write_kinds
                .iter()
                .map(|k| format!("kube-write-cluster:{k}")),
        );
        out.extend(
            self.write_namespaces
                .iter()
                .map(|n| format!("kube-write-namespace:{n}")),
        );
        out.extend(
            self.write_permits
                .iter()
                .map(|p| format!("kube-write-allow:{p}")),
        );
        out.extend(
            self.write_service_accounts
                .iter()
                .map(|n| format!("kube-write-service-account:{n}")),
        );
        out
    }
}

fn in_scope(granted: &BTreeSet<String>, own: Option<&str>, namespace: Option<&str>) -> bool {
    if namespace.is_some() && namespace == own {
        return true;
    }
    granted.contains("*") || namespace.is_some_and(|ns| granted.contains(ns))
}

/// A ServiceAccount name (a DNS subdomain) or `*`.
fn valid_service_account(name: &str) -> Result<String, GrantError> {
    let valid = name == "*"
        || (!name.is_empty()
            && name.len() <= 253
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
            && name.starts_with(|c: char| c.is_ascii_alphanumeric())
            && name.ends_with(|c: char| c.is_ascii_alphanumeric()));
    if valid {
        Ok(name.into())
    } else {
        Err(WriteKindError::InvalidServiceAccount(name.into()).into())
    }
}

/// An RFC 1123 label, what a namespace name must be: lower-case letters, digits and '-', starting and ending
/// with a letter or digit, at most 63 characters.
pub fn is_dns_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

fn valid_namespace(namespace: &str) -> Result<String, GrantError> {
    if namespace == "*" || is_dns_label(namespace) {
        Ok(namespace.into())
    } else {
        Err(GrantError::InvalidNamespace(namespace.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_write_is_granted_one_exact_kind_at_a_time_and_meets_the_ceiling() {
        let grants = Grants::parse([
            "kube-write:apps/v1/Deployment",
            "kube-write:core/v1/ConfigMap",
            "kube-write-cluster:example.com/v1/Widget",
        ])
        .expect("grants");
        assert!(grants.allows(Capability::KubeWrite));
        assert!(grants.may_write_kind("apps", "v1", "Deployment", true));
        assert!(grants.may_write_kind("", "v1", "ConfigMap", true));
        // Namespaced and cluster-scoped grants do not stand in for each other, nor one version for another.
        assert!(!grants.may_write_kind("apps", "v1", "Deployment", false));
        assert!(!grants.may_write_kind("example.com", "v1", "Widget", true));
        assert!(grants.may_write_kind("example.com", "v1", "Widget", false));
        assert!(!grants.may_write_kind("apps", "v1beta2", "Deployment", true));
        assert!(!grants.may_write_kind("apps", "v1", "StatefulSet", true));
        // Reads do not authorise writes, and writes do not authorise reads.
        assert!(!grants.may_read_kind("apps", "Deployment", true));
        let reader = Grants::parse(["kube-read:apps/Deployment"]).expect("grants");
        assert!(!reader.may_write_kind("apps", "v1", "Deployment", true));
        // Spelled back as parsed; the effective grants are what both sides allow.
        assert_eq!(Grants::parse(grants.describe()), Ok(grants.clone()));
        let ceiling = Grants::parse(["kube-write:apps/v1/Deployment"]).expect("grants");
        let effective = grants.intersect(&ceiling);
        assert!(effective.may_write_kind("apps", "v1", "Deployment", true));
        assert!(!effective.may_write_kind("", "v1", "ConfigMap", true));
        assert!(!effective.may_write_kind("example.com", "v1", "Widget", false));
        // The kinds no grant reaches are refused at parse, naming why.
        let refused =
            Grants::parse(["kube-write-cluster:rbac.authorization.k8s.io/v1/ClusterRoleBinding"])
                .expect_err("RBAC");
        assert!(refused.to_string().contains("RBAC"), "{refused}");
        assert!(Grants::parse(["kube-write:apps/*"]).is_err());
    }

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
        assert!(Grants::parse(["kube-write:core/ConfigMap"]).is_err());
    }

    /// Whether `g` reads `group/kind` in namespace `ns` from an object in `own`.
    fn reads(g: &Grants, group: &str, kind: &str, own: &str, ns: &str) -> bool {
        g.may_read_kind(group, kind, true) && g.may_read(Some(own), Some(ns))
    }

    #[test]
    fn an_intersection_allows_only_what_both_sides_allow() {
        let requested = Grants::parse([
            "kube-read:core/*",
            "kube-read:omni.texashpc.com/OmniCluster",
            "helm",
            "secrets",
            "namespace:*",
        ])
        .unwrap();
        let ceiling = Grants::parse([
            "kube-read:*",
            "secrets",
            "namespace:shared",
            "namespace:tools",
        ])
        .unwrap();
        let binding = Grants::parse([
            "kube-read:core/ConfigMap",
            "kube-read:apps/Deployment",
            "secrets",
            "helm",
            "namespace:shared",
        ])
        .unwrap();
        let effective = requested.intersect(&ceiling).intersect(&binding);
        assert_eq!(
            effective.describe(),
            [
                "kube-read",
                "secrets",
                "kube-read:core/ConfigMap",
                "namespace:shared"
            ]
        );
        // helm: requested and bound, but over the ceiling.
        assert!(!effective.allows(Capability::Helm));
        // apps/Deployment: bound and under the ceiling, but never requested.
        assert!(!reads(&effective, "apps", "Deployment", "a", "a"));
        assert!(reads(&effective, "", "ConfigMap", "a", "shared"));
        assert!(!reads(&effective, "", "ConfigMap", "a", "tools"));
        // Intersection is symmetric and idempotent, and meeting nothing gives nothing.
        assert_eq!(
            binding.intersect(&ceiling).intersect(&requested).describe(),
            effective.describe()
        );
        assert_eq!(
            effective.intersect(&effective).describe(),
            effective.describe()
        );
        assert!(effective.intersect(&Grants::none()).describe().is_empty());
    }

    #[test]
    fn kind_patterns_meet_at_the_narrower() {
        let meet = |a: &str, b: &str| {
            let a = Grants::parse([format!("kube-read:{a}")]).unwrap();
            let b = Grants::parse([format!("kube-read:{b}")]).unwrap();
            a.intersect(&b).describe()
        };
        assert_eq!(
            meet("*", "apps/Deployment"),
            ["kube-read", "kube-read:apps/Deployment"]
        );
        assert_eq!(
            meet("apps/*", "apps/Deployment"),
            ["kube-read", "kube-read:apps/Deployment"]
        );
        assert_eq!(meet("apps/*", "apps/*"), ["kube-read", "kube-read:apps/*"]);
        assert_eq!(meet("apps/*", "core/*"), ["kube-read"]);
        assert_eq!(meet("apps/Deployment", "apps/StatefulSet"), ["kube-read"]);
        // Cluster-scoped kinds meet only cluster-scoped grants.
        let cluster = Grants::parse(["kube-read-cluster:core/Namespace"]).unwrap();
        let namespaced = Grants::parse(["kube-read:*"]).unwrap();
        assert!(
            !cluster
                .intersect(&namespaced)
                .may_read_kind("", "Namespace", false)
        );
        assert!(
            cluster
                .intersect(&cluster)
                .may_read_kind("", "Namespace", false)
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
    fn kube_read_reaches_only_the_kinds_it_names() {
        let grants = Grants::parse(["kube-read:omni.texashpc.com/OmniCluster"]).unwrap();
        assert!(grants.allows(Capability::KubeRead));
        assert!(grants.may_read_kind("omni.texashpc.com", "OmniCluster", true));
        assert!(!grants.may_read_kind("omni.texashpc.com", "OmniConnection", true));
        assert!(!grants.may_read_kind("", "ConfigMap", true));
        // The interface alone reaches no kind at all.
        let bare = Grants::parse(["kube-read"]).unwrap();
        assert!(!bare.may_read_kind("", "ConfigMap", true));
    }

    #[test]
    fn no_grant_ever_reaches_secrets_through_kube_read() {
        let everything =
            Grants::parse(["kube-read:*", "kube-read:core/*", "kube-read-cluster:*"]).unwrap();
        assert!(everything.may_read_kind("", "ConfigMap", true));
        assert!(!everything.may_read_kind("", "Secret", true));
        assert!(!everything.may_read_kind("", "Secret", false));
        for spelled in [
            "kube-read:core/Secret",
            "kube-read:/Secret",
            "kube-read-cluster:core/Secret",
        ] {
            assert_eq!(
                Grants::parse([spelled]),
                Err(GrantError::SecretsNotReadable(
                    spelled.split_once(':').unwrap().1.into()
                )),
                "{spelled}"
            );
        }
    }

    #[test]
    fn cluster_scoped_kinds_need_their_own_grant() {
        let namespaced = Grants::parse(["kube-read:*", "namespace:*"]).unwrap();
        assert!(!namespaced.may_read_kind("", "Namespace", false));
        assert!(!namespaced.may_read_kind(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            false
        ));
        let cluster = Grants::parse(["kube-read-cluster:core/Namespace"]).unwrap();
        assert!(cluster.may_read_kind("", "Namespace", false));
        assert!(!cluster.may_read_kind("", "Namespace", true));
        assert!(!cluster.may_read_kind("rbac.authorization.k8s.io", "ClusterRole", false));
    }

    #[test]
    fn malformed_kinds_are_refused() {
        for bad in [
            "kube-read:OmniCluster",
            "kube-read:*/OmniCluster",
            "kube-read:g/",
            "kube-read:G/K",
        ] {
            assert!(
                matches!(Grants::parse([bad]), Err(GrantError::InvalidKind(_))),
                "{bad}"
            );
        }
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
    fn secret_namespaces_are_a_grant_of_their_own() {
        let reads = Grants::parse(["namespace:*"]).unwrap();
        assert!(reads.may_reach_secrets_in(Some("a"), "a"));
        assert!(!reads.may_reach_secrets_in(Some("a"), "b"));
        let secrets = Grants::parse(["secrets-namespace:b"]).unwrap();
        assert!(secrets.may_reach_secrets_in(Some("a"), "b"));
        assert!(!secrets.may_read(Some("a"), Some("b")));
    }

    #[test]
    fn namespace_grants_are_validated() {
        assert_eq!(
            Grants::none().read_namespace("Team_A"),
            Err(GrantError::InvalidNamespace("Team_A".into()))
        );
        assert!(Grants::none().read_namespace("").is_err());
        assert!(Grants::parse(["secrets-namespace:-x"]).is_err());
    }

    #[test]
    fn grants_describe_themselves_as_they_parse() {
        let text = [
            "clock",
            "kube-read",
            "kube-read:core/ConfigMap",
            "kube-read:omni.texashpc.com/*",
            "kube-read-cluster:core/Namespace",
            "namespace:shared",
            "secrets-namespace:*",
        ];
        let grants = Grants::parse(text).unwrap();
        assert_eq!(Grants::parse(grants.describe()).unwrap(), grants);
    }
}
