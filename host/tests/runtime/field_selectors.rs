//! Field selectors on `kube-read` lists through the real contract: the `read-probe` test plugin lists one
//! cluster's children in kube-sim, and only those cross into the plugin, whether the API server, the host's
//! fallback or a watch cache applies the selector.

use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use omni_operator::capabilities::{Grants, HostServices};
use omni_operator::controllers::hub::{WatchHandle, WatchHub};
use omni_operator::controllers::reader::ApiReader;
use serde_json::{Value, json};

use super::support::{self, object};

const API: &str = "omni.texashpc.com/v1alpha1";

/// A test kind whose CRD declares `.spec.clusterRef.name` selectable, so kube-sim filters on the server.
const GADGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.test.omni.texashpc.com}
spec:
  group: test.omni.texashpc.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    selectableFields: [{jsonPath: .spec.clusterRef.name}]
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {clusterRef: {type: object, properties: {name: {type: string}}}}}
"#;

/// Moves OmniWorkers `a` from cluster `edge` to `core`, through the API.
async fn move_a_to_core(client: kube::Client, workers: &ApiResource) {
    let api: Api<DynamicObject> = Api::namespaced_with(client, "team", workers);
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"clusterRef": {"name": "core"}}})),
    )
    .await
    .expect("move a");
}

/// Waits until `watch` holds every object, then makes the API fail every `verb` of OmniWorkers, so that only an
/// answer from the cache can succeed.
async fn cache_ready_api_failing(sim: &kube_sim::KubeSim, watch: &WatchHandle, verb: &str) {
    tokio::time::timeout(Duration::from_secs(5), watch.store().wait_until_ready())
        .await
        .expect("the cache fills")
        .expect("ready");
    sim.faults().fail_next(
        kube_sim::Matcher::verb_resource(verb, "omniworkers"),
        10_000,
        500,
        None,
    );
}

/// kube-sim with the operator's CRDs and the Gadget CRD, and in namespace `team` the OmniWorkers and Gadgets
/// `a` and `c` of cluster `edge` and `b` of cluster `core`.
async fn cluster_children() -> kube_sim::KubeSim {
    let sim = omni_operator::stack::management_cluster(kube_sim::KubeSim::builder())
        .await
        .expect("kube-sim");
    sim.apply_yaml(GADGET_CRD)
        .await
        .expect("Gadget CRD applies");
    sim.apply(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}))
        .await
        .expect("namespace");
    for (name, cluster) in [("a", "edge"), ("b", "core"), ("c", "edge")] {
        sim.apply(&json!({"apiVersion": API, "kind": "OmniWorkers", "metadata": {"name": name, "namespace": "team"},
            "spec": {"clusterRef": {"name": cluster}, "machineClass": {"name": "big", "size": 2}}}))
            .await
            .expect("workers");
        sim.apply(&json!({"apiVersion": "test.omni.texashpc.com/v1", "kind": "Gadget", "metadata": {"name": name, "namespace": "team"},
            "spec": {"clusterRef": {"name": cluster}}}))
            .await
            .expect("gadget");
    }
    sim
}

/// What the probe got for each list, `(apiVersion, kind, fieldSelector)`, reconciling an object in `team`.
async fn list(reader: Arc<ApiReader>, queries: &[(&str, &str, &str)]) -> Vec<Value> {
    let probe = support::load(
        "read_probe",
        Grants::parse(["files", "kube-read:*"]).expect("grants"),
    )
    .await;
    let lists: Vec<Value> =
        queries.iter().map(|(api_version, kind, selector)| json!({"apiVersion": api_version, "kind": kind, "fieldSelector": selector})).collect();
    let services = HostServices::default().with_kube(reader);
    let done = probe
        .reconcile(&object("p", "team", json!({"lists": lists})), &services)
        .await
        .expect("the probe runs");
    done.outputs.status["lists"]
        .as_array()
        .cloned()
        .expect("lists")
}

fn names(result: &Value) -> Vec<&str> {
    let Some(names) = result["names"].as_array() else {
        panic!("expected names, got {result}");
    };
    names.iter().map(|n| n.as_str().expect("name")).collect()
}

/// Uncached kinds go to the API server with `fieldSelector=`. The Gadget CRD declares the field selectable;
/// the operator's CRDs do not, so kube-sim answers 400 `field label not supported` (as a real API server does)
/// and the host applies the selector itself: the plugin sees the same children either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uncached_lists_return_only_the_objects_the_field_selector_selects() {
    let sim = cluster_children().await;
    let reader = Arc::new(ApiReader::new(sim.client().await.expect("client")));
    let results = list(
        reader,
        &[
            (
                "test.omni.texashpc.com/v1",
                "Gadget",
                "spec.clusterRef.name=edge",
            ),
            (API, "OmniWorkers", "spec.clusterRef.name=edge"),
            (
                API,
                "OmniWorkers",
                "spec.clusterRef.name!=edge,metadata.name!=x",
            ),
            (API, "OmniWorkers", "metadata.name=c"),
        ],
    )
    .await;
    assert_eq!(names(&results[0]), ["a", "c"], "selected by the API server");
    assert_eq!(
        names(&results[1]),
        ["a", "c"],
        "selected by the host after the server refused the field"
    );
    assert_eq!(names(&results[2]), ["b"]);
    assert_eq!(names(&results[3]), ["c"]);
}

