//! The test plugins in `tests/guests`, built for wasm32-wasip2 once per test process.
//!
//! They build with their own target dir: the outer `cargo test` holds the lock on the shared one, and waiting
//! for it from inside a test would deadlock.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The bytes of test plugin `name` (`echo`, `loop`, …).
pub fn wasm(name: &str) -> Vec<u8> {
    let path = dir().join(format!("guest_{name}.wasm"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn dir() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build)
}

/// `cargo build --release --target wasm32-wasip2` into `target_dir`, without the outer build's settings (they
/// are for the host target, not for wasm guests).
pub fn wasm_build(target_dir: &Path) -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .args(["build", "--release", "--quiet", "--target", "wasm32-wasip2"])
        .arg("--target-dir")
        .arg(target_dir)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("CARGO_TARGET_DIR");
    command
}

fn build() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/guests/Cargo.toml");
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target/tmp has a parent")
        .join("wasm-guests");
    let output = wasm_build(&target_dir)
        .arg("--manifest-path")
        .arg(&manifest)
        .output()
        .expect("running cargo to build the test plugins");
    assert!(
        output.status.success(),
        "building the test plugins failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    target_dir.join("wasm32-wasip2/release")
}
