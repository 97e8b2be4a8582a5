import { Redis } from 'ioredis';
import { AppConfig } from '@app/common';
import { CALLBACK_TIMEOUT_MS } from './callback-sender';
import { DestinationGate } from './destination-gate';

/** The gate of SPEC 7 Fairness, one per app: on the shared Redis when REDIS_URL is set, in the process in the embedded mode. */
export const DESTINATION_GATE_PROVIDER = {
  provide: DestinationGate,
  inject: [AppConfig, { token: Redis, optional: true }],
  useFactory: (config: AppConfig, redis?: Redis) =>
    new DestinationGate(
      {
        limit: config.callbackDestinationConcurrency,
        // The HTTP budget plus the time to record: a slot held longer than this by no one comes back.
        leaseMs: CALLBACK_TIMEOUT_MS + 30_000,
        failures: config.callbackCircuitFailures,
        probeMs: config.callbackCircuitProbeSeconds * 1000,
      },
      redis ?? null,
      config.queuePrefix,
      config.redis !== null,
    ),
};
