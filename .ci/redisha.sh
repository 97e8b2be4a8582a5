#!/usr/bin/env bash
# Redis Sentinel failover, Redis Cluster and both over TLS (SPEC 10): the specs start their own
# redis-server and redis-sentinel processes on ports 47000-47099 and the compiled apps (built by npm
# test's pretest). About 5 minutes; its time is printed.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v redis-sentinel >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1 || ! command -v openssl >/dev/null 2>&1; then
  echo "ci: installing redis-sentinel, redis-tools and openssl (the TLS spec's test CA)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-sentinel redis-tools openssl >/dev/null
fi
[ -f dist/apps/api/src/main.js ] || node scripts/build.js

started=$(date +%s)
status=0
REDIS_HA_TESTS=1 timeout --kill-after=30s "${CI_REDISHA_TIMEOUT:-10m}" npx jest --runInBand --forceExit --selectProjects=redis-ha || status=$?
echo "ci: Redis Sentinel and Cluster specs took $(($(date +%s) - started)) s (exit $status)"
exit "$status"
