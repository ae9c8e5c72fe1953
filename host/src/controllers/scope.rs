//! Which objects this operator process reconciles: the namespaces it watches (every one, one, or several) and,
//! for a shard, a label selector (Flux's `--watch-label-selector`). Several namespaces are watched one watch each,
//! as controller-runtime's multi-namespace cache does (a role bound in each namespace allows nothing wider), and
//! [`union`] turns their streams into the one stream a single store can apply.

use std::collections::HashSet;
use std::pin::Pin;

use super::object::CachedObject;
use futures::{Stream, StreamExt};
use kube::ResourceExt;
use kube::runtime::reflector::Store;
use kube::runtime::watcher;

/// The namespaces watched.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum Namespaces {
    /// Every namespace.
    #[default]
    All,
    /// These, sorted, without repeats, never empty.
    Only(Vec<String>),
}

/// A namespace list the operator cannot watch.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NamespacesError {
    #[error("an empty namespace name")]
    Empty,
    #[error(
        "{0:?} is not a namespace name (lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)"
    )]
    Invalid(String),
}

impl Namespaces {
    /// One namespace.
    pub fn one(ns: impl Into<String>) -> Self {
        Namespaces::Only(vec![ns.into()])
    }

    /// The namespaces of a list such as `--namespace a,b,c`: each a valid name, repeats dropped.
    pub fn only<S: AsRef<str>>(names: &[S]) -> Result<Self, NamespacesError> {
        let mut list = Vec::new();
        for name in names {
            let name = name.as_ref().trim();
            if name.is_empty() {
                return Err(NamespacesError::Empty);
            }
            if !crate::contract::is_dns_label(name) {
                return Err(NamespacesError::Invalid(name.to_string()));
            }
            list.push(name.to_string());
        }
        if list.is_empty() {
            return Err(NamespacesError::Empty);
        }
        list.sort();
        list.dedup();
        Ok(Namespaces::Only(list))
    }

    /// Whether a read of `namespace` (None: every namespace) falls inside what is watched.
    pub fn covers(&self, namespace: Option<&str>) -> bool {
        match (self, namespace) {
            (Namespaces::All, _) => true,
            (Namespaces::Only(list), Some(ns)) => list.iter().any(|n| n == ns),
            (Namespaces::Only(_), None) => false,
        }
    }

    /// The single namespace watched, if there is exactly one.
    pub fn single(&self) -> Option<&str> {
        match self {
            Namespaces::Only(list) if list.len() == 1 => list.first().map(String::as_str),
            _ => None,
        }
    }

    /// The namespaces, or None for every namespace.
    pub fn list(&self) -> Option<&[String]> {
        match self {
            Namespaces::All => None,
            Namespaces::Only(list) => Some(list),
        }
    }
}

impl std::fmt::Display for Namespaces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Namespaces::All => f.write_str("every namespace"),
            Namespaces::Only(list) => f.write_str(&list.join(",")),
        }
    }
}

/// What one shared watch covers: its namespaces and the label selector the API server filters it by.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Scope {
    pub namespaces: Namespaces,
    /// A label selector in the API's syntax; None: every object.
    pub labels: Option<String>,
}

impl Scope {
    /// Every object of `namespaces`.
    pub fn of(namespaces: &Namespaces) -> Self {
        Scope {
            namespaces: namespaces.clone(),
            labels: None,
        }
    }
}

/// A watch's events, boxed so namespaces' watches and their union have one type.
pub type EventStream<'a> =
    Pin<Box<dyn Stream<Item = watcher::Result<watcher::Event<CachedObject>>> + Send + 'a>>;

/// The watches of several namespaces as one stream of events for a single store.
///
/// A store replaces everything it holds at the end of a list (`InitDone`), so the namespaces' own lists cannot
/// pass through as they are: one namespace's relist would empty the others. The first lists are gathered
/// until every namespace has finished its own and then given as one list; changes meanwhile wait behind it. A
/// later relist of one namespace becomes changes: an apply for each object listed, and a delete for each object
/// of that namespace the store holds and the list no longer has (read from `store`, which by then has applied
/// every event given before).
pub fn union<'a>(
    parts: Vec<(String, EventStream<'a>)>,
    store: Store<CachedObject>,
) -> impl Stream<Item = watcher::Result<watcher::Event<CachedObject>>> + Send + 'a {
    let mut state = Union::new(parts.iter().map(|(ns, _)| ns.clone()).collect(), store);
    let tagged = parts
        .into_iter()
        .enumerate()
        .map(|(i, (_, events))| events.map(move |e| (i, e)).boxed());
    futures::stream::select_all(tagged)
        .flat_map(move |(i, event)| futures::stream::iter(state.step(i, event)))
}

