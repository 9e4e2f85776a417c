//! The three claims of an auth callout, as nats-server writes and reads them: the request it
//! signs with its own nkey, the response the callout service signs with the issuer's account
//! key, and the user JWT inside that response, whose permissions the connection gets.
//!
//! Every field the server may leave out is optional here (it omits empty ones), and fields
//! this service does not use are not modelled: an unknown field is ignored, never an error.

use serde::{Deserialize, Serialize};

use super::jwt::Body;

/// The `aud` of every authorization request.
pub const REQUEST_AUDIENCE: &str = "nats-authorization-request";

/// What a server asks: who is connecting, with what, and to which server.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthorizationRequest {
    pub server_id: ServerId,
    /// The nkey the server made up for this connection: the response and the user JWT must
    /// name it as their subject (a response cannot be replayed for another connection).
    pub user_nkey: String,
    #[serde(default)]
    pub client_info: ClientInfo,
    #[serde(default)]
    pub connect_opts: ConnectOpts,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_tls: Option<ClientTls>,
}

impl Body for AuthorizationRequest {
    const TYPE: &'static str = "authorization_request";
}

/// The server that asks (its `id` is its public nkey, the request's signer).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerId {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub host: String,
    #[serde(default)]
    pub id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cluster: String,
    /// Set when the server encrypts requests (xkey); this service does not ask it to.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub xkey: String,
}

/// The connection as the server sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientInfo {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub host: String,
    /// The connection's id on that server (what `$SYS.REQ.SERVER.<id>.KICK` takes).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub id: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub user: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(rename = "type", default, skip_serializing_if = "String::is_empty")]
    pub client_type: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The client's `CONNECT`: its credentials and who it says it is.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectOpts {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub jwt: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub nkey: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub auth_token: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub user: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pass: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub lang: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    #[serde(default)]
    pub protocol: i64,
}

impl std::fmt::Debug for ConnectOpts {
    // The token and password are secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let redacted = |s: &str| if s.is_empty() { "" } else { "<redacted>" };
        f.debug_struct("ConnectOpts")
            .field("jwt", &redacted(&self.jwt))
            .field("nkey", &self.nkey)
            .field("auth_token", &redacted(&self.auth_token))
            .field("user", &self.user)
            .field("pass", &redacted(&self.pass))
            .field("name", &self.name)
            .field("lang", &self.lang)
            .field("version", &self.version)
            .finish()
    }
}

/// The connection's TLS, when it has some.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientTls {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cipher: String,
}

/// The answer: a user JWT, or why not (exactly one of the two).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthorizationResponse {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub jwt: String,
    /// Logged by the server; the client is only told "Authorization Violation".
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
}

impl Body for AuthorizationResponse {
    const TYPE: &'static str = "authorization_response";
}

/// A user JWT: what the connection may publish and subscribe to. Its `exp` is when the server
/// disconnects it; its `aud` the account it is placed in (in server-config mode); its `name`
/// the user name the server shows for it (monitoring, logs).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    #[serde(rename = "pub", default)]
    pub publish: Permission,
    #[serde(rename = "sub", default)]
    pub subscribe: Permission,
    /// May publish to the reply subjects of requests it receives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resp: Option<ResponsePermission>,
    /// Maximum subscriptions, bytes and payload: -1 is no limit of its own (the server's).
    #[serde(default)]
    pub subs: i64,
    #[serde(default)]
    pub data: i64,
    #[serde(default)]
    pub payload: i64,
    /// `STANDARD`, `WEBSOCKET`, `MQTT`, `LEAFNODE`…: the kinds of connection it may make.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_connection_types: Vec<String>,
}

impl Body for User {
    const TYPE: &'static str = "user";
}

/// Answers to requests: how many per request and for how long (nanoseconds); zero is the
/// server's default (one, for two minutes).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponsePermission {
    #[serde(default)]
    pub max: i64,
    #[serde(default)]
    pub ttl: i64,
}

impl ResponsePermission {
    /// One answer per request, within the server's default time.
    pub fn once() -> Self {
        Self { max: 1, ttl: 0 }
    }
}

/// Subjects allowed and denied (a subject allowed and denied is denied).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Permission {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_as_a_server_writes_it_decodes() {
        // The `nats` part of a request from nats-server 2.15: empty fields left out, some
        // this service ignores.
        let json = serde_json::json!({
            "server_id": {"name": "n0", "host": "0.0.0.0", "id": "NSERVER", "version": "2.15.1"},
            "user_nkey": "UNKEY",
            "client_info": {"host": "127.0.0.1", "id": 7, "user": "audit-acme", "kind": "Client", "type": "nats"},
            "connect_opts": {"user": "audit-acme", "pass": "secret", "lang": "rust", "version": "0.51.0", "protocol": 1},
            "client_tls": {"version": "1.3", "cipher": "TLS_AES_128_GCM_SHA256", "verified_chains": []},
            "tags": [],
            "type": "authorization_request",
            "version": 2
        });
        let request: AuthorizationRequest = serde_json::from_value(json).unwrap();
        assert_eq!(request.server_id.id, "NSERVER");
        assert_eq!(request.client_info.id, 7);
        assert_eq!(request.connect_opts.pass, "secret");
        assert_eq!(request.client_tls.unwrap().version, "1.3");
        // A request with little in it still decodes.
        let bare: AuthorizationRequest =
            serde_json::from_value(serde_json::json!({"server_id": {}, "user_nkey": "U"})).unwrap();
        assert_eq!(bare.connect_opts, ConnectOpts::default());
    }

    #[test]
    fn connect_options_never_print_their_secrets() {
        let opts = ConnectOpts {
            user: "audit-acme".into(),
            pass: "hunter2".into(),
            auth_token: "tok".into(),
            ..Default::default()
        };
        let shown = format!("{opts:?}");
        assert!(shown.contains("audit-acme"));
        assert!(
            !shown.contains("hunter2") && !shown.contains("tok\""),
            "{shown}"
        );
    }

    #[test]
    fn a_user_is_written_with_pub_and_sub() {
        let user = User {
            publish: Permission {
                allow: vec!["a.>".into()],
                deny: vec![],
            },
            subscribe: Permission::default(),
            resp: None,
            subs: -1,
            data: -1,
            payload: -1,
            allowed_connection_types: vec!["STANDARD".into()],
        };
        assert_eq!(
            serde_json::to_value(&user).unwrap(),
            serde_json::json!({
                "pub": {"allow": ["a.>"]},
                "sub": {},
                "subs": -1, "data": -1, "payload": -1,
                "allowed_connection_types": ["STANDARD"]
            })
        );
    }
}
