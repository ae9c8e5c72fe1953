//! The OmniConnection plugin: checks that the Omni endpoint a connection names is
//! reachable with its service account, reports that in `Reachable`/`Ready`/`Stalled`, and holds the connection's
//! deletion while OmniClusters still refer to it.
//!
//! The host does the Go controller's bookkeeping: it adds the finalizer before the first
//! reconcile (honouring the legacy one), writes `observedGeneration` and transition times, calls [`Plugin::finalize`]
//! while the object is being deleted and removes both finalizers once that returns `Ok(true)`.
//!
//! One deliberate difference from the Go controller: a failed check returned `RequeueAfter: 1m` *and* the
//! error, so controller-runtime silently replaced the minute with its own exponential backoff. Here a failure is
//! a reported state, not an error: the outputs are committed and the requeue backs off by itself, growing with
//! how long the connection has been failing (2 s to 60 s).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use omni_api::conditions::{reasons, types};
use omni_api::{
    ConnectionStatusFields, OmniClusterSpec, OmniConnectionSpec, OmniConnectionStatus, OmniKind,
};
use omni_plugin_sdk::{
    Condition, Gvk, Host, HostError, Info, ListQuery, Plugin, ReconcileError, Related,
    RelatedMapping, Value, Verdict,
};

/// The API's names, defined once in omni-api.
pub use omni_api::{API_VERSION, FINALIZER, GROUP, LEGACY_FINALIZER, VERSION};
/// The kind this plugin reconciles.
pub const KIND: &str = OmniConnectionSpec::KIND;

/// How often a healthy connection is checked again (Go: `RequeueAfter: 5m`).
pub const HEALTHY_RECHECK_MS: u64 = 5 * 60 * 1000;
/// How often a connection blocked by referencing clusters is looked at again, besides the cluster watch.
pub const DELETION_RECHECK_MS: u64 = 60 * 1000;
/// Bounds of the failure backoff.
pub const MIN_BACKOFF_MS: u64 = 2_000;
pub const MAX_BACKOFF_MS: u64 = 60_000;

const FAILURE_PREFIX: &str = "failed to connect to Omni: ";

pub struct OmniConnectionPlugin;

impl Plugin for OmniConnectionPlugin {
    fn describe() -> Info {
        Info {
            name: "omni-connection".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            kinds: vec![Gvk::new(GROUP, VERSION, KIND)],
            // A cluster appearing, switching connection or going away re-triggers the connection it names: that is
            // what releases a connection whose deletion waits for its clusters.
            related: vec![Related {
                kind: Gvk::new(GROUP, VERSION, OmniClusterSpec::KIND),
                mapping: RelatedMapping::NamedBy("spec.connectionRef.name".into()),
            }],
            finalizer: Some(FINALIZER.into()),
            legacy_finalizers: vec![LEGACY_FINALIZER.into()],
            // kube-read lists the clusters during deletion; omni is the reachability check; clock stamps lastCheckTime.
            capabilities: vec!["kube-read".into(), "omni".into(), "clock".into()],
            // The service-account key Secret is read by the host, never through the plugin.
            secret_fields: Vec::new(),
        }
    }

    fn reconcile<H: Host>(host: &H) -> Result<(), ReconcileError> {
        let obj = host.object();
        let name = str_at(&obj, &["metadata", "name"]);
        let endpoint = str_at(&obj, &["spec", "endpoint"]);
        // Taken before the check, as Go did: lastCheckTime is when the check started.
        let now = host.now();
        // The host resolves the endpoint and the service-account Secret of the connection with this name itself,
        // so the plugin needs no `secrets` capability.
        let ping = host.omni_ping(name);

        host.set_status_as(&status(name, endpoint, Some(now.clone())))?;
        match ping {
            Ok(normalised) => {
                let message = format!("connected to {normalised}");
                set_all(host, true, reasons::CONNECTION_READY, &message);
                host.requeue_after(HEALTHY_RECHECK_MS);
            }
            // Every failure, a denied capability included, is a state of the connection to report, not an error
            // of this call: returning Err would drop the conditions (outputs are committed only on Ok).
            Err(e) => {
                let message = format!("{FAILURE_PREFIX}{}", host_error_text(&e));
                set_all(host, false, reasons::CONNECTION_FAILED, &message);
                host.requeue_after(failure_backoff_ms(&obj, &now));
            }
        }
        Ok(())
    }

    fn finalize<H: Host>(host: &H) -> Result<bool, ReconcileError> {
        let obj = host.object();
        let name = str_at(&obj, &["metadata", "name"]);
        let namespace = str_at(&obj, &["metadata", "namespace"]);
        let clusters = host.kube_list(&ListQuery {
            api_version: API_VERSION.into(),
            kind: OmniClusterSpec::KIND.into(),
            namespace: None,
            label_selector: None,
            field_selector: None,
        })?;

        let mut users: Vec<&str> = clusters
            .iter()
            // The list is of this namespace already; the check only guards against a host that answers more
            // (ListQuery does not document what `namespace: None` means), since references are namespace-local.
            .filter(|c| {
                let ns = str_at(c, &["metadata", "namespace"]);
                ns.is_empty() || namespace.is_empty() || ns == namespace
            })
            .filter(|c| str_at(c, &["spec", "connectionRef", "name"]) == name)
            .map(|c| str_at(c, &["metadata", "name"]))
            .collect();
        if users.is_empty() {
            // No Omni call during deletion: the connection owns nothing in Omni.
            return Ok(true);
        }
        users.sort_unstable();
        users.dedup();

        let message = format!(
            "waiting for OmniCluster references to be deleted: {}",
            users.join(", ")
        );
        let endpoint = str_at(&obj, &["spec", "endpoint"]);
        host.set_status_as(&status(name, endpoint, None))?;
        host.set_condition(Condition::new(
            types::READY,
            false,
            reasons::DELETING,
            message.as_str(),
        ));
        host.set_condition(Condition::new(
            types::STALLED,
            true,
            reasons::DELETING,
            message,
        ));
        host.requeue_after(DELETION_RECHECK_MS);
        Ok(false)
    }

