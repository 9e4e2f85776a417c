//! Who may publish and subscribe what on the bus.
//!
//! Every process connects as one [`Role`] with its own nkey, and the server lets it publish and
//! subscribe only what that role needs. The audit stream is meant for any subscriber, so
//! readers of audit are their own role, one per tenant, allowed to read that tenant's audit
//! events and nothing else: a reader who could publish could forge a step's failure and tear a
//! cluster down.
//!
//! Three things make per-role permissions hold on JetStream:
//! - each role has its own inbox prefix (`_INBOX_<role>`), so replies to one role's requests
//!   (which carry KV values, i.e. saga and cluster records) are not readable by another;
//! - consumers are created through the API subject that names the consumer and its filter
//!   (`$JS.API.CONSUMER.CREATE.<stream>.<name>.<filter>`), so a permission on that subject
//!   bounds what a consumer may see;
//! - work-queue consumers are named per service and tenant and listed one by one, since NATS
//!   wildcards match whole tokens only.
//!
//! The server configuration is rendered from the same table ([`authorization_block`]), so what
//! the code needs and what the server allows cannot drift apart unnoticed: `hypersaga dev`
//! runs every test on it.

use std::fmt::Write as _;

use hypersaga_model::TenantId;

use crate::topology::{
    ACTIVE_BUCKET, AUDIT_STREAM, BUDGETS_BUCKET, CLUSTERS_BUCKET, CMD_STREAM, EVT_STREAM,
    SAGAS_BUCKET, TENANTS_BUCKET,
};

/// The services that run steps (each a worker role of its own).
pub const WORKER_SERVICES: [&str; 5] = ["identity", "network", "dns", "controlplane", "nodepool"];

/// What a connection is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// Takes requests, writes intent to cluster records, wakes the coordinator.
    Gateway,
    /// Runs sagas; owns the streams and buckets (creates and reconciles them).
    Coordinator,
    /// Runs the steps of one service.
    Worker(String),
    /// Reads the audit events of one tenant, or of every tenant (the platform team's reader).
    Audit(Option<TenantId>),
}

impl Role {
    /// The role's name: its credentials file is `<name>.nk`, its inbox `_INBOX_<name>`.
    pub fn name(&self) -> String {
        match self {
            Role::Gateway => "gateway".into(),
            Role::Coordinator => "coordinator".into(),
            Role::Worker(service) => service.clone(),
            Role::Audit(Some(tenant)) => format!("audit-{tenant}"),
            Role::Audit(None) => "audit".into(),
        }
    }

    /// Replies to this role's requests arrive under this prefix, and nowhere else it can read.
    pub fn inbox_prefix(&self) -> String {
        format!("_INBOX_{}", self.name())
    }

    /// Whether this role creates the streams and buckets (the others wait for them).
    pub fn owns_topology(&self) -> bool {
        matches!(self, Role::Coordinator)
    }

    /// Every role a system serving `tenants` runs, audit readers included.
    pub fn all(tenants: &[TenantId]) -> Vec<Role> {
        let mut roles = vec![Role::Gateway, Role::Coordinator];
        roles.extend(
            WORKER_SERVICES
                .iter()
                .map(|s| Role::Worker((*s).to_owned())),
        );
        roles.push(Role::Audit(None));
        roles.extend(tenants.iter().cloned().map(|t| Role::Audit(Some(t))));
        roles
    }

