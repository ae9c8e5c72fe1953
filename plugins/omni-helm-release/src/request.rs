//! What the plugin asks the host's Helm engine for: the release, its source (chart and values),
//! and each step with its settings. Per-action blocks (`install`, `upgrade`, `rollback`, `uninstall`, `test`;
//! Flux's names) override the Go operator's top-level settings, which stay the defaults.

use omni_api::{
    HelmActionCommon, HelmApplyChecks, HelmCrdPolicy, HelmDeletionPropagation, HelmServerSideApply,
    HelmValuesKind,
};
use omni_plugin_sdk::helm::{
    ActionOptions, ApplyMethod, ApplyRequest, ChartLocation, ChartPull, CrdPolicy,
    DeletionPropagation, GitChart, GitReference, HealthCheck, ReleaseRef, ReleaseSource,
    RollbackRequest, Step, TestFilter, TestRequest, UninstallRequest, ValuesKind, ValuesPart,
    ValuesRef, WaitStrategy,
};
use omni_plugin_sdk::{Value, json};

use crate::machine::Move;
use crate::object::ReleaseObject;
use crate::policy::{self, Tests};

/// The branch a Git chart follows when it names no branch, tag or commit.
pub const DEFAULT_GIT_BRANCH: &str = "main";

/// The key a `valuesFrom` entry reads when it names none (Flux's default).
pub const DEFAULT_VALUES_KEY: &str = "values.yaml";

pub fn release_ref(release: &ReleaseObject) -> ReleaseRef {
    ReleaseRef {
        kubeconfig: release.kubeconfig(),
        name: release.release_name().into(),
        namespace: release.release_namespace().into(),
        service_account: service_account(release),
    }
}

/// `spec.serviceAccountName`: the workload cluster's ServiceAccount, in the release's namespace, that every action
/// on the release impersonates.
pub fn service_account(release: &ReleaseObject) -> Option<String> {
    release
        .typed
        .spec
        .service_account_name
        .clone()
        .filter(|n| !n.is_empty())
}

/// A Git chart (`chart.git`) is a directory of a repository at a branch (`main` when none is named), tag or
/// commit. Otherwise an `oci://` chart is a full reference and the repository is ignored; anything else is a
/// chart name in the HTTP(S) repository. The values are `spec.chart.values`, `{}` when absent (validation has
/// refused anything but an object).
pub fn source(release: &ReleaseObject) -> ReleaseSource {
    let spec = &release.typed.spec.chart;
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    let reference = text(&spec.chart);
    let location = if let Some(git) = &spec.git {
        let reference = match (&git.tag, &git.commit, &git.branch) {
            (Some(tag), _, _) => GitReference::Tag(tag.clone()),
            (None, Some(commit), _) => GitReference::Commit(commit.clone()),
            (None, None, branch) => {
                GitReference::Branch(branch.clone().unwrap_or_else(|| DEFAULT_GIT_BRANCH.into()))
            }
        };
        ChartLocation::Git(GitChart {
            url: git.url.clone(),
            reference,
            path: git.path.clone().unwrap_or_default(),
        })
    } else if reference.trim().starts_with("oci://") {
        ChartLocation::Oci(reference.trim().into())
    } else {
        ChartLocation::Repository {
            url: text(&spec.repository),
            name: reference,
        }
    };
    let values = match &spec.values {
        Some(values @ Value::Object(_)) => values.clone(),
        _ => json!({}),
    };
    // Flux's order: the referenced values in order, then the inline ones over them.
    let referenced = release.typed.spec.values_from.iter().flatten().map(|r| {
        ValuesPart::Referenced(ValuesRef {
            kind: match r.kind {
                HelmValuesKind::ConfigMap => ValuesKind::ConfigMap,
                HelmValuesKind::Secret => ValuesKind::Secret,
            },
            name: r.name.clone(),
            key: r
                .values_key
                .clone()
                .filter(|k| !k.is_empty())
                .unwrap_or_else(|| DEFAULT_VALUES_KEY.into()),
            target_path: r.target_path.clone().filter(|p| !p.is_empty()),
            optional: r.optional == Some(true),
        })
    });
    let post_render = {
        let spec = &release.typed.spec;
        let renderers = spec.post_renderers.as_ref().filter(|r| !r.is_empty());
        let metadata = spec.common_metadata.as_ref();
        (renderers.is_some() || metadata.is_some()).then(|| {
            json!({"postRenderers": renderers.cloned().unwrap_or_default(),
                "commonMetadata": metadata.cloned().unwrap_or_default()})
        })
    };
    ReleaseSource {
        post_render,
        chart: ChartPull {
            location,
            version: text(&spec.version),
            credentials: spec
                .secret_ref
                .as_ref()
                .map(|r| r.name.clone())
                .filter(|n| !n.is_empty()),
            tls: spec
                .cert_secret_ref
                .as_ref()
                .map(|r| r.name.clone())
                .filter(|n| !n.is_empty()),
            verify: spec
                .verify
                .as_ref()
                .and_then(|v| v.secret_ref.as_ref())
                .map(|r| r.name.clone())
                .filter(|n| !n.is_empty()),
            values_files: spec.values_files.clone().unwrap_or_default(),
            ignore_missing_values_files: spec.ignore_missing_values_files == Some(true),
        },
        values: referenced.chain([ValuesPart::Inline(values)]).collect(),
    }
}

