//! ARM's error body and the errors the emulator answers with.
//!
//! Clients branch on `error.code` (and sometimes on `x-ms-failure-cause`), so codes and
//! messages follow what ARM and the resource providers really send.

use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// An error answered in ARM's shape: `{"error":{"code","message","target"?,"details"?}}`.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{status} {code}: {message}")]
pub struct ArmError {
    pub status: StatusCode,
    pub code: String,
    pub message: String,
    pub target: Option<String>,
    /// `details`: `None` leaves the member out (ARM's gateway errors); the network resource
    /// provider always sends the array, empty when it has nothing to add. Boxed (a JSON array)
    /// to keep every `Result<_, ArmError>` small.
    pub details: Option<Box<Value>>,
    /// `Retry-After` seconds (429s and injected faults).
    pub retry_after: Option<u64>,
    /// Extra headers, e.g. `x-ms-failure-cause: gateway` or `WWW-Authenticate` (a boxed
    /// slice: errors travel in every `Result`, so the struct stays under clippy's
    /// large-error bound).
    pub headers: Box<[(&'static str, String)]>,
}

pub type Result<T, E = ArmError> = std::result::Result<T, E>;

impl ArmError {
    pub fn new(status: StatusCode, code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            status,
            code: code.into(),
            message: message.into(),
            target: None,
            details: None,
            retry_after: None,
            headers: Box::default(),
        }
    }

    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        let mut headers = std::mem::take(&mut self.headers).into_vec();
        headers.push((name, value.into()));
        self.headers = headers.into_boxed_slice();
        self
    }

    pub fn with_target(mut self, target: impl Into<String>) -> Self {
        self.target = Some(target.into());
        self
    }

    pub fn with_details(mut self, details: Vec<Value>) -> Self {
        self.details = Some(Box::new(Value::Array(details)));
        self
    }

    pub fn bad_request(code: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// ARM's gateway answers this before the request reaches a resource provider.
    pub fn resource_group_not_found(rg: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "ResourceGroupNotFound",
            format!("Resource group '{rg}' could not be found."),
        )
        .with_header("x-ms-failure-cause", "gateway")
    }

