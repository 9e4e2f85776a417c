//! Who may publish and subscribe what on the bus.
//!
//! Every hypersaga process connects as one [`Role`] with its own nkey, and the server lets it
//! publish and subscribe only what that role needs. These static users are written into the
//! server's configuration ([`authorization_block`]) once, when the bus is set up.
//!
//! Tenants are live data, added and suspended without a restart of anything, so their audit
//! readers are not in that configuration. A tenant's reader connects as user `audit-<tenant>`
//! with the password it was issued at onboarding, and the server asks hypersaga whether to let
//! it in: NATS *auth callout*. The server sends every connection that is not one of the static
//! users (`auth_users`) to the callout service ([`crate::callout`]) in the system account, which
//! checks the password against the tenant's live record and answers with a user JWT holding
//! exactly [`Role::Audit`]`(Some(tenant))`'s permissions from this table, or a refusal. So the
//! table stays the one source of what each reader may do, whichever way it connects.
//!
//! The audit stream is meant for any subscriber, so readers of audit are their own role, one
//! per tenant, allowed to read that tenant's audit events and nothing else: a reader who could
//! publish could forge a step's failure and tear a cluster down.
//!
//! Three things make per-role permissions hold on JetStream:
//! - each role has its own inbox prefix (`_INBOX_<role>`), so replies to one role's requests
//!   (which carry KV values, i.e. saga and cluster records) are not readable by another;
//! - consumers are created through the API subject that names the consumer and its filter
//!   (`$JS.API.CONSUMER.CREATE.<stream>.<name>.<filter>`), so a permission on that subject
//!   bounds what a consumer may see;
//! - a worker may create consumers only filtered on its own service's commands
//!   (`$JS.API.CONSUMER.CREATE.HCP_CMD.*.<p>.*.cmd.<service>`), whatever their name, so a new
//!   tenant's queue needs no new permission. The names (`svc-<service>-<tenant>`) cannot be
//!   bounded as well (NATS wildcards match whole tokens), so a worker role could pull from
//!   another service's queue by name: a limit of trust among hypersaga's own roles.
//!
//! The server configuration is rendered from the same table ([`authorization_block`]), so what
//! the code needs and what the server allows cannot drift apart unnoticed: `hypersaga dev`
//! runs every test on it.

use std::fmt::Write as _;

use hypersaga_model::TenantId;

