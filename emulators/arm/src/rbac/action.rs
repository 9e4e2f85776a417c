//! The action and scope ARM authorizes a request for.
//!
//! Actions are the resource provider operations of `Get-AzProviderOperation`:
//! `{namespace}/{type path}/read|write|delete` for a resource (GET and HEAD read, PUT and PATCH
//! write), `Microsoft.Resources/subscriptions/resourceGroups/…` for a resource group and
//! `Microsoft.Resources/subscriptions[/resourceGroups]/resources/read` for the inventory.
//! The scope is the request path; a list is authorized over its parent, the path without the
//! collection's last segment, as ARM prints it (`… 'Microsoft.Network/networkSecurityGroups/read'
//! over scope '/subscriptions/…/resourceGroups/rg/providers/Microsoft.Network'`,
//! Azure/CloudShell#561).
//!
//! Polling an asynchronous operation is a read of the operation type its URL names
//! (`Microsoft.Network/locations/operations/read`,
//! `Microsoft.Resources/subscriptions/operationresults/read`; the Azure Red Hat OpenShift Disk
//! Storage Operator role grants `Microsoft.Compute/locations/operations/read` for exactly this).
//! Its scope is the resource the operation acts on: the URL sits at the subscription (or group)
//! while the caller's grant is usually on a group or the resource, and callers granted there do
//! poll their operations.
//!
//! The Resource SKUs list (`Microsoft.Compute/skus/read`) sits at the subscription, yet CAPZ
//! reads it before making any VM (`InitMachineCache`) as HyperShift's node-pool identity, which
//! holds Contributor on the managed and VNet groups only (openshift/hypershift
//! `support/azureutil` `GetServicePrincipalScopes`) and makes workers in production. So ARM
//! grants that read to an assignment anywhere in the subscription (inferred, not documented).
//! The Compute usage list (`Microsoft.Compute/locations/usages/read`) is a read over the
//! subscription too, granted only there or above, as ARM grants `locations/vmSizes/read`.

use axum::http::Method;

use super::condition::Attributes;
use crate::path::{AuthzKind, Target};
use crate::store::Store;

/// What one request asks to do.
#[derive(Clone, Debug)]
pub(crate) struct Request {
    pub sub: String,
    pub action: String,
    /// The scope as ARM prints it in a refusal.
    pub scope: String,
    /// The operation a poll reads, whose resource is the scope evaluated.
    operation: Option<String>,
    /// An assignment below the scope grants the action too (the Resource SKUs list).
    pub within: bool,
    /// The role assignment a PUT writes, for the conditions that constrain delegation.
    pub written_assignment: Option<Attributes>,
    /// Whether the request deletes one named role assignment (whose attributes the
    /// conditions compare, read from the store at authorization).
    deletes_assignment: bool,
}

fn verb(method: &Method) -> &'static str {
    match *method {
        Method::GET | Method::HEAD => "read",
        Method::PUT | Method::PATCH => "write",
        Method::DELETE => "delete",
        _ => "action",
    }
}

/// The path without its last segment: the parent a list is authorized over.
fn parent(path: &str) -> String {
    let trimmed = path.trim_end_matches('/');
    trimmed
        .rsplit_once('/')
        .map_or_else(|| trimmed.to_owned(), |(head, _)| head.to_owned())
}

/// `{namespace}/{type}/…/read` of an operation URL: the type segments after the last
/// `providers/{namespace}` (names skipped), or ARM's own `operationresults` of a subscription.
fn operation_action(path: &str) -> String {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let provider = segs
        .iter()
        .rposition(|s| s.eq_ignore_ascii_case("providers"))
        .filter(|i| i + 1 < segs.len());
    match provider {
        Some(i) => {
            let types: Vec<&str> = segs[i + 2..].iter().step_by(2).copied().collect();
            format!("{}/{}/read", segs[i + 1], types.join("/"))
        }
        None => "Microsoft.Resources/subscriptions/operationresults/read".to_owned(),
    }
}

impl Request {
    /// The action and scope of `method` on `target`, requested at `path`.
    pub fn new(method: &Method, target: &Target, path: &str) -> Self {
        let v = verb(method);
        let mut operation = None;
        let mut within = false;
        let deletes_assignment = *method == Method::DELETE
            && matches!(target, Target::Authorization(a)
                if a.kind == AuthzKind::RoleAssignments && a.name.is_some());
        let (action, scope) = match target {
            Target::ResourceGroupList { .. } => (
                "Microsoft.Resources/subscriptions/resourceGroups/read".to_owned(),
                parent(path),
            ),
            Target::Inventory { rg: None, .. } => (
                "Microsoft.Resources/subscriptions/resources/read".to_owned(),
                parent(path),
            ),
            Target::Inventory { rg: Some(_), .. } => (
                "Microsoft.Resources/subscriptions/resourceGroups/resources/read".to_owned(),
                parent(path),
            ),
            Target::Operation { id, .. } => {
                operation = Some(id.clone());
                (operation_action(path), path.to_owned())
            }
            Target::Resource(r) if r.rtype.is_resource_group() => (
                format!("Microsoft.Resources/subscriptions/resourceGroups/{v}"),
                path.to_owned(),
            ),
            Target::Resource(r) => (format!("{}/{v}", r.rtype.full_name()), path.to_owned()),
            Target::Collection { rtype, .. } => {
                (format!("{}/{v}", rtype.full_name()), parent(path))
            }
            Target::Authorization(a) => {
                let scope = if a.name.is_some() {
                    path.to_owned()
                } else {
                    parent(path)
                };
                (format!("{}/{v}", target.type_name()), scope)
            }
            Target::UnknownType { .. } => (format!("{}/{v}", target.type_name()), path.to_owned()),
            // Like `locations/vmSizes`, which ARM authorizes over the subscription
            // (confidential-containers/cloud-api-adaptor#1453 quotes its refusal): only an
            // assignment there or above grants it.
            Target::ComputeUsages { sub, .. } => (
                format!("{}/{v}", target.type_name()),
                format!("/subscriptions/{sub}"),
            ),
            Target::ResourceSkus { sub } => {
                within = true;
                (
                    format!("{}/{v}", target.type_name()),
                    format!("/subscriptions/{sub}"),
                )
            }
        };
        Self {
            sub: target.subscription().to_owned(),
            action,
            scope,
            operation,
            within,
            written_assignment: None,
            deletes_assignment,
        }
    }

