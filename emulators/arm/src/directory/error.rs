//! Why the directory refuses a write. Graph words these for its callers (`crate::graph`); the
//! directory only says which rule was broken.

/// A federated identity credential the app cannot take.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CredentialError {
    /// The app already has [`super::MAX_CREDENTIALS_PER_APP`] credentials.
    #[error("the application already has {0} federated identity credentials")]
    TooMany(usize),
    /// Another credential of the app has this name (names compare ignoring case).
    #[error("a federated identity credential named '{0}' already exists")]
    DuplicateName(String),
    /// Another credential of the app trusts this issuer for this subject.
    #[error("issuer '{issuer}' and subject '{subject}' are already trusted")]
    DuplicateIssuerSubject { issuer: String, subject: String },
}

/// A service principal the directory cannot make.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PrincipalError {
    /// No app registration with this `appId` that Graph's replica can see yet.
    #[error("no application with appId '{0}'")]
    NoBackingApplication(String),
    /// The app already has its service principal in this directory.
    #[error("the service principal of '{0}' already exists")]
    Exists(String),
}
