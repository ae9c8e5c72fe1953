//! Cosign-compatible key-based signatures, through sigstore's own crate, so a plugin signed with `cosign sign
//! --key` (or `omni-operator plugin sign`) verifies here, and one signed here verifies with `cosign verify --key`.
//!
//! * OCI artifacts: cosign's "simple signing" layout: a manifest tagged `sha256-<hex>.sig` in the same repository
//!   whose layers are JSON payloads naming the signed manifest digest, each with its signature in the
//!   `dev.cosignproject.cosign/signature` annotation.
//! * Files (`file://`, air-gapped): `cosign sign-blob --key` output, a base64 signature of the file's bytes, kept
//!   in `<file>.sig`.
//!
//! A signature counts only when a trusted key verifies it **and** its payload names the digest being verified: a
//! valid signature of another artifact proves nothing about this one.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};
use sigstore::cosign::constraint::PrivateKeySigner;
use sigstore::cosign::payload::SimpleSigning;
use sigstore::cosign::{Constraint, CosignCapabilities, SignatureLayer};
use sigstore::crypto::signing_key::SigStoreKeyPair;
use sigstore::crypto::{CosignVerificationKey, Signature, SigningScheme};
use sigstore::registry::{Auth, ClientConfig, OciReference};
use zeroize::Zeroizing;

use super::access::Access;

/// Public keys a Plugin trusts, each under a name its status and errors use (never the key itself).
#[derive(Default)]
pub struct TrustedKeys {
    keys: Vec<(String, CosignVerificationKey)>,
}

impl std::fmt::Debug for TrustedKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.keys.iter().map(|(n, _)| n))
            .finish()
    }
}

/// Why an artifact is not trusted, or a key or signature could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SignatureError {
    #[error(
        "public key {name:?} is not a PEM public key cosign uses (ECDSA P-256/384/521, Ed25519 or RSA): {reason}"
    )]
    InvalidPublicKey { name: String, reason: String },
    #[error(
        "the private key cannot be read (wrong password, or not a cosign or PKCS#8 PEM key): {0}"
    )]
    InvalidPrivateKey(String),
    #[error("{artifact} has no signature")]
    Unsigned { artifact: String },
    #[error(
        "{artifact} has {count} signature(s), none made by a trusted key ({keys}) over digest {digest}"
    )]
    Untrusted {
        artifact: String,
        digest: String,
        count: usize,
        keys: String,
    },
    #[error("fetching the signatures of {artifact}: {reason}")]
    Fetch { artifact: String, reason: String },
    #[error("signing {artifact}: {reason}")]
    Sign { artifact: String, reason: String },
}

/// One signature as cosign stores it: the signed payload and the base64 signature over it. Kept in the artifact
/// cache so a pinned plugin verifies again without the registry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredSignature {
    /// base64 of the payload bytes exactly as signed.
    pub payload: String,
    pub signature: String,
}

