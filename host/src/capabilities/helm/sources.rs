//! Which chart sources the operator allows (`--helm-chart-source`) and which OCI registries it reaches over plain
//! HTTP (`--helm-plain-http-registry`): the operator's policy, never the plugin's or the object's.

/// The chart sources the operator allows (`--helm-chart-source`): a chart is allowed when its repository URL or
/// OCI reference lies under one of these, compared by scheme, host and port exactly and by whole path segments,
/// so `https://charts.example.com/team` allows `https://charts.example.com/team/x` but neither
/// `https://charts.example.com/teamx` nor `https://charts.example.com.evil.test/team`. With none configured
/// every source is allowed, as the Go operator allowed every source.
#[derive(Debug, Clone, Default)]
pub struct ChartSources {
    allowed: Vec<SourceUrl>,
    /// OCI registries (`host:port`, lower-cased) reached over plain HTTP: the operator's list, as Docker's
    /// insecure registries are the daemon's; never something a plugin or an object can ask for.
    plain_http: Vec<String>,
}

/// The workload-cluster namespaces releases may live in (`--helm-target-namespace`): the operator's policy, like
/// the chart sources. With none configured every namespace is allowed, as the Go operator allowed every one.
#[derive(Debug, Clone, Default)]
pub struct TargetNamespaces {
    allowed: Vec<String>,
}

impl TargetNamespaces {
    /// Only these namespaces; each must be a namespace name.
    pub fn only<I, S>(namespaces: I) -> Result<Self, String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let allowed = namespaces
            .into_iter()
            .map(|n| {
                let n = n.as_ref();
                super::check_namespace(n).map(|()| n.to_string())
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(TargetNamespaces { allowed })
    }

    pub(super) fn allows(&self, namespace: &str) -> bool {
        self.allowed.is_empty() || self.allowed.iter().any(|a| a == namespace)
    }

    /// The allowed namespaces, for messages.
    pub(super) fn describe(&self) -> String {
        self.allowed.join(", ")
    }
}

/// A chart location split for comparison: scheme, authority (host and port, lower-cased) and path segments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SourceUrl {
    pub(super) scheme: String,
    authority: String,
    segments: Vec<String>,
}

impl SourceUrl {
    /// Parses `scheme://authority/path` into the form sources are compared in, refusing every spelling whose
    /// meaning a server could see differently from this comparison:
    /// * only `http`, `https` and `oci`; no user-info, query or fragment (a credential in a URL would end up in
    ///   status and logs);
    /// * the host lower-cased, without a trailing dot, and without the scheme's default port (443; 80 for http);
    /// * each path segment percent-decoded; a segment that decodes to a separator (`%2f`, `%5c`), a `%` (double
    ///   encoding), a control character or a dot segment (`.`, `..`, `%2e%2e`, `.%2E`, `..;x`) is refused, as is a
    ///   backslash or anything outside ASCII: servers and proxies normalise those differently, so a source
    ///   spelling one could lie inside an allowed prefix here and outside it on the wire.
    pub(super) fn parse(text: &str) -> Result<SourceUrl, String> {
        if let Some(c) = text
            .chars()
            .find(|c| !c.is_ascii() || c.is_ascii_control() || c.is_ascii_whitespace())
        {
            return Err(format!(
                "{text:?}: a chart source is printable ASCII without spaces (found {c:?})"
            ));
        }
        if text.contains('\\') {
            return Err(format!(
                "{text:?}: a backslash is not allowed in a chart source"
            ));
        }
        let (scheme, rest) = text
            .split_once("://")
            .ok_or_else(|| format!("{text:?} is not an absolute URL"))?;
        let scheme = scheme.to_ascii_lowercase();
        if !matches!(scheme.as_str(), "http" | "https" | "oci") {
            return Err(format!("{text:?}: the scheme must be http, https or oci"));
        }
        if rest.contains(['?', '#']) {
            return Err(format!("{text:?}: a chart source has no query or fragment"));
        }
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let authority =
            normal_authority(&scheme, authority).map_err(|why| format!("{text:?}: {why}"))?;
        let segments = path
            .split('/')
            .filter(|s| !s.is_empty())
            .map(decoded_segment)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|why| format!("{text:?}: {why}"))?;
        Ok(SourceUrl {
            scheme,
            authority,
            segments,
        })
    }

    fn within(&self, allowed: &SourceUrl) -> bool {
        self.scheme == allowed.scheme
            && self.authority == allowed.authority
            && self.segments.starts_with(&allowed.segments)
    }
}

