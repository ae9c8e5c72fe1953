//! The OmniConnection plugin natively against the mock host: reconcile and deletion, the backoff that
//! replaces Go's ignored 1 m requeue, and every admission message plus the endpoint check.

use std::cell::RefCell;

use omni_plugin_sdk::mock::MockHost;
use omni_plugin_sdk::omni::{ClusterHealth, LabelTerm, OmniResource, ResourceKey};
use omni_plugin_sdk::{
    ConditionStatus, EventType, HostError, LogLevel, ObjectRef, ReconcileError, json,
};

use super::*;

const NOW: &str = "2026-01-01T00:00:00Z";

fn connection(name: &str, endpoint: &str) -> Value {
    json!({
        "apiVersion": API_VERSION, "kind": KIND,
        "metadata": {"name": name, "namespace": "team", "generation": 3},
        "spec": {"endpoint": endpoint, "auth": {"serviceAccountSecretRef": {"name": "omni-sa", "key": "serviceAccountKey"}}}
    })
}

/// A connection whose status already holds a `Reachable` condition.
fn with_reachable(mut obj: Value, status: &str, since: &str) -> Value {
    obj["status"] = json!({"conditions": [
        {"type": "Ready", "status": "False", "reason": "ConnectionFailed", "message": "m", "lastTransitionTime": "2000-01-01T00:00:00Z"},
        {"type": "Reachable", "status": status, "reason": "ConnectionFailed", "message": "m", "lastTransitionTime": since}
    ]});
    obj
}

fn cluster(name: &str, namespace: &str, connection: &str) -> Value {
    json!({
        "apiVersion": API_VERSION, "kind": "OmniCluster",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"connectionRef": {"name": connection}}
    })
}

/// (type, status, reason, message) of a condition the plugin set.
fn cond(host: &impl ConditionOf, type_: &str) -> (ConditionStatus, String, String) {
    let c = host
        .condition_of(type_)
        .unwrap_or_else(|| panic!("{type_} was not set"));
    (c.status, c.reason, c.message)
}

trait ConditionOf {
    fn condition_of(&self, type_: &str) -> Option<Condition>;
}

impl ConditionOf for MockHost {
    fn condition_of(&self, type_: &str) -> Option<Condition> {
        self.condition(type_)
    }
}

/// MockHost ignores the connection name given to Omni calls; this wrapper records it, so the test can see the
/// plugin checks its own connection.
struct Recording {
    inner: MockHost,
    connections: RefCell<Vec<String>>,
    queries: RefCell<Vec<ListQuery>>,
    /// When set, what every `kube_list` answers instead of the mock's namespace-filtered list.
    listed: Option<Vec<Value>>,
}

fn recording(inner: MockHost) -> Recording {
    Recording {
        inner,
        connections: RefCell::new(Vec::new()),
        queries: RefCell::new(Vec::new()),
        listed: None,
    }
}

impl omni_plugin_sdk::Context for Recording {
    fn object(&self) -> Value {
        self.inner.object()
    }

    fn remaining_ms(&self) -> u64 {
        self.inner.remaining_ms()
    }

    fn set_status(&self, fields: Value) {
        self.inner.set_status(fields)
    }

    fn set_condition(&self, condition: Condition) {
        self.inner.set_condition(condition)
    }

    fn requeue_after(&self, ms: u64) {
        self.inner.requeue_after(ms)
    }

    fn event(&self, kind: EventType, reason: &str, message: &str) {
        self.inner.event(kind, reason, message)
    }

    fn log(&self, level: LogLevel, message: &str, fields: &[(&str, &str)]) {
        self.inner.log(level, message, fields)
    }
}

impl omni_plugin_sdk::Clock for Recording {
    fn now(&self) -> String {
        self.inner.now()
    }
}

impl omni_plugin_sdk::KubeRead for Recording {
    fn kube_get(&self, target: &ObjectRef) -> Result<Option<Value>, HostError> {
        self.inner.kube_get(target)
    }

    fn kube_list(&self, query: &ListQuery) -> Result<Vec<Value>, HostError> {
        self.queries.borrow_mut().push(query.clone());
        match &self.listed {
            Some(listed) => Ok(listed.clone()),
            None => self.inner.kube_list(query),
        }
    }
}

