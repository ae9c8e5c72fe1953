//! `chart.repository must be an absolute URL`: the Go webhook's `url.Parse(v)` succeeding with a
//! scheme and a host. Only the parts of Go's `net/url` parser that decide those three things are reproduced: the
//! fragment and query are cut off, the scheme read as Go reads it, and the authority's userinfo, host and port
//! checked with Go's character rules. Nothing else in the crate needs URLs, and the SDK has no parser to reuse.

/// Whether Go's `url.Parse(raw)` succeeds with a non-empty `Scheme` and `Host`.
pub fn is_absolute(raw: &str) -> bool {
    // "net/url: invalid control character in URL".
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    let without_fragment = raw.split_once('#').map_or(raw, |(before, _)| before);
    let Some((_scheme, rest)) = scheme(without_fragment) else {
        return false;
    };
    let rest = rest.split_once('?').map_or(rest, |(before, _)| before);
    // Without `//` the URL is opaque (`mailto:x`) or a bare path: it has no host.
    let Some(after) = rest.strip_prefix("//") else {
        return false;
    };
    let authority = after.split_once('/').map_or(after, |(before, _)| before);
    let host = match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            if !userinfo.bytes().all(userinfo_byte) {
                return false;
            }
            host
        }
        None => authority,
    };
    // Go's `Host` keeps the port, so `https://:8080` has a host as far as the webhook is concerned.
    !host.is_empty() && host_parses(host)
}

/// Go's `getScheme`: letters, then letters, digits, `+`, `-` or `.`, then `:`. Anything else before a colon
/// means "no scheme"; a leading colon is a parse error.
fn scheme(raw: &str) -> Option<(&str, &str)> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i > 0 => return Some((&raw[..i], &raw[i + 1..])),
            _ => return None,
        }
    }
    None
}

/// Go's `validUserinfo`.
fn userinfo_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"-._:~!$&'()*+,;=%@".contains(&c)
}

/// Go's `parseHost` and `unescape(host, encodeHost)`: a bracketed IP literal or a name, an optional `:port` of
/// digits, and only characters a host may hold (non-ASCII is left to IDNA and accepted).
fn host_parses(host: &str) -> bool {
    let (name, port) = if let Some(literal) = host.strip_prefix('[') {
        let Some((inside, after)) = literal.split_once(']') else {
            return false;
        };
        (inside, after)
    } else {
        match host.rfind(':') {
            Some(i) => (&host[..i], &host[i..]),
            None => (host, ""),
        }
    };
    let port_ok = port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|digits| digits.bytes().all(|c| c.is_ascii_digit()));
    port_ok && escapes_ok(name) && name.bytes().all(host_byte)
}

fn host_byte(c: u8) -> bool {
    !c.is_ascii() || c.is_ascii_alphanumeric() || b"-_.~!$&'()*+,;=:[]<>\"%".contains(&c)
}

/// Every `%` starts two hex digits, and (in a host) escapes only non-ASCII bytes, except `%25`.
fn escapes_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let (Some(&hi), Some(&lo)) = (b.get(i + 1), b.get(i + 2)) else {
                return false;
            };
            if !hi.is_ascii_hexdigit() || !lo.is_ascii_hexdigit() {
                return false;
            }
            if hi < b'8' && &b[i..i + 3] != b"%25" {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_urls_need_a_scheme_and_a_host() {
        for good in [
            "https://charts.example.com",
            "https://charts.example.com/stable",
            "http://10.0.0.1:8080/charts?x=1#top",
            "oci://ghcr.io/org/charts",
            "https://user:pass@charts.example.com/",
            "https://[::1]:8443/charts",
            "HTTPS://Charts.Example.com",
            "git+ssh://host/repo",
            "https://:8080",
            "https://bücher.example",
        ] {
            assert!(is_absolute(good), "{good}");
        }
        for bad in [
            "",
            "charts.example.com",
            "/charts",
            "//charts.example.com",
            "https:/charts",
            "https://",
            "https:///charts",
            "https://?x",
            "mailto:ops@example.com",
            ":https://x",
            "1http://x",
            " https://x",
            "https://x\n",
            "https://exa mple.com",
            "https://example.com:port",
            "https://[::1/charts",
            "https://a{b}.com",
            "https://%41.com",
            "https://%zz.com",
            "https://us er@host",
        ] {
            assert!(!is_absolute(bad), "{bad:?}");
        }
    }
}
