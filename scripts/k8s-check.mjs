// Validates deploy/k8s offline: every manifest the kustomization lists against its kind's
// Kubernetes schema (kubernetes-models: types, required fields, formats), every field name
// against the API's types (TypeScript's excess-property check on the models' declarations: the
// schemas alone let a typo'd field through, as a lenient API server would), then our own rules.
//
//   node scripts/k8s-check.mjs [dir ...]          problems on stderr, exit 1 when any
//   node scripts/k8s-check.mjs --json [dir ...]   {dir: [problem, ...]} on stdout, exit 0
//
// An ES module because kubernetes-models is one (its exports have no require condition).
// Nothing here reaches the network. test/k8s-manifests.e2e-spec.ts runs it.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);

/** Our kinds and where kubernetes-models keeps each one's class. */
const MODELS = {
  'v1/Secret': ['kubernetes-models/v1', 'Secret'],
  'v1/ConfigMap': ['kubernetes-models/v1', 'ConfigMap'],
  'v1/Service': ['kubernetes-models/v1', 'Service'],
  'apps/v1/Deployment': ['kubernetes-models/apps/v1', 'Deployment'],
  'batch/v1/Job': ['kubernetes-models/batch/v1', 'Job'],
  'policy/v1/PodDisruptionBudget': ['kubernetes-models/policy/v1', 'PodDisruptionBudget'],
  'autoscaling/v2/HorizontalPodAutoscaler': ['kubernetes-models/autoscaling/v2', 'HorizontalPodAutoscaler'],
};

const API_MAIN = 'dist/apps/api/src/main.js';
const WORKER_MAIN = 'dist/apps/worker/src/main.js';
const WORKER_HEALTH = ['node', WORKER_MAIN, '--health'];
const SECRET_KEYS = ['DATABASE_URL', 'REDIS_URL', 'MASTER_KEYS', 'METRICS_TOKEN'];

/** The manifests the kustomization in `dir` lists, each document with the file it came from. */
function loadManifests(dir) {
  const problems = [];
  const kustomization = parseYaml(join(dir, 'kustomization.yaml'), problems)[0];
  if (!kustomization) return { kustomization: null, manifests: [], problems };
  const manifests = [];
  for (const file of kustomization.resources ?? []) {
    for (const doc of parseYaml(join(dir, file), problems)) manifests.push({ file, doc });
  }
  return { kustomization, manifests, problems };
}

function parseYaml(path, problems) {
  let text;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    problems.push(`${path}: cannot read (${err.code})`);
    return [];
  }
  const docs = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) problems.push(`${path}: ${doc.errors[0].message}`);
    else if (doc.contents !== null) docs.push(doc.toJS());
  }
  return docs;
}

/** Schema validation by the models' own validators. */
async function schemaProblems(manifests) {
  const problems = [];
  for (const { file, doc } of manifests) {
    const model = MODELS[`${doc.apiVersion}/${doc.kind}`];
    if (!model) {
      problems.push(`${file}: ${doc.apiVersion} ${doc.kind} is not a kind this check knows`);
      continue;
    }
    const Kind = (await import(model[0]))[model[1]];
    try {
      new Kind(doc).validate();
    } catch (err) {
      problems.push(`${file}: ${doc.kind} ${doc.metadata?.name}: ${err.message}`);
    }
  }
  return problems;
}

/**
 * Unknown field names, at any depth: each manifest becomes an object literal typed as its kind's
 * interface, and the TypeScript checker reports every property the type does not have.
 */
