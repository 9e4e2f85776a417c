//! Why a NodePool's workers do not come: what CAPZ wrote on the pool's Cluster API Machines.
//!
//! HyperShift folds each Machine's `InfrastructureReady` into the NodePool's
//! `AllMachinesReady`, but keeps at most 1000 characters of messages per reason
//! (`aggregateMachineMessages`): an ARM refusal as CAPZ words it (azcore's request line, status,
//! `ERROR CODE` and body) is longer, so the NodePool only says `Failed` and `... too many
//! similar errors`. The refusal's words are on the Machines (`machines.cluster.x-k8s.io` in the
//! control plane's namespace, annotated `hypershift.openshift.io/nodePool: <ns>/<name>`), so
//! this is where the step looks.
//!
//! A Machine CAPI has marked failed (`status.failureReason`, copied from the AzureMachine) is
//! terminal by definition: CAPZ sets it for a configuration Azure cannot serve, such as a VM
//! size the region's Resource SKUs do not list (`InvalidConfiguration`), and never reconciles
//! the machine again. Its `failureMessage` holds CAPZ's words.
//!
//! Otherwise terminal or not is decided as for the product's own ARM calls
//! ([`hypersaga_azure::classify`]): CAPZ retries every failure forever, so a refusal that does
//! not clear by waiting (`AuthorizationFailed`: a role assignment is missing; an Entra
//! refusal of the federated assertion) would hold the step until its timeout. Those fail the
//! step at once with ARM's or Entra's words; throttling, conflicts and server errors wait.

use hypersaga_azure::{ErrorKind, classify};
use hypersaga_bus::plan::{Change, Target, Verb};
use hypersaga_model::NodePoolSpec;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde_json::Value;

/// HyperShift's annotation naming a Machine's NodePool.
const NODE_POOL_ANNOTATION: &str = "hypershift.openshift.io/nodePool";

/// The separator azcore and azidentity frame their error texts with.
const SEPARATOR: &str =
    "--------------------------------------------------------------------------------";

/// A refusal found on a Machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineFailure {
    pub machine: String,
    /// The CAPZ condition's reason (`Failed`, `DeletionFailed`), or CAPI's `failureReason`.
    pub reason: String,
    /// HTTP status of the refusal; none for CAPI's `failureReason`, which no response carries.
    pub status: Option<u16>,
    /// ARM's error code (`AuthorizationFailed`), Entra's `AADSTS<n>`, or CAPI's
    /// `failureReason` (`InvalidConfiguration`).
    pub code: String,
    /// ARM's `error.message`, Entra's `error_description`, or CAPI's `failureMessage`.
    pub message: String,
    /// What CAPZ was doing, its words before the SDK's text (`interfaces failed to create or
    /// update. err: failed to get existing resource rg/nic (service: interfaces)`).
    pub context: String,
}

impl MachineFailure {
    /// Whether waiting cannot make it go away.
    pub fn is_terminal(&self) -> bool {
        let Some(status) = self.status else {
            // CAPI's `failureReason`: "a terminal problem reconciling the Machine".
            return true;
        };
        if self.code.starts_with("AADSTS") {
            // Entra refuses the assertion itself: no credential matches, or no such identity.
            return (400..500).contains(&status) && status != 429;
        }
        classify(Some(status), Some(&self.code)) == ErrorKind::Terminal
    }

    /// One line for a user.
    pub fn describe(&self) -> String {
        match self.status {
            Some(status) => format!(
                "Machine {}: {}: HTTP {status} {}: {}",
                self.machine, self.context, self.code, self.message
            ),
            None => format!("Machine {}: {}: {}", self.machine, self.code, self.message),
        }
    }
}

fn machines(client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "cluster.x-k8s.io".into(),
        version: "v1beta1".into(),
        api_version: "cluster.x-k8s.io/v1beta1".into(),
        kind: "Machine".into(),
        plural: "machines".into(),
    };
    Api::namespaced_with(client.clone(), namespace, &resource)
}

/// The Machines of NodePool `np_key` (`<namespace>/<name>`) in the control plane's namespace,
/// those being deleted included.
async fn of_pool(
    client: &kube::Client,
    namespace: &str,
    np_key: &str,
) -> Result<Vec<DynamicObject>, kube::Error> {
    let list = machines(client, namespace)
        .list(&ListParams::default())
        .await?;
    Ok(list
        .items
        .into_iter()
        .filter(|m| {
            m.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(NODE_POOL_ANNOTATION))
                .is_some_and(|v| v == np_key)
        })
        .collect())
}

