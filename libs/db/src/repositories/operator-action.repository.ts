import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { OperatorAction } from '../entities';

export type OperatorActionRecord = Pick<OperatorAction, 'actor' | 'command' | 'options' | 'outcome' | 'error'>;

/** The operator CLI's audit trail (table operator_actions): appended, never changed. */
@Injectable()
export class OperatorActionRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Appends one action; answers when it was recorded. */
  async record(action: OperatorActionRecord): Promise<Date> {
    const [row] = await this.dataSource.query<{ at: Date }[]>(
      `INSERT INTO operator_actions (actor, command, options, outcome, error) VALUES ($1, $2, $3, $4, $5) RETURNING at`,
      [action.actor.slice(0, 256), action.command.slice(0, 64), JSON.stringify(action.options), action.outcome, action.error?.slice(0, 512) ?? null],
    );
    return row.at;
  }
}
