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
        wit::Action::Correct => sdk_helm::Action::Correct,
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

fn to_release_ref(r: &sdk_helm::ReleaseRef) -> wit::ReleaseRef {
    wit::ReleaseRef {
        kubeconfig: secret_key(&r.kubeconfig),
        name: r.name.clone(),
        namespace: r.namespace.clone(),
    }
}

fn to_release_source(s: &sdk_helm::ReleaseSource) -> wit::ReleaseSource {
    let location = match &s.chart.location {
        sdk_helm::ChartLocation::Repository { url, name } => {
            wit::ChartLocation::Repository(wit::RepositoryChart {
                url: url.clone(),
                name: name.clone(),
            })
        }
        sdk_helm::ChartLocation::Oci(reference) => wit::ChartLocation::Oci(reference.clone()),
        sdk_helm::ChartLocation::Git(g) => wit::ChartLocation::Git(wit::GitChart {
            url: g.url.clone(),
            reference: match &g.reference {
                sdk_helm::GitReference::Branch(b) => wit::GitReference::Branch(b.clone()),
                sdk_helm::GitReference::Tag(t) => wit::GitReference::Tag(t.clone()),
                sdk_helm::GitReference::Commit(c) => wit::GitReference::Commit(c.clone()),
            },
            path: g.path.clone(),
        }),
    };
    wit::ReleaseSource {
        chart: wit::ChartPull {
            location,
            version: s.chart.version.clone(),
            credentials: s.chart.credentials.clone(),
            tls: s.chart.tls.clone(),
        },
        values: s
            .values
            .iter()
            .map(|part| match part {
                sdk_helm::ValuesPart::Inline(v) => wit::ValuesPart::Inline(v.to_string()),
                sdk_helm::ValuesPart::Referenced(r) => {
                    wit::ValuesPart::Referenced(wit::ValuesRef {
                        kind: match r.kind {
                            sdk_helm::ValuesKind::ConfigMap => wit::ValuesKind::ConfigMap,
                            sdk_helm::ValuesKind::Secret => wit::ValuesKind::Secret,
                        },
                        name: r.name.clone(),
                        key: r.key.clone(),
                        target_path: r.target_path.clone(),
                        optional: r.optional,
                    })
                }
            })
            .collect(),
    }
}

fn to_step(s: &sdk_helm::Step) -> wit::Step {
    let apply = |a: &sdk_helm::ApplyRequest| wit::ApplyRequest {
        source: to_release_source(&a.source),
        options: options(&a.options),
        crds: match a.crds {
            sdk_helm::CrdPolicy::Skip => wit::CrdPolicy::Skip,
            sdk_helm::CrdPolicy::Create => wit::CrdPolicy::Create,
            sdk_helm::CrdPolicy::CreateReplace => wit::CrdPolicy::CreateReplace,
        },
        create_namespace: a.create_namespace,
        replace: a.replace,
        force: a.force,
        cleanup_on_fail: a.cleanup_on_fail,
        rollback_on_failure: a.rollback_on_failure,
        max_history: a.max_history,
    };
    match s {
        sdk_helm::Step::Install(a) => wit::Step::Install(apply(a)),
        sdk_helm::Step::Upgrade(a) => wit::Step::Upgrade(apply(a)),
        sdk_helm::Step::Rollback(r) => wit::Step::Rollback(wit::RollbackRequest {
            revision: r.revision,
            options: options(&r.options),
            force: r.force,
            cleanup_on_fail: r.cleanup_on_fail,
            max_history: r.max_history,
        }),
        sdk_helm::Step::Uninstall(u) => wit::Step::Uninstall(wit::UninstallRequest {
            options: options(&u.options),
            keep_history: u.keep_history,
            propagation: match u.propagation {
                sdk_helm::DeletionPropagation::Background => wit::DeletionPropagation::Background,
                sdk_helm::DeletionPropagation::Foreground => wit::DeletionPropagation::Foreground,
                sdk_helm::DeletionPropagation::Orphan => wit::DeletionPropagation::Orphan,
            },
        }),
        sdk_helm::Step::Test(t) => wit::Step::Test(wit::TestRequest {
            timeout_seconds: t.timeout_seconds,
            filters: t
                .filters
                .iter()
                .map(|f| wit::TestFilter {
                    name: f.name.clone(),
                    exclude: f.exclude,
                })
                .collect(),
        }),
        sdk_helm::Step::Unlock => wit::Step::Unlock,
        sdk_helm::Step::CorrectDrift(ignore) => {
            wit::Step::CorrectDrift(ignore.iter().map(to_drift_ignore).collect())
        }
    }
}

