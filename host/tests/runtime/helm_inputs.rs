//! What an OmniHelmRelease takes from around it, end to end (issue "OmniHelmRelease, Flux-grade"): values from
//! ConfigMaps and Secrets (`valuesFrom`: merged in Flux's order, an upgrade only when the merged values change,
//! Secret values never in status, Events or logs) and `dependsOn` (order observed in the workload cluster, cycles
//! refused). Through the real host, the built-in plugin's component, the Helm worker and the simulators ([`Env`]).

use serde_json::{Value, json};

use super::helm_env::{Env, NS, is, message};
use super::support;

/// A Secret value that must never be seen outside Helm and the workload cluster.
const TOKEN: &str = "hunter2-valuesfrom-9f3b";

impl Env {
    async fn secret(&self, name: &str, data: Value) {
        self.apply(&json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": NS}, "stringData": data}))
            .await;
    }

    async fn config_map(&self, name: &str, data: Value) {
        self.apply(&json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": NS}, "data": data}))
            .await;
    }

    fn deployment(&self, name: &str) -> Value {
        self.workload
            .get("apps/v1", "Deployment", "apps", name)
            .unwrap_or(Value::Null)
    }

    /// Everything the operator said about `release`: its status, its Events and every captured log line.
    fn everything_said(&self, release: &str) -> String {
        let mut said =
            String::from_utf8_lossy(&support::logs().lock().unwrap_or_else(|p| p.into_inner()))
                .into_owned();
        said.push_str(&self.get(release)["status"].to_string());
        for e in self.events(release) {
            said.push_str(&format!("{e:?}"));
        }
        said
    }
}

/// valuesFrom: a ConfigMap's document, a Secret's document and a Secret key placed at a target path, merged in
/// order with the inline values on top. Changing the Secret upgrades once; a change that leaves the merged values
/// as they were (a YAML comment) upgrades nothing. The token reaches the workload cluster and nowhere else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_from_config_maps_and_secrets_upgrade_only_when_the_merged_values_change() {
    let env = Env::start().await;
    env.config_map(
        "web-defaults",
        json!({"values.yaml": "replicaCount: 5\npodLabels:\n  tier: web\n"}),
    )
    .await;
    env.secret("web-sized", json!({"values.yaml": "replicaCount: 2\n"}))
        .await;
    env.secret("web-token", json!({"token": TOKEN})).await;
    env.apply(&env.release(
        "web",
        json!({
            "valuesFrom": [
                {"kind": "ConfigMap", "name": "web-defaults"},
                {"kind": "Secret", "name": "web-sized"},
                {"kind": "Secret", "name": "web-token", "valuesKey": "token", "targetPath": "podAnnotations.token"},
                {"kind": "Secret", "name": "absent", "optional": true}
            ],
            "chart": {"values": {"podLabels": {"team": "platform"}}}
        }),
    ))
    .await;
    env.wait("web", "installed", |o| {
        is(o, "Ready", "True", "HelmInstalled")
    })
    .await;
    let d = env.deployment("web-demo");
    // The Secret's replicaCount over the ConfigMap's; both labels (inline merged over the ConfigMap's map).
    assert_eq!(d["spec"]["replicas"], 2, "{d:#}");
    let pod = &d["spec"]["template"]["metadata"];
    assert_eq!(pod["labels"]["tier"], "web", "{pod:#}");
    assert_eq!(pod["labels"]["team"], "platform", "{pod:#}");
    assert_eq!(pod["annotations"]["token"], TOKEN, "{pod:#}");

    // A comment changes the Secret but not the merged values: no upgrade. Then a real change: one upgrade. Had
    // the first change upgraded, the second would make revision 3.
    env.secret(
        "web-sized",
        json!({"values.yaml": "# sized for staging\nreplicaCount: 2\n"}),
    )
    .await;
    env.secret("web-sized", json!({"values.yaml": "replicaCount: 3\n"}))
        .await;
    env.wait("web", "upgraded by the Secret change", |o| {
        is(o, "Ready", "True", "HelmUpgraded")
    })
    .await;
    assert_eq!(env.deployment("web-demo")["spec"]["replicas"], 3);
    let revisions = env.revisions("web");
    assert_eq!(revisions.len(), 2, "one upgrade: {revisions:?}");

    // A Secret that does not parse is reported by name, without its contents.
    env.secret(
        "web-sized",
        json!({"values.yaml": format!("replicaCount: [{TOKEN}")}),
    )
    .await;
    let broken = env
        .wait("web", "the bad Secret reported", |o| {
            is(o, "Ready", "False", "ValidationFailed")
        })
        .await;
    let text = message(&broken, "Ready");
    assert!(
        text.contains("valuesFrom Secret \"platform/web-sized\" key \"values.yaml\""),
        "{text}"
    );

    let said = env.everything_said("web");
    assert!(
        !said.contains(TOKEN),
        "the token leaked into status, Events or logs"
    );
    assert!(!said.contains("hunter2"), "a slice of the token leaked");
}

/// dependsOn: a release waits (`DependencyNotReady`, no revision) until the one it depends on exists and is
/// Ready, so the workload cluster sees the dependency installed first. A cycle is refused on both sides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dependent_releases_install_after_their_dependencies_and_cycles_are_refused() {
    let env = Env::start().await;
    env.apply(&env.release("app", json!({"dependsOn": [{"name": "db"}]})))
        .await;
    let waiting = env
        .wait("app", "waiting for db", |o| {
            is(o, "Ready", "False", "DependencyNotReady")
        })
        .await;
    assert_eq!(
        message(&waiting, "Ready"),
        "Helm release \"app\" waits for its dependencies: OmniHelmRelease \"platform/db\" does not exist"
    );
    assert!(env.revisions("app").is_empty());

