//! Helm's release storage in a workload cluster, read (and, to unlock a release a dead action left pending or to
//! stamp an adopted one with its owner, written) directly: one Secret per revision,
//! `sh.helm.release.v1.<name>.v<revision>` in the release's namespace, labelled
//! `owner=helm,name=<name>,status=<status>,version=<revision>`, its `release` key holding base64(gzip(JSON)), as
//! Helm's own Secret storage driver writes it. Reading it here costs one LIST and no Helm worker slot, so every
//! `helm.observe` can look at the release as it really is.

use std::fmt;
use std::io::{Read, Write};
use std::sync::Arc;

use base64::Engine as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use serde_json::Value;

/// The release label the host stamps with the digest of the chart and values a revision was made from.
pub const DIGEST_LABEL: &str = "omni.texashpc.com/release-digest";
/// The release label the host stamps with the content digest its chart source published for the chart version
/// (a repository index's digest, an OCI manifest digest), when it published one.
pub const CHART_DIGEST_LABEL: &str = "omni.texashpc.com/chart-digest";
/// The release label naming the object a release belongs to: a digest of the object's identity (API group, kind,
/// namespace and name, as the release table's `Owner` computes it). The host acts on a release only for the object it
/// names.
pub const OWNER_LABEL: &str = "omni.texashpc.com/release-owner";
/// The owning object's UID, beside [`OWNER_LABEL`], for people and tools (`kubectl get secrets -l …`).
pub const OWNER_UID_LABEL: &str = "omni.texashpc.com/release-owner-uid";

/// Revisions decoded beyond the latest, for the history summary.
pub const HISTORY: usize = 10;

/// A release Secret larger than this is not decoded (Kubernetes caps Secrets at 1 MiB; the JSON inside is
/// gzip-compressed, so this bounds what one decode may allocate).
const MAX_DECODED: u64 = 64 << 20;

/// One revision as its Secret records it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredRevision {
    pub revision: u64,
    pub status: String,
    pub chart: String,
    pub chart_version: String,
    pub app_version: String,
    /// `info.last_deployed`, RFC 3339.
    pub updated: String,
    pub description: String,
    pub digest: Option<String>,
    /// [`CHART_DIGEST_LABEL`]: the chart content it was made from, when the host knew it.
    pub chart_digest: Option<String>,
    /// [`OWNER_LABEL`]: the object the revision was made for; None on a revision the host did not stamp.
    pub owner: Option<String>,
    /// The Secret holding it.
    pub secret: String,
    /// Its test hooks and how their last run went (the latest revision only).
    pub tests: Vec<TestHook>,
    /// Whether Helm applied it server-side (`apply_method: ssa`; absent is client-side, as Helm 3 wrote every
    /// revision); None for revisions read from their labels alone.
    pub server_side_apply: Option<bool>,
    /// The latest revision as Helm stored it, decoded, for what is computed from it (the inventory).
    pub decoded: Decoded,
}

/// A decoded release (manifest, chart, values). Never printed: the values may hold secrets.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Decoded(pub Option<Arc<Value>>);

impl fmt::Debug for Decoded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(_) => f.write_str("Decoded(..)"),
            None => f.write_str("Decoded(None)"),
        }
    }
}

/// A hook run by `helm test`, as the revision records its last run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestHook {
    pub name: String,
    /// `Succeeded`, `Failed`, `Running`, or `Unknown` (also when it never ran).
    pub phase: String,
    /// RFC 3339; empty when it never ran.
    pub started: String,
    pub completed: String,
}

