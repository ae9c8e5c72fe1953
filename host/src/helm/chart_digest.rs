//! The content digest of a chart version, as its source publishes it: the `digest` a chart repository's
//! `index.yaml` lists for the version's archive, or the manifest digest an OCI registry answers for the version's
//! tag. A chart pushed again under the same version has a new one, and its releases are upgraded once to it
//! (Flux tracks an OCI chart's digest the same way). Git charts need none: their version is a commit.
//!
//! Read by the host, with the chart source's credentials and CA (a client certificate is used for repositories;
//! an OCI registry that asks for one is read without, and its digest stays unknown).

use std::time::Duration;

use serde_json::Value;

use super::protocol::ChartAuth;

/// How long one read may take.
const TIMEOUT: Duration = Duration::from_secs(30);
/// The largest index read (large public repositories' indexes run to tens of MiB).
const MAX_INDEX_BYTES: usize = 64 << 20;
/// Hex digits of the digest kept: a label value holds at most 63 characters, and 160 bits tell versions apart.
pub const DIGEST_CHARS: usize = 40;

/// The digest repository `url` lists for chart `name` at `version` (hex, [`DIGEST_CHARS`] long); None when the
/// index lists none; an error when the repository did not answer.
pub async fn of_repository(
    url: &str,
    name: &str,
    version: &str,
    auth: Option<&ChartAuth>,
) -> Result<Option<String>, String> {
    Ok(repository(url, name, version, auth)
        .await?
        .map(|h| h.chars().take(DIGEST_CHARS).collect()))
}

/// The manifest digest an OCI registry answers for chart `reference` at `version` (hex, [`DIGEST_CHARS`] long).
pub async fn of_oci(
    reference: &str,
    version: &str,
    plain_http: bool,
    auth: Option<&ChartAuth>,
) -> Result<String, String> {
    Ok(oci(reference, version, plain_http, auth)
        .await?
        .chars()
        .take(DIGEST_CHARS)
        .collect())
}

/// `GET url` with the chart source's credentials, CA and client certificate; at most `max` bytes.
pub(super) async fn get(
    url: &str,
    auth: Option<&ChartAuth>,
    max: usize,
) -> Result<Vec<u8>, String> {
    let mut client = reqwest::Client::builder().timeout(TIMEOUT);
    if let Some(a) = auth {
        if let Some(ca) = &a.ca_pem {
            let cert = reqwest::Certificate::from_pem(ca.as_bytes())
                .map_err(|e| format!("the chart source's CA: {e}"))?;
            client = client.add_root_certificate(cert);
        }
        if let (Some(cert), Some(key)) = (&a.cert_pem, &a.key_pem) {
            let identity = reqwest::Identity::from_pkcs8_pem(cert.as_bytes(), key.as_bytes())
                .map_err(|e| format!("the chart source's client certificate: {e}"))?;
            client = client.identity(identity);
        }
    }
    let client = client.build().map_err(|e| format!("an HTTP client: {e}"))?;
    let mut request = client.get(url);
    if let Some(ChartAuth {
        username: Some(user),
        password,
        ..
    }) = auth
    {
        request = request.basic_auth(user, password.as_deref());
    }
    let response = request
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| format!("reading {url}: {e}"))?;
    if response.content_length().is_some_and(|n| n > max as u64) {
        return Err(format!("{url} is larger than {max} bytes"));
    }
    let body = response
        .bytes()
        .await
        .map_err(|e| format!("reading {url}: {e}"))?;
    if body.len() > max {
        return Err(format!("{url} is larger than {max} bytes"));
    }
    Ok(body.to_vec())
}

/// A repository's `index.yaml`, parsed.
pub(super) async fn index(url: &str, auth: Option<&ChartAuth>) -> Result<Value, String> {
    let index = format!("{}/index.yaml", url.trim_end_matches('/'));
    let body = get(&index, auth, MAX_INDEX_BYTES).await?;
    yaml_serde::from_str(&String::from_utf8_lossy(&body))
        .map_err(|e| format!("{index} is not YAML: {e}"))
}

