//! Owner-checked Secret writes for kubeconfig exports and Secret syncs (the Go operator overwrote and adopted
//! Secrets it did not own, and could never change a synced Secret's type): a Secret is changed or deleted only
//! while it carries the reconciled object's owner label, and every change is conditional on the version that was
//! checked, so a Secret someone else replaced in between is never touched.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams, Preconditions};

use super::{content_hash, quoted};
use crate::contract::HostError;

/// The label that marks a Secret as the reconciled object's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerLabel {
    pub key: String,
    pub value: String,
}

impl OwnerLabel {
    pub fn marks(&self, secret: &Secret) -> bool {
        secret
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(&self.key))
            == Some(&self.value)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    Deleted,
    Absent,
    NotOwned,
}

/// An uncached read; `scope` is `""` for the management cluster and `"workload "` for a workload cluster, as
/// the messages say (`get workload Secret "ns/name": …`).
pub async fn get(
    client: &kube::Client,
    scope: &str,
    namespace: &str,
    name: &str,
) -> Result<Option<Secret>, HostError> {
    Api::<Secret>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await
        .map_err(|e| {
            HostError::from_kube(&format!("get {scope}Secret {}", quoted(namespace, name)), e)
        })
}

/// Only the version that was checked is deleted: a precondition on UID and resourceVersion.
fn exactly(secret: &Secret) -> DeleteParams {
    DeleteParams {
        preconditions: Some(Preconditions {
            uid: secret.metadata.uid.clone(),
            resource_version: secret.metadata.resource_version.clone(),
        }),
        ..DeleteParams::default()
    }
}

pub async fn delete_owned(
    client: &kube::Client,
    scope: &str,
    namespace: &str,
    name: &str,
    owner: &OwnerLabel,
) -> Result<Removal, HostError> {
    let Some(secret) = get(client, scope, namespace, name).await? else {
        return Ok(Removal::Absent);
    };
    if !owner.marks(&secret) {
        return Ok(Removal::NotOwned);
    }
    match Api::<Secret>::namespaced(client.clone(), namespace)
        .delete(name, &exactly(&secret))
        .await
    {
        Ok(_) => Ok(Removal::Deleted),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(Removal::Absent),
        Err(e) => Err(HostError::from_kube(
            &format!("delete {scope}Secret {}", quoted(namespace, name)),
            e,
        )),
    }
}

/// A kubeconfig to store in a management-cluster Secret.
pub struct KubeconfigWrite {
    pub key: String,
    pub remove_key: Option<String>,
    pub bytes: Vec<u8>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub owner: OwnerLabel,
}

/// Writes the kubeconfig into `existing` (as read before Omni was asked, and checked to be owned) or creates
/// the Secret. Labels and annotations are merged over the Secret's own (ours win), other keys are kept, and a
/// new Secret is `Opaque`. A Secret created or changed by someone else since it was read is a `conflict`.
pub async fn write_kubeconfig(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    existing: Option<Secret>,
    w: KubeconfigWrite,
) -> Result<(), HostError> {
    let api = Api::<Secret>::namespaced(client.clone(), namespace);
    let target = quoted(namespace, name);
    let mut labels = w.labels;
    labels.insert(w.owner.key.clone(), w.owner.value.clone());
    let Some(mut secret) = existing else {
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(namespace.into()),
                labels: Some(labels),
                annotations: Some(w.annotations),
                ..ObjectMeta::default()
            },
            type_: Some("Opaque".into()),
            data: Some(BTreeMap::from([(w.key, ByteString(w.bytes))])),
            ..Secret::default()
        };
        return match api.create(&PostParams::default(), &secret).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => Err(HostError::Conflict(format!(
                "Secret {target} was created by someone else while the kubeconfig was requested; nothing was written"
            ))),
            Err(e) => Err(HostError::from_kube(&format!("create Secret {target}"), e)),
        };
    };
    if !w.owner.marks(&secret) {
        return Err(not_owned(&target, &w.owner));
    }
    secret
        .metadata
        .labels
        .get_or_insert_default()
        .extend(labels);
    secret
        .metadata
        .annotations
        .get_or_insert_default()
        .extend(w.annotations);
    let data = secret.data.get_or_insert_default();
    if let Some(old) = &w.remove_key {
        data.remove(old);
    }
    data.insert(w.key, ByteString(w.bytes));
    // `resourceVersion` stays the one read: an update racing with someone else's change fails with 409.
    api.replace(name, &PostParams::default(), &secret)
        .await
        .map(|_| ())
        .map_err(|e| HostError::from_kube(&format!("update Secret {target}"), e))
}

pub fn not_owned(target: &str, owner: &OwnerLabel) -> HostError {
    HostError::Conflict(format!(
        "Secret {target} exists without label {}={:?}: it belongs to someone else and is left alone",
        owner.key, owner.value
    ))
}

