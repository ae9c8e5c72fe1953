//! Where a plugin's component comes from, as a Plugin's `spec.artifact` or a CLI argument names it:
//!
//! | form | source |
//! |---|---|
//! | `oci://REGISTRY/REPOSITORY:TAG`, `…@sha256:HEX`, or the same without `oci://` | an OCI registry (the CNCF Wasm artifact layout) |
//! | `file:///ABSOLUTE/PATH.wasm` | a file on the operator's disk, for air-gapped clusters (a `PATH.wasm.sig` beside it is its signature) |
//! | `builtin:NAME` | a plugin compiled into this operator (`omni-cluster`, `omni-helm-release`, …) |
//!
//! A reference with a digest is pinned: what is pulled must have exactly that digest. A tag is resolved to a
//! digest once, and the digest is what serves from then on.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// A parsed artifact reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArtifactRef {
    Oci(oci_client::Reference),
    File(PathBuf),
    BuiltIn(String),
}

/// Why a reference does not parse; the message names the form expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    #[error(
        "the artifact reference is empty: write oci://REGISTRY/REPOSITORY:TAG, file:///PATH or builtin:NAME"
    )]
    Empty,
    #[error("file reference {0:?} is not absolute: write file:///ABSOLUTE/PATH.wasm")]
    RelativeFile(String),
    #[error("unknown scheme in artifact reference {0:?}: use oci://, file:// or builtin:")]
    UnknownScheme(String),
    #[error("invalid OCI reference {reference:?}: {reason}")]
    Oci { reference: String, reason: String },
    #[error(
        "invalid digest in {0:?}: a pinned reference ends in @sha256: and 64 lowercase hexadecimal digits"
    )]
    Digest(String),
    #[error("builtin:{0} names no plugin of this operator")]
    UnknownBuiltIn(String),
}

impl FromStr for ArtifactRef {
    type Err = ReferenceError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        if text.is_empty() {
            return Err(ReferenceError::Empty);
        }
        if let Some(name) = text.strip_prefix("builtin:") {
            return Ok(ArtifactRef::BuiltIn(name.to_string()));
        }
        if let Some(path) = text.strip_prefix("file://") {
            if !path.starts_with('/') {
                return Err(ReferenceError::RelativeFile(text.to_string()));
            }
            return Ok(ArtifactRef::File(PathBuf::from(path)));
        }
        let oci = match text.split_once("://") {
            Some(("oci", rest)) => rest,
            Some(_) => return Err(ReferenceError::UnknownScheme(text.to_string())),
            None => text,
        };
        let reference = oci_client::Reference::from_str(oci).map_err(|e| ReferenceError::Oci {
            reference: text.to_string(),
            reason: e.to_string(),
        })?;
        if let Some(digest) = reference.digest()
            && !is_sha256_digest(digest)
        {
            return Err(ReferenceError::Digest(text.to_string()));
        }
        Ok(ArtifactRef::Oci(reference))
    }
}

impl fmt::Display for ArtifactRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArtifactRef::Oci(r) => write!(f, "oci://{}", r.whole()),
            ArtifactRef::File(p) => write!(f, "file://{}", p.display()),
            ArtifactRef::BuiltIn(n) => write!(f, "builtin:{n}"),
        }
    }
}

impl ArtifactRef {
    /// The digest the reference pins, if it pins one.
    pub fn pinned_digest(&self) -> Option<&str> {
        match self {
            ArtifactRef::Oci(r) => r.digest(),
            _ => None,
        }
    }
}

/// `sha256:` and 64 lowercase hexadecimal digits: the only digest form this operator accepts (OCI allows others,
/// but every registry and cosign use this one, and a second algorithm would be a second thing to get right).
pub fn is_sha256_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

pub use crate::registry::sha256_digest;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_forms_parse_and_print_back() {
        for text in [
            "oci://127.0.0.1:5000/plugins/site-rules:1.2.0",
            "file:///var/lib/omni-operator/plugins/site-rules.wasm",
            "builtin:omni-cluster",
        ] {
            let parsed: ArtifactRef = text.parse().unwrap();
            assert_eq!(parsed.to_string(), text);
        }
        let bare: ArtifactRef = "127.0.0.1:5000/plugins/site-rules:1.2.0".parse().unwrap();
        assert!(matches!(bare, ArtifactRef::Oci(_)));
    }

    #[test]
    fn a_digest_pins_the_reference() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let r: ArtifactRef = format!("oci://127.0.0.1:5000/p/x@{digest}")
            .parse()
            .unwrap();
        assert_eq!(r.pinned_digest(), Some(digest.as_str()));
        let tag: ArtifactRef = "oci://127.0.0.1:5000/p/x:1".parse().unwrap();
        assert_eq!(tag.pinned_digest(), None);
    }

    #[test]
    fn malformed_references_are_refused_with_the_form_expected() {
        assert_eq!("".parse::<ArtifactRef>(), Err(ReferenceError::Empty));
        assert!(matches!(
            "file://plugins/x.wasm".parse::<ArtifactRef>(),
            Err(ReferenceError::RelativeFile(_))
        ));
        assert!(matches!(
            "https://example.invalid/x.wasm".parse::<ArtifactRef>(),
            Err(ReferenceError::UnknownScheme(_))
        ));
        assert!(matches!(
            "oci://127.0.0.1:5000/p/x@sha256:abc".parse::<ArtifactRef>(),
            Err(ReferenceError::Oci { .. } | ReferenceError::Digest(_))
        ));
        assert!(matches!(
            "oci://127.0.0.1:5000/UPPER/x:1".parse::<ArtifactRef>(),
            Err(ReferenceError::Oci { .. })
        ));
    }

    #[test]
    fn only_sha256_digests_in_lowercase_hex_are_accepted() {
        assert!(is_sha256_digest(&format!("sha256:{}", "0f".repeat(32))));
        assert!(!is_sha256_digest(&format!("sha256:{}", "0F".repeat(32))));
        assert!(!is_sha256_digest(&format!("sha512:{}", "0f".repeat(64))));
        assert!(!is_sha256_digest("sha256:"));
        assert_eq!(
            sha256_digest(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
