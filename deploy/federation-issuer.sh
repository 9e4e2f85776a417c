#!/usr/bin/env bash
# Writes hypersaga's own OIDC issuer documents: the discovery document and the key set (JWKS)
# that every tenant's Entra fetches to check the client assertions hypersaga's roles sign
# with the federation key (`[federation]`: `issuer`, `signing_key_file`). Serve the two files
# at the issuer URL, as they are laid out under --out; nothing is uploaded from here.
#
#   openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out federation-key.pem
#   deploy/federation-issuer.sh \
#     --issuer https://<account>.blob.core.windows.net/hypersaga-federation \
#     --key federation-key.pem [--key old-federation-key.pem] \
#     --out issuer
#   # issuer/.well-known/openid-configuration and issuer/openid/v1/jwks, then e.g.
#   az storage container create --account-name <account> --name hypersaga-federation \
#     --public-access blob
#   az storage blob upload-batch --account-name <account> --destination hypersaga-federation \
#     --source issuer --content-type application/json --overwrite
#
# --issuer is the URL the configuration's federation.issuer holds, byte for byte (no final
# slash): Entra compares it with the assertions' `iss`. --key is an RSA private key (PEM,
# PKCS#1 or PKCS#8); give two while rotating (the new key first: both are in the key set
# until every role signs with the new one). Key ids are hypersaga's (and kube-apiserver's):
# base64url(SHA-256(the public key's DER)). Needs openssl, jq and xxd. See deploy/README.md.
set -euo pipefail

usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "federation-issuer: $*" >&2; exit 1; }

issuer="" out="" keys=()
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case "$1" in
    --issuer) issuer=$2 ;;
    --key) keys+=("$2") ;;
    --out) out=$2 ;;
    *) usage ;;
  esac
  shift 2
done
[ -n "$issuer" ] || die "--issuer is required"
[ -n "$out" ] || die "--out is required"
[ "${#keys[@]}" -gt 0 ] || die "--key is required"
case "$issuer" in
  https://*) ;;
  *) die "--issuer $issuer: Entra fetches issuers over https only" ;;
esac
case "$issuer" in
  */) die "--issuer $issuer: no final slash (Entra compares it byte for byte with the assertions' iss)" ;;
esac
for tool in openssl jq xxd; do
  command -v "$tool" >/dev/null || die "$tool not found"
done

# base64url without padding, of stdin's bytes.
b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
# Hex digits (any case, any length) as bytes, a leading zero added to an odd count.
unhex() { local h; h=$(tr -d ' \n:'); [ $(( ${#h} % 2 )) -eq 0 ] || h="0$h"; printf '%s' "$h" | xxd -r -p; }

jwks="[]"
for key in "${keys[@]}"; do
  [ -f "$key" ] || die "$key: no such file"
  openssl rsa -in "$key" -noout 2>/dev/null || die "$key: not an RSA private key (PEM)"
  kid=$(openssl pkey -in "$key" -pubout -outform DER 2>/dev/null | openssl dgst -sha256 -binary | b64url)
  n=$(openssl rsa -in "$key" -noout -modulus 2>/dev/null | sed 's/^Modulus=//' | unhex | b64url)
  e_hex=$(openssl rsa -in "$key" -noout -text 2>/dev/null | sed -n 's/^publicExponent: [0-9]* (0x\([0-9a-fA-F]*\))$/\1/p')
  [ -n "$e_hex" ] || die "$key: cannot read its public exponent"
  e=$(printf '%s' "$e_hex" | unhex | b64url)
  jwks=$(jq -c --arg kid "$kid" --arg n "$n" --arg e "$e" \
    '. + [{use: "sig", kty: "RSA", kid: $kid, alg: "RS256", n: $n, e: $e}]' <<<"$jwks")
done

mkdir -p "$out/.well-known" "$out/openid/v1"
jq -n --arg issuer "$issuer" '{
  issuer: $issuer,
  jwks_uri: "\($issuer)/openid/v1/jwks",
  response_types_supported: ["id_token"],
  subject_types_supported: ["public"],
  id_token_signing_alg_values_supported: ["RS256"]
}' > "$out/.well-known/openid-configuration"
jq -n --argjson keys "$jwks" '{keys: $keys}' > "$out/openid/v1/jwks"
echo "$out/.well-known/openid-configuration"
echo "$out/openid/v1/jwks"
