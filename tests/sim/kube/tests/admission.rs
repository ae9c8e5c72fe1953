//! Dynamic admission as kube-apiserver does it: AdmissionReview v1 over HTTPS verified against caBundle,
//! mutating patches, denials with the webhook's message and warnings, failurePolicy, timeouts, rules and
//! namespaceSelector. The webhook here is a real HTTPS server.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine as _;
use bytes::Bytes;
use common::*;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};

/// A webhook server: `/deny` refuses ConfigMaps with a `forbidden` key, `/mutate` adds a label, `/slow` sleeps.
struct Webhook {
    addr: SocketAddr,
    calls: Arc<AtomicUsize>,
}

async fn start_webhook(cert_pem: &str, key_pem: &str) -> Webhook {
    let certs = kube_sim::tls::pem_certs(cert_pem).expect("cert");
    let key = kube_sim::tls::pem_key(key_pem).expect("key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .expect("server config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let counter = counter.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                let svc = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let counter = counter.clone();
                    async move {
                        counter.fetch_add(1, Ordering::SeqCst);
                        let path = req.uri().path().to_string();
                        let body = req.into_body().collect().await.expect("body").to_bytes();
                        let review: Value = serde_json::from_slice(&body).expect("review json");
                        let resp = answer(&path, &review["request"]).await;
                        let out = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp});
                        Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(
                            Bytes::from(out.to_string()),
                        )))
                    }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), svc)
                    .await;
            });
        }
    });
    Webhook { addr, calls }
}

async fn answer(path: &str, request: &Value) -> Value {
    let uid = request["uid"].clone();
    match path {
        "/deny" => {
            let forbidden = request["object"]["data"].get("forbidden").is_some();
            if forbidden {
                json!({"uid": uid, "allowed": false, "status": {"message": "no forbidden keys", "code": 403}, "warnings": ["checked by policy"]})
            } else {
                json!({"uid": uid, "allowed": true, "warnings": ["checked by policy"]})
            }
        }
        "/mutate" => {
            let has_labels = request["object"]["metadata"]["labels"].is_object();
            let ops = if has_labels {
                json!([{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}])
            } else {
                json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}])
            };
            let patch = base64::engine::general_purpose::STANDARD.encode(ops.to_string());
            json!({"uid": uid, "allowed": true, "patchType": "JSONPatch", "patch": patch})
        }
        "/fill" => {
            let ops = json!([{"op": "add", "path": "/spec/size", "value": 3}]);
            let patch = base64::engine::general_purpose::STANDARD.encode(ops.to_string());
            json!({"uid": uid, "allowed": true, "patchType": "JSONPatch", "patch": patch})
        }
        "/slow" => {
            tokio::time::sleep(std::time::Duration::from_secs(3)).await;
            json!({"uid": uid, "allowed": true})
        }
        _ => json!({"uid": uid, "allowed": false}),
    }
}

fn validating(name: &str, url: &str, ca: &str, policy: &str, extra: Value) -> Value {
    let mut hook = json!({
        "name": name,
        "clientConfig": {"url": url, "caBundle": base64::engine::general_purpose::STANDARD.encode(ca)},
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "failurePolicy": policy, "sideEffects": "None", "admissionReviewVersions": ["v1"], "timeoutSeconds": 1,
    });
    if let (Some(h), Some(e)) = (hook.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            h.insert(k.clone(), v.clone());
        }
    }
    hook
}

