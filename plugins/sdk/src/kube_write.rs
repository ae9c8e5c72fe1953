//! The types of [`KubeWrite`](crate::KubeWrite): how a write is made, and what a deletion does.

use serde_json::Value;

/// How [`KubeWrite::kube_apply`](crate::KubeWrite::kube_apply) and the other writes are made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Make the reconciled object the written object's controller owner: deleting the reconciled object then
    /// deletes it, and (with its kind in [`Info::owns`](crate::Info)) its changes call the plugin again.
    pub owned: bool,
    /// Server-side dry run: validated and answered as it would be stored; nothing is stored.
    pub dry_run: bool,
    /// Apply only: take fields another manager owns. Needs the grant `kube-write-allow:force`.
    pub force: bool,
}

impl WriteOptions {
    /// An owned write: the reconciled object becomes the controller owner.
    pub fn owned() -> Self {
        WriteOptions {
            owned: true,
            ..WriteOptions::default()
        }
    }

    /// The same write as a server-side dry run.
    pub fn dry_run(self) -> Self {
        WriteOptions {
            dry_run: true,
            ..self
        }
    }
}

/// A patch of an existing object.
#[derive(Debug, Clone, PartialEq)]
pub enum Patch {
    /// RFC 7386 JSON merge patch (a JSON object; `null` removes a field).
    Merge(Value),
    /// RFC 6902 JSON patch (a list of operations).
    Json(Value),
}

/// What deleting an object does to the objects it owns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Propagation {
    /// Deleted at once; the garbage collector deletes dependents afterwards.
    #[default]
    Background,
    /// Deleted after its dependents.
    Foreground,
    /// Dependents lose the owner reference and stay.
    Orphan,
}

/// How [`KubeWrite::kube_delete`](crate::KubeWrite::kube_delete) deletes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// Delete only if the object still has this UID (`Conflict` otherwise).
    pub uid: Option<String>,
    /// Delete only if the object is still at this resourceVersion (`Conflict` otherwise).
    pub resource_version: Option<String>,
    pub propagation: Propagation,
    pub dry_run: bool,
}
