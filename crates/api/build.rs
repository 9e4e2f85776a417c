//! Compiles the public API with protox (pure Rust, no protoc) and exports the file
//! descriptor set for gRPC server reflection.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto");
    let files = [
        root.join("hypersaga/v1/clusters.proto"),
        root.join("hypersaga/v1/admin.proto"),
        root.join("hypersaga/v1/addons.proto"),
    ];
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    let fds = protox::compile(&files, [&root])?;
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out.join("hypersaga_descriptor.bin"),
        prost::Message::encode_to_vec(&fds),
    )?;
    // A request that does not decode is INVALID_ARGUMENT, not INTERNAL (see `codec.rs`).
    tonic_prost_build::configure()
        .codec_path("crate::codec::StrictCodec")
        .compile_fds(fds)?;
    Ok(())
}
