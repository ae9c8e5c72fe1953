//! Transport, siderov1 authentication, roles, faults and call records, each named after the Omni behaviour
//! it mirrors.

mod common;

use std::time::{Duration, Instant};

use common::*;
use omni_sim::{FaultAction, KeyOptions, Matcher, OmniSim, Role};
use omni_wire::cosi;
use tonic::Code;

const CLUSTERS: &str = "Clusters.omni.sidero.dev";

fn assert_status<T: std::fmt::Debug>(r: Result<T, tonic::Status>, code: Code, message: &str) {
    let e = r.expect_err("call fails");
    assert_eq!((e.code(), e.message()), (code, message), "{e:?}");
}

#[tokio::test]
async fn ping_list_of_clusters_succeeds_and_records_the_service_account_identity() {
    let (sim, mut c, _) = setup().await;
    assert!(
        list(&mut c, CLUSTERS, vec![], None)
            .await
            .expect("ping")
            .is_empty()
    );
    let rec = sim.records();
    assert_eq!(rec.len(), 1);
    assert_eq!(rec[0].method, "/cosi.resource.State/List");
    assert_eq!(rec[0].code, Code::Ok);
    assert_eq!(
        rec[0].identity.as_deref(),
        Some("operator@serviceaccount.omni.sidero.dev")
    );
    assert!(
        rec[0]
            .metadata
            .iter()
            .any(|(k, _)| k == "x-sidero-signature")
    );
    assert!(rec[0].request.contains("Clusters.omni.sidero.dev"));
}

#[tokio::test]
async fn timestamps_more_than_five_minutes_off_are_an_invalid_signature() {
    let sim = OmniSim::start().await.expect("starts");
    let key = sim.mint_key("skewed", Role::Operator);
    let ch = channel(&sim).await;
    for skew in [-360, 360] {
        let mut c = state(ch.clone(), Signer::new(&key).skew(skew));
        assert_status(
            list(&mut c, CLUSTERS, vec![], None).await,
            Code::Unauthenticated,
            "invalid signature",
        );
    }
    let mut c = state(ch.clone(), Signer::new(&key).skew(240));
    list(&mut c, CLUSTERS, vec![], None)
        .await
        .expect("4 minutes ahead is within the allowed skew");
    // The server's clock is what counts: moving it makes a correct client "skewed".
    sim.clock().advance(Duration::from_secs(400));
    let mut c = state(ch, Signer::new(&key));
    assert_status(
        list(&mut c, CLUSTERS, vec![], None).await,
        Code::Unauthenticated,
        "invalid signature",
    );
}

#[tokio::test]
async fn unknown_wrong_expired_and_unconfirmed_keys_are_an_invalid_signature() {
    let sim = OmniSim::start().await.expect("starts");
    let ch = channel(&sim).await;
    let good = sim.mint_key("good", Role::Operator);
    let unknown = sim.mint_key_with(KeyOptions::new("unknown", Role::Operator).registered(false));
    let expired = sim.mint_key_with(KeyOptions::new("expired", Role::Operator).expired(true));
    let unconfirmed =
        sim.mint_key_with(KeyOptions::new("unconfirmed", Role::Operator).confirmed(false));
    for k in [&unknown, &expired, &unconfirmed] {
        let mut c = state(ch.clone(), Signer::new(k));
        assert_status(
            get(&mut c, CLUSTERS, "x").await,
            Code::Unauthenticated,
            "invalid signature",
        );
    }
    // Signed by `unknown`'s key but claiming `good`'s fingerprint: the signature does not verify.
    let good_fp = omni_wire::ServiceAccountKey::parse(&good)
        .expect("parses")
        .fingerprint;
    let mut c = state(
        ch.clone(),
        Signer::new(&unknown).mutate(move |md| {
            for (k, v) in md.iter_mut() {
                if k == "x-sidero-signature" {
                    let parts: Vec<String> = v.split(' ').map(String::from).collect();
                    *v = format!("{} {} {} {}", parts[0], parts[1], good_fp, parts[3]);
                }
            }
        }),
    );
    assert_status(
        get(&mut c, CLUSTERS, "x").await,
        Code::Unauthenticated,
        "invalid signature",
    );
    // A revoked account is unknown from then on.
    let mut c = state(ch, Signer::new(&good));
    assert_status(
        get(&mut c, CLUSTERS, "x").await,
        Code::NotFound,
        "resource Clusters.omni.sidero.dev(default/x@undefined) doesn't exist",
    );
    sim.revoke("good");
    assert_status(
        get(&mut c, CLUSTERS, "x").await,
        Code::Unauthenticated,
        "invalid signature",
    );
}

