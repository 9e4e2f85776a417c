//! The fault matrix: every step of the create DAG against each kind of failure Azure (or
//! HyperShift, or the management cluster's API) answers it with, injected through the
//! emulators' admin APIs as a user would (`hypersaga emulator fault add|add-async`,
//! `hypersaga emulator cluster-fault add|add-api|remove`).
//!
//! What Azure means by each answer sets the expected outcome: a 4xx refusal (authorization,
//! validation, quota, policy) stays refused however often it is asked, so the create fails and
//! everything it made is removed; a 500, a 429 with `Retry-After`, or an operation that Azure
//! accepted and then failed with `InternalServerError`/`RetryableError` passes when asked
//! again, so the create ends `ready`. Kubernetes means the same by 403 and by 429/500. The
//! matrix is printed as a table, then every cell is checked.
//!
//! One system for the whole matrix, one cluster per cell, all at once: every fault is scoped
//! to its cluster by the request path (a cluster's name is in its resource groups', its
//! identities' and its zone's names), so cells do not take each other's faults. The public
//! zone look-up is the same request for every cluster of a tenant, and the issuer is the
//! tenant's, so each of their cells has a tenant of its own, its fault scoped to that
//! tenant's subscription or issuer container.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::support::*;

const TENANT: &str = "acme";
/// The tenants of the cells whose faults are scoped by tenant (the public-zone look-up, the
/// issuer), one each: every tenant `hypersaga dev --tenants` onboards after the first.
const LOOKUP_TENANTS: [&str; 9] = [
    "globex",
    "initech",
    "umbrella",
    "hooli",
    "soylent",
    "wonka",
    "tyrell",
    "cyberdyne",
    "oscorp",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// A 4xx Azure never answers differently (authorization, validation, quota, policy); for
    /// the HostedCluster, input HyperShift refuses (`ValidConfiguration=False`).
    Terminal,
    /// `500 InternalServerError`, twice.
    ServerError,
    /// `429 SubscriptionRequestsThrottled` with `Retry-After: 1`, twice.
    Throttled,
    /// Accepted, then the operation ends `Failed` with an error Azure retries; for the
    /// HostedCluster, a condition HyperShift reports `False` until it recovers.
    FailedOperation,
}

impl Kind {
    const ALL: [Kind; 4] = [
        Kind::Terminal,
        Kind::ServerError,
        Kind::Throttled,
        Kind::FailedOperation,
    ];

    fn tag(self) -> &'static str {
        match self {
            Kind::Terminal => "t",
            Kind::ServerError => "s",
            Kind::Throttled => "q",
            Kind::FailedOperation => "o",
        }
    }

    fn header(self) -> &'static str {
        match self {
            Kind::Terminal => "terminal 4xx",
            Kind::ServerError => "500",
            Kind::Throttled => "429 + Retry-After",
            Kind::FailedOperation => "failed operation",
        }
    }

    /// What Azure's answer means for the create.
    fn expected(self) -> &'static str {
        match self {
            Kind::Terminal => "failed+compensated",
            _ => "ready",
        }
    }
}

/// How a step reaches the outside world, so a fault can be put in its way.
#[derive(Clone, Copy)]
enum Reach {
    /// ARM requests of this method and resource type. `refusal` is the 4xx Azure answers when
    /// the caller may not (status, code, message); `operation` the type whose write starts an
    /// asynchronous operation that can fail after acceptance (`None`: Azure answers the
    /// step's requests synchronously).
    Arm {
        method: &'static str,
        rtype: &'static str,
        refusal: (u16, &'static str, &'static str),
        operation: Option<&'static str>,
    },
    /// The HostedCluster: applied through the management cluster's API, reported on by the
    /// simulated HyperShift operator.
    HostedCluster,
    /// The HostedCluster's version history, read (`get`) once the nodes are up.
    Rollout,
    /// Azure Storage's blob data plane: PUTs of the tenant's issuer documents, through the
    /// ARM emulator's data-plane faults in front of Azurite. `refusal` as for ARM. The issuer
    /// is the tenant's, not the cluster's, so each cell has a tenant of its own (see
    /// [`LOOKUP_TENANTS`]); Storage throttles with 503 `ServerBusy` (never 429), and answers
    /// every request itself (no operation to fail).
    Blob {
        refusal: (u16, &'static str, &'static str),
    },
}

