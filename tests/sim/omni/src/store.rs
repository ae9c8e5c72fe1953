//! The in-memory COSI state, with cosi's semantics: resources keyed by (namespace, type, id), versions, phases,
//! owners and finalizers, a change history for watch bookmarks, and a broadcast of every change.
//!
//! The `*_as` methods are what the gRPC service uses (owner checks as cosi does them); the plain methods
//! are for test fixtures and skip the owner check.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use omni_wire::cosi::{Metadata, Resource, Spec};
use omni_wire::phase;
use tokio::sync::{broadcast, watch};

use crate::clock::SimClock;

/// Changes kept for `start_from_bookmark` and `tail_events`.
const HISTORY: usize = 10_000;
/// Events a slow watcher may fall behind before it gets an ERRORED "buffer overrun".
const BROADCAST: usize = 8_192;

pub type Key = (String, String, String);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Created,
    Updated,
    Destroyed,
}

/// One stored change, numbered in store order.
#[derive(Debug, Clone)]
pub struct Change {
    pub seq: u64,
    pub kind: ChangeKind,
    /// The new state (Created/Updated) or the last state (Destroyed).
    pub resource: Resource,
    pub old: Option<Resource>,
}

/// cosi state errors, with the texts of its in-memory backend.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    AlreadyExists(String),
    #[error("{0}")]
    VersionConflict(String),
    #[error("{0}")]
    OwnerConflict(String),
    #[error("{0}")]
    PhaseConflict(String),
    #[error("{0}")]
    PendingFinalizers(String),
}

impl StateError {
    pub fn code(&self) -> tonic::Code {
        match self {
            StateError::NotFound(_) => tonic::Code::NotFound,
            StateError::AlreadyExists(_) => tonic::Code::AlreadyExists,
            StateError::VersionConflict(_) | StateError::PendingFinalizers(_) => {
                tonic::Code::FailedPrecondition
            }
            StateError::OwnerConflict(_) => tonic::Code::PermissionDenied,
            StateError::PhaseConflict(_) => tonic::Code::InvalidArgument,
        }
    }
}

impl From<StateError> for tonic::Status {
    fn from(e: StateError) -> Self {
        tonic::Status::new(e.code(), e.to_string())
    }
}

/// The metadata of a stored resource (always present in the store).
pub fn md(r: &Resource) -> &Metadata {
    static EMPTY: std::sync::OnceLock<Metadata> = std::sync::OnceLock::new();
    r.metadata
        .as_ref()
        .unwrap_or_else(|| EMPTY.get_or_init(Metadata::default))
}

fn md_mut(r: &mut Resource) -> &mut Metadata {
    r.metadata.get_or_insert_with(Metadata::default)
}

/// `resource <T>(<ns>/<id>@<version>)`, as cosi prints a resource pointer.
pub fn describe(ty: &str, ns: &str, id: &str, version: &str) -> String {
    format!("resource {ty}({ns}/{id}@{version})")
}

