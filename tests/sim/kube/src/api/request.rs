//! What a request asks for, parsed from method, path and query the way kube-apiserver's RequestInfoFactory does.

/// Decoded query parameters; repeated keys keep the first value. Empty pairs (kube-rs sends `?&limit=500`) are
/// skipped.
#[derive(Debug, Clone, Default)]
pub struct Query(Vec<(String, String)>);

impl Query {
    pub fn parse(q: Option<&str>) -> Self {
        let q = q.unwrap_or("");
        Query(
            form_urlencoded::parse(q.as_bytes())
                .filter(|(k, _)| !k.is_empty())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true") | Some("1") | Some("True"))
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestInfo {
    pub is_resource: bool,
    pub verb: String,
    pub group: String,
    pub version: String,
    pub namespace: String,
    pub resource: String,
    pub name: String,
    pub subresource: String,
    pub path: String,
}

/// Namespaces have subresources that look like resource names in the path.
const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];

impl RequestInfo {
    pub fn parse(method: &str, path: &str, query: &Query) -> Self {
        let mut info = RequestInfo {
            path: path.to_string(),
            verb: method.to_lowercase(),
            ..Default::default()
        };
        let parts: Vec<&str> = path
            .trim_matches('/')
            .split('/')
            .filter(|p| !p.is_empty())
            .collect();
        let rest: &[&str] = match parts.as_slice() {
            ["api", version, rest @ ..] => {
                info.version = version.to_string();
                rest
            }
            ["apis", group, version, rest @ ..] => {
                info.group = group.to_string();
                info.version = version.to_string();
                rest
            }
            _ => return info,
        };
        if rest.is_empty() {
            return info;
        }
        info.is_resource = true;
        let mut rest = rest;
        let mut legacy_watch = false;
        if rest.first() == Some(&"watch") {
            legacy_watch = true;
            rest = &rest[1..];
        }
        if rest.first() == Some(&"namespaces") && rest.len() > 1 {
            info.namespace = rest[1].to_string();
            if rest.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&rest[2]) {
                rest = &rest[2..];
            }
        }
        info.resource = rest.first().map(|s| s.to_string()).unwrap_or_default();
        info.name = rest.get(1).map(|s| s.to_string()).unwrap_or_default();
        info.subresource = rest.get(2).map(|s| s.to_string()).unwrap_or_default();
        if rest.len() > 3 {
            // Deeper paths name no resource the server serves.
            info.is_resource = false;
            return info;
        }
        info.verb = match method {
            "GET" | "HEAD" if legacy_watch || (info.name.is_empty() && query.flag("watch")) => {
                "watch"
            }
            "GET" | "HEAD" if info.name.is_empty() => "list",
            "GET" | "HEAD" => "get",
            "POST" => "create",
            "PUT" => "update",
            "PATCH" => "patch",
            "DELETE" if info.name.is_empty() => "deletecollection",
            "DELETE" => "delete",
            other => {
                return RequestInfo {
                    verb: other.to_lowercase(),
                    ..info
                };
            }
        }
        .to_string();
        // A list or watch pinned to one name by a field selector is authorized as a request for that name,
        // so RBAC resourceNames apply (kubectl get secret x -w).
        if matches!(info.verb.as_str(), "list" | "watch")
            && let Some(sel) = query.get("fieldSelector")
            && let Ok(fs) = crate::selectors::FieldSelector::parse(sel)
            && let Some(name) = fs.exact_name()
        {
            info.name = name.to_string();
        }
        info
    }

    pub fn attributes(&self) -> crate::rbac::Attributes {
        crate::rbac::Attributes {
            verb: self.verb.clone(),
            namespace: self.namespace.clone(),
            api_group: self.group.clone(),
            resource: self.resource.clone(),
            subresource: self.subresource.clone(),
            name: self.name.clone(),
            path: self.path.clone(),
            resource_request: self.is_resource,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(method: &str, path: &str, q: &str) -> RequestInfo {
        RequestInfo::parse(method, path, &Query::parse(Some(q)))
    }

    #[test]
    fn paths_parse_like_the_real_request_info_factory() {
        let i = p("GET", "/api/v1/namespaces/default/configmaps/demo", "");
        assert_eq!(
            (
                i.verb.as_str(),
                i.namespace.as_str(),
                i.resource.as_str(),
                i.name.as_str()
            ),
            ("get", "default", "configmaps", "demo")
        );
        let i = p("GET", "/apis/example.com/v1/widgets", "&watch=true");
        assert_eq!(
            (i.verb.as_str(), i.group.as_str(), i.namespace.as_str()),
            ("watch", "example.com", "")
        );
        let i = p("PUT", "/api/v1/namespaces/foo/status", "");
        assert_eq!(
            (i.resource.as_str(), i.name.as_str(), i.subresource.as_str()),
            ("namespaces", "foo", "status")
        );
        let i = p("GET", "/api/v1/namespaces/foo", "");
        assert_eq!(
            (i.resource.as_str(), i.name.as_str()),
            ("namespaces", "foo")
        );
        let i = p("DELETE", "/apis/apps/v1/namespaces/x/deployments", "");
        assert_eq!(i.verb, "deletecollection");
        let i = p("GET", "/api/v1/watch/namespaces/x/pods", "");
        assert_eq!((i.verb.as_str(), i.resource.as_str()), ("watch", "pods"));
        let i = p(
            "GET",
            "/api/v1/namespaces/x/secrets",
            "watch=1&fieldSelector=metadata.name%3Dtoken",
        );
        assert_eq!(
            (i.verb.as_str(), i.name.as_str()),
            ("watch", "token"),
            "the selector's name authorizes the watch"
        );
        assert!(!p("GET", "/apis", "").is_resource);
        assert!(!p("GET", "/healthz", "").is_resource);
    }

    #[test]
    fn queries_tolerate_a_leading_ampersand() {
        let q = Query::parse(Some("&limit=500&labelSelector=a%3Db"));
        assert_eq!(q.get("limit"), Some("500"));
        assert_eq!(q.get("labelSelector"), Some("a=b"));
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        fn segment() -> impl Strategy<Value = String> {
            "[a-z0-9][a-z0-9.-]{0,12}"
        }

        proptest! {
            #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

            #[test]
            fn any_path_method_and_query_parse_without_panicking(method in "[A-Z]{0,7}", path in "\\PC{0,80}", q in "\\PC{0,80}") {
                let info = RequestInfo::parse(&method, &path, &Query::parse(Some(&q)));
                prop_assert_eq!(info.path, path);
            }

            #[test]
            fn namespaced_object_paths_round_trip(g in segment(), v in segment(), ns in segment(), r in segment(), n in segment()) {
                prop_assume!(r != "status" && r != "finalize" && g != "watch");
                let path = format!("/apis/{g}/{v}/namespaces/{ns}/{r}/{n}");
                let info = RequestInfo::parse("GET", &path, &Query::default());
                prop_assert_eq!((info.group.as_str(), info.version.as_str(), info.namespace.as_str()), (g.as_str(), v.as_str(), ns.as_str()));
                prop_assert_eq!((info.resource.as_str(), info.name.as_str(), info.verb.as_str()), (r.as_str(), n.as_str(), "get"));
            }
        }
    }
}
