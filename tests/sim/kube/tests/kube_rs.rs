//! kube-rs 5 against kube-sim: the client library, kube-runtime's watcher, reflector, Controller and finalizer
//! helper, server-side apply, the status subresource, client-go style Lease leader election, fault handling,
//! pagination and several servers in one process. Each test starts its own server and asserts what a real
//! kube-apiserver would make these clients observe.
//!
//! `schemars` is not a dependency of this crate, so the custom resource below derives `CustomResource` with
//! `schema = "disabled"` and its CRD gets a hand-written structural schema before it is installed.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use http_body_util::BodyExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceValidation, JSONSchemaProps,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::Status;
use kube::runtime::WatchStreamExt;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{self, finalizer};
use kube::runtime::reflector::{self, reflector};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::watcher::{self, watcher};
use kube::{Client, CustomResource, CustomResourceExt, ResourceExt};
use kube_sim::{KubeSim, Matcher};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::mpsc;

type R<T = ()> = anyhow::Result<T>;

/// How long any single expectation may take before the test fails.
const WAIT: Duration = Duration::from_secs(15);

// ---------------------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------------------

/// Polls `f` until it yields Some, failing the test after `WAIT`.
async fn eventually<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The `Status` of an API error; anything else fails the test.
fn api_error<T: std::fmt::Debug>(r: kube::Result<T>) -> Box<Status> {
    match r {
        Err(kube::Error::Api(s)) => s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// A client without kube-rs's default retry layer (which retries 429/503/504 transparently).
async fn client_without_retries(sim: &KubeSim) -> R<Client> {
    let kc = kube::config::Kubeconfig::from_yaml(&sim.kubeconfig(&sim.admin()))?;
    let mut cfg =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await?;
    cfg.default_retry = false;
    Ok(Client::try_from(cfg)?)
}

/// One raw request through the client's transport: status, headers and JSON body.
async fn raw(
    client: &Client,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> R<(u16, http::HeaderMap, Value)> {
    let mut b = http::Request::builder().method(method).uri(path);
    if let Some(ct) = content_type {
        b = b.header("content-type", ct);
    }
    let resp = client.send(b.body(kube::client::Body::from(body))?).await?;
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp.into_body().collect().await?.to_bytes();
    Ok((
        status,
        headers,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    ))
}

fn cm(name: &str, v: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("v".to_string(), v.to_string())])),
        ..Default::default()
    }
}

fn data_v(c: &ConfigMap) -> Option<String> {
    c.data.as_ref().and_then(|d| d.get("v").cloned())
}

async fn create_namespace(client: &Client, name: &str) -> R {
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------------
// A custom resource, its CRD and installation
// ---------------------------------------------------------------------------------------------------------------

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "sim.example.com",
    version = "v1",
    kind = "Widget",
    plural = "widgets",
    namespaced,
    status = "WidgetStatus",
    schema = "disabled"
)]
pub struct WidgetSpec {
    pub size: i64,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

fn widget_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "required": ["size"], "properties": {"size": {"type": "integer"}}},
            "status": {"type": "object", "properties": {
                "phase": {"type": "string"},
                "observedGeneration": {"type": "integer", "format": "int64"}
            }}
        }
    })
}

/// Creates the Widget CRD through the API and waits for the apiextensions controllers to establish it.
async fn install_widget_crd(client: &Client) -> R<CustomResourceDefinition> {
    let mut crd = Widget::crd();
    assert!(
        crd.spec.versions[0]
            .subresources
            .as_ref()
            .is_some_and(|s| s.status.is_some()),
        "the derive enables the status subresource"
    );
    crd.spec.versions[0].schema = Some(CustomResourceValidation {
        open_api_v3_schema: Some(serde_json::from_value::<JSONSchemaProps>(widget_schema())?),
    });
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &crd).await?;
    let established = tokio::time::timeout(
        WAIT,
        await_condition(crds, Widget::crd_name(), conditions::is_crd_established()),
    )
    .await??
    .expect("the CRD exists");
    Ok(established)
}

fn widget(name: &str, size: i64) -> Widget {
    Widget::new(name, WidgetSpec { size })
}

// ---------------------------------------------------------------------------------------------------------------
// 1. watcher + reflector
// ---------------------------------------------------------------------------------------------------------------

/// What the test sees of a watcher event.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Init,
    InitApply(String),
    InitDone,
    Apply(String, Option<String>),
    Delete(String),
    Error(Option<u16>),
}

fn watcher_error_code(e: &watcher::Error) -> Option<u16> {
    match e {
        watcher::Error::WatchError(s) => Some(s.code),
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => Some(s.code),
        _ => None,
    }
}

/// Runs `reflector(watcher(..))` in the background, forwarding each event to the returned channel.
fn spawn_reflector(
    api: Api<ConfigMap>,
    cfg: watcher::Config,
) -> (
    reflector::Store<ConfigMap>,
    mpsc::UnboundedReceiver<Seen>,
    tokio::task::JoinHandle<()>,
) {
    let (reader, writer) = reflector::store::<ConfigMap>();
    let (tx, rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        let mut stream = reflector(writer, watcher(api, cfg)).boxed();
        while let Some(ev) = stream.next().await {
            let seen = match ev {
                Ok(watcher::Event::Init) => Seen::Init,
                Ok(watcher::Event::InitApply(o)) => Seen::InitApply(o.name_any()),
                Ok(watcher::Event::InitDone) => Seen::InitDone,
                Ok(watcher::Event::Apply(o)) => Seen::Apply(o.name_any(), data_v(&o)),
                Ok(watcher::Event::Delete(o)) => Seen::Delete(o.name_any()),
                Err(e) => Seen::Error(watcher_error_code(&e)),
            };
            if tx.send(seen).is_err() {
                return;
            }
        }
    });
    (reader, rx, task)
}

/// Receives events until one satisfies `pred`; returns every event received, the matching one last.
async fn until(
    rx: &mut mpsc::UnboundedReceiver<Seen>,
    what: &str,
    pred: impl Fn(&Seen) -> bool,
) -> Vec<Seen> {
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(ev)) => {
                let done = pred(&ev);
                got.push(ev);
                if done {
                    return got;
                }
            }
            Ok(None) => panic!("watcher stream ended while waiting for {what}; got {got:?}"),
            Err(_) => panic!("timed out waiting for {what}; got {got:?}"),
        }
    }
}

/// name -> (resourceVersion, data.v)
type CmState = BTreeMap<String, (String, Option<String>)>;

fn store_state(reader: &reflector::Store<ConfigMap>) -> CmState {
    reader
        .state()
        .iter()
        .map(|c| {
            (
                c.name_any(),
                (c.resource_version().unwrap_or_default(), data_v(c)),
            )
        })
        .collect()
}