impl StoredRevision {
    pub fn is_pending(&self) -> bool {
        self.status.starts_with("pending-")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The workload cluster did not answer, or refused.
    #[error("reading Helm's release storage in namespace {namespace:?}: {source}")]
    Kube {
        namespace: String,
        #[source]
        source: kube::Error,
    },
    #[error("release Secret {secret:?}: {reason}")]
    Undecodable { secret: String, reason: String },
}

/// The release's revisions, newest first: the latest in full, then up to [`HISTORY`] earlier ones from their
/// labels alone (revision, status, digest). Empty when Helm stores no revision of it.
///
/// Every revision Secret embeds the whole chart, and a release keeps all its revisions unless `maxHistory` says
/// otherwise, so the revisions are listed by their metadata only and just the latest is fetched whole: one small
/// LIST and one GET, however long the history.
pub async fn read(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<Vec<StoredRevision>, StorageError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let kube_err = |source| StorageError::Kube {
        namespace: namespace.into(),
        source,
    };
    let mut revisions = Vec::new();
    for (revision, meta) in listed(&api, name)
        .await
        .map_err(kube_err)?
        .into_iter()
        .take(HISTORY + 1)
    {
        let secret = meta.name.clone().unwrap_or_default();
        if revisions.is_empty() {
            // Gone between the LIST and the GET (an uninstall, a prune): the next read sees the new state.
            let Some(s) = api.get_opt(&secret).await.map_err(kube_err)? else {
                continue;
            };
            let release = decoded(&s)?;
            let mut latest = revision_of(revision, &s, &release);
            latest.decoded = Decoded(Some(Arc::new(release)));
            revisions.push(latest);
        } else {
            let text = |key: &str| meta_label(&meta, key).map(str::to_string);
            revisions.push(StoredRevision {
                revision,
                status: text("status").unwrap_or_default(),
                digest: text(DIGEST_LABEL),
                chart_digest: text(CHART_DIGEST_LABEL),
                owner: text(OWNER_LABEL),
                secret,
                ..StoredRevision::default()
            });
        }
    }
    Ok(revisions)
}

/// The latest revision with the manifest Helm rendered for it (every object of the release, as YAML documents),
/// from one LIST of metadata and one GET; None when Helm stores no revision.
pub async fn latest_with_manifest(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<Option<(StoredRevision, String)>, StorageError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let kube_err = |source| StorageError::Kube {
        namespace: namespace.into(),
        source,
    };
    let Some((revision, meta)) = listed(&api, name)
        .await
        .map_err(kube_err)?
        .into_iter()
        .next()
    else {
        return Ok(None);
    };
    let Some(s) = api
        .get_opt(&meta.name.unwrap_or_default())
        .await
        .map_err(kube_err)?
    else {
        return Ok(None);
    };
    let release = decoded(&s)?;
    let manifest = release["manifest"].as_str().unwrap_or_default().to_string();
    Ok(Some((revision_of(revision, &s, &release), manifest)))
}

/// The release's revision Secrets by their metadata, newest first.
async fn listed(api: &Api<Secret>, name: &str) -> Result<Vec<(u64, ObjectMeta)>, kube::Error> {
    let selector = format!("owner=helm,name={name}");
    let list = api
        .list_metadata(&ListParams::default().labels(&selector))
        .await?;
    let mut found: Vec<(u64, ObjectMeta)> = list
        .items
        .into_iter()
        .filter_map(|m| {
            let revision = m.metadata.labels.as_ref()?.get("version")?.parse().ok()?;
            Some((revision, m.metadata))
        })
        .collect();
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    Ok(found)
}

fn meta_label<'a>(m: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    m.labels.as_ref()?.get(key).map(String::as_str)
}

fn label<'a>(s: &'a Secret, key: &str) -> Option<&'a str> {
    meta_label(&s.metadata, key)
}

/// The release JSON of a revision Secret.
fn decoded(s: &Secret) -> Result<Value, StorageError> {
    decode(s).map_err(|reason| StorageError::Undecodable {
        secret: s.metadata.name.clone().unwrap_or_default(),
        reason,
    })
}

