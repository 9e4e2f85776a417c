//! What types cannot say: zero or absurd values, settings that contradict each other, and
//! (for one role) files and secrets the role needs. One function per section, each listing
//! every violation with the setting's path, so `serve --check-config` shows all of them at
//! once rather than one per attempt.

use std::collections::HashSet;
use std::fmt;
use std::net::SocketAddr;
use std::path::Path;

use crate::*;

/// One thing wrong with the configuration, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The setting's path (`coordinator.lease_ms`, `tenants[1].tokens`), or the environment
    /// variable that was refused.
    pub setting: String,
    pub message: String,
}

impl Problem {
    pub fn new(setting: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            setting: setting.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.setting, self.message)
    }
}

/// Every problem found, one per line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Problems(pub Vec<Problem>);

impl Problems {
    /// `1 problem`, `3 problems`.
    pub fn summary(&self) -> String {
        match self.0.len() {
            1 => "1 problem".to_owned(),
            n => format!("{n} problems"),
        }
    }
}

impl fmt::Display for Problems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "  - {p}")?;
        }
        Ok(())
    }
}

/// Collects problems of one section under its name.
struct Check<'a> {
    section: &'a str,
    out: Vec<Problem>,
}

impl<'a> Check<'a> {
    fn new(section: &'a str) -> Self {
        Self {
            section,
            out: Vec::new(),
        }
    }

    fn bad(&mut self, key: &str, message: impl Into<String>) {
        let setting = if key.is_empty() {
            self.section.to_owned()
        } else if key.starts_with('[') {
            format!("{}{key}", self.section)
        } else {
            format!("{}.{key}", self.section)
        };
        self.out.push(Problem::new(setting, message));
    }

    /// `min ≤ value ≤ max`, said with the unit the setting's name carries.
    fn range(&mut self, key: &str, value: u64, min: u64, max: u64, why: &str) {
        if value < min {
            if value == 0 {
                self.bad(key, format!("0 is not allowed: {why}"));
            } else {
                self.bad(key, format!("{value} is below the minimum {min}: {why}"));
            }
        } else if value > max {
            self.bad(key, format!("{value} is above the maximum {max}: {why}"));
        }
    }

    fn url(&mut self, key: &str, value: &str, schemes: &[&str]) {
        match url::Url::parse(value) {
            Ok(u) if schemes.contains(&u.scheme()) => {}
            Ok(u) => self.bad(
                key,
                format!(
                    "{value:?}: scheme {:?} is not one of {}",
                    u.scheme(),
                    schemes.join(", ")
                ),
            ),
            Err(e) => self.bad(key, format!("{value:?} is not a URL ({e})")),
        }
    }

    fn port(&mut self, key: &str, addr: SocketAddr) {
        if addr.port() == 0 {
            self.bad(
                key,
                format!("{addr}: port 0 picks a random port nobody could find; give one"),
            );
        }
    }
}

const SECOND_MS: u64 = 1_000;
const HOUR_S: u64 = 3_600;
const DAY_S: u64 = 24 * HOUR_S;

impl NatsConfig {
    pub fn problems(&self) -> Vec<Problem> {
        let mut c = Check::new("nats");
        if self.url.trim().is_empty() {
            c.bad("url", "empty: the NATS server's URL is required");
        }
        // async-nats takes a comma-separated list of servers.
        for server in self.url.split(',').filter(|s| !s.trim().is_empty()) {
            c.url("url", server.trim(), &["nats", "tls", "ws", "wss"]);
        }
        if self.prefix.is_empty()
            || self
                .prefix
                .contains(|ch: char| ch == '.' || ch == '*' || ch == '>' || ch.is_whitespace())
        {
            c.bad(
                "prefix",
                format!(
                    "{:?}: one subject token is required (no `.`, `*`, `>` or spaces)",
                    self.prefix
                ),
            );
        }
        c.range(
            "replicas",
            self.replicas as u64,
            1,
            5,
            "JetStream keeps 1 to 5 copies of a stream",
        );
        c.out
    }
}