    fn validate(object: &Value, old: Option<&Value>) -> Verdict {
        let mut v = Verdict::default();
        let spec = &object["spec"];
        let secret = &spec["auth"]["serviceAccountSecretRef"];
        if secret["name"]
            .as_str()
            .unwrap_or_default()
            .trim()
            .is_empty()
        {
            v.required(
                "spec.auth.serviceAccountSecretRef.name",
                "service account Secret name is required",
            );
        }
        if secret["key"].as_str().unwrap_or_default().trim().is_empty() {
            v.required(
                "spec.auth.serviceAccountSecretRef.key",
                "service account Secret key is required",
            );
        }

        // Ratcheting: an endpoint the Go operator's CRD pattern accepted and that this update does not change is
        // not refused, or the object could not even have its finalizer removed (an update) after an upgrade.
        let endpoint = &spec["endpoint"];
        let unchanged = old.is_some_and(|old| old["spec"]["endpoint"] == *endpoint);
        if !unchanged && let Err(what) = check_endpoint(endpoint.as_str().unwrap_or_default()) {
            v.invalid(
                "spec.endpoint",
                endpoint.clone(),
                &format!(
                    "endpoint must be an http://, https:// or grpc:// URL with a host: {what}"
                ),
            );
        }

        if spec["insecureSkipTLSVerify"].as_bool() == Some(true) {
            v.warn("insecureSkipTLSVerify disables Omni endpoint TLS certificate verification");
        }
        v
    }
}

/// What every path reports: the connection's own name and endpoint, and when it was last checked.
fn status(name: &str, endpoint: &str, last_check_time: Option<String>) -> OmniConnectionStatus {
    OmniConnectionStatus {
        connection: ConnectionStatusFields {
            connection_ref: Some(name.to_string()),
            endpoint: Some(endpoint.to_string()),
        },
        last_check_time,
        ..Default::default()
    }
}

/// `Reachable` and `Ready` follow the check; `Stalled` is its opposite. All three share reason and message.
fn set_all<H: Host>(host: &H, ok: bool, reason: &str, message: &str) {
    host.set_condition(Condition::new(types::REACHABLE, ok, reason, message));
    host.set_condition(Condition::new(types::READY, ok, reason, message));
    host.set_condition(Condition::new(types::STALLED, !ok, reason, message));
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    let mut cur = v;
    for p in path {
        cur = &cur[*p];
    }
    cur.as_str().unwrap_or_default()
}

/// The host's own text (the Go operator's messages) without the variant's Display prefix such as `unavailable: `, which
/// would be noise in a user-facing condition.
pub fn host_error_text(e: &HostError) -> String {
    let inner = e.message();
    // An empty text would leave the message ending in ": "; the variant name at least says what kind of failure.
    if inner.trim().is_empty() {
        e.to_string()
    } else {
        inner.to_string()
    }
}

/// How long to wait before checking a failing connection again: as long as it has been failing, measured from
/// the `lastTransitionTime` of a `Reachable=False` condition already in the status, within
/// [`MIN_BACKOFF_MS`, `MAX_BACKOFF_MS`]. A first failure, or times that do not parse, give the minimum.
pub fn failure_backoff_ms(object: &Value, now: &str) -> u64 {
    let failing_s = omni_plugin_sdk::time::condition_age_s(object, types::REACHABLE, "False", now)
        .unwrap_or(0)
        .max(0);
    (failing_s as u64)
        .saturating_mul(1000)
        .clamp(MIN_BACKOFF_MS, MAX_BACKOFF_MS)
}

/// Whether `endpoint` is `scheme://host[:port][/…]` with a scheme the Omni client knows; `Err` says what
/// is wrong. Go had only the CRD pattern `^(https?|grpc)://.+`, which lets `https://:443` or `grpc://omni:abc`
/// through to fail at every check instead of at admission.
pub fn check_endpoint(endpoint: &str) -> Result<(), String> {
    if endpoint.is_empty() {
        return Err("it is empty".into());
    }
    if endpoint.chars().any(char::is_whitespace) {
        return Err("it contains whitespace".into());
    }
    let Some((scheme, rest)) = endpoint.split_once("://") else {
        return Err("the scheme is missing".into());
    };
    if scheme.is_empty() {
        return Err("the scheme is missing".into());
    }
    if !matches!(scheme, "https" | "http" | "grpc") {
        return Err(format!("unsupported scheme {scheme:?}"));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err("user information is not supported".into());
    }
    let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
        // An IPv6 literal: `[::1]:8080`.
        let Some((host, after)) = bracketed.split_once(']') else {
            return Err("the IPv6 host has no closing \"]\"".into());
        };
        match after {
            "" => (host, None),
            _ => match after.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None => return Err(format!("unexpected {after:?} after the IPv6 host")),
            },
        }
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err("the host is empty".into());
    }
    if let Some(port) = port {
        if port.is_empty() {
            return Err("the port is empty".into());
        }
        if !port.bytes().all(|c| c.is_ascii_digit()) {
            return Err(format!("port {port:?} is not a number"));
        }
        match port.parse::<u32>() {
            Ok(p) if (1..=65_535).contains(&p) => {}
            _ => return Err(format!("port {port} is out of range 1-65535")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;

omni_plugin_sdk::export_plugin!(OmniConnectionPlugin);
