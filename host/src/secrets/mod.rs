//! Secrets in a cluster — the management cluster or a workload cluster — and the rules for touching them: the
//! host writes and deletes only Secrets that carry the reconciled object's owner label, reads them uncached, and
//! reaches workload clusters through clients built from kubeconfig Secrets.
//!
//! Secret values stay inside this module and the capability that called it: errors name Secrets and keys, never
//! values, and a kubeconfig that does not parse is described without quoting it.

mod clients;
mod content_hash;
mod kubeconfig;
mod owned;

pub use clients::WorkloadClients;
pub use content_hash::content_hash;
pub use kubeconfig::{check_generated, client_config, set_context_namespace};
pub use owned::{
    CopyOutcome, CopyRequest, KubeconfigWrite, OwnerLabel, Removal, copy, delete_owned, get,
    not_owned, write_kubeconfig,
};

/// Lowercase hex SHA-256, the form of every digest in the contract.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `"namespace/name"`, Go-quoted, as every message names a Secret.
pub fn quoted(namespace: &str, name: &str) -> String {
    format!("{:?}", format!("{namespace}/{name}"))
}
