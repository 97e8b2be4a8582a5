import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter as BullBoardFastifyAdapter } from '@bull-board/fastify';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { AppConfig } from '@app/common';
import { QUEUE } from '@app/common';
import { sameText } from '@app/signature';
import { JobQueue } from '@app/queue';

export const DASHBOARD_PATH = '/admin/queues';

/** Bull Board at /admin/queues behind HTTP basic auth; not mounted at all unless ADMIN_USER and ADMIN_PASSWORD are set. */
export async function mountQueueDashboard(app: NestFastifyApplication, config: AppConfig): Promise<void> {
  if (!config.adminUser || !config.adminPassword) return;
  const expected = `${config.adminUser}:${config.adminPassword}`;
  const jobs = app.get(JobQueue);
  const serverAdapter = new BullBoardFastifyAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({ queues: Object.values(QUEUE).map((name) => new BullMQAdapter(jobs.queue(name))), serverAdapter });

  const fastify = app.getHttpAdapter().getInstance();
  await fastify.register(
    async (scope) => {
      scope.addHook('onRequest', async (request, reply) => {
        const header = request.headers.authorization ?? '';
        const given = header.startsWith('Basic ') ? Buffer.from(header.slice(6), 'base64').toString('utf8') : '';
        if (!sameText(given, expected)) {
          await reply.status(401).header('www-authenticate', 'Basic realm="queues"').send({ code: 40100, msg: 'Authentication required' });
        }
      });
      await scope.register(serverAdapter.registerPlugin());
    },
    { prefix: DASHBOARD_PATH },
  );
}
