//! A management cluster as the bus keeps it (`hcp_management`, key = its name).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

pub const MANAGEMENT_RECORD_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ManagementRecord {
    pub v: u32,
    pub name: String,
    /// The region it serves; empty: every region (the implicit `default`).
    pub region: String,
    /// Hosted control planes it may carry; 0: no limit (and placements are not counted).
    pub capacity: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cordoned: Option<Cordon>,
    /// The clusters placed on it, by `<tenant>.<name>`.
    #[serde(default)]
    pub hosted: BTreeMap<String, Placed>,
}

/// Why, by whom and since when a management cluster takes nothing new.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cordon {
    pub reason: String,
    pub by: String,
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
}

/// One placement: which cluster (its uid: a name made again is another cluster) and when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placed {
    pub uid: String,
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
}

impl ManagementRecord {
    pub fn new(name: &str, region: &str, capacity: u32) -> Self {
        Self {
            v: MANAGEMENT_RECORD_VERSION,
            name: name.to_owned(),
            region: region.to_owned(),
            capacity,
            cordoned: None,
            hosted: BTreeMap::new(),
        }
    }

    /// Whether it hosts clusters of `region` (Azure region names compare case-insensitively).
    pub fn serves(&self, region: &str) -> bool {
        self.region.is_empty() || self.region.eq_ignore_ascii_case(region)
    }
}
