use serde::{Deserialize, Serialize};

use crate::common::{CommonStatusFields, ConnectionStatusFields, OmniAuthSpec};
#[cfg(feature = "schema")]
use crate::patterns;

/// How to reach one Omni instance and authenticate to it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OmniConnectionSpec {
    /// endpoint is the Omni API URL: https://, http:// or grpc://.
    #[cfg_attr(feature = "schema", schemars(pattern(patterns::ENDPOINT)))]
    pub endpoint: String,
    /// auth configures the Omni service account the operator signs requests with.
    pub auth: OmniAuthSpec,
    /// insecureSkipTLSVerify disables verification of the Omni endpoint's TLS certificate.
    #[serde(
        rename = "insecureSkipTLSVerify",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub insecure_skip_tls_verify: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OmniConnectionStatus {
    #[serde(flatten)]
    pub common: CommonStatusFields,
    /// connectionRef is this connection's own name; endpoint is its spec.endpoint.
    #[serde(flatten)]
    pub connection: ConnectionStatusFields,
    /// lastCheckTime is when the controller last checked that Omni is reachable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub last_check_time: Option<String>,
}

super::omni_kind!(
    OmniConnection,
    OmniConnectionSpec,
    OmniConnectionStatus,
    kind = "OmniConnection",
    plural = "omniconnections",
    singular = "omniconnection"
);
