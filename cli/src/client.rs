//! Authenticated `ClusterService`, `AdminService` and `AddonService` clients, and what to
//! tell a user whose client could not reach the API: a transport error names a symptom
//! (`UnknownIssuer`, `operation was canceled`), [`Unreachable`] says what to do about it.

use std::error::Error as StdError;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use hypersaga_api::v1::addon_service_client::AddonServiceClient;
use hypersaga_api::v1::admin_service_client::AdminServiceClient;
use hypersaga_api::v1::cluster_service_client::ClusterServiceClient;
use tonic::metadata::MetadataValue;
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig};

/// Adds `authorization: Bearer <token>` to every call.
#[derive(Clone)]
pub struct BearerAuth(MetadataValue<tonic::metadata::Ascii>);

impl Interceptor for BearerAuth {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        req.metadata_mut().insert("authorization", self.0.clone());
        Ok(req)
    }
}

impl BearerAuth {
    /// `authorization: Bearer <token>`; refused if the token holds what metadata cannot
    /// (the error never quotes the token).
    fn new(token: &str) -> Result<Self, tonic::metadata::errors::InvalidMetadataValue> {
        format!("Bearer {token}").parse().map(BearerAuth)
    }
}

pub type Client = ClusterServiceClient<InterceptedService<Channel, BearerAuth>>;

/// The platform team's API (`hypersaga tenant …`), as the holder of an admin's token.
pub type AdminClient = AdminServiceClient<InterceptedService<Channel, BearerAuth>>;

/// The largest header block (an answer's status, its details in trailers) this client takes.
/// hyper's default, 16 KiB, is less than an `INVALID_ARGUMENT` that quotes a long value: the
/// answer was then dropped and only `h2 protocol error` was left to print.
const MAX_HEADER_LIST_SIZE: u32 = 1024 * 1024;

/// Connects to `server` (`https://…`, or `http://…` for a plaintext test server) as the holder
/// of `token`. Over TLS the server's certificate is checked against `ca` if given (the dev CA),
/// else against the system's roots.
pub async fn connect(server: &str, token: &str, ca: Option<&Path>) -> anyhow::Result<Client> {
    let channel = channel(server, ca).await?;
    let auth =
        BearerAuth::new(token).context("token contains characters not allowed in metadata")?;
    Ok(ClusterServiceClient::with_interceptor(channel, auth))
}

/// Connects to the admin API at `server` (the same address as the cluster API) as the holder
/// of an admin's `token`; the server's certificate is checked as [`connect`] checks it.
pub async fn connect_admin(
    server: &str,
    token: &str,
    ca: Option<&Path>,
) -> anyhow::Result<AdminClient> {
    let auth = BearerAuth::new(token)
        .context("the admin token contains characters not allowed in metadata")?;
    let channel = channel(server, ca).await?;
    Ok(AdminServiceClient::with_interceptor(channel, auth))
}

/// The add-on catalog (`hypersaga addon …`), as a tenant or, for the platform's add-ons,
/// an administrator.
pub type AddonClient = AddonServiceClient<InterceptedService<Channel, BearerAuth>>;

/// Connects to the add-on catalog at `server` (the same address as the cluster API) as the
/// holder of `token` (a tenant's, or an administrator's for the platform's add-ons); the
/// server's certificate is checked as [`connect`] checks it.
pub async fn connect_addons(
    server: &str,
    token: &str,
    ca: Option<&Path>,
) -> anyhow::Result<AddonClient> {
    let auth =
        BearerAuth::new(token).context("token contains characters not allowed in metadata")?;
    let channel = channel(server, ca).await?;
    Ok(AddonServiceClient::with_interceptor(channel, auth))
}

