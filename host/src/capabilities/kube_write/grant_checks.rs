//! The grant checks of `kube-write`, without wasm or an API server: each refusal is a test that fails if the
//! write reaches the writer.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wit::Host as _;

use super::*;
use crate::capabilities::call::testing::{NS, TestCall, UID};
use crate::capabilities::{BoxFuture, KindScope};
use crate::contract::{OPERATOR_LEASE, never_writable_kinds};

/// Resolves any kind: cluster-scoped when its name says so (as the built-in cluster-scoped kinds are named), or
/// it is one of the few others; namespaced otherwise.
struct AnyKind;

const CLUSTER_SCOPED: [&str; 6] = [
    "Namespace",
    "Node",
    "CustomResourceDefinition",
    "APIService",
    "Widget",
    "StorageClass",
];

impl KubeReader for AnyKind {
    fn kind_scope<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
    ) -> BoxFuture<'a, Result<KindScope, HostError>> {
        Box::pin(async move {
            let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
            let namespaced = !(kind.starts_with("Cluster")
                || kind.ends_with("Configuration")
                || kind.contains("AdmissionPolicy")
                || CLUSTER_SCOPED.contains(&kind));
            Ok(KindScope {
                group: group.into(),
                kind: kind.into(),
                namespaced,
            })
        })
    }

    fn get(&self, _request: GetRequest) -> BoxFuture<'_, Result<Option<Value>, HostError>> {
        Box::pin(async { Ok(None) })
    }

    fn list(
        &self,
        _request: crate::capabilities::ListRequest,
    ) -> BoxFuture<'_, Result<Vec<Value>, HostError>> {
        Box::pin(async { Ok(Vec::new()) })
    }
}

/// A writer that stores nothing: it records each request, answers a write with the object (a merge patch
/// applied to what it holds), and holds the objects a test gives it.
#[derive(Default)]
struct Recorder {
    stored: Mutex<BTreeMap<String, Value>>,
    writes: Mutex<Vec<WriteRequest>>,
    deletes: Mutex<Vec<DeleteRequest>>,
}

fn key(kind: &str, namespace: Option<&str>, name: &str) -> String {
    format!("{kind}/{}/{name}", namespace.unwrap_or_default())
}

impl Recorder {
    fn holding(objects: &[Value]) -> Arc<Recorder> {
        let recorder = Recorder::default();
        for o in objects {
            let k = key(
                o["kind"].as_str().unwrap_or_default(),
                o["metadata"]["namespace"].as_str(),
                o["metadata"]["name"].as_str().unwrap_or_default(),
            );
            recorder.stored.lock().unwrap().insert(k, o.clone());
        }
        Arc::new(recorder)
    }

    /// The writes made for real (dry runs left out).
    fn written(&self) -> Vec<WriteRequest> {
        let writes = self.writes.lock().unwrap();
        writes.iter().filter(|w| !w.dry_run).cloned().collect()
    }
}

impl KubeWriter for Recorder {
    fn write(&self, request: WriteRequest) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async move {
            self.writes.lock().unwrap().push(request.clone());
            let k = key(&request.kind, request.namespace.as_deref(), &request.name);
            let stored = self.stored.lock().unwrap().get(&k).cloned();
            match request.op {
                WriteOp::Apply { object, .. } | WriteOp::Create { object } => {
                    if !request.dry_run {
                        self.stored.lock().unwrap().insert(k, object.clone());
                    }
                    Ok(object)
                }
                WriteOp::MergePatch(patch) => {
                    let mut object = stored.ok_or_else(|| HostError::NotFound(k.clone()))?;
                    crate::contract::merge_patch(&mut object, &patch);
                    Ok(object)
                }
                WriteOp::JsonPatch(_) => stored.ok_or(HostError::NotFound(k)),
            }
        })
    }

    fn delete(&self, request: DeleteRequest) -> BoxFuture<'_, Result<bool, HostError>> {
        Box::pin(async move {
            self.deletes.lock().unwrap().push(request);
            Ok(true)
        })
    }

    fn get(&self, request: GetRequest) -> BoxFuture<'_, Result<Option<Value>, HostError>> {
        Box::pin(async move {
            let k = key(&request.kind, request.namespace.as_deref(), &request.name);
            Ok(self.stored.lock().unwrap().get(&k).cloned())
        })
    }
}

