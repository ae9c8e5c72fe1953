//! OmniHelmRelease's per-action configuration, remediation and tests: additions to the Go operator's API with
//! Flux helm-controller's names and meanings (`helm.toolkit.fluxcd.io/v2` `install`, `upgrade`, `test`,
//! `rollback`, `uninstall`), so Flux users recognise them. Every field is optional; an object without them
//! behaves as the Go operator's did (failed actions retried with a growing delay, for ever).

use serde::{Deserialize, Serialize};

/// How a failed install or upgrade is handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum HelmActionStrategyName {
    /// Remediate (uninstall a failed install; roll back or uninstall a failed upgrade), then retry while the
    /// remediation's retries last.
    RemediateOnFailure,
    /// Retry the action after `retryInterval`, without remediation, for ever.
    RetryOnFailure,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HelmActionStrategy {
    /// name: RemediateOnFailure (the default with a remediation block) or RetryOnFailure.
    pub name: Option<HelmActionStrategyName>,
    /// retryInterval is the wait before a RetryOnFailure retry, as a Go duration; 5m when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_interval: Option<String>,
}

/// What Helm does with the chart's `crds/` directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum HelmCrdPolicy {
    Skip,
    Create,
    CreateReplace,
}

/// How a failed upgrade is remediated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum HelmRemediationStrategy {
    Rollback,
    Uninstall,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HelmRemediation {
    /// retries is how many times a failed action is retried after remediation; negative: without limit; 0
    /// when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(schema_with = "crate::field_schemas::integer")
    )]
    pub retries: Option<i64>,
    /// ignoreTestFailures keeps failed Helm tests from counting as failures of the action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_test_failures: Option<bool>,
    /// remediateLastFailure remediates the failure that exhausts the retries too; for upgrades it defaults to
    /// true when retries is not 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediate_last_failure: Option<bool>,
    /// strategy (upgrades only) is how a failed upgrade is remediated; rollback when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<HelmRemediationStrategy>,
}

/// Settings every action block shares.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HelmActionCommon {
    /// timeout bounds this action as a Go duration; spec.timeout when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// disableHooks keeps Helm hooks from running for this action; spec.disableHooks when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_hooks: Option<bool>,
    /// disableWait: Helm waits for hooks only; when omitted, spec.wait decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_wait: Option<bool>,
    /// disableWaitForJobs: Helm's wait ignores Jobs; when omitted, spec.waitForJobs decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_wait_for_jobs: Option<bool>,
}

/// What installs and upgrades check first, and whether they adopt objects that exist already.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HelmApplyChecks {
    /// disableSchemaValidation skips checking the values against the chart's values.schema.json.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_schema_validation: Option<bool>,
    /// disableOpenAPIValidation skips checking the rendered manifests against the cluster's OpenAPI schema.
    #[serde(
        rename = "disableOpenAPIValidation",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub disable_open_api_validation: Option<bool>,
    /// disableTakeOwnership: false lets Helm adopt existing objects that another release or a person made
    /// (the operator's plugin needs the helm-take-ownership grant). When omitted objects are not adopted, as
    /// with the Go operator and Helm's CLI (Flux adopts by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_take_ownership: Option<bool>,
}

