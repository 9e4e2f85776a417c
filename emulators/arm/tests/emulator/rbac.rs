//! Role assignments and role definitions, driven as a deployment tool drives them.
//!
//! Expected shapes come from `specification/authorization/resource-manager/
//! Microsoft.Authorization/stable/2022-04-01/` (`authorization-RoleAssignmentsCalls.json` and the
//! examples named at each test) and, for refusals the specs do not show, from ARM's answers
//! quoted in public reports (named at each assertion).

use std::time::Duration;

use hypersaga_emulator_arm::{Config, LatencyModel};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::*;

const AUTHZ: &str = "2022-04-01";
const READER: &str = "acdd72a7-3385-48ef-bd42-f606fba81ae7";
const CONTRIBUTOR: &str = "b24988ac-6180-42a0-ab88-20f7382dd24c";
/// The assignment name of RoleAssignments_CreateForResourceGroup.json.
const NAME: &str = "05c5a614-a7d6-4502-b150-c2fb455033ff";
/// A principal nobody created (the example's `principalId`).
const STRANGER: &str = "ce2ce14e-85d7-4629-bdbc-454d0519d987";

fn role_id(guid: &str) -> String {
    format!("/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/{guid}")
}

fn rg_scope(rg: &str) -> String {
    format!("/subscriptions/{SUB}/resourceGroups/{rg}")
}

fn sub_scope() -> String {
    format!("/subscriptions/{SUB}")
}

fn assignment(scope: &str, name: &str) -> String {
    format!("{scope}/providers/Microsoft.Authorization/roleAssignments/{name}")
}

fn grant(role: &str, principal: &str, principal_type: Option<&str>) -> Value {
    let mut props = json!({ "roleDefinitionId": role_id(role), "principalId": principal });
    if let Some(t) = principal_type {
        props["principalType"] = json!(t);
    }
    json!({ "properties": props })
}

