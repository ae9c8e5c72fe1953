//! An OmniConnection's `spec.endpoint` as Omni's Go client reads it: `https`
//! without a port gets `:443`, `http` becomes `grpc`, `grpc` without a port gets `:80`; only `host:port` is
//! dialled (paths and queries are ignored); TLS only for `https`.

/// A parsed endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// The normalised URL the Go client reports (`https://omni.example.com:443`, `grpc://omni:8080`).
    pub normalized: String,
    /// The host, without brackets for IPv6 literals: the TLS server name.
    pub host: String,
    pub port: u16,
    pub tls: bool,
}

impl Endpoint {
    /// Parses `https://`, `http://` and `grpc://` URLs. Errors say what is wrong without guessing.
    pub fn parse(url: &str) -> Result<Self, String> {
        let url = url.trim();
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(format!(
                "parse {url:?}: missing scheme (https://, http:// or grpc://)"
            ));
        };
        let scheme = scheme.to_ascii_lowercase();
        let (tls, scheme, default_port) = match scheme.as_str() {
            "https" => (true, "https", 443),
            "http" | "grpc" => (false, "grpc", 80),
            other => return Err(format!("parse {url:?}: unsupported scheme {other:?}")),
        };
        // The authority ends at the first path, query or fragment delimiter; user info is not used.
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
        let (host, port) = split_host_port(authority).map_err(|e| format!("parse {url:?}: {e}"))?;
        if host.is_empty() {
            return Err(format!("parse {url:?}: missing host"));
        }
        let port = port.unwrap_or(default_port);
        let shown_host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.clone()
        };
        Ok(Endpoint {
            normalized: format!("{scheme}://{shown_host}:{port}"),
            host,
            port,
            tls,
        })
    }

    /// `host:port` as dialled (IPv6 in brackets).
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

fn split_host_port(authority: &str) -> Result<(String, Option<u16>), String> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let Some((host, after)) = rest.split_once(']') else {
            return Err("unclosed [ in IPv6 host".into());
        };
        match after {
            "" => (host, None),
            _ => match after.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None => return Err(format!("unexpected {after:?} after IPv6 host")),
            },
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = match port {
        None | Some("") => None,
        Some(p) => Some(
            p.parse::<u16>()
                .map_err(|_| format!("invalid port {p:?}"))?,
        ),
    };
    Ok((host.to_string(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_normalised_like_omnis_go_client() {
        let cases = [
            (
                "https://omni.example.com",
                "https://omni.example.com:443",
                true,
            ),
            (
                "https://omni.example.com:8443/some/path?x=1",
                "https://omni.example.com:8443",
                true,
            ),
            ("http://omni:8080", "grpc://omni:8080", false),
            ("http://omni", "grpc://omni:80", false),
            (
                "grpc://omni.omni-system.svc.cluster.local:8080",
                "grpc://omni.omni-system.svc.cluster.local:8080",
                false,
            ),
            ("grpc://[::1]:9000", "grpc://[::1]:9000", false),
        ];
        for (url, normalized, tls) in cases {
            let e = Endpoint::parse(url).unwrap_or_else(|err| panic!("{url}: {err}"));
            assert_eq!(e.normalized, normalized, "{url}");
            assert_eq!(e.tls, tls, "{url}");
        }
        assert_eq!(
            Endpoint::parse("grpc://[::1]:9000").unwrap().authority(),
            "[::1]:9000"
        );
    }

    #[test]
    fn malformed_urls_say_what_is_wrong() {
        for (url, says) in [
            ("omni.example.com", "missing scheme"),
            ("ftp://omni", "unsupported scheme"),
            ("https://", "missing host"),
            ("https://omni:99999", "invalid port"),
            ("grpc://[::1:9000", "unclosed"),
        ] {
            let e = Endpoint::parse(url).expect_err(url);
            assert!(e.contains(says), "{url}: {e}");
        }
    }
}
