//! The `omni.texashpc.com/v1alpha1` API: Rust types for the eight kinds of the Go omni-cluster-operator,
//! wire-compatible with it (same JSON field names, same defaults, same validation), and — with the cargo
//! feature `schema` — the CustomResourceDefinitions generated from them. [`platform`] adds this operator's own
//! `plugins.omni.texashpc.com` kinds (Plugin, PluginBinding, ClusterPluginBinding).
//!
//! The crate depends only on serde and serde_json by default so that WebAssembly guests (wasm32-wasip2)
//! can use the types; schemars and the CRD code compile only with `schema`.
//!
//! Field conventions, chosen so that whatever the API server stores survives a decode/encode round trip:
//! * optional fields are `Option`s and are omitted when `None` (Go's `omitempty`);
//! * defaults applied by the API server (e.g. `mode: full`) are declared in the schema, not filled in by
//!   serde, except for the two required-with-default fields (`SecretKeySelector.key`,
//!   `KubernetesManifest.mode`), which decode a missing value as the server would default it;
//! * durations are Go duration strings (`5m`, `1h30m`), times are RFC 3339 strings;
//! * free-form JSON (`Patch.inline`, manifest `inline`, Helm `values`) is kept as [`serde_json::Value`].
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

#[cfg(feature = "cel")]
pub mod cel;
pub mod common;
pub mod conditions;
pub mod kinds;
pub mod labels;
pub mod meta;
pub mod patterns;
pub mod platform;

#[cfg(feature = "schema")]
pub mod crds;
#[cfg(feature = "schema")]
mod field_schemas;
#[cfg(feature = "schema")]
mod structural;

pub use common::*;
pub use conditions::{Condition, ConditionStatus};
pub use kinds::*;
pub use meta::{
    API_VERSION, FINALIZER, GROUP, LEGACY_FINALIZER, Object, ObjectMeta, OmniKind, OwnerReference,
    VERSION,
};
