//! Building a `kube::Client` for the management cluster and classifying its errors.
//!
//! The classification is deliberately independent of hypersaga's step envelopes: it says
//! whether retrying later can help and keeps what the API server said (Status `reason`,
//! `message`, field causes), so any caller can turn it into its own error type.

use std::path::{Path, PathBuf};

/// Why a management-cluster client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The given kubeconfig file could not be read or used.
    #[error("kubeconfig {path}: {source}")]
    Kubeconfig {
        path: PathBuf,
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// No configuration could be inferred (no in-cluster environment, no `~/.kube/config`).
    #[error("cannot infer a Kubernetes configuration: {0}")]
    Infer(#[source] kube::config::InferConfigError),
    /// The configuration was read but no client could be built from it (TLS, proxy, auth).
    #[error("cannot build a Kubernetes client: {0}")]
    Client(#[source] kube::Error),
}

/// A client for the management cluster: from `kubeconfig` when given (its current context),
/// else inferred the usual way (in-cluster service account, `$KUBECONFIG`, `~/.kube/config`).
/// Every request is a client span on the API server
/// ([`hypersaga_telemetry::http::ClientSpans`]).
pub async fn client(kubeconfig: Option<&Path>) -> Result<kube::Client, Error> {
    let config = match kubeconfig {
        Some(path) => {
            let err = |source| Error::Kubeconfig {
                path: path.to_owned(),
                source,
            };
            let file = kube::config::Kubeconfig::read_from(path).map_err(err)?;
            kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(err)?
        }
        None => kube::Config::infer().await.map_err(Error::Infer)?,
    };
    let spans = hypersaga_telemetry::http::Endpoint::of_uri(&config.cluster_url)
        .map(hypersaga_telemetry::http::ClientSpans::new);
    let builder = kube::client::ClientBuilder::try_from(config).map_err(Error::Client)?;
    Ok(match spans {
        Some(spans) => builder.with_layer(&spans).build(),
        None => builder.build(),
    })
}

/// A `kube::Error`, classified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Classified {
    /// Whether trying again later can succeed (5xx, 429, 409, timeouts, no connection).
    pub retryable: bool,
    /// The API server's Status `reason` (`Invalid`, `Forbidden`, `Conflict`, …), or a
    /// client-side code (`KubeUnreachable`, `KubeDecode`, `KubeAuth`, `KubeClient`).
    pub code: String,
    /// Status `message`, followed by every field cause as `field: message`.
    pub message: String,
    /// HTTP status, when the API server answered.
    pub http_status: Option<u16>,
    /// `details.retryAfterSeconds`, when the server gave one.
    pub retry_after_s: Option<u32>,
}

/// Whether `err` is the API server answering 404 Not Found.
pub fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 404)
}

/// Classifies a `kube::Error`: API 5xx, 429, 409 Conflict, 408 and 410, and every failure to
/// reach the server are retryable; other 4xx (422 Invalid, 403 Forbidden, 400, 404) are
/// terminal — except a 403 for a namespace that is still being terminated, which resolves
/// itself once the namespace is gone.
pub fn classify(err: &kube::Error) -> Classified {
    match err {
        kube::Error::Api(status) => {
            let code = status.code;
            let terminating = code == 403 && status.message.contains("being terminated");
            let retryable =
                code == 0 || code >= 500 || matches!(code, 408 | 409 | 410 | 429) || terminating;
            let mut message = status.message.clone();
            let mut retry_after_s = None;
            if let Some(details) = &status.details {
                for cause in &details.causes {
                    let text = match (cause.field.is_empty(), cause.message.is_empty()) {
                        (false, false) => format!("{}: {}", cause.field, cause.message),
                        (false, true) => format!("{}: {}", cause.field, cause.reason),
                        (true, _) => cause.message.clone(),
                    };
                    if !text.is_empty() && !message.contains(&text) {
                        message = if message.is_empty() {
                            text
                        } else {
                            format!("{message}; {text}")
                        };
                    }
                }
                retry_after_s =
                    (details.retry_after_seconds > 0).then_some(details.retry_after_seconds);
            }
            let code_str = if terminating {
                "NamespaceTerminating".to_owned()
            } else if status.reason.is_empty() {
                format!("HTTP{code}")
            } else {
                status.reason.clone()
            };
            Classified {
                retryable,
                code: code_str,
                message,
                http_status: (code != 0).then_some(code),
                retry_after_s,
            }
        }
        kube::Error::HyperError(_) | kube::Error::Service(_) | kube::Error::ReadEvents(_) => {
            Classified {
                retryable: true,
                code: "KubeUnreachable".into(),
                message: err.to_string(),
                http_status: None,
                retry_after_s: None,
            }
        }
        kube::Error::SerdeError(_) | kube::Error::FromUtf8(_) => Classified {
            retryable: false,
            code: "KubeDecode".into(),
            message: err.to_string(),
            http_status: None,
            retry_after_s: None,
        },
        kube::Error::Auth(_) => Classified {
            retryable: true,
            code: "KubeAuth".into(),
            message: err.to_string(),
            http_status: None,
            retry_after_s: None,
        },
        _ => Classified {
            retryable: false,
            code: "KubeClient".into(),
            message: err.to_string(),
            http_status: None,
            retry_after_s: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;
    use kube::core::response::{StatusCause, StatusDetails};

    fn api(code: u16, reason: &str, message: &str) -> kube::Error {
        let mut s = Status::failure(message, reason);
        s.code = code;
        kube::Error::Api(Box::new(s))
    }

    #[test]
    fn classifies_api_errors() {
        for code in [500, 503, 429, 409, 408, 410] {
            assert!(classify(&api(code, "X", "m")).retryable, "{code}");
        }
        for code in [400, 403, 404, 422] {
            assert!(!classify(&api(code, "X", "m")).retryable, "{code}");
        }
        let t = classify(&api(
            403,
            "Forbidden",
            "unable to create new content in namespace x because it is being terminated",
        ));
        assert!(t.retryable);
        assert_eq!(t.code, "NamespaceTerminating");
        assert!(is_not_found(&api(404, "NotFound", "gone")));
        assert_eq!(classify(&api(418, "", "")).code, "HTTP418");
    }

    #[test]
    fn keeps_field_causes() {
        let mut s = Status::failure(
            "HostedCluster.hypershift.openshift.io \"x\" is invalid",
            "Invalid",
        );
        s.code = 422;
        s.details = Some(StatusDetails {
            causes: vec![StatusCause {
                reason: "FieldValueRequired".into(),
                message: "Required value".into(),
                field: "spec.platform.azure.vnetID".into(),
            }],
            retry_after_seconds: 0,
            name: "x".into(),
            group: "hypershift.openshift.io".into(),
            kind: "hostedclusters".into(),
            uid: String::new(),
        });
        let c = classify(&kube::Error::Api(Box::new(s)));
        assert!(!c.retryable);
        assert_eq!(c.code, "Invalid");
        assert_eq!(c.http_status, Some(422));
        assert!(
            c.message
                .contains("spec.platform.azure.vnetID: Required value"),
            "{}",
            c.message
        );
    }
}
