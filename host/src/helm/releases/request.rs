//! What a plugin asks of a release: the chart and values a revision is made from ([`Wanted`], hashed by
//! [`source_digest`] into the label that tells whether a revision is current), and the settings of each step
//! ([`StepRequest`]).

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::helm::drift::Ignore;
use crate::helm::health::HealthCheck;
use crate::helm::protocol::{ChartAuth, GitRef};
use crate::helm::storage::StoredRevision;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChartLocation {
    Repository {
        url: String,
        name: String,
    },
    Oci(String),
    /// A chart directory in a Git repository; its "version" is the commit the reference resolves to.
    Git {
        url: String,
        reference: GitRef,
        path: String,
    },
}

/// What every action shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub timeout_seconds: u32,
    /// Wait for every resource to be ready (kstatus), not only hooks.
    pub wait_ready: bool,
    pub wait_for_jobs: bool,
    pub disable_hooks: bool,
}

impl Settings {
    pub(super) fn timeout(&self) -> Duration {
        Duration::from_secs(u64::from(self.timeout_seconds.max(1)))
    }
}

/// How Helm writes a release's objects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ApplyMethod {
    /// Server-side apply, taking fields others changed (conflicts forced), as Flux does.
    ServerSide,
    /// Client-side three-way merge patches.
    ClientSide,
    /// Upgrades and rollbacks: as the current revision was applied; installs: server-side (Helm 4's defaults).
    #[default]
    Auto,
}