/// The authority as sources are compared: lower-cased, no trailing dot on the host, no default port.
fn normal_authority(scheme: &str, authority: &str) -> Result<String, String> {
    if authority.is_empty() {
        return Err("the URL has no host".into());
    }
    if authority.contains('@') {
        return Err("credentials do not belong in a chart URL".into());
    }
    let allowed =
        |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']');
    if !authority.bytes().all(allowed) {
        return Err(format!(
            "the host {authority:?} may hold only letters, digits, '.', '-', and a port after ':'"
        ));
    }
    let authority = authority.to_ascii_lowercase();
    // A bracketed IPv6 literal keeps its colons; the port is what follows the last `]:` or the only `:`.
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, _)) if !host.ends_with(']') && host.contains(':') => (authority.as_str(), None),
        Some((host, port)) => (host, Some(port)),
        None => (authority.as_str(), None),
    };
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.is_empty() || host.starts_with('.') || host.contains("..") {
        return Err(format!("{authority:?} is not a host name"));
    }
    let default = if scheme == "http" { "80" } else { "443" };
    Ok(match port {
        None => host.to_string(),
        Some(p) if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) => {
            return Err(format!("the port of {authority:?} is not a number"));
        }
        Some(p) if p.trim_start_matches('0') == default => host.to_string(),
        Some(p) => format!("{host}:{}", p.trim_start_matches('0')),
    })
}

/// One path segment, percent-decoded, refused when it could mean something else to a server.
fn decoded_segment(raw: &str) -> Result<String, String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("the path segment {raw:?} has a malformed %-escape"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    let decoded = String::from_utf8(out)
        .ok()
        .filter(|d| d.is_ascii())
        .ok_or_else(|| format!("the path segment {raw:?} does not decode to ASCII"))?;
    if decoded.contains(['/', '\\', '%']) || decoded.bytes().any(|b| b.is_ascii_control()) {
        return Err(format!(
            "the path segment {raw:?} encodes a separator, a '%' or a control character"
        ));
    }
    // `..;x` is `..` to servlet containers and some proxies (path parameters).
    let bare = decoded.split(';').next().unwrap_or_default();
    if bare == "." || bare == ".." {
        return Err(format!(
            "the path segment {raw:?} is a dot segment: `.` and `..` are not allowed in a chart source, however \
             encoded"
        ));
    }
    Ok(decoded)
}

impl ChartSources {
    /// Every source allowed.
    pub fn any() -> Self {
        ChartSources::default()
    }

    /// Only charts under these URLs (`https://…`, `http://…`, `oci://…`).
    pub fn only<I, S>(sources: I) -> Result<Self, String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let allowed = sources
            .into_iter()
            .map(|s| SourceUrl::parse(s.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ChartSources {
            allowed,
            plain_http: Vec::new(),
        })
    }

    /// These sources and `also`, a source the operator itself serves (`dev`'s chart repository on loopback); with
    /// no sources configured every source stays allowed.
    pub fn also_allowing(mut self, also: &str) -> Result<Self, String> {
        if !self.allowed.is_empty() {
            self.allowed.push(SourceUrl::parse(also)?);
        }
        Ok(self)
    }

    /// Reach these OCI registries (`host:port`) over plain HTTP.
    pub fn with_plain_http<I, S>(mut self, registries: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        // Normalised as sources are, so `Registry:443` and `registry` name one registry.
        self.plain_http = registries
            .into_iter()
            .map(|r| {
                let r = r.as_ref();
                normal_authority("oci", r).unwrap_or_else(|_| r.to_ascii_lowercase())
            })
            .collect();
        self
    }

    pub(super) fn plain_http(&self, source: &SourceUrl) -> bool {
        source.scheme == "oci" && self.plain_http.contains(&source.authority)
    }

    pub(super) fn allows(&self, source: &SourceUrl) -> bool {
        self.allowed.is_empty() || self.allowed.iter().any(|a| source.within(a))
    }

