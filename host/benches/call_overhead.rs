//! Plugin call overhead: a fresh store, instance and `reconcile` call with a 10 KiB object, end to end through
//! the public API (permits, store set-up, instantiation, the call, output collection).
//!
//! `cargo bench -p omni-operator --bench call_overhead`. Prints figures; asserts nothing (target: ≤ 50 µs
//! median for the overhead).

#[path = "../tests/runtime/guests.rs"]
mod guests;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use omni_operator::capabilities::{
    BoxFuture, CallObject, FixedClock, GetRequest, Grants, HostError, HostServices, KindScope,
    KubeReader, ListRequest,
};
use omni_operator::runtime::{Allocator, LoadedPlugin, PluginSpec, Runtime, RuntimeConfig};
use serde_json::{Value, json};

const WARMUP: usize = 300;
const ITERATIONS: usize = 5_000;

struct OneConfigMap(Value);

impl KubeReader for OneConfigMap {
    fn kind_scope<'a>(
        &'a self,
        _api_version: &'a str,
        kind: &'a str,
    ) -> BoxFuture<'a, Result<KindScope, HostError>> {
        Box::pin(async move {
            Ok(KindScope {
                group: String::new(),
                kind: kind.to_string(),
                namespaced: true,
            })
        })
    }

    fn get(&self, _request: GetRequest) -> BoxFuture<'_, Result<Option<Value>, HostError>> {
        Box::pin(async { Ok(Some(self.0.clone())) })
    }

    fn list(&self, _request: ListRequest) -> BoxFuture<'_, Result<Vec<Value>, HostError>> {
        Box::pin(async { Ok(vec![self.0.clone()]) })
    }
}

/// An Echo object whose JSON is 10 KiB.
fn object_10k() -> CallObject {
    let mut labels = serde_json::Map::new();
    let mut i = 0;
    loop {
        labels.insert(
            format!("example.com/label-{i:03}"),
            json!(format!("value-{i:03}-abcdefghijklmnop")),
        );
        i += 1;
        let object = json!({
            "apiVersion": "test.omni.texashpc.com/v1",
            "kind": "Echo",
            "metadata": { "name": "bench", "namespace": "default", "generation": 3, "labels": labels },
            "spec": { "configMap": "settings" },
        })
        .to_string();
        if object.len() >= 10 * 1024 {
            return CallObject::parse(object).expect("valid object");
        }
    }
}

async fn measure(
    plugin: &LoadedPlugin,
    object: &CallObject,
    services: &HostServices,
) -> Vec<Duration> {
    for _ in 0..WARMUP {
        plugin
            .reconcile(object, services)
            .await
            .expect("warm-up call");
    }
    let mut samples = Vec::with_capacity(ITERATIONS);
    for _ in 0..ITERATIONS {
        let started = Instant::now();
        plugin
            .reconcile(object, services)
            .await
            .expect("measured call");
        samples.push(started.elapsed());
    }
    samples.sort();
    samples
}

fn report(label: &str, samples: &[Duration]) {
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6;
    let mean = samples.iter().sum::<Duration>().as_secs_f64() * 1e6 / samples.len() as f64;
    println!(
        "{label:<58} median {:>7.1} µs   p90 {:>7.1} µs   p99 {:>7.1} µs   mean {:>7.1} µs",
        at(0.5),
        at(0.9),
        at(0.99),
        mean
    );
}

