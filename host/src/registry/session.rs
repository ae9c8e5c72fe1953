//! Reads from a registry that may lie: every part of an artifact (manifest, layer, signature manifest and payload,
//! and the token a registry's auth server hands out) is read with a ceiling checked as the bytes arrive, before
//! anything is buffered beyond it, and every request has a deadline. A registry answering an endless body, or a
//! body larger than its descriptor said, costs at most the ceiling.
//!
//! The OCI distribution API as pulls use it (distribution-spec "Pull"): `GET /v2/<name>/manifests/<reference>`
//! and `GET /v2/<name>/blobs/<digest>`, with the registry's token flow (`WWW-Authenticate: Bearer realm=…,
//! service=…, scope=…`, then a GET of the realm with the credentials as basic auth) or basic auth. The OCI client
//! crate reads those responses whole, so pulls go through here; pushes (made by the operator's own `plugin push`)
//! stay with it.

use std::time::Duration;

use futures::StreamExt;
use oci_client::Reference;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, WWW_AUTHENTICATE};

use super::access::{Access, Credentials};

/// How long one request (headers and body) may take.
const REQUEST_DEADLINE: Duration = Duration::from_secs(120);
/// The largest token answer read from an auth server.
const MAX_TOKEN_BYTES: usize = 64 << 10;

/// Why a part could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{what} is larger than {max} bytes")]
    TooLarge { what: String, max: usize },
    #[error("{what}: the registry answered {status}")]
    Status { what: String, status: StatusCode },
    #[error("{what}: {reason}")]
    Transport { what: String, reason: String },
    #[error("{what}: the registry asked for credentials ({reason})")]
    Unauthorized { what: String, reason: String },
}

impl ReadError {
    pub fn is_not_found(&self) -> bool {
        matches!(self, ReadError::Status { status, .. } if *status == StatusCode::NOT_FOUND)
    }
}

/// A pull session with one repository: the HTTP client, where the registry is, and the token it handed out.
pub struct Session {
    http: reqwest::Client,
    base: String,
    repository: String,
    credentials: Credentials,
    plain_http: bool,
    /// `Authorization` for the requests after the first challenge.
    authorization: Option<String>,
}

impl Session {
    pub fn new(reference: &Reference, access: &Access) -> Result<Session, ReadError> {
        let scheme = if access.plain_http { "http" } else { "https" };
        let http = reqwest::Client::builder()
            .timeout(REQUEST_DEADLINE)
            .build()
            .map_err(|e| ReadError::Transport {
                what: reference.whole(),
                reason: e.to_string(),
            })?;
        Ok(Session {
            http,
            base: format!("{scheme}://{}", reference.resolve_registry()),
            repository: reference.repository().to_string(),
            credentials: access.auth.clone(),
            plain_http: access.plain_http,
            authorization: None,
        })
    }

    /// The manifest `reference` (a digest or a tag), at most `max` bytes, accepting `media_types`.
    pub async fn manifest(
        &mut self,
        reference: &str,
        media_types: &[&str],
        max: usize,
    ) -> Result<Vec<u8>, ReadError> {
        let what = format!("manifest {}@{reference}", self.repository);
        let path = format!("manifests/{reference}");
        self.get(&path, &media_types.join(", "), max, &what).await
    }

    /// The blob `digest`, at most `max` bytes.
    pub async fn blob(&mut self, digest: &str, max: usize) -> Result<Vec<u8>, ReadError> {
        let what = format!("blob {}@{digest}", self.repository);
        self.get(&format!("blobs/{digest}"), "*/*", max, &what)
            .await
    }

