//! End-to-end tests: each starts the real system (`hypersaga dev --profile fast`: nats-server,
//! Azurite, both emulators, every service as its own process) in a temporary directory and acts
//! through the public API, as a user would.

mod browser;
mod otlp;
mod support;

mod addons;
mod audit_and_lifecycle;
mod azure_sdks;
mod cli;
mod cli_addons;
mod cli_rollouts;
mod cli_tenants;
mod closed_bus;
mod crash;
mod day2;
mod dead_letters;
mod fault_matrix;
mod faults;
mod fleet;
mod hard_edges;
mod live_view;
mod observability;
mod operator;
mod placement;
mod rollouts;
mod safety_net;
mod supersede;
mod tenants_and_validation;
mod tenants_live;
mod workers;
