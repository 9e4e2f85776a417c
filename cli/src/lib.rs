//! The `hypersaga` command line, as a library so the end-to-end tests can share its pieces
//! (the endpoints file, the authenticated client).
#![forbid(unsafe_code)]

pub mod audit_feed;
#[cfg(feature = "dev-tools")]
pub mod bench;
pub mod cli;
pub mod client;
pub mod commands;
pub mod console;
#[cfg(feature = "dev-tools")]
pub mod dev;
pub mod endpoints;
pub mod exit;
pub mod output;
pub mod serve;
