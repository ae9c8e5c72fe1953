use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::helm_actions::{
    HelmDriftDetection, HelmInstallSpec, HelmReleaseSnapshot, HelmRollbackSpec, HelmTestSpec,
    HelmUninstallSpec, HelmUpgradeSpec,
};
use crate::common::{
    CommonStatusFields, KubeconfigSecretRef, LocalObjectReference, OmniClusterRef,
};

/// A Helm release the operator installs and upgrades in an Omni workload cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OmniHelmReleaseSpec {
    /// clusterRef attaches this release to an OmniCluster in the same namespace.
    pub cluster_ref: OmniClusterRef,
    /// kubeconfigSecretRef selects the Secret key holding the workload-cluster kubeconfig, for example one
    /// written by an OmniKubeconfigExport.
    pub kubeconfig_secret_ref: KubeconfigSecretRef,
    /// releaseName is the Helm release name; metadata.name when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub release_name: Option<String>,
    /// namespace is the workload-cluster namespace of the release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1), extend("default" = "default")))]
    pub namespace: Option<String>,
    /// persistentClient is accepted for Flux compatibility: the operator always keeps one client per workload
    /// kubeconfig Secret version, made again when the Secret changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent_client: Option<bool>,
    /// chart selects the chart to install or upgrade, and its values.
    pub chart: HelmChartSpec,
    /// createNamespace lets Helm create the release namespace on install.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_namespace: Option<bool>,
    /// wait makes Helm wait until the release's resources are ready (hooks are always waited for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<bool>,
    /// waitForJobs makes Helm's wait include Jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_for_jobs: Option<bool>,
    /// timeout bounds each Helm operation (install, upgrade, wait, hooks, rollback, uninstall) as a Go
    /// duration; 5m when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// atomic rolls back failed upgrades and uninstalls failed installs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub atomic: Option<bool>,
    /// disableHooks keeps Helm hooks from running on install, upgrade and uninstall.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_hooks: Option<bool>,
    /// skipCRDs skips the chart's CRDs on install (Helm never upgrades CRDs).
    #[serde(rename = "skipCRDs", default, skip_serializing_if = "Option::is_none")]
    pub skip_crds: Option<bool>,
    /// maxHistory limits the number of release revisions Helm keeps; 0 means Helm's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(schema_with = "crate::field_schemas::integer", range(min = 0))
    )]
    pub max_history: Option<i64>,
    /// deletionPolicy says whether the Helm release is uninstalled when this object is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = "Uninstall")))]
    pub deletion_policy: Option<HelmDeletionPolicy>,
    /// suspend stops every Helm action; deleting a suspended release leaves it in the workload cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// interval is how often the release is checked against the workload cluster, as a Go duration; 5m when
    /// omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
    /// install configures installs and their remediation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install: Option<HelmInstallSpec>,
    /// upgrade configures upgrades and their remediation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<HelmUpgradeSpec>,
    /// test runs the chart's Helm tests after installs and upgrades.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<HelmTestSpec>,
    /// rollback configures the rollbacks of upgrade remediation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<HelmRollbackSpec>,
    /// uninstall configures uninstalls on deletion and in remediation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uninstall: Option<HelmUninstallSpec>,
    /// valuesFrom merges keys of ConfigMaps and Secrets in this namespace into the values, in order, before
    /// chart.values; the operator reads them, and their contents never appear in status or Events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values_from: Option<Vec<HelmValuesReference>>,
    /// dependsOn lists OmniHelmReleases that must be Ready before this release is installed or upgraded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depends_on: Option<Vec<HelmReleaseDependency>>,
    /// driftDetection looks for objects of the release changed or deleted behind Helm's back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_detection: Option<HelmDriftDetection>,
    /// serviceAccountName is a ServiceAccount of the release's namespace in the workload cluster that every
    /// action on the release impersonates (system:serviceaccount:NAMESPACE:NAME), so the release can do only what
    /// that account may; the kubeconfig's identity needs the impersonate permission for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = 253)))]
    pub service_account_name: Option<String>,
    /// postRenderers change the rendered manifests before Helm applies them (Flux's kustomize post-renderer:
    /// strategic-merge and JSON 6902 patches, image overrides), in order; a change upgrades the release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_renderers: Option<Vec<HelmPostRenderer>>,
    /// commonMetadata sets labels and annotations on every object the release applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub common_metadata: Option<HelmCommonMetadata>,
    /// healthCheckExprs judge the release's objects of a kind with CEL after Helm's wait, in place of their
    /// built-in readiness (Flux's custom health checks): an install or upgrade that waits succeeds only once each
    /// such object is current; one that is failed, or not current within the timeout, fails the action (and
    /// remediation follows). The expressions see the object's top-level fields (metadata, spec, status).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check_exprs: Option<Vec<HelmHealthCheckExpr>>,
}

