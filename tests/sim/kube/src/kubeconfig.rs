//! Kubeconfig files for the simulated server, one per user.

use base64::Engine as _;
use serde_json::json;

/// How a kubeconfig user authenticates. `Debug` never prints the secret parts.
#[derive(Clone)]
pub enum Credential {
    Token(String),
    ClientCertificate {
        cert_pem: String,
        key_pem: String,
    },
    /// No credentials: anonymous (or the anonymous mapping of plain-HTTP mode).
    None,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credential::Token(_) => f.write_str("Token(<redacted>)"),
            Credential::ClientCertificate { .. } => f.write_str("ClientCertificate(<redacted>)"),
            Credential::None => f.write_str("None"),
        }
    }
}

pub fn render(
    server: &str,
    ca_pem: Option<&str>,
    user: &str,
    credential: &Credential,
    namespace: &str,
) -> String {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let mut cluster = json!({"server": server});
    if let Some(ca) = ca_pem {
        cluster["certificate-authority-data"] = json!(b64(ca));
    }
    let user_entry = match credential {
        Credential::Token(t) => json!({"token": t}),
        Credential::ClientCertificate { cert_pem, key_pem } => {
            json!({"client-certificate-data": b64(cert_pem), "client-key-data": b64(key_pem)})
        }
        Credential::None => json!({}),
    };
    let doc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kube-sim", "cluster": cluster}],
        "users": [{"name": user, "user": user_entry}],
        "contexts": [{"name": "kube-sim", "context": {"cluster": "kube-sim", "user": user, "namespace": namespace}}],
        "current-context": "kube-sim",
        "preferences": {},
    });
    yaml_serde::to_string(&doc).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_credentials() {
        let t = Credential::Token("s3cr3t".into());
        let c = Credential::ClientCertificate {
            cert_pem: "CERT".into(),
            key_pem: "KEY".into(),
        };
        assert!(!format!("{t:?}{c:?}").contains("s3cr3t"));
        assert!(!format!("{c:?}").contains("KEY"));
    }
}
