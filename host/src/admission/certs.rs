//! The webhook server's own certificates, without cert-manager: a CA and a serving certificate it signs, kept in
//! a Secret so every replica serves the same ones, renewed before they expire, and the CA bundle written into
//! the webhook configurations that name this operator (as Flux's and Kubewarden's controllers do).
//!
//! The Secret (`kubernetes.io/tls`) holds `tls.crt`/`tls.key` (the serving pair), `ca.crt` (every CA a client
//! should trust: the current one, plus the previous one while certificates it signed may still be served) and
//! `ca.key`. A replica that finds the Secret valid uses it; one that finds it missing, expiring or for other
//! hosts writes a new one with a resourceVersion precondition, so two replicas never overwrite each other's
//! fresh certificates (the loser reads the winner's).

use std::sync::{Arc, RwLock};
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use base64::Engine as _;
use futures::StreamExt as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::runtime::{WatchStreamExt as _, watcher};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PublicKeyData as _, SanType,
};
use rustls::crypto::ring::sign::any_supported_type;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// How long a CA is valid; it is replaced when less than [`SERVING_LIFETIME`] is left, so it always outlives the
/// serving certificates it signs.
const CA_LIFETIME: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// How long a serving certificate is valid; it is renewed when a third of that is left.
const SERVING_LIFETIME: Duration = Duration::from_secs(365 * 24 * 3600);
/// Clocks across nodes disagree: certificates start this much before they are made.
const BACKDATE: Duration = Duration::from_secs(3600);

/// A CA and the serving certificate it signed, in PEM.
#[derive(Clone, PartialEq, Eq)]
pub struct Bundle {
    /// Every CA to trust, newest first.
    pub ca_bundle: String,
    pub ca_cert: String,
    pub ca_key: String,
    pub cert: String,
    pub key: String,
}

impl std::fmt::Debug for Bundle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Private keys never reach a log line.
        f.debug_struct("Bundle").finish_non_exhaustive()
    }
}

