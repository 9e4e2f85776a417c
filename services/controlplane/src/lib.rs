//! The controlplane service.
#![forbid(unsafe_code)]