/// Kinds the controllers watch are listed from the shared watch's cache, filtered there through a field index:
/// with every API list of OmniWorkers failing, the selected children still arrive, and a child moved to another
/// cluster moves in the index too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_lists_apply_the_field_selector_to_the_cache() {
    let sim = cluster_children().await;
    let client = sim.client().await.expect("client");
    let reader = Arc::new(ApiReader::new(client.clone()));
    let workers = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("omni.texashpc.com", "v1alpha1", "OmniWorkers"),
        "omniworkers",
    );
    let hub = WatchHub::default();
    let everything = omni_operator::controllers::scope::Scope::default();
    let watch = hub.subscribe(&client, &workers, &everything);
    reader.register_cache(&workers, everything.namespaces, watch.watch.clone());
    cache_ready_api_failing(&sim, &watch.watch, "list").await;

    let results = list(
        reader.clone(),
        &[
            (API, "OmniWorkers", "spec.clusterRef.name=edge"),
            (API, "OmniWorkers", "spec.clusterRef.name==core"),
        ],
    )
    .await;
    assert_eq!(names(&results[0]), ["a", "c"]);
    assert_eq!(names(&results[1]), ["b"]);

    move_a_to_core(client, &workers).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let results = list(
            reader.clone(),
            &[
                (API, "OmniWorkers", "spec.clusterRef.name=edge"),
                (API, "OmniWorkers", "spec.clusterRef.name=core"),
            ],
        )
        .await;
        if names(&results[0]) == ["c"] && names(&results[1]) == ["a", "b"] {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the index did not follow the move: {results:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    sim.faults().clear();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_field_selector_is_invalid_and_says_why() {
    let sim = cluster_children().await;
    let reader = Arc::new(ApiReader::new(sim.client().await.expect("client")));
    let results = list(
        reader,
        &[
            (API, "OmniWorkers", "spec.clusterRef.name"),
            (API, "OmniWorkers", "spec.clusterRef.name=a=b"),
        ],
    )
    .await;
    assert_eq!(
        results[0],
        json!({"error": "invalid", "message": "invalid: kube-read list OmniWorkers: invalid field selector \"spec.clusterRef.name\": \
            \"spec.clusterRef.name\" is not of the form path=value, path==value or path!=value"})
    );
    assert_eq!(
        results[1],
        json!({"error": "invalid", "message": "invalid: kube-read list OmniWorkers: invalid field selector \"spec.clusterRef.name=a=b\": \
            '=' in the value \"a=b\" must be escaped as \\="})
    );
}

/// A reader answers from a watch another controller keeps only while that controller subscribes to it: once the
/// subscriber has gone, the watch's store is stale, and reads go to the API again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_uses_another_controllers_watch_only_while_it_runs() {
    use omni_operator::capabilities::{GetRequest, KubeReader};
    use omni_operator::controllers::scope::{Namespaces, Scope};

    let sim = cluster_children().await;
    let client = sim.client().await.expect("client");
    let workers = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("omni.texashpc.com", "v1alpha1", "OmniWorkers"),
        "omniworkers",
    );
    let hub = Arc::new(WatchHub::default());
    let reader = ApiReader::new(client.clone()).sharing(hub.clone(), Namespaces::All);
    let get = |name: &str| {
        reader.get(GetRequest {
            api_version: API.into(),
            kind: "OmniWorkers".into(),
            namespace: Some("team".into()),
            name: name.into(),
        })
    };
    // The first read resolves the kind, from the API.
    let first = get("a").await.expect("read").expect("found");
    assert_eq!(first["spec"]["clusterRef"]["name"], "edge");

    // Another controller watches the kind: with the API failing every read, the reader answers from the watch.
    let subscription = hub.subscribe(&client, &workers, &Scope::of(&Namespaces::All));
    cache_ready_api_failing(&sim, &subscription.watch, "get").await;
    let cached = get("a").await.expect("read from the watch").expect("found");
    assert_eq!(cached["spec"]["clusterRef"]["name"], "edge");

    // The controller goes, and with it the watch: the reader asks the API again (which fails, and says so).
    drop(subscription);
    assert!(
        hub.running(&workers, &Scope::of(&Namespaces::All))
            .is_none()
    );
    assert!(
        get("a").await.is_err(),
        "a watch nobody subscribes to is not read"
    );

    // With the API back, a change made since is read fresh.
    sim.faults().clear();
    move_a_to_core(client, &workers).await;
    let fresh = get("a").await.expect("read").expect("found");
    assert_eq!(fresh["spec"]["clusterRef"]["name"], "core");
}
