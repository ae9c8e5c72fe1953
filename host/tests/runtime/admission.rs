//! Admission webhooks as in a cluster: a ValidatingWebhookConfiguration naming a Service and carrying no
//! caBundle (as the chart installs it), replicas that make their own certificates, and kube-sim calling the
//! Service over TLS, verifying the certificate against the caBundle and the Service's DNS name as
//! kube-apiserver does.

use std::time::Duration;

use base64::Engine as _;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, PostParams};
use omni_operator::admission::{
    self, AdmissionOptions, CertSettings, FailurePolicy, Target, WebhookKind,
};
use omni_operator::stack::{HostBuilder, management_cluster};
use serde_json::json;

use super::support::runtime;

const NS: &str = "ops";
const SERVICE: &str = "omni-operator-webhook-service";
const SECRET: &str = "omni-operator-webhook-server-cert";
const CONFIGURATION: &str = "omni-operator-validating-webhook-configuration";

fn options(failure: FailurePolicy) -> AdmissionOptions {
    AdmissionOptions {
        listen: "127.0.0.1:0".parse().expect("address"),
        deadline: Duration::from_secs(5),
        failure,
        certs: CertSettings {
            namespace: NS.into(),
            secret: SECRET.into(),
            hosts: vec![
                format!("{SERVICE}.{NS}.svc"),
                format!("{SERVICE}.{NS}.svc.cluster.local"),
            ],
            webhook_configurations: vec![CONFIGURATION.into()],
        },
        check_every: Duration::from_secs(3600),
        preview: None,
    }
}

/// A management cluster with the operator's namespace, and a client of it.
async fn cluster() -> (kube_sim::KubeSim, kube::Client) {
    let kube = management_cluster(kube_sim::KubeSim::builder())
        .await
        .expect("kube-sim");
    let client = kube.client().await.expect("client");
    kube.apply(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}))
        .await
        .expect("namespace");
    (kube, client)
}

fn connection(name: &str, secret: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "omni.texashpc.com/v1alpha1", "kind": "OmniConnection",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"endpoint": "https://omni.example.com",
            "auth": {"serviceAccountSecretRef": {"name": secret}}},
    }))
    .expect("object")
}

