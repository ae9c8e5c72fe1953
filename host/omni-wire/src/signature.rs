//! Omni's "siderov1" request signature: a JSON payload naming the method
//! and ten metadata headers, signed with the service account's OpenPGP key as a detached binary signature.
//! Signing is the client's half; verification is the server's, which the Omni simulator uses.

use base64::Engine as _;
use pgp::composed::{Deserializable, DetachedSignature, SignedPublicKey};
use pgp::crypto::hash::HashAlgorithm;
use pgp::types::{KeyDetails as _, Password};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::key::ServiceAccountKey;

pub const TIMESTAMP: &str = "x-sidero-timestamp";
pub const PAYLOAD: &str = "x-sidero-payload";
pub const SIGNATURE: &str = "x-sidero-signature";

/// The metadata keys the payload covers, in the byte-wise order Go's encoding/json writes map keys.
pub const SIGNED_HEADERS: [&str; 10] = [
    "authorization",
    "cluster",
    "context",
    "fieldSelectors",
    "namespace",
    "nodes",
    "runtime",
    "selectors",
    "uid",
    TIMESTAMP,
];

/// The server accepts signatures this far from its clock in either direction.
pub const ALLOWED_SKEW_SECONDS: i64 = 5 * 60;

/// Metadata as gRPC carries it: lowercase keys, possibly repeated.
pub type Metadata = Vec<(String, String)>;

fn values<'a>(md: &'a Metadata, key: &str) -> Option<Vec<&'a str>> {
    // gRPC metadata keys are lowercase; the payload's `fieldSelectors` is looked up as written, so it never
    // matches and is always null, exactly as on the Go side.
    let found: Vec<&str> = md
        .iter()
        .filter(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .collect();
    if found.is_empty() { None } else { Some(found) }
}

/// A JSON string as Go's encoding/json writes it (HTML-safe: `<`, `>`, `&` escaped).
fn go_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The exact bytes that are signed and sent as `x-sidero-payload`.
pub fn payload(method: &str, md: &Metadata) -> String {
    let mut out = String::from("{\"headers\":{");
    for (i, key) in SIGNED_HEADERS.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        go_json_string(key, &mut out);
        out.push(':');
        match values(md, key) {
            None => out.push_str("null"),
            Some(vs) => {
                out.push('[');
                for (j, v) in vs.iter().enumerate() {
                    if j > 0 {
                        out.push(',');
                    }
                    go_json_string(v, &mut out);
                }
                out.push(']');
            }
        }
    }
    out.push_str("},\"method\":");
    go_json_string(method, &mut out);
    out.push('}');
    out
}

/// Why signing failed. Never carries key material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("signing the Omni request failed: {0}")]
pub struct SignError(String);

/// Signs a call: sets `x-sidero-timestamp` (replacing earlier values), drops stale payload/signature headers,
/// and adds `x-sidero-payload` and `x-sidero-signature`.
pub fn sign(
    key: &ServiceAccountKey,
    method: &str,
    md: &mut Metadata,
    unix_seconds: i64,
) -> Result<(), SignError> {
    let body = stamp(method, md, unix_seconds);
    let header = signature_header(key, &body)?;
    md.push((PAYLOAD.into(), body));
    md.push((SIGNATURE.into(), header));
    Ok(())
}

/// Sets the timestamp (dropping stale signature headers) and returns the payload to sign.
fn stamp(method: &str, md: &mut Metadata, unix_seconds: i64) -> String {
    md.retain(|(k, _)| k != TIMESTAMP && k != PAYLOAD && k != SIGNATURE);
    md.push((TIMESTAMP.into(), unix_seconds.to_string()));
    payload(method, md)
}

/// The `x-sidero-signature` value for `body`: an OpenPGP detached signature by `key`.
fn signature_header(key: &ServiceAccountKey, body: &str) -> Result<String, SignError> {
    let sig = DetachedSignature::sign_binary_data(
        rand::thread_rng(),
        &key.key.primary_key,
        &Password::empty(),
        HashAlgorithm::Sha256,
        body.as_bytes(),
    )
    .map_err(|e| SignError(e.to_string()))?;
    let bytes = pgp::ser::Serialize::to_bytes(&sig).map_err(|e| SignError(e.to_string()))?;
    Ok(format!(
        "siderov1 {} {} {}",
        key.name,
        key.fingerprint,
        base64::engine::general_purpose::STANDARD.encode(bytes)
    ))
}

