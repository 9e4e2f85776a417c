//! Hard edges: input of any size is refused at the gateway, before it reaches the bus, with an
//! answer that reaches the caller; a request id means one request.

use std::time::{Duration, Instant};

use hypersaga::client::Client;
use hypersaga_api::v1 as pb;
use serde_json::Value;
use tonic::Code;
use tonic_types::StatusExt;

use crate::support::*;

/// nats-server's view of the gateway's connection, through its monitoring endpoint.
struct NatsMonitor(String);

impl NatsMonitor {
    /// The monitoring URL `hypersaga dev`'s nats-server wrote to its ports file.
    fn of(system: &System) -> Self {
        let dir = system.state_dir().join("nats").join("ports");
        let file = std::fs::read_dir(&dir)
            .expect("nats ports dir")
            .flatten()
            .find(|e| e.file_name().to_string_lossy().ends_with(".ports"))
            .expect("a ports file");
        let ports: Value =
            serde_json::from_slice(&std::fs::read(file.path()).expect("read ports")).expect("json");
        Self(
            ports["monitoring"][0]
                .as_str()
                .expect("monitoring url")
                .to_owned(),
        )
    }

    async fn connz(&self, query: &str) -> Vec<Value> {
        let url = format!("{}/connz?limit=4096&{query}", self.0);
        let body: Value = reqwest::get(&url)
            .await
            .expect(&url)
            .json()
            .await
            .expect("connz json");
        body["connections"].as_array().cloned().unwrap_or_default()
    }

    /// The connection id of the gateway's open connection: a new one means it reconnected.
    async fn gateway_cid(&self) -> u64 {
        let open = self.connz("").await;
        let gateway: Vec<u64> = open
            .iter()
            .filter(|c| c["name"] == "hypersaga-gateway")
            .filter_map(|c| c["cid"].as_u64())
            .collect();
        assert_eq!(gateway.len(), 1, "one gateway connection: {open:#?}");
        gateway[0]
    }

    /// Closed connections of the gateway, with why they closed.
    async fn gateway_closed(&self) -> Vec<Value> {
        self.connz("state=closed")
            .await
            .into_iter()
            .filter(|c| c["name"] == "hypersaga-gateway")
            .collect()
    }
}

/// One of the calls that name a cluster or an operation, with `long` where the caller's
/// identifier goes; returns the refusal and the field it must name.
async fn call_with(c: &mut Client, which: usize, long: &str) -> (tonic::Status, &'static str) {
    let s = long.to_owned();
    let op = "op-0af7c9e2d4b14f3c8a1e5b6d7f809a1b".to_owned();
    let (result, field) = match which % 10 {
        0 => (
            c.get_cluster(pb::GetClusterRequest { name: s })
                .await
                .map(drop),
            "name",
        ),
        1 => (
            c.delete_cluster(pb::DeleteClusterRequest {
                name: s,
                ..Default::default()
            })
            .await
            .map(drop),
            "name",
        ),
        2 => (
            c.watch_cluster(pb::WatchClusterRequest { name: s })
                .await
                .map(drop),
            "name",
        ),
        3 => (
            c.get_operation(pb::GetOperationRequest { id: s })
                .await
                .map(drop),
            "id",
        ),
        4 => (
            c.resume_operation(pb::ResumeOperationRequest {
                id: s,
                request_id: String::new(),
            })
            .await
            .map(drop),
            "id",
        ),
        5 => (
            c.retry_operation_step(pb::RetryOperationStepRequest {
                id: op,
                step: s,
                request_id: String::new(),
            })
            .await
            .map(drop),
            "step",
        ),
        6 => (
            c.compensate_operation(pb::CompensateOperationRequest {
                id: op,
                request_id: s,
            })
            .await
            .map(drop),
            "request_id",
        ),
        7 => (
            c.abandon_operation(pb::AbandonOperationRequest {
                id: s,
                request_id: String::new(),
            })
            .await
            .map(drop),
            "id",
        ),
        8 => (
            c.list_operations(pb::ListOperationsRequest {
                cluster: s,
                ..Default::default()
            })
            .await
            .map(drop),
            "cluster",
        ),
        _ => (
            c.list_clusters(pb::ListClustersRequest {
                page_token: s,
                ..Default::default()
            })
            .await
            .map(drop),
            "page_token",
        ),
    };
    (result.expect_err("refused"), field)
}

