//! Compiled components, deduplicated by the SHA-256 of their bytes: in memory for this process, and on disk as
//! precompiled artifacts so a restart skips Cranelift (30-100 ms per plugin).
//!
//! An artifact only loads into an engine with a compatible configuration, so its file name carries both the
//! component digest and `Engine::precompile_compatibility_hash`. An artifact that fails to load anyway
//! (truncated, corrupt, written by another wasmtime) is discarded and recompiled.

use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Context;
use sha2::{Digest as _, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Components kept in memory; the least recently used is dropped beyond this.
const MEMORY_ENTRIES: usize = 64;

/// SHA-256 of a component's bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Digest([u8; 32]);

impl Digest {
    pub fn of(bytes: &[u8]) -> Self {
        Digest(Sha256::digest(bytes).into())
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sha256:")?;
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Where a load found its compiled code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompiledFrom {
    Memory,
    Disk,
    Compiler,
    /// Not a component: the plugin's logic was compiled into the host (`Runtime::load_native`).
    Native,
}

pub(crate) struct ComponentCache {
    engine: Engine,
    dir: Option<PathBuf>,
    /// Hex of the engine's compatibility hash; part of every artifact's file name.
    compatibility: String,
    memory: Mutex<Memory>,
}

#[derive(Default)]
struct Memory {
    entries: HashMap<Digest, (Component, u64)>,
    clock: u64,
}

impl ComponentCache {
    pub(crate) fn new(engine: &Engine, dir: Option<PathBuf>) -> Self {
        let mut hasher = Sha256Hasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let compatibility = hasher
            .0
            .finalize()
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect();
        ComponentCache {
            engine: engine.clone(),
            dir,
            compatibility,
            memory: Mutex::default(),
        }
    }

    /// The compiled form of `wasm`, compiling it (off the async threads) only when no cache has it.
    pub(crate) async fn get(
        &self,
        wasm: Arc<[u8]>,
    ) -> anyhow::Result<(Digest, Component, CompiledFrom)> {
        let digest = Digest::of(&wasm);
        if let Some(component) = self.cached(digest) {
            return Ok((digest, component, CompiledFrom::Memory));
        }
        let engine = self.engine.clone();
        let artifact = self
            .dir
            .as_ref()
            .map(|dir| dir.join(format!("{}-{}.cwasm", hex(&digest), self.compatibility)));
        // Two loads of the same new component may both compile it; that is rare and harmless.
        let (component, from) = tokio::task::spawn_blocking(move || {
            load_or_compile(&engine, &wasm, artifact.as_deref())
        })
        .await
        .context("the compile task failed")??;
        let mut memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
        memory.clock += 1;
        let now = memory.clock;
        memory.entries.insert(digest, (component.clone(), now));
        if memory.entries.len() > MEMORY_ENTRIES {
            let oldest = memory
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(d, _)| *d);
            if let Some(oldest) = oldest {
                memory.entries.remove(&oldest);
            }
        }
        Ok((digest, component, from))
    }

    fn cached(&self, digest: Digest) -> Option<Component> {
        let mut memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
        memory.clock += 1;
        let now = memory.clock;
        memory.entries.get_mut(&digest).map(|(component, used)| {
            *used = now;
            component.clone()
        })
    }
}

fn load_or_compile(
    engine: &Engine,
    wasm: &[u8],
    artifact: Option<&Path>,
) -> anyhow::Result<(Component, CompiledFrom)> {
    if let Some(path) = artifact.filter(|p| p.exists()) {
        // SAFETY: `deserialize_file` trusts that the file is an artifact wasmtime wrote. The cache directory
        // belongs to the operator and only this module writes into it (atomically, by rename); wasmtime still
        // checks the header, version and engine settings, and a failure here means we recompile.
        match unsafe { Component::deserialize_file(engine, path) } {
            Ok(component) => return Ok((component, CompiledFrom::Disk)),
            Err(e) => {
                tracing::warn!(artifact = %path.display(), error = %format!("{e:#}"), "discarding an unusable compiled artifact");
                if let Err(e) = std::fs::remove_file(path) {
                    tracing::warn!(artifact = %path.display(), error = %e, "could not remove the unusable artifact");
                }
            }
        }
    }
    let component = Component::new(engine, wasm)
        .map_err(anyhow::Error::from)
        .context("compiling the component")?;
    if let Some(path) = artifact {
        // A cache that cannot be written costs a compile at the next start, not this load.
        if let Err(e) = store_artifact(&component, path) {
            tracing::warn!(artifact = %path.display(), error = %format!("{e:#}"), "could not cache the compiled component");
        }
    }
    Ok((component, CompiledFrom::Compiler))
}

fn store_artifact(component: &Component, path: &Path) -> anyhow::Result<()> {
    let bytes = component.serialize().map_err(anyhow::Error::from)?;
    let dir = path.parent().context("artifact path has no directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    // Written aside and renamed, so a crash or a concurrent reader never sees half an artifact.
    let partial = path.with_extension(format!("partial-{}", std::process::id()));
    std::fs::write(&partial, bytes).with_context(|| format!("writing {}", partial.display()))?;
    std::fs::rename(&partial, path)
        .with_context(|| format!("renaming {} into place", partial.display()))
}

fn hex(digest: &Digest) -> String {
    digest.0.iter().map(|b| format!("{b:02x}")).collect()
}

/// Feeds `Hash` output into SHA-256: unlike `DefaultHasher`, stable across Rust releases, so artifact names
/// stay valid after a toolchain upgrade that does not change the engine.
struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u64 {
        // Only `finalize` on the inner digest is used.
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_print_as_prefixed_hex() {
        let d = Digest::of(b"");
        assert_eq!(
            d.to_string(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
