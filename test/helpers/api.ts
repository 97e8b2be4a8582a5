import { randomBytes } from 'node:crypto';
import { type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { AppConfig } from '@app/common';
import { sign } from '@app/signature';
import { OperatorModule, type Credentials } from '@app/operator';
import { createApiApp } from '../../apps/api/src/create-api-app';
import { testConfig } from './config';
import { createTestDatabase } from './database';
import { type OperatorServices, operatorServices } from './operator-services';
import { removeTestKeys } from './redis-keys';

export interface TestApi {
  app: NestFastifyApplication;
  config: AppConfig;
  databaseUrl: string;
  /** The operator CLI's services on the same database, for fixtures. */
  operator: OperatorServices;
  close(): Promise<void>;
}

/** The real API app on a database of its own, with real Redis; requests go through app.inject. */
export async function startTestApi(env: Record<string, string> = {}): Promise<TestApi> {
  const databaseUrl = await createTestDatabase();
  const config = testConfig(databaseUrl, env);
  const app = await createApiApp(config);
  const cli: INestApplicationContext = await NestFactory.createApplicationContext(OperatorModule.forRoot(config), { logger: false });
  return {
    app,
    config,
    databaseUrl,
    operator: operatorServices(cli),
    async close() {
      await cli.close();
      await app.close();
      await removeTestKeys(config.queuePrefix, databaseUrl);
    },
  };
}

export function newNonce(): string {
  return randomBytes(12).toString('hex');
}

/** Common authentication parameters plus `params`, signed as a merchant client would. */
export function signed(
  merchant: Pick<Credentials, 'api_key' | 'api_secret'>,
  params: Record<string, unknown> = {},
  query: Record<string, unknown> = {},
): Record<string, unknown> {
  const body: Record<string, unknown> = { api_key: merchant.api_key, timestamp: Math.floor(Date.now() / 1000), nonce: newNonce(), ...params };
  return { ...body, signature: sign({ ...query, ...body }, merchant.api_secret) };
}

export interface Answer<T = unknown> {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: { code: number; msg: string; time: string; data: T };
  raw: string;
}

/** POST a JSON body (or a raw string with its own content type) and parse the envelope. */
export async function post<T = unknown>(
  app: NestFastifyApplication,
  url: string,
  payload: Record<string, unknown> | string,
  contentType = 'application/json',
): Promise<Answer<T>> {
  const res = await app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': contentType },
    payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
  });
  return { status: res.statusCode, headers: res.headers, body: res.json(), raw: res.body };
}

/** A test merchant with one linked sandbox channel per category, created through the operator service. */
export async function merchantWithChannels(
  operator: OperatorServices,
  options: { rate?: string; depositRate?: string; notifyUrl?: string } = {},
): Promise<{ merchant: Credentials; channels: Record<'processor' | 'remotepay' | 'warehouse', number> }> {
  const merchant = await operator.merchants.create({
    name: `m-${newNonce().slice(0, 8)}`,
    mode: 'test',
    notifyUrl: options.notifyUrl,
    depositRate: options.depositRate,
  });
  const channels = {} as Record<'processor' | 'remotepay' | 'warehouse', number>;
  for (const category of ['processor', 'remotepay', 'warehouse'] as const) {
    const { id } = await operator.channels.create({
      category,
      name: `${category} sandbox`,
      payMethod: 'alipay,wxpay,bank',
      adapter: 'sandbox',
      rate: options.rate ?? '0.006',
    });
    await operator.channels.link(merchant.id, id);
    channels[category] = id;
  }
  return { merchant, channels };
}

/** The answer every merchant route gives (SPEC 2), as the multi-process specs read it over HTTP. */
export interface Envelope<T = Record<string, unknown>> {
  code: number;
  msg: string;
  data: T;
}
