import { QueryFailedError, QueryRunnerProviderAlreadyReleasedError } from 'typeorm';
import { isDependencyDown } from './envelope-exception.filter';

describe('isDependencyDown', () => {
  it('recognises a database or Redis that went away, including mid-transaction', () => {
    const terminated = new QueryFailedError('SELECT 1', [], Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }));
    for (const err of [
      new QueryRunnerProviderAlreadyReleasedError(),
      terminated,
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      new Error("Stream isn't writeable and enableOfflineQueue options is false"),
      new Error('Connection terminated unexpectedly'),
    ]) {
      expect([err.message, isDependencyDown(err)]).toEqual([err.message, true]);
    }
  });

  it('answers a deadlock PostgreSQL broke, or a serialization failure, as retry later rather than 50000', () => {
    for (const code of ['40P01', '40001']) {
      const err = new QueryFailedError('INSERT INTO order_events ...', [], Object.assign(new Error('deadlock detected'), { code }));
      expect([code, isDependencyDown(err)]).toEqual([code, true]);
    }
  });

  it('answers a statement cancelled at statement_timeout as retry later', () => {
    const err = new QueryFailedError('SELECT ...', [], Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }));
    expect(isDependencyDown(err)).toBe(true);
  });

  it('recognises a socket error whatever realm made it (not an instanceof Error here), and one inside an AggregateError', () => {
    expect(isDependencyDown({ message: 'connect ECONNREFUSED 127.0.0.1:5432', code: 'ECONNREFUSED' })).toBe(true);
    expect(isDependencyDown({ message: '', errors: [{ message: 'connect ECONNREFUSED ::1:5432', code: 'ECONNREFUSED' }] })).toBe(true);
    expect(isDependencyDown(new Error('Client has encountered a connection error and is not queryable'))).toBe(true);
  });

  it('leaves programming errors as 50000', () => {
    expect(isDependencyDown(new TypeError("Cannot read properties of undefined (reading 'x')"))).toBe(false);
    expect(isDependencyDown('text')).toBe(false);
  });
});