impl omni_plugin_sdk::KubeWrite for Recording {
    fn kube_apply(
        &self,
        object: &Value,
        options: omni_plugin_sdk::kube_write::WriteOptions,
    ) -> Result<Value, HostError> {
        self.inner.kube_apply(object, options)
    }

    fn kube_create(
        &self,
        object: &Value,
        options: omni_plugin_sdk::kube_write::WriteOptions,
    ) -> Result<Value, HostError> {
        self.inner.kube_create(object, options)
    }

    fn kube_patch(
        &self,
        target: &ObjectRef,
        patch: &omni_plugin_sdk::kube_write::Patch,
        options: omni_plugin_sdk::kube_write::WriteOptions,
    ) -> Result<Value, HostError> {
        self.inner.kube_patch(target, patch, options)
    }

    fn kube_delete(
        &self,
        target: &ObjectRef,
        options: &omni_plugin_sdk::kube_write::DeleteOptions,
    ) -> Result<bool, HostError> {
        self.inner.kube_delete(target, options)
    }
}

impl omni_plugin_sdk::Files for Recording {
    // The connection plugin never calls these; they forward so the wrapper stays a faithful host.
    fn read_file(&self, root: &str, path: &str) -> Result<Vec<u8>, HostError> {
        self.inner.read_file(root, path)
    }
}

impl omni_plugin_sdk::Omni for Recording {
    fn omni_ping(&self, connection: &str) -> Result<String, HostError> {
        self.connections.borrow_mut().push(connection.into());
        self.inner.omni_ping(connection)
    }

    fn omni_get(
        &self,
        connection: &str,
        key: &ResourceKey,
    ) -> Result<Option<OmniResource>, HostError> {
        self.connections.borrow_mut().push(connection.into());
        self.inner.omni_get(connection, key)
    }

    fn omni_list(
        &self,
        connection: &str,
        namespace: &str,
        type_: &str,
        labels: &[LabelTerm],
    ) -> Result<Vec<OmniResource>, HostError> {
        self.connections.borrow_mut().push(connection.into());
        self.inner.omni_list(connection, namespace, type_, labels)
    }

    fn omni_create(
        &self,
        connection: &str,
        resource: &OmniResource,
    ) -> Result<OmniResource, HostError> {
        self.connections.borrow_mut().push(connection.into());
        self.inner.omni_create(connection, resource)
    }

    fn omni_update(
        &self,
        connection: &str,
        resource: &OmniResource,
    ) -> Result<OmniResource, HostError> {
        self.connections.borrow_mut().push(connection.into());
        self.inner.omni_update(connection, resource)
    }

    fn omni_teardown(&self, connection: &str, key: &ResourceKey) -> Result<bool, HostError> {
        self.connections.borrow_mut().push(connection.into());
        self.inner.omni_teardown(connection, key)
    }

    fn omni_destroy(&self, connection: &str, key: &ResourceKey) -> Result<(), HostError> {
        self.connections.borrow_mut().push(connection.into());
        self.inner.omni_destroy(connection, key)
    }

    fn omni_cluster_status(
        &self,
        connection: &str,
        cluster: &str,
    ) -> Result<Option<ClusterHealth>, HostError> {
        self.connections.borrow_mut().push(connection.into());
        self.inner.omni_cluster_status(connection, cluster)
    }

    fn omni_export_kubeconfig(
        &self,
        connection: &str,
        request: &omni_plugin_sdk::secrets::KubeconfigExport,
    ) -> Result<String, HostError> {
        self.inner.omni_export_kubeconfig(connection, request)
    }
}

impl omni_plugin_sdk::Secrets for Recording {
    fn secret_info(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<omni_plugin_sdk::secrets::SecretInfo>, HostError> {
        self.inner.secret_info(namespace, name)
    }

    fn secret_digest(
        &self,
        key: &omni_plugin_sdk::secrets::SecretKeyRef,
    ) -> Result<Option<String>, HostError> {
        self.inner.secret_digest(key)
    }

    fn secret_read(
        &self,
        key: &omni_plugin_sdk::secrets::SecretKeyRef,
    ) -> Result<Option<Vec<u8>>, HostError> {
        self.inner.secret_read(key)
    }

    fn secret_delete_owned(
        &self,
        namespace: Option<&str>,
        name: &str,
        owner: &omni_plugin_sdk::secrets::OwnerLabel,
    ) -> Result<omni_plugin_sdk::secrets::Removal, HostError> {
        self.inner.secret_delete_owned(namespace, name, owner)
    }
}

impl omni_plugin_sdk::Workload for Recording {
    fn workload_probe(
        &self,
        kubeconfig: &omni_plugin_sdk::secrets::SecretKeyRef,
    ) -> Result<String, HostError> {
        self.inner.workload_probe(kubeconfig)
    }

