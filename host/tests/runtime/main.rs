//! The plugin runtime against real WebAssembly components: the test plugins in `tests/guests`, built with the
//! plugin SDK for wasm32-wasip2, run in the same runtime the operator uses.

mod guests;
mod support;

/// The process's allocator, remembering each thread's largest single allocation: the sandbox tests show that a
/// plugin's huge strings are never copied into host memory whole.
#[global_allocator]
static ALLOCATOR: support::LargestAllocation = support::LargestAllocation;

mod admission;
mod adversarial;
mod cache;
mod calls;
mod charts;
mod controllers;
mod field_selectors;
mod files_capability;
mod fuzz_helm;
mod fuzz_inputs;
mod fuzz_kinds;
mod fuzz_outputs;
#[path = "../shared/git.rs"]
mod git_cli;
mod git_server;
mod grants;
mod helm_engine;
mod helm_env;
mod helm_fixtures;
mod helm_inputs;
#[path = "../shared/helm_lib.rs"]
mod helm_lib;
mod helm_options;
mod helm_ownership;
mod helm_release;
mod helm_remediation;
#[cfg(feature = "native")]
mod native;
mod omni_capability;
mod omni_cluster;
mod omni_connection;
mod omni_kubeconfig;
mod platform;
mod plugin_distribution;
mod sandbox;
mod swap;
mod workload_access;
