//! What can go wrong on a tenant administrator's session, keeping each service's own code and
//! message: the caller (`hypersaga dev`, a test) shows them as the portal would, and tells a
//! refusal worth waiting out (Entra's replication, throttling) from one that is final.

use std::time::Duration;

/// A tenant administrator's operation failed.
#[derive(Debug, thiserror::Error)]
pub enum TenantAdminError {
    /// An argument no service would accept (a blank name, a base URL that is not one).
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// The CA bundle is not PEM, or holds no certificate.
    #[error("CA bundle: {0}")]
    Ca(String),
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client")]
    Client(#[source] reqwest::Error),
    /// The request never got an answer (connection refused, TLS, timeout).
    #[error("{method} {url}: no answer")]
    Transport {
        method: String,
        url: String,
        #[source]
        source: reqwest::Error,
    },
    /// Entra's token endpoint refused (`error`, the first of `error_codes`, `error_description`
    /// which starts `AADSTS{code}:`).
    #[error("Entra refused a token for {scope}: {status} {error}: {description}")]
    Entra {
        scope: String,
        status: u16,
        error: String,
        code: Option<u64>,
        description: String,
    },
    /// Microsoft Graph refused (`error.code`, `error.message`, and `error.details[0].code`
    /// where Graph names the cause, e.g. `NoBackingApplicationObject`).
    #[error("Graph {method} {path}: {status} {code}: {message}")]
    Graph {
        method: String,
        path: String,
        status: u16,
        code: String,
        detail: Option<String>,
        message: String,
    },
    /// ARM refused (`error.code`, `error.message`).
    #[error("ARM {method} {path}: {status} {code}: {message}")]
    Arm {
        method: String,
        path: String,
        status: u16,
        code: String,
        message: String,
    },
    /// An answer that is not what the service sends (not JSON, a field missing).
    #[error("{url} answered {status}, not as expected: {reason}")]
    Unexpected {
        url: String,
        status: u16,
        reason: String,
    },
    /// More than one app has the display name, so none can be adopted safely.
    #[error("{} apps are named '{display_name}' ({}); remove all but one", app_ids.len(), app_ids.join(", "))]
    AmbiguousApp {
        display_name: String,
        app_ids: Vec<String>,
    },
    /// A federated credential named as onboarding names it trusts something else (another
    /// issuer, subject or audience): it is left alone rather than silently replaced.
    #[error(
        "the app's federated credential '{name}' trusts issuer '{issuer}', subject '{subject}'; \
         delete it (delete_federated_credentials) to onboard again"
    )]
    CredentialMismatch {
        name: String,
        issuer: String,
        subject: String,
    },
    /// A refusal that should pass (replication, throttling) still came after `waited`.
    #[error("{what}: still refused after {waited:?}")]
    Timeout {
        what: String,
        waited: Duration,
        #[source]
        last: Box<TenantAdminError>,
    },
}

impl TenantAdminError {
    /// Whether waiting may change the answer: Entra has not replicated an object yet
    /// (Graph's `NoBackingApplicationObject`, a `404` on an object just made, ARM's
    /// `PrincipalNotFound`; Entra's 700016, 7000229, 70021), throttling, a server error, or no
    /// answer at all.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Transport { .. } => true,
            Self::Graph {
                status,
                code,
                detail,
                ..
            } => {
                *status == 429
                    || *status >= 500
                    || detail.as_deref() == Some("NoBackingApplicationObject")
                    || code == "Request_ResourceNotFound"
            }
            Self::Arm { status, code, .. } => {
                *status == 429 || *status >= 500 || code == "PrincipalNotFound"
            }
            Self::Entra { status, code, .. } => {
                *status == 429 || *status >= 500 || matches!(code, Some(700016 | 7000229 | 70021))
            }
            _ => false,
        }
    }

    /// The AADSTS code of an Entra refusal.
    pub fn aadsts(&self) -> Option<u64> {
        match self {
            Self::Entra { code, .. } => *code,
            _ => None,
        }
    }

    /// Graph's or ARM's `error.code`, or Entra's `error`.
    pub fn code(&self) -> Option<&str> {
        match self {
            Self::Graph { code, .. } | Self::Arm { code, .. } => Some(code),
            Self::Entra { error, .. } => Some(error),
            _ => None,
        }
    }
}
