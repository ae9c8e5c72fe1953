//! A Plugin's artifact: its spec turned into component bytes that are verified and ready to load. The Secrets a
//! Plugin names (public keys, registry credentials) are read with the operator's own client; nothing of them
//! reaches a plugin, a condition or a log line.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use omni_api::platform::{NamespacedName, PluginSpec, PublicKeySource};

use crate::capabilities::Grants;
use crate::defaults;
use crate::distribution::{
    self, Access, ArtifactCache, ArtifactRef, Credentials, FetchError, PluginMetadata, Trust,
    TrustedKeys, reference::sha256_digest,
};

/// A verified component, shared by every binding of its Plugin.
#[derive(Debug)]
pub struct Artifact {
    pub component: Arc<[u8]>,
    pub digest: String,
    /// The reference pinned to its digest (for `status.resolvedArtifact`).
    pub pinned: String,
    pub signed_by: Option<String>,
    pub metadata: Option<PluginMetadata>,
    /// The grants the component requests: its metadata's, or, without them, the bare capabilities its imports
    /// need (no kinds, no namespaces: a component that wants to read kinds says which). A built-in requests its
    /// built-in grants.
    pub requested: Grants,
    /// The `spec.artifact` it was fetched for (a tag's digest is reused only for the same text).
    pub source: String,
    /// The grants a built-in gets from the operator itself (its ceiling when bound).
    pub built_in: Option<&'static defaults::DefaultPlugin>,
}

/// Why a Plugin's artifact is not ready, as a condition reason and a message (never a secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub reason: &'static str,
    pub message: String,
}

impl Refusal {
    pub fn new(reason: &'static str, message: impl Into<String>) -> Self {
        Refusal {
            reason,
            message: message.into(),
        }
    }
}

impl From<FetchError> for Refusal {
    fn from(e: FetchError) -> Self {
        Refusal::new(e.reason(), e.to_string())
    }
}

/// What changes a Plugin's artifact: everything in its spec but the grants and rollout.
pub fn fingerprint(spec: &PluginSpec) -> String {
    serde_json::to_string(&(
        &spec.artifact,
        &spec.credentials_secret_ref,
        &spec.plain_http,
        &spec.verification,
    ))
    .unwrap_or_default()
}