impl Config {
    /// Unique tenants and tokens, each with its Azure identity.
    pub fn tenant_problems(&self) -> Vec<Problem> {
        let mut c = Check::new("tenants");
        let mut ids = HashSet::new();
        let mut tokens = HashSet::new();
        for (i, t) in self.tenants.iter().enumerate() {
            if !ids.insert(t.id.as_str()) {
                c.bad(&format!("[{i}].id"), format!("duplicate tenant {}", t.id));
            }
            if t.tokens.is_empty() {
                c.bad(
                    &format!("[{i}].tokens"),
                    "at least one token digest is required (`hypersaga token new`)",
                );
            }
            for (j, digest) in t.tokens.iter().enumerate() {
                if !tokens.insert(digest) {
                    c.bad(
                        &format!("[{i}].tokens[{j}]"),
                        "the same token is listed twice (here or for another tenant)",
                    );
                }
            }
            for (key, value) in [
                ("tenant_id", &t.azure.tenant_id),
                ("subscription_id", &t.azure.subscription_id),
                ("client_id", &t.azure.client_id),
            ] {
                if value.trim().is_empty() {
                    c.bad(
                        &format!("[{i}].azure.{key}"),
                        "empty: the tenant's Azure identity needs it",
                    );
                }
            }
        }
        let mut out = c.out;
        let mut c = Check::new("gateway.admins");
        for (i, admin) in self.gateway.admins.iter().enumerate() {
            if admin.name.trim().is_empty() {
                c.bad(
                    &format!("[{i}].name"),
                    "empty: every admin action is audited with it",
                );
            }
            if admin.tokens.is_empty() {
                c.bad(
                    &format!("[{i}].tokens"),
                    "at least one token digest is required (`hypersaga token new`)",
                );
            }
            for (j, digest) in admin.tokens.iter().enumerate() {
                if !tokens.insert(digest) {
                    c.bad(
                        &format!("[{i}].tokens[{j}]"),
                        "the same token is listed twice (here, for another admin or for a tenant)",
                    );
                }
            }
        }
        out.extend(c.out);
        out
    }
}

impl AzureConfig {
    pub fn problems(&self) -> Vec<Problem> {
        let mut c = Check::new("azure");
        c.url(
            "resource_manager_url",
            &self.resource_manager_url,
            &["https", "http"],
        );
        c.url("authority_host", &self.authority_host, &["https", "http"]);
        c.range(
            "lro_poll_interval_ms",
            self.lro_poll_interval_ms,
            10,
            10 * 60 * SECOND_MS,
            "how often an ARM operation is polled without Retry-After",
        );
        c.range(
            "lro_timeout_s",
            self.lro_timeout_s,
            1,
            DAY_S,
            "how long an ARM operation driven in place may take",
        );
        if self.arm_region.trim().is_empty() {
            c.bad("arm_region", "empty: budgets are kept per ARM region");
        }
        let b = &self.budget;
        if b.enabled {
            for (key, rate) in [
                ("budget.reads_per_sec", b.reads_per_sec),
                ("budget.writes_per_sec", b.writes_per_sec),
                ("budget.deletes_per_sec", b.deletes_per_sec),
            ] {
                if !(rate.is_finite() && rate > 0.0) {
                    c.bad(
                        key,
                        format!(
                            "{rate}: a rate above 0 is required (set budget.enabled = false to pace nothing)"
                        ),
                    );
                }
            }
            for (key, burst) in [
                ("budget.reads_burst", b.reads_burst),
                ("budget.writes_burst", b.writes_burst),
                ("budget.deletes_burst", b.deletes_burst),
            ] {
                c.range(
                    key,
                    burst.into(),
                    1,
                    1_000_000,
                    "a burst of at least one request",
                );
            }
            if !(b.headroom.is_finite() && b.headroom > 0.0 && b.headroom <= 1.0) {
                c.bad(
                    "budget.headroom",
                    format!(
                        "{}: the share of ARM's limits used must be above 0 and at most 1",
                        b.headroom
                    ),
                );
            }
        }
        c.out
    }
}

impl BlobConfig {
    /// Problems of this storage account's settings, named under `section` (`blob`,
    /// `signing_keys`).
    pub fn problems(&self, section: &str) -> Vec<Problem> {
        let mut c = Check::new(section);
        if !self.endpoint.is_empty() {
            c.url("endpoint", &self.endpoint, &["https", "http"]);
            if self.account_name.trim().is_empty() {
                c.bad(
                    "account_name",
                    format!("empty while {section}.endpoint is set"),
                );
            }
        }
        c.out
    }
}