/// How many Machines NodePool `np_key` has, those still being removed included: a scale
/// down is over when the surplus is gone, not when the survivors are ready. `None` when the
/// management cluster cannot be asked (the caller then judges by the NodePool alone).
pub async fn count(client: &kube::Client, namespace: &str, np_key: &str) -> Option<usize> {
    match of_pool(client, namespace, np_key).await {
        Ok(machines) => Some(machines.len()),
        Err(e) => {
            tracing::debug!(error = %e, namespace, "machines not listed");
            None
        }
    }
}

/// The refusals on the Machines of NodePool `np_key` (`<namespace>/<name>`) in the control
/// plane's namespace. A management cluster that cannot be asked answers none: this is a
/// diagnosis, never a reason to fail by itself.
pub async fn failures(client: &kube::Client, namespace: &str, np_key: &str) -> Vec<MachineFailure> {
    let machines = match of_pool(client, namespace, np_key).await {
        Ok(machines) => machines,
        Err(e) => {
            tracing::debug!(error = %e, namespace, "machines not listed");
            return Vec::new();
        }
    };
    machines
        .iter()
        .filter_map(|m| {
            let name = m.metadata.name.clone().unwrap_or_default();
            if let Some(failed) = failed_for_good(&name, &m.data) {
                return Some(failed);
            }
            let infra = m
                .data
                .pointer("/status/conditions")
                .and_then(Value::as_array)?
                .iter()
                .find(|c| c["type"] == "InfrastructureReady" && c["status"] == "False")?;
            let reason = infra.get("reason").and_then(Value::as_str).unwrap_or("");
            let message = infra.get("message").and_then(Value::as_str)?;
            parse(&name, reason, message)
        })
        .collect()
}

