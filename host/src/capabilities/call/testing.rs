//! Test support for the capabilities' grant checks, without wasm: a call's core for a plugin holding given
//! grants and reconciling a given object (its call-context in the core's table), a Kubernetes reader that serves
//! a few kinds from memory, a management cluster that serves a few Secrets, and the assertions every refusal
//! shares: the answer is `denied`, names the capability and the target, and the refusal is recorded for the
//! object's Event and condition.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::Full;
use serde_json::{Value, json};
use wasmtime::component::Resource;

use super::{CallCore, Management};
use crate::capabilities::{
    BoxFuture, CallContext, CallObject, GetRequest, Grants, HostError, HostFailure, KindScope,
    KubeReader, ListRequest, OutputBounds, SecretField,
};

/// The namespace the reconciled object lives in.
pub(crate) const NS: &str = "team";
/// The reconciled object's UID (what an owner label must carry).
pub(crate) const UID: &str = "uid-1";

/// A call in progress: its core and the handle the plugin would pass.
pub(crate) struct TestCall {
    pub core: CallCore,
    pub ctx: Resource<CallContext>,
    /// Refusals asserted so far: each assertion checks the records this call made since the last one.
    asserted: std::cell::Cell<usize>,
}

impl TestCall {
    /// A call of plugin `hostile` holding `grants`, reconciling `object` (given a namespace, name and UID), whose
    /// declared secret fields are `fields` (a name path and an optional namespace path each).
    pub fn new(grants: &[&str], mut object: Value, fields: &[(&str, Option<&str>)]) -> Self {
        object["metadata"] = json!({"name": "obj", "namespace": NS, "uid": UID});
        let grants = Grants::parse(grants).expect("valid grants");
        let fields: Vec<SecretField> = fields
            .iter()
            .map(|(name, namespace)| SecretField {
                name: (*name).to_string(),
                namespace: namespace.map(str::to_string),
            })
            .collect();
        let mut core = CallCore::new("hostile".into(), grants.into(), fields.into());
        let object = CallObject::new(object.to_string(), Some(NS.into()));
        let deadline = Instant::now() + Duration::from_secs(30);
        let context = CallContext::new(object, deadline, OutputBounds::default());
        let ctx = core.table.push(context).expect("a table entry");
        TestCall {
            core,
            ctx,
            asserted: std::cell::Cell::new(0),
        }
    }

    /// Another handle to the same call-context, as each host function takes its own.
    pub fn ctx(&self) -> Resource<CallContext> {
        Resource::new_borrow(self.ctx.rep())
    }

    /// Asserts `answer` is a refusal of `capability` whose message names `target` and says `why`, and that it
    /// was recorded for the object's report.
    pub fn assert_denied<T: std::fmt::Debug>(
        &self,
        answer: Result<T, HostFailure>,
        capability: &str,
        target: &str,
        why: &str,
    ) {
        let message = match answer {
            Err(HostFailure::Host(HostError::Denied(message))) => message,
            other => panic!("expected a {capability} denial ({why}), got {other:?}"),
        };
        assert!(
            message.contains("hostile"),
            "the plugin is named: {message}"
        );
        assert!(
            message.contains(target),
            "the target {target:?} is named: {message}"
        );
        assert!(message.contains(why), "{why:?} is said: {message}");
        assert_eq!(
            self.core.denials.len(),
            self.asserted.get() + 1,
            "this refusal, and only it, is recorded: {:?}",
            self.core.denials
        );
        self.asserted.set(self.core.denials.len());
        let denial = self.core.denials.last().expect("the refusal is recorded");
        assert_eq!(denial.capability, capability, "{message}");
        assert!(
            denial.target.contains(target) || denial.reason.contains(target),
            "{denial:?}"
        );
        assert!(denial.reason.contains(why), "{denial:?}");
    }

    /// Asserts the grant checks let `answer` through: it is anything but a refusal (with the services a unit
    /// test has, usually `unavailable` or `not-found` from the fake behind them), and nothing was recorded.
    pub fn assert_allowed<T: std::fmt::Debug>(&self, answer: &Result<T, HostFailure>) {
        assert!(
            !matches!(answer, Err(HostFailure::Host(HostError::Denied(_)))),
            "refused: {answer:?}"
        );
        assert_eq!(
            self.core.denials.len(),
            self.asserted.get(),
            "nothing new is recorded: {:?}",
            self.core.denials
        );
    }
}

/// A Kubernetes reader serving a fixed set of kinds: `apps/v1 Deployment` and `v1 ConfigMap` and `v1 Secret`
/// (namespaced), `v1 Namespace` (cluster-scoped); every get finds nothing and every list is empty.
pub(crate) struct FakeKinds;

impl KubeReader for FakeKinds {
    fn kind_scope<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
    ) -> BoxFuture<'a, Result<KindScope, HostError>> {
        Box::pin(async move {
            let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
            let namespaced = match (group, kind) {
                ("apps", "Deployment") | ("", "ConfigMap") | ("", "Secret") => true,
                ("", "Namespace") => false,
                _ => return Err(HostError::NotFound(format!("no kind {api_version} {kind}"))),
            };
            Ok(KindScope {
                group: group.to_string(),
                kind: kind.to_string(),
                namespaced,
            })
        })
    }

    fn get(&self, _request: GetRequest) -> BoxFuture<'_, Result<Option<Value>, HostError>> {
        Box::pin(async { Ok(None) })
    }

    fn list(&self, _request: ListRequest) -> BoxFuture<'_, Result<Vec<Value>, HostError>> {
        Box::pin(async { Ok(Vec::new()) })
    }
}

/// A kubeconfig for a workload cluster nobody listens for (a client is built from it; any request fails).
pub(crate) const KUBECONFIG: &str = concat!(
    "apiVersion: v1\nkind: Config\n",
    "clusters:\n- name: edge\n  cluster:\n    server: https://127.0.0.1:1\n",
    "users:\n- name: edge\n  user:\n    token: t\n",
    "contexts:\n- name: edge\n  context:\n    cluster: edge\n    user: edge\n",
    "current-context: edge\n",
);

/// A management cluster answering GETs of the Secrets given (`namespace`, `name`, `key`, `value`), 404 for other
/// GETs as the API server does, and 405 for every write: enough for the capabilities to get past every check to
/// their I/O, never a write that seems to succeed.
pub(crate) fn management(secrets: &[(&str, &str, &str, &str)]) -> Management {
    let mut served: BTreeMap<String, String> = BTreeMap::new();
    for (namespace, name, key, value) in secrets {
        let data = json!({ *key: base64::engine::general_purpose::STANDARD.encode(value) });
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": name, "namespace": namespace, "resourceVersion": "1"}, "data": data});
        served.insert(
            format!("/api/v1/namespaces/{namespace}/secrets/{name}"),
            secret.to_string(),
        );
    }
    let served = Arc::new(served);
    let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        let read = request.method() == http::Method::GET;
        let found = served.get(request.uri().path()).cloned();
        async move {
            let (status, body) = match found {
                _ if !read => (
                    405,
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                        "reason": "MethodNotAllowed", "code": 405, "message": "the fake serves reads only"})
                    .to_string(),
                ),
                Some(body) => (200, body),
                None => (
                    404,
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound",
                        "code": 404, "message": "not found"})
                    .to_string(),
                ),
            };
            http::Response::builder()
                .status(status)
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from(body)))
        }
    });
    Management::new(kube::Client::new(service, NS), Arc::default())
}
