#!/usr/bin/env bash
# Sets up (idempotently), starts the whole system locally with `hypersaga dev`, and runs a demo
# cluster's life through the CLI: an add-on put in the catalog → create (showing each step,
# the add-on rolled out by Package Operator) → ready → a second node pool, scaled → the control
# plane and then a pool upgraded → delete → deleted.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
source scripts/env.sh

echo "==> building hypersaga"
cargo build --quiet -p hypersaga
hs=target/debug/hypersaga
state=.hypersaga
mkdir -p "$state"
# A previous run's endpoints file would be taken for this run's before `dev` wipes it.
rm -f "$state/endpoints.json"

echo "==> starting the local system (hypersaga dev)"
"$hs" dev --state-dir "$state" >"$state/dev.log" 2>&1 &
dev=$!
trap 'kill -TERM $dev 2>/dev/null; wait $dev 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  [ -f "$state/endpoints.json" ] && break
  kill -0 $dev 2>/dev/null || { cat "$state/dev.log"; exit 1; }
  sleep 0.2
done
[ -f "$state/endpoints.json" ] || { echo "hypersaga dev did not start"; cat "$state/dev.log"; exit 1; }
cat "$state/dev.log"
export HYPERSAGA_ENDPOINTS="$state/endpoints.json"

echo; echo "==> hypersaga tenant list (the platform's admin: tenants onboarded with no secret of theirs)"
"$hs" tenant list
echo; echo "==> hypersaga addon put --file examples/addons/logging.yaml (an add-on in Package Operator's phases)"
"$hs" addon put --file examples/addons/logging.yaml
echo; echo "==> hypersaga cluster create demo --label env=demo --addon logging --dry-run (what it would make and what is in its way: the plan's last lines)"
"$hs" cluster create demo --node-pool-replicas 2 --label env=demo --addon logging --dry-run | tail -n 8
echo; echo "==> hypersaga cluster create demo --label env=demo --addon logging --wait"
"$hs" cluster create demo --node-pool-replicas 2 --label env=demo --addon logging --wait
echo; echo "==> hypersaga cluster list"
"$hs" cluster list
echo; echo "==> hypersaga management-cluster list (where its control plane was placed)"
"$hs" management-cluster list
next=quay.io/openshift-release-dev/ocp-release:4.22.0-multi
echo; echo "==> hypersaga nodepool create demo gpu --vm-size Standard_D8s_v5 --replicas 1 --wait"
"$hs" nodepool create demo gpu --vm-size Standard_D8s_v5 --replicas 1 --wait
echo; echo "==> hypersaga nodepool scale demo gpu --replicas 2 --wait"
"$hs" nodepool scale demo gpu --replicas 2 --wait
echo; echo "==> hypersaga cluster upgrade demo --release-image $next --wait"
"$hs" cluster upgrade demo --release-image "$next" --wait
echo; echo "==> hypersaga nodepool update demo workers --release-image $next --wait (every VM replaced, one at a time)"
"$hs" nodepool update demo workers --release-image "$next" --wait
echo; echo "==> hypersaga nodepool list demo"
"$hs" nodepool list demo
echo; echo "==> hypersaga emulator requests (what was asked of Azure)"
"$hs" emulator requests
echo; echo "==> hypersaga cluster delete demo --wait"
"$hs" cluster delete demo --wait
echo; echo "==> hypersaga sweep --dry-run (the platform's admin: anything hypersaga made that no live cluster owns)"
"$hs" sweep --dry-run
echo; echo "==> hypersaga audit tail --cluster demo --from-start (first 12 of the public audit events)"
"$hs" audit tail --cluster demo --from-start --count 12
echo; echo "demo finished: the cluster was planned, created with its add-on, became ready, got a second node pool, was upgraded, and was deleted, leaving nothing behind."
