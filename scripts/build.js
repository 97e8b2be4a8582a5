'use strict';
/**
 * The build: `node scripts/build.js` compiles, `--if-stale` only when the sources changed since
 * the build `dist` points to. Each build goes into its own folder under .build/ and `dist` is a
 * symlink swapped to it in one rename, so starting or testing never deletes or rewrites files a
 * running process loaded; a lock makes concurrent starts build once. Plain JavaScript: it runs
 * before anything is compiled. All output goes to stderr (`npm run --silent cli` prints JSON).
 */
const { spawnSync } = require('node:child_process');
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const BUILDS = path.join(ROOT, '.build');
const DIST = path.join(ROOT, 'dist');
const LOCK = path.join(BUILDS, 'lock');
const STAMP = '.build-stamp';
/** Where a running app registers its pid (libs/common/src/running-build.ts): its build is kept. */
const RUNNING = '.running';
const SOURCE_DIRS = ['apps', 'libs', 'migrations', 'scripts', 'bench', 'examples'];
const SOURCE_FILES = ['tsconfig.json', 'tsconfig.build.json', 'package-lock.json'];
/** Folders of non-TypeScript files an app ships (templates, static files), copied to the same place in the build. */
const ASSET_DIRS = new Set(['views', 'static']);

const log = (line) => process.stderr.write(`build: ${line}\n`);

function walk(dir, visit) {
  let entries;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (entry.name === 'node_modules') continue;
    const full = path.join(dir, entry.name);
    if (visit(full, entry) !== false && entry.isDirectory()) walk(full, visit);
  }
}

/** A hash of every input of the build, by content: a checkout, an edit or a new file changes it; a touch does not. */
function sourceFingerprint(root = ROOT) {
  const hash = createHash('sha256');
  const add = (file) => {
    hash.update(path.relative(root, file)).update('\0').update(fs.readFileSync(file)).update('\0');
  };
  for (const name of SOURCE_FILES) if (fs.existsSync(path.join(root, name))) add(path.join(root, name));
  for (const dir of SOURCE_DIRS) {
    walk(path.join(root, dir), (full, entry) => {
      if (entry.isFile() && !entry.name.endsWith('.spec.ts')) add(full);
    });
  }
  return hash.digest('hex');
}

function readStamp(buildDir) {
  try {
    return JSON.parse(fs.readFileSync(path.join(buildDir, STAMP), 'utf8'));
  } catch {
    return null;
  }
}

function isFresh(fingerprint) {
  return readStamp(DIST)?.fingerprint === fingerprint;
}

