//! How the host reaches a registry: the address scheme and the credentials, shared by pulls, pushes and
//! signature fetches. Credentials never appear in a debug print.

use oci_client::client::ClientProtocol;
use oci_client::secrets::RegistryAuth;

/// How to reach a registry.
#[derive(Clone, Default)]
pub struct Access {
    pub auth: Credentials,
    /// Plain HTTP instead of HTTPS, for a registry on a trusted network only (Docker's "insecure registries").
    pub plain_http: bool,
}

/// Registry credentials; their `Debug` never shows them.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum Credentials {
    #[default]
    Anonymous,
    Basic {
        username: String,
        password: String,
    },
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Anonymous => f.write_str("Anonymous"),
            Credentials::Basic { username, .. } => {
                write!(f, "Basic({username:?}, <redacted>)")
            }
        }
    }
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("auth", &self.auth)
            .field("plain_http", &self.plain_http)
            .finish()
    }
}

impl Credentials {
    pub(crate) fn registry_auth(&self) -> RegistryAuth {
        match self {
            Credentials::Anonymous => RegistryAuth::Anonymous,
            Credentials::Basic { username, password } => {
                RegistryAuth::Basic(username.clone(), password.clone())
            }
        }
    }
}

impl Access {
    pub(crate) fn client_protocol(&self) -> ClientProtocol {
        if self.plain_http {
            ClientProtocol::Http
        } else {
            ClientProtocol::Https
        }
    }
}