    /// The request, knowing its body: a role-assignment PUT's describes the assignment written.
    pub fn with_body(mut self, method: &Method, target: &Target, body: &[u8]) -> Self {
        let writes_assignment = *method == Method::PUT
            && matches!(target, Target::Authorization(a)
                if a.kind == AuthzKind::RoleAssignments && a.name.is_some());
        if writes_assignment {
            self.written_assignment = Some(Attributes::of_body(body));
        }
        self
    }

    /// The role assignment a DELETE removes, if it names one that exists (by its id, which is
    /// the request path).
    pub fn deleted_assignment(&self, store: &Store) -> Option<Attributes> {
        if !self.deletes_assignment {
            return None;
        }
        store
            .assignment(&self.scope.to_ascii_lowercase())
            .map(Attributes::of_assignment)
    }

    /// The scope role assignments are matched against: the printed one, except for an
    /// operation poll, which reads the operation's resource.
    pub fn evaluated_scope(&self, store: &Store) -> String {
        self.operation
            .as_deref()
            .and_then(|id| store.op(id))
            .filter(|op| op.sub.eq_ignore_ascii_case(&self.sub))
            .map_or_else(|| self.scope.clone(), |op| op.resource_key.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path;

    fn req(method: Method, p: &str) -> (String, String) {
        let target = path::parse(p).expect("parses");
        let r = Request::new(&method, &target, p);
        (r.action, r.scope)
    }

    const S: &str = "/subscriptions/s1";

    #[test]
    fn actions_and_scopes_arm_authorizes() {
        let rg = format!("{S}/resourcegroups/rg");
        assert_eq!(
            req(Method::PUT, &rg),
            (
                "Microsoft.Resources/subscriptions/resourceGroups/write".into(),
                rg.clone()
            )
        );
        assert_eq!(
            req(Method::GET, &format!("{S}/resourcegroups")),
            (
                "Microsoft.Resources/subscriptions/resourceGroups/read".into(),
                S.into()
            )
        );
        assert_eq!(
            req(Method::GET, &format!("{S}/resources")),
            (
                "Microsoft.Resources/subscriptions/resources/read".into(),
                S.into()
            )
        );
        assert_eq!(
            req(Method::GET, &format!("{rg}/resources")),
            (
                "Microsoft.Resources/subscriptions/resourceGroups/resources/read".into(),
                rg.clone()
            )
        );
        let subnet = format!("{rg}/providers/Microsoft.Network/virtualNetworks/v/subnets/a");
        assert_eq!(
            req(Method::DELETE, &subnet),
            (
                "Microsoft.Network/virtualNetworks/subnets/delete".into(),
                subnet.clone()
            )
        );
        assert_eq!(
            req(Method::HEAD, &subnet).0,
            "Microsoft.Network/virtualNetworks/subnets/read"
        );
        assert_eq!(
            req(
                Method::GET,
                &format!("{rg}/providers/Microsoft.Network/networkSecurityGroups")
            ),
            (
                "Microsoft.Network/networkSecurityGroups/read".into(),
                format!("{rg}/providers/Microsoft.Network")
            )
        );
        let fic = format!(
            "{rg}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/mi/federatedIdentityCredentials/f"
        );
        assert_eq!(
            req(Method::PUT, &fic).0,
            "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials/write"
        );
        let ra = format!("{rg}/providers/Microsoft.Authorization/roleAssignments/x");
        assert_eq!(
            req(Method::PUT, &ra),
            (
                "Microsoft.Authorization/roleAssignments/write".into(),
                ra.clone()
            )
        );
        assert_eq!(
            req(
                Method::GET,
                &format!("{rg}/providers/Microsoft.Authorization/roleDefinitions")
            ),
            (
                "Microsoft.Authorization/roleDefinitions/read".into(),
                format!("{rg}/providers/Microsoft.Authorization")
            )
        );
    }

    #[test]
    fn operation_polls_read_the_operation_type() {
        for (p, action) in [
            (
                format!("{S}/providers/Microsoft.Network/locations/eastus/operations/o1"),
                "Microsoft.Network/locations/operations/read",
            ),
            (
                format!("{S}/providers/Microsoft.Network/locations/eastus/operationResults/o1"),
                "Microsoft.Network/locations/operationResults/read",
            ),
            (
                format!(
                    "{S}/resourceGroups/rg/providers/Microsoft.Network/privateDnsOperationStatuses/o1"
                ),
                "Microsoft.Network/privateDnsOperationStatuses/read",
            ),
            (
                format!("{S}/operationresults/o1"),
                "Microsoft.Resources/subscriptions/operationresults/read",
            ),
        ] {
            assert_eq!(req(Method::GET, &p), (action.to_owned(), p.clone()));
        }
    }
}
