//! Host-side bindings of the plugin contract (`wit/omni-operator.wit`, world `reconcile-plugin`).
//!
//! Imports are async (host I/O never blocks a thread) and trappable (a host function can abort the call, as
//! output bounds do); exports are async so calls can yield at epoch ticks and be cancelled by the deadline.
//! `host-error` is trappable as [`crate::contract::HostFailure`].

wasmtime::component::bindgen!({
    path: "../wit",
    world: "reconcile-plugin",
    imports: { default: async | trappable },
    exports: { default: async },
    // Capability functions return `Result<T, HostFailure>` and use `?`: a `HostError` is the plugin's answer, any
    // other error a trap that ends the call.
    trappable_error_type: {
        "omni:operator/types.host-error" => crate::contract::HostFailure,
    },
    with: {
        "omni:operator/context.call-context": crate::contract::CallContext,
    },
});
