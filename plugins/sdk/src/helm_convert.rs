//! Conversions between the SDK's Helm types and a crate's bindings of the contract's `helm` interface. The guest
//! (wit-bindgen) and the host (wasmtime's bindgen) each generate their own types of the same shape from one WIT
//! file, so the conversions are written once here, as a macro each side expands over its own bindings.

/// Defines, in the calling module, `to_…` functions from the SDK's Helm types to the bindings module `$w` and
/// `from_…` functions back. `$secret_key` converts an SDK `SecretKeyRef` to the bindings' one.
#[doc(hidden)]
#[macro_export]
macro_rules! helm_conversions {
    ($w:ident, $secret_key:path) => {
        fn to_release_ref(r: &$crate::helm::ReleaseRef) -> $w::ReleaseRef {
            $w::ReleaseRef {
                kubeconfig: $secret_key(&r.kubeconfig),
                name: r.name.clone(),
                namespace: r.namespace.clone(),
                service_account: r.service_account.clone(),
            }
        }

        fn to_release_source(s: &$crate::helm::ReleaseSource) -> $w::ReleaseSource {
            let location = match &s.chart.location {
                $crate::helm::ChartLocation::Repository { url, name } => {
                    $w::ChartLocation::Repository($w::RepositoryChart {
                        url: url.clone(),
                        name: name.clone(),
                    })
                }
                $crate::helm::ChartLocation::Oci(reference) => {
                    $w::ChartLocation::Oci(reference.clone())
                }
                $crate::helm::ChartLocation::Git(g) => $w::ChartLocation::Git($w::GitChart {
                    url: g.url.clone(),
                    reference: match &g.reference {
                        $crate::helm::GitReference::Branch(b) => {
                            $w::GitReference::Branch(b.clone())
                        }
                        $crate::helm::GitReference::Tag(t) => $w::GitReference::Tag(t.clone()),
                        $crate::helm::GitReference::Commit(c) => {
                            $w::GitReference::Commit(c.clone())
                        }
                    },
                    path: g.path.clone(),
                }),
            };
            $w::ReleaseSource {
                chart: $w::ChartPull {
                    location,
                    version: s.chart.version.clone(),
                    credentials: s.chart.credentials.clone(),
                    tls: s.chart.tls.clone(),
                    verify: s.chart.verify.clone(),
                    values_files: s.chart.values_files.clone(),
                    ignore_missing_values_files: s.chart.ignore_missing_values_files,
                },
                values: s
                    .values
                    .iter()
                    .map(|part| match part {
                        $crate::helm::ValuesPart::Inline(v) => {
                            $w::ValuesPart::Inline(v.to_string())
                        }
                        $crate::helm::ValuesPart::Referenced(r) => {
                            $w::ValuesPart::Referenced($w::ValuesRef {
                                kind: match r.kind {
                                    $crate::helm::ValuesKind::ConfigMap => {
                                        $w::ValuesKind::ConfigMap
                                    }
                                    $crate::helm::ValuesKind::Secret => $w::ValuesKind::Secret,
                                },
                                name: r.name.clone(),
                                key: r.key.clone(),
                                target_path: r.target_path.clone(),
                                optional: r.optional,
                            })
                        }
                    })
                    .collect(),
                post_render: s.post_render.as_ref().map(|v| v.to_string()),
            }
        }

        fn to_apply_method(m: $crate::helm::ApplyMethod) -> $w::ApplyMethod {
            match m {
                $crate::helm::ApplyMethod::ServerSide => $w::ApplyMethod::ServerSide,
                $crate::helm::ApplyMethod::ClientSide => $w::ApplyMethod::ClientSide,
                $crate::helm::ApplyMethod::Auto => $w::ApplyMethod::Auto,
            }
        }

        fn to_step(s: &$crate::helm::Step) -> $w::Step {
            let apply = |a: &$crate::helm::ApplyRequest| $w::ApplyRequest {
                source: to_release_source(&a.source),
                options: to_action_options(&a.options),
                crds: match a.crds {
                    $crate::helm::CrdPolicy::Skip => $w::CrdPolicy::Skip,
                    $crate::helm::CrdPolicy::Create => $w::CrdPolicy::Create,
                    $crate::helm::CrdPolicy::CreateReplace => $w::CrdPolicy::CreateReplace,
                },
                create_namespace: a.create_namespace,
                replace: a.replace,
                force: a.force,
                cleanup_on_fail: a.cleanup_on_fail,
                rollback_on_failure: a.rollback_on_failure,
                max_history: a.max_history,
                apply_method: to_apply_method(a.apply_method),
                take_ownership: a.take_ownership,
                skip_schema_validation: a.skip_schema_validation,
                skip_openapi_validation: a.skip_openapi_validation,
                reuse_values: a.reuse_values,
                health_checks: a
                    .health_checks
                    .iter()
                    .map(|h| $w::HealthCheck {
                        api_version: h.api_version.clone(),
                        kind: h.kind.clone(),
                        current: h.current.clone(),
                        in_progress: h.in_progress.clone(),
                        failed: h.failed.clone(),
                    })
                    .collect(),
            };
            match s {
                $crate::helm::Step::Install(a) => $w::Step::Install(apply(a)),
                $crate::helm::Step::Upgrade(a) => $w::Step::Upgrade(apply(a)),
                $crate::helm::Step::Rollback(r) => $w::Step::Rollback($w::RollbackRequest {
                    revision: r.revision,
                    options: to_action_options(&r.options),
                    force: r.force,
                    cleanup_on_fail: r.cleanup_on_fail,
                    max_history: r.max_history,
                    apply_method: to_apply_method(r.apply_method),
                }),
                $crate::helm::Step::Uninstall(u) => $w::Step::Uninstall($w::UninstallRequest {
                    options: to_action_options(&u.options),
                    keep_history: u.keep_history,
                    propagation: match u.propagation {
                        $crate::helm::DeletionPropagation::Background => {
                            $w::DeletionPropagation::Background
                        }
                        $crate::helm::DeletionPropagation::Foreground => {
                            $w::DeletionPropagation::Foreground
                        }
                        $crate::helm::DeletionPropagation::Orphan => {
                            $w::DeletionPropagation::Orphan
                        }
                    },
                }),
                $crate::helm::Step::Test(t) => $w::Step::Test($w::TestRequest {
                    timeout_seconds: t.timeout_seconds,
                    filters: t
                        .filters
                        .iter()
                        .map(|f| $w::TestFilter {
                            name: f.name.clone(),
                            exclude: f.exclude,
                        })
                        .collect(),
                }),
                $crate::helm::Step::Unlock => $w::Step::Unlock,
                $crate::helm::Step::CorrectDrift(ignore) => {
                    $w::Step::CorrectDrift(ignore.iter().map(to_drift_ignore).collect())
                }
            }
        }

        fn to_drift_ignore(i: &$crate::helm::DriftIgnore) -> $w::DriftIgnore {
            $w::DriftIgnore {
                paths: i.paths.clone(),
                target: i.target.as_ref().map(|t| $w::DriftTarget {
                    group: t.group.clone(),
                    version: t.version.clone(),
                    kind: t.kind.clone(),
                    name: t.name.clone(),
                    namespace: t.namespace.clone(),
                    label_selector: t.label_selector.clone(),
                    annotation_selector: t.annotation_selector.clone(),
                }),
            }
        }

        fn from_drifted(d: $w::Drifted) -> $crate::helm::Drifted {
            $crate::helm::Drifted {
                api_version: d.api_version,
                kind: d.kind,
                namespace: d.namespace,
                name: d.name,
                reason: match d.reason {
                    $w::DriftReason::Missing => $crate::helm::DriftReason::Missing,
                    $w::DriftReason::Modified => $crate::helm::DriftReason::Modified,
                },
                fields: d.fields,
            }
        }

        fn from_step_record(r: $w::StepRecord) -> $crate::helm::StepRecord {
            $crate::helm::StepRecord {
                id: r.id,
                action: from_action(r.action),
                digest: r.digest,
                started: r.started,
                finished: r.finished,
                revision: r.revision,
                error: r.error,
                cancelled: r.cancelled,
            }
        }

        fn from_observation(o: $w::Observation) -> $crate::helm::Observation {
            $crate::helm::Observation {
                release: o.release.map(|s| $crate::helm::ReleaseState {
                    current: from_revision(s.current),
                    history: s.history.into_iter().map(from_revision).collect(),
                    inventory: s.inventory.map(|objects| {
                        objects
                            .into_iter()
                            .map(|o| $crate::helm::OwnedObject {
                                api_version: o.api_version,
                                kind: o.kind,
                                namespace: o.namespace,
                                name: o.name,
                            })
                            .collect()
                    }),
                }),
                tests: o
                    .tests
                    .into_iter()
                    .map(|t| $crate::helm::TestHook {
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

        fn to_action_options(o: &$crate::helm::ActionOptions) -> $w::ActionOptions {
            $w::ActionOptions {
                timeout_seconds: o.timeout_seconds,
                wait: match o.wait {
                    $crate::helm::WaitStrategy::Hooks => $w::WaitStrategy::Hooks,
                    $crate::helm::WaitStrategy::Ready => $w::WaitStrategy::Ready,
                },
                wait_for_jobs: o.wait_for_jobs,
                disable_hooks: o.disable_hooks,
            }
        }

        fn from_action(a: $w::Action) -> $crate::helm::Action {
            match a {
                $w::Action::Install => $crate::helm::Action::Install,
                $w::Action::Upgrade => $crate::helm::Action::Upgrade,
                $w::Action::Uninstall => $crate::helm::Action::Uninstall,
                $w::Action::Rollback => $crate::helm::Action::Rollback,
                $w::Action::Test => $crate::helm::Action::Test,
                $w::Action::Recover => $crate::helm::Action::Recover,
                $w::Action::Correct => $crate::helm::Action::Correct,
            }
        }

        fn from_revision(r: $w::Revision) -> $crate::helm::Revision {
            $crate::helm::Revision {
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
    };
}
