//! Starting and stopping external processes: nats-server and Azurite, on free ports.
#![forbid(unsafe_code)]
