//! [`ArmClient`]: GET / PUT / DELETE / list over ARM REST, LROs run to the end.

use std::sync::Arc;
use std::time::Duration;

use azure_core::http::policies::Policy;
use azure_core::http::policies::auth::BearerTokenAuthorizationPolicy;
use azure_core::http::{Method, Pipeline};
use url::Url;

use crate::config::ArmConfig;
use crate::error::{ArmError, Result};
use crate::gate::{Feedback, Gate, Hooks, MutationGuard, RequestClass};
use crate::lro;
use crate::request::{self, Answer, log_path};
use crate::transport;

/// The ARM REST client every service uses. Cheap to clone (one `Arc`); clones share the HTTP
/// connection pool and the token cache.
///
/// ```no_run
/// # async fn demo() -> Result<(), hypersaga_azure::ArmError> {
/// use std::time::Duration;
/// use hypersaga_azure::{ids, ArmClient, ArmConfig, CredentialConfig, Secret};
///
/// let arm = ArmClient::new(ArmConfig {
///     resource_manager_url: "https://management.azure.com".parse().unwrap(),
///     authority_host: "https://login.microsoftonline.com".parse().unwrap(),
///     ca_bundle_pem: None,
///     credential: CredentialConfig::ClientSecret {
///         tenant_id: "00000000-0000-0000-0000-000000000000".into(),
///         client_id: "11111111-1111-1111-1111-111111111111".into(),
///         client_secret: Secret::new("…"),
///     },
///     lro_poll_interval: ArmConfig::DEFAULT_POLL_INTERVAL,
///     lro_timeout: Duration::from_secs(15 * 60),
/// })?;
/// let rg = ids::resource_group_id("sub", "my-rg");
/// let created = arm.put(&rg, "2024-03-01", &serde_json::json!({"location": "eastus"})).await?;
/// assert_eq!(created["properties"]["provisioningState"], "Succeeded");
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ArmClient {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub pipeline: Pipeline,
    /// ARM base URL (origin plus optional path prefix).
    pub base: Url,
    pub poll_interval: Duration,
    pub lro_timeout: Duration,
    /// The shared request budget, when one is installed.
    pub gate: Option<Arc<dyn Gate>>,
    /// Asked before every request that changes something, when one is installed.
    pub guard: Option<Arc<dyn MutationGuard>>,
}

impl std::fmt::Debug for ArmClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArmClient")
            .field("resource_manager_url", &self.inner.base.as_str())
            .finish_non_exhaustive()
    }
}

impl ArmClient {
    /// Builds the client: a TLS transport trusting `ca_bundle_pem`, the credential (using the
    /// same transport), and a pipeline with bearer-token auth and no automatic retries.
    /// Does no I/O; the first token is fetched on the first call.
    pub fn new(config: ArmConfig) -> Result<Self> {
        Self::with_hooks(config, Hooks::default())
    }

    /// As [`ArmClient::new`], with every request paced by `hooks.gate` (see [`Gate`]) and
    /// every mutating one allowed by `hooks.guard` first (see [`MutationGuard`]).
    pub fn with_hooks(config: ArmConfig, hooks: Hooks) -> Result<Self> {
        if config.resource_manager_url.scheme() != "https" {
            // azure_core refuses to send a bearer token over plain HTTP; fail early and clearly.
            return Err(ArmError::Config(format!(
                "resource_manager_url must be https: {}",
                config.resource_manager_url
            )));
        }
        if config.lro_poll_interval.is_zero() {
            return Err(ArmError::Config("lro_poll_interval must be > 0".into()));
        }
        let http = transport::http_client(config.ca_bundle_pem.as_deref())?;
        let credential = transport::credential(&config, &http)?;
        let auth: Arc<dyn Policy> = Arc::new(BearerTokenAuthorizationPolicy::new(
            credential,
            [config.token_scope()],
        ));
        let pipeline = Pipeline::new(
            option_env!("CARGO_PKG_NAME"),
            option_env!("CARGO_PKG_VERSION"),
            transport::client_options(&http),
            Vec::new(),
            vec![auth],
            None,
        );
        let mut base = config.resource_manager_url.clone();
        base.set_query(None);
        base.set_fragment(None);
        Ok(Self {
            inner: Arc::new(Inner {
                pipeline,
                base,
                poll_interval: config.lro_poll_interval,
                lro_timeout: config.lro_timeout,
                gate: hooks.gate,
                guard: hooks.guard,
            }),
        })
    }

    /// Reads a resource. `Ok(None)` when ARM answers that the resource, a parent or its
    /// resource group is missing — the "look" of look-then-adopt-or-create. Any other 404
    /// (`SubscriptionNotFound`, `InvalidResourceType`) is an error.
    pub async fn get(&self, id: &str, api_version: &str) -> Result<Option<serde_json::Value>> {
        let url = self.inner.url(id, api_version)?;
        self.inner.get_url(&url).await
    }

    /// Creates or replaces a resource and waits for it: follows `Azure-AsyncOperation`,
    /// `Location` or a non-terminal `provisioningState` until the operation ends, honouring
    /// `Retry-After`, then returns the resource as a final GET shows it.
    ///
    /// A `Failed`/`Canceled` operation is [`ArmError::OperationFailed`] with the operation's
    /// error code and message.
    pub async fn put(
        &self,
        id: &str,
        api_version: &str,
        body: &serde_json::Value,
    ) -> Result<serde_json::Value> {
        let url = self.inner.url(id, api_version)?;
        lro::put(&self.inner, &url, body).await
    }

    /// Deletes a resource and waits until it is gone. Absent already (404, 204) is success,
    /// so an undo step can run any number of times.
    pub async fn delete(&self, id: &str, api_version: &str) -> Result<()> {
        let url = self.inner.url(id, api_version)?;
        lro::delete(&self.inner, &url).await
    }