/// The floor our overhead is compared with: plain wasmtime, same engine settings (async, epoch interruption, the
/// same allocator), instantiating an empty component in a fresh store and calling its one export.
async fn bare(allocator: Allocator) -> anyhow::Result<Vec<Duration>> {
    let mut config = wasmtime::Config::new();
    config.epoch_interruption(true);
    if allocator == Allocator::Pooling {
        config.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(
            wasmtime::PoolingAllocationConfig::new(),
        ));
    }
    let engine = wasmtime::Engine::new(&config).map_err(anyhow::Error::from)?;
    let component = wasmtime::component::Component::new(
        &engine,
        wat::parse_str(
            r#"(component
                (core module $m (func (export "f")))
                (core instance $i (instantiate $m))
                (func (export "run") (canon lift (core func $i "f"))))"#,
        )?,
    )
    .map_err(anyhow::Error::from)?;
    let linker = wasmtime::component::Linker::<()>::new(&engine);
    let pre = linker
        .instantiate_pre(&component)
        .map_err(anyhow::Error::from)?;
    let call = async || -> anyhow::Result<()> {
        let mut store = fresh_store(&engine, ());
        let instance = pre
            .instantiate_async(&mut store)
            .await
            .map_err(anyhow::Error::from)?;
        let run = instance
            .get_typed_func::<(), ()>(&mut store, "run")
            .map_err(anyhow::Error::from)?;
        run.call_async(&mut store, ())
            .await
            .map_err(anyhow::Error::from)?;
        Ok(())
    };
    timed(call).await
}

/// The store data of [`bare_same_component`]: a WASI context (built per call, with nothing granted, as wasmtime's
/// builder makes it) and its resource table.
struct Bare {
    wasi: wasmtime_wasi::WasiCtx,
    table: wasmtime::component::ResourceTable,
}

impl wasmtime_wasi::WasiView for Bare {
    fn ctx(&mut self) -> wasmtime_wasi::WasiCtxView<'_> {
        wasmtime_wasi::WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// The `call-context` resource of the bare baseline.
struct BareContext;

/// The contract's `reconcile-error`, as the bare baseline reads `reconcile`'s answer.
#[derive(wasmtime::component::ComponentType, wasmtime::component::Lift)]
#[component(variant)]
enum ReconcileError {
    #[component(name = "transient")]
    Transient(String),
    #[component(name = "permanent")]
    Permanent(String),
}

/// wasmtime's floor for *our* component: the same noop guest on the host's own engine (same configuration and
/// allocator), pre-instantiated once, then per call a fresh store with a minimal WASI context, an instance, and
/// `reconcile` called with a `call-context` whose `object` copies the same 10 KiB object in and whose
/// `requeue-after` is accepted. The contract's other imports trap (the noop guest calls none of them). No
/// grants, budgets, limits, call hooks, stdio capture, permits, spans or output collection: what the host adds
/// on top of this is its overhead.
async fn bare_same_component(
    engine: &wasmtime::Engine,
    wasm: &[u8],
    object: &CallObject,
) -> anyhow::Result<Vec<Duration>> {
    use wasmtime::component::{Component, Linker, Resource, ResourceType};
    let component = Component::new(engine, wasm).map_err(anyhow::Error::from)?;
    let mut linker = Linker::<Bare>::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(anyhow::Error::from)?;
    {
        let mut context = linker
            .instance("omni:operator/context@0.1.0")
            .map_err(anyhow::Error::from)?;
        context
            .resource(
                "call-context",
                ResourceType::host::<BareContext>(),
                |_, _| Ok(()),
            )
            .map_err(anyhow::Error::from)?;
        let json: Arc<str> = Arc::from(object.json());
        context
            .func_wrap(
                "[method]call-context.object",
                move |_, (_this,): (Resource<BareContext>,)| Ok((json.to_string(),)),
            )
            .map_err(anyhow::Error::from)?;
        context
            .func_wrap(
                "[method]call-context.requeue-after",
                |_, (_this, _ms): (Resource<BareContext>, u64)| Ok(()),
            )
            .map_err(anyhow::Error::from)?;
    }
    linker
        .define_unknown_imports_as_traps(&component)
        .map_err(anyhow::Error::from)?;
    let pre = linker
        .instantiate_pre(&component)
        .map_err(anyhow::Error::from)?;
    let call = async || -> anyhow::Result<()> {
        let bare = Bare {
            wasi: wasmtime_wasi::WasiCtx::builder().build(),
            table: wasmtime::component::ResourceTable::new(),
        };
        let mut store = fresh_store(engine, bare);
        let instance = pre
            .instantiate_async(&mut store)
            .await
            .map_err(anyhow::Error::from)?;
        let interface = instance
            .get_export_index(&mut store, None, "omni:operator/reconciler@0.1.0")
            .context("the reconciler export")?;
        let index = instance
            .get_export_index(&mut store, Some(&interface), "reconcile")
            .context("the reconcile export")?;
        let reconcile = instance
            .get_typed_func::<(Resource<BareContext>,), (Result<(), ReconcileError>,)>(
                &mut store, index,
            )
            .map_err(anyhow::Error::from)?;
        let (answer,) = reconcile
            .call_async(&mut store, (Resource::new_borrow(0),))
            .await
            .map_err(anyhow::Error::from)?;
        answer.map_err(|e| match e {
            ReconcileError::Transient(m) | ReconcileError::Permanent(m) => {
                anyhow::anyhow!("reconcile answered an error: {m}")
            }
        })
    };
    timed(call).await
}

/// A store for one call, with the host's epoch settings (one tick, then yield and extend).
fn fresh_store<T: 'static>(engine: &wasmtime::Engine, data: T) -> wasmtime::Store<T> {
    let mut store = wasmtime::Store::new(engine, data);
    store.set_epoch_deadline(1);
    store.epoch_deadline_async_yield_and_update(1);
    store
}