/// How many distinct payloads one second's signatures (or verifications) are kept for. Calls differ in payload
/// only by method and signed headers (a kubeconfig's `context` names its cluster), so a client needs a handful;
/// the bound keeps a burst of distinct ones from growing the map.
const RECENT_CAPACITY: usize = 256;

/// What was signed or verified within one second, by payload. The payload names the second, so nothing kept
/// outlives it: the map empties when the second changes.
#[derive(Default)]
struct Recent<V> {
    second: i64,
    by_payload: HashMap<String, V>,
}

impl<V: Clone> Recent<V> {
    fn get(&mut self, second: i64, payload: &str) -> Option<V> {
        if self.second != second {
            self.second = second;
            self.by_payload.clear();
        }
        self.by_payload.get(payload).cloned()
    }

    fn keep(&mut self, second: i64, payload: String, value: V) {
        if self.second == second && self.by_payload.len() < RECENT_CAPACITY {
            self.by_payload.insert(payload, value);
        }
    }
}

fn locked<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic elsewhere while holding the lock leaves a cache that is at worst incomplete.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A service-account key that signs each distinct payload once per second.
///
/// The signed payload names the method, the signed headers and the second, not the message. So every call of one
/// method with the same headers within one second carries the same payload, and one signature serves them all:
/// a busy client makes dozens of such calls a second, and an OpenPGP signature costs more than the rest of a
/// small call's client side. A signature is no secret (every request carries one), and the server checks the
/// timestamp whoever made it, so reusing one within its second changes nothing the server accepts.
pub struct Signer {
    key: ServiceAccountKey,
    recent: Mutex<Recent<String>>,
    made: AtomicU64,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl Signer {
    pub fn new(key: ServiceAccountKey) -> Self {
        Signer {
            key,
            recent: Mutex::new(Recent::default()),
            made: AtomicU64::new(0),
        }
    }

    /// Signatures made so far, each of them for a payload not signed before within its second.
    pub fn signatures_made(&self) -> u64 {
        self.made.load(Ordering::Relaxed)
    }

    pub fn key(&self) -> &ServiceAccountKey {
        &self.key
    }

    /// As [`sign`], with the signature made at most once per payload.
    pub fn sign(
        &self,
        method: &str,
        md: &mut Metadata,
        unix_seconds: i64,
    ) -> Result<(), SignError> {
        let body = stamp(method, md, unix_seconds);
        let kept = locked(&self.recent).get(unix_seconds, &body);
        let header = match kept {
            Some(header) => header,
            None => {
                let header = signature_header(&self.key, &body)?;
                self.made.fetch_add(1, Ordering::Relaxed);
                locked(&self.recent).keep(unix_seconds, body.clone(), header.clone());
                header
            }
        };
        md.push((PAYLOAD.into(), body));
        md.push((SIGNATURE.into(), header));
        Ok(())
    }
}

/// What the server learned from a valid signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    pub identity: String,
    pub fingerprint: String,
}

/// Why the server refuses a signature. The client only ever sees `Unauthenticated: "invalid signature"`; the
/// detail is for the server's log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("no x-sidero-signature header")]
    Missing,
    #[error("unsupported signature version")]
    Version,
    #[error("malformed signature header: {0}")]
    Malformed(String),
    #[error("bad timestamp: {0}")]
    Timestamp(String),
    #[error("payload does not match the request: {0}")]
    Payload(String),
    #[error("the signature does not verify with the key {0}")]
    BadSignature(String),
}

