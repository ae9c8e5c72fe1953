//! Kubeconfigs held in Secrets: turned into client configurations, and rewritten for a context namespace. A
//! kubeconfig is a credential, so nothing here quotes its content: a parse failure is described by its position
//! at most, and kubeconfigs that would make the host run a program or read its own files are refused.

use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};

use crate::contract::{HostError, truncated};

/// How much of a name in the kubeconfig an error quotes (a context, cluster or user name): the longest a DNS
/// subdomain can be. Found by `fuzz_kubeconfigs`, which made a 70 KB error of a 70 KB user name.
const MAX_NAME: usize = 253;

/// A name from the kubeconfig, quoted for an error.
fn quoted(name: &str) -> String {
    format!("{:?}", truncated(name, MAX_NAME))
}

/// How long connecting to a workload cluster may take; each call has its own, shorter deadline on top.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// A client configuration from kubeconfig bytes. `what` names where they came from (`kubeconfig Secret
/// "ns/name" key "kubeconfig"`) and starts every error.
pub async fn client_config(bytes: &[u8], what: &str) -> Result<kube::Config, HostError> {
    let invalid = |why: String| HostError::Invalid(format!("{what} is invalid: {why}"));
    let text = std::str::from_utf8(bytes).map_err(|_| invalid("it is not UTF-8 text".into()))?;
    let kubeconfig = Kubeconfig::from_yaml(text).map_err(|e| invalid(describe(&e)))?;
    refuse_host_access(&kubeconfig).map_err(invalid)?;
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .map_err(|e| invalid(describe(&e)))?;
    config.connect_timeout = Some(CONNECT_TIMEOUT);
    config.read_timeout = Some(READ_TIMEOUT);
    config.write_timeout = Some(READ_TIMEOUT);
    Ok(config)
}

/// What is wrong, without the YAML parser's excerpt of the input (which could be a token).
fn describe(e: &KubeconfigError) -> String {
    match e {
        KubeconfigError::Parse(_) => {
            "it is not a kubeconfig (the YAML does not parse into one)".into()
        }
        KubeconfigError::CurrentContextNotSet => "it sets no current-context".into(),
        KubeconfigError::LoadContext(name) => {
            format!("its current context {} is not defined", quoted(name))
        }
        KubeconfigError::LoadClusterOfContext(name) => {
            format!(
                "the cluster {} of its current context is not defined",
                quoted(name)
            )
        }
        KubeconfigError::MissingClusterUrl => "its cluster has no server URL".into(),
        KubeconfigError::ParseClusterUrl(_) => "its cluster's server URL does not parse".into(),
        KubeconfigError::LoadCertificateAuthority(_) => {
            "its certificate-authority-data does not decode".into()
        }
        KubeconfigError::LoadClientCertificate(_) | KubeconfigError::LoadClientKey(_) => {
            "its client certificate or key does not decode".into()
        }
        KubeconfigError::ParseCertificates(_) => "its certificates are not valid PEM".into(),
        _ => "it cannot be loaded".into(),
    }
}

/// Kubeconfigs come from Secrets that tenants write; the host runs no credential plugins and reads no files
/// for them, which would hand a tenant the host's programs and files.
fn refuse_host_access(k: &Kubeconfig) -> Result<(), String> {
    for named in &k.auth_infos {
        let Some(user) = &named.auth_info else {
            continue;
        };
        let who = format!("user {}", quoted(&named.name));
        if user.exec.is_some() {
            return Err(format!(
                "{who} uses an exec credential plugin, which the operator does not run"
            ));
        }
        if user.auth_provider.is_some() {
            return Err(format!(
                "{who} uses an auth-provider, which the operator does not support"
            ));
        }
        if user.token_file.is_some()
            || user.client_certificate.is_some()
            || user.client_key.is_some()
        {
            return Err(format!(
                "{who} names files on disk; embed the credentials (token, client-certificate-data, client-key-data)"
            ));
        }
    }
    for named in &k.clusters {
        if named
            .cluster
            .as_ref()
            .is_some_and(|c| c.certificate_authority.is_some())
        {
            return Err(format!(
                "cluster {} names a certificate-authority file; embed certificate-authority-data",
                quoted(&named.name)
            ));
        }
    }
    Ok(())
}

