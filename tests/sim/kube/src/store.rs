//! In-memory object storage with a global resourceVersion, a bounded change history and change fan-out.
//!
//! It plays the part of etcd behind the real API server: every write gets the next revision, watches resume from
//! any revision still in history, and lists can be served at an older revision (for `continue` tokens and
//! `resourceVersionMatch=Exact`) by undoing the newer changes.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::broadcast;

use crate::resources::StorageKey;

/// (namespace, name); the namespace is empty for cluster-scoped objects.
pub type ObjKey = (String, String);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

impl ChangeKind {
    pub fn watch_type(self) -> &'static str {
        match self {
            ChangeKind::Added => "ADDED",
            ChangeKind::Modified => "MODIFIED",
            ChangeKind::Deleted => "DELETED",
        }
    }
}

/// One committed write. `object` is the state after it (for a delete, the last state stamped with the delete's
/// revision, as etcd-backed watches deliver it); `previous` the state before.
#[derive(Debug)]
pub struct Change {
    pub rv: u64,
    /// When the change was committed; history older than the retention window is forgotten.
    pub at: std::time::Instant,
    pub key: StorageKey,
    pub namespace: String,
    pub name: String,
    pub kind: ChangeKind,
    pub object: Arc<Value>,
    pub previous: Option<Arc<Value>>,
}

/// The changes a resumed watch replays, and the receiver for the ones after them.
pub type WatchStart = (Vec<Arc<Change>>, broadcast::Receiver<Arc<Change>>);

/// The asked-for revision is older than the retained history (the real server's "too old resource version").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooOld {
    pub requested: u64,
    pub oldest: u64,
}

pub struct Store {
    rv: u64,
    objects: HashMap<StorageKey, BTreeMap<ObjKey, Arc<Value>>>,
    history: VecDeque<Arc<Change>>,
    history_limit: usize,
    /// Like etcd's periodic compaction: changes older than this are forgotten even below the count limit.
    history_age: std::time::Duration,
    /// Changes with rv <= floor are forgotten; a watch or snapshot from a revision below it gets 410.
    floor: u64,
    tx: broadcast::Sender<Arc<Change>>,
}

impl Store {
    pub fn new(history_limit: usize) -> Self {
        Self::with_retention(history_limit, std::time::Duration::from_secs(300))
    }

    pub fn with_retention(history_limit: usize, history_age: std::time::Duration) -> Self {
        let (tx, _) = broadcast::channel(16 * 1024);
        Store {
            rv: 1,
            objects: HashMap::new(),
            history: VecDeque::new(),
            history_limit,
            history_age,
            floor: 1,
            tx,
        }
    }

    pub fn current_rv(&self) -> u64 {
        self.rv
    }

    pub fn oldest_resumable_rv(&self) -> u64 {
        self.floor
    }

    pub fn get(&self, key: &StorageKey, namespace: &str, name: &str) -> Option<Arc<Value>> {
        self.objects
            .get(key)?
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }

    /// Objects of a resource, ordered by namespace then name (the order the real server lists in).
    pub fn list(&self, key: &StorageKey, namespace: Option<&str>) -> Vec<Arc<Value>> {
        let Some(bucket) = self.objects.get(key) else {
            return Vec::new();
        };
        match namespace {
            None => bucket.values().cloned().collect(),
            Some(ns) => bucket
                .range((ns.to_string(), String::new())..)
                .take_while(|((n, _), _)| n == ns)
                .map(|(_, v)| v.clone())
                .collect(),
        }
    }

    pub fn count(&self, key: &StorageKey) -> usize {
        self.objects.get(key).map_or(0, BTreeMap::len)
    }

    pub fn keys(&self) -> Vec<StorageKey> {
        self.objects.keys().cloned().collect()
    }

