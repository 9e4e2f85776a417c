//! One ARM client for every service: azure_core pipeline, credentials, LRO polling, error classification.
#![forbid(unsafe_code)]
