//! The service-account signing key of a tenant's issuer.
//!
//! RSA 4096 like `ccoctl azure create-key-pair`, generated with aws-lc-rs (not the `rsa`
//! crate: RUSTSEC-2023-0071). The private key is written as PKCS#1 `RSA PRIVATE KEY`, the
//! exact format ccoctl writes into `serviceaccount-signer.private` and HyperShift's
//! `<NAME>sa-token-issuer-key` Secret carries (its loader also accepts PKCS#8, but matching
//! ccoctl byte-for-byte keeps a hand-made and a hypersaga-made cluster interchangeable).
//! aws-lc-rs only exports PKCS#8, so the PKCS#1 payload is unwrapped from it.

use std::fmt;

use aws_lc_rs::encoding::{AsDer, Pkcs8V1Der, PublicKeyX509Der};
use aws_lc_rs::rsa::{KeyPair, KeySize, PublicKey as RsaPublicKey};
use aws_lc_rs::signature::KeyPair as _;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use crate::der;
use crate::error::{Error, Result};
use crate::pem;

const PKCS1_LABEL: &str = "RSA PRIVATE KEY";
const PKCS8_LABEL: &str = "PRIVATE KEY";
const SPKI_LABEL: &str = "PUBLIC KEY";
const PKCS1_PUBLIC_LABEL: &str = "RSA PUBLIC KEY";

/// An RSA signing key for service-account tokens. `Debug` never prints key material.
pub struct SigningKey {
    pair: KeyPair,
    /// PKCS#1 `RSAPrivateKey` DER, kept because aws-lc-rs cannot re-export it.
    pkcs1: Vec<u8>,
    public: PublicKey,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("kid", &self.kid())
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// Generates a new RSA 4096 key (takes a second or two).
    pub fn generate() -> Result<Self> {
        let pair = KeyPair::generate(KeySize::Rsa4096)
            .map_err(|e| Error::Key(format!("generate: {e}")))?;
        let pkcs8: Pkcs8V1Der<'static> = pair
            .as_der()
            .map_err(|e| Error::Key(format!("export: {e}")))?;
        let pkcs1 = der::pkcs8_to_pkcs1(pkcs8.as_ref())?;
        Self::assemble(pair, pkcs1)
    }

    fn assemble(pair: KeyPair, pkcs1: Vec<u8>) -> Result<Self> {
        let public = PublicKey::from_rsa(pair.public_key())?;
        Ok(Self {
            pair,
            pkcs1,
            public,
        })
    }

    /// Loads a private key PEM: PKCS#1 `RSA PRIVATE KEY` (ccoctl, [`Self::private_key_pem`])
    /// or PKCS#8 `PRIVATE KEY`.
    pub fn from_private_key_pem(text: &str) -> Result<Self> {
        let (label, der) = pem::decode(text)?;
        match label.as_str() {
            PKCS1_LABEL => {
                let pair = KeyPair::from_der(&der)
                    .map_err(|e| Error::Key(format!("PKCS#1 key rejected: {e}")))?;
                Self::assemble(pair, der)
            }
            PKCS8_LABEL => {
                let pair = KeyPair::from_pkcs8(&der)
                    .map_err(|e| Error::Key(format!("PKCS#8 key rejected: {e}")))?;
                let pkcs1 = der::pkcs8_to_pkcs1(&der)?;
                Self::assemble(pair, pkcs1)
            }
            other => Err(Error::Pem(format!(
                "expected an RSA private key, found {other:?}"
            ))),
        }
    }

    /// PKCS#1 PEM (`-----BEGIN RSA PRIVATE KEY-----`), as ccoctl writes it: the value for
    /// HyperShift's `serviceAccountSigningKey` Secret (data key `key`).
    pub fn private_key_pem(&self) -> String {
        pem::encode(PKCS1_LABEL, &self.pkcs1)
    }

    /// The public half.
    pub fn public_key(&self) -> PublicKey {
        self.public.clone()
    }

    /// PKIX PEM (`-----BEGIN PUBLIC KEY-----`), like ccoctl's `serviceaccount-signer.public`.
    pub fn public_key_pem(&self) -> String {
        self.public.pem()
    }

    /// The key id kube-apiserver puts in the tokens it signs with this key.
    pub fn kid(&self) -> String {
        self.public.kid()
    }