/// The signature header's fields: identity and fingerprint (to look the key up) and the raw signature.
pub fn parse_header(md: &Metadata) -> Result<(String, String, Vec<u8>), VerifyError> {
    let header = values(md, SIGNATURE)
        .and_then(|v| v.first().map(|s| s.to_string()))
        .ok_or(VerifyError::Missing)?;
    let fields: Vec<&str> = header.split(' ').collect();
    if fields.first() != Some(&"siderov1") {
        return Err(VerifyError::Version);
    }
    if fields.len() < 4 {
        return Err(VerifyError::Malformed("fewer than four fields".into()));
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(fields[3])
        .map_err(|e| VerifyError::Malformed(format!("signature is not base64: {e}")))?;
    Ok((fields[1].to_string(), fields[2].to_string(), raw))
}

/// The server's check: timestamp within ±5 minutes of `now`, payload naming this method and
/// exactly these header values (absent ⇔ null; `[]` is not absent), and an OpenPGP signature over the payload
/// bytes as received, made by `public_key`.
pub fn verify(
    public_key: &SignedPublicKey,
    method: &str,
    md: &Metadata,
    now_unix: i64,
) -> Result<Signed, VerifyError> {
    let claim = check_claim(method, md, now_unix)?;
    check_signature(public_key, &claim)?;
    Ok(claim.signed)
}

/// A request's signature headers, checked against the request but not yet against a key.
struct Claim {
    signed: Signed,
    /// The payload as received.
    body: String,
    /// The OpenPGP signature's bytes.
    raw: Vec<u8>,
}

/// Everything [`verify`] checks but the signature itself.
fn check_claim(method: &str, md: &Metadata, now_unix: i64) -> Result<Claim, VerifyError> {
    let (identity, fingerprint, raw) = parse_header(md)?;
    let ts = values(md, TIMESTAMP)
        .and_then(|v| v.first().map(|s| s.to_string()))
        .ok_or(VerifyError::Timestamp("missing".into()))?;
    let ts: i64 = ts
        .parse()
        .map_err(|_| VerifyError::Timestamp(format!("{ts:?} is not Unix seconds")))?;
    if (ts - now_unix).abs() > ALLOWED_SKEW_SECONDS {
        return Err(VerifyError::Timestamp(format!(
            "{ts} is more than 5 minutes from the server's {now_unix}"
        )));
    }
    let body = values(md, PAYLOAD)
        .and_then(|v| v.first().map(|s| s.to_string()))
        .ok_or(VerifyError::Payload("missing".into()))?;
    let parsed: Value =
        serde_json::from_str(&body).map_err(|e| VerifyError::Payload(format!("not JSON: {e}")))?;
    if parsed["method"].as_str() != Some(method) {
        return Err(VerifyError::Payload(format!(
            "signed for {:?}, called {method:?}",
            parsed["method"]
        )));
    }
    for key in SIGNED_HEADERS {
        let signed: Option<Vec<String>> = match &parsed["headers"][key] {
            Value::Null => None,
            Value::Array(items) => Some(
                items
                    .iter()
                    .map(|v| v.as_str().map(String::from))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| VerifyError::Payload(format!("{key} holds a non-string")))?,
            ),
            _ => return Err(VerifyError::Payload(format!("{key} is not a list"))),
        };
        // The server looks `fieldSelectors` up as written; gRPC keys are lowercase, so it is always absent.
        let actual: Option<Vec<String>> = if key == "fieldSelectors" {
            None
        } else {
            values(md, key).map(|v| v.into_iter().map(String::from).collect())
        };
        if signed != actual {
            return Err(VerifyError::Payload(format!("header {key} differs")));
        }
    }
    Ok(Claim {
        signed: Signed {
            identity,
            fingerprint,
        },
        body,
        raw,
    })
}

/// The OpenPGP check of a claim's signature over its payload.
fn check_signature(public_key: &SignedPublicKey, claim: &Claim) -> Result<(), VerifyError> {
    let sig = DetachedSignature::from_bytes(&claim.raw[..])
        .map_err(|e| VerifyError::Malformed(format!("not an OpenPGP signature: {e}")))?;
    sig.verify(public_key, claim.body.as_bytes())
        .map_err(|_| VerifyError::BadSignature(claim.signed.fingerprint.clone()))
}