async fn server_state(api: &Api<ConfigMap>) -> R<CmState> {
    Ok(api
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .map(|c| {
            (
                c.name_any(),
                (c.resource_version().unwrap_or_default(), data_v(c)),
            )
        })
        .collect())
}

/// The ConfigMap every namespace holds (kube-controller-manager's root-ca-cert-publisher).
const ROOT_CA: &str = "kube-root-ca.crt";

fn init_names(events: &[Seen]) -> BTreeSet<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Seen::InitApply(n) => Some(n.clone()),
            _ => None,
        })
        .collect()
}

/// The whole informer life cycle: initial list, live events, then a dropped watch whose resume point has been
/// compacted away (410 Gone), which must make the watcher re-list and the store converge on the server's state.
async fn informer_relists_after_410(cfg: watcher::Config) -> R {
    let sim = KubeSim::start().await?;
    let client = sim.client().await?;
    create_namespace(&client, "informer").await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "informer");
    let pp = PostParams::default();
    api.create(&pp, &cm("a", "1")).await?;
    api.create(&pp, &cm("b", "1")).await?;

    let (reader, mut rx, task) = spawn_reflector(api.clone(), cfg);

    // Initial list: Init, one InitApply per object, InitDone.
    let first = until(&mut rx, "the initial InitDone", |e| *e == Seen::InitDone).await;
    assert_eq!(first.first(), Some(&Seen::Init), "{first:?}");
    assert_eq!(
        init_names(&first),
        BTreeSet::from(["a".to_string(), "b".to_string(), ROOT_CA.to_string()]),
        "{first:?}"
    );
    tokio::time::timeout(WAIT, reader.wait_until_ready()).await??;
    assert_eq!(store_state(&reader), server_state(&api).await?);

    // Live changes arrive as Apply/Delete.
    api.create(&pp, &cm("c", "1")).await?;
    until(&mut rx, "Apply(c)", |e| {
        *e == Seen::Apply("c".into(), Some("1".into()))
    })
    .await;
    let mut a = api.get("a").await?;
    a.data = Some(BTreeMap::from([("v".to_string(), "2".to_string())]));
    api.replace("a", &pp, &a).await?;
    until(&mut rx, "Apply(a, 2)", |e| {
        *e == Seen::Apply("a".into(), Some("2".into()))
    })
    .await;
    api.delete("b", &DeleteParams::default()).await?;
    until(&mut rx, "Delete(b)", |e| *e == Seen::Delete("b".into())).await;
    assert_eq!(store_state(&reader), server_state(&api).await?);

    // Take the watch down. Its resume is held back (only watch requests are delayed) while the state moves on
    // through ordinary API writes and the history the watcher would resume from is compacted away.
    let hold = Duration::from_millis(1500);
    sim.faults()
        .add_latency(Matcher::verb_resource("watch", "configmaps"), hold);
    let dropped = Instant::now();
    sim.faults().drop_watches();
    tokio::time::sleep(Duration::from_millis(200)).await;
    api.patch(
        "c",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "3"}})),
    )
    .await?;
    api.create(&pp, &cm("d", "1")).await?;
    api.delete("a", &DeleteParams::default()).await?;
    sim.compact();
    assert!(
        dropped.elapsed() < hold,
        "the writes happened while the watch was down"
    );

    // The resume gets 410 Gone, and the watcher starts over with a fresh list.
    let relist = until(&mut rx, "InitDone after the re-list", |e| {
        *e == Seen::InitDone
    })
    .await;
    sim.faults().clear();
    let gone = relist
        .iter()
        .position(|e| *e == Seen::Error(Some(410)))
        .unwrap_or_else(|| panic!("no 410 in {relist:?}"));
    let init = relist
        .iter()
        .position(|e| *e == Seen::Init)
        .unwrap_or_else(|| panic!("no Init in {relist:?}"));
    assert!(gone < init, "the 410 comes before the new Init: {relist:?}");
    assert!(
        !relist
            .iter()
            .any(|e| matches!(e, Seen::Apply(..) | Seen::Delete(_))),
        "nothing from the compacted history is replayed: {relist:?}"
    );
    assert_eq!(
        init_names(&relist[init..]),
        BTreeSet::from(["c".to_string(), "d".to_string(), ROOT_CA.to_string()]),
        "{relist:?}"
    );
    let want = server_state(&api).await?;
    assert_eq!(
        store_state(&reader),
        want,
        "the store equals the server after the re-list"
    );
    assert_eq!(
        want.get("c").and_then(|x| x.1.clone()).as_deref(),
        Some("3")
    );
    assert!(!want.contains_key("a"));

    // And it keeps watching from the new list's revision.
    api.create(&pp, &cm("e", "1")).await?;
    until(&mut rx, "Apply(e) after recovery", |e| {
        *e == Seen::Apply("e".into(), Some("1".into()))
    })
    .await;
    assert_eq!(store_state(&reader), server_state(&api).await?);
    task.abort();
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informer_lists_watches_and_relists_after_410_gone() -> R {
    informer_relists_after_410(watcher::Config::default()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informer_with_streaming_list_send_initial_events_relists_after_410_gone() -> R {
    informer_relists_after_410(watcher::Config::default().streaming_lists()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informer_with_paged_initial_list_sees_every_object() -> R {
    let sim = KubeSim::start().await?;
    let client = sim.client().await?;
    create_namespace(&client, "paged").await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "paged");
    for i in 0..5 {
        api.create(&PostParams::default(), &cm(&format!("p{i}"), "1"))
            .await?;
    }
    let (reader, mut rx, task) =
        spawn_reflector(api.clone(), watcher::Config::default().page_size(2));
    let first = until(&mut rx, "InitDone", |e| *e == Seen::InitDone).await;
    assert_eq!(
        init_names(&first).len(),
        6,
        "five and kube-root-ca.crt: {first:?}"
    );
    assert_eq!(store_state(&reader), server_state(&api).await?);
    task.abort();
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------------
// 2. Controller + finalizer over a CustomResource
// ---------------------------------------------------------------------------------------------------------------

const WIDGET_FINALIZER: &str = "widgets.sim.example.com/cleanup";

struct Ctrl {
    client: Client,
    reconciles: AtomicUsize,
    /// (name, had deletionTimestamp) for every cleanup run.
    cleanups: Mutex<Vec<(String, bool)>>,
}

async fn reconcile_widget(
    w: Arc<Widget>,
    ctx: Arc<Ctrl>,
) -> Result<Action, finalizer::Error<kube::Error>> {
    ctx.reconciles.fetch_add(1, Ordering::SeqCst);
    let api: Api<Widget> = Api::namespaced(ctx.client.clone(), &w.namespace().unwrap_or_default());
    let (api_ref, ctx_ref) = (&api, &ctx);
    finalizer(&api, WIDGET_FINALIZER, w, |event| async move {
        match event {
            finalizer::Event::Apply(w) => {
                let patch = json!({"status": {"phase": "Ready", "observedGeneration": w.metadata.generation}});
                api_ref.patch_status(&w.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await?;
                Ok::<_, kube::Error>(Action::await_change())
            }
            finalizer::Event::Cleanup(w) => {
                ctx_ref.cleanups.lock().unwrap().push((w.name_any(), w.metadata.deletion_timestamp.is_some()));
                Ok(Action::await_change())
            }
        }
    })
    .await
}

fn widget_error_policy(
    _w: Arc<Widget>,
    _e: &finalizer::Error<kube::Error>,
    _ctx: Arc<Ctrl>,
) -> Action {
    Action::requeue(Duration::from_millis(200))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_with_finalizer_reconciles_status_and_cleans_up_on_delete() -> R {
    let sim = KubeSim::start().await?;
    let client = sim.client().await?;
    let crd = install_widget_crd(&client).await?;
    assert_eq!(
        crd.status
            .as_ref()
            .and_then(|s| s.accepted_names.as_ref())
            .map(|n| n.plural.as_str()),
        Some("widgets")
    );

    let ctx = Arc::new(Ctrl {
        client: client.clone(),
        reconciles: AtomicUsize::new(0),
        cleanups: Mutex::new(Vec::new()),
    });
    let controller = Controller::new(
        Api::<Widget>::all(client.clone()),
        watcher::Config::default(),
    )
    .run(reconcile_widget, widget_error_policy, ctx.clone())
    .for_each(|_| futures::future::ready(()));
    let handle = tokio::spawn(controller);

    let api: Api<Widget> = Api::namespaced(client.clone(), "default");
    let created = api.create(&PostParams::default(), &widget("w1", 1)).await?;
    assert_eq!(created.metadata.generation, Some(1));
    assert!(created.finalizers().is_empty());

    // The reconciler adds its finalizer, then writes status through /status.
    let ready = eventually("finalizer and Ready status", || {
        let api = api.clone();
        async move {
            let w = api.get("w1").await.ok()?;
            let ok = w.finalizers().iter().any(|f| f == WIDGET_FINALIZER)
                && w.status.as_ref().is_some_and(|s| {
                    s.phase.as_deref() == Some("Ready") && s.observed_generation == Some(1)
                });
            ok.then_some(w)
        }
    })
    .await;
    assert_eq!(
        ready.metadata.generation,
        Some(1),
        "neither the finalizer nor status writes bump the generation"
    );
    assert_eq!(ready.spec.size, 1);

    // A spec change bumps the generation once; the controller catches up through status only.
    let bumped = api
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 2}})),
        )
        .await?;
    assert_eq!(bumped.metadata.generation, Some(2));
    let caught_up = eventually("observedGeneration 2", || {
        let api = api.clone();
        async move {
            let w = api.get("w1").await.ok()?;
            (w.status.as_ref().and_then(|s| s.observed_generation) == Some(2)).then_some(w)
        }
    })
    .await;
    assert_eq!(caught_up.metadata.generation, Some(2));

    // Delete: the object stays, marked with deletionTimestamp, until the finalizer is released.
    let uid = caught_up.uid().expect("uid");
    let deleted = api.delete("w1", &DeleteParams::default()).await?;
    let marked = deleted
        .left()
        .expect("an object held by a finalizer is returned, not a Status");
    assert!(
        marked.metadata.deletion_timestamp.is_some(),
        "delete sets deletionTimestamp"
    );
    assert!(marked.finalizers().iter().any(|f| f == WIDGET_FINALIZER));
    tokio::time::timeout(
        WAIT,
        await_condition(api.clone(), "w1", conditions::is_deleted(&uid)),
    )
    .await??;
    assert!(
        api.get_opt("w1").await?.is_none(),
        "the object is gone once the finalizer is removed"
    );
    let cleanups = ctx.cleanups.lock().unwrap().clone();
    assert_eq!(
        cleanups,
        vec![("w1".to_string(), true)],
        "cleanup ran once, on an object being deleted"
    );
    assert!(ctx.reconciles.load(Ordering::SeqCst) >= 3);
    handle.abort();
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------------
// 3. Server-side apply
// ---------------------------------------------------------------------------------------------------------------

fn fields_of<'a>(c: &'a ConfigMap, manager: &str) -> Option<&'a Value> {
    c.metadata
        .managed_fields
        .as_ref()?
        .iter()
        .find(|m| m.manager.as_deref() == Some(manager) && m.operation.as_deref() == Some("Apply"))
        .and_then(|m| m.fields_v1.as_ref())
        .map(|f| &f.0)
}