/// An action's settings: its own block's when set, else the spec's top-level ones. `wait` waits for every
/// resource (kstatus, as Go's status-watcher strategy); without it Helm waits for hooks only.
fn options(release: &ReleaseObject, own: Option<&HelmActionCommon>) -> ActionOptions {
    let spec = &release.typed.spec;
    let timeout_seconds = own
        .and_then(|o| o.timeout.as_deref())
        .and_then(policy::seconds)
        .unwrap_or_else(|| release.timeout_seconds());
    let wait = match own.and_then(|o| o.disable_wait) {
        Some(disable) => !disable,
        None => spec.wait == Some(true),
    };
    let wait_for_jobs = match own.and_then(|o| o.disable_wait_for_jobs) {
        Some(disable) => !disable,
        None => spec.wait_for_jobs == Some(true),
    };
    ActionOptions {
        timeout_seconds,
        wait: if wait {
            WaitStrategy::Ready
        } else {
            WaitStrategy::Hooks
        },
        wait_for_jobs,
        disable_hooks: own
            .and_then(|o| o.disable_hooks)
            .unwrap_or(spec.disable_hooks == Some(true)),
    }
}

fn crds(own: Option<HelmCrdPolicy>, skip_crds: bool) -> CrdPolicy {
    match own {
        Some(HelmCrdPolicy::Skip) => CrdPolicy::Skip,
        Some(HelmCrdPolicy::Create) => CrdPolicy::Create,
        Some(HelmCrdPolicy::CreateReplace) => CrdPolicy::CreateReplace,
        None if skip_crds => CrdPolicy::Skip,
        None => CrdPolicy::Create,
    }
}

/// The timeout of the action that a pending revision is judged by: the longest any action may take.
pub fn longest_timeout(release: &ReleaseObject) -> u32 {
    let spec = &release.typed.spec;
    [
        spec.install.as_ref().map(|i| &i.common),
        spec.upgrade.as_ref().map(|u| &u.common),
        spec.rollback.as_ref().map(|r| &r.common),
    ]
    .into_iter()
    .map(|own| options(release, own).timeout_seconds)
    .max()
    .unwrap_or_else(|| release.timeout_seconds())
}

pub fn install(release: &ReleaseObject) -> ApplyRequest {
    let spec = &release.typed.spec;
    let own = spec.install.as_ref();
    ApplyRequest {
        source: source(release),
        options: options(release, own.map(|i| &i.common)),
        crds: crds(own.and_then(|i| i.crds), spec.skip_crds == Some(true)),
        create_namespace: own
            .and_then(|i| i.create_namespace)
            .unwrap_or(spec.create_namespace == Some(true)),
        replace: own.and_then(|i| i.replace) == Some(true),
        force: false,
        cleanup_on_fail: false,
        rollback_on_failure: spec.atomic == Some(true),
        max_history: max_history(release),
        apply_method: match own.and_then(|i| i.server_side_apply) {
            Some(true) => ApplyMethod::ServerSide,
            Some(false) => ApplyMethod::ClientSide,
            None => ApplyMethod::Auto,
        },
        reuse_values: false,
        take_ownership: takes_ownership(own.map(|i| &i.checks)),
        skip_schema_validation: own.and_then(|i| i.checks.disable_schema_validation) == Some(true),
        skip_openapi_validation: own.and_then(|i| i.checks.disable_open_api_validation)
            == Some(true),
        health_checks: health_checks(release),
    }
}

/// `healthCheckExprs`, as the host judges them after Helm's wait.
fn health_checks(release: &ReleaseObject) -> Vec<HealthCheck> {
    let checks = release.typed.spec.health_check_exprs.iter().flatten();
    checks
        .map(|h| HealthCheck {
            api_version: h.api_version.clone(),
            kind: h.kind.clone(),
            current: h.current.clone(),
            in_progress: h.in_progress.clone().unwrap_or_default(),
            failed: h.failed.clone().unwrap_or_default(),
        })
        .collect()
}