/// CEL expressions that judge the health of the release's objects of one kind (Flux's `CustomHealthCheck`).
/// Evaluated in Flux's order: an object whose status.observedGeneration differs from metadata.generation is in
/// progress; then inProgress, failed and current, the first that is true deciding; none true: in progress.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HelmHealthCheckExpr {
    /// apiVersion of the objects judged (group/version, or version for the core group).
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub api_version: String,
    /// kind of the objects judged.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub kind: String,
    /// current is true when the object has reached the state wanted.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub current: String,
    /// inProgress is true while the object has not yet reached it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_progress: Option<String>,
    /// failed is true when the object failed to reach it (without one, only the timeout ends the wait).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

/// One post-renderer (Flux's `postRenderers[]` entry).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HelmPostRenderer {
    /// kustomize patches the manifests and overrides images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kustomize: Option<HelmKustomize>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HelmKustomize {
    /// patches: strategic-merge patches (a YAML object; without a target, the object of its own kind and name)
    /// and JSON 6902 patches (a YAML list of operations; a target is required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patches: Option<Vec<HelmKustomizePatch>>,
    /// images set new names, tags or digests for the containers running an image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<Vec<HelmKustomizeImage>>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HelmKustomizePatch {
    /// patch is the patch's text, YAML or JSON.
    pub patch: String,
    /// target selects the objects patched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<HelmPatchSelector>,
}

/// The objects a patch applies to: the same selector as a drift ignore rule's target (kustomize's, in Flux).
pub type HelmPatchSelector = super::helm_actions::HelmDriftTarget;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HelmKustomizeImage {
    /// name is the image, without tag or digest, as the manifests name it.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_tag: Option<String>,
    /// digest replaces the tag with this digest (sha256:...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// Labels and annotations for every object of the release.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HelmCommonMetadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<std::collections::BTreeMap<String, String>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum HelmValuesKind {
    ConfigMap,
    Secret,
}

/// A ConfigMap or Secret key holding values (Flux's `valuesFrom` entry).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HelmValuesReference {
    /// kind is ConfigMap or Secret.
    pub kind: HelmValuesKind,
    /// name of the ConfigMap or Secret, in this object's namespace.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub name: String,
    /// valuesKey is the key holding the values; values.yaml when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values_key: Option<String>,
    /// targetPath places the key's text at this --set style path instead of merging it as a YAML document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_path: Option<String>,
    /// optional lets the release go on without this reference when its object or key is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
}

/// A chart directory in a Git repository, at a branch, a tag or a commit (one of them; branch main when none).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HelmGitChart {
    /// url of the repository, https:// (or http://).
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// commit is a full 40-hex-digit commit id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// path of the chart directory in the repository; the repository's root when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// An OmniHelmRelease this one waits for.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HelmReleaseDependency {
    /// name of the OmniHelmRelease.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub name: String,
    /// namespace of the OmniHelmRelease; this object's namespace when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// readyExpr is a CEL expression over self (this object) and dep (the dependency) that must be true for the
    /// dependency to count as ready, in place of its Ready condition (Flux's readyExpr).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_expr: Option<String>,
}

/// A Helm chart from an HTTP(S) or OCI repository (the Go operator's three fields), or from a Git repository.
///
/// That repository, chart and version are required unless git is set is the admission webhook's rule (and the
/// reconcile's), not a CEL rule here: the Go CRD has no CEL on this kind, and with one, a schema error anywhere in
/// the object (`deletionPolicy: Purge`) would come back with a second line the Go operator's users never saw
/// ("some validation rules were not checked because the object was invalid").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HelmChartSpec {
    /// repository is the absolute URL of the chart repository (required unless git is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub repository: Option<String>,
    /// chart is the chart name, or a full oci:// reference (required unless git is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub chart: Option<String>,
    /// version is the chart version, or a version range such as ">=1.2 <2" (required unless git is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub version: Option<String>,
    /// git takes the chart from a directory of a Git repository instead (HTTPS; credentials and CA from
    /// secretRef and certSecretRef).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<HelmGitChart>,
    /// values are passed to Helm on install and upgrade; must be an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(schema_with = "crate::field_schemas::preserve_unknown_fields")
    )]
    pub values: Option<Value>,
    /// secretRef names a Secret in this namespace with `username` and `password` for the chart repository or
    /// OCI registry (Flux's HelmRepository field); the operator reads it, the plugin never does.
    #[serde(rename = "secretRef", default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// certSecretRef names a Secret in this namespace with `ca.crt` (a CA to trust) and/or `tls.crt` and
    /// `tls.key` (a client certificate) for reaching the chart source.
    #[serde(
        rename = "certSecretRef",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub cert_secret_ref: Option<LocalObjectReference>,
    /// verify refuses an oci:// chart unless its manifest is signed by one of the cosign public keys in a
    /// Secret (Flux's verify).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<HelmChartVerify>,
    /// valuesFiles are values files packaged in the chart (paths inside it), merged in order under valuesFrom
    /// and values (Flux's valuesFiles); repository and OCI charts only.
    #[serde(
        rename = "valuesFiles",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub values_files: Option<Vec<String>>,
    /// ignoreMissingValuesFiles goes on without a listed values file the chart lacks.
    #[serde(
        rename = "ignoreMissingValuesFiles",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub ignore_missing_values_files: Option<bool>,
}