#[tokio::test]
async fn server_side_apply_tracks_owners_reports_conflicts_and_force_takes_ownership() -> R {
    let sim = KubeSim::start().await?;
    let client = sim.client().await?;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let cfg = |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": data});

    // Create and update as mgr-a.
    let created = api
        .patch(
            "ssa",
            &PatchParams::apply("mgr-a"),
            &Patch::Apply(cfg(json!({"a": "1"}))),
        )
        .await?;
    assert_eq!(
        created.data,
        Some(BTreeMap::from([("a".into(), "1".into())]))
    );
    let a_fields = fields_of(&created, "mgr-a").expect("mgr-a has an Apply entry");
    assert!(a_fields["f:data"]["f:a"].is_object(), "{a_fields}");
    let updated = api
        .patch(
            "ssa",
            &PatchParams::apply("mgr-a"),
            &Patch::Apply(cfg(json!({"a": "2", "b": "1"}))),
        )
        .await?;
    assert_eq!(
        updated.data,
        Some(BTreeMap::from([
            ("a".into(), "2".into()),
            ("b".into(), "1".into())
        ]))
    );
    assert!(updated.resource_version() != created.resource_version());

    // mgr-b wants a different value for a field mgr-a owns: 409 naming the manager and the field.
    let status = api_error(
        api.patch(
            "ssa",
            &PatchParams::apply("mgr-b"),
            &Patch::Apply(cfg(json!({"a": "3"}))),
        )
        .await,
    );
    assert_eq!(
        (status.code, status.reason.as_str()),
        (409, "Conflict"),
        "{status:?}"
    );
    assert!(
        status.message.contains("conflict with \"mgr-a\""),
        "{}",
        status.message
    );
    assert!(status.message.contains(".data.a"), "{}", status.message);
    let causes = status
        .details
        .as_ref()
        .map(|d| d.causes.clone())
        .unwrap_or_default();
    assert!(
        causes
            .iter()
            .any(|c| c.reason == "FieldManagerConflict" && c.field == ".data.a"),
        "{causes:?}"
    );
    assert_eq!(
        api.get("ssa")
            .await?
            .data
            .as_ref()
            .and_then(|d| d.get("a"))
            .map(String::as_str),
        Some("2")
    );

    // force moves ownership of the field to mgr-b; both managers remain listed.
    let forced = api
        .patch(
            "ssa",
            &PatchParams::apply("mgr-b").force(),
            &Patch::Apply(cfg(json!({"a": "3"}))),
        )
        .await?;
    assert_eq!(
        forced
            .data
            .as_ref()
            .and_then(|d| d.get("a"))
            .map(String::as_str),
        Some("3")
    );
    let a_fields = fields_of(&forced, "mgr-a").expect("mgr-a still manages data.b");
    let b_fields = fields_of(&forced, "mgr-b").expect("mgr-b manages data.a");
    assert!(
        a_fields["f:data"].get("f:a").is_none() && a_fields["f:data"]["f:b"].is_object(),
        "{a_fields}"
    );
    assert!(b_fields["f:data"]["f:a"].is_object(), "{b_fields}");
    for m in forced
        .metadata
        .managed_fields
        .as_ref()
        .expect("managedFields")
    {
        assert_eq!(m.fields_type.as_deref(), Some("FieldsV1"));
        assert_eq!(m.api_version.as_deref(), Some("v1"));
        assert!(m.time.is_some());
    }

    // mgr-a no longer claims data.a, so applying without it neither conflicts nor removes mgr-b's value.
    let again = api
        .patch(
            "ssa",
            &PatchParams::apply("mgr-a"),
            &Patch::Apply(cfg(json!({"b": "1"}))),
        )
        .await?;
    assert_eq!(
        again.data,
        Some(BTreeMap::from([
            ("a".into(), "3".into()),
            ("b".into(), "1".into())
        ]))
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------------
// 4. The status subresource
// ---------------------------------------------------------------------------------------------------------------

#[tokio::test]
async fn status_subresource_writes_only_status_and_main_resource_writes_never_status() -> R {
    let sim = KubeSim::start().await?;
    let client = sim.client().await?;
    install_widget_crd(&client).await?;
    let api: Api<Widget> = Api::namespaced(client, "default");
    let pp = PostParams::default();

    // Status on create is dropped when the status subresource is enabled.
    let mut w = widget("s1", 1);
    w.status = Some(WidgetStatus {
        phase: Some("Ignored".into()),
        observed_generation: None,
    });
    let created = api.create(&pp, &w).await?;
    assert_eq!(created.status, None);
    assert_eq!(created.metadata.generation, Some(1));

    // replace_status: status changes, the spec and labels in the body are ignored, generation stays.
    let mut body = created.clone();
    body.spec.size = 99;
    body.metadata.labels = Some(BTreeMap::from([("sneaky".into(), "yes".into())]));
    body.status = Some(WidgetStatus {
        phase: Some("A".into()),
        observed_generation: Some(1),
    });
    let replaced = api.replace_status("s1", &pp, &body).await?;
    assert_eq!(replaced.spec.size, 1);
    assert_eq!(replaced.labels().get("sneaky"), None);
    assert_eq!(
        replaced.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("A")
    );
    assert_eq!(replaced.metadata.generation, Some(1));
    assert!(replaced.resource_version() != created.resource_version());

    // A stale resourceVersion on /status is a conflict like anywhere else.
    let stale = api_error(api.replace_status("s1", &pp, &body).await);
    assert_eq!((stale.code, stale.reason.as_str()), (409, "Conflict"));

    // patch_status: same rule for merge patches.
    let patched = api
        .patch_status(
            "s1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 50}, "status": {"phase": "B"}})),
        )
        .await?;
    assert_eq!(patched.spec.size, 1);
    assert_eq!(
        patched.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("B")
    );
    assert_eq!(patched.metadata.generation, Some(1));
    assert_eq!(api.get_status("s1").await?.status, patched.status);

    // The main resource: spec changes (and bump the generation), status in the body is ignored.
    let mut main = patched.clone();
    main.spec.size = 2;
    main.status = Some(WidgetStatus {
        phase: Some("C".into()),
        observed_generation: Some(7),
    });
    let updated = api.replace("s1", &pp, &main).await?;
    assert_eq!(updated.spec.size, 2);
    assert_eq!(updated.status, patched.status);
    assert_eq!(updated.metadata.generation, Some(2));
    let merged = api
        .patch(
            "s1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 3}, "status": {"phase": "D"}})),
        )
        .await?;
    assert_eq!(merged.spec.size, 3);
    assert_eq!(merged.status, patched.status);
    assert_eq!(merged.metadata.generation, Some(3));
    Ok(())
}

#[tokio::test]
async fn custom_resources_are_validated_and_pruned_against_the_crd_schema() -> R {
    let sim = KubeSim::start().await?;
    let client = sim.client().await?;
    install_widget_crd(&client).await?;
    let path = "/apis/sim.example.com/v1/namespaces/default/widgets";
    let post = |body: Value| {
        let client = client.clone();
        async move {
            raw(
                &client,
                "POST",
                path,
                Some("application/json"),
                serde_json::to_vec(&body).expect("json"),
            )
            .await
        }
    };
    let w = |name: &str, spec: Value| json!({"apiVersion": "sim.example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec});

    // Unknown fields are dropped (structural pruning), so typed clients read back exactly their own shape.
    let mut body = w("pruned", json!({"size": 1, "colour": "red"}));
    body["junk"] = json!(true);
    let (code, _, stored) = post(body).await?;
    assert_eq!(code, 201, "{stored}");
    assert_eq!(stored["spec"], json!({"size": 1}));
    assert!(stored.get("junk").is_none(), "{stored}");
    assert_eq!(
        Api::<Widget>::namespaced(client.clone(), "default")
            .get("pruned")
            .await?
            .spec
            .size,
        1
    );

    // Type errors and missing required fields are 422 Invalid with field causes.
    let (code, _, s) = post(w("wrong-type", json!({"size": "big"}))).await?;
    assert_eq!((code, s["reason"].as_str()), (422, Some("Invalid")), "{s}");
    assert!(
        s["message"]
            .as_str()
            .unwrap_or_default()
            .contains("spec.size"),
        "{s}"
    );
    let (code, _, s) = post(w("missing", json!({}))).await?;
    assert_eq!((code, s["reason"].as_str()), (422, Some("Invalid")), "{s}");
    assert!(
        s["message"]
            .as_str()
            .unwrap_or_default()
            .contains("spec.size: Required value"),
        "{s}"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------------
// 5. Lease-based leader election, as client-go's leaderelection package does it
// ---------------------------------------------------------------------------------------------------------------

/// One contender: client-go's tryAcquireOrRenew over a coordination.k8s.io/v1 Lease. Expiry is judged by the
/// local clock from when this contender last saw the record change, not by comparing clocks with the holder.
struct Elector {
    api: Api<Lease>,
    lease: String,
    id: String,
    duration_secs: i32,
    observed: Option<(LeaseSpec, Instant)>,
}

impl Elector {
    fn new(client: Client, lease: &str, id: &str, duration_secs: i32) -> Self {
        Elector {
            api: Api::namespaced(client, "kube-system"),
            lease: lease.into(),
            id: id.into(),
            duration_secs,
            observed: None,
        }
    }

    fn observe(&mut self, spec: &LeaseSpec) {
        if self.observed.as_ref().map(|(s, _)| s) != Some(spec) {
            self.observed = Some((spec.clone(), Instant::now()));
        }
    }

    async fn try_acquire_or_renew(&mut self) -> R<bool> {
        let now = MicroTime(Timestamp::now());
        let Some(current) = self.api.get_opt(&self.lease).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.lease.clone()),
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.id.clone()),
                    lease_duration_seconds: Some(self.duration_secs),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..Default::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(l) => {
                    self.observe(&l.spec.unwrap_or_default());
                    Ok(true)
                }
                Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => {
                    Ok(false)
                }
                Err(e) => Err(e.into()),
            };
        };
        let old = current.spec.clone().unwrap_or_default();
        self.observe(&old);
        let holder = old.holder_identity.clone().unwrap_or_default();
        let observed_at = self
            .observed
            .as_ref()
            .map(|(_, t)| *t)
            .unwrap_or_else(Instant::now);
        let valid = observed_at
            + Duration::from_secs(old.lease_duration_seconds.unwrap_or(0).max(0) as u64)
            > Instant::now();
        if !holder.is_empty() && holder != self.id && valid {
            return Ok(false);
        }
        let mut spec = old.clone();
        if holder != self.id {
            spec.acquire_time = Some(now.clone());
            spec.lease_transitions = Some(old.lease_transitions.unwrap_or(0) + 1);
        }
        spec.holder_identity = Some(self.id.clone());
        spec.lease_duration_seconds = Some(self.duration_secs);
        spec.renew_time = Some(now);
        let mut next = current;
        next.spec = Some(spec);
        // `next` carries the resourceVersion we read: the update is conditional on nobody writing meanwhile.
        match self
            .api
            .replace(&self.lease, &PostParams::default(), &next)
            .await
        {
            Ok(l) => {
                self.observe(&l.spec.unwrap_or_default());
                Ok(true)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

fn is_micro_time(s: &str) -> bool {
    // 2026-01-01T00:00:00.000000Z
    let b = s.as_bytes();
    b.len() == 27
        && b[10] == b'T'
        && b[19] == b'.'
        && b[26] == b'Z'
        && b.iter()
            .enumerate()
            .all(|(i, c)| matches!(i, 4 | 7 | 10 | 13 | 16 | 19 | 26) || c.is_ascii_digit())
}

#[tokio::test]
async fn lease_leader_election_one_winner_takeover_after_expiry_and_stale_update_conflicts() -> R {
    let sim = KubeSim::start().await?;
    let (ca, cb) = (sim.client().await?, sim.client().await?);
    let api: Api<Lease> = Api::namespaced(ca.clone(), "kube-system");
    let mut a = Elector::new(ca.clone(), "my-controller", "pod-a", 1);
    let mut b = Elector::new(cb, "my-controller", "pod-b", 1);

    // Both race to create the lease: exactly one wins.
    let (ra, rb) = tokio::join!(a.try_acquire_or_renew(), b.try_acquire_or_renew());
    let (ra, rb) = (ra?, rb?);
    assert!(ra ^ rb, "exactly one contender acquires: a={ra} b={rb}");
    let (mut leader, mut follower) = if ra { (a, b) } else { (b, a) };
    let lease = api.get("my-controller").await?;
    let spec = lease.spec.clone().expect("spec");
    assert_eq!(spec.holder_identity.as_deref(), Some(leader.id.as_str()));
    assert_eq!(spec.lease_transitions, Some(0));
    assert_eq!(spec.lease_duration_seconds, Some(1));
    assert_eq!(spec.acquire_time, spec.renew_time);

    // MicroTime on the wire: RFC 3339 with exactly six fractional digits.
    let (code, _, wire) = raw(
        &ca,
        "GET",
        "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/my-controller",
        None,
        vec![],
    )
    .await?;
    assert_eq!(code, 200);
    for f in ["renewTime", "acquireTime"] {
        let t = wire["spec"][f].as_str().unwrap_or_default();
        assert!(is_micro_time(t), "{f} = {t:?}");
    }

    // The follower cannot take a valid lease.
    assert!(!follower.try_acquire_or_renew().await?);

    // The leader renews: renewTime moves, acquireTime and transitions stay.
    let before_renew = api.get("my-controller").await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(follower.try_acquire_or_renew().await.map(|won| !won)?);
    assert!(leader.try_acquire_or_renew().await?);
    let renewed = api.get("my-controller").await?.spec.expect("spec");
    let last_renew = Instant::now();
    assert!(renewed.renew_time.as_ref().map(|t| t.0) > spec.renew_time.as_ref().map(|t| t.0));
    assert_eq!(renewed.acquire_time, spec.acquire_time);
    assert_eq!(renewed.lease_transitions, Some(0));

    // A write based on the lease as it was before the renewal is rejected: 409 Conflict.
    let mut stale = before_renew.clone();
    stale.spec.as_mut().expect("spec").holder_identity = Some("usurper".into());
    let s = api_error(
        api.replace("my-controller", &PostParams::default(), &stale)
            .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"), "{s:?}");
    assert!(
        s.message.contains("the object has been modified"),
        "{}",
        s.message
    );

    // The leader stops renewing; the follower takes over once the lease duration has passed.
    let took_over = loop {
        if follower.try_acquire_or_renew().await? {
            break last_renew.elapsed();
        }
        assert!(
            last_renew.elapsed() < Duration::from_secs(5),
            "the follower never took over"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        took_over >= Duration::from_secs(1),
        "took over after {took_over:?}, before the lease expired"
    );
    let after = api.get("my-controller").await?.spec.expect("spec");
    assert_eq!(after.holder_identity.as_deref(), Some(follower.id.as_str()));
    assert_eq!(after.lease_transitions, Some(1));
    assert_eq!(after.acquire_time, after.renew_time);
    assert!(after.acquire_time.as_ref().map(|t| t.0) > spec.acquire_time.as_ref().map(|t| t.0));

    // The old leader comes back: the lease is someone else's and still valid.
    assert!(!leader.try_acquire_or_renew().await?);
    assert_eq!(
        api.get("my-controller")
            .await?
            .spec
            .and_then(|s| s.holder_identity)
            .as_deref(),
        Some(follower.id.as_str())
    );
    Ok(())
}

#[tokio::test]
async fn lease_micro_time_round_trips_and_non_micro_precision_is_rejected() -> R {
    let sim = KubeSim::start().await?;
    let client = sim.client().await?;
    let path = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let lease = |name: &str, t: &str| {
        serde_json::to_vec(&json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name},
            "spec": {"holderIdentity": "x", "leaseDurationSeconds": 15, "renewTime": t, "acquireTime": t, "leaseTransitions": 0}
        }))
        .expect("json")
    };
    let (code, _, body) = raw(
        &client,
        "POST",
        path,
        Some("application/json"),
        lease("ok", "2026-01-01T00:00:00.000000Z"),
    )
    .await?;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["spec"]["renewTime"], "2026-01-01T00:00:00.000000Z");

    // metav1.MicroTime parses with the layout 2006-01-02T15:04:05.000000Z07:00: nanoseconds (what chrono or jiff
    // print by default) are a decoding error, 400 BadRequest, as krustlet famously found out.
    let (code, _, body) = raw(
        &client,
        "POST",
        path,
        Some("application/json"),
        lease("nanos", "2026-01-01T00:00:00.123456789Z"),
    )
    .await?;
    assert_eq!(code, 400, "{body}");
    assert_eq!(body["reason"], "BadRequest", "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("cannot be handled as a Lease"),
        "{body}"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------------
// 6. Faults
// ---------------------------------------------------------------------------------------------------------------

/// The request log: each resource request in the order answered, with the authenticated user and the status,
/// injected faults and authorization refusals included.
#[tokio::test]
async fn the_request_log_records_who_asked_what_and_how_it_ended() -> R {
    let sim = KubeSim::start().await?;
    let alice = sim.add_token_user("alice", &["system:masters"]);
    let bob = sim.add_token_user("bob", &[]);
    let as_alice: Api<ConfigMap> = Api::namespaced(sim.client_for(&alice).await?, "default");
    let as_bob: Api<ConfigMap> = Api::namespaced(sim.client_for(&bob).await?, "default");
    let pp = PostParams::default();
    as_alice.create(&pp, &cm("logged", "1")).await?;
    sim.faults()
        .fail_next(Matcher::verb_resource("update", "configmaps"), 1, 500, None);
    let current = as_alice.get("logged").await?;
    assert!(as_alice.replace("logged", &pp, &current).await.is_err());
    // Bob has no role: refused by authorization.
    assert!(as_bob.get("logged").await.is_err());
    let log: Vec<_> = sim
        .requests()
        .into_iter()
        .filter(|r| r.resource == "configmaps")
        .map(|r| {
            let write = r.is_write();
            (r.user, r.verb, r.name, r.status, write)
        })
        .collect();
    let s = |x: &str| x.to_string();
    assert_eq!(
        log,
        [
            (s("alice"), s("create"), s(""), 201, true),
            (s("alice"), s("get"), s("logged"), 200, false),
            (s("alice"), s("update"), s("logged"), 500, true),
            (s("bob"), s("get"), s("logged"), 403, false),
        ]
    );
    let seqs: Vec<u64> = sim.requests().iter().map(|r| r.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    Ok(())
}

#[tokio::test]
async fn injected_write_failures_surface_as_api_errors_with_the_real_status() -> R {
    let sim = KubeSim::start().await?;
    let client = client_without_retries(&sim).await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let pp = PostParams::default();
    let original = api.create(&pp, &cm("f", "1")).await?;

    // 409 on update: the optimistic-concurrency Conflict every client retries on.
    sim.faults()
        .fail_next(Matcher::verb_resource("update", "configmaps"), 1, 409, None);
    let s = api_error(api.replace("f", &pp, &original).await);
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"), "{s:?}");
    assert!(s.message.contains("configmaps \"f\""), "{}", s.message);
    // The rule is used up: the same request now succeeds.
    api.replace("f", &pp, &original).await?;

    // 429 with Retry-After (header and details.retryAfterSeconds).
    sim.faults().fail_next(
        Matcher::verb_resource("create", "configmaps"),
        2,
        429,
        Some(2),
    );
    let s = api_error(api.create(&pp, &cm("g", "1")).await);
    assert_eq!(
        (s.code, s.reason.as_str()),
        (429, "TooManyRequests"),
        "{s:?}"
    );
    assert_eq!(
        s.details.as_ref().map(|d| d.retry_after_seconds),
        Some(2),
        "{s:?}"
    );
    let body = serde_json::to_vec(&cm("g", "1"))?;
    let (code, headers, status) = raw(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some("application/json"),
        body,
    )
    .await?;
    assert_eq!(code, 429);
    assert_eq!(
        headers.get("retry-after").and_then(|v| v.to_str().ok()),
        Some("2")
    );
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["details"]["retryAfterSeconds"], 2);

    // 500 and 503 on patch and delete.
    sim.faults()
        .fail_next(Matcher::verb_resource("patch", "configmaps"), 1, 500, None);
    let s = api_error(
        api.patch(
            "f",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"v": "2"}})),
        )
        .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (500, "InternalError"), "{s:?}");
    sim.faults()
        .fail_next(Matcher::verb_resource("delete", "configmaps"), 1, 503, None);
    let s = api_error(api.delete("f", &DeleteParams::default()).await);
    assert_eq!(
        (s.code, s.reason.as_str()),
        (503, "ServiceUnavailable"),
        "{s:?}"
    );
    // Nothing was written by the failed requests.
    assert_eq!(data_v(&api.get("f").await?).as_deref(), Some("1"));
    Ok(())
}

#[tokio::test]
async fn default_client_retries_429_and_503_honouring_retry_after() -> R {
    let sim = KubeSim::start().await?;
    let client = sim.client().await?;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    sim.faults().fail_next(
        Matcher::verb_resource("create", "configmaps"),
        1,
        429,
        Some(1),
    );
    let t = Instant::now();
    api.create(&PostParams::default(), &cm("r", "1")).await?;
    assert!(
        t.elapsed() >= Duration::from_secs(1),
        "kube-rs waits the Retry-After before retrying ({:?})",
        t.elapsed()
    );
    sim.faults()
        .fail_next(Matcher::verb_resource("create", "configmaps"), 2, 503, None);
    api.create(&PostParams::default(), &cm("s", "1")).await?;
    assert!(api.get_opt("r").await?.is_some() && api.get_opt("s").await?.is_some());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_delays_matching_requests_and_pause_holds_them_until_resume() -> R {
    let sim = KubeSim::start().await?;
    let client = sim.client().await?;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.create(&PostParams::default(), &cm("l", "1")).await?;

    let delay = Duration::from_millis(400);
    sim.faults()
        .add_latency(Matcher::verb_resource("get", "configmaps"), delay);
    let t = Instant::now();
    api.get("l").await?;
    assert!(t.elapsed() >= delay, "get took {:?}", t.elapsed());
    let t = Instant::now();
    api.list(&ListParams::default()).await?;
    assert!(
        t.elapsed() < delay,
        "list is not matched, took {:?}",
        t.elapsed()
    );
    sim.faults().clear();
    let t = Instant::now();
    api.get("l").await?;
    assert!(t.elapsed() < delay, "cleared, get took {:?}", t.elapsed());

    sim.faults().pause();
    let api2 = api.clone();
    let held = tokio::spawn(async move { api2.get("l").await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!held.is_finished(), "a request is held while paused");
    sim.faults().resume();
    let got = tokio::time::timeout(Duration::from_secs(5), held).await???;
    assert_eq!(data_v(&got).as_deref(), Some("1"));
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------------
// 7. Pagination
// ---------------------------------------------------------------------------------------------------------------

#[tokio::test]
async fn chunked_list_with_limit_and_continue_returns_a_consistent_snapshot_and_expired_tokens_get_410()
-> R {
    let sim = KubeSim::start().await?;
    let client = sim.client().await?;
    create_namespace(&client, "paging").await?;
    let api: Api<ConfigMap> = Api::namespaced(client, "paging");
    for i in 0..5 {
        api.create(&PostParams::default(), &cm(&format!("cm-{i}"), "1"))
            .await?;
    }

    let mut names = Vec::new();
    let mut lp = ListParams::default().limit(2);
    let mut pages = 0;
    let mut snapshot_rv = None;
    loop {
        let page = api.list(&lp).await?;
        pages += 1;
        assert!(page.items.len() <= 2);
        names.extend(page.items.iter().map(|c| c.name_any()));
        let rv = page.metadata.resource_version.clone();
        assert_eq!(
            *snapshot_rv.get_or_insert(rv.clone()),
            rv,
            "every page is served at the first page's revision"
        );
        if pages == 1 {
            // cm-2, cm-3, cm-4 and the namespace's kube-root-ca.crt.
            assert_eq!(page.metadata.remaining_item_count, Some(4));
            // Written between pages: not part of the snapshot being paged through.
            api.create(&PostParams::default(), &cm("cm-9", "1")).await?;
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => lp = ListParams::default().limit(2).continue_token(&token),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    let mut want: Vec<String> = (0..5).map(|i| format!("cm-{i}")).collect();
    want.push(ROOT_CA.into());
    assert_eq!(names, want);
    assert_eq!(api.list(&ListParams::default()).await?.items.len(), 7);

    // A token whose revision has been compacted away: 410 Expired.
    let first = api.list(&ListParams::default().limit(2)).await?;
    let token = first.metadata.continue_.expect("more pages");
    api.patch(
        "cm-0",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await?;
    sim.compact();
    api.patch(
        "cm-1",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await?;
    let s = api_error(
        api.list(&ListParams::default().limit(2).continue_token(&token))
            .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (410, "Expired"), "{s:?}");
    assert!(
        s.message.contains("continue parameter is too old"),
        "{}",
        s.message
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------------
// 8. Several servers in one process
// ---------------------------------------------------------------------------------------------------------------

#[tokio::test]
async fn management_and_workload_clusters_in_one_process_are_independent() -> R {
    let mgmt = KubeSim::start().await?;
    let workload = KubeSim::start().await?;
    assert_ne!(mgmt.addr(), workload.addr());
    let (mc, wc) = (mgmt.client().await?, workload.client().await?);
    let (mapi, wapi): (Api<ConfigMap>, Api<ConfigMap>) = (
        Api::namespaced(mc.clone(), "default"),
        Api::namespaced(wc.clone(), "default"),
    );

    mapi.create(&PostParams::default(), &cm("only-in-mgmt", "m"))
        .await?;
    let s = api_error(wapi.get("only-in-mgmt").await);
    assert_eq!((s.code, s.reason.as_str()), (404, "NotFound"));
    assert!(
        workload
            .get("v1", "ConfigMap", "default", "only-in-mgmt")
            .is_none()
    );

    // The same name in both holds each server's own data.
    mapi.create(&PostParams::default(), &cm("shared", "mgmt"))
        .await?;
    wapi.create(&PostParams::default(), &cm("shared", "workload"))
        .await?;
    assert_eq!(data_v(&mapi.get("shared").await?).as_deref(), Some("mgmt"));
    assert_eq!(
        data_v(&wapi.get("shared").await?).as_deref(),
        Some("workload")
    );
    wapi.delete("shared", &DeleteParams::default()).await?;
    assert!(mapi.get_opt("shared").await?.is_some());

    // A CRD installed in one is served only there.
    install_widget_crd(&mc).await?;
    Api::<Widget>::namespaced(mc.clone(), "default")
        .create(&PostParams::default(), &widget("w", 1))
        .await?;
    let s = api_error(
        Api::<Widget>::namespaced(wc.clone(), "default")
            .list(&ListParams::default())
            .await,
    );
    assert_eq!(s.code, 404, "{s:?}");

    // Credentials are per server: the management cluster's admin token means nothing to the workload cluster.
    let foreign = workload.client_for(&mgmt.admin()).await?;
    let s = api_error(
        Api::<ConfigMap>::namespaced(foreign, "default")
            .list(&ListParams::default())
            .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (401, "Unauthorized"), "{s:?}");

    // Each has its own watch stream: a workload watcher never hears of management writes.
    let wlist = wapi.list(&ListParams::default()).await?;
    let names: Vec<String> = wlist.items.iter().map(|c| c.name_any()).collect();
    assert!(!names.contains(&"only-in-mgmt".to_string()), "{names:?}");
    let mut events = watcher(wapi.clone(), watcher::Config::default()).boxed();
    let mut initial = Vec::new();
    loop {
        match tokio::time::timeout(WAIT, events.try_next()).await?? {
            Some(watcher::Event::InitApply(o)) => initial.push(o.name_any()),
            Some(watcher::Event::InitDone) => break,
            _ => {}
        }
    }
    assert_eq!(
        initial,
        [ROOT_CA],
        "only the namespace's own kube-root-ca.crt"
    );
    mapi.create(&PostParams::default(), &cm("after-watch", "m"))
        .await?;
    wapi.create(&PostParams::default(), &cm("workload-only", "w"))
        .await?;
    match tokio::time::timeout(WAIT, events.try_next()).await?? {
        Some(watcher::Event::Apply(o)) => assert_eq!(o.name_any(), "workload-only"),
        other => panic!("unexpected {other:?}"),
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------------
// 9. Tokens from elsewhere over plain HTTP (a workload cluster behind Omni's Kubernetes proxy)
// ---------------------------------------------------------------------------------------------------------------

/// Who the server says the client is (`kubectl auth whoami`).
async fn whoami(client: &Client) -> R<(u16, Value)> {
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let (code, _, body) = raw(
        client,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        Some("application/json"),
        serde_json::to_vec(&review)?,
    )
    .await?;
    Ok((code, body["status"]["userInfo"].clone()))
}

#[tokio::test]
async fn plain_http_honours_bearer_tokens_sent_by_kube_rs_a_bad_token_gets_401_and_only_tokenless_requests_act_as_admin()
-> R {
    let workload = KubeSim::builder().insecure_http(true).start().await?;
    assert!(
        workload.url().starts_with("http://127.0.0.1:"),
        "{}",
        workload.url()
    );
    workload.set_token_verifier(|token: &str| {
        token
            .strip_prefix("minted-for-")
            .map(|user| kube_sim::UserInfo::new(user, &["omni-operators"]))
    });
    let as_user = |token: &str| kube_sim::User {
        name: "omni".into(),
        groups: vec![],
        credential: kube_sim::Credential::Token(token.into()),
    };

    // kube-rs sends the token over http, and the server takes it instead of the plain-HTTP administrator.
    let op = workload.client_for(&as_user("minted-for-op")).await?;
    let (code, user) = whoami(&op).await?;
    assert_eq!(code, 201, "{user}");
    assert_eq!(
        user,
        json!({"username": "op", "groups": ["omni-operators", "system:authenticated"]})
    );
    let s = api_error(
        Api::<ConfigMap>::namespaced(op, "default")
            .list(&ListParams::default())
            .await,
    );
    assert_eq!(
        (s.code, s.reason.as_str()),
        (403, "Forbidden"),
        "RBAC applies to the token's user: {s:?}"
    );

    // A token neither static nor verified is the real 401, not a fallback to the administrator.
    let bad = workload.client_for(&as_user("expired-or-forged")).await?;
    let s = api_error(
        Api::<ConfigMap>::namespaced(bad, "default")
            .list(&ListParams::default())
            .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (401, "Unauthorized"), "{s:?}");

    // Static tokens still work next to the verifier; no credentials at all is the plain-HTTP administrator.
    Api::<ConfigMap>::namespaced(workload.client().await?, "default")
        .list(&ListParams::default())
        .await?;
    let anonymous = kube_sim::User {
        name: "nobody".into(),
        groups: vec![],
        credential: kube_sim::Credential::None,
    };
    let (code, user) = whoami(&workload.client_for(&anonymous).await?).await?;
    assert_eq!(
        (code, user["username"].as_str()),
        (201, Some("kube-sim-admin")),
        "{user}"
    );

    workload.clear_token_verifier();
    let op = workload.client_for(&as_user("minted-for-op")).await?;
    let s = api_error(
        Api::<ConfigMap>::namespaced(op, "default")
            .list(&ListParams::default())
            .await,
    );
    assert_eq!(s.code, 401, "{s:?}");
    Ok(())
}

/// kube-rs's metadata API and metadata watcher ask for `as=PartialObjectMetadata(List);g=meta.k8s.io;v=v1` and
/// get only metadata, as from kube-apiserver; the shape that does not fit the answer is 406.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_reads_and_the_metadata_watcher_get_partial_object_metadata() -> R {
    let sim = KubeSim::start().await?;
    let client = sim.client().await?;
    create_namespace(&client, "meta").await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "meta");
    api.create(&PostParams::default(), &cm("a", "1")).await?;

    let one = api.get_metadata("a").await?;
    assert_eq!(one.metadata.name.as_deref(), Some("a"));
    let listed = api.list_metadata(&ListParams::default()).await?;
    assert_eq!(
        listed
            .items
            .iter()
            .filter_map(|m| m.metadata.name.clone())
            .collect::<Vec<_>>(),
        ["a", ROOT_CA]
    );
    // The raw answers carry no data and say what they are.
    let raw = |accept: &'static str, path: &'static str| {
        let client = client.clone();
        async move {
            let req = http::Request::get(path)
                .header("accept", accept)
                .body(Vec::new())
                .expect("request");
            let resp = client
                .send(req.map(kube::client::Body::from))
                .await
                .expect("answer");
            let status = resp.status().as_u16();
            let body = resp.into_body().collect().await.expect("body").to_bytes();
            (
                status,
                serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null),
            )
        }
    };
    let (status, list) = raw(
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        "/api/v1/namespaces/meta/configmaps",
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["items"][0]["kind"], "PartialObjectMetadata");
    assert!(list["items"][0].get("data").is_none(), "{list}");
    let (status, wrong) = raw(
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
        "/api/v1/namespaces/meta/configmaps",
    )
    .await;
    assert_eq!(
        (status, wrong["reason"].as_str()),
        (406, Some("NotAcceptable")),
        "{wrong}"
    );

    // `Api<PartialObjectMeta<K>>` makes metadata-only requests (kube-rs's metadata watcher).
    let meta_api: Api<kube::core::PartialObjectMeta<ConfigMap>> =
        Api::namespaced(client.clone(), "meta");
    let mut events = watcher(meta_api, watcher::Config::default())
        .applied_objects()
        .boxed();
    let mut initial = BTreeSet::new();
    for _ in 0..2 {
        let listed = tokio::time::timeout(Duration::from_secs(10), events.try_next())
            .await
            .expect("the metadata watcher lists")?
            .expect("an object");
        initial.extend(listed.metadata.name);
    }
    assert_eq!(
        initial,
        BTreeSet::from(["a".to_string(), ROOT_CA.to_string()])
    );
    api.create(&PostParams::default(), &cm("b", "2")).await?;
    let second = tokio::time::timeout(Duration::from_secs(10), events.try_next())
        .await
        .expect("the metadata watcher sees the create")?
        .expect("an object");
    assert_eq!(second.metadata.name.as_deref(), Some("b"));
    Ok(())
}
