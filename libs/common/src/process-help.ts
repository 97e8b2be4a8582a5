/** What `node <main> --help` prints for each app: the page an operator wants, without starting anything. */
const HELP: Record<'api' | 'worker', string> = {
  api: `merchant-pay API: the merchant API, the portal, /health, /ready and /metrics.

usage: node dist/apps/api/src/main.js [--health | --help]
  --health  exits 0 when this container's API answers /ready on its PORT (a healthcheck)

It starts with its configuration from the environment (README.md, Configuration) and refuses,
with one JSON line, a bad variable, a database with pending migrations or a master key that does
not open it. Required: DATABASE_URL, MASTER_KEY (or MASTER_KEYS / MASTER_KEY_FILE), REDIS_URL
(or REDIS_SENTINELS + REDIS_SENTINEL_NAME, or REDIS_CLUSTER_NODES; or QUEUE_BACKEND=postgres on
every process). Common: PORT (3000), PUBLIC_BASE_URL, TRUST_PROXY,
METRICS_TOKEN, LOG_LEVEL.
`,
  worker: `merchant-pay worker: callbacks, confirmations, refunds, payouts, expiry, reconciliation, retention.

usage: node dist/apps/worker/src/main.js [--health | --help]
  --health  exits 0 when this container's worker wrote its heartbeat within 30 s (a healthcheck)

It starts with its configuration from the environment (README.md, Configuration) and refuses,
with one JSON line, a bad variable, a database with pending migrations, a master key that does
not open it or a queue backend other than the one the database records. Required: DATABASE_URL,
MASTER_KEY (or MASTER_KEYS / MASTER_KEY_FILE), REDIS_URL (or REDIS_SENTINELS +
REDIS_SENTINEL_NAME, or REDIS_CLUSTER_NODES; or QUEUE_BACKEND=postgres on every process). Common: WORKER_METRICS_PORT, WORKER_HEALTH_FILE, METRICS_TOKEN, LOG_LEVEL.
`,
};

/** `--help` (or `-h`) anywhere on the command line prints the app's help and exits 0, before any configuration is read. */
export function helpIfAsked(app: keyof typeof HELP, argv: readonly string[] = process.argv.slice(2)): void {
  if (!argv.includes('--help') && !argv.includes('-h')) return;
  process.stdout.write(HELP[app]);
  process.exit(0);
}
