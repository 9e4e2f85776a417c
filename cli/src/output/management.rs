//! Management clusters as the CLI prints them (`hypersaga management-cluster …`).

use hypersaga_api::v1 as pb;
use serde_json::{Value, json};

use super::{Table, time};

/// `management-cluster/<name>`.
pub fn management_cluster_name(name: &str) -> String {
    format!("management-cluster/{name}")
}

/// Its room as people read it: `2`, or `unlimited`.
fn free_text(m: &pb::ManagementCluster) -> String {
    m.free
        .map_or_else(|| "unlimited".to_owned(), |f| f.to_string())
}

fn region_text(m: &pb::ManagementCluster) -> String {
    if m.region.is_empty() {
        "any".to_owned()
    } else {
        m.region.clone()
    }
}

pub fn management_cluster_json(m: &pb::ManagementCluster) -> Value {
    json!({
        "name": m.name,
        "region": m.region,
        "capacity": m.capacity,
        "clusters": m.clusters,
        "free": m.free,
        "cordoned": m.cordoned,
        "cordon_reason": m.cordon_reason,
        "cordoned_by": m.cordoned_by,
        "cordoned_at": time(&m.cordoned_at),
    })
}

/// NAME, REGION, CLUSTERS, CAPACITY, FREE, STATE (and why a cordoned one is); `wide` lists
/// the clusters.
pub fn management_clusters_table(items: &[pb::ManagementCluster], wide: bool) -> Table {
    let mut headers = vec![
        "NAME", "REGION", "CLUSTERS", "CAPACITY", "FREE", "STATE", "REASON",
    ];
    if wide {
        headers.push("HOSTS");
    }
    let mut table = Table::new(headers);
    for m in items {
        let mut row = vec![
            m.name.clone(),
            region_text(m),
            // Without a capacity, placements are not counted (no record for every create to
            // contend on): say so rather than show 0.
            if m.capacity == 0 {
                "-".to_owned()
            } else {
                m.clusters.len().to_string()
            },
            if m.capacity == 0 {
                "unlimited".to_owned()
            } else {
                m.capacity.to_string()
            },
            free_text(m),
            if m.cordoned { "cordoned" } else { "open" }.to_owned(),
            m.cordon_reason.clone(),
        ];
        if wide {
            row.push(m.clusters.join(","));
        }
        table.row(row);
    }
    table
}

/// One management cluster in detail.
pub fn management_cluster_text(m: &pb::ManagementCluster) -> String {
    let mut out = format!(
        "Name:      {}\nRegion:    {}\nCapacity:  {}\nFree:      {}\n",
        m.name,
        region_text(m),
        if m.capacity == 0 {
            "unlimited".to_owned()
        } else {
            m.capacity.to_string()
        },
        free_text(m)
    );
    if m.cordoned {
        out.push_str(&format!(
            "Cordoned:  {} (by {}, since {})\n",
            m.cordon_reason,
            m.cordoned_by,
            super::time_text(&m.cordoned_at)
        ));
    }
    out.push_str(&format!("Clusters:  {}\n", m.clusters.len()));
    for c in &m.clusters {
        out.push_str(&format!("  {c}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_and_a_cordoned_management_cluster_read_as_such() {
        let full = pb::ManagementCluster {
            name: "mc-1".into(),
            region: "eastus".into(),
            capacity: 2,
            clusters: vec!["acme/a".into(), "acme/b".into()],
            free: Some(0),
            ..Default::default()
        };
        let cordoned = pb::ManagementCluster {
            name: "mc-2".into(),
            cordoned: true,
            cordon_reason: "kernel upgrade".into(),
            ..Default::default()
        };
        let t = management_clusters_table(&[full.clone(), cordoned.clone()], true).render(true);
        assert!(t.contains("mc-1") && t.contains("acme/a,acme/b"), "{t}");
        assert!(
            t.contains("cordoned") && t.contains("kernel upgrade"),
            "{t}"
        );
        assert!(t.contains("unlimited") && t.contains("any"), "{t}");
        assert!(management_cluster_text(&full).contains("  acme/b"));
        assert_eq!(management_cluster_json(&cordoned)["free"], Value::Null);
    }
}
