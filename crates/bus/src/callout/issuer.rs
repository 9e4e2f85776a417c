//! The account key that signs the callout's answers. The server trusts answers signed by the
//! public key its configuration names (`auth_callout { issuer }`), so whoever holds the seed
//! decides who connects: it is generated with the roles' credentials and given to the callout
//! service only.

use std::path::Path;

use nkeys::{KeyPair, KeyPairType};

/// Where the issuer's seed is kept among the roles' credentials (`<dir>/callout-issuer.nk`).
pub const ISSUER_FILE: &str = "callout-issuer.nk";

/// Why an issuer key cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum IssuerError {
    #[error("cannot read the callout issuer's seed at {path}")]
    Read {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the callout issuer's seed is not an nkey seed")]
    Seed(#[source] nkeys::error::Error),
    #[error("the callout issuer must be an account key (`SA…`), not a {0:?} key")]
    NotAnAccount(KeyPairType),
}

/// An account keypair that signs authorization responses and the user JWTs in them.
pub struct Issuer(KeyPair);

impl Issuer {
    /// A new issuer, for `hypersaga bus credentials` and `hypersaga dev`.
    pub fn generate() -> Self {
        Self(KeyPair::new_account())
    }

    /// The issuer of `seed` (`SA…`).
    pub fn from_seed(seed: &str) -> Result<Self, IssuerError> {
        KeyPair::from_seed(seed.trim())
            .map_err(IssuerError::Seed)?
            .try_into()
    }

    /// The issuer kept with the roles' credentials in `dir` ([`ISSUER_FILE`]).
    pub fn load(dir: &Path) -> Result<Self, IssuerError> {
        let path = dir.join(ISSUER_FILE);
        let seed =
            std::fs::read_to_string(&path).map_err(|source| IssuerError::Read { path, source })?;
        Self::from_seed(&seed)
    }

    /// What the server's configuration names (`A…`).
    pub fn public_key(&self) -> String {
        self.0.public_key()
    }

    /// The secret seed, to be written owner-only next to the roles' credentials.
    pub fn seed(&self) -> Result<String, IssuerError> {
        self.0.seed().map_err(IssuerError::Seed)
    }

    pub(crate) fn key(&self) -> &KeyPair {
        &self.0
    }
}

impl TryFrom<KeyPair> for Issuer {
    type Error = IssuerError;

    fn try_from(key: KeyPair) -> Result<Self, Self::Error> {
        match key.key_pair_type() {
            KeyPairType::Account => Ok(Self(key)),
            other => Err(IssuerError::NotAnAccount(other)),
        }
    }
}

impl std::fmt::Debug for Issuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Issuer").field(&self.public_key()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_issuer_is_an_account_key_kept_as_its_seed() {
        let issuer = Issuer::generate();
        assert!(issuer.public_key().starts_with('A'));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(ISSUER_FILE),
            format!("{}\n", issuer.seed().unwrap()),
        )
        .unwrap();
        assert_eq!(
            Issuer::load(dir.path()).unwrap().public_key(),
            issuer.public_key()
        );
        let user = KeyPair::new_user();
        assert!(matches!(
            Issuer::from_seed(&user.seed().unwrap()),
            Err(IssuerError::NotAnAccount(KeyPairType::User))
        ));
        assert!(matches!(
            Issuer::from_seed("not a seed"),
            Err(IssuerError::Seed(_))
        ));
    }
}
