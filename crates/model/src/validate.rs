//! Validation of a create request. It never stops at the first problem: every violation is
//! reported with the field path of the public API (`spec.node_pools[1].replicas`), so a user
//! fixes a request in one round trip.

use std::sync::LazyLock;

use ipnet::Ipv4Net;
use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::spec::{ClusterSpec, NetworkSpec};

mod node_pool;

pub use node_pool::{
    MAX_CLUSTER_NODES, MAX_DRAIN_MINUTES, MAX_NODE_POOL_NAME, MAX_NODE_POOLS, MAX_POOL_NODES,
    check_cluster_nodes, check_labels, check_node_pool, check_pool_name, check_pool_update,
    release_version,
};
/// Longest cluster name: Azure names derived from it (`NAME-image-registry-INFRA`, …) stay
/// within Azure's limits.
pub const MAX_CLUSTER_NAME: usize = 40;
/// Longest Azure region name (the longest real one, `germanywestcentral`, has 18).
pub const MAX_LOCATION: usize = 40;
/// Longest base domain: room for the cluster's own labels within DNS's 253.
pub const MAX_BASE_DOMAIN: usize = 200;
/// Longest release image reference: a registry host, a repository path of up to 255
/// characters (the distribution spec's limit), and a tag or a sha256 digest.
pub const MAX_RELEASE_IMAGE: usize = 512;
/// Longest VM size name (the longest real ones have about 25).
pub const MAX_VM_SIZE: usize = 64;
/// Longest CIDR (an IPv6 one has at most 43 characters).
pub const MAX_CIDR: usize = 43;
/// Longest ARM resource id accepted for a network the user brings.
pub const MAX_ARM_ID: usize = 1024;
/// Longest value quoted whole in an error; longer ones are cut ([`clip`]).
const ECHO_MAX: usize = 64;

/// One thing wrong with a request, at a field path of the public API.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldViolation {
    pub field: String,
    pub description: String,
}

impl FieldViolation {
    pub fn new(field: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            description: description.into(),
        }
    }
}

/// A value as an error quotes it: whole when short, else its first characters and its length.
/// An error then stays small whatever the input (gRPC's trailers, which carry it, have an 8 KB
/// soft limit beyond which clients drop the answer).
pub fn clip(value: &str) -> String {
    let len = value.chars().count();
    if len <= ECHO_MAX {
        return format!("{value:?}");
    }
    let head: String = value.chars().take(ECHO_MAX - 16).collect();
    format!("{head:?}... ({len} characters)")
}

/// Whether `value` is longer than `max` characters; if so, says so at `field` (without quoting
/// it) and the caller checks nothing more of it.
fn too_long(v: &mut Vec<FieldViolation>, field: &str, value: &str, max: usize) -> bool {
    let len = value.chars().count();
    if len <= max {
        return false;
    }
    v.push(FieldViolation::new(
        field,
        format!("must be at most {max} characters, got {len}"),
    ));
    true
}

/// Checks one node pool of a request on its own, at `at` (`node_pool`).
pub fn validate_node_pool(at: &str, pool: &crate::spec::NodePoolSpec) -> Vec<FieldViolation> {
    let mut v = Vec::new();
    check_node_pool(&mut v, at, pool);
    v
}

/// Checks a node pool name (`field` is where the request carries it), as every call naming a
/// pool does before looking.
pub fn validate_pool_name(field: &str, name: &str) -> Vec<FieldViolation> {
    let mut v = Vec::new();
    check_pool_name(&mut v, field, name);
    v
}

/// Checks a cluster name (`field` is where the request carries it): a DNS label of at most
/// [`MAX_CLUSTER_NAME`] characters. Every call naming a cluster checks it before looking.
pub fn validate_cluster_name(field: &str, name: &str) -> Vec<FieldViolation> {
    let mut v = Vec::new();
    check_dns_label(&mut v, field, name, MAX_CLUSTER_NAME);
    v
}

static DNS_LABEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[a-z]([a-z0-9-]*[a-z0-9])?$").expect("static regex"));
static LOCATION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[a-z][a-z0-9]{1,39}$").expect("static regex"));

