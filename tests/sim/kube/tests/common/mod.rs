//! Helpers shared by the conformance tests: raw HTTP calls through a real kube-rs client, and fixtures.
#![allow(dead_code)]

use http_body_util::BodyExt;
use kube_sim::KubeSim;
use serde_json::{Value, json};

/// A raw reply: status, headers, and the body as JSON (Null when it is not JSON) and text.
pub struct Reply {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub json: Value,
    pub text: String,
}

impl Reply {
    pub fn message(&self) -> &str {
        self.json["message"].as_str().unwrap_or_default()
    }
    pub fn reason(&self) -> &str {
        self.json["reason"].as_str().unwrap_or_default()
    }
}

/// Sends one request with the client's credentials and TLS, returning whatever the server answered.
pub async fn raw(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> Reply {
    let mut b = http::Request::builder().method(method).uri(path);
    if let Some(ct) = content_type {
        b = b.header("content-type", ct);
    }
    let req = b
        .body(kube::client::Body::from(body))
        .expect("request builds");
    let resp = client.send(req).await.expect("server answers");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .expect("body reads")
        .to_bytes();
    let text = String::from_utf8_lossy(&bytes).to_string();
    let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Reply {
        status,
        headers,
        json,
        text,
    }
}

pub async fn get(client: &kube::Client, path: &str) -> Reply {
    raw(client, "GET", path, None, Vec::new()).await
}

pub async fn send_json(client: &kube::Client, method: &str, path: &str, body: &Value) -> Reply {
    raw(
        client,
        method,
        path,
        Some("application/json"),
        serde_json::to_vec(body).expect("json"),
    )
    .await
}

pub async fn patch(client: &kube::Client, path: &str, content_type: &str, body: &Value) -> Reply {
    raw(
        client,
        "PATCH",
        path,
        Some(content_type),
        serde_json::to_vec(body).expect("json"),
    )
    .await
}

pub const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd], categories: [omni]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    - {name: Size, type: integer, jsonPath: .spec.size}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer, minimum: 1, maximum: 10}
              mode: {type: string, enum: [fast, slow], default: fast}
              tags: {type: array, items: {type: string}, x-kubernetes-list-type: set}
              port: {x-kubernetes-int-or-string: true}
          status:
            type: object
            properties:
              phase: {type: string}
              conditions:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [type]
                items:
                  type: object
                  required: [type, status]
                  properties:
                    type: {type: string}
                    status: {type: string}
                    reason: {type: string}
"#;

pub const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";
pub const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
pub const SECRETS: &str = "/api/v1/namespaces/default/secrets";

/// An admin client without kube-rs's retry layer (it retries 429/503/504 by itself), to see raw answers.
pub async fn client_without_retries(sim: &KubeSim) -> kube::Client {
    let kc =
        kube::config::Kubeconfig::from_yaml(&sim.kubeconfig(&sim.admin())).expect("kubeconfig");
    let mut cfg =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .expect("config");
    cfg.default_retry = false;
    kube::Client::try_from(cfg).expect("client")
}

/// POSTs `obj` to a custom resource's collection, retrying while its CRD is not yet served (up to 2 s);
/// returns the last answer's status.
pub async fn create_when_served(client: &kube::Client, collection: &str, obj: &Value) -> u16 {
    let mut status = 0;
    for _ in 0..100 {
        status = send_json(client, "POST", collection, obj).await.status;
        if status == 201 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    status
}

/// A server with the Widget CRD installed and served.
pub async fn sim_with_widgets() -> (KubeSim, kube::Client) {
    let sim = KubeSim::start().await.expect("server starts");
    sim.apply_yaml(WIDGET_CRD).await.expect("CRD applies");
    let client = sim.client().await.expect("client");
    for _ in 0..50 {
        if get(&client, WIDGETS).await.status == 200 {
            return (sim, client);
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("widgets never became served");
}

pub fn widget(name: &str, size: i64) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": {"size": size}})
}

pub fn configmap(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

/// Polls until `f` is true or 5 s pass.
pub async fn eventually<F: FnMut() -> bool>(what: &str, mut f: F) {
    for _ in 0..250 {
        if f() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for: {what}");
}