    /// The objects of a resource as they were at revision `rv`, undoing newer changes.
    pub fn list_at(
        &self,
        key: &StorageKey,
        namespace: Option<&str>,
        rv: u64,
    ) -> Result<Vec<Arc<Value>>, TooOld> {
        if rv >= self.rv {
            return Ok(self.list(key, namespace));
        }
        if rv < self.floor {
            return Err(TooOld {
                requested: rv,
                oldest: self.floor,
            });
        }
        let mut view: BTreeMap<ObjKey, Arc<Value>> =
            self.objects.get(key).cloned().unwrap_or_default();
        for change in self.history.iter().rev().take_while(|c| c.rv > rv) {
            if &change.key != key {
                continue;
            }
            let k = (change.namespace.clone(), change.name.clone());
            match (&change.kind, &change.previous) {
                (ChangeKind::Added, _) => {
                    view.remove(&k);
                }
                (_, Some(prev)) => {
                    view.insert(k, prev.clone());
                }
                (_, None) => {}
            }
        }
        Ok(view
            .into_iter()
            .filter(|((ns, _), _)| namespace.is_none_or(|want| want == ns))
            .map(|(_, v)| v)
            .collect())
    }

    /// Changes after `rv`, for a watch that resumes there, and a receiver for the ones that follow. Taken under
    /// the same lock so no change falls between the two.
    pub fn watch_from(&self, rv: u64) -> Result<WatchStart, TooOld> {
        if rv < self.floor {
            return Err(TooOld {
                requested: rv,
                oldest: self.floor,
            });
        }
        let start = self.history.partition_point(|c| c.rv <= rv);
        let backlog = self.history.range(start..).cloned().collect();
        Ok((backlog, self.tx.subscribe()))
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        self.tx.subscribe()
    }

    /// Stores `object` (None deletes) under the next revision and announces the change.
    pub fn commit(
        &mut self,
        key: &StorageKey,
        namespace: &str,
        name: &str,
        object: Option<Value>,
    ) -> Arc<Change> {
        self.rv += 1;
        let rv = self.rv;
        let bucket = self.objects.entry(key.clone()).or_default();
        let objkey = (namespace.to_string(), name.to_string());
        let previous = bucket.get(&objkey).cloned();
        let (kind, stored) = match object {
            Some(mut obj) => {
                set_resource_version(&mut obj, rv);
                let obj = Arc::new(obj);
                bucket.insert(objkey, obj.clone());
                (
                    if previous.is_some() {
                        ChangeKind::Modified
                    } else {
                        ChangeKind::Added
                    },
                    obj,
                )
            }
            None => {
                bucket.remove(&objkey);
                let mut last = previous.as_deref().cloned().unwrap_or(Value::Null);
                set_resource_version(&mut last, rv);
                (ChangeKind::Deleted, Arc::new(last))
            }
        };
        let now = std::time::Instant::now();
        let change = Arc::new(Change {
            rv,
            at: now,
            key: key.clone(),
            namespace: namespace.into(),
            name: name.into(),
            kind,
            object: stored,
            previous,
        });
        self.history.push_back(change.clone());
        while self.history.len() > self.history_limit
            || self
                .history
                .front()
                .is_some_and(|c| now.duration_since(c.at) > self.history_age)
        {
            if let Some(old) = self.history.pop_front() {
                self.floor = old.rv;
            }
        }
        // No receivers is normal (no watch open); a full channel makes laggards re-list, as a real watch cache does.
        let _ = self.tx.send(change.clone());
        change
    }

    /// Forgets all history: resumes from any earlier revision now get 410 Gone (tests use this).
    pub fn compact(&mut self) {
        self.history.clear();
        self.floor = self.rv;
    }