/// Two replicas start against a configuration without a caBundle: between them they write one CA and serving
/// certificate into the Secret, the CA reaches the configuration, and whichever replica the Service routes to,
/// the API server trusts it, refuses an invalid OmniConnection with the Go operator's message and admits a valid
/// one. A serving certificate that no longer covers the Service (renamed) is replaced under the same CA.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_the_certificates_they_make_and_the_api_server_trusts_them() {
    let (kube, client) = cluster().await;
    let kinds = [WebhookKind {
        group: "omni.texashpc.com".into(),
        version: "v1alpha1".into(),
        kind: "OmniConnection".into(),
        plural: "omniconnections".into(),
    }];
    let service = Target::Service {
        namespace: NS.into(),
        name: SERVICE.into(),
        port: 443,
    };
    kube.apply(&admission::configuration(
        CONFIGURATION,
        &kinds,
        &service,
        FailurePolicy::Fail,
        10,
        None,
    ))
    .await
    .expect("configuration");
    let host = HostBuilder::new(runtime().clone())
        .built_in(&["omni-connection"])
        .expect("built-in")
        .load()
        .await
        .expect("loads");
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let shutdown = {
        let mut rx = stop_rx.clone();
        futures::FutureExt::shared(Box::pin(async move {
            let _ = rx.wait_for(|s| *s).await;
        }))
    };
    let (a, b) = tokio::join!(
        admission::start(
            client.clone(),
            host.registry().clone(),
            options(FailurePolicy::Fail),
            shutdown.clone()
        ),
        admission::start(
            client.clone(),
            host.registry().clone(),
            options(FailurePolicy::Fail),
            shutdown.clone()
        ),
    );
    let (a, b) = (a.expect("replica a"), b.expect("replica b"));
    let ca = a.ca_bundle.clone().expect("certificates made");
    assert_eq!(
        b.ca_bundle.as_deref(),
        Some(ca.as_str()),
        "one CA between them"
    );
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
    let secret = secrets.get(SECRET).await.expect("the Secret");
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    let data = secret.data.expect("data");
    assert_eq!(data["ca.crt"].0, ca.as_bytes());
    assert!(
        data.contains_key("tls.crt") && data.contains_key("tls.key") && data.contains_key("ca.key")
    );
    let configuration = kube
        .get(
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            "",
            CONFIGURATION,
        )
        .expect("configuration");
    assert_eq!(
        configuration["webhooks"][0]["clientConfig"]["caBundle"],
        base64::engine::general_purpose::STANDARD.encode(&ca)
    );

    let connections: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        NS,
        &kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("omni.texashpc.com", "v1alpha1", "OmniConnection"),
            "omniconnections",
        ),
    );
    let go_message = "admission webhook \"vomniconnection-v1alpha1.kb.io\" denied the request: \
        OmniConnection.omni.texashpc.com \"bad\" is invalid: spec.auth.serviceAccountSecretRef.name: Required \
        value: service account Secret name is required";
    for replica in [&a, &b] {
        kube.route_service(NS, SERVICE, replica.addr);
        let refused = connections
            .create(&PostParams::default(), &connection("bad", " "))
            .await
            .expect_err("refused");
        let kube::Error::Api(status) = refused else {
            panic!("not an API error: {refused}");
        };
        assert_eq!((status.code, status.message.as_str()), (422, go_message));
    }
    connections
        .create(&PostParams::default(), &connection("good", "omni-sa"))
        .await
        .expect("a valid object is admitted");
    let answered = |r: &admission::Admission| {
        let s = &r.webhooks.stats;
        (
            s.denied.load(std::sync::atomic::Ordering::Relaxed),
            s.allowed.load(std::sync::atomic::Ordering::Relaxed),
        )
    };
    assert_eq!(answered(&a), (1, 0));
    assert_eq!(answered(&b), (1, 1));

    // Something replaces the configuration without its caBundle (a GitOps tool syncing the rendered chart, a
    // `kubectl replace`): the replicas watch it and write the CA back at once, long before their hourly check,
    // and the API server calls the webhooks again.
    let configurations: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let mut stripped = configurations
        .get(CONFIGURATION)
        .await
        .expect("configuration");
    for hook in stripped.webhooks.iter_mut().flatten() {
        hook.client_config.ca_bundle = None;
    }
    configurations
        .replace(CONFIGURATION, &PostParams::default(), &stripped)
        .await
        .expect("replaced without the CA");
    let restored = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let current = configurations
                .get(CONFIGURATION)
                .await
                .expect("configuration");
            let bundles: Vec<_> = current
                .webhooks
                .iter()
                .flatten()
                .map(|h| h.client_config.ca_bundle.as_ref().map(|b| b.0.clone()))
                .collect();
            if bundles.iter().all(|b| b.as_deref() == Some(ca.as_bytes())) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(
        restored.is_ok(),
        "the caBundle was not written back within 30 s"
    );
    connections
        .create(&PostParams::default(), &connection("good-again", "omni-sa"))
        .await
        .expect("admitted again once the CA is back");

    // The Service renamed: the next check writes a serving certificate for the new name, from the same CA.
    let mut renamed = options(FailurePolicy::Fail).certs;
    renamed.hosts = vec![format!("webhooks.{NS}.svc")];
    let now = jiff::Timestamp::now().as_second();
    let bundle = admission::certs::ensure(&client, &renamed, now)
        .await
        .expect("renewed");
    assert_eq!(bundle.ca_bundle, ca, "the CA stays");
    let stored = secrets
        .get(SECRET)
        .await
        .expect("the Secret")
        .data
        .expect("data");
    assert_eq!(stored["tls.crt"].0, bundle.cert.as_bytes());
    assert_ne!(stored["tls.crt"].0, data["tls.crt"].0);
    // Asked again, nothing changes.
    let again = admission::certs::ensure(&client, &renamed, now)
        .await
        .expect("kept");
    assert_eq!(again, bundle);
    let _ = stop_tx.send(true);
}

