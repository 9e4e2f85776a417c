//! CAPZ's Azure client, as much of it as making and removing a worker needs: a token from
//! Entra for a federated service-account assertion (azidentity's
//! `WorkloadIdentityCredential`), then ARM GET, PUT and DELETE with the asynchronous
//! operations polled to their end (azcore's pollers), and paged lists (the Resource SKUs).
//!
//! Failures keep the words the Go SDKs put in CAPZ's conditions, since those are what an
//! operator of a real cluster reads: an ARM refusal is azcore's `ResponseError` text (request
//! line, `RESPONSE <status>`, `ERROR CODE: <code>`, the body indented, between
//! 80-dash separators), an Entra refusal azidentity's `AuthenticationFailedError` text.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use hypersaga_oidc::SigningKey;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use url::Url;

use super::token;

/// The separator line azcore and azidentity frame their error texts with.
const SEPARATOR: &str =
    "--------------------------------------------------------------------------------";

/// ARM's audience, as azidentity asks for it (`<resource>/.default`).
const ARM_SCOPE: &str = "https://management.azure.com/.default";

/// RFC 7523's assertion type, what `WorkloadIdentityCredential` sends.
const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// A cached token is renewed this long before it expires (azidentity refreshes early too).
const RENEW_BEFORE: Duration = Duration::from_secs(300);

/// Longest wait between two polls of an operation, whatever `Retry-After` says: the emulator
/// scales Azure's latencies down, and a demo should not sit out a real minute.
const MAX_POLL_DELAY: Duration = Duration::from_secs(5);

/// Poll delay when ARM advertises none (an operation the emulator completes at once).
const DEFAULT_POLL_DELAY: Duration = Duration::from_millis(200);

/// `armcompute/v5`'s Resource SKUs version (its only one, `Skus/stable/2021-07-01`).
pub const RESOURCE_SKUS_API: &str = "2021-07-01";

/// Give up on an operation that has not ended after this long.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(1800);

/// Why a call failed, worded as CAPZ would see it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    /// ARM answered with an error: azcore's `ResponseError` text.
    #[error("{text}")]
    Response {
        status: u16,
        code: Option<String>,
        text: String,
    },
    /// Entra refused the token request: azidentity's `AuthenticationFailedError` text.
    #[error("{text}")]
    Authentication { status: u16, text: String },
    /// No usable answer (connection, body), or no assertion could be made.
    #[error("{0}")]
    Other(String),
}

impl CallError {
    /// Whether ARM said the resource does not exist (azcore's `ResourceNotFound` check).
    fn is_not_found(&self) -> bool {
        matches!(self, Self::Response { status: 404, .. })
    }
}

/// Who CAPZ acts as: a user-assigned identity, proven with the hosted cluster's service
/// account token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub tenant_id: String,
    pub client_id: String,
    /// The hosted cluster's issuer (`HostedCluster.spec.issuerURL`).
    pub issuer: String,
    /// PEM of the `serviceAccountSigningKey` Secret's `key`.
    pub key_pem: String,
}

/// ARM and Entra base URLs.
#[derive(Clone, Debug)]
pub struct Endpoints {
    pub arm: String,
    pub entra: String,
}

/// A client for one identity, keeping its ARM token until shortly before it expires.
pub struct Session {
    http: reqwest::Client,
    endpoints: Endpoints,
    identity: Identity,
    key: Option<SigningKey>,
    token: Option<(String, Instant)>,
    /// Resource SKUs by location, once listed.
    skus: HashMap<String, Vec<Value>>,
}

/// The HTTP client: trusting only `ca_pem` when given (the dev CA), no redirects followed.
pub fn http_client(ca_pem: Option<&str>) -> Result<reqwest::Client, String> {
    let mut builder = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .redirect(reqwest::redirect::Policy::none());
    if let Some(pem) = ca_pem {
        let ca = reqwest::Certificate::from_pem(pem.as_bytes())
            .map_err(|e| format!("CA certificate: {e}"))?;
        builder = builder.tls_certs_only([ca]);
    }
    builder.build().map_err(|e| format!("HTTP client: {e}"))
}

