//! Omni's wire protocol as omni-cluster-operator speaks it, shared by the host (client side) and the Omni
//! simulator (server side), so both are built from one definition of every message:
//! * [`cosi`], [`management`], [`specs`]: prost messages and tonic services generated from `proto/`, our own
//!   subset of the upstream `.proto` files with upstream's packages, names and field numbers;
//! * [`key`]: the service-account key (`OMNI_SERVICE_ACCOUNT_KEY`);
//! * [`signature`]: the "siderov1" request signature, signing and verification;
//! * [`compression`]: zstd content with Omni's dictionary.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod compression;
pub mod key;
pub mod signature;

/// `cosi.resource`: the State service and its resource messages.
#[allow(clippy::all, missing_docs)]
pub mod cosi {
    tonic::include_proto!("cosi.resource");
}

/// `management`: ManagementService, of which only Kubeconfig is used.
#[allow(clippy::all, missing_docs)]
pub mod management {
    tonic::include_proto!("management");
}

/// `specs`: the spec messages of the resource types used.
#[allow(clippy::all, missing_docs)]
pub mod specs {
    tonic::include_proto!("specs");
}

/// The encoded `google.protobuf.FileDescriptorSet` of every message above, with its imports (`Duration`).
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/omni_wire_descriptors.bin"));

pub use key::{KeyError, ServiceAccountKey};

/// Omni's resource phases as they appear in `Metadata.phase`.
pub mod phase {
    pub const RUNNING: &str = "running";
    pub const TEARING_DOWN: &str = "tearingDown";
}

/// The version a resource that is not stored yet carries.
pub const VERSION_UNDEFINED: &str = "undefined";
/// The namespace of every resource the operator reads or writes.
pub const DEFAULT_NAMESPACE: &str = "default";