/// [`AnyKind`]'s kinds, and the [`Recorder`]'s objects as a watch cache would hold them.
struct Cached(Arc<Recorder>);

impl KubeReader for Cached {
    fn kind_scope<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
    ) -> BoxFuture<'a, Result<KindScope, HostError>> {
        AnyKind.kind_scope(api_version, kind)
    }

    fn get(&self, request: GetRequest) -> BoxFuture<'_, Result<Option<Value>, HostError>> {
        KubeWriter::get(&*self.0, request)
    }

    fn list(
        &self,
        _request: crate::capabilities::ListRequest,
    ) -> BoxFuture<'_, Result<Vec<Value>, HostError>> {
        Box::pin(async { Ok(Vec::new()) })
    }
}

/// The reconciled object: a Widget of `example.com/v1` in [`NS`].
fn widget() -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "SiteWidget"})
}

/// A call reconciling [`widget`] (TestCall gives it its name, namespace and UID).
fn call(grants: &[&str]) -> TestCall {
    TestCall::new(grants, widget(), &[])
}

fn services(writer: &Arc<Recorder>) -> Services {
    Services {
        kinds: Arc::new(AnyKind),
        writer: writer.clone(),
        ledger: Arc::new(WriteLedger::new(WRITES_PER_SECOND, WRITE_BURST)),
    }
}

fn options() -> wit::WriteOptions {
    wit::WriteOptions {
        owned: false,
        dry_run: false,
        force: false,
    }
}

fn owned() -> wit::WriteOptions {
    wit::WriteOptions {
        owned: true,
        ..options()
    }
}

fn config_map(name: &str, namespace: Option<&str>) -> Value {
    let mut o = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
        "data": {"k": "v"}});
    if let Some(ns) = namespace {
        o["metadata"]["namespace"] = json!(ns);
    }
    o
}

async fn apply(
    call: &mut TestCall,
    services: &Services,
    object: &Value,
    options: wit::WriteOptions,
) -> Result<String, HostFailure> {
    let ctx = call.ctx();
    let mut state = State::default();
    KubeWriteCap::over(&mut call.core, &mut state, services)
        .apply(ctx, object.to_string(), options)
        .await
}

/// A merge patch of `kind` `name` (in the object's namespace).
async fn merge_patch(
    call: &mut TestCall,
    services: &Services,
    (kind, name): (&str, &str),
    patch: Value,
) -> Result<String, HostFailure> {
    let ctx = call.ctx();
    let mut state = State::default();
    KubeWriteCap::over(&mut call.core, &mut state, services)
        .patch(
            ctx,
            reference(kind, name),
            wit::PatchType::Merge,
            patch.to_string(),
            options(),
        )
        .await
}

async fn delete(
    call: &mut TestCall,
    services: &Services,
    (kind, name): (&str, &str),
    options: wit::DeleteOptions,
) -> Result<bool, HostFailure> {
    let ctx = call.ctx();
    let mut state = State::default();
    KubeWriteCap::over(&mut call.core, &mut state, services)
        .delete(ctx, reference(kind, name), options)
        .await
}

fn background() -> wit::DeleteOptions {
    wit::DeleteOptions {
        uid: None,
        resource_version: None,
        propagation: wit::Propagation::Background,
        dry_run: false,
    }
}

fn reference(kind: &str, name: &str) -> wit::ObjectRef {
    let api_version = match kind {
        "Secret" | "ConfigMap" => "v1",
        _ => "apps/v1",
    };
    wit::ObjectRef {
        api_version: api_version.into(),
        kind: kind.into(),
        namespace: None,
        name: name.into(),
    }
}

const CONFIG_MAPS: &str = "kube-write:core/v1/ConfigMap";

