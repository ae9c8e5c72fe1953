//! Host-side bindings of the plugin contract (`wit/omni-operator.wit`, world `reconcile-plugin`).
//!
//! Imports are async (host I/O never blocks a thread) and trappable (a host function can abort the call, as
//! output bounds do); exports are async so calls can yield at epoch ticks and be cancelled by the deadline.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "reconcile-plugin",
    imports: { default: async | trappable },
    exports: { default: async },
    with: {
        "omni:operator/context.call-context": crate::capabilities::CallContext,
    },
});
