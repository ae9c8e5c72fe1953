//! `helm`: Helm releases in workload clusters, converged in the background ([`Releases`]). The checks at the
//! top of each call are the grant: `helm` granted; the kubeconfig Secret named by the object (as for
//! `workload`); the chart from a source the operator allows ([`ChartSources`]). The kubeconfig goes from the
//! management cluster to the Helm worker without passing through the plugin, and the report carries no
//! credential.

use std::sync::Arc;

use serde_json::Value;
use wasmtime::component::Resource;

use super::budget::{self, within};
use super::secrets::{Reach, SecretScope};
use super::{CallContext, CallScope, Capability, HostError, HostFailure};
use crate::contract::Wakeups;
use crate::contract::bindings::omni::operator::helm as wit;
use crate::contract::bindings::omni::operator::types::SecretKeyRef;
use crate::helm::releases::{
    self, ChartLocation, Cluster, InstallSettings, Observation, Outcome, Progress, Propagation,
    ReleaseError, Releases, Report, RollbackSettings, Running, Settings, StepRequest,
    TestSettings, UninstallSettings, UpgradeSettings, Wanted,
};
use crate::helm::storage::StoredRevision;
use crate::secrets::quoted;

/// Helm refuses release names longer than this (its DNS-1123 rule plus room for revision suffixes).
const MAX_RELEASE_NAME: usize = 53;

/// The chart sources the operator allows (`--helm-chart-source`): a chart is allowed when its repository URL or
/// OCI reference lies under one of these, compared by scheme, host and port exactly and by whole path segments,
/// so `https://charts.example.com/team` allows `https://charts.example.com/team/x` but neither
/// `https://charts.example.com/teamx` nor `https://charts.example.com.evil.test/team`. With none configured
/// every source is allowed, as the Go operator allowed every source.
#[derive(Debug, Clone, Default)]
pub struct ChartSources {
    allowed: Vec<SourceUrl>,
    /// OCI registries (`host:port`, lower-cased) reached over plain HTTP: the operator's list, as Docker's
    /// insecure registries are the daemon's; never something a plugin or an object can ask for.
    plain_http: Vec<String>,
}

/// A chart location split for comparison: scheme, authority (host and port, lower-cased) and path segments.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SourceUrl {
    scheme: String,
    authority: String,
    segments: Vec<String>,
}

impl SourceUrl {
    /// Parses `scheme://authority/path`; only `http`, `https` and `oci`; no user-info, query or fragment (a
    /// credential in a URL would end up in status and logs).
    fn parse(text: &str) -> Result<SourceUrl, String> {
        let (scheme, rest) = text
            .split_once("://")
            .ok_or_else(|| format!("{text:?} is not an absolute URL"))?;
        let scheme = scheme.to_ascii_lowercase();
        if !matches!(scheme.as_str(), "http" | "https" | "oci") {
            return Err(format!("{text:?}: the scheme must be http, https or oci"));
        }
        if rest.contains(['?', '#']) {
            return Err(format!("{text:?}: a chart source has no query or fragment"));
        }
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        if authority.is_empty() {
            return Err(format!("{text:?} has no host"));
        }
        if authority.contains('@') {
            return Err(format!(
                "{text:?}: credentials do not belong in a chart URL"
            ));
        }
        let segments: Vec<String> = path
            .split('/')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        if segments.iter().any(|s| s == "." || s == "..") {
            return Err(format!(
                "{text:?}: `.` and `..` are not allowed in a chart source"
            ));
        }
        Ok(SourceUrl {
            scheme,
            authority: authority.to_ascii_lowercase(),
            segments,
        })
    }

    fn within(&self, allowed: &SourceUrl) -> bool {
        self.scheme == allowed.scheme
            && self.authority == allowed.authority
            && self.segments.starts_with(&allowed.segments)
    }
}

impl ChartSources {
    /// Every source allowed.
    pub fn any() -> Self {
        ChartSources::default()
    }

    /// Only charts under these URLs (`https://…`, `http://…`, `oci://…`).
    pub fn only<I, S>(sources: I) -> Result<Self, String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let allowed = sources
            .into_iter()
            .map(|s| SourceUrl::parse(s.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ChartSources {
            allowed,
            plain_http: Vec::new(),
        })
    }

    /// Reach these OCI registries (`host:port`) over plain HTTP.
    pub fn with_plain_http<I, S>(mut self, registries: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.plain_http = registries
            .into_iter()
            .map(|r| r.as_ref().to_ascii_lowercase())
            .collect();
        self
    }