    /// The allowed sources as the operator was given them, for messages.
    pub(super) fn describe(&self) -> String {
        self.allowed
            .iter()
            .map(|a| format!("{}://{}/{}", a.scheme, a.authority, a.segments.join("/")))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(sources: &[&str], chart: &str) -> bool {
        let policy = ChartSources::only(sources).unwrap();
        policy.allows(&SourceUrl::parse(chart).unwrap())
    }

    #[test]
    fn a_chart_source_is_allowed_by_scheme_host_port_and_whole_path_segments() {
        let team = ["https://charts.example.com/team"];
        assert!(allowed(&team, "https://charts.example.com/team"));
        assert!(allowed(&team, "https://charts.example.com/team/sub/"));
        assert!(allowed(&team, "https://CHARTS.example.com/team"));
        // Look-alikes an attacker would try.
        assert!(!allowed(&team, "https://charts.example.com/teamx"));
        assert!(!allowed(&team, "https://charts.example.com.evil.test/team"));
        assert!(!allowed(&team, "https://charts.example.com:8443/team"));
        assert!(!allowed(&team, "http://charts.example.com/team"));
        assert!(!allowed(&team, "oci://charts.example.com/team"));
        assert!(!allowed(&team, "https://charts.example.com/"));
        // With no sources configured, every well-formed source is allowed.
        assert!(ChartSources::any().allows(&SourceUrl::parse("oci://r.test/x").unwrap()));
    }

    #[test]
    fn the_classic_path_bypass_spellings_are_refused_or_compared_decoded() {
        let team = ["https://charts.example.com/team"];
        // Dot segments and separators however encoded: refused outright, never compared.
        for bad in [
            "https://charts.example.com/team/%2e%2e/other",
            "https://charts.example.com/team/%2E%2E/other",
            "https://charts.example.com/team/.%2e/other",
            "https://charts.example.com/team/%2e./other",
            "https://charts.example.com/team/%2e/x",
            "https://charts.example.com/team/..;/other",
            "https://charts.example.com/team/%2e%2e;x/other",
            "https://charts.example.com/team%2f..%2fother",
            "https://charts.example.com/team%2F..%2Fother",
            "https://charts.example.com/team/..%5cother",
            "https://charts.example.com/team\\..\\other",
            "https://charts.example.com/team/%252e%252e/other",
            "https://charts.example.com/team/%00/x",
            "https://charts.example.com/team/%e2%80%a4%e2%80%a4/other",
            "https://charts.example.com/team/%zz",
            "https://charts.example.com/team/x y",
            "https://charts.example.com%2f@evil.test/team",
            "https://charts.example.com%2eevil.test/team",
            "oci://registry.example.com/team/%2e%2e/other/chart",
        ] {
            assert!(SourceUrl::parse(bad).is_err(), "{bad} must be refused");
        }
        // Harmless encodings and spellings compare as what they mean.
        assert!(allowed(&team, "https://charts.example.com/%74eam/x"));
        assert!(allowed(&team, "https://charts.example.com.:443/team/x"));
        assert!(allowed(&team, "HTTPS://Charts.Example.COM:0443/team"));
        assert!(!allowed(&team, "https://charts.example.com/%74eamx"));
        assert!(!allowed(
            &["oci://registry.example.com:5000/team"],
            "oci://registry.example.com/team/x"
        ));
        assert!(allowed(
            &["oci://registry.example.com/team"],
            "oci://registry.example.com:443/team/x"
        ));
        // An allowed prefix spelled with an encoding allows what it means, and nothing more.
        assert!(allowed(
            &["https://charts.example.com/%74eam"],
            "https://charts.example.com/team/x"
        ));
    }

    #[test]
    fn target_namespaces_are_whole_names_and_none_configured_allows_all() {
        let apps = TargetNamespaces::only(["apps", "web"]).unwrap();
        assert!(apps.allows("apps") && apps.allows("web"));
        for other in ["kube-system", "app", "apps2", ""] {
            assert!(!apps.allows(other), "{other}");
        }
        assert!(TargetNamespaces::default().allows("kube-system"));
        assert!(TargetNamespaces::only(["Kube_System"]).is_err());
    }

    #[test]
    fn chart_sources_that_would_hide_credentials_or_escape_are_refused() {
        for bad in [
            "https://user:pw@charts.example.com/team",
            "https://charts.example.com/team/../other",
            "https://charts.example.com/team?x=1",
            "ftp://charts.example.com/",
            "charts.example.com/team",
            "https:///team",
        ] {
            assert!(SourceUrl::parse(bad).is_err(), "{bad} must be refused");
        }
        assert!(ChartSources::only(["https://a@b/"]).is_err());
    }
}
