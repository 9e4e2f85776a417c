//! The coordinator service.
#![forbid(unsafe_code)]
