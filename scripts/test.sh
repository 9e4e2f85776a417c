#!/usr/bin/env bash
# Sets up (idempotently) and runs every test: unit, integration (real Azurite, real emulators)
# and end-to-end (the whole system on a real nats-server, one isolated system per test).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
source scripts/env.sh
# Formatting is part of the contract: a change that is not `cargo fmt`-clean fails here first.
cargo fmt --all --check
# So are lints: any clippy warning, in any crate or test, fails the run.
cargo clippy --workspace --all-targets --locked -- -D warnings
# The production image's build: the binary without the dev tools (emulators, dev, bench).
cargo check -p hypersaga --no-default-features
cargo nextest run --workspace --no-fail-fast "$@"
