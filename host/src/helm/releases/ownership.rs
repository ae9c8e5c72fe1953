//! Whose a release is. The host stamps every revision it makes with the identity of the object that asked
//! ([`OWNER_LABEL`], [`OWNER_UID_LABEL`]) and acts on a release only for the object its newest stamp names, so
//! one object's plugin can neither read, upgrade nor uninstall another's. A release nobody owns is taken over
//! only when its object's user asks ([`ADOPT_ANNOTATION`]).

use super::ReleaseError;
use crate::helm::storage::{OWNER_LABEL, OWNER_UID_LABEL, StoredRevision};

/// The annotation a user sets on an object (value `namespace/name`) to adopt a release nobody owns.
pub const ADOPT_ANNOTATION: &str = "omni.texashpc.com/adopt-release";

/// The object a call acts for. A release belongs to the object that made it: the host stamps every revision it
/// makes with the object's identity ([`OWNER_LABEL`]) and UID, and acts on (or reads) a release only for the
/// object its newest stamp names. The identity is a digest of the object's API group, kind, namespace and name,
/// so an object deleted and created again under its name (a GitOps re-sync) keeps its release, as Flux keys
/// releases by name; no other object can ever carry that identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub identity: String,
    pub uid: String,
    /// The object's user asked to adopt this release if nobody owns it (`omni.texashpc.com/adopt-release`).
    pub adopt: bool,
}

impl Owner {
    pub fn new(
        group: &str,
        kind: &str,
        namespace: &str,
        name: &str,
        uid: &str,
        adopt: bool,
    ) -> Self {
        let identity = format!("{group}/{kind}/{namespace}/{name}");
        Owner {
            identity: crate::helm::sha256_prefix(identity.as_bytes(), 40),
            uid: uid.to_string(),
            adopt,
        }
    }

    /// The release labels that stamp a revision as this object's.
    pub(super) fn labels(&self) -> std::collections::BTreeMap<String, String> {
        [
            (OWNER_LABEL.to_string(), self.identity.clone()),
            (OWNER_UID_LABEL.to_string(), self.uid.clone()),
        ]
        .into_iter()
        .collect()
    }
}

/// Whom a release's revisions say it belongs to: the newest stamp (a rollback Helm made from an older revision
/// may carry none of its own).
fn stamped_owner(revisions: &[StoredRevision]) -> Option<&str> {
    revisions.iter().find_map(|r| r.owner.as_deref())
}

/// What a release's stamps allow `owner` to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ownership {
    /// No release, or one stamped with this object's identity.
    Owned,
    /// Nobody's release the object's user asked to adopt: stamped now, then owned.
    Adopt,
}

pub(super) fn ownership(
    revisions: &[StoredRevision],
    owner: &Owner,
    release: &str,
) -> Result<Ownership, ReleaseError> {
    match stamped_owner(revisions) {
        _ if revisions.is_empty() => Ok(Ownership::Owned),
        Some(stamp) if stamp == owner.identity => Ok(Ownership::Owned),
        Some(_) => Err(ReleaseError::NotOwned {
            release: release.to_string(),
            unowned: false,
        }),
        None if owner.adopt => Ok(Ownership::Adopt),
        None => Err(ReleaseError::NotOwned {
            release: release.to_string(),
            unowned: true,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn revision(status: &str, digest: Option<&str>, updated: &str) -> StoredRevision {
        StoredRevision {
            revision: 3,
            status: status.into(),
            digest: digest.map(str::to_string),
            updated: updated.into(),
            ..Default::default()
        }
    }

    fn stamped(owner: Option<&str>) -> StoredRevision {
        StoredRevision {
            owner: owner.map(str::to_string),
            ..revision("deployed", Some("d"), "")
        }
    }

    #[test]
    fn a_release_is_acted_on_only_for_the_object_its_newest_stamp_names() {
        let me = Owner::new(
            "omni.texashpc.com",
            "OmniHelmRelease",
            "team",
            "web",
            "uid-1",
            false,
        );
        let other = Owner::new(
            "omni.texashpc.com",
            "OmniHelmRelease",
            "team",
            "api",
            "uid-2",
            false,
        );
        let mine = Some(me.identity.as_str());
        assert_eq!(ownership(&[], &me, "apps/web").unwrap(), Ownership::Owned);
        assert_eq!(
            ownership(&[stamped(mine)], &me, "apps/web").unwrap(),
            Ownership::Owned
        );
        // A rollback revision without a stamp of its own: the older stamp decides.
        assert_eq!(
            ownership(&[stamped(None), stamped(mine)], &me, "apps/web").unwrap(),
            Ownership::Owned
        );
        let refused = ownership(&[stamped(mine)], &other, "apps/web").unwrap_err();
        assert!(
            matches!(refused, ReleaseError::NotOwned { unowned: false, .. }),
            "{refused}"
        );
        // Re-created under its name (a new UID), the object is still the owner; the same name in another
        // namespace or of another kind is not.
        let again = Owner::new(
            "omni.texashpc.com",
            "OmniHelmRelease",
            "team",
            "web",
            "uid-9",
            false,
        );
        assert_eq!(
            ownership(&[stamped(mine)], &again, "apps/web").unwrap(),
            Ownership::Owned
        );
        for stranger in [
            Owner::new(
                "omni.texashpc.com",
                "OmniHelmRelease",
                "team-b",
                "web",
                "uid-1",
                false,
            ),
            Owner::new(
                "example.com",
                "OmniHelmRelease",
                "team",
                "web",
                "uid-1",
                false,
            ),
        ] {
            assert!(ownership(&[stamped(mine)], &stranger, "apps/web").is_err());
        }
        // Nobody's release: refused with the adoption step named, adopted only when asked, never someone else's.
        let unowned = ownership(&[stamped(None)], &me, "apps/web").unwrap_err();
        assert!(
            unowned
                .to_string()
                .contains("omni.texashpc.com/adopt-release=apps/web"),
            "{unowned}"
        );
        let adopting = Owner {
            adopt: true,
            ..me.clone()
        };
        assert_eq!(
            ownership(&[stamped(None)], &adopting, "apps/web").unwrap(),
            Ownership::Adopt
        );
        let adopting_other = Owner {
            adopt: true,
            ..other
        };
        assert!(ownership(&[stamped(mine)], &adopting_other, "apps/web").is_err());
    }
}