function alive(pid) {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

function lockOwner() {
  try {
    return Number(fs.readFileSync(path.join(LOCK, 'pid'), 'utf8'));
  } catch {
    return null;
  }
}

function sleep(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** mkdir is atomic: one process holds the lock; a lock whose owner died is taken over. */
function acquireLock() {
  fs.mkdirSync(BUILDS, { recursive: true });
  let announced = false;
  for (;;) {
    try {
      fs.mkdirSync(LOCK);
      fs.writeFileSync(path.join(LOCK, 'pid'), String(process.pid));
      return;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
    }
    const owner = lockOwner();
    if (owner !== null && !alive(owner)) {
      // Renamed first, so two waiters cannot both remove it and both believe they hold the next one.
      const stale = path.join(BUILDS, `stale-lock-${process.pid}`);
      try {
        fs.renameSync(LOCK, stale);
        fs.rmSync(stale, { recursive: true, force: true });
      } catch {
        // Another waiter took it over first.
      }
      continue;
    }
    if (!announced) log(`waiting for the build of process ${owner ?? '(starting)'}`);
    announced = true;
    sleep(200);
  }
}

function releaseLock() {
  if (lockOwner() === process.pid) fs.rmSync(LOCK, { recursive: true, force: true });
}

function run(command, args) {
  // stdout to stderr too: the CLI's stdout carries JSON only.
  const result = spawnSync(process.execPath, [require.resolve(command), ...args], { cwd: ROOT, stdio: ['ignore', 2, 2] });
  if (result.status !== 0) throw new Error(`${path.basename(command)} failed (exit ${result.status ?? result.signal})`);
}

function copyAssets(outDir) {
  for (const top of ['apps', 'libs']) {
    walk(path.join(ROOT, top), (full, entry) => {
      if (!entry.isDirectory() || !ASSET_DIRS.has(entry.name)) return true;
      fs.cpSync(full, path.join(outDir, path.relative(ROOT, full)), { recursive: true });
      return false;
    });
  }
}

function currentBuildName() {
  try {
    return path.basename(fs.readlinkSync(DIST));
  } catch {
    return null;
  }
}

/**
 * Points `dist` at the new build in one rename and answers the build it replaced; a `dist`
 * folder left by the older layout is moved aside first, its path kept for whoever runs from it.
 */
function swapDist(buildName) {
  const link = path.join(BUILDS, `dist.next-${process.pid}`);
  fs.rmSync(link, { force: true });
  // Relative, so the checkout can move; resolved from the project root once renamed there.
  fs.symlinkSync(path.join('.build', buildName), link, process.platform === 'win32' ? 'junction' : 'dir');
  let replaced = currentBuildName();
  const existing = fs.lstatSync(DIST, { throwIfNoEntry: false });
  if (existing && !existing.isSymbolicLink()) {
    replaced = `legacy-${Date.now().toString(36)}`;
    fs.renameSync(DIST, path.join(BUILDS, replaced));
  }
  fs.renameSync(link, DIST);
  return replaced;
}

function runningPids(buildDir) {
  try {
    return fs.readdirSync(path.join(buildDir, RUNNING)).map(Number);
  } catch {
    return [];
  }
}

/**
 * Old builds nobody runs from. Kept: the current one, the one it replaced (a process may be
 * loading it right now, before it registers), any with a live registered process, and any
 * still being written by a live builder.
 */
function removableBuilds(buildsDir, keep) {
  let names;
  try {
    names = fs
      .readdirSync(buildsDir, { withFileTypes: true })
      .filter((e) => e.isDirectory() && e.name !== 'lock')
      .map((e) => e.name);
  } catch {
    return [];
  }
  return names.filter((name) => {
    if (keep.includes(name)) return false;
    const dir = path.join(buildsDir, name);
    if (runningPids(dir).some(alive)) return false;
    const builder = Number(/^b-[0-9a-z]+-(\d+)$/.exec(name)?.[1]);
    return !(readStamp(dir) === null && alive(builder));
  });
}

function build(fingerprint) {
  const started = Date.now();
  const name = `b-${started.toString(36)}-${process.pid}`;
  const outDir = path.join(BUILDS, name);
  try {
    run('typescript/bin/tsc', ['-p', 'tsconfig.build.json', '--outDir', outDir]);
    run('tsc-alias/dist/bin/index.js', ['-p', 'tsconfig.build.json', '--outDir', outDir]);
    copyAssets(outDir);
    fs.writeFileSync(path.join(outDir, STAMP), JSON.stringify({ fingerprint, builtAt: new Date(started).toISOString() }));
  } catch (err) {
    fs.rmSync(outDir, { recursive: true, force: true });
    throw err;
  }
  const previous = swapDist(name);
  for (const old of removableBuilds(BUILDS, [name, previous])) fs.rmSync(path.join(BUILDS, old), { recursive: true, force: true });
  log(`compiled into .build/${name} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

function main(args) {
  const ifStale = args.includes('--if-stale');
  if (ifStale && isFresh(sourceFingerprint())) return;
  acquireLock();
  try {
    // Whoever held the lock before may have just built these very sources.
    const fingerprint = sourceFingerprint();
    if (ifStale && isFresh(fingerprint)) return;
    build(fingerprint);
  } finally {
    releaseLock();
  }
}

if (require.main === module) {
  try {
    main(process.argv.slice(2));
  } catch (err) {
    log(err.message);
    process.exitCode = 1;
  }
}

module.exports = { sourceFingerprint, removableBuilds, STAMP, RUNNING };
