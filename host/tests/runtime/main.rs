//! The plugin runtime against real WebAssembly components: the test plugins in `tests/guests`, built with the
//! plugin SDK for wasm32-wasip2, run in the same runtime the operator uses.

mod guests;
mod support;

mod cache;
mod calls;
mod grants;
mod sandbox;
mod swap;
mod controllers;
mod omni_capability;
mod omni_connection;
mod omni_kubeconfig;
mod files_capability;
mod field_selectors;
mod native;
mod omni_cluster;
mod workload_access;
