//! Builds the default plugins (plugins/omni-connection, -cluster, -controlplane, -workers, -machine,
//! -kubeconfig-export, -secret-sync, -helm-release) for wasm32-wasip2 and leaves
//! them in OUT_DIR, where `src/defaults.rs` embeds them.
//!
//! The nested cargo uses its own target directory: the outer build holds the lock on the shared one.

use std::path::{Path, PathBuf};
use std::process::Command;

const PLUGINS: &[(&str, &str)] = &[
    ("omni-connection", "omni_connection"),
    ("omni-cluster", "omni_cluster"),
    ("omni-controlplane", "omni_controlplane"),
    ("omni-workers", "omni_workers"),
    ("omni-machine", "omni_machine"),
    ("omni-kubeconfig-export", "omni_kubeconfig_export"),
    ("omni-secret-sync", "omni_secret_sync"),
    ("omni-helm-release", "omni_helm_release"),
];

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into()));
    let root = manifest_dir
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| manifest_dir.clone());
    for watched in [
        "plugins/sdk",
        "plugins/children",
        "plugins/omni-controlplane",
        "plugins/omni-workers",
        "plugins/omni-machine",
        "plugins/omni-connection",
        "plugins/omni-cluster",
        "plugins/omni-kubeconfig-export",
        "plugins/omni-secret-sync",
        "plugins/omni-helm-release",
        "plugins/omni-template",
        "plugins/api",
        "host/omni-wire/proto",
        "wit",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_else(|_| "target".into()));
    // `OMNI_PLUGINS_TARGET_DIR` lets builds that run this script separately (CI's clippy pass and its test build
    // have different OUT_DIRs) share one guest build instead of compiling every plugin twice.
    println!("cargo:rerun-if-env-changed=OMNI_PLUGINS_TARGET_DIR");
    let target_dir = std::env::var_os("OMNI_PLUGINS_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| out.join("plugins-target"));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args([
        "build",
        "--release",
        "--locked",
        "--quiet",
        "--target",
        "wasm32-wasip2",
        "--manifest-path",
    ])
    .arg(root.join("Cargo.toml"))
    .arg("--target-dir")
    .arg(&target_dir);
    for (package, _) in PLUGINS {
        cmd.args(["-p", package]);
    }
    // The outer build's flags are for the host target, not for the guests; and a clippy pass over the host must
    // build the same guests as a test build (no clippy-driver wrapper), so the two share one guest build.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_MAKEFLAGS",
        "MAKEFLAGS",
        "MFLAGS",
        "RUSTC_WORKSPACE_WRAPPER",
        "CLIPPY_ARGS",
        "CLIPPY_CONF_DIR",
    ] {
        cmd.env_remove(var);
    }
    let status = match cmd.status() {
        Ok(s) => s,
        Err(e) => panic!("could not run cargo to build the default plugins: {e}"),
    };
    if !status.success() {
        panic!(
            "building the default plugins for wasm32-wasip2 failed ({status}); is the target installed? \
             (rustup target add wasm32-wasip2 --toolchain 1.95.0)"
        );
    }
    for (_, file) in PLUGINS {
        let built = target_dir
            .join("wasm32-wasip2/release")
            .join(format!("{file}.wasm"));
        let dest = out.join(format!("{file}.wasm"));
        if let Err(e) = std::fs::copy(&built, &dest) {
            panic!("copying {} to {}: {e}", built.display(), dest.display());
        }
    }
}
