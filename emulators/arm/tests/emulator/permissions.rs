//! The caller's permissions list (`Permissions_ListForResourceGroup`,
//! `Permissions_ListForResource` of `specification/authorization/resource-manager/
//! Microsoft.Authorization/stable/2022-04-01/authorization-RoleDefinitionsCalls.json`,
//! `examples/GetPermissions.json`): one `Permission` per role assigned to the caller at the
//! scope or above, from role assignments made through ARM.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::identity_rbac::{CONTRIBUTOR, READER, grant, identity_token};
use crate::support::*;

const AUTHZ: &str = "2022-04-01";

fn permissions(scope: &str) -> String {
    format!("{scope}/providers/Microsoft.Authorization/permissions")
}

fn group(rg: &str) -> String {
    format!("/subscriptions/{SUB}/resourceGroups/{rg}")
}

async fn list_as(emu: &TestEmu, token: &str, scope: &str, v: &str) -> Resp {
    emu.call_as(
        token,
        Method::GET,
        &format!("{}?api-version={v}", permissions(scope)),
        None,
    )
    .await
}

/// The `actions` and `notActions` of every entry, in order.
fn entries(r: &Resp) -> Vec<(Vec<String>, usize)> {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut out: Vec<(Vec<String>, usize)> = r.body["value"]
        .as_array()
        .expect("value")
        .iter()
        .map(|p| {
            // Every property of `Permission` is present.
            for key in ["actions", "notActions", "dataActions", "notDataActions"] {
                assert!(p[key].is_array(), "{key} in {p}");
            }
            (strings(&p["actions"]), strings(&p["notActions"]).len())
        })
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn the_permissions_list_shows_the_roles_assigned_at_the_scope_or_above() {
    let emu = spawn(config()).await;
    emu.rg("managed").await;
    emu.rg("other").await;
    let nsg = net("managed", "networkSecurityGroups/nsg");
    assert_eq!(
        emu.put(&nsg, NET, json!({"location": "eastus"}))
            .await
            .status,
        StatusCode::CREATED
    );
    let (token, me, _issuer) = identity_token(&emu).await;

    // No role: not even the list may be read (`Microsoft.Authorization/permissions/read`).
    let r = list_as(&emu, &token, &group("managed"), AUTHZ).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{:?}", r.body);
    assert_eq!(r.code(), "AuthorizationFailed");

    // Reader on the subscription shows at every group; Contributor on `managed` only there
    // and on what is in it.
    grant(&emu, &format!("/subscriptions/{SUB}"), READER, &me).await;
    let contributor = grant(&emu, &group("managed"), CONTRIBUTOR, &me).await;
    let at_managed = list_as(&emu, &token, &group("managed"), AUTHZ).await;
    assert_eq!(at_managed.status, StatusCode::OK, "{:?}", at_managed.body);
    assert_eq!(
        entries(&at_managed),
        vec![(vec!["*".to_owned()], 11), (vec!["*/read".to_owned()], 0)]
    );
    let at_nsg = list_as(&emu, &token, &nsg, AUTHZ).await;
    assert_eq!(entries(&at_nsg), entries(&at_managed));
    let at_other = list_as(&emu, &token, &group("other"), AUTHZ).await;
    assert_eq!(entries(&at_other), vec![(vec!["*/read".to_owned()], 0)]);

    // A removed assignment is gone from the answer at once.
    assert_eq!(emu.delete(&contributor, AUTHZ).await.status, StatusCode::OK);
    let after = list_as(&emu, &token, &group("managed"), AUTHZ).await;
    assert_eq!(entries(&after), vec![(vec!["*/read".to_owned()], 0)]);

    // The operator's tokens own their subscription.
    let owner = emu.get(&permissions(&group("other")), AUTHZ).await;
    assert_eq!(owner.status, StatusCode::OK, "{:?}", owner.body);
    assert_eq!(
        owner.body,
        json!({"value": [{"actions": ["*"], "notActions": [], "dataActions": [], "notDataActions": []}]})
    );
}

#[tokio::test]
async fn the_permissions_list_refuses_what_arm_refuses() {
    let emu = spawn(config()).await;
    emu.rg("managed").await;
    // A missing group, a missing resource.
    let r = emu.get(&permissions(&group("nope")), AUTHZ).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::NOT_FOUND, "ResourceGroupNotFound")
    );
    let r = emu
        .get(&permissions(&net("managed", "virtualNetworks/none")), AUTHZ)
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{:?}", r.body);
    // The versions the spec defines, and no other.
    for v in ["2015-07-01", "2018-01-01-preview", "2022-04-01"] {
        let r = emu.get(&permissions(&group("managed")), v).await;
        assert_eq!(r.status, StatusCode::OK, "{v}: {:?}", r.body);
    }
    let r = emu.get(&permissions(&group("managed")), "2021-04-01").await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::NOT_FOUND, "InvalidResourceType")
    );
    // Only groups and resources have the list; it has no members.
    let r = emu
        .get(&permissions(&format!("/subscriptions/{SUB}")), AUTHZ)
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = emu
        .get(&format!("{}/x", permissions(&group("managed"))), AUTHZ)
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}