/// The fields a refusal names in its `google.rpc.BadRequest`.
fn violated_fields(status: &tonic::Status) -> Vec<String> {
    status
        .get_details_bad_request()
        .map(|b| b.field_violations.into_iter().map(|v| v.field).collect())
        .unwrap_or_default()
}

/// The bytes of the metadata an error travels in (`grpc-status`, `grpc-message`,
/// `grpc-status-details-bin` and any other), as the gateway sent it.
fn error_metadata_bytes(status: &tonic::Status) -> usize {
    let mut headers = tonic::codegen::http::HeaderMap::new();
    status.add_header(&mut headers).expect("encode the status");
    headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum()
}

/// Sends `message` (any message type) as the body of `GetCluster`: a request that is not a
/// valid `GetClusterRequest` on the wire.
async fn get_cluster_with_body(system: &System, message: pb::ListClustersRequest) -> tonic::Status {
    let mut grpc = tonic::client::Grpc::new(system.channel().await);
    grpc.ready().await.expect("ready");
    let mut request = tonic::Request::new(message);
    let bearer = format!("Bearer {}", system.token("acme"));
    request
        .metadata_mut()
        .insert("authorization", bearer.parse().expect("metadata"));
    let path = tonic::codegen::http::uri::PathAndQuery::from_static(
        "/hypersaga.v1.ClusterService/GetCluster",
    );
    let codec =
        hypersaga_api::codec::StrictCodec::<pb::ListClustersRequest, pb::Cluster>::default();
    grpc.unary(request, path, codec)
        .await
        .expect_err("not a GetClusterRequest")
}

