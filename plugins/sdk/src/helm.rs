//! Helm releases in workload clusters: the SDK's names for the contract's `helm` interface. The plugin reads a
//! release (`Helm::helm_observe`) and decides each action (`Helm::helm_start`); the operator runs it in the
//! background and reports how it ended. No kubeconfig or chart credential ever reaches the plugin.

use serde_json::Value;

use crate::secrets::SecretKeyRef;

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Install,
    Upgrade,
    Uninstall,
    Rollback,
    Test,
    /// A revision left `pending-*` by an action that died was marked `failed` so Helm accepts the next one.
    Recover,
    /// Drifted objects applied again.
    Correct,
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
            Action::Correct => "Correct",
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
    /// What the current revision owns when it is deployed (sorted, hooks left out); None when it is not deployed
    /// or the host could not resolve its objects.
    pub inventory: Option<Vec<OwnedObject>>,
}

/// An object a release owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedObject {
    pub api_version: String,
    pub kind: String,
    /// Empty for a cluster-scoped object.
    pub namespace: String,
    pub name: String,
}

/// A release in a workload cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseRef {
    pub kubeconfig: SecretKeyRef,
    pub name: String,
    /// The release's namespace (also where Helm stores it).
    pub namespace: String,
    /// A ServiceAccount of the release's namespace to impersonate (needs the `helm-impersonate` grant).
    pub service_account: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitReference {
    Branch(String),
    Tag(String),
    Commit(String),
}

/// A chart directory in a Git repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitChart {
    pub url: String,
    pub reference: GitReference,
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChartLocation {
    Repository {
        url: String,
        name: String,
    },
    /// `oci://registry[:port]/path/chart`.
    Oci(String),
    Git(GitChart),
}

/// Where the chart comes from and the Secrets (in the object's namespace) the operator reaches it with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartPull {
    pub location: ChartLocation,
    /// An exact version or a semver range.
    pub version: String,
    /// A Secret with `username` and `password`.
    pub credentials: Option<String>,
    /// A Secret with `ca.crt`, and `tls.crt` plus `tls.key`.
    pub tls: Option<String>,
    /// A Secret whose `*.pub` keys are cosign public keys the OCI chart must be signed by.
    pub verify: Option<String>,
    /// Values files packaged in the chart, merged in order under the values.
    pub values_files: Vec<String>,
    pub ignore_missing_values_files: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValuesKind {
    ConfigMap,
    Secret,
}

/// Values the operator reads from a ConfigMap or Secret in the object's namespace; the plugin never sees them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValuesRef {
    pub kind: ValuesKind,
    pub name: String,
    pub key: String,
    /// A `--set` path for the key's text; None: the key holds YAML merged at the top.
    pub target_path: Option<String>,
    pub optional: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ValuesPart {
    /// A JSON object.
    Inline(Value),
    Referenced(ValuesRef),
}

/// What a revision is made from; values parts merge in order, later over earlier.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseSource {
    pub chart: ChartPull,
    pub values: Vec<ValuesPart>,
    /// `{"postRenderers": [...], "commonMetadata": {...}}` (Flux's fields); None: the manifests as rendered.
    pub post_render: Option<Value>,
}

/// What Helm does with the chart's `crds/` directory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CrdPolicy {
    Skip,
    #[default]
    Create,
    CreateReplace,
}

/// How Helm writes a release's objects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ApplyMethod {
    /// Server-side apply, conflicts forced.
    ServerSide,
    /// Client-side three-way merge patches.
    ClientSide,
    /// Upgrades and rollbacks: as the current revision was applied; installs: server-side.
    #[default]
    Auto,
}

/// An install or upgrade.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplyRequest {
    pub source: ReleaseSource,
    pub options: ActionOptions,
    pub crds: CrdPolicy,
    pub create_namespace: bool,
    pub replace: bool,
    pub force: bool,
    pub cleanup_on_fail: bool,
    /// Helm's `--atomic`.
    pub rollback_on_failure: bool,
    /// 0: every revision kept.
    pub max_history: u32,
    /// With `force`, `ServerSide` is refused and `Auto` means client-side.
    pub apply_method: ApplyMethod,
    /// Adopt existing objects without (or with another release's) Helm ownership metadata.
    pub take_ownership: bool,
    pub skip_schema_validation: bool,
    pub skip_openapi_validation: bool,
    /// Upgrade: merge the values over the current revision's (`--reuse-values`).
    pub reuse_values: bool,
    /// Judged by the host after Helm's wait, when the options wait for resources (Flux's `healthCheckExprs`).
    pub health_checks: Vec<HealthCheck>,
}

