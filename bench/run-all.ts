import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, freemem, loadavg, totalmem } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * `npm run bench`: every benchmark in turn, each in a process of its own, their tables
 * collected into bench/RESULTS.md with the machine, the date and the command.
 * A "## Notes" section already in RESULTS.md (the reading of the numbers) is kept at the end.
 * BENCH_ONLY=create-order,order-list runs a subset; BENCH_NO_WRITE=1 only prints.
 */
const BENCHES: { name: string; title: string; markdown: boolean }[] = [
  { name: 'create-order', title: 'createOrder end to end vs a bare node:http baseline', markdown: true },
  { name: 'order-list', title: 'orderQueryList at 100,000 and 1,000,000 orders', markdown: true },
  { name: 'region', title: 'Region routes (bench:region)', markdown: false },
  { name: 'callbacks', title: 'Callback delivery (bench:callbacks)', markdown: false },
  {
    name: 'contract-timings',
    title: 'Timings the specs leave to the benches: callbacks fairness, cache propagation (bench:contract-timings)',
    markdown: false,
  },
  { name: 'retention', title: 'Retention sweep and callback gauges at 100,000 and 1,000,000 old rows (bench:retention)', markdown: true },
];
const only = process.env.BENCH_ONLY?.split(',');

function run(name: string): Promise<{ output: string; code: number; seconds: number }> {
  const started = Date.now();
  return new Promise((done) => {
    const child = spawn(process.execPath, [join(__dirname, name, 'run.js')], { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      process.stdout.write(d);
      output += d.toString();
    });
    child.on('exit', (code) => done({ output: output.trim(), code: code ?? 1, seconds: (Date.now() - started) / 1000 }));
  });
}

function shell(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, { encoding: 'utf8' }).trim();
  } catch {
    return '(unavailable)';
  }
}

async function main(): Promise<void> {
  const started = new Date();
  const machine = [
    `- date: ${started.toISOString()}`,
    `- command: \`npm run bench\` (node dist/bench/run-all.js)`,
    `- nproc: ${shell('nproc', [])} (${cpus()[0]?.model ?? 'unknown CPU'})`,
    `- memory (free -h): ${shell('free', ['-h']).split('\n')[1]?.replace(/\s+/g, ' ') ?? `${(totalmem() / 2 ** 30).toFixed(1)} GiB total, ${(freemem() / 2 ** 30).toFixed(1)} GiB free`}`,
    `- node ${process.version}, PostgreSQL ${shell('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-tAc', 'SHOW server_version', 'postgres'])}, Redis ${shell('redis-server', ['--version']).split(' ')[2] ?? ''}`,
    `- load average at the start: ${loadavg()
      .map((n) => n.toFixed(2))
      .join(', ')} (everything, load generator included, shares these cores)`,
  ];
  const sections: string[] = [];
  let failed = 0;
  for (const bench of BENCHES) {
    if (only && !only.includes(bench.name)) continue;
    console.log(`\n=== ${bench.name} ===`);
    const { output, code, seconds } = await run(bench.name);
    if (code !== 0) failed++;
    const body = bench.markdown ? output : `\`\`\`\n${output}\n\`\`\``;
    sections.push(`## ${bench.title}\n\n${code === 0 ? '' : `**failed (exit ${code})**\n\n`}${body}\n\n(${seconds.toFixed(0)} s)`);
  }
  const report = `# Benchmark results\n\nMeasured by \`npm run bench\` on this machine, all in one run:\n\n${machine.join('\n')}\n\n${sections.join('\n\n')}\n`;
  if (!process.env.BENCH_NO_WRITE) {
    // npm runs scripts from the project root; the compiled file sits in a build folder of its own (.build/).
    const target = resolve(process.cwd(), 'bench/RESULTS.md');
    const previous = existsSync(target) ? readFileSync(target, 'utf8') : '';
    const notes = previous.indexOf('\n## Notes');
    writeFileSync(target, notes >= 0 ? `${report}${previous.slice(notes)}` : report);
    console.log(`\nwrote ${target}`);
  }
  process.exitCode = failed ? 1 : 0;
}

void main();
