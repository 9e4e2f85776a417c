//! BlobPublisher against a real Azurite (npm `azurite@3.35.0`, blob service only, in memory).
//!
//! Azurite is started per test on a free loopback port from `<workspace>/node_modules/.bin/
//! azurite-blob` (run `npm install --no-save azurite@3.35.0` in the workspace root first), or
//! through `npx --yes azurite@3.35.0` when that is missing. The tests then read the published
//! documents anonymously, as Entra does, and verify a service-account-style JWT against them.

use hypersaga_oidc::{
    BlobConfig, BlobPublisher, DISCOVERY_PATH, JWKS_PATH, KEY_BLOB, KeyStore, LEGACY_KEY_CONTAINER,
    Migration, Secret, SigningKey, legacy_key_blob,
};
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

const ACCOUNT: &str = "devstoreaccount1";
const KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

struct Azurite {
    endpoint: String,
    key_store_endpoint: String,
    key_store_key: String,
    _process: hypersaga_procs::Azurite,
}

async fn start_azurite() -> Azurite {
    let process = hypersaga_procs::Azurite::start()
        .await
        .expect("start Azurite (run scripts/setup.sh)");
    Azurite {
        endpoint: process.blob_endpoint(),
        key_store_endpoint: process.key_store_endpoint(),
        key_store_key: process.key_store_key().to_owned(),
        _process: process,
    }
}

fn publisher(az: &Azurite) -> BlobPublisher {
    BlobPublisher::new(BlobConfig {
        blob_endpoint: az.endpoint.parse().unwrap(),
        account_name: ACCOUNT.into(),
        account_key: Secret::new(KEY),
    })
    .unwrap()
}

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    iss: String,
    sub: String,
    aud: String,
    exp: u64,
}

