//! Which watch events start a reconcile, as the Go operator's predicate decides: creation, deletion, and updates
//! that change the generation or whether the object is being deleted. Status-, label- and finalizer-only updates
//! do not; nor do annotation changes, except a new value of [`REQUESTED_AT`], the request for a reconcile now that
//! Flux's CLI (`flux reconcile`) and GitOps tooling set.

use std::collections::HashMap;

use super::object::CachedObject;
use futures::{Stream, StreamExt};
use kube::runtime::watcher;

use super::hub::SharedEvent;

/// The annotation whose every new value asks for a reconcile now (Flux's `meta.ReconcileRequestAnnotation`).
pub const REQUESTED_AT: &str = "reconcile.fluxcd.io/requestedAt";

/// What the trigger compares between two versions of an object: the generation, or for kinds that have none
/// (Secrets, ConfigMaps: their data is not a spec) the resourceVersion, so every change triggers, as the Go
/// operator's predicate-free Secret watches do; whether it is being deleted; and [`REQUESTED_AT`].
fn fingerprint(o: &CachedObject) -> Fingerprint {
    let version = match o.metadata.generation {
        Some(g) => Some(g.to_string()),
        None => o.metadata.resource_version.clone(),
    };
    let requested = o
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(REQUESTED_AT))
        .cloned();
    (version, o.metadata.deletion_timestamp.is_some(), requested)
}

fn key(o: &CachedObject) -> String {
    o.metadata.uid.clone().unwrap_or_else(|| {
        format!(
            "{}/{}",
            o.metadata.namespace.clone().unwrap_or_default(),
            o.metadata.name.clone().unwrap_or_default()
        )
    })
}

/// Objects from a shared watch, passed on only when the module's rules say they should trigger. Deletions always
/// pass (a related object going away changes what its dependents observe); re-listed objects pass only when they
/// changed.
pub fn spec_or_deletion_changes<S>(
    events: S,
) -> impl Stream<Item = Result<CachedObject, watcher::Error>> + Send
where
    S: Stream<Item = SharedEvent> + Send,
{
    changes_by(events, fingerprint)
}

/// Objects from a shared watch on every change, status included (a new resourceVersion), and on deletion: what
/// an owned child's watch passes on, as controller-runtime's `Owns` does, so an owner's plugin sees its children
/// become ready. A re-list passes only what changed.
pub fn every_change<S>(events: S) -> impl Stream<Item = Result<CachedObject, watcher::Error>> + Send
where
    S: Stream<Item = SharedEvent> + Send,
{
    changes_by(events, |o| {
        (
            o.metadata.resource_version.clone(),
            o.metadata.deletion_timestamp.is_some(),
            None,
        )
    })
}

type Fingerprint = (Option<String>, bool, Option<String>);

/// Objects whose `fingerprint` changed since last seen, and deletions.
fn changes_by<S>(
    events: S,
    fingerprint: fn(&CachedObject) -> Fingerprint,
) -> impl Stream<Item = Result<CachedObject, watcher::Error>> + Send
where
    S: Stream<Item = SharedEvent> + Send,
{
    let mut seen: HashMap<String, Fingerprint> = HashMap::new();
    events
        .map(move |ev| -> Option<Result<CachedObject, watcher::Error>> {
            match &*ev {
                watcher::Event::Apply(o) | watcher::Event::InitApply(o) => {
                    let fp = fingerprint(o);
                    if seen.insert(key(o), fp.clone()) == Some(fp) {
                        None
                    } else {
                        Some(Ok(o.clone()))
                    }
                }
                watcher::Event::Delete(o) => {
                    seen.remove(&key(o));
                    Some(Ok(o.clone()))
                }
                watcher::Event::Init | watcher::Event::InitDone => None,
            }
        })
        .filter_map(futures::future::ready)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::ObjectMeta;

    fn obj(uid: &str, generation: i64, deleting: bool, rv: &str) -> CachedObject {
        let mut o = CachedObject::default();
        o.metadata = ObjectMeta {
            uid: Some(uid.into()),
            generation: Some(generation),
            resource_version: Some(rv.into()),
            ..Default::default()
        };
        if deleting {
            o.metadata.deletion_timestamp = Some(
                k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH),
            );
        }
        o
    }

    #[tokio::test]
    async fn only_generation_deletion_and_removal_trigger() {
        let events = vec![
            watcher::Event::InitApply(obj("a", 1, false, "1")),
            watcher::Event::Apply(obj("a", 1, false, "2")),
            watcher::Event::Apply(obj("a", 2, false, "3")),
            watcher::Event::Apply(obj("a", 2, true, "4")),
            watcher::Event::Delete(obj("a", 2, true, "5")),
        ];
        let out: Vec<String> = spec_or_deletion_changes(futures::stream::iter(
            events.into_iter().map(std::sync::Arc::new),
        ))
        .map(|r| r.expect("ok").metadata.resource_version.expect("rv"))
        .collect()
        .await;
        assert_eq!(
            out,
            vec!["1", "3", "4", "5"],
            "the status-only update (rv 2) is filtered"
        );
    }

    #[tokio::test]
    async fn a_new_reconcile_request_triggers_and_other_annotations_do_not() {
        let annotated = |rv: &str, annotations: &[(&str, &str)]| {
            let mut o = obj("a", 1, false, rv);
            o.metadata.annotations = Some(
                annotations
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            );
            o
        };
        let events = vec![
            watcher::Event::InitApply(annotated("1", &[])),
            watcher::Event::Apply(annotated("2", &[("team", "x")])),
            watcher::Event::Apply(annotated("3", &[(REQUESTED_AT, "r1")])),
            watcher::Event::Apply(annotated("4", &[(REQUESTED_AT, "r1"), ("team", "y")])),
            watcher::Event::Apply(annotated("5", &[(REQUESTED_AT, "r2")])),
        ];
        let out: Vec<String> = spec_or_deletion_changes(futures::stream::iter(
            events.into_iter().map(std::sync::Arc::new),
        ))
        .map(|r| r.expect("ok").metadata.resource_version.expect("rv"))
        .collect()
        .await;
        assert_eq!(out, vec!["1", "3", "5"]);
    }
}