/// Validates a create request: the cluster `name` and its `spec`.
pub fn validate_create(name: &str, spec: Option<&ClusterSpec>) -> Vec<FieldViolation> {
    let mut v = Vec::new();
    check_dns_label(&mut v, "name", name, MAX_CLUSTER_NAME);
    let Some(spec) = spec else {
        v.push(FieldViolation::new("spec", "is required"));
        return v;
    };
    if spec.location.is_empty() {
        v.push(FieldViolation::new("spec.location", "is required"));
    } else if !too_long(&mut v, "spec.location", &spec.location, MAX_LOCATION)
        && !LOCATION.is_match(&spec.location)
    {
        v.push(FieldViolation::new(
            "spec.location",
            format!(
                "{} is not an Azure region name (lower-case letters and digits, e.g. \"eastus\")",
                clip(&spec.location)
            ),
        ));
    }
    check_base_domain(&mut v, &spec.base_domain);
    check_release_image(&mut v, "spec.release_image", &spec.release_image);
    node_pool::check_node_pools(&mut v, &spec.node_pools);
    check_network(&mut v, &spec.network);
    crate::addon::check_cluster_addons(&mut v, "spec.addons", &spec.addons);
    v
}

/// A network the user brings must be in the tenant's subscription: a HostedCluster's VNet,
/// subnet and NSG live in the subscription it is deployed to.
pub fn validate_subscription(spec: &ClusterSpec, subscription_id: &str) -> Vec<FieldViolation> {
    let n = &spec.network;
    [
        ("spec.network.vnet_id", &n.vnet_id),
        ("spec.network.subnet_id", &n.subnet_id),
        ("spec.network.nsg_id", &n.nsg_id),
    ]
    .into_iter()
    .filter_map(|(field, id)| {
        let id = id.as_deref()?;
        let sub = id.trim_start_matches('/').split('/').nth(1)?;
        (!sub.eq_ignore_ascii_case(subscription_id)).then(|| {
            FieldViolation::new(
                field,
                format!(
                    "is in subscription {}, not the tenant's subscription {subscription_id}",
                    clip(sub)
                ),
            )
        })
    })
    .collect()
}

fn check_dns_label(v: &mut Vec<FieldViolation>, field: &str, value: &str, max: usize) {
    if value.is_empty() {
        v.push(FieldViolation::new(field, "is required"));
    } else if !too_long(v, field, value, max) && !DNS_LABEL.is_match(value) {
        v.push(FieldViolation::new(
            field,
            format!("{} must be a DNS label: lower-case letters, digits and '-', starting with a letter and ending with a letter or digit", clip(value)),
        ));
    }
}

fn check_base_domain(v: &mut Vec<FieldViolation>, bd: &str) {
    const FIELD: &str = "spec.base_domain";
    if bd.is_empty() {
        v.push(FieldViolation::new(FIELD, "is required"));
        return;
    }
    if too_long(v, FIELD, bd, MAX_BASE_DOMAIN) {
        return;
    }
    let labels: Vec<&str> = bd.split('.').collect();
    let bad_label = labels
        .iter()
        .any(|l| l.is_empty() || l.len() > 63 || !DNS_LABEL_LOOSE(l));
    if labels.len() < 2 || bad_label {
        v.push(FieldViolation::new(
            FIELD,
            format!(
                "{} must be a DNS domain of at least two labels, e.g. \"example.com\"",
                clip(bd)
            ),
        ));
    }
}

#[allow(non_snake_case)]
fn DNS_LABEL_LOOSE(l: &str) -> bool {
    l.bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !l.starts_with('-')
        && !l.ends_with('-')
}

/// A release image: printable, with a tag that states its version (a digest may follow it).
pub fn check_release_image(v: &mut Vec<FieldViolation>, field: &str, image: &str) {
    if image.is_empty() {
        v.push(FieldViolation::new(field, "is required"));
    } else if too_long(v, field, image, MAX_RELEASE_IMAGE) {
        // Said; nothing more is checked of it.
    } else if !image.bytes().all(|b| b.is_ascii_graphic()) {
        v.push(FieldViolation::new(
            field,
            format!("{} must be an image reference with a tag or digest, e.g. \"quay.io/openshift-release-dev/ocp-release:4.21.0-multi\"", clip(image)),
        ));
    } else {
        release_version(v, field, image);
    }
}

