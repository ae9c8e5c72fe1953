//! COSI State semantics, each test named after the server behaviour it mirrors.

mod common;

use std::time::Duration;

use common::*;
use omni_sim::{FaultAction, Matcher, OmniSim, Role};
use omni_wire::cosi::{self, EventType, label_term::Operation};
use tonic::Code;

const PATCHES: &str = "ConfigPatches.omni.sidero.dev";
const KERNEL_ARGS: &str = "KernelArgs.omni.sidero.dev";

fn err<T: std::fmt::Debug>(r: Result<T, tonic::Status>) -> (Code, String) {
    let e = r.expect_err("fails");
    (e.code(), e.message().to_string())
}

#[tokio::test]
async fn create_get_update_destroy_follow_cosi_versions_and_messages() {
    let (_sim, mut c, _) = setup().await;
    let r = create(&mut c, res(PATCHES, "p1", &[("a", "1")], vec![]))
        .await
        .expect("create");
    assert_eq!(
        (
            md(&r).version.as_str(),
            md(&r).phase.as_str(),
            md(&r).owner.as_str()
        ),
        ("1", "running", "")
    );
    assert!(md(&r).created.is_some() && !r.spec.as_ref().expect("spec").yaml_spec.is_empty());
    assert_eq!(
        err(create(&mut c, res(PATCHES, "p1", &[], vec![])).await),
        (
            Code::AlreadyExists,
            "resource ConfigPatches.omni.sidero.dev(default/p1@1) already exists".into()
        )
    );
    let mut u = r.clone();
    u.metadata
        .as_mut()
        .expect("md")
        .labels
        .insert("b".into(), "2".into());
    let u = update(&mut c, u).await.expect("update");
    assert_eq!(md(&u).version, "2");
    assert_eq!(md(&u).created, md(&r).created);
    // Update carries the version last read; a stale one is a conflict.
    assert_eq!(
        err(update(&mut c, r.clone()).await),
        (Code::FailedPrecondition, "resource ConfigPatches.omni.sidero.dev(default/p1@2) update conflict: expected version \"1\", actual version \"2\"".into())
    );
    assert_eq!(
        md(&get(&mut c, PATCHES, "p1").await.expect("get"))
            .labels
            .len(),
        2
    );
    destroy(&mut c, PATCHES, "p1").await.expect("destroy");
    assert_eq!(
        err(get(&mut c, PATCHES, "p1").await),
        (
            Code::NotFound,
            "resource ConfigPatches.omni.sidero.dev(default/p1@undefined) doesn't exist".into()
        )
    );
    assert_eq!(err(destroy(&mut c, PATCHES, "p1").await).0, Code::NotFound);
    assert_eq!(err(update(&mut c, u).await).0, Code::NotFound);
}

#[tokio::test]
async fn malformed_metadata_is_unknown_with_cosi_texts() {
    let (_sim, mut c, _) = setup().await;
    let mut r = res(PATCHES, "m", &[], vec![]);
    r.metadata.as_mut().expect("md").version = String::new();
    assert_eq!(
        err(create(&mut c, r).await),
        (
            Code::Unknown,
            "error parsing version: strconv.ParseUint: parsing \"\": invalid syntax".into()
        )
    );
    let mut r = res(PATCHES, "m", &[], vec![]);
    r.metadata.as_mut().expect("md").phase = String::new();
    assert_eq!(
        err(create(&mut c, r).await),
        (Code::Unknown, "unknown phase: \"\"".into())
    );
    let mut r = res(PATCHES, "m", &[], vec![]);
    r.spec = None;
    assert_eq!(
        err(create(&mut c, r).await),
        (Code::Unknown, "spec is missing".into())
    );
    let mut r = res(PATCHES, "m", &[], vec![]);
    r.metadata = None;
    assert_eq!(
        err(create(&mut c, r).await),
        (Code::Unknown, "metadata is missing".into())
    );
}

