//! The checks the original operator makes on the Secret value holding an Omni service-account key; the key
//! itself is [`omni_wire::ServiceAccountKey`].

/// Why a Secret value is not a usable key. Messages name the Secret and key, never the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("secret {namespace}/{name} missing key {key:?}")]
    MissingKey {
        namespace: String,
        name: String,
        key: String,
    },
    #[error("secret {namespace}/{name} key {key:?} is empty")]
    Empty {
        namespace: String,
        name: String,
        key: String,
    },
    #[error(
        "secret {namespace}/{name} key {key:?} contains Omni environment assignments; store only the OMNI_SERVICE_ACCOUNT_KEY value"
    )]
    EnvironmentBlock {
        namespace: String,
        name: String,
        key: String,
    },
    #[error(
        "secret {namespace}/{name} key {key:?} must contain the base64-encoded Omni service account key: {reason}"
    )]
    NotBase64 {
        namespace: String,
        name: String,
        key: String,
        reason: String,
    },
}

/// Where a key came from, for messages.
#[derive(Debug, Clone, Copy)]
pub struct SecretKeyRef<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub key: &'a str,
}

/// The Go operator's checks on `data[key]` of the Secret: present, non-empty after trimming, not an
/// `OMNI_ENDPOINT=…` environment block, and standard base64. Returns the trimmed value.
pub fn check_secret_value(at: SecretKeyRef<'_>, value: Option<&[u8]>) -> Result<String, KeyError> {
    let (namespace, name, key) = (
        at.namespace.to_string(),
        at.name.to_string(),
        at.key.to_string(),
    );
    let Some(raw) = value else {
        return Err(KeyError::MissingKey {
            namespace,
            name,
            key,
        });
    };
    let text = String::from_utf8_lossy(raw).trim().to_string();
    if text.is_empty() {
        return Err(KeyError::Empty {
            namespace,
            name,
            key,
        });
    }
    let assigns = |line: &str| {
        let line = line.trim();
        let line = line
            .strip_prefix("export ")
            .map(str::trim_start)
            .unwrap_or(line);
        [
            "OMNI_ENDPOINT=",
            "OMNI_SERVICE_ACCOUNT_KEY=",
            "SIDERO_SERVICE_ACCOUNT_KEY=",
        ]
        .iter()
        .any(|p| line.starts_with(p))
    };
    if text.split(['\n', '\r']).any(assigns) {
        return Err(KeyError::EnvironmentBlock {
            namespace,
            name,
            key,
        });
    }
    if let Err(e) = omni_wire::key::decode_base64(&text) {
        return Err(KeyError::NotBase64 {
            namespace,
            name,
            key,
            reason: e,
        });
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    use omni_wire::key::EXAMPLE_KEY_VALUE;

    fn at() -> SecretKeyRef<'static> {
        SecretKeyRef {
            namespace: "omni-system",
            name: "omni-service-account",
            key: "serviceAccountKey",
        }
    }

    #[test]
    fn secret_values_are_checked_with_the_original_messages() {
        assert_eq!(
            check_secret_value(at(), None)
                .expect_err("missing")
                .to_string(),
            "secret omni-system/omni-service-account missing key \"serviceAccountKey\""
        );
        assert_eq!(
            check_secret_value(at(), Some(b"  \n"))
                .expect_err("empty")
                .to_string(),
            "secret omni-system/omni-service-account key \"serviceAccountKey\" is empty"
        );
        let block = format!(
            "OMNI_ENDPOINT=https://omni.example.com\nexport OMNI_SERVICE_ACCOUNT_KEY={EXAMPLE_KEY_VALUE}\n"
        );
        let e = check_secret_value(at(), Some(block.as_bytes()))
            .expect_err("env block")
            .to_string();
        assert_eq!(
            e,
            "secret omni-system/omni-service-account key \"serviceAccountKey\" contains Omni environment assignments; store only the OMNI_SERVICE_ACCOUNT_KEY value"
        );
        assert!(!e.contains(EXAMPLE_KEY_VALUE));
        let e = check_secret_value(at(), Some(b"not base64!"))
            .expect_err("not base64")
            .to_string();
        assert!(e.starts_with("secret omni-system/omni-service-account key \"serviceAccountKey\" must contain the base64-encoded Omni service account key: "), "{e}");
        let padded = format!("  {EXAMPLE_KEY_VALUE}\n");
        assert_eq!(
            check_secret_value(at(), Some(padded.as_bytes())).expect("valid"),
            EXAMPLE_KEY_VALUE
        );
    }
}
