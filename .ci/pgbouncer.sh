#!/usr/bin/env bash
# The engines a deployment grows on (issue 40, SPEC 10), against CI's own PostgreSQL:
# 1. Debian's PgBouncer (1.18) in transaction pooling, with the e2e suites of orders, payments,
#    callbacks and the portal run through it: the apps' DATABASE_URL is PgBouncer, their
#    DATABASE_DIRECT_URL PostgreSQL itself (LISTEN, migrations).
# 2. A streaming replica of CI's PostgreSQL (pg_basebackup into a second cluster, started with
#    pg_ctl as the postgres OS user), for test/read-replica.e2e-spec.ts (DATABASE_REPLICA_URL).
# Run by .ci/run as root after npm test (dist/ built, Node 24 on PATH). Ports: CI_PGBOUNCER_PORT
# (46001) and CI_REPLICA_PORT (46002).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS

if ! command -v pgbouncer >/dev/null 2>&1; then
  echo "ci: installing PgBouncer"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null
fi
# The Debian package starts one of its own on 6432; ours has its own port and config.
pgbouncer_port=${CI_PGBOUNCER_PORT:-46001}
replica_port=${CI_REPLICA_PORT:-46002}
pg_version=$(ls /etc/postgresql | head -n1)
pg_bin=/usr/lib/postgresql/$pg_version/bin
work=$(mktemp -d /tmp/mp-engines.XXXXXX)
chmod 755 "$work"
chown postgres: "$work"

cleanup() {
  [ -f "$work/pgbouncer.pid" ] && kill "$(cat "$work/pgbouncer.pid")" 2>/dev/null || true
  [ -f "$work/replica/postmaster.pid" ] && su postgres -c "$pg_bin/pg_ctl -D '$work/replica' -m immediate stop" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# --- PgBouncer: every database of the test server through one wildcard entry, trust for postgres.
cat >"$work/pgbouncer.ini" <<EOF
[databases]
* = host=127.0.0.1 port=5432

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $pgbouncer_port
unix_socket_dir =
auth_type = trust
auth_file = $work/userlist.txt
pool_mode = transaction
max_client_conn = 2000
default_pool_size = 20
; a spec's database is idle once the spec ends: give its server connections back soon
server_idle_timeout = 10
; a spec that stops PostgreSQL or drops a database hears of it within seconds, not after 120
server_login_retry = 1
query_wait_timeout = 30
logfile = $work/pgbouncer.log
pidfile = $work/pgbouncer.pid
admin_users = postgres
EOF
echo '"postgres" ""' >"$work/userlist.txt"
chown postgres: "$work/pgbouncer.ini" "$work/userlist.txt"
pgbouncer -d -u postgres "$work/pgbouncer.ini"
for i in $(seq 1 30); do psql -h 127.0.0.1 -p "$pgbouncer_port" -U postgres -qtAc 'select 1' postgres >/dev/null 2>&1 && break; sleep 0.5; done
echo "ci: $(pgbouncer --version | head -n1) in transaction pooling on 127.0.0.1:$pgbouncer_port"

# --- The replica: a replication entry in pg_hba, pg_basebackup, a cluster of its own.
hba=$(ls /etc/postgresql/*/main/pg_hba.conf | head -n1)
if ! grep -q '^host replication all 127.0.0.1/32 trust' "$hba"; then
  sed -i '1i host replication all 127.0.0.1/32 trust' "$hba"
  pg_ctlcluster --skip-systemctl-redirect "$pg_version" main reload
fi
replica_started=$SECONDS
su postgres -c "$pg_bin/pg_basebackup -h 127.0.0.1 -p 5432 -U postgres -D '$work/replica' -R -X stream -c fast --no-sync"
# Debian keeps the primary's configuration under /etc: the copy gets a minimal one of its own.
cat >"$work/replica/postgresql.conf" <<EOF
port = $replica_port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$work'
hot_standby = on
# A throwaway copy: no fsync, so its start does not sync the whole copied directory first.
fsync = off
max_connections = $(psql -h 127.0.0.1 -U postgres -qtAc 'show max_connections' postgres)
EOF
printf 'local all all trust\nhost all all 127.0.0.1/32 trust\n' >"$work/replica/pg_hba.conf"
: >"$work/replica/pg_ident.conf"
chown postgres: "$work/replica/postgresql.conf" "$work/replica/pg_hba.conf" "$work/replica/pg_ident.conf"
su postgres -c "$pg_bin/pg_ctl -D '$work/replica' -l '$work/replica.log' -w -t 300 start" >/dev/null
echo "ci: streaming replica on 127.0.0.1:$replica_port ($((SECONDS - replica_started)) s to copy and start), in recovery: $(psql -h 127.0.0.1 -p "$replica_port" -U postgres -qtAc 'select pg_is_in_recovery()' postgres)"

# --- The suites, through PgBouncer; the replica's spec with its replica.
export TEST_PGBOUNCER_URL="postgres://postgres@127.0.0.1:$pgbouncer_port"
export TEST_REPLICA_URL="postgres://postgres@127.0.0.1:$replica_port"
suites_started=$SECONDS
status=0
# The paths before --selectProjects, which takes every word after it as a project name.
timeout --kill-after=30s "${CI_PGBOUNCER_TIMEOUT:-10m}" npx jest --runInBand --forceExit \
  ${CI_PGBOUNCER_SUITES:-test/read-replica.e2e-spec.ts test/orders.e2e-spec.ts test/sandbox.e2e-spec.ts test/callbacks.e2e-spec.ts \
  test/cashier.e2e-spec.ts test/portal-money.e2e-spec.ts test/statements.e2e-spec.ts \
  test/merchant-credentials-cache.e2e-spec.ts test/channel-link-cache.e2e-spec.ts} --selectProjects e2e || status=$?
echo "ci: suites through PgBouncer and the replica took $((SECONDS - suites_started)) s (this step $((SECONDS - started)) s)"
if [ "$status" != 0 ]; then
  echo "ci: PgBouncer's log ends:" >&2
  tail -n 40 "$work/pgbouncer.log" >&2 || true
fi
exit "$status"
