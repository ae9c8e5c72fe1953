#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
//! The omni-operator host.
//!
//! Each kind's reconcile logic is a WebAssembly component (a *plugin*) behind the WIT contract in `wit/`. This
//! crate runs them: [`runtime`] compiles, sandboxes and calls plugins; [`capabilities`] is what a plugin may ask
//! of the host during a call; [`controllers`] watch Kubernetes, call plugins and commit what they return; [`secrets`] holds the rules
//! for touching Secrets in the management and workload clusters.

pub mod capabilities;
pub mod controllers;
pub mod defaults;
pub mod dev;
pub mod omni;
pub mod operator;
pub mod runtime;
pub mod secrets;