fn describe_r(r: &Resource) -> String {
    let m = md(r);
    describe(&m.r#type, &m.namespace, &m.id, &m.version)
}

/// The stored resource at `key`, if `owner` (when checked) owns it: the common first step of destroy and teardown.
fn owned_by(
    items: &BTreeMap<Key, Resource>,
    key: &Key,
    owner: Option<&str>,
) -> Result<Resource, StateError> {
    let Some(stored) = items.get(key).cloned() else {
        let (ns, ty, id) = key;
        return Err(StateError::NotFound(format!(
            "{} doesn't exist",
            describe(ty, ns, id, omni_wire::VERSION_UNDEFINED)
        )));
    };
    let current = &md(&stored).owner;
    if let Some(owner) = owner
        && current != owner
    {
        return Err(StateError::OwnerConflict(format!(
            "{} is owned by {current:?}",
            describe_r(&stored)
        )));
    }
    Ok(stored)
}

/// Go's `%v` of a string slice: `[a b]`.
pub fn go_list(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

/// A new resource with the given spec bytes, phase running, version undefined.
pub fn new_resource(ns: &str, ty: &str, id: &str, proto_spec: Vec<u8>) -> Resource {
    Resource {
        metadata: Some(Metadata {
            namespace: ns.into(),
            r#type: ty.into(),
            id: id.into(),
            version: omni_wire::VERSION_UNDEFINED.into(),
            phase: phase::RUNNING.into(),
            ..Default::default()
        }),
        spec: Some(Spec {
            proto_spec,
            yaml_spec: String::new(),
        }),
    }
}

/// The tombstone cosi sends for an absent resource: metadata only, empty spec.
pub fn tombstone(ns: &str, ty: &str, id: &str) -> Resource {
    new_resource(ns, ty, id, Vec::new())
}

struct Inner {
    items: BTreeMap<Key, Resource>,
    /// IDs by (namespace, type, label key, label value): a label query over ten thousand resources reads only
    /// the ones carrying the label, as an indexed state backend would.
    by_label: HashMap<(String, String, String, String), BTreeSet<String>>,
    seq: u64,
    history: VecDeque<Arc<Change>>,
}

impl Inner {
    /// The stored resources of one type in one namespace, in ID order.
    fn of_type<'a>(
        &'a self,
        ns: &'a str,
        ty: &'a str,
    ) -> impl Iterator<Item = (&'a Key, &'a Resource)> + 'a {
        self.items
            .range((ns.to_string(), ty.to_string(), String::new())..)
            .take_while(move |(k, _)| k.0 == ns && k.1 == ty)
    }

    fn index(&mut self, r: &Resource, add: bool) {
        let m = md(r);
        for (k, v) in &m.labels {
            let key = (m.namespace.clone(), m.r#type.clone(), k.clone(), v.clone());
            if add {
                self.by_label.entry(key).or_default().insert(m.id.clone());
            } else if let Some(ids) = self.by_label.get_mut(&key) {
                ids.remove(&m.id);
                if ids.is_empty() {
                    self.by_label.remove(&key);
                }
            }
        }
    }
}

/// What a watch starts from: the matching snapshot, the changes after a bookmark, and the live feed.
pub(crate) struct Subscription {
    pub snapshot: Vec<Resource>,
    pub backlog: Vec<Arc<Change>>,
    pub seq: u64,
    pub rx: broadcast::Receiver<Arc<Change>>,
}

/// The state store. Cheap to share behind an `Arc`.
pub struct Store {
    inner: Mutex<Inner>,
    events: broadcast::Sender<Arc<Change>>,
    changed: watch::Sender<u64>,
    clock: SimClock,
    /// Distinguishes bookmarks of this store from those of another simulator instance (or of this one before a
    /// restart that lost its state).
    instance: std::sync::atomic::AtomicU64,
    /// Set by `poke`: something outside the store changed, so the controllers look at everything once.
    poked: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("seq", &self.lock().seq)
            .finish_non_exhaustive()
    }
}

