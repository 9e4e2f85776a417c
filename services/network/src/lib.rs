//! The network service.
#![forbid(unsafe_code)]
