//! The on-disk artifact cache: every component pulled (or pre-seeded with `omni-operator plugin pull --cache`),
//! keyed by the digest that pins it, with the manifest and the signatures it was verified with. A pinned Plugin
//! whose digest is here starts without reaching its registry, which is what an air-gapped cluster needs.
//!
//! Nothing read back is trusted for being here: the manifest must hash to the directory's digest and the
//! component to the manifest's layer digest, and signatures are verified again against the Plugin's keys.

use std::path::{Path, PathBuf};

use super::oci::LAYER_MEDIA_TYPE;
use super::reference::{is_sha256_digest, sha256_digest};
use super::signature::StoredSignature;

/// `<dir>/sha256/<hex>/{manifest.json, component.wasm, signatures.json}`.
#[derive(Debug, Clone)]
pub struct ArtifactCache {
    dir: PathBuf,
}

/// One cached artifact.
#[derive(Debug, Clone)]
pub struct Cached {
    pub component: Vec<u8>,
    pub manifest: Vec<u8>,
    pub signatures: Vec<StoredSignature>,
}

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("artifact cache {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("artifact cache entry {digest} is corrupt ({reason}); it is ignored")]
    Corrupt { digest: String, reason: String },
}

impl ArtifactCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ArtifactCache { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn entry(&self, digest: &str) -> Option<PathBuf> {
        if !is_sha256_digest(digest) {
            return None;
        }
        let hex = digest.strip_prefix("sha256:")?;
        Some(self.dir.join("sha256").join(hex))
    }

    /// The artifact pinned by `digest`, if cached and intact.
    pub fn get(&self, digest: &str) -> Result<Option<Cached>, CacheError> {
        let Some(entry) = self.entry(digest) else {
            return Ok(None);
        };
        let manifest = match std::fs::read(entry.join("manifest.json")) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(io(&entry, source)),
        };
        let corrupt = |reason: String| CacheError::Corrupt {
            digest: digest.to_string(),
            reason,
        };
        if sha256_digest(&manifest) != digest {
            return Err(corrupt("its manifest does not hash to its digest".into()));
        }
        let layer = serde_json::from_slice::<serde_json::Value>(&manifest)
            .ok()
            .and_then(|m| {
                let layers = m.get("layers")?.as_array()?.clone();
                let [layer] = layers.as_slice() else {
                    return None;
                };
                (layer.get("mediaType")?.as_str()? == LAYER_MEDIA_TYPE)
                    .then(|| layer.get("digest")?.as_str().map(String::from))?
            })
            .ok_or_else(|| corrupt("its manifest is not a Wasm component manifest".into()))?;
        let path = entry.join("component.wasm");
        let component = match super::read_bounded(&path) {
            Ok(bytes) => bytes,
            Err(super::Bounded::Io(source)) => return Err(io(&path, source)),
            Err(super::Bounded::TooLarge(size)) => {
                return Err(corrupt(format!("its component is more than {size} bytes")));
            }
        };
        if sha256_digest(&component) != layer {
            return Err(corrupt(
                "its component does not hash to the manifest's layer".into(),
            ));
        }
        let signatures = match std::fs::read(entry.join("signatures.json")) {
            Ok(s) => serde_json::from_slice(&s).unwrap_or_default(),
            Err(_) => Vec::new(),
        };
        Ok(Some(Cached {
            component,
            manifest,
            signatures,
        }))
    }

    /// Stores an artifact under `digest`; each file is written whole and renamed into place, so a reader never
    /// sees half of one.
    pub fn put(&self, digest: &str, cached: &Cached) -> Result<(), CacheError> {
        let Some(entry) = self.entry(digest) else {
            return Err(CacheError::Corrupt {
                digest: digest.to_string(),
                reason: "not a sha256 digest".into(),
            });
        };
        std::fs::create_dir_all(&entry).map_err(|source| io(&entry, source))?;
        let signatures = serde_json::to_vec_pretty(&cached.signatures).unwrap_or_default();
        for (name, bytes) in [
            ("component.wasm", cached.component.as_slice()),
            ("signatures.json", signatures.as_slice()),
            // Last: an entry counts as present once its manifest is there.
            ("manifest.json", cached.manifest.as_slice()),
        ] {
            let tmp = entry.join(format!(".{name}.tmp"));
            std::fs::write(&tmp, bytes).map_err(|source| io(&tmp, source))?;
            let path = entry.join(name);
            std::fs::rename(&tmp, &path).map_err(|source| io(&path, source))?;
        }
        Ok(())
    }

    /// Replaces the signatures kept for `digest` (they were fetched again and verified).
    pub fn put_signatures(
        &self,
        digest: &str,
        signatures: &[StoredSignature],
    ) -> Result<(), CacheError> {
        let Some(entry) = self.entry(digest) else {
            return Ok(());
        };
        let tmp = entry.join(".signatures.json.tmp");
        std::fs::write(
            &tmp,
            serde_json::to_vec_pretty(signatures).unwrap_or_default(),
        )
        .map_err(|source| io(&tmp, source))?;
        let path = entry.join("signatures.json");
        std::fs::rename(&tmp, &path).map_err(|source| io(&path, source))
    }
}

fn io(path: &Path, source: std::io::Error) -> CacheError {
    CacheError::Io {
        path: path.display().to_string(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest_for(component: &[u8]) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "config": {"mediaType": super::super::oci::CONFIG_MEDIA_TYPE, "digest": sha256_digest(b"{}"), "size": 2},
            "layers": [{"mediaType": LAYER_MEDIA_TYPE, "digest": sha256_digest(component), "size": component.len()}]
        }))
        .unwrap()
    }

    #[test]
    fn an_entry_reads_back_only_while_it_hashes_to_its_digest() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ArtifactCache::new(dir.path());
        let component = b"\0asm component".to_vec();
        let manifest = manifest_for(&component);
        let digest = sha256_digest(&manifest);
        assert!(cache.get(&digest).unwrap().is_none());
        cache
            .put(
                &digest,
                &Cached {
                    component: component.clone(),
                    manifest,
                    signatures: vec![],
                },
            )
            .unwrap();
        assert_eq!(cache.get(&digest).unwrap().unwrap().component, component);

        // Someone swaps the component on disk: the entry is refused, not served.
        let hex = digest.strip_prefix("sha256:").unwrap();
        std::fs::write(
            dir.path().join("sha256").join(hex).join("component.wasm"),
            b"evil",
        )
        .unwrap();
        assert!(matches!(
            cache.get(&digest),
            Err(CacheError::Corrupt { .. })
        ));
        // A digest that is not one never becomes a path.
        assert!(cache.get("sha256:../../etc").unwrap().is_none());
    }
}
