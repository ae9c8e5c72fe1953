//! The Helm charts in `charts/`, through Helm's own SDK (libhelm_c): linted, rendered, installed into kube-sim
//! by the operator's Helm worker, and the installed RBAC checked against what the operator really calls, by
//! running it as the chart's ServiceAccount and reading kube-sim's request log for refusals.

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use omni_operator::helm::protocol::{ChartRef, Op, Target};
use omni_operator::helm::{HelmEngine, WorkerEngine, WorkerOptions};
use serde_json::{Value, json};

use super::helm_fixtures::{lib, package};
use super::support;

const NS: &str = "omni-system";
const RELEASE: &str = "omni-cluster-operator";

fn chart(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../charts")
        .join(name)
}

fn documents(rendered: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for (path, text) in rendered.as_object().expect("template path → manifest") {
        // NOTES.txt is text for the user, not a manifest.
        if !path.ends_with(".yaml") {
            continue;
        }
        let text = text.as_str().unwrap_or_default();
        for doc in kube_sim::yaml_documents(text).expect("rendered YAML parses") {
            let doc = serde_json::to_value(doc).expect("json");
            if doc.is_object() {
                out.push(doc);
            }
        }
    }
    out
}

/// The chart rendered as `helm install` of release RELEASE into NS renders it.
fn install_render(chart: &helm_c::Chart, values: Value) -> helm_c::Result<Value> {
    chart.render(
        &values,
        &json!({"name": RELEASE, "namespace": NS, "is_install": true}),
    )
}

fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} among {:?}", names(docs)))
}

