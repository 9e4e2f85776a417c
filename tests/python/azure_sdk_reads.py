#!/usr/bin/env python3
"""Lists and reads, with Microsoft's own Python clients, what a create left in ARM.

Run against the ARM + Entra emulator (or Azure): `azure-identity`'s `ClientSecretCredential`
gets the token, and the newest `azure-mgmt-resource`, `-network`, `-msi`, `-privatedns`,
`-authorization` and `-compute` clients list and read, each with its default api-version:

- resource groups;
- virtual networks, their subnets, network security groups, public IP addresses and load
  balancers;
- user-assigned identities and their federated identity credentials;
- private DNS zones and their virtual network links;
- role assignments at the subscription's scope and at each resource group's, and the role
  definitions they reference;
- virtual machines and managed disks (the node pools' workers, as CAPZ makes them), and the
  Compute usages (vCPU quota) of --location.

Every list is followed by a read of each item by name (or id), which must answer the same
resource. Prints one JSON document of what it found on stdout; any SDK exception is printed
on stderr and the exit code is 1.

Settings come from arguments, else from the environment:

    --arm-url        ARM_URL                e.g. https://127.0.0.1:8443
    --authority      AZURE_AUTHORITY_HOST   Entra's host, e.g. https://127.0.0.1:8443
    --ca-bundle      REQUESTS_CA_BUNDLE     PEM of the CA that signed the emulator's certificate
    --tenant-id      AZURE_TENANT_ID
    --client-id      AZURE_CLIENT_ID
    --client-secret  AZURE_CLIENT_SECRET    (prefer the environment: argv is visible to all)
    --subscription-id AZURE_SUBSCRIPTION_ID
    --verbose        log every HTTP request and response (azure-core's logger) on stderr
"""

import argparse
import json
import logging
import os
import sys
import traceback

from azure.identity import ClientSecretCredential
from azure.mgmt.authorization import AuthorizationManagementClient
from azure.mgmt.compute import ComputeManagementClient
from azure.mgmt.msi import ManagedServiceIdentityClient
from azure.mgmt.network import NetworkManagementClient
from azure.mgmt.privatedns import PrivateDnsManagementClient
from azure.mgmt.resource.resources import ResourceManagementClient

ARM_SCOPE = "https://management.azure.com/.default"


class Mismatch(Exception):
    """A read answered something else than the list did."""