#[tokio::test]
async fn a_write_needs_kube_write_and_a_grant_naming_its_exact_kind() {
    let writer = Recorder::holding(&[]);
    let services = services(&writer);
    let object = config_map("settings", None);
    let mut bare = call(&["kube-read"]);
    let answer = apply(&mut bare, &services, &object, options()).await;
    bare.assert_denied(
        answer,
        "kube-write",
        "ConfigMap \"settings\"",
        "not granted \"kube-write\"",
    );
    let mut other_kind = call(&["kube-write:apps/v1/Deployment"]);
    let answer = apply(&mut other_kind, &services, &object, options()).await;
    other_kind.assert_denied(
        answer,
        "kube-write",
        "settings",
        "`kube-write:core/v1/ConfigMap`",
    );
    // Another version of a granted kind is another grant.
    let mut v1beta1 = call(&["kube-write:apps/v1beta1/Deployment"]);
    let deployment =
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}});
    let answer = apply(&mut v1beta1, &services, &deployment, options()).await;
    v1beta1.assert_denied(
        answer,
        "kube-write",
        "\"d\"",
        "`kube-write:apps/v1/Deployment`",
    );
    assert!(writer.written().is_empty(), "nothing refused was written");

    let mut granted = call(&[CONFIG_MAPS]);
    let answer = apply(&mut granted, &services, &object, options()).await;
    granted.assert_allowed(&answer);
    let written = writer.written();
    assert_eq!(written.len(), 1);
    assert_eq!(
        written[0].field_manager, "omni-plugin:hostile",
        "the manager names the plugin"
    );
    assert_eq!(
        written[0].namespace.as_deref(),
        Some(NS),
        "the object's own namespace by default"
    );
    let WriteOp::Apply { object, force } = &written[0].op else {
        panic!("an apply: {:?}", written[0].op);
    };
    assert!(!force);
    assert_eq!(
        object["metadata"]["namespace"], NS,
        "the body says the namespace the URL does"
    );
}

#[tokio::test]
async fn the_kinds_no_grant_reaches_are_refused_whatever_else_is_granted() {
    let writer = Recorder::holding(&[]);
    let services = services(&writer);
    // Every grant that parses, and the namespaces: the never-writable kinds cannot be granted, so this is the
    // widest set an administrator can write.
    let wide = [
        "kube-write",
        "kube-write-namespace:*",
        "secrets-write",
        "kube-write-allow:force",
        "kube-write-allow:privileged",
    ];
    for (group, kind) in never_writable_kinds() {
        let mut wide = call(&wide);
        let api_version = if group.is_empty() {
            "v1".to_owned()
        } else {
            format!("{group}/v1")
        };
        let object = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}});
        let answer = apply(&mut wide, &services, &object, options()).await;
        wide.assert_denied(answer, "kube-write", kind, "can be written by no grant");
    }
    // The operator's Lease, although Leases may be granted.
    let mut leases = call(&["kube-write:coordination.k8s.io/v1/Lease"]);
    let lease = |name: &str| json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name}});
    let answer = apply(&mut leases, &services, &lease(OPERATOR_LEASE), options()).await;
    leases.assert_denied(answer, "kube-write", "Lease", "leader-election Lease");
    assert!(writer.written().is_empty(), "nothing refused was written");
    let answer = apply(&mut leases, &services, &lease("my-plugin-lock"), options()).await;
    leases.assert_allowed(&answer);
}

#[tokio::test]
async fn another_namespace_needs_its_write_grant_and_cluster_scoped_kinds_theirs() {
    let writer = Recorder::holding(&[]);
    let services = services(&writer);
    let mut own = call(&[CONFIG_MAPS, "namespace:other", "kube-read:*"]);
    let answer = apply(
        &mut own,
        &services,
        &config_map("c", Some("other")),
        options(),
    )
    .await;
    own.assert_denied(
        answer,
        "kube-write",
        "\"c\"",
        "`kube-write-namespace:other`",
    );
    assert!(
        writer.written().is_empty(),
        "a read grant of the namespace writes nothing"
    );
    let mut wider = call(&[CONFIG_MAPS, "kube-write-namespace:other"]);
    let answer = apply(
        &mut wider,
        &services,
        &config_map("c", Some("other")),
        options(),
    )
    .await;
    wider.assert_allowed(&answer);
    assert_eq!(writer.written()[0].namespace.as_deref(), Some("other"));

    let widget =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    let mut namespaced = call(&["kube-write:example.com/v1/Widget"]);
    let answer = apply(&mut namespaced, &services, &widget, options()).await;
    namespaced.assert_denied(
        answer,
        "kube-write",
        "Widget",
        "`kube-write-cluster:example.com/v1/Widget`",
    );
    let mut cluster = call(&["kube-write-cluster:example.com/v1/Widget"]);
    let answer = apply(&mut cluster, &services, &widget, options()).await;
    cluster.assert_allowed(&answer);
    assert_eq!(
        writer.written()[1].namespace,
        None,
        "cluster-scoped: no namespace"
    );
    let mut placed = widget.clone();
    placed["metadata"]["namespace"] = json!(NS);
    let answer = apply(&mut cluster, &services, &placed, options()).await;
    assert!(
        matches!(&answer, Err(HostFailure::Host(HostError::Invalid(m))) if m.contains("cluster-scoped")),
        "{answer:?}"
    );
}