#[tokio::test]
async fn omni_metadata_limits_are_validation_errors() {
    let (_sim, mut c, _) = setup().await;
    assert_eq!(
        err(create(&mut c, res(PATCHES, "a\u{1}", &[("", "x")], vec![])).await),
        (Code::InvalidArgument, "failed to validate: 2 errors occurred:\n\t* resource ID must not contain control characters\n\t* label key must not be empty\n\n".into())
    );
    let long = "x".repeat(1025);
    assert_eq!(
        err(create(&mut c, res(PATCHES, &long, &[], vec![])).await).1,
        "failed to validate: 1 error occurred:\n\t* resource ID is too long: 1025 bytes (max 1024)\n\n"
    );
}

#[tokio::test]
async fn list_is_sorted_by_id_and_filtered_by_label_and_id_queries() {
    let (_sim, mut c, _) = setup().await;
    for (id, n, tier) in [
        ("c", "10", "gold"),
        ("a", "2", "silver"),
        ("b", "7", "bronze"),
    ] {
        create(
            &mut c,
            res(KERNEL_ARGS, id, &[("n", n), ("tier", tier)], vec![]),
        )
        .await
        .expect("create");
    }
    let ids = |v: Vec<cosi::Resource>| v.iter().map(|r| md(r).id.clone()).collect::<Vec<_>>();
    assert_eq!(
        ids(list(&mut c, KERNEL_ARGS, vec![], None).await.expect("list")),
        ["a", "b", "c"]
    );
    assert_eq!(
        ids(list(&mut c, KERNEL_ARGS, vec![eq("tier", "gold")], None)
            .await
            .expect("eq")),
        ["c"]
    );
    assert_eq!(
        ids(list(
            &mut c,
            KERNEL_ARGS,
            vec![term("tier", Operation::In, &["gold", "bronze"], false)],
            None
        )
        .await
        .expect("in")),
        ["b", "c"]
    );
    assert_eq!(
        ids(list(
            &mut c,
            KERNEL_ARGS,
            vec![term("tier", Operation::Equal, &["gold"], true)],
            None
        )
        .await
        .expect("invert")),
        ["a", "b"]
    );
    assert_eq!(
        ids(list(
            &mut c,
            KERNEL_ARGS,
            vec![term("n", Operation::LtNumeric, &["8"], false)],
            None
        )
        .await
        .expect("lt numeric")),
        ["a", "b"]
    );
    assert_eq!(
        ids(list(
            &mut c,
            KERNEL_ARGS,
            vec![term("n", Operation::Lt, &["3"], false)],
            None
        )
        .await
        .expect("lt string")),
        ["a", "c"]
    );
    assert_eq!(
        ids(list(
            &mut c,
            KERNEL_ARGS,
            vec![term("n", Operation::LteNumeric, &["7"], false)],
            None
        )
        .await
        .expect("lte")),
        ["a", "b"]
    );
    assert!(
        list(
            &mut c,
            KERNEL_ARGS,
            vec![eq("tier", "gold"), eq("n", "2")],
            None
        )
        .await
        .expect("and")
        .is_empty()
    );
    assert_eq!(
        ids(list(&mut c, KERNEL_ARGS, vec![], Some("^[ab]$"))
            .await
            .expect("regexp")),
        ["a", "b"]
    );
    assert!(
        list(&mut c, "Clusters.omni.sidero.dev", vec![], None)
            .await
            .expect("empty")
            .is_empty()
    );

    // Label queries read an index; it follows relabelling and destruction.
    let mut b = get(&mut c, KERNEL_ARGS, "b").await.expect("get b");
    b.metadata
        .as_mut()
        .expect("md")
        .labels
        .insert("tier".into(), "gold".into());
    update(&mut c, b).await.expect("relabel b");
    assert_eq!(
        ids(list(&mut c, KERNEL_ARGS, vec![eq("tier", "gold")], None)
            .await
            .expect("eq after update")),
        ["b", "c"]
    );
    assert!(
        list(&mut c, KERNEL_ARGS, vec![eq("tier", "bronze")], None)
            .await
            .expect("old value")
            .is_empty()
    );
    destroy(&mut c, KERNEL_ARGS, "c").await.expect("destroy c");
    assert_eq!(
        ids(list(
            &mut c,
            KERNEL_ARGS,
            vec![eq("tier", "gold"), eq("n", "7")],
            None
        )
        .await
        .expect("eq after destroy")),
        ["b"]
    );
}