impl Bundle {
    /// A new CA and a serving certificate for `hosts` (DNS names or IP addresses), valid from `now` (Unix
    /// seconds).
    pub fn generate(hosts: &[String], now: i64) -> Result<Bundle> {
        let ca_key = KeyPair::generate().context("generating the webhook CA key")?;
        let mut params = CertificateParams::new(Vec::<String>::new()).context("CA parameters")?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "omni-operator-webhook-ca");
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        (params.not_before, params.not_after) = validity(now, CA_LIFETIME)?;
        let ca = params
            .self_signed(&ca_key)
            .context("self-signing the webhook CA")?;
        let (ca_cert, ca_key) = (ca.pem(), ca_key.serialize_pem());
        let (cert, key) = serve(&ca_cert, &ca_key, hosts, now)?;
        Ok(Bundle {
            ca_bundle: ca_cert.clone(),
            ca_cert,
            ca_key,
            cert,
            key,
        })
    }

    /// A new serving certificate from the same CA.
    fn renewed(&self, hosts: &[String], now: i64) -> Result<Bundle> {
        let (cert, key) = serve(&self.ca_cert, &self.ca_key, hosts, now)?;
        Ok(Bundle {
            cert,
            key,
            ..self.clone()
        })
    }

    /// A new CA and serving certificate, still trusting the previous CA until what it signed expires.
    fn rotated(&self, hosts: &[String], now: i64) -> Result<Bundle> {
        let mut next = Bundle::generate(hosts, now)?;
        if expiry(&self.cert).is_ok_and(|t| t > now) {
            next.ca_bundle = format!("{}{}", next.ca_cert, self.ca_cert);
        }
        Ok(next)
    }

    /// What must change, if anything, for this bundle to serve `hosts` at `now`.
    fn needs(&self, hosts: &[String], now: i64) -> Need {
        let ca_left = expiry(&self.ca_cert).map_or(0, |t| t - now);
        if ca_left < SERVING_LIFETIME.as_secs() as i64
            || !ca_key_matches(&self.ca_cert, &self.ca_key)
        {
            return Need::NewCa;
        }
        let serving_left = expiry(&self.cert).map_or(0, |t| t - now);
        if serving_left < SERVING_LIFETIME.as_secs() as i64 / 3
            || self.serving_verifies(hosts, now).is_err()
        {
            return Need::NewServing;
        }
        Need::Nothing
    }

    /// Checks the serving pair as its clients will: the key is the one the certificate certifies (else every
    /// handshake fails), and the certificate verifies against the CA bundle for each host at `now` (what the
    /// API server does with the `caBundle` it is given). A Secret edited by hand, restored from an old backup or
    /// half-written by another tool fails here and is replaced, rather than served and refused by every client.
    fn serving_verifies(&self, hosts: &[String], now: i64) -> Result<()> {
        use rustls::client::danger::ServerCertVerifier as _;
        let certified = self.tls()?;
        certified
            .keys_match()
            .map_err(|e| anyhow!("the serving key does not match its certificate: {e}"))?;
        let (leaf, intermediates) = certified
            .cert
            .split_first()
            .ok_or_else(|| anyhow!("no serving certificate"))?;
        let mut roots = rustls::RootCertStore::empty();
        for ca in rustls_pemfile_certs(&self.ca_bundle)? {
            roots
                .add(ca)
                .map_err(|e| anyhow!("a CA in the bundle is not usable: {e}"))?;
        }
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .map_err(|e| anyhow!("the CA bundle: {e}"))?;
        let at = UnixTime::since_unix_epoch(Duration::from_secs(u64::try_from(now).unwrap_or(0)));
        for host in hosts {
            let name = ServerName::try_from(host.clone())
                .map_err(|e| anyhow!("webhook host {host:?}: {e}"))?;
            verifier
                .verify_server_cert(leaf, intermediates, &name, &[], at)
                .map_err(|e| anyhow!("the serving certificate for {host}: {e}"))?;
        }
        Ok(())
    }

    fn from_secret(secret: &Secret) -> Option<Bundle> {
        let data = secret.data.as_ref()?;
        let text = |key: &str| {
            data.get(key)
                .and_then(|b| String::from_utf8(b.0.clone()).ok())
        };
        Some(Bundle {
            ca_bundle: text("ca.crt")?,
            ca_cert: text("ca.crt").and_then(|b| first_pem(&b))?,
            ca_key: text("ca.key")?,
            cert: text("tls.crt")?,
            key: text("tls.key")?,
        })
    }

    fn secret_data(&self) -> std::collections::BTreeMap<String, ByteString> {
        [
            ("ca.crt", &self.ca_bundle),
            ("ca.key", &self.ca_key),
            ("tls.crt", &self.cert),
            ("tls.key", &self.key),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
        .collect()
    }

    /// The serving pair as rustls takes it.
    pub fn tls(&self) -> Result<Arc<CertifiedKey>> {
        let chain = rustls_pemfile_certs(&self.cert)?;
        let key = PrivateKeyDer::from_pem_slice(self.key.as_bytes())
            .map_err(|e| anyhow!("the serving key does not parse: {e}"))?;
        let signer = any_supported_type(&key).map_err(|e| anyhow!("the serving key: {e}"))?;
        Ok(Arc::new(CertifiedKey::new(chain, signer)))
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Need {
    Nothing,
    NewServing,
    NewCa,
}

fn validity(now: i64, lifetime: Duration) -> Result<(time::OffsetDateTime, time::OffsetDateTime)> {
    let from = time::OffsetDateTime::from_unix_timestamp(now - BACKDATE.as_secs() as i64)
        .context("the clock")?;
    let until = time::OffsetDateTime::from_unix_timestamp(now + lifetime.as_secs() as i64)
        .context("the clock")?;
    Ok((from, until))
}

fn serve(ca_cert: &str, ca_key: &str, hosts: &[String], now: i64) -> Result<(String, String)> {
    let issuer = Issuer::from_ca_cert_pem(
        ca_cert,
        KeyPair::from_pem(ca_key).context("the webhook CA key does not parse")?,
    )
    .context("the webhook CA certificate does not parse")?;
    let key = KeyPair::generate().context("generating a serving key")?;
    let mut params =
        CertificateParams::new(Vec::<String>::new()).context("serving certificate parameters")?;
    for h in hosts {
        params
            .subject_alt_names
            .push(match h.parse::<std::net::IpAddr>() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName(
                    h.clone()
                        .try_into()
                        .with_context(|| format!("webhook host {h:?} is not a DNS name"))?,
                ),
            });
    }
    let mut dn = DistinguishedName::new();
    dn.push(
        DnType::CommonName,
        hosts
            .first()
            .cloned()
            .unwrap_or_else(|| "omni-operator-webhook".into()),
    );
    params.distinguished_name = dn;
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    (params.not_before, params.not_after) = validity(now, SERVING_LIFETIME)?;
    let cert = params
        .signed_by(&key, &issuer)
        .context("signing the serving certificate")?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Whether `ca_key` is the private key of the CA certificate: a CA whose key was swapped would sign serving
/// certificates nobody trusting the CA accepts.
fn ca_key_matches(ca_cert: &str, ca_key: &str) -> bool {
    let Ok(key) = KeyPair::from_pem(ca_key) else {
        return false;
    };
    parsed(ca_cert, |c| {
        c.public_key().raw == key.subject_public_key_info().as_slice()
    })
    .unwrap_or(false)
}

fn rustls_pemfile_certs(pem: &str) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow!("a certificate does not parse: {e}"))?;
    if certs.is_empty() {
        return Err(anyhow!("no certificate in the PEM text"));
    }
    Ok(certs)
}