#[tokio::test]
async fn only_the_reconciled_object_may_own_what_a_plugin_writes() {
    let writer = Recorder::holding(&[]);
    let services = services(&writer);
    let mut c = call(&[CONFIG_MAPS, "kube-write-namespace:other"]);
    let mut stolen = config_map("c", None);
    stolen["metadata"]["ownerReferences"] = json!([{"apiVersion": "example.com/v1", "kind": "SiteWidget",
        "name": "someone-else", "uid": "uid-2", "controller": true}]);
    let answer = apply(&mut c, &services, &stolen, options()).await;
    c.assert_denied(
        answer,
        "kube-write",
        "\"c\"",
        "not the object this call reconciles",
    );
    let answer = apply(&mut c, &services, &stolen, owned()).await;
    c.assert_denied(
        answer,
        "kube-write",
        "\"c\"",
        "not the object this call reconciles",
    );
    assert!(writer.written().is_empty());

    let answer = apply(&mut c, &services, &config_map("c", None), owned()).await;
    c.assert_allowed(&answer);
    let stored: Value = serde_json::from_str(&answer.expect("applied")).expect("json");
    let refs = &stored["metadata"]["ownerReferences"];
    assert_eq!(
        refs,
        &json!([{"apiVersion": "example.com/v1", "kind": "SiteWidget", "name": "obj", "uid": UID,
            "controller": true, "blockOwnerDeletion": true}])
    );
    // An owned object anywhere but its owner's namespace would be collected at once.
    let answer = apply(&mut c, &services, &config_map("c", Some("other")), owned()).await;
    assert!(
        matches!(&answer, Err(HostFailure::Host(HostError::Invalid(m))) if m.contains("owner's namespace")),
        "{answer:?}"
    );
    // A patch never changes owners.
    let answer = merge_patch(
        &mut c,
        &services,
        ("ConfigMap", "c"),
        json!({"metadata": {"ownerReferences": []}}),
    )
    .await;
    c.assert_denied(
        answer,
        "kube-write",
        "\"c\"",
        "never changes owner references",
    );
    assert_eq!(
        writer.written().len(),
        1,
        "only the owned apply was written"
    );
}

fn secret(name: &str, kind: Option<&str>) -> Value {
    let mut s = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NS},
        "data": {"token": "c2VjcmV0"}});
    if let Some(kind) = kind {
        s["type"] = json!(kind);
    }
    s
}

#[tokio::test]
async fn secrets_need_secrets_write_and_never_a_service_account_token() {
    let token = "kubernetes.io/service-account-token";
    let writer = Recorder::holding(&[
        secret("sa-token", Some(token)),
        secret("app", Some("Opaque")),
    ]);
    let services = services(&writer);
    let secrets = "kube-write:core/v1/Secret";
    let mut kind_only = call(&[secrets]);
    let answer = apply(&mut kind_only, &services, &secret("new", None), options()).await;
    kind_only.assert_denied(answer, "kube-write", "Secret", "\"secrets-write\"");

    let mut c = call(&[secrets, "secrets-write"]);
    let answer = apply(&mut c, &services, &secret("minted", Some(token)), options()).await;
    c.assert_denied(answer, "kube-write", "\"minted\"", "service-account-token");
    // Writing over an existing token without naming the type is refused too.
    let answer = apply(&mut c, &services, &secret("sa-token", None), options()).await;
    c.assert_denied(
        answer,
        "kube-write",
        "\"sa-token\"",
        "service-account-token",
    );
    let answer = merge_patch(
        &mut c,
        &services,
        ("Secret", "sa-token"),
        json!({"data": {"token": "bWluZQ=="}}),
    )
    .await;
    c.assert_denied(
        answer,
        "kube-write",
        "\"sa-token\"",
        "service-account-token",
    );
    let answer = delete(&mut c, &services, ("Secret", "sa-token"), background()).await;
    c.assert_denied(
        answer,
        "kube-write",
        "\"sa-token\"",
        "service-account-token",
    );
    assert!(writer.written().is_empty() && writer.deletes.lock().unwrap().is_empty());

    // An ordinary Secret is written; the answer holds no values unless the plugin may read them.
    let answer = apply(&mut c, &services, &secret("app", Some("Opaque")), options()).await;
    c.assert_allowed(&answer);
    let answer: Value = serde_json::from_str(&answer.expect("written")).expect("json");
    assert!(answer.get("data").is_none(), "{answer}");
    let mut reader = call(&[secrets, "secrets-write", "secrets", "secrets-read-values"]);
    let answer = apply(
        &mut reader,
        &services,
        &secret("app", Some("Opaque")),
        options(),
    )
    .await;
    let answer: Value = serde_json::from_str(&answer.expect("written")).expect("json");
    assert_eq!(answer["data"]["token"], "c2VjcmV0");
}