/// How an install or upgrade writes the release's objects, and what Helm checks before it does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ApplySettings {
    pub method: ApplyMethod,
    /// Adopt existing objects without Helm's ownership metadata, or with another release's (`--take-ownership`);
    /// the plugin needs the `helm-take-ownership` grant.
    pub take_ownership: bool,
    /// Do not check the values against the chart's `values.schema.json`.
    pub skip_schema_validation: bool,
    /// Do not check the rendered manifests against the cluster's OpenAPI schema.
    pub skip_openapi_validation: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InstallSettings {
    pub create_namespace: bool,
    pub skip_crds: bool,
    pub rollback_on_failure: bool,
    /// Reuse the name of a release kept in history (`--replace`).
    pub replace: bool,
    /// Apply the chart's CRDs before installing, replacing those present ([`crds`]).
    pub replace_crds: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UpgradeSettings {
    pub skip_crds: bool,
    pub rollback_on_failure: bool,
    pub cleanup_on_fail: bool,
    pub max_history: u32,
    /// Replace resources that cannot be patched (`--force`).
    pub force: bool,
    /// Apply the chart's CRDs before upgrading, replacing those present ([`crds`]).
    pub replace_crds: bool,
    /// Merge the values over the current revision's (`--reuse-values`).
    pub reuse_values: bool,
}

/// A rollback step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RollbackSettings {
    /// 0: the previous revision.
    pub revision: u64,
    pub settings: Settings,
    pub force: bool,
    pub cleanup_on_fail: bool,
    pub max_history: u32,
    pub method: ApplyMethod,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Propagation {
    #[default]
    Background,
    Foreground,
    Orphan,
}

impl Propagation {
    pub(super) fn name(self) -> &'static str {
        match self {
            Propagation::Background => "background",
            Propagation::Foreground => "foreground",
            Propagation::Orphan => "orphan",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UninstallSettings {
    pub settings: Settings,
    pub keep_history: bool,
    pub propagation: Propagation,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestSettings {
    pub timeout_seconds: u32,
    /// Only these test hooks (all when empty) …
    pub include: Vec<String>,
    /// … but never these.
    pub exclude: Vec<String>,
}

/// An action a plugin asks for by name (`helm.start`).
#[derive(Debug, Clone, PartialEq)]
pub enum StepRequest {
    Install(Box<Wanted>),
    Upgrade(Box<Wanted>),
    Rollback(RollbackSettings),
    Uninstall(UninstallSettings),
    Test(TestSettings),
    /// Mark a pending latest revision failed.
    Unlock,
    /// Apply again the objects of the deployed revision that drifted.
    CorrectDrift(Vec<Ignore>),
}

impl ApplyMethod {
    /// `Auto` made definite for an upgrade or rollback, as Helm decides it: the way the latest revision was
    /// applied (`server_side` from its `apply_method`; None: no revision read, left to Helm). Helm must be told
    /// because forcing conflicts is valid only server-side ("forceConflicts enabled when serverSideApply
    /// disabled"), and a release installed client-side stays client-side under `auto`.
    pub(super) fn resolved(self, server_side: Option<bool>) -> ApplyMethod {
        match (self, server_side) {
            (ApplyMethod::Auto, Some(true)) => ApplyMethod::ServerSide,
            (ApplyMethod::Auto, Some(false)) => ApplyMethod::ClientSide,
            (method, _) => method,
        }
    }
}

impl StepRequest {
    /// The step with an upgrade's or rollback's `auto` apply method resolved against the latest revision
    /// ([`ApplyMethod::resolved`]).
    pub(super) fn resolving_auto(mut self, server_side: Option<bool>) -> StepRequest {
        match &mut self {
            StepRequest::Upgrade(w) => w.apply.method = w.apply.method.resolved(server_side),
            StepRequest::Rollback(r) => r.method = r.method.resolved(server_side),
            _ => {}
        }
        self
    }

    pub(super) fn action(&self) -> Action {
        match self {
            StepRequest::Install(_) => Action::Install,
            StepRequest::Upgrade(_) => Action::Upgrade,
            StepRequest::Rollback(_) => Action::Rollback,
            StepRequest::Uninstall(_) => Action::Uninstall,
            StepRequest::Test(_) => Action::Test,
            StepRequest::Unlock => Action::Recover,
            StepRequest::CorrectDrift(_) => Action::Correct,
        }
    }
}

/// The release wanted.
#[derive(Debug, Clone, PartialEq)]
pub struct Wanted {
    pub chart: ChartLocation,
    pub version: String,
    pub values: Value,
    pub settings: Settings,
    pub install: InstallSettings,
    pub upgrade: UpgradeSettings,
    pub apply: ApplySettings,
    /// Reach the OCI registry over plain HTTP (an operator setting for registries it names, never the plugin's).
    pub plain_http: bool,
    /// Credentials and TLS material for the chart source; not part of the digest (a rotation is no new revision).
    pub auth: Option<ChartAuth>,
    /// The post-render spec (`{"postRenderers": [...], "commonMetadata": {...}}`), checked; part of the digest.
    pub post_render: Option<Value>,
    /// The content digest the chart source publishes for the version ([`crate::helm::chart_digest`]); None when
    /// unknown. Part of the digest ([`wanted_digest`]).
    pub content: Option<String>,
    /// Judged after Helm's wait when `settings.wait_ready` ([`crate::helm::health`]); not part of the digest (a
    /// changed check judges the next action, as in Flux).
    pub health: Vec<HealthCheck>,
}

impl Wanted {
    /// What a revision is made from, hashed, against the release's latest revision ([`wanted_digest`]).
    pub fn digest(&self, latest: Option<&StoredRevision>) -> String {
        wanted_digest(
            (&self.chart, &self.version, &self.values),
            self.post_render.as_ref(),
            self.content.as_deref(),
            latest,
        )
    }
}

/// The digest a revision made from this source carries, with the chart's content digest `content` (None: the
/// source publishes none, or did not answer), against the release's `latest` revision:
///
/// * an unknown content is taken to be the one the latest revision recorded (a source that fails to answer
///   must not look like a new chart);
/// * a latest revision made from this very source before the host recorded chart content (no chart-digest label,
///   and its digest is the source's alone) is current: an operator upgrade does not upgrade every release once;
/// * otherwise the content counts, so a chart pushed again under the same version upgrades once.
pub fn wanted_digest(
    (chart, version, values): (&ChartLocation, &str, &Value),
    post_render: Option<&Value>,
    content: Option<&str>,
    latest: Option<&StoredRevision>,
) -> String {
    let recorded = latest.and_then(|l| l.chart_digest.as_deref());
    let Some(content) = content.or(recorded) else {
        return source_digest(chart, version, values, post_render, None);
    };
    let alone = source_digest(chart, version, values, post_render, None);
    if latest.is_some_and(|l| recorded.is_none() && l.digest.as_deref() == Some(alone.as_str())) {
        return alone;
    }
    source_digest(chart, version, values, post_render, Some(content))
}

/// What a revision is made from, hashed: the chart's location and version and the values, in a canonical JSON
/// form (keys sorted). Options such as waits and timeouts are left out: changing them does not call for a new
/// revision. 40 hex digits (160 bits), to fit a label value.
/// A post-render spec counts when there is one; without it the digest is what it was before post-renderers
/// existed, so releases that use none are not upgraded by an operator upgrade.
pub fn source_digest(
    chart: &ChartLocation,
    version: &str,
    values: &Value,
    post_render: Option<&Value>,
    content: Option<&str>,
) -> String {
    let chart = match chart {
        ChartLocation::Repository { url, name } => json!({"repository": url, "chart": name}),
        ChartLocation::Oci(reference) => json!({"oci": reference}),
        ChartLocation::Git { url, path, .. } => json!({"git": url, "path": path}),
    };
    let mut made_from = json!({"chart": chart, "version": version, "values": canonical(values)});
    if let Some(spec) = post_render {
        made_from["postRender"] = canonical(spec);
    }
    if let Some(content) = content {
        made_from["chartDigest"] = content.into();
    }
    crate::helm::sha256_prefix(made_from.to_string().as_bytes(), 40)
}

/// `v` with every object's keys in sorted order, whatever the map type serde_json was built with.
fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), canonical(&m[k])))
                    .collect::<Map<_, _>>(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Install,
    Upgrade,
    Uninstall,
    Rollback,
    Test,
    /// A pending revision marked failed, before the action that follows it.
    Recover,
    /// Drifted objects applied again.
    Correct,
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::Install => "install",
            Action::Upgrade => "upgrade",
            Action::Uninstall => "uninstall",
            Action::Rollback => "rollback",
            Action::Test => "test",
            Action::Recover => "recover",
            Action::Correct => "drift correction",
        }
    }
}

