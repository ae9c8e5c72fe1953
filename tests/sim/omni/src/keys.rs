//! Service accounts: the registry of public keys the server verifies signatures with, and
//! minting of Ed25519 keys in the `OMNI_SERVICE_ACCOUNT_KEY` format.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use base64::Engine as _;
use omni_wire::ServiceAccountKey;
use pgp::composed::{ArmorOptions, KeyType, SecretKeyParamsBuilder, SignedPublicKey};
use pgp::packet::{PacketTrait as _, Subpacket, SubpacketData};
use pgp::types::{Password, Timestamp};

/// Omni roles, in increasing order of rights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    None,
    InfraProvider,
    Reader,
    Operator,
    Admin,
}

impl Role {
    /// The name Omni prints in `insufficient role: "<name>"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::None => "None",
            Role::InfraProvider => "InfraProvider",
            Role::Reader => "Reader",
            Role::Operator => "Operator",
            Role::Admin => "Admin",
        }
    }
}

/// How [`crate::OmniSim::mint_key_with`] mints and registers a key.
#[derive(Debug, Clone)]
pub struct KeyOptions {
    pub name: String,
    pub role: Role,
    /// Key lifetime (written into the key and the registry). Default 365 days.
    pub lifetime: Duration,
    /// Register the public key with the server (default true); false gives an "unknown fingerprint" key.
    pub registered: bool,
    /// The registry's `confirmed` flag (default true).
    pub confirmed: bool,
    /// Register with an expiration in the past (default false).
    pub expired: bool,
}

impl KeyOptions {
    pub fn new(name: &str, role: Role) -> Self {
        KeyOptions {
            name: name.to_string(),
            role,
            lifetime: Duration::from_secs(365 * 24 * 3600),
            registered: true,
            confirmed: true,
            expired: false,
        }
    }
    pub fn lifetime(mut self, d: Duration) -> Self {
        self.lifetime = d;
        self
    }
    pub fn registered(mut self, yes: bool) -> Self {
        self.registered = yes;
        self
    }
    pub fn confirmed(mut self, yes: bool) -> Self {
        self.confirmed = yes;
        self
    }
    pub fn expired(mut self, yes: bool) -> Self {
        self.expired = yes;
        self
    }
}

impl Default for KeyOptions {
    fn default() -> Self {
        KeyOptions::new("omni-operator", Role::Operator)
    }
}

/// One registered public key (Omni's `PublicKeys.omni.sidero.dev/<fingerprint>`).
#[derive(Clone)]
pub struct RegisteredKey {
    /// The service account's bare name (what `revoke`/`set_role` address).
    pub account: String,
    pub fingerprint: String,
    /// `<name>@serviceaccount.omni.sidero.dev`
    pub identity: String,
    pub role: Role,
    /// Unix seconds; the key is refused once the server clock passes it.
    pub expiration: i64,
    pub confirmed: bool,
    pub(crate) public_key: Arc<SignedPublicKey>,
}

impl std::fmt::Debug for RegisteredKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredKey")
            .field("account", &self.account)
            .field("fingerprint", &self.fingerprint)
            .field("role", &self.role)
            .field("expiration", &self.expiration)
            .field("confirmed", &self.confirmed)
            .finish_non_exhaustive()
    }
}

/// Service-account identity as Omni derives it from the account name.
pub fn identity_of(name: &str) -> String {
    format!("{name}@serviceaccount.omni.sidero.dev")
}

