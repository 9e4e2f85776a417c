//! A typed client for the admin API, used by the CLI (`hypersaga emulator fault add …`,
//! `emulator requests`) and by tests.
//!
//! ```no_run
//! # async fn demo() -> Result<(), hypersaga_emulator_arm::admin_client::Error> {
//! use hypersaga_emulator_arm::{FaultSpec, admin_client::AdminClient};
//! let admin = AdminClient::new("http://127.0.0.1:9090".parse().expect("url"));
//! admin.add_fault(&FaultSpec {
//!     method: "PUT".into(),
//!     resource_type: "Microsoft.Network/privateDnsZones".into(),
//!     name_contains: None,
//!     path_contains: None,
//!     status: 403,
//!     code: "AuthorizationFailed".into(),
//!     message: None,
//!     retry_after_secs: None,
//!     count: Some(1),
//! }).await?;
//! # Ok(()) }
//! ```

use serde::de::DeserializeOwned;
use serde_json::Value;
use url::Url;

use crate::config::Principal;
use crate::directories::DirectoryListing;
use crate::directory::AppRegistration;
use crate::faults::{AsyncFault, AsyncFaultSpec, Fault, FaultSpec};
use crate::quota::QuotaLimit;
use crate::requests::RequestStats;

/// Errors talking to the admin API.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("admin API request failed")]
    Http(#[from] reqwest::Error),
    #[error("admin API answered {status}: {body}")]
    Status { status: u16, body: String },
    #[error("invalid admin URL")]
    Url(#[from] url::ParseError),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Client for one emulator's admin API.
#[derive(Clone, Debug)]
pub struct AdminClient {
    http: reqwest::Client,
    base: Url,
}

impl AdminClient {
    /// `base` is the admin listener, e.g. `http://127.0.0.1:9090`.
    pub fn new(base: Url) -> Self {
        Self {
            http: reqwest::Client::new(),
            base,
        }
    }

    pub fn with_client(base: Url, http: reqwest::Client) -> Self {
        Self { http, base }
    }

    async fn check(resp: reqwest::Response) -> Result<reqwest::Response> {
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let body = resp.text().await.unwrap_or_default();
        Err(Error::Status {
            status: status.as_u16(),
            body,
        })
    }

    async fn json<T: DeserializeOwned>(resp: reqwest::Response) -> Result<T> {
        Ok(Self::check(resp).await?.json().await?)
    }

    /// Installs a fault; answers it with its id.
    pub async fn add_fault(&self, spec: &FaultSpec) -> Result<Fault> {
        Self::json(
            self.http
                .post(self.base.join("faults")?)
                .json(spec)
                .send()
                .await?,
        )
        .await
    }

    /// Installs a failure-after-acceptance: matching asynchronous operations are accepted,
    /// then end `Failed` with the spec's error.
    pub async fn add_async_fault(&self, spec: &AsyncFaultSpec) -> Result<AsyncFault> {
        Self::json(
            self.http
                .post(self.base.join("faults/async")?)
                .json(spec)
                .send()
                .await?,
        )
        .await
    }

    pub async fn async_faults(&self) -> Result<Vec<AsyncFault>> {
        Self::json(
            self.http
                .get(self.base.join("faults/async")?)
                .send()
                .await?,
        )
        .await
    }

    pub async fn faults(&self) -> Result<Vec<Fault>> {
        Self::json(self.http.get(self.base.join("faults")?).send().await?).await
    }

    pub async fn clear_faults(&self) -> Result<()> {
        Self::check(self.http.delete(self.base.join("faults")?).send().await?).await?;
        Ok(())
    }

    pub async fn requests(&self) -> Result<RequestStats> {
        Self::json(self.http.get(self.base.join("requests")?).send().await?).await
    }

    /// Every stored resource (children included), optionally of one subscription.
    pub async fn resources(&self, subscription: Option<&str>) -> Result<Vec<Value>> {
        let mut url = self.base.join("resources")?;
        if let Some(s) = subscription {
            url.query_pairs_mut().append_pair("subscription", s);
        }
        Self::json(self.http.get(url).send().await?).await
    }

    /// Every role assignment, optionally of one subscription, in ARM's JSON form.
    pub async fn role_assignments(&self, subscription: Option<&str>) -> Result<Vec<Value>> {
        let mut url = self.base.join("role-assignments")?;
        if let Some(s) = subscription {
            url.query_pairs_mut().append_pair("subscription", s);
        }
        Self::json(self.http.get(url).send().await?).await
    }

    /// Deletes a role assignment by id, bypassing ARM's checks (fault tests: a grant that
    /// disappears under a running system). `None` when there was no such assignment.
    pub async fn delete_role_assignment(&self, id: &str) -> Result<Option<Value>> {
        let mut url = self.base.join("role-assignments")?;
        url.query_pairs_mut().append_pair("id", id);
        let resp = self.http.delete(url).send().await?;
        if resp.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        Ok(Some(Self::json(resp).await?))
    }

    /// Sets the vCPU limit of one subscription's region for `cores` (the regional total) or a
    /// VM family; answers it as the emulator keeps it (region normalised, family as the usage
    /// list spells it). A VM PUT beyond it is refused with `409 OperationNotAllowed`.
    pub async fn set_quota_limit(&self, limit: &QuotaLimit) -> Result<QuotaLimit> {
        Self::json(
            self.http
                .put(self.base.join("quotas")?)
                .json(limit)
                .send()
                .await?,
        )
        .await
    }

    /// Every vCPU limit set through [`AdminClient::set_quota_limit`], optionally of one
    /// subscription.
    pub async fn quota_limits(&self, subscription: Option<&str>) -> Result<Vec<QuotaLimit>> {
        let mut url = self.base.join("quotas")?;
        if let Some(s) = subscription {
            url.query_pairs_mut().append_pair("subscription", s);
        }
        Self::json(self.http.get(url).send().await?).await
    }

    /// Forgets every limit set: every subscription is back to the configured defaults.
    pub async fn clear_quota_limits(&self) -> Result<()> {
        Self::check(self.http.delete(self.base.join("quotas")?).send().await?).await?;
        Ok(())
    }

    /// Every app registration made through Graph (optionally of one tenant), with its
    /// federated identity credentials and its service principal, whether or not Entra has
    /// replicated them yet.
    pub async fn applications(&self, tenant: Option<&str>) -> Result<Vec<AppRegistration>> {
        let mut url = self.base.join("directory/applications")?;
        if let Some(t) = tenant {
            url.query_pairs_mut().append_pair("tenant", t);
        }
        Self::json(self.http.get(url).send().await?).await
    }

    /// Adds an Entra directory with its administrator (a client-secret app) and the
    /// subscriptions it owns, as if configured at start. Re-adding the very same directory is
    /// not an error; a tenant, client id or subscription of another directory is
    /// `Error::Status { status: 409, .. }`.
    pub async fn add_directory(&self, directory: &Principal) -> Result<DirectoryListing> {
        Self::json(
            self.http
                .post(self.base.join("directories")?)
                .json(directory)
                .send()
                .await?,
        )
        .await
    }

    /// Every Entra directory, configured and added, without secrets.
    pub async fn directories(&self) -> Result<Vec<DirectoryListing>> {
        Self::json(self.http.get(self.base.join("directories")?).send().await?).await
    }

    pub async fn reset(&self) -> Result<()> {
        Self::check(self.http.post(self.base.join("reset")?).send().await?).await?;
        Ok(())
    }
}