/// Fetches and verifies what `spec` names. `resolved` is the digest a tag resolved to before (kept in status).
pub async fn resolve(
    client: &kube::Client,
    spec: &PluginSpec,
    resolved: Option<&str>,
    cache: Option<&ArtifactCache>,
) -> Result<Artifact, Refusal> {
    let reference: ArtifactRef = spec
        .artifact
        .parse()
        .map_err(|e| Refusal::new("InvalidArtifact", format!("spec.artifact: {e}")))?;
    if let ArtifactRef::BuiltIn(name) = &reference {
        let built_in = defaults::PLUGINS
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| {
                Refusal::new(
                    "InvalidArtifact",
                    format!(
                        "spec.artifact: builtin:{name} names no built-in plugin; built-ins are {}",
                        defaults::PLUGINS
                            .iter()
                            .map(|p| p.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })?;
        return Ok(Artifact {
            component: Arc::from(built_in.wasm),
            digest: sha256_digest(built_in.wasm),
            pinned: format!("builtin:{name}"),
            // Part of the operator binary: trusted as the operator is.
            signed_by: None,
            metadata: distribution::metadata::read(built_in.wasm).ok().flatten(),
            requested: built_in
                .grants()
                .map_err(|e| Refusal::new("InvalidArtifact", format!("builtin:{name}: {e}")))?,
            source: spec.artifact.clone(),
            built_in: Some(built_in),
        });
    }
    let trust = trust(client, spec).await?;
    let access = access(client, spec, &reference).await?;
    let fetched = distribution::fetch(&reference, resolved, &access, &trust, cache).await?;
    let requested = match fetched
        .metadata
        .as_ref()
        .and_then(|m| m.capabilities.as_ref())
    {
        None => imports_request(&fetched.component)?,
        Some(list) => Grants::parse(list).map_err(|e| {
            Refusal::new(
                "InvalidArtifact",
                format!("the component's metadata requests an invalid grant: {e}"),
            )
        })?,
    };
    Ok(Artifact {
        component: Arc::from(fetched.component),
        digest: fetched.digest,
        pinned: fetched.pinned,
        signed_by: fetched.signed_by,
        metadata: fetched.metadata,
        requested,
        source: spec.artifact.clone(),
        built_in: None,
    })
}

/// What a component without requested grants gets at most: the contract interfaces it imports, without any
/// kind or namespace scope.
fn imports_request(component: &[u8]) -> Result<Grants, Refusal> {
    let interfaces = distribution::metadata::interfaces(component)
        .map_err(|e| Refusal::new("InvalidArtifact", e.to_string()))?;
    let mut grants = Grants::none();
    for import in &interfaces.imports {
        let Some(rest) = import.strip_prefix("omni:operator/") else {
            continue;
        };
        let interface = rest.split('@').next().unwrap_or(rest);
        if let Ok(Some(capability)) = crate::contract::Capability::guarding(interface) {
            grants = grants.with(capability);
        }
    }
    Ok(grants)
}

/// The keys the Plugin trusts, or its explicit opt-out. Neither is a refusal: deny by default.
async fn trust(client: &kube::Client, spec: &PluginSpec) -> Result<Trust, Refusal> {
    let verification = spec.verification.clone().unwrap_or_default();
    if verification.disabled == Some(true) {
        if !verification.public_keys.is_empty() {
            return Err(Refusal::new(
                "InvalidVerification",
                "spec.verification: publicKeys and disabled: true contradict each other; remove one",
            ));
        }
        return Ok(Trust::Disabled);
    }
    if verification.public_keys.is_empty() {
        return Err(Refusal::new(
            "InvalidVerification",
            "spec.verification.publicKeys: name at least one cosign public key the artifact must be signed \
             with, or set spec.verification.disabled: true to run unsigned code",
        ));
    }
    let mut pems = Vec::new();
    for (i, key) in verification.public_keys.iter().enumerate() {
        pems.push((key.name.clone(), public_key(client, i, key).await?));
    }
    TrustedKeys::from_pems(pems.iter().map(|(n, p)| (n.clone(), p.as_slice())))
        .map(Trust::Keys)
        .map_err(|e| Refusal::new("InvalidVerification", format!("spec.verification: {e}")))
}

async fn public_key(
    client: &kube::Client,
    index: usize,
    key: &PublicKeySource,
) -> Result<Vec<u8>, Refusal> {
    let field = format!("spec.verification.publicKeys[{index}]");
    match (&key.pem, &key.secret_key_ref) {
        (Some(pem), None) => Ok(pem.clone().into_bytes()),
        (None, Some(r)) => {
            let data = secret_data(
                client,
                &r.namespace,
                &r.name,
                &format!("{field}.secretKeyRef"),
            )
            .await?;
            data.get(&r.key).cloned().ok_or_else(|| {
                Refusal::new(
                    "InvalidVerification",
                    format!(
                        "{field}.secretKeyRef: Secret {}/{} has no key {:?}",
                        r.namespace, r.name, r.key
                    ),
                )
            })
        }
        _ => Err(Refusal::new(
            "InvalidVerification",
            format!("{field}: set exactly one of pem and secretKeyRef"),
        )),
    }
}

async fn access(
    client: &kube::Client,
    spec: &PluginSpec,
    reference: &ArtifactRef,
) -> Result<Access, Refusal> {
    let auth = match (&spec.credentials_secret_ref, reference) {
        (Some(r), ArtifactRef::Oci(oci)) => credentials(client, r, oci.registry()).await?,
        _ => Credentials::Anonymous,
    };
    Ok(Access {
        auth,
        plain_http: spec.plain_http == Some(true),
    })
}

/// Registry credentials from a dockerconfigjson Secret (the entry for `registry`) or one with `username` and
/// `password`.
async fn credentials(
    client: &kube::Client,
    r: &NamespacedName,
    registry: &str,
) -> Result<Credentials, Refusal> {
    let field = "spec.credentialsSecretRef";
    let data = secret_data(client, &r.namespace, &r.name, field).await?;
    let refuse = |what: &str| {
        Refusal::new(
            "InvalidCredentials",
            format!("{field}: Secret {}/{} {what}", r.namespace, r.name),
        )
    };
    if let Some(config) = data.get(".dockerconfigjson") {
        let config: serde_json::Value = serde_json::from_slice(config)
            .map_err(|_| refuse("has a .dockerconfigjson that is not JSON"))?;
        let entry = config["auths"]
            .as_object()
            .and_then(|auths| {
                auths.iter().find(|(host, _)| {
                    let host = host
                        .trim_start_matches("https://")
                        .trim_start_matches("http://");
                    host.split('/').next() == Some(registry)
                })
            })
            .map(|(_, e)| e.clone())
            .ok_or_else(|| refuse(&format!("has no credentials for registry {registry}")))?;
        if let (Some(u), Some(p)) = (entry["username"].as_str(), entry["password"].as_str()) {
            return Ok(Credentials::Basic {
                username: u.into(),
                password: p.into(),
            });
        }
        let decoded = entry["auth"]
            .as_str()
            .and_then(|a| base64::engine::general_purpose::STANDARD.decode(a).ok())
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| refuse(&format!("has an unreadable entry for registry {registry}")))?;
        let (u, p) = decoded
            .split_once(':')
            .ok_or_else(|| refuse(&format!("has an unreadable entry for registry {registry}")))?;
        return Ok(Credentials::Basic {
            username: u.into(),
            password: p.into(),
        });
    }
    let text = |key: &str| {
        data.get(key)
            .and_then(|v| String::from_utf8(v.clone()).ok())
            .ok_or_else(|| refuse("has neither .dockerconfigjson nor username and password"))
    };
    Ok(Credentials::Basic {
        username: text("username")?,
        password: text("password")?,
    })
}

async fn secret_data(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    field: &str,
) -> Result<BTreeMap<String, Vec<u8>>, Refusal> {
    let secret = Api::<Secret>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await
        .map_err(|e| {
            Refusal::new(
                "SecretUnreadable",
                format!("{field}: reading Secret {namespace}/{name}: {e}"),
            )
        })?
        .ok_or_else(|| {
            Refusal::new(
                "SecretNotFound",
                format!("{field}: Secret {namespace}/{name} does not exist"),
            )
        })?;
    Ok(secret
        .data
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_component_without_requests_gets_its_imports_bare_interfaces_only() {
        let export = defaults::PLUGINS
            .iter()
            .find(|p| p.name == "omni-kubeconfig-export")
            .unwrap();
        let requested = imports_request(export.wasm).unwrap();
        // The interfaces it imports, and not one kind or namespace to read.
        assert_eq!(
            requested.describe(),
            ["kube-read", "secrets", "omni", "workload", "clock"]
        );
        assert!(!requested.may_read_kind("omni.texashpc.com", "OmniCluster", true));
    }
}