/// A channel to the API at `server`, without a token (health, reflection): TLS for `https://`,
/// checked against `ca` if given, else the system's roots.
pub async fn channel(server: &str, ca: Option<&Path>) -> anyhow::Result<Channel> {
    // A peer that vanished without closing (a host gone, a NAT entry dropped) would leave a
    // watch, or a connection attempt, hanging for ever: pings and a connect timeout turn it
    // into an error, which `--wait` then recovers from.
    let mut endpoint = Channel::from_shared(server.to_owned())
        .map_err(|_| {
            anyhow::anyhow!(
                "{server:?} is not a valid server URL: give one like https://127.0.0.1:50051"
            )
        })?
        .connect_timeout(CONNECT_TIMEOUT)
        .http2_keep_alive_interval(Duration::from_secs(20))
        .keep_alive_timeout(Duration::from_secs(10))
        .keep_alive_while_idle(true)
        .http2_max_header_list_size(MAX_HEADER_LIST_SIZE);
    if server.starts_with("https://") {
        let tls = match ca {
            Some(ca) => {
                let pem = std::fs::read(ca).with_context(|| {
                    format!(
                        "cannot read the CA bundle {} (--ca, $HYPERSAGA_CA or the endpoints file's ca_bundle)",
                        ca.display()
                    )
                })?;
                ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem))
            }
            None => ClientTlsConfig::new().with_native_roots(),
        };
        endpoint = endpoint
            .tls_config(tls)
            .context("cannot set up TLS for the API")?;
    } else if ca.is_some() {
        anyhow::bail!(
            "--ca given, but {server} is not an https:// URL: use https://… to check the server's certificate against it, or drop --ca"
        );
    } else if !server.starts_with("http://") {
        anyhow::bail!(
            "{server:?} is not a valid server URL: it starts with https:// (or http:// for a plaintext test server)"
        );
    }
    endpoint
        .connect()
        .await
        .map_err(|e| anyhow::Error::new(Unreachable::new(server, ca, &e)))
}

/// How long a connection attempt may take before the API counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What kept a call from the API, as far as the transport tells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trouble {
    /// Nothing listens at the address.
    Refused,
    /// No answer to the connection attempt in time.
    TimedOut,
    /// The host name does not resolve.
    NoSuchHost,
    /// The server's certificate is signed by a CA this client was not told to trust.
    UnknownCa,
    /// The certificate does not name the host the URL names.
    WrongName,
    /// The certificate has expired or is not valid yet.
    CertificateDates,
    /// Any other problem with the certificate (rustls' words).
    Certificate(String),
    /// `https://` to a server that does not speak TLS.
    NotTls,
    /// `http://` to a server that speaks TLS only: it hangs up without an answer.
    ExpectsTls,
    /// The connection closed or reset before the answer.
    Broke,
    /// Anything else; the transport's innermost words are kept for the message.
    Other(String),
}

