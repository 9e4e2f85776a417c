//! The sweeper's answer as the CLI prints it (`hypersaga sweep`): a table of the leftovers,
//! the operations removing them, and the document behind `-o json|yaml`.

use hypersaga_api::v1 as pb;
use serde_json::{Value, json};

use super::{Table, enum_name, operation_json};

/// A leftover as a document.
pub fn leftover_json(l: &pb::Leftover) -> Value {
    json!({
        "tenant": l.tenant,
        "cluster": l.cluster,
        "reason": l.reason.to_lowercase(),
        "detail": l.detail,
        "target": l.target,
        "type": l.r#type,
        "name": l.name,
        "id": l.id,
        "location": l.location,
        "made_by": l.made_by,
        "removable": l.removable,
    })
}

/// The whole answer as a document.
pub fn sweep_json(r: &pb::SweepResponse) -> Value {
    json!({
        "leftovers": r.leftovers.iter().map(leftover_json).collect::<Vec<_>>(),
        "operations": r.operations.iter().map(operation_json).collect::<Vec<_>>(),
        "unlisted": r.unlisted,
    })
}

/// One row per leftover; `wide` adds its id, the operation that made it, whether a sweep
/// removes it and what its cluster's record says.
pub fn leftovers_table(items: &[pb::Leftover], wide: bool) -> Table {
    let mut headers = vec![
        "TENANT", "CLUSTER", "REASON", "TARGET", "TYPE", "NAME", "LOCATION",
    ];
    if wide {
        headers.extend(["ID", "MADE-BY", "REMOVABLE", "DETAIL"]);
    }
    let mut table = Table::new(headers);
    for l in items {
        let mut row = vec![
            l.tenant.clone(),
            l.cluster.clone(),
            enum_name(&l.reason, ""),
            l.target.clone(),
            l.r#type.clone(),
            l.name.clone(),
            dash(&l.location),
        ];
        if wide {
            row.extend([
                l.id.clone(),
                dash(&l.made_by),
                if l.removable { "yes" } else { "no" }.to_owned(),
                dash(&l.detail),
            ]);
        }
        table.row(row);
    }
    table
}

/// What the operations are, for people: one line each.
pub fn operations_text(r: &pb::SweepResponse) -> Vec<String> {
    r.operations
        .iter()
        .map(|o| {
            format!(
                "sweeping cluster {}: operation/{} (follow it with `hypersaga operation watch {} --tenant TENANT`)",
                o.cluster, o.id, o.id
            )
        })
        .collect()
}

fn dash(s: &str) -> String {
    if s.is_empty() {
        "-".to_owned()
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leftover_is_a_row_with_why_and_where() {
        let l = pb::Leftover {
            tenant: "acme".into(),
            cluster: "leaky".into(),
            reason: "CLUSTER_FAILED".into(),
            target: "azure".into(),
            r#type: "Microsoft.Network/virtualNetworks".into(),
            name: "leaky-vnet".into(),
            id: "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/leaky-vnet".into(),
            location: "eastus".into(),
            removable: true,
            ..Default::default()
        };
        let text = leftovers_table(std::slice::from_ref(&l), false).render(true);
        assert!(text.contains("cluster_failed"), "{text}");
        assert!(
            text.contains("leaky-vnet") && text.contains("eastus"),
            "{text}"
        );
        let wide = leftovers_table(std::slice::from_ref(&l), true).render(true);
        assert!(wide.contains("REMOVABLE") && wide.contains("yes"), "{wide}");
        assert_eq!(leftover_json(&l)["reason"], "cluster_failed");
    }
}