/// Sets the namespace of the kubeconfig's current context (an export's `contextNamespace`) and writes the
/// whole kubeconfig out again, as client-go's `clientcmd.Write` does after the Go operator's edit.
pub fn set_context_namespace(bytes: &[u8], namespace: &str) -> Result<Vec<u8>, String> {
    let invalid = |why: &str| format!("generated kubeconfig is invalid: {why}");
    let text = std::str::from_utf8(bytes).map_err(|_| invalid("it is not UTF-8 text"))?;
    let mut doc: yaml_serde::Value =
        yaml_serde::from_str(text).map_err(|_| invalid("the YAML does not parse"))?;
    let current = doc
        .get("current-context")
        .and_then(yaml_serde::Value::as_str)
        .unwrap_or_default()
        .to_string();
    let context = doc
        .get_mut("contexts")
        .and_then(yaml_serde::Value::as_sequence_mut)
        .and_then(|contexts| {
            contexts.iter_mut().find(|c| {
                c.get("name").and_then(yaml_serde::Value::as_str) == Some(current.as_str())
            })
        })
        .and_then(|c| c.get_mut("context"))
        .and_then(yaml_serde::Value::as_mapping_mut)
        .ok_or_else(|| {
            format!(
                "generated kubeconfig current context {} was not found",
                quoted(&current)
            )
        })?;
    context.insert("namespace".into(), namespace.into());
    yaml_serde::to_string(&doc)
        .map(String::into_bytes)
        .map_err(|_| {
            "write kubeconfig with context namespace: the document does not serialise".to_string()
        })
}

/// Whether the bytes load as a kubeconfig at all (the Go operator's `clientcmd.Load` check on what Omni sent).
pub fn check_generated(bytes: &[u8]) -> Result<(), String> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| "generated kubeconfig is invalid: it is not UTF-8 text".to_string())?;
    Kubeconfig::from_yaml(text)
        .map(|_| ())
        .map_err(|e| format!("generated kubeconfig is invalid: {}", describe(&e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OMNI: &str = "apiVersion: v1\nclusters:\n- cluster:\n    server: https://omni.example:8443\n  name: acme-edge-ops\ncontexts:\n- context:\n    cluster: acme-edge-ops\n    namespace: default\n    user: acme-edge-ops\n  name: acme-edge-ops\ncurrent-context: acme-edge-ops\nkind: Config\npreferences: {}\nusers:\n- name: acme-edge-ops\n  user:\n    token: s3cr3t-token\n";

    #[test]
    fn the_current_contexts_namespace_is_rewritten_and_the_rest_kept() {
        let out = set_context_namespace(OMNI.as_bytes(), "apps").expect("rewrites");
        let doc: yaml_serde::Value = yaml_serde::from_slice(&out).expect("YAML");
        assert_eq!(
            doc["contexts"][0]["context"]["namespace"].as_str(),
            Some("apps")
        );
        assert_eq!(
            doc["users"][0]["user"]["token"].as_str(),
            Some("s3cr3t-token")
        );
        assert_eq!(
            doc["clusters"][0]["cluster"]["server"].as_str(),
            Some("https://omni.example:8443")
        );
    }

    #[test]
    fn a_missing_current_context_is_named_and_bad_yaml_is_not_quoted() {
        let other = OMNI.replace("current-context: acme-edge-ops", "current-context: gone");
        assert_eq!(
            set_context_namespace(other.as_bytes(), "apps").unwrap_err(),
            "generated kubeconfig current context \"gone\" was not found"
        );
        let err = set_context_namespace(b"token: s3cr3t-token: [", "apps").unwrap_err();
        assert!(!err.contains("s3cr3t"), "{err}");
        let err = check_generated(b"users: [s3cr3t-token").unwrap_err();
        assert!(
            err.starts_with("generated kubeconfig is invalid") && !err.contains("s3cr3t"),
            "{err}"
        );
        check_generated(OMNI.as_bytes()).expect("Omni's kubeconfig loads");
    }

    #[tokio::test]
    async fn kubeconfigs_that_would_reach_into_the_host_are_refused_without_quoting_them() {
        let exec = OMNI.replace("    token: s3cr3t-token\n", "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/sh\n");
        let err = client_config(exec.as_bytes(), "kubeconfig Secret \"a/b\" key \"k\"")
            .await
            .unwrap_err();
        assert!(
            matches!(&err, HostError::Invalid(m) if m.contains("exec credential plugin")),
            "{err}"
        );
        let file = OMNI.replace(
            "    token: s3cr3t-token\n",
            "    tokenFile: /var/run/secrets/token\n",
        );
        let err = client_config(file.as_bytes(), "kubeconfig")
            .await
            .unwrap_err();
        assert!(
            matches!(&err, HostError::Invalid(m) if m.contains("names files on disk")),
            "{err}"
        );
        let broken = "users: [ {name: x, user: {token: s3cr3t-token";
        let err = client_config(broken.as_bytes(), "kubeconfig")
            .await
            .unwrap_err();
        assert!(!err.to_string().contains("s3cr3t"), "{err}");
        let config = client_config(OMNI.as_bytes(), "kubeconfig")
            .await
            .expect("loads");
        assert_eq!(config.cluster_url.to_string(), "https://omni.example:8443/");
    }
}
