//! Whether the target Secret already holds a kubeconfig worth keeping: written by this
//! export for the current spec, unmodified, not due for rotation, and still accepted by the workload cluster.
//! The plugin sees only the Secret's metadata and the digest of the key, never the kubeconfig.

use omni_api::labels::kubeconfig_export::{
    EXPIRATION_ANNOTATION, HASH_ANNOTATION, LAST_ROTATION_ANNOTATION, SPEC_HASH_ANNOTATION,
};
use omni_plugin_sdk::secrets::OwnerLabel;
use omni_plugin_sdk::time::parse_rfc3339;
use omni_plugin_sdk::{Host, HostError, LogLevel};

use crate::rotation::{self, Instant};
use crate::target::Target;

/// SHA-256 of no bytes: the digest of an empty key, which holds no kubeconfig.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// The kubeconfig the target holds, as the status reports it when it is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Current {
    pub digest: String,
    pub expiration: Instant,
    pub last_rotation: Option<Instant>,
    pub next: Instant,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Existing {
    Absent,
    /// Exists without this export's owner label: left alone.
    NotOwned,
    /// Owned, but a new kubeconfig is needed, for this reason.
    Stale(&'static str),
    Current(Current),
}

/// What the spec and the clock expect of a current kubeconfig.
pub struct Expected<'a> {
    pub spec_hash: &'a str,
    pub now: Instant,
    pub renew_before_ns: Option<i64>,
}

pub fn inspect<H: Host>(
    host: &H,
    target: &Target,
    owner: &OwnerLabel,
    expected: &Expected<'_>,
) -> Result<Existing, HostError> {
    let Some(info) = host.secret_info(Some(&target.namespace), &target.name)? else {
        return Ok(Existing::Absent);
    };
    if !owner.marks(&info.labels) {
        return Ok(Existing::NotOwned);
    }
    // The annotation checks come first: they need no further host call.
    if !info.keys.contains(&target.key) {
        return Ok(stale(host, target, "the target key holds no kubeconfig"));
    }
    if info.annotation(SPEC_HASH_ANNOTATION) != Some(expected.spec_hash) {
        return Ok(stale(
            host,
            target,
            "the kubeconfig was exported for another spec",
        ));
    }
    let Some(expiration) = info
        .annotation(EXPIRATION_ANNOTATION)
        .and_then(parse_rfc3339)
        .map(rotation::from_seconds)
    else {
        return Ok(stale(
            host,
            target,
            "the expiration time is missing or unreadable",
        ));
    };
    let next = rotation::next_rotation(expiration, expected.renew_before_ns);
    if rotation::due(expected.now, next) {
        return Ok(stale(host, target, "rotation is due"));
    }
    let last_rotation = match info.annotation(LAST_ROTATION_ANNOTATION) {
        None => None,
        Some(text) => match parse_rfc3339(text) {
            Some(s) => Some(rotation::from_seconds(s)),
            None => return Ok(stale(host, target, "the last rotation time is unreadable")),
        },
    };
    let digest = match host.secret_digest(&target.key_ref())? {
        None => return Ok(stale(host, target, "the target key holds no kubeconfig")),
        Some(d) if d == EMPTY_SHA256 => return Ok(stale(host, target, "the target key is empty")),
        Some(d) => d,
    };
    if info.annotation(HASH_ANNOTATION) != Some(digest.as_str()) {
        return Ok(stale(
            host,
            target,
            "the kubeconfig was changed after it was written",
        ));
    }
    if !usable(host, target) {
        return Ok(Existing::Stale(
            "the workload cluster no longer accepts the kubeconfig",
        ));
    }
    Ok(Existing::Current(Current {
        digest,
        expiration,
        last_rotation,
        next,
    }))
}

fn stale<H: Host>(host: &H, target: &Target, why: &'static str) -> Existing {
    host.log(
        LogLevel::Debug,
        "exported kubeconfig is not current; rotating",
        &[("secret", &target.display()), ("reason", why)],
    );
    Existing::Stale(why)
}

/// Probes the workload cluster with the stored kubeconfig (handles a cluster recreated under the same name, whose
/// old tokens no longer work). Only an answer that the credentials are refused, or that they cannot be used at
/// all, means rotate: a cluster that is merely unreachable would refuse a new kubeconfig just the same.
fn usable<H: Host>(host: &H, target: &Target) -> bool {
    match host.workload_probe(&target.key_ref()) {
        Ok(_) => true,
        Err(
            e @ (HostError::Unauthenticated(_)
            | HostError::Forbidden(_)
            | HostError::Invalid(_)
            | HostError::NotFound(_)),
        ) => {
            host.log(
                LogLevel::Info,
                "existing exported kubeconfig is no longer usable; rotating",
                &[("secret", &target.display()), ("error", e.message())],
            );
            false
        }
        Err(e) => {
            host.log(
                LogLevel::Debug,
                "could not probe the workload cluster with the exported kubeconfig; keeping it",
                &[("secret", &target.display()), ("error", e.message())],
            );
            true
        }
    }
}