#[tokio::test]
async fn missing_signature_and_tampered_payload_headers_are_an_invalid_signature() {
    let (sim, _, key) = setup().await;
    let ch = channel(&sim).await;
    let mut c = state(ch.clone(), Signer::unsigned());
    assert_status(
        list(&mut c, CLUSTERS, vec![], None).await,
        Code::Unauthenticated,
        "invalid signature",
    );
    // JSON null and [] differ: a payload that says "nodes": [] does not match an absent header.
    let mut c = state(
        ch.clone(),
        Signer::new(&key).mutate(|md| {
            for (k, v) in md.iter_mut() {
                if k == "x-sidero-payload" {
                    *v = v.replace("\"nodes\":null", "\"nodes\":[]");
                }
            }
        }),
    );
    assert_status(
        list(&mut c, CLUSTERS, vec![], None).await,
        Code::Unauthenticated,
        "invalid signature",
    );
    // A signed header that is dropped after signing no longer matches the payload.
    let mut c = state(
        ch.clone(),
        Signer::new(&key)
            .header("context", "c1")
            .mutate(|md| md.retain(|(k, _)| k != "context")),
    );
    assert_status(
        list(&mut c, CLUSTERS, vec![], None).await,
        Code::Unauthenticated,
        "invalid signature",
    );
    // ...while one that is present and signed is fine.
    let mut c = state(ch, Signer::new(&key).header("context", "c1"));
    list(&mut c, CLUSTERS, vec![], None)
        .await
        .expect("signed context header");
    assert!(
        sim.records()
            .iter()
            .filter(|r| r.code == Code::Unauthenticated)
            .all(|r| r.identity.is_none())
    );
}

#[tokio::test]
async fn the_worked_example_key_registers_and_signs() {
    let sim = OmniSim::start().await.expect("starts");
    sim.register_key(omni_wire::key::EXAMPLE_KEY_VALUE, Role::Reader)
        .expect("registers");
    let mut c = state(
        channel(&sim).await,
        Signer::new(omni_wire::key::EXAMPLE_KEY_VALUE),
    );
    list(&mut c, CLUSTERS, vec![], None)
        .await
        .expect("example key works until 2027-11");
    assert_eq!(
        sim.records()[0].identity.as_deref(),
        Some("example-sa@serviceaccount.omni.sidero.dev")
    );
}

#[tokio::test]
async fn eula_is_checked_before_the_signature() {
    let sim = OmniSim::builder()
        .eula_accepted(false)
        .start()
        .await
        .expect("starts");
    let mut c = state(channel(&sim).await, Signer::unsigned());
    let e = list(&mut c, CLUSTERS, vec![], None)
        .await
        .expect_err("eula");
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert!(e.message().starts_with("EULA has not been accepted; please accept the End User License Agreement before using Omni: ") && e.message().ends_with("/eula"), "{e:?}");
    sim.set_eula_accepted(true);
    assert_status(
        list(&mut c, CLUSTERS, vec![], None).await,
        Code::Unauthenticated,
        "invalid signature",
    );
}

#[tokio::test]
async fn readers_cannot_write_and_role_none_cannot_read() {
    let sim = OmniSim::start().await.expect("starts");
    let ch = channel(&sim).await;
    let reader = sim.mint_key("reader", Role::Reader);
    let mut c = state(ch.clone(), Signer::new(&reader));
    list(&mut c, CLUSTERS, vec![], None)
        .await
        .expect("readers read");
    let r = res(CLUSTERS, "c1", &[], cluster_spec("1.10.3", "1.33.1"));
    assert_status(
        create(&mut c, r).await,
        Code::PermissionDenied,
        "unauthorized: access denied: insufficient role: \"Reader\"",
    );
    assert_status(
        teardown(&mut c, CLUSTERS, "c1").await,
        Code::PermissionDenied,
        "unauthorized: access denied: insufficient role: \"Reader\"",
    );
    sim.set_role("reader", Role::None);
    assert_status(
        list(&mut c, CLUSTERS, vec![], None).await,
        Code::PermissionDenied,
        "unauthorized: access denied: insufficient role: \"None\"",
    );
    let admin = sim.mint_key("admin", Role::Admin);
    let mut c = state(ch, Signer::new(&admin));
    assert_status(
        list(&mut c, "Secrets.v1", vec![], None).await,
        Code::PermissionDenied,
        "no access is permitted",
    );
}