use crate::topology::{
    ACTIVE_BUCKET, ADDONS_BUCKET, AUDIT_STREAM, BUDGETS_BUCKET, CLUSTERS_BUCKET, CMD_STREAM,
    DEAD_STREAM, EVT_STREAM, MANAGEMENT_BUCKET, ROLLOUTS_BUCKET, SAGAS_BUCKET, TENANTS_BUCKET,
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
    /// A tenant's reader is not a static user: the callout grants it these permissions.
    Audit(Option<TenantId>),
    /// Answers the server's auth callout requests and disconnects revoked tenant readers; a
    /// user of the system account (where the server sends those requests), not of the bus.
    Callout,
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
            Role::Callout => "callout".into(),
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

    /// Every role with static credentials: hypersaga's processes, the platform's audit reader
    /// and the callout service. (Tenants' readers get theirs at onboarding, through the
    /// callout.)
    pub fn all() -> Vec<Role> {
        let mut roles = vec![Role::Gateway, Role::Coordinator];
        roles.extend(
            WORKER_SERVICES
                .iter()
                .map(|s| Role::Worker((*s).to_owned())),
        );
        roles.push(Role::Audit(None));
        roles.push(Role::Callout);
        roles
    }

    /// Whether this role's user lives in the system account (the others are in the bus's).
    pub fn in_system_account(&self) -> bool {
        matches!(self, Role::Callout)
    }

    /// What this role may publish and subscribe to, on a bus with subject prefix `prefix`
    /// (tenants' own readers come in through the callout, with [`Role::Audit`]'s permissions).
    pub fn permissions(&self, prefix: &str) -> Permissions {
        let p = prefix;
        let mut perms = Permissions {
            publish: Vec::new(),
            subscribe: vec![format!("{}.>", self.inbox_prefix())],
            allow_responses: false,
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
                    // Redrives: a dead letter goes back where it was sent, which for the
                    // coordinator's own is an event of a service. It consumes those events
                    // and writes the sagas they change, so this lets it do nothing it could
                    // not already.
                    format!("{p}.*.evt.*"),
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
                    // Placement: management clusters' records, by compare-and-set.
                    format!("$KV.{MANAGEMENT_BUCKET}.>"),
                    // Rollouts: made, paused and driven here.
                    format!("$KV.{ROLLOUTS_BUCKET}.>"),
                    // The add-on catalog: put, listed and deleted through the API.
                    format!("$KV.{ADDONS_BUCKET}.>"),
                    // Dry runs and preflights: what the services' steps would do.
                    format!("{p}.*.plan.*"),
                    // The sweeper: what the services made, by tags and labels.
                    format!("{p}.*.sweep.*"),
                    // Dead letters: listed, shown and purged through the admin API; a redrive
                    // is a request to the coordinator, which publishes it (the gateway sends
                    // no command and no event itself).
                    format!("$JS.API.STREAM.MSG.GET.{DEAD_STREAM}"),
                    format!("$JS.API.STREAM.MSG.DELETE.{DEAD_STREAM}"),
                    format!("$JS.API.STREAM.PURGE.{DEAD_STREAM}"),
                    format!("{p}.*.saga.redrive"),
                ]);
                // Listing and watching records: ordered consumers, with flow control.
                for bucket in [
                    CLUSTERS_BUCKET,
                    SAGAS_BUCKET,
                    ACTIVE_BUCKET,
                    TENANTS_BUCKET,
                    MANAGEMENT_BUCKET,
                    ROLLOUTS_BUCKET,
                    ADDONS_BUCKET,
                ] {
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
                // Plan requests from the gateway, answered once each on their reply subject.
                perms.subscribe.push(format!("{p}.*.plan.{service}"));
                // The sweeper's listings, answered the same way.
                perms.subscribe.push(format!("{p}.*.sweep.{service}"));
                perms.allow_responses = true;
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
                // The add-on steps read the definitions of the versions clusters pin.
                if service == "controlplane" {
                    perms.read_bucket(ADDONS_BUCKET);
                }
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
            Role::Callout => {
                // The server's requests; the answers go to each request's reply subject, which
                // only a response permission allows (publishing to the system account's inboxes
                // at large could answer the server's other internal requests).
                perms
                    .subscribe
                    .push(crate::callout::AUTH_SUBJECT.to_owned());
                perms.allow_responses = true;
                // Revocation: find a tenant's connections on every server, and close them.
                perms.publish.extend([
                    crate::callout::CONNZ_SUBJECT.to_owned(),
                    crate::callout::KICK_SUBJECTS.to_owned(),
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
    /// May also publish once to the reply subject of each request it receives.
    pub allow_responses: bool,
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

/// The name of the system account in the rendered configuration.
pub const SYSTEM_ACCOUNT: &str = "SYS";

/// The authentication part of a nats-server configuration, for a bus with subject prefix
/// `prefix`: one nkey user per
/// `(public key, role)` of `users` with that role's permissions, and the auth callout that
/// lets tenants' readers in, answered by a user of the [`Role::Callout`] role and signed by
/// the account key `issuer` (public, `A…`).
///
/// - The static users are `auth_users`: the server checks them itself and never asks the
///   callout, so hypersaga keeps running when the callout does not.
/// - The callout runs in the system account `SYS` (declared here, with the callout's user),
///   which the server needs anyway to take the `KICK` and `CONNZ` requests of revocation.
///   Its requests carry tenants' passwords; there, only the callout's user can see them,
///   which is why they are not also encrypted (`xkey`).
/// - Granted users are placed in the bus's account (`$G`, where JetStream is), which keeps
///   JetStream as it is: a server-config system account does not count as an account of its
///   own.
pub fn authorization_block(prefix: &str, users: &[(String, Role)], issuer: &str) -> String {
    let (system, bus): (Vec<_>, Vec<_>) =
        users.iter().partition(|(_, role)| role.in_system_account());
    let entries = |users: &[&(String, Role)], indent: &str| {
        let mut out = String::new();
        for (public_key, role) in users {
            // Infallible: writing to a String.
            let _ = writeln!(
                out,
                "{indent}# {}\n{indent}{{ nkey: \"{public_key}\", permissions: {} }}",
                role.name(),
                role.permissions(prefix).to_config(),
            );
        }
        out
    };
    let auth_users = users
        .iter()
        .map(|(public_key, _)| format!("\"{public_key}\""))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "accounts {{\n  {SYSTEM_ACCOUNT} {{\n    users = [\n{system}    ]\n  }}\n}}\n\
         system_account: {SYSTEM_ACCOUNT}\n\
         authorization {{\n  users = [\n{bus}  ]\n  \
         auth_callout {{\n    issuer: \"{issuer}\"\n    account: {SYSTEM_ACCOUNT}\n    \
         auth_users: [{auth_users}]\n  }}\n}}\n",
        system = entries(&system, "      "),
        bus = entries(&bus, "    "),
    )
}

impl Permissions {
    /// As a user's `permissions` in nats-server's configuration syntax.
    fn to_config(&self) -> String {
        let list = |subjects: &[String]| {
            subjects
                .iter()
                .map(|s| format!("\"{s}\""))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let responses = if self.allow_responses {
            ", allow_responses: true"
        } else {
            ""
        };
        format!(
            "{{ publish: {{ allow: [{}] }}, subscribe: {{ allow: [{}] }}{responses} }}",
            list(&self.publish),
            list(&self.subscribe),
        )
    }
}

/// A role's generated credentials.
pub struct Credentials {
    pub role: Role,
    /// The secret seed (`SU…`), for the role's process only.
    pub seed: String,
    /// The public key (`U…`), for the server's configuration.
    pub public_key: String,
}

/// New nkeys for every role with static credentials ([`Role::all`]).
pub fn generate() -> Result<Vec<Credentials>, nkeys::error::Error> {
    Role::all()
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

    #[test]
    fn an_audit_reader_may_publish_nothing_but_its_own_audit_reads() {
        let perms = Role::Audit(Some(TenantId::new("acme").unwrap())).permissions("hcp");
        for s in &perms.publish {
            assert!(s.starts_with("$JS."), "audit reader may publish {s}");
            assert!(!s.contains("globex"), "audit reader may touch globex: {s}");
        }
        assert_eq!(perms.subscribe, vec!["_INBOX_audit-acme.>".to_owned()]);
    }

    #[test]
    fn a_worker_publishes_only_its_own_events() {
        let perms = Role::Worker("dns".into()).permissions("hcp");
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
        // It answers the plan requests of its own service, and may not ask any.
        let plans: Vec<_> = perms
            .subscribe
            .iter()
            .filter(|s| s.contains(".plan."))
            .collect();
        assert_eq!(plans, vec!["hcp.*.plan.dns"]);
        assert!(
            perms.allow_responses,
            "answered on each request's reply subject"
        );
        assert!(!perms.publish.iter().any(|s| s.contains(".plan.")));
        let sweeps: Vec<_> = perms
            .subscribe
            .iter()
            .filter(|s| s.contains(".sweep."))
            .collect();
        assert_eq!(sweeps, vec!["hcp.*.sweep.dns"]);
        assert!(!perms.publish.iter().any(|s| s.contains(".sweep.")));
    }

    #[test]
    fn the_gateway_reads_and_purges_dead_letters_and_sends_no_command_or_event() {
        let perms = Role::Gateway.permissions("hcp");
        let dead: Vec<_> = perms
            .publish
            .iter()
            .filter(|s| s.contains("HCP_DEAD") || s.contains(".dead."))
            .map(String::as_str)
            .collect();
        assert_eq!(
            dead,
            vec![
                "$JS.API.STREAM.MSG.GET.HCP_DEAD",
                "$JS.API.STREAM.MSG.DELETE.HCP_DEAD",
                "$JS.API.STREAM.PURGE.HCP_DEAD",
                "$JS.API.STREAM.INFO.HCP_DEAD",
            ]
        );
        // Its saga inputs are named one by one; a redrive is a request, not the message; a
        // plan request is answered, and never stored.
        let subjects: Vec<_> = perms
            .publish
            .iter()
            .filter(|s| s.starts_with("hcp."))
            .map(String::as_str)
            .collect();
        assert_eq!(
            subjects,
            vec![
                "hcp.*.saga.start",
                "hcp.*.saga.operate",
                "hcp.*.audit._tenant",
                "hcp.*.plan.*",
                "hcp.*.sweep.*",
                "hcp.*.saga.redrive",
            ]
        );
        // No other stream's messages: no deletes, no purges, no reads by sequence.
        assert!(
            !perms
                .publish
                .iter()
                .any(|s| (s.contains(".MSG.") || s.contains(".PURGE."))
                    && !s.ends_with(".HCP_DEAD")
                    && !s.contains(".KV_")),
            "{perms:?}"
        );
    }

    #[test]
    fn only_the_coordinator_sends_a_dead_letter_back_to_any_service() {
        let coordinator = Role::Coordinator.permissions("hcp");
        for s in ["hcp.*.cmd.*", "hcp.*.evt.*", "hcp.*.saga.*"] {
            assert!(coordinator.publish.iter().any(|p| p == s), "{s}");
        }
        for role in Role::all().into_iter().filter(|r| *r != Role::Coordinator) {
            let perms = role.permissions("hcp");
            assert!(
                !perms
                    .publish
                    .iter()
                    .any(|p| p == "hcp.*.evt.*" || p == "hcp.*.cmd.*"),
                "{role:?}: {perms:?}"
            );
        }
    }

    #[test]
    fn flow_control_is_granted_on_the_buckets_a_role_lists_and_no_other_stream() {
        let fc = |role: Role| -> Vec<String> {
            let mut fc: Vec<_> = role
                .permissions("hcp")
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
        // The gateway also lists the add-on catalog, the management clusters (to place
        // creates) and rollouts.
        let mut gateway = kv.clone();
        gateway.insert(1, "$JS.FC.KV_hcp_addons.>".to_owned());
        gateway.insert(3, "$JS.FC.KV_hcp_management.>".to_owned());
        gateway.insert(4, "$JS.FC.KV_hcp_rollouts.>".to_owned());
        assert_eq!(fc(Role::Gateway), gateway);
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
    fn the_server_block_names_each_static_user_once_and_lets_them_bypass_the_callout() {
        let users = vec![
            ("UKEY1".to_owned(), Role::Gateway),
            ("UKEY2".to_owned(), Role::Audit(None)),
            ("UKEY3".to_owned(), Role::Callout),
        ];
        let block = authorization_block("hcp", &users, "AISSUER");
        assert_eq!(block.matches("nkey:").count(), 3);
        assert!(block.contains("hcp.*.audit.>\""));
        assert!(block.contains("auth_users: [\"UKEY1\", \"UKEY2\", \"UKEY3\"]"));
        assert!(block.contains("issuer: \"AISSUER\""));
        assert!(block.contains("account: SYS"));
        assert!(block.contains("system_account: SYS"));
        // No tenant's reader is a static user any more.
        assert!(!block.contains("audit-acme"));
    }

    #[test]
    fn only_the_callout_user_is_in_the_system_account_and_only_it_answers_requests() {
        let users = vec![
            ("UGATEWAY".to_owned(), Role::Gateway),
            ("UCALLOUT".to_owned(), Role::Callout),
        ];
        let block = authorization_block("hcp", &users, "AISSUER");
        let system = &block[..block.find("system_account").unwrap()];
        assert!(system.contains("UCALLOUT") && !system.contains("UGATEWAY"));
        let bus = &block[block.find("authorization {").unwrap()..];
        let gateway_line = bus.lines().find(|l| l.contains("UGATEWAY")).unwrap();
        assert!(!gateway_line.contains("allow_responses"));
        assert!(!gateway_line.contains("$SYS.REQ.USER.AUTH"));

        let callout = Role::Callout.permissions("hcp");
        assert!(callout.allow_responses);
        assert_eq!(
            callout.subscribe,
            vec![
                "_INBOX_callout.>".to_owned(),
                "$SYS.REQ.USER.AUTH".to_owned()
            ]
        );
        assert_eq!(
            callout.publish,
            vec![
                "$SYS.REQ.SERVER.PING.CONNZ".to_owned(),
                "$SYS.REQ.SERVER.*.KICK".to_owned()
            ]
        );
    }

    #[test]
    fn the_static_roles_are_hypersagas_own_and_no_tenants() {
        let roles = Role::all();
        assert!(roles.contains(&Role::Callout));
        assert!(roles.contains(&Role::Audit(None)));
        assert!(!roles.iter().any(|r| matches!(r, Role::Audit(Some(_)))));
        let names: Vec<_> = generate()
            .unwrap()
            .into_iter()
            .map(|c| c.role.name())
            .collect();
        assert_eq!(names.len(), roles.len());
    }
}