#[tokio::test]
async fn publishes_issuer_that_verifies_tokens() {
    let az = start_azurite().await;
    let publisher = publisher(&az);
    let key = SigningKey::generate().unwrap();

    let issuer = publisher
        .publish_issuer("tenant-a", &[key.public_key()])
        .await
        .unwrap();
    assert_eq!(issuer, format!("{}/tenant-a", az.endpoint));
    // Idempotent re-publish (container exists, blobs overwritten).
    assert_eq!(
        publisher
            .publish_issuer("tenant-a", &[key.public_key()])
            .await
            .unwrap(),
        issuer
    );

    // Anonymous reads, as Entra does them.
    let http = reqwest::Client::new();
    let discovery = http
        .get(format!("{issuer}/{DISCOVERY_PATH}"))
        .send()
        .await
        .unwrap();
    assert_eq!(discovery.status(), 200);
    assert_eq!(discovery.headers()["content-type"], "application/json");
    let discovery: serde_json::Value = discovery.json().await.unwrap();
    assert_eq!(discovery["issuer"], issuer.as_str());
    assert_eq!(discovery["jwks_uri"], format!("{issuer}/{JWKS_PATH}"));
    assert_eq!(
        discovery["id_token_signing_alg_values_supported"],
        serde_json::json!(["RS256"])
    );

    let jwks_url = discovery["jwks_uri"].as_str().unwrap();
    let jwks: JwkSet = http
        .get(jwks_url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(jwks.keys.len(), 1);

    // A token signed with the key verifies against the published JWKS, found by kid.
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(key.kid());
    let claims = Claims {
        iss: issuer.clone(),
        sub: "system:serviceaccount:ns:sa".into(),
        aud: "openshift".into(),
        exp: 4_000_000_000,
    };
    let token = jsonwebtoken::encode(
        &header,
        &claims,
        &EncodingKey::from_rsa_pem(key.private_key_pem().as_bytes()).unwrap(),
    )
    .unwrap();
    let kid = jsonwebtoken::decode_header(&token).unwrap().kid.unwrap();
    let jwk = jwks.find(&kid).expect("kid published");
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_issuer(&[issuer.as_str()]);
    validation.set_audience(&["openshift"]);
    let decoded =
        jsonwebtoken::decode::<Claims>(&token, &DecodingKey::from_jwk(jwk).unwrap(), &validation)
            .unwrap();
    assert_eq!(decoded.claims.sub, "system:serviceaccount:ns:sa");

    // A token from another key does not verify.
    let other = SigningKey::generate().unwrap();
    let forged = jsonwebtoken::encode(
        &header,
        &claims,
        &EncodingKey::from_rsa_pem(other.private_key_pem().as_bytes()).unwrap(),
    )
    .unwrap();
    assert!(
        jsonwebtoken::decode::<Claims>(&forged, &DecodingKey::from_jwk(jwk).unwrap(), &validation)
            .is_err()
    );

    // Anonymous listing of the issuer container is refused (access level `blob`).
    let list = http
        .get(format!("{issuer}?restype=container&comp=list"))
        .send()
        .await
        .unwrap();
    assert!(
        list.status().is_client_error(),
        "listing answered {}",
        list.status()
    );
}

/// The key store's client: Azurite's second account, whose key was made for this start.
fn key_store(az: &Azurite) -> KeyStore {
    KeyStore::new(BlobConfig {
        blob_endpoint: az.key_store_endpoint.parse().unwrap(),
        account_name: hypersaga_procs::AZURITE_KEY_STORE_ACCOUNT.into(),
        account_key: Secret::new(az.key_store_key.clone()),
    })
    .unwrap()
}

#[tokio::test]
async fn signing_keys_round_trip_in_a_private_container_per_tenant() {
    let az = start_azurite().await;
    let keys = key_store(&az);
    assert!(keys.load("tenant-b").await.unwrap().is_none());

    let key = SigningKey::generate().unwrap();
    keys.store("tenant-b", &key).await.unwrap();
    keys.store("tenant-b", &key).await.unwrap();
    let loaded = keys.load("tenant-b").await.unwrap().expect("stored key");
    assert_eq!(loaded.kid(), key.kid());
    assert_eq!(loaded.private_key_pem(), key.private_key_pem());
    // Another tenant's container is another container: it holds nothing of tenant-b's.
    assert!(keys.load("tenant-c").await.unwrap().is_none());

    // Anonymous read of the key is refused by Azurite (the blob exists: this is the
    // container's access level speaking, not a 404).
    let url = format!(
        "{}/{}/{KEY_BLOB}",
        az.key_store_endpoint,
        KeyStore::container("tenant-b")
    );
    let anon = reqwest::get(&url).await.unwrap();
    assert_eq!(anon.status(), 403, "anonymous GET {url}");
    assert_eq!(
        anon.headers().get("x-ms-error-code").map(|v| v.as_bytes()),
        Some(&b"AuthorizationFailure"[..])
    );
    assert!(!anon.text().await.unwrap().contains("PRIVATE KEY"));

    // Nor can the issuers' account key read it: the keys' account has its own.
    let with_issuers_key = KeyStore::new(BlobConfig {
        blob_endpoint: az.key_store_endpoint.parse().unwrap(),
        account_name: hypersaga_procs::AZURITE_KEY_STORE_ACCOUNT.into(),
        account_key: Secret::new(KEY),
    })
    .unwrap();
    let err = with_issuers_key.load("tenant-b").await.unwrap_err();
    assert_eq!(err_status(&err), Some(403), "{err}");

    // A public container cannot be "ensured" private by mistake, nor the reverse.
    let publisher = publisher(&az);
    publisher.ensure_public_container("issuer-c").await.unwrap();
    assert!(
        publisher
            .ensure_private_container("issuer-c")
            .await
            .is_err()
    );
    publisher
        .ensure_private_container("private-c")
        .await
        .unwrap();
    assert!(
        publisher
            .ensure_public_container("private-c")
            .await
            .is_err()
    );

    // A wrong account key is refused by the service.
    let wrong = BlobPublisher::new(BlobConfig {
        blob_endpoint: az.endpoint.parse().unwrap(),
        account_name: ACCOUNT.into(),
        account_key: Secret::new("d3Jvbmcga2V5"),
    })
    .unwrap();
    let err = wrong
        .put_blob("issuer-c", "x", b"x".to_vec(), "text/plain")
        .await
        .unwrap_err();
    assert_eq!(err_status(&err), Some(403), "{err}");
}

/// Keys kept where earlier versions kept them (a private container of the issuers' account)
/// move into the key store once, unchanged; a second run finds nothing; a different key
/// already in the store is a conflict that touches neither.
#[tokio::test]
async fn legacy_keys_move_into_the_key_store() {
    let az = start_azurite().await;
    let issuers = publisher(&az);
    let keys = key_store(&az);
    let put_legacy = |tenant: &'static str, pem: String| {
        let issuers = issuers.clone();
        async move {
            issuers
                .ensure_private_container(LEGACY_KEY_CONTAINER)
                .await
                .unwrap();
            issuers
                .put_blob(
                    LEGACY_KEY_CONTAINER,
                    &legacy_key_blob(tenant),
                    pem.into_bytes(),
                    "application/x-pem-file",
                )
                .await
                .unwrap();
        }
    };
    let old = SigningKey::generate().unwrap();
    put_legacy("tenant-m", old.private_key_pem()).await;
    assert_eq!(
        keys.migrate_legacy(&issuers, "tenant-m").await.unwrap(),
        Migration::Moved(old.kid())
    );
    assert_eq!(
        keys.load("tenant-m").await.unwrap().expect("moved").kid(),
        old.kid()
    );
    assert_eq!(
        issuers
            .get_blob(LEGACY_KEY_CONTAINER, &legacy_key_blob("tenant-m"))
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        keys.migrate_legacy(&issuers, "tenant-m").await.unwrap(),
        Migration::NothingToMove
    );

    // Copied by another replica, not yet deleted: the copy is recognised, the old one goes.
    put_legacy("tenant-m", old.private_key_pem()).await;
    assert_eq!(
        keys.migrate_legacy(&issuers, "tenant-m").await.unwrap(),
        Migration::AlreadyMoved(old.kid())
    );

    // Two different keys: neither is touched.
    let other = SigningKey::generate().unwrap();
    put_legacy("tenant-m", other.private_key_pem()).await;
    assert_eq!(
        keys.migrate_legacy(&issuers, "tenant-m").await.unwrap(),
        Migration::Conflict {
            stored: old.kid(),
            legacy: other.kid()
        }
    );
    assert!(
        issuers
            .get_blob(LEGACY_KEY_CONTAINER, &legacy_key_blob("tenant-m"))
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(
        keys.load("tenant-m").await.unwrap().unwrap().kid(),
        old.kid()
    );
}

fn err_status(err: &hypersaga_oidc::Error) -> Option<u16> {
    match err {
        hypersaga_oidc::Error::Blob { status, .. } => *status,
        _ => None,
    }
}

#[tokio::test]
async fn signing_key_creation_is_first_writer_wins() {
    let az = start_azurite().await;
    let publisher = publisher(&az);
    let keys = key_store(&az);
    let first = SigningKey::generate().unwrap();
    let second = SigningKey::generate().unwrap();
    assert!(keys.create("tenant-r", &first).await.unwrap());
    assert!(
        !keys.create("tenant-r", &second).await.unwrap(),
        "second writer must lose"
    );
    let loaded = keys.load("tenant-r").await.unwrap().expect("stored key");
    assert_eq!(loaded.kid(), first.kid());
    assert!(
        publisher
            .create_blob("issuer-r", "x", b"1".to_vec(), "text/plain")
            .await
            .is_err(),
        "no container yet"
    );
    publisher.ensure_public_container("issuer-r").await.unwrap();
    assert!(
        publisher
            .create_blob("issuer-r", "x", b"1".to_vec(), "text/plain")
            .await
            .unwrap()
    );
    assert!(
        !publisher
            .create_blob("issuer-r", "x", b"2".to_vec(), "text/plain")
            .await
            .unwrap()
    );
    assert_eq!(
        publisher.get_blob("issuer-r", "x").await.unwrap().unwrap(),
        b"1"
    );
}
