//! Fuzz target `fuzz_kube_sim_requests`: generated HTTP requests straight into kube-sim's handler (`api::handle`, no
//! socket), as a client that is wrong in every way would send them: any method; paths built from real API path
//! shapes with segments replaced by anything (percent-encoded); real query parameters with any value; every
//! content type the server knows and some it does not; bodies that are objects, patches, YAML, protobuf-looking
//! bytes or noise. The real API server answers all of this with a status, never by falling over, so kube-sim must
//! too:
//!
//! * the handler never panics and never answers 500 (an internal error is a simulator bug);
//! * every JSON error answer is a `metav1.Status` (`kind: Status`, `apiVersion: v1`, `status: Failure`) whose
//!   `code` is the HTTP status and whose `reason` and `message` are set, as the API server writes them;
//! * after every request the server still lists namespaces (nothing it stored broke it).
//!
//! Cases per run: proptest's 256 (what the README's test command runs), or `PROPTEST_CASES`; `tools/fuzz` runs it
//! longer. Failures are kept in `fuzz_requests.proptest-regressions` beside this file.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use kube_sim::api::{self, Api};
use kube_sim::auth::Authenticator;
use kube_sim::{Anonymous, Cluster, ClusterOptions, admin_user};
use proptest::prelude::*;
use serde_json::{Value, json};

fn server() -> Arc<Api> {
    Arc::new(Api {
        cluster: Cluster::new(ClusterOptions::default()),
        auth: Authenticator::new(Anonymous::As(admin_user())),
        faults: kube_sim::faults::Faults::default(),
        address: "127.0.0.1:6443".into(),
        log: kube_sim::request_log::RequestLog::default(),
    })
}

/// A path segment: mostly real ones, sometimes anything (percent-encoded so the URI stays a URI).
fn segment() -> BoxedStrategy<String> {
    prop_oneof![
        6 => prop::sample::select(vec![
            "api", "apis", "v1", "apps", "namespaces", "default", "kube-system", "configmaps", "secrets", "pods",
            "services", "deployments", "events", "leases", "coordination.k8s.io", "apiextensions.k8s.io",
            "customresourcedefinitions", "status", "scale", "log", "exec", "binding", "eviction", "watch", "web",
            "serviceaccounts", "token", "nodes", "proxy", "openapi", "version", "healthz", "__sim", "faults",
        ]).prop_map(String::from),
        1 => prop::sample::select(vec!["", ".", "..", "%2F", "%00", "a%20b", "UPPER", "-x-", "x".repeat(300).leak()]).prop_map(String::from),
        1 => any::<String>().prop_map(|s| percent(&s)),
    ]
    .boxed()
}

fn percent(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn query() -> impl Strategy<Value = Vec<(String, String)>> {
    let key = prop_oneof![
        8 => prop::sample::select(vec![
            "labelSelector", "fieldSelector", "watch", "resourceVersion", "resourceVersionMatch", "limit",
            "continue", "timeoutSeconds", "dryRun", "fieldManager", "force", "propagationPolicy",
            "gracePeriodSeconds", "sendInitialEvents", "allowWatchBookmarks", "fieldValidation", "pretty",
            "includeObject", "container", "orphanDependents",
        ]).prop_map(String::from),
        1 => "[a-zA-Z]{1,8}",
    ];
    let value = prop_oneof![
        4 => prop::sample::select(vec![
            "true", "false", "1", "0", "-1", "All", "Strict", "Warn", "Ignore", "NotOlderThan", "Exact",
            "Background", "Orphan", "Foreground", "app=web", "app in (a,b),!x", "metadata.name=web",
            "metadata.namespace!=default", "18446744073709551616", "abc",
        ]).prop_map(String::from),
        1 => any::<String>(),
    ];
    prop::collection::vec((key, value), 0..4)
}

fn content_type() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        3 => Just(Some("application/json".to_string())),
        2 => prop::option::of(
            prop::sample::select(vec![
                "application/yaml", "application/merge-patch+json", "application/strategic-merge-patch+json",
                "application/apply-patch+yaml", "application/json-patch+json", "application/vnd.kubernetes.protobuf",
                "text/plain", "application/json; charset=utf-8", "garbage/",
            ])
            .prop_map(String::from),
        ),
    ]
}

