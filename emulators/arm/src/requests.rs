//! Request accounting for the admin API: counts per (method, type, status) and a ring of
//! recent requests, so tests can assert "exactly one PUT reached the zone".

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

/// One counter row.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct RequestCount {
    pub method: String,
    pub resource_type: String,
    pub status: u16,
    pub count: u64,
}

/// One remembered request.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct RequestRecord {
    pub method: String,
    pub path: String,
    /// The `api-version` the caller sent, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    pub resource_type: String,
    pub status: u16,
    /// RFC 3339.
    pub time: String,
}

/// What `GET /requests` answers.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct RequestStats {
    pub counts: Vec<RequestCount>,
    pub recent: Vec<RequestRecord>,
}

impl RequestStats {
    /// Sum of counts matching method and type (case-insensitive), any status.
    pub fn count(&self, method: &str, resource_type: &str) -> u64 {
        self.counts
            .iter()
            .filter(|c| {
                c.method.eq_ignore_ascii_case(method)
                    && c.resource_type.eq_ignore_ascii_case(resource_type)
            })
            .map(|c| c.count)
            .sum()
    }
}

pub struct RequestLog {
    counts: BTreeMap<(String, String, u16), u64>,
    recent: VecDeque<RequestRecord>,
    cap: usize,
}

impl RequestLog {
    pub fn new(cap: usize) -> Self {
        Self {
            counts: BTreeMap::new(),
            recent: VecDeque::new(),
            cap,
        }
    }

    pub fn clear(&mut self) {
        self.counts.clear();
        self.recent.clear();
    }

    pub fn record(&mut self, rec: RequestRecord) {
        *self
            .counts
            .entry((rec.method.clone(), rec.resource_type.clone(), rec.status))
            .or_default() += 1;
        if self.cap > 0 {
            if self.recent.len() == self.cap {
                self.recent.pop_front();
            }
            self.recent.push_back(rec);
        }
    }

    pub fn stats(&self) -> RequestStats {
        RequestStats {
            counts: self
                .counts
                .iter()
                .map(|((m, t, s), c)| RequestCount {
                    method: m.clone(),
                    resource_type: t.clone(),
                    status: *s,
                    count: *c,
                })
                .collect(),
            recent: self.recent.iter().cloned().collect(),
        }
    }
}
