//! The admin API's management clusters: listed with their clusters and free capacity,
//! cordoned and uncordoned (`hypersaga-placement` keeps them).

use hypersaga_api::v1 as pb;
use hypersaga_config::AdminConfig;
use hypersaga_placement::{Cordon, Error, View};
use time::OffsetDateTime;
use tonic::Status;
use tracing::info;

use super::{Admin, actor_of};
use crate::convert::ts as timestamp;
use crate::service::internal;
use crate::service::limits::Checks;

impl Admin {
    pub(super) async fn management_clusters(&self) -> Result<Vec<pb::ManagementCluster>, Status> {
        let views = self
            .gateway
            .placement
            .list()
            .await
            .map_err(internal("list management clusters"))?;
        Ok(views.iter().map(to_pb).collect())
    }

    /// Cordons (with a reason) or uncordons management cluster `name`.
    pub(super) async fn cordon(
        &self,
        admin: &AdminConfig,
        name: &str,
        reason: Option<String>,
    ) -> Result<pb::ManagementCluster, Status> {
        if let Some(r) = &reason
            && r.trim().is_empty()
        {
            let mut checks = Checks::new();
            checks.push("reason", "required: say why it takes nothing new");
            checks.done()?;
        }
        let cordon = reason.map(|reason| Cordon {
            reason,
            by: actor_of(admin),
            at: OffsetDateTime::now_utc(),
        });
        let cordoned = cordon.is_some();
        let view = self
            .gateway
            .placement
            .set_cordon(name, cordon)
            .await
            .map_err(|e| match e {
                Error::NotFound(_) => {
                    Status::not_found(format!("management cluster {name:?} not found"))
                }
                other => internal("cordon")(other),
            })?;
        info!(management_cluster = name, cordoned, admin = %admin.name, "management cluster cordon changed");
        Ok(to_pb(&view))
    }
}

fn to_pb(view: &View) -> pb::ManagementCluster {
    let r = &view.record;
    let mut out = pb::ManagementCluster {
        name: r.name.clone(),
        region: r.region.clone(),
        capacity: r.capacity,
        clusters: r.hosted.keys().map(|k| k.replacen('.', "/", 1)).collect(),
        free: view.free(),
        cordoned: r.cordoned.is_some(),
        ..Default::default()
    };
    if let Some(c) = &r.cordoned {
        out.cordon_reason = c.reason.clone();
        out.cordoned_by = c.by.clone();
        out.cordoned_at = Some(timestamp(c.at));
    }
    out
}
