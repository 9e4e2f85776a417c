//! ARM's authorization of managed identities: a token from workload identity federation may do
//! what the role assignments of its principal grant at the scope or above, and nothing else;
//! refusals are `403 AuthorizationFailed` naming the action and the scope.
//!
//! Role permissions are Azure's built-in ones (MicrosoftDocs/azure-docs
//! `role-based-access-control/built-in-roles/`); the refusal's wording is ARM's as clients
//! quote it (Azure/azure-cli#29802, Azure/CloudShell#561).

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::issuer::*;
use crate::support::*;

const AUTHZ: &str = "2022-04-01";
pub(crate) const READER: &str = "acdd72a7-3385-48ef-bd42-f606fba81ae7";
pub(crate) const CONTRIBUTOR: &str = "b24988ac-6180-42a0-ab88-20f7382dd24c";
const ARO_NETWORK_OPERATOR: &str = "be7a6435-15ae-4171-8f30-4a343eff9e8f";

fn group(rg: &str) -> String {
    format!("/subscriptions/{SUB}/resourceGroups/{rg}")
}

/// The operator grants `role` to `principal` at `scope`; answers the assignment's path.
pub(crate) async fn grant(emu: &TestEmu, scope: &str, role: &str, principal: &str) -> String {
    let path = format!(
        "{scope}/providers/Microsoft.Authorization/roleAssignments/{}",
        uuid::Uuid::new_v4()
    );
    let r = emu
        .put(
            &path,
            AUTHZ,
            json!({"properties": {
                "roleDefinitionId": format!("/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/{role}"),
                "principalId": principal,
                "principalType": "ServicePrincipal",
            }}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    path
}

/// ARM's refusal, word for word.
pub(crate) fn assert_forbidden(r: &Resp, principal: &str, action: &str, scope: &str) {
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);
    assert_eq!(r.code(), "AuthorizationFailed");
    assert_eq!(
        r.message(),
        format!(
            "The client '{principal}' with object id '{principal}' does not have authorization \
             to perform action '{action}' over scope '{scope}' or the scope is invalid. If access \
             was recently granted, please refresh your credentials."
        )
    );
}

/// An identity in `managed` federated with a fresh issuer, and a token for it.
pub(crate) async fn identity_token(emu: &TestEmu) -> (String, String, Issuer) {
    let key = signing_key();
    let issuer = Issuer::start(&[&key]).await;
    let (client_id, principal) = federated_identity(emu, "managed", "capz", &issuer.url).await;
    let token = exchange(emu, &client_id, &issuer.token(&key))
        .await
        .expect("token");
    (token, principal, issuer)
}

async fn as_identity(emu: &TestEmu, token: &str, method: Method, path: &str, v: &str) -> Resp {
    let body = (method == Method::PUT).then(|| json!({"location": "eastus", "properties": {}}));
    emu.call_as(token, method, &format!("{path}?api-version={v}"), body)
        .await
}

#[tokio::test]
async fn a_managed_identity_may_do_only_what_its_role_assignments_grant() {
    let emu = spawn(config()).await;
    emu.rg("managed").await;
    emu.rg("other").await;
    let (token, me, _issuer) = identity_token(&emu).await;
    let nsg = net("managed", "networkSecurityGroups/nsg");
    let identity = msi("managed", "userAssignedIdentities/capz");

    // Nothing granted yet.
    let r = as_identity(&emu, &token, Method::GET, &group("managed"), RES).await;
    assert_forbidden(
        &r,
        &me,
        "Microsoft.Resources/subscriptions/resourceGroups/read",
        &group("managed"),
    );

    // Reader on the group: reads in it, nothing else.
    grant(&emu, &group("managed"), READER, &me).await;
    for path in [group("managed"), identity.clone()] {
        let v = if path == identity { MSI } else { RES };
        let r = as_identity(&emu, &token, Method::GET, &path, v).await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {:?}", r.body);
    }
    let list = as_identity(
        &emu,
        &token,
        Method::GET,
        &msi("managed", "userAssignedIdentities"),
        MSI,
    )
    .await;
    assert_eq!(list.status, StatusCode::OK, "{:?}", list.body);
    let r = as_identity(&emu, &token, Method::PUT, &nsg, NET).await;
    assert_forbidden(
        &r,
        &me,
        "Microsoft.Network/networkSecurityGroups/write",
        &nsg,
    );
    let r = as_identity(&emu, &token, Method::GET, &group("other"), RES).await;
    assert_forbidden(
        &r,
        &me,
        "Microsoft.Resources/subscriptions/resourceGroups/read",
        &group("other"),
    );
    // A list is authorized over its parent, the subscription here.
    let r = as_identity(
        &emu,
        &token,
        Method::GET,
        &format!("/subscriptions/{SUB}/resourcegroups"),
        RES,
    )
    .await;
    assert_forbidden(
        &r,
        &me,
        "Microsoft.Resources/subscriptions/resourceGroups/read",
        &format!("/subscriptions/{SUB}"),
    );
    let r = as_identity(
        &emu,
        &token,
        Method::GET,
        &format!("/subscriptions/{SUB}/providers/Microsoft.Network/networkSecurityGroups"),
        NET,
    )
    .await;
    assert_forbidden(
        &r,
        &me,
        "Microsoft.Network/networkSecurityGroups/read",
        &format!("/subscriptions/{SUB}/providers/Microsoft.Network"),
    );

    // Contributor on the group: writes, deletes and polls their operations there…
    grant(&emu, &group("managed"), CONTRIBUTOR, &me).await;
    let put = as_identity(&emu, &token, Method::PUT, &nsg, NET).await;
    assert_eq!(put.status, StatusCode::CREATED, "{:?}", put.body);
    let status_url = put.header("azure-asyncoperation").expect("aao").to_owned();
    let op = emu.call_as(&token, Method::GET, &status_url, None).await;
    assert_eq!(op.status, StatusCode::OK, "{:?}", op.body);
    assert_eq!(op.body["status"], "Succeeded");
    let del = as_identity(&emu, &token, Method::DELETE, &nsg, NET).await;
    assert_eq!(del.status, StatusCode::ACCEPTED, "{:?}", del.body);
    let result_url = del.header("location").expect("location").to_owned();
    let done = emu.call_as(&token, Method::GET, &result_url, None).await;
    assert!(done.status.is_success(), "{:?}", done.body);
    // …but Contributor's notActions keep role assignments out of reach.
    let assignment = format!(
        "{}/providers/Microsoft.Authorization/roleAssignments/{}",
        group("managed"),
        uuid::Uuid::new_v4()
    );
    let r = emu
        .call_as(
            &token,
            Method::PUT,
            &format!("{assignment}?api-version={AUTHZ}"),
            Some(json!({"properties": {
                "roleDefinitionId": format!("/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/{CONTRIBUTOR}"),
                "principalId": me,
                "principalType": "ServicePrincipal",
            }})),
        )
        .await;
    assert_forbidden(
        &r,
        &me,
        "Microsoft.Authorization/roleAssignments/write",
        &assignment,
    );
    // Reading the assignments is a read like any other.
    let r = as_identity(
        &emu,
        &token,
        Method::GET,
        &format!(
            "{}/providers/Microsoft.Authorization/roleAssignments",
            group("managed")
        ),
        AUTHZ,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
}

#[tokio::test]
async fn a_narrow_built_in_role_grants_its_actions_and_no_more() {
    let emu = spawn(config()).await;
    emu.rg("managed").await;
    emu.rg("vnets").await;
    let vnet = net("vnets", "virtualNetworks/vnet");
    let r = emu
        .put(
            &vnet,
            NET,
            json!({"location": "eastus", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let (token, me, _issuer) = identity_token(&emu).await;

    // ARO Network Operator: virtualNetworks/read, networkInterfaces/read|write, joins.
    grant(&emu, &group("vnets"), ARO_NETWORK_OPERATOR, &me).await;
    let r = as_identity(&emu, &token, Method::GET, &vnet, NET).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let r = as_identity(&emu, &token, Method::PUT, &vnet, NET).await;
    assert_forbidden(&r, &me, "Microsoft.Network/virtualNetworks/write", &vnet);
    let r = as_identity(&emu, &token, Method::GET, &group("vnets"), RES).await;
    assert_forbidden(
        &r,
        &me,
        "Microsoft.Resources/subscriptions/resourceGroups/read",
        &group("vnets"),
    );
}

#[tokio::test]
async fn an_assignment_on_a_resource_covers_its_children_not_its_siblings() {
    let emu = spawn(config()).await;
    emu.rg("managed").await;
    let body = json!({"location": "eastus", "properties": {
        "addressSpace": {"addressPrefixes": ["10.0.0.0/16"]},
        "subnets": [{"name": "default", "properties": {"addressPrefix": "10.0.0.0/24"}}],
    }});
    for name in ["vnet", "sibling"] {
        let r = emu
            .put(
                &net("managed", &format!("virtualNetworks/{name}")),
                NET,
                body.clone(),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    }
    let (token, me, _issuer) = identity_token(&emu).await;
    grant(&emu, &net("managed", "virtualNetworks/vnet"), READER, &me).await;

    let subnet = net("managed", "virtualNetworks/vnet/subnets/default");
    let r = as_identity(&emu, &token, Method::GET, &subnet, NET).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let sibling = net("managed", "virtualNetworks/sibling");
    let r = as_identity(&emu, &token, Method::GET, &sibling, NET).await;
    assert_forbidden(&r, &me, "Microsoft.Network/virtualNetworks/read", &sibling);
}

#[tokio::test]
async fn removing_the_role_assignment_refuses_the_next_call() {
    let emu = spawn(config()).await;
    emu.rg("managed").await;
    let (token, me, _issuer) = identity_token(&emu).await;
    let assignment = grant(&emu, &group("managed"), READER, &me).await;
    let r = as_identity(&emu, &token, Method::GET, &group("managed"), RES).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);

    let d = emu.delete(&assignment, AUTHZ).await;
    assert_eq!(d.status, StatusCode::OK, "{:?}", d.body);
    let r = as_identity(&emu, &token, Method::GET, &group("managed"), RES).await;
    assert_forbidden(
        &r,
        &me,
        "Microsoft.Resources/subscriptions/resourceGroups/read",
        &group("managed"),
    );
}