    env.apply(&env.release("db", json!({"wait": true}))).await;
    env.wait("db", "installed", |o| {
        is(o, "Ready", "True", "HelmInstalled")
    })
    .await;
    env.wait("app", "installed after db", |o| {
        is(o, "Ready", "True", "HelmInstalled")
    })
    .await;
    let created = |release: &str| -> String {
        env.revisions(release)[0].1["metadata"]["creationTimestamp"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        created("db") <= created("app"),
        "db first: {} vs {}",
        created("db"),
        created("app")
    );

    env.apply(&env.release("x", json!({"dependsOn": [{"name": "y"}]})))
        .await;
    env.apply(&env.release("y", json!({"dependsOn": [{"name": "x", "namespace": NS}]})))
        .await;
    for (name, cycle) in [
        ("x", "platform/x → platform/y → platform/x"),
        ("y", "platform/y → platform/x → platform/y"),
    ] {
        let refused = env
            .wait(name, "the cycle refused", |o| {
                is(o, "Ready", "False", "DependencyCycle")
            })
            .await;
        assert_eq!(
            message(&refused, "Ready"),
            format!("dependsOn forms a cycle ({cycle}); remove one of these dependencies")
        );
        assert!(env.revisions(name).is_empty());
    }
}

/// A version range (`>=1.0.0 <2.0.0`) installs the newest matching chart; when a newer matching version is
/// published to the repository, the next check upgrades to it, with a `NewChartVersion` Event naming the old and
/// the new version. A version outside the range is never taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_range_follows_new_chart_versions_in_the_repository() {
    let env = Env::start().await;
    env.repo.add("ranged", "1.0.0");
    env.repo.add("ranged", "0.9.0");
    env.apply(&env.release(
        "follow",
        json!({"interval": "2s", "chart": {"chart": "ranged", "version": ">=1.0.0 <2.0.0"}}),
    ))
    .await;
    let installed = env
        .wait("follow", "installed", |o| {
            is(o, "Ready", "True", "HelmInstalled")
        })
        .await;
    assert_eq!(installed["status"]["history"][0]["chartVersion"], "1.0.0");

