//! NATS JWTs: the compact JWS form `header.payload.signature`, each part unpadded base64url,
//! signed with an nkey (ed25519) under the algorithm name `ed25519-nkey`.
//!
//! What makes them NATS's rather than any JWT:
//! - the signature covers the ASCII of `header.payload`, and the signer's public nkey is the
//!   `iss` claim (no key id, no key set: whoever checks a token decides which issuers to
//!   trust, by their public key);
//! - the claim-specific part sits under `nats`, with its `type` (user, authorization request…)
//!   and the format's `version` (2);
//! - `jti` is not random: it is the base32 (unpadded) SHA-512/256 of the registered claims as
//!   JSON with `jti` itself left out, so a token's id follows from what it says.

use data_encoding::{BASE32_NOPAD, BASE64URL_NOPAD};
use nkeys::KeyPair;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha512_256};

/// The signing algorithm of every token written and the only one accepted.
pub const ALGORITHM: &str = "ed25519-nkey";
/// The version of the claims format written and the only one accepted.
pub const VERSION: u32 = 2;
/// Longer tokens are refused before anything is decoded (a connection's request is a few KB).
pub const MAX_TOKEN_LEN: usize = 1024 * 1024;

/// Why a token was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum JwtError {
    #[error("the token is {0} bytes long, more than the {MAX_TOKEN_LEN} accepted")]
    TooLarge(usize),
    #[error("the token is not three dot-separated parts")]
    Shape,
    #[error("the token's {0} is not unpadded base64url")]
    Base64(&'static str),
    #[error("the token's {part} is not the expected JSON")]
    Json {
        part: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("the token's type is {0:?}, not JWT")]
    TokenType(String),
    #[error("the token is signed with {0:?}, not {ALGORITHM}")]
    Algorithm(String),
    #[error("the token's issuer {0:?} is not a public nkey")]
    Issuer(String),
    #[error("the token's signature does not verify with its issuer's key")]
    Signature,
    #[error("the token is a {found:?} claim, not a {expected:?} claim")]
    ClaimType {
        expected: &'static str,
        found: String,
    },
    #[error("the token's claims are of version {0}, not {VERSION}")]
    Version(u32),
    #[error("cannot sign the token")]
    Sign(#[source] nkeys::error::Error),
}

/// The registered claims every NATS JWT carries. The fields are in the order the reference
/// implementation writes them, and empty ones are left out as it does: `jti` is a digest of
/// exactly this serialization.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registered {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub aud: String,
    /// Unix seconds; 0: never.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub exp: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub jti: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub iat: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub iss: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub nbf: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sub: String,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

impl Registered {
    /// The id of a token with these claims: base32 of SHA-512/256 over their JSON without
    /// `jti`, escaped as the reference implementation's encoder escapes (`<`, `>`, `&` and the
    /// two Unicode line separators as `\u…`), so ids agree with tokens minted elsewhere.
    pub fn id(&self) -> String {
        let without_id = Registered {
            jti: String::new(),
            ..self.clone()
        };
        // Infallible: strings and integers only.
        let json = serde_json::to_string(&without_id).unwrap_or_default();
        let mut escaped = String::with_capacity(json.len());
        for c in json.chars() {
            match c {
                '<' => escaped.push_str("\\u003c"),
                '>' => escaped.push_str("\\u003e"),
                '&' => escaped.push_str("\\u0026"),
                '\u{2028}' => escaped.push_str("\\u2028"),
                '\u{2029}' => escaped.push_str("\\u2029"),
                c => escaped.push(c),
            }
        }
        BASE32_NOPAD.encode(&Sha512_256::digest(escaped.as_bytes()))
    }
}

/// The claim-specific part of a token (under `nats`), and the `type` it is written with.
pub trait Body: Serialize + DeserializeOwned {
    const TYPE: &'static str;
}

/// A decoded, signature-checked token: what it says and who signed it (`registered.iss`).
#[derive(Clone, Debug, PartialEq)]
pub struct Claims<T> {
    pub registered: Registered,
    pub body: T,
}

#[derive(Serialize, Deserialize)]
struct Header {
    typ: String,
    alg: String,
}

#[derive(Serialize, Deserialize)]
struct Wire<T> {
    #[serde(flatten)]
    registered: Registered,
    nats: Nats<T>,
}

#[derive(Serialize, Deserialize)]
struct Nats<T> {
    #[serde(flatten)]
    body: T,
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    version: u32,
}

/// Signs `body` with `key`: `iss` becomes the key's public key, `iat` now, `jti` the claims'
/// digest; the other registered claims are taken from `registered`.
pub fn encode<T: Body>(
    registered: Registered,
    body: &T,
    key: &KeyPair,
    now: i64,
) -> Result<String, JwtError> {
    let mut registered = Registered {
        iss: key.public_key(),
        iat: now,
        jti: String::new(),
        ..registered
    };
    registered.jti = registered.id();
    let header = Header {
        typ: "JWT".into(),
        alg: ALGORITHM.into(),
    };
    let wire = Wire {
        registered,
        nats: Nats {
            body,
            kind: T::TYPE.into(),
            version: VERSION,
        },
    };
    let signed = format!("{}.{}", part(&header)?, part(&wire)?);
    let signature = key.sign(signed.as_bytes()).map_err(JwtError::Sign)?;
    Ok(format!("{signed}.{}", BASE64URL_NOPAD.encode(&signature)))
}

fn part(value: &impl Serialize) -> Result<String, JwtError> {
    let json = serde_json::to_vec(value).map_err(|source| JwtError::Json {
        part: "claims",
        source,
    })?;
    Ok(BASE64URL_NOPAD.encode(&json))
}

/// Decodes `token` and checks that its issuer signed it and that it is a claim of type
/// `T::TYPE`. Whether that issuer is trusted, and the times and audience, are the caller's
/// to check.
pub fn decode<T: Body>(token: &str) -> Result<Claims<T>, JwtError> {
    if token.len() > MAX_TOKEN_LEN {
        return Err(JwtError::TooLarge(token.len()));
    }
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(JwtError::Shape);
    };
    let header_json = unbase64("header", header)?;
    let header: Header = json("header", &header_json)?;
    if !header.typ.eq_ignore_ascii_case("JWT") {
        return Err(JwtError::TokenType(header.typ));
    }
    if !header.alg.eq_ignore_ascii_case(ALGORITHM) {
        return Err(JwtError::Algorithm(header.alg));
    }
    let payload_json = unbase64("claims", payload)?;
    let signature = unbase64("signature", signature)?;

    // The issuer is read first to know whose key checks the signature; nothing else is
    // believed before it verifies.
    #[derive(Deserialize)]
    struct Issuer {
        #[serde(default)]
        iss: String,
    }
    let issuer: Issuer = json("claims", &payload_json)?;
    let key =
        KeyPair::from_public_key(&issuer.iss).map_err(|_| JwtError::Issuer(issuer.iss.clone()))?;
    let signed = &token[..header_len(token)];
    key.verify(signed.as_bytes(), &signature)
        .map_err(|_| JwtError::Signature)?;

    let wire: Wire<serde_json::Value> = json("claims", &payload_json)?;
    if wire.nats.kind != T::TYPE {
        return Err(JwtError::ClaimType {
            expected: T::TYPE,
            found: wire.nats.kind,
        });
    }
    if wire.nats.version != VERSION {
        return Err(JwtError::Version(wire.nats.version));
    }
    let body = serde_json::from_value(wire.nats.body).map_err(|source| JwtError::Json {
        part: "claims",
        source,
    })?;
    Ok(Claims {
        registered: wire.registered,
        body,
    })
}

