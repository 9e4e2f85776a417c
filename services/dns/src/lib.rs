//! The dns service.
#![forbid(unsafe_code)]
