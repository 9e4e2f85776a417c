//! A throw-away certificate authority for the local stand-ins.
//!
//! `azure_identity` refuses an `http` authority and `azure_core` refuses to send a bearer token
//! to a non-`https` URL, so the ARM/Entra emulator and the management-cluster emulator must
//! speak TLS. `hypersaga dev` generates one CA per state directory, writes its PEM as the CA
//! bundle every client trusts, and issues a leaf certificate for `localhost`/`127.0.0.1` to
//! each emulator.
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::{future::Future, io};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Errors from generating or loading certificates.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("certificate generation failed")]
    Generate(#[from] rcgen::Error),
    #[error("TLS configuration is invalid")]
    Tls(#[from] rustls::Error),
    #[error("PEM material is invalid")]
    Pem(#[from] rustls::pki_types::pem::Error),
    #[error("I/O error")]
    Io(#[from] io::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A generated certificate authority: its certificate (the CA bundle clients trust) and the
/// key that signs leaf certificates.
pub struct DevCa {
    params: CertificateParams,
    key: KeyPair,
    cert_pem: String,
}

/// A leaf certificate and its private key, both PEM.
#[derive(Clone)]
pub struct ServerCert {
    pub cert_pem: String,
    pub key_pem: String,
}

impl DevCa {
    /// Generates a new CA valid for ten years.
    pub fn generate() -> Result<Self> {
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "hypersaga dev CA");
        dn.push(DnType::OrganizationName, "hypersaga");
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params.not_after = time_in_years(10);
        let key = KeyPair::generate()?;
        let cert = params.self_signed(&key)?;
        Ok(Self {
            cert_pem: cert.pem(),
            params,
            key,
        })
    }

    /// The CA certificate (PEM): the bundle clients add to their trust store.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// Issues a server certificate for `names` (DNS names or IP literals).
    pub fn issue_server_cert(&self, names: &[&str]) -> Result<ServerCert> {
        let issuer = Issuer::from_params(&self.params, &self.key);
        let mut params =
            CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>())?;
        let mut dn = DistinguishedName::new();
        dn.push(
            DnType::CommonName,
            names.first().copied().unwrap_or("localhost"),
        );
        params.distinguished_name = dn;
        params.not_after = time_in_years(5);
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &issuer)?;
        Ok(ServerCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// A certificate for the loopback names every local emulator listens on.
    pub fn issue_loopback_cert(&self) -> Result<ServerCert> {
        self.issue_server_cert(&["localhost", "127.0.0.1", "::1"])
    }
}

impl ServerCert {
    /// A rustls server configuration presenting this certificate (HTTP/1.1 and HTTP/2).
    pub fn rustls_server_config(&self) -> Result<Arc<rustls::ServerConfig>> {
        let certs = CertificateDer::pem_slice_iter(self.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()?;
        // A PEM without a key is `pem::Error::NoItemsFound`.
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes())?;
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(certs, key)?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

/// Installs aws-lc-rs as the process-wide rustls provider. kube, async-nats, reqwest and
/// azure_core all use rustls; with more than one provider compiled in, the first TLS call
/// panics unless one is installed. Safe to call more than once.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
}

/// Serves `router` over TLS on an already-bound listener until `shutdown` resolves.
pub async fn serve_tls(
    listener: std::net::TcpListener,
    router: axum::Router,
    cert: &ServerCert,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    listener.set_nonblocking(true)?;
    let config = axum_server::tls_rustls::RustlsConfig::from_config(cert.rustls_server_config()?);
    let handle = axum_server::Handle::new();
    let h = handle.clone();
    tokio::spawn(async move {
        shutdown.await;
        h.graceful_shutdown(Some(std::time::Duration::from_secs(2)));
    });
    axum_server::from_tcp_rustls(listener, config)?
        .handle(handle)
        .serve(router.into_make_service_with_connect_info::<SocketAddr>())
        .await?;
    Ok(())
}

/// An emulator on free loopback ports: its API over TLS, its admin API over plain HTTP.
/// Dropping it stops both.
pub struct Loopback {
    /// The API, `https://127.0.0.1:<port>`.
    pub url: String,
    /// The admin API, `http://127.0.0.1:<port>`.
    pub admin_url: String,
    _stop: tokio_util::sync::DropGuard,
}

/// Serves an emulator's `api` over TLS with `cert` and its `admin` router over plain HTTP,
/// each on a free loopback port, until `shutdown` is cancelled or the returned [`Loopback`] is
/// dropped: what `hypersaga dev` and every emulator-backed test do, in one place. A server
/// that fails later is logged.
pub async fn serve_loopback(
    api: axum::Router,
    admin: axum::Router,
    cert: &ServerCert,
    shutdown: &tokio_util::sync::CancellationToken,
) -> Result<Loopback> {
    let stop = shutdown.child_token();
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    let url = format!("https://127.0.0.1:{}", listener.local_addr()?.port());
    let (cert, token) = (cert.clone(), stop.clone());
    tokio::spawn(async move {
        if let Err(e) =
            serve_tls(listener, api, &cert, async move { token.cancelled().await }).await
        {
            tracing::error!(error = %e, "an emulator's TLS server failed");
        }
    });
    let admin_url = serve_http_loopback(admin, &stop).await?;
    Ok(Loopback {
        url,
        admin_url,
        _stop: stop.drop_guard(),
    })
}

/// Serves `router` over plain HTTP on a free loopback port until `stop` is cancelled, and
/// answers its `http://127.0.0.1:<port>` URL. A server that fails later is logged.
pub async fn serve_http_loopback(
    router: axum::Router,
    stop: &tokio_util::sync::CancellationToken,
) -> Result<String> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    let url = format!("http://{}", listener.local_addr()?);
    let token = stop.clone();
    tokio::spawn(async move {
        let served = axum::serve(listener, router)
            .with_graceful_shutdown(async move { token.cancelled().await })
            .await;
        if let Err(e) = served {
            tracing::error!(error = %e, "a loopback HTTP server failed");
        }
    });
    Ok(url)
}

fn time_in_years(years: i64) -> time::OffsetDateTime {
    time::OffsetDateTime::now_utc() + time::Duration::days(365 * years)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The issued PEM parses back (rustls-pki-types' PEM reader) into a server configuration
    /// that presents the certificate, and a PEM holding no key is refused rather than served.
    #[test]
    fn issued_certificate_loads_and_a_keyless_pem_is_refused() {
        let ca = DevCa::generate().expect("CA");
        let cert = ca.issue_loopback_cert().expect("leaf");
        let config = cert.rustls_server_config().expect("server config");
        assert_eq!(
            config.alpn_protocols,
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );

        let keyless = ServerCert {
            cert_pem: cert.cert_pem.clone(),
            key_pem: cert.cert_pem.clone(),
        };
        match keyless.rustls_server_config() {
            Err(Error::Pem(rustls::pki_types::pem::Error::NoItemsFound)) => {}
            Err(other) => panic!("expected NoItemsFound, got {other:?}"),
            Ok(_) => panic!("a PEM without a private key was accepted"),
        }
    }
}