/// The length of `header.payload`, the signed part of a three-part token.
fn header_len(token: &str) -> usize {
    token.rfind('.').unwrap_or(token.len())
}

fn unbase64(part: &'static str, text: &str) -> Result<Vec<u8>, JwtError> {
    BASE64URL_NOPAD
        .decode(text.as_bytes())
        .map_err(|_| JwtError::Base64(part))
}

fn json<T: DeserializeOwned>(part: &'static str, bytes: &[u8]) -> Result<T, JwtError> {
    serde_json::from_slice(bytes).map_err(|source| JwtError::Json { part, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    struct Note {
        text: String,
    }

    impl Body for Note {
        const TYPE: &'static str = "note";
    }

    fn note(text: &str) -> Note {
        Note { text: text.into() }
    }

    fn signed(key: &KeyPair) -> String {
        let registered = Registered {
            sub: "someone".into(),
            aud: "everyone".into(),
            exp: 2_000_000_000,
            ..Default::default()
        };
        encode(registered, &note("hello"), key, 1_700_000_000).unwrap()
    }

    #[test]
    fn a_token_decodes_to_what_was_signed_and_names_its_signer() {
        let key = KeyPair::new_account();
        let claims: Claims<Note> = decode(&signed(&key)).unwrap();
        assert_eq!(claims.body, note("hello"));
        assert_eq!(claims.registered.iss, key.public_key());
        assert_eq!(claims.registered.sub, "someone");
        assert_eq!(claims.registered.aud, "everyone");
        assert_eq!(claims.registered.iat, 1_700_000_000);
        assert_eq!(claims.registered.exp, 2_000_000_000);
    }

    #[test]
    fn the_header_and_the_nats_part_are_as_nats_server_expects() {
        let token = signed(&KeyPair::new_account());
        let parts: Vec<_> = token.split('.').collect();
        let header: serde_json::Value =
            serde_json::from_slice(&BASE64URL_NOPAD.decode(parts[0].as_bytes()).unwrap()).unwrap();
        assert_eq!(
            header,
            serde_json::json!({"typ": "JWT", "alg": "ed25519-nkey"})
        );
        let claims: serde_json::Value =
            serde_json::from_slice(&BASE64URL_NOPAD.decode(parts[1].as_bytes()).unwrap()).unwrap();
        assert_eq!(
            claims["nats"],
            serde_json::json!({"text": "hello", "type": "note", "version": 2})
        );
        assert!(!token.contains('='), "padded: {token}");
    }

    #[test]
    fn the_id_is_the_digest_of_the_registered_claims_without_it() {
        let claims: Claims<Note> = decode(&signed(&KeyPair::new_account())).unwrap();
        let id = claims.registered.jti.clone();
        assert_eq!(id, claims.registered.id());
        // 32 bytes of SHA-512/256 in unpadded base32.
        assert_eq!(id.len(), 52);
        // The id of the JSON the reference encoder writes for these claims, computed by hand.
        let json = format!(
            r#"{{"aud":"everyone","exp":2000000000,"iat":1700000000,"iss":"{}","sub":"someone"}}"#,
            claims.registered.iss
        );
        assert_eq!(
            id,
            BASE32_NOPAD.encode(&Sha512_256::digest(json.as_bytes()))
        );
        // Another claim, another id.
        let other = Registered {
            sub: "someone else".into(),
            ..claims.registered.clone()
        };
        assert_ne!(other.id(), id);
    }

    #[test]
    fn the_id_escapes_html_characters_as_the_reference_encoder_does() {
        let registered = Registered {
            name: "a<b>&c".into(),
            ..Default::default()
        };
        let json = r#"{"name":"a\u003cb\u003e\u0026c"}"#;
        assert_eq!(
            registered.id(),
            BASE32_NOPAD.encode(&Sha512_256::digest(json.as_bytes()))
        );
    }

    #[test]
    fn a_tampered_token_is_refused() {
        let key = KeyPair::new_account();
        let token = signed(&key);
        let parts: Vec<_> = token.split('.').collect();

        // Other claims under the same signature.
        let forged_claims = {
            let mut wire: serde_json::Value =
                serde_json::from_slice(&BASE64URL_NOPAD.decode(parts[1].as_bytes()).unwrap())
                    .unwrap();
            wire["sub"] = "someone else".into();
            BASE64URL_NOPAD.encode(&serde_json::to_vec(&wire).unwrap())
        };
        let forged = format!("{}.{forged_claims}.{}", parts[0], parts[2]);
        assert!(matches!(decode::<Note>(&forged), Err(JwtError::Signature)));

        // A signature with one bit flipped.
        let mut signature = BASE64URL_NOPAD.decode(parts[2].as_bytes()).unwrap();
        signature[10] ^= 1;
        let flipped = format!(
            "{}.{}.{}",
            parts[0],
            parts[1],
            BASE64URL_NOPAD.encode(&signature)
        );
        assert!(matches!(decode::<Note>(&flipped), Err(JwtError::Signature)));

        // The same claims signed by another key that claims to be the first.
        let impostor = KeyPair::new_account();
        let resigned = {
            let signed = format!("{}.{}", parts[0], parts[1]);
            let signature = impostor.sign(signed.as_bytes()).unwrap();
            format!("{signed}.{}", BASE64URL_NOPAD.encode(&signature))
        };
        assert!(matches!(
            decode::<Note>(&resigned),
            Err(JwtError::Signature)
        ));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for token in [
            "",
            ".",
            "..",
            "a.b.c",
            "a.b.c.d",
            "eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ..",
            "eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.",
            "eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.eyJpc3MiOjF9.AAAA",
            "\u{1F600}.\u{1F600}.\u{1F600}",
        ] {
            assert!(decode::<Note>(token).is_err(), "{token:?} was accepted");
        }
        let huge = "a".repeat(MAX_TOKEN_LEN + 1);
        assert!(matches!(decode::<Note>(&huge), Err(JwtError::TooLarge(_))));
    }

    #[test]
    fn another_algorithm_or_claim_type_is_refused() {
        let key = KeyPair::new_account();
        let token = signed(&key);
        let parts: Vec<_> = token.split('.').collect();
        let header = BASE64URL_NOPAD.encode(br#"{"typ":"JWT","alg":"HS256"}"#);
        let signed_part = format!("{header}.{}", parts[1]);
        let signature = key.sign(signed_part.as_bytes()).unwrap();
        let hs256 = format!("{signed_part}.{}", BASE64URL_NOPAD.encode(&signature));
        assert!(matches!(
            decode::<Note>(&hs256),
            Err(JwtError::Algorithm(_))
        ));

        #[derive(Debug, Serialize, Deserialize)]
        struct Other {}
        impl Body for Other {
            const TYPE: &'static str = "other";
        }
        assert!(matches!(
            decode::<Other>(&token),
            Err(JwtError::ClaimType { .. })
        ));
    }
}
