//! Helm releases in workload clusters: the SDK's names for the contract's `helm` interface. The plugin states
//! the release it wants; the operator runs Helm in the background and reports where the release stands. No
//! kubeconfig or chart credential ever reaches the plugin.

use serde_json::Value;

use crate::secrets::SecretKeyRef;

/// Where a chart comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChartSource {
    /// An HTTP(S) chart repository (Helm reads its `index.yaml`) and the chart's name in it.
    Repository { url: String, name: String },
    /// A full OCI reference, `oci://registry[:port]/path/chart`.
    Oci(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chart {
    pub source: ChartSource,
    /// An exact version or a Helm version constraint.
    pub version: String,
}

/// What Helm waits for after applying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitStrategy {
    /// Hooks only (Helm's default).
    Hooks,
    /// Every resource ready, as kstatus judges it (`--wait`).
    Ready,
}

/// Settings every action shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActionOptions {
    pub timeout_seconds: u32,
    pub wait: WaitStrategy,
    pub wait_for_jobs: bool,
    pub disable_hooks: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InstallOptions {
    pub create_namespace: bool,
    pub skip_crds: bool,
    /// A failed install is uninstalled (Helm's `--atomic`).
    pub rollback_on_failure: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UpgradeOptions {
    pub skip_crds: bool,
    /// A failed upgrade is rolled back (Helm's `--atomic`).
    pub rollback_on_failure: bool,
    pub cleanup_on_fail: bool,
    /// Revisions kept; 0: all of them.
    pub max_history: u32,
}

/// The release a plugin wants.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseSpec {
    pub kubeconfig: SecretKeyRef,
    pub name: String,
    /// The release's namespace in the workload cluster.
    pub namespace: String,
    pub chart: Chart,
    /// A JSON object.
    pub values: Value,
    pub options: ActionOptions,
    pub install: InstallOptions,
    pub upgrade: UpgradeOptions,
}

/// A release to remove.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UninstallSpec {
    pub kubeconfig: SecretKeyRef,
    pub name: String,
    pub namespace: String,
    pub options: ActionOptions,
    pub keep_history: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Install,
    Upgrade,
    Uninstall,
    Rollback,
    Test,
    /// A revision left `pending-*` by an action that died was marked `failed` so Helm accepts the next one.
    Recover,
}

impl Action {
    /// The action's name as the Go operator's status spells it (`lastAction`): `Install`, `Upgrade`, …
    pub fn name(self) -> &'static str {
        match self {
            Action::Install => "Install",
            Action::Upgrade => "Upgrade",
            Action::Uninstall => "Uninstall",
            Action::Rollback => "Rollback",
            Action::Test => "Test",
            Action::Recover => "Recover",
        }
    }
}

/// One revision of a release, as Helm stores it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Revision {
    pub revision: u64,
    /// Helm's status: `deployed`, `failed`, `superseded`, `pending-install`, …
    pub status: String,
    pub chart: String,
    pub chart_version: String,
    pub app_version: String,
    /// RFC 3339; empty when unknown.
    pub updated: String,
    pub description: String,
    /// The operator's digest of the chart and values this revision was made from; None when someone else made it.
    pub digest: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReleaseState {
    pub current: Revision,
    /// Earlier revisions, newest first (at most ten): revision, status and digest only.
    pub history: Vec<Revision>,
}

/// The end of an action the operator ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionOutcome {
    pub action: Action,
    pub revision: u64,
    /// None: it succeeded.
    pub error: Option<String>,
    /// RFC 3339.
    pub finished: String,
    /// The digest it ran for.
    pub digest: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// As wanted, nothing running.
    Idle,
    /// An action runs in the background; the object is called again when it ends.
    Running(Action),
    /// The last action for what is wanted failed; retried on the first call after this many milliseconds, or at
    /// once when what is wanted changes.
    RetryAfter(u64),
}

/// Where a release stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseReport {
    pub release: Option<ReleaseState>,
    pub progress: Progress,
    pub last: Option<ActionOutcome>,
    /// The digest of what was asked (empty for uninstall and status).
    pub wanted: String,
}

impl ReleaseReport {
    /// The last action, when it ran for what is wanted now.
    pub fn last_for_wanted(&self) -> Option<&ActionOutcome> {
        self.last.as_ref().filter(|l| l.digest == self.wanted)
    }
}