    env.repo.add("ranged", "2.0.0");
    env.repo.add("ranged", "1.1.0");
    let upgraded = env
        .wait("follow", "upgraded to 1.1.0", |o| {
            is(o, "Ready", "True", "HelmUpgraded")
                && o["status"]["history"][0]["chartVersion"] == "1.1.0"
        })
        .await;
    assert_eq!(upgraded["status"]["releaseRevision"], 2);
    // The range stays what the spec says; the version deployed is the newest match.
    assert_eq!(upgraded["status"]["chartVersion"], ">=1.0.0 <2.0.0");
    let events = env.events("follow");
    assert!(
        events.iter().any(|(t, r, n)| t == "Normal"
            && r == "NewChartVersion"
            && n == "chart \"ranged\" version \">=1.0.0 <2.0.0\" now resolves to 1.1.0 (deployed: 1.0.0); \
                      upgrading Helm release \"follow\""),
        "{events:?}"
    );
    assert_eq!(env.revisions("follow").len(), 2);
}

/// The repository's basic-auth password and the client key: never in status, Events or logs.
const REPO_PASSWORD: &str = "repo-pass-5d1c7e";

/// TLS for a chart source: the kube-sim CA's serving certificate, HTTP/1.1 only, client certificates from that CA
/// required when `client_certs`.
fn repository_tls(
    pki: &kube_sim::tls::Pki,
    client_certs: bool,
) -> std::sync::Arc<rustls::ServerConfig> {
    use kube_sim::tls::{pem_certs, pem_key};
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for c in pem_certs(pki.ca_cert_pem()).expect("CA") {
        roots.add(c).expect("root");
    }
    let (cert, key) = pki
        .issue_server_cert(&["127.0.0.1".into(), "localhost".into()])
        .expect("serving certificate");
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("versions");
    let builder = if client_certs {
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            std::sync::Arc::new(roots),
            provider,
        )
        .build()
        .expect("client verifier");
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let config = builder
        .with_single_cert(pem_certs(&cert).expect("cert"), pem_key(&key).expect("key"))
        .expect("server config");
    std::sync::Arc::new(config)
}

/// A chart repository behind basic auth and TLS with client certificates: without `secretRef` and
/// `certSecretRef` the release fails with the repository's refusal; with them (Secrets in the object's
/// namespace, read by the host) it installs. The password and the client key appear in no status, Event or log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chart_repository_behind_basic_auth_and_client_tls_is_reached_with_the_named_secrets() {
    let env = Env::start().await;
    let pki = kube_sim::tls::Pki::generate().expect("a CA");
    let (client_cert, client_key) = pki
        .issue_client_cert("omni-operator", &[])
        .expect("client certificate");
    let guarded = super::helm_fixtures::chart_repo_serving(
        &[],
        omni_operator::helm::repository::Access {
            basic_auth: Some(("charts".into(), REPO_PASSWORD.into())),
            tls: Some(repository_tls(&pki, true)),
        },
    )
    .await;
    assert!(guarded.url.starts_with("https://"), "{}", guarded.url);
    let spec = json!({"chart": {"repository": guarded.url, "chart": "demo", "version": "0.1.0"}});
    env.apply(&env.release("guarded", spec)).await;
    let refused = env
        .wait("guarded", "refused without credentials", |o| {
            is(o, "Ready", "False", "ReconcileFailed")
        })
        .await;
    assert!(env.revisions("guarded").is_empty(), "{refused:#}");

    env.secret(
        "repo-creds",
        json!({"username": "charts", "password": REPO_PASSWORD}),
    )
    .await;
    env.secret(
        "repo-tls",
        json!({"ca.crt": pki.ca_cert_pem(), "tls.crt": client_cert, "tls.key": client_key}),
    )
    .await;
    env.patch_spec(
        "guarded",
        json!({"chart": {"secretRef": {"name": "repo-creds"}, "certSecretRef": {"name": "repo-tls"}}}),
    )
    .await;
    env.wait("guarded", "installed with the credentials", |o| {
        is(o, "Ready", "True", "HelmInstalled")
    })
    .await;
    assert_eq!(env.revisions("guarded").len(), 1);

    let said = env.everything_said("guarded");
    assert!(
        !said.contains(REPO_PASSWORD),
        "the repository password leaked"
    );
    let key_line = client_key
        .lines()
        .find(|l| !l.starts_with("-----") && l.len() > 20)
        .expect("a key line");
    assert!(!said.contains(key_line), "the client key leaked");
}