/// fingerprint → key.
#[derive(Debug, Default)]
pub struct Registry {
    keys: Mutex<HashMap<String, RegisteredKey>>,
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, RegisteredKey>> {
        self.keys.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn insert(&self, key: RegisteredKey) {
        self.lock().insert(key.fingerprint.clone(), key);
    }

    pub fn get(&self, fingerprint: &str) -> Option<RegisteredKey> {
        self.lock().get(fingerprint).cloned()
    }

    pub fn set_role(&self, account: &str, role: Role) {
        for k in self.lock().values_mut().filter(|k| k.account == account) {
            k.role = role;
        }
    }

    pub fn revoke(&self, account: &str) {
        self.lock().retain(|_, k| k.account != account);
    }

    pub fn all(&self) -> Vec<RegisteredKey> {
        let mut v: Vec<_> = self.lock().values().cloned().collect();
        v.sort_by(|a, b| a.fingerprint.cmp(&b.fingerprint));
        v
    }
}

/// Generates an Ed25519 (legacy EdDSA, v4) key with a key-expiration time, as go-api-signature's
/// `pgp.GenerateKey` does, and returns the base64 `OMNI_SERVICE_ACCOUNT_KEY` value.
pub fn mint(name: &str, lifetime: Duration) -> Result<String> {
    // Created a minute in the past so signatures made right away are never older than the key.
    let created = Timestamp::from_secs((Timestamp::now().as_secs()).saturating_sub(60));
    let uid = format!("{name} (omni-sim) <{}>", identity_of(name));
    let params = SecretKeyParamsBuilder::default()
        .key_type(KeyType::Ed25519Legacy)
        .can_sign(true)
        .can_certify(true)
        .created_at(created)
        .primary_user_id(uid)
        .build()
        .context("building the key parameters")?;
    let mut key = params
        .generate(rand::thread_rng())
        .context("generating the Ed25519 key")?;
    // pgp's builder writes no key expiration; re-sign the user ID with one added to the self-signature.
    let lifetime_secs =
        u32::try_from(lifetime.as_secs()).context("key lifetime does not fit 32 bits")?;
    let user = key
        .details
        .users
        .first()
        .cloned()
        .context("generated key has no user ID")?;
    let old = user
        .signatures
        .first()
        .context("generated user ID is not self-signed")?;
    let mut config = old
        .config()
        .cloned()
        .context("self-signature has no config")?;
    config.hashed_subpackets.push(
        Subpacket::regular(SubpacketData::KeyExpirationTime(
            pgp::types::Duration::from_secs(lifetime_secs),
        ))
        .context("expiration subpacket")?,
    );
    let sig = config
        .sign_certification(
            &key.primary_key,
            key.primary_key.public_key(),
            &Password::empty(),
            user.id.tag(),
            &user.id,
        )
        .context("re-signing the user ID with an expiration")?;
    key.details.users[0].signatures = vec![sig];
    let armored = key
        .to_armored_string(ArmorOptions::default())
        .context("armoring the key")?;
    let json = serde_json::json!({"name": name, "pgp_key": armored}).to_string();
    Ok(base64::engine::general_purpose::STANDARD.encode(json))
}

/// Parses a key value and builds its registry entry.
pub fn entry_for(
    base64_key: &str,
    role: Role,
    expiration: Option<i64>,
    confirmed: bool,
) -> Result<RegisteredKey> {
    let parsed = ServiceAccountKey::parse(base64_key).context("parsing the service-account key")?;
    let expiration = expiration
        .or_else(|| parsed.expires_at())
        .unwrap_or(i64::MAX);
    Ok(RegisteredKey {
        account: parsed.name.clone(),
        fingerprint: parsed.fingerprint.clone(),
        identity: identity_of(&parsed.name),
        role,
        expiration,
        confirmed,
        public_key: Arc::new(parsed.public_key()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_keys_parse_with_a_one_year_expiry_and_sign_verifiably() {
        let value = mint("robot", Duration::from_secs(365 * 24 * 3600)).expect("mints");
        let key = ServiceAccountKey::parse(&value).expect("parses");
        assert_eq!(key.name, "robot");
        assert_eq!(key.fingerprint.len(), 40);
        let exp = key.expires_at().expect("has an expiration");
        let now = Timestamp::now().as_secs() as i64;
        assert!(
            (exp - (now - 60 + 365 * 24 * 3600)).abs() <= 5,
            "{exp} vs {now}"
        );
        let mut md = vec![];
        omni_wire::signature::sign(&key, "/cosi.resource.State/List", &mut md, now).expect("signs");
        omni_wire::signature::verify(&key.public_key(), "/cosi.resource.State/List", &md, now)
            .expect("verifies");
    }
}
