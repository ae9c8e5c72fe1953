#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
//! The omni-operator host.
//!
//! Each kind's reconcile logic is a WebAssembly component (a *plugin*) behind the WIT contract in `wit/`. This
//! crate runs them: [`contract`] holds the bindings and the types every layer shares; [`omni`] and [`secrets`]
//! are the clients for Omni and for Secrets in the management and workload clusters; [`capabilities`] is what a
//! plugin may ask of the host during a call; [`runtime`] compiles, sandboxes and calls plugins; [`controllers`]
//! watch Kubernetes, call plugins and commit what they return; [`operator`] loads the plugins and runs their
//! controllers; with feature `dev`, `stack` builds the simulated world that `dev`, the tests and the
//! benchmarks run in. Each layer uses only those before it (`layering.rs` tests that).

pub mod admission;
pub mod capabilities;
pub mod contract;
pub mod controllers;
pub mod defaults;
#[cfg(feature = "dev")]
pub mod dev;
pub mod distribution;
pub mod dry_run;
pub mod endpoints;
pub mod helm;
pub mod leader;
pub mod omni;
pub mod operator;
pub mod plan;
pub mod platform;
pub mod registry;
pub mod runtime;
pub mod secrets;
pub mod shutdown;
#[cfg(feature = "dev")]
pub mod stack;
pub mod testkit;

#[cfg(test)]
mod doc_links;
#[cfg(test)]
mod layering;
