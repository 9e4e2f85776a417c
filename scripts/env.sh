# Sourced by the other scripts: puts the locally installed tools first on PATH.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="$here/.venv/bin:$here/node_modules/.bin:$PATH"
