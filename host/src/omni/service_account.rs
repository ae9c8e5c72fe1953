//! The Omni service-account key: the checks the original operator makes on the Secret value
//! (spec/original-operator.md §3.5), and the key itself (spec/omni-protocol.md §2.1).

use base64::Engine as _;
use pgp::composed::{Deserializable, SignedSecretKey};
use pgp::types::KeyDetails;

/// Why a Secret value is not a usable key. Messages name the Secret and key, never the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("secret {namespace}/{name} missing key {key:?}")]
    MissingKey { namespace: String, name: String, key: String },
    #[error("secret {namespace}/{name} key {key:?} is empty")]
    Empty { namespace: String, name: String, key: String },
    #[error("secret {namespace}/{name} key {key:?} contains Omni environment assignments; store only the OMNI_SERVICE_ACCOUNT_KEY value")]
    EnvironmentBlock { namespace: String, name: String, key: String },
    #[error("secret {namespace}/{name} key {key:?} must contain the base64-encoded Omni service account key: {reason}")]
    NotBase64 { namespace: String, name: String, key: String, reason: String },
    /// The value decodes but is not a service-account key (`{"name":…,"pgp_key":…}` with a private key).
    #[error("failed to decode service account key from options: {0}")]
    Malformed(String),
}

/// Where a key came from, for messages.
#[derive(Debug, Clone, Copy)]
pub struct SecretKeyRef<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub key: &'a str,
}

/// The checks of §3.5 steps 2-4 on `data[key]` of the Secret: present, non-empty after trimming, not an
/// `OMNI_ENDPOINT=…` environment block, and standard base64. Returns the trimmed value.
pub fn check_secret_value(at: SecretKeyRef<'_>, value: Option<&[u8]>) -> Result<String, KeyError> {
    let (namespace, name, key) = (at.namespace.to_string(), at.name.to_string(), at.key.to_string());
    let Some(raw) = value else {
        return Err(KeyError::MissingKey { namespace, name, key });
    };
    let text = String::from_utf8_lossy(raw).trim().to_string();
    if text.is_empty() {
        return Err(KeyError::Empty { namespace, name, key });
    }
    let assigns = |line: &str| {
        let line = line.trim();
        let line = line.strip_prefix("export ").map(str::trim_start).unwrap_or(line);
        ["OMNI_ENDPOINT=", "OMNI_SERVICE_ACCOUNT_KEY=", "SIDERO_SERVICE_ACCOUNT_KEY="].iter().any(|p| line.starts_with(p))
    };
    if text.split(['\n', '\r']).any(assigns) {
        return Err(KeyError::EnvironmentBlock { namespace, name, key });
    }
    if let Err(e) = base64::engine::general_purpose::STANDARD.decode(&text) {
        // The decoder's message names a byte offset, never the value itself.
        return Err(KeyError::NotBase64 { namespace, name, key, reason: e.to_string() });
    }
    Ok(text)
}

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
        f.debug_struct("ServiceAccountKey").field("name", &self.name).field("fingerprint", &self.fingerprint).finish_non_exhaustive()
    }
}

#[derive(serde::Deserialize)]
struct KeyJson {
    name: String,
    pgp_key: String,
}

impl ServiceAccountKey {
    /// Parses the base64 value of `OMNI_SERVICE_ACCOUNT_KEY`.
    pub fn parse(base64_value: &str) -> Result<Self, KeyError> {
        let json = base64::engine::general_purpose::STANDARD
            .decode(base64_value.trim())
            .map_err(|e| KeyError::Malformed(format!("not base64: {e}")))?;
        let parsed: KeyJson = serde_json::from_slice(&json)
            .map_err(|e| KeyError::Malformed(format!("not a JSON object with name and pgp_key (at line {} column {})", e.line(), e.column())))?;
        let (key, _) = SignedSecretKey::from_string(&parsed.pgp_key)
            .map_err(|_| KeyError::Malformed("pgp_key is not an ASCII-armored OpenPGP private key".into()))?;
        let fingerprint = format!("{:x}", key.primary_key.fingerprint());
        Ok(ServiceAccountKey { name: parsed.name, fingerprint, key })
    }