async fn repository(
    url: &str,
    name: &str,
    version: &str,
    auth: Option<&ChartAuth>,
) -> Result<Option<String>, String> {
    Ok(index_digest(&index(url, auth).await?, name, version))
}

/// The `digest` an index lists for chart `name` at `version` (a leading `v` on either side ignored, as Helm
/// matches them).
fn index_digest(index: &Value, name: &str, version: &str) -> Option<String> {
    let bare = |v: &str| v.trim_start_matches('v').to_string();
    index["entries"][name]
        .as_array()?
        .iter()
        .find(|e| e["version"].as_str().map(bare) == Some(bare(version)))
        .and_then(|e| e["digest"].as_str())
        .map(|d| d.trim_start_matches("sha256:").to_string())
        .filter(|d| !d.is_empty())
}

async fn oci(
    reference: &str,
    version: &str,
    plain_http: bool,
    auth: Option<&ChartAuth>,
) -> Result<String, String> {
    let (_, digest) = oci_manifest(reference, version, plain_http, auth).await?;
    Ok(digest.trim_start_matches("sha256:").to_string())
}

/// The OCI reference of chart `reference` at `version` (Helm's tag: `+` written `_`), and the manifest digest
/// (`sha256:…`) the registry answers for it now.
pub async fn oci_manifest(
    reference: &str,
    version: &str,
    plain_http: bool,
    auth: Option<&ChartAuth>,
) -> Result<(oci_client::Reference, String), String> {
    // Helm stores a version's `+` as `_` in the tag (OCI tags cannot hold `+`).
    let tag = version.replace('+', "_");
    let whole = format!("{}:{tag}", reference.trim_start_matches("oci://"));
    let parsed: oci_client::Reference = whole
        .parse()
        .map_err(|e| format!("OCI reference {whole:?}: {e}"))?;
    let (client, registry_auth) = oci_client(plain_http, auth);
    let digest = client
        .fetch_manifest_digest(&parsed, &registry_auth)
        .await
        .map_err(|e| format!("resolving {whole}: {e}"))?;
    if !digest.starts_with("sha256:") {
        return Err(format!(
            "{whole}: the registry answered digest {digest:?}, not a sha256 digest"
        ));
    }
    Ok((parsed, digest))
}

/// An OCI client as the chart source is reached (plain HTTP when the operator says so, the source's CA), and the
/// credentials it presents.
pub(super) fn oci_client(
    plain_http: bool,
    auth: Option<&ChartAuth>,
) -> (oci_client::Client, oci_client::secrets::RegistryAuth) {
    let mut config = oci_client::client::ClientConfig {
        protocol: if plain_http {
            oci_client::client::ClientProtocol::Http
        } else {
            oci_client::client::ClientProtocol::Https
        },
        read_timeout: Some(TIMEOUT),
        connect_timeout: Some(TIMEOUT),
        ..Default::default()
    };
    if let Some(ca) = auth.and_then(|a| a.ca_pem.as_ref()) {
        config
            .extra_root_certificates
            .push(oci_client::client::Certificate {
                encoding: oci_client::client::CertificateEncoding::Pem,
                data: ca.as_bytes().to_vec(),
            });
    }
    let registry_auth = match auth {
        Some(ChartAuth {
            username: Some(user),
            password: Some(password),
            ..
        }) => oci_client::secrets::RegistryAuth::Basic(user.clone(), password.clone()),
        _ => oci_client::secrets::RegistryAuth::Anonymous,
    };
    (oci_client::Client::new(config), registry_auth)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_index_names_each_versions_digest() {
        let index = json!({"entries": {"demo": [
            {"version": "0.2.0", "digest": "bbb"},
            {"version": "v0.1.0", "digest": "aaa"},
            {"version": "0.3.0"}]}});
        assert_eq!(
            index_digest(&index, "demo", "0.1.0").as_deref(),
            Some("aaa")
        );
        assert_eq!(
            index_digest(&index, "demo", "v0.2.0").as_deref(),
            Some("bbb")
        );
        assert_eq!(
            index_digest(&index, "demo", "0.3.0"),
            None,
            "no digest listed"
        );
        assert_eq!(index_digest(&index, "other", "0.1.0"), None);
    }
}