fn deployment(name: &str, pod: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
        "spec": {"template": {"spec": pod}}})
}

#[tokio::test]
async fn pods_stay_within_the_baseline_unless_granted_and_a_patch_is_checked_by_its_result() {
    let plain = json!({"containers": [{"name": "app", "image": "nginx"}]});
    let writer = Recorder::holding(&[deployment("web", plain.clone())]);
    let services = services(&writer);
    let deployments = "kube-write:apps/v1/Deployment";
    let mut c = call(&[deployments]);
    let privileged = json!({"containers": [{"name": "app", "image": "nginx",
        "securityContext": {"privileged": true}}]});
    let answer = apply(
        &mut c,
        &services,
        &deployment("root", privileged.clone()),
        options(),
    )
    .await;
    c.assert_denied(
        answer,
        "kube-write",
        "\"root\"",
        "kube-write-allow:privileged",
    );
    let other_account =
        json!({"serviceAccountName": "cluster-admin", "containers": plain["containers"]});
    let answer = apply(
        &mut c,
        &services,
        &deployment("sa", other_account),
        options(),
    )
    .await;
    c.assert_denied(
        answer,
        "kube-write",
        "\"sa\"",
        "kube-write-service-account:cluster-admin",
    );
    // A merge patch that adds a host path is judged by what it would store.
    let host_path = json!({"spec": {"template": {"spec": {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}}}});
    let answer = merge_patch(&mut c, &services, ("Deployment", "web"), host_path).await;
    c.assert_denied(
        answer,
        "kube-write",
        "\"web\"",
        "kube-write-allow:host-path",
    );
    assert!(
        writer.written().is_empty(),
        "only dry runs reached the writer"
    );
    assert!(
        writer.writes.lock().unwrap().iter().all(|w| w.dry_run),
        "the preview was a dry run"
    );

    let mut allowed = call(&[deployments, "kube-write-allow:privileged"]);
    let answer = apply(
        &mut allowed,
        &services,
        &deployment("root", privileged),
        options(),
    )
    .await;
    allowed.assert_allowed(&answer);
    assert_eq!(writer.written().len(), 1);
}

#[tokio::test]
async fn the_budgets_hold_bytes_per_object_writes_per_call_and_writes_per_second() {
    let writer = Recorder::holding(&[]);
    let services = services(&writer);
    let mut c = call(&[CONFIG_MAPS]);
    let mut huge = config_map("huge", None);
    huge["data"]["k"] = json!("x".repeat(10 << 20));
    let answer = apply(&mut c, &services, &huge, options()).await;
    c.assert_denied(
        answer,
        "kube-write",
        "kube-write apply",
        "at most 1048576 bytes",
    );
    assert!(writer.written().is_empty());

    // One call, many writes: the first WRITES_PER_CALL go through, every later one is refused.
    let ctx = c.ctx();
    let mut state = State::default();
    let mut cap = KubeWriteCap::over(&mut c.core, &mut state, &services);
    let mut refused = 0;
    for i in 0..WRITES_PER_CALL + 50 {
        let object = config_map(&format!("c{i}"), None).to_string();
        let ctx = Resource::new_borrow(ctx.rep());
        if let Err(HostFailure::Host(HostError::Denied(m))) =
            cap.apply(ctx, object, options()).await
        {
            assert!(m.contains("more than 100 writes"), "{m}");
            refused += 1;
        }
    }
    assert_eq!(refused, 50);
    assert_eq!(writer.written().len(), WRITES_PER_CALL);

    // Across calls, the plugin's rate: a burst, then writes paced at the rate, waiting their turn.
    let paced = Services {
        ledger: Arc::new(WriteLedger::new(10, 2)),
        ..services.clone()
    };
    let mut c = call(&[CONFIG_MAPS]);
    let started = std::time::Instant::now();
    for _ in 0..4 {
        let answer = apply(&mut c, &paced, &config_map("r", None), options()).await;
        c.assert_allowed(&answer);
    }
    assert!(
        started.elapsed() >= Duration::from_millis(150),
        "the two writes past the burst waited a tenth of a second each: {:?}",
        started.elapsed()
    );
    // A write whose turn is further off than a write may wait: `unavailable`, and a report.
    let slow = Services {
        ledger: Arc::new(WriteLedger::new(1, 2)),
        ..services.clone()
    };
    for _ in 0..3 {
        slow.ledger
            .reserve(Duration::from_secs(1))
            .expect("the burst, then one turn a second off");
    }
    let answer = apply(&mut c, &slow, &config_map("r", None), options()).await;
    assert!(
        matches!(&answer, Err(HostFailure::Host(HostError::Unavailable(m))) if m.contains("writes per second")),
        "{answer:?}"
    );
    assert_eq!(c.core.denials.len(), 1, "the throttled write is reported");
}