/// An OCI registry that requires credentials (the registry's htpasswd auth): the release fails without
/// `chart.secretRef` and installs with it; the registry password appears in no status, Event or log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oci_registry_requiring_credentials_is_reached_with_the_named_secret() {
    const REGISTRY_PASSWORD: &str = "registry-pass-8e2a41";
    let mut registry = super::helm_fixtures::registry().await;
    let remote = super::helm_fixtures::push_demo_chart(&registry);
    registry.require_auth("puller", REGISTRY_PASSWORD).await;
    let sources =
        omni_operator::capabilities::ChartSources::any().with_plain_http([registry.host.as_str()]);
    let env = Env::start_with(sources).await;
    let chart = format!("{remote}/demo");
    env.apply(&env.release(
        "pulled",
        json!({"chart": {"repository": remote, "chart": chart}}),
    ))
    .await;
    env.wait("pulled", "refused without credentials", |o| {
        is(o, "Ready", "False", "ReconcileFailed")
    })
    .await;
    assert!(env.revisions("pulled").is_empty());

    env.secret(
        "registry-creds",
        json!({"username": "puller", "password": REGISTRY_PASSWORD}),
    )
    .await;
    env.patch_spec(
        "pulled",
        json!({"chart": {"secretRef": {"name": "registry-creds"}}}),
    )
    .await;
    env.wait("pulled", "installed with the credentials", |o| {
        is(o, "Ready", "True", "HelmInstalled")
    })
    .await;
    let said = env.everything_said("pulled");
    assert!(
        !said.contains(REGISTRY_PASSWORD),
        "the registry password leaked"
    );
}

/// A chart from a Git repository behind HTTPS (its own CA) and basic auth, served by Git's own `http-backend`:
/// installed from the branch's commit, then upgraded when a new commit lands on the branch. The password appears
/// in no status, Event or log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chart_from_a_git_repository_follows_its_branch() {
    const GIT_PASSWORD: &str = "git-pass-41c9d0";
    let env = Env::start().await;
    let pki = kube_sim::tls::Pki::generate().expect("a CA");
    let server =
        super::git_server::GitServer::start(repository_tls(&pki, false), "reader", GIT_PASSWORD)
            .await;
    let work = tempfile::tempdir().expect("a work tree");
    let helm = helm_c::Helm::load(&super::helm_fixtures::lib()).expect("libhelm_c");
    std::fs::create_dir_all(work.path().join("charts")).expect("mkdir");
    let chart_dir = helm
        .create_chart("gitdemo", &work.path().join("charts"))
        .expect("helm create");
    let first = server.publish("charts", work.path(), "the chart");
    env.secret(
        "git-creds",
        json!({"username": "reader", "password": GIT_PASSWORD}),
    )
    .await;
    env.secret("git-ca", json!({"ca.crt": pki.ca_cert_pem()}))
        .await;
    env.apply(&env.release(
        "from-git",
        json!({"interval": "2s", "chart": {
            "repository": null, "chart": null, "version": null,
            "git": {"url": format!("{}charts.git", server.url), "branch": "main", "path": "charts/gitdemo"},
            "secretRef": {"name": "git-creds"}, "certSecretRef": {"name": "git-ca"}}}),
    ))
    .await;
    let installed = env
        .wait("from-git", "installed from Git", |o| {
            is(o, "Ready", "True", "HelmInstalled")
        })
        .await;
    assert_eq!(installed["status"]["history"][0]["chartName"], "gitdemo");
    assert_eq!(env.deployment("from-git-gitdemo")["spec"]["replicas"], 1);

    // A new commit on the branch: the next check upgrades to it.
    let values = std::path::Path::new(&chart_dir).join("values.yaml");
    let text = std::fs::read_to_string(&values).expect("values.yaml");
    std::fs::write(&values, text.replace("replicaCount: 1", "replicaCount: 2"))
        .expect("values.yaml");
    let second = server.publish("charts", work.path(), "two replicas");
    assert_ne!(first, second);
    env.wait("from-git", "upgraded to the new commit", |o| {
        is(o, "Ready", "True", "HelmUpgraded")
    })
    .await;
    assert_eq!(env.deployment("from-git-gitdemo")["spec"]["replicas"], 2);
    assert_eq!(env.revisions("from-git").len(), 2);
    let said = env.everything_said("from-git");
    assert!(!said.contains(GIT_PASSWORD), "the Git password leaked");
}
