//! The identity service.
#![forbid(unsafe_code)]