async fn install(c: &kube::Client, kind: &str, hooks: Vec<Value>) {
    let plural = if kind == "ValidatingWebhookConfiguration" {
        "validatingwebhookconfigurations"
    } else {
        "mutatingwebhookconfigurations"
    };
    let cfg = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": "policy"}, "webhooks": hooks});
    let r = send_json(
        c,
        "POST",
        &format!("/apis/admissionregistration.k8s.io/v1/{plural}"),
        &cfg,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
}

async fn setup() -> (kube_sim::KubeSim, kube::Client, Webhook, String) {
    let sim = kube_sim::KubeSim::start().await.expect("start");
    let c = sim.client().await.expect("client");
    let (cert, key) = sim.issue_server_cert(&["127.0.0.1"]).expect("webhook cert");
    let hook = start_webhook(&cert, &key).await;
    let ca = sim.ca_pem().to_string();
    (sim, c, hook, ca)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_validating_webhook_denial_returns_its_message_code_and_warnings() {
    let (_sim, c, hook, ca) = setup().await;
    install(
        &c,
        "ValidatingWebhookConfiguration",
        vec![validating(
            "deny.example.com",
            &format!("https://{}/deny", hook.addr),
            &ca,
            "Fail",
            json!({}),
        )],
    )
    .await;
    let r = send_json(
        &c,
        "POST",
        CONFIGMAPS,
        &configmap("bad", json!({"forbidden": "x"})),
    )
    .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.message(),
        "admission webhook \"deny.example.com\" denied the request: no forbidden keys"
    );
    let ok = send_json(
        &c,
        "POST",
        CONFIGMAPS,
        &configmap("good", json!({"k": "v"})),
    )
    .await;
    assert_eq!(ok.status, 201);
    assert_eq!(ok.headers["warning"], "299 - \"checked by policy\"");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutating_webhook_patch_is_stored() {
    let (sim, c, hook, ca) = setup().await;
    let mut h = validating(
        "mutate.example.com",
        &format!("https://{}/mutate", hook.addr),
        &ca,
        "Fail",
        json!({}),
    );
    h["reinvocationPolicy"] = json!("Never");
    install(&c, "MutatingWebhookConfiguration", vec![h]).await;
    let r = send_json(&c, "POST", CONFIGMAPS, &configmap("a", json!({}))).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json["metadata"]["labels"]["mutated"], "yes");
    assert_eq!(
        sim.get("v1", "ConfigMap", "default", "a").expect("stored")["metadata"]["labels"]["mutated"],
        "yes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_certificate_fails_closed_or_is_ignored_by_failure_policy() {
    let (_sim, c, hook, _ca) = setup().await;
    let other_ca = kube_sim::tls::Pki::generate().expect("other CA");
    let url = format!("https://{}/deny", hook.addr);
    install(
        &c,
        "ValidatingWebhookConfiguration",
        vec![validating(
            "strict.example.com",
            &url,
            other_ca.ca_cert_pem(),
            "Fail",
            json!({}),
        )],
    )
    .await;
    let r = send_json(&c, "POST", CONFIGMAPS, &configmap("a", json!({}))).await;
    assert_eq!((r.status, r.reason()), (500, "InternalError"));
    assert!(
        r.message()
            .contains("failed calling webhook \"strict.example.com\""),
        "{}",
        r.message()
    );
    assert_eq!(
        hook.calls.load(Ordering::SeqCst),
        0,
        "no request passes an unverified TLS handshake"
    );
    let r = patch(
        &c,
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/policy",
        "application/json-patch+json",
        &json!([{"op": "replace", "path": "/webhooks/0/failurePolicy", "value": "Ignore"}]),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        send_json(&c, "POST", CONFIGMAPS, &configmap("b", json!({})))
            .await
            .status,
        201
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_webhook_times_out_after_timeout_seconds() {
    let (_sim, c, hook, ca) = setup().await;
    let url = format!("https://{}/slow", hook.addr);
    install(
        &c,
        "ValidatingWebhookConfiguration",
        vec![validating("slow.example.com", &url, &ca, "Fail", json!({}))],
    )
    .await;
    let start = std::time::Instant::now();
    let r = send_json(&c, "POST", CONFIGMAPS, &configmap("a", json!({}))).await;
    assert_eq!(r.status, 500);
    assert!(
        r.message().contains("context deadline exceeded"),
        "{}",
        r.message()
    );
    assert!(
        start.elapsed() < std::time::Duration::from_millis(2500),
        "timeoutSeconds=1 bounds the call"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_and_namespace_selector_decide_which_requests_are_sent() {
    let (_sim, c, hook, ca) = setup().await;
    let url = format!("https://{}/deny", hook.addr);
    let extra = json!({"namespaceSelector": {"matchLabels": {"policy": "on"}},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]});
    install(
        &c,
        "ValidatingWebhookConfiguration",
        vec![validating("scoped.example.com", &url, &ca, "Fail", extra)],
    )
    .await;
    send_json(&c, "POST", "/api/v1/namespaces", &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "guarded", "labels": {"policy": "on"}}})).await;
    let r = send_json(
        &c,
        "POST",
        "/api/v1/namespaces/guarded/configmaps",
        &configmap("x", json!({"forbidden": "1"})),
    )
    .await;
    assert_eq!(r.status, 403, "selected namespace is checked");
    let r = send_json(
        &c,
        "POST",
        CONFIGMAPS,
        &configmap("x", json!({"forbidden": "1"})),
    )
    .await;
    assert_eq!(r.status, 201, "default has no policy label");
    let calls = hook.calls.load(Ordering::SeqCst);
    send_json(
        &c,
        "POST",
        "/api/v1/namespaces/guarded/configmaps",
        &configmap("y", json!({})),
    )
    .await;
    patch(
        &c,
        "/api/v1/namespaces/guarded/configmaps/y",
        "application/merge-patch+json",
        &json!({"data": {"forbidden": "1"}}),
    )
    .await;
    assert_eq!(
        hook.calls.load(Ordering::SeqCst),
        calls + 1,
        "UPDATE is not in the rules, so only the create was sent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_references_are_routed_to_a_local_address() {
    let sim = kube_sim::KubeSim::start().await.expect("start");
    let c = sim.client().await.expect("client");
    let (cert, key) = sim
        .issue_server_cert(&["policy.webhooks.svc"])
        .expect("cert");
    let hook = start_webhook(&cert, &key).await;
    sim.route_service("webhooks", "policy", hook.addr);
    let mut h = validating("svc.example.com", "", sim.ca_pem(), "Fail", json!({}));
    h["clientConfig"] = json!({"service": {"namespace": "webhooks", "name": "policy", "path": "/deny"},
        "caBundle": base64::engine::general_purpose::STANDARD.encode(sim.ca_pem())});
    install(&c, "ValidatingWebhookConfiguration", vec![h]).await;
    let r = send_json(
        &c,
        "POST",
        CONFIGMAPS,
        &configmap("bad", json!({"forbidden": "x"})),
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.text);
}

/// The real order is decode, mutating admission, then validation: a webhook may fill in a required field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutating_webhooks_run_before_schema_validation() {
    let (sim, c, hook, ca) = setup().await;
    sim.apply_yaml(WIDGET_CRD).await.expect("crd");
    let mut h = validating(
        "fill.example.com",
        &format!("https://{}/fill", hook.addr),
        &ca,
        "Fail",
        json!({}),
    );
    h["rules"] = json!([{"operations": ["CREATE"], "apiGroups": ["example.com"], "apiVersions": ["v1"], "resources": ["widgets"]}]);
    install(&c, "MutatingWebhookConfiguration", vec![h]).await;
    let w = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {}});
    let mut r = send_json(&c, "POST", WIDGETS, &w).await;
    for _ in 0..50 {
        if r.status != 404 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        r = send_json(&c, "POST", WIDGETS, &w).await;
    }
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json["spec"]["size"], 3);
}