/// A Secret of the certificates' name made beforehand as Opaque (by hand, or by another tool) is filled in
/// place. The API server keeps a Secret's type immutable, so rewriting it as `kubernetes.io/tls` would be
/// refused (422) at every check and the webhooks would never get a certificate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opaque_secret_made_beforehand_is_filled_in_place() {
    let (kube, client) = cluster().await;
    kube.apply(&json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": SECRET, "namespace": NS},
        "type": "Opaque", "stringData": {"note": "made by hand"}}))
        .await
        .expect("the Opaque Secret");
    let settings = options(FailurePolicy::Fail).certs;
    let now = jiff::Timestamp::now().as_second();
    let bundle = admission::certs::ensure(&client, &settings, now)
        .await
        .expect("certificates written into the Opaque Secret");
    let secret = Api::<Secret>::namespaced(client.clone(), NS)
        .get(SECRET)
        .await
        .expect("the Secret");
    assert_eq!(secret.type_.as_deref(), Some("Opaque"));
    assert_eq!(
        secret.data.expect("data")["tls.crt"].0,
        bundle.cert.as_bytes()
    );
    let again = admission::certs::ensure(&client, &settings, now)
        .await
        .expect("kept");
    assert_eq!(again, bundle, "kept from then on");
}

/// A plugin that cannot decide (here: a `validate` that never returns) is refused
/// under `Fail` and admitted with a warning under `Ignore`, the webhook answering within the deadline either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecided_validation_follows_the_failure_policy() {
    use omni_operator::runtime::PluginRegistry;
    use std::sync::Arc;
    let (_kube, client) = cluster().await;
    // The widget release that spins in every export, `validate` included.
    let spinning = super::support::load(
        "widget_loop",
        omni_operator::capabilities::Grants::parse(["clock"]).expect("grants"),
    )
    .await;
    let registry = Arc::new(PluginRegistry::new());
    registry.install(spinning.clone());
    let gvk = spinning.info().kinds.first().cloned().expect("a kind");
    for failure in [FailurePolicy::Fail, FailurePolicy::Ignore] {
        let mut opts = options(failure);
        opts.deadline = Duration::from_millis(300);
        opts.certs.webhook_configurations.clear();
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let shutdown = {
            let mut rx = stop_rx.clone();
            futures::FutureExt::shared(Box::pin(async move {
                let _ = rx.wait_for(|s| *s).await;
            }))
        };
        let served = admission::start(client.clone(), registry.clone(), opts, shutdown)
            .await
            .expect("serves");
        let review = json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u-1", "kind": {"group": gvk.group, "version": gvk.version, "kind": gvk.kind},
                "name": "x", "namespace": NS, "operation": "CREATE",
                "object": {"apiVersion": gvk.api_version(), "kind": gvk.kind, "metadata": {"name": "x"}}},
        });
        let path = admission::validate_path(&gvk.group, &gvk.version, &gvk.kind);
        let started = std::time::Instant::now();
        let (status, answer) = served
            .webhooks
            .answer(&path, review.to_string().as_bytes())
            .await;
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "answered near the deadline"
        );
        assert_eq!(status, 200);
        let response = &answer["response"];
        assert_eq!(response["uid"], "u-1");
        match failure {
            FailurePolicy::Fail => {
                assert_eq!(response["allowed"], false, "{answer}");
                assert_eq!(response["status"]["code"], 500);
                let message = response["status"]["message"].as_str().unwrap_or_default();
                assert!(message.contains("did not validate"), "{message}");
            }
            FailurePolicy::Ignore => {
                assert_eq!(response["allowed"], true, "{answer}");
                let warning = response["warnings"][0].as_str().unwrap_or_default();
                assert!(
                    warning.starts_with("validation skipped (failurePolicy Ignore)"),
                    "{warning}"
                );
            }
        }
        // A review sent to another kind's path is refused as malformed, not validated by the wrong plugin.
        let (status, _) = served
            .webhooks
            .answer(
                "/validate-omni-texashpc-com-v1alpha1-omnicluster",
                review.to_string().as_bytes(),
            )
            .await;
        assert_eq!(status, 400);
        let _ = stop_tx.send(true);
    }
}
