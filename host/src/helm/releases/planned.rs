//! A plan's Helm (`omni-operator plan`): the actions a reconcile would start, recorded instead of run. Values are
//! never recorded (they may come from Secrets): whether they change is told by the digest of what a revision is
//! made from, against the one the stored revision carries.

use std::sync::Mutex;

use super::request::{ChartLocation, StepRequest};
use super::storage::StoredRevision;

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
            (Some(w), Some(stored)) => Some(w.digest() != stored),
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
        }
    }
}

/// The actions of one plan, in order.
#[derive(Debug, Default)]
pub struct HelmPlan {
    steps: Mutex<Vec<PlannedStep>>,
}

impl HelmPlan {
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
