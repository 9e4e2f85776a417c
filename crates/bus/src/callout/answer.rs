//! One authorization request in, one signed answer out: the request checked (signed by the
//! server it names, addressed to this issuer, not expired), the decision asked of the
//! [`Authorize`]r, and the grant written as a user JWT inside a response for that server and
//! that connection. No NATS here, so all of it is tested without a server.

use std::sync::Arc;
use std::time::Duration;

use nkeys::{KeyPair, KeyPairType};

use super::authorize::{Authorize, ConnectRequest, Credential, Grant, Refusal};
use super::claims::{
    AuthorizationRequest, AuthorizationResponse, Permission, REQUEST_AUDIENCE, ResponsePermission,
    User,
};
use super::issuer::Issuer;
use super::jwt::{self, JwtError, Registered};
use super::secret::Secret;
use crate::access::Permissions;

/// The account granted users are placed in: the server-config mode's global account, where
/// the bus's streams are.
pub const BUS_ACCOUNT: &str = "$G";

/// The kinds of connection a tenant's reader may make: plain NATS clients (over TLS), not
/// websockets, MQTT or leaf nodes, which the bus does not offer tenants.
const CONNECTION_TYPES: [&str; 1] = ["STANDARD"];

/// How far this machine's clock may be behind the server's before a fresh request looks
/// expired (the server gives a request its authorization timeout, 2 s by default).
const CLOCK_SKEW: i64 = 5;

