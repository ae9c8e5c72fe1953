//! A plan's Omni (`omni-operator plan`): writes are recorded instead of sent, and the reads after them see what
//! they would have made, so a reconcile planned in several passes, or a child planned after its parent, reads
//! the plan's own earlier writes over the live state. Nothing here ever reaches Omni.

use std::collections::BTreeMap;
use std::sync::Mutex;

use omni_wire::cosi;

use super::address::{CLUSTERS, Key};
use crate::contract::HostError;

/// What a write would do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OmniOp {
    Create,
    Update,
    Teardown,
    Destroy,
    /// A service-account kubeconfig issued (Omni creates the account).
    Kubeconfig,
}

impl OmniOp {
    /// The name the plan prints (the JSON form's, too).
    pub fn name(self) -> &'static str {
        match self {
            OmniOp::Create => "create",
            OmniOp::Update => "update",
            OmniOp::Teardown => "teardown",
            OmniOp::Destroy => "destroy",
            OmniOp::Kubeconfig => "kubeconfig",
        }
    }
}

/// One recorded write.
#[derive(Debug, Clone)]
pub struct OmniWrite {
    /// The endpoint, as normalised: writes through two connections to one Omni land in one place.
    pub endpoint: String,
    pub op: OmniOp,
    pub key: Key,
    /// The resource before the write: live, or as an earlier write of the plan left it.
    pub before: Option<cosi::Resource>,
    /// After it; `None` once destroyed. A teardown leaves the resource in phase `tearingDown`.
    pub after: Option<cosi::Resource>,
}

/// (endpoint, namespace, type, id).
type Slot = (String, String, String, String);

fn slot(endpoint: &str, key: &Key) -> Slot {
    (
        endpoint.to_string(),
        key.namespace.clone(),
        key.type_.clone(),
        key.id.clone(),
    )
}

#[derive(Default)]
struct Inner {
    /// What the plan's writes left: `None` where a resource was destroyed.
    staged: BTreeMap<Slot, Option<cosi::Resource>>,
    writes: Vec<OmniWrite>,
}

/// The recorded writes and what they leave, shared by every client of one plan.
#[derive(Default)]
pub struct OmniOverlay {
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for OmniOverlay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OmniOverlay")
            .field("writes", &self.lock().writes.len())
            .finish()
    }
}

/// The key a resource's metadata names.
pub fn key_of(resource: &cosi::Resource) -> Key {
    let m = resource.metadata.clone().unwrap_or_default();
    Key {
        namespace: m.namespace,
        type_: m.r#type,
        id: m.id,
    }
}

fn now() -> prost_types::Timestamp {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    prost_types::Timestamp {
        seconds: since.as_secs() as i64,
        nanos: since.subsec_nanos() as i32,
    }
}

/// Omni's answer to a write of a resource that does not exist.
fn missing(verb: &str, key: &Key) -> HostError {
    HostError::NotFound(format!(
        "{verb} {key}: rpc error: code = NotFound desc = resource {}({}@undefined) doesn't exist",
        key.type_, key.id
    ))
}

/// The version after `version` (Omni's versions are decimal counters).
fn next_version(version: &str) -> String {
    (version.parse::<u64>().unwrap_or(0) + 1).to_string()
}

/// Whether `resource`'s labels meet every term, as COSI's label query evaluates them. The ordering operators
/// compare as strings (`Lt`, `Lte`) or as integers (`LtNumeric`, `LteNumeric`) against the term's first value.
fn matches(resource: &cosi::Resource, terms: &[cosi::LabelTerm]) -> bool {
    use cosi::label_term::Operation;
    let empty = Default::default();
    let labels = resource.metadata.as_ref().map_or(&empty, |m| &m.labels);
    terms.iter().all(|term| {
        let value = labels.get(&term.key);
        let first = term.value.first().map(String::as_str).unwrap_or_default();
        let numeric = |cmp: fn(i64, i64) -> bool| match (
            value.and_then(|v| v.parse::<i64>().ok()),
            first.parse::<i64>().ok(),
        ) {
            (Some(v), Some(f)) => cmp(v, f),
            _ => false,
        };
        let holds = match Operation::try_from(term.op) {
            Ok(Operation::Exists) => value.is_some(),
            Ok(Operation::NotExists) => value.is_none(),
            Ok(Operation::Equal) => value.is_some_and(|v| v == first),
            Ok(Operation::In) => value.is_some_and(|v| term.value.contains(v)),
            Ok(Operation::Lt) => value.is_some_and(|v| v.as_str() < first),
            Ok(Operation::Lte) => value.is_some_and(|v| v.as_str() <= first),
            Ok(Operation::LtNumeric) => numeric(|v, f| v < f),
            Ok(Operation::LteNumeric) => numeric(|v, f| v <= f),
            Err(_) => false,
        };
        holds != term.invert
    })
}

impl OmniOverlay {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What the plan left at `key`: `None` when it wrote nothing there, `Some(None)` when it destroyed it.
    pub fn staged(&self, endpoint: &str, key: &Key) -> Option<Option<cosi::Resource>> {
        self.lock().staged.get(&slot(endpoint, key)).cloned()
    }

