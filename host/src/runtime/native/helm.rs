//! The SDK's `Helm` calls for native plugin logic: converted to the contract's host-side types and served by
//! the same `helm` capability a component's imports reach.

use omni_plugin_sdk as sdk;
use omni_plugin_sdk::helm as sdk_helm;
use omni_plugin_sdk::secrets as sdk_secrets;

use super::convert::secret_key;
use super::host::NativeHost;
use crate::capabilities::{Capability, HelmCap};
use crate::contract::bindings::omni::operator::helm::{self as wit, Host as _};

fn options(o: &sdk_helm::ActionOptions) -> wit::ActionOptions {
    wit::ActionOptions {
        timeout_seconds: o.timeout_seconds,
        wait: match o.wait {
            sdk_helm::WaitStrategy::Hooks => wit::WaitStrategy::Hooks,
            sdk_helm::WaitStrategy::Ready => wit::WaitStrategy::Ready,
        },
        wait_for_jobs: o.wait_for_jobs,
        disable_hooks: o.disable_hooks,
    }
}

fn release_spec(s: &sdk_helm::ReleaseSpec) -> wit::ReleaseSpec {
    wit::ReleaseSpec {
        kubeconfig: secret_key(&s.kubeconfig),
        name: s.name.clone(),
        namespace: s.namespace.clone(),
        chart: wit::Chart {
            source: match &s.chart.source {
                sdk_helm::ChartSource::Repository { url, name } => {
                    wit::ChartSource::Repository(wit::RepositoryChart {
                        url: url.clone(),
                        name: name.clone(),
                    })
                }
                sdk_helm::ChartSource::Oci(r) => wit::ChartSource::Oci(r.clone()),
            },
            version: s.chart.version.clone(),
        },
        values: s.values.to_string(),
        options: options(&s.options),
        install: wit::InstallOptions {
            create_namespace: s.install.create_namespace,
            skip_crds: s.install.skip_crds,
            rollback_on_failure: s.install.rollback_on_failure,
        },
        upgrade: wit::UpgradeOptions {
            skip_crds: s.upgrade.skip_crds,
            rollback_on_failure: s.upgrade.rollback_on_failure,
            cleanup_on_fail: s.upgrade.cleanup_on_fail,
            max_history: s.upgrade.max_history,
        },
    }
}

fn action(a: wit::Action) -> sdk_helm::Action {
    match a {
        wit::Action::Install => sdk_helm::Action::Install,
        wit::Action::Upgrade => sdk_helm::Action::Upgrade,
        wit::Action::Uninstall => sdk_helm::Action::Uninstall,
        wit::Action::Rollback => sdk_helm::Action::Rollback,
        wit::Action::Test => sdk_helm::Action::Test,
        wit::Action::Recover => sdk_helm::Action::Recover,
    }
}

fn revision(r: wit::Revision) -> sdk_helm::Revision {
    sdk_helm::Revision {
        revision: r.revision,
        status: r.status,
        chart: r.chart,
        chart_version: r.chart_version,
        app_version: r.app_version,
        updated: r.updated,
        description: r.description,
        digest: r.digest,
    }
}

fn report(r: wit::ReleaseReport) -> sdk_helm::ReleaseReport {
    sdk_helm::ReleaseReport {
        release: r.release.map(|s| sdk_helm::ReleaseState {
            current: revision(s.current),
            history: s.history.into_iter().map(revision).collect(),
        }),
        progress: match r.progress {
            wit::Progress::Idle => sdk_helm::Progress::Idle,
            wit::Progress::Running(a) => sdk_helm::Progress::Running(action(a)),
            wit::Progress::RetryAfter(ms) => sdk_helm::Progress::RetryAfter(ms),
        },
        last: r.last.map(|l| sdk_helm::ActionOutcome {
            action: action(l.action),
            revision: l.revision,
            error: l.error,
            finished: l.finished,
            digest: l.digest,
        }),
        wanted: r.wanted,
    }
}

impl sdk::Helm for NativeHost {
    fn helm_ensure(
        &self,
        spec: &sdk_helm::ReleaseSpec,
    ) -> Result<sdk_helm::ReleaseReport, sdk::HostError> {
        let spec = release_spec(spec);
        self.granted(Capability::Helm, "helm.ensure", async move |state, ctx| {
            HelmCap(state).ensure(ctx, spec).await
        })
        .map(report)
    }

    fn helm_uninstall(
        &self,
        spec: &sdk_helm::UninstallSpec,
    ) -> Result<sdk_helm::ReleaseReport, sdk::HostError> {
        let spec = wit::UninstallSpec {
            kubeconfig: secret_key(&spec.kubeconfig),
            name: spec.name.clone(),
            namespace: spec.namespace.clone(),
            options: options(&spec.options),
            keep_history: spec.keep_history,
        };
        self.granted(
            Capability::Helm,
            "helm.uninstall",
            async move |state, ctx| HelmCap(state).uninstall(ctx, spec).await,
        )
        .map(report)
    }

    fn helm_status(
        &self,
        kubeconfig: &sdk_secrets::SecretKeyRef,
        name: &str,
        namespace: &str,
    ) -> Result<sdk_helm::ReleaseReport, sdk::HostError> {
        let (kubeconfig, name, namespace) = (
            secret_key(kubeconfig),
            name.to_owned(),
            namespace.to_owned(),
        );
        self.granted(Capability::Helm, "helm.status", async move |state, ctx| {
            HelmCap(state)
                .status(ctx, kubeconfig, name, namespace)
                .await
        })
        .map(report)
    }
}
