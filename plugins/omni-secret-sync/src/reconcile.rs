//! One reconcile of an OmniSecretSync that is not being deleted.
//!
//! Where Go returned "error + `RequeueAfter: 1m`" (and controller-runtime then used its backoff instead),
//! this reports the condition, asks for [`RETRY_MS`] and returns `Ok`, so the status is committed. Errors of the
//! host's own reads (not "missing", but the API server failing) are returned, as Go returned them: nothing new is
//! known to report, and the host retries with backoff.

use omni_api::conditions::reasons;
use omni_api::{API_VERSION, OmniClusterSpec, OmniKind};
use omni_plugin_sdk::secrets::{CopyOutcome, Removal, SecretKeyRef};
use omni_plugin_sdk::{Host, HostError, LogLevel, ObjectRef, ReconcileError};

use crate::messages;
use crate::object::{SyncObject, Target};
use crate::report::Report;
use crate::target;
use crate::validation;

/// How soon a missing dependency or a failed sync is tried again (Go: `RequeueAfter: 1m`).
pub const RETRY_MS: u64 = 60_000;
/// How often a synced object is synced again. The workload cluster is not watched, so this is what repairs a
/// target edited or deleted there; the host writes nothing when it still matches. Go had no periodic re-sync.
pub const RESYNC_MS: u64 = 10 * 60_000;
/// SHA-256 of no bytes: the digest of a key that exists with an empty value, which Go treated as missing.
const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

pub fn reconcile<H: Host>(host: &H) -> Result<(), ReconcileError> {
    let object = host.object();
    let report = Report::new(host, &object, &host.now());

    // Step 2: a spec that cannot work is reported without touching anything; only a spec change helps, and that
    // triggers a reconcile by itself, so no requeue.
    if let Some(why) = validation::first_failure(&object) {
        report.failed(reasons::VALIDATION_FAILED, why);
        return Ok(());
    }
    let sync = SyncObject::read(host)?;

    // The kubeconfig is pinned by the first success. A sync pointed at another kubeconfig would copy this
    // Secret's data into whatever cluster that kubeconfig reaches; nothing is done in any workload cluster until the
    // spec is set back (or the object recreated, with a new status). Checked before any read: it is a spec error.
    if let Some((old_name, old_key)) = sync.retargeted_kubeconfig() {
        let message = messages::kubeconfig_retargeted(
            &old_name,
            &old_key,
            sync.kubeconfig_name(),
            sync.kubeconfig_key(),
        );
        report.failed(reasons::VALIDATION_FAILED, &message);
        return Ok(());
    }

    // Step 3.
    let cluster_ref = sync.cluster_ref();
    let Some(cluster) = host.kube_get(&ObjectRef::local(
        API_VERSION,
        OmniClusterSpec::KIND,
        cluster_ref,
    ))?
    else {
        report.cluster_missing(cluster_ref);
        host.requeue_after(RETRY_MS);
        return Ok(());
    };
    report.accepted(cluster_ref);
    let cluster_name = match cluster["spec"]["clusterName"]
        .as_str()
        .filter(|n| !n.is_empty())
    {
        Some(name) => name,
        None => cluster["metadata"]["name"].as_str().unwrap_or(cluster_ref),
    };

    // Steps 4 and 5: only whether the Secrets and the key exist; their values never reach the plugin.
    if let Err(message) = check_secrets(host, &sync)? {
        report.failed(reasons::MISSING_SECRET, &message);
        host.requeue_after(RETRY_MS);
        return Ok(());
    }

    // The previous target: the Secret written under it is recorded until a success replaces it.
    let target = sync.target();
    if let Some(previous) = sync.written_target().filter(|p| *p != target)
        && !sync.orphans()
        && let Err(e) = remove_previous(host, &sync, &previous)
    {
        let message =
            messages::delete_previous_failed(&previous.namespace, &previous.name, &e.text());
        report.failed(reasons::DELETE_FAILED, &message);
        host.requeue_after(RETRY_MS);
        return Ok(());
    }

    // Step 7.
    match host.workload_copy_secret(
        &sync.kubeconfig(),
        &target::copy_request(&sync, cluster_name),
    ) {
        Ok(copied) if copied.outcome == CopyOutcome::NotOwned => {
            // Not owned: the host wrote nothing. Not retried faster: someone has to delete that Secret or retarget.
            let message = messages::not_owned(
                &target.namespace,
                &target.name,
                target::OWNER_LABEL,
                sync.uid(),
            );
            report.failed(reasons::SYNC_FAILED, &message);
            host.requeue_after(RETRY_MS);
        }
        Ok(copied) => {
            report.synced(&sync, &copied);
            host.requeue_after(RESYNC_MS);
        }
        Err(e) => {
            // `invalid` is a kubeconfig that does not parse: fixed in the Secret, as Go's ValidationFailed said.
            let reason = if matches!(e, HostError::Invalid(_)) {
                reasons::VALIDATION_FAILED
            } else {
                reasons::SYNC_FAILED
            };
            report.failed(reason, &e.text());
            host.requeue_after(RETRY_MS);
        }
    }
    Ok(())
}

/// `Ok(Err(message))` when the source Secret, the kubeconfig Secret or its key is missing.
fn check_secrets<H: Host>(host: &H, sync: &SyncObject) -> Result<Result<(), String>, HostError> {
    let ns = sync.namespace();
    if host.secret_info(None, sync.source_name())?.is_none() {
        return Ok(Err(messages::missing_source(ns, sync.source_name())));
    }
    let (name, key) = (sync.kubeconfig_name(), sync.kubeconfig_key());
    if host.secret_info(None, name)?.is_none() {
        return Ok(Err(messages::missing_kubeconfig(ns, name)));
    }
    // The digest answers both questions at once: `None` is a missing key (or a Secret deleted since the look
    // above), the digest of nothing an empty value, which Go treated as missing too.
    match host.secret_digest(&SecretKeyRef::local(name, key))? {
        Some(digest) if digest != EMPTY_SHA256 => Ok(Ok(())),
        _ => Ok(Err(messages::kubeconfig_lacks_key(ns, name, key))),
    }
}

/// Deletes the previously written Secret if it is still this sync's; absent or someone else's is done too.
fn remove_previous<H: Host>(
    host: &H,
    sync: &SyncObject,
    previous: &Target,
) -> Result<(), HostError> {
    let removal = host.workload_delete_secret(
        &sync.kubeconfig(),
        &previous.namespace,
        &previous.name,
        &target::owner(sync),
    )?;
    if removal == Removal::NotOwned {
        let path = format!("{}/{}", previous.namespace, previous.name);
        host.log(
            LogLevel::Info,
            "previous workload Secret is not owned by this OmniSecretSync; left in place",
            &[("secret", &path)],
        );
    }
    Ok(())
}
