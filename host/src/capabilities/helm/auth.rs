//! The credentials and TLS material a chart source asks for, read by the host from Secrets the object names
//! (Flux's `secretRef` and `certSecretRef`): `username` and `password`; `ca.crt`, and `tls.crt` with `tls.key`.
//! They go to the Helm worker for the one call that needs them and never to the plugin; errors name the Secret
//! and the key, never a value.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use crate::capabilities::HostError;
use crate::helm::protocol::ChartAuth;
use crate::secrets::quoted;

/// The data of Secret `namespace/name`, as text.
async fn data(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    what: &str,
) -> Result<BTreeMap<String, String>, HostError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let secret = api
        .get_opt(name)
        .await
        .map_err(|e| HostError::from_kube(what, e))?
        .ok_or_else(|| {
            HostError::NotFound(format!(
                "{what}: Secret {} not found",
                quoted(namespace, name)
            ))
        })?;
    secret
        .data
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| {
            String::from_utf8(v.0)
                .map(|text| (k.clone(), text))
                .map_err(|_| {
                    HostError::Invalid(format!(
                        "{what}: key {k:?} of Secret {} is not UTF-8 text",
                        quoted(namespace, name)
                    ))
                })
        })
        .collect()
}

/// The cosign public keys in Secret `name`: every key ending in `.pub` (Flux's layout), by that key's name. A
/// Secret with none is an error naming it.
pub async fn public_keys(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    what: &str,
) -> Result<Vec<(String, String)>, HostError> {
    let keys: Vec<(String, String)> = data(client, namespace, name, what)
        .await?
        .into_iter()
        .filter(|(k, _)| k.ends_with(".pub"))
        .collect();
    if keys.is_empty() {
        return Err(HostError::Invalid(format!(
            "{what}: Secret {} holds no key ending in .pub (a cosign public key)",
            quoted(namespace, name)
        )));
    }
    Ok(keys)
}

/// Basic-auth credentials from `name`: both `username` and `password`.
pub(super) async fn credentials(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    auth: &mut ChartAuth,
    what: &str,
) -> Result<(), HostError> {
    let mut d = data(client, namespace, name, what).await?;
    let missing = |key: &str| {
        HostError::Invalid(format!(
            "{what}: chart credentials Secret {} has no key {key:?}",
            quoted(namespace, name)
        ))
    };
    auth.username = Some(d.remove("username").ok_or_else(|| missing("username"))?);
    auth.password = Some(d.remove("password").ok_or_else(|| missing("password"))?);
    Ok(())
}

/// TLS material from `name`: `ca.crt`, and a client certificate as `tls.crt` with `tls.key`; at least one.
pub(super) async fn tls(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    auth: &mut ChartAuth,
    what: &str,
) -> Result<(), HostError> {
    let mut d = data(client, namespace, name, what).await?;
    auth.ca_pem = d.remove("ca.crt");
    match (d.remove("tls.crt"), d.remove("tls.key")) {
        (Some(cert), Some(key)) => {
            auth.cert_pem = Some(cert);
            auth.key_pem = Some(key);
        }
        (None, None) => {}
        _ => {
            return Err(HostError::Invalid(format!(
                "{what}: chart TLS Secret {} must have both tls.crt and tls.key, or neither",
                quoted(namespace, name)
            )));
        }
    }
    if auth.ca_pem.is_none() && auth.cert_pem.is_none() {
        return Err(HostError::Invalid(format!(
            "{what}: chart TLS Secret {} has neither ca.crt nor tls.crt and tls.key",
            quoted(namespace, name)
        )));
    }
    Ok(())
}