/// Creates a user-assigned identity and answers its `principalId`.
async fn identity(emu: &TestEmu, rg: &str, name: &str) -> String {
    let r = emu
        .put(
            &msi(rg, &format!("userAssignedIdentities/{name}")),
            MSI,
            json!({"location": "eastus"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    r.body["properties"]["principalId"]
        .as_str()
        .expect("principalId")
        .to_owned()
}

fn names(list: &Value) -> Vec<String> {
    let mut names: Vec<String> = list["value"]
        .as_array()
        .expect("value")
        .iter()
        .map(|a| a["name"].as_str().unwrap_or_default().to_owned())
        .collect();
    names.sort();
    names
}

/// RoleAssignments_CreateForResourceGroup.json (201, then 200 for the same PUT: the example
/// lists both with the same body) and RoleAssignments_Get.json.
#[tokio::test]
async fn role_assignment_is_created_once_and_re_put_idempotently() {
    let emu = spawn(config()).await;
    emu.rg("testrg").await;
    let principal = identity(&emu, "testrg", "mi").await;
    let path = assignment(&rg_scope("testrg"), NAME);
    let r = emu
        .put(
            &path,
            AUTHZ,
            grant(READER, &principal, Some("ServicePrincipal")),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["id"], path);
    assert_eq!(r.body["type"], "Microsoft.Authorization/roleAssignments");
    assert_eq!(r.body["name"], NAME);
    let p = &r.body["properties"];
    assert_eq!(p["scope"], rg_scope("testrg"));
    assert_eq!(p["principalId"], principal);
    assert_eq!(p["principalType"], "ServicePrincipal");
    // ARM answers the role at the subscription whatever form was sent
    // (Azure/azure-rest-api-specs#11103); the example shows the GUID is what is kept.
    assert_eq!(p["roleDefinitionId"], role_id(READER));
    let me = object_id_of(&emu.token);
    assert_eq!(p["createdBy"], me);
    assert_eq!(p["updatedBy"], me);
    for stamp in ["createdOn", "updatedOn"] {
        let s = p[stamp].as_str().expect(stamp);
        time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
            .expect("RFC 3339");
    }

    let again = emu
        .put(
            &path,
            AUTHZ,
            grant(READER, &principal, Some("ServicePrincipal")),
        )
        .await;
    assert_eq!(again.status, StatusCode::OK, "{:?}", again.body);
    assert_eq!(again.body["id"], path);
    assert_eq!(again.body["properties"]["createdOn"], p["createdOn"]);

    let got = emu.get(&path, AUTHZ).await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(got.body["id"], path);
    assert_eq!(got.body["properties"]["principalId"], principal);
    assert_eq!(
        emu.admin
            .role_assignments(Some(SUB))
            .await
            .expect("admin")
            .len(),
        1
    );
}

/// RoleAssignments_CreateForResource.json: an assignment on a resource answers the
/// resource's id as its scope; ARM's own answers for a missing group or resource.
#[tokio::test]
async fn assignment_scope_must_exist() {
    let emu = spawn(config()).await;
    emu.rg("testrg").await;
    let principal = identity(&emu, "testrg", "mi").await;
    let body = grant(READER, &principal, Some("ServicePrincipal"));

    let missing_rg = emu
        .put(&assignment(&rg_scope("nope"), NAME), AUTHZ, body.clone())
        .await;
    assert_eq!(missing_rg.status, StatusCode::NOT_FOUND);
    assert_eq!(missing_rg.code(), "ResourceGroupNotFound");

    let nsg = net("testrg", "networkSecurityGroups/nsg");
    let missing = emu.put(&assignment(&nsg, NAME), AUTHZ, body.clone()).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.code(), "ResourceNotFound");

    emu.put(&nsg, NET, json!({"location": "eastus"})).await;
    let on_nsg = emu.put(&assignment(&nsg, NAME), AUTHZ, body).await;
    assert_eq!(on_nsg.status, StatusCode::CREATED, "{:?}", on_nsg.body);
    assert_eq!(on_nsg.body["properties"]["scope"], nsg);
    assert_eq!(on_nsg.body["id"], assignment(&nsg, NAME));
}

/// `409 RoleAssignmentExists`, naming the existing assignment as ARM does: 32 hex digits
/// (e.g. "…The ID of the existing role assignment is 716c4d159bc8476da3c16ccb70082517.").
#[tokio::test]
async fn the_same_grant_under_another_name_conflicts() {
    let emu = spawn(config()).await;
    emu.rg("testrg").await;
    let principal = identity(&emu, "testrg", "mi").await;
    let scope = rg_scope("testrg");
    let first = emu
        .put(
            &assignment(&scope, NAME),
            AUTHZ,
            grant(READER, &principal, None),
        )
        .await;
    assert_eq!(first.status, StatusCode::CREATED, "{:?}", first.body);
    let second = emu
        .put(
            &assignment(&scope, "b0f43c54-e787-4862-89b1-a653fa9cf747"),
            AUTHZ,
            grant(READER, &principal, Some("ServicePrincipal")),
        )
        .await;
    assert_eq!(second.status, StatusCode::CONFLICT);
    assert_eq!(second.code(), "RoleAssignmentExists");
    assert_eq!(
        second.message(),
        "The role assignment already exists. The ID of the existing role assignment is \
         05c5a614a7d64502b150c2fb455033ff."
    );
    // Another role, or the same role at another scope, is another grant.
    let other_role = emu
        .put(
            &assignment(&scope, "b0f43c54-e787-4862-89b1-a653fa9cf747"),
            AUTHZ,
            grant(CONTRIBUTOR, &principal, None),
        )
        .await;
    assert_eq!(
        other_role.status,
        StatusCode::CREATED,
        "{:?}",
        other_role.body
    );
    let at_sub = emu
        .put(
            &assignment(&sub_scope(), NAME),
            AUTHZ,
            grant(READER, &principal, None),
        )
        .await;
    assert_eq!(at_sub.status, StatusCode::CREATED, "{:?}", at_sub.body);
}

/// "Tenant ID, application ID, principal ID, and scope are not allowed to be updated."
/// (RoleAssignmentUpdateNotPermitted, reported under `BadRequest`: Azure/Azure-Landing-Zones#2040).
#[tokio::test]
async fn an_assignment_cannot_change_principal_or_role() {
    let emu = spawn(config()).await;
    emu.rg("testrg").await;
    let principal = identity(&emu, "testrg", "mi").await;
    let other = identity(&emu, "testrg", "mi2").await;
    let path = assignment(&rg_scope("testrg"), NAME);
    let r = emu.put(&path, AUTHZ, grant(READER, &principal, None)).await;
    assert_eq!(r.status, StatusCode::CREATED);
    for body in [
        grant(READER, &other, None),
        grant(CONTRIBUTOR, &principal, None),
    ] {
        let r = emu.put(&path, AUTHZ, body).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
        assert_eq!(r.code(), "RoleAssignmentUpdateNotPermitted");
        assert_eq!(
            r.message(),
            "Tenant ID, application ID, principal ID, and scope are not allowed to be updated."
        );
    }
    // What may change: the description.
    let mut described = grant(READER, &principal, None);
    described["properties"]["description"] = json!("for the ingress operator");
    let r = emu.put(&path, AUTHZ, described).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.body["properties"]["description"],
        "for the ingress operator"
    );
}

/// A principal Entra does not know: `400 PrincipalNotFound` with ARM's text (Azure/avdaccelerator#76:
/// "Principal 0f14a80d42e54d57afe046acf9dfae05 does not exist in the directory c7cb8e56-…").
#[tokio::test]
async fn an_unknown_principal_is_not_found_with_or_without_principal_type() {
    let emu = spawn(config()).await;
    emu.rg("testrg").await;
    let path = assignment(&rg_scope("testrg"), NAME);
    for principal_type in [None, Some("ServicePrincipal")] {
        let r = emu
            .put(&path, AUTHZ, grant(READER, STRANGER, principal_type))
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{principal_type:?}");
        assert_eq!(r.code(), "PrincipalNotFound");
        assert_eq!(
            r.message(),
            format!(
                "Principal ce2ce14e85d74629bdbc454d0519d987 does not exist in the directory \
                 {TENANT}. Check that you have the correct principal ID. If you are creating \
                 this principal and then immediately assigning a role, this error might be \
                 related to a replication delay. In this case, set the role assignment \
                 principalType property to a value, such as ServicePrincipal, User, or Group.  \
                 See https://aka.ms/docs-principaltype"
            )
        );
    }
    // The app registration's own service principal is known to Entra from the start.
    let me = object_id_of(&emu.token);
    let r = emu.put(&path, AUTHZ, grant(READER, &me, None)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    assert_eq!(r.body["properties"]["principalType"], "ServicePrincipal");
}

/// Replication: a just-created identity is `PrincipalNotFound` without `principalType`, and
/// assignable with `principalType: ServicePrincipal` (docs/reference/azure-latencies.md §10: PUTs
/// without it failed for ~40 s, both that succeeded carried it); once replicated, either works.
#[tokio::test]
async fn a_new_identity_needs_principal_type_until_entra_has_replicated_it() {
    // 200 s of replication at 1/100 of Azure's pace: a 2 s window.
    let emu = spawn(Config {
        latency: LatencyModel::Scaled(0.01),
        principal_replication_delay: Duration::from_secs(200),
        ..config()
    })
    .await;
    emu.rg("testrg").await;
    let principal = identity(&emu, "testrg", "fresh").await;
    let scope = rg_scope("testrg");
    let early = emu
        .put(
            &assignment(&scope, NAME),
            AUTHZ,
            grant(READER, &principal, None),
        )
        .await;
    assert_eq!(early.status, StatusCode::BAD_REQUEST, "{:?}", early.body);
    assert_eq!(early.code(), "PrincipalNotFound");
    assert!(early.message().contains(&principal.replace('-', "")));

    let typed = emu
        .put(
            &assignment(&scope, NAME),
            AUTHZ,
            grant(READER, &principal, Some("ServicePrincipal")),
        )
        .await;
    assert_eq!(typed.status, StatusCode::CREATED, "{:?}", typed.body);

    tokio::time::sleep(Duration::from_millis(2200)).await;
    let later = emu
        .put(
            &assignment(&scope, "b0f43c54-e787-4862-89b1-a653fa9cf747"),
            AUTHZ,
            grant(CONTRIBUTOR, &principal, None),
        )
        .await;
    assert_eq!(later.status, StatusCode::CREATED, "{:?}", later.body);
    assert_eq!(
        later.body["properties"]["principalType"],
        "ServicePrincipal"
    );

    // Once Entra can see it, a wrong type is contradicted (Azure/modern-web-app-pattern-dotnet#129).
    let wrong = emu
        .put(
            &assignment(&sub_scope(), NAME),
            AUTHZ,
            grant(READER, &principal, Some("User")),
        )
        .await;
    assert_eq!(wrong.status, StatusCode::BAD_REQUEST);
    assert_eq!(wrong.code(), "UnmatchedPrincipalType");
}

/// Role definition ids: malformed is `400 InvalidRoleDefinitionId` quoting the last segment
/// (hashicorp/terraform-provider-azurerm#8547); well-formed but unknown is
/// `404 RoleDefinitionDoesNotExist`. Names must be GUIDs (Azure/Azure-Landing-Zones#3419).
#[tokio::test]
async fn roles_and_names_must_be_real() {
    let emu = spawn(config()).await;
    emu.rg("testrg").await;
    let principal = identity(&emu, "testrg", "mi").await;
    let scope = rg_scope("testrg");
    let path = assignment(&scope, NAME);

    let mut bad = grant(READER, &principal, None);
    bad["properties"]["roleDefinitionId"] = json!(format!(
        "/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/Contributor"
    ));
    let r = emu.put(&path, AUTHZ, bad).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.code(), "InvalidRoleDefinitionId");
    assert_eq!(
        r.message(),
        "The role definition ID 'Contributor' is not valid."
    );

    // The example's role (0b5fe924…) is no built-in role.
    let r = emu
        .put(
            &path,
            AUTHZ,
            grant("0b5fe924-9a61-425c-96af-cfe6e287ca2d", &principal, None),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.code(), "RoleDefinitionDoesNotExist");

    let r = emu
        .put(
            &assignment(&scope, "cloud-provider"),
            AUTHZ,
            grant(READER, &principal, None),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.code(), "InvalidRoleAssignmentId");

    let mut no_principal = grant(READER, &principal, None);
    no_principal["properties"]["principalId"] = json!("not-a-guid");
    assert_eq!(
        emu.put(&path, AUTHZ, no_principal).await.code(),
        "InvalidPrincipalId"
    );
    assert_eq!(
        emu.put(&path, AUTHZ, json!({})).await.code(),
        "InvalidRequestContent"
    );
}

/// RoleAssignments_Delete.json: `200` with the deleted assignment, then `204`.
#[tokio::test]
async fn delete_answers_the_deleted_assignment_then_no_content() {
    let emu = spawn(config()).await;
    let me = object_id_of(&emu.token);
    let path = assignment(&sub_scope(), "b0f43c54-e787-4862-89b1-a653fa9cf747");
    let r = emu.put(&path, AUTHZ, grant(READER, &me, None)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let del = emu.delete(&path, AUTHZ).await;
    assert_eq!(del.status, StatusCode::OK);
    assert_eq!(del.body["id"], path);
    assert_eq!(del.body["properties"]["scope"], sub_scope());
    assert_eq!(del.body["properties"]["roleDefinitionId"], role_id(READER));
    let gone = emu.delete(&path, AUTHZ).await;
    assert_eq!(gone.status, StatusCode::NO_CONTENT);
    let get = emu.get(&path, AUTHZ).await;
    assert_eq!(get.status, StatusCode::NOT_FOUND);
    assert_eq!(get.code(), "RoleAssignmentNotFound");
}

/// RoleAssignments_ListForScope.json and RoleAssignmentFilterParameter: no filter lists at,
/// above and below the scope; `atScope()` at and above; `principalId eq` that principal's at,
/// above and below.
#[tokio::test]
async fn list_at_a_scope_honours_the_filters() {
    let emu = spawn(config()).await;
    emu.rg("testrg").await;
    emu.rg("otherrg").await;
    let nsg = net("testrg", "networkSecurityGroups/nsg");
    emu.put(&nsg, NET, json!({"location": "eastus"})).await;
    let p1 = identity(&emu, "testrg", "mi1").await;
    let p2 = identity(&emu, "testrg", "mi2").await;
    let at_sub = "10000000-0000-0000-0000-000000000001";
    let at_rg = "10000000-0000-0000-0000-000000000002";
    let at_nsg = "10000000-0000-0000-0000-000000000003";
    let at_other = "10000000-0000-0000-0000-000000000004";
    for (scope, name, principal) in [
        (sub_scope(), at_sub, &p1),
        (rg_scope("testrg"), at_rg, &p1),
        (nsg.clone(), at_nsg, &p2),
        (rg_scope("otherrg"), at_other, &p2),
    ] {
        let r = emu
            .put(
                &assignment(&scope, name),
                AUTHZ,
                grant(READER, principal, None),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    }
    let list = |filter: &str| {
        let mut path = format!(
            "{}/providers/Microsoft.Authorization/roleAssignments?api-version={AUTHZ}",
            rg_scope("testrg")
        );
        if !filter.is_empty() {
            path.push_str("&$filter=");
            path.push_str(filter);
        }
        path
    };
    let all = emu.call(reqwest::Method::GET, &list(""), None).await;
    assert_eq!(all.status, StatusCode::OK, "{:?}", all.body);
    assert_eq!(names(&all.body), [at_sub, at_rg, at_nsg]);
    let at_scope = emu
        .call(reqwest::Method::GET, &list("atScope()"), None)
        .await;
    assert_eq!(names(&at_scope.body), [at_sub, at_rg]);
    let mine = emu
        .call(
            reqwest::Method::GET,
            &list(&format!("principalId%20eq%20'{p2}'")),
            None,
        )
        .await;
    assert_eq!(names(&mine.body), [at_nsg]);
    let whole = emu
        .get(
            &format!("/subscriptions/{SUB}/providers/Microsoft.Authorization/roleAssignments"),
            AUTHZ,
        )
        .await;
    assert_eq!(names(&whole.body), [at_sub, at_rg, at_nsg, at_other]);
    let bad = emu
        .call(reqwest::Method::GET, &list("roleName%20eq%20'x'"), None)
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
}

/// Deleting a resource group takes the assignments on it and on its resources with it; the
/// subscription's stay.
#[tokio::test]
async fn deleting_the_resource_group_removes_its_assignments() {
    let emu = spawn(config()).await;
    let rg = emu.rg("testrg").await;
    let nsg = net("testrg", "networkSecurityGroups/nsg");
    emu.put(&nsg, NET, json!({"location": "eastus"})).await;
    let me = object_id_of(&emu.token);
    for (scope, name) in [
        (sub_scope(), "20000000-0000-0000-0000-000000000001"),
        (rg_scope("testrg"), "20000000-0000-0000-0000-000000000002"),
        (nsg.clone(), "20000000-0000-0000-0000-000000000003"),
    ] {
        let r = emu
            .put(&assignment(&scope, name), AUTHZ, grant(READER, &me, None))
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    }
    let del = emu.delete(&rg, RES).await;
    assert_eq!(del.status, StatusCode::ACCEPTED);
    let location = del.header("location").expect("location").to_owned();
    let done = emu.call(reqwest::Method::GET, &location, None).await;
    assert_eq!(done.status, StatusCode::OK);
    let left = emu.admin.role_assignments(Some(SUB)).await.expect("admin");
    let left: Vec<&str> = left.iter().filter_map(|a| a["name"].as_str()).collect();
    assert_eq!(left, ["20000000-0000-0000-0000-000000000001"]);
}

/// GetRoleDefinitionById.json: a built-in role read at the subscription, and the roles
/// docs/reference/hypershift-azure.md §2.4 assigns, plus Owner/Contributor/Reader, listable.
#[tokio::test]
async fn built_in_role_definitions_are_readable_and_listable() {
    let emu = spawn(config()).await;
    let defs = format!("/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions");
    let r = emu.get(&format!("{defs}/{CONTRIBUTOR}"), AUTHZ).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.body["id"], role_id(CONTRIBUTOR));
    assert_eq!(r.body["type"], "Microsoft.Authorization/roleDefinitions");
    assert_eq!(r.body["name"], CONTRIBUTOR);
    assert_eq!(r.body["properties"]["roleName"], "Contributor");
    assert_eq!(r.body["properties"]["type"], "BuiltInRole");
    for key in ["actions", "notActions", "dataActions", "notDataActions"] {
        assert!(
            r.body["properties"]["permissions"][0][key].is_array(),
            "{key}"
        );
    }
    let section_2_4 = [
        "a1f96423-95ce-4224-ab27-4e3dc72facd4",
        "0336e1d3-7a87-462b-b6db-342b63f7802c",
        "0d7aedc0-15fd-4a67-a412-efad370c947e",
        "5b7237c5-45e1-49d6-bc18-a1f62f400748",
        "be7a6435-15ae-4171-8f30-4a343eff9e8f",
        "8b32b316-c2f5-4ddf-b05b-83dacd2d08b5",
        "7d8bb4e4-6fa7-4545-96cf-20fce11b705d",
        CONTRIBUTOR,
        READER,
        "8e3af657-a8ff-443c-a75c-2fe8c4bcb635",
    ];
    for guid in section_2_4 {
        let r = emu.get(&format!("{defs}/{guid}"), AUTHZ).await;
        assert_eq!(r.status, StatusCode::OK, "{guid}: {:?}", r.body);
    }
    let all = emu.get(&defs, AUTHZ).await;
    let listed = names(&all.body);
    for guid in section_2_4 {
        assert!(listed.iter().any(|n| n == guid), "{guid} not listed");
    }
    let reader = emu
        .call(
            reqwest::Method::GET,
            &format!("{defs}?api-version={AUTHZ}&$filter=roleName%20eq%20'Reader'"),
            None,
        )
        .await;
    assert_eq!(names(&reader.body), [READER]);
    let unknown = emu
        .get(
            &format!("{defs}/0b5fe924-9a61-425c-96af-cfe6e287ca2d"),
            AUTHZ,
        )
        .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.code(), "RoleDefinitionDoesNotExist");
}

/// The admin API sees every assignment and can delete one behind ARM's back (no token, no
/// RBAC), which a client then finds gone.
#[tokio::test]
async fn admin_lists_and_deletes_assignments_without_arm() {
    let emu = spawn(config()).await;
    let me = object_id_of(&emu.token);
    let path = assignment(&sub_scope(), NAME);
    emu.put(&path, AUTHZ, grant(READER, &me, None)).await;
    let listed = emu.admin.role_assignments(None).await.expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], path);
    assert!(
        emu.admin
            .role_assignments(Some(OTHER_SUB))
            .await
            .expect("list")
            .is_empty()
    );
    let deleted = emu
        .admin
        .delete_role_assignment(&path.to_ascii_uppercase())
        .await
        .expect("delete");
    assert_eq!(deleted.expect("deleted")["id"], path);
    assert_eq!(emu.get(&path, AUTHZ).await.code(), "RoleAssignmentNotFound");
    assert!(
        emu.admin
            .delete_role_assignment(&path)
            .await
            .expect("delete")
            .is_none()
    );
}