    fn plain_http(&self, source: &SourceUrl) -> bool {
        source.scheme == "oci" && self.plain_http.contains(&source.authority)
    }

    fn allows(&self, source: &SourceUrl) -> bool {
        self.allowed.is_empty() || self.allowed.iter().any(|a| source.within(a))
    }

    /// The allowed sources as the operator was given them, for messages.
    fn describe(&self) -> String {
        self.allowed
            .iter()
            .map(|a| format!("{}://{}/{}", a.scheme, a.authority, a.segments.join("/")))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What the `helm` capability serves with: the releases it converges, the sources it allows, and where it
/// wakes objects whose action ended.
#[derive(Debug, Clone)]
pub struct HelmServices {
    pub releases: Arc<Releases>,
    pub sources: ChartSources,
    pub wakeups: Arc<Wakeups>,
}

impl Default for HelmServices {
    fn default() -> Self {
        HelmServices {
            releases: Arc::new(Releases::new(None, "this host runs no Helm")),
            sources: ChartSources::any(),
            wakeups: Arc::default(),
        }
    }
}

super::capability_view!(
    /// The `helm` capability's view of a call.
    HelmCap,
    wit
);

impl CallScope {
    /// The grant checks every `helm` call shares, before anything else is looked at: `helm` granted, the
    /// kubeconfig Secret named by the object (or its own status, as for `workload`: the host uses it, the plugin
    /// never sees it) in a namespace in reach; then Helm's rules for the release name and namespace.
    fn helm_scope(
        &mut self,
        ctx: &Resource<CallContext>,
        kubeconfig: &SecretKeyRef,
        name: &str,
        namespace: &str,
        what: &str,
    ) -> Result<SecretScope, HostFailure> {
        let scope = self.secret_scope(
            ctx,
            &[Capability::Helm],
            Reach::Owned,
            kubeconfig.namespace.clone(),
            &kubeconfig.name,
            what,
        )?;
        check_release_name(name).map_err(|why| HostError::Invalid(format!("{what}: {why}")))?;
        check_namespace(namespace).map_err(|why| HostError::Invalid(format!("{what}: {why}")))?;
        Ok(scope)
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
        };
        let parsed = SourceUrl::parse(source_url)
            .map_err(|why| HostError::Invalid(format!("{what}: chart source {why}")))?;
        let oci = matches!(location, ChartLocation::Oci(_));
        if oci != (parsed.scheme == "oci") {
            return Err(HostError::Invalid(format!(
                "{what}: an OCI chart is an oci:// reference, a repository chart an http(s) URL"
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
    /// merged values, plus whether to reach the registry over plain HTTP.
    fn release_source(
        &mut self,
        what: &str,
        source: &wit::ReleaseSource,
    ) -> Result<(ChartLocation, String, Value, bool), HostFailure> {
        let not_yet = |feature: &str| -> HostFailure {
            HostError::Unavailable(format!("{what}: {feature} are not supported by this host yet")).into()
        };
        let location = match &source.chart.location {
            wit::ChartLocation::Repository(r) => ChartLocation::Repository {
                url: r.url.clone(),
                name: r.name.clone(),
            },
            wit::ChartLocation::Oci(reference) => ChartLocation::Oci(reference.clone()),
            wit::ChartLocation::Git(_) => return Err(not_yet("charts from Git repositories")),
        };
        if source.chart.credentials.is_some() || source.chart.tls.is_some() {
            return Err(not_yet("chart credentials and TLS settings"));
        }
        let plain_http = self.check_chart(what, &location)?;
        let mut values = serde_json::Map::new();
        for (i, part) in source.values.iter().enumerate() {
            match part {
                wit::ValuesPart::Inline(text) => {
                    let Value::Object(part) = serde_json::from_str(text).map_err(|e| {
                        HostError::Invalid(format!("{what}: values part {i} is not JSON: {e}"))
                    })?
                    else {
                        return Err(HostError::Invalid(format!(
                            "{what}: values part {i} must be a JSON object"
                        ))
                        .into());
                    };
                    merge_values(&mut values, part);
                }
                wit::ValuesPart::Referenced(_) => {
                    return Err(not_yet("values from ConfigMaps and Secrets"));
                }
            }
        }
        Ok((
            location,
            source.chart.version.clone(),
            Value::Object(values),
            plain_http,
        ))
    }

    /// An install or upgrade step as the release wanted.
    fn apply_request(&mut self, what: &str, a: &wit::ApplyRequest) -> Result<Wanted, HostFailure> {
        let (chart, version, values, plain_http) = self.release_source(what, &a.source)?;
        if a.crds == wit::CrdPolicy::CreateReplace {
            return Err(HostError::Unavailable(format!(
                "{what}: the CRD policy CreateReplace is not supported by this host yet"
            ))
            .into());
        }
        let skip_crds = a.crds == wit::CrdPolicy::Skip;
        Ok(Wanted {
            chart,
            version,
            values,
            settings: settings(&a.options),
            install: InstallSettings {
                create_namespace: a.create_namespace,
                skip_crds,
                rollback_on_failure: false,
                replace: a.replace,
            },
            upgrade: UpgradeSettings {
                skip_crds,
                rollback_on_failure: false,
                cleanup_on_fail: a.cleanup_on_fail,
                max_history: a.max_history,
                force: a.force,
            },
            plain_http,
        })
    }

    /// Wakes the reconciled object when a background action it started ends.
    fn helm_wake(&self, ctx: &Resource<CallContext>) -> Result<releases::Wake, HostFailure> {
        let object = self.table.get(ctx)?.object_value();
        let text = |path: &str| {
            object
                .pointer(path)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let api_version = text("/apiVersion");
        let group = api_version
            .rsplit_once('/')
            .map_or(String::new(), |(g, _)| g.to_string());
        let (kind, name) = (text("/kind"), text("/metadata/name"));
        let namespace = Some(text("/metadata/namespace")).filter(|ns| !ns.is_empty());
        let wakeups = self.services.helm.wakeups.clone();
        Ok(Arc::new(move || {
            wakeups.wake(&group, &kind, (namespace.clone(), name.clone()));
        }))
    }
}

/// Merges `over` into `base` as Helm merges values files: objects key by key, recursively; anything else in
/// `over` replaces what `base` had.
fn merge_values(base: &mut serde_json::Map<String, Value>, over: serde_json::Map<String, Value>) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(Value::Object(b)), Value::Object(o)) => merge_values(b, o),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
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
/// refused is `unauthenticated`/`forbidden`; release Secrets that do not decode are `other`.
fn release_error(what: &str, e: ReleaseError) -> HostError {
    match e {
        ReleaseError::Unavailable(why) => HostError::Unavailable(why),
        ReleaseError::Storage(crate::helm::storage::StorageError::Kube { source, .. }) => {
            HostError::from_kube(&format!("{what}: reading the release"), source)
        }
        ReleaseError::Storage(other) => HostError::Other(format!("{what}: {other}")),
        e @ ReleaseError::Busy(_) => HostError::Conflict(format!("{what}: {e}")),
        ReleaseError::Inapplicable(why) => HostError::Invalid(format!("{what}: {why}")),
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
        let scope = self.helm_scope(&ctx, &spec.kubeconfig, &spec.name, &spec.namespace, &what)?;
        let values: Value = serde_json::from_str(&spec.values)
            .map_err(|e| HostError::Invalid(format!("{what}: values are not JSON: {e}")))?;
        if !values.is_object() {
            return Err(HostError::Invalid(format!("{what}: values must be a JSON object")).into());
        }
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
            },
            upgrade: UpgradeSettings {
                skip_crds: spec.upgrade.skip_crds,
                rollback_on_failure: spec.upgrade.rollback_on_failure,
                cleanup_on_fail: spec.upgrade.cleanup_on_fail,
                max_history: spec.upgrade.max_history,
                force: false,
            },
            plain_http,
        };
        let wake = self.helm_wake(&ctx)?;
        let releases = self.services.helm.releases.clone();
        let op = async {
            releases
                .ensure(&cluster, &spec.namespace, &spec.name, &wanted, wake)
                .await
                .map_err(|e| release_error(&what, e))
        };
        Ok(to_report(within(&what, budget, op).await?))
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
        let scope = self.helm_scope(&ctx, &spec.kubeconfig, &spec.name, &spec.namespace, &what)?;
        let (cluster, budget) = self
            .helm_cluster(&ctx, scope, &spec.kubeconfig, &what)
            .await?;
        let wake = self.helm_wake(&ctx)?;
        let releases = self.services.helm.releases.clone();
        let op = async {
            releases
                .uninstall(
                    &cluster,
                    &spec.namespace,
                    &spec.name,
                    settings(&spec.options),
                    spec.keep_history,
                    wake,
                )
                .await
                .map_err(|e| release_error(&what, e))
        };
        Ok(to_report(within(&what, budget, op).await?))
    }

    async fn observe(
        &mut self,
        ctx: Resource<CallContext>,
        release: wit::ReleaseRef,
        source: Option<wit::ReleaseSource>,
    ) -> Result<wit::Observation, HostFailure> {
        let what = format!("Helm release {}", quoted(&release.namespace, &release.name));
        let scope = self.helm_scope(
            &ctx,
            &release.kubeconfig,
            &release.name,
            &release.namespace,
            &what,
        )?;
        let (wanted, chart_version) = match &source {
            Some(source) => {
                let (location, version, values, _) = self.release_source(&what, source)?;
                (
                    releases::source_digest(&location, &version, &values),
                    version,
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
                .observe(&cluster, &release.namespace, &release.name)
                .await
                .map_err(|e| release_error(&what, e))
        };
        let observed = within(&what, budget, op).await?;
        Ok(to_observation(observed, wanted, chart_version))
    }

    async fn start(
        &mut self,
        ctx: Resource<CallContext>,
        release: wit::ReleaseRef,
        step: wit::Step,
    ) -> Result<wit::StepRecord, HostFailure> {
        let what = format!("Helm release {}", quoted(&release.namespace, &release.name));
        let scope = self.helm_scope(
            &ctx,
            &release.kubeconfig,
            &release.name,
            &release.namespace,
            &what,
        )?;
        let request = match &step {
            wit::Step::Install(a) | wit::Step::Upgrade(a) => {
                let wanted = self.apply_request(&what, a)?;
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
        };
        let (cluster, budget) = self
            .helm_cluster(&ctx, scope, &release.kubeconfig, &what)
            .await?;
        let wake = self.helm_wake(&ctx)?;
        let releases = self.services.helm.releases.clone();
        let op = async {
            releases
                .start(&cluster, &release.namespace, &release.name, request, wake)
                .await
                .map_err(|e| release_error(&what, e))
        };
        Ok(running_record(within(&what, budget, op).await?))
    }

    async fn status(
        &mut self,
        ctx: Resource<CallContext>,
        kubeconfig: SecretKeyRef,
        name: String,
        namespace: String,
    ) -> Result<wit::ReleaseReport, HostFailure> {
        let what = format!("Helm release {}", quoted(&namespace, &name));
        let scope = self.helm_scope(&ctx, &kubeconfig, &name, &namespace, &what)?;
        let (cluster, budget) = self.helm_cluster(&ctx, scope, &kubeconfig, &what).await?;
        let releases = self.services.helm.releases.clone();
        let op = async {
            releases
                .status(&cluster, &namespace, &name)
                .await
                .map_err(|e| release_error(&what, e))
        };
        Ok(to_report(within(&what, budget, op).await?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(sources: &[&str], chart: &str) -> bool {
        let policy = ChartSources::only(sources).unwrap();
        policy.allows(&SourceUrl::parse(chart).unwrap())
    }

    #[test]
    fn a_chart_source_is_allowed_by_scheme_host_port_and_whole_path_segments() {
        let team = ["https://charts.example.com/team"];
        assert!(allowed(&team, "https://charts.example.com/team"));
        assert!(allowed(&team, "https://charts.example.com/team/sub/"));
        assert!(allowed(&team, "https://CHARTS.example.com/team"));
        // Look-alikes an attacker would try.
        assert!(!allowed(&team, "https://charts.example.com/teamx"));
        assert!(!allowed(&team, "https://charts.example.com.evil.test/team"));
        assert!(!allowed(&team, "https://charts.example.com:8443/team"));
        assert!(!allowed(&team, "http://charts.example.com/team"));
        assert!(!allowed(&team, "oci://charts.example.com/team"));
        assert!(!allowed(&team, "https://charts.example.com/"));
        // With no sources configured, every well-formed source is allowed.
        assert!(ChartSources::any().allows(&SourceUrl::parse("oci://r.test/x").unwrap()));
    }

    #[test]
    fn chart_sources_that_would_hide_credentials_or_escape_are_refused() {
        for bad in [
            "https://user:pw@charts.example.com/team",
            "https://charts.example.com/team/../other",
            "https://charts.example.com/team?x=1",
            "ftp://charts.example.com/",
            "charts.example.com/team",
            "https:///team",
        ] {
            assert!(SourceUrl::parse(bad).is_err(), "{bad} must be refused");
        }
        assert!(ChartSources::only(["https://a@b/"]).is_err());
    }

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
