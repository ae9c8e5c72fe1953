//! `helm`: Helm releases in workload clusters, converged in the background ([`Releases`]). The checks at the
//! top of each call are the grant: `helm` granted; the kubeconfig Secret named by the object's spec (for an
//! uninstall, also by its status: [`super::reach`]); the chart from a source the operator allows
//! ([`ChartSources`]); the values and the actions within their budgets ([`limits`]). The release itself must be
//! the object's own ([`Owner`]). The kubeconfig goes from the management cluster to the Helm worker without
//! passing through the plugin, and the report carries no credential.

use std::sync::Arc;

use serde_json::Value;
use wasmtime::component::Resource;

use super::budget::{self, within};
use super::reach::{Reach, SecretScope};
use super::{CallContext, CallScope, Capability, HostError, HostFailure};
use crate::contract::Wakeups;
use crate::contract::bindings::omni::operator::helm as wit;
use crate::contract::bindings::omni::operator::types::SecretKeyRef;
use crate::helm::drift::{DriftError, Ignore, Reason, Target as DriftTarget};
use crate::helm::protocol::{ChartAuth, GitRef};
use crate::helm::releases::{
    self, ADOPT_ANNOTATION, ChartLocation, Cluster, InstallSettings, Observation, Outcome, Owner,
    Progress, Propagation, ReleaseError, Releases, Report, RollbackSettings, Running, Settings,
    StepRequest, TestSettings, UninstallSettings, UpgradeSettings, Wanted,
};
use crate::helm::storage::StoredRevision;
use crate::secrets::quoted;

mod auth;
mod limits;
mod sources;
mod values;

pub use limits::{ActionBudget, MAX_VALUES_BYTES, STARTS_PER_CALL};
use sources::SourceUrl;
pub use sources::{ChartSources, TargetNamespaces};

/// Helm refuses release names longer than this (its DNS-1123 rule plus room for revision suffixes).
const MAX_RELEASE_NAME: usize = 53;

/// What the `helm` capability serves with: the releases it converges, the sources it allows, and where it
/// wakes objects whose action ended.
#[derive(Debug, Clone)]
pub struct HelmServices {
    pub releases: Arc<Releases>,
    pub sources: ChartSources,
    /// The workload-cluster namespaces releases may live in.
    pub namespaces: TargetNamespaces,
    pub wakeups: Arc<Wakeups>,
    /// How many actions each plugin and object may start.
    pub budget: Arc<ActionBudget>,
}

impl Default for HelmServices {
    fn default() -> Self {
        HelmServices {
            releases: Arc::new(Releases::new(None, "this host runs no Helm")),
            sources: ChartSources::any(),
            namespaces: TargetNamespaces::default(),
            wakeups: Arc::default(),
            budget: Arc::default(),
        }
    }
}

/// What `helm` keeps for one call: the actions it started.
#[derive(Default)]
pub(crate) struct CallState {
    starts: u32,
}

super::capability_view!(
    /// The `helm` capability's view of a call.
    HelmCap,
    wit
);

impl CallScope {
    /// The grant checks every `helm` call shares, before anything else is looked at: `helm` granted, the
    /// kubeconfig Secret named by the object's spec (for an uninstall, also by the plugin's own status: the
    /// release must then still be the object's own, [`Owner`]) in a namespace in reach; then Helm's rules for the
    /// release name and namespace.
    fn helm_scope(
        &mut self,
        ctx: &Resource<CallContext>,
        kubeconfig: &SecretKeyRef,
        (name, namespace): (&str, &str),
        reach: Reach,
        what: &str,
    ) -> Result<SecretScope, HostFailure> {
        let scope = self.secret_scope(
            ctx,
            &[Capability::Helm],
            reach,
            kubeconfig.namespace.clone(),
            &kubeconfig.name,
            what,
        )?;
        check_release_name(name).map_err(|why| HostError::Invalid(format!("{what}: {why}")))?;
        check_namespace(namespace).map_err(|why| HostError::Invalid(format!("{what}: {why}")))?;
        if !self.services.helm.namespaces.allows(namespace) {
            let reason = format!(
                "namespace {namespace:?} is not among the operator's allowed target namespaces ({})",
                self.services.helm.namespaces.describe()
            );
            return Err(self.denied(Capability::Helm, what, &reason).into());
        }
        Ok(scope)
    }