#[tokio::test]
async fn force_dry_run_and_deletes_pass_what_the_grants_allow() {
    let writer = Recorder::holding(&[]);
    let services = services(&writer);
    let forced = wit::WriteOptions {
        force: true,
        ..options()
    };
    let mut c = call(&[CONFIG_MAPS]);
    let answer = apply(&mut c, &services, &config_map("f", None), forced).await;
    c.assert_denied(answer, "kube-write", "\"f\"", "kube-write-allow:force");
    let mut force = call(&[CONFIG_MAPS, "kube-write-allow:force"]);
    let answer = apply(&mut force, &services, &config_map("f", None), forced).await;
    force.assert_allowed(&answer);
    let dry = wit::WriteOptions {
        dry_run: true,
        ..options()
    };
    let answer = apply(&mut force, &services, &config_map("d", None), dry).await;
    force.assert_allowed(&answer);
    let writes = writer.writes.lock().unwrap().clone();
    assert!(matches!(writes[0].op, WriteOp::Apply { force: true, .. }));
    assert!(writes[1].dry_run);

    let preconditions = wit::DeleteOptions {
        uid: Some("u".into()),
        resource_version: Some(String::new()),
        propagation: wit::Propagation::Foreground,
        dry_run: false,
    };
    let answer = delete(&mut force, &services, ("ConfigMap", "f"), preconditions).await;
    assert_eq!(answer.ok(), Some(true));
    let deletes = writer.deletes.lock().unwrap();
    assert_eq!(deletes[0].uid.as_deref(), Some("u"));
    assert_eq!(
        deletes[0].resource_version, None,
        "an empty precondition is none"
    );
    assert_eq!(deletes[0].propagation, Propagation::Foreground);
}

#[tokio::test]
async fn an_apply_that_would_change_nothing_is_answered_from_the_cache() {
    let writer = Recorder::holding(&[]);
    let services = Services {
        kinds: Arc::new(Cached(writer.clone())),
        ..services(&writer)
    };
    let mut c = call(&[CONFIG_MAPS]);
    let settings = config_map("c", None);
    let first = apply(&mut c, &services, &settings, owned()).await;
    c.assert_allowed(&first);
    let again = apply(&mut c, &services, &settings, owned()).await;
    assert_eq!(
        writer.written().len(),
        1,
        "the same body over the same object is not sent"
    );
    assert_eq!(
        again.ok(),
        first.ok(),
        "answered with the object as the cache holds it"
    );

    // Someone changed a value the plugin applies: sent, to put it back.
    let key = key("ConfigMap", Some(NS), "c");
    writer.stored.lock().unwrap().get_mut(&key).expect("stored")["data"]["k"] = json!("theirs");
    let _ = apply(&mut c, &services, &settings, owned()).await;
    assert_eq!(writer.written().len(), 2);
    // The plugin omits a field it set before: sent, so the server releases it, although the object holds the
    // rest.
    let mut fewer = settings.clone();
    fewer["data"] = json!({});
    let _ = apply(&mut c, &services, &fewer, owned()).await;
    assert_eq!(writer.written().len(), 3);
    // A dry run is always sent.
    let dry = wit::WriteOptions {
        dry_run: true,
        ..owned()
    };
    let _ = apply(&mut c, &services, &fewer, dry).await;
    assert_eq!(writer.writes.lock().unwrap().len(), 4);
}