    fn workload_copy_secret(
        &self,
        kubeconfig: &omni_plugin_sdk::secrets::SecretKeyRef,
        request: &omni_plugin_sdk::secrets::SecretCopy,
    ) -> Result<omni_plugin_sdk::secrets::Copied, HostError> {
        self.inner.workload_copy_secret(kubeconfig, request)
    }

    fn workload_delete_secret(
        &self,
        kubeconfig: &omni_plugin_sdk::secrets::SecretKeyRef,
        namespace: &str,
        name: &str,
        owner: &omni_plugin_sdk::secrets::OwnerLabel,
    ) -> Result<omni_plugin_sdk::secrets::Removal, HostError> {
        self.inner
            .workload_delete_secret(kubeconfig, namespace, name, owner)
    }
}

impl omni_plugin_sdk::Helm for Recording {
    fn helm_observe(
        &self,
        release: &omni_plugin_sdk::helm::ReleaseRef,
        source: Option<&omni_plugin_sdk::helm::ReleaseSource>,
    ) -> Result<omni_plugin_sdk::helm::Observation, HostError> {
        self.inner.helm_observe(release, source)
    }

    fn helm_start(
        &self,
        release: &omni_plugin_sdk::helm::ReleaseRef,
        step: &omni_plugin_sdk::helm::Step,
    ) -> Result<omni_plugin_sdk::helm::StepRecord, HostError> {
        self.inner.helm_start(release, step)
    }

    fn helm_detect_drift(
        &self,
        release: &omni_plugin_sdk::helm::ReleaseRef,
        ignore: &[omni_plugin_sdk::helm::DriftIgnore],
    ) -> Result<Vec<omni_plugin_sdk::helm::Drifted>, HostError> {
        self.inner.helm_detect_drift(release, ignore)
    }