/// Every step of the create DAG, a short tag for its clusters' names, and how it is reached.
fn dag_steps() -> Vec<(&'static str, &'static str, Reach)> {
    use Reach::*;
    let denied = |action: &'static str| (403, "AuthorizationFailed", action);
    vec![
        (
            "dns.public-zone",
            "pz",
            Arm {
                method: "GET",
                rtype: "Microsoft.Network/dnsZones",
                refusal: denied(
                    "The client does not have authorization to perform action \
                     'Microsoft.Network/dnszones/read'.",
                ),
                operation: None,
            },
        ),
        (
            "identity.oidc",
            "oidc",
            Blob {
                refusal: (
                    403,
                    "AuthorizationPermissionMismatch",
                    "This request is not authorized to perform this operation using this \
                     permission.",
                ),
            },
        ),
        (
            "identity.workload",
            "wl",
            Arm {
                method: "PUT",
                rtype: "Microsoft.ManagedIdentity/userAssignedIdentities",
                refusal: denied(
                    "The client does not have authorization to perform action \
                     'Microsoft.ManagedIdentity/userAssignedIdentities/write'.",
                ),
                operation: None,
            },
        ),
        (
            "identity.role-assignments",
            "ra",
            Arm {
                method: "PUT",
                rtype: "Microsoft.Authorization/roleAssignments",
                refusal: denied(
                    "The client does not have authorization to perform action \
                     'Microsoft.Authorization/roleAssignments/write'.",
                ),
                operation: None,
            },
        ),
        (
            "network.resource-groups",
            "rg",
            Arm {
                method: "PUT",
                rtype: "Microsoft.Resources/resourceGroups",
                refusal: denied(
                    "The client does not have authorization to perform action \
                     'Microsoft.Resources/subscriptions/resourcegroups/write'.",
                ),
                operation: None,
            },
        ),
        (
            "network.nsg",
            "nsg",
            Arm {
                method: "PUT",
                rtype: "Microsoft.Network/networkSecurityGroups",
                refusal: (
                    400,
                    "NetworkSecurityGroupCountLimitReached",
                    "Cannot create more than 5000 network security groups for this \
                     subscription in this region.",
                ),
                operation: Some("Microsoft.Network/networkSecurityGroups"),
            },
        ),
        (
            "network.vnet",
            "vnet",
            Arm {
                method: "PUT",
                rtype: "Microsoft.Network/virtualNetworks",
                refusal: (400, "InvalidRequestFormat", "Cannot parse the request."),
                operation: Some("Microsoft.Network/virtualNetworks"),
            },
        ),
        (
            "network.public-ip",
            "pip",
            Arm {
                method: "PUT",
                rtype: "Microsoft.Network/publicIPAddresses",
                refusal: (
                    400,
                    "PublicIPCountLimitReached",
                    "Cannot create more than 1000 public IP addresses for this subscription \
                     in this region.",
                ),
                operation: Some("Microsoft.Network/publicIPAddresses"),
            },
        ),
        (
            "network.load-balancer",
            "lb",
            Arm {
                method: "PUT",
                rtype: "Microsoft.Network/loadBalancers",
                refusal: (
                    403,
                    "RequestDisallowedByPolicy",
                    "Resource was disallowed by policy 'deny-public-load-balancers'.",
                ),
                operation: Some("Microsoft.Network/loadBalancers"),
            },
        ),
        (
            "dns.private-zone",
            "zone",
            Arm {
                method: "PUT",
                rtype: "Microsoft.Network/privateDnsZones",
                refusal: denied(
                    "The client does not have authorization to perform action \
                     'Microsoft.Network/privateDnsZones/write'.",
                ),
                operation: Some("Microsoft.Network/privateDnsZones"),
            },
        ),
        (
            "dns.vnet-link",
            "link",
            Arm {
                method: "PUT",
                rtype: "Microsoft.Network/privateDnsZones/virtualNetworkLinks",
                refusal: (
                    400,
                    "BadRequest",
                    "A virtual network cannot be linked to multiple zones with overlapping \
                     namespaces.",
                ),
                operation: Some("Microsoft.Network/privateDnsZones/virtualNetworkLinks"),
            },
        ),
        ("controlplane.hostedcluster", "hc", HostedCluster),
        (
            "dns.records",
            "rec",
            Arm {
                method: "PUT",
                rtype: "Microsoft.Network/privateDnsZones/A",
                refusal: denied(
                    "The client does not have authorization to perform action \
                     'Microsoft.Network/privateDnsZones/A/write'.",
                ),
                operation: None,
            },
        ),
        (
            // The simulated CAPZ makes the workers' VMs, as the node-pool-management identity.
            "nodepool.workers",
            "np",
            Arm {
                method: "PUT",
                rtype: "Microsoft.Compute/virtualMachines",
                refusal: denied(
                    "The client does not have authorization to perform action \
                     'Microsoft.Compute/virtualMachines/write'.",
                ),
                // CAPZ writes a NIC again when its operation failed; a VM whose creation
                // failed it leaves alone (`VMProvisionFailed`) until HyperShift's auto-repair
                // replaces the machine, which the simulated operator does not do.
                operation: Some("Microsoft.Network/networkInterfaces"),
            },
        ),
        ("controlplane.rollout", "roll", Rollout),
    ]
}