/// How upgrades and rollbacks write the release's objects (Flux's serverSideApply).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum HelmServerSideApply {
    /// Server-side apply.
    Enabled,
    /// Client-side three-way merge patches.
    Disabled,
    /// As the release's current revision was applied.
    Auto,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HelmInstallSpec {
    #[serde(flatten)]
    pub common: HelmActionCommon,
    #[serde(flatten)]
    pub checks: HelmApplyChecks,
    /// serverSideApply: false installs with client-side patches; server-side apply when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_side_apply: Option<bool>,
    /// crds: Skip, Create (Helm's own behaviour) or CreateReplace; spec.skipCRDs decides when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crds: Option<HelmCrdPolicy>,
    /// createNamespace lets Helm create the release namespace; spec.createNamespace when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_namespace: Option<bool>,
    /// replace reuses the name of a release kept in history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace: Option<bool>,
    /// remediation: what follows a failed install (an uninstall) and how often it is retried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation: Option<HelmRemediation>,
    /// strategy: remediate failures (RemediateOnFailure) or retry them after an interval (RetryOnFailure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<HelmActionStrategy>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HelmUpgradeSpec {
    #[serde(flatten)]
    pub common: HelmActionCommon,
    #[serde(flatten)]
    pub checks: HelmApplyChecks,
    /// serverSideApply: enabled, disabled, or auto (when omitted: as the current revision was applied). Not
    /// enabled together with force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_side_apply: Option<HelmServerSideApply>,
    /// preserveValues merges the values over the current revision's instead of replacing them (Helm's
    /// --reuse-values); values removed from the spec then stay in the release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_values: Option<bool>,
    /// crds: Skip (Helm's own behaviour on upgrade), Create or CreateReplace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crds: Option<HelmCrdPolicy>,
    /// cleanupOnFail deletes the resources a failed upgrade created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup_on_fail: Option<bool>,
    /// force replaces resources that cannot be patched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
    /// remediation: what follows a failed upgrade (a rollback, or an uninstall) and how often it is retried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation: Option<HelmRemediation>,
    /// strategy: remediate failures (RemediateOnFailure) or retry them after an interval (RetryOnFailure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<HelmActionStrategy>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HelmTestFilter {
    /// name is a test hook's name.
    pub name: String,
    /// exclude: run every test but this one; otherwise only the tests named by such filters run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HelmTestSpec {
    /// enable runs the chart's Helm tests after every install and upgrade.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable: Option<bool>,
    /// timeout bounds the tests as a Go duration; spec.timeout when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// ignoreFailures: failed tests are reported but never count as failures of the release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_failures: Option<bool>,
    /// filters select the tests run by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filters: Option<Vec<HelmTestFilter>>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HelmRollbackSpec {
    #[serde(flatten)]
    pub common: HelmActionCommon,
    /// cleanupOnFail deletes the resources a failed rollback created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup_on_fail: Option<bool>,
    /// force replaces resources that cannot be patched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
    /// serverSideApply: enabled, disabled, or auto (when omitted: as the current revision was applied). Not
    /// enabled together with force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_side_apply: Option<HelmServerSideApply>,
    /// recreate is accepted for Flux compatibility and has no effect: Helm 4 has no recreate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recreate: Option<bool>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum HelmDeletionPropagation {
    Background,
    Foreground,
    Orphan,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HelmUninstallSpec {
    #[serde(flatten)]
    pub common: HelmActionCommon,
    /// keepHistory keeps the release's history after the uninstall.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_history: Option<bool>,
    /// deletionPropagation: background (when omitted), foreground or orphan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_propagation: Option<HelmDeletionPropagation>,
}

/// A test hook's last run, in status.history.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HelmTestHookStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_started: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_completed: Option<String>,
}

/// One release revision, in status.history (Flux's snapshot).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HelmReleaseSnapshot {
    /// version is the release revision.
    pub version: i64,
    /// status is Helm's status of the revision.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_version: Option<String>,
    /// configDigest is the digest of the chart source and values the operator made the revision from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_digest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_deployed: Option<String>,
    /// testHooks are the revision's Helm tests by name (the latest revision only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_hooks: Option<std::collections::BTreeMap<String, HelmTestHookStatus>>,
}

/// Whether objects of the release changed behind Helm's back are looked for, and what then.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum HelmDriftMode {
    /// Detect and correct (apply the manifest's objects again).
    Enabled,
    /// Detect and report (the Drifted condition and a DriftDetected Event) only.
    Warn,
    Disabled,
}

/// Which objects a drift ignore rule or a post-render patch applies to (kustomize's selector, as Flux uses it for
/// both); an unset field matches anything. name and namespace are regular expressions matching the whole name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HelmDriftTarget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// labelSelector selects objects by the labels the release gives them (app=web,tier!=db).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
    /// annotationSelector selects objects by their annotations, as a label selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotation_selector: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HelmDriftIgnoreRule {
    /// paths are JSON pointers (RFC 6901) left out of the comparison, e.g. /spec/replicas.
    pub paths: Vec<String>,
    /// target selects the objects the rule applies to; all of them when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<HelmDriftTarget>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HelmDriftDetection {
    /// mode: enabled, warn or disabled (when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<HelmDriftMode>,
    /// ignore lists fields left out of the comparison.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore: Option<Vec<HelmDriftIgnoreRule>>,
}
