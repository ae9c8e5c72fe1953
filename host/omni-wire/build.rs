//! Compiles `proto/` with protox (a pure-Rust protobuf compiler, so no system `protoc` is needed) and generates
//! prost messages plus tonic clients and servers: the host uses the clients, the Omni simulator the servers. The
//! encoded descriptor set is written beside them.

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
    // The descriptors themselves, for whoever needs the messages' shape at run time (the Omni simulator renders
    // `yaml_spec` from them, in the field order Go's generated structs have).
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out.join("omni_wire_descriptors.bin"),
        prost::Message::encode_to_vec(&descriptors),
    )?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .build_transport(false)
        .compile_fds(descriptors)?;
    Ok(())
}
