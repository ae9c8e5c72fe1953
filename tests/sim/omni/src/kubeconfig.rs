//! Service-account kubeconfigs (spec §7): an RS256 JWT signed with a key generated on first use, inside the
//! YAML client-go's `clientcmd.Write` produces.

use anyhow::{Context, Result};
use base64::Engine as _;
use rsa::pkcs1v15::SigningKey;
use rsa::signature::{SignatureEncoding as _, Signer as _};
use rsa::{RsaPrivateKey, RsaPublicKey};
use sha2::Sha256;

/// Omni's OIDC signing key stand-in.
pub struct JwtKey {
    signing: SigningKey<Sha256>,
    pub public: RsaPublicKey,
    pub kid: String,
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

impl JwtKey {
    /// RSA-2048, as Omni's; generated lazily because it takes a moment in debug builds.
    pub fn generate() -> Result<Self> {
        let private = RsaPrivateKey::new(&mut rand::thread_rng(), 2048).context("generating the RSA key")?;
        let public = RsaPublicKey::from(&private);
        let kid = uuid::Uuid::new_v4().simple().to_string();
        Ok(JwtKey { signing: SigningKey::<Sha256>::new(private), public, kid })
    }

    pub fn sign(&self, claims: &serde_json::Value) -> Result<String> {
        let header = serde_json::json!({"alg": "RS256", "kid": self.kid, "typ": "JWT"});
        let input = format!("{}.{}", b64url(header.to_string().as_bytes()), b64url(claims.to_string().as_bytes()));
        let sig = self.signing.try_sign(input.as_bytes()).context("RS256 signing")?;
        Ok(format!("{input}.{}", b64url(&sig.to_bytes())))
    }
}

/// The kubeconfig shape of §7 (`N = <account>-<cluster>-<user>`).
pub fn render(name: &str, server: &str, token: &str) -> String {
    let q = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"));
    format!(
        "apiVersion: v1\nclusters:\n- cluster:\n    server: {server}\n  name: {n}\ncontexts:\n- context:\n    cluster: {n}\n    namespace: default\n    user: {n}\n  name: {n}\ncurrent-context: {n}\nkind: Config\npreferences: {{}}\nusers:\n- name: {n}\n  user:\n    token: {token}\n",
        server = q(server),
        n = q(name),
        token = token
    )
}
