//! What the plugin asks the host's Helm engine for (spec §6.2, §6.4): the chart source, the values and the
//! install, upgrade and uninstall settings, mapped from the spec as the Go controller set Helm's actions.

use omni_plugin_sdk::helm::{
    ActionOptions, Chart, ChartSource, InstallOptions, ReleaseSpec, UninstallSpec, UpgradeOptions,
    WaitStrategy,
};
use omni_plugin_sdk::{Value, json};

use crate::object::ReleaseObject;

/// An `oci://` chart is a full reference and the repository is ignored (§6.2); anything else is a chart name in
/// the HTTP(S) repository.
pub fn chart(release: &ReleaseObject) -> Chart {
    let spec = &release.typed.spec.chart;
    let reference = spec.chart.trim();
    let source = if reference.starts_with("oci://") {
        ChartSource::Oci(reference.into())
    } else {
        ChartSource::Repository {
            url: spec.repository.clone(),
            name: spec.chart.clone(),
        }
    };
    Chart {
        source,
        version: spec.version.clone(),
    }
}

/// `spec.chart.values`, `{}` when absent (§6.1). Validation has refused anything but an object.
pub fn values(release: &ReleaseObject) -> Value {
    match &release.typed.spec.chart.values {
        Some(values @ Value::Object(_)) => values.clone(),
        _ => json!({}),
    }
}

/// Settings every action shares. `wait` waits for every resource (kstatus, as Go's status-watcher strategy);
/// without it Helm waits for hooks only.
pub fn options(release: &ReleaseObject) -> ActionOptions {
    let spec = &release.typed.spec;
    ActionOptions {
        timeout_seconds: release.timeout_seconds(),
        wait: if spec.wait == Some(true) {
            WaitStrategy::Ready
        } else {
            WaitStrategy::Hooks
        },
        wait_for_jobs: spec.wait_for_jobs == Some(true),
        disable_hooks: spec.disable_hooks == Some(true),
    }
}

pub fn release_spec(release: &ReleaseObject) -> ReleaseSpec {
    let spec = &release.typed.spec;
    let atomic = spec.atomic == Some(true);
    let skip_crds = spec.skip_crds == Some(true);
    ReleaseSpec {
        kubeconfig: release.kubeconfig(),
        name: release.release_name().into(),
        namespace: release.release_namespace().into(),
        chart: chart(release),
        values: values(release),
        options: options(release),
        install: InstallOptions {
            create_namespace: spec.create_namespace == Some(true),
            skip_crds,
            rollback_on_failure: atomic,
        },
        upgrade: UpgradeOptions {
            skip_crds,
            rollback_on_failure: atomic,
            cleanup_on_fail: atomic,
            // Validation refuses a negative count; 0 keeps every revision, as Helm's default.
            max_history: spec
                .max_history
                .map_or(0, |n| u32::try_from(n.max(0)).unwrap_or(u32::MAX)),
        },
    }
}

/// Helm history is not kept (§6.4: Go's uninstall did not keep it either).
pub fn uninstall_spec(release: &ReleaseObject) -> UninstallSpec {
    UninstallSpec {
        kubeconfig: release.kubeconfig(),
        name: release.release_name().into(),
        namespace: release.release_namespace().into(),
        options: options(release),
        keep_history: false,
    }
}