/// What one HTTP exchange returned.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// `Retry-After` in seconds, bounded for the emulator.
    fn poll_delay(&self) -> Duration {
        self.headers
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map_or(DEFAULT_POLL_DELAY, Duration::from_secs)
            .min(MAX_POLL_DELAY)
    }
}

impl Session {
    pub fn new(http: reqwest::Client, endpoints: Endpoints, identity: Identity) -> Self {
        Self {
            http,
            endpoints,
            identity,
            key: None,
            token: None,
            skus: HashMap::new(),
        }
    }

    /// The identity this session acts as.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// An ARM access token: the cached one, or a new one for a fresh assertion.
    async fn bearer(&mut self) -> Result<String, CallError> {
        if let Some((token, expires)) = &self.token
            && Instant::now() + RENEW_BEFORE < *expires
        {
            return Ok(token.clone());
        }
        if self.key.is_none() {
            let key = token::signing_key(&self.identity.key_pem)
                .map_err(|e| CallError::Other(format!("WorkloadIdentityCredential: {e}")))?;
            self.key = Some(key);
        }
        let Some(key) = &self.key else {
            return Err(CallError::Other("no signing key".into()));
        };
        let assertion = token::mint(
            key,
            &self.identity.issuer,
            token::CAPZ_SUBJECT,
            token::AUDIENCE,
            token::LIFETIME,
        )
        .map_err(|e| CallError::Other(format!("WorkloadIdentityCredential: {e}")))?;
        let url = format!(
            "{}/{}/oauth2/v2.0/token",
            self.endpoints.entra.trim_end_matches('/'),
            self.identity.tenant_id
        );
        let form = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("client_assertion", &assertion)
            .append_pair("client_assertion_type", JWT_BEARER)
            .append_pair("client_id", &self.identity.client_id)
            .append_pair("grant_type", "client_credentials")
            .append_pair("scope", ARM_SCOPE)
            .finish();
        let answer = self
            .exchange(
                self.http
                    .post(&url)
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(form),
                &Method::POST,
                &url,
            )
            .await?;
        if !answer.status.is_success() {
            return Err(CallError::Authentication {
                status: answer.status.as_u16(),
                text: authentication_failed_text(&url, &answer),
            });
        }
        let body = answer.json();
        let token = body
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or_else(|| CallError::Other("WorkloadIdentityCredential: no access_token".into()))?
            .to_owned();
        let lifetime = body.get("expires_in").and_then(Value::as_u64).unwrap_or(0);
        self.token = Some((
            token.clone(),
            Instant::now() + Duration::from_secs(lifetime),
        ));
        Ok(token)
    }

    async fn exchange(
        &self,
        request: reqwest::RequestBuilder,
        method: &Method,
        url: &str,
    ) -> Result<Answer, CallError> {
        let transport = |e: reqwest::Error| {
            // Go's net/http words a transport failure `<Method> "<url>": <cause>`.
            let method = method.as_str();
            let verb = format!("{}{}", &method[..1], method[1..].to_ascii_lowercase());
            CallError::Other(format!("{verb} {url:?}: {e}"))
        };
        let resp = request.send().await.map_err(transport)?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = resp.bytes().await.map_err(transport)?.to_vec();
        Ok(Answer {
            status,
            headers,
            body,
        })
    }

    /// One authenticated ARM request; errors are azcore's `ResponseError`.
    async fn call(
        &mut self,
        method: Method,
        url: &str,
        body: Option<&Value>,
    ) -> Result<Answer, CallError> {
        let token = self.bearer().await?;
        let mut request = self
            .http
            .request(method.clone(), url)
            .bearer_auth(token)
            .header("accept", "application/json");
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        let answer = self.exchange(request, &method, url).await?;
        if answer.status.is_success() {
            return Ok(answer);
        }
        Err(response_error(&method, url, &answer))
    }

