import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

/**
 * Registers this process in the build folder it runs from (.build/<build>/.running/<pid>), so
 * a later `npm run build` (scripts/build.js) keeps that folder while the process lives. A no-op
 * outside such a folder: the sources under jest, or the copied dist of the Docker image.
 */
export function registerRunningBuild(): void {
  // This file compiles to <build>/libs/common/src/running-build.js.
  const buildDir = resolve(__dirname, '../../..');
  if (basename(dirname(buildDir)) !== '.build') return;
  const marker = join(buildDir, '.running', String(process.pid));
  try {
    mkdirSync(dirname(marker), { recursive: true });
    writeFileSync(marker, '');
    process.once('exit', () => rmSync(marker, { force: true }));
  } catch {
    // An unwritable checkout: no build can be made or removed there either.
  }
}