/// One cell: a step, a kind of failure, the cluster that meets it.
struct Cell {
    step: &'static str,
    kind: Kind,
    cluster: String,
    /// `hypersaga` arguments that put the fault in place, or why none can.
    inject: Result<Vec<String>, String>,
    /// Put in place once this step has succeeded rather than before the create: the rollout's
    /// read of the HostedCluster is the same request as the control-plane step's.
    inject_after: Option<&'static str>,
}

fn cells() -> Vec<Cell> {
    let mut out = Vec::new();
    for (step, tag, reach) in dag_steps() {
        for kind in Kind::ALL {
            let cluster = format!("fm-{tag}-{}", kind.tag());
            let inject = inject(reach, kind, &cluster);
            let inject_after =
                matches!(reach, Reach::Rollout).then_some("controlplane.hostedcluster");
            out.push(Cell {
                step,
                kind,
                cluster,
                inject,
                inject_after,
            });
        }
    }
    out
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

/// `hypersaga emulator cluster-fault add-api`: the management cluster's API answers `status`
/// to `verb` on the cluster's HostedCluster.
fn api_fault(verb: &str, cluster: &str, status: &str, more: &[&str]) -> Vec<String> {
    let mut args = strings(&[
        "emulator",
        "cluster-fault",
        "add-api",
        "--verb",
        verb,
        "--resource",
        "hostedclusters",
        "--name-contains",
        cluster,
        "--status",
        status,
    ]);
    args.extend(strings(more));
    args
}

/// The `hypersaga` command that puts `kind` in `reach`'s way, scoped to `cluster`.
fn inject(reach: Reach, kind: Kind, cluster: &str) -> Result<Vec<String>, String> {
    match reach {
        Reach::Blob { refusal } => {
            let status = refusal.0.to_string();
            let args: Vec<&str> = match kind {
                Kind::Terminal => vec![
                    "--status",
                    &status,
                    "--code",
                    refusal.1,
                    "--message",
                    refusal.2,
                ],
                Kind::ServerError => {
                    vec!["--status", "500", "--code", "InternalError", "--count", "2"]
                }
                Kind::Throttled => vec![
                    "--status",
                    "503",
                    "--code",
                    "ServerBusy",
                    "--message",
                    "The server is busy.",
                    "--retry-after",
                    "1",
                    "--count",
                    "2",
                ],
                Kind::FailedOperation => {
                    return Err(
                        "Azure Storage answers in the request: no operation to fail".to_owned()
                    );
                }
            };
            let mut all = vec!["emulator", "fault", "add"];
            all.extend(args);
            // Scoped to the cell's tenant's issuer container (see where the cells are played).
            all.extend([
                "--method",
                "PUT",
                "--type",
                hypersaga_emulator_arm::storage::BLOB_TYPE,
                "--path-contains",
                cluster,
            ]);
            Ok(strings(&all))
        }
        Reach::HostedCluster => match kind {
            Kind::Terminal => Ok(strings(&[
                "emulator",
                "cluster-fault",
                "add",
                "--kind",
                "hosted-cluster",
                "--name-contains",
                cluster,
                "--condition",
                "ValidConfiguration",
                "--reason",
                "InvalidConfiguration",
                "--message",
                "the service account signing key is not a valid RSA key",
            ])),
            Kind::FailedOperation => Ok(strings(&[
                "emulator",
                "cluster-fault",
                "add",
                "--kind",
                "hosted-cluster",
                "--name-contains",
                cluster,
                "--condition",
                "PlatformCredentialsFound",
                "--reason",
                "PlatformCredentialsNotFound",
                "--message",
                "the cloud credentials secret cannot be read yet",
            ])),
            // The step applies the HostedCluster (server-side apply: a patch).
            Kind::ServerError => Ok(api_fault("patch", cluster, "500", &["--count", "2"])),
            Kind::Throttled => Ok(api_fault(
                "patch",
                cluster,
                "429",
                &["--retry-after", "1", "--count", "2"],
            )),
        },
        Reach::Rollout => match kind {
            // RBAC no longer lets the service read HostedClusters: refused however often.
            Kind::Terminal => Ok(api_fault("get", cluster, "403", &[])),
            Kind::ServerError => Ok(api_fault("get", cluster, "500", &["--count", "2"])),
            Kind::Throttled => Ok(api_fault(
                "get",
                cluster,
                "429",
                &["--retry-after", "1", "--count", "2"],
            )),
            Kind::FailedOperation => {
                Err("a read of the HostedCluster: no operation to fail".to_owned())
            }
        },
        Reach::Arm {
            method,
            rtype,
            refusal,
            operation,
        } => {
            let status = refusal.0.to_string();
            let (args, rtype) = match kind {
                // Until cleared: a refusal stays a refusal however often it is asked.
                Kind::Terminal => (
                    vec![
                        "add",
                        "--status",
                        &status,
                        "--code",
                        refusal.1,
                        "--message",
                        refusal.2,
                    ],
                    rtype,
                ),
                Kind::ServerError => (
                    vec![
                        "add",
                        "--status",
                        "500",
                        "--code",
                        "InternalServerError",
                        "--count",
                        "2",
                    ],
                    rtype,
                ),
                Kind::Throttled => (
                    vec![
                        "add",
                        "--status",
                        "429",
                        "--code",
                        "SubscriptionRequestsThrottled",
                        "--retry-after",
                        "1",
                        "--count",
                        "2",
                    ],
                    rtype,
                ),
                Kind::FailedOperation => {
                    let Some(rtype) = operation else {
                        return Err(if method == "GET" {
                            "a read: no operation to fail".to_owned()
                        } else {
                            "synchronous in Azure: answered in the request, no operation to fail"
                                .to_owned()
                        });
                    };
                    // The network RP's own word for it; private DNS says InternalServerError.
                    let (code, message) = if rtype.starts_with("Microsoft.Network/")
                        && !rtype.contains("privateDnsZones")
                    {
                        ("RetryableError", "A retryable error occurred.")
                    } else {
                        ("InternalServerError", "An internal server error occurred.")
                    };
                    (
                        vec![
                            "add-async",
                            "--code",
                            code,
                            "--message",
                            message,
                            "--count",
                            "1",
                        ],
                        rtype,
                    )
                }
            };
            let mut all = vec!["emulator", "fault"];
            all.extend(args);
            all.extend([
                "--method",
                method,
                "--type",
                rtype,
                "--path-contains",
                cluster,
            ]);
            Ok(strings(&all))
        }
    }
}

/// Runs `hypersaga` off the async runtime's threads, and insists it worked.
async fn run(system: &System, args: Vec<String>) {
    let endpoints = system.state_dir().join("endpoints.json");
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_hypersaga"))
            .args(&args)
            .env("HYPERSAGA_ENDPOINTS", endpoints)
            .output()
            .expect("run hypersaga")
    })
    .await
    .expect("join");
    assert!(out.status.success(), "{}", text(&out));
}

