//! The crate's error type.

/// Errors from key handling and from publishing to blob storage.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Key generation, parsing or encoding failed.
    #[error("signing key: {0}")]
    Key(String),
    /// PEM text could not be decoded.
    #[error("PEM: {0}")]
    Pem(String),
    /// Blob storage refused or failed a request.
    #[error("blob storage {operation} failed{}: {message}", status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
    Blob {
        /// What was being done (`create container oidc`, `put oidc/openid/v1/jwks`, …).
        operation: String,
        /// HTTP status, when the service answered.
        status: Option<u16>,
        /// Storage error code (`AuthorizationFailure`, …), when given.
        code: Option<String>,
        /// Human-readable detail.
        message: String,
        /// The underlying SDK error.
        #[source]
        source: Option<azure_core::Error>,
    },
    /// Bad configuration (URL, account key, container name).
    #[error("invalid configuration: {0}")]
    Config(String),
}

impl Error {
    /// Whether retrying later could help (storage 5xx/408/429 or no answer at all).
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Blob {
                status: None,
                source: Some(_),
                ..
            } => true,
            Self::Blob {
                status: Some(s), ..
            } => *s >= 500 || *s == 408 || *s == 429,
            _ => false,
        }
    }

    pub(crate) fn blob(operation: impl Into<String>, err: azure_core::Error) -> Self {
        let status = err.http_status().map(u16::from);
        let code = match err.kind() {
            azure_core::error::ErrorKind::HttpResponse { error_code, .. } => error_code.clone(),
            _ => None,
        };
        Self::Blob {
            operation: operation.into(),
            status,
            code,
            message: err.to_string(),
            source: Some(err),
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
