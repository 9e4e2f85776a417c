//! What a user already has in Azure before their first cluster: the public DNS zone of the
//! base domain, delegated from its parent. Clusters refuse to start without it
//! (`dns.public-zone`), as HyperShift's `create infra azure` does, so `hypersaga dev` makes
//! one in each tenant's subscription — through ARM, with the tenant's own credentials, as
//! the user would.

use anyhow::Context;
use hypersaga_config::Config;
use serde_json::json;

/// The base domain `hypersaga cluster create` uses unless told otherwise.
pub const BASE_DOMAIN: &str = "example.com";
/// The resource group holding it.
pub const DNS_GROUP: &str = "dns";

/// Makes the public zone [`BASE_DOMAIN`] in every tenant's subscription.
pub async fn make_public_zones(config: &Config) -> anyhow::Result<()> {
    let clients = hypersaga_stepkit::ArmClients::new(config)?;
    for tenant in &config.tenants {
        let arm = clients
            .tenant(&tenant.id)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let group = arm.resource_group_id(DNS_GROUP);
        arm.client
            .put(
                &group,
                hypersaga_identity::RESOURCES_API,
                &json!({"location": "eastus"}),
            )
            .await
            .with_context(|| format!("creating {group}"))?;
        let zone = arm.resource_id(DNS_GROUP, "Microsoft.Network/dnsZones", BASE_DOMAIN);
        arm.client
            .put(
                &zone,
                hypersaga_dns::DNS_API,
                &json!({"location": "global"}),
            )
            .await
            .with_context(|| format!("creating {zone}"))?;
    }
    Ok(())
}