/// CAPI's terminal failure of a Machine (`status.failureReason` and `failureMessage`), if any.
pub fn failed_for_good(machine: &str, data: &Value) -> Option<MachineFailure> {
    let text = |field: &str| {
        data.pointer(&format!("/status/{field}"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let reason = text("failureReason")?;
    Some(MachineFailure {
        machine: machine.to_owned(),
        reason: reason.to_owned(),
        status: None,
        code: reason.to_owned(),
        message: text("failureMessage").unwrap_or_default().to_owned(),
        context: String::new(),
    })
}

/// Reads azcore's `ResponseError` (or azidentity's `AuthenticationFailedError`) out of a CAPZ
/// condition message.
pub fn parse(machine: &str, reason: &str, message: &str) -> Option<MachineFailure> {
    let status: u16 = message
        .split("RESPONSE ")
        .nth(1)?
        .split(':')
        .next()?
        .trim()
        .parse()
        .ok()?;
    let code_line = message
        .lines()
        .find_map(|l| l.strip_prefix("ERROR CODE: "))
        .map(|c| c.trim().to_owned());
    // The body sits between the second and third separators.
    let body = message.split(SEPARATOR).nth(2).map(str::trim).unwrap_or("");
    let body: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let (code, text) = match code_line {
        Some(code) => (
            code,
            body.pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        ),
        None => {
            let description = body
                .get("error_description")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let code = body
                .get("error_codes")
                .and_then(Value::as_array)
                .and_then(|c| c.first())
                .and_then(Value::as_u64)
                .map(|c| format!("AADSTS{c}"))
                .or_else(|| body.get("error").and_then(Value::as_str).map(str::to_owned))?;
            (code, description.to_owned())
        }
    };
    // CAPZ's own words end where the SDK's text starts: at its request line or credential name.
    let context = message
        .split(": GET ")
        .next()
        .and_then(|c| c.split(": PUT ").next())
        .and_then(|c| c.split(": DELETE ").next())
        .and_then(|c| c.split(": WorkloadIdentityCredential").next())
        .unwrap_or("")
        .trim()
        .to_owned();
    Some(MachineFailure {
        machine: machine.to_owned(),
        reason: reason.to_owned(),
        status: Some(status),
        code,
        message: text,
        context,
    })
}

/// What HyperShift's Cluster API provider (CAPZ) makes in Azure for each node of `pool` once
/// its NodePool `name` is applied: a VM named after its Machine (`<NodePool>-<set>-<machine>`,
/// suffixes of CAPI's choosing), its NIC and its OS disk, in `location`. Named by CAPZ, so a
/// plan gives only the pattern; for an autoscaled pool, the nodes it starts with.
pub(crate) fn planned(name: &str, pool: &NodePoolSpec, location: &str) -> Vec<Change> {
    let note = "made by HyperShift's Cluster API provider (CAPZ) for each node; its name ends as CAPI chooses";
    let made = |kind: &str, suffix: &str| Change {
        target: Some(Target::Azure),
        verb: Some(Verb::Create),
        kind: kind.to_owned(),
        name: format!("{name}-*{suffix}"),
        location: location.to_owned(),
        note: note.to_owned(),
        ..Change::default()
    };
    (0..pool.min_nodes())
        .flat_map(|_| {
            [
                made("Microsoft.Compute/virtualMachines", ""),
                made("Microsoft.Network/networkInterfaces", "-nic"),
                made("Microsoft.Compute/disks", "_OSDisk"),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arm_text() -> String {
        format!(
            "interfaces failed to create or update. err: failed to get existing resource rg/w-nic \
             (service: interfaces): GET https://management.azure.com/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/networkInterfaces/w-nic\n\
             {SEPARATOR}\nRESPONSE 403: 403 Forbidden\nERROR CODE: AuthorizationFailed\n{SEPARATOR}\n\
             {{\n  \"error\": {{\n    \"code\": \"AuthorizationFailed\",\n    \"message\": \"The client 'x' \
             does not have authorization to perform action 'Microsoft.Network/networkInterfaces/read'\"\n  }}\n}}\n{SEPARATOR}\n"
        )
    }

    #[test]
    fn an_arm_refusal_is_read_and_a_missing_permission_is_terminal() {
        let f = parse("w", "Failed", &arm_text()).expect("parsed");
        assert_eq!(
            (f.status, f.code.as_str()),
            (Some(403), "AuthorizationFailed")
        );
        assert!(
            f.message
                .contains("'Microsoft.Network/networkInterfaces/read'"),
            "{f:?}"
        );
        assert_eq!(
            f.context,
            "interfaces failed to create or update. err: failed to get existing resource rg/w-nic (service: interfaces)"
        );
        assert!(f.is_terminal());
        assert!(f.describe().starts_with("Machine w: interfaces failed"));
    }

    #[test]
    fn throttling_waits_and_entra_refusals_are_terminal() {
        let throttled = arm_text()
            .replace("403: 403 Forbidden", "429: 429 Too Many Requests")
            .replace("AuthorizationFailed", "SubscriptionRequestsThrottled");
        assert!(
            !parse("w", "Failed", &throttled)
                .expect("parsed")
                .is_terminal()
        );

        let entra = format!(
            "interfaces failed to create or update. err: failed to get existing resource rg/w-nic \
             (service: interfaces): WorkloadIdentityCredential authentication failed. \n\
             POST https://login.microsoftonline.com/t/oauth2/v2.0/token\n{SEPARATOR}\nRESPONSE 401: 401 Unauthorized\n\
             {SEPARATOR}\n{{\n  \"error\": \"invalid_client\",\n  \"error_description\": \"AADSTS700213: No matching federated identity record\",\n  \"error_codes\": [\n    700213\n  ]\n}}\n{SEPARATOR}\nTo troubleshoot, visit https://aka.ms/azsdk/go/identity/troubleshoot#workload"
        );
        let f = parse("w", "Failed", &entra).expect("parsed");
        assert_eq!((f.status, f.code.as_str()), (Some(401), "AADSTS700213"));
        assert!(f.is_terminal());
        assert!(parse("w", "Creating", "interfaces creating or updating").is_none());
    }

    #[test]
    fn a_machine_capi_failed_for_good_is_terminal_with_capzs_words() {
        let message = "Failure detected from referenced resource \
            infrastructure.cluster.x-k8s.io/v1beta1, Kind=AzureMachine with name \"w\": failed to \
            get VM SKU Standard_Z99s_v9 in compute api: reconcile error that cannot be recovered \
            occurred: resource sku with name 'Standard_Z99s_v9' and category 'virtualMachines' \
            not found in location 'eastus'. Object will not be requeued";
        let data = serde_json::json!({"status": {
            "failureReason": "InvalidConfiguration",
            "failureMessage": message,
        }});
        let f = failed_for_good("w", &data).expect("failed");
        assert_eq!((f.status, f.code.as_str()), (None, "InvalidConfiguration"));
        assert!(f.is_terminal());
        assert_eq!(
            f.describe(),
            format!("Machine w: InvalidConfiguration: {message}")
        );
        assert!(
            failed_for_good("w", &serde_json::json!({"status": {"phase": "Running"}})).is_none()
        );
    }
}