fn first_pem(bundle: &str) -> Option<String> {
    const END: &str = "-----END CERTIFICATE-----";
    let end = bundle.find(END)? + END.len();
    Some(format!("{}\n", bundle.get(..end)?))
}

fn parsed<T>(
    pem: &str,
    read: impl FnOnce(&x509_parser::certificate::X509Certificate<'_>) -> T,
) -> Result<T> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem.as_bytes())
        .map_err(|e| anyhow!("a certificate's PEM does not parse: {e}"))?;
    let cert = pem
        .parse_x509()
        .map_err(|e| anyhow!("a certificate does not parse: {e}"))?;
    Ok(read(&cert))
}

/// When the (first) certificate in `pem` expires, Unix seconds.
fn expiry(pem: &str) -> Result<i64> {
    parsed(pem, |c| c.validity().not_after.timestamp())
}

/// The DNS names and IP addresses the certificate is for (tests read them; serving checks verify the chain).
#[cfg(test)]
fn names(pem: &str) -> Result<Vec<String>> {
    use x509_parser::extensions::GeneralName;
    parsed(pem, |c| {
        let Ok(Some(san)) = c.subject_alternative_name() else {
            return Vec::new();
        };
        san.value
            .general_names
            .iter()
            .filter_map(|n| match n {
                GeneralName::DNSName(d) => Some(d.to_string()),
                GeneralName::IPAddress(b) => match b.len() {
                    4 => <[u8; 4]>::try_from(*b)
                        .ok()
                        .map(|a| std::net::IpAddr::from(a).to_string()),
                    16 => <[u8; 16]>::try_from(*b)
                        .ok()
                        .map(|a| std::net::IpAddr::from(a).to_string()),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    })
}

/// The serving certificate the TLS listener presents; swapped in place when renewed, so connections after a
/// renewal use the new one without a restart.
#[derive(Debug, Default)]
pub struct ServingCert {
    current: RwLock<Option<Arc<CertifiedKey>>>,
}

impl ServingCert {
    pub fn set(&self, key: Arc<CertifiedKey>) {
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = Some(key);
    }

    pub fn ready(&self) -> bool {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }
}

impl ResolvesServerCert for ServingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// Where the certificates live and who trusts them.
#[derive(Debug, Clone)]
pub struct CertSettings {
    pub namespace: String,
    /// The Secret holding the CA and serving pair.
    pub secret: String,
    /// The names the serving certificate is for (`<service>.<namespace>.svc`, …, or `127.0.0.1` in `dev`).
    pub hosts: Vec<String>,
    /// ValidatingWebhookConfigurations whose `caBundle` this operator keeps current.
    pub webhook_configurations: Vec<String>,
}

/// Makes sure the Secret holds certificates good for `settings.hosts`, renewing or rotating them when due, and
/// returns them.
pub async fn ensure(client: &kube::Client, settings: &CertSettings, now: i64) -> Result<Bundle> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &settings.namespace);
    let what = || format!("Secret {}/{}", settings.namespace, settings.secret);
    // Two rounds: a replica that loses a race to write reads what the winner wrote.
    for _ in 0..2 {
        let stored = secrets
            .get_opt(&settings.secret)
            .await
            .with_context(|| format!("reading {}", what()))?;
        let current = stored.as_ref().and_then(Bundle::from_secret);
        let next = match &current {
            Some(b) => match b.needs(&settings.hosts, now) {
                Need::Nothing => return Ok(b.clone()),
                Need::NewServing => b.renewed(&settings.hosts, now)?,
                Need::NewCa => b.rotated(&settings.hosts, now)?,
            },
            None => Bundle::generate(&settings.hosts, now)?,
        };
        let written = match stored {
            Some(mut secret) => {
                // The resourceVersion read is the precondition: another replica's newer write wins.
                secret.data = Some(next.secret_data());
                // A Secret's type is immutable: one made beforehand as Opaque keeps its type (rewriting it
                // would be refused at every check, and the webhooks would never get a certificate).
                secret
                    .type_
                    .get_or_insert_with(|| "kubernetes.io/tls".into());
                secrets
                    .replace(&settings.secret, &PostParams::default(), &secret)
                    .await
            }
            None => {
                let secret = Secret {
                    metadata: ObjectMeta {
                        name: Some(settings.secret.clone()),
                        namespace: Some(settings.namespace.clone()),
                        labels: Some(
                            [(
                                "app.kubernetes.io/managed-by".to_string(),
                                "omni-operator".to_string(),
                            )]
                            .into(),
                        ),
                        ..ObjectMeta::default()
                    },
                    type_: Some("kubernetes.io/tls".into()),
                    data: Some(next.secret_data()),
                    ..Secret::default()
                };
                secrets.create(&PostParams::default(), &secret).await
            }
        };
        match written {
            Ok(_) => {
                tracing::info!(secret = %what(), "webhook serving certificate written");
                return Ok(next);
            }
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(e) => return Err(e).with_context(|| format!("writing {}", what())),
        }
    }
    Err(anyhow!(
        "{} kept changing while this replica wrote it; trying again later",
        what()
    ))
}

/// Writes `ca_bundle` into every webhook of the configurations named, where it differs.
pub async fn inject_ca(client: &kube::Client, names: &[String], ca_bundle: &str) -> Result<()> {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let want = ByteString(ca_bundle.as_bytes().to_vec());
    for name in names {
        for _ in 0..3 {
            let Some(mut config) = api
                .get_opt(name)
                .await
                .with_context(|| format!("reading ValidatingWebhookConfiguration {name}"))?
            else {
                tracing::warn!(configuration = %name, "webhook configuration not found; its caBundle is not managed");
                break;
            };
            if trusts_only(&config, ca_bundle) {
                break;
            }
            for hook in config.webhooks.iter_mut().flatten() {
                hook.client_config.ca_bundle = Some(want.clone());
            }
            match api.replace(name, &PostParams::default(), &config).await {
                Ok(_) => {
                    tracing::info!(configuration = %name, "webhook caBundle updated");
                    break;
                }
                Err(kube::Error::Api(e)) if e.code == 409 => continue,
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!("updating the caBundle of ValidatingWebhookConfiguration {name}")
                    });
                }
            }
        }
    }
    Ok(())
}