    /// [`CallScope::helm_scope`] for a release named by reference.
    fn release_scope(
        &mut self,
        ctx: &Resource<CallContext>,
        release: &wit::ReleaseRef,
        reach: Reach,
        what: &str,
    ) -> Result<SecretScope, HostFailure> {
        self.helm_scope(
            ctx,
            &release.kubeconfig,
            (&release.name, &release.namespace),
            reach,
            what,
        )
    }

    /// Who the call reconciles, as `helm` keys releases, budgets and wake-ups by it.
    fn reconciled(&self, ctx: &Resource<CallContext>) -> Result<Reconciled, HostFailure> {
        let object = self.table.get(ctx)?.object_value();
        let text = |path: &str| {
            object
                .pointer(path)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let group = text("/apiVersion")
            .rsplit_once('/')
            .map_or(String::new(), |(g, _)| g.to_string());
        Ok(Reconciled {
            group,
            kind: text("/kind"),
            namespace: text("/metadata/namespace"),
            name: text("/metadata/name"),
            uid: text("/metadata/uid"),
            adopt: object
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(ADOPT_ANNOTATION))
                .and_then(Value::as_str)
                .map(str::to_string),
        })
    }

    /// The workload cluster behind the kubeconfig Secret of a checked scope, and the time left for the call.
    async fn helm_cluster(
        &mut self,
        ctx: &Resource<CallContext>,
        scope: SecretScope,
        kubeconfig: &SecretKeyRef,
        what: &str,
    ) -> Result<(Cluster, std::time::Duration), HostFailure> {
        let budget = self.budget(ctx, budget::SECRET)?;
        let clients = self.services.workloads.clone();
        let reading = format!("{what}: reading the kubeconfig Secret");
        let access = clients.access(
            &scope.management,
            &scope.namespace,
            &kubeconfig.name,
            &kubeconfig.key,
        );
        let (client, config) = within(&reading, budget, access).await?;
        let cluster = Cluster {
            id: format!("{}/{}/{}", scope.namespace, kubeconfig.name, kubeconfig.key),
            client,
            kubeconfig: config,
        };
        Ok((cluster, budget))
    }

    /// Checks a chart's location against the operator's allowed sources; answers whether to reach it over plain
    /// HTTP (an OCI registry the operator named).
    fn check_chart(&mut self, what: &str, location: &ChartLocation) -> Result<bool, HostFailure> {
        let source_url = match location {
            ChartLocation::Repository { url, name } => {
                if name.trim().is_empty() {
                    return Err(
                        HostError::Invalid(format!("{what}: the chart name is empty")).into(),
                    );
                }
                url.as_str()
            }
            ChartLocation::Oci(reference) => reference.as_str(),
            ChartLocation::Git { url, path, .. } => {
                // A path inside the repository: never absolute, never up and out.
                let escapes = path.starts_with('/')
                    || path.split('/').any(|segment| segment == "..")
                    || path.contains('\\');
                if escapes {
                    return Err(HostError::Invalid(format!(
                        "{what}: the chart path {path:?} must be relative and inside the repository"
                    ))
                    .into());
                }
                url.as_str()
            }
        };
        let parsed = SourceUrl::parse(source_url)
            .map_err(|why| HostError::Invalid(format!("{what}: chart source {why}")))?;
        let oci = matches!(location, ChartLocation::Oci(_));
        if oci != (parsed.scheme == "oci") {
            return Err(HostError::Invalid(format!(
                "{what}: an OCI chart is an oci:// reference, a repository or Git chart an http(s) URL"
            ))
            .into());
        }
        if !self.services.helm.sources.allows(&parsed) {
            let reason = format!(
                "chart source {source_url:?} is not among the operator's allowed chart sources ({})",
                self.services.helm.sources.describe()
            );
            return Err(self.denied(Capability::Helm, what, &reason).into());
        }
        Ok(self.services.helm.sources.plain_http(&parsed))
    }

