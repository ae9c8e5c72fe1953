//! Compiled components are cached by digest: in memory, and on disk across restarts; a bad artifact on disk is
//! recompiled, never fatal.

use std::path::{Path, PathBuf};

use omni_operator::capabilities::Grants;
use omni_operator::runtime::{CompiledFrom, PluginSpec, Runtime, RuntimeConfig};
use serde_json::json;

use crate::guests;
use crate::support::{default_services, object};

fn fresh_cache_dir(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("cache-tests")
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn runtime(dir: &Path) -> Runtime {
    Runtime::new(RuntimeConfig {
        cache_dir: Some(dir.to_path_buf()),
        max_concurrent_calls: 4,
        ..RuntimeConfig::default()
    })
    .unwrap()
}

fn noop() -> PluginSpec {
    PluginSpec::new("noop", guests::wasm("noop")).grants(Grants::none())
}

#[tokio::test]
async fn a_restart_loads_the_precompiled_artifact() {
    let dir = fresh_cache_dir("restart");
    let first = runtime(&dir);
    assert_eq!(
        first.load(noop()).await.unwrap().compiled_from(),
        CompiledFrom::Compiler
    );
    assert_eq!(
        first.load(noop()).await.unwrap().compiled_from(),
        CompiledFrom::Memory
    );

    let restarted = runtime(&dir);
    let plugin = restarted.load(noop()).await.unwrap();
    assert_eq!(plugin.compiled_from(), CompiledFrom::Disk);
    plugin
        .reconcile(&object("x", "default", json!({})), &default_services())
        .await
        .unwrap();
}

#[tokio::test]
async fn a_corrupt_artifact_is_recompiled() {
    let dir = fresh_cache_dir("corrupt");
    runtime(&dir).load(noop()).await.unwrap();
    let artifacts: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(artifacts.len(), 1, "{artifacts:?}");
    let name = artifacts[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(
        name.ends_with(".cwasm") && name.len() == 64 + 1 + 16 + 6,
        "digest-compatibility.cwasm, got {name}"
    );
    std::fs::write(&artifacts[0], b"definitely not a compiled component").unwrap();

    let plugin = runtime(&dir).load(noop()).await.unwrap();
    assert_eq!(plugin.compiled_from(), CompiledFrom::Compiler);
    plugin
        .reconcile(&object("x", "default", json!({})), &default_services())
        .await
        .unwrap();
    assert_eq!(
        runtime(&dir).load(noop()).await.unwrap().compiled_from(),
        CompiledFrom::Disk,
        "the artifact was rewritten"
    );
}

#[tokio::test]
async fn bytes_that_are_not_a_component_are_refused_with_a_reason() {
    let e = crate::support::runtime()
        .load(PluginSpec::new("junk", b"\0asm junk".to_vec()))
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("plugin \"junk\" is not a loadable component: compiling the component"),
        "{e}"
    );
}