/// The CA bundle as a webhook configuration carries it (base64 of the PEM).
pub fn ca_bundle_base64(bundle: &Bundle) -> String {
    base64::engine::general_purpose::STANDARD.encode(bundle.ca_bundle.as_bytes())
}

/// Keeps the certificates current until `shutdown`: checks every `period`, swaps a renewed pair into `serving`
/// and the CA bundle into the webhook configurations. Failures are logged and retried at the next check.
///
/// The webhook configurations are also watched (each by name, which is all the chart's RBAC allows): a GitOps
/// tool or a `helm upgrade` that applies one without its `caBundle` would otherwise leave the API server unable
/// to call the webhooks (and, failing closed, refusing every Omni object) until the next check.
pub async fn maintain(
    client: kube::Client,
    settings: CertSettings,
    serving: Arc<ServingCert>,
    period: Duration,
    shutdown: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    let configurations: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let mut edits =
        futures::stream::select_all(settings.webhook_configurations.iter().map(|name| {
            watcher::watcher(
                configurations.clone(),
                watcher::Config::default().fields(&format!("metadata.name={name}")),
            )
            .default_backoff()
            .applied_objects()
            .boxed()
        }));
    let mut last: Option<Bundle> = None;
    loop {
        let now = jiff::Timestamp::now().as_second();
        match ensure(&client, &settings, now).await {
            Ok(bundle) => {
                // The CA first, then the certificate it signed: the other way round, a rotated CA would leave
                // a window in which the API server cannot verify what this replica presents.
                if let Err(e) =
                    inject_ca(&client, &settings.webhook_configurations, &bundle.ca_bundle).await
                {
                    tracing::warn!(error = %format!("{e:#}"), "could not update the webhook caBundle");
                }
                if last.as_ref() != Some(&bundle) {
                    match bundle.tls() {
                        Ok(key) => serving.set(key),
                        Err(e) => {
                            tracing::error!(error = %format!("{e:#}"), "the webhook serving certificate does not load")
                        }
                    }
                }
                last = Some(bundle);
            }
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "could not ensure the webhook certificates")
            }
        }
        // Sooner while nothing is served yet.
        let wait = if serving.ready() {
            period
        } else {
            Duration::from_secs(2)
        };
        let next_check = tokio::time::sleep(wait);
        tokio::pin!(next_check);
        loop {
            tokio::select! {
                _ = &mut next_check => break,
                _ = &mut shutdown => return,
                Some(edited) = edits.next() => {
                    let (Ok(config), Some(bundle)) = (edited, &last) else { continue };
                    if trusts_only(&config, &bundle.ca_bundle) {
                        continue;
                    }
                    let name = config.metadata.name.unwrap_or_default();
                    tracing::info!(configuration = %name, "webhook configuration changed without the CA; writing it again");
                    if let Err(e) = inject_ca(&client, &[name], &bundle.ca_bundle).await {
                        tracing::warn!(error = %format!("{e:#}"), "could not update the webhook caBundle");
                    }
                }
            }
        }
    }
}

