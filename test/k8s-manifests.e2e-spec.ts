import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';

/**
 * deploy/k8s checked offline (no cluster, no network): scripts/k8s-check.mjs validates each
 * manifest against its kind's Kubernetes schema and field names, then our rules. Each mistake
 * below is made by hand in a copy and must be caught; all copies go through one run.
 */
const ROOT = resolve(__dirname, '..');
const K8S = join(ROOT, 'deploy/k8s');

type Edit = (text: string) => string;
interface Mistake {
  name: string;
  file: string;
  edit: Edit;
  caught: RegExp;
}

const once = (from: string | RegExp, to: string): Edit => {
  return (text) => {
    const next = text.replace(from, to);
    if (next === text) throw new Error(`the edit found no ${String(from)}`);
    return next;
  };
};

const MISTAKES: Mistake[] = [
  { name: 'a typo in a field name', file: 'api-deployment.yaml', edit: once('readinessProbe:', 'readinesProbe:'), caught: /unknown field 'readinesProbe'/ },
  {
    name: 'a typo deep in a probe',
    file: 'worker-deployment.yaml',
    edit: once('periodSeconds: 15', 'periodSecond: 15'),
    caught: /unknown field 'periodSecond'/,
  },
  { name: 'a wrong type', file: 'worker-deployment.yaml', edit: once('replicas: 2', 'replicas: two'), caught: /replicas must be integer/ },
  { name: 'a missing required field', file: 'api-service.yaml', edit: once(/\n {6}port: 80/, ''), caught: /ports\/0 must have required property port/ },
  {
    name: 'a writable root filesystem',
    file: 'worker-deployment.yaml',
    edit: once('readOnlyRootFilesystem: true', 'readOnlyRootFilesystem: false'),
    caught: /merchant-pay-worker: container worker must set readOnlyRootFilesystem: true/,
  },
  {
    name: 'a pod that may run as root',
    file: 'migrate-job.yaml',
    edit: once('runAsNonRoot: true', 'runAsNonRoot: false'),
    caught: /merchant-pay-migrate: the pod must set runAsNonRoot/,
  },
  { name: 'no memory limit', file: 'api-deployment.yaml', edit: once(/\n {14}memory: 1Gi/, ''), caught: /container api has no memory limit/ },
  {
    name: 'another image',
    file: 'worker-deployment.yaml',
    edit: once('image: merchant-pay', 'image: merchant-pay:old'),
    caught: /every container must run the one image/,
  },
  {
    name: 'the worker running the API',
    file: 'worker-deployment.yaml',
    edit: once('command: ["node", "dist/apps/worker/src/main.js"]', 'command: ["node", "dist/apps/api/src/main.js"]'),
    caught: /the worker runs node dist\/apps\/worker\/src\/main.js/,
  },
  {
    name: 'a liveness probe that is not the heartbeat',
    file: 'worker-deployment.yaml',
    edit: once(
      /"--health"\]\n(\s+)periodSeconds: 15\n(\s+)timeoutSeconds: 5\n(\s+)failureThreshold: 3/,
      '"--help"]\n$1periodSeconds: 15\n$2timeoutSeconds: 5\n$3failureThreshold: 3',
    ),
    caught: /livenessProbe must run node dist\/apps\/worker\/src\/main.js --health/,
  },
  {
    name: 'the API without readiness',
    file: 'api-deployment.yaml',
    edit: once('path: /ready\n              port: http\n            periodSeconds: 5', 'path: /health\n              port: http\n            periodSeconds: 5'),
    caught: /readinessProbe must GET \/ready/,
  },
  {
    name: 'the environment not from the Secret',
    file: 'api-deployment.yaml',
    edit: once('name: merchant-pay\n            - configMapRef', 'name: merchant-pay-other\n            - configMapRef'),
    caught: /container api does not take its environment from the Secret/,
  },
  {
    name: 'a Secret without the master keys',
    file: 'secret.yaml',
    edit: once(/\n {2}MASTER_KEYS: REPLACE_ME/, ''),
    caught: /Secret merchant-pay: has no MASTER_KEYS/,
  },
  {
    name: 'the autoscaler aimed elsewhere',
    file: 'worker-hpa.yaml',
    edit: once('name: merchant-pay-worker\n  minReplicas', 'name: merchant-pay-api\n  minReplicas'),
    caught: /merchant-pay-worker: no HorizontalPodAutoscaler targets it/,
  },
  {
    name: 'no /tmp for the heartbeat',
    file: 'worker-deployment.yaml',
    edit: once(/\n {12}- name: tmp\n {14}mountPath: \/tmp/, ''),
    caught: /container worker needs a writable \/tmp/,
  },
  {
    name: 'the heartbeat elsewhere',
    file: 'configmap.yaml',
    edit: once('WORKER_HEALTH_FILE: /tmp/', 'WORKER_HEALTH_FILE: /var/run/'),
    caught: /WORKER_HEALTH_FILE must be on the writable \/tmp/,
  },
];

interface DirResult {
  manifests: number;
  problems: string[];
}

describe('deploy/k8s', () => {
  let work: string;
  let results: Record<string, DirResult>;

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'k8s-mistakes-'));
    const dirs = MISTAKES.map((m, i) => {
      const dir = join(work, String(i));
      cpSync(K8S, dir, { recursive: true });
      writeFileSync(join(dir, m.file), m.edit(readFileSync(join(dir, m.file), 'utf8')));
      return dir;
    });
    const out = execFileSync(process.execPath, [join(ROOT, 'scripts/k8s-check.mjs'), '--json', K8S, ...dirs], { encoding: 'utf8', timeout: 120_000 });
    results = JSON.parse(out) as Record<string, DirResult>;
  }, 150_000);

  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('every manifest the kustomization lists is valid and keeps our rules', () => {
    const kustomization = parse(readFileSync(join(K8S, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
    expect(results[K8S].problems).toEqual([]);
    expect(results[K8S].manifests).toBe(kustomization.resources.length);
  });

  it.each(MISTAKES.map((m, i) => [m.name, i] as const))('catches %s', (_name, i) => {
    const { problems } = results[join(work, String(i))];
    expect(problems.join('\n')).toMatch(MISTAKES[i].caught);
  });

  it("the autoscaler's metrics are ones the service exports", () => {
    const hpa = parse(readFileSync(join(K8S, 'worker-hpa.yaml'), 'utf8')) as { spec: { metrics: { external: { metric: { name: string } } }[] } };
    const names = hpa.spec.metrics.map((m) => m.external.metric.name);
    expect(names.length).toBeGreaterThan(0);
    const sources = ['libs/db/src/operational-gauges.ts', 'apps/api/src/metrics/cached-gauges.ts'].map((f) => readFileSync(join(ROOT, f), 'utf8')).join('\n');
    for (const name of names) expect(sources.includes(`name: '${name}'`) ? name : `${name} is not exported`).toBe(name);
  });

  it('what the manifests run is in the build output (npm test builds first)', () => {
    const commands =
      readFileSync(join(K8S, 'api-deployment.yaml'), 'utf8') +
      readFileSync(join(K8S, 'worker-deployment.yaml'), 'utf8') +
      readFileSync(join(K8S, 'migrate-job.yaml'), 'utf8');
    const files = [...new Set(commands.match(/dist\/[\w/.-]+\.js/g))];
    expect(files.sort()).toEqual(['dist/apps/api/src/main.js', 'dist/apps/cli/src/main.js', 'dist/apps/worker/src/main.js']);
    for (const file of files) expect(existsSync(join(ROOT, file)) ? file : `${file} is missing`).toBe(file);
  });
});