    fn helm_cancel(
        &self,
        release: &omni_plugin_sdk::helm::ReleaseRef,
        id: &str,
    ) -> Result<bool, HostError> {
        self.inner.helm_cancel(release, id)
    }
}

impl ConditionOf for Recording {
    fn condition_of(&self, type_: &str) -> Option<Condition> {
        self.inner.condition(type_)
    }
}

// ---- reconcile: success -------------------------------------------------------------------------------------

#[test]
fn a_reachable_connection_is_ready_with_the_normalised_endpoint_and_rechecked_in_five_minutes() {
    let host = recording(
        MockHost::new(connection("prod", "https://omni.example.com"))
            .with_omni_ping(Ok("https://omni.example.com:443".into()))
            .at("2026-03-04T05:06:07Z"),
    );
    OmniConnectionPlugin::reconcile(&host).expect("reconciles");

    assert_eq!(
        *host.connections.borrow(),
        vec!["prod"],
        "pings its own connection, once"
    );
    let message = "connected to https://omni.example.com:443".to_string();
    assert_eq!(
        cond(&host, "Reachable"),
        (
            ConditionStatus::True,
            "ConnectionReady".into(),
            message.clone()
        )
    );
    assert_eq!(
        cond(&host, "Ready"),
        (
            ConditionStatus::True,
            "ConnectionReady".into(),
            message.clone()
        )
    );
    assert_eq!(
        cond(&host, "Stalled"),
        (ConditionStatus::False, "ConnectionReady".into(), message)
    );

    let out = host.inner.outputs();
    assert_eq!(
        out.conditions.len(),
        3,
        "exactly Reachable, Ready and Stalled: {:?}",
        out.conditions
    );
    assert_eq!(
        Value::Object(out.status),
        json!({"connectionRef": "prod", "endpoint": "https://omni.example.com", "lastCheckTime": "2026-03-04T05:06:07Z"}),
        "endpoint is spec.endpoint as written, lastCheckTime the host's clock"
    );
    assert_eq!(out.requeue_after, Some(300_000));
    assert!(out.events.is_empty());
}

#[test]
fn the_success_message_uses_whatever_endpoint_the_host_normalised() {
    let host = MockHost::new(connection(
        "c",
        "http://omni.omni-system.svc.cluster.local:8080",
    ))
    .with_omni_ping(Ok("grpc://omni.omni-system.svc.cluster.local:8080".into()));
    OmniConnectionPlugin::reconcile(&host).expect("reconciles");
    assert_eq!(
        cond(&host, "Ready").2,
        "connected to grpc://omni.omni-system.svc.cluster.local:8080"
    );
    assert_eq!(
        host.outputs().status["endpoint"],
        "http://omni.omni-system.svc.cluster.local:8080"
    );
    assert_eq!(host.omni_calls(), vec!["ping"]);
}

// ---- reconcile: failure -------------------------------------------------------------------------------------

#[test]
fn every_failure_text_passes_through_under_one_prefix_and_fails_all_three_conditions() {
    let cases = [
        HostError::Other("MissingSecret \"omni-sa\": secrets \"omni-sa\" not found".into()),
        HostError::NotFound("MissingSecret \"omni-sa\": secrets \"omni-sa\" not found".into()),
        HostError::Invalid("secret team/omni-sa missing key \"serviceAccountKey\"".into()),
        HostError::Invalid("secret team/omni-sa key \"serviceAccountKey\" is empty".into()),
        HostError::Invalid(
            "secret team/omni-sa key \"serviceAccountKey\" contains Omni environment assignments; store only the OMNI_SERVICE_ACCOUNT_KEY value"
                .into(),
        ),
        HostError::Invalid(
            "secret team/omni-sa key \"serviceAccountKey\" must contain the base64-encoded Omni service account key: illegal base64 data at input byte 4"
                .into(),
        ),
        HostError::Other("create Omni client: parse \"%%\": invalid URL escape".into()),
        HostError::Unavailable("list Omni clusters: rpc error: code = Unavailable desc = connection refused".into()),
        HostError::Timeout("list Omni clusters: context deadline exceeded".into()),
        HostError::Unauthenticated("list Omni clusters: rpc error: code = Unauthenticated desc = invalid signature".into()),
        HostError::Forbidden("list Omni clusters: rpc error: code = PermissionDenied desc = missing role".into()),
        HostError::Conflict("list Omni clusters: conflict".into()),
        HostError::Denied("capability \"omni\" is not granted".into()),
    ];
    for error in cases {
        let text = host_error_text(&error);
        let host = MockHost::new(connection("prod", "https://omni.example.com"))
            .with_omni_ping(Err(error.clone()));
        OmniConnectionPlugin::reconcile(&host)
            .unwrap_or_else(|e| panic!("{error:?}: a failure is reported, not returned: {e:?}"));

        let message = format!("failed to connect to Omni: {text}");
        for (type_, status) in [
            ("Reachable", ConditionStatus::False),
            ("Ready", ConditionStatus::False),
            ("Stalled", ConditionStatus::True),
        ] {
            assert_eq!(
                cond(&host, type_),
                (status, "ConnectionFailed".into(), message.clone()),
                "{type_} for {error:?}"
            );
        }
        assert_eq!(
            message.matches("failed to connect to Omni").count(),
            1,
            "no double prefix: {message}"
        );
        for display_prefix in [
            "denied: ",
            "not found: ",
            "conflict: ",
            "invalid: ",
            "unavailable: ",
            "timeout: ",
            "unauthenticated: ",
            "forbidden: ",
        ] {
            assert!(
                !message.contains(display_prefix),
                "{message} carries the Display prefix {display_prefix:?}"
            );
        }
        let out = host.outputs();
        assert_eq!(
            Value::Object(out.status),
            json!({"connectionRef": "prod", "endpoint": "https://omni.example.com", "lastCheckTime": NOW}),
            "status is written on failure too"
        );
        assert_eq!(
            out.requeue_after,
            Some(2_000),
            "a first failure is retried after 2 s"
        );
    }
}

#[test]
fn the_inner_texts_are_exactly_what_the_host_said() {
    let text = "MissingSecret \"omni-sa\": secrets \"omni-sa\" not found";
    let host = MockHost::new(connection("prod", "https://omni.example.com"))
        .with_omni_ping(Err(HostError::Unavailable(text.into())));
    OmniConnectionPlugin::reconcile(&host).expect("reconciles");
    assert_eq!(
        cond(&host, "Reachable").2,
        format!("failed to connect to Omni: {text}")
    );
}

#[test]
fn an_empty_host_text_falls_back_to_the_error_kind() {
    assert_eq!(
        host_error_text(&HostError::Unavailable(String::new())),
        "unavailable: "
    );
    assert_eq!(
        host_error_text(&HostError::Timeout("  ".into())),
        "timeout:   "
    );
    assert_eq!(host_error_text(&HostError::Forbidden("no".into())), "no");
}

#[test]
fn a_plugin_without_the_omni_capability_reports_the_configuration_problem_in_its_conditions() {
    let host = MockHost::new(connection("prod", "https://omni.example.com")).deny("omni");
    OmniConnectionPlugin::reconcile(&host).expect("denied is reported, not returned");
    let message = "failed to connect to Omni: capability \"omni\" is not granted".to_string();
    assert_eq!(
        cond(&host, "Reachable"),
        (
            ConditionStatus::False,
            "ConnectionFailed".into(),
            message.clone()
        )
    );
    assert_eq!(
        cond(&host, "Ready"),
        (
            ConditionStatus::False,
            "ConnectionFailed".into(),
            message.clone()
        )
    );
    assert_eq!(
        cond(&host, "Stalled"),
        (ConditionStatus::True, "ConnectionFailed".into(), message)
    );
    assert_eq!(host.outputs().requeue_after, Some(2_000));
}

#[test]
fn a_failing_connection_backs_off_by_how_long_it_has_been_failing() {
    let base = connection("prod", "https://omni.example.com");
    let cases: [(&str, Value, &str, u64); 12] = [
        ("no status yet", base.clone(), NOW, 2_000),
        (
            "failing since 1 s",
            with_reachable(base.clone(), "False", "2025-12-31T23:59:59Z"),
            NOW,
            2_000,
        ),
        (
            "failing since 10 s",
            with_reachable(base.clone(), "False", "2025-12-31T23:59:50Z"),
            NOW,
            10_000,
        ),
        (
            "failing since 45 s",
            with_reachable(base.clone(), "False", "2025-12-31T23:59:15Z"),
            NOW,
            45_000,
        ),
        (
            "failing since 10 min",
            with_reachable(base.clone(), "False", "2025-12-31T23:50:00Z"),
            NOW,
            60_000,
        ),
        (
            "failing since last year",
            with_reachable(base.clone(), "False", "2025-01-01T00:00:00Z"),
            NOW,
            60_000,
        ),
        (
            "was reachable until now",
            with_reachable(base.clone(), "True", "2025-12-31T23:50:00Z"),
            NOW,
            2_000,
        ),
        (
            "garbage transition time",
            with_reachable(base.clone(), "False", "yesterday"),
            NOW,
            2_000,
        ),
        (
            "garbage clock",
            with_reachable(base.clone(), "False", "2025-12-31T23:59:50Z"),
            "soon",
            2_000,
        ),
        (
            "transition in the future (clock skew)",
            with_reachable(base.clone(), "False", "2026-01-01T00:05:00Z"),
            NOW,
            2_000,
        ),
        (
            "offset and fraction",
            with_reachable(base.clone(), "False", "2026-01-01T00:59:30.123+01:00"),
            NOW,
            30_000,
        ),
        (
            "across a month",
            with_reachable(base.clone(), "False", "2026-02-28T23:59:40Z"),
            "2026-03-01T00:00:00Z",
            20_000,
        ),
    ];
    for (what, obj, now, want) in cases {
        assert_eq!(failure_backoff_ms(&obj, now), want, "{what}");
        let host = MockHost::new(obj)
            .at(now)
            .with_omni_ping(Err(HostError::Unavailable(
                "list Omni clusters: down".into(),
            )));
        OmniConnectionPlugin::reconcile(&host).expect("reconciles");
        assert_eq!(
            host.outputs().requeue_after,
            Some(want),
            "{what}: the requeue the plugin asked for"
        );
    }
}

#[test]
fn a_recovered_connection_goes_back_to_the_five_minute_check() {
    let obj = with_reachable(
        connection("prod", "https://omni.example.com"),
        "False",
        "2025-12-31T23:50:00Z",
    );
    let host = MockHost::new(obj);
    OmniConnectionPlugin::reconcile(&host).expect("reconciles");
    assert_eq!(host.outputs().requeue_after, Some(300_000));
    assert_eq!(cond(&host, "Reachable").0, ConditionStatus::True);
}

// ---- finalize -----------------------------------------------------------------------------------------------

#[test]
fn deletion_waits_for_the_clusters_that_use_the_connection_sorted_by_name() {
    let host = MockHost::new(connection("prod", "https://omni.example.com"))
        .with_object(cluster("zeta", "team", "prod"))
        .with_object(cluster("alpha", "team", "prod"))
        .with_object(cluster("beta", "team", "staging"))
        .with_object(cluster("aardvark", "elsewhere", "prod"));
    assert!(
        !OmniConnectionPlugin::finalize(&host).expect("finalizes"),
        "the finalizer stays"
    );

    let message = "waiting for OmniCluster references to be deleted: alpha, zeta".to_string();
    assert_eq!(
        cond(&host, "Ready"),
        (ConditionStatus::False, "Deleting".into(), message.clone())
    );
    assert_eq!(
        cond(&host, "Stalled"),
        (ConditionStatus::True, "Deleting".into(), message)
    );
    let out = host.outputs();
    assert_eq!(
        out.conditions.len(),
        2,
        "Reachable is left as it was: {:?}",
        out.conditions
    );
    assert_eq!(
        Value::Object(out.status),
        json!({"connectionRef": "prod", "endpoint": "https://omni.example.com"}),
        "no lastCheckTime: nothing was checked"
    );
    assert_eq!(out.requeue_after, Some(60_000));
    assert!(
        host.omni_calls().is_empty(),
        "Omni is never called during deletion"
    );
}

#[test]
fn deletion_ignores_a_cluster_the_host_lists_from_another_namespace() {
    // References are namespace-local: a host that lists too widely must not keep this connection alive.
    let mut host = recording(MockHost::new(connection(
        "prod",
        "https://omni.example.com",
    )));
    host.listed = Some(vec![
        cluster("other", "elsewhere", "prod"),
        cluster("mine", "team", "prod"),
    ]);
    assert!(!OmniConnectionPlugin::finalize(&host).expect("finalizes"));
    assert_eq!(
        cond(&host, "Ready").2,
        "waiting for OmniCluster references to be deleted: mine"
    );
    assert_eq!(
        *host.queries.borrow(),
        vec![ListQuery {
            api_version: API_VERSION.into(),
            kind: "OmniCluster".into(),
            namespace: None,
            label_selector: None,
            field_selector: None
        }]
    );

    host.listed = Some(vec![cluster("other", "elsewhere", "prod")]);
    assert!(OmniConnectionPlugin::finalize(&host).expect("finalizes"));
}

#[test]
fn deletion_is_released_when_no_cluster_uses_the_connection() {
    let host = MockHost::new(connection("prod", "https://omni.example.com"))
        .with_object(cluster("beta", "team", "staging"))
        .with_object(cluster("alpha", "elsewhere", "prod"));
    assert!(
        OmniConnectionPlugin::finalize(&host).expect("finalizes"),
        "the finalizer may go"
    );
    let out = host.outputs();
    assert!(
        out.conditions.is_empty() && out.status.is_empty() && out.requeue_after.is_none(),
        "{out:?}"
    );
    assert!(host.omni_calls().is_empty());
}

#[test]
fn deletion_releases_even_when_omni_is_unreachable_or_not_granted() {
    let host = MockHost::new(connection("prod", "https://omni.example.com"))
        .with_omni_failure(HostError::Unavailable("down".into()))
        .deny("omni");
    assert!(OmniConnectionPlugin::finalize(&host).expect("finalizes"));
}

#[test]
fn a_failed_cluster_list_is_an_error_of_the_call() {
    let host = MockHost::new(connection("prod", "https://omni.example.com")).deny("kube-read");
    let e = OmniConnectionPlugin::finalize(&host).expect_err("cannot know whether clusters remain");
    assert!(
        matches!(e, ReconcileError::Permanent(ref m) if m.contains("kube-read")),
        "{e:?}"
    );
    assert!(
        host.outputs().conditions.is_empty(),
        "no condition is guessed"
    );
}

// ---- validate -----------------------------------------------------------------------------------------------

fn spec_object(spec: Value) -> Value {
    json!({"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": "prod", "namespace": "team"}, "spec": spec})
}