/// A request that is not answered: it is malformed, or not a server's request for this
/// issuer. The server refuses the connection when its wait runs out.
#[derive(Debug, thiserror::Error)]
pub enum InvalidRequest {
    #[error("the request is not text")]
    NotText,
    #[error(transparent)]
    Jwt(#[from] JwtError),
    #[error("the request is signed by {0:?}, not by a server")]
    NotAServer(String),
    #[error("the request is signed by {signer} but names server {named}")]
    OtherServer { signer: String, named: String },
    #[error("the request's audience is {0:?}, not {REQUEST_AUDIENCE}")]
    Audience(String),
    #[error("the request is for issuer {0:?}, not this one")]
    OtherIssuer(String),
    #[error("the request expired at {0}")]
    Expired(i64),
    #[error("the request's user nkey {0:?} is not a user's public key")]
    UserNkey(String),
    #[error("cannot sign the answer")]
    Sign(#[source] JwtError),
}

/// What was decided, for logs and metrics.
#[derive(Debug)]
pub enum Outcome {
    Granted(Grant),
    Refused(Refusal),
}

/// An answer to publish on the request's reply subject.
#[derive(Debug)]
pub struct Answer {
    /// The signed authorization response.
    pub response: String,
    pub outcome: Outcome,
}

/// Answers authorization requests as one issuer, with one authorizer's decisions.
pub struct Responder {
    issuer: Issuer,
    authorizer: Arc<dyn Authorize>,
}

impl Responder {
    pub fn new(issuer: Issuer, authorizer: Arc<dyn Authorize>) -> Self {
        Self { issuer, authorizer }
    }

    pub fn issuer(&self) -> &Issuer {
        &self.issuer
    }

    /// The answer to the request `payload` (the server's signed JWT), at Unix time `now`.
    pub async fn answer(&self, payload: &[u8], now: i64) -> Result<Answer, InvalidRequest> {
        let request = self.verified(payload, now)?;
        let connect = connect_request(&request);
        let outcome = match self.authorizer.authorize(&connect).await {
            Ok(grant) => Outcome::Granted(grant),
            Err(refusal) => Outcome::Refused(refusal),
        };
        let body = match &outcome {
            Outcome::Granted(grant) => AuthorizationResponse {
                jwt: self.user_jwt(&request.user_nkey, grant, now)?,
                error: String::new(),
            },
            Outcome::Refused(refusal) => AuthorizationResponse {
                jwt: String::new(),
                error: refusal.to_string(),
            },
        };
        let registered = Registered {
            sub: request.user_nkey.clone(),
            aud: request.server_id.id.clone(),
            ..Default::default()
        };
        let response =
            jwt::encode(registered, &body, self.issuer.key(), now).map_err(InvalidRequest::Sign)?;
        Ok(Answer { response, outcome })
    }

    /// The request, once it is known to come from the server it names and to be meant for
    /// this issuer now.
    fn verified(&self, payload: &[u8], now: i64) -> Result<AuthorizationRequest, InvalidRequest> {
        let token = std::str::from_utf8(payload).map_err(|_| InvalidRequest::NotText)?;
        let claims = jwt::decode::<AuthorizationRequest>(token.trim())?;
        let signer = claims.registered.iss;
        if !is_key_of(&signer, KeyPairType::Server) {
            return Err(InvalidRequest::NotAServer(signer));
        }
        let request = claims.body;
        if request.server_id.id != signer {
            return Err(InvalidRequest::OtherServer {
                signer,
                named: request.server_id.id,
            });
        }
        if claims.registered.aud != REQUEST_AUDIENCE {
            return Err(InvalidRequest::Audience(claims.registered.aud));
        }
        if claims.registered.sub != self.issuer.public_key() {
            return Err(InvalidRequest::OtherIssuer(claims.registered.sub));
        }
        let exp = claims.registered.exp;
        if exp != 0 && now > exp + CLOCK_SKEW {
            return Err(InvalidRequest::Expired(exp));
        }
        if !is_key_of(&request.user_nkey, KeyPairType::User) {
            return Err(InvalidRequest::UserNkey(request.user_nkey));
        }
        Ok(request)
    }

    /// The user JWT of a grant, for the connection the server calls `user_nkey`.
    fn user_jwt(&self, user_nkey: &str, grant: &Grant, now: i64) -> Result<String, InvalidRequest> {
        let valid_for = grant.valid_for.max(Duration::from_secs(1)).as_secs();
        let registered = Registered {
            sub: user_nkey.to_owned(),
            aud: BUS_ACCOUNT.to_owned(),
            name: grant.user_name(),
            exp: now.saturating_add(i64::try_from(valid_for).unwrap_or(i64::MAX)),
            ..Default::default()
        };
        jwt::encode(
            registered,
            &user(&grant.permissions),
            self.issuer.key(),
            now,
        )
        .map_err(InvalidRequest::Sign)
    }
}

/// The claims of a user with `permissions`. An empty allow list is written as "deny
/// everything": the server reads a user JWT without any publish (or subscribe) rule as
/// allowed to publish (subscribe) anything.
fn user(permissions: &Permissions) -> User {
    let permission = |allow: &[String]| Permission {
        allow: allow.to_vec(),
        deny: if allow.is_empty() {
            vec![">".to_owned()]
        } else {
            Vec::new()
        },
    };
    User {
        publish: permission(&permissions.publish),
        subscribe: permission(&permissions.subscribe),
        resp: permissions.allow_responses.then(ResponsePermission::once),
        subs: -1,
        data: -1,
        payload: -1,
        allowed_connection_types: CONNECTION_TYPES.iter().map(|&t| t.to_owned()).collect(),
    }
}

fn is_key_of(public_key: &str, kind: KeyPairType) -> bool {
    KeyPair::from_public_key(public_key).is_ok_and(|k| k.key_pair_type() == kind)
}

/// What the authorizer is told of a verified request.
fn connect_request(request: &AuthorizationRequest) -> ConnectRequest {
    let opts = &request.connect_opts;
    let credential = if !opts.user.is_empty() || !opts.pass.is_empty() {
        Credential::Password {
            user: opts.user.clone(),
            password: Secret::new(opts.pass.clone()),
        }
    } else if !opts.auth_token.is_empty() {
        Credential::Token(Secret::new(opts.auth_token.clone()))
    } else if !opts.jwt.is_empty() {
        Credential::Other("jwt")
    } else if !opts.nkey.is_empty() {
        Credential::Other("nkey")
    } else {
        Credential::Other("no")
    };
    ConnectRequest {
        credential,
        client_name: opts.name.clone(),
        client: request.client_info.clone(),
        server: request.server_id.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::claims::{ClientInfo, ConnectOpts, ServerId};
    use super::*;
    use hypersaga_model::TenantId;

    const NOW: i64 = 1_800_000_000;

    /// Lets in `audit-acme` with password "p", refuses everyone else.
    struct AcmeOnly;

    #[async_trait::async_trait]
    impl Authorize for AcmeOnly {
        async fn authorize(&self, request: &ConnectRequest) -> Result<Grant, Refusal> {
            match &request.credential {
                Credential::Password { user, password }
                    if user == "audit-acme" && password.expose() == "p" =>
                {
                    Ok(Grant::audit_reader(
                        TenantId::new("acme").unwrap(),
                        "hcp",
                        Duration::from_secs(60),
                    ))
                }
                Credential::Password { .. } => Err(Refusal::UnknownUser),
                _ => Err(Refusal::Unsupported("these")),
            }
        }
    }

    struct Server {
        key: KeyPair,
        user: KeyPair,
    }

    impl Server {
        fn new() -> Self {
            Self {
                key: KeyPair::new_server(),
                user: KeyPair::new_user(),
            }
        }

        /// A request as nats-server writes it, for issuer `issuer`, with `opts`.
        fn request(&self, issuer: &str, opts: ConnectOpts) -> String {
            self.request_with(issuer, opts, |_, _| {})
        }

        fn request_with(
            &self,
            issuer: &str,
            connect_opts: ConnectOpts,
            change: impl FnOnce(&mut Registered, &mut AuthorizationRequest),
        ) -> String {
            let mut registered = Registered {
                sub: issuer.to_owned(),
                aud: REQUEST_AUDIENCE.to_owned(),
                exp: NOW + 2,
                ..Default::default()
            };
            let mut body = AuthorizationRequest {
                server_id: ServerId {
                    name: "n0".into(),
                    host: "127.0.0.1".into(),
                    id: self.key.public_key(),
                    version: "2.15.1".into(),
                    ..Default::default()
                },
                user_nkey: self.user.public_key(),
                client_info: ClientInfo {
                    id: 42,
                    host: "127.0.0.1".into(),
                    ..Default::default()
                },
                connect_opts,
                client_tls: None,
            };
            change(&mut registered, &mut body);
            jwt::encode(registered, &body, &self.key, NOW).unwrap()
        }
    }

    fn password(user: &str, pass: &str) -> ConnectOpts {
        ConnectOpts {
            user: user.into(),
            pass: pass.into(),
            ..Default::default()
        }
    }

    fn responder() -> Responder {
        Responder::new(Issuer::generate(), Arc::new(AcmeOnly))
    }

    #[tokio::test]
    async fn a_known_reader_gets_its_tables_permissions_for_this_connection_and_server() {
        let responder = responder();
        let server = Server::new();
        let issuer = responder.issuer().public_key();
        let request = server.request(&issuer, password("audit-acme", "p"));

        let answer = responder.answer(request.as_bytes(), NOW).await.unwrap();
        assert!(matches!(answer.outcome, Outcome::Granted(_)));

        let response = jwt::decode::<AuthorizationResponse>(&answer.response).unwrap();
        assert_eq!(response.registered.iss, issuer);
        assert_eq!(response.registered.aud, server.key.public_key());
        assert_eq!(response.registered.sub, server.user.public_key());
        assert!(response.body.error.is_empty());

        let user = jwt::decode::<User>(&response.body.jwt).unwrap();
        assert_eq!(user.registered.iss, issuer);
        assert_eq!(user.registered.sub, server.user.public_key());
        assert_eq!(user.registered.aud, "$G");
        assert_eq!(user.registered.name, "audit-acme");
        assert_eq!(user.registered.exp, NOW + 60);
        let table = crate::Role::Audit(Some(TenantId::new("acme").unwrap())).permissions("hcp");
        assert_eq!(user.body.publish.allow, table.publish);
        assert_eq!(user.body.subscribe.allow, table.subscribe);
        assert!(user.body.publish.deny.is_empty() && user.body.resp.is_none());
        assert_eq!(user.body.allowed_connection_types, vec!["STANDARD"]);
    }

    #[tokio::test]
    async fn a_refusal_is_a_signed_error_for_the_server_to_log() {
        let responder = responder();
        let server = Server::new();
        let request = server.request(
            &responder.issuer().public_key(),
            password("audit-acme", "wrong"),
        );
        let answer = responder.answer(request.as_bytes(), NOW).await.unwrap();
        assert!(matches!(
            answer.outcome,
            Outcome::Refused(Refusal::UnknownUser)
        ));
        let response = jwt::decode::<AuthorizationResponse>(&answer.response).unwrap();
        assert_eq!(response.body.error, "no such user");
        assert!(response.body.jwt.is_empty());
        assert_eq!(response.registered.sub, server.user.public_key());
        assert_eq!(response.registered.aud, server.key.public_key());
    }

    #[tokio::test]
    async fn requests_that_are_not_a_servers_for_this_issuer_now_are_not_answered() {
        let responder = responder();
        let issuer = responder.issuer().public_key();
        let server = Server::new();
        let opts = || password("audit-acme", "p");
        let refused = |token: String| {
            let responder = &responder;
            async move { responder.answer(token.as_bytes(), NOW).await.unwrap_err() }
        };

        // For another issuer.
        let other = Issuer::generate().public_key();
        assert!(matches!(
            refused(server.request(&other, opts())).await,
            InvalidRequest::OtherIssuer(_)
        ));
        // Another audience.
        let token = server.request_with(&issuer, opts(), |r, _| r.aud = "someone".into());
        assert!(matches!(refused(token).await, InvalidRequest::Audience(_)));
        // Expired long ago.
        let token = server.request_with(&issuer, opts(), |r, _| r.exp = NOW - 60);
        assert!(matches!(refused(token).await, InvalidRequest::Expired(_)));
        // Naming another server than its signer.
        let token = server.request_with(&issuer, opts(), |_, b| {
            b.server_id.id = KeyPair::new_server().public_key()
        });
        assert!(matches!(
            refused(token).await,
            InvalidRequest::OtherServer { .. }
        ));
        // A user nkey that is not one.
        let token = server.request_with(&issuer, opts(), |_, b| b.user_nkey = "nobody".into());
        assert!(matches!(refused(token).await, InvalidRequest::UserNkey(_)));
        // Signed by an account, not a server.
        let account = KeyPair::new_account();
        let token = jwt::encode(
            Registered {
                sub: issuer.clone(),
                aud: REQUEST_AUDIENCE.into(),
                ..Default::default()
            },
            &AuthorizationRequest::default(),
            &account,
            NOW,
        )
        .unwrap();
        assert!(matches!(
            refused(token).await,
            InvalidRequest::NotAServer(_)
        ));
        // A request with another request's signature.
        let token = server.request(&issuer, opts());
        let other = server.request(&issuer, password("audit-acme", "q"));
        let tampered = format!(
            "{}{}",
            &token[..token.rfind('.').unwrap()],
            &other[other.rfind('.').unwrap()..]
        );
        assert!(matches!(refused(tampered).await, InvalidRequest::Jwt(_)));
        // Not even text.
        assert!(matches!(
            responder.answer(&[0xff, 0xfe], NOW).await.unwrap_err(),
            InvalidRequest::NotText
        ));
    }

    #[test]
    fn an_empty_allow_list_denies_everything_instead_of_allowing_it() {
        let claims = user(&Permissions {
            publish: Vec::new(),
            subscribe: vec!["_INBOX_x.>".into()],
            allow_responses: false,
        });
        assert_eq!(claims.publish.deny, vec![">"]);
        assert!(claims.subscribe.deny.is_empty());
    }

    #[test]
    fn the_credential_is_what_the_client_sent() {
        let with = |opts: ConnectOpts| {
            connect_request(&AuthorizationRequest {
                connect_opts: opts,
                ..Default::default()
            })
            .credential
        };
        assert_eq!(
            with(password("audit-acme", "p")),
            Credential::Password {
                user: "audit-acme".into(),
                password: Secret::new("p")
            }
        );
        assert_eq!(
            with(ConnectOpts {
                auth_token: "t".into(),
                ..Default::default()
            }),
            Credential::Token(Secret::new("t"))
        );
        assert_eq!(
            with(ConnectOpts {
                nkey: "UABC".into(),
                ..Default::default()
            }),
            Credential::Other("nkey")
        );
        assert_eq!(with(ConnectOpts::default()), Credential::Other("no"));
    }
}
