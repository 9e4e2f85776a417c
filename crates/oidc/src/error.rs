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
        let said = err.to_string();
        Self::Blob {
            operation: operation.into(),
            status,
            code,
            message: storage_message(&said).unwrap_or(&said).to_owned(),
            source: Some(err),
        }
    }
}

/// Storage's own words in an error answer (the first line of `<Message>` in its XML body,
/// without the request id and time that follow), rather than the whole body.
fn storage_message(said: &str) -> Option<&str> {
    let start = said.find("<Message>")? + "<Message>".len();
    let rest = &said[start..];
    let end = rest.find(['\n', '<']).unwrap_or(rest.len());
    Some(rest[..end].trim()).filter(|m| !m.is_empty())
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    #[test]
    fn storage_errors_are_told_in_storages_words() {
        let body = "403: \u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>AuthorizationPermissionMismatch</Code><Message>This request is not authorized to perform this operation using this permission.\nRequestId:9661e111\nTime:2026-11-26T14:43:26Z</Message></Error>";
        assert_eq!(
            super::storage_message(body),
            Some("This request is not authorized to perform this operation using this permission.")
        );
        assert_eq!(super::storage_message("connection refused"), None);
    }
}
