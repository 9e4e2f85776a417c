#!/usr/bin/env bash
# Prints the Secrets the kustomize overlays name, as YAML for `kubectl apply -f -`: the NATS
# server's authorization (and, if given, its certificate), and one Secret per hypersaga role
# holding that role's nkey seed and only the other secrets the role reads. Nothing is sent to
# a cluster; nothing secret is put on a command line.
#
#   hypersaga bus credentials --out bus
#   deploy/kustomize/create-secrets.sh \
#     --namespace hypersaga \
#     --config deploy/kustomize/overlays/production/config.toml \
#     --bus bus \
#     --federation-key federation-key.pem \
#     --blob-account-key blob-account-key \
#     --signing-keys-account-key signing-keys-account-key \
#     --pull-secret pull-secret.json \
#     --gateway-cert gateway.crt --gateway-key gateway.key \
#     [--client-secrets client-secrets] \
#     [--nats-cert nats.crt --nats-key nats.key --nats-ca nats-ca.crt] \
#     [--kubeconfig mgmt.kubeconfig] \
#   | kubectl apply -f -
#
# --config is the overlay's config.toml (the ConfigMap hypersaga-config). --bus is what
# `hypersaga bus credentials` wrote: each role's seed goes to its own Secret, and the gateway's
# also holds callout.nk and callout-issuer.nk (it answers the server's auth callout for the
# tenants' audit readers); audit.nk stays out of the cluster. --federation-key is the RSA key
# hypersaga's own OIDC issuer signs client assertions with (federation.signing_key_file),
# given to the roles that call Azure as a tenant: identity, network, dns, nodepool. Those four
# read their configuration from their Secret's config.json: --config as the roles load it
# (`hypersaga serve … --dump-config`), with client secrets filled in only for the tenants
# --client-secrets names (a directory with one file per tenant declared in --config, named by
# its id, holding its service principal's client secret; every role warns about each at
# start: onboard tenants with `hypersaga tenant add` and workload identity federation
# instead). Without --client-secrets no Secret holds any. So after changing config.toml, run
# this again and apply its output before the overlay. --blob-account-key is the key of the
# issuers' storage account (identity only); --signing-keys-account-key that of the signing
# keys' own account (identity and controlplane). Needs hypersaga ($HYPERSAGA, else on PATH),
# jq and kubectl. See deploy/README.md.
set -euo pipefail

usage() { sed -n '2,37p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "create-secrets: $*" >&2; exit 1; }

namespace="" config="" bus="" federation_key="" client_secrets="" blob_key="" signing_keys_key="" pull_secret=""
gateway_cert="" gateway_key="" nats_cert="" nats_key="" nats_ca="" kubeconfig=""
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case "$1" in
    --namespace) namespace=$2 ;;
    --config) config=$2 ;;
    --bus) bus=$2 ;;
    --federation-key) federation_key=$2 ;;
    --client-secrets) client_secrets=$2 ;;
    --blob-account-key) blob_key=$2 ;;
    --signing-keys-account-key) signing_keys_key=$2 ;;
    --pull-secret) pull_secret=$2 ;;
    --gateway-cert) gateway_cert=$2 ;;
    --gateway-key) gateway_key=$2 ;;
    --nats-cert) nats_cert=$2 ;;
    --nats-key) nats_key=$2 ;;
    --nats-ca) nats_ca=$2 ;;
    --kubeconfig) kubeconfig=$2 ;;
    *) usage ;;
  esac
  shift 2
done
for v in namespace config bus federation_key blob_key signing_keys_key pull_secret gateway_cert gateway_key; do
  [ -n "${!v}" ] || die "--${v//_/-} is required"
done
for f in "$config" "$federation_key" "$blob_key" "$signing_keys_key" "$pull_secret" "$gateway_cert" "$gateway_key" "$bus/authorization.conf"; do
  [ -f "$f" ] || die "$f: no such file"
done
# Every role's seed, and the auth callout's user and issuer (the gateway's).
for seed in gateway coordinator identity network dns controlplane nodepool callout callout-issuer; do
  [ -f "$bus/$seed.nk" ] || die "$bus/$seed.nk: no such file (hypersaga bus credentials --out $bus)"
done
grep -q 'auth_callout' "$bus/authorization.conf" \
  || die "$bus/authorization.conf has no auth_callout: made by an older hypersaga? (hypersaga bus credentials --out $bus)"
grep -q 'PRIVATE KEY-----' "$federation_key" || die "$federation_key: not a PEM private key"
[ -z "$client_secrets" ] || [ -d "$client_secrets" ] || die "$client_secrets: no such directory"
if [ -n "$nats_cert$nats_key$nats_ca" ]; then
  for f in "$nats_cert" "$nats_key" "$nats_ca"; do
    [ -f "$f" ] || die "--nats-cert, --nats-key and --nats-ca go together ($f: no such file)"
  done