#[tokio::test]
async fn owner_and_phase_conflicts_on_update() {
    let (sim, mut c, _) = setup().await;
    let mut owned = res(PATCHES, "owned", &[], vec![]);
    owned.metadata.as_mut().expect("md").owner = "SomeController".into();
    sim.state().create(owned).expect("fixture");
    let cur = get(&mut c, PATCHES, "owned").await.expect("get");
    assert_eq!(err(update(&mut c, cur).await), (Code::PermissionDenied, "resource ConfigPatches.omni.sidero.dev(default/owned@1) is owned by \"SomeController\"".into()));
    assert_eq!(
        err(destroy(&mut c, PATCHES, "owned").await).0,
        Code::PermissionDenied
    );

    let r = create(&mut c, res(PATCHES, "p", &[], vec![]))
        .await
        .expect("create");
    sim.state().modify("default", PATCHES, "p", |r| {
        r.metadata
            .as_mut()
            .expect("md")
            .finalizers
            .push("keep".into())
    });
    assert!(
        !teardown(&mut c, PATCHES, "p").await.expect("teardown"),
        "finalizers pending → not destroy-ready"
    );
    let cur = get(&mut c, PATCHES, "p").await.expect("get");
    assert_eq!(md(&cur).phase, "tearingDown");
    assert_eq!(
        err(update(&mut c, cur).await),
        (
            Code::InvalidArgument,
            "resource ConfigPatches.omni.sidero.dev(default/p@3) is not in phase running".into()
        )
    );
    assert_eq!(
        err(destroy(&mut c, PATCHES, "p").await),
        (
            Code::FailedPrecondition,
            "resource ConfigPatches.omni.sidero.dev(default/p@3) has pending finalizers [keep]"
                .into()
        )
    );
    let _ = r;
}

#[tokio::test]
async fn torn_down_owner_less_resources_without_finalizers_are_destroyed_by_the_destroy_controller()
{
    let (sim, mut c, _) = setup().await;
    create(&mut c, res(PATCHES, "p", &[], vec![]))
        .await
        .expect("create");
    assert!(
        teardown(&mut c, PATCHES, "p").await.expect("teardown"),
        "no finalizers → destroy-ready"
    );
    sim.wait_for(Duration::from_secs(5), |s| {
        s.get("default", PATCHES, "p").is_none()
    })
    .await
    .expect("destroyed");
    // The client's own Destroy then finds nothing, which it ignores.
    assert_eq!(err(destroy(&mut c, PATCHES, "p").await).0, Code::NotFound);
    assert_eq!(err(teardown(&mut c, PATCHES, "p").await).0, Code::NotFound);
}