impl KubeConfig {
    pub fn problems(&self) -> Vec<Problem> {
        let mut c = Check::new("kube");
        if let Some(t) = self.available_timeout_s {
            c.range(
                "available_timeout_s",
                t,
                1,
                7 * DAY_S,
                "how long a HostedCluster or NodePool may take to come up or go",
            );
        }
        if let Some(r) = self.recheck_interval_ms {
            c.range(
                "recheck_interval_ms",
                r,
                10,
                HOUR_S * SECOND_MS,
                "how often a HostedCluster or NodePool is looked at again",
            );
        }
        let mut names = HashSet::new();
        for (i, m) in self.management_clusters.iter().enumerate() {
            let at = |key: &str| format!("management_clusters[{i}].{key}");
            if hypersaga_model::TenantId::new(m.name.clone()).is_err() {
                c.bad(
                    &at("name"),
                    "must match [a-z0-9-]{1,40}: it is recorded on every cluster placed there",
                );
            } else if !names.insert(m.name.as_str()) {
                c.bad(
                    &at("name"),
                    format!("duplicate management cluster {}", m.name),
                );
            }
            if m.region.trim().is_empty() {
                c.bad(&at("region"), "empty: clusters are placed in their region");
            }
            if m.capacity == 0 {
                c.bad(
                    &at("capacity"),
                    "0: a listed management cluster carries at least one hosted control plane",
                );
            }
        }
        c.out
    }
}

impl GatewayConfig {
    pub fn problems(&self) -> Vec<Problem> {
        let mut c = Check::new("gateway");
        c.port("listen", self.listen);
        if let Some(web) = self.web_listen {
            c.port("web_listen", web);
            if web == self.listen {
                c.bad(
                    "web_listen",
                    format!("{web} is gateway.listen too: one port cannot serve both"),
                );
            }
        }
        c.range(
            "max_message_bytes",
            self.max_message_bytes as u64,
            1024,
            // Beyond a few MiB, prost would decode millions of node pools before a check runs.
            4 * 1024 * 1024,
            "the largest request accepted",
        );
        c.range(
            "keepalive_interval_s",
            self.keepalive_interval_s,
            1,
            DAY_S,
            "how often idle clients are pinged",
        );
        c.range(
            "keepalive_timeout_s",
            self.keepalive_timeout_s,
            1,
            HOUR_S,
            "how long a ping's answer is awaited",
        );
        if self.requests_per_sec_per_tenant > 0 && self.request_burst_per_tenant == 0 {
            c.bad(
                "request_burst_per_tenant",
                "0 while requests_per_sec_per_tenant limits: no request could ever pass",
            );
        }
        if let Some(tls) = &self.tls {
            if tls.cert_file.as_os_str().is_empty() {
                c.bad("tls.cert_file", "empty");
            }
            if tls.key_file.as_os_str().is_empty() {
                c.bad("tls.key_file", "empty");
            }
            if tls.require_client_cert && tls.client_ca_file.is_none() {
                c.bad(
                    "tls.require_client_cert",
                    "true without tls.client_ca_file: no client certificate could be checked",
                );
            }
        }
        c.out
    }
}

impl HealthConfig {
    pub fn problems(&self, gateway: &GatewayConfig) -> Vec<Problem> {
        let mut c = Check::new("health");
        if let Some(listen) = self.listen {
            c.port("listen", listen);
            if listen == gateway.listen {
                c.bad(
                    "listen",
                    format!("{listen} is gateway.listen too: one port cannot serve both"),
                );
            }
            if Some(listen) == gateway.web_listen {
                c.bad(
                    "listen",
                    format!("{listen} is gateway.web_listen too: one port cannot serve both"),
                );
            }
        }
        c.out
    }
}