/// A Secret to mirror into a workload cluster.
pub struct CopyRequest {
    pub source: Secret,
    pub namespace: String,
    pub name: String,
    pub secret_type: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub create_namespace: bool,
    pub owner: OwnerLabel,
    pub digest_annotation: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyOutcome {
    Created,
    Updated,
    Unchanged,
    Recreated,
    NotOwned,
}

/// The content hash, the effective type and what was done.
pub async fn copy(
    client: &kube::Client,
    r: CopyRequest,
) -> Result<(String, String, CopyOutcome), HostError> {
    if r.create_namespace {
        ensure_namespace(client, &r.namespace).await?;
    }
    let target = quoted(&r.namespace, &r.name);
    let secret_type = r
        .secret_type
        .clone()
        .or_else(|| r.source.type_.clone())
        .unwrap_or_else(|| "Opaque".into());
    let data: BTreeMap<String, Vec<u8>> = r
        .source
        .data
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect();
    let digest = content_hash(&secret_type, &data);
    let mut labels = r.labels;
    labels.insert(r.owner.key.clone(), r.owner.value.clone());
    let mut annotations = r.annotations;
    if let Some(key) = &r.digest_annotation {
        annotations.insert(key.clone(), digest.clone());
    }
    // Only `data` and the type are copied: never the source's metadata, `immutable` or `stringData`.
    let wanted_data = (!data.is_empty()).then(|| {
        data.into_iter()
            .map(|(k, v)| (k, ByteString(v)))
            .collect::<BTreeMap<_, _>>()
    });
    let api = Api::<Secret>::namespaced(client.clone(), &r.namespace);
    let fresh = Secret {
        metadata: ObjectMeta {
            name: Some(r.name.clone()),
            namespace: Some(r.namespace.clone()),
            labels: Some(labels.clone()),
            annotations: Some(annotations.clone()),
            ..ObjectMeta::default()
        },
        type_: Some(secret_type.clone()),
        data: wanted_data.clone(),
        ..Secret::default()
    };
    let create = |outcome: CopyOutcome| {
        let (api, fresh, target) = (api.clone(), fresh.clone(), target.clone());
        async move {
            match api.create(&PostParams::default(), &fresh).await {
                Ok(_) => Ok(outcome),
                Err(kube::Error::Api(s)) if s.code == 409 => Err(HostError::Conflict(format!(
                    "workload Secret {target} was created by someone else meanwhile; nothing was written"
                ))),
                Err(e) => Err(HostError::from_kube(
                    &format!("create workload Secret {target}"),
                    e,
                )),
            }
        }
    };
    let Some(mut existing) = get(client, "workload ", &r.namespace, &r.name).await? else {
        return Ok((digest, secret_type, create(CopyOutcome::Created).await?));
    };
    if !r.owner.marks(&existing) {
        return Ok((digest, secret_type, CopyOutcome::NotOwned));
    }
    let same_data = existing.data.clone().filter(|d| !d.is_empty()) == wanted_data;
    if existing.type_.as_deref().unwrap_or("Opaque") == secret_type
        && same_data
        && existing.metadata.labels.clone().unwrap_or_default() == labels
        && existing.metadata.annotations.clone().unwrap_or_default() == annotations
    {
        return Ok((digest, secret_type, CopyOutcome::Unchanged));
    }
    // A Secret's type never changes, nor does the data of an immutable one: such a target is replaced (the Go
    // operator's update failed for ever), deleting exactly the version checked above so a re-created unowned
    // Secret is not removed.
    if existing.type_.as_deref().unwrap_or("Opaque") != secret_type
        || (existing.immutable == Some(true) && !same_data)
    {
        match api.delete(&r.name, &exactly(&existing)).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => {
                return Err(HostError::from_kube(
                    &format!("delete workload Secret {target}"),
                    e,
                ));
            }
        }
        return Ok((digest, secret_type, create(CopyOutcome::Recreated).await?));
    }
    existing.metadata.labels = Some(labels);
    existing.metadata.annotations = Some(annotations);
    existing.data = wanted_data;
    existing.string_data = None;
    api.replace(&r.name, &PostParams::default(), &existing)
        .await
        .map_err(|e| HostError::from_kube(&format!("update workload Secret {target}"), e))?;
    Ok((digest, secret_type, CopyOutcome::Updated))
}

/// Creates a bare namespace when it is missing; namespaces are never deleted.
async fn ensure_namespace(client: &kube::Client, namespace: &str) -> Result<(), HostError> {
    let api = Api::<Namespace>::all(client.clone());
    let quoted_ns = format!("{namespace:?}");
    match api.get_opt(namespace).await {
        Ok(Some(_)) => return Ok(()),
        Ok(None) => {}
        Err(e) => {
            return Err(HostError::from_kube(
                &format!("get workload namespace {quoted_ns}"),
                e,
            ));
        }
    }
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(namespace.into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    match api.create(&PostParams::default(), &ns).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(HostError::from_kube(
            &format!("create workload namespace {quoted_ns}"),
            e,
        )),
    }
}