def settings(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    env = os.environ.get
    p.add_argument("--arm-url", default=env("ARM_URL"))
    p.add_argument("--authority", default=env("AZURE_AUTHORITY_HOST"))
    p.add_argument("--ca-bundle", default=env("REQUESTS_CA_BUNDLE"))
    p.add_argument("--tenant-id", default=env("AZURE_TENANT_ID"))
    p.add_argument("--client-id", default=env("AZURE_CLIENT_ID"))
    p.add_argument("--client-secret", default=env("AZURE_CLIENT_SECRET"))
    p.add_argument("--subscription-id", default=env("AZURE_SUBSCRIPTION_ID"))
    p.add_argument("--location", default=env("AZURE_LOCATION", "eastus"))
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args(argv)
    missing = [
        name
        for name in (
            "arm_url",
            "authority",
            "tenant_id",
            "client_id",
            "client_secret",
            "subscription_id",
        )
        if not getattr(args, name)
    ]
    if missing:
        p.error("missing: " + ", ".join("--" + m.replace("_", "-") for m in missing))
    return args


def touch(model, seen=None):
    """Reads every field of a model, recursively.

    The TypeSpec-generated clients (network, privatedns, resource) deserialize a field only
    when it is read, so a response shape the model cannot take would otherwise go unnoticed.
    The msrest ones (msi, authorization) already deserialized everything."""
    seen = seen if seen is not None else set()
    if id(model) in seen:
        return
    seen.add(id(model))
    if isinstance(model, (list, tuple)):
        for item in model:
            touch(item, seen)
        return
    if isinstance(model, dict):
        for item in model.values():
            touch(item, seen)
        return
    fields = getattr(model, "_attr_to_rest_field", None)
    if fields is None:
        return
    for attr in fields:
        touch(getattr(model, attr), seen)


def same(listed, read, what):
    """The item a list gave and the one a read gave are the same resource."""
    touch(listed)
    touch(read)
    if (listed.id or "").lower() != (read.id or "").lower():
        raise Mismatch(f"{what}: listed {listed.id!r}, read {read.id!r}")
    return read


def sub_id(ref):
    """The id of a `SubResource`-like reference, or None."""
    return getattr(ref, "id", None) if ref is not None else None


def group_of(resource_id):
    """The resource group named in an ARM id."""
    parts = resource_id.split("/")
    for i, part in enumerate(parts[:-1]):
        if part.lower() == "resourcegroups":
            return parts[i + 1]
    raise Mismatch(f"no resource group in {resource_id!r}")


def read_resource_groups(resources):
    out = []
    for listed in resources.resource_groups.list():
        rg = same(listed, resources.resource_groups.get(listed.name), "resource group")
        out.append(
            {
                "id": rg.id,
                "name": rg.name,
                "location": rg.location,
                "provisioningState": rg.properties.provisioning_state if rg.properties else None,
                "managedBy": rg.managed_by,
                "tags": rg.tags,
            }
        )
    return out


def read_network(network):
    vnets, subnets = [], []
    for listed in network.virtual_networks.list_all():
        rg = group_of(listed.id)
        vnet = same(listed, network.virtual_networks.get(rg, listed.name), "virtual network")
        vnets.append(
            {
                "id": vnet.id,
                "name": vnet.name,
                "location": vnet.location,
                "provisioningState": vnet.provisioning_state,
                "addressPrefixes": list(vnet.address_space.address_prefixes or []),
                "subnets": sorted(s.id for s in vnet.subnets or []),
            }
        )
        for listed_subnet in network.subnets.list(rg, vnet.name):
            subnet = same(
                listed_subnet,
                network.subnets.get(rg, vnet.name, listed_subnet.name),
                "subnet",
            )
            subnets.append(
                {
                    "id": subnet.id,
                    "name": subnet.name,
                    "provisioningState": subnet.provisioning_state,
                    "addressPrefix": subnet.address_prefix,
                    "networkSecurityGroup": sub_id(subnet.network_security_group),
                }
            )
    nsgs = []
    for listed in network.network_security_groups.list_all():
        nsg = same(
            listed,
            network.network_security_groups.get(group_of(listed.id), listed.name),
            "network security group",
        )
        nsgs.append(
            {
                "id": nsg.id,
                "name": nsg.name,
                "location": nsg.location,
                "provisioningState": nsg.provisioning_state,
                "securityRules": sorted(r.name for r in nsg.security_rules or []),
                "subnets": sorted(s.id for s in nsg.subnets or []),
            }
        )
    ips = []
    for listed in network.public_ip_addresses.list_all():
        ip = same(
            listed,
            network.public_ip_addresses.get(group_of(listed.id), listed.name),
            "public IP address",
        )
        ips.append(
            {
                "id": ip.id,
                "name": ip.name,
                "location": ip.location,
                "provisioningState": ip.provisioning_state,
                "sku": ip.sku.name if ip.sku else None,
                "publicIPAllocationMethod": ip.public_ip_allocation_method,
                "ipConfiguration": sub_id(ip.ip_configuration),
            }
        )
    lbs = []
    for listed in network.load_balancers.list_all():
        lb = same(
            listed,
            network.load_balancers.get(group_of(listed.id), listed.name),
            "load balancer",
        )
        lbs.append(
            {
                "id": lb.id,
                "name": lb.name,
                "location": lb.location,
                "provisioningState": lb.provisioning_state,
                "sku": lb.sku.name if lb.sku else None,
                "frontendIPConfigurations": [
                    {
                        "id": f.id,
                        "name": f.name,
                        "publicIPAddress": sub_id(f.public_ip_address),
                    }
                    for f in lb.frontend_ip_configurations or []
                ],
                "backendAddressPools": sorted(p.id for p in lb.backend_address_pools or []),
            }
        )
    return {
        "virtualNetworks": vnets,
        "subnets": subnets,
        "networkSecurityGroups": nsgs,
        "publicIPAddresses": ips,
        "loadBalancers": lbs,
    }


def read_identities(msi):
    out = []
    for listed in msi.user_assigned_identities.list_by_subscription():
        rg = group_of(listed.id)
        mi = same(listed, msi.user_assigned_identities.get(rg, listed.name), "identity")
        fics = []
        for listed_fic in msi.federated_identity_credentials.list(rg, mi.name):
            fic = same(
                listed_fic,
                msi.federated_identity_credentials.get(rg, mi.name, listed_fic.name),
                "federated identity credential",
            )
            fics.append(
                {
                    "id": fic.id,
                    "name": fic.name,
                    "issuer": fic.issuer,
                    "subject": fic.subject,
                    "audiences": list(fic.audiences or []),
                }
            )
        out.append(
            {
                "id": mi.id,
                "name": mi.name,
                "location": mi.location,
                "tenantId": mi.tenant_id,
                "principalId": mi.principal_id,
                "clientId": mi.client_id,
                "federatedIdentityCredentials": fics,
            }
        )
    return out


def read_private_dns(dns):
    out = []
    for listed in dns.private_zones.list():
        rg = group_of(listed.id)
        zone = same(listed, dns.private_zones.get(rg, listed.name), "private DNS zone")
        links = []
        for listed_link in dns.virtual_network_links.list(rg, zone.name):
            link = same(
                listed_link,
                dns.virtual_network_links.get(rg, zone.name, listed_link.name),
                "virtual network link",
            )
            links.append(
                {
                    "id": link.id,
                    "name": link.name,
                    "location": link.location,
                    "provisioningState": link.provisioning_state,
                    "virtualNetwork": sub_id(link.virtual_network),
                    "registrationEnabled": link.registration_enabled,
                    "virtualNetworkLinkState": link.virtual_network_link_state,
                }
            )
        out.append(
            {
                "id": zone.id,
                "name": zone.name,
                "location": zone.location,
                "provisioningState": zone.provisioning_state,
                "numberOfVirtualNetworkLinks": zone.number_of_virtual_network_links,
                "virtualNetworkLinks": links,
            }
        )
    return out


def assignment_json(a):
    return {
        "id": a.id,
        "name": a.name,
        "scope": a.scope,
        "roleDefinitionId": a.role_definition_id,
        "principalId": a.principal_id,
        "principalType": a.principal_type,
    }


def read_authorization(auth, groups):
    at_subscription = []
    # Page by page, to report how many `nextLink`s the client followed.
    pages = 0
    for page in auth.role_assignments.list_for_subscription().by_page():
        pages += 1
        for listed in page:
            a = same(listed, auth.role_assignments.get_by_id(listed.id), "role assignment")
            at_subscription.append(assignment_json(a))
    by_group = {}
    for rg in groups:
        by_group[rg] = [
            assignment_json(a) for a in auth.role_assignments.list_for_resource_group(rg)
        ]
    definitions = []
    for role_id in sorted({a["roleDefinitionId"] for a in at_subscription}):
        d = auth.role_definitions.get_by_id(role_id)
        if d.id.lower() != role_id.lower():
            raise Mismatch(f"role definition: asked {role_id!r}, read {d.id!r}")
        definitions.append(
            {
                "id": d.id,
                "name": d.name,
                "roleName": d.role_name,
                "roleType": d.role_type,
                "assignableScopes": list(d.assignable_scopes or []),
                "actions": sorted(a for p in d.permissions or [] for a in p.actions or []),
            }
        )
    return {
        "subscription": at_subscription,
        "subscriptionPages": pages,
        "resourceGroups": by_group,
        "roleDefinitions": definitions,
    }


def read_compute(compute, location):
    """Every VM and managed disk, each read again by name, and the region's usages."""
    vms = []
    for listed in compute.virtual_machines.list_all():
        touch(listed)
        rg = group_of(listed.id)
        vm = same(listed, compute.virtual_machines.get(rg, listed.name), "virtual machine")
        vms.append(
            {
                "id": vm.id,
                "name": vm.name,
                "resourceGroup": rg,
                "vmSize": vm.hardware_profile.vm_size if vm.hardware_profile else None,
                "osDisk": sub_id(vm.storage_profile.os_disk.managed_disk)
                if vm.storage_profile and vm.storage_profile.os_disk
                and vm.storage_profile.os_disk.managed_disk
                else None,
                "networkInterfaces": [
                    n.id for n in (vm.network_profile.network_interfaces or [])
                ]
                if vm.network_profile
                else [],
            }
        )
    disks = []
    for listed in compute.disks.list():
        touch(listed)
        rg = group_of(listed.id)
        disk = same(listed, compute.disks.get(rg, listed.name), "disk")
        disks.append({"id": disk.id, "name": disk.name, "sizeGiB": disk.disk_size_gb})
    usages = []
    for usage in compute.usage.list(location):
        touch(usage)
        usages.append(
            {
                "name": usage.name.value,
                "localizedName": usage.name.localized_value,
                "currentValue": usage.current_value,
                "limit": usage.limit,
                "unit": usage.unit,
            }
        )
    return {"virtualMachines": vms, "disks": disks, "usages": usages}


def run(args):
    transport = {"connection_verify": args.ca_bundle} if args.ca_bundle else {}
    credential = ClientSecretCredential(
        tenant_id=args.tenant_id,
        client_id=args.client_id,
        client_secret=args.client_secret,
        authority=args.authority,
        disable_instance_discovery=True,
        **transport,
    )
    client = {
        "credential": credential,
        "subscription_id": args.subscription_id,
        "base_url": args.arm_url,
        "credential_scopes": [ARM_SCOPE],
        "logging_enable": args.verbose,
        **transport,
    }
    resources = ResourceManagementClient(**client)
    network = NetworkManagementClient(**client)
    msi = ManagedServiceIdentityClient(**client)
    dns = PrivateDnsManagementClient(**client)
    auth = AuthorizationManagementClient(**client)
    compute = ComputeManagementClient(**client)

    groups = read_resource_groups(resources)
    return {
        "subscriptionId": args.subscription_id,
        "resourceGroups": groups,
        "network": read_network(network),
        "identities": read_identities(msi),
        "privateDnsZones": read_private_dns(dns),
        "roleAssignments": read_authorization(auth, [g["name"] for g in groups]),
        "compute": read_compute(compute, args.location),
    }


def main(argv=None):
    args = settings(argv)
    if args.verbose:
        logging.basicConfig(stream=sys.stderr, level=logging.DEBUG)
    try:
        found = run(args)
    except Exception as e:  # pylint: disable=broad-except  # any failure is the finding
        print(f"{type(e).__module__}.{type(e).__name__}: {e}", file=sys.stderr)
        response = getattr(e, "response", None)
        if response is not None:
            print(
                f"{response.request.method} {response.request.url} -> {response.status_code}\n"
                f"{response.text()}",
                file=sys.stderr,
            )
        traceback.print_exc(file=sys.stderr)
        return 1
    json.dump(found, sys.stdout, indent=2, sort_keys=True, default=str)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