    async fn get(
        &mut self,
        path: &str,
        accept: &str,
        max: usize,
        what: &str,
    ) -> Result<Vec<u8>, ReadError> {
        let url = format!("{}/v2/{}/{path}", self.base, self.repository);
        let mut challenged = false;
        loop {
            let mut request = self.http.get(&url).header(ACCEPT, accept);
            if let Some(authorization) = &self.authorization {
                request = request.header(reqwest::header::AUTHORIZATION, authorization);
            }
            let response = request.send().await.map_err(|e| transport(what, &e))?;
            if response.status() == StatusCode::UNAUTHORIZED && !challenged {
                challenged = true;
                let challenge = response
                    .headers()
                    .get(WWW_AUTHENTICATE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_string();
                self.authorization = Some(self.authorize(&challenge, what).await?);
                continue;
            }
            if !response.status().is_success() {
                return Err(ReadError::Status {
                    what: what.to_string(),
                    status: response.status(),
                });
            }
            return read_bounded(response, max, what).await;
        }
    }

    /// The `Authorization` header a challenge asks for: a bearer token from the realm it names, or basic auth.
    async fn authorize(&self, challenge: &str, what: &str) -> Result<String, ReadError> {
        let unauthorized = |reason: &str| ReadError::Unauthorized {
            what: what.to_string(),
            reason: reason.to_string(),
        };
        let (scheme, params) = challenge.split_once(' ').unwrap_or((challenge, ""));
        let basic = match &self.credentials {
            Credentials::Basic { username, password } => Some((username, password)),
            Credentials::Anonymous => None,
        };
        if scheme.eq_ignore_ascii_case("basic") {
            let (username, password) =
                basic.ok_or_else(|| unauthorized("no credentials are configured"))?;
            return Ok(basic_header(username, password));
        }
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(unauthorized(&format!("unsupported scheme {scheme:?}")));
        }
        let param = |key: &str| challenge_param(params, key);
        let realm = param("realm").ok_or_else(|| unauthorized("the challenge names no realm"))?;
        let reachable =
            realm.starts_with("https://") || (self.plain_http && realm.starts_with("http://"));
        if !reachable {
            return Err(unauthorized(&format!(
                "the token realm {realm:?} is not https"
            )));
        }
        let scope =
            param("scope").unwrap_or_else(|| format!("repository:{}:pull", self.repository));
        let mut query = vec![("scope", scope)];
        if let Some(service) = param("service") {
            query.push(("service", service));
        }
        let mut request = self.http.get(&realm).query(&query);
        if let Some((username, password)) = basic {
            request = request.basic_auth(username, Some(password));
        }
        let response = request.send().await.map_err(|e| transport(what, &e))?;
        if !response.status().is_success() {
            return Err(unauthorized(&format!(
                "the token server answered {}",
                response.status()
            )));
        }
        let body = read_bounded(response, MAX_TOKEN_BYTES, &format!("{what}: the token")).await?;
        #[derive(serde::Deserialize)]
        struct Token {
            token: Option<String>,
            access_token: Option<String>,
        }
        let token: Token = serde_json::from_slice(&body)
            .map_err(|e| unauthorized(&format!("the token answer is not JSON: {e}")))?;
        token
            .token
            .or(token.access_token)
            .filter(|t| !t.is_empty())
            .map(|t| format!("Bearer {t}"))
            .ok_or_else(|| unauthorized("the token answer holds no token"))
    }
}

/// The body of `response`, refused as soon as it passes `max` (a `Content-Length` over it before a byte is read).
async fn read_bounded(
    response: reqwest::Response,
    max: usize,
    what: &str,
) -> Result<Vec<u8>, ReadError> {
    let too_large = || ReadError::TooLarge {
        what: what.to_string(),
        max,
    };
    if response
        .content_length()
        .is_some_and(|len| len > max as u64)
    {
        return Err(too_large());
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| transport(what, &e))?;
        if body.len() + chunk.len() > max {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn transport(what: &str, e: &reqwest::Error) -> ReadError {
    ReadError::Transport {
        what: what.to_string(),
        reason: e.to_string(),
    }
}

fn basic_header(username: &str, password: &str) -> String {
    use base64::Engine as _;
    let pair = format!("{username}:{password}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

/// The value of `key` in a challenge's `key="value"` list.
fn challenge_param(params: &str, key: &str) -> Option<String> {
    let mut rest = params;
    while !rest.is_empty() {
        let (name, after) = rest.split_once('=')?;
        let name = name.trim().trim_start_matches(',').trim();
        let (value, next) = if let Some(quoted) = after.strip_prefix('"') {
            let end = quoted.find('"')?;
            (&quoted[..end], &quoted[end + 1..])
        } else {
            after.split_once(',').unwrap_or((after, ""))
        };
        if name.eq_ignore_ascii_case(key) {
            return Some(value.to_string());
        }
        rest = next.trim_start_matches(',').trim_start();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_challenge_is_read_as_registries_write_it() {
        let params = r#"realm="https://auth.example.com/token",service="registry.example.com",scope="repository:team/p:pull""#;
        assert_eq!(
            challenge_param(params, "realm").as_deref(),
            Some("https://auth.example.com/token")
        );
        assert_eq!(
            challenge_param(params, "service").as_deref(),
            Some("registry.example.com")
        );
        assert_eq!(
            challenge_param(params, "scope").as_deref(),
            Some("repository:team/p:pull")
        );
        assert_eq!(challenge_param(params, "error"), None);
        assert_eq!(
            challenge_param("realm=https://a/t, service=b", "service").as_deref(),
            Some("b")
        );
    }
}