/// CEL expressions judging a release's objects of one kind after Helm's wait; empty `in_progress` and `failed`
/// are not given. See the contract's `health-check`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HealthCheck {
    pub api_version: String,
    pub kind: String,
    pub current: String,
    pub in_progress: String,
    pub failed: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RollbackRequest {
    /// 0: the previous revision.
    pub revision: u64,
    pub options: ActionOptions,
    pub force: bool,
    pub cleanup_on_fail: bool,
    pub max_history: u32,
    pub apply_method: ApplyMethod,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DeletionPropagation {
    #[default]
    Background,
    Foreground,
    Orphan,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UninstallRequest {
    pub options: ActionOptions,
    pub keep_history: bool,
    pub propagation: DeletionPropagation,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestFilter {
    pub name: String,
    /// true: every test but this one; false: this one (with the other such filters).
    pub exclude: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestRequest {
    pub timeout_seconds: u32,
    pub filters: Vec<TestFilter>,
}

/// One action the plugin asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Install(Box<ApplyRequest>),
    Upgrade(Box<ApplyRequest>),
    Rollback(RollbackRequest),
    Uninstall(UninstallRequest),
    Test(TestRequest),
    /// Marks a `pending-*` latest revision failed (reported as [`Action::Recover`]).
    Unlock,
    /// Applies the drifted objects again (reported as [`Action::Correct`]).
    CorrectDrift(Vec<DriftIgnore>),
}

/// Which objects a drift ignore rule applies to; an empty field matches anything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DriftTarget {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub name: String,
    pub namespace: String,
    /// A label selector over the object's labels; empty: any.
    pub label_selector: String,
    /// A label selector over the object's annotations; empty: any.
    pub annotation_selector: String,
}

/// JSON pointers left out of the comparison for the objects `target` selects (all when none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DriftIgnore {
    pub paths: Vec<String>,
    pub target: Option<DriftTarget>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriftReason {
    Missing,
    Modified,
}

/// An object of the release that is not as its manifest says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drifted {
    pub api_version: String,
    pub kind: String,
    /// Empty for a cluster-scoped object.
    pub namespace: String,
    pub name: String,
    pub reason: DriftReason,
    /// JSON pointers of the changed fields.
    pub fields: Vec<String>,
}

impl Step {
    /// The action the step is reported as.
    pub fn action(&self) -> Action {
        match self {
            Step::Install(_) => Action::Install,
            Step::Upgrade(_) => Action::Upgrade,
            Step::Rollback(_) => Action::Rollback,
            Step::Uninstall(_) => Action::Uninstall,
            Step::Test(_) => Action::Test,
            Step::Unlock => Action::Recover,
            Step::CorrectDrift(_) => Action::Correct,
        }
    }
}

/// A test hook of the current revision and its last run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestHook {
    pub name: String,
    /// `Succeeded`, `Failed`, `Running` or `Unknown`.
    pub phase: String,
    /// RFC 3339; empty when it never ran.
    pub started: String,
    pub completed: String,
}

/// An action the operator runs or ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRecord {
    /// Unique across operator restarts.
    pub id: String,
    pub action: Action,
    /// The digest of the source it ran for (empty for uninstall, unlock and test).
    pub digest: String,
    pub started: String,
    /// Empty while it runs.
    pub finished: String,
    pub revision: u64,
    pub error: Option<String>,
    /// It ended because [`crate::Helm::helm_cancel`] stopped it: no failure of the release.
    pub cancelled: bool,
}

/// A release, what the operator runs or ran for it, and what a source would make.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observation {
    pub release: Option<ReleaseState>,
    /// The current revision's test hooks.
    pub tests: Vec<TestHook>,
    pub running: Option<StepRecord>,
    pub last: Option<StepRecord>,
    /// The digest of the source asked about; empty when none was.
    pub wanted: String,
    /// The chart version the source resolves to.
    pub chart_version: String,
}