    /// What a step's source resolves to: the chart's location (checked as for `ensure`), its version and the
    /// merged values, plus whether to reach the registry over plain HTTP. Referenced values are read here, from
    /// ConfigMaps and Secrets the object names in its own namespace.
    async fn release_source(
        &mut self,
        ctx: &Resource<CallContext>,
        what: &str,
        source: &wit::ReleaseSource,
    ) -> Result<Resolved, HostFailure> {
        let location = match &source.chart.location {
            wit::ChartLocation::Repository(r) => ChartLocation::Repository {
                url: r.url.clone(),
                name: r.name.clone(),
            },
            wit::ChartLocation::Oci(reference) => ChartLocation::Oci(reference.clone()),
            wit::ChartLocation::Git(g) => ChartLocation::Git {
                url: g.url.clone(),
                reference: match &g.reference {
                    wit::GitReference::Branch(b) => GitRef::Branch(b.clone()),
                    wit::GitReference::Tag(t) => GitRef::Tag(t.clone()),
                    wit::GitReference::Commit(c) => GitRef::Commit(c.clone()),
                },
                path: g.path.clone(),
            },
        };
        let plain_http = self.check_chart(what, &location)?;
        let auth = self.chart_auth(ctx, what, &source.chart).await?;
        let mut values = serde_json::Map::new();
        for (i, part) in source.values.iter().enumerate() {
            match part {
                wit::ValuesPart::Inline(text) => {
                    limits::check_part(i, text)
                        .map_err(|why| HostError::Invalid(format!("{what}: {why}")))?;
                    let Value::Object(part) = serde_json::from_str(text).map_err(|e| {
                        HostError::Invalid(format!("{what}: values part {i} is not JSON: {e}"))
                    })?
                    else {
                        return Err(HostError::Invalid(format!(
                            "{what}: values part {i} must be a JSON object"
                        ))
                        .into());
                    };
                    values::merge_values(&mut values, part);
                }
                wit::ValuesPart::Referenced(r) => {
                    let kind = values::kind_name(r.kind);
                    // Secret data goes to Helm, never to the plugin, but only for a plugin granted Secrets.
                    if r.kind == wit::ValuesKind::Secret && !self.grants.allows(Capability::Secrets)
                    {
                        let reason = "values from a Secret need the \"secrets\" grant";
                        return Err(self.denied(Capability::Secrets, what, reason).into());
                    }
                    let namespace =
                        self.named_local_source(ctx, Capability::Helm, kind, &r.name, what)?;
                    let budget = self.budget(ctx, budget::SECRET)?;
                    let Some(client) = self.services.management.clone() else {
                        return Err(HostError::Unavailable(format!(
                            "{what}: this host has no Kubernetes client for valuesFrom"
                        ))
                        .into());
                    };
                    let reading = format!("{what}: reading valuesFrom {kind} {:?}", r.name);
                    let text = within(&reading, budget, async {
                        values::read(&client, &namespace, r).await
                    })
                    .await?;
                    if let Some(text) = text {
                        values::merge_referenced(&mut values, &text, r, &namespace)?;
                    }
                }
            }
        }
        let values = Value::Object(values);
        limits::check_values(&values)
            .map_err(|why| HostError::Invalid(format!("{what}: {why}")))?;
        // A version constraint is resolved to the newest matching version, so the digest (and the revision) follow
        // new chart versions as they appear.
        let budget = self.budget(ctx, budget::CHART)?;
        let releases = self.services.helm.releases.clone();
        let resolving = format!("{what}: resolving chart version {:?}", source.chart.version);
        let version = within(&resolving, budget, async {
            releases
                .resolve_version(&location, &source.chart.version, plain_http, auth.as_ref())
                .await
                .map_err(|e| release_error(what, e))
        })
        .await?;
        Ok(Resolved {
            location,
            version,
            values,
            plain_http,
            auth,
        })
    }

