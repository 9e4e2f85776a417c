//! The three services a tenant's administrator talks to, on the emulator's one host: Entra's
//! token endpoint, Microsoft Graph (`/v1.0/…`) and ARM; each refusal read into that service's
//! error, and the polling that waits out Entra's replication.

use std::future::Future;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::Value;
use url::Url;

use super::TenantAdmin;
use super::error::TenantAdminError;

/// Which service a request is for, to read its refusals.
#[derive(Clone, Copy)]
pub(super) enum Service {
    Graph,
    Arm,
}

/// How often, and how long, to retry a refusal that waiting may clear.
#[derive(Clone, Copy, Debug)]
pub struct Polling {
    pub interval: Duration,
    pub timeout: Duration,
}

impl Default for Polling {
    /// Half a second, for two minutes: Azure has been seen taking 40-55 s to replicate a
    /// principal (docs/reference/azure-latencies.md §10); the emulator's default is 10 s.
    fn default() -> Self {
        Self {
            interval: Duration::from_millis(500),
            timeout: Duration::from_secs(120),
        }
    }
}

/// Runs `attempt` until it succeeds, fails for good, or `polling.timeout` has passed.
pub(super) async fn poll<T, F, Fut>(
    polling: Polling,
    what: &str,
    attempt: F,
) -> Result<T, TenantAdminError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, TenantAdminError>>,
{
    poll_while(polling, what, TenantAdminError::is_transient, attempt).await
}

/// [`poll`], retrying the refusals `transient` names.
async fn poll_while<T, F, Fut>(
    polling: Polling,
    what: &str,
    transient: fn(&TenantAdminError) -> bool,
    mut attempt: F,
) -> Result<T, TenantAdminError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, TenantAdminError>>,
{
    let started = Instant::now();
    loop {
        match attempt().await {
            Err(e) if transient(&e) => {
                if started.elapsed() >= polling.timeout {
                    return Err(TenantAdminError::Timeout {
                        what: what.to_owned(),
                        waited: started.elapsed(),
                        last: Box::new(e),
                    });
                }
                tracing::debug!(what, error = %e, "waiting for Entra");
                tokio::time::sleep(polling.interval).await;
            }
            other => return other,
        }
    }
}

fn str_field(body: &Value, path: &[&str]) -> Option<String> {
    let mut v = body;
    for p in path {
        v = v.get(p)?;
    }
    v.as_str().map(str::to_owned)
}

impl TenantAdmin {
    /// A `POST` of `pairs` as `application/x-www-form-urlencoded`, what Entra's token
    /// endpoint reads.
    pub(super) fn form_post(&self, url: &Url, pairs: &[(&str, &str)]) -> reqwest::RequestBuilder {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs)
            .finish();
        self.http
            .post(url.clone())
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(body)
    }

    /// `{base}{path}` with `query` appended, percent-encoded.
    pub(super) fn url(&self, path: &str, query: &[(&str, &str)]) -> Result<Url, TenantAdminError> {
        let mut url = self
            .base
            .join(path.trim_start_matches('/'))
            .map_err(|e| TenantAdminError::Invalid(format!("path '{path}': {e}")))?;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        Ok(url)
    }

    /// One request; answers the status and the JSON body (`Null` when empty).
    async fn send(
        &self,
        req: reqwest::RequestBuilder,
        method: &Method,
        url: &Url,
    ) -> Result<(u16, Value), TenantAdminError> {
        let transport = |source| TenantAdminError::Transport {
            method: method.to_string(),
            url: url.to_string(),
            source,
        };
        let resp = req.send().await.map_err(transport)?;
        let status = resp.status().as_u16();
        let text = resp.text().await.map_err(transport)?;
        if text.trim().is_empty() {
            return Ok((status, Value::Null));
        }
        let body = serde_json::from_str(&text).map_err(|e| TenantAdminError::Unexpected {
            url: url.to_string(),
            status,
            reason: format!("not JSON ({e}): {text:.200}"),
        })?;
        Ok((status, body))
    }

    /// A client-credentials token of the administrator for `scope`, with its secret.
    pub(super) async fn token(&self, scope: &str) -> Result<String, TenantAdminError> {
        let url = self.url(&format!("{}/oauth2/v2.0/token", self.directory), &[])?;
        let form = [
            ("grant_type", "client_credentials"),
            ("client_id", self.admin_client_id.as_str()),
            ("client_secret", self.admin_secret.as_str()),
            ("scope", scope),
        ];
        let attempt = || async {
            let req = self.form_post(&url, &form);
            let (status, body) = self.send(req, &Method::POST, &url).await?;
            if (200..300).contains(&status) {
                return str_field(&body, &["access_token"]).ok_or_else(|| {
                    TenantAdminError::Unexpected {
                        url: url.to_string(),
                        status,
                        reason: "no access_token".into(),
                    }
                });
            }
            Err(TenantAdminError::Entra {
                scope: scope.to_owned(),
                status,
                error: str_field(&body, &["error"]).unwrap_or_default(),
                code: body
                    .get("error_codes")
                    .and_then(|c| c.get(0))
                    .and_then(Value::as_u64),
                description: str_field(&body, &["error_description"]).unwrap_or_default(),
            })
        };
        // The administrator's own app is there from the start: a refusal of its secret (a
        // wrong secret, an unknown tenant) is final; only throttling and outages pass.
        poll_while(
            self.polling,
            "the administrator's token",
            unavailable,
            attempt,
        )
        .await
    }

    /// A Graph or ARM call with `token`; a `2xx` body, or the service's refusal.
    pub(super) async fn call(
        &self,
        service: Service,
        token: &str,
        method: Method,
        url: &Url,
        body: Option<&Value>,
    ) -> Result<Value, TenantAdminError> {
        let mut req = self
            .http
            .request(method.clone(), url.clone())
            .bearer_auth(token);
        if let Some(b) = body {
            req = req.json(b);
        }
        let (status, body) = self.send(req, &method, url).await?;
        if (200..300).contains(&status) {
            return Ok(body);
        }
        let code = str_field(&body, &["error", "code"]).unwrap_or_default();
        let message = str_field(&body, &["error", "message"]).unwrap_or_default();
        let path = url.path().to_owned();
        Err(match service {
            Service::Graph => TenantAdminError::Graph {
                method: method.to_string(),
                path,
                status,
                code,
                detail: body
                    .pointer("/error/details/0/code")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                message,
            },
            Service::Arm => TenantAdminError::Arm {
                method: method.to_string(),
                path,
                status,
                code,
                message,
            },
        })
    }

    /// [`TenantAdmin::call`], retried while the refusal is transient.
    pub(super) async fn call_polling(
        &self,
        what: &str,
        service: Service,
        token: &str,
        method: Method,
        url: &Url,
        body: Option<&Value>,
    ) -> Result<Value, TenantAdminError> {
        poll(self.polling, what, || {
            self.call(service, token, method.clone(), url, body)
        })
        .await
    }
}

/// No answer, throttling, or a server error.
fn unavailable(e: &TenantAdminError) -> bool {
    match e {
        TenantAdminError::Transport { .. } => true,
        TenantAdminError::Entra { status, .. } => *status == 429 || *status >= 500,
        _ => false,
    }
}
