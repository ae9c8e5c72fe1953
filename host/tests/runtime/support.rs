//! Shared set-up: one runtime per test process (as in production), fakes for the host services, and the
//! "echo still works" check every adversarial test ends with.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use omni_operator::capabilities::{
    BoxFuture, CallObject, FixedClock, GetRequest, Grants, HostError, HostServices, KindScope,
    KubeReader, ListRequest,
};
use omni_operator::runtime::{
    CallLimits, LoadedPlugin, PluginError, PluginSpec, Runtime, RuntimeConfig,
};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use super::guests;

/// 2026-11-22T07:17:03Z
pub const NOW: u64 = 1_795_331_823;

pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        // Every test that runs a plugin captures the host's log lines from its first one.
        let _ = logs();
        let cache_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plugin-cache");
        Runtime::new(RuntimeConfig {
            cache_dir: Some(cache_dir),
            ..RuntimeConfig::default()
        })
        .expect("building the runtime")
    })
}

pub async fn try_load(
    name: &str,
    grants: Grants,
    limits: Option<CallLimits>,
) -> Result<Arc<LoadedPlugin>, PluginError> {
    let mut spec = PluginSpec::new(name, guests::wasm(name)).grants(grants);
    spec.limits = limits;
    runtime().load(spec).await
}

pub async fn load(name: &str, grants: Grants) -> Arc<LoadedPlugin> {
    try_load(name, grants, None)
        .await
        .unwrap_or_else(|e| panic!("loading {name}: {e}"))
}

pub fn echo_grants() -> Grants {
    Grants::parse(["kube-read:core/ConfigMap", "clock"]).unwrap()
}

pub fn object(name: &str, namespace: &str, spec: Value) -> CallObject {
    let object = json!({
        "apiVersion": "test.omni.texashpc.com/v1",
        "kind": "Echo",
        "metadata": { "name": name, "namespace": namespace, "generation": 1 },
        "spec": spec,
    });
    CallObject::parse(object.to_string()).unwrap()
}

/// An in-memory Kubernetes with ConfigMaps; `gate` (when set) holds every read until a permit is added.
#[derive(Default)]
pub struct FakeKube {
    objects: Mutex<BTreeMap<(String, String, String), Value>>,
    gate: Option<Arc<Semaphore>>,
}

impl FakeKube {
    /// Reads wait for a permit of `gate` each.
    pub fn gated(gate: Arc<Semaphore>) -> Self {
        FakeKube {
            gate: Some(gate),
            ..FakeKube::default()
        }
    }

    pub fn with_config_map(self, namespace: &str, name: &str, data: Value) -> Self {
        let object = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": name, "namespace": namespace }, "data": data });
        self.objects
            .lock()
            .unwrap()
            .insert(("ConfigMap".into(), namespace.into(), name.into()), object);
        self
    }

    /// Any object, read back by kind, namespace and name.
    pub fn with_object(self, object: Value) -> Self {
        let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let key = (
            s(&object["kind"]),
            s(&object["metadata"]["namespace"]),
            s(&object["metadata"]["name"]),
        );
        self.objects.lock().unwrap().insert(key, object);
        self
    }

    async fn pass_gate(&self) {
        if let Some(gate) = &self.gate {
            gate.acquire().await.unwrap().forget();
        }
    }
}

