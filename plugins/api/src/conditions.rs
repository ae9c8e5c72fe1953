//! `metav1.Condition` and the condition types and reasons the operator writes.

use serde::{Deserialize, Serialize};

#[cfg(feature = "schema")]
use crate::patterns;

/// One aspect of the object's current state (the schema of Kubernetes' metav1.Condition).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// Condition type in CamelCase, or in foo.example.com/CamelCase form.
    #[serde(rename = "type")]
    #[cfg_attr(
        feature = "schema",
        schemars(length(max = 316), pattern(patterns::CONDITION_TYPE))
    )]
    pub type_: String,
    /// Status of the condition: True, False or Unknown.
    pub status: ConditionStatus,
    /// The metadata.generation the condition was computed from; a condition whose observedGeneration is
    /// lower than metadata.generation describes an older spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 0)))]
    pub observed_generation: Option<i64>,
    /// When the condition last changed status (RFC 3339).
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub last_transition_time: String,
    /// Programmatic CamelCase identifier of the reason for the last transition; never empty.
    #[cfg_attr(
        feature = "schema",
        schemars(length(min = 1, max = 1024), pattern(patterns::CONDITION_REASON))
    )]
    pub reason: String,
    /// Human-readable details about the transition; may be empty.
    #[cfg_attr(feature = "schema", schemars(length(max = 32768)))]
    pub message: String,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum ConditionStatus {
    True,
    False,
    #[default]
    Unknown,
}

/// Condition types (`Condition.type`).
pub mod types {
    pub const READY: &str = "Ready";
    pub const STALLED: &str = "Stalled";
    pub const REACHABLE: &str = "Reachable";
    pub const ACCEPTED: &str = "Accepted";
    /// Declared by the Go operator but never set.
    pub const RENDERED: &str = "Rendered";
    pub const VALIDATED: &str = "Validated";
    pub const SYNCED: &str = "Synced";
    pub const EXPORTED: &str = "Exported";
    pub const RELEASED: &str = "Released";
}

/// Condition reasons (`Condition.reason`).
pub mod reasons {
    pub const ACCEPTED: &str = "Accepted";
    pub const CONNECTION_READY: &str = "ConnectionReady";
    pub const CONNECTION_FAILED: &str = "ConnectionFailed";
    pub const DELETE_FAILED: &str = "DeleteFailed";
    pub const DELETING: &str = "Deleting";
    pub const EXPORTED: &str = "Exported";
    pub const EXPORT_FAILED: &str = "ExportFailed";
    pub const MISSING_CLUSTER: &str = "MissingCluster";
    pub const MISSING_CONNECTION: &str = "MissingConnection";
    pub const MISSING_SECRET: &str = "MissingSecret";
    pub const MISSING_TEMPLATE: &str = "MissingTemplate";
    pub const HELM_INSTALLED: &str = "HelmInstalled";
    pub const HELM_UNINSTALLED: &str = "HelmUninstalled";
    pub const HELM_UPGRADED: &str = "HelmUpgraded";
    pub const RECONCILE_FAILED: &str = "ReconcileFailed";
    /// Declared by the Go operator but never used.
    pub const RENDERED: &str = "Rendered";
    /// Declared by the Go operator but never used.
    pub const RENDER_FAILED: &str = "RenderFailed";
    pub const STATUS_FAILED: &str = "StatusFailed";
    pub const SUSPENDED: &str = "Suspended";
    pub const SYNC_FAILED: &str = "SyncFailed";
    pub const SYNCED: &str = "Synced";
    pub const VALIDATED: &str = "Validated";
    pub const VALIDATION_FAILED: &str = "ValidationFailed";
}
