//! Compiles Omni's spec messages (`specs` package) from the host's `.proto` subset with protox: the guest encodes
//! the same messages the host and the simulator decode, and no system `protoc` is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = "../../host/omni-wire/proto";
    let file = format!("{root}/omni/specs/omni.proto");
    println!("cargo:rerun-if-changed={file}");
    let descriptors = protox::compile([file.as_str()], [root])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}
