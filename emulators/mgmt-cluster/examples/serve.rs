//! Runs the emulator for poking by hand:
//! `cargo run -p hypersaga-emulator-mgmt --example serve -- /tmp/mgmt.kubeconfig`
//! then `kubectl --kubeconfig /tmp/mgmt.kubeconfig get hc -A`. Admin API on the printed URL.

use hypersaga_emulator_mgmt::{Config, Emulator, kubeconfig_yaml};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    hypersaga_devca::install_crypto_provider();
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "mgmt.kubeconfig".into());
    let emulator = Emulator::new(Config::default());
    let ca = hypersaga_devca::DevCa::generate()?;
    let cert = ca.issue_loopback_cert()?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let url = format!("https://127.0.0.1:{}", listener.local_addr()?.port());
    std::fs::write(
        &path,
        kubeconfig_yaml(&url, ca.cert_pem(), &emulator.config().token),
    )?;
    let admin = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!(
        "api {url}\nadmin http://{}\nkubeconfig {path}",
        admin.local_addr()?
    );
    let admin_router = emulator.admin_router();
    tokio::spawn(async move { axum::serve(admin, admin_router).await });
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    hypersaga_devca::serve_tls(listener, emulator.router(), &cert, shutdown).await?;
    Ok(())
}
