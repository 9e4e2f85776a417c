//! The part of a saga record a step worker reads.

use serde::Deserialize;

use crate::saga::StepRecord;

/// A saga record's steps, read from the whole record's JSON (the rest is ignored): what a
/// worker checks a command's fence against before and while it runs it. The record is written
/// by the coordinator alone; this is the same [`StepRecord`], not a copy of its fields, so the
/// two cannot drift apart.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct StepsView {
    pub steps: Vec<StepRecord>,
}

impl StepsView {
    /// Reads the steps of a saga record as stored in KV.
    pub fn from_record(json: &[u8]) -> serde_json::Result<Self> {
        serde_json::from_slice(json)
    }

    /// The step with wire id `id`.
    pub fn step(&self, id: &str) -> Option<&StepRecord> {
        self.steps.iter().find(|s| s.id == id)
    }
}