/// How a cell ended.
#[derive(Debug)]
struct Outcome {
    /// `failed+compensated`, `ready`, or what happened instead.
    label: String,
    /// Why the label is not the expected one, when it is not.
    problem: Option<String>,
    /// What it took besides waiting, printed under the table.
    note: Option<String>,
    secs: f64,
}

/// Creates the cell's cluster, follows it to the end and judges what it left behind.
async fn play(system: &System, cell: &Cell, tenant: &str) -> Outcome {
    let started = Instant::now();
    // Workers only where the cell is about them: each costs a NIC, a VM and a disk. The
    // rollout waits for them (a cluster without nodes rolls out at once, unread).
    let replicas = i32::from(cell.step.starts_with("nodepool.") || cell.inject_after.is_some());
    if cell.inject_after.is_some() {
        // Hold the nodes back a few seconds (CAPZ retries a refused VM after 0.5, 1, 2 s), so
        // the fault is in place before the rollout first reads the HostedCluster.
        run(
            system,
            strings(&[
                "emulator",
                "fault",
                "add",
                "--method",
                "PUT",
                "--type",
                "Microsoft.Compute/virtualMachines",
                "--path-contains",
                &cell.cluster,
                "--status",
                "500",
                "--code",
                "InternalServerError",
                "--count",
                "3",
            ]),
        )
        .await;
    }
    system
        .client(tenant)
        .await
        .create_cluster(create_request(&cell.cluster, replicas))
        .await
        .expect("create accepted");
    if let (Some(after), Ok(args)) = (cell.inject_after, &cell.inject) {
        system
            .wait_until(tenant, &cell.cluster, after, |c| {
                steps(c).get(after).is_some_and(|(st, _)| st == "succeeded")
            })
            .await;
        run(system, args.clone()).await;
    }
    if cell.step == "controlplane.hostedcluster" && cell.kind == Kind::FailedOperation {
        recover_hosted_cluster(system, &cell.cluster).await;
    }
    let mut end = follow(system, tenant, &cell.cluster).await;
    let mut note = (cell.step == "identity.oidc" && cell.kind == Kind::Throttled).then(|| {
        "Azure Storage throttles with 503 ServerBusy and Retry-After, never 429: that is what \
         was injected"
            .to_owned()
    });
    if cell.inject_after.is_some() && cell.kind == Kind::Terminal {
        let paused = end
            .status
            .as_ref()
            .and_then(|s| s.operation.as_ref())
            .is_some_and(|o| o.pause.is_some());
        end = restore_and_resume(system, tenant, &cell.cluster, end).await;
        note = paused.then(|| {
            "its undo met the same refusal and paused; the permission restored \
             (cluster-fault remove) and the operation resumed, the undo finished"
                .to_owned()
        });
    }
    let secs = started.elapsed().as_secs_f64();
    let status = end.status.clone().unwrap_or_default();
    let label = match phase(&end).as_str() {
        "ready" => "ready".to_owned(),
        "failed" => {
            let left = left_behind(system, tenant, &cell.cluster, &status.infra_id).await;
            if left.is_empty() {
                "failed+compensated".to_owned()
            } else {
                return Outcome {
                    label: "failed, not compensated".into(),
                    problem: Some(format!("left behind: {left:?}")),
                    note,
                    secs,
                };
            }
        }
        other => match end.status.as_ref().and_then(|s| s.operation.as_ref()) {
            Some(op) if op.pause.is_some() => format!("paused ({other})"),
            _ => format!("still {other}"),
        },
    };
    let problem = if label != cell.kind.expected() {
        Some(format!("{:?}", status.error))
    } else if cell.kind == Kind::Terminal {
        failed_where_injected(cell, &end)
    } else {
        None
    };
    Outcome {
        label,
        problem,
        note,
        secs,
    }
}

