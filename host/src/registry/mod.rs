//! OCI registries as the operator reads them, for whatever it pulls from one (plugin components, Helm charts):
//! who it is reached as ([`access`]), every part read with a ceiling from a registry that may lie ([`session`]),
//! and cosign-compatible signatures ([`signature`]), verified against trusted keys and made for `plugin push`.

pub mod access;
pub mod session;
pub mod signature;

pub use access::{Access, Credentials};
pub use signature::TrustedKeys;

/// `sha256:<hex>` of `bytes`, in the form OCI digests are written.
pub fn sha256_digest(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    let hex: String = sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}