    /// `live` (a list of `namespace`/`type_` under `terms`) with the plan's writes over it.
    pub fn over_list(
        &self,
        endpoint: &str,
        namespace: &str,
        type_: &str,
        terms: &[cosi::LabelTerm],
        live: Vec<cosi::Resource>,
    ) -> Vec<cosi::Resource> {
        let inner = self.lock();
        let mut items: BTreeMap<String, cosi::Resource> =
            live.into_iter().map(|r| (key_of(&r).id, r)).collect();
        for ((e, ns, t, id), staged) in &inner.staged {
            if e != endpoint || ns != namespace || t != type_ {
                continue;
            }
            match staged {
                Some(resource) if matches(resource, terms) => {
                    items.insert(id.clone(), resource.clone());
                }
                _ => {
                    items.remove(id);
                }
            }
        }
        items.into_values().collect()
    }

    fn record(
        &self,
        endpoint: &str,
        op: OmniOp,
        key: Key,
        before: Option<cosi::Resource>,
        after: Option<cosi::Resource>,
    ) {
        let mut inner = self.lock();
        if op != OmniOp::Kubeconfig {
            inner.staged.insert(slot(endpoint, &key), after.clone());
        }
        inner.writes.push(OmniWrite {
            endpoint: endpoint.to_string(),
            op,
            key,
            before,
            after,
        });
    }

    /// A create over `current` (what a read sees now); refused as Omni refuses it when the resource exists.
    pub fn create(
        &self,
        endpoint: &str,
        mut resource: cosi::Resource,
        current: Option<cosi::Resource>,
    ) -> Result<cosi::Resource, HostError> {
        let key = key_of(&resource);
        if current.is_some() {
            return Err(HostError::Conflict(format!(
                "create {key}: rpc error: code = AlreadyExists desc = resource {}({}@undefined) already exists",
                key.type_, key.id
            )));
        }
        let stamp = now();
        let metadata = resource.metadata.get_or_insert_with(Default::default);
        metadata.version = "1".into();
        metadata.phase = omni_wire::phase::RUNNING.into();
        metadata.created = Some(stamp);
        metadata.updated = Some(stamp);
        self.record(endpoint, OmniOp::Create, key, None, Some(resource.clone()));
        Ok(resource)
    }

    /// An update of `current`.
    pub fn update(
        &self,
        endpoint: &str,
        mut resource: cosi::Resource,
        current: Option<cosi::Resource>,
    ) -> Result<cosi::Resource, HostError> {
        let key = key_of(&resource);
        let Some(current) = current else {
            return Err(missing("update", &key));
        };
        let was = current.metadata.clone().unwrap_or_default();
        let metadata = resource.metadata.get_or_insert_with(Default::default);
        metadata.version = next_version(&was.version);
        metadata.created = was.created;
        metadata.updated = Some(now());
        if metadata.phase.is_empty() {
            metadata.phase = was.phase;
        }
        if metadata.finalizers.is_empty() {
            metadata.finalizers = was.finalizers;
        }
        self.record(
            endpoint,
            OmniOp::Update,
            key,
            Some(current),
            Some(resource.clone()),
        );
        Ok(resource)
    }

    /// A teardown of `current`. A plan looks past Omni's controllers letting go: the resource is left torn down
    /// with its finalizers released and `true` answered (ready to destroy), so the steps a deletion takes after
    /// it are planned too.
    pub fn teardown(
        &self,
        endpoint: &str,
        key: &Key,
        current: Option<cosi::Resource>,
    ) -> Result<bool, HostError> {
        let Some(current) = current else {
            return Err(HostError::NotFound(format!(
                "tear down {key}: resource doesn't exist"
            )));
        };
        let mut after = current.clone();
        let metadata = after.metadata.get_or_insert_with(Default::default);
        if metadata.phase != omni_wire::phase::TEARING_DOWN {
            metadata.phase = omni_wire::phase::TEARING_DOWN.into();
            metadata.version = next_version(&metadata.version);
            metadata.finalizers.clear();
            self.record(
                endpoint,
                OmniOp::Teardown,
                key.clone(),
                Some(current),
                Some(after),
            );
        }
        Ok(true)
    }

    /// A destroy of `current`.
    pub fn destroy(
        &self,
        endpoint: &str,
        key: &Key,
        current: Option<cosi::Resource>,
    ) -> Result<(), HostError> {
        let Some(current) = current else {
            return Err(missing("destroy", key));
        };
        self.record(endpoint, OmniOp::Destroy, key.clone(), Some(current), None);
        Ok(())
    }

    /// A kubeconfig Omni would issue for `cluster`: recorded, and answered with a placeholder that holds no
    /// credential (whatever the plan writes it to is never stored).
    pub fn kubeconfig(&self, endpoint: &str, cluster: &str) -> Vec<u8> {
        let key = Key {
            namespace: omni_wire::DEFAULT_NAMESPACE.into(),
            type_: CLUSTERS.into(),
            id: cluster.into(),
        };
        self.record(endpoint, OmniOp::Kubeconfig, key, None, None);
        format!("# omni-operator plan: a service-account kubeconfig Omni would issue for cluster {cluster:?}\n")
            .into_bytes()
    }

