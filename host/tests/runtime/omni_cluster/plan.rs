//! `omni-operator plan` over the sample (issue "GitOps safety", Deliver 1): the plan of a change touches nothing
//! in Omni or Kubernetes, and applying the change does in Omni what the plan said.

use std::collections::BTreeMap;

use omni_operator::plan::render::{Format, render};
use omni_operator::plan::{Manifest, Plan, Planner};
use omni_sim::store::md;
use serde_json::{Value, json};

use super::*;

const NEW_WORKER: &str = "33333333-3333-4333-8333-333333333333";

/// Every resource Omni holds, with its version: any write changes this.
fn versions(store: &Store) -> BTreeMap<(String, String), String> {
    store
        .all()
        .iter()
        .map(md)
        .map(|m| (key(&m.r#type, &m.id), m.version.clone()))
        .collect()
}

/// The sample's objects as a write of theirs would change them: generation, labels, annotations, finalizers and
/// spec. Not the resourceVersion: the running operator writes their status by itself (a status update after a sync
/// may land while a plan runs), and a plan never writes status.
fn kube_versions(env: &Env) -> Vec<(String, String)> {
    sample()
        .iter()
        .map(|o| {
            let (kind, name) = (
                o["kind"].as_str().unwrap_or_default(),
                o["metadata"]["name"].as_str().unwrap_or_default(),
            );
            let stored = env.kube.get(API, kind, NS, name).unwrap_or(Value::Null);
            let meta = &stored["metadata"];
            (
                format!("{kind}/{name}"),
                json!([
                    meta["generation"],
                    meta["labels"],
                    meta["annotations"],
                    meta["finalizers"],
                    stored["spec"]
                ])
                .to_string(),
            )
        })
        .collect()
}

async fn planner(env: &Env) -> Planner {
    let host = env.host.as_ref().expect("a host");
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&env.kube.kubeconfig(&env.kube.admin()))
        .expect("the kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("a client configuration");
    Planner {
        registry: host.registry().clone(),
        config,
        omni_dictionary: None,
        helm: None,
        helm_summary: "this test runs no Helm".into(),
        template_roots: Vec::new(),
        render_helm: true,
    }
}

fn manifests(objects: &[Value]) -> Vec<Manifest> {
    objects
        .iter()
        .enumerate()
        .map(|(i, o)| Manifest {
            source: format!("sample#{}", i + 1),
            object: o.clone(),
        })
        .collect()
}

/// Plans `objects` and checks that planning wrote nothing anywhere.
async fn plan_touching_nothing(env: &Env, objects: &[Value], prune: bool) -> Plan {
    let (omni_before, kube_before) = (versions(env.omni.state()), kube_versions(env));
    let mark = env.omni.records().len();
    let plan = planner(env)
        .await
        .plan(manifests(objects), prune)
        .await
        .expect("a plan");
    assert_eq!(
        writes(&env.records_since(mark)),
        Vec::<String>::new(),
        "planning sent no write to Omni"
    );
    assert_eq!(versions(env.omni.state()), omni_before, "Omni is unchanged");
    assert_eq!(kube_versions(env), kube_before, "Kubernetes is unchanged");
    plan
}

/// The plan's Omni writes as `<Method> <Type>(<id>)`, as [`writes`] spells what Omni was sent.
fn planned_writes(plan: &Plan) -> BTreeSet<String> {
    plan.objects
        .iter()
        .flat_map(|o| o.omni.iter())
        .map(|c| {
            // Omni's method names: `teardown` is `Teardown`.
            let name = c.op.name();
            let method = name[..1].to_uppercase() + &name[1..];
            format!("{method} {}.omni.sidero.dev({})", c.type_, c.id)
        })
        .collect()
}

/// The checklist's answer to the question starting `starts`, checked to be printed alike in all three formats:
/// a line of the text, a row of the Markdown table, an entry of the JSON checklist.
fn answer(plan: &Plan, starts: &str) -> String {
    let line = plan
        .checklist
        .iter()
        .find(|a| a.question.starts_with(starts))
        .unwrap_or_else(|| {
            panic!(
                "no checklist line starting {starts:?}: {:#?}",
                plan.checklist
            )
        });
    let (question, answer) = (line.question, line.answer.clone());
    let text = render(plan, Format::Text);
    assert!(text.contains(&format!("\n{question} {answer}\n")), "{text}");
    // Markdown escapes what would start markup; the row reads the same without its backslashes.
    let markdown = render(plan, Format::Markdown).replace('\\', "");
    assert!(
        markdown.contains(&format!("\n| {question} | {answer} |\n")),
        "{markdown}"
    );
    let json: Value = serde_json::from_str(&render(plan, Format::Json)).expect("the plan is JSON");
    assert!(
        json["checklist"]
            .as_array()
            .is_some_and(|c| c.contains(&json!({"question": question, "answer": answer}))),
        "{json:#}"
    );
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planned_change_touches_nothing_and_applying_it_does_what_the_plan_said() {
    let env = Env::start(quick(), None).await;
    env.apply_sample().await;
    env.wait_synced(1).await;
    env.omni.add_machine(NEW_WORKER, None, false);

    // One more worker, a Kubernetes upgrade, and the CNI and kube-proxy handed over by a patch.
    let mut cluster = sample_object("OmniCluster");
    cluster["spec"]["kubernetes"]["version"] = json!("v1.35.1");
    cluster["spec"]["patches"] = json!([{"name": "cni", "inline":
        {"cluster": {"network": {"cni": {"name": "none"}}, "proxy": {"disabled": true}}}}]);
    let mut workers = sample_object("OmniWorkers");
    workers["spec"]["machines"]
        .as_array_mut()
        .expect("machines")
        .push(json!(NEW_WORKER));
    let changed: Vec<Value> = sample()
        .into_iter()
        .map(|o| match o["kind"].as_str() {
            Some("OmniCluster") => cluster.clone(),
            Some("OmniWorkers") => workers.clone(),
            _ => o,
        })
        .collect();

    let plan = plan_touching_nothing(&env, &changed, false).await;
    assert_eq!(plan.exit_code(), 0, "{plan:#?}");
    assert_eq!(
        answer(&plan, "Does this change create"),
        "updates edge-sample"
    );
    assert_eq!(answer(&plan, "Are machines destroyed"), "no");
    let networking = answer(&plan, "Does networking ownership change");
    assert!(
        networking.contains("CNI Talos's default (flannel) -> none")
            && networking.contains("kube-proxy enabled -> disabled"),
        "{networking}"
    );
    let update = plan
        .objects
        .iter()
        .flat_map(|o| o.omni.iter())
        .find(|c| c.type_ == "Clusters")
        .expect("the cluster is updated");
    assert!(
        update
            .diff
            .iter()
            .any(|l| l.starts_with('-') && l.contains("1.35.0"))
            && update
                .diff
                .iter()
                .any(|l| l.starts_with('+') && l.contains("1.35.1")),
        "a field-level diff of the version: {:#?}",
        update.diff
    );
    let planned = planned_writes(&plan);
    assert_eq!(
        planned,
        BTreeSet::from([
            format!("Update {CLUSTERS}({CLUSTER})"),
            format!("Create {CONFIG_PATCHES}(200-cluster-edge-sample-cni)"),
            format!("Create {MACHINE_SET_NODES}({NEW_WORKER})"),
        ])
    );

    // Applied for real: Omni is sent exactly what the plan said.
    let mark = env.omni.records().len();
    env.apply(&workers).await;
    env.apply(&cluster).await;
    env.wait_synced(env.generation()).await;
    let applied: BTreeSet<String> = distinct_writes(&env.records_since(mark))
        .into_iter()
        .collect();
    assert_eq!(applied, planned);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planned_prune_names_what_is_destroyed_and_deleting_does_it() {
    let env = Env::start(quick(), None).await;
    env.apply_sample().await;
    env.wait_synced(1).await;

    // Pruning the whole sample: the cluster goes, and with it both machines.
    let plan = plan_touching_nothing(&env, &[], true).await;
    // Nothing to plan without manifests: --prune only removes in the namespaces the manifests touch.
    assert!(plan.objects.is_empty(), "{plan:#?}");
    // The manifests keep the connection (pruned with it, the cluster could not be deleted) and a ConfigMap.
    let connection = env
        .kube
        .get(API, "OmniConnection", NS, "omni-sample")
        .expect("the connection");
    let keep = vec![
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "unrelated", "namespace": NS}, "data": {"a": "b"}}),
        json!({"apiVersion": API, "kind": "OmniConnection",
            "metadata": {"name": "omni-sample", "namespace": NS}, "spec": connection["spec"]}),
    ];
    let plan = plan_touching_nothing(&env, &keep, true).await;
    assert_eq!(plan.exit_code(), 2, "{plan:#?}");
    assert_eq!(
        answer(&plan, "Does this change create"),
        "deletes edge-sample"
    );
    assert_eq!(
        answer(&plan, "Are machines destroyed"),
        format!("yes, 2: {CP_MACHINE}, {WORKER_MACHINE}")
    );
    assert!(
        answer(&plan, "Is anything removed").starts_with(
            "OmniCluster omni-system/edge-sample: will delete remote cluster edge-sample and destroy 2 machines"
        ),
        "{plan:#?}"
    );
    let planned = planned_writes(&plan);
    assert_eq!(
        planned,
        BTreeSet::from([format!("Teardown {CLUSTERS}({CLUSTER})")])
    );

    // Orphaned: the same prune destroys nothing.
    let mut orphan = sample_object("OmniCluster");
    orphan["spec"]["deletePolicy"] = json!({"orphan": true});
    env.apply(&orphan).await;
    env.wait_synced(env.generation()).await;
    let plan = plan_touching_nothing(&env, &keep, true).await;
    assert_eq!(plan.exit_code(), 0, "{plan:#?}");
    assert_eq!(
        answer(&plan, "Does this change create"),
        "orphans edge-sample"
    );
    assert!(planned_writes(&plan).is_empty(), "{plan:#?}");

    // Kept by Flux: not pruned, nothing destroyed, and said so.
    let mut kept = sample_object("OmniCluster");
    kept["metadata"]["annotations"] = json!({"kustomize.toolkit.fluxcd.io/prune": "disabled"});
    env.apply(&kept).await;
    env.wait_synced(env.generation()).await;
    let plan = plan_touching_nothing(&env, &keep, true).await;
    let cluster = plan
        .objects
        .iter()
        .find(|o| o.kind == "OmniCluster")
        .expect("the cluster is in the plan");
    assert_eq!(
        cluster.notes,
        ["Flux will not prune it (kustomize.toolkit.fluxcd.io/prune: disabled)"]
    );
    assert!(!cluster.destroys);

    // Deleted for real with the policy the first plan saw: Omni is sent what that plan said.
    env.apply(&sample_object("OmniCluster")).await;
    env.wait_synced(env.generation()).await;
    assert_eq!(delete_cluster(&env).await, planned);
}

/// Deletes the sample's OmniCluster and waits for it to go: the distinct writes Omni was sent for it, the destroys
/// that follow each teardown left out (a plan shows a removal once, as its teardown).
async fn delete_cluster(env: &Env) -> BTreeSet<String> {
    let mark = env.omni.records().len();
    env.delete("OmniCluster", "omniclusters", CLUSTER).await;
    env.wait("the OmniCluster to be gone", WAIT, Value::is_null)
        .await;
    distinct_writes(&env.records_since(mark))
        .into_iter()
        .filter(|w| !w.starts_with("Destroy "))
        .collect()
}

/// Polls the management cluster until `kind/name` is synced at its generation.
async fn wait_object_synced(env: &Env, kind: &str, name: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        let obj = env.kube.get(API, kind, NS, name).unwrap_or(Value::Null);
        let generation = obj["metadata"]["generation"].as_i64().unwrap_or(-1);
        if synced_at(&obj, generation) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {kind} {name} to sync: {:#}",
            obj["status"]
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The review checklist's lines one by one (issue "GitOps safety", Done means): pausing, resuming, creating a
/// cluster, and removing one under `destroyMachines` are each planned without touching anything, and applying each
/// sends Omni exactly the writes its plan listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_checklist_change_is_planned_as_applying_it_does() {
    const NEW_CP: &str = "44444444-4444-4444-8444-444444444444";
    const DISCONNECTED: &str = "55555555-5555-4555-8555-555555555555";
    let env = Env::start(quick(), None).await;
    env.apply_sample().await;
    env.wait_synced(1).await;
    env.omni.add_machine(NEW_CP, None, false);
    let with = |replaced: &[Value]| -> Vec<Value> {
        let mut objects: Vec<Value> = sample()
            .into_iter()
            .filter(|o| {
                !replaced.iter().any(|r| {
                    r["kind"] == o["kind"] && r["metadata"]["name"] == o["metadata"]["name"]
                })
            })
            .collect();
        objects.extend(replaced.iter().cloned());
        objects
    };

    // Pause: nothing is written to Omni, now or when applied.
    let mut cluster = sample_object("OmniCluster");
    cluster["spec"]["suspend"] = json!(true);
    let plan = plan_touching_nothing(&env, &with(&[cluster.clone()]), false).await;
    assert_eq!(
        answer(&plan, "Does this change create"),
        "pauses edge-sample"
    );
    assert_eq!(plan.exit_code(), 0);
    assert!(planned_writes(&plan).is_empty(), "{plan:#?}");
    let mark = env.omni.records().len();
    env.apply(&cluster).await;
    env.wait("Ready=False/Suspended", WAIT, |o| {
        cond(o, "Ready").is_some_and(|c| c.is("False", "Suspended") && c.generation == 2)
    })
    .await;
    assert_eq!(writes(&env.records_since(mark)), Vec::<String>::new());

    // Resume with a Kubernetes upgrade: the cluster is updated.
    cluster["spec"]["suspend"] = json!(false);
    cluster["spec"]["kubernetes"]["version"] = json!("v1.35.2");
    let plan = plan_touching_nothing(&env, &with(&[cluster.clone()]), false).await;
    assert_eq!(
        answer(&plan, "Does this change create"),
        "updates edge-sample; resumes edge-sample"
    );
    let planned = planned_writes(&plan);
    assert_eq!(
        planned,
        BTreeSet::from([format!("Update {CLUSTERS}({CLUSTER})")])
    );
    let mark = env.omni.records().len();
    env.apply(&cluster).await;
    env.wait_synced(3).await;
    let applied: BTreeSet<String> = distinct_writes(&env.records_since(mark))
        .into_iter()
        .collect();
    assert_eq!(applied, planned);

    // A new cluster with its control plane on a free machine.
    let mut two = sample_object("OmniCluster");
    two["metadata"]["name"] = json!("edge-two");
    two["spec"]["kubernetes"]["manifests"] = json!([]);
    let mut cp = sample_object("OmniControlPlane");
    cp["metadata"]["name"] = json!("edge-two-control-plane");
    cp["spec"]["clusterRef"]["name"] = json!("edge-two");
    cp["spec"]["machines"] = json!([NEW_CP]);
    let mut new_set = with(&[cluster.clone()]);
    new_set.extend([two.clone(), cp.clone()]);
    let plan = plan_touching_nothing(&env, &new_set, false).await;
    assert_eq!(answer(&plan, "Does this change create"), "creates edge-two");
    assert_eq!(answer(&plan, "Are machines destroyed"), "no");
    assert_eq!(plan.exit_code(), 0);
    let planned = planned_writes(&plan);
    assert!(
        planned.contains("Create Clusters.omni.sidero.dev(edge-two)")
            && planned.contains(&format!("Create {MACHINE_SET_NODES}({NEW_CP})")),
        "{planned:#?}"
    );
    let mark = env.omni.records().len();
    env.apply(&two).await;
    env.apply(&cp).await;
    wait_object_synced(&env, "OmniCluster", "edge-two").await;
    let applied: BTreeSet<String> = distinct_writes(&env.records_since(mark))
        .into_iter()
        .collect();
    assert_eq!(applied, planned);

    // Removed under destroyMachines, with a disconnected machine in the cluster: the machine leaves Omni too.
    cluster["spec"]["deletePolicy"] = json!({"destroyMachines": true});
    env.apply(&cluster).await;
    env.wait_synced(4).await;
    env.omni.add_machine(DISCONNECTED, Some(CLUSTER), true);
    let connection = env
        .kube
        .get(API, "OmniConnection", NS, "omni-sample")
        .expect("the connection");
    let keep = vec![
        json!({"apiVersion": API, "kind": "OmniConnection",
            "metadata": {"name": "omni-sample", "namespace": NS}, "spec": connection["spec"]}),
        two.clone(),
        cp.clone(),
    ];
    let plan = plan_touching_nothing(&env, &keep, true).await;
    assert_eq!(plan.exit_code(), 2, "{plan:#?}");
    assert_eq!(
        answer(&plan, "Does this change create"),
        "deletes edge-sample"
    );
    let machines = answer(&plan, "Are machines destroyed");
    assert!(
        machines.starts_with("yes, 3:") && machines.contains(DISCONNECTED),
        "{machines}"
    );
    let planned = planned_writes(&plan);
    assert_eq!(
        planned,
        BTreeSet::from([
            format!("Teardown {LINKS}({DISCONNECTED})"),
            format!("Teardown {CLUSTERS}({CLUSTER})"),
        ])
    );
    assert_eq!(delete_cluster(&env).await, planned);
}
