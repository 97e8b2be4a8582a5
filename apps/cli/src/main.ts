import 'reflect-metadata';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ConfigError, NEST_START_OPTIONS, StartupRefusal, loadConfig } from '@app/common';
import { runMigrations } from '@app/db';
import { COMMANDS, UsageError, inCliWords, parseFlags } from './commands';
import { OperatorError, OperatorInputError, OperatorModule, withEmbeddedDefaults } from '@app/operator';
import { ReconInputError, ReconService } from '@app/recon';
import { RECON_COMMANDS, ReconCliModule } from './recon-commands';
import { AuditTrail, operatorIdentity } from './audit-trail';

function usage(): string {
  const lines = Object.entries({ ...COMMANDS, ...RECON_COMMANDS }).map(([name, c]) => `  ${name} ${c.usage}`);
  return ['usage: npm run --silent cli -- <command> [options]', '  migration:run', ...lines].join('\n');
}

export interface CliIo {
  env: Record<string, string | undefined>;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

const processIo: CliIo = {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

/** A refusal the operator can fix (bad input, a state that does not allow it), not a fault. */
function isRefusal(err: unknown): boolean {
  return (
    err instanceof UsageError || err instanceof OperatorError || err instanceof ConfigError || err instanceof StartupRefusal || err instanceof ReconInputError
  );
}

/**
 * Each command prints exactly one JSON object on stdout; messages go to stderr, and so does the
 * audit line of each command that reached the database (AuditTrail). Returns the exit code.
 */
export async function runCli(argv: string[], io: CliIo = processIo): Promise<number> {
  const audit = new AuditTrail(operatorIdentity(io.env), io.env.LOG_LEVEL);
  try {
    return await runCommand(argv, io, audit);
  } finally {
    audit.flush(io.stderr);
  }
}

/** Runs one command in a context of its own, recording it in the audit trail however it ends. */
async function audited(
  app: INestApplicationContext,
  audit: AuditTrail,
  name: string,
  flags: Record<string, string | undefined>,
  run: () => Promise<object>,
): Promise<object> {
  try {
    const result = await run();
    await audit.record(app, name, flags, 'ok', null);
    return result;
  } catch (err) {
    await audit.record(app, name, flags, isRefusal(err) ? 'refused' : 'failed', err instanceof Error ? err.message : String(err));
    throw err;
  } finally {
    await app.close();
  }
}

async function runCommand(argv: string[], io: CliIo, audit: AuditTrail): Promise<number> {
  const [name, ...args] = argv;
  const env = withEmbeddedDefaults(io.env);
  if (!name || name === '--help' || name === 'help') {
    io.stderr(`${usage()}\n`);
    return name ? 0 : 2;
  }
  try {
    if (name === 'migration:run') {
      // Migrations want a session of their own: PostgreSQL itself, not a transaction pooler.
      const databaseUrl = env.DATABASE_DIRECT_URL || env.DATABASE_URL;
      if (!databaseUrl) throw new ConfigError('DATABASE_URL', 'is required');
      io.stdout(`${JSON.stringify({ applied: await runMigrations(databaseUrl) })}\n`);
      return 0;
    }
    const recon = RECON_COMMANDS[name];
    if (recon) {
      const flags = parseFlags(args, recon.flags);
      const app = await NestFactory.createApplicationContext(ReconCliModule.forRoot(loadConfig(env)), { logger: ['error'] });
      io.stdout(`${JSON.stringify(await audited(app, audit, name, flags, () => recon.run(app.get(ReconService), flags)))}\n`);
      return 0;
    }
    const command = COMMANDS[name];
    if (!command) throw new UsageError(`unknown command "${name}"\n${usage()}`);
    const flags = parseFlags(args, command.flags, command.positional);
    // A command that never touches the queues does not need to know their backend.
    const config = loadConfig(
      command.queues ? env : { QUEUE_BACKEND: env.REDIS_URL || env.REDIS_SENTINELS || env.REDIS_CLUSTER_NODES ? 'redis' : 'postgres', ...env },
    );
    const app = await NestFactory.createApplicationContext(OperatorModule.forRoot(config, { queues: command.queues }), {
      ...NEST_START_OPTIONS,
      logger: ['error'],
    });
    app.flushLogs();
    const result = await audited(app, audit, name, flags, () =>
      command.run(flags, app).catch((err: unknown) => {
        throw err instanceof OperatorInputError ? inCliWords(command, err) : err;
      }),
    );
    io.stdout(`${JSON.stringify(result)}\n`);
    return 0;
  } catch (err) {
    if (isRefusal(err)) {
      io.stderr(`error: ${(err as Error).message}\n`);
      return 2;
    }
    io.stderr(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

if (require.main === module) {
  void runCli(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
