//! Chart verification (Flux's `chart.spec.verify` with provider `cosign`): an OCI chart is used only when its
//! manifest carries a cosign signature by one of the public keys the object's Secret holds, over the digest the
//! version's tag names now. The signatures are cosign's own layout, read and checked by the same
//! [`crate::registry::signature`] code that verifies plugin components.
//!
//! The tag is read, and its digest verified, when each step starts; Helm then pulls the tag. A tag moved in
//! between (by someone who may push to the registry) is pulled unverified for that step; the next look at the
//! release reads the new digest, refuses it unless it is signed, and never treats it as current.

use crate::registry::signature::{self, TrustedKeys};
use crate::registry::{Access, Credentials};

use super::chart_digest;
use super::protocol::ChartAuth;

/// The key (its name in the Secret) that signed OCI chart `reference` at `version`, or why none did.
pub async fn cosign(
    reference: &str,
    version: &str,
    plain_http: bool,
    auth: Option<&ChartAuth>,
    keys: &TrustedKeys,
) -> Result<String, String> {
    let (parsed, digest) = chart_digest::oci_manifest(reference, version, plain_http, auth).await?;
    let access = Access {
        auth: match auth {
            Some(ChartAuth {
                username: Some(username),
                password: Some(password),
                ..
            }) => Credentials::Basic {
                username: username.clone(),
                password: password.clone(),
            },
            _ => Credentials::Anonymous,
        },
        plain_http,
    };
    let found = signature::fetch(&parsed, &digest, &access)
        .await
        .map_err(|e| e.to_string())?;
    keys.verify_stored(&parsed.whole(), &digest, &found)
        .map_err(|e| e.to_string())
}
