//! The optional state file: every object, the revision counter and the CA, so a restarted server keeps its
//! objects and the kubeconfigs it wrote stay valid.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cluster::Cluster;
use crate::resources::StorageKey;

#[derive(Serialize, Deserialize)]
pub struct Snapshot {
    pub resource_version: u64,
    pub ca_cert_pem: String,
    pub ca_key_pem: String,
    pub objects: Vec<StoredObject>,
}

#[derive(Serialize, Deserialize)]
pub struct StoredObject {
    pub group: String,
    pub resource: String,
    pub object: Value,
}

pub fn load(path: &Path) -> Result<Option<Snapshot>> {
    match std::fs::read(path) {
        Ok(bytes) => {
            let s: Snapshot = serde_json::from_slice(&bytes)
                .with_context(|| format!("reading state file {}", path.display()))?;
            Ok(Some(s))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("opening state file {}", path.display())),
    }
}

pub fn restore(cluster: &Cluster, snap: Snapshot) {
    let objects = snap
        .objects
        .into_iter()
        .map(|o| {
            (
                StorageKey {
                    group: o.group,
                    resource: o.resource,
                },
                o.object,
            )
        })
        .collect();
    cluster.store().restore(snap.resource_version, objects);
    cluster.rebuild_registry();
}

pub fn write(cluster: &Cluster, path: &Path, ca_cert_pem: &str, ca_key_pem: &str) -> Result<()> {
    let (rv, objects) = {
        let store = cluster.store();
        (store.current_rv(), store.dump())
    };
    let snap = Snapshot {
        resource_version: rv,
        ca_cert_pem: ca_cert_pem.into(),
        ca_key_pem: ca_key_pem.into(),
        objects: objects
            .into_iter()
            .map(|(k, v)| StoredObject {
                group: k.group,
                resource: k.resource,
                object: (*v).clone(),
            })
            .collect(),
    };
    let bytes = serde_json::to_vec(&snap).context("serialising the state")?;
    // The file holds Secrets and the CA key.
    write_private(path, &bytes)
}

/// Writes a file readable by its owner only, atomically: a unique temporary file created with mode 0600 from
/// the start (never briefly world-readable), then renamed over the target.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write as _;
    let tmp = path.with_extension(format!("tmp-{}", uuid::Uuid::new_v4().simple()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let result = options
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|_| f.sync_all()))
        .with_context(|| format!("writing {}", tmp.display()))
        .and_then(|_| {
            std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))
        });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Writes the state file shortly after changes (at most every 200 ms); the server aborts it when it stops.
pub fn spawn_writer(
    cluster: &Arc<Cluster>,
    path: PathBuf,
    ca_cert_pem: String,
    ca_key_pem: String,
) -> tokio::task::JoinHandle<()> {
    let c = cluster.clone();
    tokio::spawn(async move {
        loop {
            c.changed.notified().await;
            tokio::time::sleep(Duration::from_millis(200)).await;
            if let Err(e) = write(&c, &path, &ca_cert_pem, &ca_key_pem) {
                tracing::warn!(error = %format!("{e:#}"), "could not write the state file");
            }
        }
    })
}