/// grpc-go (Omni) answers with the compressor of the request, whatever else the client says it accepts: a gzipped
/// request gets a gzipped answer, a plain request from a client that accepts gzip a plain one.
#[tokio::test]
async fn gzip_compressed_requests_are_accepted_and_answered_in_kind() {
    let (sim, _, key) = setup().await;
    let get = |name: &str| cosi::GetRequest {
        namespace: "default".into(),
        r#type: CLUSTERS.into(),
        id: name.into(),
        options: None,
    };
    let encoding = |r: &tonic::Response<cosi::GetResponse>| {
        r.metadata()
            .get("grpc-encoding")
            .and_then(|v| v.to_str().ok())
            .map(String::from)
    };

    let mut gz = state(channel(&sim).await, Signer::new(&key))
        .send_compressed(tonic::codec::CompressionEncoding::Gzip)
        .accept_compressed(tonic::codec::CompressionEncoding::Gzip);
    create(
        &mut gz,
        res(CLUSTERS, "gz", &[], cluster_spec("1.10.3", "1.33.1")),
    )
    .await
    .expect("gzip create");
    assert_eq!(
        list(&mut gz, CLUSTERS, vec![], None)
            .await
            .expect("gzip list")
            .len(),
        1
    );
    assert!(
        sim.records()[0]
            .metadata
            .iter()
            .any(|(k, v)| k == "grpc-encoding" && v == "gzip"),
        "{:?}",
        sim.records()[0].metadata
    );
    let answer = gz.get(get("gz")).await.expect("gzip get");
    assert_eq!(
        encoding(&answer).as_deref(),
        Some("gzip"),
        "a gzipped request is answered gzipped"
    );

    let mut plain = state(channel(&sim).await, Signer::new(&key))
        .accept_compressed(tonic::codec::CompressionEncoding::Gzip);
    let answer = plain.get(get("gz")).await.expect("plain get");
    assert_eq!(
        encoding(&answer),
        None,
        "a plain request is answered plain although the client accepts gzip"
    );
    assert_eq!(
        answer
            .into_inner()
            .resource
            .and_then(|r| r.metadata)
            .map(|m| m.id)
            .as_deref(),
        Some("gz")
    );
}

#[tokio::test]
async fn messages_over_32_mib_are_resource_exhausted() {
    let (_sim, mut c, _) = setup().await;
    let r = res(
        "ConfigPatches.omni.sidero.dev",
        "big",
        &[],
        vec![b'x'; 33 * 1024 * 1024],
    );
    let e = create(&mut c, r).await.expect_err("too large");
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
}

#[tokio::test]
async fn calls_on_one_channel_share_a_connection_and_a_new_channel_opens_another() {
    let (sim, mut c, key) = setup().await;
    for _ in 0..3 {
        list(&mut c, CLUSTERS, vec![], None).await.expect("list");
    }
    let mut c2 = state(channel(&sim).await, Signer::new(&key));
    list(&mut c2, CLUSTERS, vec![], None).await.expect("list");
    let ids: Vec<u64> = sim.records().iter().map(|r| r.connection).collect();
    assert_eq!(ids[0..3], [ids[0]; 3]);
    assert_ne!(ids[3], ids[0]);
    assert!(ids[0] >= 1);
    sim.clear_records();
    assert!(sim.records().is_empty());
}

#[tokio::test]
async fn injected_errors_hit_the_next_n_calls_then_stop() {
    let (sim, mut c, _) = setup().await;
    sim.faults()
        .fail_next("List", 2, Code::Unavailable, "try again");
    for _ in 0..2 {
        assert_status(
            list(&mut c, CLUSTERS, vec![], None).await,
            Code::Unavailable,
            "try again",
        );
    }
    list(&mut c, CLUSTERS, vec![], None)
        .await
        .expect("third call passes");
    sim.faults().inject(
        Matcher::method_type("Get", CLUSTERS),
        FaultAction::Error {
            code: Code::Internal,
            message: "boom".into(),
        },
        None,
    );
    assert_status(get(&mut c, CLUSTERS, "a").await, Code::Internal, "boom");
    assert_status(
        get(&mut c, "MachineSets.omni.sidero.dev", "a").await,
        Code::NotFound,
        "resource MachineSets.omni.sidero.dev(default/a@undefined) doesn't exist",
    );
    sim.faults().set_unavailable(true);
    assert_status(
        get(&mut c, "MachineSets.omni.sidero.dev", "a").await,
        Code::Unavailable,
        "omni-sim: unavailable (fault injected)",
    );
    sim.faults().clear();
    list(&mut c, CLUSTERS, vec![], None).await.expect("cleared");
    let calls: Vec<Code> = sim.records().iter().map(|r| r.code).collect();
    assert_eq!(calls[..3], [Code::Unavailable, Code::Unavailable, Code::Ok]);
}

