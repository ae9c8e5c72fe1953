//! Omni's API as the host reaches it. Plugins address Omni by OmniConnection name; the host holds the
//! service-account key and signs every request, so key material never crosses into a plugin.

pub mod service_account;