fn revision_of(revision: u64, s: &Secret, release: &Value) -> StoredRevision {
    let secret = s.metadata.name.clone().unwrap_or_default();
    let text = |v: &Value, path: &[&str]| {
        path.iter()
            .try_fold(v, |v, k| v.get(k))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let metadata = release.pointer("/chart/metadata").unwrap_or(&Value::Null);
    StoredRevision {
        revision,
        // The label and the JSON agree unless someone edited one; the label is what Helm's queries use.
        status: label(s, "status")
            .map(str::to_string)
            .unwrap_or_else(|| text(release, &["info", "status"])),
        chart: text(metadata, &["name"]),
        chart_version: text(metadata, &["version"]),
        app_version: text(metadata, &["appVersion"]),
        updated: text(release, &["info", "last_deployed"]),
        description: text(release, &["info", "description"]),
        digest: label(s, DIGEST_LABEL).map(str::to_string),
        chart_digest: label(s, CHART_DIGEST_LABEL).map(str::to_string),
        owner: label(s, OWNER_LABEL).map(str::to_string),
        secret,
        tests: test_hooks(release),
        server_side_apply: Some(text(release, &["apply_method"]) == "ssa"),
        decoded: Decoded::default(),
    }
}

/// The hooks that run on `helm test` (event `test`, or Helm 2's `test-success`), in the release's order.
fn test_hooks(release: &Value) -> Vec<TestHook> {
    let hooks = release
        .get("hooks")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let text = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    hooks
        .iter()
        .filter(|h| {
            h.get("events").and_then(Value::as_array).is_some_and(|e| {
                e.iter()
                    .any(|e| matches!(e.as_str(), Some("test" | "test-success")))
            })
        })
        .map(|h| {
            let run = h.get("last_run").unwrap_or(&Value::Null);
            let phase = text(run, "phase");
            TestHook {
                name: text(h, "name"),
                phase: if phase.is_empty() {
                    "Unknown".into()
                } else {
                    phase
                },
                // Go's zero time marks a hook that never ran.
                started: Some(text(run, "started_at"))
                    .filter(|t| !t.starts_with("0001-"))
                    .unwrap_or_default(),
                completed: Some(text(run, "completed_at"))
                    .filter(|t| !t.starts_with("0001-"))
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// The release JSON inside a storage Secret: base64 text, usually gzip-compressed (Helm's decoder accepts plain
/// JSON without the gzip magic, and so does this).
fn decode(s: &Secret) -> Result<Value, String> {
    let raw = s
        .data
        .as_ref()
        .and_then(|d| d.get("release"))
        .ok_or("it has no `release` key")?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&raw.0)
        .map_err(|e| format!("`release` is not base64: {e}"))?;
    let json = if bytes.starts_with(&[0x1f, 0x8b, 0x08]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes.as_slice())
            .take(MAX_DECODED)
            .read_to_end(&mut out)
            .map_err(|e| format!("`release` is not gzip: {e}"))?;
        out
    } else {
        bytes
    };
    serde_json::from_slice(&json).map_err(|e| format!("`release` is not JSON: {e}"))
}

fn encode(release: &Value) -> Result<ByteString, String> {
    let json = serde_json::to_vec(release).map_err(|e| e.to_string())?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&json).map_err(|e| e.to_string())?;
    let bytes = gz.finish().map_err(|e| e.to_string())?;
    Ok(ByteString(
        base64::engine::general_purpose::STANDARD
            .encode(bytes)
            .into_bytes(),
    ))
}

/// Marks a revision left `pending-*` as `failed`, in its label and its JSON, as Flux's unlock does: Helm
/// refuses every action on a release whose latest revision is pending, and nothing else ever clears it when the
/// action's process died. The write is conditioned on the Secret's resourceVersion, so a revision that moved on
/// in between is left alone (and the caller looks again).
pub async fn mark_failed(
    client: &kube::Client,
    namespace: &str,
    secret: &str,
    why: &str,
) -> Result<(), StorageError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let kube_err = |source| StorageError::Kube {
        namespace: namespace.into(),
        source,
    };
    let mut s = api.get(secret).await.map_err(kube_err)?;
    let undecodable = |reason| StorageError::Undecodable {
        secret: secret.into(),
        reason,
    };
    let mut release = decode(&s).map_err(undecodable)?;
    if let Some(info) = release.get_mut("info").and_then(Value::as_object_mut) {
        info.insert("status".into(), "failed".into());
        info.insert("description".into(), why.into());
    }
    let data = encode(&release).map_err(undecodable)?;
    s.data
        .get_or_insert_default()
        .insert("release".into(), data);
    let labels = s.metadata.labels.get_or_insert_default();
    labels.insert("status".into(), "failed".into());
    labels.insert(
        "modifiedAt".into(),
        jiff::Timestamp::now().as_second().to_string(),
    );
    s.metadata.managed_fields = None;
    api.replace(secret, &PostParams::default(), &s)
        .await
        .map_err(kube_err)?;
    Ok(())
}

/// Adds `labels` to the revision Secrets `secrets` (a merge patch of their labels alone): how an adopted release is
/// stamped with its new owner.
pub async fn add_labels(
    client: &kube::Client,
    namespace: &str,
    secrets: &[String],
    labels: &std::collections::BTreeMap<String, String>,
) -> Result<(), StorageError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let patch = kube::api::Patch::Merge(serde_json::json!({"metadata": {"labels": labels}}));
    for secret in secrets {
        api.patch(secret, &kube::api::PatchParams::default(), &patch)
            .await
            .map_err(|source| StorageError::Kube {
                namespace: namespace.into(),
                source,
            })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A revision Secret as `read` takes the latest one.
    fn read_one(revision: u64, s: &Secret) -> Result<StoredRevision, StorageError> {
        decoded(s).map(|release| revision_of(revision, s, &release))
    }
    use serde_json::json;

    fn secret(release: &Value, gzip: bool, labels: &[(&str, &str)]) -> Secret {
        let data = if gzip {
            encode(release).unwrap()
        } else {
            ByteString(
                base64::engine::general_purpose::STANDARD
                    .encode(release.to_string())
                    .into_bytes(),
            )
        };
        Secret {
            metadata: kube::api::ObjectMeta {
                name: Some("sh.helm.release.v1.demo.v2".into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..Default::default()
            },
            data: Some([("release".to_string(), data)].into()),
            ..Default::default()
        }
    }

    fn release() -> Value {
        json!({
            "name": "demo", "namespace": "apps", "version": 2,
            "info": {"status": "deployed", "last_deployed": "2026-11-26T10:00:00Z", "description": "Upgrade complete"},
            "chart": {"metadata": {"name": "demo", "version": "1.2.3", "appVersion": "4.5"}},
        })
    }

    #[test]
    fn a_revision_is_read_from_its_labels_and_its_gzipped_json() {
        let s = secret(
            &release(),
            true,
            &[("status", "deployed"), (DIGEST_LABEL, "abc")],
        );
        let r = read_one(2, &s).unwrap();
        assert_eq!(
            r,
            StoredRevision {
                revision: 2,
                status: "deployed".into(),
                chart: "demo".into(),
                chart_version: "1.2.3".into(),
                app_version: "4.5".into(),
                updated: "2026-11-26T10:00:00Z".into(),
                description: "Upgrade complete".into(),
                digest: Some("abc".into()),
                chart_digest: None,
                owner: None,
                secret: "sh.helm.release.v1.demo.v2".into(),
                tests: Vec::new(),
                // No `apply_method`: client-side, as Helm 3 wrote every revision.
                server_side_apply: Some(false),
                decoded: Decoded(None),
            }
        );
        let mut ssa = release();
        ssa["apply_method"] = json!("ssa");
        let s = secret(&ssa, true, &[("status", "deployed")]);
        assert_eq!(read_one(2, &s).unwrap().server_side_apply, Some(true));
    }

    /// The decoded release travels with the latest revision for the inventory, but its values (which may hold a
    /// password) never reach a debug print.
    #[test]
    fn a_decoded_release_is_never_printed() {
        let mut with_values = release();
        with_values["config"] = json!({"password": "hunter2-secret"});
        let r = StoredRevision {
            decoded: Decoded(Some(Arc::new(with_values))),
            ..StoredRevision::default()
        };
        let printed = format!("{r:?}");
        assert!(!printed.contains("hunter2"), "{printed}");
        assert!(printed.contains("Decoded(..)"), "{printed}");
    }

    #[test]
    fn test_hooks_and_their_last_run_are_read_from_the_release() {
        let mut r = release();
        r["hooks"] = json!([
            {"name": "demo-test", "events": ["test"],
             "last_run": {"started_at": "2026-11-26T10:01:00Z", "completed_at": "2026-11-26T10:01:05Z", "phase": "Failed"}},
            {"name": "demo-never", "events": ["test-success"],
             "last_run": {"started_at": "0001-01-01T00:00:00Z", "completed_at": "0001-01-01T00:00:00Z", "phase": ""}},
            {"name": "demo-pre", "events": ["pre-install"], "last_run": {"phase": "Succeeded"}},
        ]);
        let got = read_one(2, &secret(&r, true, &[])).unwrap().tests;
        assert_eq!(
            got,
            vec![
                TestHook {
                    name: "demo-test".into(),
                    phase: "Failed".into(),
                    started: "2026-11-26T10:01:00Z".into(),
                    completed: "2026-11-26T10:01:05Z".into(),
                },
                TestHook {
                    name: "demo-never".into(),
                    phase: "Unknown".into(),
                    started: String::new(),
                    completed: String::new(),
                },
            ]
        );
    }

    #[test]
    fn plain_json_without_the_gzip_magic_is_read_as_helm_reads_it() {
        let s = secret(&release(), false, &[]);
        let r = read_one(2, &s).unwrap();
        // No status label: the JSON's status stands in.
        assert_eq!((r.status.as_str(), r.digest), ("deployed", None));
    }

    #[test]
    fn a_secret_that_is_not_a_release_is_an_error_naming_it() {
        let mut s = secret(&release(), true, &[]);
        s.data = Some([("release".to_string(), ByteString(b"%%%".to_vec()))].into());
        let err = read_one(2, &s).unwrap_err().to_string();
        assert!(
            err.contains("sh.helm.release.v1.demo.v2") && err.contains("not base64"),
            "{err}"
        );
    }
}
