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

/// A chart location split for comparison: scheme, authority (host and port, lower-cased) and path segments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SourceUrl {
    pub(super) scheme: String,
    authority: String,
    segments: Vec<String>,
}

impl SourceUrl {
    /// Parses `scheme://authority/path`; only `http`, `https` and `oci`; no user-info, query or fragment (a
    /// credential in a URL would end up in status and logs).
    pub(super) fn parse(text: &str) -> Result<SourceUrl, String> {
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
        if authority.is_empty() {
            return Err(format!("{text:?} has no host"));
        }
        if authority.contains('@') {
            return Err(format!(
                "{text:?}: credentials do not belong in a chart URL"
            ));
        }
        let segments: Vec<String> = path
            .split('/')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        if segments.iter().any(|s| s == "." || s == "..") {
            return Err(format!(
                "{text:?}: `.` and `..` are not allowed in a chart source"
            ));
        }
        Ok(SourceUrl {
            scheme,
            authority: authority.to_ascii_lowercase(),
            segments,
        })
    }

    fn within(&self, allowed: &SourceUrl) -> bool {
        self.scheme == allowed.scheme
            && self.authority == allowed.authority
            && self.segments.starts_with(&allowed.segments)
    }
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

    /// Reach these OCI registries (`host:port`) over plain HTTP.
    pub fn with_plain_http<I, S>(mut self, registries: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.plain_http = registries
            .into_iter()
            .map(|r| r.as_ref().to_ascii_lowercase())
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