fn check_network(v: &mut Vec<FieldViolation>, n: &NetworkSpec) {
    if n.is_user_brought() {
        check_user_brought(v, n);
        return;
    }
    let vnet = parse_cidr(v, "spec.network.vnet_cidr", n.vnet_cidr());
    let subnet = parse_cidr(v, "spec.network.subnet_cidr", n.subnet_cidr());
    if let Some(vnet) = vnet
        && !(8..=29).contains(&vnet.prefix_len())
    {
        v.push(FieldViolation::new(
            "spec.network.vnet_cidr",
            format!(
                "prefix length must be between /8 and /29, got /{}",
                vnet.prefix_len()
            ),
        ));
    }
    if let Some(subnet) = subnet {
        if subnet.prefix_len() > 29 {
            v.push(FieldViolation::new(
                "spec.network.subnet_cidr",
                format!("prefix length must be at most /29 (Azure reserves 5 addresses per subnet), got /{}", subnet.prefix_len()),
            ));
        }
        if let Some(vnet) = vnet
            && !vnet.contains(&subnet)
        {
            v.push(FieldViolation::new(
                "spec.network.subnet_cidr",
                format!("{subnet} is not inside the VNet address space {vnet}"),
            ));
        }
    }
}

fn parse_cidr(v: &mut Vec<FieldViolation>, field: &str, value: &str) -> Option<Ipv4Net> {
    if too_long(v, field, value, MAX_CIDR) {
        return None;
    }
    match value.parse::<Ipv4Net>() {
        Ok(net) if net.trunc() == net => Some(net),
        Ok(net) => {
            v.push(FieldViolation::new(
                field,
                format!(
                    "{} has host bits set; did you mean {}?",
                    clip(value),
                    net.trunc()
                ),
            ));
            None
        }
        Err(_) => {
            v.push(FieldViolation::new(
                field,
                format!(
                    "{} is not an IPv4 CIDR such as \"10.0.0.0/16\"",
                    clip(value)
                ),
            ));
            None
        }
    }
}

fn check_user_brought(v: &mut Vec<FieldViolation>, n: &NetworkSpec) {
    if n.vnet_cidr.is_some() {
        v.push(FieldViolation::new(
            "spec.network.vnet_cidr",
            "must be empty when vnet_id/subnet_id/nsg_id are given",
        ));
    }
    if n.subnet_cidr.is_some() {
        v.push(FieldViolation::new(
            "spec.network.subnet_cidr",
            "must be empty when vnet_id/subnet_id/nsg_id are given",
        ));
    }
    // Each id well formed here; how they fit together (the subnet one of the VNet's, in the
    // cluster's region, the NSG the subnet's) is the preflight's to say, with the others of
    // the user's Azure that stand in the create's way, in one answer.
    required_id(
        v,
        "spec.network.vnet_id",
        n.vnet_id.as_deref(),
        &["virtualNetworks"],
    );
    required_id(
        v,
        "spec.network.subnet_id",
        n.subnet_id.as_deref(),
        &["virtualNetworks", "subnets"],
    );
    required_id(
        v,
        "spec.network.nsg_id",
        n.nsg_id.as_deref(),
        &["networkSecurityGroups"],
    );
}