#[tokio::test]
async fn latency_delays_calls() {
    let (sim, mut c, _) = setup().await;
    sim.faults().latency("List", Duration::from_millis(300));
    let t = Instant::now();
    list(&mut c, CLUSTERS, vec![], None)
        .await
        .expect("slow list");
    assert!(t.elapsed() >= Duration::from_millis(300));
}

#[tokio::test]
async fn a_closed_connection_fails_the_call_and_the_channel_reconnects() {
    let (sim, mut c, _) = setup().await;
    list(&mut c, CLUSTERS, vec![], None).await.expect("list");
    sim.faults().close_connection_next("List", 1);
    let e = list(&mut c, CLUSTERS, vec![], None)
        .await
        .expect_err("connection dropped");
    assert!(
        matches!(e.code(), Code::Unavailable | Code::Unknown | Code::Internal),
        "{e:?}"
    );
    // tonic's channel reconnects on its own.
    let mut ok = false;
    for _ in 0..20 {
        if list(&mut c, CLUSTERS, vec![], None).await.is_ok() {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ok, "channel recovered");
    let rec = sim.records();
    assert_ne!(
        rec.first().expect("first").connection,
        rec.last().expect("last").connection
    );
}

#[tokio::test]
async fn a_list_broken_mid_stream_returns_the_items_so_far_then_unavailable() {
    let (sim, mut c, _) = setup().await;
    for id in ["a", "b", "c"] {
        create(
            &mut c,
            res("ConfigPatches.omni.sidero.dev", id, &[], vec![]),
        )
        .await
        .expect("create");
    }
    sim.faults().inject(
        Matcher::method("List"),
        FaultAction::BreakListAfter(2),
        Some(1),
    );
    let mut s = c
        .list(cosi::ListRequest {
            namespace: "default".into(),
            r#type: "ConfigPatches.omni.sidero.dev".into(),
            options: None,
        })
        .await
        .expect("opens")
        .into_inner();
    assert!(s.message().await.expect("1").is_some());
    assert!(s.message().await.expect("2").is_some());
    assert_eq!(
        s.message().await.expect_err("broken").code(),
        Code::Unavailable
    );
}

#[tokio::test]
async fn tls_mode_serves_h2_with_the_generated_ca() {
    let sim = OmniSim::builder().tls(true).start().await.expect("starts");
    assert!(sim.endpoint().starts_with("https://127.0.0.1:"));
    assert!(sim.ca_pem().expect("ca").contains("BEGIN CERTIFICATE"));
    let key = sim.mint_key("tls", Role::Reader);
    let mut c = state(channel(&sim).await, Signer::new(&key));
    list(&mut c, CLUSTERS, vec![], None)
        .await
        .expect("list over TLS");
}

#[tokio::test]
async fn a_stopped_server_refuses_connections_and_its_address_can_be_reused() {
    let sim = OmniSim::start().await.expect("starts");
    let addr = sim.addr();
    let key = sim.mint_key("k", Role::Reader);
    sim.stop().await;
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "connection refused"
    );
    let sim = OmniSim::builder()
        .listen(addr)
        .start()
        .await
        .expect("rebinds");
    sim.register_key(&key, Role::Reader)
        .expect("registers the same key again");
    let mut c = state(channel(&sim).await, Signer::new(&key));
    list(&mut c, CLUSTERS, vec![], None).await.expect("list");
}

#[tokio::test]
async fn record_only_mode_accepts_bad_signatures() {
    let sim = OmniSim::builder()
        .record_only_auth(true)
        .start()
        .await
        .expect("starts");
    let mut c = state(channel(&sim).await, Signer::unsigned());
    list(&mut c, CLUSTERS, vec![], None)
        .await
        .expect("accepted");
    assert_eq!(sim.records()[0].code, Code::Ok);
}

