//! The server's certificate authority: serving certificates, client certificates for users, and the TLS
//! configuration that accepts them (as kube-apiserver's `--client-ca-file` does).

use std::sync::Arc;

use anyhow::{Context, Result};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A CA plus the serving certificate it signed for the local addresses.
#[derive(Clone)]
pub struct Pki {
    ca_cert_pem: String,
    ca_key_pem: String,
    server_cert_pem: String,
    server_key_pem: String,
}

impl std::fmt::Debug for Pki {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Keys stay out of debug output.
        f.debug_struct("Pki").finish_non_exhaustive()
    }
}

impl Pki {
    /// A fresh CA (`kube-sim-ca`) and a serving certificate for localhost, 127.0.0.1 and ::1.
    pub fn generate() -> Result<Self> {
        let ca_key = KeyPair::generate().context("generating the CA key")?;
        let mut params = CertificateParams::new(Vec::<String>::new()).context("CA parameters")?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "kube-sim-ca");
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = params.self_signed(&ca_key).context("self-signing the CA")?;
        Self::from_ca(&ca_cert.pem(), &ca_key.serialize_pem())
    }

    /// Reuses a CA (from a state file) so kubeconfigs written before a restart stay valid.
    pub fn from_ca(ca_cert_pem: &str, ca_key_pem: &str) -> Result<Self> {
        let mut pki = Pki {
            ca_cert_pem: ca_cert_pem.to_string(),
            ca_key_pem: ca_key_pem.to_string(),
            server_cert_pem: String::new(),
            server_key_pem: String::new(),
        };
        let (cert, key) =
            pki.issue_server_cert(&["localhost".into(), "127.0.0.1".into(), "::1".into()])?;
        pki.server_cert_pem = cert;
        pki.server_key_pem = key;
        Ok(pki)
    }

    pub fn ca_cert_pem(&self) -> &str {
        &self.ca_cert_pem
    }

    pub fn ca_key_pem(&self) -> &str {
        &self.ca_key_pem
    }

    fn issuer(&self) -> Result<Issuer<'static, KeyPair>> {
        let key = KeyPair::from_pem(&self.ca_key_pem).context("parsing the CA key")?;
        Issuer::from_ca_cert_pem(&self.ca_cert_pem, key).context("parsing the CA certificate")
    }

    /// A serving certificate for the given DNS names and IP addresses (also used by test webhook servers).
    pub fn issue_server_cert(&self, hosts: &[String]) -> Result<(String, String)> {
        let key = KeyPair::generate().context("generating a serving key")?;
        let mut params = CertificateParams::new(Vec::<String>::new())
            .context("serving certificate parameters")?;
        for h in hosts {
            let san = match h.parse::<std::net::IpAddr>() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName(
                    h.clone()
                        .try_into()
                        .with_context(|| format!("invalid DNS name {h:?}"))?,
                ),
            };
            params.subject_alt_names.push(san);
        }
        let mut dn = DistinguishedName::new();
        dn.push(
            DnType::CommonName,
            hosts.first().cloned().unwrap_or_else(|| "kube-sim".into()),
        );
        params.distinguished_name = dn;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let cert = params
            .signed_by(&key, &self.issuer()?)
            .context("signing a serving certificate")?;
        Ok((cert.pem(), key.serialize_pem()))
    }

    /// A client certificate whose CN is the user and whose O entry is the group, as the real server reads them.
    /// The server reads any number of O entries, but rcgen writes at most one per name type, so certificates
    /// issued here carry at most one group; token users have no such limit.
    pub fn issue_client_cert(&self, user: &str, groups: &[String]) -> Result<(String, String)> {
        if groups.len() > 1 {
            anyhow::bail!(
                "a kube-sim client certificate carries at most one group (got {groups:?}); use a token user for more"
            );
        }
        let key = KeyPair::generate().context("generating a client key")?;
        let mut params = CertificateParams::new(Vec::<String>::new())
            .context("client certificate parameters")?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, user);
        for g in groups {
            dn.push(DnType::OrganizationName, g.as_str());
        }
        params.distinguished_name = dn;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params
            .signed_by(&key, &self.issuer()?)
            .context("signing a client certificate")?;
        Ok((cert.pem(), key.serialize_pem()))
    }

    /// TLS for the API server: HTTP/2 and HTTP/1.1 by ALPN, client certificates optional but verified.
    pub fn server_config(&self) -> Result<rustls::ServerConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        for c in pem_certs(&self.ca_cert_pem)? {
            roots
                .add(c)
                .context("adding the CA to the client-certificate roots")?;
        }
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .allow_unauthenticated()
        .build()
        .context("building the client-certificate verifier")?;
        let key = pem_key(&self.server_key_pem)?;
        let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .context("TLS protocol versions")?
            .with_client_cert_verifier(verifier)
            .with_single_cert(pem_certs(&self.server_cert_pem)?, key)
            .context("loading the serving certificate")?;
        cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(cfg)
    }
}

pub fn pem_certs(pem: &str) -> Result<Vec<CertificateDer<'static>>> {
    let mut reader = std::io::BufReader::new(pem.as_bytes());
    rustls_pemfile::certs(&mut reader)
        .collect::<Result<Vec<_>, _>>()
        .context("parsing PEM certificates")
}

pub fn pem_key(pem: &str) -> Result<PrivateKeyDer<'static>> {
    let mut reader = std::io::BufReader::new(pem.as_bytes());
    rustls_pemfile::private_key(&mut reader)
        .context("parsing a PEM private key")?
        .context("no private key in PEM")
}

/// The user a verified client certificate names: CN is the user name, each O a group.
pub fn identity_from_cert(der: &[u8]) -> Option<(String, Vec<String>)> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let cn = subject
        .iter_common_name()
        .next()?
        .as_str()
        .ok()?
        .to_string();
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(String::from))
        .collect();
    Some((cn, groups))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_certificates_carry_user_and_groups_and_verify_against_the_ca() {
        let pki = Pki::generate().expect("pki");
        let (cert, _key) = pki
            .issue_client_cert("alice", &["dev".into()])
            .expect("client cert");
        let der = pem_certs(&cert).expect("pem").remove(0);
        assert_eq!(
            identity_from_cert(&der),
            Some(("alice".into(), vec!["dev".into()]))
        );
        assert!(
            pki.issue_client_cert("bob", &["a".into(), "b".into()])
                .is_err(),
            "more groups than a certificate can carry"
        );
        pki.server_config().expect("server config builds");
        let again = Pki::from_ca(pki.ca_cert_pem(), pki.ca_key_pem()).expect("reload");
        assert_eq!(again.ca_cert_pem(), pki.ca_cert_pem());
    }
}