struct Union {
    parts: Vec<Part>,
    store: Store<CachedObject>,
    /// Set once every namespace's first list is given as one.
    started: bool,
}

struct Part {
    namespace: String,
    /// The objects of a list in progress.
    listing: Option<Vec<CachedObject>>,
    /// Before the union has started: this namespace's finished first list, and the changes since.
    first: Option<Vec<CachedObject>>,
    held: Vec<watcher::Event<CachedObject>>,
}

type Out = Vec<watcher::Result<watcher::Event<CachedObject>>>;

impl Union {
    fn new(namespaces: Vec<String>, store: Store<CachedObject>) -> Self {
        Union {
            parts: namespaces
                .into_iter()
                .map(|namespace| Part {
                    namespace,
                    listing: None,
                    first: None,
                    held: Vec::new(),
                })
                .collect(),
            store,
            started: false,
        }
    }

    fn step(&mut self, i: usize, event: watcher::Result<watcher::Event<CachedObject>>) -> Out {
        let event = match event {
            Ok(event) => event,
            Err(e) => return vec![Err(e)],
        };
        let Some(part) = self.parts.get_mut(i) else {
            return Vec::new();
        };
        match event {
            watcher::Event::Init => {
                part.listing = Some(Vec::new());
                Vec::new()
            }
            watcher::Event::InitApply(o) => {
                part.listing.get_or_insert_with(Vec::new).push(o);
                Vec::new()
            }
            watcher::Event::InitDone => {
                let listed = part.listing.take().unwrap_or_default();
                if self.started {
                    self.relisted(i, listed)
                } else {
                    // A relist before the union started replaces this namespace's first list, and what was
                    // held since is older than it.
                    part.first = Some(listed);
                    part.held.clear();
                    self.start_when_all_listed()
                }
            }
            change @ (watcher::Event::Apply(_) | watcher::Event::Delete(_)) => {
                if self.started {
                    vec![Ok(change)]
                } else {
                    part.held.push(change);
                    Vec::new()
                }
            }
        }
    }