impl Config {
    pub fn quota_problems(&self) -> Vec<Problem> {
        let mut c = Check::new("quotas");
        let q = &self.quotas;
        c.range(
            "max_clusters",
            q.max_clusters.into(),
            1,
            1_000_000,
            "no tenant could create a cluster (set 0 for one tenant in quotas.tenants.<id>)",
        );
        c.range(
            "max_operations_in_flight",
            q.max_operations_in_flight.into(),
            1,
            1_000_000,
            "no tenant could start an operation",
        );
        for id in q.tenants.keys() {
            if !self.tenants.iter().any(|t| t.id.as_str() == id) {
                c.bad(&format!("tenants.{id}"), "no such tenant");
            }
        }
        c.out
    }

    /// The coordinator's timing, and how it must relate to the workers'.
    pub fn timing_problems(&self) -> Vec<Problem> {
        let mut c = Check::new("coordinator");
        let k = &self.coordinator;
        c.range(
            "max_attempts",
            k.max_attempts.into(),
            1,
            1_000,
            "attempts of one action, the first included",
        );
        c.range(
            "base_delay_ms",
            k.base_delay_ms,
            1,
            HOUR_S * SECOND_MS,
            "the first retry's backoff",
        );
        if k.max_delay_ms < k.base_delay_ms {
            c.bad(
                "max_delay_ms",
                format!(
                    "{} is below coordinator.base_delay_ms ({}): the cap would undercut the first backoff",
                    k.max_delay_ms, k.base_delay_ms
                ),
            );
        }
        c.range(
            "create_timeout_s",
            k.create_timeout_s,
            60,
            30 * DAY_S,
            "how long a create may run before it is compensated",
        );
        c.range(
            "delete_timeout_s",
            k.delete_timeout_s,
            60,
            30 * DAY_S,
            "how long a delete may run before it stops",
        );
        c.range(
            "resync_interval_ms",
            k.resync_interval_ms,
            SECOND_MS,
            DAY_S * SECOND_MS,
            "a pass reads every active saga",
        );
        c.range(
            "concurrency",
            k.concurrency as u64,
            1,
            10_000,
            "events one replica processes at once",
        );
        c.range(
            "ack_wait_s",
            k.ack_wait_s,
            1,
            HOUR_S,
            "how long an event may stay unacknowledged before another replica gets it",
        );
        c.range(
            "lease_ms",
            k.lease_ms,
            300,
            DAY_S * SECOND_MS,
            "workers heartbeat every third of it",
        );
        let worker_ack_ms = self.worker.ack_wait_s.saturating_mul(SECOND_MS);
        if k.lease_ms >= 300 && k.lease_ms < worker_ack_ms {
            c.bad(
                "lease_ms",
                format!(
                    "{} ms is shorter than worker.ack_wait_s ({} s): a step whose replica died would be dispatched again before JetStream redelivers its command",
                    k.lease_ms, self.worker.ack_wait_s
                ),
            );
        }
        if k.start_lease_ms < k.lease_ms {
            c.bad(
                "start_lease_ms",
                format!(
                    "{} is below coordinator.lease_ms ({}): a command would be presumed lost sooner than a silent running step",
                    k.start_lease_ms, k.lease_ms
                ),
            );
        }
        if k.step_timeout_s == 0 {
            c.bad(
                "step_timeout_s",
                "0 is not allowed: every step would pause at once",
            );
        } else if k.step_timeout_s.saturating_mul(SECOND_MS) < k.lease_ms {
            c.bad(
                "step_timeout_s",
                format!(
                    "{} s is shorter than coordinator.lease_ms ({} ms): a step would pass its deadline before a lapsed lease could be noticed",
                    k.step_timeout_s, k.lease_ms
                ),
            );
        }
        c.range(
            "recheck_min_ms",
            k.recheck_min_ms,
            10,
            HOUR_S * SECOND_MS,
            "the shortest spacing of re-checks of a waiting step",
        );
        c.range(
            "poison_after",
            k.poison_after.into(),
            1,
            100_000,
            "deliveries of an input that always fails before it is dead-lettered",
        );
        if k.recheck_max_ms < k.recheck_min_ms {
            c.bad(
                "recheck_max_ms",
                format!(
                    "{} is below coordinator.recheck_min_ms ({})",
                    k.recheck_max_ms, k.recheck_min_ms
                ),
            );
        }
        c.out
    }
}