    /// What this role may publish and subscribe to, on a bus with subject prefix `prefix`
    /// serving `tenants`.
    pub fn permissions(&self, prefix: &str, _tenants: &[TenantId]) -> Permissions {
        let p = prefix;
        let mut perms = Permissions {
            publish: Vec::new(),
            subscribe: vec![format!("{}.>", self.inbox_prefix())],
        };
        match self {
            Role::Coordinator => {
                // The owner of the topology: it creates and reconciles streams and buckets,
                // consumes HCP_EVT and reads the workers' consumers to see their backlogs.
                perms.publish.extend([
                    "$JS.API.>".to_owned(),
                    format!("$JS.ACK.{EVT_STREAM}.>"),
                    format!("$KV.{SAGAS_BUCKET}.>"),
                    format!("$KV.{CLUSTERS_BUCKET}.>"),
                    format!("$KV.{ACTIVE_BUCKET}.>"),
                    format!("{p}.*.cmd.*"),
                    format!("{p}.*.audit.>"),
                    format!("{p}.*.saga.*"),
                    format!("{p}.*.timer.*"),
                    format!("{p}.*.dead.coordinator"),
                ]);
                // Following the active index and listing every bucket in the resync: ordered
                // consumers, whose flow-control replies go to `$JS.FC.<stream>.…`. Without
                // them the server stops pushing after a few MB, and the watch stalls.
                perms.flow_control([ACTIVE_BUCKET, SAGAS_BUCKET, CLUSTERS_BUCKET, TENANTS_BUCKET]);
            }
            Role::Gateway => {
                perms.publish.extend([
                    format!("{p}.*.saga.start"),
                    format!("{p}.*.saga.operate"),
                    format!("$KV.{CLUSTERS_BUCKET}.>"),
                    // The admin API onboards, suspends and removes tenants, and audits it.
                    format!("$KV.{TENANTS_BUCKET}.>"),
                    format!("{p}.*.audit.{}", crate::subjects::TENANT_AUDIT_TOKEN),
                ]);
                // Listing and watching records: ordered consumers, with flow control.
                for bucket in [CLUSTERS_BUCKET, SAGAS_BUCKET, ACTIVE_BUCKET, TENANTS_BUCKET] {
                    perms.follow_bucket(bucket);
                }
                perms.topology_info();
            }
            Role::Worker(service) => {
                perms.publish.extend([
                    format!("{p}.*.evt.{service}"),
                    format!("{p}.*.dead.{service}"),
                    format!("$KV.{BUDGETS_BUCKET}.>"),
                ]);
                // A doorbell: the core subscription that says a tenant's queue has work.
                perms.subscribe.push(format!("{p}.*.cmd.{service}"));
                // Its queues, one durable consumer per tenant (`worker_consumer`), made when a
                // tenant first has work: any name, but only over its own service's commands.
                // Names cannot be bounded by a wildcard (NATS matches whole tokens), so a
                // worker role could read another service's queue by name; the filter is what
                // a permission can hold.
                perms.publish.extend([
                    format!("$JS.API.CONSUMER.CREATE.{CMD_STREAM}.*.{p}.*.cmd.{service}"),
                    format!("$JS.API.CONSUMER.INFO.{CMD_STREAM}.*"),
                    format!("$JS.API.CONSUMER.MSG.NEXT.{CMD_STREAM}.*"),
                    format!("$JS.ACK.{CMD_STREAM}.*.>"),
                ]);
                // The fence: is the saga still at this command?
                perms.read_bucket(SAGAS_BUCKET);
                // Which tenant is whose, live: its Azure principal and subscription.
                perms.follow_bucket(TENANTS_BUCKET);
                perms.read_bucket(BUDGETS_BUCKET);
                perms.topology_info();
            }
            Role::Audit(tenant) => {
                let tenant = tenant.as_ref().map_or("*".to_owned(), ToString::to_string);
                perms.publish.extend([
                    format!("$JS.API.STREAM.INFO.{AUDIT_STREAM}"),
                    // Named consumers only, filtered to this tenant's events.
                    format!("$JS.API.CONSUMER.CREATE.{AUDIT_STREAM}.*.{p}.{tenant}.audit.>"),
                    format!("$JS.FC.{AUDIT_STREAM}.>"),
                ]);
            }
        }
        perms
    }
}

/// Subjects a role may publish to and subscribe to (everything else is denied).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Permissions {
    pub publish: Vec<String>,
    pub subscribe: Vec<String>,
}

impl Permissions {
    /// Reads of a KV bucket: its stream's info and direct gets of its keys.
    fn read_bucket(&mut self, bucket: &str) {
        let stream = format!("KV_{bucket}");
        self.publish.extend([
            format!("$JS.API.STREAM.INFO.{stream}"),
            format!("$JS.API.DIRECT.GET.{stream}.>"),
            format!("$JS.API.DIRECT.GET.{stream}"),
            format!("$JS.API.STREAM.MSG.GET.{stream}"),
        ]);
    }

    /// Reads of a KV bucket, and listing and watching it: ordered consumers on its stream,
    /// with their flow control.
    fn follow_bucket(&mut self, bucket: &str) {
        self.read_bucket(bucket);
        self.flow_control([bucket]);
        let stream = format!("KV_{bucket}");
        self.publish.extend([
            format!("$JS.API.CONSUMER.CREATE.{stream}"),
            format!("$JS.API.CONSUMER.CREATE.{stream}.>"),
            format!("$JS.API.CONSUMER.DELETE.{stream}.*"),
            format!("$JS.API.CONSUMER.INFO.{stream}.*"),
        ]);
    }

    /// The flow-control replies of ordered consumers (listings and watches) on these buckets.
    fn flow_control<const N: usize>(&mut self, buckets: [&str; N]) {
        self.publish
            .extend(buckets.iter().map(|bucket| format!("$JS.FC.KV_{bucket}.>")));
    }

    /// Looking the streams up: each process checks at start that the topology exists.
    fn topology_info(&mut self) {
        self.publish.extend(
            crate::topology::stream_names()
                .iter()
                .map(|s| format!("$JS.API.STREAM.INFO.{s}")),
        );
    }
}

