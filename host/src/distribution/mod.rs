//! Where plugins come from when they are not built in: OCI registries in the CNCF Wasm layout, files on the
//! operator's disk for air-gapped clusters, and a digest-keyed cache in front of both. Everything here happens
//! before a byte is compiled: the reference is resolved to a digest (a tag once; the digest then pins it), the
//! bytes are checked against the digest, and the signature against the Plugin's keys.
//!
//! * [`reference`] parses `oci://`, `file://` and `builtin:` references;
//! * [`oci`] pushes and pulls the artifact layout;
//! * [`registry`] reads every part a pull needs with a ceiling, from a registry that may lie;
//! * [`signature`] verifies and makes cosign-compatible signatures;
//! * [`cache`] keeps pulled artifacts by digest;
//! * [`metadata`] reads the metadata section the SDK writes into a component.

pub mod cache;
pub mod metadata;
pub mod oci;
pub mod reference;

// Registry access and signatures are the operator's, shared with Helm charts; their paths stay here too.
pub use crate::registry::TrustedKeys;
pub use crate::registry::session as registry;
pub use crate::registry::{Access, Credentials, access, signature};
pub use cache::ArtifactCache;
pub use metadata::PluginMetadata;
pub use reference::ArtifactRef;

use std::path::Path;

use cache::Cached;
use oci::OciError;
use reference::sha256_digest;
use signature::SignatureError;

/// Whose signatures an artifact needs.
#[derive(Debug)]
pub enum Trust {
    /// One of these keys must have signed it.
    Keys(TrustedKeys),
    /// Unsigned code is accepted: the Plugin says so in `spec.verification.disabled` (and its status says it).
    Disabled,
}

/// A component ready to compile, and where it came from.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub component: Vec<u8>,
    /// What pins it: the manifest digest of an OCI artifact, the file's SHA-256 for a file.
    pub digest: String,
    /// The reference with its digest (`oci://registry/repo@sha256:…`, `file:///…`).
    pub pinned: String,
    /// The name of the key that verified it; `None` when verification is disabled.
    pub signed_by: Option<String>,
    pub metadata: Option<PluginMetadata>,
    /// Served from the cache without reaching the registry.
    pub from_cache: bool,
}

/// Why a component could not be fetched; each names the artifact.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error(transparent)]
    Oci(#[from] OciError),
    #[error(transparent)]
    Signature(#[from] SignatureError),
    #[error(transparent)]
    Metadata(#[from] metadata::MetadataError),
    #[error("reading {path}: {source}")]
    File {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is {size} bytes, above the {max}-byte ceiling", max = oci::MAX_COMPONENT_BYTES)]
    FileTooLarge { path: String, size: u64 },
    #[error("{0} names a built-in plugin; built-ins are not fetched")]
    BuiltIn(String),
}

impl FetchError {
    /// A short reason for a condition: what failed, in one word.
    pub fn reason(&self) -> &'static str {
        match self {
            FetchError::Signature(SignatureError::Unsigned { .. }) => "Unsigned",
            FetchError::Signature(SignatureError::Untrusted { .. }) => "UntrustedSignature",
            FetchError::Signature(_) => "SignatureError",
            FetchError::Oci(OciError::Fetch {
                source: registry::ReadError::TooLarge { .. },
                ..
            }) => "InvalidArtifact",
            FetchError::Oci(OciError::Registry { .. } | OciError::Fetch { .. }) => "PullFailed",
            FetchError::Oci(_) => "InvalidArtifact",
            FetchError::Metadata(_) => "InvalidArtifact",
            FetchError::File { .. } | FetchError::FileTooLarge { .. } => "PullFailed",
            FetchError::BuiltIn(_) => "InvalidArtifact",
        }
    }
}

/// Fetches what `reference` names and checks it against `trust`. `resolved` is a digest resolved earlier for a
/// tag (the Plugin's status keeps it), so a tag is looked up once, not at every start.
pub async fn fetch(
    reference: &ArtifactRef,
    resolved: Option<&str>,
    access: &Access,
    trust: &Trust,
    cache: Option<&ArtifactCache>,
) -> Result<Fetched, FetchError> {
    match reference {
        ArtifactRef::BuiltIn(_) => Err(FetchError::BuiltIn(reference.to_string())),
        ArtifactRef::File(path) => fetch_file(path, trust),
        ArtifactRef::Oci(r) => {
            let digest = match r.digest().or(resolved) {
                Some(d) => d.to_string(),
                None => oci::resolve(r, access).await?,
            };
            fetch_oci(r, &digest, access, trust, cache).await
        }
    }
}

fn fetch_file(path: &Path, trust: &Trust) -> Result<Fetched, FetchError> {
    let display = path.display().to_string();
    let component = read_bounded(path).map_err(|e| match e {
        Bounded::Io(source) => FetchError::File {
            path: display.clone(),
            source,
        },
        Bounded::TooLarge(size) => FetchError::FileTooLarge {
            path: display.clone(),
            size,
        },
    })?;
    let digest = sha256_digest(&component);
    let signed_by = match trust {
        Trust::Disabled => None,
        Trust::Keys(keys) => {
            let sig_path = format!("{display}.sig");
            let signature = match std::fs::read_to_string(&sig_path) {
                Ok(s) => s,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(SignatureError::Unsigned {
                        artifact: format!("file://{display} (no {sig_path})"),
                    }
                    .into());
                }
                Err(source) => {
                    return Err(FetchError::File {
                        path: sig_path,
                        source,
                    });
                }
            };
            Some(keys.verify_blob(&format!("file://{display}"), &component, &signature)?)
        }
    };
    let metadata = metadata::read(&component)?;
    Ok(Fetched {
        component,
        pinned: format!("file://{display}"),
        digest,
        signed_by,
        metadata,
        from_cache: false,
    })
}

/// Why a bounded read stopped.
pub(crate) enum Bounded {
    Io(std::io::Error),
    /// At least this many bytes.
    TooLarge(u64),
}

/// A regular file's bytes, read through one open handle and never more than [`oci::MAX_COMPONENT_BYTES`]:
/// what the size check saw is what is read (a file that grows, a symbolic link to a device, or a FIFO is
/// refused, not read without end).
pub(crate) fn read_bounded(path: &Path) -> Result<Vec<u8>, Bounded> {
    use std::io::Read as _;
    let file = std::fs::File::open(path).map_err(Bounded::Io)?;
    let meta = file.metadata().map_err(Bounded::Io)?;
    if !meta.is_file() {
        return Err(Bounded::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        )));
    }
    let mut bytes = Vec::new();
    file.take(oci::MAX_COMPONENT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(Bounded::Io)?;
    if bytes.len() as u64 > oci::MAX_COMPONENT_BYTES {
        return Err(Bounded::TooLarge(bytes.len() as u64));
    }
    Ok(bytes)
}

