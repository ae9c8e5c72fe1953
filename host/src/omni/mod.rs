//! Omni's API as the host reaches it. Plugins address Omni by OmniConnection name; the host holds the
//! service-account key and signs every request, so key material never crosses into a plugin.
//!
//! * [`endpoint`]: the endpoint URL as Omni's Go client normalises it;
//! * [`service_account`]: the checks on the Secret value holding the key;
//! * [`transport`]: gRPC channels (h2c or TLS, `insecureSkipTLSVerify`);
//! * [`address`]: how a resource is addressed;
//! * [`client`]: signed calls with deadlines and typed errors;
//! * [`connections`]: OmniConnection name → pooled client;
//! * [`overlay`]: a plan's Omni, where writes are recorded instead of sent.

pub mod address;
pub mod client;
pub mod connections;
pub mod endpoint;
pub mod overlay;
pub mod service_account;
pub mod transport;

pub use client::OmniClient;
pub use connections::{OmniConnections, SetupError};