#[tokio::test]
async fn input_of_any_size_is_refused_at_the_gateway_which_stays_on_the_bus() {
    let system = System::start().await;
    let nats = NatsMonitor::of(&system);
    let gateway = nats.gateway_cid().await;
    let closed = nats.gateway_closed().await;
    let mut acme = system.client("acme").await;

    // 1,000 reads and operator calls with names and ids far beyond any limit: each answered
    // at once, naming the field. (Before limits, 5,000 characters made nats-server drop the
    // gateway's connection and the call hung 10 s; 2 s is far from both.)
    for len in [5_000, 100_000] {
        let long = "a".repeat(len);
        for which in 0..500 {
            let asked = Instant::now();
            let (status, field) = call_with(&mut acme, which, &long).await;
            let took = asked.elapsed();
            assert_eq!(
                status.code(),
                Code::InvalidArgument,
                "call {which}: {status:?}"
            );
            assert!(
                violated_fields(&status).iter().any(|f| f == field),
                "call {which} names {field}: {status:?}"
            );
            assert!(
                error_metadata_bytes(&status) < 8 * 1024,
                "call {which}: {} bytes",
                error_metadata_bytes(&status)
            );
            assert!(took < Duration::from_secs(2), "call {which} took {took:?}");
        }
    }
    assert_eq!(
        nats.gateway_cid().await,
        gateway,
        "the gateway kept its connection"
    );
    assert_eq!(nats.gateway_closed().await, closed);

    // A 1 MB release image is refused at once, and leaves nothing behind.
    let mut huge = create_request("huge", 1);
    huge.spec.as_mut().expect("spec").release_image = "q".repeat(1_000_000);
    let status = acme.create_cluster(huge).await.expect_err("refused");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert_eq!(violated_fields(&status), ["spec.release_image"]);
    let ops = acme
        .list_operations(pb::ListOperationsRequest::default())
        .await
        .expect("list")
        .into_inner();
    assert!(ops.operations.is_empty(), "{ops:#?}");

    // Every field at once, up to the message limit (1 MiB), and a flood of node pools: the
    // answer still reaches the caller, under 8 KB of metadata.
    let field = "Z".repeat(30_000);
    let mut everything = create_request(&field, 1);
    let spec = everything.spec.as_mut().expect("spec");
    spec.location = field.clone();
    spec.base_domain = field.clone();
    spec.release_image = field.clone();
    spec.node_pools = vec![
        pb::NodePoolSpec {
            name: field.clone(),
            replicas: Some(-1),
            vm_size: field.clone(),
            ..Default::default()
        };
        10
    ];
    spec.network = Some(pb::NetworkSpec {
        vnet_cidr: field.clone(),
        subnet_cidr: field.clone(),
        ..Default::default()
    });
    everything.request_id = field.clone();
    let mut pools = create_request("pools", 1);
    pools.spec.as_mut().expect("spec").node_pools = vec![
        pb::NodePoolSpec {
            name: "Bad Pool".into(),
            replicas: Some(-1),
            vm_size: "?".into(),
            ..Default::default()
        };
        20_000
    ];
    for request in [everything, pools] {
        let status = acme.create_cluster(request).await.expect_err("refused");
        assert_eq!(status.code(), Code::InvalidArgument, "{}", status.message());
        let bytes = error_metadata_bytes(&status);
        assert!(bytes < 8 * 1024, "{bytes} bytes: {}", status.message());
    }

    // A request that is not protobuf for its call is the caller's mistake.
    let status = get_cluster_with_body(
        &system,
        pb::ListClustersRequest {
            page_size: 5,
            page_token: String::new(),
        },
    )
    .await;
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(
        status.message().contains("GetClusterRequest"),
        "{}",
        status.message()
    );

    // A request id is one request: the same again is the same operation; a changed one is
    // refused, naming what changed. (The coordinator is held meanwhile, so that the operation
    // stays accepted and unbuilt.)
    let coordinator = system.stop("coordinator-0");
    let mut first = create_request("again", 1);
    first.request_id = "8d1c4f6e-2b7a-4a59-9a77-3c1f0e2d5b6a".into();
    let op = acme
        .create_cluster(first.clone())
        .await
        .expect("create")
        .into_inner();
    let same = acme
        .create_cluster(first.clone())
        .await
        .expect("the same request")
        .into_inner();
    assert_eq!(same.id, op.id);
    let mut changed = first.clone();
    let spec = changed.spec.as_mut().expect("spec");
    spec.location = "westeurope".into();
    spec.node_pools[0].replicas = Some(3);
    let status = acme
        .create_cluster(changed)
        .await
        .expect_err("another request under the same id");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert_eq!(violated_fields(&status), ["request_id"]);
    for named in ["spec.location", "spec.node_pools[0].replicas"] {
        assert!(status.message().contains(named), "{}", status.message());
    }

    // An accepted operation is found by every call that names it, before its saga is built:
    // operator calls say it has not started yet, rather than that it does not exist.
    let shown = acme
        .get_operation(pb::GetOperationRequest { id: op.id.clone() })
        .await
        .expect("an accepted operation")
        .into_inner();
    assert_eq!(shown.id, op.id);
    let status = acme
        .abandon_operation(pb::AbandonOperationRequest {
            id: op.id.clone(),
            request_id: String::new(),
        })
        .await
        .expect_err("not started");
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert_eq!(
        status.get_details_error_info().map(|i| i.reason),
        Some("NotStarted".to_owned()),
        "{status:?}"
    );
    coordinator.cont();

    // And the system is whole: that create goes on to ready.
    let cluster = system.watch_to_end("acme", "again").await;
    assert_eq!(phase(&cluster), "ready", "{cluster:#?}");
    assert_eq!(nats.gateway_cid().await, gateway);

    // A delete is one request too: retried with another keep_identities it is refused on
    // request_id; another delete asking otherwise than the one running is a conflict.
    let delete = pb::DeleteClusterRequest {
        name: "again".into(),
        request_id: "5b0e9d2c-7a41-4f8e-b3c6-1d2e3f4a5b6c".into(),
        keep_identities: false,
    };
    let deleting = acme
        .delete_cluster(delete.clone())
        .await
        .expect("delete")
        .into_inner();
    let again = acme
        .delete_cluster(delete.clone())
        .await
        .expect("the same delete")
        .into_inner();
    assert_eq!(again.id, deleting.id);
    let status = acme
        .delete_cluster(pb::DeleteClusterRequest {
            keep_identities: true,
            ..delete.clone()
        })
        .await
        .expect_err("another delete under the same id");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert_eq!(violated_fields(&status), ["request_id"]);
    assert!(status.message().contains("keep_identities"), "{status:?}");
    let status = acme
        .delete_cluster(pb::DeleteClusterRequest {
            request_id: String::new(),
            keep_identities: true,
            ..delete
        })
        .await
        .expect_err("a conflicting delete");
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert_eq!(
        status.get_details_error_info().map(|i| i.reason),
        Some("DeleteRunning".to_owned()),
        "{status:?}"
    );
}
