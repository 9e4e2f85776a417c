//! Typed client of the admin API, for tests and the `hypersaga` CLI.

use std::collections::BTreeMap;

use serde_json::Value;

pub use crate::faults::{ApiFault, Fault, FaultKind, InstalledApiFault};

/// Errors from the admin API.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("admin API request failed")]
    Http(#[from] reqwest::Error),
    #[error("admin API answered {status}: {body}")]
    Status { status: u16, body: String },
}

/// Client of one emulator's admin API.
#[derive(Debug, Clone)]
pub struct AdminClient {
    base: String,
    http: reqwest::Client,
}

impl AdminClient {
    /// `base_url` like `http://127.0.0.1:7001` (no trailing path).
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base: base_url.into().trim_end_matches('/').to_owned(),
            http: reqwest::Client::new(),
        }
    }

    async fn check(resp: reqwest::Response) -> Result<reqwest::Response, AdminError> {
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let body = resp.text().await.unwrap_or_default();
        Err(AdminError::Status {
            status: status.as_u16(),
            body,
        })
    }

    /// Makes matching objects fail until [`AdminClient::clear_faults`].
    pub async fn inject_fault(&self, fault: &Fault) -> Result<(), AdminError> {
        let resp = self
            .http
            .post(format!("{}/faults", self.base))
            .json(fault)
            .send()
            .await?;
        Self::check(resp).await.map(drop)
    }

    /// Active faults.
    pub async fn faults(&self) -> Result<Vec<Fault>, AdminError> {
        let resp = self
            .http
            .get(format!("{}/faults", self.base))
            .send()
            .await?;
        Ok(Self::check(resp).await?.json().await?)
    }

    /// Answers matching Kubernetes API requests with an error until used up or cleared.
    pub async fn add_api_fault(&self, fault: &ApiFault) -> Result<InstalledApiFault, AdminError> {
        let resp = self
            .http
            .post(format!("{}/faults/api", self.base))
            .json(fault)
            .send()
            .await?;
        Ok(Self::check(resp).await?.json().await?)
    }

    /// The API faults in force.
    pub async fn api_faults(&self) -> Result<Vec<InstalledApiFault>, AdminError> {
        let resp = self
            .http
            .get(format!("{}/faults/api", self.base))
            .send()
            .await?;
        Ok(Self::check(resp).await?.json().await?)
    }

    /// Removes the faults (of objects and of the API) scoped by exactly `name_contains`;
    /// answers how many.
    pub async fn remove_faults(&self, name_contains: &str) -> Result<u64, AdminError> {
        let resp = self
            .http
            .delete(format!("{}/faults/objects/{name_contains}", self.base))
            .send()
            .await?;
        let body: Value = Self::check(resp).await?.json().await?;
        Ok(body["removed"].as_u64().unwrap_or_default())
    }

    /// Removes every fault (of objects and of the API); stuck objects then converge.
    pub async fn clear_faults(&self) -> Result<(), AdminError> {
        let resp = self
            .http
            .delete(format!("{}/faults", self.base))
            .send()
            .await?;
        Self::check(resp).await.map(drop)
    }

    /// Sets the simulated workload of NodePool `namespace/name` to `nodes` nodes: the
    /// cluster-autoscaler of an autoscaled pool sizes it to that within `spec.autoScaling`
    /// (`PUT /nodepools/{namespace}/{name}/demand`).
    pub async fn set_node_pool_demand(
        &self,
        namespace: &str,
        name: &str,
        nodes: u32,
    ) -> Result<(), AdminError> {
        let resp = self
            .http
            .put(format!("{}/nodepools/{namespace}/{name}/demand", self.base))
            .json(&serde_json::json!({ "nodes": nodes }))
            .send()
            .await?;
        Self::check(resp).await.map(drop)
    }

    /// Forgets NodePool `namespace/name`'s simulated workload; answers whether it had one
    /// (`DELETE /nodepools/{namespace}/{name}/demand`).
    pub async fn clear_node_pool_demand(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<bool, AdminError> {
        let resp = self
            .http
            .delete(format!("{}/nodepools/{namespace}/{name}/demand", self.base))
            .send()
            .await?;
        if resp.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(false);
        }
        Self::check(resp).await.map(|_| true)
    }

    /// The simulated workloads in force, in nodes, by `<namespace>/<name>` (`GET /demand`).
    pub async fn node_pool_demands(&self) -> Result<BTreeMap<String, i64>, AdminError> {
        let resp = self
            .http
            .get(format!("{}/demand", self.base))
            .send()
            .await?;
        Ok(Self::check(resp).await?.json().await?)
    }

    /// Every stored object as JSON.
    pub async fn objects(&self) -> Result<Vec<Value>, AdminError> {
        let resp = self
            .http
            .get(format!("{}/objects", self.base))
            .send()
            .await?;
        Ok(Self::check(resp).await?.json().await?)
    }

    /// The hosted clusters' APIs: control-plane namespace → path under the served URL
    /// (`GET /hosted`).
    pub async fn hosted_apis(&self) -> Result<BTreeMap<String, String>, AdminError> {
        let resp = self
            .http
            .get(format!("{}/hosted", self.base))
            .send()
            .await?;
        Ok(Self::check(resp).await?.json().await?)
    }

    /// Every object of the hosted cluster whose control plane runs in `namespace`
    /// (`GET /hosted/{namespace}/objects`); an error (404) when it has no API.
    pub async fn hosted_objects(&self, namespace: &str) -> Result<Vec<Value>, AdminError> {
        let resp = self
            .http
            .get(format!("{}/hosted/{namespace}/objects", self.base))
            .send()
            .await?;
        Ok(Self::check(resp).await?.json().await?)
    }

    /// Request counts keyed `"<verb> <resource>"`.
    pub async fn requests(&self) -> Result<BTreeMap<String, u64>, AdminError> {
        let resp = self
            .http
            .get(format!("{}/requests", self.base))
            .send()
            .await?;
        Ok(Self::check(resp).await?.json().await?)
    }
}