impl WorkerConfig {
    pub fn problems(&self) -> Vec<Problem> {
        let mut c = Check::new("worker");
        c.range(
            "concurrency",
            self.concurrency as u64,
            1,
            10_000,
            "steps one replica runs at once",
        );
        c.range(
            "ack_wait_s",
            self.ack_wait_s,
            1,
            HOUR_S,
            "how long a command stays with a replica that stopped answering",
        );
        c.out
    }
}

impl LogConfig {
    pub fn problems(&self) -> Vec<Problem> {
        let mut c = Check::new("log");
        if !matches!(self.format.as_str(), "text" | "json") {
            c.bad("format", format!("{:?}: `text` or `json`", self.format));
        }
        if self.filter.trim().is_empty() {
            c.bad("filter", "empty: e.g. `info` or `info,hypersaga=debug`");
        }
        c.out
    }
}

/// A role that `serve` runs, for what it needs beyond the common checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Gateway,
    Coordinator,
    Identity,
    Network,
    Dns,
    Controlplane,
    Nodepool,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Gateway => "gateway",
            Role::Coordinator => "coordinator",
            Role::Identity => "identity",
            Role::Network => "network",
            Role::Dns => "dns",
            Role::Controlplane => "controlplane",
            Role::Nodepool => "nodepool",
        }
    }
}

impl Config {
    /// Every section's problems.
    pub fn problems(&self) -> Vec<Problem> {
        let mut all = self.nats.problems();
        all.extend(self.tenant_problems());
        all.extend(self.azure.problems());
        all.extend(self.blob.problems("blob"));
        all.extend(self.signing_keys.problems("signing_keys"));
        // Keys beside anonymously served issuers would be one mis-set container from the
        // internet, and readable with the publishing key.
        if !self.signing_keys.endpoint.is_empty()
            && self.signing_keys.endpoint.trim_end_matches('/')
                == self.blob.endpoint.trim_end_matches('/')
        {
            all.push(Problem::new(
                "signing_keys.endpoint",
                "the signing keys need a storage account of their own, not blob's",
            ));
        }
        all.extend(self.kube.problems());
        all.extend(self.gateway.problems());
        all.extend(self.health.problems(&self.gateway));
        all.extend(self.quota_problems());
        all.extend(self.timing_problems());
        all.extend(self.worker.problems());
        all.extend(self.log.problems());
        all
    }

    /// What `role` needs on this host beyond valid values: its files and tenants. (The
    /// controlplane's pull secret is checked by that service's own rules.)
    pub fn role_problems(&self, role: Role) -> Vec<Problem> {
        let mut out = Vec::new();
        let mut file = |setting: &str, path: &Path| {
            if let Err(e) = std::fs::metadata(path) {
                out.push(Problem::new(
                    setting,
                    format!("cannot read {}: {e}", path.display()),
                ));
            }
        };
        if let Some(ca) = &self.nats.ca_file {
            file("nats.ca_file", ca);
        }
        if let Some(dir) = &self.nats.credentials_dir {
            file(
                "nats.credentials_dir",
                &dir.join(format!("{}.nk", role.name())),
            );
        }
        if role != Role::Gateway
            && role != Role::Coordinator
            && let Some(ca) = &self.azure.ca_bundle
        {
            file("azure.ca_bundle", ca);
        }
        if matches!(role, Role::Controlplane | Role::Nodepool) {
            if let Some(k) = &self.kube.kubeconfig {
                file("kube.kubeconfig", k);
            }
            for (i, m) in self.kube.management_clusters.iter().enumerate() {
                if let Some(k) = &m.kubeconfig {
                    file(&format!("kube.management_clusters[{i}].kubeconfig"), k);
                }
            }
        }
        if role == Role::Gateway
            && let Some(tls) = &self.gateway.tls
        {
            file("gateway.tls.cert_file", &tls.cert_file);
            file("gateway.tls.key_file", &tls.key_file);
            if let Some(ca) = &tls.client_ca_file {
                file("gateway.tls.client_ca_file", ca);
            }
        }
        if matches!(role, Role::Identity | Role::Controlplane) && self.blob.endpoint.is_empty() {
            out.push(Problem::new(
                "blob.endpoint",
                "empty: this role reads or publishes the tenants' OIDC documents",
            ));
        }
        out
    }
}
