//! The saga state machine: DAG of steps, transitions, retries and compensation, as pure functions.
#![forbid(unsafe_code)]
