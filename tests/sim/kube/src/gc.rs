//! What kube-controller-manager's garbage collector and namespace controller, and apiextensions' CRD
//! finalizer, do: delete dependents whose owners are gone, honour `foregroundDeletion` and `orphan`, empty a
//! terminating Namespace, and remove a deleted CRD's objects.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::cluster::{
    CRD_CLEANUP_FINALIZER, Cluster, DeleteOptions, FOREGROUND_FINALIZER, ORPHAN_FINALIZER,
    WriteCtx, finalizers,
};
use crate::resources::{ResourceType, StorageKey};

/// Runs collection passes whenever a deletion happens, until the cluster is dropped.
/// The owner of the returned task aborts it when the server stops.
pub fn spawn(cluster: &Arc<Cluster>) -> tokio::task::JoinHandle<()> {
    let c = cluster.clone();
    tokio::spawn(async move {
        loop {
            // Passes repeat while they make progress: one deletion can unblock the next.
            for _ in 0..64 {
                if !collect(&c).await {
                    break;
                }
            }
            // A periodic pass also catches dependents created after their owner was already gone.
            let _ = tokio::time::timeout(Duration::from_secs(2), c.gc_wake.notified()).await;
        }
    })
}

struct Obj {
    rt: Arc<ResourceType>,
    value: Arc<Value>,
}