    /// The credentials and TLS material the chart source's Secrets hold; each Secret must be named by the object
    /// in its own namespace, and the plugin granted Secrets.
    async fn chart_auth(
        &mut self,
        ctx: &Resource<CallContext>,
        what: &str,
        chart: &wit::ChartPull,
    ) -> Result<Option<ChartAuth>, HostFailure> {
        if chart.credentials.is_none() && chart.tls.is_none() {
            return Ok(None);
        }
        if !self.grants.allows(Capability::Secrets) {
            let reason = "chart credentials from a Secret need the \"secrets\" grant";
            return Err(self.denied(Capability::Secrets, what, reason).into());
        }
        let mut found = ChartAuth::default();
        for (name, is_tls) in [(&chart.credentials, false), (&chart.tls, true)] {
            let Some(name) = name else { continue };
            let namespace = self.named_local_source(ctx, Capability::Helm, "Secret", name, what)?;
            let budget = self.budget(ctx, budget::SECRET)?;
            let Some(client) = self.services.management.clone() else {
                return Err(HostError::Unavailable(format!(
                    "{what}: this host has no Kubernetes client for chart credentials"
                ))
                .into());
            };
            let reading = format!("{what}: reading chart Secret {name:?}");
            within(&reading, budget, async {
                if is_tls {
                    auth::tls(&client, &namespace, name, &mut found, what).await
                } else {
                    auth::credentials(&client, &namespace, name, &mut found, what).await
                }
            })
            .await?;
        }
        Ok(Some(found))
    }

    /// An install or upgrade step as the release wanted.
    async fn apply_request(
        &mut self,
        ctx: &Resource<CallContext>,
        what: &str,
        a: &wit::ApplyRequest,
    ) -> Result<Wanted, HostFailure> {
        let Resolved {
            location: chart,
            version,
            values,
            plain_http,
            auth,
        } = self.release_source(ctx, what, &a.source).await?;
        let skip_crds = a.crds == wit::CrdPolicy::Skip;
        let replace_crds = a.crds == wit::CrdPolicy::CreateReplace;
        Ok(Wanted {
            chart,
            version,
            values,
            settings: settings(&a.options),
            install: InstallSettings {
                create_namespace: a.create_namespace,
                skip_crds,
                rollback_on_failure: a.rollback_on_failure,
                replace: a.replace,
                replace_crds,
            },
            upgrade: UpgradeSettings {
                skip_crds,
                rollback_on_failure: a.rollback_on_failure,
                cleanup_on_fail: a.cleanup_on_fail,
                max_history: a.max_history,
                force: a.force,
                replace_crds,
            },
            plain_http,
            auth,
        })
    }

    /// Charges one Helm action to this call, the plugin and the object ([`limits`]): over any of them the start is
    /// refused as `unavailable`, with the time to wait when there is one.
    fn take_start(&mut self, who: &Reconciled, what: &str) -> Result<(), HostFailure> {
        self.helm.starts += 1;
        if self.helm.starts > STARTS_PER_CALL {
            return Err(HostError::Unavailable(format!(
                "{what}: a call may start at most {STARTS_PER_CALL} Helm actions"
            ))
            .into());
        }
        let key = format!("{}/{}/{}", who.kind, who.namespace, who.name);
        if let Err(wait) =
            self.services
                .helm
                .budget
                .take(&self.plugin, &key, std::time::Instant::now())
        {
            tracing::warn!(plugin = %self.plugin, object = %key, "a Helm action was refused: over the plugin's or the object's action budget");
            return Err(HostError::Unavailable(format!(
                "{what}: over the Helm action budget of the plugin or this object; retry in {} s",
                wait.as_secs().max(1)
            ))
            .into());
        }
        Ok(())
    }

    /// Wakes the reconciled object when a background action it started ends.
    fn helm_wake(&self, who: &Reconciled) -> releases::Wake {
        let (group, kind, name) = (who.group.clone(), who.kind.clone(), who.name.clone());
        let namespace = Some(who.namespace.clone()).filter(|ns| !ns.is_empty());
        let wakeups = self.services.helm.wakeups.clone();
        Arc::new(move || {
            wakeups.wake(&group, &kind, (namespace.clone(), name.clone()));
        })
    }
}

/// The reconciled object, as `helm` names it.
struct Reconciled {
    group: String,
    kind: String,
    namespace: String,
    name: String,
    uid: String,
    /// The release its user asked to adopt (`namespace/name`), if any.
    adopt: Option<String>,
}

impl Reconciled {
    /// The object as the owner of release `namespace/name`: its identity and UID, and whether its user
    /// annotated it to adopt exactly this release ([`ADOPT_ANNOTATION`]). Read from the object as the host
    /// observed it; a plugin cannot write annotations.
    fn owner_of(&self, namespace: &str, name: &str) -> Owner {
        let adopt = self
            .adopt
            .as_ref()
            .is_some_and(|wanted| *wanted == format!("{namespace}/{name}"));
        Owner::new(
            &self.group,
            &self.kind,
            &self.namespace,
            &self.name,
            &self.uid,
            adopt,
        )
    }
}

