//! What the workload Secret carries: the owner label that makes it this
//! sync's, and the labels and annotations that replace whatever it had. The data and the content hash are the
//! host's part: it copies the values host to host and stamps the hash in [`HASH_ANNOTATION`].

use omni_api::labels::secret_sync::{
    CONTENT_ANNOTATION, CONTENT_VERSION, HASH_ANNOTATION, NAME_ANNOTATION, SOURCE_ANNOTATION,
};
use omni_api::labels::{CLUSTER_LABEL, MANAGED_BY, MANAGED_BY_LABEL};
use omni_plugin_sdk::Value;
use omni_plugin_sdk::secrets::{OwnerLabel, SecretCopy};
use omni_plugin_sdk::serde_json::Map;

use crate::object::SyncObject;

/// Owner of a workload Secret: only a Secret carrying this sync's UID here is changed or deleted. Defined,
/// with the other keys, in omni-api.
pub use omni_api::labels::secret_sync::OWNER_LABEL;

pub fn owner(sync: &SyncObject) -> OwnerLabel {
    OwnerLabel::new(OWNER_LABEL, sync.uid())
}

/// The copy of the source into the spec's target. `cluster_name` is the Omni cluster name of the referenced
/// OmniCluster (`spec.clusterName`, else its `metadata.name`).
pub fn copy_request(sync: &SyncObject, cluster_name: &str) -> SecretCopy {
    let spec = &sync.typed.spec;
    let target = sync.target();

    // The user's labels and annotations first, the operator's over them: a user cannot forge ownership or the
    // provenance annotations.
    let mut labels = string_map(spec.labels.as_ref());
    labels.insert(MANAGED_BY_LABEL.into(), MANAGED_BY.into());
    labels.insert(OWNER_LABEL.into(), sync.uid().into());
    labels.insert(CLUSTER_LABEL.into(), cluster_name.into());

    let mut annotations = string_map(spec.annotations.as_ref());
    // The host stamps the hash; a user's value under that key must not reach the request at all, so the host
    // never has to decide between the two.
    annotations.remove(HASH_ANNOTATION);
    annotations.insert(NAME_ANNOTATION.into(), sync.name().into());
    annotations.insert(
        SOURCE_ANNOTATION.into(),
        format!("{}/{}", sync.namespace(), sync.source_name()).into(),
    );
    annotations.insert(CONTENT_ANNOTATION.into(), CONTENT_VERSION.into());

    SecretCopy {
        source_name: sync.source_name().into(),
        target_namespace: target.namespace,
        target_name: target.name,
        secret_type: sync.spec_type().map(String::from),
        labels: Value::Object(labels),
        annotations: Value::Object(annotations),
        create_namespace: spec.create_namespace == Some(true),
        owner: owner(sync),
        digest_annotation: Some(HASH_ANNOTATION.into()),
    }
}

fn string_map(m: Option<&std::collections::BTreeMap<String, String>>) -> Map<String, Value> {
    m.into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect()
}