fn names(docs: &[Value]) -> Vec<String> {
    docs.iter()
        .map(|d| {
            format!(
                "{}/{}",
                d["kind"].as_str().unwrap_or_default(),
                d["metadata"]["name"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

/// Both charts lint clean with Helm's linter; the operator chart renders what the Go chart renders (with this
/// operator's differences: all eight webhooks, no cert-manager objects) and refuses combinations that cannot
/// work.
#[test]
fn the_charts_lint_and_render_with_helms_own_sdk() {
    let helm = helm_c::Helm::load(&lib()).expect("libhelm_c");
    for name in ["omni-cluster-operator-crds", "omni-cluster-operator"] {
        let report = helm.lint(&chart(name), &json!({})).expect("helm lint runs");
        // Helm's severities: 1 info, 2 warning, 4 error.
        assert_eq!(report["errors"], json!([]), "{name}: {report:#}");
        let messages = report["messages"].as_array().expect("messages");
        assert!(
            messages
                .iter()
                .all(|m| m["severity"].as_u64().unwrap_or(4) < 2),
            "{name}: {report:#}"
        );
        assert_eq!(report["total_charts_linted"], 1);
    }

    let crds = helm
        .load_chart(&chart("omni-cluster-operator-crds"))
        .expect("loads");
    let docs = documents(
        &crds
            .render(&json!({}), &json!({"name": "crds", "namespace": NS}))
            .expect("renders"),
    );
    let kinds: Vec<&str> = docs
        .iter()
        .filter_map(|d| d["spec"]["names"]["kind"].as_str())
        .collect();
    assert_eq!(docs.len(), 11, "{kinds:?}");
    assert!(docs.iter().all(|d| d["kind"] == "CustomResourceDefinition"));

    let operator = helm
        .load_chart(&chart("omni-cluster-operator"))
        .expect("loads");
    let render = |values: Value| install_render(&operator, values);
    let docs = documents(&render(json!({})).expect("renders"));
    let fullname = RELEASE;
    let deployment = find(
        &docs,
        "Deployment",
        &format!("{fullname}-controller-manager"),
    );
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["name"], "manager");
    let args: Vec<&str> = container["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for want in [
        "run",
        "--namespace=omni-system",
        "--leader-elect",
        "--health-probe-bind-address=:8081",
        "--metrics-bind-address=:8080",
        "--enable-webhooks=true",
        "--webhook-bind-address=:9443",
        "--webhook-service=omni-cluster-operator-webhook-service",
        "--webhook-configuration=omni-cluster-operator-validating-webhook-configuration",
        "--webhook-failure-policy=Fail",
        // The Helm worker's limit stays below the container's 512 MiB, which the host shares.
        "--helm-worker-memory-limit=384",
    ] {
        assert!(args.contains(&want), "{want} not in {args:?}");
    }
    assert!(
        !args
            .iter()
            .any(|a| a.starts_with("--helm-target-namespace")),
        "no target-namespace policy unless the values set one: {args:?}"
    );
    assert!(
        !args.contains(&"--deletion-protection-default"),
        "deletion protection is opt-in: {args:?}"
    );
    let protected =
        documents(&render(json!({"deletionProtectionDefault": true})).expect("renders"));
    let protected = find(
        &protected,
        "Deployment",
        &format!("{fullname}-controller-manager"),
    )["spec"]["template"]["spec"]["containers"][0]["args"]
        .clone();
    assert!(
        protected
            .as_array()
            .is_some_and(|a| a.contains(&json!("--deletion-protection-default"))),
        "{protected}"
    );
    assert!(
        !args
            .iter()
            .any(|a| a.starts_with("--helm-default-service-account")),
        "no impersonation unless the values ask for it: {args:?}"
    );
    assert!(
        !args.iter().any(|a| a.starts_with("--events-addr")),
        "no forwarding unless the values ask for it: {args:?}"
    );
    let restricted = documents(
        &render(json!({"helm": {"targetNamespaces": ["apps", "web"],
            "defaultServiceAccount": "deployer"}, "eventsAddr": "http://nc.flux-system.svc/"}))
        .expect("renders"),
    );
    let restricted = find(
        &restricted,
        "Deployment",
        &format!("{fullname}-controller-manager"),
    )["spec"]["template"]["spec"]["containers"][0]["args"]
        .clone();
    for want in [
        "--helm-target-namespace=apps",
        "--helm-target-namespace=web",
        "--helm-default-service-account=deployer",
        "--events-addr=http://nc.flux-system.svc/",
    ] {
        assert!(
            restricted
                .as_array()
                .is_some_and(|a| a.iter().any(|x| x == want)),
            "{want} not in {restricted}"
        );
    }
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    let env = container["env"].as_array().expect("env");
    assert!(
        env.iter()
            .any(|e| e["name"] == "TMPDIR" && e["value"] == "/tmp/omni-operator")
    );
    assert!(env.iter().any(|e| e["name"] == "POD_NAMESPACE"));

    let vwc = find(
        &docs,
        "ValidatingWebhookConfiguration",
        "omni-cluster-operator-validating-webhook-configuration",
    );
    let hooks = vwc["webhooks"].as_array().expect("webhooks");
    assert_eq!(hooks.len(), 8, "all eight, OmniSecretSync included");
    assert!(
        hooks
            .iter()
            .any(|h| h["name"] == "vomnisecretsync-v1alpha1.kb.io"
                && h["clientConfig"]["service"]["path"]
                    == "/validate-omni-texashpc-com-v1alpha1-omnisecretsync")
    );
    assert!(
        hooks
            .iter()
            .all(|h| h["clientConfig"].get("caBundle").is_none()
                && h["failurePolicy"] == "Fail"
                && h["sideEffects"] == "None")
    );
    // The deletion guard's kinds receive DELETE as well; the rest creates and updates, as in the Go chart.
    for h in hooks {
        let guarded = [
            "vomnicluster-v1alpha1.kb.io",
            "vomnihelmrelease-v1alpha1.kb.io",
        ]
        .contains(&h["name"].as_str().unwrap_or_default());
        let want = if guarded {
            json!(["CREATE", "UPDATE", "DELETE"])
        } else {
            json!(["CREATE", "UPDATE"])
        };
        assert_eq!(h["rules"][0]["operations"], want, "{}", h["name"]);
    }
    assert!(
        docs.iter()
            .all(|d| d["kind"] != "Certificate" && d["kind"] != "Issuer")
    );
    assert_eq!(
        find(&docs, "Role", &format!("{fullname}-manager-role"))["metadata"]["namespace"],
        NS
    );
    find(&docs, "Service", "omni-cluster-operator-webhook-service");
    find(
        &docs,
        "Service",
        "omni-cluster-operator-controller-manager-metrics-service",
    );
    find(
        &docs,
        "ClusterRole",
        "omni-cluster-operator-omnicluster-viewer-role",
    );

    // Cluster-wide mode: the manager rules become a ClusterRole.
    let wide = documents(&render(json!({"watchAllNamespaces": true})).expect("renders"));
    find(&wide, "ClusterRole", &format!("{fullname}-manager-role"));
    let args = find(
        &wide,
        "Deployment",
        &format!("{fullname}-controller-manager"),
    )["spec"]["template"]["spec"]["containers"][0]["args"]
        .to_string();
    assert!(
        args.contains("--all-namespaces") && !args.contains("--namespace="),
        "{args}"
    );

    // Refused: secure metrics (not served) and several replicas without leader election.
    for (values, says) in [
        (json!({"metrics": {"secure": true}}), "metrics.secure"),
        (
            json!({"replicaCount": 2, "leaderElection": {"enabled": false}}),
            "leaderElection.enabled",
        ),
    ] {
        let e = render(values).expect_err("refused");
        assert!(e.to_string().contains(says), "{e}");
    }
}

/// With `sharding.shards`, the chart renders Flux's layout: the main Deployment takes the objects without the
/// shard key and each shard has a Deployment of its own with its selector; no Deployment's selector takes
/// another's pods, and the webhook and metrics Services select every pod. A shard name that cannot be part of a
/// Deployment name is refused.
#[test]
fn the_chart_deploys_one_deployment_per_shard() {
    let helm = helm_c::Helm::load(&lib()).expect("libhelm_c");
    let operator = helm
        .load_chart(&chart("omni-cluster-operator"))
        .expect("loads");
    let render = |values: Value| install_render(&operator, values);
    let docs =
        documents(&render(json!({"sharding": {"shards": ["shard1", "shard2"]}})).expect("renders"));
    let deployments: Vec<&Value> = docs.iter().filter(|d| d["kind"] == "Deployment").collect();
    assert_eq!(deployments.len(), 3, "{:?}", names(&docs));
    let selector_arg = |d: &Value| -> Vec<String> {
        d["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .expect("args")
            .iter()
            .filter_map(Value::as_str)
            .filter(|a| a.starts_with("--watch-label-selector"))
            .map(String::from)
            .collect()
    };
    for (name, want) in [
        ("", "--watch-label-selector=!sharding.fluxcd.io/key"),
        (
            "-shard1",
            "--watch-label-selector=sharding.fluxcd.io/key=shard1",
        ),
        (
            "-shard2",
            "--watch-label-selector=sharding.fluxcd.io/key=shard2",
        ),
    ] {
        let d = find(
            &docs,
            "Deployment",
            &format!("{RELEASE}-controller-manager{name}"),
        );
        assert_eq!(selector_arg(d), [want]);
    }
    let matches = |selector: &Value, labels: &Value| {
        selector
            .as_object()
            .expect("matchLabels")
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
    };
    for d in &deployments {
        for other in &deployments {
            let takes = matches(
                &d["spec"]["selector"]["matchLabels"],
                &other["spec"]["template"]["metadata"]["labels"],
            );
            assert_eq!(
                takes,
                d["metadata"]["name"] == other["metadata"]["name"],
                "{} selects the pods of {}",
                d["metadata"]["name"],
                other["metadata"]["name"]
            );
        }
    }
    for service in docs.iter().filter(|d| d["kind"] == "Service") {
        for d in &deployments {
            assert!(
                matches(
                    &service["spec"]["selector"],
                    &d["spec"]["template"]["metadata"]["labels"]
                ),
                "{} does not select the pods of {}",
                service["metadata"]["name"],
                d["metadata"]["name"]
            );
        }
    }
    // Without shards: one Deployment, no selector.
    let plain = documents(&render(json!({})).expect("renders"));
    let only: Vec<&Value> = plain.iter().filter(|d| d["kind"] == "Deployment").collect();
    assert_eq!(only.len(), 1);
    assert!(selector_arg(only[0]).is_empty());

    let e = render(json!({"sharding": {"shards": ["Shard_1"]}})).expect_err("refused");
    assert!(
        e.to_string()
            .contains("sharding.shards: \"Shard_1\" is not a shard name"),
        "{e}"
    );
}

/// Installed into kube-sim by the operator's Helm worker (the CRDs chart, then the operator chart), the
/// resulting Deployment, RBAC, webhook configuration and Services are there; and the operator, run as the
/// chart's ServiceAccount with the chart's RBAC, reconciles, elects a leader, makes its webhook certificates and
/// writes its CA without one request refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_charts_install_into_kube_sim_and_their_rbac_covers_what_the_operator_calls() {
    use omni_operator::admission::{self, AdmissionOptions, CertSettings, FailurePolicy};
    use omni_operator::controllers::Settings;
    use omni_operator::leader::{Elector, LeaderConfig};
    use omni_operator::stack::{HostBuilder, Stack};

    let stack = Stack::builder()
        .namespace(NS)
        .connection(NS, "omni", "omni-service-account")
        .start()
        .await
        .expect("the stack");
    let sim = &stack.kube;
    let engine = WorkerEngine::new(WorkerOptions {
        program: PathBuf::from(env!("CARGO_BIN_EXE_omni-operator")),
        lib: lib(),
        concurrency: 1,
        memory_limit: Some(omni_operator::helm::DEFAULT_WORKER_MEMORY),
        scratch_base: std::env::temp_dir(),
    });
    let helm = helm_c::Helm::load(&lib()).expect("libhelm_c");
    let dir = tempfile::tempdir().expect("tempdir");
    let target = Target {
        kubeconfig: sim.kubeconfig(&sim.admin()),
        namespace: NS.into(),
        as_user: None,
    };
    for (name, release, options) in [
        // The CRDs are already there (the stack applied them): the chart takes them over.
        (
            "omni-cluster-operator-crds",
            "crds",
            json!({"namespace": NS, "take_ownership": true}),
        ),
        ("omni-cluster-operator", RELEASE, json!({"namespace": NS})),
    ] {
        let archive = package(&helm, &chart(name).to_string_lossy(), dir.path());
        let installed = engine
            .run(
                Op::Install {
                    target: target.clone(),
                    chart: ChartRef::Archive(
                        base64::engine::general_purpose::STANDARD.encode(archive),
                    ),
                    release: release.into(),
                    values: json!({}),
                    options,
                    auth: None,
                },
                Some(format!("{NS}/{release}")),
                Duration::from_secs(120),
            )
            .await
            .unwrap_or_else(|e| panic!("installing {name}: {e}"));
        assert_eq!(installed["status"], "deployed", "{installed}");
    }
    let deployment = sim
        .get(
            "apps/v1",
            "Deployment",
            NS,
            "omni-cluster-operator-controller-manager",
        )
        .expect("the Deployment");
    assert_eq!(deployment["spec"]["replicas"], 1);
    assert_eq!(
        deployment["spec"]["template"]["spec"]["serviceAccountName"],
        "omni-cluster-operator-controller-manager"
    );
    for (api, kind, ns, name) in [
        (
            "v1",
            "ServiceAccount",
            NS,
            "omni-cluster-operator-controller-manager",
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "Role",
            NS,
            "omni-cluster-operator-manager-role",
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
            NS,
            "omni-cluster-operator-manager-rolebinding",
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "Role",
            NS,
            "omni-cluster-operator-leader-election-role",
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "",
            "omni-cluster-operator-webhook-role",
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "",
            "omni-cluster-operator-platform-role",
        ),
        ("v1", "Service", NS, "omni-cluster-operator-webhook-service"),
        (
            "v1",
            "Service",
            NS,
            "omni-cluster-operator-controller-manager-metrics-service",
        ),
        (
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            "",
            "omni-cluster-operator-validating-webhook-configuration",
        ),
    ] {
        assert!(
            sim.get(api, kind, ns, name).is_some(),
            "{kind} {name} installed"
        );
    }

    // The operator as the chart's ServiceAccount.
    let account = sim.add_service_account_user(NS, "omni-cluster-operator-controller-manager");
    let user = account.name.clone();
    let kubeconfig = sim.kubeconfig(&account);
    let client = omni_operator::stack::client(&kubeconfig)
        .await
        .expect("client");
    let mut elector = Elector::new(client.clone(), LeaderConfig::new(NS));
    assert!(
        elector.try_acquire_or_renew().await.expect("the lease"),
        "leader"
    );
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let shutdown = {
        let mut rx = stop_rx.clone();
        futures::FutureExt::shared(Box::pin(async move {
            let _ = rx.wait_for(|s| *s).await;
        }))
    };
    let settings = Settings {
        namespaces: omni_operator::controllers::scope::Namespaces::one(NS),
        omni: std::sync::Arc::new(omni_operator::omni::OmniConnections::new(None)),
        ..Settings::default()
    };
    let host = HostBuilder::new(support::runtime().clone())
        .built_ins()
        .expect("built-ins")
        .settings(settings)
        .start(kubeconfig.clone())
        .await
        .expect("the host starts");
    let served = admission::start(
        client.clone(),
        host.registry().clone(),
        AdmissionOptions {
            listen: "127.0.0.1:0".parse().expect("address"),
            deadline: Duration::from_secs(5),
            failure: FailurePolicy::Fail,
            certs: CertSettings {
                namespace: NS.into(),
                secret: "omni-cluster-operator-webhook-server-cert".into(),
                hosts: vec![format!("omni-cluster-operator-webhook-service.{NS}.svc")],
                webhook_configurations: vec![
                    "omni-cluster-operator-validating-webhook-configuration".into(),
                ],
            },
            check_every: Duration::from_secs(3600),
            preview: None,
        },
        shutdown.clone(),
    )
    .await
    .expect("webhooks");
    assert!(
        served.ca_bundle.is_some(),
        "certificates made as the ServiceAccount"
    );
    sim.route_service(NS, "omni-cluster-operator-webhook-service", served.addr);

    // Objects go through the webhooks (caBundle written by the ServiceAccount) and get reconciled.
    sim.apply(
        &json!({"apiVersion": "omni.texashpc.com/v1alpha1", "kind": "OmniCluster",
        "metadata": {"name": "edge", "namespace": NS},
        "spec": {"connectionRef": {"name": "omni"}, "kubernetes": {"version": "v1.35.0"},
            "talos": {"version": "v1.13.2"}}}),
    )
    .await
    .expect("admitted");
    sim.apply(&json!({"apiVersion": "omni.texashpc.com/v1alpha1", "kind": "OmniControlPlane",
        "metadata": {"name": "edge-cp", "namespace": NS},
        "spec": {"clusterRef": {"name": "edge"}, "machines": ["11111111-1111-4111-8111-111111111111"]}}))
        .await
        .expect("admitted");
    let condition = |kind: &str, name: &str, type_: &str| {
        sim.get("omni.texashpc.com/v1alpha1", kind, NS, name)
            .and_then(|o| {
                o["status"]["conditions"]
                    .as_array()
                    .and_then(|cs| cs.iter().find(|c| c["type"] == type_).cloned())
            })
            .map(|c| c["status"] == "True")
            .unwrap_or(false)
    };
    let mut ready = false;
    for _ in 0..1500 {
        if condition("OmniConnection", "omni", "Ready")
            && condition("OmniCluster", "edge", "Synced")
            && condition("OmniControlPlane", "edge-cp", "Accepted")
        {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let requests: Vec<_> = sim
        .requests()
        .into_iter()
        .filter(|r| r.user == user)
        .collect();
    let refused: Vec<String> = requests
        .iter()
        .filter(|r| r.status == 403)
        .map(|r| {
            format!(
                "{} {}/{}/{} {}/{}",
                r.verb, r.group, r.resource, r.subresource, r.namespace, r.name
            )
        })
        .collect();
    assert!(refused.is_empty(), "the chart's RBAC refused: {refused:#?}");
    assert!(
        ready,
        "reconciled as the ServiceAccount\n{}",
        support::log_tail(40)
    );
    // The calls that needed each kind of grant were made.
    for (resource, verb) in [
        ("leases", "create"),
        ("secrets", "create"),
        ("validatingwebhookconfigurations", "update"),
        // The caBundle watch lists (then watches) its configuration by name: resourceNames allow it only so.
        ("validatingwebhookconfigurations", "list"),
        ("omniclusters", "patch"),
        ("omniclusters", "watch"),
    ] {
        assert!(
            requests
                .iter()
                .any(|r| r.resource == resource && r.verb == verb && r.succeeded()),
            "no successful {verb} of {resource} by {user}"
        );
    }
    let _ = stop_tx.send(true);
    drop(host);
}

/// The image definition and the chart agree: the binary the chart runs, the library path it sets, and a non-root
/// user (the chart's podSecurityContext says runAsNonRoot).
#[test]
fn the_dockerfile_puts_what_the_chart_runs_where_it_looks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dockerfile = std::fs::read_to_string(root.join("Dockerfile")).expect("Dockerfile");
    let values = std::fs::read_to_string(chart("omni-cluster-operator").join("values.yaml"))
        .expect("values");
    let deployment =
        std::fs::read_to_string(chart("omni-cluster-operator").join("templates/deployment.yaml"))
            .expect("deployment");
    let library = "/usr/lib/omni-operator/libhelm_c.so.0.2.2";
    assert!(values.contains(&format!("library: {library}")));
    assert!(dockerfile.contains(&format!("/libhelm_c.so.0.2.2 {library}")));
    assert!(deployment.contains("command: [\"/usr/bin/omni-operator\"]"));
    assert!(dockerfile.contains("/omni-operator /usr/bin/omni-operator"));
    assert!(dockerfile.contains("USER 65532:65532"));
    // The base has glibc (Debian), not musl (Alpine, distroless static).
    assert!(dockerfile.contains("FROM debian:bookworm-slim"));
    // The library version the image fetches is the one the project pins.
    let fetch = std::fs::read_to_string(root.join("tools/fetch-helm-c")).expect("fetch-helm-c");
    assert!(fetch.contains("version=\"0.2.2\""));
}
