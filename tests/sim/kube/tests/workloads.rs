//! The workload controllers (`KubeSim::builder().workloads(..)`): what kube-controller-manager, the scheduler
//! and a kubelet would write, checked field by field against what the real ones write (pkg/controller/*,
//! pkg/kubelet/status), and the never-ready and fail markers.

use std::time::Duration;

use kube_sim::KubeSim;
use kube_sim::workloads::{BEHAVIOR_ANNOTATION, FAIL_IMAGE, WorkloadOptions};
use serde_json::{Value, json};

async fn sim(nodes: usize) -> KubeSim {
    KubeSim::builder()
        .workloads(WorkloadOptions { nodes })
        .start()
        .await
        .expect("starting kube-sim")
}

/// Polls until `f` returns Some, for up to 60 s (generous: the controllers usually settle in milliseconds).
async fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn condition<'a>(obj: &'a Value, ty: &str) -> &'a Value {
    obj["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == ty))
        .unwrap_or(&Value::Null)
}

fn pods_of(sim: &KubeSim, label: &str, value: &str) -> Vec<Value> {
    sim.list("v1", "Pod", Some("default"))
        .into_iter()
        .filter(|p| p["metadata"]["labels"][label] == value)
        .collect()
}

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: "nginx:1.27", ports: [{name: http, containerPort: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {app: web}
  ports: [{name: main, port: 80, targetPort: http}]
"#;

#[tokio::test]
async fn a_deployment_gets_a_replica_set_and_ready_pods_and_its_service_endpoints() {
    let sim = sim(2).await;
    sim.apply_yaml(DEPLOYMENT).await.unwrap();
    let d = wait_for("web available", || {
        let d = sim.get("apps/v1", "Deployment", "default", "web")?;
        (d["status"]["availableReplicas"] == 3
            && condition(&d, "Progressing")["reason"] == "NewReplicaSetAvailable")
            .then_some(d)
    })
    .await;
    // DeploymentStatus as the deployment controller writes it.
    assert_eq!(d["status"]["replicas"], 3);
    assert_eq!(d["status"]["updatedReplicas"], 3);
    assert_eq!(d["status"]["readyReplicas"], 3);
    assert_eq!(d["status"]["observedGeneration"], 1);
    assert!(
        d["status"].get("unavailableReplicas").is_none(),
        "zero counts are omitted: {}",
        d["status"]
    );
    let available = condition(&d, "Available");
    assert_eq!(available["status"], "True");
    assert_eq!(available["reason"], "MinimumReplicasAvailable");
    assert_eq!(available["message"], "Deployment has minimum availability.");
    assert!(available["lastUpdateTime"].is_string() && available["lastTransitionTime"].is_string());
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "1"
    );

    // One ReplicaSet named after the template hash, owned by the Deployment.
    let rss = sim.list("apps/v1", "ReplicaSet", Some("default"));
    assert_eq!(rss.len(), 1);
    let rs = &rss[0];
    let hash = rs["metadata"]["labels"]["pod-template-hash"]
        .as_str()
        .unwrap();
    assert_eq!(rs["metadata"]["name"], format!("web-{hash}"));
    assert_eq!(
        rs["spec"]["selector"]["matchLabels"],
        json!({"app": "web", "pod-template-hash": hash})
    );
    assert_eq!(
        rs["metadata"]["ownerReferences"][0]["uid"],
        d["metadata"]["uid"]
    );
    assert_eq!(rs["metadata"]["ownerReferences"][0]["controller"], true);
    assert_eq!(
        rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"],
        "3"
    );
    assert_eq!(
        rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"],
        "4"
    );
    assert_eq!(rs["status"]["readyReplicas"], 3);

    // Pods: scheduled across both Nodes, Running and Ready with the kubelet's five conditions.
    let pods = pods_of(&sim, "app", "web");
    assert_eq!(pods.len(), 3);
    let mut nodes: Vec<&str> = pods
        .iter()
        .map(|p| p["spec"]["nodeName"].as_str().unwrap())
        .collect();
    nodes.sort();
    nodes.dedup();
    assert_eq!(
        nodes,
        ["kube-sim-node-0", "kube-sim-node-1"],
        "spread over the Nodes"
    );
    for p in &pods {
        assert!(
            p["metadata"]["name"]
                .as_str()
                .unwrap()
                .starts_with(&format!("web-{hash}-"))
        );
        assert_eq!(p["status"]["phase"], "Running");
        let types: Vec<&str> = p["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            types,
            [
                "PodReadyToStartContainers",
                "Initialized",
                "Ready",
                "ContainersReady",
                "PodScheduled"
            ]
        );
        assert!(
            p["status"]["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .all(|c| c["status"] == "True")
        );
        assert!(
            p["status"]["podIP"]
                .as_str()
                .unwrap()
                .starts_with("10.244.")
        );
        let cs = &p["status"]["containerStatuses"][0];
        assert_eq!(
            (cs["ready"].clone(), cs["started"].clone()),
            (json!(true), json!(true))
        );
        assert!(cs["state"]["running"]["startedAt"].is_string());
        assert_eq!(
            p["spec"]["serviceAccountName"], "default",
            "ServiceAccount admission"
        );
    }

    // Endpoints: every Ready Pod, the named target port resolved through the container port.
    let ep = wait_for("endpoints", || {
        let ep = sim.get("v1", "Endpoints", "default", "web")?;
        (ep["subsets"][0]["addresses"].as_array().map(Vec::len) == Some(3)).then_some(ep)
    })
    .await;
    assert_eq!(
        ep["subsets"][0]["ports"],
        json!([{"port": 8080, "protocol": "TCP", "name": "main"}])
    );
    let mut ips: Vec<&str> = ep["subsets"][0]["addresses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["ip"].as_str().unwrap())
        .collect();
    let mut pod_ips: Vec<&str> = pods
        .iter()
        .map(|p| p["status"]["podIP"].as_str().unwrap())
        .collect();
    ips.sort();
    pod_ips.sort();
    assert_eq!(ips, pod_ips);
    let svc = sim.get("v1", "Service", "default", "web").unwrap();
    assert!(
        svc["spec"]["clusterIP"]
            .as_str()
            .unwrap()
            .starts_with("10."),
        "cluster IP allocated"
    );

    // Deleting the Service removes its Endpoints.
    let client = sim.client().await.unwrap();
    let services: kube::Api<k8s_openapi::api::core::v1::Service> =
        kube::Api::namespaced(client, "default");
    services.delete("web", &Default::default()).await.unwrap();
    wait_for("endpoints removed", || {
        sim.get("v1", "Endpoints", "default", "web")
            .is_none()
            .then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_template_change_rolls_to_a_new_replica_set_and_scales_the_old_one_down() {
    let sim = sim(1).await;
    sim.apply_yaml(DEPLOYMENT).await.unwrap();
    wait_for("web available", || {
        let d = sim.get("apps/v1", "Deployment", "default", "web")?;
        (d["status"]["availableReplicas"] == 3).then_some(())
    })
    .await;
    sim.apply_yaml(&DEPLOYMENT.replace("nginx:1.27", "nginx:1.28"))
        .await
        .unwrap();
    let d = wait_for("rolled out", || {
        let d = sim.get("apps/v1", "Deployment", "default", "web")?;
        let done = d["metadata"]["generation"] == 2
            && d["status"]["observedGeneration"] == 2
            && d["status"]["updatedReplicas"] == 3
            && d["status"]["replicas"] == 3
            && condition(&d, "Progressing")["reason"] == "NewReplicaSetAvailable";
        done.then_some(d)
    })
    .await;
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "2"
    );
    let rss = sim.list("apps/v1", "ReplicaSet", Some("default"));
    assert_eq!(rss.len(), 2, "the old ReplicaSet is kept for rollbacks");
    let (new, old): (Vec<&Value>, Vec<&Value>) = rss
        .iter()
        .partition(|rs| rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2");
    assert_eq!(new[0]["spec"]["replicas"], 3);
    assert_eq!(old[0]["spec"]["replicas"], 0);
    let pods = pods_of(&sim, "app", "web");
    assert_eq!(pods.len(), 3);
    assert!(
        pods.iter()
            .all(|p| p["spec"]["containers"][0]["image"] == "nginx:1.28")
    );

    // Rolling back to the first template revives its ReplicaSet as revision 3.
    sim.apply_yaml(DEPLOYMENT).await.unwrap();
    wait_for("rolled back", || {
        let d = sim.get("apps/v1", "Deployment", "default", "web")?;
        let back = d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
            && condition(&d, "Progressing")["reason"] == "NewReplicaSetAvailable"
            && d["status"]["replicas"] == 3;
        back.then_some(())
    })
    .await;
    assert_eq!(sim.list("apps/v1", "ReplicaSet", Some("default")).len(), 2);
}

#[tokio::test]
async fn a_never_ready_pod_keeps_its_deployment_unavailable_until_the_progress_deadline() {
    let sim = sim(1).await;
    let yaml = DEPLOYMENT
        .replace("replicas: 3", "replicas: 2\n  progressDeadlineSeconds: 2")
        .replace(
            "metadata: {labels: {app: web}}",
            &format!("metadata: {{labels: {{app: web}}, annotations: {{{BEHAVIOR_ANNOTATION}: never-ready}}}}"),
        );
    sim.apply_yaml(&yaml).await.unwrap();
    let d = wait_for("progress deadline exceeded", || {
        let d = sim.get("apps/v1", "Deployment", "default", "web")?;
        (condition(&d, "Progressing")["reason"] == "ProgressDeadlineExceeded").then_some(d)
    })
    .await;
    let progressing = condition(&d, "Progressing");
    assert_eq!(progressing["status"], "False");
    let rs_name = sim.list("apps/v1", "ReplicaSet", Some("default"))[0]["metadata"]["name"].clone();
    assert_eq!(
        progressing["message"],
        format!(
            "ReplicaSet \"{}\" has timed out progressing.",
            rs_name.as_str().unwrap()
        )
    );
    let available = condition(&d, "Available");
    assert_eq!(
        (available["status"].as_str(), available["reason"].as_str()),
        (Some("False"), Some("MinimumReplicasUnavailable"))
    );
    assert_eq!(d["status"]["replicas"], 2);
    assert_eq!(d["status"]["unavailableReplicas"], 2);
    assert!(d["status"].get("readyReplicas").is_none());
    for p in pods_of(&sim, "app", "web") {
        assert_eq!(p["status"]["phase"], "Running");
        let ready = &p["status"]["conditions"][2];
        assert_eq!(
            (ready["type"].as_str(), ready["status"].as_str()),
            (Some("Ready"), Some("False"))
        );
        assert_eq!(ready["reason"], "ContainersNotReady");
        assert_eq!(ready["message"], "containers with unready status: [web]");
    }
    let ep = wait_for("not-ready endpoints", || {
        let ep = sim.get("v1", "Endpoints", "default", "web")?;
        (ep["subsets"][0]["notReadyAddresses"]
            .as_array()
            .map(Vec::len)
            == Some(2))
        .then_some(ep)
    })
    .await;
    assert!(ep["subsets"][0].get("addresses").is_none());
}

#[tokio::test]
async fn jobs_complete_or_fail_past_their_backoff_limit() {
    let sim = sim(1).await;
    let job = |name: &str, image: &str, extra: &str| {
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: {name}, namespace: default}}\nspec:\n{extra}  template:\n    spec:\n      restartPolicy: Never\n      containers: [{{name: main, image: \"{image}\"}}]\n"
        )
    };
    sim.apply_yaml(&job(
        "three",
        "busybox:1.37",
        "  completions: 3\n  parallelism: 2\n",
    ))
    .await
    .unwrap();
    sim.apply_yaml(&job(
        "broken",
        &format!("{FAIL_IMAGE}:1"),
        "  backoffLimit: 2\n",
    ))
    .await
    .unwrap();
    let done = wait_for("three complete", || {
        let j = sim.get("batch/v1", "Job", "default", "three")?;
        (condition(&j, "Complete")["status"] == "True").then_some(j)
    })
    .await;
    assert_eq!(done["status"]["succeeded"], 3);
    assert!(done["status"].get("active").is_none());
    assert_eq!(done["status"]["ready"], 0);
    assert!(
        done["status"]["completionTime"].is_string() && done["status"]["startTime"].is_string()
    );
    let met = condition(&done, "SuccessCriteriaMet");
    assert_eq!(
        (met["status"].as_str(), met["reason"].as_str()),
        (Some("True"), Some("CompletionsReached"))
    );
    assert_eq!(
        condition(&done, "Complete")["message"],
        "Reached expected number of succeeded pods"
    );
    let uid = done["metadata"]["uid"].as_str().unwrap();
    assert_eq!(
        done["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
        uid
    );
    let pods = pods_of(&sim, "job-name", "three");
    assert_eq!(pods.len(), 3);
    for p in &pods {
        assert_eq!(p["status"]["phase"], "Succeeded");
        let t = &p["status"]["containerStatuses"][0]["state"]["terminated"];
        assert_eq!(
            (t["exitCode"].clone(), t["reason"].clone()),
            (json!(0), json!("Completed"))
        );
        assert_eq!(
            p["metadata"]["labels"]["batch.kubernetes.io/controller-uid"],
            uid
        );
    }

    let failed = wait_for("broken failed", || {
        let j = sim.get("batch/v1", "Job", "default", "broken")?;
        (condition(&j, "Failed")["status"] == "True").then_some(j)
    })
    .await;
    assert_eq!(
        failed["status"]["failed"], 3,
        "backoffLimit 2 allows two retries"
    );
    assert_eq!(
        condition(&failed, "Failed")["reason"],
        "BackoffLimitExceeded"
    );
    assert_eq!(
        condition(&failed, "FailureTarget")["message"],
        "Job has reached the specified backoff limit"
    );
    for p in pods_of(&sim, "job-name", "broken") {
        assert_eq!(p["status"]["phase"], "Failed");
        assert_eq!(
            p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"],
            1
        );
    }
}

#[tokio::test]
async fn a_stateful_set_starts_in_order_binds_its_claims_and_scales_down_from_the_top() {
    let sim = sim(1).await;
    let sts = r#"
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: default}
spec:
  replicas: 3
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: "postgres:17"}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
"#;
    let mut changes = sim.cluster().store().subscribe();
    sim.apply_yaml(sts).await.unwrap();
    let s = wait_for("db ready", || {
        let s = sim.get("apps/v1", "StatefulSet", "default", "db")?;
        (s["status"]["readyReplicas"] == 3
            && s["status"]["currentRevision"] == s["status"]["updateRevision"])
            .then_some(s)
    })
    .await;
    assert_eq!(s["status"]["replicas"], 3);
    assert_eq!(s["status"]["availableReplicas"], 3);
    assert_eq!(s["status"]["updatedReplicas"], 3);
    let revision = s["status"]["updateRevision"].as_str().unwrap();
    assert!(revision.starts_with("db-"));
    for i in 0..3 {
        let p = sim.get("v1", "Pod", "default", &format!("db-{i}")).unwrap();
        assert_eq!(p["spec"]["hostname"], format!("db-{i}"));
        assert_eq!(p["spec"]["subdomain"], "db");
        assert_eq!(
            p["metadata"]["labels"]["apps.kubernetes.io/pod-index"],
            i.to_string()
        );
        assert_eq!(
            p["metadata"]["labels"]["controller-revision-hash"],
            revision
        );
        assert_eq!(
            p["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"],
            format!("data-db-{i}")
        );
        let pvc = sim
            .get(
                "v1",
                "PersistentVolumeClaim",
                "default",
                &format!("data-db-{i}"),
            )
            .unwrap();
        assert_eq!(pvc["status"]["phase"], "Bound");
        assert_eq!(pvc["status"]["capacity"]["storage"], "1Gi");
        assert_eq!(
            pvc["spec"]["volumeName"],
            format!("pvc-{}", pvc["metadata"]["uid"].as_str().unwrap())
        );
    }
    // OrderedReady: each ordinal was created only after the one before it was Ready.
    let mut seen_ready: Vec<String> = Vec::new();
    let mut order_ok = true;
    while let Ok(c) = changes.try_recv() {
        if c.key.resource != "pods" {
            continue;
        }
        let ordinal: usize = c.name.trim_start_matches("db-").parse().unwrap_or(0);
        if c.kind == kube_sim::store::ChangeKind::Added && ordinal > 0 {
            order_ok &= seen_ready.contains(&format!("db-{}", ordinal - 1));
        }
        if condition(&c.object, "Ready")["status"] == "True" {
            seen_ready.push(c.name.clone());
        }
    }
    assert!(
        order_ok,
        "a Pod was created before its predecessor was Ready"
    );
    assert_eq!(
        seen_ready.iter().filter(|n| n.as_str() == "db-2").count(),
        1
    );
    let client = sim.client().await.unwrap();
    let api: kube::Api<k8s_openapi::api::apps::v1::StatefulSet> =
        kube::Api::namespaced(client, "default");
    api.patch(
        "db",
        &Default::default(),
        &kube::api::Patch::Merge(json!({"spec": {"replicas": 1}})),
    )
    .await
    .unwrap();
    wait_for("scaled down", || {
        let gone = sim.get("v1", "Pod", "default", "db-1").is_none()
            && sim.get("v1", "Pod", "default", "db-2").is_none();
        (gone && sim.get("v1", "Pod", "default", "db-0").is_some()).then_some(())
    })
    .await;
    assert!(
        sim.get("v1", "PersistentVolumeClaim", "default", "data-db-2")
            .is_some(),
        "whenScaled: Retain keeps claims"
    );
}

#[tokio::test]
async fn a_daemon_set_runs_one_pod_on_every_node_its_selector_fits() {
    let sim = sim(3).await;
    let ds = |name: &str, selector: &str| {
        format!(
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      nodeSelector: {selector}\n      containers: [{{name: a, image: busybox}}]\n"
        )
    };
    sim.apply_yaml(&ds("agent", "{kubernetes.io/os: linux}"))
        .await
        .unwrap();
    sim.apply_yaml(&ds("nowhere", "{disk: ssd}")).await.unwrap();
    let d = wait_for("agent ready", || {
        let d = sim.get("apps/v1", "DaemonSet", "default", "agent")?;
        (d["status"]["numberReady"] == 3 && d["status"]["numberAvailable"] == 3).then_some(d)
    })
    .await;
    assert_eq!(d["status"]["desiredNumberScheduled"], 3);
    assert_eq!(d["status"]["currentNumberScheduled"], 3);
    assert_eq!(d["status"]["updatedNumberScheduled"], 3);
    assert_eq!(d["status"]["numberMisscheduled"], 0);
    let mut nodes: Vec<String> = pods_of(&sim, "app", "agent")
        .iter()
        .map(|p| p["spec"]["nodeName"].as_str().unwrap().to_string())
        .collect();
    nodes.sort();
    assert_eq!(
        nodes,
        ["kube-sim-node-0", "kube-sim-node-1", "kube-sim-node-2"]
    );
    let none = wait_for("nowhere observed", || {
        let d = sim.get("apps/v1", "DaemonSet", "default", "nowhere")?;
        (d["status"]["observedGeneration"] == 1).then_some(d)
    })
    .await;
    assert_eq!(none["status"]["desiredNumberScheduled"], 0);
    assert!(pods_of(&sim, "app", "nowhere").is_empty());
}

#[tokio::test]
async fn without_the_option_nothing_runs_and_no_nodes_exist() {
    let sim = KubeSim::start().await.unwrap();
    sim.apply_yaml(DEPLOYMENT).await.unwrap();
    // A later write is served after anything the creation could have triggered synchronously.
    sim.apply_yaml(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: after, namespace: default}\n",
    )
    .await
    .unwrap();
    assert!(sim.list("v1", "Node", None).is_empty());
    assert!(
        sim.list("apps/v1", "ReplicaSet", Some("default"))
            .is_empty()
    );
    let d = sim.get("apps/v1", "Deployment", "default", "web").unwrap();
    assert!(d.get("status").is_none_or(|s| s.get("replicas").is_none()));
    // The server's defaults are there either way.
    assert_eq!(
        d["spec"]["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    );
    assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(d["spec"]["progressDeadlineSeconds"], 600);
    let c = &d["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["imagePullPolicy"], "IfNotPresent");
    assert_eq!(c["ports"][0]["protocol"], "TCP");
    assert_eq!(d["spec"]["template"]["spec"]["restartPolicy"], "Always");
}

/// Odd objects the server accepts (a template spec that is not an object, absurd numbers) cost their own
/// reconciliation, not the controllers: a healthy Deployment beside them still becomes available.
#[tokio::test]
async fn odd_workloads_do_not_stop_the_controllers() {
    let sim = sim(1).await;
    let client = sim.client().await.unwrap();
    let odd = [
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "odd-template", "namespace": "default"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "odd"}}, "template": "not an object"}}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "odd-numbers", "namespace": "default",
                "annotations": {"deployment.kubernetes.io/revision": "9223372036854775807"}},
            "spec": {"replicas": 1, "minReadySeconds": 300_000_000_000i64, "selector": {"matchLabels": {"app": "n"}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "9223372036854775807%"}},
                "template": {"metadata": {"labels": {"app": "n"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}}),
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "odd-sts", "namespace": "default"},
            "spec": {"replicas": 1, "podManagementPolicy": "Parallel", "serviceName": "s", "selector": {"matchLabels": {"app": "s"}},
                "template": {"metadata": {"labels": {"app": "s"}}, "spec": "nope"}}}),
    ];
    for obj in odd {
        let kind = obj["kind"].as_str().unwrap().to_lowercase();
        let path = format!("/apis/apps/v1/namespaces/default/{kind}s");
        let req = http::Request::post(path)
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&obj).unwrap())
            .unwrap();
        // What the server takes must not break the controllers; a template its selector does not select is
        // refused, as ValidateDeploymentSpec refuses it.
        let answer = client.request_text(req).await;
        if obj["metadata"]["name"] == "odd-template" {
            match answer {
                Err(kube::Error::Api(e)) => {
                    assert_eq!(e.code, 422);
                    assert!(
                        e.message
                            .contains("`selector` does not match template `labels`"),
                        "{}",
                        e.message
                    );
                }
                other => panic!("the odd template was not refused: {other:?}"),
            }
        }
    }
    sim.apply_yaml(DEPLOYMENT).await.unwrap();
    wait_for("web available beside the odd ones", || {
        let d = sim.get("apps/v1", "Deployment", "default", "web")?;
        (d["status"]["availableReplicas"] == 3).then_some(())
    })
    .await;
}
