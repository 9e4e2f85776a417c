//! The gateway service.
#![forbid(unsafe_code)]
