import 'reflect-metadata';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type INestApplicationContext, Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { type AppConfig, exitOnStartupFailure, loadConfigOrExit, registerRunningBuild, startTracing, stopOnSignals, stopTracing } from '@app/common';
import { runMigrations } from '@app/db';
import { API_STOP_DEADLINE_MS, closeApiApp, createApiApp } from '../../api/src/create-api-app';
import { WORKER_STOP_DEADLINE_MS } from '../../worker/src/run-worker';
import { DevelopersService } from '../../api/src/portal/developers.service';
import {
  ChannelSetupService,
  MerchantAccountService,
  OperatorModule,
  dataDirOf,
  embeddedPgPort,
  keepDemoCredentials,
  readOrCreateSecrets,
} from '@app/operator';
import { createWorkerApp } from '../../worker/src/create-worker-app';
import { demoPortalLine } from './demo-portal-user';
import { type EmbeddedDatabase, startEmbeddedPostgres } from './embedded-postgres';
import { claimDataDir } from './claim-data-dir';

const logger = new Logger('Start');

interface DemoMerchant {
  api_key: string;
  api_secret: string;
  channel_ids: number[];
}

/** A test-mode demo merchant with one sandbox channel per category, made on the first start only. */
async function demoMerchant(config: AppConfig, dataDir: string): Promise<DemoMerchant> {
  const file = join(dataDir, 'demo-merchant.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as DemoMerchant;
  const ctx = await NestFactory.createApplicationContext(OperatorModule.forRoot(config), { logger: ['error'] });
  try {
    const channels = ctx.get(ChannelSetupService);
    const merchant = await ctx.get(MerchantAccountService).create({ name: 'Demo merchant', mode: 'test' });
    const channelIds: number[] = [];
    for (const [category, name] of [
      ['processor', 'Sandbox processor'],
      ['remotepay', 'Sandbox third-party'],
      ['warehouse', 'Sandbox cloud-warehouse'],
    ]) {
      const { id } = await channels.create({ category, name, payMethod: 'alipay,wxpay,bank', adapter: 'sandbox', rate: '0.006' });
      await channels.link(merchant.id, id);
      channelIds.push(id);
    }
    const demo = { api_key: merchant.api_key, api_secret: merchant.api_secret, channel_ids: channelIds };
    writeFileSync(file, JSON.stringify(demo, null, 2), { mode: 0o600 });
    return demo;
  } finally {
    await ctx.close();
  }
}

function banner(config: AppConfig, demo: DemoMerchant | null, dataDir: string, portal: string | null): string {
  const base = `http://127.0.0.1:${config.port}`;
  const lines = [
    '',
    '  merchant-pay is running',
    `  API            ${base}${config.apiPrefix}/merchant/...`,
    `  API docs       ${base}/docs`,
    `  health         ${base}/health   ready: ${base}/ready   metrics: ${base}/metrics`,
  ];
  if (demo) {
    lines.push(
      `  data           ${dataDir} (embedded PostgreSQL; the queue runs on it too)`,
      `  demo api_key   ${demo.api_key}`,
      `  demo secret    ${demo.api_secret}`,
      `  demo channels  ${demo.channel_ids.join(', ')} (sandbox: processor, remotepay, warehouse)`,
      `  credentials    ${join(dataDir, 'demo-merchant.json')}`,
      `  portal         ${portal}`,
      `  callbacks      CALLBACK_ALLOW_PRIVATE=${config.callbackAllowPrivate}: ${config.callbackAllowPrivate ? 'callbacks may go to localhost (demo mode)' : 'private addresses refused'}`,
    );
  }
  lines.push('  Ctrl-C stops everything.', '');
  return lines.join('\n');
}

/**
 * `npm start`: with no DATABASE_URL, an embedded PostgreSQL under ./.data carries the data and
 * the queue, a demo merchant is made on first start, and the API and one worker run in this
 * process. With DATABASE_URL (and REDIS_URL) set, the same runs against those instead.
 */
async function main(): Promise<void> {
  registerRunningBuild();
  const env = { ...process.env };
  const embedded = !env.DATABASE_URL;
  const dataDir = dataDirOf(env);
  let database: EmbeddedDatabase | null = null;
  const running: { api?: NestFastifyApplication; worker?: INestApplicationContext } = {};
  // The database runs in a session of its own (Ctrl-C reaches only this process): it stops last,
  // once the API has answered its requests in flight and the worker has finished its attempts.
  stopOnSignals(
    async (signal) => {
      logger.log(`${signal}: stopping`);
      await Promise.allSettled([running.api && closeApiApp(running.api), running.worker?.close()]);
      await stopTracing();
      await database?.stop();
    },
    { deadlineMs: Math.max(API_STOP_DEADLINE_MS, WORKER_STOP_DEADLINE_MS) + 5_000, report: (line) => logger.error(line) },
  );
  if (embedded) {
    mkdirSync(dataDir, { recursive: true });
    claimDataDir(dataDir);
    const secrets = readOrCreateSecrets(dataDir);
    database = await startEmbeddedPostgres(dataDir, embeddedPgPort(env), secrets.pg_password);
    env.DATABASE_URL = database.url;
    env.MASTER_KEY ??= secrets.master_key;
    // No Redis beside the embedded PostgreSQL: its queue runs there, said explicitly (SPEC 10).
    env.QUEUE_BACKEND ??= 'postgres';
    // A local demo calls back to localhost and pays on the sandbox.
    env.CALLBACK_ALLOW_PRIVATE ??= 'true';
    env.SANDBOX_ENABLED ??= 'true';
    env.LOG_FORMAT ??= 'pretty';
    env.LOG_LEVEL ??= 'warn';
  }
  const config = loadConfigOrExit(env, 'Start');
  await runMigrations(config.databaseDirectUrl);
  const demo = embedded ? await demoMerchant(config, dataDir) : null;
  const portal = demo ? await demoPortalLine(config, dataDir, demo.api_key) : null;

  // Traces only with OTEL_EXPORTER_OTLP_ENDPOINT set; before the apps, whose loggers then name the spans.
  startTracing('merchant-pay');
  const api = await createApiApp(config, { shutdownHooks: false });
  if (demo) api.get(DevelopersService).onRotation((rotated) => keepDemoCredentials(join(dataDir, 'demo-merchant.json'), rotated));
  await api.listen({ port: config.port, host: '0.0.0.0' });
  const worker = await createWorkerApp(config, { shutdownHooks: false });
  process.stdout.write(`${banner(config, demo, dataDir, portal)}\n`);

  Object.assign(running, { api, worker });
}

main().catch((err: unknown) => exitOnStartupFailure('Start', err));
