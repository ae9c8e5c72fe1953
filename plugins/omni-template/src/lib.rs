//! Omni's cluster-template model for guest plugins.
//!
//! ```text
//! OmniCluster + children ─render─► Template ─encode─► YAML bytes (status.templateHash)
//!                                     │
//!                                     ├─validate─► Omni's messages (Validated=False)
//!                                     └─translate─► desired Omni resources ─sync─► creates, updates, teardowns
//! ```
//!
//! Everything here is plain logic over the SDK's [`omni_plugin_sdk::Host`], so it runs in a plugin, natively in
//! unit tests against the mock host, and natively in the benchmark that compares the two.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod encode;
pub mod model;
pub mod render;
pub mod sync;
pub mod translate;
pub mod validate;
/// The go-yaml-compatible emitter the template and Omni content are written with (it lives in `omni-go`).
pub use omni_plugin_sdk::go::yaml;

/// Omni's spec messages (package `specs`), generated from the host's `.proto` subset.
#[allow(clippy::all, missing_docs)]
pub mod specs {
    include!(concat!(env!("OUT_DIR"), "/specs.rs"));
}