impl TrustedKeys {
    /// Keys from `(name, PEM)` pairs; a key that does not parse is an error naming it.
    pub fn from_pems<'a>(
        pems: impl IntoIterator<Item = (String, &'a [u8])>,
    ) -> Result<Self, SignatureError> {
        let keys = pems
            .into_iter()
            .map(|(name, pem)| {
                CosignVerificationKey::try_from_pem(pem)
                    .map(|key| (name.clone(), key))
                    .map_err(|e| SignatureError::InvalidPublicKey {
                        name,
                        reason: e.to_string(),
                    })
            })
            .collect::<Result<_, _>>()?;
        Ok(TrustedKeys { keys })
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    fn names(&self) -> String {
        self.keys
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The name of the first key that verifies `signature` (base64) over `message`.
    fn verifier_of(&self, message: &[u8], signature: &str) -> Option<&str> {
        self.keys
            .iter()
            .find(|(_, key)| {
                key.verify_signature(Signature::Base64Encoded(signature.as_bytes()), message)
                    .is_ok()
            })
            .map(|(name, _)| name.as_str())
    }

    /// The key that signed `digest` among cosign simple-signing `signatures`; each payload must name `digest`.
    pub fn verify_stored(
        &self,
        artifact: &str,
        digest: &str,
        signatures: &[StoredSignature],
    ) -> Result<String, SignatureError> {
        if signatures.is_empty() {
            return Err(SignatureError::Unsigned {
                artifact: artifact.to_string(),
            });
        }
        for stored in signatures {
            let Ok(payload) = BASE64.decode(&stored.payload) else {
                continue;
            };
            let Ok(simple) = serde_json::from_slice::<SimpleSigning>(&payload) else {
                continue;
            };
            if simple.critical.image.docker_manifest_digest != digest {
                continue;
            }
            if let Some(name) = self.verifier_of(&payload, &stored.signature) {
                return Ok(name.to_string());
            }
        }
        Err(SignatureError::Untrusted {
            artifact: artifact.to_string(),
            digest: digest.to_string(),
            count: signatures.len(),
            keys: self.names(),
        })
    }

    /// The key that signed a file's bytes (`cosign sign-blob` output in `signature`).
    pub fn verify_blob(
        &self,
        artifact: &str,
        bytes: &[u8],
        signature: &str,
    ) -> Result<String, SignatureError> {
        self.verifier_of(bytes, signature.trim())
            .map(str::to_string)
            .ok_or_else(|| SignatureError::Untrusted {
                artifact: artifact.to_string(),
                digest: super::sha256_digest(bytes),
                count: 1,
                keys: self.names(),
            })
    }
}

fn cosign_client(access: &Access) -> Result<sigstore::cosign::Client, String> {
    sigstore::cosign::ClientBuilder::default()
        .with_oci_client_config(ClientConfig {
            protocol: if access.plain_http {
                sigstore::registry::ClientProtocol::Http
            } else {
                sigstore::registry::ClientProtocol::Https
            },
            ..ClientConfig::default()
        })
        .build()
        .map_err(|e| e.to_string())
}

fn auth_of(access: &Access) -> Auth {
    Auth::from(&access.auth.registry_auth())
}

fn pinned(reference: &oci_client::Reference, digest: &str) -> OciReference {
    OciReference::with_digest(
        reference.registry().to_string(),
        reference.repository().to_string(),
        digest.to_string(),
    )
}

/// The cosign signatures stored for `digest` in `reference`'s repository (none is an empty list): the manifest
/// tagged `sha256-<hex>.sig` and its layers, each a simple-signing payload with its signature in the
/// `dev.cosignproject.cosign/signature` annotation. Every part is read with a ceiling ([`super::session`]) and
/// each payload is checked against its layer digest.
pub async fn fetch(
    reference: &oci_client::Reference,
    digest: &str,
    access: &Access,
) -> Result<Vec<StoredSignature>, SignatureError> {
    let artifact = format!("{}@{digest}", reference.whole());
    let fail = |reason: String| SignatureError::Fetch {
        artifact: artifact.clone(),
        reason,
    };
    let tag = format!("{}.sig", digest.replacen(':', "-", 1));
    let mut session =
        super::session::Session::new(reference, access).map_err(|e| fail(e.to_string()))?;
    let manifest = match session
        .manifest(&tag, &SIGNATURE_MANIFEST_TYPES, MAX_SIGNATURE_MANIFEST)
        .await
    {
        Ok(m) => m,
        Err(e) if e.is_not_found() => return Ok(Vec::new()),
        Err(e) => return Err(fail(e.to_string())),
    };
    #[derive(Deserialize)]
    struct Layer {
        digest: String,
        #[serde(default)]
        annotations: std::collections::BTreeMap<String, String>,
    }
    #[derive(Deserialize)]
    struct Manifest {
        #[serde(default)]
        layers: Vec<Layer>,
    }
    let manifest: Manifest = serde_json::from_slice(&manifest)
        .map_err(|e| fail(format!("the signature manifest is not a manifest: {e}")))?;
    if manifest.layers.len() > MAX_SIGNATURES {
        return Err(fail(format!(
            "the signature manifest has {} layers; at most {MAX_SIGNATURES} are read",
            manifest.layers.len()
        )));
    }
    let mut found = Vec::new();
    for layer in manifest.layers {
        let Some(signature) = layer.annotations.get(SIGNATURE_ANNOTATION).cloned() else {
            continue;
        };
        let payload = session
            .blob(&layer.digest, MAX_SIGNATURE_PAYLOAD)
            .await
            .map_err(|e| fail(e.to_string()))?;
        if super::sha256_digest(&payload) != layer.digest {
            return Err(fail(format!(
                "a signature payload does not match its digest {}",
                layer.digest
            )));
        }
        found.push(StoredSignature {
            payload: BASE64.encode(&payload),
            signature,
        });
    }
    Ok(found)
}

/// The media types a cosign signature manifest is stored with (OCI, or Docker's by older cosign).
const SIGNATURE_MANIFEST_TYPES: [&str; 2] = [
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
];
/// Cosign keeps one layer per signature; an artifact signed more often than this is refused, not read.
const MAX_SIGNATURES: usize = 64;
const MAX_SIGNATURE_MANIFEST: usize = 256 << 10;
/// A simple-signing payload is a few hundred bytes.
const MAX_SIGNATURE_PAYLOAD: usize = 64 << 10;
/// The annotation cosign puts a layer's signature in.
const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";

/// Reads a private key: cosign's encrypted format with `password`, or an unencrypted PKCS#8 PEM without one.
fn key_pair(key_pem: &[u8], password: &[u8]) -> Result<SigStoreKeyPair, SignatureError> {
    if password.is_empty() {
        SigStoreKeyPair::from_pem(key_pem)
    } else {
        SigStoreKeyPair::from_encrypted_pem(key_pem, password)
    }
    .map_err(|e| SignatureError::InvalidPrivateKey(e.to_string()))
}

/// The signing scheme of a key pair (cosign's defaults per key type).
fn scheme_of(keys: &SigStoreKeyPair) -> SigningScheme {
    match keys {
        SigStoreKeyPair::ED25519(_) => SigningScheme::ED25519,
        SigStoreKeyPair::RSA(_) => SigningScheme::RSA_PKCS1_SHA256(2048),
        SigStoreKeyPair::ECDSA(_) => SigningScheme::ECDSA_P256_SHA256_ASN1,
    }
}

/// Signs `digest` in `reference`'s repository as `cosign sign --key` does, replacing the signatures stored there
/// for that digest.
pub async fn sign(
    reference: &oci_client::Reference,
    digest: &str,
    key_pem: &[u8],
    password: &[u8],
    access: &Access,
) -> Result<(), SignatureError> {
    let artifact = format!("{}@{digest}", reference.whole());
    let fail = |reason: String| SignatureError::Sign {
        artifact: artifact.clone(),
        reason,
    };
    let keys = key_pair(key_pem, password)?;
    let signer = keys
        .to_sigstore_signer(&scheme_of(&keys))
        .map_err(|e| SignatureError::InvalidPrivateKey(e.to_string()))?;
    let mut client = cosign_client(access).map_err(&fail)?;
    let auth = auth_of(access);
    let image = pinned(reference, digest);
    let (signature_image, source_digest) = client
        .triangulate(&image, &auth)
        .await
        .map_err(|e| fail(e.to_string()))?;
    let mut layer =
        SignatureLayer::new_unsigned(&image, &source_digest).map_err(|e| fail(e.to_string()))?;
    PrivateKeySigner::new_with_signer(signer)
        .add_constraint(&mut layer)
        .map_err(|e| fail(e.to_string()))?;
    client
        .push_signature(None, &auth, &signature_image, vec![layer])
        .await
        .map_err(|e| fail(e.to_string()))?;
    Ok(())
}

/// Signs a file's bytes as `cosign sign-blob --key` does: the base64 signature.
pub fn sign_blob(bytes: &[u8], key_pem: &[u8], password: &[u8]) -> Result<String, SignatureError> {
    let keys = key_pair(key_pem, password)?;
    let signer = keys
        .to_sigstore_signer(&scheme_of(&keys))
        .map_err(|e| SignatureError::InvalidPrivateKey(e.to_string()))?;
    let signature = signer.sign(bytes).map_err(|e| SignatureError::Sign {
        artifact: "a file".into(),
        reason: e.to_string(),
    })?;
    Ok(BASE64.encode(signature))
}

/// A new ECDSA P-256 key pair, as `cosign generate-key-pair` makes: the private key encrypted with `password`
/// (cosign's format) and the public key, both PEM.
pub fn generate_key_pair(password: &[u8]) -> Result<(Zeroizing<String>, String), SignatureError> {
    let signer = SigningScheme::ECDSA_P256_SHA256_ASN1
        .create_signer()
        .and_then(|s| s.to_sigstore_keypair())
        .map_err(|e| SignatureError::InvalidPrivateKey(e.to_string()))?;
    let private = signer
        .private_key_to_encrypted_pem(password)
        .map_err(|e| SignatureError::InvalidPrivateKey(e.to_string()))?;
    let public = signer
        .public_key_to_pem()
        .map_err(|e| SignatureError::InvalidPrivateKey(e.to_string()))?;
    Ok((private, public))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn simple_signing(digest: &str) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "critical": {
                "identity": {"docker-reference": "127.0.0.1:5000/plugins/x"},
                "image": {"docker-manifest-digest": digest},
                "type": "cosign container image signature"
            },
            "optional": null
        }))
        .unwrap()
    }

    fn signed(digest: &str, private: &str, password: &[u8]) -> StoredSignature {
        let payload = simple_signing(digest);
        StoredSignature {
            signature: sign_blob(&payload, private.as_bytes(), password).unwrap(),
            payload: BASE64.encode(payload),
        }
    }

    #[test]
    fn a_signature_counts_only_by_a_trusted_key_and_for_the_digest_it_names() {
        let (private, public) = generate_key_pair(b"pw").unwrap();
        let (other_private, other_public) = generate_key_pair(b"pw2").unwrap();
        let keys = TrustedKeys::from_pems([("release".to_string(), public.as_bytes())]).unwrap();
        let digest = format!("sha256:{}", "1".repeat(64));
        let other_digest = format!("sha256:{}", "2".repeat(64));

        let good = signed(&digest, &private, b"pw");
        assert_eq!(
            keys.verify_stored("x", &digest, std::slice::from_ref(&good))
                .unwrap(),
            "release"
        );
        // A valid signature of another artifact, replayed: refused.
        let replayed = signed(&other_digest, &private, b"pw");
        assert!(matches!(
            keys.verify_stored("x", &digest, &[replayed]),
            Err(SignatureError::Untrusted { .. })
        ));
        // The right digest, signed by a key nobody trusts: refused, and the message names the trusted keys.
        let stranger = signed(&digest, &other_private, b"pw2");
        let err = keys.verify_stored("x", &digest, &[stranger]).unwrap_err();
        assert!(err.to_string().contains("release"), "{err}");
        // A payload altered after signing: refused.
        let mut tampered = good.clone();
        let mut payload = BASE64.decode(&tampered.payload).unwrap();
        payload.push(b' ');
        tampered.payload = BASE64.encode(payload);
        assert!(keys.verify_stored("x", &digest, &[tampered]).is_err());
        // No signature at all is its own error.
        assert!(matches!(
            keys.verify_stored("x", &digest, &[]),
            Err(SignatureError::Unsigned { .. })
        ));
        let both = TrustedKeys::from_pems([
            ("a".to_string(), other_public.as_bytes()),
            ("b".to_string(), public.as_bytes()),
        ])
        .unwrap();
        assert_eq!(both.verify_stored("x", &digest, &[good]).unwrap(), "b");
    }

    /// A signature `cosign sign --key` made (a test vector of sigstore's own Rust client): what cosign writes
    /// verifies here, byte for byte, with the payload exactly as cosign serialises it.
    #[test]
    fn a_signature_made_by_cosign_itself_verifies() {
        let public = "-----BEGIN PUBLIC KEY-----\n\
            MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAENptdY/l3nB0yqkXLBWkZWQwo6+cu\n\
            OSWS1X9vPavpiQOoTTGC0xX57OojUadxF1cdQmrsiReWg2Wn4FneJfa8xw==\n\
            -----END PUBLIC KEY-----\n";
        let digest = "sha256:f3cfc9d0dbf931d3db4685ec659b7ac68e2a578219da4aae65427886e649b06b";
        let payload = format!(
            r#"{{"critical":{{"identity":{{"docker-reference":"registry-testing.svc.lan/busybox"}},"image":{{"docker-manifest-digest":"{digest}"}},"type":"cosign container image signature"}},"optional":null}}"#
        );
        let stored = StoredSignature {
            payload: BASE64.encode(payload.as_bytes()),
            signature: "MEUCIQD6q/COgzOyW0YH1Dk+CCYSt4uAhm3FDHUwvPI55zwnlwIgE0ZK58ZOWpZw8YVmBapJhBqCfdPekIknimuO0xH8Jh8="
                .into(),
        };
        let keys = TrustedKeys::from_pems([("cosign".to_string(), public.as_bytes())]).unwrap();
        assert_eq!(
            keys.verify_stored("busybox", digest, std::slice::from_ref(&stored))
                .unwrap(),
            "cosign"
        );
        let other = format!("sha256:{}", "0".repeat(64));
        assert!(keys.verify_stored("busybox", &other, &[stored]).is_err());
    }

    #[test]
    fn blob_signatures_verify_the_exact_bytes() {
        let (private, public) = generate_key_pair(b"secret").unwrap();
        let keys = TrustedKeys::from_pems([("k".to_string(), public.as_bytes())]).unwrap();
        let sig = sign_blob(b"component bytes", private.as_bytes(), b"secret").unwrap();
        assert_eq!(
            keys.verify_blob("f", b"component bytes", &sig).unwrap(),
            "k"
        );
        assert!(keys.verify_blob("f", b"component bytez", &sig).is_err());
    }

    #[test]
    fn bad_keys_are_named_and_a_wrong_password_is_refused() {
        let err =
            TrustedKeys::from_pems([("ops".to_string(), b"not a key".as_slice())]).unwrap_err();
        assert!(err.to_string().contains("\"ops\""), "{err}");
        let (private, _) = generate_key_pair(b"right").unwrap();
        assert!(matches!(
            sign_blob(b"x", private.as_bytes(), b"wrong"),
            Err(SignatureError::InvalidPrivateKey(_))
        ));
    }
}