fn verdict(spec: Value) -> Verdict {
    OmniConnectionPlugin::validate(&spec_object(spec), None)
}

#[test]
fn a_well_formed_connection_is_allowed_without_warnings() {
    let v = OmniConnectionPlugin::validate(&connection("prod", "https://omni.example.com"), None);
    assert!(v.allowed() && v.warnings.is_empty(), "{v:?}");
}

#[test]
fn the_service_account_secret_needs_a_name_and_a_key() {
    let name = "spec.auth.serviceAccountSecretRef.name: Required value: service account Secret name is required";
    let key = "spec.auth.serviceAccountSecretRef.key: Required value: service account Secret key is required";
    let cases: [(Value, Vec<&str>); 6] = [
        (json!({"name": " \t", "key": "k"}), vec![name]),
        (json!({"name": "s", "key": "  "}), vec![key]),
        (json!({"name": "", "key": ""}), vec![name, key]),
        (json!({}), vec![name, key]),
        (json!({"name": " s ", "key": " k "}), vec![]),
        (json!({"name": 7, "key": "k"}), vec![name]),
    ];
    for (secret, want) in cases {
        let v = verdict(
            json!({"endpoint": "https://omni.example.com", "auth": {"serviceAccountSecretRef": secret}}),
        );
        assert_eq!(v.messages(), want, "{secret}");
    }
    let v = verdict(json!({"endpoint": "https://omni.example.com"}));
    assert_eq!(v.messages(), vec![name, key], "no auth at all");
}

