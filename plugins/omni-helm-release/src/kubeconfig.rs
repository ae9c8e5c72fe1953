//! Whether the kubeconfig Secret the object names exists and has the key, looked at before
//! Helm is asked for anything, in reconcile and in deletion alike. Only the Secret's key names are read, never
//! its values; an empty value or a kubeconfig that does not parse is the host's to find (`not-found`,
//! `invalid`), since only the host ever holds the bytes.

use omni_plugin_sdk::{Host, HostError};

use crate::messages;
use crate::object::ReleaseObject;

/// `Ok(Some(message))` when the Secret or the key is missing; errors of the read itself are the host's.
pub fn missing<H: Host>(host: &H, release: &ReleaseObject) -> Result<Option<String>, HostError> {
    let (namespace, name, key) = (
        release.namespace(),
        release.kubeconfig_name(),
        release.kubeconfig_key(),
    );
    Ok(match host.secret_info(None, name)? {
        None => Some(messages::missing_kubeconfig(namespace, name)),
        Some(info) if !info.keys.iter().any(|k| k == key) => {
            Some(messages::kubeconfig_lacks_key(namespace, name, key))
        }
        Some(_) => None,
    })
}
