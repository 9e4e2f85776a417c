//! `ListClusters`: one page of the caller's clusters, in name order, read from the tenant's
//! keys only.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hypersaga_api::v1 as pb;
use hypersaga_config::TenantConfig;
use hypersaga_model::{ClusterPhase, ClusterRecord};
use tonic::Status;

use super::limits::Checks;
use super::operator::{page_size, page_token};
use super::{Gateway, tenant_kv, valid_key_part};
use crate::convert::cluster_to_pb;

impl Gateway {
    /// One page of the tenant's clusters (deleted ones left out), by name.
    pub(super) async fn list_clusters_page(
        &self,
        tenant: &TenantConfig,
        req: pb::ListClustersRequest,
    ) -> Result<pb::ListClustersResponse, Status> {
        let mut checks = Checks::new();
        checks.page_token("page_token", &req.page_token);
        let page_size = page_size(req.page_size, &mut checks);
        let after = page_token(
            &req.page_token,
            NameCursor::decode,
            "ListClustersResponse",
            &mut checks,
        );
        checks.done()?;
        // By name already (a BTreeMap); everything up to and including the cursor was on
        // earlier pages, so a cluster created or deleted meanwhile neither repeats nor shifts
        // the others.
        let records = self.tenant_clusters(tenant).await?;
        let mut rest = records
            .iter()
            .filter(|(name, _)| after.as_ref().is_none_or(|a| name.as_str() > a.0.as_str()))
            .filter(|(_, r)| r.value.phase != ClusterPhase::Deleted)
            .peekable();
        let mut clusters = Vec::new();
        while clusters.len() < page_size {
            let Some((_, r)) = rest.next() else { break };
            clusters.push(cluster_to_pb(&r.value, r.revision));
        }
        let next_page_token = match (clusters.last(), rest.peek()) {
            (Some(last), Some(_)) => NameCursor(last.name.clone()).encode(),
            _ => String::new(),
        };
        Ok(pb::ListClustersResponse {
            clusters,
            next_page_token,
        })
    }

    /// Every cluster record of `tenant` (deleted ones included), by name, with its revision.
    pub(super) async fn tenant_clusters(
        &self,
        tenant: &TenantConfig,
    ) -> Result<std::collections::BTreeMap<String, tenant_kv::TenantRecord<ClusterRecord>>, Status>
    {
        tenant_kv::read(&self.bus, &self.clusters, &tenant.id, "list clusters").await
    }
}

/// The last cluster name of a page; `page_token` is its opaque encoding.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct NameCursor(pub(super) String);

impl NameCursor {
    /// Token layout version, so the encoding can change without misreading old tokens.
    const VERSION: &str = "1";

    pub(super) fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(format!("{}:{}", Self::VERSION, self.0))
    }

    pub(super) fn decode(token: &str) -> Option<Self> {
        let bytes = URL_SAFE_NO_PAD.decode(token).ok()?;
        let text = String::from_utf8(bytes).ok()?;
        let name = text.strip_prefix(Self::VERSION)?.strip_prefix(':')?;
        valid_key_part(name).then(|| Self(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_cursor_survives_its_token_and_bad_tokens_are_refused() {
        let c = NameCursor("demo-7".into());
        assert_eq!(NameCursor::decode(&c.encode()), Some(c));
        for bad in [
            "",
            "not base64!",
            &URL_SAFE_NO_PAD.encode("2:demo"),
            &URL_SAFE_NO_PAD.encode("1:"),
            &URL_SAFE_NO_PAD.encode("1:a.b"),
        ] {
            assert_eq!(NameCursor::decode(bad), None, "{bad:?}");
        }
    }
}