    pub fn resource_group_being_deleted(rg: &str) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "ResourceGroupBeingDeleted",
            format!(
                "The resource group '{rg}' is in deprovisioning state and cannot perform this operation."
            ),
        )
    }

    /// `type_and_name` is ARM's `Namespace/type/name[/childType/childName]` form.
    pub fn resource_not_found(type_and_name: &str, rg: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "ResourceNotFound",
            format!(
                "The Resource '{type_and_name}' under resource group '{rg}' was not found. \
                 For more details please go to https://aka.ms/ARMResourceNotFoundFix"
            ),
        )
    }

    pub fn parent_not_found(parent_type_and_name: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "ParentResourceNotFound",
            format!(
                "Failed to perform 'write' on resource(s) of type '{}', because the parent \
                 resource '{parent_type_and_name}' could not be found.",
                parent_type_and_name.rsplit_once('/').map_or("", |(t, _)| t)
            ),
        )
    }

    /// The 429 without an actor, kept for callers that have no principal to name; the ARM
    /// pipeline answers [`ArmError::subscription_throttled`].
    pub fn throttled(kind: &str, sub: &str, retry_after: u64) -> Self {
        let mut e = Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "SubscriptionRequestsThrottled",
            format!(
                "Number of '{kind}' requests for subscription '{sub}' exceeded. Please try again \
                 after '{retry_after}' seconds after additional tokens are available. \
                 Refer to https://aka.ms/arm-throttling"
            ),
        );
        e.retry_after = Some(retry_after);
        e
    }

    /// ARM's 429 since the per-principal buckets (2024): names the class, the subscription
    /// and the throttled actor (the caller's object id), so clients and operators can tell
    /// which principal ran dry.
    pub fn subscription_throttled(kind: &str, sub: &str, actor: &str, retry_after: u64) -> Self {
        let mut e = Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "SubscriptionRequestsThrottled",
            format!(
                "Number of '{kind}' requests for subscription '{sub}' actor '{actor}' exceeded. \
                 Please try again after '{retry_after}' seconds after the additional tokens are \
                 available. Refer to https://aka.ms/arm-throttling for additional information."
            ),
        );
        e.retry_after = Some(retry_after);
        e
    }

    /// The network resource provider's 409 for a write to a resource (or, for a subnet, its
    /// VNet) whose previous write is still running, pointing at that operation's status URL,
    /// as quoted in Azure/terraform-provider-azapi#503 ("RESPONSE 409: 409 Conflict / ERROR
    /// CODE: AnotherOperationInProgress") and Azure/bicep#5132. `Retry-After` is the time
    /// the running operation still needs.
    pub fn another_operation_in_progress(status_url: &str, retry_after: u64) -> Self {
        let mut e = Self::new(
            StatusCode::CONFLICT,
            "AnotherOperationInProgress",
            format!(
                "Another operation on this or dependent resource is in progress. To retrieve \
                 status of the operation use uri: {status_url}."
            ),
        );
        e.retry_after = Some(retry_after);
        e
    }

    /// Managed Identity's 409 for a federated credential write while another write to a
    /// credential of the same identity is in flight, as quoted in
    /// kubernetes-sigs/cluster-api-provider-azure#5397 and Azure/bicep-registry-modules#1447:
    /// the identity id has lower-cased type segments and the names as created.
    pub fn concurrent_fic_writes(identity_id: &str) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "ConcurrentFederatedIdentityCredentialsWritesForSingleManagedIdentity",
            format!(
                "Too many Federated Identity Credentials are written concurrently for the \
                 managed identity '{identity_id}'. Concurrent Federated Identity Credentials \
                 writes under the same managed identity are not supported."
            ),
        )
    }

    /// The network resource provider's 400 for a PUT whose body names a resource that does not
    /// exist or lives in another region, word for word as NRP answers it (quoted with
    /// `"details": []` in MicrosoftDocs/azure-docs#81734, dmauser/opnazure#5 and, for a load
    /// balancer rule naming a missing frontend, openshift/openshift-azure#1933).
    pub fn invalid_resource_reference(referenced: &str, referrer: &str) -> Self {
        Self::bad_request(
            "InvalidResourceReference",
            format!(
                "Resource {referenced} referenced by resource {referrer} was not found. Please \
                 make sure that the referenced resource exists, and that both resources are in \
                 the same region."
            ),
        )
        .with_details(Vec::new())
    }

    /// ARM's answer on the `Location` URL of a resource-group delete some of whose resources
    /// refused to go (HTTP 409, as in Azure/azure-sdk-for-go#2645 and openshift/installer#5157).
    /// `identifiers` are `Namespace/type/name`; each detail carries the refused resource's id as
    /// `target` and the resource provider's own error body, serialised, as `message` (the
    /// camel-cased shape of Azure/bicep-registry-modules#1607, 2024).
    pub fn resource_group_deletion_blocked(
        rg: &str,
        identifiers: &[String],
        details: Vec<Value>,
    ) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "ResourceGroupDeletionBlocked",
            format!(
                "Deletion of resource group '{rg}' failed as resources with identifiers '{}' \
                 could not be deleted. The provisioning state of the resource group will be \
                 rolled back. The tracking Id is '{}'. Please check audit logs for more details.",
                identifiers.join(","),
                uuid::Uuid::new_v4()
            ),
        )
        .with_details(details)
    }

    /// ARM's refusal of a resource group in a location that is not a region (HTTP 400, as
    /// Azure/k8s-infra `hack/generated/pkg/armclient/template_client_test.go` asserts): the
    /// location as given, the regions by their names, comma-separated without spaces.
    pub fn location_not_available_for_resource_group(location: &str, regions: &[&str]) -> Self {
        Self::bad_request(
            "LocationNotAvailableForResourceGroup",
            format!(
                "The provided location '{location}' is not available for resource group. List \
                 of available regions is '{}'.",
                regions.join(",")
            ),
        )
    }

    /// ARM's refusal of a tracked resource in a location its type is not registered in (HTTP
    /// 400), worded as users quote it (Azure/azure-rest-api-specs#8347: "The provided location
    /// 'eastus' is not available for resource type 'Microsoft.Web/staticSites'. List of
    /// available regions for the resource type is 'westus2,centralus,…'.").
    pub fn location_not_available_for_resource_type(
        location: &str,
        type_name: &str,
        regions: &[&str],
    ) -> Self {
        Self::bad_request(
            "LocationNotAvailableForResourceType",
            format!(
                "The provided location '{location}' is not available for resource type \
                 '{type_name}'. List of available regions for the resource type is '{}'.",
                regions.join(",")
            ),
        )
    }

    /// The compute resource provider's refusal of a VM size it does not offer (HTTP 400
    /// `InvalidParameter`, `target: vmSize`): the size as given and every size of the region,
    /// comma-separated without spaces (ContainerSolutions/terraform-examples#62,
    /// sassoftware/viya4-iac-azure#116), then the pointer to the size pages
    /// (DataBiosphere/terra-workspace-manager#1220, 2023; redhat-developer/mapt#432, 2025). The
    /// target is the one the sibling "requested VM size … is not available" refusal carries
    /// (PaloAltoNetworks/azure-applicationgateway#1).
    pub fn invalid_vm_size(size: &str, valid: &[&str]) -> Self {
        Self::bad_request(
            "InvalidParameter",
            format!(
                "The value {size} provided for the VM size is not valid. The valid sizes in the \
                 current region are: {}. Find out more on the valid VM sizes in each region at \
                 https://aka.ms/azure-regionservices.",
                valid.join(",")
            ),
        )
        .with_target("vmSize")
    }

    /// The compute resource provider's synchronous refusal of a VM that would take a family's
    /// vCPUs (`family`) or the region's (`None`) past the subscription's limit: `409
    /// OperationNotAllowed`, word for word as Azure answered it in 2024-25 (family:
    /// scylladb/scylla-cluster-tests#9010 and #12948, Azure/karpenter-provider-azure#192;
    /// regional: cloud-barista/cb-spider#1558, the 409 itself in nforgeio/neonKUBE#1671).
    /// `(Minimum) New Limit Required` is `Current Usage + Additional Required`, and the portal
    /// link asks for exactly that limit. `location` is printed as the request gave it ("eastus"
    /// in the first, "KoreaSouth" in the last).
    pub fn vcpu_quota_exceeded(
        family: Option<&str>,
        subscription: &str,
        location: &str,
        limit: u64,
        usage: u64,
        additional: u64,
    ) -> Self {
        let new_limit = usage.saturating_add(additional);
        let (quota, resource, doc) = match family {
            Some(f) => (format!("{f} Cores"), f, "per-vm-quota-requests"),
            None => (
                "Total Regional Cores".to_owned(),
                "cores",
                "regional-quota-requests",
            ),
        };
        let parameters = format!(
            "%7B%22subscriptionId%22:%22{subscription}%22,%22command%22:%22openQuotaApprovalBlade%22,\
             %22quotas%22:[%7B%22location%22:%22{location}%22,%22providerId%22:%22Microsoft.Compute%22,\
             %22resourceName%22:%22{resource}%22,%22quotaRequest%22:%7B%22properties%22:%7B\
             %22limit%22:{new_limit},%22unit%22:%22Count%22,%22name%22:%7B%22value%22:%22{resource}\
             %22%7D%7D%7D%7D]%7D"
        );
        Self::new(
            StatusCode::CONFLICT,
            "OperationNotAllowed",
            format!(
                "Operation could not be completed as it results in exceeding approved {quota} \
                 quota. Additional details - Deployment Model: Resource Manager, Location: \
                 {location}, Current Limit: {limit}, Current Usage: {usage}, Additional \
                 Required: {additional}, (Minimum) New Limit Required: {new_limit}. Setup Alerts \
                 when Quota reaches threshold. Learn more at https://aka.ms/quotamonitoringalerting \
                 . Submit a request for Quota increase at \
                 https://aka.ms/ProdportalCRP/#blade/Microsoft_Azure_Capacity/UsageAndQuota.ReactView/Parameters/{parameters} \
                 by specifying parameters listed in the \u{2018}Details\u{2019} section for deployment to \
                 succeed. Please read more about quota limits at \
                 https://docs.microsoft.com/en-us/azure/azure-supportability/{doc}"
            ),
        )
    }

    pub fn missing_api_version() -> Self {
        Self::bad_request(
            "MissingApiVersionParameter",
            "The api-version query parameter (?api-version=) is required for all requests.",
        )
    }

    /// ARM's answer for its own endpoints (resource groups, the inventory); it lists the
    /// versions newest first (Azure/azure-rest-api-specs#11711, Azure/azure-cli#28038), so
    /// callers pass them in that order.
    pub fn invalid_api_version(given: &str, supported: &[&str]) -> Self {
        Self::bad_request(
            "InvalidApiVersionParameter",
            format!(
                "The api-version '{given}' is invalid. The supported versions are '{}'.",
                supported.join(",")
            ),
        )
    }

    /// ARM's answer to a version a resource provider registered no regional endpoint for
    /// (HTTP 400): it names the location the request resolved to and lists what the manifest
    /// has, versions oldest first and locations in registration order, as Azure/azure-cli#28496
    /// quotes it.
    pub fn no_registered_provider(
        location: &str,
        given: &str,
        type_path: &str,
        supported: &[&str],
        locations: &[&str],
    ) -> Self {
        Self::bad_request(
            "NoRegisteredProviderFound",
            format!(
                "No registered resource provider found for location '{location}' and API version \
                 '{given}' for type '{type_path}'. The supported api-versions are '{}'. The \
                 supported locations are '{}'.",
                supported.join(", "),
                locations.join(", ")
            ),
        )
    }

    /// ARM's answer when the namespace has no such type at that version (HTTP 404, as
    /// Azure/azure-rest-api-specs#14807 and the `NotFound` wrapper of Azure/acs-engine#4037
    /// show): for a type registered without locations (Microsoft.Authorization) it lists the
    /// supported versions; for a type that does not exist at all `supported` is empty and the
    /// sentence ends after the version.
    pub fn invalid_resource_type(
        type_path: &str,
        namespace: &str,
        given: &str,
        supported: &[&str],
    ) -> Self {
        let mut message = format!(
            "The resource type '{type_path}' could not be found in the namespace '{namespace}' \
             for api version '{given}'."
        );
        if !supported.is_empty() {
            message.push_str(&format!(
                " The supported api-versions are '{}'.",
                supported.join(",")
            ));
        }
        Self::new(StatusCode::NOT_FOUND, "InvalidResourceType", message)
    }

    /// The JSON body, also used for failed operation status resources.
    pub fn body(&self) -> Value {
        let mut inner = json!({ "code": self.code, "message": self.message });
        if let Some(t) = &self.target {
            inner["target"] = json!(t);
        }
        if let Some(d) = &self.details {
            inner["details"] = d.as_ref().clone();
        }
        json!({ "error": inner })
    }
}

impl IntoResponse for ArmError {
    fn into_response(self) -> Response {
        let mut resp = (self.status, axum::Json(self.body())).into_response();
        let h = resp.headers_mut();
        if let Some(secs) = self.retry_after {
            h.insert(axum::http::header::RETRY_AFTER, HeaderValue::from(secs));
        }
        for (name, value) in self.headers.iter() {
            if let Ok(v) = HeaderValue::from_str(value) {
                h.insert(HeaderName::from_static(name), v);
            }
        }
        resp
    }
}