#[test]
fn skipping_tls_verification_is_allowed_with_a_warning() {
    let auth = json!({"serviceAccountSecretRef": {"name": "s", "key": "k"}});
    let v = verdict(
        json!({"endpoint": "https://omni.example.com", "auth": auth, "insecureSkipTLSVerify": true}),
    );
    assert!(v.allowed());
    assert_eq!(
        v.warnings,
        vec!["insecureSkipTLSVerify disables Omni endpoint TLS certificate verification"]
    );
    for off in [json!(false), Value::Null] {
        let v = verdict(
            json!({"endpoint": "https://omni.example.com", "auth": auth, "insecureSkipTLSVerify": off}),
        );
        assert!(v.warnings.is_empty(), "{off}");
    }
    let v = verdict(
        json!({"endpoint": "https://omni.example.com", "auth": {}, "insecureSkipTLSVerify": true}),
    );
    assert_eq!(
        (v.errors.len(), v.warnings.len()),
        (2, 1),
        "the warning is given on refusals too"
    );
}

#[test]
fn endpoints_must_be_urls_with_a_host_and_a_known_scheme() {
    for ok in [
        "https://omni.example.com",
        "grpc://omni:8080",
        "http://10.0.0.1:80/x",
        "https://omni.example.com:443/",
        "grpc://[fd00::1]:8080",
        "https://[::1]",
        "https://omni.example.com?x=1",
        "http://h:65535",
    ] {
        assert_eq!(check_endpoint(ok), Ok(()), "{ok}");
        let v = verdict(
            json!({"endpoint": ok, "auth": {"serviceAccountSecretRef": {"name": "s", "key": "k"}}}),
        );
        assert!(v.allowed(), "{ok}: {:?}", v.messages());
    }

    let refused = [
        ("omni.example.com", "the scheme is missing"),
        ("://omni", "the scheme is missing"),
        ("ftp://x", "unsupported scheme \"ftp\""),
        ("HTTPS://omni", "unsupported scheme \"HTTPS\""),
        ("https://", "the host is empty"),
        ("https:///path", "the host is empty"),
        ("https://:443", "the host is empty"),
        ("https://host:99999", "port 99999 is out of range 1-65535"),
        ("https://host:0", "port 0 is out of range 1-65535"),
        (
            "https://host:123456789012",
            "port 123456789012 is out of range 1-65535",
        ),
        ("https://host:abc", "port \"abc\" is not a number"),
        ("https://host:-1", "port \"-1\" is not a number"),
        ("https://host:", "the port is empty"),
        ("grpc://fd00::1:8080", "port \":1:8080\" is not a number"),
        ("grpc://[fd00::1:8080", "the IPv6 host has no closing \"]\""),
        (
            "grpc://[fd00::1]8080",
            "unexpected \"8080\" after the IPv6 host",
        ),
        ("grpc://[]:80", "the host is empty"),
        ("https://user:pw@omni", "user information is not supported"),
        ("https://omni example.com", "it contains whitespace"),
        ("", "it is empty"),
    ];
    for (endpoint, what) in refused {
        assert_eq!(
            check_endpoint(endpoint),
            Err(what.to_string()),
            "{endpoint}"
        );
        let v = verdict(
            json!({"endpoint": endpoint, "auth": {"serviceAccountSecretRef": {"name": "s", "key": "k"}}}),
        );
        assert_eq!(
            v.messages(),
            vec![format!(
                "spec.endpoint: Invalid value: {}: endpoint must be an http://, https:// or grpc:// URL with a host: {what}",
                json!(endpoint)
            )],
            "{endpoint}"
        );
    }
}

