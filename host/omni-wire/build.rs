//! Compiles `proto/` with protox (a pure-Rust protobuf compiler, so no system `protoc` is needed) and generates
//! prost messages plus tonic clients and servers: the host uses the clients, the Omni simulator the servers.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = [
        "proto/v1alpha1/resource.proto",
        "proto/v1alpha1/state.proto",
        "proto/management/management.proto",
        "proto/omni/specs/omni.proto",
    ];
    for file in &files {
        println!("cargo:rerun-if-changed={file}");
    }
    let descriptors = protox::compile(files, ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .build_transport(false)
        .compile_fds(descriptors)?;
    Ok(())
}
