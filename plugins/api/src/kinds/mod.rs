//! The eight kinds, one module each: spec, status, and the [`crate::OmniKind`] names.

mod cluster;
mod connection;
mod control_plane;
mod helm_actions;
mod helm_release;
mod kubeconfig_export;
mod machine;
mod secret_sync;
mod workers;

pub use cluster::*;
pub use connection::*;
pub use control_plane::*;
pub use helm_actions::*;
pub use helm_release::*;
pub use kubeconfig_export::*;
pub use machine::*;
pub use secret_sync::*;
pub use workers::*;

/// Implements [`crate::OmniKind`] for a spec type and names its typed object.
macro_rules! omni_kind {
    ($object:ident, $spec:ty, $status:ty, kind = $kind:literal, plural = $plural:literal, singular = $singular:literal) => {
        impl $crate::meta::OmniKind for $spec {
            const KIND: &'static str = $kind;
            const PLURAL: &'static str = $plural;
            const SINGULAR: &'static str = $singular;
            const LIST_KIND: &'static str = concat!($kind, "List");
            type Status = $status;
        }

        #[doc = concat!("A typed ", $kind, " object.")]
        pub type $object = $crate::meta::Object<$spec>;
    };
}
use omni_kind;

/// The eight kinds of the API, in the order the Go operator's `api/v1alpha1` registers them.
pub const KINDS: [&str; 8] = [
    <OmniConnectionSpec as crate::OmniKind>::KIND,
    <OmniClusterSpec as crate::OmniKind>::KIND,
    <OmniControlPlaneSpec as crate::OmniKind>::KIND,
    <OmniWorkersSpec as crate::OmniKind>::KIND,
    <OmniMachineSpec as crate::OmniKind>::KIND,
    <OmniHelmReleaseSpec as crate::OmniKind>::KIND,
    <OmniKubeconfigExportSpec as crate::OmniKind>::KIND,
    <OmniSecretSyncSpec as crate::OmniKind>::KIND,
];