    fn start_when_all_listed(&mut self) -> Out {
        if self.parts.iter().any(|p| p.first.is_none()) {
            return Vec::new();
        }
        self.started = true;
        let mut out = vec![Ok(watcher::Event::Init)];
        for part in &mut self.parts {
            out.extend(
                part.first
                    .take()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|o| Ok(watcher::Event::InitApply(o))),
            );
        }
        out.push(Ok(watcher::Event::InitDone));
        for part in &mut self.parts {
            out.extend(part.held.drain(..).map(Ok));
        }
        out
    }

    fn relisted(&self, i: usize, listed: Vec<CachedObject>) -> Out {
        let Some(part) = self.parts.get(i) else {
            return Vec::new();
        };
        let names: HashSet<String> = listed.iter().map(|o| o.name_any()).collect();
        let mut out: Out = self
            .store
            .state()
            .into_iter()
            .filter(|o| {
                o.namespace().as_deref() == Some(part.namespace.as_str())
                    && !names.contains(&o.name_any())
            })
            .map(|o| Ok(watcher::Event::Delete((*o).clone())))
            .collect();
        out.extend(listed.into_iter().map(|o| Ok(watcher::Event::Apply(o))));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::{ApiResource, GroupVersionKind};
    use kube::runtime::reflector;
    use serde_json::json;
    use tokio::sync::mpsc;

    fn obj(ns: &str, name: &str, v: u32) -> CachedObject {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns}, "data": {"v": v.to_string()}
        }))
        .expect("object")
    }

    fn names(store: &Store<CachedObject>) -> Vec<String> {
        let mut n: Vec<String> = store
            .state()
            .iter()
            .map(|o| format!("{}/{}", o.namespace().unwrap_or_default(), o.name_any()))
            .collect();
        n.sort();
        n
    }

    #[test]
    fn namespace_lists_are_checked_sorted_and_deduplicated() {
        assert_eq!(
            Namespaces::only(&["b", "a", "b"]),
            Ok(Namespaces::Only(vec!["a".into(), "b".into()]))
        );
        assert_eq!(Namespaces::only(&["a", " "]), Err(NamespacesError::Empty));
        assert_eq!(
            Namespaces::only(&["Ops"]),
            Err(NamespacesError::Invalid("Ops".into()))
        );
        assert_eq!(Namespaces::only::<&str>(&[]), Err(NamespacesError::Empty));
        let two = Namespaces::only(&["a", "b"]).expect("valid");
        assert!(two.covers(Some("a")) && two.covers(Some("b")));
        assert!(!two.covers(Some("c")) && !two.covers(None));
        assert!(Namespaces::All.covers(None));
        assert_eq!(two.single(), None);
        assert_eq!(Namespaces::one("a").single(), Some("a"));
    }

    /// Two namespaces' watches fed by hand into one store through the union, in an order that would lose
    /// objects if their lists passed through unchanged.
    #[tokio::test]
    async fn several_namespaces_fill_one_store_and_a_relist_of_one_keeps_the_other() {
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap"));
        let writer = reflector::store::Writer::new(ar);
        let store = writer.as_reader();
        let (tx_a, rx_a) = mpsc::unbounded_channel();
        let (tx_b, rx_b) = mpsc::unbounded_channel();
        let stream =
            |rx: mpsc::UnboundedReceiver<watcher::Event<CachedObject>>| -> EventStream<'static> {
                futures::stream::unfold(
                    rx,
                    |mut rx| async move { rx.recv().await.map(|e| (Ok(e), rx)) },
                )
                .boxed()
            };
        let merged = union(
            vec![("a".into(), stream(rx_a)), ("b".into(), stream(rx_b))],
            store.clone(),
        );
        let mut events = Box::pin(reflector::reflector(writer, merged));
        let mut next = async || {
            tokio::time::timeout(std::time::Duration::from_secs(5), events.next())
                .await
                .expect("an event")
                .expect("open")
                .expect("ok")
        };

        // a lists and then changes; b is still listing: nothing is given yet.
        for e in [
            watcher::Event::Init,
            watcher::Event::InitApply(obj("a", "x", 1)),
            watcher::Event::InitDone,
            watcher::Event::Apply(obj("a", "y", 1)),
        ] {
            tx_a.send(e).expect("send");
        }
        for e in [
            watcher::Event::Init,
            watcher::Event::InitApply(obj("b", "z", 1)),
            watcher::Event::InitDone,
        ] {
            tx_b.send(e).expect("send");
        }
        let mut seen = Vec::new();
        while seen.len() < 5 {
            seen.push(format!("{}", next().await));
        }
        assert_eq!(
            seen,
            [
                "Init",
                "InitApply(x)",
                "InitApply(z)",
                "InitDone",
                "Apply(y)"
            ],
            "one list of both, then what changed meanwhile"
        );
        assert_eq!(names(&store), ["a/x", "a/y", "b/z"]);

        // b relists without z and with w: a's objects stay.
        for e in [
            watcher::Event::Init,
            watcher::Event::InitApply(obj("b", "w", 1)),
            watcher::Event::InitDone,
        ] {
            tx_b.send(e).expect("send");
        }
        let first = next().await;
        let second = next().await;
        assert!(
            matches!(&first, watcher::Event::Delete(o) if o.name_any() == "z"),
            "{first:?}"
        );
        assert!(
            matches!(&second, watcher::Event::Apply(o) if o.name_any() == "w"),
            "{second:?}"
        );
        assert_eq!(names(&store), ["a/x", "a/y", "b/w"]);

        // Changes pass through once started.
        tx_a.send(watcher::Event::Delete(obj("a", "x", 1)))
            .expect("send");
        next().await;
        assert_eq!(names(&store), ["a/y", "b/w"]);
    }
}