    /// RS256 (RSASSA-PKCS1-v1_5 with SHA-256) signature over `message`: what a JWT signer
    /// needs, e.g. an emulator minting service-account tokens.
    pub fn sign_rs256(&self, message: &[u8]) -> Result<Vec<u8>> {
        let mut signature = vec![0u8; self.pair.public_modulus_len()];
        self.pair
            .sign(
                &aws_lc_rs::signature::RSA_PKCS1_SHA256,
                &aws_lc_rs::rand::SystemRandom::new(),
                message,
                &mut signature,
            )
            .map_err(|e| Error::Key(format!("sign: {e}")))?;
        Ok(signature)
    }
}

/// An RSA public key as the issuer publishes it.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    /// DER `SubjectPublicKeyInfo`.
    spki: Vec<u8>,
    /// Modulus, big-endian without leading zero.
    n: Vec<u8>,
    /// Exponent, big-endian without leading zero.
    e: Vec<u8>,
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PublicKey")
            .field("kid", &self.kid())
            .finish()
    }
}

impl PublicKey {
    fn from_rsa(key: &RsaPublicKey) -> Result<Self> {
        let spki: PublicKeyX509Der<'static> = key
            .as_der()
            .map_err(|e| Error::Key(format!("SPKI export: {e}")))?;
        Ok(Self {
            spki: spki.as_ref().to_vec(),
            n: key.modulus().big_endian_without_leading_zero().to_vec(),
            e: key.exponent().big_endian_without_leading_zero().to_vec(),
        })
    }

    /// Parses a PKIX `PUBLIC KEY` or PKCS#1 `RSA PUBLIC KEY` PEM (for an `old-key.pub`
    /// during rotation).
    pub fn from_pem(text: &str) -> Result<Self> {
        let (label, der) = pem::decode(text)?;
        if label != SPKI_LABEL && label != PKCS1_PUBLIC_LABEL {
            return Err(Error::Pem(format!(
                "expected a public key, found {label:?}"
            )));
        }
        let key = RsaPublicKey::from_der(&der)
            .map_err(|e| Error::Key(format!("public key rejected: {e}")))?;
        Self::from_rsa(&key)
    }

    /// PKIX PEM.
    pub fn pem(&self) -> String {
        pem::encode(SPKI_LABEL, &self.spki)
    }

    /// DER `SubjectPublicKeyInfo`.
    pub fn spki_der(&self) -> &[u8] {
        &self.spki
    }

    /// `base64url_nopad(SHA-256(DER SPKI))` — kube-apiserver's `keyIDFromPublicKey`, and what
    /// ccoctl writes into the JWKS. Entra matches token `kid` against it.
    pub fn kid(&self) -> String {
        URL_SAFE_NO_PAD.encode(Sha256::digest(&self.spki))
    }

    /// The JWKS entry: `{"use":"sig","kty":"RSA","kid","alg":"RS256","n","e"}`.
    pub fn jwk(&self) -> serde_json::Value {
        serde_json::json!({
            "use": "sig",
            "kty": "RSA",
            "kid": self.kid(),
            "alg": "RS256",
            "n": URL_SAFE_NO_PAD.encode(&self.n),
            "e": URL_SAFE_NO_PAD.encode(&self.e),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_round_trips_keep_the_kid() {
        let key = SigningKey::generate().unwrap();
        let pem = key.private_key_pem();
        assert!(pem.starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
        let again = SigningKey::from_private_key_pem(&pem).unwrap();
        assert_eq!(again.kid(), key.kid());
        assert_eq!(again.private_key_pem(), pem);

        let public = key.public_key_pem();
        assert!(public.starts_with("-----BEGIN PUBLIC KEY-----\n"));
        assert_eq!(PublicKey::from_pem(&public).unwrap(), key.public_key());

        // PKCS#8 input is accepted and re-exported as PKCS#1.
        let pkcs8: Pkcs8V1Der<'static> = key.pair.as_der().unwrap();
        let p8 = pem::encode("PRIVATE KEY", pkcs8.as_ref());
        assert_eq!(
            SigningKey::from_private_key_pem(&p8)
                .unwrap()
                .private_key_pem(),
            pem
        );

        // 4096-bit modulus, e = 65537.
        let jwk = key.public_key().jwk();
        assert_eq!(jwk["e"], "AQAB");
        assert_eq!(
            URL_SAFE_NO_PAD
                .decode(jwk["n"].as_str().unwrap())
                .unwrap()
                .len(),
            512
        );
        assert_eq!(key.kid().len(), 43);
        assert!(!format!("{key:?}").contains("PRIVATE"));
    }
}