fn to_drift_ignore(i: &sdk_helm::DriftIgnore) -> wit::DriftIgnore {
    wit::DriftIgnore {
        paths: i.paths.clone(),
        target: i.target.as_ref().map(|t| wit::DriftTarget {
            group: t.group.clone(),
            version: t.version.clone(),
            kind: t.kind.clone(),
            name: t.name.clone(),
            namespace: t.namespace.clone(),
        }),
    }
}

fn from_drifted(d: wit::Drifted) -> sdk_helm::Drifted {
    sdk_helm::Drifted {
        api_version: d.api_version,
        kind: d.kind,
        namespace: d.namespace,
        name: d.name,
        reason: match d.reason {
            wit::DriftReason::Missing => sdk_helm::DriftReason::Missing,
            wit::DriftReason::Modified => sdk_helm::DriftReason::Modified,
        },
        fields: d.fields,
    }
}

fn from_step_record(r: wit::StepRecord) -> sdk_helm::StepRecord {
    sdk_helm::StepRecord {
        id: r.id,
        action: action(r.action),
        digest: r.digest,
        started: r.started,
        finished: r.finished,
        revision: r.revision,
        error: r.error,
    }
}

fn from_observation(o: wit::Observation) -> sdk_helm::Observation {
    sdk_helm::Observation {
        release: o.release.map(|s| sdk_helm::ReleaseState {
            current: revision(s.current),
            history: s.history.into_iter().map(revision).collect(),
        }),
        tests: o
            .tests
            .into_iter()
            .map(|t| sdk_helm::TestHook {
                name: t.name,
                phase: t.phase,
                started: t.started,
                completed: t.completed,
            })
            .collect(),
        running: o.running.map(from_step_record),
        last: o.last.map(from_step_record),
        wanted: o.wanted,
        chart_version: o.chart_version,
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

    fn helm_observe(
        &self,
        release: &sdk_helm::ReleaseRef,
        source: Option<&sdk_helm::ReleaseSource>,
    ) -> Result<sdk_helm::Observation, sdk::HostError> {
        let (release, source) = (to_release_ref(release), source.map(to_release_source));
        self.granted(Capability::Helm, "helm.observe", async move |state, ctx| {
            HelmCap(state).observe(ctx, release, source).await
        })
        .map(from_observation)
    }

    fn helm_detect_drift(
        &self,
        release: &sdk_helm::ReleaseRef,
        ignore: &[sdk_helm::DriftIgnore],
    ) -> Result<Vec<sdk_helm::Drifted>, sdk::HostError> {
        let release = to_release_ref(release);
        let ignore: Vec<wit::DriftIgnore> = ignore.iter().map(to_drift_ignore).collect();
        self.granted(
            Capability::Helm,
            "helm.detect-drift",
            async move |state, ctx| HelmCap(state).detect_drift(ctx, release, ignore).await,
        )
        .map(|d| d.into_iter().map(from_drifted).collect())
    }

    fn helm_start(
        &self,
        release: &sdk_helm::ReleaseRef,
        step: &sdk_helm::Step,
    ) -> Result<sdk_helm::StepRecord, sdk::HostError> {
        let (release, step) = (to_release_ref(release), to_step(step));
        self.granted(Capability::Helm, "helm.start", async move |state, ctx| {
            HelmCap(state).start(ctx, release, step).await
        })
        .map(from_step_record)
    }
}
