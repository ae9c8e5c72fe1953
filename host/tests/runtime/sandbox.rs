//! A plugin that misbehaves is stopped, the failure is classified and names the plugin, and the host goes on
//! serving other plugins.

use std::time::{Duration, Instant};

use omni_operator::capabilities::{Grants, LogSource};
use omni_operator::runtime::{CallError, CallLimits, ErrorKind, PluginError};
use serde_json::json;

use crate::support::{default_services, echo_still_serves, load, object, try_load};

async fn aborted(plugin: &str, limits: Option<CallLimits>) -> PluginError {
    let loaded = try_load(plugin, Grants::none(), limits)
        .await
        .unwrap_or_else(|e| panic!("loading {plugin}: {e}"));
    match loaded
        .reconcile(&object("x", "default", json!({})), &default_services())
        .await
    {
        Err(CallError::Aborted(e)) => e,
        other => panic!("{plugin} should have been aborted, got {other:?}"),
    }
}

#[tokio::test]
async fn an_infinite_loop_is_stopped_at_the_deadline() {
    let limits = CallLimits {
        timeout: Duration::from_millis(300),
        ..CallLimits::default()
    };
    let started = Instant::now();
    let e = aborted("loop", Some(limits)).await;
    let took = started.elapsed();

    assert_eq!(e.kind(), ErrorKind::Timeout);
    assert_eq!(
        e.to_string(),
        "plugin \"loop\" timed out: the call did not finish within its 300 ms deadline"
    );
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(3),
        "stopped after {took:?}"
    );
    echo_still_serves().await;
}

#[tokio::test]
async fn the_default_deadline_is_five_seconds() {
    let limits = CallLimits::default();
    assert_eq!(limits.timeout, Duration::from_secs(5));
    assert_eq!(limits.memory_bytes, 128 << 20);
}

#[tokio::test]
async fn unbounded_allocation_is_refused_at_the_memory_cap() {
    let e = aborted("bomb", None).await;

    assert_eq!(e.kind(), ErrorKind::OutOfMemory);
    assert!(
        e.to_string()
            .starts_with("plugin \"bomb\" ran out of memory: it tried to grow to "),
        "{e}"
    );
    assert!(e.message().ends_with("over its 128 MiB cap"), "{e}");
    echo_still_serves().await;
}

#[tokio::test]
async fn a_smaller_memory_cap_is_honoured() {
    let limits = CallLimits {
        memory_bytes: 16 << 20,
        ..CallLimits::default()
    };
    let e = aborted("bomb", Some(limits)).await;
    assert_eq!(e.kind(), ErrorKind::OutOfMemory);
    assert!(e.message().ends_with("over its 16 MiB cap"), "{e}");
    echo_still_serves().await;
}

#[tokio::test]
async fn a_panic_is_reported_with_the_panic_message() {
    let e = aborted("panic", None).await;

    assert_eq!(e.kind(), ErrorKind::Panic);
    assert!(
        e.to_string()
            .starts_with("plugin \"panic\" panicked (wasm trap: unreachable); stderr: "),
        "{e}"
    );
    assert!(
        e.message().contains("the panic plugin always panics"),
        "{e}"
    );
    echo_still_serves().await;
}

#[tokio::test]
async fn an_oversized_status_aborts_the_call() {
    let e = aborted("huge", None).await;

    assert_eq!(e.kind(), ErrorKind::OutputTooLarge);
    assert_eq!(
        e.to_string(),
        format!(
            "plugin \"huge\" produced output the host refuses: set a status of {} bytes, more than the limit of 262144 bytes",
            json!({ "blob": "x".repeat(10 << 20) }).to_string().len()
        )
    );
    echo_still_serves().await;
}

#[tokio::test]
async fn std_sees_no_files_environment_or_arguments() {
    let snoop = load("snoop", Grants::none()).await;
    let done = snoop
        .reconcile(&object("x", "default", json!({})), &default_services())
        .await
        .expect("snoop returns ok");
    let status = &done.outputs.status;

    for probe in ["readFile", "readDir", "writeFile", "envHome"] {
        assert_eq!(
            status[probe]["ok"], false,
            "{probe} must fail under deny-all WASI: {}",
            status[probe]
        );
        assert!(
            status[probe]["value"].is_null(),
            "{probe} must observe no data"
        );
    }
    assert_eq!(status["envCount"], 0);
    assert_eq!(status["argCount"], 0);

    // stdout and stderr are captured and become log lines, not host output.
    let line = |source| {
        done.outputs
            .logs
            .iter()
            .find(|l| l.source == source)
            .map(|l| l.message.as_str())
    };
    assert_eq!(line(LogSource::Stdout), Some("snoop was here"));
    assert_eq!(line(LogSource::Stderr), Some("snoop on stderr"));
    echo_still_serves().await;
}