/// The `authorization { users = [...] }` block of a nats-server configuration: one user per
/// `(nkey public key, role)`.
pub fn authorization_block(prefix: &str, tenants: &[TenantId], users: &[(String, Role)]) -> String {
    let list = |subjects: &[String]| {
        subjects
            .iter()
            .map(|s| format!("\"{s}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = String::from("authorization {\n  users = [\n");
    for (public_key, role) in users {
        let perms = role.permissions(prefix, tenants);
        // Infallible: writing to a String.
        let _ = writeln!(
            out,
            "    # {}\n    {{ nkey: \"{public_key}\", permissions: {{ publish: {{ allow: [{}] }}, subscribe: {{ allow: [{}] }} }} }}",
            role.name(),
            list(&perms.publish),
            list(&perms.subscribe),
        );
    }
    out.push_str("  ]\n}\n");
    out
}

/// A role's generated credentials.
pub struct Credentials {
    pub role: Role,
    /// The secret seed (`SU…`), for the role's process only.
    pub seed: String,
    /// The public key (`U…`), for the server's configuration.
    pub public_key: String,
}

/// New nkeys for every role of a system serving `tenants`.
pub fn generate(tenants: &[TenantId]) -> Result<Vec<Credentials>, nkeys::error::Error> {
    Role::all(tenants)
        .into_iter()
        .map(|role| {
            let pair = nkeys::KeyPair::new_user();
            Ok(Credentials {
                role,
                seed: pair.seed()?,
                public_key: pair.public_key(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenants() -> Vec<TenantId> {
        vec![
            TenantId::new("acme").unwrap(),
            TenantId::new("globex").unwrap(),
        ]
    }

    #[test]
    fn an_audit_reader_may_publish_nothing_but_its_own_audit_reads() {
        let perms =
            Role::Audit(Some(TenantId::new("acme").unwrap())).permissions("hcp", &tenants());
        for s in &perms.publish {
            assert!(s.starts_with("$JS."), "audit reader may publish {s}");
            assert!(!s.contains("globex"), "audit reader may touch globex: {s}");
        }
        assert_eq!(perms.subscribe, vec!["_INBOX_audit-acme.>".to_owned()]);
    }

    #[test]
    fn a_worker_publishes_only_its_own_events() {
        let perms = Role::Worker("dns".into()).permissions("hcp", &tenants());
        let events: Vec<_> = perms
            .publish
            .iter()
            .filter(|s| s.contains(".evt."))
            .collect();
        assert_eq!(events, vec!["hcp.*.evt.dns"]);
        assert!(
            !perms
                .publish
                .iter()
                .any(|s| s.starts_with("hcp.") && s.contains(".cmd."))
        );
        assert!(!perms.publish.iter().any(|s| s.starts_with("$KV.hcp_sagas")));
    }

    #[test]
    fn flow_control_is_granted_on_the_buckets_a_role_lists_and_no_other_stream() {
        let fc = |role: Role| -> Vec<String> {
            let mut fc: Vec<_> = role
                .permissions("hcp", &tenants())
                .publish
                .into_iter()
                .filter(|s| s.starts_with("$JS.FC."))
                .collect();
            fc.sort();
            fc
        };
        let kv = vec![
            "$JS.FC.KV_hcp_active.>".to_owned(),
            "$JS.FC.KV_hcp_clusters.>".to_owned(),
            "$JS.FC.KV_hcp_sagas.>".to_owned(),
            "$JS.FC.KV_hcp_tenants.>".to_owned(),
        ];
        assert_eq!(fc(Role::Coordinator), kv);
        assert_eq!(fc(Role::Gateway), kv);
        // Workers follow the tenants, and list nothing else.
        assert_eq!(
            fc(Role::Worker("dns".into())),
            vec!["$JS.FC.KV_hcp_tenants.>".to_owned()]
        );
        assert_eq!(
            fc(Role::Audit(None)),
            vec![format!("$JS.FC.{AUDIT_STREAM}.>")]
        );
    }

    #[test]
    fn the_server_block_names_each_user_once() {
        let users = vec![
            ("UKEY1".to_owned(), Role::Gateway),
            (
                "UKEY2".to_owned(),
                Role::Audit(Some(TenantId::new("acme").unwrap())),
            ),
        ];
        let block = authorization_block("hcp", &tenants(), &users);
        assert_eq!(block.matches("nkey:").count(), 2);
        assert!(block.contains("\"hcp.acme.audit.>\"") || block.contains("hcp.acme.audit.>"));
        assert!(block.contains("_INBOX_audit-acme.>"));
    }
}