impl Obj {
    fn ns(&self) -> &str {
        self.value["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
    }
    fn name(&self) -> &str {
        self.value["metadata"]["name"].as_str().unwrap_or_default()
    }
    fn uid(&self) -> &str {
        self.value["metadata"]["uid"].as_str().unwrap_or_default()
    }
    fn deleting(&self) -> bool {
        self.value["metadata"]["deletionTimestamp"].is_string()
    }
    fn owner_uids(&self) -> Vec<String> {
        self.value["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["uid"].as_str().map(String::from))
            .collect()
    }
}

/// One pass; true when it changed something.
pub async fn collect(cluster: &Cluster) -> bool {
    let reg = cluster.registry();
    let all: Vec<Obj> = {
        let store = cluster.store();
        reg.storage_keys()
            .into_iter()
            .flat_map(|(key, rt)| {
                let rt = storage_type(&reg, &key).unwrap_or(rt);
                store.list(&key, None).into_iter().map(move |v| Obj {
                    rt: rt.clone(),
                    value: v,
                })
            })
            .collect()
    };
    let uids: HashSet<&str> = all.iter().map(Obj::uid).collect();
    let mut dependents: HashMap<&str, Vec<&Obj>> = HashMap::new();
    for o in &all {
        for owner in o.owner_uids() {
            if let Some(uid) = uids.get(owner.as_str()) {
                dependents.entry(uid).or_default().push(o);
            }
        }
    }
    let ctx = WriteCtx::system("generic-garbage-collector");
    let mut progress = false;

    for o in all.iter().filter(|o| o.deleting()) {
        let fins = finalizers(&o.value);
        let deps = dependents.get(o.uid()).cloned().unwrap_or_default();
        if fins.iter().any(|f| f == FOREGROUND_FINALIZER) {
            for d in deps.iter().filter(|d| !d.deleting()) {
                // A dependent with another live owner stays; it only loses its reference to this one.
                let other_owner = d
                    .owner_uids()
                    .iter()
                    .any(|u| u != o.uid() && uids.contains(u.as_str()));
                if other_owner {
                    progress |= drop_owner_ref(cluster, d, o.uid(), &ctx).await;
                } else {
                    let opts = DeleteOptions {
                        propagation: Some("Foreground".into()),
                        ..uid_precondition(d)
                    };
                    progress |= cluster
                        .delete(&d.rt, d.ns(), d.name(), &opts, &ctx)
                        .await
                        .is_ok();
                }
            }
            // Only dependents that block owner deletion hold the owner back.
            if !deps.iter().any(|d| blocks_owner(d, o.uid())) {
                progress |= remove_finalizer(cluster, o, FOREGROUND_FINALIZER, &ctx).await;
            }
        } else if fins.iter().any(|f| f == ORPHAN_FINALIZER) {
            for d in &deps {
                progress |= drop_owner_ref(cluster, d, o.uid(), &ctx).await;
            }
            progress |= remove_finalizer(cluster, o, ORPHAN_FINALIZER, &ctx).await;
        }
        if o.rt.group.is_empty() && o.rt.plural == "namespaces" {
            progress |= finalize_namespace(cluster, &all, o, &ctx).await;
        }
        if o.rt.group == "apiextensions.k8s.io" && fins.iter().any(|f| f == CRD_CLEANUP_FINALIZER) {
            progress |= finalize_crd(cluster, o, &ctx).await;
        }
    }

    // Background propagation: a dependent whose every owner is gone is deleted.
    for o in &all {
        let owners = o.owner_uids();
        if owners.is_empty() || o.deleting() {
            continue;
        }
        if owners.iter().all(|u| !uids.contains(u.as_str())) {
            progress |= cluster
                .delete(&o.rt, o.ns(), o.name(), &uid_precondition(o), &ctx)
                .await
                .is_ok();
        }
    }
    progress
}

/// The type objects are stored at (so writes validate against the storage version's schema).
fn storage_type(reg: &crate::resources::Registry, key: &StorageKey) -> Option<Arc<ResourceType>> {
    reg.all()
        .find(|t| t.storage_key() == *key && t.is_storage_type())
        .cloned()
}

/// Deletes by the collector name the object it saw: a same-named successor created meanwhile is left alone, as
/// the real collector's UID precondition ensures.
fn uid_precondition(o: &Obj) -> DeleteOptions {
    DeleteOptions {
        precondition_uid: Some(o.uid().to_string()),
        ..Default::default()
    }
}

fn blocks_owner(d: &Obj, owner_uid: &str) -> bool {
    d.value["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|r| {
            r["uid"].as_str() == Some(owner_uid) && r["blockOwnerDeletion"].as_bool() == Some(true)
        })
}

async fn remove_finalizer(cluster: &Cluster, o: &Obj, finalizer: &str, ctx: &WriteCtx) -> bool {
    let mut next = (*o.value).clone();
    let kept: Vec<String> = finalizers(&next)
        .into_iter()
        .filter(|f| f != finalizer)
        .collect();
    next["metadata"]["finalizers"] = json!(kept);
    cluster
        .update(&o.rt, o.ns(), o.name(), "", next, ctx)
        .await
        .is_ok()
}

async fn drop_owner_ref(cluster: &Cluster, d: &Obj, owner_uid: &str, ctx: &WriteCtx) -> bool {
    let mut next = (*d.value).clone();
    if let Some(refs) = next["metadata"]["ownerReferences"].as_array_mut() {
        refs.retain(|r| r["uid"].as_str() != Some(owner_uid));
    }
    cluster
        .update(&d.rt, d.ns(), d.name(), "", next, ctx)
        .await
        .is_ok()
}

/// Deletes everything in a terminating namespace, then releases its `kubernetes` finalizer.
async fn finalize_namespace(cluster: &Cluster, all: &[Obj], ns: &Obj, ctx: &WriteCtx) -> bool {
    let name = ns.name();
    let content: Vec<&Obj> = all
        .iter()
        .filter(|o| o.rt.namespaced && o.ns() == name)
        .collect();
    let mut progress = false;
    for o in content.iter().filter(|o| !o.deleting()) {
        progress |= cluster
            .delete(&o.rt, o.ns(), o.name(), &uid_precondition(o), ctx)
            .await
            .is_ok();
    }
    let pending = ns.value["spec"]["finalizers"]
        .as_array()
        .is_some_and(|f| !f.is_empty());
    if content.is_empty() && pending {
        let mut next = (*ns.value).clone();
        next["spec"]["finalizers"] = json!([]);
        if let Ok(w) = cluster
            .update(&ns.rt, "", name, "finalize", next, ctx)
            .await
        {
            progress = true;
            // With no metadata finalizers left, the namespace goes away now.
            if finalizers(&w.object).is_empty()
                && w.object["metadata"]["deletionTimestamp"].is_string()
            {
                let _ = cluster
                    .delete(&ns.rt, "", name, &DeleteOptions::default(), ctx)
                    .await;
            }
        }
    }
    progress
}

/// Deletes every object of a CRD being deleted, then releases its cleanup finalizer.
async fn finalize_crd(cluster: &Cluster, crd: &Obj, ctx: &WriteCtx) -> bool {
    let group = crd.value["spec"]["group"].as_str().unwrap_or_default();
    let plural = crd.value["spec"]["names"]["plural"]
        .as_str()
        .unwrap_or_default();
    let key = StorageKey {
        group: group.into(),
        resource: plural.into(),
    };
    let reg = cluster.registry();
    let instances = cluster.store().list(&key, None);
    let mut progress = false;
    // The storage version may be unserved; its type is built from the CRD itself then.
    let rt = storage_type(&reg, &key)
        .or_else(|| crate::resources::storage_type_of(&crd.value).map(Arc::new));
    if let Some(rt) = rt {
        for o in instances
            .iter()
            .filter(|o| o["metadata"]["deletionTimestamp"].is_null())
        {
            let ns = o["metadata"]["namespace"].as_str().unwrap_or_default();
            let name = o["metadata"]["name"].as_str().unwrap_or_default();
            let opts = DeleteOptions {
                precondition_uid: o["metadata"]["uid"].as_str().map(String::from),
                ..Default::default()
            };
            progress |= cluster.delete(&rt, ns, name, &opts, ctx).await.is_ok();
        }
    }
    if instances.is_empty() {
        progress |= remove_finalizer(cluster, crd, CRD_CLEANUP_FINALIZER, ctx).await;
    }
    progress
}
