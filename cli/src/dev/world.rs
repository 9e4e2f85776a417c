//! What a user already has in Azure before their first cluster, made by the user, never by
//! hypersaga:
//! - the public DNS zone of the base domain, delegated from its parent. Clusters refuse to
//!   start without it (`dns.public-zone`), as HyperShift's `create infra azure` does;
//! - the application hypersaga reaches the subscription through: registered in the tenant's
//!   own Entra directory, trusting hypersaga's issuer through a federated credential, with the
//!   roles `hypersaga tenant add` lists. No secret changes hands.
//!
//! Both are made with the tenant administrator's own credential (`DevTenant`), over the
//! emulated Azure's public APIs, as the user would in the portal.

use std::time::Duration;

use anyhow::Context;
use hypersaga_azure::{ArmClient, ArmConfig, CredentialConfig, Secret};
use hypersaga_config::FederationConfig;
use hypersaga_emulator_arm::tenant_admin::{CONTRIBUTOR, RBAC_ADMINISTRATOR, TenantAdmin};
use hypersaga_model::TenantId;
use serde_json::json;

use crate::endpoints::DevTenant;

/// The base domain `hypersaga cluster create` uses unless told otherwise.
pub const BASE_DOMAIN: &str = "example.com";
/// The resource group holding it.
pub const DNS_GROUP: &str = "dns";
/// The display name of the application each tenant registers for hypersaga.
pub const APP_NAME: &str = "hypersaga";

/// ARM as the tenant's administrator (its own client secret).
pub fn user_arm(arm_url: &str, ca_pem: &str, tenant: &DevTenant) -> anyhow::Result<ArmClient> {
    Ok(ArmClient::new(ArmConfig {
        resource_manager_url: arm_url.parse().context("ARM URL")?,
        authority_host: arm_url.parse().context("Entra URL")?,
        ca_bundle_pem: Some(ca_pem.to_owned()),
        credential: CredentialConfig::ClientSecret {
            tenant_id: tenant.azure_tenant_id.clone(),
            client_id: tenant.client_id.clone(),
            client_secret: Secret::new(tenant.client_secret.clone()),
        },
        lro_poll_interval: Duration::from_millis(50),
        lro_timeout: Duration::from_secs(60),
    })?)
}

/// Makes the public zone [`BASE_DOMAIN`] in the tenant's subscription.
pub async fn make_public_zone(
    arm_url: &str,
    ca_pem: &str,
    tenant: &DevTenant,
) -> anyhow::Result<()> {
    let arm = user_arm(arm_url, ca_pem, tenant)?;
    let group = hypersaga_azure::ids::resource_group_id(&tenant.subscription_id, DNS_GROUP);
    arm.put(
        &group,
        hypersaga_identity::RESOURCES_API,
        &json!({"location": "eastus"}),
    )
    .await
    .with_context(|| format!("creating {group}"))?;
    let zone = hypersaga_azure::ids::resource_id(
        &tenant.subscription_id,
        DNS_GROUP,
        "Microsoft.Network/dnsZones",
        BASE_DOMAIN,
    );
    arm.put(
        &zone,
        hypersaga_dns::DNS_API,
        &json!({"location": "global"}),
    )
    .await
    .with_context(|| format!("creating {zone}"))?;
    Ok(())
}

/// Registers the tenant's application for hypersaga, with the federated credential and the
/// roles `federation` and `hypersaga tenant add` name; answers its client id, the only thing
/// of it hypersaga keeps.
pub async fn register_app(
    arm_url: &str,
    ca_pem: &str,
    federation: &FederationConfig,
    tenant: &DevTenant,
) -> anyhow::Result<String> {
    let id = TenantId::new(tenant.name.clone())?;
    let admin = TenantAdmin::new(
        arm_url,
        Some(ca_pem),
        &tenant.azure_tenant_id,
        &tenant.client_id,
        &tenant.client_secret,
    )?;
    let onboarded = admin
        .onboard(
            APP_NAME,
            &federation.issuer,
            &FederationConfig::subject(&id),
            &federation.audience,
            &tenant.subscription_id,
            &[CONTRIBUTOR, RBAC_ADMINISTRATOR],
        )
        .await
        .with_context(|| {
            format!(
                "registering hypersaga's application in {}'s directory",
                tenant.name
            )
        })?;
    Ok(onboarded.app_id)
}
