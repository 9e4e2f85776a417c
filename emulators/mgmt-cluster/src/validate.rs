//! Per-kind validation and normalisation, the part of the CRD schemas and built-in API
//! defaulting our clients can observe.

use base64::Engine;
use serde_json::{Value, json};

use crate::error::Cause;

/// `metadata.name` must be an RFC 1123 subdomain (namespaces and CR names in practice use
/// DNS labels; the stricter check catches upper case and underscores, the common mistakes).
pub fn name(name: &str) -> Option<Cause> {
    let ok = !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    (!ok).then(|| {
        Cause::invalid(
            "metadata.name",
            format!(
                "Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of lower case \
                 alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
            ),
        )
    })
}

fn non_empty_str(obj: &Value, pointer: &str) -> bool {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
}

fn require(obj: &Value, pointer: &str, causes: &mut Vec<Cause>) {
    if !non_empty_str(obj, pointer) {
        causes.push(Cause::required(
            pointer.trim_start_matches('/').replace('/', "."),
        ));
    }
}

fn require_object(obj: &Value, pointer: &str, causes: &mut Vec<Cause>) -> bool {
    let present = obj.pointer(pointer).is_some_and(Value::is_object);
    if !present {
        causes.push(Cause::required(
            pointer.trim_start_matches('/').replace('/', "."),
        ));
    }
    present
}

const WORKLOAD_IDENTITIES: [&str; 7] = [
    "imageRegistry",
    "ingress",
    "file",
    "disk",
    "nodePoolManagement",
    "cloudProvider",
    "network",
];

/// HostedCluster: the required fields of `spec` and of `AzurePlatformSpec` (reference §5.1).
pub fn hosted_cluster(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    if !require_object(obj, "/spec", &mut causes) {
        return causes;
    }
    require(obj, "/spec/release/image", &mut causes);
    require(obj, "/spec/platform/type", &mut causes);
    if obj.pointer("/spec/platform/type").and_then(Value::as_str) != Some("Azure") {
        return causes;
    }
    if !require_object(obj, "/spec/platform/azure", &mut causes) {
        return causes;
    }
    for field in [
        "location",
        "resourceGroup",
        "vnetID",
        "subnetID",
        "subscriptionID",
        "securityGroupID",
        "tenantID",
    ] {
        require(obj, &format!("/spec/platform/azure/{field}"), &mut causes);
    }
    let auth = "/spec/platform/azure/azureAuthenticationConfig";
    if !require_object(obj, auth, &mut causes) {
        return causes;
    }
    match obj.pointer(&format!("{auth}/azureAuthenticationConfigType")).and_then(Value::as_str) {
        Some("WorkloadIdentities") => {
            let wi = format!("{auth}/workloadIdentities");
            if require_object(obj, &wi, &mut causes) {
                for id in WORKLOAD_IDENTITIES {
                    require(obj, &format!("{wi}/{id}/clientID"), &mut causes);
                }
            }
        }
        Some("ManagedIdentities") => {
            require_object(obj, &format!("{auth}/managedIdentities"), &mut causes);
        }
        Some(other) => causes.push(Cause::invalid(
            "spec.platform.azure.azureAuthenticationConfig.azureAuthenticationConfigType",
            format!(
                "Unsupported value: \"{other}\": supported values: \"ManagedIdentities\", \"WorkloadIdentities\""
            ),
        )),
        None => causes.push(Cause::required(
            "spec.platform.azure.azureAuthenticationConfig.azureAuthenticationConfigType",
        )),
    }
    causes
}

/// NodePool: required spec fields and `AzureNodePoolPlatform` (reference §5.2).
pub fn node_pool(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    if !require_object(obj, "/spec", &mut causes) {
        return causes;
    }
    require(obj, "/spec/clusterName", &mut causes);
    require(obj, "/spec/release/image", &mut causes);
    require(obj, "/spec/platform/type", &mut causes);
    if let Some(replicas) = obj.pointer("/spec/replicas")
        && replicas.as_i64().is_none_or(|r| r < 0)
    {
        causes.push(Cause::invalid(
            "spec.replicas",
            format!("Invalid value: {replicas}: must be >= 0"),
        ));
    }
    if obj.pointer("/spec/platform/type").and_then(Value::as_str) == Some("Azure")
        && require_object(obj, "/spec/platform/azure", &mut causes)
    {
        require(obj, "/spec/platform/azure/vmSize", &mut causes);
        require(obj, "/spec/platform/azure/image/type", &mut causes);
        require(obj, "/spec/platform/azure/subnetID", &mut causes);
        if require_object(obj, "/spec/platform/azure/osDisk", &mut causes) {
            match obj
                .pointer("/spec/platform/azure/osDisk/sizeGiB")
                .and_then(Value::as_i64)
            {
                Some(16..=32767) => {}
                Some(n) => causes.push(Cause::invalid(
                    "spec.platform.azure.osDisk.sizeGiB",
                    format!("Invalid value: {n}: must be between 16 and 32767"),
                )),
                None => causes.push(Cause::required("spec.platform.azure.osDisk.sizeGiB")),
            }
        }
    }
    causes
}

/// Secrets: fold `stringData` into base64 `data` (write-only field) and default `type`.
pub fn normalize_secret(obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(string_data)) = map.remove("stringData") {
        let data = map.entry("data").or_insert_with(|| json!({}));
        if let Some(data) = data.as_object_mut() {
            for (k, v) in string_data {
                let text = v
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string());
                let encoded = base64::engine::general_purpose::STANDARD.encode(text);
                data.insert(k, Value::String(encoded));
            }
        }
    }
    map.entry("type").or_insert_with(|| json!("Opaque"));
}

/// Namespaces: the `kubernetes` finalizer and `status.phase` the real server reports.
pub fn normalize_namespace(obj: &mut Value) {
    let terminating = obj.pointer("/metadata/deletionTimestamp").is_some();
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let spec = map.entry("spec").or_insert_with(|| json!({}));
    if let Some(spec) = spec.as_object_mut() {
        spec.entry("finalizers")
            .or_insert_with(|| json!(["kubernetes"]));
    }
    let phase = if terminating { "Terminating" } else { "Active" };
    map.insert("status".into(), json!({"phase": phase}));
}