    /// The armored public key, as Omni registers it.
    pub fn public_key(&self) -> pgp::composed::SignedPublicKey {
        self.key.to_public_key()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The throw-away key of spec/omni-protocol.md §2.3.
    pub const EXAMPLE_KEY_VALUE: &str = "eyJuYW1lIjoiZXhhbXBsZS1zYSIsInBncF9rZXkiOiItLS0tLUJFR0lOIFBHUCBQUklWQVRFIEtFWSBCTE9DSy0tLS0tXG5cbmxGZ0Vhd0pmWUJZSkt3WUJCQUhhUnc4QkFRZEFxUXIrM2p1ZGw1cjlRa1ZuWFVlVFRhUGlzREpvZDV0WjF1eVZcbk9WdlcxZGNBQVA5T1VHTW45R1BZciswQXJYS0U0U1RwaFRCWGxIbzdQOXloam1wcWtnWk12UkNYdEVObGVHRnRcbmNHeGxMWE5oSUNoaGRYUnZiV0YwYVc5dUtTQThaWGhoYlhCc1pTMXpZVUJ6WlhKMmFXTmxZV05qYjNWdWRDNXZcbmJXNXBMbk5wWkdWeWJ5NWtaWFkraUpZRUV4WUlBRDRXSVFRVXl1OGo2aXdkRzA1ZGpvSEhhQjhZMGdvUGJ3VUNcbmF3SmZZQUliQXdVSkFlRXpnQVVMQ1FnSEFnWVZDZ2tJQ3dJRUZnSURBUUllQVFJWGdBQUtDUkRIYUI4WTBnb1BcbmIxMDVBUDlBcjZjVjBPbnlqVXAxMnJZOFZBb3lZNlNDcHdnWG13c0JEV2EzYmNIWGhnRUFrZzlrOWQvQU9kMVNcbllnNjVRcmlRSGo0b3JwTnBoTW5CRktBaU5hUVVyUW89XG49VlVMd1xuLS0tLS1FTkQgUEdQIFBSSVZBVEUgS0VZIEJMT0NLLS0tLS0ifQ==";

    fn at() -> SecretKeyRef<'static> {
        SecretKeyRef { namespace: "omni-system", name: "omni-service-account", key: "serviceAccountKey" }
    }

    #[test]
    fn the_worked_example_key_parses_with_its_fingerprint() {
        let k = ServiceAccountKey::parse(EXAMPLE_KEY_VALUE).expect("parses");
        assert_eq!(k.name, "example-sa");
        assert_eq!(k.fingerprint, "14caef23ea2c1d1b4e5d8e81c7681f18d20a0f6f");
        let debug = format!("{k:?}");
        assert!(!debug.contains("PRIVATE") && !debug.contains("lFgE"), "Debug shows no key material: {debug}");
    }

    #[test]
    fn secret_values_are_checked_with_the_original_messages() {
        assert_eq!(check_secret_value(at(), None).expect_err("missing").to_string(), "secret omni-system/omni-service-account missing key \"serviceAccountKey\"");
        assert_eq!(check_secret_value(at(), Some(b"  \n")).expect_err("empty").to_string(), "secret omni-system/omni-service-account key \"serviceAccountKey\" is empty");
        let block = format!("OMNI_ENDPOINT=https://omni.example.com\nexport OMNI_SERVICE_ACCOUNT_KEY={EXAMPLE_KEY_VALUE}\n");
        let e = check_secret_value(at(), Some(block.as_bytes())).expect_err("env block").to_string();
        assert_eq!(e, "secret omni-system/omni-service-account key \"serviceAccountKey\" contains Omni environment assignments; store only the OMNI_SERVICE_ACCOUNT_KEY value");
        assert!(!e.contains(EXAMPLE_KEY_VALUE));
        let e = check_secret_value(at(), Some(b"not base64!")).expect_err("not base64").to_string();
        assert!(e.starts_with("secret omni-system/omni-service-account key \"serviceAccountKey\" must contain the base64-encoded Omni service account key: "), "{e}");
        let padded = format!("  {EXAMPLE_KEY_VALUE}\n");
        assert_eq!(check_secret_value(at(), Some(padded.as_bytes())).expect("valid"), EXAMPLE_KEY_VALUE);
    }

    #[test]
    fn malformed_keys_fail_without_echoing_the_value() {
        use base64::Engine as _;
        let not_json = base64::engine::general_purpose::STANDARD.encode("secret-material");
        let e = ServiceAccountKey::parse(&not_json).expect_err("not json").to_string();
        assert!(e.starts_with("failed to decode service account key from options: ") && !e.contains("secret-material"), "{e}");
        let bad_key = base64::engine::general_purpose::STANDARD.encode(r#"{"name":"x","pgp_key":"-----BEGIN PGP PRIVATE KEY BLOCK-----\nsecret-material\n"}"#);
        let e = ServiceAccountKey::parse(&bad_key).expect_err("bad key").to_string();
        assert!(!e.contains("secret-material"), "{e}");
    }
}