    /// Every write recorded so far, in order.
    pub fn writes(&self) -> Vec<OmniWrite> {
        self.lock().writes.clone()
    }

    /// The writes after the first `n`.
    pub fn writes_since(&self, n: usize) -> Vec<OmniWrite> {
        self.lock().writes.iter().skip(n).cloned().collect()
    }

    /// How many writes are recorded.
    pub fn len(&self) -> usize {
        self.lock().writes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(type_: &str, id: &str, labels: &[(&str, &str)]) -> cosi::Resource {
        cosi::Resource {
            metadata: Some(cosi::Metadata {
                namespace: "default".into(),
                r#type: type_.into(),
                id: id.into(),
                labels: labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                ..Default::default()
            }),
            spec: None,
        }
    }

    fn equal(key: &str, value: &str) -> cosi::LabelTerm {
        cosi::LabelTerm {
            key: key.into(),
            op: cosi::label_term::Operation::Equal as i32,
            value: vec![value.into()],
            invert: false,
        }
    }

    #[test]
    fn reads_after_writes_see_them_over_the_live_state() {
        let plan = OmniOverlay::default();
        let a = resource("MachineSets", "a", &[("cluster", "x")]);
        let b = resource("MachineSets", "b", &[("cluster", "x")]);
        let c = resource("MachineSets", "c", &[("cluster", "y")]);
        // b is live; a is created; b is destroyed; c is created under another label.
        plan.create("e", a.clone(), None).expect("created");
        assert!(plan.create("e", a.clone(), Some(a.clone())).is_err());
        plan.destroy("e", &key_of(&b), Some(b.clone()))
            .expect("destroyed");
        plan.create("e", c, None).expect("created");
        let listed = plan.over_list(
            "e",
            "default",
            "MachineSets",
            &[equal("cluster", "x")],
            vec![b.clone()],
        );
        let ids: Vec<String> = listed.iter().map(|r| key_of(r).id).collect();
        assert_eq!(ids, ["a"]);
        // Another endpoint sees none of it.
        assert!(
            plan.over_list("f", "default", "MachineSets", &[], vec![b.clone()])
                .len()
                == 1
        );
        assert_eq!(plan.staged("e", &key_of(&b)), Some(None));
        assert_eq!(plan.staged("f", &key_of(&b)), None);
        let ops: Vec<OmniOp> = plan.writes().iter().map(|w| w.op).collect();
        assert_eq!(ops, [OmniOp::Create, OmniOp::Destroy, OmniOp::Create]);
    }

    #[test]
    fn updates_and_teardowns_carry_the_version_forward() {
        let plan = OmniOverlay::default();
        let mut live = resource("Clusters", "edge", &[]);
        if let Some(m) = live.metadata.as_mut() {
            m.version = "7".into();
            m.phase = "running".into();
            m.finalizers = vec!["ClusterController".into()];
        }
        let updated = plan
            .update("e", live.clone(), Some(live.clone()))
            .expect("updated");
        assert_eq!(
            updated.metadata.as_ref().map(|m| m.version.as_str()),
            Some("8")
        );
        assert!(plan.update("e", live.clone(), None).is_err());
        // Held by a finalizer, which the plan takes as released; torn down once however often asked.
        assert!(
            plan.teardown("e", &key_of(&live), Some(updated.clone()))
                .expect("torn down")
        );
        let torn = plan.staged("e", &key_of(&live)).flatten().expect("staged");
        let meta = torn.metadata.clone().unwrap_or_default();
        assert_eq!(
            (meta.phase.as_str(), meta.finalizers.len()),
            ("tearingDown", 0)
        );
        assert!(
            plan.teardown("e", &key_of(&live), Some(torn))
                .expect("torn down")
        );
        assert_eq!(plan.len(), 2);
    }

    #[test]
    fn label_terms_follow_cosi() {
        use cosi::label_term::Operation;
        let r = resource("T", "x", &[("a", "1"), ("n", "10")]);
        let term = |key: &str, op: Operation, value: &[&str], invert: bool| cosi::LabelTerm {
            key: key.into(),
            op: op as i32,
            value: value.iter().map(|v| v.to_string()).collect(),
            invert,
        };
        assert!(matches(&r, &[term("a", Operation::Exists, &[], false)]));
        assert!(!matches(&r, &[term("a", Operation::Exists, &[], true)]));
        assert!(matches(&r, &[term("b", Operation::NotExists, &[], false)]));
        assert!(matches(&r, &[term("a", Operation::In, &["0", "1"], false)]));
        assert!(matches(
            &r,
            &[term("n", Operation::LtNumeric, &["11"], false)]
        ));
        // As strings "10" < "9"; as numbers it is not.
        assert!(matches(&r, &[term("n", Operation::Lt, &["9"], false)]));
        assert!(!matches(
            &r,
            &[term("n", Operation::LtNumeric, &["9"], false)]
        ));
    }
}
