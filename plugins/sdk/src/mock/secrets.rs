//! The mock's management-cluster Secrets and workload cluster: in-memory, with the operator's ownership rules
//! (write and delete only what carries the owner label), so plugin logic is tested against the rules the real
//! host enforces. The real host is tested against kube-sim.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use crate::HostError;
use crate::secrets::{
    Copied, CopyOutcome, KubeconfigExport, OwnerLabel, Removal, SecretCopy, SecretInfo,
};

/// One Secret as the mock keeps it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FakeSecret {
    pub secret_type: String,
    pub data: BTreeMap<String, Vec<u8>>,
    pub labels: Map<String, Value>,
    pub annotations: Map<String, Value>,
    pub immutable: bool,
    pub resource_version: u64,
}

impl FakeSecret {
    /// An `Opaque` Secret with these keys and values.
    pub fn opaque(data: &[(&str, &str)]) -> Self {
        FakeSecret {
            secret_type: "Opaque".into(),
            data: data
                .iter()
                .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
                .collect(),
            resource_version: 1,
            ..FakeSecret::default()
        }
    }

    pub fn with_label(mut self, key: &str, value: &str) -> Self {
        self.labels.insert(key.into(), json!(value));
        self
    }

    pub fn with_annotation(mut self, key: &str, value: &str) -> Self {
        self.annotations.insert(key.into(), json!(value));
        self
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).and_then(Value::as_str)
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.get(key).and_then(Value::as_str)
    }

    fn owned_by(&self, owner: &OwnerLabel) -> bool {
        self.label(&owner.key) == Some(owner.value.as_str())
    }

    pub(super) fn info(&self) -> SecretInfo {
        SecretInfo {
            secret_type: self.secret_type.clone(),
            keys: self.data.keys().cloned().collect(),
            resource_version: self.resource_version.to_string(),
            labels: Value::Object(self.labels.clone()),
            annotations: Value::Object(self.annotations.clone()),
        }
    }
}

/// `(namespace, name)` → Secret.
pub(super) type SecretMap = BTreeMap<(String, String), FakeSecret>;

