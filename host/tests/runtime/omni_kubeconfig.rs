//! The host's Omni client asks for service-account kubeconfigs as the Go operator did,
//! against omni-sim: the cluster in the signed `context` header, the request fields, Omni's refusals as typed
//! errors with the operator's wording, and an empty answer refused.

use std::time::Duration;

use omni_operator::capabilities::HostError;
use omni_operator::omni::OmniClient;
use omni_operator::omni::endpoint::Endpoint;
use omni_sim::{FaultAction, Matcher, OmniSim, Role};
use omni_wire::ServiceAccountKey;

const BUDGET: Duration = Duration::from_secs(5);
const CLUSTER_UUIDS: &str = "ClusterUUIDs.omni.sidero.dev";

fn client(sim: &OmniSim, key: &str) -> OmniClient {
    let endpoint = Endpoint::parse(&sim.endpoint()).expect("endpoint");
    OmniClient::new(
        endpoint,
        false,
        ServiceAccountKey::parse(key).expect("key"),
        None,
    )
    .expect("client")
}

async fn with_cluster(name: &str) -> OmniSim {
    let sim = OmniSim::builder()
        .account_name("acme")
        .start()
        .await
        .expect("omni-sim");
    let cluster =
        omni_sim::store::new_resource("default", "Clusters.omni.sidero.dev", name, Vec::new());
    sim.state().create(cluster).expect("cluster");
    sim.wait_for(Duration::from_secs(5), |s| {
        s.get("default", CLUSTER_UUIDS, name).is_some()
    })
    .await
    .expect("the cluster gets its UUID");
    sim
}

fn kubeconfig(bytes: &[u8]) -> kube::config::Kubeconfig {
    kube::config::Kubeconfig::from_yaml(std::str::from_utf8(bytes).expect("UTF-8"))
        .expect("a kubeconfig client-go and kube-rs read")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_account_kubeconfig_names_the_cluster_in_the_signed_context_header() {
    let sim = with_cluster("edge").await;
    let key = sim.mint_key("operator", Role::Operator);
    let omni = client(&sim, &key);
    let groups = vec!["ops".to_string(), "system:masters".to_string()];
    let bytes = omni
        .kubeconfig(
            "edge",
            "automation",
            &groups,
            Duration::from_secs(24 * 3600),
            BUDGET,
        )
        .await
        .expect("kubeconfig");

    let k = kubeconfig(&bytes);
    assert_eq!(k.current_context.as_deref(), Some("acme-edge-automation"));
    let user = k
        .auth_infos
        .first()
        .and_then(|a| a.auth_info.as_ref())
        .expect("a user");
    assert!(
        user.token.is_some(),
        "the user authenticates with a bearer token"
    );
    let record = sim
        .records()
        .into_iter()
        .find(|r| r.method == "/management.ManagementService/Kubeconfig")
        .expect("recorded");
    assert_eq!(record.code, tonic::Code::Ok, "{}", record.message);
    assert!(
        record
            .metadata
            .iter()
            .any(|(k, v)| k == "context" && v == "edge"),
        "{:?}",
        record.metadata
    );
    // The context header is covered by the signature: the payload Omni verifies names it.
    let payload = record
        .metadata
        .iter()
        .find(|(k, _)| k == "x-sidero-payload")
        .map(|(_, v)| v.clone())
        .expect("payload");
    assert!(payload.contains("\"context\":[\"edge\"]"), "{payload}");
    for field in [
        "service_account: true",
        "automation",
        "ops",
        "system:masters",
        "86400",
    ] {
        assert!(
            record.request.contains(field),
            "{field} in {}",
            record.request
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn omnis_refusals_are_typed_errors_in_the_operators_words() {
    let sim = with_cluster("edge").await;
    let operator = client(&sim, &sim.mint_key("operator", Role::Operator));
    let day = Duration::from_secs(24 * 3600);

    let e = operator
        .kubeconfig("gone", "automation", &[], day, BUDGET)
        .await
        .expect_err("no such cluster");
    assert_eq!(
        e,
        HostError::Other(
            "get kubeconfig for Omni cluster \"gone\": rpc error: code = Unknown desc = failed to get cluster UUID: \
             resource ClusterUUIDs.omni.sidero.dev(default/gone@undefined) doesn't exist"
                .into()
        )
    );
    let e = operator
        .kubeconfig(
            "edge",
            "automation",
            &[],
            Duration::from_secs(87_600 * 3600 + 1),
            BUDGET,
        )
        .await
        .expect_err("too long");
    assert!(
        matches!(&e, HostError::Invalid(m) if m.ends_with("service account ttl is too long (max allowed: 87600h0m0s)")),
        "{e:?}"
    );

    let reader = client(&sim, &sim.mint_key("reader", Role::Reader));
    let e = reader
        .kubeconfig("edge", "automation", &[], day, BUDGET)
        .await
        .expect_err("a Reader may not");
    assert!(
        matches!(&e, HostError::Forbidden(m) if m.contains("insufficient role: \"Reader\"")),
        "{e:?}"
    );

    sim.faults().inject(
        Matcher::method("Kubeconfig"),
        FaultAction::EmptyKubeconfig,
        Some(1),
    );
    let e = operator
        .kubeconfig("edge", "automation", &[], day, BUDGET)
        .await
        .expect_err("empty");
    assert_eq!(
        e,
        HostError::Other("get kubeconfig for Omni cluster \"edge\": response was empty".into())
    );

    sim.faults().latency("Kubeconfig", Duration::from_secs(2));
    let e = operator
        .kubeconfig("edge", "automation", &[], day, Duration::from_millis(300))
        .await
        .expect_err("slow");
    assert!(matches!(e, HostError::Timeout(_)), "{e:?}");
}