/// How long one cell may take: a create with its retries, or a failure and its compensation.
const CELL_TIMEOUT: Duration = Duration::from_secs(180);

/// Follows a cluster until it is ready, failed or paused (or [`CELL_TIMEOUT`] passed), and
/// answers its last state: a cell that does not end is reported in the table, not a panic
/// that hides the others.
async fn follow(system: &System, tenant: &str, name: &str) -> hypersaga_api::v1::Cluster {
    let mut client = system.client(tenant).await;
    let deadline = Instant::now() + CELL_TIMEOUT;
    let mut last = hypersaga_api::v1::Cluster::default();
    while Instant::now() < deadline {
        if let Ok(r) = client
            .get_cluster(hypersaga_api::v1::GetClusterRequest { name: name.into() })
            .await
        {
            last = r.into_inner();
            let paused = last
                .status
                .as_ref()
                .and_then(|s| s.operation.as_ref())
                .is_some_and(|o| o.pause.is_some());
            if paused || ["ready", "failed"].contains(&phase(&last).as_str()) {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    last
}

/// A terminal cell must fail at its own step, with Azure's (or HyperShift's) words, and
/// leave every step undone, skipped or kept.
fn failed_where_injected(cell: &Cell, end: &hypersaga_api::v1::Cluster) -> Option<String> {
    let error = end.status.as_ref().and_then(|s| s.error.clone());
    let Some(error) = error else {
        return Some("failed without an error".into());
    };
    if error.step != cell.step {
        return Some(format!(
            "failed at {} ({}), not at {}",
            error.step, error.code, cell.step
        ));
    }
    let s = steps(end);
    // A look-up that made nothing (the public zone) is kept: nothing to undo.
    if !s
        .get(cell.step)
        .is_some_and(|(st, _)| st == "compensated" || st == "kept")
    {
        return Some(format!("the failed step was not undone: {s:?}"));
    }
    let unfinished: Vec<_> = s
        .iter()
        .filter(|(_, (st, _))| !["compensated", "skipped", "kept"].contains(&st.as_str()))
        .collect();
    (!unfinished.is_empty()).then(|| format!("steps not undone: {unfinished:?}"))
}

/// What of `cluster` is still in ARM (resources and role assignments whose ids name it) or on
/// the management cluster (its namespace, or objects named after it).
async fn left_behind(system: &System, tenant: &str, cluster: &str, infra_id: &str) -> Vec<String> {
    let mut left = Vec::new();
    let sub = system.subscription(tenant);
    let admin = system.arm_admin();
    let needle = cluster.to_ascii_lowercase();
    for r in admin.resources(Some(&sub)).await.expect("resources") {
        let id = r["id"].as_str().unwrap_or_default();
        if id.to_ascii_lowercase().contains(&needle) {
            left.push(id.to_owned());
        }
    }
    for a in admin
        .role_assignments(Some(&sub))
        .await
        .expect("assignments")
    {
        let scope = a["properties"]["scope"].as_str().unwrap_or_default();
        if scope.to_ascii_lowercase().contains(&needle) {
            left.push(format!("role assignment at {scope}"));
        }
    }
    let ns = namespace(tenant, infra_id);
    for o in system.mgmt_admin().objects().await.expect("objects") {
        let name = o["metadata"]["name"].as_str().unwrap_or_default();
        let in_ns = o["metadata"]["namespace"].as_str() == Some(ns.as_str());
        if in_ns || name == ns || name.starts_with(&format!("{ns}-")) || name.contains(cluster) {
            left.push(format!("{} {name}", o["kind"].as_str().unwrap_or("?")));
        }
    }
    left
}

/// A refusal to read the HostedCluster refuses the compensation's reads too, so undoing it
/// pauses for an operator, as it should. The operator grants the permission back (the fault
/// goes) and resumes the operation (`hypersaga operation resume`); the undo then finishes.
async fn restore_and_resume(
    system: &System,
    tenant: &str,
    cluster: &str,
    end: hypersaga_api::v1::Cluster,
) -> hypersaga_api::v1::Cluster {
    let Some(op) = end
        .status
        .as_ref()
        .and_then(|s| s.operation.as_ref())
        .filter(|o| o.pause.is_some())
    else {
        return end;
    };
    let op_id = op.id.clone();
    remove_cluster_faults(system, cluster).await;
    run(system, strings(&["operation", "resume", &op_id])).await;
    system
        .wait_until(tenant, cluster, "the resumed operation", |c| {
            c.status
                .as_ref()
                .and_then(|s| s.operation.as_ref())
                .is_some_and(|o| o.pause.is_none())
        })
        .await;
    follow(system, tenant, cluster).await
}

/// `hypersaga emulator cluster-fault remove`: this cluster's management-cluster faults go,
/// the others stay.
async fn remove_cluster_faults(system: &System, cluster: &str) {
    run(
        system,
        strings(&[
            "emulator",
            "cluster-fault",
            "remove",
            "--name-contains",
            cluster,
        ]),
    )
    .await;
}

/// HyperShift recovers from a condition it reported `False` once the cause goes: wait until
/// the control-plane step shows it is waiting on the operator, then remove this cluster's
/// fault (`cluster-fault remove`), as the missing credentials turning up.
async fn recover_hosted_cluster(system: &System, cluster: &str) {
    // The whole matrix runs at once: under a loaded machine's share of it, getting through
    // the eleven steps before the control plane takes more than one `TIMEOUT`.
    system
        .wait_until_within(
            TENANT,
            cluster,
            "the control plane step to wait",
            3 * TIMEOUT,
            |c| {
                steps(c)
                    .get("controlplane.hostedcluster")
                    .is_some_and(|(st, _)| st == "running")
            },
        )
        .await;
    // Let the operator report the condition before it goes.
    tokio::time::sleep(Duration::from_secs(1)).await;
    remove_cluster_faults(system, cluster).await;
}

fn render(cells: &[Cell], outcomes: &BTreeMap<String, Outcome>) -> String {
    let mut rows: BTreeMap<(usize, &str), Vec<String>> = BTreeMap::new();
    let order: BTreeMap<&str, usize> = dag_steps()
        .iter()
        .enumerate()
        .map(|(i, (s, _, _))| (*s, i))
        .collect();
    let mut notes = Vec::new();
    for c in cells {
        let cell = match (&c.inject, outcomes.get(&c.cluster)) {
            (Err(why), _) => {
                notes.push(format!(
                    "n/a: {} × {}: not injectable: {why}",
                    c.step,
                    c.kind.header()
                ));
                "n/a".to_owned()
            }
            (Ok(_), Some(o)) => {
                if let Some(n) = &o.note {
                    notes.push(format!("note: {} × {}: {n}", c.step, c.kind.header()));
                }
                format!(
                    "{}{} ({:.0} s)",
                    o.label,
                    if o.problem.is_some() { " ✗" } else { "" },
                    o.secs
                )
            }
            (Ok(_), None) => "not run ✗".to_owned(),
        };
        rows.entry((order[c.step], c.step)).or_default().push(cell);
    }
    let mut out = format!(
        "{:<28} {:<28} {:<28} {:<28} {:<28}\n",
        "STEP",
        Kind::Terminal.header(),
        Kind::ServerError.header(),
        Kind::Throttled.header(),
        Kind::FailedOperation.header()
    );
    for ((_, step), cells) in rows {
        out.push_str(&format!("{step:<28}"));
        for c in cells {
            out.push_str(&format!(" {c:<28}"));
        }
        out.push('\n');
    }
    for n in notes {
        out.push_str(&n);
        out.push('\n');
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_step_fails_for_good_on_a_refusal_and_recovers_from_what_azure_retries() {
    let started = Instant::now();
    // Budgets well above the matrix's ~2,500 writes, so no cell waits on another's.
    let cells = cells();
    let tenants = (LOOKUP_TENANTS.len() + 1).to_string();
    let system = System::start_with(&["--arm-budget-scale", "20", "--tenants", &tenants]).await;

    // Every step of the create DAG is in the matrix, with a cluster of its own per cell.
    let spec = hypersaga_model::ClusterSpec {
        location: "eastus".into(),
        base_domain: "example.com".into(),
        release_image: "quay.io/openshift-release-dev/ocp-release:4.21.0-multi".into(),
        node_pools: vec![hypersaga_model::NodePoolSpec::new(
            "workers",
            1,
            "Standard_D4s_v5",
        )],
        network: hypersaga_model::NetworkSpec::default(),
        addons: Vec::new(),
    };
    let plan: Vec<String> = hypersaga_saga::create_plan(&spec, Default::default())
        .into_iter()
        .map(|s| s.id)
        .collect();
    let mut in_matrix: Vec<String> = dag_steps()
        .iter()
        .map(|(s, _, _)| (*s).to_owned())
        .collect();
    let mut in_plan = plan.clone();
    in_matrix.sort();
    in_plan.sort();
    assert_eq!(
        in_matrix, in_plan,
        "the matrix covers exactly the create DAG"
    );
    // A fault scoped by one cluster's name must not match another's requests.
    for a in &cells {
        for b in &cells {
            assert!(
                a.cluster == b.cluster || !b.cluster.contains(&a.cluster),
                "{} is part of {}",
                a.cluster,
                b.cluster
            );
        }
    }

    // One create without a fault first: it also makes the tenant's OIDC issuer (one signing
    // key per tenant), which the cells would otherwise all race to generate at once.
    let baseline = "fm-none";
    system.create(TENANT, baseline, 0).await;
    system
        .wait_until(TENANT, baseline, "the tenant's issuer", |c| {
            steps(c)
                .get("identity.oidc")
                .is_some_and(|(st, _)| st == "succeeded")
        })
        .await;

    // Faults in place first (they wait, scoped, for their cluster), then every create at once.
    let (lookups, others): (Vec<&Cell>, Vec<&Cell>) = cells
        .iter()
        .filter(|c| c.inject.is_ok())
        .partition(|c| c.step == "dns.public-zone" || c.step == "identity.oidc");
    for c in others.iter().filter(|c| c.inject_after.is_none()) {
        if let Ok(args) = &c.inject {
            run(&system, args.clone()).await;
        }
    }
    let concurrent = futures::future::join_all(
        others
            .iter()
            .map(|c| async { (c.cluster.clone(), play(&system, c, TENANT).await) }),
    );
    // The public zone is looked up by one request per create, the same for every cluster of a
    // tenant, and the issuer is the tenant's: each of their cells is played as a tenant of its
    // own, its fault scoped to that tenant's subscription or issuer container.
    assert!(
        lookups.len() <= LOOKUP_TENANTS.len(),
        "a tenant for each look-up cell"
    );
    let by_tenant =
        futures::future::join_all(lookups.iter().zip(LOOKUP_TENANTS).map(|(c, tenant)| {
            let system = &system;
            async move {
                if let Ok(args) = &c.inject {
                    let mut args = args.clone();
                    // Scoped to the tenant's subscription (the look-up) or issuer container
                    // rather than the cluster's name, which neither path holds.
                    if let Some(last) = args.last_mut() {
                        *last = if c.step == "identity.oidc" {
                            format!("/oidc-{tenant}/")
                        } else {
                            system.subscription(tenant)
                        };
                    }
                    run(system, args).await;
                }
                (c.cluster.clone(), play(system, c, tenant).await)
            }
        }));
    let (a, b, base) = tokio::join!(concurrent, by_tenant, follow(&system, TENANT, baseline));
    assert_eq!(phase(&base), "ready", "without a fault: {base:#?}");
    let outcomes: BTreeMap<String, Outcome> = a.into_iter().chain(b).collect();

    println!("{}", render(&cells, &outcomes));
    println!("fault matrix: {:.0} s", started.elapsed().as_secs_f64());

    // Every cell ended as Azure's answer means, and every injected fault was met.
    let mut wrong = Vec::new();
    for c in cells.iter().filter(|c| c.inject.is_ok()) {
        match outcomes.get(&c.cluster) {
            Some(o) if o.label == c.kind.expected() && o.problem.is_none() => {}
            Some(o) => wrong.push(format!(
                "{} × {}: {} (expected {}): {}",
                c.step,
                c.kind.header(),
                o.label,
                c.kind.expected(),
                o.problem.clone().unwrap_or_default()
            )),
            None => wrong.push(format!("{} × {}: not run", c.step, c.kind.header())),
        }
    }
    // A fault with a count is gone once used up; one without (a refusal) must have refused.
    let admin = system.arm_admin();
    let unmet: Vec<String> = admin
        .faults()
        .await
        .expect("faults")
        .into_iter()
        .filter(|f| f.remaining.is_some() || f.hits == 0)
        .map(|f| {
            format!(
                "{} {} {:?}",
                f.spec.method, f.spec.resource_type, f.spec.path_contains
            )
        })
        .chain(
            admin
                .async_faults()
                .await
                .expect("async faults")
                .into_iter()
                .map(|f| {
                    format!(
                        "failed operation of {} {} {:?}",
                        f.spec.method, f.spec.resource_type, f.spec.path_contains
                    )
                }),
        )
        .chain(
            system
                .mgmt_admin()
                .api_faults()
                .await
                .expect("API faults")
                .into_iter()
                .filter(|f| f.remaining.is_some() || f.hits == 0)
                .map(|f| {
                    format!(
                        "management-cluster API: {} {} {:?}",
                        f.spec.verb, f.spec.resource, f.spec.name_contains
                    )
                }),
        )
        .collect();
    assert!(
        wrong.is_empty() && unmet.is_empty(),
        "cells that did not end as Azure's answer means: {wrong:#?}\nfaults never met: {unmet:#?}"
    );
}