    fn url(&self, id: &str, api: &str) -> String {
        format!(
            "{}{id}?api-version={api}",
            self.endpoints.arm.trim_end_matches('/')
        )
    }

    /// `GET` a resource; `None` when ARM says it does not exist.
    pub async fn get(&mut self, id: &str, api: &str) -> Result<Option<Value>, CallError> {
        let url = self.url(id, api);
        match self.call(Method::GET, &url, None).await {
            Ok(answer) => Ok(Some(answer.json())),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Every item of a list at `path` (a subscription-level path, without query) with `query`
    /// pairs added to the api-version, following `nextLink` as azcore's pagers do.
    pub async fn list(
        &mut self,
        path: &str,
        api: &str,
        query: &[(&str, &str)],
    ) -> Result<Vec<Value>, CallError> {
        let mut first = Url::parse(&self.url(path, api))
            .map_err(|e| CallError::Other(format!("list {path}: {e}")))?;
        first.query_pairs_mut().extend_pairs(query);
        let mut next = Some(first.to_string());
        let mut items = Vec::new();
        while let Some(url) = next.take() {
            let page = self.call(Method::GET, &url, None).await?.json();
            if let Some(value) = page.get("value").and_then(Value::as_array) {
                items.extend(value.iter().cloned());
            }
            next = page
                .get("nextLink")
                .and_then(Value::as_str)
                .filter(|l| !l.is_empty())
                .map(str::to_owned);
        }
        Ok(items)
    }

    /// The Resource SKUs of `location`, listed as CAPZ lists them (`$filter=location eq
    /// '<location>'`) the first time and kept after: CAPZ's SKU cache is process-wide, keyed by
    /// location and identity (a session is one identity), and never refilled once it holds a
    /// list (`resourceskus.GetCache`, 24 h TTL). A failed list is not kept.
    pub async fn resource_skus(
        &mut self,
        subscription: &str,
        location: &str,
    ) -> Result<&[Value], CallError> {
        if !self.skus.contains_key(location) {
            let filter = format!("location eq '{location}'");
            let listed = self
                .list(
                    &format!("/subscriptions/{subscription}/providers/Microsoft.Compute/skus"),
                    RESOURCE_SKUS_API,
                    &[("$filter", filter.as_str())],
                )
                .await?;
            self.skus.insert(location.to_owned(), listed);
        }
        Ok(self
            .skus
            .get(location)
            .map(Vec::as_slice)
            .unwrap_or_default())
    }

    /// `PUT` a resource and wait for its operation; answers the resource as it ended.
    pub async fn put(&mut self, id: &str, api: &str, body: &Value) -> Result<Value, CallError> {
        let url = self.url(id, api);
        let answer = self.call(Method::PUT, &url, Some(body)).await?;
        if let Some(operation) = answer.header("azure-asyncoperation").map(str::to_owned) {
            self.wait(&operation, answer.poll_delay()).await?;
        } else if answer.status == StatusCode::ACCEPTED
            && let Some(location) = answer.header("location").map(str::to_owned)
        {
            self.wait_location(&location, answer.poll_delay()).await?;
        } else {
            return Ok(answer.json());
        }
        Ok(self.get(id, api).await?.unwrap_or(Value::Null))
    }

    /// `DELETE` a resource and wait for its operation; one that does not exist is deleted.
    pub async fn delete(&mut self, id: &str, api: &str) -> Result<(), CallError> {
        let url = self.url(id, api);
        let answer = match self.call(Method::DELETE, &url, None).await {
            Ok(a) => a,
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(e),
        };
        if let Some(operation) = answer.header("azure-asyncoperation").map(str::to_owned) {
            self.wait(&operation, answer.poll_delay()).await
        } else if answer.status == StatusCode::ACCEPTED
            && let Some(location) = answer.header("location").map(str::to_owned)
        {
            self.wait_location(&location, answer.poll_delay()).await
        } else {
            Ok(())
        }
    }

    /// Polls an `Azure-AsyncOperation` status resource until the operation ends.
    async fn wait(&mut self, operation: &str, first_delay: Duration) -> Result<(), CallError> {
        let deadline = Instant::now() + OPERATION_TIMEOUT;
        let mut delay = first_delay;
        loop {
            tokio::time::sleep(delay).await;
            let answer = self.call(Method::GET, operation, None).await?;
            let body = answer.json();
            // azcore's async poller cannot go on without the status resource's `status`.
            let Some(status) = body.get("status").and_then(Value::as_str) else {
                return Err(CallError::Other(if answer.body.is_empty() {
                    "the response did not contain a body".to_owned()
                } else {
                    "the response did not contain a status".to_owned()
                }));
            };
            match status {
                s if s.eq_ignore_ascii_case("Succeeded") => return Ok(()),
                s if s.eq_ignore_ascii_case("Failed") || s.eq_ignore_ascii_case("Canceled") => {
                    // azcore's poller reports the failed operation as a ResponseError of the
                    // last poll, its code from the status resource's `error`.
                    return Err(response_error(&Method::GET, operation, &answer));
                }
                _ => {}
            }
            if Instant::now() > deadline {
                return Err(CallError::Other(format!(
                    "operation {operation} did not end in {OPERATION_TIMEOUT:?}"
                )));
            }
            delay = answer.poll_delay();
        }
    }

    /// Polls a `Location` until it stops answering `202`.
    async fn wait_location(
        &mut self,
        location: &str,
        first_delay: Duration,
    ) -> Result<(), CallError> {
        let deadline = Instant::now() + OPERATION_TIMEOUT;
        let mut delay = first_delay;
        loop {
            tokio::time::sleep(delay).await;
            let answer = self.call(Method::GET, location, None).await?;
            if answer.status != StatusCode::ACCEPTED {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(CallError::Other(format!(
                    "operation {location} did not end in {OPERATION_TIMEOUT:?}"
                )));
            }
            delay = answer.poll_delay();
        }
    }
}

/// `<METHOD> <scheme>://<host><path>` as Go prints a request (no query).
fn request_line(method: &Method, url: &str) -> String {
    match Url::parse(url) {
        Ok(u) => {
            let host = match (u.host_str(), u.port()) {
                (Some(h), Some(p)) => format!("{h}:{p}"),
                (Some(h), None) => h.to_owned(),
                _ => String::new(),
            };
            format!("{method} {}://{host}{}", u.scheme(), u.path())
        }
        Err(_) => format!("{method} {url}"),
    }
}

/// Go's `Response.Status`: `403 Forbidden`.
fn status_text(status: StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("{} {reason}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
}

/// The ARM error code azcore reads: `x-ms-error-code`, else the body's `error.code`.
fn error_code(answer: &Answer) -> Option<String> {
    answer
        .header("x-ms-error-code")
        .map(str::to_owned)
        .or_else(|| {
            let body = answer.json();
            body.pointer("/error/code")
                .or_else(|| body.get("code"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .filter(|c| !c.is_empty())
}

/// azcore's `ResponseError` for `answer`.
fn response_error(method: &Method, url: &str, answer: &Answer) -> CallError {
    let code = error_code(answer);
    let mut text = String::new();
    text.push_str(&request_line(method, url));
    text.push('\n');
    text.push_str(SEPARATOR);
    text.push('\n');
    text.push_str(&format!(
        "RESPONSE {}: {}\n",
        answer.status.as_u16(),
        status_text(answer.status)
    ));
    match &code {
        Some(c) => text.push_str(&format!("ERROR CODE: {c}\n")),
        None => text.push_str("ERROR CODE UNAVAILABLE\n"),
    }
    text.push_str(SEPARATOR);
    text.push('\n');
    if answer.body.is_empty() {
        text.push_str("Response contained no body\n");
    } else {
        text.push_str(&indent_json(&String::from_utf8_lossy(&answer.body)));
        text.push('\n');
    }
    text.push_str(SEPARATOR);
    text.push('\n');
    CallError::Response {
        status: answer.status.as_u16(),
        code,
        text,
    }
}

/// azidentity's `AuthenticationFailedError` text for a refused token request.
fn authentication_failed_text(url: &str, answer: &Answer) -> String {
    let body = if answer.body.is_empty() {
        "Response contained no body".to_owned()
    } else {
        indent_json(&String::from_utf8_lossy(&answer.body))
    };
    format!(
        "WorkloadIdentityCredential authentication failed. \n{}\n{SEPARATOR}\nRESPONSE {}: {}\n\
         {SEPARATOR}\n{body}\n{SEPARATOR}\nTo troubleshoot, visit \
         https://aka.ms/azsdk/go/identity/troubleshoot#workload",
        request_line(&Method::POST, url),
        answer.status.as_u16(),
        status_text(answer.status),
    )
}

/// Go's `json.Indent(dst, src, "", "  ")`: the document re-indented two spaces a level, keys
/// in their original order, empty objects and arrays kept as `{}`/`[]`; text that is not JSON
/// comes back verbatim (as azcore prints it).
pub(crate) fn indent_json(raw: &str) -> String {
    if serde_json::from_str::<serde::de::IgnoredAny>(raw).is_err() {
        return raw.to_owned();
    }
    let mut out = String::with_capacity(raw.len() * 2);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let chars: Vec<char> = raw.chars().collect();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        for _ in 0..depth {
            out.push_str("  ");
        }
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                let close = if c == '{' { '}' } else { ']' };
                let mut j = i;
                while j < chars.len() && chars[j].is_whitespace() {
                    j += 1;
                }
                if chars.get(j) == Some(&close) {
                    out.push(c);
                    out.push(close);
                    i = j + 1;
                } else {
                    out.push(c);
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_whitespace() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_indented_as_go_indents_it() {
        let raw = r#"{"error":{"code":"AuthorizationFailed","message":"a \"q\", b: {c}","details":[],"x":{}}}"#;
        assert_eq!(
            indent_json(raw),
            "{\n  \"error\": {\n    \"code\": \"AuthorizationFailed\",\n    \"message\": \
             \"a \\\"q\\\", b: {c}\",\n    \"details\": [],\n    \"x\": {}\n  }\n}"
        );
        assert_eq!(indent_json("not json"), "not json");
        assert_eq!(indent_json("[1, 2]"), "[\n  1,\n  2\n]");
    }

    #[test]
    fn an_arm_refusal_reads_as_azcore_prints_it() {
        let body = br#"{"error":{"code":"AuthorizationFailed","message":"no"}}"#;
        let answer = Answer {
            status: StatusCode::FORBIDDEN,
            headers: HeaderMap::new(),
            body: body.to_vec(),
        };
        let e = response_error(
            &Method::GET,
            "https://127.0.0.1:8443/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/networkInterfaces/n?api-version=2023-05-01",
            &answer,
        );
        let CallError::Response { status, code, text } = e else {
            panic!("{e:?}")
        };
        assert_eq!(
            (status, code.as_deref()),
            (403, Some("AuthorizationFailed"))
        );
        assert_eq!(
            text,
            format!(
                "GET https://127.0.0.1:8443/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/networkInterfaces/n\n\
                 {SEPARATOR}\nRESPONSE 403: 403 Forbidden\nERROR CODE: AuthorizationFailed\n{SEPARATOR}\n\
                 {{\n  \"error\": {{\n    \"code\": \"AuthorizationFailed\",\n    \"message\": \"no\"\n  }}\n}}\n{SEPARATOR}\n"
            )
        );
    }
}