#[tokio::test]
async fn teardown_and_destroy_blocks_until_finalizers_are_gone() {
    let (sim, mut c, _) = setup().await;
    create(&mut c, res(KERNEL_ARGS, "k", &[], vec![]))
        .await
        .expect("create");
    sim.state().add_finalizer("default", KERNEL_ARGS, "k", "f");
    let mut c2 = c.clone();
    let call = tokio::spawn(async move {
        c2.teardown_and_destroy(cosi::TeardownAndDestroyRequest {
            namespace: "default".into(),
            r#type: KERNEL_ARGS.into(),
            id: "k".into(),
            options: None,
        })
        .await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!call.is_finished());
    sim.state()
        .remove_finalizer("default", KERNEL_ARGS, "k", "f");
    tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("returns")
        .expect("task")
        .expect("ok");
    assert!(sim.state().get("default", KERNEL_ARGS, "k").is_none());
}

#[tokio::test]
async fn teardown_is_unimplemented_on_old_omni() {
    let sim = OmniSim::builder()
        .teardown_unimplemented(true)
        .start()
        .await
        .expect("starts");
    let key = sim.mint_key("op", Role::Operator);
    let mut c = state(channel(&sim).await, Signer::new(&key));
    assert_eq!(
        err(teardown(&mut c, PATCHES, "p").await).0,
        Code::Unimplemented
    );
    sim.set_teardown_unimplemented(false);
    assert_eq!(err(teardown(&mut c, PATCHES, "p").await).0, Code::NotFound);
}

#[tokio::test]
async fn kind_watch_bootstraps_then_sends_label_transitions_and_last_state_on_destroy() {
    let (sim, mut c, _) = setup().await;
    create(&mut c, res(KERNEL_ARGS, "b", &[("cluster", "c1")], vec![]))
        .await
        .expect("create");
    create(&mut c, res(KERNEL_ARGS, "a", &[("cluster", "c1")], vec![]))
        .await
        .expect("create");
    create(
        &mut c,
        res(KERNEL_ARGS, "z", &[("cluster", "other")], vec![]),
    )
    .await
    .expect("create");
    let mut w = watch(
        &mut c,
        kind_watch(KERNEL_ARGS, true, vec![eq("cluster", "c1")]),
    )
    .await
    .expect("watch");
    let (e1, e2, b) = (
        next(&mut w).await.expect("e"),
        next(&mut w).await.expect("e"),
        next(&mut w).await.expect("e"),
    );
    assert_eq!(
        (kind(&e1), id(&e1), kind(&e2), id(&e2)),
        (
            EventType::Created,
            "a".into(),
            EventType::Created,
            "b".into()
        )
    );
    assert_eq!(kind(&b), EventType::Bootstrapped);
    assert_eq!(id(&b), "");
    assert!(b.bookmark.is_some());
    // Moving out of the filter is DESTROYED, moving in is CREATED, staying in is UPDATED with old.
    sim.state().modify("default", KERNEL_ARGS, "a", |r| {
        r.metadata
            .as_mut()
            .expect("md")
            .labels
            .insert("cluster".into(), "other".into());
    });
    let e = next(&mut w).await.expect("e");
    assert_eq!((kind(&e), id(&e)), (EventType::Destroyed, "a".into()));
    sim.state().modify("default", KERNEL_ARGS, "z", |r| {
        r.metadata
            .as_mut()
            .expect("md")
            .labels
            .insert("cluster".into(), "c1".into());
    });
    let e = next(&mut w).await.expect("e");
    assert_eq!((kind(&e), id(&e)), (EventType::Created, "z".into()));
    sim.state().modify("default", KERNEL_ARGS, "z", |r| {
        r.metadata
            .as_mut()
            .expect("md")
            .annotations
            .insert("x".into(), "y".into());
    });
    let e = next(&mut w).await.expect("e");
    assert_eq!(kind(&e), EventType::Updated);
    assert_eq!(md(e.old.as_ref().expect("old")).version, "2");
    destroy(&mut c, KERNEL_ARGS, "z").await.expect("destroy");
    let e = next(&mut w).await.expect("e");
    assert_eq!(kind(&e), EventType::Destroyed);
    assert_eq!(
        md(e.resource.as_ref().expect("r"))
            .annotations
            .get("x")
            .map(String::as_str),
        Some("y"),
        "DESTROYED carries the last state"
    );
}

#[tokio::test]
async fn single_watch_sends_a_tombstone_for_a_missing_resource_then_changes() {
    let (_sim, mut c, _) = setup().await;
    let req = cosi::WatchRequest {
        namespace: "default".into(),
        r#type: PATCHES.into(),
        id: Some("p".into()),
        options: Some(Default::default()),
        api_version: 1,
    };
    let mut w = watch(&mut c, req.clone()).await.expect("watch");
    let t = next(&mut w).await.expect("tombstone");
    assert_eq!((kind(&t), id(&t)), (EventType::Destroyed, "p".into()));
    assert_eq!(md(t.resource.as_ref().expect("r")).version, "undefined");
    create(&mut c, res(PATCHES, "other", &[], vec![]))
        .await
        .expect("create");
    create(&mut c, res(PATCHES, "p", &[], vec![]))
        .await
        .expect("create");
    let e = next(&mut w).await.expect("created");
    assert_eq!((kind(&e), id(&e)), (EventType::Created, "p".into()));
    let mut w2 = watch(&mut c, req.clone()).await.expect("watch");
    assert_eq!(
        kind(&next(&mut w2).await.expect("initial")),
        EventType::Created
    );
    let mut bad = req;
    bad.options = Some(cosi::WatchOptions {
        bootstrap_contents: true,
        ..Default::default()
    });
    let e = c.watch(bad).await.map(|_| ()).expect_err("unsupported");
    assert_eq!(e.code(), Code::Unimplemented);
}

#[tokio::test]
async fn api_version_0_hides_bootstrapped() {
    let (_sim, mut c, _) = setup().await;
    create(&mut c, res(PATCHES, "a", &[], vec![]))
        .await
        .expect("create");
    let mut req = kind_watch(PATCHES, true, vec![]);
    req.api_version = 0;
    let mut w = watch(&mut c, req).await.expect("watch");
    assert_eq!(
        kind(&next(&mut w).await.expect("created")),
        EventType::Created
    );
    create(&mut c, res(PATCHES, "b", &[], vec![]))
        .await
        .expect("create");
    let e = next(&mut w).await.expect("live");
    assert_eq!(
        (kind(&e), id(&e)),
        (EventType::Created, "b".into()),
        "no BOOTSTRAPPED in between"
    );
}

#[tokio::test]
async fn watches_resume_from_a_bookmark_and_refuse_unknown_bookmarks() {
    let (sim, mut c, _) = setup().await;
    let mut w = watch(&mut c, kind_watch(PATCHES, true, vec![]))
        .await
        .expect("watch");
    let b = next(&mut w).await.expect("bootstrapped");
    assert_eq!(kind(&b), EventType::Bootstrapped);
    create(&mut c, res(PATCHES, "x", &[], vec![]))
        .await
        .expect("create");
    let created = next(&mut w).await.expect("created");
    drop(w);
    create(&mut c, res(PATCHES, "y", &[], vec![]))
        .await
        .expect("create while disconnected");
    let mut req = kind_watch(PATCHES, false, vec![]);
    req.options.as_mut().expect("o").start_from_bookmark = created.bookmark.clone();
    let mut w = watch(&mut c, req).await.expect("resume");
    let e = next(&mut w).await.expect("missed event");
    assert_eq!((kind(&e), id(&e)), (EventType::Created, "y".into()));
    let mut req = kind_watch(PATCHES, false, vec![]);
    req.options.as_mut().expect("o").start_from_bookmark = Some(b"garbage".to_vec());
    let e = match c.watch(req).await {
        Err(e) => e,
        Ok(s) => s.into_inner().message().await.expect_err("refused"),
    };
    assert_eq!(e.code(), Code::FailedPrecondition);
    let _ = sim;
}

#[tokio::test]
async fn watch_faults_break_the_stream_after_bootstrap_or_send_errored() {
    let (sim, mut c, _) = setup().await;
    sim.faults().inject(
        Matcher::method("Watch"),
        FaultAction::BreakWatchAfterBootstrap,
        Some(1),
    );
    let mut w = watch(&mut c, kind_watch(PATCHES, true, vec![]))
        .await
        .expect("watch");
    assert_eq!(
        kind(&next(&mut w).await.expect("bootstrapped")),
        EventType::Bootstrapped
    );
    assert_eq!(
        w.message().await.expect_err("broken").code(),
        Code::Unavailable
    );

    sim.faults().inject(
        Matcher::method_type("Watch", PATCHES),
        FaultAction::ErroredEvent("buffer overrun".into()),
        Some(1),
    );
    let mut w = watch(&mut c, kind_watch(PATCHES, true, vec![]))
        .await
        .expect("watch");
    assert_eq!(
        kind(&next(&mut w).await.expect("bootstrapped")),
        EventType::Bootstrapped
    );
    let e = next(&mut w).await.expect("errored");
    assert_eq!(
        (kind(&e), e.error.as_deref()),
        (EventType::Errored, Some("buffer overrun"))
    );

    sim.faults().inject(
        Matcher::method("Watch"),
        FaultAction::NoBootstrapped,
        Some(1),
    );
    let mut w = watch(&mut c, kind_watch(PATCHES, true, vec![]))
        .await
        .expect("watch");
    create(&mut c, res(PATCHES, "n", &[], vec![]))
        .await
        .expect("create");
    let e = next(&mut w)
        .await
        .expect("live event, no BOOTSTRAPPED before it");
    assert_eq!((kind(&e), id(&e)), (EventType::Created, "n".into()));
}