fn accept() -> impl Strategy<Value = Option<String>> {
    prop::option::of(
        prop::sample::select(vec![
            "application/json",
            "application/json;as=Table;v=v1;g=meta.k8s.io",
            "application/vnd.kubernetes.protobuf",
            "application/yaml",
            "*/*",
            "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
            "nonsense",
        ])
        .prop_map(String::from),
    )
}

/// A body: a ConfigMap (maybe broken), a patch of each kind, YAML, or bytes.
fn body() -> impl Strategy<Value = Vec<u8>> {
    let name = prop_oneof![
        4 => prop::sample::select(vec!["web", "a"]).prop_map(String::from),
        2 => "[a-z][a-z0-9-]{0,10}",
        1 => any::<String>(),
    ];
    prop_oneof![
        2 => Just(Vec::new()),
        6 => (name, prop::collection::btree_map("[a-z]{1,5}", any::<String>(), 0..3), any::<bool>())
            .prop_map(|(name, data, broken)| {
                let mut o = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data});
                if broken { o["data"] = json!([1, {"x": null}]); o["metadata"]["labels"] = json!({"a b": 7}); }
                o.to_string().into_bytes()
            }),
        1 => Just(br#"[{"op":"add","path":"/metadata/labels/x","value":"y"},{"op":"test","path":"/nope","value":1}]"#.to_vec()),
        1 => Just(br#"{"metadata":{"labels":{"x":null}},"data":{"$patch":"replace"}}"#.to_vec()),
        1 => Just(b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata: {a: &x b, c: *x}\n".to_vec()),
        1 => Just(b"k8s\x00\x0a\x02v1\x12\x09ConfigMap\x12\x00".to_vec()),
        1 => prop::collection::vec(any::<u8>(), 0..64),
    ]
}

/// Where a request goes: a real resource path (collection, object, subresource, watch) of a core, apps,
/// coordination or apiextensions resource, with its namespace and name from a small pool (so that the requests of
/// a case meet the same objects) or made up; sometimes any segments at all.
fn path() -> impl Strategy<Value = Vec<String>> {
    // ConfigMaps most often: the bodies below are ConfigMaps, so creates, updates and patches get through.
    let resource = prop_oneof![
        3 => Just(("api/v1", "configmaps", true)),
        2 => prop::sample::select(vec![
            ("api/v1", "configmaps", true), ("api/v1", "secrets", true), ("api/v1", "pods", true),
            ("api/v1", "services", true), ("api/v1", "events", true), ("api/v1", "serviceaccounts", true),
            ("api/v1", "namespaces", false), ("api/v1", "nodes", false), ("apis/apps/v1", "deployments", true),
            ("apis/coordination.k8s.io/v1", "leases", true), ("apis/events.k8s.io/v1", "events", true),
            ("apis/apiextensions.k8s.io/v1", "customresourcedefinitions", false),
            ("apis/rbac.authorization.k8s.io/v1", "clusterroles", false),
        ]),
    ];
    let slot = || {
        prop_oneof![
            6 => prop::sample::select(vec!["default", "default", "web", "a", "kube-system"]).prop_map(String::from),
            1 => segment(),
        ]
    };
    let subresource = prop::option::of(prop_oneof![
        4 => prop::sample::select(vec!["status", "scale", "log", "binding", "eviction", "token", "exec", "proxy"]).prop_map(String::from),
        1 => segment(),
    ]);
    let shaped = (
        resource,
        slot(),
        prop::option::of(slot()),
        subresource,
        prop::sample::select(vec![false, false, false, true]),
    )
        .prop_map(|((prefix, plural, namespaced), ns, name, sub, watch)| {
            let mut path: Vec<String> = prefix.split('/').map(String::from).collect();
            if watch {
                path.push("watch".into());
            }
            if namespaced {
                path.extend(["namespaces".to_string(), ns]);
            }
            path.push(plural.into());
            if let Some(name) = name {
                path.push(name);
                path.extend(sub);
            }
            path
        });
    prop_oneof![
        8 => shaped,
        1 => prop::collection::vec(segment(), 0..6),
    ]
}

#[derive(Debug, Clone)]
struct Req {
    method: String,
    segments: Vec<String>,
    query: Vec<(String, String)>,
    content_type: Option<String>,
    accept: Option<String>,
    body: Vec<u8>,
}

fn request() -> impl Strategy<Value = Req> {
    (
        prop_oneof![
            4 => prop::sample::select(vec!["GET", "POST", "PUT", "PATCH", "DELETE"]),
            1 => prop::sample::select(vec!["HEAD", "OPTIONS", "BREW"]),
        ]
        .prop_map(String::from),
        path(),
        query(),
        content_type(),
        accept(),
        body(),
    )
        .prop_map(
            |(method, segments, query, content_type, accept, body)| Req {
                method,
                segments,
                query,
                content_type,
                accept,
                body,
            },
        )
}

impl Req {
    fn uri(&self) -> String {
        let path = format!("/{}", self.segments.join("/"));
        if self.query.is_empty() {
            return path;
        }
        let q: Vec<String> = self
            .query
            .iter()
            .map(|(k, v)| format!("{}={}", percent(k), percent(v)))
            .collect();
        format!("{path}?{}", q.join("&"))
    }

    fn streams(&self) -> bool {
        self.segments.iter().any(|s| s == "watch" || s == "log")
            || self.query.iter().any(|(k, v)| {
                (k == "watch" || k == "follow")
                    && matches!(v.as_str(), "1" | "t" | "T" | "true" | "True" | "TRUE")
            })
    }
}

async fn send(
    api: &Arc<Api>,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
    streams: bool,
) -> (u16, Option<String>, Option<Bytes>, bool) {
    let mut builder = http::Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    let request = builder
        .body(api::full(body))
        .expect("a request the generator built");
    let response = api::handle(api.clone(), request, None).await;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    // A watch or a followed log streams until the client goes: read what comes within a moment. Anything else
    // gets as long as a slow machine needs.
    let within = if streams {
        Duration::from_millis(300)
    } else {
        Duration::from_secs(30)
    };
    match tokio::time::timeout(within, response.into_body().collect()).await {
        Ok(Ok(collected)) => (status, content_type, Some(collected.to_bytes()), false),
        Ok(Err(never)) => match never {},
        Err(_) => (status, content_type, None, true),
    }
}

fn check(api: &Arc<Api>, rt: &tokio::runtime::Runtime, req: &Req) -> Result<(), TestCaseError> {
    let uri = req.uri();
    if http::Uri::try_from(uri.as_str()).is_err() {
        return Ok(());
    }
    let mut headers = Vec::new();
    if let Some(c) = &req.content_type {
        headers.push(("content-type", c.as_str()));
    }
    if let Some(a) = &req.accept {
        headers.push(("accept", a.as_str()));
    }
    let (status, content_type, body, streamed) = rt.block_on(send(
        api,
        &req.method,
        &uri,
        &headers,
        req.body.clone(),
        req.streams(),
    ));
    prop_assert!(
        status != 500,
        "{} {} answered 500: {:?}",
        req.method,
        uri,
        body.as_ref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
    );
    if streamed {
        prop_assert!(
            req.streams() && status == 200,
            "{} {} never finished its answer ({})",
            req.method,
            uri,
            status
        );
    }
    let json = content_type
        .as_deref()
        .is_some_and(|c| c.starts_with("application/json"));
    if status >= 400
        && json
        && let Some(body) = &body
    {
        let s: Value = serde_json::from_slice(body).map_err(|e| {
            TestCaseError::fail(format!(
                "{} {uri}: a {status} whose JSON does not parse: {e}",
                req.method
            ))
        })?;
        prop_assert_eq!(&s["kind"], "Status", "{} {}: {}", req.method, uri, s);
        prop_assert_eq!(&s["apiVersion"], "v1");
        prop_assert_eq!(&s["status"], "Failure");
        prop_assert_eq!(
            s["code"].as_u64(),
            Some(u64::from(status)),
            "{} {}: {}",
            req.method,
            uri,
            s
        );
        prop_assert!(
            s["reason"].as_str().is_some_and(|r| !r.is_empty()),
            "{} {}: no reason in {}",
            req.method,
            uri,
            s
        );
        prop_assert!(
            s["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{} {}: no message in {}",
            req.method,
            uri,
            s
        );
    }
    let (healthy, ..) = rt.block_on(send(
        api,
        "GET",
        "/api/v1/namespaces",
        &[],
        Vec::new(),
        false,
    ));
    prop_assert_eq!(
        healthy,
        200,
        "the server stopped listing namespaces after {} {}",
        req.method,
        uri
    );
    Ok(())
}

proptest! {
    #[test]
    fn fuzz_kube_sim_requests(requests in prop::collection::vec(request(), 1..6)) {
        // Each case on a new server, so that one case's objects never make another's fail.
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        let api = rt.block_on(async { server() });
        for req in &requests {
            check(&api, &rt, req)?;
        }
    }
}