/// Faults by rate, as a chaos run sets them: the same seed gives the same failures call for call over a real
/// client, and every one is counted.
#[tokio::test]
async fn faults_by_rate_replay_from_their_seed_over_a_real_client() {
    let (sim, mut c, _) = setup().await;
    sim.faults().inject_rate(
        Matcher::method("Get"),
        FaultAction::Error {
            code: Code::Unavailable,
            message: "injected".into(),
        },
        0.5,
    );
    let mut runs = Vec::new();
    for _ in 0..2 {
        sim.faults().seed(21);
        let mut codes = Vec::new();
        for _ in 0..30 {
            codes.push(get(&mut c, CLUSTERS, "none").await.err().map(|s| s.code()));
        }
        runs.push(codes);
    }
    assert_eq!(runs[0], runs[1], "the seed replays the faults");
    let failed = runs[0]
        .iter()
        .filter(|c| **c == Some(Code::Unavailable))
        .count();
    assert!(
        (5..=25).contains(&failed),
        "about half of 30: {:?}",
        runs[0]
    );
    assert!(
        runs[0]
            .iter()
            .all(|c| matches!(c, Some(Code::Unavailable | Code::NotFound))),
        "{:?}",
        runs[0]
    );
    assert_eq!(
        sim.faults().injected().get("Error(Unavailable)"),
        Some(&(2 * failed as u64))
    );
    // A long run follows the record by draining it: each call comes out once, failed or not.
    let drained = sim.drain_records();
    let gets = drained
        .iter()
        .filter(|r| r.method.ends_with("/Get"))
        .count();
    assert_eq!(gets, 60, "{drained:?}");
    assert_eq!(
        drained
            .iter()
            .filter(|r| r.code == Code::Unavailable)
            .count(),
        2 * failed
    );
    assert!(sim.drain_records().is_empty());
    get(&mut c, CLUSTERS, "none").await.ok();
    assert_eq!(sim.drain_records().len(), 1);
}

/// Calls `f` until it answers something other than `Unavailable` (a client reconnecting after a restart),
/// within a generous bound.
async fn after_reconnect<T, F, Fut>(mut f: F) -> Result<T, tonic::Status>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, tonic::Status>>,
{
    let start = Instant::now();
    loop {
        match f().await {
            Err(s)
                if s.code() == Code::Unavailable && start.elapsed() < Duration::from_secs(30) =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => return other,
        }
    }
}

/// A restart drops every connection (an open watch ends, as Omni's does when its pod goes), answers nothing
/// while down, then serves on the same address: with its state, or — a restore from an empty backup — without
/// the resources but with the service accounts. Watches opened after it see live events again.
#[tokio::test]
async fn a_restart_drops_connections_and_keeps_or_loses_the_state() {
    let (mut sim, mut c, _) = setup().await;
    create(
        &mut c,
        res(CLUSTERS, "c1", &[], cluster_spec("1.10.3", "1.33.1")),
    )
    .await
    .expect("created");
    let before = get(&mut c, CLUSTERS, "c1").await.expect("c1");
    let mut stream = watch(&mut c, kind_watch(CLUSTERS, false, vec![]))
        .await
        .expect("watch");
    let accepted = sim.connections_accepted();

    sim.restart(true, Duration::from_millis(300))
        .await
        .expect("restarts");
    let ended = tokio::time::timeout(Duration::from_secs(10), stream.message())
        .await
        .expect("the watch ends promptly");
    assert!(
        !matches!(ended, Ok(Some(_))),
        "the open watch ended with the restart, got {ended:?}"
    );
    let after = after_reconnect(|| {
        let mut c = c.clone();
        async move { get(&mut c, CLUSTERS, "c1").await }
    })
    .await
    .expect("c1 survives a restart that keeps the state");
    assert_eq!(md(&after).version, md(&before).version);
    assert!(
        sim.connections_accepted() > accepted,
        "the client had to connect again"
    );
    // A watch opened after the restart is live (its shutdown is the new one, not the one just past).
    let mut stream = watch(&mut c, kind_watch(CLUSTERS, false, vec![]))
        .await
        .expect("watch");
    create(
        &mut c,
        res(CLUSTERS, "c2", &[], cluster_spec("1.10.3", "1.33.1")),
    )
    .await
    .expect("created");
    let event = next(&mut stream).await.expect("an event after the restart");
    assert_eq!(id(&event), "c2");
    assert_eq!(kind(&event), cosi::EventType::Created);

    sim.restart(false, Duration::from_millis(100))
        .await
        .expect("restarts");
    let gone = after_reconnect(|| {
        let mut c = c.clone();
        async move { get(&mut c, CLUSTERS, "c1").await }
    })
    .await
    .expect_err("no c1 after losing the state");
    // NotFound, not Unauthenticated: the service account survived.
    assert_eq!(gone.code(), Code::NotFound, "{gone:?}");
    assert!(sim.state().ids("default", CLUSTERS).is_empty());
}