fn memory_hits<T>(done: &omni_operator::runtime::Completed<T>) -> Option<u64> {
    done.outputs.status["memoryHits"].as_u64()
}

/// Every call gets a fresh instance, and no instance may read what an earlier one left in its linear memory,
/// although the pooling allocator hands the same memory slot to the next instance of the same component and
/// keeps the pages it last dirtied resident. The guest scans every page it has for a text the previous call
/// planted; it finds it only in the call that planted it (the probe's positive control).
#[tokio::test]
async fn a_call_never_sees_what_an_earlier_call_left_in_memory() {
    let snoop = load("snoop", Grants::none()).await;
    let services = default_services();
    for round in 0..8 {
        let marker = format!("left-behind-{round}-by-{}", std::process::id());
        let reversed: String = marker.chars().rev().collect();

        let planted = snoop
            .reconcile(
                &object(
                    "plants",
                    "default",
                    json!({"plant": marker, "seek": reversed}),
                ),
                &services,
            )
            .await
            .expect("the planting call returns ok");
        let found = memory_hits(&planted).expect("the probe reports its hits");
        assert!(
            found >= 17,
            "the probe must find what its own call planted (a static and 16 heap copies): found {found}"
        );

        let next = snoop
            .reconcile(
                &object("looks", "default", json!({"seek": reversed})),
                &services,
            )
            .await
            .expect("the looking call returns ok");
        assert_eq!(
            memory_hits(&next),
            Some(0),
            "round {round}: a later call found an earlier call's memory"
        );
    }
}

#[tokio::test]
async fn many_concurrent_calls_all_complete() {
    let echo = load("echo", crate::support::echo_grants()).await;
    let services = default_services();
    let calls = (0..100).map(|i| {
        let echo = echo.clone();
        let services = services.clone();
        tokio::spawn(async move {
            let object = object(
                &format!("o{i}"),
                "default",
                json!({ "configMap": "settings" }),
            );
            echo.reconcile(&object, &services)
                .await
                .map(|done| done.outputs.status["echo"].clone())
        })
    });
    for (i, call) in calls.collect::<Vec<_>>().into_iter().enumerate() {
        assert_eq!(call.await.unwrap().unwrap(), json!(format!("o{i}")));
    }
}

#[tokio::test]
async fn the_on_demand_allocator_serves_the_same_calls() {
    use omni_operator::runtime::{Allocator, PluginSpec, Runtime, RuntimeConfig};
    let runtime = Runtime::new(RuntimeConfig {
        allocator: Allocator::OnDemand,
        ..RuntimeConfig::default()
    })
    .unwrap();
    assert_eq!(runtime.allocator(), Allocator::OnDemand);
    let spec =
        PluginSpec::new("echo", crate::guests::wasm("echo")).grants(crate::support::echo_grants());
    let echo = runtime.load(spec).await.unwrap();
    let done = echo
        .reconcile(
            &object("x", "default", json!({ "configMap": "settings" })),
            &default_services(),
        )
        .await
        .unwrap();
    assert_eq!(done.outputs.status["echo"], "x");

    let bomb = runtime
        .load(PluginSpec::new("bomb", crate::guests::wasm("bomb")))
        .await
        .unwrap();
    match bomb
        .reconcile(&object("x", "default", json!({})), &default_services())
        .await
    {
        Err(CallError::Aborted(e)) => assert_eq!(e.kind(), ErrorKind::OutOfMemory),
        other => panic!("bomb should run out of memory, got {other:?}"),
    }
}

#[tokio::test]
async fn a_read_that_never_answers_times_out_within_the_call() {
    use std::sync::Arc;
    let limits = CallLimits {
        timeout: Duration::from_millis(400),
        ..CallLimits::default()
    };
    let echo = try_load("echo", crate::support::echo_grants(), Some(limits))
        .await
        .unwrap();
    let stuck = crate::support::FakeKube::gated(Arc::new(tokio::sync::Semaphore::new(0)));
    let done = echo
        .reconcile(
            &object("x", "default", json!({ "configMap": "settings" })),
            &crate::support::services(stuck),
        )
        .await
        .expect("the plugin handles the timeout answer");
    let error = done.outputs.status["readError"].as_str().unwrap();
    assert!(
        error.starts_with("timeout: kube-read get ConfigMap \"settings\" did not answer within 3"),
        "{error}"
    );
}