async fn fetch_oci(
    reference: &oci_client::Reference,
    digest: &str,
    access: &Access,
    trust: &Trust,
    cache: Option<&ArtifactCache>,
) -> Result<Fetched, FetchError> {
    let pinned = format!(
        "oci://{}/{}@{digest}",
        reference.registry(),
        reference.repository()
    );
    let cached = match cache.map(|c| c.get(digest)) {
        Some(Ok(found)) => found,
        Some(Err(e)) => {
            tracing::warn!(error = %e, "artifact cache entry ignored; pulling again");
            None
        }
        None => None,
    };
    let (entry, from_cache) = match cached {
        Some(entry) => (entry, true),
        None => {
            let pulled = oci::pull(reference, digest, access).await?;
            let signatures = match trust {
                Trust::Keys(_) => signature::fetch(reference, digest, access).await?,
                Trust::Disabled => Vec::new(),
            };
            (
                Cached {
                    component: pulled.component,
                    manifest: pulled.manifest,
                    signatures,
                },
                false,
            )
        }
    };
    let mut entry = entry;
    let signed_by = match trust {
        Trust::Disabled => None,
        Trust::Keys(keys) => match keys.verify_stored(&pinned, digest, &entry.signatures) {
            Ok(name) => Some(name),
            // Signed since it was cached, or by a key added since: ask the registry once more.
            Err(_) if from_cache => {
                let fresh = signature::fetch(reference, digest, access).await?;
                let name = keys.verify_stored(&pinned, digest, &fresh)?;
                entry.signatures = fresh;
                if let Some(cache) = cache
                    && let Err(e) = cache.put_signatures(digest, &entry.signatures)
                {
                    tracing::warn!(error = %e, "could not cache the signatures");
                }
                Some(name)
            }
            Err(e) => return Err(e.into()),
        },
    };
    if !from_cache
        && let Some(cache) = cache
        && let Err(e) = cache.put(digest, &entry)
    {
        tracing::warn!(error = %e, "could not cache the artifact");
    }
    let metadata = metadata::read(&entry.component)?;
    Ok(Fetched {
        component: entry.component,
        digest: digest.to_string(),
        pinned,
        signed_by,
        metadata,
        from_cache,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_reads_take_regular_files_only_and_never_more_than_the_ceiling() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small.wasm");
        std::fs::write(&small, b"\0asm").unwrap();
        assert_eq!(read_bounded(&small).ok(), Some(b"\0asm".to_vec()));
        // A link to a device whose size reads as 0 but never ends.
        let zero = dir.path().join("zero.wasm");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert!(matches!(read_bounded(&zero), Err(Bounded::Io(_))));
        // One byte over the ceiling.
        let big = dir.path().join("big.wasm");
        let file = std::fs::File::create(&big).unwrap();
        file.set_len(oci::MAX_COMPONENT_BYTES + 1).unwrap();
        assert!(matches!(read_bounded(&big), Err(Bounded::TooLarge(_))));
    }
}