/// Whether every webhook of `config` carries exactly `ca_bundle`.
fn trusts_only(config: &ValidatingWebhookConfiguration, ca_bundle: &str) -> bool {
    config.webhooks.iter().flatten().all(|hook| {
        hook.client_config
            .ca_bundle
            .as_ref()
            .map(|b| b.0.as_slice())
            == Some(ca_bundle.as_bytes())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_795_000_000;
    const DAY: i64 = 24 * 3600;

    fn hosts() -> Vec<String> {
        vec!["webhook.ops.svc".into(), "127.0.0.1".into()]
    }

    #[test]
    fn a_new_bundle_serves_its_hosts_and_is_kept_until_a_third_of_its_life_is_left() {
        let b = Bundle::generate(&hosts(), NOW).expect("generates");
        assert_eq!(b.needs(&hosts(), NOW), Need::Nothing);
        let names = names(&b.cert).expect("parses");
        assert!(names.contains(&"webhook.ops.svc".to_string()), "{names:?}");
        assert!(names.contains(&"127.0.0.1".to_string()), "{names:?}");
        assert!(b.tls().is_ok());
        // Not for another host.
        assert_eq!(
            b.needs(&["other.ops.svc".to_string()], NOW),
            Need::NewServing
        );
        // Renewed when under a third of a year is left; the CA stays.
        let later = NOW + 250 * DAY;
        assert_eq!(b.needs(&hosts(), later), Need::NewServing);
        let renewed = b.renewed(&hosts(), later).expect("renews");
        assert_eq!(renewed.ca_cert, b.ca_cert);
        assert_ne!(renewed.cert, b.cert);
        assert_eq!(renewed.needs(&hosts(), later), Need::Nothing);
        // Round trip through the Secret's data.
        let secret = Secret {
            data: Some(renewed.secret_data()),
            ..Secret::default()
        };
        assert_eq!(Bundle::from_secret(&secret), Some(renewed));
    }

    #[test]
    fn a_ca_near_its_end_is_rotated_and_the_old_one_stays_trusted_while_its_certificates_live() {
        let b = Bundle::generate(&hosts(), NOW).expect("generates");
        let late = NOW + 9 * 365 * DAY + 200 * DAY;
        assert_eq!(b.needs(&hosts(), late), Need::NewCa);
        // Its serving certificate expired long ago: the old CA is not kept.
        let rotated = b.rotated(&hosts(), late).expect("rotates");
        assert_ne!(rotated.ca_cert, b.ca_cert);
        assert_eq!(rotated.ca_bundle, rotated.ca_cert);
        // Rotated while the old serving certificate still lives: both CAs are in the bundle, newest first.
        let renewed = b.renewed(&hosts(), late - 10 * DAY).expect("renews");
        let rotated = renewed.rotated(&hosts(), late).expect("rotates");
        assert!(rotated.ca_bundle.starts_with(&rotated.ca_cert));
        assert!(rotated.ca_bundle.ends_with(&b.ca_cert));
        let secret = Secret {
            data: Some(rotated.secret_data()),
            ..Secret::default()
        };
        assert_eq!(
            Bundle::from_secret(&secret).map(|b| b.ca_cert),
            Some(rotated.ca_cert.clone())
        );
    }

    #[test]
    fn a_damaged_secret_is_replaced() {
        let b = Bundle::generate(&hosts(), NOW).expect("generates");
        let broken = Bundle {
            key: "not a key".into(),
            ..b.clone()
        };
        assert_eq!(broken.needs(&hosts(), NOW), Need::NewServing);
        let broken = Bundle {
            ca_key: "not a key".into(),
            ..b
        };
        assert_eq!(broken.needs(&hosts(), NOW), Need::NewCa);
        assert!(!format!("{broken:?}").contains("PRIVATE"));
    }

    /// Each part parses on its own, but the parts do not belong together: every TLS client would refuse what
    /// such a Secret serves, so it is replaced rather than trusted.
    #[test]
    fn parts_that_do_not_belong_together_are_replaced() {
        let b = Bundle::generate(&hosts(), NOW).expect("generates");
        let other = Bundle::generate(&hosts(), NOW).expect("generates");
        assert!(b.serving_verifies(&hosts(), NOW).is_ok());
        // The serving key of another pair: the handshake would fail.
        let swapped_key = Bundle {
            key: other.key.clone(),
            ..b.clone()
        };
        assert_eq!(swapped_key.needs(&hosts(), NOW), Need::NewServing);
        // A serving certificate signed by another CA than the bundle's: the API server would not trust it.
        let foreign = Bundle {
            cert: other.cert.clone(),
            key: other.key.clone(),
            ..b.clone()
        };
        assert_eq!(foreign.needs(&hosts(), NOW), Need::NewServing);
        let repaired = foreign.renewed(&hosts(), NOW).expect("renews");
        assert_eq!(repaired.needs(&hosts(), NOW), Need::Nothing);
        // A CA key that is not the CA certificate's: what it signs would not verify, so the CA is replaced.
        let wrong_ca_key = Bundle {
            ca_key: other.ca_key.clone(),
            ..b.clone()
        };
        assert_eq!(wrong_ca_key.needs(&hosts(), NOW), Need::NewCa);
        // Not yet valid (a clock far behind) is not a reason to replace anything: the certificate starts an
        // hour before it was made.
        assert_eq!(b.needs(&hosts(), NOW - 1800), Need::Nothing);
    }
}