impl KubeReader for FakeKube {
    /// Namespaced, except the cluster-scoped kinds the tests use.
    fn kind_scope<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
    ) -> BoxFuture<'a, Result<KindScope, HostError>> {
        Box::pin(async move {
            let group = api_version
                .rsplit_once('/')
                .map(|(g, _)| g)
                .unwrap_or_default();
            Ok(KindScope {
                group: group.to_string(),
                kind: kind.to_string(),
                namespaced: !matches!(
                    kind,
                    "Namespace" | "ClusterRole" | "CustomResourceDefinition"
                ),
            })
        })
    }

    fn get(&self, request: GetRequest) -> BoxFuture<'_, Result<Option<Value>, HostError>> {
        Box::pin(async move {
            self.pass_gate().await;
            let key = (
                request.kind,
                request.namespace.unwrap_or_default(),
                request.name,
            );
            Ok(self.objects.lock().unwrap().get(&key).cloned())
        })
    }

    fn list(&self, request: ListRequest) -> BoxFuture<'_, Result<Vec<Value>, HostError>> {
        Box::pin(async move {
            self.pass_gate().await;
            let objects = self.objects.lock().unwrap();
            Ok(objects
                .iter()
                .filter(|((kind, ns, _), object)| {
                    *kind == request.kind
                        && request.namespace.as_ref().is_none_or(|want| want == ns)
                        && request
                            .field_selector
                            .as_ref()
                            .is_none_or(|f| f.matches(object))
                })
                .map(|(_, v)| v.clone())
                .collect())
        })
    }
}

pub fn services(kube: FakeKube) -> HostServices {
    HostServices::default()
        .with_kube(Arc::new(kube))
        .with_clock(Arc::new(FixedClock::at_unix(NOW)))
}

pub fn default_services() -> HostServices {
    services(FakeKube::default().with_config_map(
        "default",
        "settings",
        json!({ "greeting": "hello" }),
    ))
}

/// After any failure, the host still serves a well-behaved plugin.
pub async fn echo_still_serves() {
    let echo = load("echo", echo_grants()).await;
    let done = echo
        .reconcile(
            &object("after", "default", json!({ "configMap": "settings" })),
            &default_services(),
        )
        .await
        .expect("echo must keep working after another plugin failed");
    assert_eq!(done.outputs.status["echo"], "after");
    assert_eq!(
        done.outputs.status["config"],
        json!({ "greeting": "hello" })
    );
}

/// Everything the host logged in this test process, at every level our crates log at.
pub fn logs() -> &'static Mutex<Vec<u8>> {
    static LOGS: OnceLock<Mutex<Vec<u8>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        #[derive(Clone, Copy)]
        struct Sink;
        impl std::io::Write for Sink {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                logs()
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(
                "debug,hyper=info,h2=info,tower=info,rustls=info,cranelift=info,wasmtime=info",
            )
            .with_ansi(false)
            .with_writer(move || Sink)
            .finish();
        // The only subscriber of this test binary: every secret-leak scan reads real log lines, in any test order.
        let _ = tracing::subscriber::set_global_default(subscriber);
        Mutex::new(Vec::new())
    })
}

/// The last lines the host logged, for failure messages.
pub fn log_tail(lines: usize) -> String {
    let text =
        String::from_utf8_lossy(&logs().lock().unwrap_or_else(|p| p.into_inner())).into_owned();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The system allocator, remembering the largest single allocation each thread makes.
pub struct LargestAllocation;

thread_local! {
    // Const-initialised and without a destructor, so touching it never allocates (this runs inside `alloc`).
    static THREAD_LARGEST: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl LargestAllocation {
    /// Forgets what this thread allocated so far.
    pub fn reset_thread() {
        THREAD_LARGEST.with(|m| m.set(0));
    }

    /// The largest allocation this thread made since [`Self::reset_thread`], in bytes.
    pub fn thread_largest() -> usize {
        THREAD_LARGEST.with(std::cell::Cell::get)
    }

    fn note(size: usize) {
        // `try_with`: a thread being torn down may still free and allocate.
        let _ = THREAD_LARGEST.try_with(|m| {
            if size > m.get() {
                m.set(size);
            }
        });
    }
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counter is a plain thread-local.
unsafe impl std::alloc::GlobalAlloc for LargestAllocation {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        LargestAllocation::note(layout.size());
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: `ptr` came from the system allocator with this layout.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        LargestAllocation::note(new_size);
        // SAFETY: as for `dealloc`, and `new_size` is the caller's.
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
}