fn object(v: &Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

pub(super) fn delete_owned(
    secrets: &mut SecretMap,
    key: (String, String),
    owner: &OwnerLabel,
) -> Removal {
    match secrets.get(&key) {
        None => Removal::Absent,
        Some(s) if !s.owned_by(owner) => Removal::NotOwned,
        Some(_) => {
            secrets.remove(&key);
            Removal::Deleted
        }
    }
}

/// `Conflict` when the Secret exists without the owner label, as the host answers.
pub(super) fn refuse_unowned(
    secrets: &SecretMap,
    namespace: &str,
    name: &str,
    owner: &OwnerLabel,
) -> Result<(), HostError> {
    match secrets.get(&(namespace.to_string(), name.to_string())) {
        Some(existing) if !existing.owned_by(owner) => Err(HostError::Conflict(format!(
            "Secret \"{namespace}/{name}\" exists without label {}={}; it is left alone",
            owner.key, owner.value
        ))),
        _ => Ok(()),
    }
}

/// The mock's export: "Omni" mints `kubeconfig <n> for <cluster> as <user>`; the write follows the host's rules.
pub(super) fn export(
    secrets: &mut SecretMap,
    namespace: String,
    request: &KubeconfigExport,
    serial: u64,
) -> Result<String, HostError> {
    refuse_unowned(secrets, &namespace, &request.target.name, &request.owner)?;
    let key = (namespace.clone(), request.target.name.clone());
    let mut bytes = format!(
        "kubeconfig {serial} for {} as {}",
        request.cluster, request.user
    );
    if let Some(ns) = &request.context_namespace {
        bytes.push_str(&format!(" in {ns}"));
    }
    let digest = crate::sha256_hex(bytes.as_bytes());
    let mut secret = secrets.get(&key).cloned().unwrap_or_else(|| FakeSecret {
        secret_type: "Opaque".into(),
        ..FakeSecret::default()
    });
    if let Some(old) = &request.remove_key {
        secret.data.remove(old);
    }
    secret
        .data
        .insert(request.target.key.clone(), bytes.into_bytes());
    secret.labels.extend(object(&request.labels));
    secret
        .labels
        .insert(request.owner.key.clone(), json!(request.owner.value));
    secret.annotations.extend(object(&request.annotations));
    if let Some(a) = &request.digest_annotation {
        secret.annotations.insert(a.clone(), json!(digest));
    }
    secret.resource_version += 1;
    secrets.insert(key, secret);
    Ok(digest)
}

/// The mock workload cluster.
#[derive(Debug)]
pub(super) struct FakeWorkload {
    pub probe: Result<String, HostError>,
    /// Every workload call fails with this (a cluster that is gone, credentials revoked).
    pub failure: Option<HostError>,
    pub namespaces: BTreeSet<String>,
    pub secrets: SecretMap,
}

impl Default for FakeWorkload {
    fn default() -> Self {
        FakeWorkload {
            probe: Ok("v1.34.1".into()),
            failure: None,
            namespaces: ["default", "kube-system"]
                .into_iter()
                .map(String::from)
                .collect(),
            secrets: SecretMap::new(),
        }
    }
}

/// A digest over type and data, standing in for the host's Go-compatible content hash.
fn content_digest(secret_type: &str, data: &BTreeMap<String, Vec<u8>>) -> String {
    let mut bytes = secret_type.as_bytes().to_vec();
    for (k, v) in data {
        bytes.extend_from_slice(k.as_bytes());
        bytes.push(0);
        bytes.extend_from_slice(v);
        bytes.push(0);
    }
    crate::sha256_hex(&bytes)
}

impl FakeWorkload {
    pub fn copy(&mut self, source: &FakeSecret, request: &SecretCopy) -> Result<Copied, HostError> {
        let target = format!("{}/{}", request.target_namespace, request.target_name);
        if !self.namespaces.contains(&request.target_namespace) {
            if !request.create_namespace {
                return Err(HostError::NotFound(format!(
                    "create workload Secret \"{target}\": namespaces \"{}\" not found",
                    request.target_namespace
                )));
            }
            self.namespaces.insert(request.target_namespace.clone());
        }
        let secret_type = request
            .secret_type
            .clone()
            .unwrap_or_else(|| source.secret_type.clone());
        let digest = content_digest(&secret_type, &source.data);
        let mut labels = object(&request.labels);
        labels.insert(request.owner.key.clone(), json!(request.owner.value));
        let mut annotations = object(&request.annotations);
        if let Some(a) = &request.digest_annotation {
            annotations.insert(a.clone(), json!(digest));
        }
        let key = (
            request.target_namespace.clone(),
            request.target_name.clone(),
        );
        let wanted = FakeSecret {
            secret_type: secret_type.clone(),
            data: source.data.clone(),
            labels,
            annotations,
            immutable: false,
            resource_version: 1,
        };
        let outcome = match self.secrets.get(&key) {
            None => CopyOutcome::Created,
            Some(existing) if !existing.owned_by(&request.owner) => {
                return Ok(Copied {
                    digest,
                    secret_type,
                    outcome: CopyOutcome::NotOwned,
                });
            }
            Some(existing)
                if existing.secret_type == wanted.secret_type
                    && existing.data == wanted.data
                    && existing.labels == wanted.labels
                    && existing.annotations == wanted.annotations =>
            {
                return Ok(Copied {
                    digest,
                    secret_type,
                    outcome: CopyOutcome::Unchanged,
                });
            }
            Some(existing)
                if existing.secret_type != wanted.secret_type
                    || (existing.immutable && existing.data != wanted.data) =>
            {
                CopyOutcome::Recreated
            }
            Some(_) => CopyOutcome::Updated,
        };
        let version = self.secrets.get(&key).map_or(0, |s| s.resource_version);
        self.secrets.insert(
            key,
            FakeSecret {
                resource_version: version + 1,
                ..wanted
            },
        );
        Ok(Copied {
            digest,
            secret_type,
            outcome,
        })
    }
}
