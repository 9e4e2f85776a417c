//! Request accounting for the admin API: counts per (method, type, status), ARM requests and
//! 429s per subscription, and a ring of recent requests, so tests can assert "exactly one PUT
//! reached the zone" and load tests can compute the share of throttled requests.

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
    /// The subscription an ARM request named (as sent); `None` for Entra and for paths that
    /// name none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription: Option<String>,
}

/// ARM requests that named one subscription, and how many of them were answered 429 — the
/// numbers a load test needs for "share of throttled requests".
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct SubscriptionRequests {
    /// Lower-cased subscription id.
    pub subscription: String,
    /// ARM requests naming it, whatever the answer.
    pub requests: u64,
    /// Of which answered 429 (by the throttle or by an injected fault).
    pub throttled: u64,
}

impl SubscriptionRequests {
    /// `throttled / requests`, 0 when there were no requests.
    pub fn throttled_share(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.throttled as f64 / self.requests as f64
        }
    }
}

/// What `GET /requests` answers.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct RequestStats {
    pub counts: Vec<RequestCount>,
    pub recent: Vec<RequestRecord>,
    /// Per subscription, sorted by id. Defaulted so answers of older emulators still parse.
    #[serde(default)]
    pub subscriptions: Vec<SubscriptionRequests>,
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

    /// The row of one subscription (case-insensitive); zeros when it saw no request.
    pub fn subscription(&self, sub: &str) -> SubscriptionRequests {
        self.subscriptions
            .iter()
            .find(|s| s.subscription.eq_ignore_ascii_case(sub))
            .cloned()
            .unwrap_or_else(|| SubscriptionRequests {
                subscription: sub.to_ascii_lowercase(),
                ..SubscriptionRequests::default()
            })
    }

    /// ARM requests over all subscriptions.
    pub fn arm_requests(&self) -> u64 {
        self.subscriptions.iter().map(|s| s.requests).sum()
    }

    /// ARM requests answered 429 over all subscriptions.
    pub fn arm_throttled(&self) -> u64 {
        self.subscriptions.iter().map(|s| s.throttled).sum()
    }

    /// Share of ARM requests answered 429 over all subscriptions, 0 when there were none.
    pub fn throttled_share(&self) -> f64 {
        SubscriptionRequests {
            subscription: String::new(),
            requests: self.arm_requests(),
            throttled: self.arm_throttled(),
        }
        .throttled_share()
    }
}

pub struct RequestLog {
    counts: BTreeMap<(String, String, u16), u64>,
    /// Lower-cased subscription → (requests, 429s).
    subscriptions: BTreeMap<String, (u64, u64)>,
    recent: VecDeque<RequestRecord>,
    cap: usize,
}

impl RequestLog {
    pub fn new(cap: usize) -> Self {
        Self {
            counts: BTreeMap::new(),
            subscriptions: BTreeMap::new(),
            recent: VecDeque::new(),
            cap,
        }
    }

    pub fn clear(&mut self) {
        self.counts.clear();
        self.subscriptions.clear();
        self.recent.clear();
    }

    pub fn record(&mut self, rec: RequestRecord) {
        *self
            .counts
            .entry((rec.method.clone(), rec.resource_type.clone(), rec.status))
            .or_default() += 1;
        if let Some(sub) = &rec.subscription {
            let (requests, throttled) = self
                .subscriptions
                .entry(sub.to_ascii_lowercase())
                .or_default();
            *requests += 1;
            if rec.status == 429 {
                *throttled += 1;
            }
        }
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
            subscriptions: self
                .subscriptions
                .iter()
                .map(|(s, (requests, throttled))| SubscriptionRequests {
                    subscription: s.clone(),
                    requests: *requests,
                    throttled: *throttled,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(sub: Option<&str>, status: u16) -> RequestRecord {
        RequestRecord {
            method: "GET".into(),
            path: "/".into(),
            api_version: None,
            resource_type: "Microsoft.Resources/resourceGroups".into(),
            status,
            time: "2024-01-01T00:00:00Z".into(),
            subscription: sub.map(str::to_owned),
        }
    }

    #[test]
    fn counts_requests_and_429s_per_subscription() {
        let mut log = RequestLog::new(2);
        for status in [200, 429, 429, 404] {
            log.record(rec(Some("SUB-A"), status));
        }
        log.record(rec(Some("sub-a"), 200));
        log.record(rec(Some("sub-b"), 429));
        log.record(rec(None, 429));
        let stats = log.stats();
        assert_eq!(
            stats.subscriptions,
            vec![
                SubscriptionRequests {
                    subscription: "sub-a".into(),
                    requests: 5,
                    throttled: 2
                },
                SubscriptionRequests {
                    subscription: "sub-b".into(),
                    requests: 1,
                    throttled: 1
                },
            ]
        );
        assert_eq!(stats.subscription("SUB-A").throttled_share(), 0.4);
        assert_eq!(stats.subscription("sub-c").requests, 0);
        assert_eq!(stats.subscription("sub-c").throttled_share(), 0.0);
        assert_eq!((stats.arm_requests(), stats.arm_throttled()), (6, 3));
        assert_eq!(stats.throttled_share(), 0.5);
        // The ring is bounded, the counters are not.
        assert_eq!(stats.recent.len(), 2);
        log.clear();
        assert!(log.stats().subscriptions.is_empty());
    }

    #[test]
    fn answers_without_the_new_fields_still_parse() {
        let old = serde_json::json!({
            "counts": [{"method": "GET", "resource_type": "x", "status": 200, "count": 1}],
            "recent": [{"method": "GET", "path": "/", "resource_type": "x", "status": 200,
                        "time": "2024-01-01T00:00:00Z"}],
        });
        let stats: RequestStats = serde_json::from_value(old).expect("old answer");
        assert!(stats.subscriptions.is_empty());
        assert_eq!(stats.recent[0].subscription, None);
        assert_eq!(stats.count("get", "X"), 1);
    }
}