fi
[ -z "$kubeconfig" ] || [ -f "$kubeconfig" ] || die "$kubeconfig: no such file"
hypersaga=${HYPERSAGA:-hypersaga}
command -v "$hypersaga" >/dev/null || die "hypersaga not found (set HYPERSAGA)"
command -v jq >/dev/null || die "jq not found"
command -v kubectl >/dev/null || die "kubectl not found"

umask 077
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The configuration as the roles will load it (defaults filled in, validated), without the
# caller's HYPERSAGA_* variables.
env -i PATH="$PATH" "$hypersaga" serve gateway --config "$config" --dump-config > "$tmp/config.json" \
  || die "$config does not load (see above)"
if grep -q '"\*\*\*"' "$tmp/config.json"; then
  die "$config holds a secret (shown as ***): keep secrets out of it, they go in the Secrets"
fi

# Where the roles that call Azure find the federation key: the overlays mount it there.
[ -n "$(jq -r '.federation.issuer // empty' "$tmp/config.json")" ] \
  || die "$config: federation.issuer is empty (hypersaga's own OIDC issuer, which tenants' Entra trusts)"
[ "$(jq -r '.federation.signing_key_file // empty' "$tmp/config.json")" = /etc/hypersaga/federation/signing-key.pem ] \
  || die "$config: federation.signing_key_file must be /etc/hypersaga/federation/signing-key.pem (where the pods mount --federation-key)"

# { "<tenant>": "<client secret>" }, each read from its file (a final newline dropped), for
# the declared tenants --client-secrets names; none without it.
echo '{}' > "$tmp/secrets.json"
if [ -n "$client_secrets" ]; then
  for f in "$client_secrets"/*; do
    [ -e "$f" ] || continue
    id=$(basename "$f")
    jq -e --arg id "$id" '(.tenants // []) | any(.id == $id)' "$tmp/config.json" >/dev/null \
      || die "$f: $config declares no tenant $id (one file per declared tenant, named by its id)"
    [ -s "$f" ] || die "$f: empty"
    echo "create-secrets: tenant $id reaches Azure with a client secret (every role warns about it at start)" >&2
    jq -Rs --arg id "$id" '{($id): rtrimstr("\n")}' < "$f" > "$tmp/one.json"
    jq -s '.[0] + .[1]' "$tmp/secrets.json" "$tmp/one.json" > "$tmp/merged.json"
    mv "$tmp/merged.json" "$tmp/secrets.json"
  done
fi

# The configuration of identity, network, dns and nodepool: the same, with those client
# secrets.
jq --slurpfile s "$tmp/secrets.json" \
  '.tenants |= map(if $s[0][.id] then .azure.client_secret = $s[0][.id] else . end)' \
  "$tmp/config.json" > "$tmp/config-with-secrets.json"

# The storage keys and the pull secret as their values, without a trailing newline.
printf '%s' "$(cat "$blob_key")" > "$tmp/blob-account-key"
printf '%s' "$(cat "$signing_keys_key")" > "$tmp/signing-keys-account-key"
printf '%s' "$(cat "$pull_secret")" > "$tmp/pull-secret"

secret() { # name, then kubectl --from-file arguments
  local name=$1; shift
  echo "---"
  kubectl create secret generic "$name" --namespace "$namespace" "$@" --dry-run=client -o yaml
}
seed() { echo "--from-file=$1.nk=$bus/$1.nk"; }
federation=--from-file="federation-key.pem=$federation_key"

secret nats-auth --from-file="authorization.conf=$bus/authorization.conf"
if [ -n "$nats_cert" ]; then
  secret nats-tls --from-file="tls.crt=$nats_cert" --from-file="tls.key=$nats_key" --from-file="ca.crt=$nats_ca"
fi
# The gateway answers the server's auth callout: the callout's user and the issuer's seed.
secret hypersaga-gateway "$(seed gateway)" "$(seed callout)" "$(seed callout-issuer)" \
  --from-file="tls.crt=$gateway_cert" --from-file="tls.key=$gateway_key"
secret hypersaga-coordinator "$(seed coordinator)"
secret hypersaga-identity "$(seed identity)" --from-file="config.json=$tmp/config-with-secrets.json" \
  --from-file="blob-account-key=$tmp/blob-account-key" \
  --from-file="signing-keys-account-key=$tmp/signing-keys-account-key" "$federation"
secret hypersaga-network "$(seed network)" --from-file="config.json=$tmp/config-with-secrets.json" "$federation"
secret hypersaga-dns "$(seed dns)" --from-file="config.json=$tmp/config-with-secrets.json" "$federation"
kube=()
[ -z "$kubeconfig" ] || kube=(--from-file="kubeconfig=$kubeconfig")
secret hypersaga-controlplane "$(seed controlplane)" \
  --from-file="signing-keys-account-key=$tmp/signing-keys-account-key" \
  --from-file="pull-secret=$tmp/pull-secret" "${kube[@]}"
secret hypersaga-nodepool "$(seed nodepool)" --from-file="config.json=$tmp/config-with-secrets.json" "$federation" \
  "${kube[@]}"
