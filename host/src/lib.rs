//! The omni-operator host.
//!
//! Each kind's reconcile logic is a WebAssembly component (a *plugin*) behind the WIT contract in `wit/`. This
//! crate runs them: [`runtime`] compiles, sandboxes and calls plugins; [`capabilities`] is what a plugin may ask
//! of the host during a call. Controllers (which watch Kubernetes and commit what plugins return) build on both.

pub mod capabilities;
pub mod runtime;
