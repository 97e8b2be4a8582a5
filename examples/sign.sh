#!/usr/bin/env bash
# Signs merchant parameters the way the service checks them, with nothing but bash and openssl.
#   examples/sign.sh API_SECRET key=value [key=value ...]    -> prints the hex signature
# Values are written as they would be sent (numbers as JavaScript writes them, nested values as
# JSON with sorted keys). Pairs with an empty value are left out, as the service does.
# Example request:
#   ts=$(date +%s); nonce=$(openssl rand -hex 12)
#   sig=$(examples/sign.sh "$SECRET" api_key="$KEY" timestamp="$ts" nonce="$nonce")
#   curl -s http://127.0.0.1:3000/api/merchant/getPayChannels -H 'content-type: application/json' \
#     -d "{\"api_key\":\"$KEY\",\"timestamp\":$ts,\"nonce\":\"$nonce\",\"signature\":\"$sig\"}"
set -euo pipefail
secret=${1:?usage: sign.sh API_SECRET key=value ...}
shift
canonical=$(
  for pair in "$@"; do
    key=${pair%%=*}
    value=${pair#*=}
    [ "$key" = signature ] && continue
    [ -z "$value" ] && continue
    printf '%s\n' "$key=$value"
  done | LC_ALL=C sort -t= -k1,1 | paste -sd'&' -
)
printf '%s' "$canonical" | openssl dgst -sha256 -hmac "$secret" -r | cut -d' ' -f1
