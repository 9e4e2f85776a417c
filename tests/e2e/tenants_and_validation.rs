//! Tenants are isolated; invalid requests are refused with every violation.

use hypersaga_api::v1 as pb;
use std::time::Duration;

use tonic_types::StatusExt;

use crate::support::*;

#[tokio::test]
async fn tenants_see_only_their_own_clusters_and_bad_requests_create_nothing() {
    let system = System::start().await;
    system.create("acme", "alpha", 0).await;
    system.create("globex", "beta", 0).await;

    let mut acme = system.client("acme").await;
    let mut globex = system.client("globex").await;
    let names =
        |r: pb::ListClustersResponse| r.clusters.into_iter().map(|c| c.name).collect::<Vec<_>>();
    assert_eq!(
        names(
            acme.list_clusters(pb::ListClustersRequest::default())
                .await
                .unwrap()
                .into_inner()
        ),
        vec!["alpha"]
    );
    assert_eq!(
        names(
            globex
                .list_clusters(pb::ListClustersRequest::default())
                .await
                .unwrap()
                .into_inner()
        ),
        vec!["beta"]
    );

    // Another tenant's cluster does not exist for you.
    let e = globex
        .get_cluster(pb::GetClusterRequest {
            name: "alpha".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound);
    let e = globex
        .delete_cluster(pb::DeleteClusterRequest {
            name: "alpha".into(),
            request_id: String::new(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound);
    let e = globex
        .watch_cluster(pb::WatchClusterRequest {
            name: "alpha".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound);

    // Operations are per tenant too.
    let alpha = acme
        .get_cluster(pb::GetClusterRequest {
            name: "alpha".into(),
        })
        .await
        .unwrap()
        .into_inner();
    let op_id = alpha.status.unwrap().operation.unwrap().id;
    let op = acme
        .get_operation(pb::GetOperationRequest { id: op_id.clone() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(op.cluster, "alpha");
    let e = globex
        .get_operation(pb::GetOperationRequest { id: op_id })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound);

    // The API speaks TLS only: a plaintext caller (whose token would travel in clear) gets
    // nowhere.
    assert!(
        system.endpoints.grpc.starts_with("https://"),
        "{}",
        system.endpoints.grpc
    );
    let plaintext = system.endpoints.grpc.replacen("https://", "http://", 1);
    let cleartext = async {
        let mut c = hypersaga::client::connect(&plaintext, &system.token("acme"), None).await?;
        c.list_clusters(pb::ListClustersRequest::default())
            .await
            .map_err(anyhow::Error::from)
    };
    assert!(
        tokio::time::timeout(Duration::from_secs(10), cleartext)
            .await
            .map_or(true, |r| r.is_err()),
        "a plaintext call was answered"
    );

    // Health and reflection (v1 and v1alpha) are served, no token needed for either.
    let channel = system.channel().await;
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
    let status = health
        .check(tonic_health::pb::HealthCheckRequest {
            service: "hypersaga.v1.ClusterService".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .status;
    assert_eq!(
        status,
        tonic_health::pb::health_check_response::ServingStatus::Serving as i32
    );
    use tonic_reflection::pb::v1::{
        ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
        server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
    };
    let mut reflection = ServerReflectionClient::new(channel.clone());
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut answers = reflection
        .server_reflection_info(futures::stream::iter(vec![request]))
        .await
        .unwrap()
        .into_inner();
    let answer = futures::StreamExt::next(&mut answers)
        .await
        .unwrap()
        .unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = answer.message_response else {
        panic!("{answer:?}")
    };
    let services: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    assert!(
        services.contains(&"hypersaga.v1.ClusterService".to_string()),
        "{services:?}"
    );
    {
        use tonic_reflection::pb::v1alpha::{
            ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
            server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
        };
        let request = ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::ListServices(String::new())),
        };
        let answer = futures::StreamExt::next(
            &mut ServerReflectionClient::new(channel)
                .server_reflection_info(futures::stream::iter(vec![request]))
                .await
                .expect("v1alpha reflection")
                .into_inner(),
        )
        .await
        .unwrap()
        .unwrap();
        let Some(MessageResponse::ListServicesResponse(list)) = answer.message_response else {
            panic!("{answer:?}")
        };
        assert!(
            list.service
                .iter()
                .any(|s| s.name == "hypersaga.v1.ClusterService"),
            "v1alpha: {list:?}"
        );
    }

    // No or unknown token.
    let mut stranger = hypersaga::client::connect(
        &system.endpoints.grpc,
        "not-a-real-token-at-all",
        Some(&system.endpoints.ca_bundle),
    )
    .await
    .unwrap();
    let e = stranger
        .list_clusters(pb::ListClustersRequest::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unauthenticated);

    // The same request id returns the same operation.
    let req = create_request("gamma", 0);
    let a = acme.create_cluster(req.clone()).await.unwrap().into_inner();
    let b = acme.create_cluster(req).await.unwrap().into_inner();
    assert_eq!(a.id, b.id);
    let e = acme
        .create_cluster(create_request("gamma", 0))
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::AlreadyExists);

    // Invalid: every violation, with its field path; nothing is created.
    let before = system.resource_names("acme").await;
    let mut bad = create_request("Bad_Name", 500);
    let spec = bad.spec.as_mut().unwrap();
    spec.location.clear();
    spec.node_pools[0].vm_size = "huge".into();
    spec.network = Some(pb::NetworkSpec {
        vnet_cidr: "10.0.0.0/16".into(),
        subnet_cidr: "192.168.0.0/24".into(),
        ..Default::default()
    });
    let e = acme.create_cluster(bad).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    let fields: Vec<String> = e
        .get_details_bad_request()
        .expect("BadRequest details")
        .field_violations
        .into_iter()
        .map(|v| v.field)
        .collect();
    assert_eq!(
        fields,
        vec![
            "name",
            "spec.location",
            "spec.node_pools[0].replicas",
            "spec.node_pools[0].vm_size",
            "spec.network.subnet_cidr"
        ]
    );
    // A network in another tenant's subscription is refused before anything is written.
    let other_sub = system.subscription("globex");
    let mut foreign = create_request("foreign", 0);
    let rg = format!("/subscriptions/{other_sub}/resourceGroups/net/providers/Microsoft.Network");
    foreign.spec.as_mut().unwrap().network = Some(pb::NetworkSpec {
        vnet_id: format!("{rg}/virtualNetworks/v"),
        subnet_id: format!("{rg}/virtualNetworks/v/subnets/s"),
        nsg_id: format!("{rg}/networkSecurityGroups/n"),
        ..Default::default()
    });
    let e = acme.create_cluster(foreign).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    let fields: Vec<String> = e
        .get_details_bad_request()
        .expect("BadRequest")
        .field_violations
        .into_iter()
        .map(|v| v.field)
        .collect();
    assert_eq!(
        fields,
        vec![
            "spec.network.vnet_id",
            "spec.network.subnet_id",
            "spec.network.nsg_id"
        ]
    );
    let e = acme
        .create_cluster(pb::CreateClusterRequest {
            name: "nospec".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    let listed = names(
        acme.list_clusters(pb::ListClustersRequest::default())
            .await
            .unwrap()
            .into_inner(),
    );
    assert!(
        !listed
            .iter()
            .any(|n| n == "Bad_Name" || n == "nospec" || n == "foreign"),
        "{listed:?}"
    );
    // Let the valid clusters settle, then check the invalid ones left no trace in Azure.
    for (t, n) in [("acme", "alpha"), ("globex", "beta"), ("acme", "gamma")] {
        assert_eq!(phase(&system.watch_to_end(t, n).await), "ready");
    }
    // Deleting with a request id is idempotent, even once the delete has finished.
    let del = pb::DeleteClusterRequest {
        name: "gamma".into(),
        request_id: "delete-gamma-once".into(),
        ..Default::default()
    };
    let first = acme.delete_cluster(del.clone()).await.unwrap().into_inner();
    assert_eq!(
        phase(&system.watch_to_end("acme", "gamma").await),
        "deleted"
    );
    let again = acme.delete_cluster(del).await.unwrap().into_inner();
    assert_eq!(again.id, first.id);
    let e = acme
        .delete_cluster(pb::DeleteClusterRequest {
            name: "gamma".into(),
            request_id: "another".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound);

    let after = system.resource_names("acme").await;
    assert!(
        after
            .iter()
            .all(|r| !r.contains("Bad_Name") && !r.contains("nospec")),
        "{after:#?}"
    );
    assert!(before.len() <= after.len());
}

#[tokio::test]
async fn a_forty_character_name_works_end_to_end() {
    let system = System::start().await;
    // The longest name allowed: HyperShift's control plane namespace `<namespace>-<name>`
    // must still fit Kubernetes' 63 characters, and every Azure name derived from it its own
    // limit.
    let name = "a-forty-character-cluster-name-for-tests";
    assert_eq!(name.len(), 40);
    system.create("acme", name, 1).await;
    let ready = system.watch_to_end("acme", name).await;
    assert_eq!(phase(&ready), "ready", "{ready:#?}");
    let objects = system.mgmt_admin().objects().await.expect("objects");
    let control_plane = objects
        .iter()
        .filter(|o| o["kind"] == "Namespace")
        .filter_map(|o| o["metadata"]["name"].as_str())
        .find(|n| n.ends_with(name))
        .expect("HyperShift's control plane namespace");
    assert!(control_plane.len() <= 63, "{control_plane}");

    system.delete("acme", name).await;
    let gone = system.watch_to_end("acme", name).await;
    assert_eq!(phase(&gone), "deleted", "{gone:#?}");
    let left = system.resource_names("acme").await;
    assert!(left.iter().all(|r| outlives_clusters(r)), "{left:#?}");
}
