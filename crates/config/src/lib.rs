//! Typed, layered configuration shared by every role.
#![forbid(unsafe_code)]
