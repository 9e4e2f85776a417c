//! The step-worker runtime every service shares: consume commands, run a handler, publish events.
#![forbid(unsafe_code)]