    /// Starts creating or replacing a resource: [`lro::Progress::Done`] with the resource
    /// when ARM finished at once, else [`lro::Progress::Running`] with what to poll — a value
    /// a step can hand to the saga and poll again later with [`ArmClient::poll_once`], so no
    /// worker waits while Azure works.
    pub async fn begin_put(
        &self,
        id: &str,
        api_version: &str,
        body: &serde_json::Value,
    ) -> Result<lro::Progress> {
        let url = self.inner.url(id, api_version)?;
        lro::begin_put(&self.inner, &url, body).await
    }

    /// Starts deleting a resource; done at once when ARM says so (or it was absent already).
    pub async fn begin_delete(&self, id: &str, api_version: &str) -> Result<lro::Progress> {
        let url = self.inner.url(id, api_version)?;
        lro::begin_delete(&self.inner, &url).await
    }

    /// Polls an operation started by [`ArmClient::begin_put`] / [`ArmClient::begin_delete`]
    /// once. Only URLs on this client's ARM origin are followed.
    pub async fn poll_once(&self, pending: &lro::Pending) -> Result<lro::Progress> {
        lro::poll_once(&self.inner, pending).await
    }

    /// Lists a collection (`{"value":[…],"nextLink":…}`), following every `nextLink`.
    /// `path` may carry its own query (`$filter=…`); `api-version` is added.
    pub async fn list(&self, path: &str, api_version: &str) -> Result<Vec<serde_json::Value>> {
        let mut url = self.inner.url(path, api_version)?;
        let mut items = Vec::new();
        loop {
            let answer = self.inner.send(Method::Get, &url, None, 1).await?;
            if !answer.is_success() {
                return Err(answer.into_error(&Method::Get, &log_path(&url)));
            }
            let page = answer.json(&log_path(&url))?.unwrap_or_default();
            match page.get("value") {
                Some(serde_json::Value::Array(values)) => items.extend(values.iter().cloned()),
                None | Some(serde_json::Value::Null) => {}
                Some(_) => {
                    return Err(ArmError::InvalidResponse {
                        path: log_path(&url),
                        message: "list `value` is not an array".into(),
                    });
                }
            }
            match page
                .get("nextLink")
                .and_then(|v| v.as_str())
                .filter(|s| !s.is_empty())
            {
                Some(next) => url = self.inner.trusted_url(next)?,
                None => return Ok(items),
            }
        }
    }
}

impl Inner {
    /// `base + path_and_query + api-version`.
    pub fn url(&self, path_and_query: &str, api_version: &str) -> Result<Url> {
        if !path_and_query.starts_with('/') {
            return Err(ArmError::Config(format!(
                "ARM path must start with '/': {path_and_query:?}"
            )));
        }
        let (path, query) = match path_and_query.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (path_and_query, None),
        };
        let mut url = self.base.clone();
        url.set_path(&format!(
            "{}{}",
            self.base.path().trim_end_matches('/'),
            path
        ));
        url.set_query(query);
        if !url.query_pairs().any(|(k, _)| k == "api-version") {
            url.query_pairs_mut()
                .append_pair("api-version", api_version);
        }
        Ok(url)
    }

    /// Parses a URL ARM handed us (nextLink, Azure-AsyncOperation, Location) and checks it
    /// points at the same ARM origin, so the bearer token never goes to another host.
    pub fn trusted_url(&self, link: &str) -> Result<Url> {
        let url = self
            .base
            .join(link)
            .map_err(|e| ArmError::InvalidResponse {
                path: log_path(&self.base),
                message: format!("bad link from ARM: {e}"),
            })?;
        if url.origin() != self.base.origin() {
            return Err(ArmError::InvalidResponse {
                path: log_path(&url),
                message: format!(
                    "ARM pointed at another origin ({}); refusing to send the token there",
                    url.origin().ascii_serialization()
                ),
            });
        }
        Ok(url)
    }

    /// Sends one request, paced by the gate when there is one.
    pub async fn send(
        &self,
        method: Method,
        url: &Url,
        body: Option<&serde_json::Value>,
        attempt: u32,
    ) -> Result<Answer> {
        let class = RequestClass::of(&method);
        // Fenced before paced: a request that must not be sent takes no budget.
        if class != RequestClass::Read
            && let Some(guard) = &self.guard
            && let Err(reason) = guard.allow().await
        {
            return Err(ArmError::Fenced {
                path: log_path(url),
                method: method.to_string(),
                reason,
            });
        }
        if let Some(gate) = &self.gate
            && let Err(retry_after) = gate.admit(class).await
        {
            return Err(ArmError::Paced {
                path: log_path(url),
                class: class.as_str(),
                retry_after,
            });
        }
        let answer = request::send(&self.pipeline, method, url, body, attempt).await?;
        if let Some(gate) = &self.gate {
            let remaining = answer
                .header(class.remaining_header())
                .and_then(|v| v.trim().parse().ok());
            gate.observe(Feedback {
                class,
                status: answer.status,
                remaining,
                retry_after: answer.retry_after(),
            })
            .await;
        }
        Ok(answer)
    }

    /// GET returning `None` on 404.
    pub async fn get_url(&self, url: &Url) -> Result<Option<serde_json::Value>> {
        // The look of look-then-create: "not there" is an answer, not a failure.
        let answer =
            hypersaga_telemetry::http::expecting_absence(self.send(Method::Get, url, None, 1))
                .await?;
        if answer.is_absent() {
            return Ok(None);
        }
        if answer.is_success() {
            return answer.json(&log_path(url));
        }
        Err(answer.into_error(&Method::Get, &log_path(url)))
    }
}