/// Checks an ARM id of `Microsoft.Network/<types…>` and returns it when well formed.
fn required_id<'a>(
    v: &mut Vec<FieldViolation>,
    field: &str,
    id: Option<&'a str>,
    types: &[&str],
) -> Option<&'a str> {
    let Some(id) = id else {
        v.push(FieldViolation::new(field, "is required when bringing your own network (vnet_id, subnet_id and nsg_id go together)"));
        return None;
    };
    if too_long(v, field, id, MAX_ARM_ID) {
        return None;
    }
    // The id goes into ARM request URLs: nothing that would end or escape a path segment.
    let url_safe = id
        .bytes()
        .all(|b| b.is_ascii_graphic() && !matches!(b, b'?' | b'#' | b'%' | b'\\'))
        && !id.split('/').any(|seg| seg == "." || seg == "..");
    let parts: Vec<&str> = id.trim_start_matches('/').split('/').collect();
    // subscriptions/{s}/resourceGroups/{rg}/providers/Microsoft.Network/{type}/{name}[/{type}/{name}]
    let ok = url_safe
        && parts.len() == 6 + 2 * types.len()
        && parts[0].eq_ignore_ascii_case("subscriptions")
        && !parts[1].is_empty()
        && parts[2].eq_ignore_ascii_case("resourceGroups")
        && !parts[3].is_empty()
        && parts[4].eq_ignore_ascii_case("providers")
        && parts[5].eq_ignore_ascii_case("Microsoft.Network")
        && types
            .iter()
            .enumerate()
            .all(|(i, t)| parts[6 + 2 * i].eq_ignore_ascii_case(t) && !parts[7 + 2 * i].is_empty())
        && id.starts_with('/');
    if ok {
        Some(id)
    } else {
        let example = format!(
            "/subscriptions/<id>/resourceGroups/<rg>/providers/Microsoft.Network/{}",
            types
                .iter()
                .map(|t| format!("{t}/<name>"))
                .collect::<Vec<_>>()
                .join("/")
        );
        v.push(FieldViolation::new(
            field,
            format!("{} is not an ARM id of the form {example}", clip(id)),
        ));
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{NodePoolSpec, example as good};

    fn fields(v: &[FieldViolation]) -> Vec<&str> {
        v.iter().map(|f| f.field.as_str()).collect()
    }

    #[test]
    fn every_oversized_field_is_named_and_never_quoted_whole() {
        let huge = "a".repeat(100_000);
        let mut s = good();
        s.location = huge.clone();
        s.base_domain = huge.clone();
        s.release_image = huge.clone();
        s.node_pools[0].name = huge.clone();
        s.node_pools[0].vm_size = huge.clone();
        s.network.vnet_cidr = Some(huge.clone());
        s.network.subnet_cidr = Some(huge.clone());
        let v = validate_create(&huge, Some(&s));
        for field in [
            "name",
            "spec.location",
            "spec.base_domain",
            "spec.release_image",
            "spec.node_pools[0].name",
            "spec.node_pools[0].vm_size",
            "spec.network.vnet_cidr",
            "spec.network.subnet_cidr",
        ] {
            let found = v.iter().find(|f| f.field == field);
            let found = found.unwrap_or_else(|| panic!("no violation at {field}: {v:?}"));
            assert!(
                found.description.contains("must be at most")
                    && found.description.contains("got 100000"),
                "{found:?}"
            );
        }
        let mut s = good();
        s.network = NetworkSpec {
            vnet_id: Some(format!("/subscriptions/{huge}")),
            subnet_id: Some(huge.clone()),
            nsg_id: Some(huge.clone()),
            ..Default::default()
        };
        let v = validate_create("demo", Some(&s));
        assert_eq!(v.len(), 3, "{v:?}");
        assert!(v.iter().all(|f| f.description.contains("must be at most")));
        let v = validate_subscription(&s, "0000");
        assert!(v.iter().all(|f| f.description.len() < 200), "{v:?}");
    }

    #[test]
    fn a_flood_of_node_pools_is_one_violation_not_one_per_pool() {
        let mut s = good();
        s.node_pools = vec![NodePoolSpec::new("Bad Name", -1, "?"); 100_000];
        let v = validate_create("demo", Some(&s));
        assert_eq!(v[0].field, "spec.node_pools");
        assert!(v[0].description.contains("got 100000"), "{v:?}");
        // The first pools are still looked at, so a user fixes them in the same round trip.
        assert!(v.len() <= 1 + 4 * MAX_NODE_POOLS, "{} violations", v.len());
    }

    #[test]
    fn a_long_cluster_name_is_not_quoted_in_its_pools_violations() {
        let mut s = good();
        s.node_pools[0].name = "p".into();
        let v = validate_create(&"\u{1b}".repeat(100_000), Some(&s));
        assert_eq!(fields(&v), ["name"], "{v:?}");
        assert!(v.iter().all(|f| f.description.len() < 200), "{v:?}");
    }

    #[test]
    fn ids_and_images_that_would_escape_a_url_or_a_terminal_are_refused() {
        let mut s = good();
        s.release_image = "quay.io/ocp\u{1b}[2J:4.21.0".into();
        let v = validate_create("demo", Some(&s));
        assert_eq!(fields(&v), ["spec.release_image"]);
        let vnet =
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v";
        let mut s = good();
        s.network = NetworkSpec {
            vnet_id: Some(format!("{vnet}?api-version=1")),
            subnet_id: Some(format!("{vnet}/subnets/../../x")),
            nsg_id: Some(
                "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/n%2F"
                    .into(),
            ),
            ..Default::default()
        };
        let v = validate_create("demo", Some(&s));
        assert_eq!(
            fields(&v),
            [
                "spec.network.vnet_id",
                "spec.network.subnet_id",
                "spec.network.nsg_id"
            ],
            "{v:?}"
        );
    }

    #[test]
    fn long_values_are_cut_with_their_length_when_quoted() {
        assert_eq!(clip("eastus"), "\"eastus\"");
        let cut = clip(&"é".repeat(5_000));
        assert!(cut.ends_with("... (5000 characters)"), "{cut}");
        assert!(cut.len() < 150, "{cut}");
    }

    #[test]
    fn a_good_request_has_no_violations() {
        assert_eq!(validate_create("demo", Some(&good())), vec![]);
    }

    #[test]
    fn a_forty_character_name_fits_with_the_longest_pool_name() {
        let name = "a".repeat(MAX_CLUSTER_NAME);
        let mut s = good();
        s.node_pools[0].name = "p".repeat(MAX_NODE_POOL_NAME);
        assert_eq!(validate_create(&name, Some(&s)), vec![]);
    }

    #[test]
    fn a_release_by_digest_must_state_its_version() {
        let mut s = good();
        s.release_image = "quay.io/openshift-release-dev/ocp-release@sha256:abcd".into();
        let v = validate_create("demo", Some(&s));
        assert_eq!(fields(&v), ["spec.release_image"]);
        assert!(
            v[0].description.contains("does not say its version"),
            "{v:?}"
        );
        s.release_image =
            "quay.io/openshift-release-dev/ocp-release:4.21.0-multi@sha256:abcd".into();
        assert_eq!(validate_create("demo", Some(&s)), vec![]);
    }

    #[test]
    fn every_violation_is_reported_with_its_path() {
        let mut s = good();
        s.location = String::new();
        s.base_domain = "nodots".into();
        s.release_image = "no tag".into();
        s.node_pools.push(NodePoolSpec::new("workers", 500, "huge"));
        s.network.vnet_cidr = Some("10.0.0.0/33".into());
        s.network.subnet_cidr = Some("192.168.0.0/24".into());
        let v = validate_create("Bad_Name", Some(&s));
        assert_eq!(
            fields(&v),
            vec![
                "name",
                "spec.location",
                "spec.base_domain",
                "spec.release_image",
                "spec.node_pools[1].replicas",
                "spec.node_pools[1].vm_size",
                "spec.node_pools[1].name",
                "spec.node_pools",
                "spec.network.vnet_cidr",
            ]
        );
    }

    #[test]
    fn subnet_must_nest_in_vnet() {
        let mut s = good();
        s.network.subnet_cidr = Some("10.1.0.0/24".into());
        let v = validate_create("demo", Some(&s));
        assert_eq!(fields(&v), vec!["spec.network.subnet_cidr"]);
        assert!(v[0].description.contains("not inside"));
    }

    #[test]
    fn host_bits_are_refused_with_a_hint() {
        let mut s = good();
        s.network.vnet_cidr = Some("10.0.0.1/16".into());
        let v = validate_create("demo", Some(&s));
        assert!(v[0].description.contains("10.0.0.0/16"));
    }

    #[test]
    fn user_brought_network_needs_all_three_ids() {
        let mut s = good();
        s.network.vnet_id = Some(
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v"
                .into(),
        );
        // A subnet of another VNet is well formed: that it does not fit is the preflight's
        // to say, with the user's other Azure problems (services/network).
        s.network.subnet_id = Some("/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/other/subnets/x".into());
        let v = validate_create("demo", Some(&s));
        assert_eq!(fields(&v), vec!["spec.network.nsg_id"]);
    }

    #[test]
    fn user_brought_network_must_be_in_the_tenants_subscription() {
        let mut s = good();
        s.network.vnet_id = Some(
            "/subscriptions/other/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v"
                .into(),
        );
        s.network.nsg_id = Some("/subscriptions/MINE/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/n".into());
        assert_eq!(
            fields(&validate_subscription(&s, "mine")),
            vec!["spec.network.vnet_id"]
        );
        assert!(validate_subscription(&good(), "mine").is_empty());
    }

    #[test]
    fn missing_spec_is_reported() {
        assert_eq!(fields(&validate_create("", None)), vec!["name", "spec"]);
    }
}