fn key_of(r: &Resource) -> Key {
    let m = md(r);
    (m.namespace.clone(), m.r#type.clone(), m.id.clone())
}

fn parse_version(v: &str) -> u64 {
    v.parse().unwrap_or(0)
}

impl Store {
    pub(crate) fn new(clock: SimClock) -> Self {
        let (events, _) = broadcast::channel(BROADCAST);
        let (changed, _) = watch::channel(0);
        Store {
            inner: Mutex::new(Inner {
                items: BTreeMap::new(),
                by_label: HashMap::new(),
                seq: 0,
                history: VecDeque::new(),
            }),
            events,
            changed,
            clock,
            instance: std::sync::atomic::AtomicU64::new(rand::random()),
            poked: Default::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a change and publishes it while the lock is held, so subscribers never see a gap.
    fn emit(&self, inner: &mut Inner, kind: ChangeKind, resource: Resource, old: Option<Resource>) {
        // Every write ends here, so the label index follows the items exactly.
        match kind {
            ChangeKind::Created => inner.index(&resource, true),
            ChangeKind::Updated => {
                if let Some(old) = &old {
                    inner.index(old, false);
                }
                inner.index(&resource, true);
            }
            ChangeKind::Destroyed => inner.index(&resource, false),
        }
        inner.seq += 1;
        let change = Arc::new(Change {
            seq: inner.seq,
            kind,
            resource,
            old,
        });
        inner.history.push_back(change.clone());
        if inner.history.len() > HISTORY {
            inner.history.pop_front();
        }
        let _ = self.events.send(change);
        self.changed.send_replace(inner.seq);
    }

    fn instance(&self) -> u64 {
        self.instance.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Forgets every resource and the change history, as an Omni restored from an empty backup: no change events
    /// (nobody is watching across the restart), and bookmarks from before are refused.
    pub(crate) fn wipe(&self) {
        let mut inner = self.lock();
        inner.items.clear();
        inner.by_label.clear();
        inner.history.clear();
        self.instance
            .store(rand::random(), std::sync::atomic::Ordering::SeqCst);
        self.changed.send_replace(inner.seq);
    }

    /// Wakes the controllers without a change (after a switch such as cluster health flipped).
    pub(crate) fn poke(&self) {
        self.poked.store(true, std::sync::atomic::Ordering::SeqCst);
        self.changed.send_modify(|_| {});
    }

    /// Whether `poke` was called since the last time this was asked.
    pub(crate) fn take_poke(&self) -> bool {
        self.poked.swap(false, std::sync::atomic::Ordering::SeqCst)
    }

    /// Notified with the newest sequence number after every change (controllers wait on it).
    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    pub fn get(&self, ns: &str, ty: &str, id: &str) -> Option<Resource> {
        self.lock()
            .items
            .get(&(ns.to_string(), ty.to_string(), id.to_string()))
            .cloned()
    }

    /// All resources of a type in a namespace, sorted by ID.
    pub fn list(&self, ns: &str, ty: &str) -> Vec<Resource> {
        self.list_matching(ns, ty, |_| true)
    }

    /// The resources of a type that `keep` accepts, sorted by ID. Filtering happens under the lock, before
    /// anything is cloned: a label query over thousands of resources copies only what it returns.
    pub fn list_matching(
        &self,
        ns: &str,
        ty: &str,
        mut keep: impl FnMut(&Resource) -> bool,
    ) -> Vec<Resource> {
        self.lock()
            .of_type(ns, ty)
            .filter(|(_, r)| keep(r))
            .map(|(_, r)| r.clone())
            .collect()
    }

    /// Like [`Store::list_matching`], looking only at the resources carrying `label=value` when a label is given.
    pub fn list_labeled_matching(
        &self,
        ns: &str,
        ty: &str,
        label: Option<(&str, &str)>,
        mut keep: impl FnMut(&Resource) -> bool,
    ) -> Vec<Resource> {
        let Some((k, v)) = label else {
            return self.list_matching(ns, ty, keep);
        };
        let inner = self.lock();
        let Some(ids) =
            inner
                .by_label
                .get(&(ns.to_string(), ty.to_string(), k.to_string(), v.to_string()))
        else {
            return Vec::new();
        };
        ids.iter()
            .filter_map(|id| {
                inner
                    .items
                    .get(&(ns.to_string(), ty.to_string(), id.clone()))
            })
            .filter(|r| keep(r))
            .cloned()
            .collect()
    }

    /// Resources of a type carrying `label=value`, sorted by ID.
    pub fn list_labeled(&self, ns: &str, ty: &str, label: &str, value: &str) -> Vec<Resource> {
        self.list_labeled_matching(ns, ty, Some((label, value)), |_| true)
    }

    /// The IDs of a type's resources, sorted.
    pub fn ids(&self, ns: &str, ty: &str) -> Vec<String> {
        self.lock()
            .of_type(ns, ty)
            .map(|(k, _)| k.2.clone())
            .collect()
    }

    /// The changes after `seq`, oldest first; `None` when the history no longer reaches back that far.
    pub(crate) fn changes_since(&self, seq: u64) -> Option<Vec<Arc<Change>>> {
        let inner = self.lock();
        let oldest = inner
            .history
            .front()
            .map(|c| c.seq)
            .unwrap_or(inner.seq + 1);
        if seq < inner.seq && seq + 1 < oldest {
            return None;
        }
        Some(
            inner
                .history
                .iter()
                .filter(|c| c.seq > seq)
                .cloned()
                .collect(),
        )
    }

    /// Every stored resource.
    pub fn all(&self) -> Vec<Resource> {
        self.lock().items.values().cloned().collect()
    }

    /// Sequence number of the last change.
    pub fn seq(&self) -> u64 {
        self.lock().seq
    }

    /// Creates with the owner from `metadata.owner` (fixtures).
    pub fn create(&self, r: Resource) -> Result<Resource, StateError> {
        let owner = md(&r).owner.clone();
        self.create_as(r, &owner)
    }

    pub fn create_as(&self, mut r: Resource, owner: &str) -> Result<Resource, StateError> {
        let mut inner = self.lock();
        let key = key_of(&r);
        if let Some(existing) = inner.items.get(&key) {
            return Err(StateError::AlreadyExists(format!(
                "{} already exists",
                describe_r(existing)
            )));
        }
        let now = self.clock.timestamp();
        {
            let m = md_mut(&mut r);
            m.version = "1".into();
            m.owner = owner.into();
            if m.phase.is_empty() {
                m.phase = phase::RUNNING.into();
            }
            m.created = Some(now);
            m.updated = Some(now);
        }
        if r.spec.is_none() {
            r.spec = Some(Spec::default());
        }
        inner.items.insert(key, r.clone());
        self.emit(&mut inner, ChangeKind::Created, r.clone(), None);
        Ok(r)
    }

    /// Updates with version check but without owner or phase check (fixtures).
    pub fn update(&self, r: Resource) -> Result<Resource, StateError> {
        let owner = self
            .get(&md(&r).namespace, &md(&r).r#type, &md(&r).id)
            .map(|s| md(&s).owner.clone())
            .unwrap_or_default();
        self.update_as(r, &owner, None)
    }

    pub fn update_as(
        &self,
        mut r: Resource,
        owner: &str,
        expected_phase: Option<&str>,
    ) -> Result<Resource, StateError> {
        let mut inner = self.lock();
        let key = key_of(&r);
        let Some(stored) = inner.items.get(&key).cloned() else {
            return Err(StateError::NotFound(format!(
                "{} doesn't exist",
                describe(&key.1, &key.0, &key.2, &md(&r).version)
            )));
        };
        let sm = md(&stored);
        if sm.owner != owner {
            return Err(StateError::OwnerConflict(format!(
                "{} is owned by {:?}",
                describe_r(&stored),
                sm.owner
            )));
        }
        if md(&r).version != sm.version {
            return Err(StateError::VersionConflict(format!(
                "{} update conflict: expected version {:?}, actual version {:?}",
                describe_r(&stored),
                md(&r).version,
                sm.version
            )));
        }
        if let Some(p) = expected_phase
            && sm.phase != p
        {
            return Err(StateError::PhaseConflict(format!(
                "{} is not in phase {p}",
                describe_r(&stored)
            )));
        }
        {
            let m = md_mut(&mut r);
            m.version = (parse_version(&sm.version) + 1).to_string();
            m.owner = sm.owner.clone();
            m.created = sm.created;
            m.updated = Some(self.clock.timestamp());
            if m.phase.is_empty() {
                m.phase = sm.phase.clone();
            }
        }
        if r.spec.is_none() {
            r.spec = Some(Spec::default());
        }
        inner.items.insert(key, r.clone());
        self.emit(&mut inner, ChangeKind::Updated, r.clone(), Some(stored));
        Ok(r)
    }

    /// Applies `f` to the stored resource and stores it as a new version, with no checks (fixtures,
    /// controllers, "someone else wrote in between" faults). `None` if absent.
    pub fn modify(
        &self,
        ns: &str,
        ty: &str,
        id: &str,
        f: impl FnOnce(&mut Resource),
    ) -> Option<Resource> {
        let mut inner = self.lock();
        let key = (ns.to_string(), ty.to_string(), id.to_string());
        let stored = inner.items.get(&key).cloned()?;
        let mut r = stored.clone();
        f(&mut r);
        {
            let sm = md(&stored);
            let m = md_mut(&mut r);
            m.namespace = key.0.clone();
            m.r#type = key.1.clone();
            m.id = key.2.clone();
            m.version = (parse_version(&sm.version) + 1).to_string();
            m.created = sm.created;
            m.updated = Some(self.clock.timestamp());
        }
        inner.items.insert(key, r.clone());
        self.emit(&mut inner, ChangeKind::Updated, r.clone(), Some(stored));
        Some(r)
    }

    /// Destroys, checking finalizers but not the owner (fixtures).
    pub fn destroy(&self, ns: &str, ty: &str, id: &str) -> Result<(), StateError> {
        self.destroy_as(ns, ty, id, None)
    }

    pub fn destroy_as(
        &self,
        ns: &str,
        ty: &str,
        id: &str,
        owner: Option<&str>,
    ) -> Result<(), StateError> {
        let mut inner = self.lock();
        let key = (ns.to_string(), ty.to_string(), id.to_string());
        let stored = owned_by(&inner.items, &key, owner)?;
        let sm = md(&stored);
        if !sm.finalizers.is_empty() {
            return Err(StateError::PendingFinalizers(format!(
                "{} has pending finalizers {}",
                describe_r(&stored),
                go_list(&sm.finalizers)
            )));
        }
        inner.items.remove(&key);
        self.emit(&mut inner, ChangeKind::Destroyed, stored, None);
        Ok(())
    }

    /// Removes a resource regardless of owner and finalizers. Returns what was removed.
    pub fn force_destroy(&self, ns: &str, ty: &str, id: &str) -> Option<Resource> {
        let mut inner = self.lock();
        let stored = inner
            .items
            .remove(&(ns.to_string(), ty.to_string(), id.to_string()))?;
        self.emit(&mut inner, ChangeKind::Destroyed, stored.clone(), None);
        Some(stored)
    }

    /// Teardown without owner check (fixtures). Returns `destroy_ready`.
    pub fn teardown(&self, ns: &str, ty: &str, id: &str) -> Result<bool, StateError> {
        self.teardown_as(ns, ty, id, None)
    }

    /// Sets phase `tearingDown` (one UPDATED event unless already so); `destroy_ready` = no finalizers.
    pub fn teardown_as(
        &self,
        ns: &str,
        ty: &str,
        id: &str,
        owner: Option<&str>,
    ) -> Result<bool, StateError> {
        let mut inner = self.lock();
        let key = (ns.to_string(), ty.to_string(), id.to_string());
        let stored = owned_by(&inner.items, &key, owner)?;
        let sm = md(&stored);
        let ready = sm.finalizers.is_empty();
        if sm.phase != phase::TEARING_DOWN {
            let mut r = stored.clone();
            let m = md_mut(&mut r);
            m.phase = phase::TEARING_DOWN.into();
            m.version = (parse_version(&sm.version) + 1).to_string();
            m.updated = Some(self.clock.timestamp());
            inner.items.insert(key, r.clone());
            self.emit(&mut inner, ChangeKind::Updated, r, Some(stored));
        }
        Ok(ready)
    }

    pub fn add_finalizer(&self, ns: &str, ty: &str, id: &str, finalizer: &str) -> Option<Resource> {
        let r = self.get(ns, ty, id)?;
        if md(&r).finalizers.iter().any(|f| f == finalizer) {
            return Some(r);
        }
        self.modify(ns, ty, id, |r| md_mut(r).finalizers.push(finalizer.into()))
    }

    pub fn remove_finalizer(
        &self,
        ns: &str,
        ty: &str,
        id: &str,
        finalizer: &str,
    ) -> Option<Resource> {
        let r = self.get(ns, ty, id)?;
        if !md(&r).finalizers.iter().any(|f| f == finalizer) {
            return Some(r);
        }
        self.modify(ns, ty, id, |r| {
            md_mut(r).finalizers.retain(|f| f != finalizer)
        })
    }

    /// Opaque bookmark bytes for a sequence number of this store.
    pub(crate) fn bookmark(&self, seq: u64) -> Vec<u8> {
        let mut b = self.instance().to_be_bytes().to_vec();
        b.extend_from_slice(&seq.to_be_bytes());
        b
    }

    /// Subscribes to changes of one type in one namespace: the current items and, when resuming from a
    /// bookmark, every change after it. `Err` for a bookmark this store cannot resume from.
    pub(crate) fn subscribe(
        &self,
        ns: &str,
        ty: &str,
        bookmark: Option<&[u8]>,
    ) -> Result<Subscription, ()> {
        let inner = self.lock();
        let backlog = match bookmark {
            None => Vec::new(),
            Some(b) => {
                if b.len() != 16 {
                    return Err(());
                }
                let (inst, seq) = b.split_at(8);
                let inst = u64::from_be_bytes(inst.try_into().map_err(|_| ())?);
                let seq = u64::from_be_bytes(seq.try_into().map_err(|_| ())?);
                let oldest = inner
                    .history
                    .front()
                    .map(|c| c.seq)
                    .unwrap_or(inner.seq + 1);
                if inst != self.instance()
                    || seq > inner.seq
                    || (seq + 1 < oldest && seq != inner.seq)
                {
                    return Err(());
                }
                inner
                    .history
                    .iter()
                    .filter(|c| c.seq > seq)
                    .filter(|c| md(&c.resource).namespace == ns && md(&c.resource).r#type == ty)
                    .cloned()
                    .collect()
            }
        };
        let snapshot = inner.of_type(ns, ty).map(|(_, r)| r.clone()).collect();
        Ok(Subscription {
            snapshot,
            backlog,
            seq: inner.seq,
            rx: self.events.subscribe(),
        })
    }

    /// The last `n` changes of a type (for `tail_events`).
    pub(crate) fn tail(&self, ns: &str, ty: &str, n: usize) -> Vec<Arc<Change>> {
        let inner = self.lock();
        let mut v: Vec<_> = inner
            .history
            .iter()
            .rev()
            .filter(|c| md(&c.resource).namespace == ns && md(&c.resource).r#type == ty)
            .take(n)
            .cloned()
            .collect();
        v.reverse();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> Store {
        Store::new(SimClock::new())
    }

    #[test]
    fn versions_owner_phase_and_finalizer_rules() {
        let s = store();
        let r = s
            .create(new_resource("default", "T", "a", vec![]))
            .expect("create");
        assert_eq!(md(&r).version, "1");
        assert!(
            matches!(s.create(new_resource("default", "T", "a", vec![])), Err(StateError::AlreadyExists(m)) if m == "resource T(default/a@1) already exists")
        );
        let mut stale = r.clone();
        md_mut(&mut stale).version = "7".into();
        let e = s.update_as(stale, "", None).expect_err("stale");
        assert_eq!(
            e.to_string(),
            r#"resource T(default/a@1) update conflict: expected version "7", actual version "1""#
        );
        let e = s.update_as(r.clone(), "someone", None).expect_err("owner");
        assert_eq!(e.to_string(), r#"resource T(default/a@1) is owned by """#);
        let mut with_fin = r.clone();
        md_mut(&mut with_fin).finalizers = vec!["f1".into(), "f2".into()];
        let r2 = s.update_as(with_fin, "", Some("running")).expect("update");
        assert_eq!(md(&r2).version, "2");
        assert_eq!(s.teardown_as("default", "T", "a", Some("")), Ok(false));
        assert_eq!(
            s.teardown_as("default", "T", "a", Some("")),
            Ok(false),
            "teardown twice is fine"
        );
        let cur = s.get("default", "T", "a").expect("exists");
        assert_eq!(md(&cur).version, "3");
        let e = s.update_as(cur, "", Some("running")).expect_err("phase");
        assert_eq!(
            e.to_string(),
            "resource T(default/a@3) is not in phase running"
        );
        let e = s
            .destroy_as("default", "T", "a", Some(""))
            .expect_err("finalizers");
        assert_eq!(
            e.to_string(),
            "resource T(default/a@3) has pending finalizers [f1 f2]"
        );
        s.remove_finalizer("default", "T", "a", "f1");
        s.remove_finalizer("default", "T", "a", "f2");
        s.destroy_as("default", "T", "a", Some(""))
            .expect("destroy");
        assert_eq!(
            s.destroy("default", "T", "a")
                .expect_err("gone")
                .to_string(),
            "resource T(default/a@undefined) doesn't exist"
        );
    }
}
