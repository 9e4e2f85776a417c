//! Blob storage failures as step errors.

use hypersaga_bus::StepError;

/// A blob-storage (or key) failure as a [`StepError`]: the storage error code is kept,
/// retryable when storage says so (5xx, 408, 429, no answer).
pub(crate) fn step_error(e: hypersaga_oidc::Error) -> StepError {
    let code = match &e {
        hypersaga_oidc::Error::Blob { code: Some(c), .. } => c.clone(),
        hypersaga_oidc::Error::Blob { .. } => "BlobStorageError".to_owned(),
        hypersaga_oidc::Error::Key(_) => "SigningKeyError".to_owned(),
        hypersaga_oidc::Error::Pem(_) => "SigningKeyUnreadable".to_owned(),
        hypersaga_oidc::Error::Config(_) => "BlobStorageMisconfigured".to_owned(),
        _ => "OidcError".to_owned(),
    };
    if e.is_retryable() {
        StepError::retryable(code, e.to_string())
    } else {
        StepError::terminal(code, e.to_string())
    }
}