/// `call` run WARMUP times, then ITERATIONS times timed; the times, sorted.
async fn timed(mut call: impl AsyncFnMut() -> anyhow::Result<()>) -> anyhow::Result<Vec<Duration>> {
    for _ in 0..WARMUP {
        call().await?;
    }
    let mut samples = Vec::with_capacity(ITERATIONS);
    for _ in 0..ITERATIONS {
        let started = Instant::now();
        call().await?;
        samples.push(started.elapsed());
    }
    samples.sort();
    Ok(samples)
}

fn median(samples: &[Duration]) -> f64 {
    samples[samples.len() / 2].as_secs_f64()
}

async fn bench(allocator: Allocator) -> anyhow::Result<()> {
    let cache_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-plugin-cache");
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(cache_dir),
        allocator,
        ..RuntimeConfig::default()
    })?;
    let object = object_10k();
    let config_map = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "settings" }, "data": { "a": "b" } });
    let services = HostServices::default()
        .with_kube(Arc::new(OneConfigMap(config_map)))
        .with_clock(Arc::new(FixedClock::at_unix(1_795_331_823)));

    let noop = runtime
        .load(PluginSpec::new("noop", guests::wasm("noop")))
        .await?;
    let echo = runtime
        .load(
            PluginSpec::new("echo", guests::wasm("echo"))
                .grants(Grants::parse(["kube-read:core/ConfigMap", "clock"])?),
        )
        .await?;

    let allocator = format!("{:?}", runtime.allocator());
    println!(
        "allocator: {allocator}; object: {} bytes; {ITERATIONS} calls after {WARMUP} warm-up",
        object.json().len()
    );
    let floor = bare(runtime.allocator()).await?;
    report(
        "bare wasmtime: instantiate + call an empty component",
        &floor,
    );
    let same = bare_same_component(runtime.engine(), &guests::wasm("noop"), &object).await?;
    report(
        "bare wasmtime: the noop guest, minimal WASI, same object",
        &same,
    );
    let overhead = measure(&noop, &object, &services).await;
    report(
        "overhead: noop reconcile (object copied in, 1 output)",
        &overhead,
    );
    println!(
        "{:<58} {:.2}× (target ≤ 1.5×)",
        "full call / bare wasmtime, same component (medians)",
        median(&overhead) / median(&same)
    );
    println!(
        "{:<58} {:.2}× (target ≤ 3×)",
        "full call / bare wasmtime, empty component (medians)",
        median(&overhead) / median(&floor)
    );
    report(
        "echo reconcile (parses the object, kube-read, clock, 5 outputs)",
        &measure(&echo, &object, &services).await,
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    tokio.block_on(async {
        bench(Allocator::Pooling).await?;
        bench(Allocator::OnDemand).await
    })
}
