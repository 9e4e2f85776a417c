//! `hypersaga`: one binary for the whole system — `dev` runs everything locally, `serve <role>`
//! runs one service, and the client commands talk to the gRPC API.

use std::process::ExitCode;

use clap::Parser;

/// Every service allocates a message's worth of buffers, JSON and headers per step; glibc's
/// malloc spent about a fifth of the engine's CPU on that (`hypersaga bench engine`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    hypersaga_devca::install_crypto_provider();
    let cli = hypersaga::cli::Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            hypersaga::errln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(hypersaga::cli::run(cli)) {
        Ok(code) => code,
        // Its reader gone, the output has no one to tell: end quietly, as Unix tools do.
        Err(e) if hypersaga::console::is_closed(&e) => hypersaga::exit::for_error(&e),
        Err(e) => {
            hypersaga::errln!("error: {e:#}");
            hypersaga::exit::for_error(&e)
        }
    }
}