impl Trouble {
    /// Reads the transport's error (and what caused it) for a call to `server`.
    pub fn of(err: &(dyn StdError + 'static), server: &str) -> Trouble {
        let mut found = None;
        for cause in causes(err) {
            if let Some(t) = Self::of_one(cause) {
                found = Some(t);
                // The innermost cause is the most precise (a TLS alert inside a reset).
                if !matches!(found, Some(Trouble::Broke)) {
                    break;
                }
            }
        }
        let trouble = found.unwrap_or_else(|| {
            let innermost = causes(err).last().map(ToString::to_string);
            match innermost {
                Some(s) if looks_broken(&s) => Trouble::Broke,
                Some(s) => Trouble::Other(s),
                None => Trouble::Other(err.to_string()),
            }
        });
        // A TLS server reading an HTTP/2 preface as a bad record answers with an alert and
        // hangs up; what reaches an `http://` client is a closed connection or a frame it
        // cannot parse.
        let plaintext = server.starts_with("http://");
        match trouble {
            Trouble::Broke if plaintext => Trouble::ExpectsTls,
            t => t,
        }
    }

    fn of_one(e: &(dyn StdError + 'static)) -> Option<Trouble> {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(Self::of_tls(tls));
        }
        if e.downcast_ref::<tonic::TimeoutExpired>().is_some() {
            return Some(Trouble::TimedOut);
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            return match io.kind() {
                K::ConnectionRefused => Some(Trouble::Refused),
                K::TimedOut => Some(Trouble::TimedOut),
                K::ConnectionReset
                | K::ConnectionAborted
                | K::BrokenPipe
                | K::UnexpectedEof
                | K::NotConnected => Some(Trouble::Broke),
                _ => None,
            };
        }
        let text = e.to_string();
        if text == "dns error" || text.contains("failed to lookup address") {
            return Some(Trouble::NoSuchHost);
        }
        None
    }

    fn of_tls(e: &rustls::Error) -> Trouble {
        use rustls::CertificateError as C;
        match e {
            rustls::Error::InvalidCertificate(c) => match c {
                // A certificate signed by another CA of the same name (another `hypersaga
                // dev`'s) fails its signature check rather than its issuer look-up.
                C::UnknownIssuer | C::BadSignature => Trouble::UnknownCa,
                C::NotValidForName | C::NotValidForNameContext { .. } => Trouble::WrongName,
                C::Expired
                | C::ExpiredContext { .. }
                | C::NotValidYet
                | C::NotValidYetContext { .. } => Trouble::CertificateDates,
                other => Trouble::Certificate(format!("{other:?}")),
            },
            rustls::Error::InvalidMessage(_) => Trouble::NotTls,
            other => Trouble::Certificate(other.to_string()),
        }
    }
}

/// Words of hyper and h2 for a connection that went away mid-call.
fn looks_broken(text: &str) -> bool {
    [
        "operation was canceled",
        "connection closed",
        "connection reset",
        "broken pipe",
        "h2 protocol error",
        "protocol error",
        "frame with invalid size",
        "connection error",
    ]
    .iter()
    .any(|w| text.to_ascii_lowercase().contains(w))
}

/// `err` and every error that caused it, innermost last. `std::io::Error` hides the error it
/// wraps from `source()` (it answers that error's own source), so it is looked into here:
/// a TLS failure is a `rustls::Error` inside an `io::Error`.
fn causes<'a>(err: &'a (dyn StdError + 'static)) -> Vec<&'a (dyn StdError + 'static)> {
    let mut out = Vec::new();
    let mut next = Some(err);
    while let Some(e) = next {
        out.push(e);
        next = match e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn StdError + 'static)),
            None => e.source(),
        };
        if out.len() > 32 {
            break;
        }
    }
    out
}

/// The API did not answer at all (refused, timed out, TLS failed, hung up): the exit code
/// says so ([`crate::exit::UNREACHABLE`]) apart from the API's own refusals, and the message
/// says what to do, in place of the transport's words.
#[derive(Debug)]
pub struct Unreachable {
    pub server: String,
    /// The CA bundle the certificate was checked against, if one was given.
    pub ca: Option<PathBuf>,
    pub trouble: Trouble,
}

impl Unreachable {
    pub fn new(server: &str, ca: Option<&Path>, err: &(dyn StdError + 'static)) -> Self {
        Self {
            server: server.to_owned(),
            ca: ca.map(Path::to_owned),
            trouble: Trouble::of(err, server),
        }
    }

    /// A failed call's status, if the transport rather than the API made it: tonic gives
    /// such a status the error it came from as its source; the API's own answers have none.
    pub fn of_status(server: &str, ca: Option<&Path>, status: &tonic::Status) -> Option<Self> {
        let source = StdError::source(status)?;
        let mut u = Self::new(server, ca, source);
        if let Trouble::Other(_) = u.trouble
            && looks_broken(status.message())
        {
            u.trouble = if server.starts_with("http://") {
                Trouble::ExpectsTls
            } else {
                Trouble::Broke
            };
        }
        Some(u)
    }
}

impl std::fmt::Display for Unreachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let server = &self.server;
        let host = server
            .split("://")
            .nth(1)
            .unwrap_or(server)
            .split(['/', ':'])
            .next()
            .unwrap_or_default();
        let dev_ca = "for `hypersaga dev`: <state-dir>/ca.pem, the endpoints file's ca_bundle";
        match &self.trouble {
            Trouble::Refused => write!(
                f,
                "nothing answers at {server} (connection refused): is the system running \
                 (`hypersaga dev`, or the gateway), and is this its address? `hypersaga dev` \
                 prints its gRPC API in its banner"
            ),
            Trouble::TimedOut => write!(
                f,
                "{server} did not answer within {} s: check the address, and that nothing \
                 (a firewall, a proxy) drops the connection",
                CONNECT_TIMEOUT.as_secs()
            ),
            Trouble::NoSuchHost => write!(
                f,
                "cannot resolve the host {host:?} of {server}: check the server URL (--server, \
                 $HYPERSAGA_SERVER)"
            ),
            Trouble::UnknownCa => match &self.ca {
                Some(ca) => write!(
                    f,
                    "the certificate of {server} is not signed by the CA in {}: pass the CA \
                     bundle that signed it with --ca FILE ({dev_ca})",
                    ca.display()
                ),
                None => write!(
                    f,
                    "the certificate of {server} is not signed by a CA this machine trusts: \
                     pass the CA bundle that signed it with --ca FILE ({dev_ca})"
                ),
            },
            Trouble::WrongName => write!(
                f,
                "the certificate of {server} is not valid for {host:?}: use a host name it \
                 names in the URL (`hypersaga dev`'s: 127.0.0.1 or localhost)"
            ),
            Trouble::CertificateDates => write!(
                f,
                "the certificate of {server} has expired or is not valid yet: renew it, or \
                 check this machine's clock"
            ),
            Trouble::Certificate(why) => write!(
                f,
                "the TLS handshake with {server} failed ({why}): check the server's \
                 certificate and the CA bundle (--ca)"
            ),
            Trouble::NotTls => write!(
                f,
                "{server} does not speak TLS: if it is a plaintext server, use http://{}",
                server.trim_start_matches("https://")
            ),
            Trouble::ExpectsTls => write!(
                f,
                "{server} hung up without an answer: it probably speaks TLS only (the \
                 gateway of `hypersaga dev` does): use https://{} with --ca FILE ({dev_ca})",
                server.trim_start_matches("http://")
            ),
            Trouble::Broke => write!(
                f,
                "the connection to {server} closed before the answer: try again; if it keeps \
                 happening, see the gateway's log"
            ),
            Trouble::Other(why) => write!(f, "cannot reach the hypersaga API at {server} ({why})"),
        }
    }
}