/// What a release source resolves to.
struct Resolved {
    location: ChartLocation,
    /// The exact version (a constraint resolved).
    version: String,
    /// The merged values, a JSON object.
    values: Value,
    plain_http: bool,
    auth: Option<ChartAuth>,
}

fn check_release_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_RELEASE_NAME {
        return Err(format!(
            "release name {name:?} must have 1 to {MAX_RELEASE_NAME} characters"
        ));
    }
    if !dns_subdomain(name) {
        return Err(format!(
            "release name {name:?} must consist of lower-case letters, digits, '-' and '.', and start and end \
             with a letter or digit"
        ));
    }
    Ok(())
}

fn check_namespace(namespace: &str) -> Result<(), String> {
    let label = namespace.len() <= 63 && dns_subdomain(namespace) && !namespace.contains('.');
    if label {
        Ok(())
    } else {
        Err(format!(
            "namespace {namespace:?} is not a valid namespace name"
        ))
    }
}

fn dns_subdomain(text: &str) -> bool {
    !text.is_empty()
        && text.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        })
}

fn settings(o: &wit::ActionOptions) -> Settings {
    Settings {
        timeout_seconds: o.timeout_seconds.max(1),
        wait_ready: o.wait == wit::WaitStrategy::Ready,
        wait_for_jobs: o.wait_for_jobs,
        disable_hooks: o.disable_hooks,
    }
}

/// A release failure as the plugin sees it: a workload cluster that did not answer is `unavailable`; one that
/// refused is `unauthenticated`/`forbidden`; another action running, or a release that is not the object's own,
/// is `conflict`; release Secrets that do not decode are `other`.
fn release_error(what: &str, e: ReleaseError) -> HostError {
    match e {
        ReleaseError::Unavailable(why) => HostError::Unavailable(why),
        ReleaseError::Storage(crate::helm::storage::StorageError::Kube { source, .. }) => {
            HostError::from_kube(&format!("{what}: reading the release"), source)
        }
        ReleaseError::Storage(other) => HostError::Other(format!("{what}: {other}")),
        e @ ReleaseError::Busy(_) => HostError::Conflict(format!("{what}: {e}")),
        ReleaseError::Inapplicable(why) => HostError::Invalid(format!("{what}: {why}")),
        e @ ReleaseError::Resolve { .. } => HostError::Other(format!("{what}: {e}")),
        ReleaseError::Drift(DriftError::Kube { object, source }) => {
            HostError::from_kube(&format!("{what}: {object}"), source)
        }
        ReleaseError::Drift(other) => HostError::Other(format!("{what}: {other}")),
        // Another object's release is left alone, as a Secret without the object's owner label is.
        e @ ReleaseError::NotOwned { .. } => HostError::Conflict(format!("{what}: {e}")),
    }
}

fn to_action(a: releases::Action) -> wit::Action {
    match a {
        releases::Action::Install => wit::Action::Install,
        releases::Action::Upgrade => wit::Action::Upgrade,
        releases::Action::Uninstall => wit::Action::Uninstall,
        releases::Action::Rollback => wit::Action::Rollback,
        releases::Action::Test => wit::Action::Test,
        releases::Action::Recover => wit::Action::Recover,
        releases::Action::Correct => wit::Action::Correct,
    }
}

