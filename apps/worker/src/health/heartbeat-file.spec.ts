import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HEARTBEAT_STALE_MS, heartbeatProblem, removeHeartbeat, writeHeartbeat } from './heartbeat-file';

describe('worker heartbeat file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mp-heartbeat-'));
  const file = join(dir, 'worker.health');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is healthy while the last beat is recent, unhealthy once it is stale', () => {
    writeHeartbeat(file, 1_000_000);
    expect(heartbeatProblem(file, 1_000_000 + HEARTBEAT_STALE_MS)).toBeNull();
    expect(heartbeatProblem(file, 1_000_000 + HEARTBEAT_STALE_MS + 1)).toMatch(/last heartbeat 30 s ago/);
  });

  it('is unhealthy without a heartbeat, or with one it cannot read', () => {
    removeHeartbeat(file);
    expect(heartbeatProblem(file, Date.now())).toMatch(/no heartbeat/);
    writeFileSync(file, '{"at":');
    expect(heartbeatProblem(file, Date.now())).toMatch(/no heartbeat/);
    writeFileSync(file, '{"at":"yesterday"}');
    expect(heartbeatProblem(file, Date.now())).toMatch(/unreadable/);
  });
});