impl StdError for Unreachable {}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error in the way tonic wraps one: a message, and the cause as its source.
    #[derive(Debug)]
    struct Wrapped(&'static str, Box<dyn StdError + Send + Sync>);
    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }
    impl StdError for Wrapped {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&*self.1)
        }
    }

    fn tls(e: rustls::Error) -> Wrapped {
        Wrapped(
            "transport error",
            Box::new(std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
        )
    }

    fn message(server: &str, ca: Option<&str>, err: &(dyn StdError + 'static)) -> String {
        Unreachable::new(server, ca.map(Path::new), err).to_string()
    }

    #[test]
    fn each_transport_failure_says_what_to_do() {
        let refused = Wrapped(
            "tcp connect error",
            Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)),
        );
        let unknown_ca = tls(rustls::Error::InvalidCertificate(
            rustls::CertificateError::UnknownIssuer,
        ));
        let wrong_name = tls(rustls::Error::InvalidCertificate(
            rustls::CertificateError::NotValidForName,
        ));
        let not_tls = tls(rustls::Error::InvalidMessage(
            rustls::InvalidMessage::InvalidContentType,
        ));
        let cases: [(&str, Option<&str>, &dyn StdError, &str); 6] = [
            (
                "https://127.0.0.1:1",
                None,
                &refused,
                "is the system running",
            ),
            (
                "https://127.0.0.1:50051",
                None,
                &unknown_ca,
                "not signed by a CA this machine trusts: pass the CA bundle that signed it with --ca FILE",
            ),
            (
                "https://127.0.0.1:50051",
                Some("/tmp/other.pem"),
                &unknown_ca,
                "not signed by the CA in /tmp/other.pem",
            ),
            (
                "https://example.test:50051",
                None,
                &wrong_name,
                "not valid for \"example.test\"",
            ),
            (
                "https://127.0.0.1:8080",
                None,
                &not_tls,
                "does not speak TLS: if it is a plaintext server, use http://127.0.0.1:8080",
            ),
            (
                "http://127.0.0.1:50051",
                None,
                &Wrapped(
                    "operation was canceled",
                    "connection closed before message completed".into(),
                ),
                "use https://127.0.0.1:50051 with --ca FILE",
            ),
        ];
        for (server, ca, err, expected) in cases {
            let shown = message(server, ca, err);
            assert!(
                shown.contains(expected),
                "{server}: {shown:?} lacks {expected:?}"
            );
            assert!(!shown.contains("transport error"), "{shown}");
        }
    }

    #[test]
    fn a_status_the_api_sent_is_not_a_transport_failure() {
        let from_api = tonic::Status::cancelled("operation was canceled");
        assert!(Unreachable::of_status("http://x:1", None, &from_api).is_none());
        let from_transport = tonic::Status::from_error(Box::new(Wrapped(
            "operation was canceled",
            "connection closed before message completed".into(),
        )));
        let u = Unreachable::of_status("http://127.0.0.1:50051", None, &from_transport)
            .expect("a transport failure");
        assert_eq!(u.trouble, Trouble::ExpectsTls);
    }

    /// Real servers on loopback: the dev CA's TLS server and a plaintext one.
    #[tokio::test]
    async fn real_connections_fail_with_the_right_advice() {
        hypersaga_devca::install_crypto_provider();
        let ca = hypersaga_devca::DevCa::generate().expect("CA");
        let cert = ca.issue_loopback_cert().expect("cert");
        let stop = tokio_util::sync::CancellationToken::new();
        let served =
            hypersaga_devca::serve_loopback(axum::Router::new(), axum::Router::new(), &cert, &stop)
                .await
                .expect("serve");
        let tls_url = served.url.clone();
        let plain_url = served.admin_url.clone();
        let dir = tempfile::tempdir().expect("tempdir");
        let other_ca = dir.path().join("other.pem");
        let other = hypersaga_devca::DevCa::generate().expect("CA");
        std::fs::write(&other_ca, other.cert_pem()).expect("write");

        // What a connection attempt that must fail failed of.
        let trouble = |r: anyhow::Result<Client>| match r.map_err(|e| e.downcast::<Unreachable>()) {
            Err(Ok(u)) => u.trouble,
            Err(Err(e)) => panic!("not an Unreachable: {e:#}"),
            Ok(_) => panic!("connected"),
        };
        assert_eq!(
            trouble(connect(&tls_url, "t", None).await),
            Trouble::UnknownCa
        );
        assert_eq!(
            trouble(connect(&tls_url, "t", Some(&other_ca)).await),
            Trouble::UnknownCa
        );
        let https_to_plain = plain_url.replacen("http://", "https://", 1);
        assert_eq!(
            trouble(connect(&https_to_plain, "t", None).await),
            Trouble::NotTls
        );
        let free = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = free.local_addr().expect("addr").port();
        drop(free);
        let nobody = format!("https://127.0.0.1:{port}");
        assert_eq!(trouble(connect(&nobody, "t", None).await), Trouble::Refused);

        // http:// to the TLS server: the connection is made; the call finds the hang-up.
        let http_to_tls = tls_url.replacen("https://", "http://", 1);
        let mut c = connect(&http_to_tls, "t", None)
            .await
            .expect("a plaintext connection is made");
        let status = c
            .list_clusters(hypersaga_api::v1::ListClustersRequest::default())
            .await
            .expect_err("a TLS server answers no plaintext call");
        let u = Unreachable::of_status(&http_to_tls, None, &status).expect("transport");
        assert_eq!(u.trouble, Trouble::ExpectsTls, "{status:?}");
        stop.cancel();
    }
}