fn to_revision(r: StoredRevision) -> wit::Revision {
    wit::Revision {
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

fn drift_ignore(i: &wit::DriftIgnore) -> Ignore {
    Ignore {
        paths: i.paths.clone(),
        target: i.target.as_ref().map(|t| DriftTarget {
            group: t.group.clone(),
            version: t.version.clone(),
            kind: t.kind.clone(),
            name: t.name.clone(),
            namespace: t.namespace.clone(),
        }),
    }
}

fn running_record(r: Running) -> wit::StepRecord {
    wit::StepRecord {
        id: r.id,
        action: to_action(r.action),
        digest: r.digest,
        started: r.started,
        finished: String::new(),
        revision: 0,
        error: None,
    }
}

fn outcome_record(o: Outcome) -> wit::StepRecord {
    wit::StepRecord {
        id: o.id,
        action: to_action(o.action),
        digest: o.digest,
        started: o.started,
        finished: o.finished,
        revision: o.revision,
        error: o.error,
    }
}

fn release_state(revisions: Vec<StoredRevision>) -> Option<wit::ReleaseState> {
    let mut revisions = revisions.into_iter();
    revisions.next().map(|current| wit::ReleaseState {
        current: to_revision(current),
        history: revisions.map(to_revision).collect(),
    })
}

fn to_observation(o: Observation, wanted: String, chart_version: String) -> wit::Observation {
    let tests = o
        .revisions
        .first()
        .map(|r| {
            r.tests
                .iter()
                .map(|t| wit::TestHook {
                    name: t.name.clone(),
                    phase: t.phase.clone(),
                    started: t.started.clone(),
                    completed: t.completed.clone(),
                })
                .collect()
        })
        .unwrap_or_default();
    wit::Observation {
        release: release_state(o.revisions),
        tests,
        running: o.running.map(running_record),
        last: o.last.map(outcome_record),
        wanted,
        chart_version,
    }
}

fn to_report(r: Report) -> wit::ReleaseReport {
    wit::ReleaseReport {
        release: release_state(r.revisions),
        progress: match r.progress {
            Progress::Idle => wit::Progress::Idle,
            Progress::Running(a) => wit::Progress::Running(to_action(a)),
            Progress::RetryAfter(d) => {
                wit::Progress::RetryAfter(u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1))
            }
        },
        last: r.last.map(|l| wit::ActionOutcome {
            action: to_action(l.action),
            revision: l.revision,
            error: l.error,
            finished: l.finished,
            digest: l.digest,
        }),
        wanted: r.wanted,
    }
}

impl wit::Host for HelmCap<'_> {
    async fn ensure(
        &mut self,
        ctx: Resource<CallContext>,
        spec: wit::ReleaseSpec,
    ) -> Result<wit::ReleaseReport, HostFailure> {
        let what = format!("Helm release {}", quoted(&spec.namespace, &spec.name));
        let release = (spec.name.as_str(), spec.namespace.as_str());
        let scope = self.helm_scope(&ctx, &spec.kubeconfig, release, Reach::Spec, &what)?;
        let who = self.reconciled(&ctx)?;
        let owner = who.owner_of(&spec.namespace, &spec.name);
        limits::check_part(0, &spec.values)
            .map_err(|why| HostError::Invalid(format!("{what}: {why}")))?;
        self.take_start(&who, &what)?;
        let values: Value = serde_json::from_str(&spec.values)
            .map_err(|e| HostError::Invalid(format!("{what}: values are not JSON: {e}")))?;
        if !values.is_object() {
            return Err(HostError::Invalid(format!("{what}: values must be a JSON object")).into());
        }
        limits::check_values(&values)
            .map_err(|why| HostError::Invalid(format!("{what}: {why}")))?;
        let location = match &spec.chart.source {
            wit::ChartSource::Repository(r) => ChartLocation::Repository {
                url: r.url.clone(),
                name: r.name.clone(),
            },
            wit::ChartSource::Oci(reference) => ChartLocation::Oci(reference.clone()),
        };
        let plain_http = self.check_chart(&what, &location)?;
        let (cluster, budget) = self
            .helm_cluster(&ctx, scope, &spec.kubeconfig, &what)
            .await?;
        let wanted = Wanted {
            chart: location,
            version: spec.chart.version.clone(),
            values,
            settings: settings(&spec.options),
            install: InstallSettings {
                create_namespace: spec.install.create_namespace,
                skip_crds: spec.install.skip_crds,
                rollback_on_failure: spec.install.rollback_on_failure,
                replace: false,
                replace_crds: false,
            },
            upgrade: UpgradeSettings {
                skip_crds: spec.upgrade.skip_crds,
                rollback_on_failure: spec.upgrade.rollback_on_failure,
                cleanup_on_fail: spec.upgrade.cleanup_on_fail,
                max_history: spec.upgrade.max_history,
                force: false,
                replace_crds: false,
            },
            plain_http,
            auth: None,
        };
        let wake = self.helm_wake(&who);
        let releases = self.services.helm.releases.clone();
        let op = async {
            releases
                .ensure(&cluster, &spec.namespace, &spec.name, &wanted, &owner, wake)
                .await
                .map_err(|e| release_error(&what, e))
        };
        let answer = within(&what, budget, op).await?;
        Ok(to_report(answer))
    }

    async fn uninstall(
        &mut self,
        ctx: Resource<CallContext>,
        spec: wit::UninstallSpec,
    ) -> Result<wit::ReleaseReport, HostFailure> {
        let what = format!(
            "uninstall Helm release {}",
            quoted(&spec.namespace, &spec.name)
        );
        let release = (spec.name.as_str(), spec.namespace.as_str());
        let scope = self.helm_scope(&ctx, &spec.kubeconfig, release, Reach::Cleanup, &what)?;
        let who = self.reconciled(&ctx)?;
        let owner = who.owner_of(&spec.namespace, &spec.name);
        let (cluster, budget) = self
            .helm_cluster(&ctx, scope, &spec.kubeconfig, &what)
            .await?;
        let wake = self.helm_wake(&who);
        let releases = self.services.helm.releases.clone();
        let op = async {
            releases
                .uninstall(
                    (&cluster, &owner),
                    &spec.namespace,
                    &spec.name,
                    (settings(&spec.options), spec.keep_history),
                    wake,
                )
                .await
                .map_err(|e| release_error(&what, e))
        };
        let answer = within(&what, budget, op).await?;
        Ok(to_report(answer))
    }

    async fn observe(
        &mut self,
        ctx: Resource<CallContext>,
        release: wit::ReleaseRef,
        source: Option<wit::ReleaseSource>,
    ) -> Result<wit::Observation, HostFailure> {
        let what = format!("Helm release {}", quoted(&release.namespace, &release.name));
        let scope = self.release_scope(&ctx, &release, Reach::Spec, &what)?;
        let who = self.reconciled(&ctx)?;
        let owner = who.owner_of(&release.namespace, &release.name);
        let (wanted, chart_version) = match &source {
            Some(source) => {
                let r = self.release_source(&ctx, &what, source).await?;
                (
                    releases::source_digest(&r.location, &r.version, &r.values),
                    r.version,
                )
            }
            None => (String::new(), String::new()),
        };
        let (cluster, budget) = self
            .helm_cluster(&ctx, scope, &release.kubeconfig, &what)
            .await?;
        let releases = self.services.helm.releases.clone();
        let op = async {
            releases
                .observe(&cluster, &release.namespace, &release.name, &owner)
                .await
                .map_err(|e| release_error(&what, e))
        };
        let answer = within(&what, budget, op).await?;
        let observed = answer;
        Ok(to_observation(observed, wanted, chart_version))
    }

    async fn detect_drift(
        &mut self,
        ctx: Resource<CallContext>,
        release: wit::ReleaseRef,
        ignore: Vec<wit::DriftIgnore>,
    ) -> Result<Vec<wit::Drifted>, HostFailure> {
        let what = format!(
            "drift of Helm release {}",
            quoted(&release.namespace, &release.name)
        );
        let scope = self.release_scope(&ctx, &release, Reach::Spec, &what)?;
        let who = self.reconciled(&ctx)?;
        let owner = who.owner_of(&release.namespace, &release.name);
        let ignore: Vec<Ignore> = ignore.iter().map(drift_ignore).collect();
        let (cluster, budget) = self
            .helm_cluster(&ctx, scope, &release.kubeconfig, &what)
            .await?;
        let releases = self.services.helm.releases.clone();
        let op = async {
            releases
                .drift(&cluster, &release.namespace, &release.name, &ignore, &owner)
                .await
                .map_err(|e| release_error(&what, e))
        };
        let answer = within(&what, budget, op).await?;
        let drifted = answer;
        Ok(drifted
            .into_iter()
            .map(|d| wit::Drifted {
                api_version: d.api_version,
                kind: d.kind,
                namespace: d.namespace,
                name: d.name,
                reason: match d.reason {
                    Reason::Missing => wit::DriftReason::Missing,
                    Reason::Modified => wit::DriftReason::Modified,
                },
                fields: d.fields,
            })
            .collect())
    }

    async fn start(
        &mut self,
        ctx: Resource<CallContext>,
        release: wit::ReleaseRef,
        step: wit::Step,
    ) -> Result<wit::StepRecord, HostFailure> {
        let what = format!("Helm release {}", quoted(&release.namespace, &release.name));
        // Only an uninstall may go through a kubeconfig the plugin's status names: cleaning up a release this
        // object made (the ownership check below holds it to that).
        let reach = match step {
            wit::Step::Uninstall(_) => Reach::Cleanup,
            _ => Reach::Spec,
        };
        let scope = self.release_scope(&ctx, &release, reach, &what)?;
        let who = self.reconciled(&ctx)?;
        let owner = who.owner_of(&release.namespace, &release.name);
        let request = match &step {
            wit::Step::Install(a) | wit::Step::Upgrade(a) => {
                let wanted = self.apply_request(&ctx, &what, a).await?;
                if matches!(step, wit::Step::Install(_)) {
                    StepRequest::Install(Box::new(wanted))
                } else {
                    StepRequest::Upgrade(Box::new(wanted))
                }
            }
            wit::Step::Rollback(r) => StepRequest::Rollback(RollbackSettings {
                revision: r.revision,
                settings: settings(&r.options),
                force: r.force,
                cleanup_on_fail: r.cleanup_on_fail,
                max_history: r.max_history,
            }),
            wit::Step::Uninstall(u) => StepRequest::Uninstall(UninstallSettings {
                settings: settings(&u.options),
                keep_history: u.keep_history,
                propagation: match u.propagation {
                    wit::DeletionPropagation::Background => Propagation::Background,
                    wit::DeletionPropagation::Foreground => Propagation::Foreground,
                    wit::DeletionPropagation::Orphan => Propagation::Orphan,
                },
            }),
            wit::Step::Test(t) => {
                let names = |exclude: bool| {
                    t.filters
                        .iter()
                        .filter(|f| f.exclude == exclude)
                        .map(|f| f.name.clone())
                        .collect()
                };
                StepRequest::Test(TestSettings {
                    timeout_seconds: t.timeout_seconds.max(1),
                    include: names(false),
                    exclude: names(true),
                })
            }
            wit::Step::Unlock => StepRequest::Unlock,
            wit::Step::CorrectDrift(ignore) => {
                StepRequest::CorrectDrift(ignore.iter().map(drift_ignore).collect())
            }
        };
        let (cluster, budget) = self
            .helm_cluster(&ctx, scope, &release.kubeconfig, &what)
            .await?;
        self.take_start(&who, &what)?;
        let wake = self.helm_wake(&who);
        let releases = self.services.helm.releases.clone();
        let op = async {
            releases
                .start(
                    &cluster,
                    &release.namespace,
                    &release.name,
                    request,
                    &owner,
                    wake,
                )
                .await
                .map_err(|e| release_error(&what, e))
        };
        let answer = within(&what, budget, op).await?;
        Ok(running_record(answer))
    }

    async fn status(
        &mut self,
        ctx: Resource<CallContext>,
        kubeconfig: SecretKeyRef,
        name: String,
        namespace: String,
    ) -> Result<wit::ReleaseReport, HostFailure> {
        let what = format!("Helm release {}", quoted(&namespace, &name));
        let release = (name.as_str(), namespace.as_str());
        let scope = self.helm_scope(&ctx, &kubeconfig, release, Reach::Spec, &what)?;
        let who = self.reconciled(&ctx)?;
        let owner = who.owner_of(&namespace, &name);
        let (cluster, budget) = self.helm_cluster(&ctx, scope, &kubeconfig, &what).await?;
        let releases = self.services.helm.releases.clone();
        let op = async {
            releases
                .status(&cluster, &namespace, &name, &owner)
                .await
                .map_err(|e| release_error(&what, e))
        };
        let answer = within(&what, budget, op).await?;
        Ok(to_report(answer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_names_and_namespaces_follow_helms_rules() {
        assert!(check_release_name("demo").is_ok());
        assert!(check_release_name("my.app-1").is_ok());
        assert!(check_release_name(&"a".repeat(53)).is_ok());
        assert!(check_release_name(&"a".repeat(54)).is_err());
        for bad in ["", "Demo", "-x", "x-", "a_b", "a..b"] {
            assert!(check_release_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_namespace("apps").is_ok());
        assert!(check_namespace("a.b").is_err());
        assert!(check_namespace(&"a".repeat(64)).is_err());
    }
}
