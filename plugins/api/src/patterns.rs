//! The regular expressions the CRD schemas enforce, kept in one place so admission and
//! reconcile code can quote exactly what the API server checks.

/// Kubernetes and Talos versions: `v1.35.0`.
pub const SEMVER_VERSION: &str = r"^v[0-9]+\.[0-9]+\.[0-9]+$";

/// OmniConnection endpoints: `https://…`, `http://…` or `grpc://…`.
pub const ENDPOINT: &str = r"^(https?|grpc)://.+";

/// Omni cluster names and worker-set names.
pub const OMNI_NAME: &str = r"^[A-Za-z0-9_-]+$";

/// An RFC 1123 label, as Kubernetes namespaces are.
pub const DNS_LABEL: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/// `metav1.Condition.type`: CamelCase, optionally prefixed by a DNS subdomain and `/`.
pub const CONDITION_TYPE: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";

/// `metav1.Condition.reason`: a CamelCase identifier.
pub const CONDITION_REASON: &str = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$";