/// A version Helm would take as itself, not as a constraint: `1.2.3`, `v1.2.3`, `1.2.3-rc.1+build`.
pub fn is_exact_version(version: &str) -> bool {
    let v = version.trim();
    semver::Version::parse(v.strip_prefix('v').unwrap_or(v)).is_ok()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::helm::releases) fn wanted(values: Value) -> Wanted {
        Wanted {
            chart: ChartLocation::Repository {
                url: "http://127.0.0.1:1/charts".into(),
                name: "demo".into(),
            },
            version: "0.1.0".into(),
            values,
            settings: Settings {
                timeout_seconds: 300,
                wait_ready: false,
                wait_for_jobs: false,
                disable_hooks: false,
            },
            install: InstallSettings::default(),
            upgrade: UpgradeSettings::default(),
            apply: ApplySettings::default(),
            plain_http: false,
            auth: None,
            post_render: None,
            content: None,
            health: Vec::new(),
        }
    }

    /// The chart's content counts once the release records it; a revision made from the same source before
    /// content was recorded stays current (no upgrade of every release after an operator upgrade); a source that
    /// does not answer is taken to hold what the latest revision recorded.
    #[test]
    fn the_content_digest_counts_against_what_the_latest_revision_recorded() {
        let w = wanted(json!({"a": 1}));
        let source = (&w.chart, w.version.as_str(), &w.values);
        let alone = source_digest(&w.chart, &w.version, &w.values, None, None);
        let with = |c: &str| source_digest(&w.chart, &w.version, &w.values, None, Some(c));
        let revision = |digest: &str, chart_digest: Option<&str>| StoredRevision {
            digest: Some(digest.into()),
            chart_digest: chart_digest.map(str::to_string),
            ..StoredRevision::default()
        };
        // No revision yet: the content counts.
        assert_eq!(wanted_digest(source, None, Some("c1"), None), with("c1"));
        assert_eq!(wanted_digest(source, None, None, None), alone);
        // Made from this source before content was recorded: current, whatever the source says now.
        let legacy = revision(&alone, None);
        assert_eq!(
            wanted_digest(source, None, Some("c2"), Some(&legacy)),
            alone
        );
        // Recorded, and the same chart: current; pushed again: a new digest.
        let recorded = revision(&with("c1"), Some("c1"));
        assert_eq!(
            wanted_digest(source, None, Some("c1"), Some(&recorded)),
            with("c1")
        );
        assert_eq!(
            wanted_digest(source, None, Some("c2"), Some(&recorded)),
            with("c2")
        );
        // The source did not answer: what the latest recorded.
        assert_eq!(
            wanted_digest(source, None, None, Some(&recorded)),
            with("c1")
        );
        // Another source than the legacy revision's: the content counts.
        let other = revision("elsewhere", None);
        assert_eq!(
            wanted_digest(source, None, Some("c1"), Some(&other)),
            with("c1")
        );
    }

    /// `auto` follows the latest revision's apply method for upgrades and rollbacks, and is left to Helm when no
    /// revision was read; an install and an explicit method are never changed.
    #[test]
    fn auto_resolves_to_the_latest_revisions_apply_method() {
        let upgrade = |method| {
            let mut w = wanted(json!({}));
            w.apply.method = method;
            StepRequest::Upgrade(Box::new(w))
        };
        let method = |r: StepRequest| match r {
            StepRequest::Upgrade(w) | StepRequest::Install(w) => w.apply.method,
            StepRequest::Rollback(r) => r.method,
            _ => unreachable!(),
        };
        assert_eq!(
            method(upgrade(ApplyMethod::Auto).resolving_auto(Some(false))),
            ApplyMethod::ClientSide
        );
        assert_eq!(
            method(upgrade(ApplyMethod::Auto).resolving_auto(Some(true))),
            ApplyMethod::ServerSide
        );
        assert_eq!(
            method(upgrade(ApplyMethod::Auto).resolving_auto(None)),
            ApplyMethod::Auto
        );
        assert_eq!(
            method(upgrade(ApplyMethod::ServerSide).resolving_auto(Some(false))),
            ApplyMethod::ServerSide
        );
        let install = StepRequest::Install(Box::new(wanted(json!({}))));
        assert_eq!(
            method(install.resolving_auto(Some(false))),
            ApplyMethod::Auto
        );
        let rollback = StepRequest::Rollback(RollbackSettings {
            revision: 0,
            settings: wanted(json!({})).settings,
            force: false,
            cleanup_on_fail: false,
            max_history: 0,
            method: ApplyMethod::Auto,
        });
        assert_eq!(
            method(rollback.resolving_auto(Some(false))),
            ApplyMethod::ClientSide
        );
    }

    #[test]
    fn exact_versions_are_told_from_constraints() {
        for exact in ["1.2.3", "v1.2.3", "0.1.0-rc.1+build.5"] {
            assert!(is_exact_version(exact), "{exact}");
        }
        for constraint in [
            ">=1.2 <2",
            "~1.4",
            "^1",
            "1.x",
            "*",
            "1.2",
            ">= 1.0.0, < 2.0.0",
            "1.0.0 || 2.0.0",
        ] {
            assert!(!is_exact_version(constraint), "{constraint}");
        }
    }

    #[test]
    fn the_digest_ignores_key_order_and_options_but_not_values_or_version() {
        let a = wanted(json!({"a": 1, "b": {"c": 2, "d": 3}}));
        let mut b = wanted(json!({"b": {"d": 3, "c": 2}, "a": 1}));
        b.settings.timeout_seconds = 10;
        b.settings.wait_ready = true;
        assert_eq!(a.digest(None), b.digest(None));
        assert_eq!(a.digest(None).len(), 40);
        let c = wanted(json!({"a": 2, "b": {"c": 2, "d": 3}}));
        assert_ne!(a.digest(None), c.digest(None));
        let mut d = a.clone();
        d.version = "0.2.0".into();
        assert_ne!(a.digest(None), d.digest(None));
        let mut e = a.clone();
        e.chart = ChartLocation::Oci("oci://127.0.0.1:1/charts/demo".into());
        assert_ne!(a.digest(None), e.digest(None));
    }
}
