import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfig, KEY_CHECK_CONTEXT, SecretBox, StartupRefusal } from '@app/common';
import { MIGRATIONS } from '../../../migrations';
import { SealedValueRepository } from './repositories/sealed-value.repository';

/** What the check value holds; its content matters less than that it opens. */
const KEY_CHECK_TEXT = 'merchant-pay master key check';

/** Resolves when PostgreSQL answers a trivial query on one of the pool's connections. */
export async function databaseAnswers(dataSource: DataSource): Promise<void> {
  await dataSource.query('SELECT 1');
}

/** The migrations of this build that the database has not applied (all of them on an empty database). */
export async function pendingMigrations(dataSource: DataSource): Promise<string[]> {
  let applied: Set<string>;
  try {
    const rows: { name: string }[] = await dataSource.query(`SELECT name FROM migrations`);
    applied = new Set(rows.map((row) => row.name));
  } catch (err) {
    if ((err as { code?: string }).code !== '42P01') throw err; // undefined_table: never migrated
    applied = new Set();
  }
  return MIGRATIONS.map((migration) => new migration().name ?? migration.name).filter((name) => !applied.has(name));
}

/**
 * Run by every app (API, worker, CLI) before it takes any work: the schema is the one this
 * build expects, and the master key opens this database's sealed values.
 */
@Injectable()
export class StartupChecks implements OnModuleInit {
  private passed: Promise<void> | null = null;

  constructor(
    private readonly dataSource: DataSource,
    private readonly sealedValues: SealedValueRepository,
    private readonly secrets: SecretBox,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): Promise<void> {
    return this.run();
  }

  /** The checks, once per app: a check that needs the schema (the queue backend's) awaits this first. */
  run(): Promise<void> {
    this.passed ??= this.check();
    return this.passed;
  }

  private async check(): Promise<void> {
    const pending = await pendingMigrations(this.dataSource);
    if (pending.length > 0) {
      throw new StartupRefusal(
        `the database schema is behind this build (${pending.length} migration${pending.length > 1 ? 's' : ''} pending, first ${pending[0]}): run \`npm run migration:run\` first`,
      );
    }
    if (this.config.databasePooled) await this.checkPooledStatementTimeout();
    const sealed = (await this.sealedValues.keyCheck()) ?? (await this.sealedValues.createKeyCheck(this.secrets.seal(KEY_CHECK_TEXT, KEY_CHECK_CONTEXT)));
    let opened: string | null = null;
    try {
      opened = this.secrets.open(sealed, KEY_CHECK_CONTEXT);
    } catch {
      // refused below
    }
    if (opened !== KEY_CHECK_TEXT) {
      throw new StartupRefusal(
        'the master key does not open this database (its check value was sealed with another key): set the MASTER_KEY this database was created with, or MASTER_KEYS=new,old during a rotation',
      );
    }
  }

  /**
   * Through a transaction pooler no startup parameter reaches PostgreSQL: the statement limit is
   * the role's (or database's) default, and it must be the one DATABASE_STATEMENT_TIMEOUT_MS says.
   */
  private async checkPooledStatementTimeout(): Promise<void> {
    const [row] = await this.dataSource.query<{ ms: string }[]>(`SELECT setting AS ms FROM pg_settings WHERE name = 'statement_timeout'`);
    const inForce = Number(row.ms);
    const wanted = this.config.statementTimeoutMs;
    if (inForce === wanted) return;
    throw new StartupRefusal(
      `DATABASE_STATEMENT_TIMEOUT_MS is ${wanted} but statements through the pooler at DATABASE_URL run with statement_timeout ${inForce} ms (a pooler passes no startup parameter): ` +
        `set it for the app's role, ALTER ROLE <role> IN DATABASE <database> SET statement_timeout = '${wanted}ms' (deploy/pgbouncer/app-role.sql), or set DATABASE_STATEMENT_TIMEOUT_MS=${inForce}`,
    );
  }
}