function fieldProblems(groups) {
  const ts = require('typescript');
  // Under the checkout, so the models resolve from its node_modules as for any module here.
  mkdirSync(join(ROOT, '.build'), { recursive: true });
  const work = mkdtempSync(join(ROOT, '.build', 'k8s-check-'));
  try {
    const where = [];
    const lines = [];
    const imported = new Set();
    for (const { manifests } of groups) {
      for (const { file, doc } of manifests) {
        const model = MODELS[`${doc.apiVersion}/${doc.kind}`];
        if (!model) continue;
        const type = `I${model[1]}`;
        if (!imported.has(model.join())) {
          lines.unshift(`import type { ${type} as ${type}_${imported.size} } from '${model[0]}/${model[1]}';`);
          imported.add(model.join());
        }
        where.push({ file, doc, line: where.length });
        lines.push(`export const m${where.length}: ${type}_${[...imported].indexOf(model.join())} = ${JSON.stringify(doc)};`);
      }
    }
    // One line per manifest, below the imports.
    where.forEach((w) => (w.line += imported.size));
    const source = join(work, 'manifests.mts');
    writeFileSync(source, lines.join('\n') + '\n');
    const program = ts.createProgram([source], {
      noEmit: true,
      strict: true,
      skipLibCheck: true,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      typeRoots: [],
      types: [],
    });
    const problems = new Map();
    for (const d of ts.getPreEmitDiagnostics(program)) {
      if (!d.file) {
        problems.set('(check)', [`${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`]);
        continue;
      }
      const line = d.file.getLineAndCharacterOfPosition(d.start).line;
      const w = where.find((x) => x.line === line);
      const text = ts.flattenDiagnosticMessageText(d.messageText, ' ');
      // Only names the API does not know: wrong types and missing fields are the schemas' to say.
      const unknown = /Object literal may only specify known properties, and '"?([^'"]+)"?' does not exist in type '([^']+)'/.exec(text);
      if (!w || !unknown) continue;
      const list = problems.get(w.doc) ?? [];
      list.push(`${w.file}: ${w.doc.kind} ${w.doc.metadata?.name}: unknown field '${unknown[1]}' (not in ${unknown[2]})`);
      problems.set(w.doc, list);
    }
    return problems;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The pod templates (Deployments and Jobs) with their file and name. */
function podTemplates(manifests) {
  return manifests.filter(({ doc }) => ['Deployment', 'Job'].includes(doc.kind)).map(({ file, doc }) => ({ file, doc, pod: doc.spec?.template?.spec ?? {} }));
}

/** Our rules, which a schema cannot say. */
function ruleProblems(kustomization, manifests) {
  const problems = [];
  const say = (file, doc, text) => problems.push(`${file}: ${doc.kind} ${doc.metadata?.name}: ${text}`);
  const byKind = (kind) => manifests.filter(({ doc }) => doc.kind === kind);
  const secret = byKind('Secret')[0];
  if (!secret) problems.push('no Secret');
  else {
    const keys = Object.keys({ ...secret.doc.stringData, ...secret.doc.data });
    for (const key of SECRET_KEYS) if (!keys.includes(key)) say(secret.file, secret.doc, `has no ${key}`);
  }
  const secretName = secret?.doc.metadata?.name;
  const images = new Set();
  const deployments = new Map();
  for (const { file, doc, pod } of podTemplates(manifests)) {
    if (pod.securityContext?.runAsNonRoot !== true) say(file, doc, 'the pod must set runAsNonRoot: true');
    if (doc.kind === 'Deployment') deployments.set(doc.metadata?.name, { file, doc, pod });
    const writable = new Set((pod.volumes ?? []).filter((v) => v.emptyDir).map((v) => v.name));
    for (const c of pod.containers ?? []) {
      const where = `container ${c.name}`;
      images.add(c.image);
      const sc = c.securityContext ?? {};
      if (sc.readOnlyRootFilesystem !== true) say(file, doc, `${where} must set readOnlyRootFilesystem: true`);
      if (sc.allowPrivilegeEscalation !== false) say(file, doc, `${where} must set allowPrivilegeEscalation: false`);
      if (!(sc.capabilities?.drop ?? []).includes('ALL')) say(file, doc, `${where} must drop ALL capabilities`);
      if (sc.runAsUser === 0 || pod.securityContext?.runAsUser === 0) say(file, doc, `${where} runs as root`);
      for (const r of ['cpu', 'memory']) {
        if (!c.resources?.requests?.[r]) say(file, doc, `${where} has no ${r} request`);
        if (!c.resources?.limits?.[r]) say(file, doc, `${where} has no ${r} limit`);
      }
      const fromSecret = (c.envFrom ?? []).some((e) => e.secretRef?.name === secretName);
      if (!fromSecret) say(file, doc, `${where} does not take its environment from the Secret ${secretName}`);
      const tmp = (c.volumeMounts ?? []).find((m) => m.mountPath === '/tmp');
      if (!tmp || !writable.has(tmp.name)) say(file, doc, `${where} needs a writable /tmp (an emptyDir) under a read-only root`);
    }
  }
  if (images.size !== 1) problems.push(`every container must run the one image, found: ${[...images].join(', ')}`);
  const image = [...images][0];
  if (!(kustomization.images ?? []).some((i) => i.name === image)) problems.push(`kustomization.yaml: images does not set ${image}`);

  const api = deployments.get('merchant-pay-api');
  const worker = deployments.get('merchant-pay-worker');
  if (!api) problems.push('no Deployment merchant-pay-api');
  else {
    const c = api.pod.containers?.[0] ?? {};
    if (c.command?.join(' ') !== `node ${API_MAIN}`) say(api.file, api.doc, `the API runs node ${API_MAIN}`);
    if (c.readinessProbe?.httpGet?.path !== '/ready') say(api.file, api.doc, 'readinessProbe must GET /ready');
    if (c.livenessProbe?.httpGet?.path !== '/health') say(api.file, api.doc, 'livenessProbe must GET /health');
    const service = byKind('Service').find(({ doc }) => sameLabels(doc.spec?.selector, api.doc.spec?.selector?.matchLabels));
    if (!service) say(api.file, api.doc, 'no Service selects it');
  }
  if (!worker) problems.push('no Deployment merchant-pay-worker');
  else {
    const c = worker.pod.containers?.[0] ?? {};
    if (c.command?.join(' ') !== `node ${WORKER_MAIN}`) say(worker.file, worker.doc, `the worker runs node ${WORKER_MAIN}, found ${c.command?.join(' ')}`);
    for (const probe of ['readinessProbe', 'livenessProbe']) {
      if (c[probe]?.exec?.command?.join(' ') !== WORKER_HEALTH.join(' ')) say(worker.file, worker.doc, `${probe} must run ${WORKER_HEALTH.join(' ')}`);
    }
    const heartbeat = (c.env ?? []).find((e) => e.name === 'WORKER_HEALTH_FILE')?.value ?? configValue(manifests, 'WORKER_HEALTH_FILE');
    if (!heartbeat?.startsWith('/tmp/')) say(worker.file, worker.doc, `WORKER_HEALTH_FILE must be on the writable /tmp, found ${heartbeat}`);
    const hpa = byKind('HorizontalPodAutoscaler').find(({ doc }) => doc.spec?.scaleTargetRef?.name === worker.doc.metadata?.name);
    if (!hpa || hpa.doc.spec.scaleTargetRef.kind !== 'Deployment') say(worker.file, worker.doc, 'no HorizontalPodAutoscaler targets it');
    else if (!(hpa.doc.spec.metrics ?? []).some((m) => /^merchant_pay_/.test(m.external?.metric?.name ?? m.pods?.metric?.name ?? ''))) {
      say(hpa.file, hpa.doc, 'scales on none of our metrics');
    }
  }
  for (const d of [api, worker].filter(Boolean)) {
    const pdb = byKind('PodDisruptionBudget').find(({ doc }) => sameLabels(doc.spec?.selector?.matchLabels, d.doc.spec?.selector?.matchLabels));
    if (!pdb) say(d.file, d.doc, 'no PodDisruptionBudget selects it');
    if (!sameLabels(d.doc.spec?.selector?.matchLabels, d.doc.spec?.template?.metadata?.labels, true))
      say(d.file, d.doc, 'its selector does not match its pods');
  }
  const job = byKind('Job')[0];
  if (!job || job.doc.spec?.template?.spec?.containers?.[0]?.command?.join(' ') !== 'node dist/apps/cli/src/main.js migration:run') {
    problems.push('no Job runs the migration (node dist/apps/cli/src/main.js migration:run)');
  }
  return problems;
}

function configValue(manifests, key) {
  return manifests.find(({ doc }) => doc.kind === 'ConfigMap' && doc.data?.[key] !== undefined)?.doc.data[key];
}

/** Whether `selector` is non-empty and every one of its labels is in `labels` (exactly equal when `exact`). */
function sameLabels(selector, labels, subset = false) {
  const s = Object.entries(selector ?? {});
  if (s.length === 0 || !labels) return false;
  if (!subset && s.length !== Object.keys(labels).length) return false;
  return s.every(([k, v]) => labels[k] === v);
}

/** Every problem found in each directory. */
export async function checkDirectories(dirs) {
  const groups = dirs.map((dir) => ({ dir, ...loadManifests(dir) }));
  const unknown = fieldProblems(groups);
  const result = {};
  for (const g of groups) {
    const problems = [...g.problems, ...(await schemaProblems(g.manifests))];
    for (const { doc } of g.manifests) problems.push(...(unknown.get(doc) ?? []));
    problems.push(...(unknown.get('(check)') ?? []));
    if (g.kustomization) problems.push(...ruleProblems(g.kustomization, g.manifests));
    result[g.dir] = { manifests: g.manifests.length, problems };
  }
  return result;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const json = args[0] === '--json';
  const dirs = (json ? args.slice(1) : args).map((d) => resolve(d));
  if (dirs.length === 0) dirs.push(join(ROOT, 'deploy/k8s'));
  const result = await checkDirectories(dirs);
  if (json) process.stdout.write(JSON.stringify(result) + '\n');
  else {
    let bad = 0;
    for (const [dir, { manifests, problems }] of Object.entries(result)) {
      for (const p of problems) process.stderr.write(`${p}\n`);
      bad += problems.length;
      process.stdout.write(`${dir}: ${manifests} manifests, ${problems.length} problems\n`);
    }
    process.exit(bad > 0 ? 1 : 0);
  }
}
