//! The nodepool service.
#![forbid(unsafe_code)]