/// Adopting existing objects needs `disableTakeOwnership: false` said outright: the Go operator never adopted,
/// and neither does Helm's CLI unless asked (Flux adopts unless told not to).
fn takes_ownership(checks: Option<&HelmApplyChecks>) -> bool {
    checks.and_then(|c| c.disable_take_ownership) == Some(false)
}

fn apply_method(method: Option<HelmServerSideApply>) -> ApplyMethod {
    match method {
        Some(HelmServerSideApply::Enabled) => ApplyMethod::ServerSide,
        Some(HelmServerSideApply::Disabled) => ApplyMethod::ClientSide,
        Some(HelmServerSideApply::Auto) | None => ApplyMethod::Auto,
    }
}

pub fn upgrade(release: &ReleaseObject) -> ApplyRequest {
    let spec = &release.typed.spec;
    let own = spec.upgrade.as_ref();
    let atomic = spec.atomic == Some(true);
    ApplyRequest {
        source: source(release),
        options: options(release, own.map(|u| &u.common)),
        crds: crds(own.and_then(|u| u.crds), spec.skip_crds == Some(true)),
        create_namespace: false,
        replace: false,
        force: own.and_then(|u| u.force) == Some(true),
        // Go cleaned up after failed upgrades whenever it rolled them back.
        cleanup_on_fail: own.and_then(|u| u.cleanup_on_fail).unwrap_or(atomic),
        rollback_on_failure: atomic,
        max_history: max_history(release),
        apply_method: apply_method(own.and_then(|u| u.server_side_apply)),
        reuse_values: own.and_then(|u| u.preserve_values) == Some(true),
        take_ownership: takes_ownership(own.map(|u| &u.checks)),
        skip_schema_validation: own.and_then(|u| u.checks.disable_schema_validation) == Some(true),
        skip_openapi_validation: own.and_then(|u| u.checks.disable_open_api_validation)
            == Some(true),
        health_checks: health_checks(release),
    }
}

/// Validation refuses a negative count; 0 keeps every revision, as Helm's default.
fn max_history(release: &ReleaseObject) -> u32 {
    release
        .typed
        .spec
        .max_history
        .map_or(0, |n| u32::try_from(n.max(0)).unwrap_or(u32::MAX))
}

pub fn rollback(release: &ReleaseObject, revision: u64) -> RollbackRequest {
    let own = release.typed.spec.rollback.as_ref();
    RollbackRequest {
        revision,
        options: options(release, own.map(|r| &r.common)),
        force: own.and_then(|r| r.force) == Some(true),
        cleanup_on_fail: own.and_then(|r| r.cleanup_on_fail) == Some(true),
        max_history: max_history(release),
        apply_method: apply_method(own.and_then(|r| r.server_side_apply)),
    }
}

/// Helm history is not kept unless `uninstall.keepHistory` says so (Go's uninstall did not keep it).
pub fn uninstall(release: &ReleaseObject) -> UninstallRequest {
    let own = release.typed.spec.uninstall.as_ref();
    UninstallRequest {
        options: options(release, own.map(|u| &u.common)),
        keep_history: own.and_then(|u| u.keep_history) == Some(true),
        propagation: match own.and_then(|u| u.deletion_propagation) {
            Some(HelmDeletionPropagation::Foreground) => DeletionPropagation::Foreground,
            Some(HelmDeletionPropagation::Orphan) => DeletionPropagation::Orphan,
            Some(HelmDeletionPropagation::Background) | None => DeletionPropagation::Background,
        },
    }
}

pub fn test(tests: &Tests) -> TestRequest {
    let filter = |exclude: bool| {
        move |name: &String| TestFilter {
            name: name.clone(),
            exclude,
        }
    };
    TestRequest {
        timeout_seconds: tests.timeout_seconds,
        filters: tests
            .include
            .iter()
            .map(filter(false))
            .chain(tests.exclude.iter().map(filter(true)))
            .collect(),
    }
}

/// The step a move asks the host for.
pub fn step(release: &ReleaseObject, tests: Option<&Tests>, m: Move) -> Step {
    match m {
        Move::Install => Step::Install(Box::new(install(release))),
        Move::Upgrade => Step::Upgrade(Box::new(upgrade(release))),
        Move::Rollback(revision) => Step::Rollback(rollback(release, revision)),
        Move::Uninstall => Step::Uninstall(uninstall(release)),
        Move::Test => match tests {
            Some(t) => Step::Test(test(t)),
            // The machine only tests when tests are on; should that change, an empty request runs them all.
            None => Step::Test(TestRequest {
                timeout_seconds: release.timeout_seconds(),
                filters: Vec::new(),
            }),
        },
        Move::Unlock => Step::Unlock,
    }
}
