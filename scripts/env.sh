# Sourced by the other scripts (and by you): puts the locally installed tools — nats-server,
# Azurite — and the locally built `hypersaga` first on PATH.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="$here/.venv/bin:$here/node_modules/.bin:$here/target/debug:$PATH"
