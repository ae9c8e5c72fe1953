//! A plan's Helm (`omni-operator plan`): the actions a reconcile would start, recorded instead of run. Values are
//! never recorded (they may come from Secrets): whether they change is told by the digest of what a revision is
//! made from, against the one the stored revision carries. For an install or upgrade, the manifest the action
//! would deploy is rendered by Helm itself (the same action as a server-side dry run, which stores and applies
//! nothing) and kept next to the stored revision's, for the plan to show their difference.

use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Map, Value};

use super::job::{action_op, engine_message, git_checkout};
use super::request::{Action, ChartLocation, StepRequest, Wanted};
use super::storage::{self, StoredRevision};
use super::{Cluster, DEADLINE_MARGIN};
use crate::helm::HelmEngine;
use crate::helm::protocol::{Op, Target};

/// One action a plan would start.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PlannedStep {
    /// The workload cluster (its kubeconfig Secret).
    pub cluster: String,
    pub namespace: String,
    pub name: String,
    pub action: &'static str,
    /// For an install or upgrade: the chart and version it would deploy.
    pub chart: Option<String>,
    pub version: Option<String>,
    /// The latest stored revision: its number, chart, version and status.
    pub stored: Option<StoredSummary>,
    /// For an upgrade: whether the chart, its version or the values differ from the stored revision's; `None`
    /// when the stored revision carries no digest to compare with.
    pub source_changed: Option<bool>,
    /// For an install or upgrade: the manifests before and after. They may hold Secret data, so they are never
    /// serialized: the plan shows them only as a diff with Secrets redacted.
    #[serde(skip)]
    pub manifests: Option<PlannedManifests>,
}

/// A release's manifest as Helm stores it now and as the planned action would render it (YAML documents).
#[derive(Clone, PartialEq, Eq)]
pub struct PlannedManifests {
    /// The latest revision's; None when no revision is stored.
    pub stored: Option<String>,
    /// What the action would deploy, or why Helm could not render it.
    pub rendered: Result<String, String>,
}

impl std::fmt::Debug for PlannedManifests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Manifests may carry Secret data: their sizes only.
        f.debug_struct("PlannedManifests")
            .field("stored_bytes", &self.stored.as_ref().map(String::len))
            .field(
                "rendered_bytes",
                &self.rendered.as_ref().map(String::len).map_err(|e| e.len()),
            )
            .finish()
    }
}

/// How long Helm may take to render a planned action (it fetches the chart).
const RENDER_DEADLINE: Duration = Duration::from_secs(120);

/// The manifests before and after `action` to `wanted` on release `namespace/name`: the stored one read from
/// Helm's storage, the new one from `engine` running the action as a server-side dry run.
pub(super) async fn manifests(
    engine: &dyn HelmEngine,
    cluster: &Cluster,
    (namespace, name): (&str, &str),
    action: Action,
    wanted: &Wanted,
) -> PlannedManifests {
    let mut wanted = wanted.clone();
    let stored = match storage::latest_with_manifest(&cluster.client, namespace, name).await {
        Ok(found) => {
            if action == Action::Upgrade {
                let server_side = found.as_ref().and_then(|(r, _)| r.server_side_apply);
                wanted.apply.method = wanted.apply.method.resolved(server_side);
            }
            found
                .filter(|(r, _)| r.status != "uninstalled")
                .map(|(_, m)| m)
        }
        Err(e) => {
            return PlannedManifests {
                stored: None,
                rendered: Err(format!("reading the stored release: {e}")),
            };
        }
    };
    let rendered = async {
        let local = git_checkout(engine, &wanted, None).await?;
        let target = Target {
            kubeconfig: cluster.kubeconfig.to_string(),
            namespace: namespace.to_string(),
            as_user: cluster.as_user.clone(),
        };
        let op = action_op(
            (action, &target, name),
            &wanted,
            Map::new(),
            local.as_deref(),
        )?;
        let op = dry_run(op);
        let answer = engine
            .run(op, None, RENDER_DEADLINE + DEADLINE_MARGIN)
            .await
            .map_err(|e| engine_message(&e))?;
        answer["manifest"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| "Helm's answer holds no manifest".to_string())
    }
    .await;
    PlannedManifests { stored, rendered }
}

/// `op` as a server-side dry run: Helm renders against the cluster (so `lookup` sees it) and neither applies
/// nor stores anything; waiting and rolling back have nothing to act on.
fn dry_run(mut op: Op) -> Op {
    let install = matches!(op, Op::Install { .. });
    if let Op::Install { options, .. } | Op::Upgrade { options, .. } = &mut op
        && let Value::Object(o) = options
    {
        o.insert("dry_run".into(), "server".into());
        o.insert("wait".into(), "hookOnly".into());
        o.insert("rollback_on_failure".into(), false.into());
        o.remove("labels");
        if install {
            o.insert("create_namespace".into(), false.into());
        }
    }
    op
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StoredSummary {
    pub revision: u64,
    pub chart: String,
    pub version: String,
    pub status: String,
}

impl PlannedStep {
    pub(super) fn new(
        cluster: &str,
        namespace: &str,
        name: &str,
        request: &StepRequest,
        latest: Option<&StoredRevision>,
    ) -> Self {
        let wanted = match request {
            StepRequest::Install(w) | StepRequest::Upgrade(w) => Some(w),
            _ => None,
        };
        let chart = wanted.map(|w| match &w.chart {
            ChartLocation::Repository { url, name } => format!("{name} from {url}"),
            ChartLocation::Oci(reference) => reference.clone(),
            ChartLocation::Git { url, path, .. } => format!("{path} in {url}"),
        });
        let source_changed = match (wanted, latest.and_then(|r| r.digest.as_deref())) {
            (Some(w), Some(stored)) => Some(w.digest(latest) != stored),
            _ => None,
        };
        PlannedStep {
            cluster: cluster.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
            action: request.action().name(),
            chart,
            version: wanted.map(|w| w.version.clone()),
            stored: latest.map(|r| StoredSummary {
                revision: r.revision,
                chart: r.chart.clone(),
                version: r.chart_version.clone(),
                status: r.status.clone(),
            }),
            source_changed,
            manifests: None,
        }
    }
}

/// The actions of one plan, in order.
#[derive(Debug, Default)]
pub struct HelmPlan {
    steps: Mutex<Vec<PlannedStep>>,
    /// Whether an install's or upgrade's manifests are rendered (a summary alone needs none).
    render: bool,
}

impl HelmPlan {
    /// `render`: render the manifests of each install and upgrade, for a diff.
    pub fn new(render: bool) -> Self {
        HelmPlan {
            render,
            ..Self::default()
        }
    }

    pub(super) fn renders(&self) -> bool {
        self.render
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<PlannedStep>> {
        self.steps.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn record(&self, step: PlannedStep) {
        self.lock().push(step);
    }

    /// The steps after the first `n`.
    pub fn since(&self, n: usize) -> Vec<PlannedStep> {
        self.lock().iter().skip(n).cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