/// A server's [`verify`] that checks each distinct signature's cryptography once per second.
///
/// Everything else (the timestamp's skew, the payload against the request's method and headers) is checked on
/// every call, as is the key's standing, which is the caller's. What is kept is that these exact signature bytes
/// over this exact payload verified with the key of this fingerprint; the fingerprint is the key's hash, so
/// that fact cannot change, and a request is refused or accepted exactly as [`verify`] would. A client that
/// reuses its signatures within a second ([`Signer`]) sends the same bytes dozens of times.
#[derive(Default)]
pub struct VerifiedSignatures {
    recent: Mutex<Recent<Vec<u8>>>,
    checked: AtomicU64,
}

impl VerifiedSignatures {
    /// Signatures whose cryptography was checked so far.
    pub fn signatures_checked(&self) -> u64 {
        self.checked.load(Ordering::Relaxed)
    }

    pub fn verify(
        &self,
        public_key: &SignedPublicKey,
        method: &str,
        md: &Metadata,
        now_unix: i64,
    ) -> Result<Signed, VerifyError> {
        let claim = check_claim(method, md, now_unix)?;
        // The payload alone does not say who signed it: the key that checked it is part of what is kept, by its
        // own fingerprint rather than the one the header claims.
        let seen = format!("{:x} {}", public_key.primary_key.fingerprint(), claim.body);
        let verified = locked(&self.recent).get(now_unix, &seen);
        if verified.as_deref() != Some(claim.raw.as_slice()) {
            self.checked.fetch_add(1, Ordering::Relaxed);
            check_signature(public_key, &claim)?;
            locked(&self.recent).keep(now_unix, seen, claim.raw.clone());
        }
        Ok(claim.signed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::EXAMPLE_KEY_VALUE;
    use sha2::Digest as _;

    const PING: &str = r#"{"headers":{"authorization":null,"cluster":null,"context":null,"fieldSelectors":null,"namespace":null,"nodes":null,"runtime":null,"selectors":null,"uid":null,"x-sidero-timestamp":["1795320000"]},"method":"/cosi.resource.State/List"}"#;
    const GNUPG_SIGNATURE: &str = "iHUEABYIAB0WIQQUyu8j6iwdG05djoHHaB8Y0goPbwUCawJowAAKCRDHaB8Y0goPb6MyAPsEqFBrgn4YHJTOc5Qm2MSrwKPNk02JLR//+DejnvGL6wD/eyCpUyNgYvubU+rym7f40MCLN4KV7AEpQbce1d2sqwM=";
    const T: i64 = 1_795_320_000;

    fn key() -> ServiceAccountKey {
        ServiceAccountKey::parse(EXAMPLE_KEY_VALUE).expect("example key")
    }

    #[test]
    fn the_ping_payload_is_byte_for_byte_the_worked_example() {
        let md = vec![(TIMESTAMP.to_string(), T.to_string())];
        let p = payload("/cosi.resource.State/List", &md);
        assert_eq!(p, PING);
        assert_eq!(p.len(), 232);
        assert_eq!(
            hex(&sha2::Sha256::digest(p.as_bytes())),
            "1fea26226db920f05663035adfb1ea561b1ff03376ea738332d2052febfdb799"
        );
    }

    #[test]
    fn the_kubeconfig_payload_carries_the_context_header() {
        let md = vec![
            ("context".to_string(), "my-cluster".to_string()),
            (TIMESTAMP.to_string(), T.to_string()),
        ];
        let p = payload("/management.ManagementService/Kubeconfig", &md);
        assert_eq!(p.len(), 257);
        assert!(p.contains(r#""context":["my-cluster"]"#), "{p}");
    }

    #[test]
    fn the_gnupg_signature_of_the_worked_example_verifies() {
        let md = vec![
            (TIMESTAMP.to_string(), T.to_string()),
            (PAYLOAD.to_string(), PING.to_string()),
            (
                SIGNATURE.to_string(),
                format!(
                    "siderov1 example-sa 14caef23ea2c1d1b4e5d8e81c7681f18d20a0f6f {GNUPG_SIGNATURE}"
                ),
            ),
        ];
        let ok = verify(&key().public_key(), "/cosi.resource.State/List", &md, T)
            .expect("GnuPG's signature verifies");
        assert_eq!(
            ok,
            Signed {
                identity: "example-sa".into(),
                fingerprint: "14caef23ea2c1d1b4e5d8e81c7681f18d20a0f6f".into()
            }
        );
    }

    #[test]
    fn our_signatures_verify_and_carry_the_siderov1_header() {
        let k = key();
        let mut md = vec![("context".to_string(), "my-cluster".to_string())];
        sign(&k, "/management.ManagementService/Kubeconfig", &mut md, T).expect("signs");
        let header = values(&md, SIGNATURE).expect("header")[0].to_string();
        assert!(
            header.starts_with("siderov1 example-sa 14caef23ea2c1d1b4e5d8e81c7681f18d20a0f6f "),
            "{header}"
        );
        verify(
            &k.public_key(),
            "/management.ManagementService/Kubeconfig",
            &md,
            T + 299,
        )
        .expect("within skew");
        assert!(matches!(
            verify(
                &k.public_key(),
                "/management.ManagementService/Kubeconfig",
                &md,
                T + 301
            ),
            Err(VerifyError::Timestamp(_))
        ));
        assert!(
            matches!(
                verify(&k.public_key(), "/cosi.resource.State/List", &md, T),
                Err(VerifyError::Payload(_))
            ),
            "signed for another method"
        );
        // Re-signing replaces the timestamp and the old signature headers.
        sign(
            &k,
            "/management.ManagementService/Kubeconfig",
            &mut md,
            T + 10,
        )
        .expect("re-signs");
        assert_eq!(values(&md, SIGNATURE).expect("one").len(), 1);
        assert_eq!(
            values(&md, TIMESTAMP).expect("one"),
            vec![(T + 10).to_string()]
        );
    }

    #[test]
    fn a_signed_empty_list_does_not_match_an_absent_header() {
        let k = key();
        let mut md = vec![];
        sign(&k, "/cosi.resource.State/Get", &mut md, T).expect("signs");
        let body =
            values(&md, PAYLOAD).expect("payload")[0].replace(r#""nodes":null"#, r#""nodes":[]"#);
        md.retain(|(k, _)| k != PAYLOAD);
        md.push((PAYLOAD.into(), body));
        assert!(matches!(
            verify(&k.public_key(), "/cosi.resource.State/Get", &md, T),
            Err(VerifyError::Payload(_))
        ));
    }

    #[test]
    fn a_tampered_header_or_another_key_fails() {
        let k = key();
        let mut md = vec![("namespace".to_string(), "default".to_string())];
        sign(&k, "/cosi.resource.State/List", &mut md, T).expect("signs");
        let mut tampered = md.clone();
        for (key, v) in tampered.iter_mut() {
            if key == "namespace" {
                *v = "other".into();
            }
        }
        assert!(matches!(
            verify(&k.public_key(), "/cosi.resource.State/List", &tampered, T),
            Err(VerifyError::Payload(_))
        ));
        let other = other_key();
        assert!(matches!(
            verify(&other, "/cosi.resource.State/List", &md, T),
            Err(VerifyError::BadSignature(_))
        ));
        let mut v2 = md.clone();
        for (key, v) in v2.iter_mut() {
            if key == SIGNATURE {
                *v = v.replacen("siderov1", "siderov2", 1);
            }
        }
        assert_eq!(
            verify(&k.public_key(), "/cosi.resource.State/List", &v2, T),
            Err(VerifyError::Version)
        );
        assert_eq!(
            verify(&k.public_key(), "/cosi.resource.State/List", &vec![], T),
            Err(VerifyError::Missing)
        );
    }

    #[test]
    fn a_signer_signs_each_payload_once_a_second() {
        let signer = Signer::new(key());
        let public = signer.key().public_key();
        let get = "/cosi.resource.State/Get";
        let signed = |method: &str, md: Vec<(String, String)>, at: i64| {
            let mut md = md;
            signer.sign(method, &mut md, at).expect("signs");
            verify(&public, method, &md, at).expect("verifies");
            values(&md, SIGNATURE).expect("header")[0].to_string()
        };
        let first = signed(get, vec![], T);
        assert_eq!(
            signed(get, vec![], T),
            first,
            "the same payload in the same second"
        );
        assert_eq!(signer.signatures_made(), 1);
        // Another method, other headers or another second is another payload, signed anew.
        let list = signed("/cosi.resource.State/List", vec![], T);
        let namespaced = signed(get, vec![("namespace".into(), "default".into())], T);
        let later = signed(get, vec![], T + 1);
        assert_eq!(signer.signatures_made(), 4);
        for other in [&list, &namespaced, &later] {
            assert_ne!(other, &first);
        }
        // The second's signatures went with it: back at T, the payload is signed again.
        signed(get, vec![], T);
        assert_eq!(signer.signatures_made(), 5);
    }

    #[test]
    fn a_signer_keeps_a_bounded_number_of_payloads() {
        let signer = Signer::new(key());
        let distinct = RECENT_CAPACITY + 8;
        for round in 0..2 {
            for i in 0..distinct {
                let mut md = vec![("context".to_string(), format!("cluster-{i}"))];
                signer
                    .sign("/management.ManagementService/Kubeconfig", &mut md, T)
                    .expect("signs");
            }
            // The payloads past the bound are signed every time.
            assert_eq!(
                signer.signatures_made() as usize,
                distinct + round * (distinct - RECENT_CAPACITY)
            );
        }
    }

    /// The server's cache must refuse exactly what [`verify`] refuses, however often a signature was seen.
    #[test]
    fn a_verified_signature_is_kept_for_its_bytes_its_payload_and_its_key() {
        let k = key();
        let public = k.public_key();
        let verified = VerifiedSignatures::default();
        let list = "/cosi.resource.State/List";
        let mut md = vec![("namespace".to_string(), "default".to_string())];
        sign(&k, list, &mut md, T).expect("signs");
        for _ in 0..3 {
            verified.verify(&public, list, &md, T).expect("verifies");
        }
        assert_eq!(verified.signatures_checked(), 1);

        // The request is still checked against its payload on every call.
        assert!(matches!(
            verified.verify(&public, "/cosi.resource.State/Get", &md, T),
            Err(VerifyError::Payload(_))
        ));
        let mut tampered = md.clone();
        for (key, v) in tampered.iter_mut() {
            if key == "namespace" {
                *v = "other".into();
            }
        }
        assert!(matches!(
            verified.verify(&public, list, &tampered, T),
            Err(VerifyError::Payload(_))
        ));
        assert!(matches!(
            verified.verify(&public, list, &md, T + ALLOWED_SKEW_SECONDS + 1),
            Err(VerifyError::Timestamp(_))
        ));

        // Other signature bytes over the same payload are checked, and a forgery is refused.
        let mut forged = md.clone();
        for (key, v) in forged.iter_mut() {
            if key == SIGNATURE {
                let mut fields: Vec<String> = v.split(' ').map(String::from).collect();
                let mut raw = base64::engine::general_purpose::STANDARD
                    .decode(&fields[3])
                    .expect("base64");
                let last = raw.len() - 1;
                raw[last] ^= 1;
                fields[3] = base64::engine::general_purpose::STANDARD.encode(raw);
                *v = fields.join(" ");
            }
        }
        assert!(matches!(
            verified.verify(&public, list, &forged, T),
            Err(VerifyError::BadSignature(_) | VerifyError::Malformed(_))
        ));
        // The same bytes checked with another key are checked again, and refused.
        assert!(matches!(
            verified.verify(&other_key(), list, &md, T),
            Err(VerifyError::BadSignature(_))
        ));
        // And the genuine one still verifies from what was kept.
        let checked = verified.signatures_checked();
        verified.verify(&public, list, &md, T).expect("verifies");
        assert_eq!(verified.signatures_checked(), checked);
    }

    fn other_key() -> SignedPublicKey {
        use pgp::composed::{KeyType, SecretKeyParamsBuilder};
        let params = SecretKeyParamsBuilder::default()
            .key_type(KeyType::Ed25519Legacy)
            .can_sign(true)
            .primary_user_id("other <other@serviceaccount.omni.sidero.dev>".into())
            .build()
            .expect("params");
        params
            .generate(rand::thread_rng())
            .expect("generate")
            .to_public_key()
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }
}