#[test]
fn endpoint_errors_follow_the_original_rules_in_order() {
    let v = verdict(
        json!({"endpoint": "ftp://x", "auth": {"serviceAccountSecretRef": {"name": "", "key": ""}}}),
    );
    let fields: Vec<&str> = v.errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        fields,
        vec![
            "spec.auth.serviceAccountSecretRef.name",
            "spec.auth.serviceAccountSecretRef.key",
            "spec.endpoint"
        ]
    );
    let v = verdict(json!({"auth": {"serviceAccountSecretRef": {"name": "s", "key": "k"}}}));
    assert_eq!(
        v.messages(),
        vec![
            "spec.endpoint: Invalid value: null: endpoint must be an http://, https:// or grpc:// URL with a host: it is empty"
        ],
        "a missing endpoint (the CRD requires it) is still named"
    );
}

#[test]
fn an_unchanged_endpoint_is_not_refused_on_update_but_a_changed_one_is() {
    // Objects admitted by the Go operator's looser CRD pattern must stay updatable (finalizer removal is an update).
    let old = connection("prod", "https://host:abc");
    let mut new = old.clone();
    new["metadata"]["finalizers"] = json!([]);
    assert!(OmniConnectionPlugin::validate(&new, Some(&old)).allowed());

    let mut changed = old.clone();
    changed["spec"]["endpoint"] = json!("https://host:abcd");
    let v = OmniConnectionPlugin::validate(&changed, Some(&old));
    assert_eq!(v.errors.len(), 1);
    assert_eq!(v.errors[0].field, "spec.endpoint");

    assert!(
        !OmniConnectionPlugin::validate(&old, None).allowed(),
        "a create is always checked"
    );
    let mut blank = old.clone();
    blank["spec"]["auth"]["serviceAccountSecretRef"]["name"] = json!(" ");
    assert_eq!(
        OmniConnectionPlugin::validate(&blank, Some(&old))
            .errors
            .len(),
        1,
        "the admission rules do not ratchet"
    );
}

// ---- describe -----------------------------------------------------------------------------------------------

#[test]
fn describe_declares_the_kind_finalizers_capabilities_and_the_cluster_relation() {
    let info = OmniConnectionPlugin::describe();
    assert_eq!(info.name, "omni-connection");
    assert_eq!(info.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(
        info.kinds,
        vec![Gvk::new("omni.texashpc.com", "v1alpha1", "OmniConnection")]
    );
    assert_eq!(info.kinds[0].api_version(), "omni.texashpc.com/v1alpha1");
    assert_eq!(
        info.finalizer.as_deref(),
        Some("omni.texashpc.com/finalizer")
    );
    assert_eq!(info.legacy_finalizers, vec!["omni.texas-hpc.org/finalizer"]);
    assert_eq!(info.capabilities, vec!["kube-read", "omni", "clock"]);
    assert_eq!(
        info.related,
        vec![Related {
            kind: Gvk::new("omni.texashpc.com", "v1alpha1", "OmniCluster"),
            mapping: RelatedMapping::NamedBy("spec.connectionRef.name".into()),
        }]
    );
}