/// How a chart's signature is verified.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HelmChartVerify {
    /// provider: cosign.
    pub provider: HelmVerifyProvider,
    /// secretRef names a Secret in this namespace whose keys ending in .pub are cosign public keys (required:
    /// keyless verification is not supported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum HelmVerifyProvider {
    #[default]
    Cosign,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum HelmDeletionPolicy {
    #[default]
    Uninstall,
    Orphan,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OmniHelmReleaseStatus {
    #[serde(flatten)]
    pub common: CommonStatusFields,
    /// clusterRef is the OmniCluster name the controller last used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_ref: Option<String>,
    /// kubeconfigSecretRef is the kubeconfig Secret name the controller last used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig_secret_ref: Option<String>,
    /// kubeconfigSecretKey is the kubeconfig Secret key the controller last used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig_secret_key: Option<String>,
    /// releaseName is the Helm release name the controller last used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_name: Option<String>,
    /// namespace is the workload-cluster namespace the controller last used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// chart is the chart the controller last reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart: Option<String>,
    /// chartVersion is the chart version the controller last reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart_version: Option<String>,
    /// releaseRevision is the Helm release revision last observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_revision: Option<i64>,
    /// releaseStatus is the Helm release status last observed (deployed, failed, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_status: Option<String>,
    /// lastAction is the last Helm action attempted (install, upgrade, uninstall).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_action: Option<String>,
    /// lastAttemptTime is when the controller last attempted a Helm action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub last_attempt_time: Option<String>,
    /// lastSuccessTime is when a Helm action last succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub last_success_time: Option<String>,
    /// lastError is the last Helm or credential error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// history holds the latest release revisions, newest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<HelmReleaseSnapshot>>,
    /// failures counts the failed actions since the spec, the chart or the values last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failures: Option<i64>,
    /// installFailures counts the failed installs among them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_failures: Option<i64>,
    /// upgradeFailures counts the failed upgrades among them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_failures: Option<i64>,
    /// lastAttemptedReleaseAction is the last install or upgrade started (install, upgrade).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_release_action: Option<String>,
    /// lastAttemptedRevision is the chart version of the last install or upgrade started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_revision: Option<String>,
    /// storageNamespace is where Helm stores the release: its own namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_namespace: Option<String>,
    /// lastAttemptedConfigDigest is the digest of the chart source and values last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_config_digest: Option<String>,
    /// lastAttemptedGeneration is the metadata.generation last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_generation: Option<i64>,
    /// lastActionID identifies the last Helm action whose outcome this status counts.
    #[serde(
        rename = "lastActionID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub last_action_id: Option<String>,
    /// lastHandledReconcileAt is the last reconcile.fluxcd.io/requestedAt value handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// lastHandledForceAt is the last reconcile.fluxcd.io/forceAt value handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_force_at: Option<String>,
    /// lastHandledResetAt is the last reconcile.fluxcd.io/resetAt value handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reset_at: Option<String>,
    /// inventory lists the objects the deployed release owns: its manifest's and its chart's CRDs, hooks left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inventory: Option<HelmReleaseInventory>,
}

/// What a release owns, in Flux's format.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HelmReleaseInventory {
    /// entries, sorted by id.
    pub entries: Vec<HelmInventoryEntry>,
}

/// One object a release owns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HelmInventoryEntry {
    /// id is namespace_name_group_kind (an empty namespace for cluster-scoped objects, an empty group for the
    /// core API).
    pub id: String,
    /// v is the object's API version.
    pub v: String,
}

super::omni_kind!(
    OmniHelmRelease,
    OmniHelmReleaseSpec,
    OmniHelmReleaseStatus,
    kind = "OmniHelmRelease",
    plural = "omnihelmreleases",
    singular = "omnihelmrelease"
);
