import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { ConfigError, NEST_START_OPTIONS, StartupRefusal, loadConfig } from '@app/common';
import { runMigrations } from '@app/db';
import { withEmbeddedDefaults } from '../../embedded/src/local-data';
import { COMMANDS, UsageError, inCliWords, parseFlags } from './commands';
import { OperatorError, OperatorInputError, OperatorModule } from '@app/operator';
import { ReconInputError, ReconService } from '@app/recon';
import { RECON_COMMANDS, ReconCliModule } from './recon-commands';

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

/** Each command prints exactly one JSON object on stdout; messages go to stderr. Returns the exit code. */
export async function runCli(argv: string[], io: CliIo = processIo): Promise<number> {
  const [name, ...args] = argv;
  const env = withEmbeddedDefaults(io.env);
  if (!name || name === '--help' || name === 'help') {
    io.stderr(`${usage()}\n`);
    return name ? 0 : 2;
  }
  try {
    if (name === 'migration:run') {
      const databaseUrl = env.DATABASE_URL;
      if (!databaseUrl) throw new ConfigError('DATABASE_URL', 'is required');
      io.stdout(`${JSON.stringify({ applied: await runMigrations(databaseUrl) })}\n`);
      return 0;
    }
    const recon = RECON_COMMANDS[name];
    if (recon) {
      const flags = parseFlags(args, recon.flags);
      const app = await NestFactory.createApplicationContext(ReconCliModule.forRoot(loadConfig(env)), { logger: ['error'] });
      try {
        io.stdout(`${JSON.stringify(await recon.run(app.get(ReconService), flags))}\n`);
      } finally {
        await app.close();
      }
      return 0;
    }
    const command = COMMANDS[name];
    if (!command) throw new UsageError(`unknown command "${name}"\n${usage()}`);
    const flags = parseFlags(args, command.flags, command.positional);
    // A command that never touches the queues does not need to know their backend.
    const config = loadConfig(command.queues ? env : { QUEUE_BACKEND: env.REDIS_URL ? 'redis' : 'postgres', ...env });
    const app = await NestFactory.createApplicationContext(OperatorModule.forRoot(config, { queues: command.queues }), {
      ...NEST_START_OPTIONS,
      logger: ['error'],
    });
    app.flushLogs();
    try {
      const result = await command.run(flags, app).catch((err: unknown) => {
        throw err instanceof OperatorInputError ? inCliWords(command, err) : err;
      });
      io.stdout(`${JSON.stringify(result)}\n`);
    } finally {
      await app.close();
    }
    return 0;
  } catch (err) {
    if (
      err instanceof UsageError ||
      err instanceof OperatorError ||
      err instanceof ConfigError ||
      err instanceof StartupRefusal ||
      err instanceof ReconInputError
    ) {
      io.stderr(`error: ${err.message}\n`);
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