    /// Every object, for snapshots.
    pub fn dump(&self) -> Vec<(StorageKey, Arc<Value>)> {
        let mut out = Vec::new();
        for (k, bucket) in &self.objects {
            for v in bucket.values() {
                out.push((k.clone(), v.clone()));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Loads objects from a snapshot without history (watches from before the restart get 410, as after an
    /// etcd restore).
    pub fn restore(&mut self, rv: u64, objects: Vec<(StorageKey, Value)>) {
        self.objects.clear();
        for (key, obj) in objects {
            let ns = obj["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let name = obj["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            self.objects
                .entry(key)
                .or_default()
                .insert((ns, name), Arc::new(obj));
        }
        self.rv = rv.max(1);
        self.history.clear();
        self.floor = self.rv;
    }
}

pub fn set_resource_version(obj: &mut Value, rv: u64) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key() -> StorageKey {
        StorageKey {
            group: "".into(),
            resource: "configmaps".into(),
        }
    }

    fn cm(name: &str, v: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "default"}, "data": {"k": v}})
    }

    #[test]
    fn every_write_gets_the_next_global_revision() {
        let mut s = Store::new(100);
        let a = s.commit(&key(), "default", "a", Some(cm("a", "1")));
        let b = s.commit(
            &StorageKey {
                group: "".into(),
                resource: "secrets".into(),
            },
            "default",
            "b",
            Some(cm("b", "1")),
        );
        assert_eq!(b.rv, a.rv + 1);
        assert_eq!(
            s.get(&key(), "default", "a").expect("stored")["metadata"]["resourceVersion"],
            a.rv.to_string()
        );
    }

    #[test]
    fn list_at_an_older_revision_undoes_later_changes() {
        let mut s = Store::new(100);
        s.commit(&key(), "default", "a", Some(cm("a", "1")));
        let at = s.current_rv();
        s.commit(&key(), "default", "a", Some(cm("a", "2")));
        s.commit(&key(), "default", "b", Some(cm("b", "1")));
        s.commit(&key(), "default", "a", None);
        let old = s.list_at(&key(), Some("default"), at).expect("in history");
        assert_eq!(old.len(), 1);
        assert_eq!(old[0]["data"]["k"], "1");
        assert_eq!(s.list(&key(), None).len(), 1);
    }

    #[test]
    fn watch_resumes_after_the_given_revision_and_compaction_makes_it_too_old() {
        let mut s = Store::new(100);
        s.commit(&key(), "default", "a", Some(cm("a", "1")));
        let rv = s.current_rv();
        s.commit(&key(), "default", "a", Some(cm("a", "2")));
        let (backlog, _rx) = s.watch_from(rv).expect("resumable");
        assert_eq!(backlog.len(), 1);
        assert_eq!(backlog[0].kind, ChangeKind::Modified);
        s.compact();
        assert!(s.watch_from(rv).is_err());
        assert!(s.watch_from(s.current_rv()).is_ok());
    }

    #[test]
    fn deleted_events_carry_the_last_state_at_the_delete_revision() {
        let mut s = Store::new(100);
        s.commit(&key(), "default", "a", Some(cm("a", "1")));
        let del = s.commit(&key(), "default", "a", None);
        assert_eq!(del.kind, ChangeKind::Deleted);
        assert_eq!(del.object["data"]["k"], "1");
        assert_eq!(
            del.object["metadata"]["resourceVersion"],
            del.rv.to_string()
        );
    }

    #[test]
    fn history_older_than_the_retention_window_is_forgotten() {
        let mut s = Store::with_retention(100, std::time::Duration::from_millis(20));
        s.commit(&key(), "default", "a", Some(cm("a", "1")));
        let rv = s.current_rv();
        std::thread::sleep(std::time::Duration::from_millis(40));
        s.commit(&key(), "default", "a", Some(cm("a", "2")));
        assert!(s.watch_from(rv - 1).is_err(), "the first change aged out");
        assert!(s.watch_from(rv).is_ok());
    }

    #[test]
    fn bounded_history_raises_the_floor() {
        let mut s = Store::new(2);
        for i in 0..5 {
            s.commit(&key(), "default", "a", Some(cm("a", &i.to_string())));
        }
        assert!(s.watch_from(2).is_err());
        assert!(s.watch_from(s.current_rv() - 2).is_ok());
    }
}
