//! The service-account key (`OMNI_SERVICE_ACCOUNT_KEY`): standard base64 of `{"name":…,"pgp_key":…}` with an
//! unencrypted ASCII-armored OpenPGP private key.

use base64::Engine as _;
use pgp::composed::{Deserializable, SignedPublicKey, SignedSecretKey};
use pgp::types::KeyDetails;

/// The value decodes, but is not a service-account key. The message never contains key material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed to decode service account key from options: {0}")]
pub struct KeyError(String);

/// A parsed service-account key. `Debug` never shows key material.
pub struct ServiceAccountKey {
    /// The identity put into the signature header (the key JSON's `name`).
    pub name: String,
    /// Lowercase hex of the v4 fingerprint: the server looks the public key up by it.
    pub fingerprint: String,
    pub(crate) key: SignedSecretKey,
}

impl std::fmt::Debug for ServiceAccountKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountKey")
            .field("name", &self.name)
            .field("fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

#[derive(serde::Deserialize)]
struct KeyJson {
    name: String,
    pgp_key: String,
}

/// Standard base64 as Go's `base64.StdEncoding` reads it: line breaks are skipped (a key wrapped by `base64`
/// at 76 columns works), and an error names the offset only, as Go's does, never the offending byte.
pub fn decode_base64(value: &str) -> Result<Vec<u8>, String> {
    let joined: String = value.chars().filter(|c| *c != '\n' && *c != '\r').collect();
    base64::engine::general_purpose::STANDARD
        .decode(joined.as_bytes())
        .map_err(|e| match e {
            base64::DecodeError::InvalidByte(offset, _)
            | base64::DecodeError::InvalidLastSymbol(offset, _) => {
                format!("illegal base64 data at input byte {offset}")
            }
            base64::DecodeError::InvalidLength(length) => {
                format!("illegal base64 data: length {length}")
            }
            base64::DecodeError::InvalidPadding => "illegal base64 data: bad padding".to_string(),
        })
}

impl ServiceAccountKey {
    /// Parses the base64 value of `OMNI_SERVICE_ACCOUNT_KEY`.
    pub fn parse(base64_value: &str) -> Result<Self, KeyError> {
        let json =
            decode_base64(base64_value.trim()).map_err(|e| KeyError(format!("not base64: {e}")))?;
        // serde's messages can quote the input; only the position is reported.
        let parsed: KeyJson = serde_json::from_slice(&json).map_err(|e| {
            KeyError(format!(
                "not a JSON object with name and pgp_key (at line {} column {})",
                e.line(),
                e.column()
            ))
        })?;
        let (key, _) = SignedSecretKey::from_string(&parsed.pgp_key)
            .map_err(|_| KeyError("pgp_key is not an ASCII-armored OpenPGP private key".into()))?;
        let fingerprint = format!("{:x}", key.primary_key.fingerprint());
        Ok(ServiceAccountKey {
            name: parsed.name,
            fingerprint,
            key,
        })
    }

    /// The public half, as Omni registers it.
    pub fn public_key(&self) -> SignedPublicKey {
        self.key.to_public_key()
    }

    /// When the key stops being valid, as Unix seconds; `None` when it never expires.
    pub fn expires_at(&self) -> Option<i64> {
        let created = self.key.primary_key.created_at().as_secs() as i64;
        self.key
            .details
            .users
            .iter()
            .flat_map(|user| user.signatures.iter())
            .find_map(|sig| sig.key_expiration_time())
            .map(|lifetime| created + lifetime.as_secs() as i64)
    }
}

/// A throw-away Ed25519 service-account key (`example-sa`), for tests on both sides of the wire.
pub const EXAMPLE_KEY_VALUE: &str = "eyJuYW1lIjoiZXhhbXBsZS1zYSIsInBncF9rZXkiOiItLS0tLUJFR0lOIFBHUCBQUklWQVRFIEtFWSBCTE9DSy0tLS0tXG5cbmxGZ0Vhd0pmWUJZSkt3WUJCQUhhUnc4QkFRZEFxUXIrM2p1ZGw1cjlRa1ZuWFVlVFRhUGlzREpvZDV0WjF1eVZcbk9WdlcxZGNBQVA5T1VHTW45R1BZciswQXJYS0U0U1RwaFRCWGxIbzdQOXloam1wcWtnWk12UkNYdEVObGVHRnRcbmNHeGxMWE5oSUNoaGRYUnZiV0YwYVc5dUtTQThaWGhoYlhCc1pTMXpZVUJ6WlhKMmFXTmxZV05qYjNWdWRDNXZcbmJXNXBMbk5wWkdWeWJ5NWtaWFkraUpZRUV4WUlBRDRXSVFRVXl1OGo2aXdkRzA1ZGpvSEhhQjhZMGdvUGJ3VUNcbmF3SmZZQUliQXdVSkFlRXpnQVVMQ1FnSEFnWVZDZ2tJQ3dJRUZnSURBUUllQVFJWGdBQUtDUkRIYUI4WTBnb1BcbmIxMDVBUDlBcjZjVjBPbnlqVXAxMnJZOFZBb3lZNlNDcHdnWG13c0JEV2EzYmNIWGhnRUFrZzlrOWQvQU9kMVNcbllnNjVRcmlRSGo0b3JwTnBoTW5CRktBaU5hUVVyUW89XG49VlVMd1xuLS0tLS1FTkQgUEdQIFBSSVZBVEUgS0VZIEJMT0NLLS0tLS0ifQ==";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worked_example_key_parses_with_its_fingerprint_and_expiry() {
        let k = ServiceAccountKey::parse(EXAMPLE_KEY_VALUE).expect("parses");
        assert_eq!(k.name, "example-sa");
        assert_eq!(k.fingerprint, "14caef23ea2c1d1b4e5d8e81c7681f18d20a0f6f");
        // Created 2026-11-22T03:20:00Z, valid for 365 days.
        assert_eq!(k.expires_at(), Some(1_795_317_600 + 365 * 24 * 3600));
        let debug = format!("{k:?}");
        assert!(
            !debug.contains("PRIVATE") && !debug.contains("lFgE"),
            "Debug shows no key material: {debug}"
        );
    }

    #[test]
    fn wrapped_base64_is_read_and_errors_name_offsets_not_bytes() {
        let wrapped: String = EXAMPLE_KEY_VALUE
            .as_bytes()
            .chunks(76)
            .map(|c| std::str::from_utf8(c).expect("ascii"))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(
            ServiceAccountKey::parse(&wrapped)
                .expect("wrapped")
                .fingerprint,
            "14caef23ea2c1d1b4e5d8e81c7681f18d20a0f6f"
        );
        assert_eq!(
            decode_base64("abc!").expect_err("bad"),
            "illegal base64 data at input byte 3"
        );
    }

    #[test]
    fn malformed_keys_fail_without_echoing_the_value() {
        let not_json = base64::engine::general_purpose::STANDARD.encode("secret-material");
        let e = ServiceAccountKey::parse(&not_json)
            .expect_err("not json")
            .to_string();
        assert!(
            e.starts_with("failed to decode service account key from options: ")
                && !e.contains("secret-material"),
            "{e}"
        );
        let bad_key = base64::engine::general_purpose::STANDARD.encode(
            r#"{"name":"x","pgp_key":"-----BEGIN PGP PRIVATE KEY BLOCK-----\nsecret-material\n"}"#,
        );
        let e = ServiceAccountKey::parse(&bad_key)
            .expect_err("bad key")
            .to_string();
        assert!(!e.contains("secret-material"), "{e}");
    }
}
