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

use crate::capabilities::HostError;

/// A Kubernetes API failure as the contract's `host-error`, prefixed with what was being done, the way the Go
/// operator wraps them (`get workload Secret "ns/name": …`). 401 and 403 stay apart from other failures: they
/// say the credentials are no longer usable, which callers act on (a kubeconfig export rotates).
pub fn kube_error(what: &str, e: kube::Error) -> HostError {
    match e {
        kube::Error::Api(s) => {
            let text = format!("{what}: {}", s.message);
            match s.code {
                401 => HostError::Unauthenticated(text),
                403 => HostError::Forbidden(text),
                404 => HostError::NotFound(text),
                409 => HostError::Conflict(text),
                400 | 422 => HostError::Invalid(text),
                429 | 500.. => HostError::Unavailable(text),
                _ => HostError::Other(text),
            }
        }
        // Connection refused, DNS, TLS, a closed connection: the cluster did not answer.
        other => HostError::Unavailable(format!("{what}: {other}")),
    }
}

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
