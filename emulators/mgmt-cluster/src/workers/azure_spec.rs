//! What the simulated CAPZ needs from a HostedCluster and a NodePool: the Azure template of
//! a Machine (where its NIC and VM go, their size, image and disk) and the workload identity
//! it acts as (the HostedCluster's `nodePoolManagement` client and signing key).

use base64::Engine as _;
use serde_json::{Value, json};

use super::arm_client::Identity;
use super::machines::Template;
use crate::kinds::SECRETS;
use crate::meta::meta_str;
use crate::store::Store;

/// HyperShift's data key of the signing key Secret (`ServiceAccountSigningKeySecretKey`).
pub(super) const SIGNING_KEY_DATA: &str = "key";

pub(super) fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn last_segment(id: &str) -> &str {
    id.trim_end_matches('/').rsplit('/').next().unwrap_or(id)
}

/// The control plane's namespace of a HostedCluster (`<namespace>-<name>`, dots as dashes).
pub(crate) fn control_plane_namespace(hc: &Value) -> String {
    format!(
        "{}-{}",
        meta_str(hc, "namespace").unwrap_or_default(),
        meta_str(hc, "name").unwrap_or_default()
    )
    .replace('.', "-")
}

/// The PEM of the HostedCluster's signing key Secret, or HyperShift's words for why not
/// (`serviceAccountSigningKeyBytes`).
pub(super) fn signing_key_pem(store: &Store, hc: &Value) -> Result<Option<String>, String> {
    let Some(name) = hc
        .pointer("/spec/serviceAccountSigningKey/name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    else {
        return Ok(None);
    };
    let ns = meta_str(hc, "namespace").unwrap_or_default();
    let secret = store.get(SECRETS, ns, name).map_err(|_| {
        format!(
            "failed to get hostedcluster ServiceAccountSigningKey secret {name}: secrets \
             \"{name}\" not found"
        )
    })?;
    let data = secret
        .pointer(&format!("/data/{SIGNING_KEY_DATA}"))
        .and_then(Value::as_str)
        .ok_or_else(|| {
            format!("cannot find service account key \"{SIGNING_KEY_DATA}\" in secret {name}")
        })?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| format!("cannot decode private key in secret {name}: {e}"))?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|e| format!("cannot decode private key in secret {name}: {e}"))
}

/// The marketplace image HyperShift defaults a NodePool to from the release payload's RHCOS
/// stream (`defaultAzureNodePoolImage`, 4.20 and later). The emulator has no payload to read:
/// it names the offer HyperShift's examples use and the release's minor, at `latest`.
fn image_reference(azure: &Value, release: &str) -> Value {
    let image = azure.get("image").cloned().unwrap_or(json!({}));
    if let Some(id) = image.get("imageID").and_then(Value::as_str) {
        return json!({"id": id});
    }
    let market = image.get("azureMarketplace").cloned().unwrap_or(json!({}));
    let field = |k: &str| {
        market
            .get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    if let (Some(p), Some(o), Some(s), Some(v)) = (
        field("publisher"),
        field("offer"),
        field("sku"),
        field("version"),
    ) {
        return json!({"publisher": p, "offer": o, "sku": s, "version": v});
    }
    let minor: String = hypersaga_hypershift::release_version(release)
        .map(|v| v.split('.').take(2).collect())
        .unwrap_or_default();
    let sku = match field("imageGeneration") {
        Some("Gen1") => format!("aro_{minor}_gen1"),
        _ => format!("aro_{minor}"),
    };
    json!({"publisher": "azureopenshift", "offer": "aro4", "sku": sku, "version": "latest"})
}

/// The CAPZ template of `hc`'s Machines made from a NodePool's `spec.platform.azure` as
/// `azure` and release `release`, or what is missing for one.
pub(super) fn template(hc: &Value, np_azure: &Value, release: &str) -> Result<Template, String> {
    let azure = hc
        .pointer("/spec/platform/azure")
        .ok_or("the HostedCluster has no spec.platform.azure")?;
    let field = |pointer: &str| -> Result<String, String> {
        azure
            .pointer(pointer)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| {
                format!(
                    "spec.platform.azure{} is not set",
                    pointer.replace('/', ".")
                )
            })
    };
    let vnet_id = field("/vnetID")?;
    // CAPZ takes only the subnet's name from the NodePool (`GetSubnetNameFromSubnetID`) and
    // finds it in the cluster's VNet.
    let np_subnet = text(np_azure, "/subnetID");
    let subnet = if np_subnet.is_empty() {
        last_segment(&field("/subnetID")?).to_owned()
    } else {
        last_segment(np_subnet).to_owned()
    };
    Ok(Template {
        subscription: field("/subscriptionID")?,
        resource_group: field("/resourceGroup")?,
        location: field("/location")?,
        subnet_id: format!("{}/subnets/{subnet}", vnet_id.trim_end_matches('/')),
        cluster: text(hc, "/spec/infraID").to_owned(),
        vm_size: text(np_azure, "/vmSize").to_owned(),
        image: image_reference(np_azure, release),
        os_disk_gib: np_azure
            .pointer("/osDisk/sizeGiB")
            .and_then(Value::as_i64)
            .unwrap_or(30),
        os_disk_type: match text(np_azure, "/osDisk/diskStorageAccountType") {
            "" => "Premium_LRS".to_owned(),
            t => t.to_owned(),
        },
        zone: np_azure
            .pointer("/availabilityZone")
            .and_then(Value::as_str)
            .filter(|z| !z.is_empty())
            .map(str::to_owned),
    })
}

/// Who CAPZ acts as for `hc`, or what is missing for it.
pub(super) fn identity(store: &Store, hc: &Value) -> Result<Identity, String> {
    let client_id = text(
        hc,
        "/spec/platform/azure/azureAuthenticationConfig/workloadIdentities/nodePoolManagement/clientID",
    );
    if client_id.is_empty() {
        return Err("the HostedCluster names no nodePoolManagement workload identity".into());
    }
    let issuer = text(hc, "/spec/issuerURL");
    if issuer.is_empty() {
        return Err("the HostedCluster has no issuerURL".into());
    }
    let key_pem =
        signing_key_pem(store, hc)?.ok_or("the HostedCluster has no serviceAccountSigningKey")?;
    Ok(Identity {
        tenant_id: text(hc, "/spec/platform/azure/tenantID").to_owned(),
        client_id: client_id.to_owned(),
        issuer: issuer.to_owned(),
        key_pem,
    })
}
